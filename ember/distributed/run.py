"""``python -m ember.distributed.run``: torchrun's launcher. Starts ``--nproc-per-node`` ranks of
a script with torchrun's environment (``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``,
``LOCAL_WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT``, ...), forwards signals to them, and fails
the job (non-zero exit, the other ranks stopped) as soon as one rank fails.

Every rank runs under its own ``mpiexec -n 1`` (MPICH's hydra, from the ``mpich`` wheel) so that it
has an MPI process manager; ``init_process_group`` then joins the ranks through the store that
rank 0 hosts at ``MASTER_ADDR:MASTER_PORT`` (see ``ember.distributed._mpi``).

One machine::

    python -m ember.distributed.run --standalone --nproc-per-node 4 train.py --lr 1e-3

Several machines (the same command on each, ``--node-rank`` 0..N-1; node 0's address is the
master; every machine must reach the master port and MPI's own TCP connections)::

    python -m ember.distributed.run --nnodes 2 --node-rank 0 --nproc-per-node 4 \\
        --master-addr 10.0.0.1 --master-port 29500 train.py

``--rdzv-endpoint host:port`` names the master too. Elastic rendezvous (ranks assigned to nodes
as they arrive, a varying number of nodes) is not supported: ``--nnodes`` must be one number or
``N:N`` and ``--node-rank`` given. ``--max-restarts`` restarts the ranks of this node.

As torchrun, each rank gets an error file (``TORCHELASTIC_ERROR_FILE``, under ``--log-dir`` or a
temporary directory kept only when the failure report names a file in it): an entry point
decorated with ``ember.distributed.elastic.multiprocessing.errors.record`` writes its exception
there, and the failure report (a ``ChildFailedError``) shows that traceback.
"""
import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid

from .elastic.multiprocessing.errors import ChildFailedError, ProcessFailure

_LOG = "[ember.distributed.run]"


def _parser():
    p = argparse.ArgumentParser(prog="python -m ember.distributed.run",
                                description="Start the ranks of a distributed ember program "
                                            "(torchrun's command line).")

    def both(name, **kw):  # torchrun accepts --foo-bar and --foo_bar
        p.add_argument(f"--{name}", f"--{name.replace('-', '_')}", **kw)

    both("nnodes", default="1:1", help="number of nodes, or MIN:MAX (equal)")
    both("nproc-per-node", default="1", help="ranks on this node (a number, or 'auto'/'cpu')")
    both("rdzv-backend", default="static", help="accepted: static, c10d (as a static rendezvous)")
    both("rdzv-endpoint", default="", help="host:port of the master (node 0)")
    both("rdzv-id", default="none")
    both("rdzv-conf", default="")
    p.add_argument("--standalone", action="store_true",
                   help="one node, a free local port for the rendezvous")
    both("max-restarts", type=int, default=0)
    both("monitor-interval", type=float, default=0.1)
    both("start-method", default="spawn")
    p.add_argument("--role", default="default")
    p.add_argument("-m", "--module", action="store_true",
                   help="run the script as a module (python -m)")
    both("no-python", action="store_true", help="run the script as an executable")
    both("run-path", action="store_true")
    both("log-dir", default=None)
    both("node-rank", type=int, default=0)
    both("master-addr", default="127.0.0.1")
    both("master-port", type=int, default=29500)
    both("local-addr", default=None)
    both("kill-timeout", type=float, default=5.0,
         help="seconds between SIGTERM and SIGKILL when stopping the ranks")
    p.add_argument("training_script")
    p.add_argument("training_script_args", nargs=argparse.REMAINDER)
    return p


def _free_port():
    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def _mpiexec():
    """MPICH's mpiexec: next to this Python (the wheel installs it there) or on PATH."""
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if os.path.exists(here):
        return here
    return shutil.which("mpiexec")


def _nnodes(s):
    lo, _, hi = s.partition(":")
    lo, hi = int(lo), int(hi or lo)
    if lo != hi:
        raise SystemExit(f"{_LOG} elastic --nnodes {s} is not supported: give one number")
    return lo


def _nproc(s):
    if s in ("auto", "cpu"):
        return os.cpu_count() or 1
    if s == "gpu":
        raise SystemExit(f"{_LOG} --nproc-per-node gpu: no GPUs are used by this launcher")
    return int(s)


def _set_pdeathsig():
    """In the child: die with the launcher (Linux), so no rank outlives a killed launcher."""
    try:
        import ctypes
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:
        pass


class _Ranks:
    """The ranks of this node: started, watched, stopped."""

    def __init__(self, args, nproc, world_size, master_addr, master_port, restart_count,
                 error_dir):
        self.procs = []
        mpiexec = _mpiexec()
        for local_rank in range(nproc):
            rank = args.node_rank * nproc + local_rank
            env = dict(os.environ)
            env.update({
                "LOCAL_RANK": str(local_rank), "RANK": str(rank), "GROUP_RANK": str(args.node_rank),
                "ROLE_RANK": str(rank), "ROLE_NAME": args.role,
                "LOCAL_WORLD_SIZE": str(nproc), "WORLD_SIZE": str(world_size),
                "GROUP_WORLD_SIZE": str(world_size // nproc), "ROLE_WORLD_SIZE": str(world_size),
                "MASTER_ADDR": master_addr, "MASTER_PORT": str(master_port),
                "TORCHELASTIC_RESTART_COUNT": str(restart_count),
                "TORCHELASTIC_MAX_RESTARTS": str(args.max_restarts),
                "TORCHELASTIC_RUN_ID": args.rdzv_id,
                "TORCHELASTIC_USE_AGENT_STORE": "False",
                "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1",
            })
            rank_dir = os.path.join(error_dir, f"attempt_{restart_count}", str(local_rank))
            os.makedirs(rank_dir, exist_ok=True)
            error_file = env["TORCHELASTIC_ERROR_FILE"] = os.path.join(rank_dir, "error.json")
            if "OMP_NUM_THREADS" not in os.environ and nproc > 1:
                env["OMP_NUM_THREADS"] = "1"
            if args.no_python:
                cmd = [args.training_script]
            elif args.module:
                cmd = [sys.executable, "-m", args.training_script]
            else:
                cmd = [sys.executable, args.training_script]
            if not getattr(args, "use_env", True):  # (torch.distributed.launch's legacy way)
                cmd.append(f"--local-rank={local_rank}")
            cmd += args.training_script_args
            if mpiexec is not None:
                cmd = [mpiexec, "-n", "1"] + cmd
            out = err = None
            if args.log_dir:
                d = os.path.join(args.log_dir, f"attempt_{restart_count}", str(local_rank))
                os.makedirs(d, exist_ok=True)
                out = open(os.path.join(d, "stdout.log"), "wb")
                err = open(os.path.join(d, "stderr.log"), "wb")
            # a session of its own: stopping a rank stops mpiexec, its proxy and the program
            p = subprocess.Popen(cmd, env=env, stdout=out, stderr=err, start_new_session=True,
                                 preexec_fn=_set_pdeathsig)
            p.rank, p.local_rank, p.error_file = rank, local_rank, error_file
            self.procs.append(p)

    def poll(self):
        """None while running; else ``(failures, all_done)``."""
        failures = [(p, p.returncode) for p in self.procs
                    if p.poll() is not None and p.returncode != 0]
        if failures:
            return failures
        if all(p.returncode is not None for p in self.procs):
            return []
        return None

    def signal(self, sig):
        for p in self.procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, sig)
                except ProcessLookupError:
                    pass

    def stop(self, timeout):
        self.signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and any(p.poll() is None for p in self.procs):
            time.sleep(0.02)
        self.signal(signal.SIGKILL)
        for p in self.procs:
            p.wait()


def _report(script, failures):
    """torchrun's report: a ``ChildFailedError`` over the failed ranks (their error files)."""
    error = ChildFailedError(script, {p.rank: ProcessFailure(p.local_rank, p.pid, rc,
                                                             p.error_file)
                                      for p, rc in failures})
    print(f"{_LOG} ChildFailedError: {error}", file=sys.stderr, flush=True)


class _Signal(Exception):
    def __init__(self, sig):
        super().__init__(f"Process {os.getpid()} got signal: {sig}")
        self.sig = sig


def main(argv=None):
    return run(_parser().parse_args(argv))


def get_args_parser():
    """torchrun's argument parser (``torch.distributed.launch`` adds ``--use-env`` to it)."""
    return _parser()


def run(args):
    """Start and watch the ranks the parsed command line ``args`` describe; the exit status."""
    if args.training_script_args and args.training_script_args[0] == "--":
        args.training_script_args = args.training_script_args[1:]
    nnodes = _nnodes(args.nnodes)
    nproc = _nproc(args.nproc_per_node)
    master_addr, master_port = args.master_addr, args.master_port
    if args.rdzv_endpoint:
        host, _, port = args.rdzv_endpoint.rpartition(":")
        master_addr, master_port = (host or args.rdzv_endpoint), int(port or 29400)
    if args.standalone:
        if nnodes != 1:
            raise SystemExit(f"{_LOG} --standalone runs one node (got --nnodes {args.nnodes})")
        master_addr, master_port = "127.0.0.1", 0
        if args.rdzv_id == "none":
            args.rdzv_id = str(uuid.uuid4())
    if not 0 <= args.node_rank < nnodes:
        raise SystemExit(f"{_LOG} --node-rank {args.node_rank} is not in [0, {nnodes})")
    if nproc > 1 and "OMP_NUM_THREADS" not in os.environ:
        print(f"{_LOG} Setting OMP_NUM_THREADS environment variable for each process to be 1 "
              f"in default, to avoid your system being overloaded, please further tune the "
              f"variable for optimal performance in your application as needed.",
              file=sys.stderr)
    if _mpiexec() is None:
        print(f"{_LOG} warning: mpiexec not found (pip install mpich); the ranks run without a "
              f"process manager", file=sys.stderr)
    world_size = nnodes * nproc

    def on_signal(sig, frame):
        raise _Signal(sig)

    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(s, on_signal)

    restart = 0
    ranks = None
    error_dir = args.log_dir or tempfile.mkdtemp(prefix="torchelastic_")
    reported_files = []
    try:
        while True:
            port = master_port or _free_port()
            ranks = _Ranks(args, nproc, world_size, master_addr, port, restart, error_dir)
            while (res := ranks.poll()) is None:
                time.sleep(args.monitor_interval)
            if not res:
                return 0
            ranks.stop(args.kill_timeout)  # the others would wait for the failed rank
            if restart < args.max_restarts:
                restart += 1
                print(f"{_LOG} rank {res[0][0].rank} failed (exitcode {res[0][1]}); restarting "
                      f"the ranks ({restart}/{args.max_restarts})", file=sys.stderr, flush=True)
                continue
            _report(args.training_script, res)
            reported_files = [p.error_file for p, _ in res if os.path.isfile(p.error_file)]
            return 1
    except _Signal as e:
        # forward the signal, then make sure nothing outlives us
        if ranks is not None:
            ranks.signal(e.sig)
            deadline = time.monotonic() + args.kill_timeout
            while time.monotonic() < deadline and any(p.poll() is None for p in ranks.procs):
                time.sleep(0.02)
            ranks.stop(0)
        print(f"{_LOG} {e}", file=sys.stderr, flush=True)
        return 128 + e.sig
    finally:
        # the temporary directory stays only where the failure report names a file in it
        if not args.log_dir and not reported_files:
            shutil.rmtree(error_dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
