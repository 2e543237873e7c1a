"""The PrivateUse1 path, exercised through the example backend in
``examples/privateuse1_backend.py`` (a device whose memory is a memory-mapped file)."""
import importlib.util
import os

import numpy as np
import pytest

import ember
from helpers import to_np

_EXAMPLE = os.path.join(os.path.dirname(__file__), os.pardir, "examples",
                        "privateuse1_backend.py")


@pytest.fixture(scope="module")
def backend():
    spec = importlib.util.spec_from_file_location("privateuse1_backend", _EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.install()
    return mod


def test_device_name_keys_and_methods(backend):
    dev = ember.device("mmapdev:0")
    assert str(dev) == "mmapdev:0"
    x = ember.arange(6.0).reshape(2, 3)
    d = x.mmapdev()
    assert d.device == dev and d.is_mmapdev and not x.is_mmapdev
    keys = ember._C._dispatch_keys(d)
    assert keys.has("PrivateUse1") and keys.has("AutogradPrivateUse1")
    assert keys.has("AutocastPrivateUse1")
    assert ember.mmapdev.is_available() and ember.mmapdev.device_count() == 1
    with pytest.raises(RuntimeError, match="already been set"):
        ember.utils.rename_privateuse1_backend("otherdev")
    backend.rename_privateuse1_backend("mmapdev")  # the same name again is allowed


def test_memory_lives_in_the_mapped_file(backend):
    before = backend.arena.allocated_bytes
    d = ember.ones(4, 4).to("mmapdev")
    buf = d.untyped_storage()._buf
    assert isinstance(buf, backend.DeviceBuffer)  # not host memory
    assert backend.arena.allocated_bytes - before >= 64
    chunk_file, chunk_map, _ = backend.arena.chunks[buf.chunk]
    raw = np.frombuffer(chunk_map, dtype=np.float32, count=16, offset=buf.start)
    assert raw.tolist() == [1.0] * 16  # the bytes are in the file mapping
    with pytest.raises(RuntimeError):
        d._nd()  # host code cannot view device memory


def test_copies_and_own_kernels(backend):
    x = ember.randn(3, 4)
    w = ember.randn(4, 5)
    b = ember.randn(5)
    d = x.mmapdev()
    r = ((d * 2 + 1).relu().sum()).cpu()
    assert r.device.type == "cpu"
    np.testing.assert_allclose(to_np(r), to_np((x * 2 + 1).clamp(min=0).sum()), rtol=1e-5)
    mm = (d @ w.mmapdev()).cpu()
    np.testing.assert_allclose(to_np(mm), to_np(x @ w), rtol=1e-5)
    am = ember.addmm(b.mmapdev(), d, w.mmapdev()).cpu()
    np.testing.assert_allclose(to_np(am), to_np(ember.addmm(b, x, w)), rtol=1e-5)
    dd = d.to(d.device)  # already there: the same tensor; clone makes a device copy
    assert dd is d and d.clone().device.type == "mmapdev"
    assert repr(ember.zeros(2, device="mmapdev")) == "tensor([0., 0.], device='mmapdev:0')"


def test_cpu_fallback_and_inplace(backend):
    x = ember.randn(2, 3)
    d = x.mmapdev()
    e = d.exp()  # no mmapdev kernel: the fallback computes on the host, returns a device tensor
    assert e.device.type == "mmapdev"
    np.testing.assert_allclose(to_np(e.cpu()), to_np(x.exp()), rtol=1e-5)
    d.mul_(3)  # in place through the fallback writes back into device memory
    np.testing.assert_allclose(to_np(d.cpu()), to_np(x * 3), rtol=1e-5)
    assert d._version > 0


def test_autograd_on_the_device(backend):
    x = ember.randn(3, 4)
    w = ember.randn(4, 2).mmapdev().requires_grad_()
    loss = (x.mmapdev() @ w).sum()
    loss.backward()
    assert w.grad.device.type == "mmapdev"
    np.testing.assert_allclose(to_np(w.grad.cpu()),
                               to_np(x.sum(0, keepdim=True).t().expand(4, 2)), rtol=1e-5)


def test_module_method(backend):
    nn = pytest.importorskip("ember.nn")
    lin = nn.Linear(3, 2).mmapdev()
    assert lin.weight.device.type == "mmapdev"
    y = lin(ember.ones(1, 3).mmapdev())
    assert y.device.type == "mmapdev" and y.shape == (1, 2)
