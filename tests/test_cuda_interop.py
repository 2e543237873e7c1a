"""Host <-> device interop: pinned memory and the caching host allocator, non_blocking copies,
DataLoader(pin_memory=True), DLPack with NumPy (and CuPy on a real GPU). On the simulated device
unless a real GPU is present (the cuda_device fixture of tests/conftest.py); tests that steer the simulation (holding
a stream back) skip on a real GPU."""
import gc
import warnings

import numpy as np
import pytest

import ember
from ember.cuda import _host_allocator
from helpers import real_gpu

_REAL_GPU = real_gpu()
sim_only = pytest.mark.skipif(_REAL_GPU, reason="steers the simulated device")


pytestmark = pytest.mark.usefixtures("cuda_device")  # the GPU or the simulated device


@pytest.fixture
def no_accelerator(monkeypatch):
    """A process without CUDA: no simulation asked for, and no CuPy."""
    if _REAL_GPU:
        pytest.skip("a GPU is present")
    import importlib.util
    if importlib.util.find_spec("cupy") is not None:
        pytest.skip("CuPy is installed")
    monkeypatch.setenv("EMBER_CUDA_SIMULATE", "0")


def _host():
    return _host_allocator.get_allocator()


# ---------------------------------------------------------------------------------------------
# pinned memory

def test_pin_memory_copies_into_pinned_memory_keeping_layout():
    t = ember.arange(6.).reshape(2, 3).t()
    assert not t.is_pinned()
    p = t.pin_memory()
    assert p.is_pinned() and p.stride() == t.stride() and p.device == ember.device("cpu")
    assert ember.equal(p, t) and p.data_ptr() != t.data_ptr()
    assert p.pin_memory() is p  # pinned already: no copy
    assert p[1:].is_pinned()  # a view inside the block
    assert p.untyped_storage().is_pinned() and not t.untyped_storage().is_pinned()
    s = t.untyped_storage().pin_memory()
    assert s.is_pinned() and bytes(s._data()) == bytes(t.untyped_storage()._data())
    g = ember.ones(2, requires_grad=True)
    y = g.pin_memory()
    y.sum().backward()
    assert type(y.grad_fn).__name__ == "PinMemoryBackward0" and g.grad.tolist() == [1.0, 1.0]


def test_pin_memory_leaves_the_warnings_registry_alone():
    """pin_memory runs per batch (DataLoader(pin_memory=True)): it must not reset warning
    filters' state, so a "once" warning raised between calls is shown once; passing the
    deprecated device warns once per call, as PyTorch's."""
    t = ember.ones(3)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("once")
        for _ in range(3):
            warnings.warn("unrelated", UserWarning)
            t.pin_memory()
    assert [str(w.message) for w in seen] == ["unrelated"]
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        t.pin_memory("cuda")
    assert [w.category for w in seen] == [DeprecationWarning]


def test_factories_honour_pin_memory():
    made = [ember.empty(3, pin_memory=True), ember.zeros(3, pin_memory=True),
            ember.ones(2, 2, pin_memory=True), ember.full((2,), 7, pin_memory=True),
            ember.arange(4, pin_memory=True), ember.linspace(0, 1, 5, pin_memory=True),
            ember.eye(3, pin_memory=True), ember.rand(3, pin_memory=True),
            ember.empty_like(ember.ones(2), pin_memory=True),
            ember.tensor([1, 2], pin_memory=True)]
    assert all(t.is_pinned() for t in made)
    assert made[3].tolist() == [7, 7] and made[4].tolist() == [0, 1, 2, 3]
    assert made[9].tolist() == [1, 2]
    assert not ember.zeros(3).is_pinned()
    with pytest.raises(RuntimeError, match="Only dense CPU tensors can be pinned"):
        ember.empty(2, device="cuda", pin_memory=True)
    with pytest.raises(RuntimeError, match="cannot pin 'torch.cuda.FloatTensor' only dense CPU"):
        ember.ones(2, device="cuda").pin_memory()
    with pytest.raises(TypeError, match="only CPU memory can be pinned"):
        ember.ones(2, device="cuda").untyped_storage().pin_memory()


def test_device_argument_is_deprecated():
    t = ember.ones(2)
    with pytest.warns(DeprecationWarning, match="The argument 'device' of Tensor.is_pinned"):
        assert not t.is_pinned("cuda")
    with pytest.warns(DeprecationWarning, match="The argument 'device' of Tensor.pin_memory"):
        assert t.pin_memory("cuda").is_pinned()


def test_errors_without_an_accelerator_match_pytorch(no_accelerator):
    t = ember.ones(3)
    assert not t.is_pinned()
    with pytest.raises(RuntimeError) as e1:
        t.pin_memory()
    with pytest.raises(RuntimeError) as e2:
        ember.empty(3, pin_memory=True)
    with pytest.raises(RuntimeError) as e3:
        ember.accelerator.empty_host_cache()
    torch = pytest.importorskip("torch")
    if torch.accelerator.is_available():
        return
    for ours, theirs in ((e1, lambda: torch.ones(3).pin_memory()),
                         (e2, lambda: torch.empty(3, pin_memory=True)),
                         (e3, torch.accelerator.empty_host_cache)):
        with pytest.raises(RuntimeError) as ref:
            theirs()
        assert str(ours.value) == str(ref.value)


def test_host_allocator_rounds_caches_and_reuses():
    a = _host()
    a.empty_cache()
    before = _host_allocator.host_memory_stats()
    t = ember.empty(100, dtype=ember.uint8, pin_memory=True)
    block = a.find(t.data_ptr())
    assert block.size == 128 and block.ptr == t.data_ptr()  # a power of two
    ptr = t.data_ptr()
    del t
    gc.collect()
    u = ember.empty(120, dtype=ember.uint8, pin_memory=True)  # same bucket: the cached block
    assert u.data_ptr() == ptr
    v = ember.empty(300, dtype=ember.uint8, pin_memory=True)
    assert a.find(v.data_ptr()).size == 512
    s = _host_allocator.host_memory_stats()
    assert s["num_host_alloc"] - before["num_host_alloc"] == 2
    assert s["active_requests.current"] - before["active_requests.current"] == 2
    assert s["active_bytes.current"] - before["active_bytes.current"] == 640
    assert s["allocated_bytes.current"] - before["allocated_bytes.current"] == 640
    assert {"allocations.peak", "host_alloc_time.avg", "host_free_time.count",
            "num_host_free"} <= set(s)
    assert list(s) == sorted(s)
    del u, v
    gc.collect()
    s = _host_allocator.host_memory_stats()
    assert s["active_requests.current"] == before["active_requests.current"]
    assert s["allocations.current"] - before["allocations.current"] == 2  # cached, not freed
    ember.accelerator.empty_host_cache()
    s = _host_allocator.host_memory_stats()
    assert s["allocations.current"] == 0 and s["allocated_bytes.current"] == 0
    assert s["num_host_free"] - before["num_host_free"] == 2
    assert ember.cuda.host_memory_stats_as_nested_dict()["host_free_time"]["count"] >= 2
    ember.cuda.reset_peak_host_memory_stats()
    ember.cuda.reset_accumulated_host_memory_stats()
    s = _host_allocator.host_memory_stats()
    assert s["allocations.peak"] == 0 and s["num_host_alloc"] == 0


# ---------------------------------------------------------------------------------------------
# non_blocking copies

def test_non_blocking_round_trip():
    x = ember.arange(8.).reshape(2, 4)
    p = x.pin_memory()
    d = p.to("cuda", non_blocking=True)
    d2 = p.cuda(non_blocking=True)
    d3 = ember.empty(2, 4, device="cuda").copy_(p, non_blocking=True)
    back = d.to("cpu", non_blocking=True)  # into pinned memory, as PyTorch's pin_out
    assert back.is_pinned()
    ember.cuda.synchronize()
    for t in (d, d2, d3):
        assert t.is_cuda and ember.equal(t.cpu(), x)
    assert ember.equal(back, x)
    out = ember.empty(2, 4).pin_memory()
    out.copy_(d, non_blocking=True)
    ember.cuda.current_stream().synchronize()
    assert ember.equal(out, x)
    # pageable memory: non_blocking is accepted and the copy is synchronous
    assert ember.equal(x.to("cuda", non_blocking=True).cpu(), x)
    assert not x.to("cuda").to("cpu").is_pinned()


@sim_only
def test_non_blocking_copies_run_on_the_stream_without_syncing():
    rt = ember.cuda._lazy_init()
    s = ember.cuda.Stream()
    rt.hold(s.cuda_stream)
    try:
        with ember.cuda.stream(s):
            d = ember.arange(4.).pin_memory().to("cuda", non_blocking=True)
            assert not s.query()  # launched, not waited for
            h = ember.empty(4).pin_memory()
            h.copy_(d, non_blocking=True)
            assert not s.query()  # a pinned device-to-host copy does not sync either
            ember.empty(4).copy_(d)  # pageable: synchronous, so the stream is drained
            assert s.query()
    finally:
        rt.release(s.cuda_stream)
    assert h.tolist() == [0, 1, 2, 3]


@sim_only
def test_pinned_block_of_a_pending_copy_is_not_reused():
    rt = ember.cuda._lazy_init()
    a = _host()
    a.empty_cache()
    s = ember.cuda.Stream()
    rt.hold(s.cuda_stream)
    try:
        with ember.cuda.stream(s):
            src = ember.empty(64, dtype=ember.uint8, pin_memory=True)
            dst = src.to("cuda", non_blocking=True)
        ptr = src.data_ptr()
        assert a.find(ptr).streams == {(0, s.cuda_stream)}
        del src
        gc.collect()
        assert a.find(ptr).event_count == 1  # an event recorded on the held stream
        other = ember.empty(64, dtype=ember.uint8, pin_memory=True)
        assert other.data_ptr() != ptr  # the copy may still read it: not handed out
        ember.accelerator.empty_host_cache()
        assert a.find(ptr) is not None  # a block waiting for its event is not released either
    finally:
        rt.release(s.cuda_stream)
    again = ember.empty(64, dtype=ember.uint8, pin_memory=True)
    assert again.data_ptr() == ptr  # the event completed: the block is free again
    # a block used only by blocking copies goes straight back to the cache
    q = ember.empty(64, dtype=ember.uint8, pin_memory=True)
    q.to("cuda")
    qptr = q.data_ptr()
    del q
    gc.collect()
    assert ember.empty(64, dtype=ember.uint8, pin_memory=True).data_ptr() == qptr
    del dst, other, again


# ---------------------------------------------------------------------------------------------
# DataLoader(pin_memory=True)

def test_dataloader_pins_nested_batches():
    from ember.utils.data import DataLoader, TensorDataset
    ds = TensorDataset(ember.arange(8.).reshape(4, 2), ember.arange(4))
    for loader in (DataLoader(ds, batch_size=2, pin_memory=True),
                   DataLoader(ds, batch_size=2, pin_memory=True,
                              collate_fn=lambda b: {"x": [ember.stack([t[0] for t in b])],
                                                    "n": len(b), "name": "batch"})):
        batches = list(loader)
        assert len(batches) == 2
        for b in batches:
            tensors = b if isinstance(b, list) else b["x"]
            assert all(t.is_pinned() for t in tensors)
    assert batches[0]["n"] == 2 and batches[0]["name"] == "batch"
    assert not any(t.is_pinned() for t in next(iter(DataLoader(ds, batch_size=2))))


def test_dataloader_pin_memory_without_accelerator_warns(no_accelerator):
    from ember.utils.data import DataLoader, TensorDataset
    loader = DataLoader(TensorDataset(ember.arange(4.)), batch_size=2, pin_memory=True)
    with pytest.warns(UserWarning, match="'pin_memory' argument is set as true but no "
                                         "accelerator is found, then device pinned memory "
                                         "won't be used."):
        batches = list(loader)
    assert not batches[0][0].is_pinned()


# ---------------------------------------------------------------------------------------------
# DLPack

def test_dlpack_with_numpy_shares_memory_and_layout():
    t = ember.arange(12.).reshape(3, 4)[1:, ::2]
    n = np.from_dlpack(t)
    torch = pytest.importorskip("torch")
    r = np.from_dlpack(torch.arange(12.).reshape(3, 4)[1:, ::2])
    assert n.strides == r.strides and n.shape == r.shape and np.array_equal(n, r)
    n[0, 0] = 100
    assert t[0, 0].item() == 100
    a = np.arange(12).reshape(3, 4).T
    e = ember.from_dlpack(a)
    assert e.stride() == torch.from_dlpack(a).stride() and e.tolist() == a.tolist()
    e[0, 0] = -5
    assert a[0, 0] == -5
    assert ember.from_dlpack(np.zeros((0, 3))).shape == (0, 3)
    assert ember.from_dlpack(np.array(3.0)).item() == 3.0
    assert ember.from_dlpack(np.broadcast_to(np.arange(3.), (2, 3))).stride() == (0, 1)
    with pytest.raises(RuntimeError, match="Storage size calculation overflowed"):
        ember.from_dlpack(np.arange(3.)[::-1])


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int8", "int16", "int32", "int64", "float16",
                                   "float32", "float64", "complex64", "complex128"])
def test_dlpack_dtypes_round_trip_with_numpy(dtype):
    t = ember.tensor([1, 0, 1], dtype=getattr(ember, dtype))
    n = np.from_dlpack(t)
    assert n.dtype == np.dtype(dtype) and n.tolist() == t.tolist()
    back = ember.from_dlpack(n)
    assert back.dtype is t.dtype and back.data_ptr() == t.data_ptr()


def test_dlpack_capsules_encode_like_pytorch():
    torch = pytest.importorskip("torch")
    from ember import _dlpack
    for name in ("bool", "bfloat16", "complex64", "int16"):
        ours = ember.zeros(2, dtype=getattr(ember, name)).__dlpack__()
        theirs = torch.zeros(2, dtype=getattr(torch, name)).__dlpack__()
        ptr_o = _dlpack._capsule_get_pointer(ours, ctypes_addr(_dlpack._NAME))
        ptr_t = _dlpack._capsule_get_pointer(theirs, ctypes_addr(_dlpack._NAME))
        a = _dlpack.DLManagedTensor.from_address(ptr_o).dl_tensor.dtype
        b = _dlpack.DLManagedTensor.from_address(ptr_t).dl_tensor.dtype
        assert (a.code, a.bits, a.lanes) == (b.code, b.bits, b.lanes)
    bf = ember.tensor([1.5, -2.0], dtype=ember.bfloat16)
    assert ember.from_dlpack(bf).tolist() == [1.5, -2.0]
    assert torch.from_dlpack(ember.tensor([1.5, -2.0], dtype=ember.bfloat16)).tolist() == \
        [1.5, -2.0]  # PyTorch reads ember's capsules (and the reverse, below)
    assert ember.from_dlpack(torch.tensor([True, False])).tolist() == [True, False]


def ctypes_addr(buf):
    import ctypes
    return ctypes.addressof(buf)


def test_dlpack_capsule_protocol():
    from ember import _dlpack
    from ember.utils.dlpack import DLDeviceType, from_dlpack, to_dlpack
    t = ember.ones(2)
    c = to_dlpack(t)
    assert "dltensor" in repr(c) and "used" not in repr(c)
    u = from_dlpack(c)
    assert "used_dltensor" in repr(c) and u.data_ptr() == t.data_ptr()
    with pytest.raises(RuntimeError, match="DLTensor capsules can be consumed only once"):
        ember.from_dlpack(c)
    with pytest.raises(RuntimeError, match="invalid capsule"):
        ember.from_dlpack(5)
    v = t.__dlpack__(max_version=(1, 0))
    assert "dltensor_versioned" in repr(v)
    assert ember.from_dlpack(v).data_ptr() == t.data_ptr()
    assert t.__dlpack_device__() == (DLDeviceType.kDLCPU, 0)
    assert t.pin_memory().__dlpack_device__() == (DLDeviceType.kDLCUDAHost, 0)
    copied = t.__dlpack__(max_version=(1, 0), copy=True)
    addr = _dlpack._capsule_get_pointer(copied, ctypes_addr(_dlpack._NAME_V))
    m = _dlpack.DLManagedTensorVersioned.from_address(addr)
    assert m.flags & _dlpack.FLAG_IS_COPIED and m.dl_tensor.data != t.data_ptr()
    del copied, m
    with pytest.raises(BufferError, match="Can't export tensors that require gradient"):
        ember.ones(2, requires_grad=True).__dlpack__()
    with pytest.raises(AssertionError, match="stream should be None on cpu"):
        t.__dlpack__(stream=1)
    with pytest.raises(TypeError, match="stream must be ``int`` or ``none``"):
        t.__dlpack__(stream="a")


def test_dlpack_deleters_release_memory():
    from ember import _dlpack
    gc.collect()
    live = len(_dlpack._exported)
    c = ember.ones(3).__dlpack__()
    assert len(_dlpack._exported) == live + 1
    del c  # never consumed: the capsule's destructor calls the deleter
    assert len(_dlpack._exported) == live
    a = np.from_dlpack(ember.ones(3))
    assert len(_dlpack._exported) == live + 1
    del a  # NumPy calls the deleter when its array goes
    gc.collect()
    assert len(_dlpack._exported) == live
    # ember as the consumer: the producer's deleter runs when the last view is gone
    x = ember.from_dlpack(ember.arange(4.))
    y = x[1:]
    del x
    gc.collect()
    assert len(_dlpack._exported) == live + 1
    del y
    gc.collect()
    assert len(_dlpack._exported) == live


def test_dlpack_of_cuda_tensors_through_ember():
    from ember.utils.dlpack import DLDeviceType
    x = ember.arange(12., device="cuda").reshape(3, 4)[:, 1:3]
    assert x.__dlpack_device__() == (DLDeviceType.kDLCUDA, 0)
    y = ember.from_dlpack(x)
    assert y.is_cuda and y.stride() == x.stride() and y.data_ptr() == x.data_ptr()
    y[0, 0] = -1
    assert x[0, 0].item() == -1
    y.record_stream(ember.cuda.current_stream())  # external memory: nothing to track
    z = ember.from_dlpack(x.__dlpack__(max_version=(1, 0)))
    assert z.sum().item() == x.sum().item()
    assert ember.from_dlpack(x, device="cpu").tolist() == x.tolist()
    w = ember.from_dlpack(np.arange(3.), device="cuda")
    assert w.is_cuda and w.tolist() == [0.0, 1.0, 2.0]
    c = x.__dlpack__(dl_device=(DLDeviceType.kDLCPU, 0))
    assert not ember.from_dlpack(c).is_cuda
    with pytest.raises(ValueError, match="without copying"):
        x.__dlpack__(dl_device=(DLDeviceType.kDLCPU, 0), copy=False)


@sim_only
def test_dlpack_makes_the_consumer_stream_wait():
    rt = ember.cuda._lazy_init()
    producer, consumer = ember.cuda.Stream(), ember.cuda.Stream()
    with ember.cuda.stream(producer):
        x = ember.ones(4, device="cuda")
        rt.hold(producer.cuda_stream)
        x.add_(1)  # pending on the producer's stream
        assert consumer.query()
        x.__dlpack__(stream=consumer.cuda_stream)
    with ember.cuda.stream(consumer):
        x.mul(3)  # the consumer's work now waits for the producer's
        assert not consumer.query()
    with ember.cuda.stream(producer):
        y = ember.from_dlpack(x.__dlpack__(stream=-1))  # -1: no synchronization
    rt.release(producer.cuda_stream)
    rt.release(consumer.cuda_stream)
    assert y.tolist() == [2.0] * 4
    with pytest.raises(BufferError, match="per-thread default stream is not supported"):
        x.__dlpack__(stream=2)
    with pytest.raises(AssertionError, match="unsupported stream on CUDA: 0"):
        x.__dlpack__(stream=0)


@pytest.mark.cuda
def test_dlpack_with_cupy():
    cupy = pytest.importorskip("cupy")
    if not _REAL_GPU:
        pytest.skip("needs a GPU")
    c = cupy.arange(12, dtype=cupy.float32).reshape(3, 4)[:, ::2]
    t = ember.from_dlpack(c)
    assert t.is_cuda and t.stride() == (4, 2) and t.tolist() == c.get().tolist()
    t[0, 0] = 42
    assert float(c[0, 0]) == 42
    e = ember.arange(6., device="cuda").reshape(2, 3)
    back = cupy.from_dlpack(e)
    assert back.data.ptr == e.data_ptr() and back.get().tolist() == e.tolist()
    del c
    gc.collect()
    assert t.sum().item() == float(sum([42, 2, 4, 6, 8, 10]))  # CuPy's memory is kept alive
