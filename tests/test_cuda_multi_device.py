"""Two CUDA devices in one process: results stay on their operands' device (PyTorch's device
guard around each CUDA kernel), tensors on two devices are refused, copies cross between them,
and each device keeps its own memory, streams and backward worker. On two simulated devices
(``EMBER_CUDA_SIMULATE=2``), or on a real machine with two GPUs or more."""

import numpy as np
import pytest

import ember
from helpers import real_gpu, simulated_cuda


@pytest.fixture(scope="module", autouse=True)
def two_devices():
    if real_gpu():
        if ember.cuda.device_count() < 2:
            pytest.skip("one GPU here: these need two devices")
        yield
        return
    with simulated_cuda(devices=2):
        yield


def test_two_devices_are_visible():
    assert ember.cuda.device_count() >= 2
    p0, p1 = ember.cuda.get_device_properties(0), ember.cuda.get_device_properties(1)
    assert p0.uuid != p1.uuid
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        ember.ones(1, device=f"cuda:{ember.cuda.device_count()}")


def test_ops_run_on_their_operands_device():
    assert ember.cuda.current_device() == 0
    a = ember.arange(6.0, device="cuda:1").reshape(2, 3)
    b = ember.ones(2, 3, device="cuda:1")
    before0 = ember.cuda.memory_allocated(0)
    before1 = ember.cuda.memory_allocated(1)
    results = [a * 2, a + b, a.exp(), a.sum(0), a @ b.T, a.softmax(-1), a.cumsum(1)]
    c = (a * 2 + b).exp().sum(0)
    d = results[4]
    for t in results + [c]:
        assert t.device == ember.device("cuda:1")
    assert ember.cuda.current_device() == 0  # the guard restores it
    assert ember.cuda.memory_allocated(0) == before0  # nothing landed on device 0
    assert ember.cuda.memory_allocated(1) > before1
    expect = np.exp(np.arange(6.0).reshape(2, 3) * 2 + 1).sum(0)
    assert np.allclose(c.cpu().numpy(), expect, rtol=1e-6)
    assert d.cpu().tolist() == [[3.0, 3.0], [12.0, 12.0]]


def test_tensors_on_two_devices_are_refused_and_left_alone():
    a = ember.ones(3, device="cuda:0")
    b = ember.full((3,), 2.0, device="cuda:1")
    with pytest.raises(RuntimeError, match=r"Expected all tensors to be on the same device, but "
                                           r"found at least two devices, cuda:0 and cuda:1!"):
        a + b
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        b.add_(a)
    assert b.cpu().tolist() == [2.0, 2.0, 2.0]
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        ember.cat([a, b])
    # a 0-dim CPU tensor may join an op on any device
    assert (b * ember.tensor(3.0)).device == ember.device("cuda:1")


def test_storages_live_on_their_own_device():
    before0, before1 = ember.cuda.memory_allocated(0), ember.cuda.memory_allocated(1)
    s = ember.UntypedStorage(1024, device="cuda:1")  # the current device is 0
    assert s.device == ember.device("cuda:1")
    assert ember.cuda.memory_allocated(1) == before1 + 1024
    assert ember.cuda.memory_allocated(0) == before0


def test_copies_between_devices():
    a = ember.arange(5.0, device="cuda:1")
    b = a.to("cuda:0")
    assert b.device == ember.device("cuda:0") and b.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    c = ember.zeros(5, device="cuda:1")
    c.copy_(b * 10)
    assert c.device == ember.device("cuda:1") and c.tolist() == [0.0, 10.0, 20.0, 30.0, 40.0]
    assert a.to("cuda:0", dtype=ember.float64).dtype == ember.float64


def test_the_current_device_picks_the_factories_device():
    with ember.cuda.device(1):
        assert ember.cuda.current_device() == 1
        t = ember.zeros(2, device="cuda")
        s = ember.cuda.current_stream()
    assert t.device == ember.device("cuda:1") and s.device == ember.device("cuda:1")
    assert ember.cuda.current_device() == 0
    side = ember.cuda.Stream(device=1)
    with ember.cuda.stream(side):  # a stream's context makes its device current, as PyTorch's
        assert ember.cuda.current_device() == 1
        assert ember.cuda.current_stream(1) == side
        u = ember.ones(2, device="cuda") + 1
    assert u.device == ember.device("cuda:1") and u.tolist() == [2.0, 2.0]
    assert ember.cuda.current_device() == 0


def test_training_on_the_second_device_matches_the_cpu():
    ember.manual_seed(0)
    cpu = ember.nn.Sequential(ember.nn.Linear(4, 8), ember.nn.GELU(), ember.nn.Linear(8, 3))
    gpu = ember.nn.Sequential(ember.nn.Linear(4, 8), ember.nn.GELU(),
                              ember.nn.Linear(8, 3)).to("cuda:1")
    gpu.load_state_dict(cpu.state_dict())
    opts = [ember.optim.AdamW(m.parameters(), lr=0.01) for m in (cpu, gpu)]
    x = ember.randn(16, 4)
    y = ember.randint(3, (16,))
    for _ in range(3):
        for model, opt, dev in ((cpu, opts[0], "cpu"), (gpu, opts[1], "cuda:1")):
            opt.zero_grad()
            loss = ember.nn.functional.cross_entropy(model(x.to(dev)), y.to(dev))
            loss.backward()
            opt.step()
    for p, q in zip(cpu.parameters(), gpu.parameters()):
        assert q.device == ember.device("cuda:1") and q.grad.device == q.device
        assert np.allclose(p.detach().numpy(), q.detach().cpu().numpy(), atol=1e-5)
    assert ember.cuda.current_device() == 0


# ---------------------------------------------------------------------------------------------
# DataParallel: one process, a replica on each device

def _mlp(seed=0):
    ember.manual_seed(seed)
    nn = ember.nn
    return nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 3))


def test_data_parallel_matches_the_module_and_sums_the_gradients():
    ref, model = _mlp(), _mlp()
    dp = ember.nn.DataParallel(model.cuda())
    assert dp.device_ids == [0, 1] and dp.output_device == 0
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    ref_opt = ember.optim.SGD(ref.parameters(), lr=0.1)
    x, y = ember.randn(10, 4), ember.randn(10, 3)
    for _ in range(3):
        opt.zero_grad()
        ref_opt.zero_grad()
        out = dp(x.cuda())  # 5 rows on each device, gathered on cuda:0
        assert out.device == ember.device("cuda:0") and out.shape == (10, 3)
        (out - y.cuda()).square().mean().backward()
        ref_out = ref(x)
        (ref_out - y).square().mean().backward()
        assert np.allclose(out.detach().cpu().numpy(), ref_out.detach().numpy(), atol=1e-5)
        for p, q in zip(model.parameters(), ref.parameters()):
            assert p.grad.device == ember.device("cuda:0")
            assert np.allclose(p.grad.cpu().numpy(), q.grad.numpy(), atol=1e-5)
        opt.step()
        ref_opt.step()
    assert ember.cuda.current_device() == 0


def test_data_parallel_replicas_buffers_and_structures():
    nn = ember.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin, self.bn = nn.Linear(3, 3), nn.BatchNorm1d(3)

        def forward(self, x, scale=1.0, extra=None):
            h = self.bn(self.lin(x)) * scale
            return {"out": h, "pair": (h.sum(1), extra + h[:, :1])}

    ember.manual_seed(1)
    net = Net().cuda()
    ref = Net()
    ref.load_state_dict({k: v.cpu() for k, v in net.state_dict().items()})
    dp = ember.nn.DataParallel(net)
    x, extra = ember.randn(6, 3), ember.randn(6, 1)
    got = dp(x.cuda(), scale=2.0, extra=extra.cuda())  # kwargs split too; 2.0 is replicated
    assert set(got) == {"out", "pair"} and got["out"].device == ember.device("cuda:0")
    expect_first = ref(x[:3], scale=2.0, extra=extra[:3])
    assert np.allclose(got["out"][:3].detach().cpu().numpy(),
                       expect_first["out"].detach().numpy(), atol=1e-5)
    assert np.allclose(got["pair"][1][:3].detach().cpu().numpy(),
                       expect_first["pair"][1].detach().numpy(), atol=1e-5)
    # the first device's replica holds the module's own buffers: its batch updated the running
    # statistics (the other replica's update went to its copy), as in PyTorch
    assert np.allclose(net.bn.running_mean.cpu().numpy(), ref.bn.running_mean.numpy(),
                       atol=1e-6)
    assert int(net.bn.num_batches_tracked) == 1


def test_data_parallel_uneven_and_small_batches():
    model = _mlp().cuda()
    dp = ember.nn.DataParallel(model)
    assert dp(ember.randn(3, 4, device="cuda")).shape == (3, 3)  # chunks of 2 and 1
    assert dp(ember.randn(1, 4, device="cuda")).shape == (1, 3)  # one replica only
    with ember.no_grad():
        out = dp(ember.randn(4, 4, device="cuda"))
    assert not out.requires_grad


def test_data_parallel_errors():
    model = _mlp().cuda()
    dp = ember.nn.DataParallel(model, device_ids=[0, 1])
    with pytest.raises(RuntimeError, match=r"module must have its parameters and buffers on "
                                           r"device cuda:0 \(device_ids\[0\]\) but found one of "
                                           r"them on device: cuda:1"):
        ember.nn.DataParallel(_mlp().to("cuda:1"))(ember.randn(2, 4, device="cuda"))

    class Fails(ember.nn.Module):
        def forward(self, x):
            if x.get_device() == 1:
                raise ValueError("bad rows")
            return x

    with pytest.raises(ValueError, match=r"Caught ValueError in replica 1 on device 1"):
        ember.nn.DataParallel(Fails())(ember.randn(4, 2, device="cuda"))
    # a scalar per replica is gathered into a vector, with PyTorch's warning
    loss_net = ember.nn.DataParallel(_mlp().cuda())
    with pytest.warns(UserWarning, match="all input tensors were scalars"):
        losses = ember.nn.parallel.data_parallel(
            ember.nn.Sequential(loss_net.module, _Sum()), ember.randn(4, 4, device="cuda"))
    assert losses.shape == (2,)
    assert dp(ember.randn(2, 4, device="cuda")).shape == (2, 3)


class _Sum(ember.nn.Module):
    def forward(self, x):
        return x.sum()


def test_comm_copies():
    from ember.cuda import comm
    a = ember.arange(6.0, device="cuda:0").reshape(3, 2)
    b0, b1 = comm.broadcast(a, [0, 1])
    assert b0 is a and b1.device == ember.device("cuda:1") and b1.tolist() == a.tolist()
    s = comm.reduce_add([a, b1], destination=1)
    assert s.device == ember.device("cuda:1") and s.tolist() == (a * 2).tolist()
    parts = comm.scatter(a, [0, 1], chunk_sizes=[1, 2])
    assert [p.device.index for p in parts] == [0, 1] and parts[1].tolist() == [[2, 3], [4, 5]]
    back = comm.gather(parts, dim=0, destination="cpu")
    assert back.device == ember.device("cpu") and back.tolist() == a.tolist()
    with pytest.raises(RuntimeError, match="reduce_add expects destination"):
        comm.reduce_add([a, a], destination=1)
