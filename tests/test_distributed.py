"""ember.distributed, DDP and the launcher: multi-process runs through
``python -m ember.distributed.run`` (tests/_distributed_worker.py checks every collective and DDP
against single-process references on each rank), plus the parts that need no peers."""
import os
import subprocess
import sys
import time

import pytest

import ember as torch
import ember.distributed as dist

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKER = os.path.join(ROOT, "tests", "_distributed_worker.py")

needs_mpi = pytest.mark.skipif(not dist.is_available(), reason="mpi4py is not installed")


def launch(nproc, end, timeout=120, env=None, worker=WORKER):
    t = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "ember.distributed.run", "--standalone",
                        "--nproc-per-node", str(nproc), worker, end], cwd=ROOT,
                       capture_output=True, text=True, timeout=timeout,
                       env=None if env is None else {**os.environ, **env})
    return p, time.monotonic() - t


@needs_mpi
def test_two_ranks_then_a_rank_is_killed():
    # each rank gets the simulated CUDA device: the worker checks collectives and DDP on cuda
    p, _ = launch(2, "kill", env={"EMBER_CUDA_SIMULATE": "1"})
    out = p.stdout + p.stderr
    # every collective and the DDP checks passed on both ranks
    assert "PASS 0" in out and "PASS 1" in out, out
    # then rank 1 was killed inside a collective: the job fails, naming it, and rank 0 did not
    # carry on (the launcher stopped it)
    assert p.returncode != 0
    assert "rank      : 1 (local_rank: 1)" in out and "exitcode  : 9" in out, out
    assert "finished a collective without rank 1" not in out


@needs_mpi
def test_three_ranks_then_a_rank_leaves():
    p, _ = launch(3, "leave")
    out = p.stdout + p.stderr
    for r in range(3):
        assert f"PASS {r}" in out, out
    # rank 2 exited without a word: the others' all_reduce times out and names it
    for r in range(2):
        assert f"TIMEOUT {r}: [Rank {r}] all_reduce timed out after 1000 ms: ranks [2] have " \
               f"exited" in out, out
    assert p.returncode == 0, out


@needs_mpi
def test_launcher_exit_code_and_environment(tmp_path):
    script = tmp_path / "s.py"
    script.write_text(
        "import os, sys\n"
        "keys = ['RANK', 'LOCAL_RANK', 'WORLD_SIZE', 'LOCAL_WORLD_SIZE', 'MASTER_ADDR',"
        " 'MASTER_PORT', 'GROUP_RANK']\n"
        "print(' '.join(k + '=' + os.environ[k] for k in keys), sys.argv[1:], flush=True)\n"
        "sys.exit(3 if os.environ['RANK'] == '1' else 0)\n")
    p = subprocess.run([sys.executable, "-m", "ember.distributed.run", "--standalone",
                        "--nproc_per_node=2", str(script), "--flag", "x"], cwd=ROOT,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 1
    assert "RANK=0 LOCAL_RANK=0 WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1" in p.stdout
    assert "['--flag', 'x']" in p.stdout
    assert "exitcode  : 3" in p.stderr and "rank      : 1" in p.stderr


@needs_mpi
def test_legacy_launch_module(tmp_path):
    """torch.distributed.launch: torchrun's launcher that also passes --local-rank=N before
    the script's arguments (unless --use-env), with PyTorch's deprecation warning."""
    script = tmp_path / "s.py"
    script.write_text("import os, sys\nprint('ARGS', os.environ['LOCAL_RANK'], sys.argv[1:])\n")
    run = [sys.executable, "-m", "ember.distributed.launch", "--nproc-per-node", "2"]
    p = subprocess.run(run + [str(script), "--x", "1"], cwd=ROOT, capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert sorted(line for line in p.stdout.splitlines() if line.startswith("ARGS")) == [
        "ARGS 0 ['--local-rank=0', '--x', '1']", "ARGS 1 ['--local-rank=1', '--x', '1']"]
    assert "FutureWarning: The module torch.distributed.launch is deprecated" in p.stderr
    p = subprocess.run(run[:4] + ["1", "--use-env", str(script)], cwd=ROOT,
                       capture_output=True, text=True, timeout=60)
    assert p.stdout.split() == ["ARGS", "0", "[]"], p.stderr
    p = subprocess.run(run + ["--no-python", str(script)], cwd=ROOT, capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 1 and "ValueError: When using the '--no-python' flag, you must " \
                                  "also set the '--use-env' flag." in p.stderr


def test_errors_before_init():
    assert not dist.is_initialized()
    msg = "Default process group has not been initialized, please make sure to call " \
          "init_process_group."
    with pytest.raises(ValueError, match=msg):
        dist.all_reduce(torch.ones(2))
    with pytest.raises(ValueError, match=msg):
        dist.get_rank()


def test_names():
    assert dist.Backend("GLOO") == "gloo" and dist.Backend("mpi") == dist.Backend.MPI
    assert dist.ReduceOp.SUM is dist.ReduceOp.RedOpType.SUM
    assert {o.name for o in dist.ReduceOp.RedOpType} >= {"SUM", "AVG", "PRODUCT", "MIN", "MAX",
                                                          "BAND", "BOR", "BXOR"}
    import ember.nn.parallel as par
    assert par.DistributedDataParallel is torch.nn.parallel.DistributedDataParallel


@needs_mpi
def test_world_of_one(monkeypatch):
    for k, v in {"RANK": "0", "WORLD_SIZE": "1"}.items():
        monkeypatch.setenv(k, v)
    dist.init_process_group("gloo")
    try:
        assert dist.get_rank() == 0 and dist.get_world_size() == 1
        assert dist.get_backend() == "gloo"
        with pytest.raises(ValueError, match="twice"):
            dist.init_process_group("gloo")
        t = torch.arange(4.0)
        w = dist.all_reduce(t, op=dist.ReduceOp.AVG, async_op=True)
        assert w.wait() and w.is_completed()
        assert t.tolist() == [0.0, 1.0, 2.0, 3.0]
        objs = [None]
        dist.all_gather_object(objs, {"a": 1})
        assert objs == [{"a": 1}]
        # DDP on one rank is the module itself
        torch.manual_seed(0)
        m = torch.nn.Linear(3, 2)
        ddp = torch.nn.parallel.DistributedDataParallel(m)
        ddp(torch.ones(4, 3)).sum().backward()
        assert m.weight.grad.tolist() == [[4.0] * 3] * 2
        assert list(ddp.state_dict()) == ["module.weight", "module.bias"]
    finally:
        dist.destroy_process_group()
    assert not dist.is_initialized()


def test_distributed_sampler_partitions_as_pytorch():
    tud = pytest.importorskip("torch.utils.data.distributed")
    from ember.utils.data.distributed import DistributedSampler
    ds = list(range(11))
    for drop_last in (False, True):
        for r in range(3):
            a = list(tud.DistributedSampler(ds, 3, r, shuffle=False, drop_last=drop_last))
            b = list(DistributedSampler(ds, 3, r, shuffle=False, drop_last=drop_last))
            assert a == b
    # shuffled: a permutation split over the ranks (padded), the same on every rank for an
    # epoch and different across epochs
    parts = [list(DistributedSampler(ds, 3, r, seed=1)) for r in range(3)]
    assert all(len(p) == 4 for p in parts)
    assert set(sum(parts, [])) == set(ds)
    s = DistributedSampler(ds, 3, 0, seed=1)
    first = list(s)
    s.set_epoch(1)
    assert list(s) != first and list(DistributedSampler(ds, 3, 0, seed=1)) == first
    with pytest.raises(ValueError, match="Invalid rank 3"):
        DistributedSampler(ds, 3, 3)


def test_data_parallel_is_a_pass_through():
    m = torch.nn.Linear(3, 2)
    dp = torch.nn.DataParallel(m)
    x = torch.ones(2, 3)
    assert torch.equal(dp(x), m(x))
    assert list(dp.state_dict()) == ["module.weight", "module.bias"]


def test_future_then_and_collect_all():
    from ember.futures import Future, collect_all
    f = Future()
    g = f.then(lambda fut: fut.value() + 1)
    both = collect_all([f, g])
    assert not g.done()
    f.set_result(1)
    assert g.wait() == 2 and both.wait() == [f, g]
    h = Future()
    e = h.then(lambda fut: fut.value())
    h.set_exception(ValueError("boom"))
    with pytest.raises(ValueError, match="boom"):
        e.wait()


def test_queue_callback_runs_at_the_end_of_backward():
    from ember.autograd import Variable
    x = torch.ones(3, requires_grad=True)
    seen = []

    def hook(p):
        seen.append("hook")
        Variable._execution_engine.queue_callback(lambda: seen.append(x.grad.sum().item()))

    x.register_post_accumulate_grad_hook(hook)
    (x * 2).sum().backward()
    assert seen == ["hook", 6.0]
    with pytest.raises(RuntimeError, match="Final callbacks can only be installed during "
                                           "backward pass."):
        Variable._execution_engine.queue_callback(lambda: None)
