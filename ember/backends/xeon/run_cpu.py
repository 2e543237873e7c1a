"""``python -m ember.backends.xeon.run_cpu``: PyTorch's CPU launcher. Runs a script as one or
more instances, each bound to its own cores (``numactl -C cores -m nodes``, or ``taskset -c``
when numactl is missing) with ``OMP_NUM_THREADS`` set to its core count, and TCMalloc or
JeMalloc preloaded when found.

Single instance on all physical cores::

    python -m ember.backends.xeon.run_cpu script.py args

Four instances of 8 cores each, logs under ./logs::

    python -m ember.backends.xeon.run_cpu --ninstances 4 --ncores-per-instance 8 \\
        --log-path ./logs script.py args

How each instance's cores are chosen follows PyTorch's launcher option for option (core list,
node, logical cores, latency/throughput modes, skip-cross-node-cores, rank). ember's thread
count follows: ``ember.get_num_threads()`` is ``OMP_NUM_THREADS`` when set, else the cores the
process may run on. Unlike PyTorch's launcher, whose exit status is 0 whatever the instances
did, this one exits non-zero when an instance fails (with the first failure's status).
"""
import glob
import logging
import os
import platform
import re
import signal
import subprocess
import sys
import threading
from argparse import REMAINDER, ArgumentParser, RawTextHelpFormatter
from os.path import expanduser

__all__ = []

logger = logging.getLogger(__name__)


class _CPUinfo:
    """Cores and NUMA nodes of this machine, from ``lscpu --parse=CPU,Core,Socket,Node``
    (``test_input`` stands in for lscpu's output)."""

    def __init__(self, test_input=""):
        if platform.system() in ("Windows", "Darwin"):
            raise RuntimeError(f"{platform.system()} is not supported!!!")
        if test_input == "":
            lines = subprocess.check_output(["lscpu", "--parse=CPU,Core,Socket,Node"],
                                            universal_newlines=True).split("\n")
        else:
            lines = test_input.split("\n")
        # CPU,Core,Socket,Node; an empty node field (no NUMA) is node 0
        self.cpuinfo = [m.group(1).strip().split(",") for m in
                        (re.search(r"^([\d]+,[\d]+,[\d]+,[\d]?)", line) for line in lines) if m]
        self.node_nums = int(max(row[3] or "0" for row in self.cpuinfo)) + 1
        self.node_physical_cores = [[] for _ in range(self.node_nums)]
        self.node_logical_cores = [[] for _ in range(self.node_nums)]
        self.physical_core_node_map = {}
        self.logical_core_node_map = {}
        for cpu, core, _socket, node in self.cpuinfo:
            node, cpu, core = int(node or 0), int(cpu), int(core)
            if core not in self.node_physical_cores[node]:
                self.node_physical_cores[node].append(core)
                self.physical_core_node_map[core] = node
            self.node_logical_cores[node].append(cpu)
            self.logical_core_node_map[cpu] = node

    def _check_node(self, node_id):
        if not 0 <= node_id < self.node_nums:
            raise ValueError(f"Invalid node id: {node_id}. Valid node ids: "
                             f"{list(range(len(self.node_physical_cores)))}")

    def get_node_physical_cores(self, node_id):
        self._check_node(node_id)
        return self.node_physical_cores[node_id]

    def get_node_logical_cores(self, node_id):
        self._check_node(node_id)
        return self.node_logical_cores[node_id]

    def get_all_physical_cores(self):
        return [c for cores in self.node_physical_cores for c in cores]

    def get_all_logical_cores(self):
        return [c for cores in self.node_logical_cores for c in cores]

    def numa_aware_check(self, core_list):
        """The NUMA nodes of ``core_list`` (a warning when there are several: crossing nodes
        costs memory bandwidth)."""
        numa_ids = list(dict.fromkeys(self.logical_core_node_map[c] for c in core_list))
        if len(numa_ids) > 1:
            logger.warning("Numa Aware: cores:%s on different NUMA nodes:%s. To avoid this "
                           "behavior, please use --ncores-per-instance knob to make sure number "
                           "of cores is divisible by --ncores-per-instance. Alternatively, please "
                           "use --skip-cross-node-cores knob.", core_list, numa_ids)
        if not numa_ids:
            raise RuntimeError("invalid number of NUMA nodes; please make sure numa_ids >= 1")
        return numa_ids


def _core_ranges(cores):
    """[0, 1, 2, 5] -> "0-2,5-5" (numactl's and taskset's syntax, PyTorch's spelling)."""
    ranges = []
    for c in cores:
        if ranges and c - ranges[-1][1] == 1:
            ranges[-1][1] = c
        else:
            ranges.append([c, c])
    return ",".join(f"{a}-{b}" for a, b in ranges)


class _Launcher:
    """Chooses each instance's cores, sets the environment, starts and watches the
    instances."""

    _LIB_DIRS = ("~/.local/lib", "/usr/local/lib", "/usr/local/lib64", "/usr/lib", "/usr/lib64",
                 "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu")

    def __init__(self, cpuinfo=None):
        self.cpuinfo = cpuinfo if cpuinfo is not None else _CPUinfo()

    def add_lib_preload(self, lib_type):
        """Put ``lib<lib_type>.so`` first in LD_PRELOAD if found; True if it is there."""
        if any(item.endswith(f"lib{lib_type}.so")
               for item in os.getenv("LD_PRELOAD", "").split(":")):
            return True
        dirs = [f"{os.environ[v]}/lib" for v in ("CONDA_PREFIX", "VIRTUAL_ENV")
                if v in os.environ] + [expanduser(d) for d in self._LIB_DIRS]
        for d in dirs:
            matches = glob.glob(os.path.join(d, f"lib{lib_type}.so"))
            if matches:
                preload = [matches[0], os.getenv("LD_PRELOAD", "")]
                os.environ["LD_PRELOAD"] = os.pathsep.join(p.strip(os.pathsep) for p in preload
                                                           if p)
                return True
        return False

    def is_numactl_available(self):
        try:
            return subprocess.run(["numactl", "-C", "0", "-m", "0", "hostname"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  check=False).returncode == 0
        except OSError:
            return False

    def set_memory_allocator(self, enable_tcmalloc=True, enable_jemalloc=False,
                             use_default_allocator=False):
        """Preload TCMalloc or JeMalloc (better reuse, fewer page faults than glibc's malloc
        for the large, short-lived buffers of tensor programs)."""
        if enable_tcmalloc and enable_jemalloc:
            raise RuntimeError("Unable to enable TCMalloc and JEMalloc at the same time.")
        if use_default_allocator and not (enable_tcmalloc or enable_jemalloc):
            return
        wanted = (["tcmalloc"] if enable_tcmalloc else ["jemalloc"] if enable_jemalloc
                  else ["tcmalloc", "jemalloc"])
        for lib in wanted:
            if self.add_lib_preload(lib):
                logger.info("Use %s memory allocator", "TCMalloc" if lib == "tcmalloc"
                            else "JeMalloc")
                if lib == "jemalloc" and enable_jemalloc:
                    self.set_env("MALLOC_CONF",
                                 "oversize_threshold:1,background_thread:true,metadata_thp:auto")
                return
        logger.warning("%s not found in $CONDA_PREFIX/lib, $VIRTUAL_ENV/lib or the system "
                       "library directories, so LD_PRELOAD is not set. This may drop the "
                       "performance", " or ".join(wanted))

    def set_env(self, env_name, env_value):
        if not env_value:
            logger.warning("%s is None", env_name)
        if env_name not in os.environ:
            os.environ[env_name] = env_value
        elif os.environ[env_name] != env_value:
            logger.warning("Overriding value with the one set in environment variable: %s. "
                           "Value applied: %s. Value ignored: %s", env_name,
                           os.environ[env_name], env_value)
        logger.info("%s=%s", env_name, os.environ[env_name])

    def set_multi_thread_and_allocator(self, ncores_per_instance, disable_iomp=False,
                                       set_kmp_affinity=True, enable_tcmalloc=True,
                                       enable_jemalloc=False, use_default_allocator=False):
        self.set_memory_allocator(enable_tcmalloc, enable_jemalloc, use_default_allocator)
        self.set_env("OMP_NUM_THREADS", str(ncores_per_instance))
        if not disable_iomp:
            if self.add_lib_preload("iomp5"):
                logger.info("Using Intel OpenMP")
                if set_kmp_affinity:
                    self.set_env("KMP_AFFINITY", "granularity=fine,compact,1,0")
                self.set_env("KMP_BLOCKTIME", "1")
            else:
                logger.warning("Intel OpenMP (libiomp5.so) not found; LD_PRELOAD is not set for "
                               "it")

    def _choose_cores(self, args):
        """(cores, set_kmp_affinity), setting args.ninstances and args.ncores_per_instance as
        PyTorch's launcher does."""
        info = self.cpuinfo
        set_kmp_affinity = True
        if args.core_list:
            cores = [int(x) for x in args.core_list.split(",")]
            if args.ncores_per_instance == -1:
                raise RuntimeError('please specify the "--ncores-per-instance" if you have pass '
                                   'the --core-list params')
            if args.ninstances > 1 and args.ncores_per_instance * args.ninstances < len(cores):
                logger.warning("only first %s cores will be used, but you specify %s cores in "
                               "core_list", args.ncores_per_instance * args.ninstances,
                               len(cores))
            else:
                args.ninstances = len(cores) // args.ncores_per_instance
            return cores, set_kmp_affinity
        if args.use_logical_core:
            if args.node_id != -1:
                cores = info.get_node_logical_cores(args.node_id)
            else:
                cores = info.get_all_logical_cores()
                set_kmp_affinity = False  # hyperthreads: let the OpenMP runtime place threads
        else:
            cores = (info.get_node_physical_cores(args.node_id) if args.node_id != -1
                     else info.get_all_physical_cores())
        if not args.multi_instance and args.ninstances == -1 and args.ncores_per_instance == -1:
            args.ninstances, args.ncores_per_instance = 1, len(cores)
        elif args.multi_instance and args.ninstances == -1 and args.ncores_per_instance == -1:
            args.throughput_mode = True
        elif args.ncores_per_instance == -1 and args.ninstances != -1:
            if args.ninstances > len(cores):
                raise RuntimeError(f"there are {len(cores)} total cores but you specify "
                                   f"{args.ninstances} ninstances; please make sure ninstances "
                                   f"<= total_cores)")
            args.ncores_per_instance = len(cores) // args.ninstances
        elif args.ncores_per_instance != -1 and args.ninstances == -1:
            if not args.skip_cross_node_cores:
                args.ninstances = len(cores) // args.ncores_per_instance
            else:
                cores = self._skip_cross_node_cores(args, cores)
        elif args.ninstances * args.ncores_per_instance > len(cores):
            raise RuntimeError("Please make sure ninstances * ncores_per_instance <= total_cores")
        if args.latency_mode:
            logger.warning("--latency-mode is exclusive to --ninstances, --ncores-per-instance, "
                           "--node-id and --use-logical-core. They won't take effect even they "
                           "are set explicitly.")
            args.ncores_per_instance = 4
            cores = info.get_all_physical_cores()
            args.ninstances = len(cores) // args.ncores_per_instance
        if args.throughput_mode:
            logger.warning("--throughput-mode is exclusive to --ninstances, "
                           "--ncores-per-instance, --node-id and --use-logical-core. They won't "
                           "take effect even they are set explicitly.")
            args.ninstances = info.node_nums
            cores = info.get_all_physical_cores()
            args.ncores_per_instance = len(cores) // args.ninstances
        return cores, set_kmp_affinity

    def _skip_cross_node_cores(self, args, cores):
        """Drop the cores that would make an instance straddle two NUMA nodes."""
        per_node = len(self.cpuinfo.node_physical_cores[0])
        leftover = per_node % args.ncores_per_instance
        if args.ncores_per_instance > per_node:
            logger.warning("there are %s core(s) per socket, but you specify %s "
                           "ncores_per_instance and skip_cross_node_cores. Please make sure "
                           "--ncores-per-instance < core(s) per socket", per_node,
                           args.ncores_per_instance)
            sys.exit(-1)
        if leftover == 0:
            logger.info("--skip-cross-node-cores is set, but there are no cross-node cores.")
        else:
            dropped = {c for i in range(1, len(cores) // per_node + 1)
                       for c in cores[per_node * i - leftover:per_node * i]}
            cores = [c for c in cores if c not in dropped]
            if len(cores) % args.ncores_per_instance:
                raise AssertionError(f"Number of cores ({len(cores)}) must be divisible by "
                                     f"ncores_per_instance ({args.ncores_per_instance})")
        args.ninstances = len(cores) // args.ncores_per_instance
        return cores

    def commands(self, args):
        """One command line per instance to start (binding prefix, interpreter, script), after
        choosing cores and setting the environment."""
        cores, set_kmp_affinity = self._choose_cores(args)
        if args.ninstances > 1 and args.rank != -1:
            logger.info("assigning %s cores for instance %s", args.ncores_per_instance,
                        args.rank)
        enable_taskset = False
        if not args.disable_numactl and not self.is_numactl_available():
            if args.disable_taskset:
                logger.warning("Core binding with numactl is not available, and "
                               "--disable_taskset is set. Please unset --disable_taskset to use "
                               "taskset instead of numactl.")
                sys.exit(-1)
            logger.warning("Core binding with numactl is not available. Disabling numactl and "
                           "using taskset instead. This may affect performance in multi-socket "
                           "system; please use numactl if memory binding is needed.")
            args.disable_numactl = True
        if not args.disable_taskset:
            enable_taskset = True
        self.set_multi_thread_and_allocator(args.ncores_per_instance, args.disable_iomp,
                                            set_kmp_affinity, args.enable_tcmalloc,
                                            args.enable_jemalloc, args.use_default_allocator)
        local_size = int(os.environ.get("LOCAL_WORLD_SIZE", 1))
        local_rank = int(os.environ.get("LOCAL_RANK", 0))
        cores = sorted(cores)
        n = args.ncores_per_instance
        cmds = []
        for i in range(args.ninstances):
            index = i if args.rank == -1 else args.rank
            core_list = cores[index * n:(index + 1) * n]
            if local_size > 1:  # several ranks of a distributed job share this instance's cores
                share = len(core_list) // local_size
                if share < 1:
                    raise AssertionError(f"At least one core needs to be assigned to each rank, "
                                         f"got {len(core_list)} cores for {local_size} ranks")
                core_list = core_list[share * local_rank:share * (local_rank + 1)]
            cmd = []
            if not args.disable_numactl:
                nodes = ",".join(map(str, self.cpuinfo.numa_aware_check(core_list)))
                cmd = ["numactl", "-C", _core_ranges(core_list), "-m", nodes]
            elif enable_taskset:
                cmd = ["taskset", "-c", _core_ranges(core_list)]
            if not args.no_python:
                cmd += [sys.executable, "-u"]
            if args.module:
                cmd.append("-m")
            cmds.append((cmd + [args.program] + list(args.program_args), core_list))
            logger.info(" ".join(cmds[-1][0]))
            if args.rank != -1:  # this rank's instance only
                break
        return cmds

    def launch(self, args):
        """Start every instance, forward SIGINT/SIGTERM to them, wait; the first failing
        instance's exit status (0 when all succeed)."""
        procs = []
        for i, (cmd, core_list) in enumerate(self.commands(args)):
            log = None
            if args.log_path != os.devnull:
                name = (f"{args.log_file_prefix}_instance_{i}_cores_"
                        f"{_core_ranges(core_list).replace(',', '_')}.log")
                log = open(os.path.join(args.log_path, name), "wb")
            p = subprocess.Popen(cmd, stdout=subprocess.PIPE if log else None,
                                 stderr=subprocess.STDOUT if log else None)
            if log:  # tee: the console and the instance's log file
                threading.Thread(target=_tee, args=(p.stdout, log), daemon=True).start()
            procs.append(p)

        def forward(sig, frame):
            for p in procs:
                if p.poll() is None:
                    p.send_signal(sig)

        previous = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            codes = [p.wait() for p in procs]
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)
        failed = [(i, c) for i, c in enumerate(codes) if c != 0]
        for i, c in failed:
            logger.error("instance %s failed with exit status %s", i, c)
        return failed[0][1] if failed else 0


def _tee(stream, log):
    with log:
        for chunk in iter(lambda: stream.read1(65536), b""):
            sys.stdout.buffer.write(chunk)
            sys.stdout.buffer.flush()
            log.write(chunk)
            log.flush()


def _flag(group, name, **kw):  # PyTorch accepts --foo-bar and --foo_bar
    group.add_argument(f"--{name}", f"--{name.replace('-', '_')}", **kw)


def create_args(parser=None):
    """The launcher's command line (PyTorch's options and defaults)."""
    parser.add_argument("--multi-instance", "--multi_instance", action="store_true",
                        default=False, help="Enable multi-instance, by default one instance per "
                                            "node")
    parser.add_argument("-m", "--module", default=False, action="store_true",
                        help='Run the program as a Python module ("python -m").')
    parser.add_argument("--no-python", "--no_python", default=False, action="store_true",
                        help='Do not prepend the program with "python": run it as an '
                             'executable.')
    group = parser.add_argument_group("Memory Allocator Parameters")
    for name, what in (("enable-tcmalloc", "Enable tcmalloc allocator"),
                       ("enable-jemalloc", "Enable jemalloc allocator"),
                       ("use-default-allocator", "Use default memory allocator")):
        _flag(group, name, action="store_true", default=False, help=what)
    group = parser.add_argument_group("IOMP Parameters")
    _flag(group, "disable-iomp", action="store_true", default=False,
          help="By default, we use Intel OpenMP and libiomp5.so will be add to LD_PRELOAD")
    group = parser.add_argument_group("Multi-instance Parameters")
    _flag(group, "ncores-per-instance", metavar="\b", default=-1, type=int,
          help="Cores per instance")
    group.add_argument("--ninstances", metavar="\b", default=-1, type=int,
                       help="Number of instances")
    _flag(group, "skip-cross-node-cores", action="store_true", default=False,
          help="If specified --ncores-per-instance, skips cross-node cores.")
    group.add_argument("--rank", metavar="\b", default="-1", type=int,
                       help="Run only the instance of this index (ncores_per_instance cores from "
                            "rank * ncores_per_instance)")
    _flag(group, "latency-mode", action="store_true", default=False,
          help="By default 4 core per instance and use all physical cores")
    _flag(group, "throughput-mode", action="store_true", default=False,
          help="By default one instance per node and use all physical cores")
    _flag(group, "node-id", metavar="\b", default=-1, type=int,
          help="node id for multi-instance, by default all nodes will be used")
    _flag(group, "use-logical-core", action="store_true", default=False,
          help="Whether only use physical cores")
    _flag(group, "disable-numactl", action="store_true", default=False, help="Disable numactl")
    _flag(group, "disable-taskset", action="store_true", default=False, help="Disable taskset")
    _flag(group, "core-list", metavar="\b", default=None, type=str,
          help='Specify the core list as "core_id, core_id, ....", otherwise, all the cores '
               'will be used.')
    _flag(group, "log-path", metavar="\b", default="", type=str,
          help='The log file directory. Default path is "", which means disable logging to '
               'files.')
    _flag(group, "log-file-prefix", metavar="\b", default="run", type=str,
          help="log file prefix")
    parser.add_argument("program", type=str,
                        help="The program or script to launch, followed by its arguments")
    parser.add_argument("program_args", nargs=REMAINDER)


def main(args):
    if platform.system() in ("Windows", "Darwin"):
        raise RuntimeError(f"{platform.system()} is not supported!!!")
    if args.log_path:
        os.makedirs(args.log_path, exist_ok=True)
    else:
        args.log_path = os.devnull
    if args.latency_mode and args.throughput_mode:
        raise RuntimeError("Either args.latency_mode or args.throughput_mode should be set")
    if not args.no_python and not args.program.endswith(".py"):
        raise RuntimeError('For non Python script, you should use "--no-python" parameter.')
    if "LD_PRELOAD" in os.environ:  # drop entries that do not exist (the loader would warn)
        valid = []
        for item in os.environ["LD_PRELOAD"].split(":"):
            if glob.glob(item):
                valid.append(item)
            else:
                logger.warning("%s doesn't exist. Removing it from LD_PRELOAD.", item)
        os.environ["LD_PRELOAD"] = ":".join(valid)
    return _Launcher().launch(args)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s - %(name)s - %(levelname)s - "
                                                   "%(message)s")
    parser = ArgumentParser(description="Launch an ember program on CPU cores with core "
                                        "binding, thread counts and a preloaded allocator, as "
                                        "one instance or several.\n\n"
                                        "  python -m ember.backends.xeon.run_cpu script.py args\n"
                                        "  python -m ember.backends.xeon.run_cpu --ninstances N "
                                        "--ncores-per-instance C script.py args",
                            formatter_class=RawTextHelpFormatter)
    create_args(parser)
    sys.exit(main(parser.parse_args()))
