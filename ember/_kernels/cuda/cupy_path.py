"""On a real GPU, aten's CPU kernels run on the device through CuPy.

ember's CPU kernels are NumPy code. NumPy's dispatch protocols (``__array_ufunc__``, NEP 13, and
``__array_function__``, NEP 18) send a NumPy call whose arguments are CuPy arrays to CuPy's own
implementation, which launches CUDA kernels (cuBLAS for ``matmul``). So a CPU kernel handed
tensors whose arrays are CuPy views of device memory computes on the GPU — one kernel body, the
array module picked by where the data lives, as Chainer did. CuPy allocates its results through
ember's caching allocator (:func:`_cupy_malloc`), on ember's current stream, so results are
ordinary CUDA storages and the memory statistics count them.

A kernel that leaves NumPy's protocols (a host-only function such as SciPy's, a conversion to a
host array, a NumPy output buffer) raises instead of computing wrongly: CuPy refuses implicit
host conversion. :func:`run` then reports failure, the op is remembered, and the host-kernel
fallback runs it through staging copies from then on. Part 2 of the CUDA work replaces these,
op by op, with CUDA kernels registered on the CUDA key.
"""
import numpy as np

from ..._core.device import CPU, device as _device
from ..._core.storage import UntypedStorage
from ..._tensor import Tensor, make_tensor

_cupy = None
host_only = {}  # op -> why its CPU kernel cannot run on CuPy arrays (it runs on the host)
stats = {"device": 0, "host": 0}  # calls run each way (ember.cuda reports them)


def _cp():
    global _cupy
    if _cupy is None:
        import cupy
        from ..._tensor import DEVICE_ARRAY_TYPES, _NUM_TO_DT
        _cupy = cupy
        cupy.cuda.set_allocator(_cupy_malloc)
        DEVICE_ARRAY_TYPES[cupy.ndarray] = lambda a: adopt(a, _NUM_TO_DT[a.dtype.num])
    return _cupy


def _cupy_malloc(nbytes):
    """CuPy's allocations come from ember's caching allocator, on ember's current stream."""
    from ...cuda import _caching_allocator
    from ...cuda.streams import _state, current_stream_handle
    idx = _state.device
    dp = _caching_allocator.allocate(nbytes, idx, current_stream_handle(idx))
    cp = _cupy
    return cp.cuda.MemoryPointer(cp.cuda.UnownedMemory(dp.ptr, nbytes, dp, idx), 0)


def device_array(t):
    """A CuPy view of CUDA tensor ``t``'s elements (the storage kept alive by the view)."""
    cp = _cp()
    storage = t._storage
    isz = t._dtype.itemsize
    mem = cp.cuda.UnownedMemory(storage.data_ptr(), storage.nbytes(), storage,
                                t._device.index or 0)
    return cp.ndarray(t._size, t._dtype._np, cp.cuda.MemoryPointer(mem, t._offset * isz),
                      tuple(s * isz for s in t._stride))


def _alias(t):
    """A tensor the CPU kernel accepts (device "cpu") whose array is the CuPy view of ``t``."""
    a = make_tensor(t._storage, t._size, t._stride, t._offset, t._dtype, CPU)
    a._np = device_array(t)
    a._vc = t._vc
    return a


def is_device_array(a):
    return _cupy is not None and isinstance(a, _cupy.ndarray)


def adopt(a, dtype):
    """A CUDA tensor over CuPy array ``a``'s memory: a view of the storage it came from, or a new
    storage over the block ember's allocator gave CuPy."""
    isz = a.itemsize
    strides = a.strides
    if any(s < 0 or s % isz for s in strides):
        a = _cupy.ascontiguousarray(a)
        strides = a.strides
    owner = a.data.mem.owner
    dev = _device("cuda", a.device.id)
    if isinstance(owner, UntypedStorage):
        storage = owner
    else:  # a CUDADataPtr from _cupy_malloc (or memory CuPy got elsewhere: copy it into ours)
        from ...cuda._caching_allocator import CUDADataPtr
        if not isinstance(owner, CUDADataPtr):
            a = a.copy()
            owner = a.data.mem.owner
        storage = UntypedStorage.__new__(UntypedStorage)
        storage._buf = owner
        storage._bytes = None
        storage._nbytes = a.data.mem.size
        storage.device = dev
        storage._resizable = True
        from ..._core.storage import get_allocator
        storage._allocator = get_allocator(dev)
    offset = (a.data.ptr - storage.data_ptr()) // isz
    t = make_tensor(storage, tuple(a.shape), tuple(s // isz for s in a.strides), offset,
                    dtype, dev)
    t._np = a  # kernels reading this result again (nd(t)) get the device array
    return t


class _Unsupported(Exception):
    pass


def run(op, values, dev, stream, to_device):
    """Run ``op``'s CPU kernel on CuPy views; returns the result, or raises _Unsupported when the
    kernel leaves NumPy's protocols (the caller runs it on the host). ``to_device(t)`` moves a
    host result the kernel made (``arange``'s NumPy array, say) to the device."""
    cp = _cp()
    originals = {}

    def alias(v):
        if isinstance(v, Tensor) and v._device.type == "cuda":
            a = _alias(v)
            originals[id(a)] = v
            return a
        if isinstance(v, (list, tuple)) and any(isinstance(x, Tensor) for x in v):
            return type(v)(alias(x) for x in v)
        if isinstance(v, _device) and v.type == "cuda":
            return CPU
        return v

    from ..._dispatch.keys import K, bit
    args = [alias(v) for v in values]
    _sync_math_mode(cp)
    # A kernel that fails part way may have drawn random numbers: the host run must see the
    # generators as they were.
    from ...random import Generator
    generators = [(g, g.get_state()) for g in values if isinstance(g, Generator)]
    try:
        with _cupy_stream(cp, stream) if stream else _null():
            out = op._entry.redispatch(bit(K.CPU), *args)
    except (TypeError, AttributeError, NotImplementedError, ValueError, RuntimeError) as e:
        host_only[op] = f"{type(e).__name__}: {e}"
        for g, state in generators:
            g.set_state(state)
        raise _Unsupported(f"{op}: {type(e).__name__}: {e}") from None

    def back(o):
        if isinstance(o, Tensor):
            d = originals.get(id(o))
            if d is not None:
                return d
            if o._device.type == "cpu":
                arr = o._np
                if is_device_array(arr):
                    return adopt(arr, o._dtype)
                return to_device(o)  # a host result (a factory's NumPy array): copied over
            return o
        if isinstance(o, (list, tuple)):
            return type(o)(back(x) for x in o)
        return o
    stats["device"] += 1
    return back(out)


_math_mode = [None]


def _sync_math_mode(cp):
    """cuBLAS follows ``ember.backends.cuda.matmul.allow_tf32`` (float32 matmul precision
    "high"/"medium": TF32 tensor cores), set on CuPy's handle when the flag changes."""
    from ...backends._context import ctx
    tf32 = ctx.float32_matmul_precision != "highest"
    if _math_mode[0] is not tf32:
        from cupy_backends.cuda.libs import cublas
        handle = cp.cuda.device.get_cublas_handle()
        cublas.setMathMode(handle, cublas.CUBLAS_TF32_TENSOR_OP_MATH if tf32
                           else cublas.CUBLAS_DEFAULT_MATH)
        _math_mode[0] = tf32


_streams = {}  # ember stream handle -> CuPy's Stream object over it


class _StreamHandle:
    """A raw stream handle in the CUDA stream protocol (``__cuda_stream__``)."""

    def __init__(self, handle):
        self.handle = handle

    def __cuda_stream__(self):
        return (0, self.handle)


def _cupy_stream(cp, handle):
    s = _streams.get(handle)
    if s is None:
        s = _streams[handle] = cp.cuda.Stream.from_external(_StreamHandle(handle))
    return s


class _null:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def supported(op):
    return op not in host_only


__all__ = ["run", "supported", "device_array", "adopt", "is_device_array"]
_ = np  # NumPy is what the kernels call; CuPy answers through its protocols
