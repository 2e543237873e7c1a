"""How a CUDA kernel sees tensors: as arrays of one array module, CuPy on a GPU and NumPy on the
simulated device, over the tensors' own device memory.

A kernel body is written once against ``xp`` (the module :func:`launch` hands it), as Chainer's
were: ``xp.exp(a, out=o)`` runs a CUDA kernel on a GPU and NumPy's loop on the simulated device,
whose memory is host memory. What the body needs to know about the device, and nothing else, is
here:

* :func:`device_array` — an array viewing a CUDA tensor's elements (its sizes, strides and
  offset), keeping the storage alive;
* :func:`to_tensor` — a CUDA tensor holding a result array the body computed. On a GPU that is
  the array's own memory, which CuPy took from ember's caching allocator (:func:`_cupy_malloc`)
  on ember's current stream, so nothing is copied and the memory statistics count it; on the
  simulated device the values are copied into device memory from the allocator;
* :func:`launch` — runs a body on the current stream: on a GPU CuPy launches on ember's current
  stream (:func:`_use_stream`), so streams, events and CUDA graph capture order its kernels as
  they order the runtime's copies; on the simulated device the body is the stream's next work
  item (see ``SimulatedRuntime.launch``).

A body that needs the host (a CuPy call refusing a host value, a missing CuPy function) raises
:class:`NeedsHost`; the CUDA key's kernels then run the op through the host-kernel fallback, and
``stats`` counts both paths (``ember.cuda`` callers can read why an op left the device).
"""
import threading

import numpy as np

from ..._core import dtype as D
from ..._core import strides as _st
from ..._core.device import device as _device
from ..._core.storage import UntypedStorage
from ..._core.tensor_impl import empty_tensor, make_tensor

_cupy = None
# kernel calls on the device; why ops left it (op -> reason); calls staged through the host by op
stats = {"device": 0, "host": {}, "staged": {}}

# Element types no CUDA kernel here computes in (CuPy has no arrays of them): their calls take
# the host-kernel fallback. (bfloat16, which CuPy lacks too, the pointwise rows compute in
# float32.)
HOST_DTYPES = frozenset(D.FLOAT8 + (D.complex32,))


class NeedsHost(Exception):
    """The body cannot compute this call on the device (the reason is the message)."""


_cuda_module = None


def _cuda():
    global _cuda_module
    if _cuda_module is None:
        import ember.cuda  # the runtime module imports ember: a true cycle, resolved at call time
        _cuda_module = ember.cuda
    return _cuda_module


def runtime():
    return _cuda()._lazy_init()


def cupy():
    """CuPy, set up for ember on first use: its allocations come from ember's caching allocator
    and ``wrap_array`` adopts CuPy results as CUDA tensors."""
    global _cupy
    if _cupy is None:
        import cupy as cp
        from ..._core.tensor_impl import DEVICE_ARRAY_ADOPTERS, _NP_TO_DT
        cp.cuda.set_allocator(_cupy_malloc)
        DEVICE_ARRAY_ADOPTERS[cp.ndarray] = lambda a: _adopt(
            a, _NP_TO_DT[a.dtype], _device("cuda", a.device.id))
        _cupy = cp
    return _cupy


def _cupy_malloc(nbytes):
    from ...cuda import _caching_allocator
    from ...cuda.streams import _state, current_stream_handle
    idx = _state.device
    dp = _caching_allocator.allocate(nbytes, idx, current_stream_handle(idx))
    return _cupy.cuda.MemoryPointer(_cupy.cuda.UnownedMemory(dp.ptr, nbytes, dp, idx), 0)


def device_array(t, rt=None):
    """An array viewing CUDA tensor ``t``'s elements: NumPy's on the simulated device, CuPy's on
    a GPU."""
    rt = rt or runtime()
    storage = t._storage
    isz = t._dtype.itemsize
    strides = tuple(s * isz for s in t._stride)
    if rt.simulated:
        n = storage.nbytes()
        buf = rt.host_view(storage.data_ptr(), n) if n else np.empty(0, np.uint8)
        return np.ndarray(t._size, t._dtype._np, buffer=buf, offset=t._offset * isz,
                          strides=strides)
    cp = cupy()
    mem = cp.cuda.UnownedMemory(storage.data_ptr(), storage.nbytes(), storage,
                                t._device.index or 0)
    return cp.ndarray(t._size, t._dtype._np, cp.cuda.MemoryPointer(mem, t._offset * isz),
                      strides)


def to_tensor(a, dtype, dev, rt):
    """A CUDA tensor of ``dtype`` holding fresh result array ``a`` (see the module docstring)."""
    if not rt.simulated:
        return _adopt(a, dtype, dev)
    a = np.asarray(a)
    if a.dtype != dtype._np:
        a = a.astype(dtype._np)
    isz = dtype.itemsize
    stride = tuple(s // isz for s in a.strides)
    if any(s % isz for s in a.strides) or not _st.is_non_overlapping_and_dense(a.shape, stride):
        stride = None
    out = empty_tensor(a.shape, dtype, dev, stride=stride)
    if a.size:
        np.copyto(device_array(out, rt), a)
    return out


def _adopt(a, dtype, dev):
    """A CUDA tensor over CuPy array ``a``: a view of the storage it views, or a new storage over
    the block ember's allocator gave CuPy (a copy when CuPy's memory came from elsewhere, or the
    layout is not one a tensor can have)."""
    cp = _cupy
    if a.dtype != dtype._np:
        a = a.astype(dtype._np)
    isz = a.itemsize
    if any(s < 0 or s % isz for s in a.strides) or not _st.is_non_overlapping_and_dense(
            a.shape, tuple(s // isz for s in a.strides)):
        a = cp.ascontiguousarray(a)
    owner = getattr(a.data.mem, "_owner", None) if a.size else None
    if isinstance(owner, UntypedStorage):
        storage = owner
    else:
        from ...cuda._caching_allocator import CUDADataPtr
        if not isinstance(owner, CUDADataPtr):
            out = empty_tensor(a.shape, dtype, dev)
            if a.size:
                cp.copyto(device_array(out), a)
            return out
        storage = UntypedStorage.__new__(UntypedStorage)
        storage._buf = owner
        storage._bytes = None
        storage._nbytes = a.data.mem.size
        storage.device = dev
        storage._resizable = True
        from ..._core.storage import get_allocator
        storage._allocator = get_allocator(dev)
    offset = (a.data.ptr - storage.data_ptr()) // isz if a.size else 0
    return make_tensor(storage, tuple(a.shape), tuple(s // isz for s in a.strides), offset,
                       dtype, dev)


# The profiler's kernel timer while a profile records ProfilerActivity.CUDA (set by
# ember/profiler/_recorder.py), else None: each kernel is then bracketed by two timing events on
# its stream (see timed()).
kernel_timer = [None]


class timed:
    """``with timed(rt, device, stream, name):`` — the work launched inside is one kernel of the
    running profile (nothing when no profile records CUDA activity)."""
    __slots__ = ("args", "token")

    def __init__(self, rt, device, stream, name=None):
        self.args = (rt, device, stream, name)

    def __enter__(self):
        timer = kernel_timer[0]
        self.token = timer.begin(*self.args) if timer is not None else None

    def __exit__(self, *exc):
        if self.token is not None and kernel_timer[0] is not None:
            kernel_timer[0].end(self.token)
        return False


_streams = {}  # CuPy stream objects for ember's stream handles
class _Told(threading.local):
    key = None  # the (device, handle) CuPy was last told on this thread (its state is per thread)


_current = _Told()


def _use_stream(dev_index, handle):
    key = (dev_index, handle)
    if _current.key != key:
        cp = _cupy
        cp.cuda.Device(dev_index).use()
        s = _streams.get(key)
        if s is None:
            s = _streams[key] = cp.cuda.ExternalStream(handle, dev_index)
        s.use()
        _current.key = key


def launch(dev, body, capturable=False):
    """Run ``body(xp, rt)`` as a kernel on ``dev``'s current stream; returns what it returns.
    ``capturable``: the body only writes into memory that exists before it runs (and returns
    nothing), so the simulated device may record it in a CUDA graph and run it at each replay."""
    cuda = _cuda_module or _cuda()
    rt = cuda._lazy_init()
    stream = cuda.streams.current_stream_handle(dev.index)
    if rt.simulated:
        if not capturable and rt.stream_is_capturing(stream):
            # a body returning a result it made would hand out the capture's run only: the
            # fallback records the CPU kernel instead, which stores into the captured outputs
            raise NeedsHost("captured on the simulated device")
        box = []
        with np.errstate(all="ignore"):
            if kernel_timer[0] is None:
                rt.launch(stream, lambda: box.append(body(np, rt)))
            else:
                with timed(rt, dev.index, stream):
                    rt.launch(stream, lambda: box.append(body(np, rt)))
        stats["device"] += 1
        return box[0] if box else None  # (empty while captured: the body runs at replay)
    if _cupy is None:
        cupy()
    _use_stream(dev.index, stream)
    try:
        if kernel_timer[0] is None:
            r = body(_cupy, rt)
        else:
            with timed(rt, dev.index, stream):
                r = body(_cupy, rt)
    except (TypeError, AttributeError, NotImplementedError, ValueError) as e:
        # CuPy refusing a host value or lacking a function: the op goes to the host
        raise NeedsHost(f"{type(e).__name__}: {e}") from None
    stats["device"] += 1
    return r


def device_of(*tensors):
    for t in tensors:
        d = getattr(t, "_device", None)
        if d is not None and d.type == "cuda":
            return d
    return _device("cuda", _cuda().current_device())
