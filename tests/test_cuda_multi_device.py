"""Two CUDA devices in one process: results stay on their operands' device (PyTorch's device
guard around each CUDA kernel), tensors on two devices are refused, copies cross between them,
and each device keeps its own memory, streams and backward worker. On two simulated devices
(``EMBER_CUDA_SIMULATE=2``), or on a real machine with two GPUs or more."""
import os

import numpy as np
import pytest

import ember
from helpers import real_gpu


@pytest.fixture(scope="module", autouse=True)
def two_devices():
    if real_gpu():
        if ember.cuda.device_count() < 2:
            pytest.skip("one GPU here: these need two devices")
        yield
        return
    saved = os.environ.get("EMBER_CUDA_SIMULATE")
    ember.cuda._forget_runtime()
    os.environ["EMBER_CUDA_SIMULATE"] = "2"
    try:
        yield
    finally:
        if saved is None:
            del os.environ["EMBER_CUDA_SIMULATE"]
        else:
            os.environ["EMBER_CUDA_SIMULATE"] = saved
        import gc
        gc.collect()
        ember.cuda._forget_runtime()


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
