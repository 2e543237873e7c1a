"""The nccl backend (ember/distributed/_nccl.py): on a GPU (the ``cuda`` tests) every collective,
asynchronous work on side streams, the mixed ``cpu:gloo,cuda:nccl`` backend and DDP over NCCL in a
world of one rank (NCCL refuses two ranks on one GPU, and the lent machines have one); everywhere,
the backend names and the errors PyTorch gives where NCCL cannot run."""
import copy
from datetime import timedelta

import numpy as np
import pytest

import ember as torch
import ember.distributed as dist
from ember.distributed import _nccl, distributed_c10d as c10d

needs_mpi = pytest.mark.skipif(not dist.is_available(), reason="mpi4py is not installed")


@pytest.fixture
def world(monkeypatch):
    """A world of one rank with the backend the test names; destroyed afterwards."""
    for k, v in {"RANK": "0", "WORLD_SIZE": "1"}.items():
        monkeypatch.setenv(k, v)

    def init(backend):
        dist.init_process_group(backend)
    yield init
    if dist.is_initialized():
        dist.destroy_process_group()


def test_device_backends_as_pytorch_names_them():
    assert c10d._device_backends("nccl") == {"cuda": "nccl"}
    assert c10d._device_backends("gloo") == {"cpu": "gloo", "cuda": "gloo"}
    assert c10d._device_backends("cpu:gloo,cuda:nccl") == {"cpu": "gloo", "cuda": "nccl"}


def test_nccl_needs_cupy_and_a_gpu(monkeypatch, cuda_device):
    if cuda_device == "gpu":
        pytest.skip("this machine can run NCCL")
    monkeypatch.setattr(_nccl, "available", lambda: False)
    with pytest.raises(RuntimeError, match="Distributed package doesn't have NCCL built in"):
        _nccl.check_usable()
    assert not dist.is_nccl_available()
    # CuPy's NCCL present but only the simulated device: no GPU to run it on
    monkeypatch.setattr(_nccl, "available", lambda: True)
    with pytest.raises(RuntimeError, match="only supported with GPUs, no GPUs found"):
        _nccl.check_usable()
    assert c10d._default_backend() == "gloo"


@needs_mpi
def test_nccl_failing_at_init_leaves_no_group(world, monkeypatch):
    monkeypatch.setattr(_nccl, "available", lambda: False)
    with pytest.raises(RuntimeError, match="NCCL"):
        world("nccl")
    with pytest.raises(RuntimeError, match="Invalid backend: 'ucc'"):
        world("cpu:gloo,cuda:ucc")
    assert not dist.is_initialized()


@needs_mpi
def test_a_tensor_of_a_device_without_backend_is_refused():
    """A group whose only backend is nccl has none for CPU tensors (PyTorch's message)."""
    MPI = dist.distributed_c10d._mpi.mpi()
    pg = c10d.ProcessGroup(MPI.COMM_SELF.Dup(), "nccl", [0], c10d.HashStore(timedelta(seconds=5)),
                           timedelta(seconds=5), (0, 1))
    try:
        with pytest.raises(RuntimeError, match="No backend type associated with device type cpu"):
            dist.all_reduce(torch.ones(2), group=pg)
    finally:
        pg._comm.Free()


# --- on a GPU


def _cuda(*shape, dtype=torch.float32):
    return torch.randn(*shape).to(dtype).cuda()


@pytest.mark.cuda
def test_every_collective_on_nccl(world):
    world("nccl")
    assert dist.get_backend() == "nccl" and dist.is_nccl_available()
    for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64,
                  torch.int32, torch.uint8, torch.bool, torch.complex64):
        for op in ("SUM", "AVG", "MAX", "MIN", "PRODUCT"):
            if (dtype is torch.complex64 and op not in ("SUM", "AVG")) or \
                    (dtype is torch.bool and op == "AVG"):
                continue
            x = (torch.arange(6) % 3 > 0 if dtype is torch.bool
                 else (torch.arange(6) * 3 - 5).to(dtype)).cuda()
            want = x.cpu().clone()
            dist.all_reduce(x, op=getattr(dist.ReduceOp, op))  # one rank: the tensor itself
            assert torch.equal(x.cpu(), want), (dtype, op)
    x = _cuda(5, 3)
    want = x.cpu()
    dist.broadcast(x, src=0)
    dist.reduce(x, dst=0, op=dist.ReduceOp.SUM)
    assert torch.equal(x.cpu(), want)
    outs = [torch.empty(5, 3, device="cuda")]
    dist.all_gather(outs, x)
    assert torch.equal(outs[0].cpu(), want)
    flat = torch.empty(15, device="cuda")
    dist.all_gather_into_tensor(flat, x)
    assert torch.equal(flat.cpu(), want.reshape(-1))
    out = torch.empty(5, 3, device="cuda")
    dist.reduce_scatter(out, [x])
    assert torch.equal(out.cpu(), want)
    out.zero_()
    dist.reduce_scatter_tensor(out, x, op=dist.ReduceOp.MAX)
    assert torch.equal(out.cpu(), want)
    y = torch.empty(5, 3, device="cuda")
    dist.all_to_all_single(y, x)
    assert torch.equal(y.cpu(), want)
    outs = [torch.empty(5, 3, device="cuda", dtype=torch.float64)]
    dist.all_to_all(outs, [x.double()])
    assert torch.equal(outs[0].cpu(), want.double())
    gathered = [torch.empty(5, 3, device="cuda")]
    dist.gather(x, gathered, dst=0)
    assert torch.equal(gathered[0].cpu(), want)
    z = torch.empty(5, 3, device="cuda")
    dist.scatter(z, [x], src=0)
    assert torch.equal(z.cpu(), want)
    dist.barrier()
    objs = [None]
    dist.all_gather_object(objs, {"rank": 0})  # objects travel on the group's MPI side
    assert objs == [{"rank": 0}]


@pytest.mark.cuda
def test_nccl_errors_as_pytorch(world):
    world("nccl")
    with pytest.raises(ValueError, match="Cannot use ReduceOp.BAND with NCCL"):
        dist.all_reduce(_cuda(3), op=dist.ReduceOp.BAND)
    with pytest.raises(ValueError, match="does not support ReduceOp.MAX on complex"):
        dist.all_reduce(_cuda(3, dtype=torch.complex64), op=dist.ReduceOp.MAX)
    with pytest.raises(RuntimeError, match="Cannot use ReduceOp.AVG with boolean"):
        dist.all_reduce(torch.ones(3, dtype=torch.bool, device="cuda"), op=dist.ReduceOp.AVG)
    with pytest.raises(RuntimeError, match="Unsupported data type for NCCL process group"):
        dist.all_reduce(torch.ones(3, dtype=torch.int16, device="cuda"))
    t = _cuda(4, 4)
    before = t.cpu()
    with pytest.raises(ValueError, match="Tensors must be contiguous"):
        dist.all_reduce(t.t())
    assert torch.equal(t.cpu(), before)  # untouched
    with pytest.raises(RuntimeError, match="No backend type associated with device type cpu"):
        dist.all_reduce(torch.ones(2))


@pytest.mark.cuda
def test_async_work_on_a_side_stream_is_ordered_by_wait(world):
    """``wait()`` orders the caller's current stream after the collective without blocking the
    host; the future completes with the tensors; a large tensor exercises the real transfer."""
    world("nccl")
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        x = torch.full((1 << 22,), 2.0, device="cuda")
        work = dist.all_reduce(x, op=dist.ReduceOp.SUM, async_op=True)
        work.wait()
        y = x * 3  # queued after the collective on s
    fut = work.get_future()
    assert fut.wait()[0] is x
    torch.cuda.synchronize()
    assert work.is_completed() and work.is_success()
    assert float(y.sum()) == 6.0 * (1 << 22)


@pytest.mark.cuda
def test_mixed_backend_routes_by_device(world):
    world("cpu:gloo,cuda:nccl")
    pg = c10d._get_default_group()
    c, g = torch.arange(4.0), torch.arange(4.0, device="cuda")
    dist.all_reduce(c)
    dist.all_reduce(g)
    assert c.tolist() == g.tolist() == [0.0, 1.0, 2.0, 3.0]
    assert list(pg._nccl) == [0]  # the CUDA tensor made the NCCL communicator; the CPU one not
    dist.barrier()  # the CPU side's barrier (MPI)


@pytest.mark.cuda
def test_ddp_over_nccl_equals_plain_training(world):
    world("nccl")
    torch.manual_seed(0)
    ref = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(),
                              torch.nn.Linear(16, 4)).cuda()
    model = copy.deepcopy(ref)
    ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[0])
    opts = [torch.optim.SGD(m.parameters(), lr=0.1) for m in (ref, ddp)]
    for step in range(3):
        x, y = _cuda(32, 8), _cuda(32, 4)
        for m, opt in zip((ref, ddp), opts):
            opt.zero_grad()
            torch.nn.functional.mse_loss(m(x), y).backward()
            opt.step()
    for a, b in zip(ref.parameters(), model.parameters()):
        assert b.grad.is_cuda
        np.testing.assert_allclose(a.detach().cpu().numpy(), b.detach().cpu().numpy(),
                                   rtol=1e-6, atol=1e-7)
    assert list(c10d._get_default_group()._nccl) == [0]  # the buckets went through NCCL
