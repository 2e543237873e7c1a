"""DLPack: sharing tensor memory with other libraries (NumPy, CuPy, JAX, ...) without copies.

The exchange format is a C struct in a ``PyCapsule``: ``DLManagedTensor`` (capsule name
``"dltensor"``) or, from DLPack 1.0, ``DLManagedTensorVersioned`` (``"dltensor_versioned"``). Both
are built and read here with ``ctypes``:

* exporting (:func:`to_capsule`): the struct points at the tensor's memory (host memory, or the
  device pointer of a CUDA tensor) and keeps the tensor alive until the consumer calls the struct's
  ``deleter``; a capsule that nobody consumed calls it when it is collected;
* importing (:func:`from_capsule`): the capsule is renamed ``"used_dltensor"`` (it can be consumed
  once), and the new tensor's storage holds the producer's memory through an owner object that calls
  the producer's ``deleter`` when the last tensor over it is gone. CPU memory becomes a NumPy array
  over the producer's bytes (a CPU storage); device memory a :class:`ExternalCUDAPtr` (a CUDA
  storage outside the caching allocator).

Sizes, element strides and the byte offset are kept; dtypes use DLPack's codes (bool as kDLBool,
bfloat16 as kDLBfloat, complex as kDLComplex).
"""
import ctypes
import enum

import numpy as np

from ._core import dtype as D
from ._core.device import CPU, device as _device
from ._core.tensor_impl import CONJUGATE


class DLDeviceType(enum.IntEnum):
    """DLPack's device types (``dlpack.h``)."""
    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLOpenCL = 4
    kDLVulkan = 7
    kDLMetal = 8
    kDLVPI = 9
    kDLROCM = 10
    kDLROCMHost = 11
    kDLExtDev = 12
    kDLCUDAManaged = 13
    kDLOneAPI = 14
    kDLWebGPU = 15
    kDLHexagon = 16
    kDLMAIA = 17


# -- the C structs ------------------------------------------------------------------------------

class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_Deleter = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _Deleter)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p),
                ("deleter", _Deleter), ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]


DLPACK_VERSION = (1, 0)
FLAG_READ_ONLY = 1 << 0
FLAG_IS_COPIED = 1 << 1

# kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBfloat 4, kDLComplex 5, kDLBool 6
_CODES = {D.bool_: (6, 8), D.uint8: (1, 8), D.int8: (0, 8), D.int16: (0, 16),
          D.int32: (0, 32), D.int64: (0, 64), D.float16: (2, 16), D.bfloat16: (4, 16),
          D.float32: (2, 32), D.float64: (2, 64), D.complex64: (5, 64),
          D.complex128: (5, 128)}
_DTYPES = {v: k for k, v in _CODES.items()}
_CODE_NAMES = {0: "kInt", 1: "kUInt", 2: "kFloat", 4: "kBfloat", 5: "kComplex", 6: "kBool"}

# -- the capsule C API (the names must outlive every capsule: module-lifetime buffers) ----------

_NAME = ctypes.create_string_buffer(b"dltensor")
_NAME_V = ctypes.create_string_buffer(b"dltensor_versioned")
_USED = ctypes.create_string_buffer(b"used_dltensor")
_USED_V = ctypes.create_string_buffer(b"used_dltensor_versioned")

_api = ctypes.pythonapi
_CapsuleDestructor = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_capsule_new = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_void_p,
                                 _CapsuleDestructor)(("PyCapsule_New", _api))
_capsule_get_name = ctypes.PYFUNCTYPE(ctypes.c_char_p, ctypes.py_object)(
    ("PyCapsule_GetName", _api))
_capsule_get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_void_p)(
    ("PyCapsule_GetPointer", _api))
_capsule_set_name = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_void_p)(
    ("PyCapsule_SetName", _api))
# For the destructor, which runs while the capsule is being deallocated: raw pointers, no
# references taken, and IsValid (which never raises) before GetPointer.
_raw_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)(
    ("PyCapsule_IsValid", _api))
_raw_get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)(
    ("PyCapsule_GetPointer", _api))


# ---------------------------------------------------------------------------------------------
# Export.

_exported = {}  # struct address -> (struct, shape, strides, tensor): alive until the deleter


def _delete_exported(address):
    _exported.pop(address, None)


_DELETER = _Deleter(_delete_exported)


# A consumer that fails may drop the capsule while its exception is pending; Python code must
# not run with an exception set, so the destructor first takes it aside (PyErr_Fetch through a
# foreign function without argtypes: no Python-level conversion runs before it) and raises it
# again at the end, where it is reported as unraisable, as a C destructor's error would be.
_pyapi = ctypes.PyDLL(_api._name, handle=_api._handle)  # its own function cache: no argtypes
_err = (ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p())
_ERR_REFS = tuple(ctypes.byref(e) for e in _err)
_err_fetch = _pyapi.PyErr_Fetch
_err_restore = _pyapi.PyErr_Restore


def _destroy_capsule(capsule):
    """An unconsumed capsule is collected: the memory it pinned is released (a consumed capsule
    was renamed, and its consumer calls the deleter)."""
    _err_fetch(*_ERR_REFS)
    pending = tuple(ctypes.c_void_p(e.value) for e in _err)
    for name in (_NAME, _NAME_V):
        if _raw_is_valid(capsule, ctypes.addressof(name)):
            _delete_exported(_raw_get_pointer(capsule, ctypes.addressof(name)))
            break
    if pending[0].value:
        _err_restore(*pending)  # re-raises the consumer's error here (ctypes checks PyErr)


_CAPSULE_DESTRUCTOR = _CapsuleDestructor(_destroy_capsule)


def dl_device_of(t):
    """``Tensor.__dlpack_device__``: (device type, index); pinned host memory is kDLCUDAHost."""
    kind = t._device.type
    if kind == "cuda":
        return DLDeviceType.kDLCUDA, t._device.index or 0
    if kind == "cpu":
        return (DLDeviceType.kDLCUDAHost if t.is_pinned() else DLDeviceType.kDLCPU), 0
    raise ValueError(f"Unknown device type {kind} for Dlpack")


def _device_from_dl(dl_type, dl_id):
    if dl_type in (DLDeviceType.kDLCPU, DLDeviceType.kDLCUDAHost):
        return CPU
    if dl_type == DLDeviceType.kDLCUDA:
        return _device("cuda", dl_id)
    raise BufferError(f"Unsupported device_type: {int(dl_type)}")


def to_capsule(t, versioned=False, dl_device=None, copy=None):
    """A DLPack capsule over ``t``'s memory (copied first when ``copy`` is True, or when
    ``dl_device`` names another device)."""
    copied = False
    if dl_device is not None:
        target = _device_from_dl(int(dl_device[0]), int(dl_device[1]))
        here = t._device if t._device.type == "cpu" else _device("cuda", t._device.index or 0)
        if target != here:
            if copy is False:
                raise ValueError(f"cannot move DLPack tensor from device {here} to {target} "
                                 f"without copying. Set copy=None or copy=True.")
            t, copied = t.detach().to(target), True
    if copy and not copied:
        t, copied = t.detach().clone(), True
    if t._device.type not in ("cpu", "cuda"):
        raise ValueError(f"Unknown device type {t._device.type} for Dlpack")
    code, bits = _CODES[t._dtype]
    ndim = len(t._size)
    shape = (ctypes.c_int64 * ndim)(*t._size)
    strides = (ctypes.c_int64 * ndim)(*t._stride)
    st = t._storage
    data = st.data_ptr() + t._offset * t._dtype.itemsize if st.nbytes() else 0
    if t._device.type == "cuda":
        dev = DLDevice(DLDeviceType.kDLCUDA, t._device.index or 0)
    else:
        dev = DLDevice(DLDeviceType.kDLCPU, 0)
    dl = DLTensor(data, dev, ndim, DLDataType(code, bits, 1),
                  ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64)),
                  ctypes.cast(strides, ctypes.POINTER(ctypes.c_int64)), 0)
    if versioned:
        flags = FLAG_IS_COPIED if copied else 0
        struct = DLManagedTensorVersioned(DLPackVersion(*DLPACK_VERSION), None, _DELETER,
                                          flags, dl)
        name = _NAME_V
    else:
        struct = DLManagedTensor(dl, None, _DELETER)
        name = _NAME
    address = ctypes.addressof(struct)
    struct.manager_ctx = address
    _exported[address] = (struct, shape, strides, t)
    return _capsule_new(address, ctypes.addressof(name), _CAPSULE_DESTRUCTOR)


# ---------------------------------------------------------------------------------------------
# Import.

class _ProducerOwner:
    """Calls the producer's deleter when the last ember user of its memory is gone."""
    __slots__ = ("address", "deleter")

    def __init__(self, address, deleter):
        self.address, self.deleter = address, deleter

    def release(self):
        deleter, self.deleter = self.deleter, None
        if deleter:
            deleter(self.address)

    def __del__(self):
        try:
            self.release()
        except Exception:  # noqa: BLE001  (interpreter shutdown)
            pass


class ExternalCUDAPtr:
    """Device memory another library owns, as a CUDA storage holds it (like the caching
    allocator's ``CUDADataPtr``, but freed by the producer's deleter, and not stream-tracked:
    ``record_stream`` does nothing, as PyTorch's for memory it did not allocate)."""
    __slots__ = ("ptr", "size", "device", "owner")

    def __init__(self, ptr, size, device, owner):
        self.ptr, self.size, self.device, self.owner = ptr, size, device, owner

    def data_ptr(self):
        return self.ptr

    def __len__(self):
        return self.size

    def record_stream(self, stream):
        pass

    def __repr__(self):
        return f"ExternalCUDAPtr(ptr={self.ptr:#x}, size={self.size}, device=cuda:{self.device})"


def _invalid_capsule():
    return RuntimeError("from_dlpack received an invalid capsule. Note that DLTensor capsules can "
                        "be consumed only once, so you might have already constructed a tensor "
                        "from it once.")


def from_capsule(capsule):
    """A tensor sharing the memory a DLPack capsule describes; consumes the capsule."""
    from ._core import storage as _storage
    from ._tensor import make_tensor
    try:
        name = _capsule_get_name(capsule)
    except (ValueError, TypeError, ctypes.ArgumentError):
        raise _invalid_capsule() from None
    if name == b"dltensor_versioned":
        address = _capsule_get_pointer(capsule, ctypes.addressof(_NAME_V))
        managed = DLManagedTensorVersioned.from_address(address)
        if managed.version.major > DLPACK_VERSION[0]:
            raise BufferError(f"from_dlpack: DLPack version {managed.version.major}."
                              f"{managed.version.minor} is not supported (at most "
                              f"{DLPACK_VERSION[0]}.x)")
        used = _USED_V
    elif name == b"dltensor":
        address = _capsule_get_pointer(capsule, ctypes.addressof(_NAME))
        managed = DLManagedTensor.from_address(address)
        used = _USED
    else:
        raise _invalid_capsule()
    dl = managed.dl_tensor
    deleter = managed.deleter if ctypes.cast(managed.deleter, ctypes.c_void_p).value else None
    owner = _ProducerOwner(address, deleter)
    try:
        if dl.dtype.lanes != 1:
            raise BufferError("DLPack only supports lanes == 1")
        dtype = _DTYPES.get((dl.dtype.code, dl.dtype.bits))
        if dtype is None:
            raise BufferError(f"Unsupported {_CODE_NAMES.get(dl.dtype.code, 'DLDataType code')} "
                              f"bits {dl.dtype.bits}")
        dev = _device_from_dl(dl.device.device_type, dl.device.device_id)
        ndim = dl.ndim
        size = tuple(dl.shape[i] for i in range(ndim))
        if dl.strides:
            stride = tuple(dl.strides[i] for i in range(ndim))
        else:  # NULL strides: compact row-major
            from ._core.strides import contiguous_strides
            stride = contiguous_strides(size)
        if any(s < 0 and n > 1 for n, s in zip(size, stride)):  # PyTorch cannot either
            raise RuntimeError(f"Storage size calculation overflowed with sizes={list(size)} and "
                               f"strides={list(stride)}")
        numel = int(np.prod(size)) if size else 1
        isz = dtype.itemsize
        extent = 0 if numel == 0 else (sum((n - 1) * s for n, s in zip(size, stride)
                                           if s > 0) + 1) * isz
        base = (dl.data or 0) + dl.byte_offset
    except BaseException:
        owner.release()  # a capsule we cannot use is still consumed by the failed attempt
        _capsule_set_name(capsule, ctypes.addressof(used))
        raise
    _capsule_set_name(capsule, ctypes.addressof(used))

    if dev.type == "cpu":
        if extent:
            raw = (ctypes.c_uint8 * extent).from_address(base)
            raw._ember_owner = owner  # every NumPy view keeps ``raw`` (so the owner) alive
            arr = np.frombuffer(raw, np.uint8)
        else:
            owner.release()  # nothing to keep alive
            arr = np.empty(0, np.uint8)
        storage = _storage.from_array(arr, CPU)
    else:
        import ember.cuda
        ember.cuda._lazy_init()
        ember.cuda._check_index(dev.index)
        if not extent:
            owner.release()
        storage = _storage.UntypedStorage.__new__(_storage.UntypedStorage)
        storage._buf = ExternalCUDAPtr(base if extent else 0, extent, dev.index, owner)
        storage._bytes = None
        storage._nbytes = extent
        storage.device = dev
        storage._resizable = False
        storage._allocator = _storage.get_allocator(dev)
        if _storage._alloc_observers:
            _storage._notify_alloc(storage)
    return make_tensor(storage, size, stride, 0, dtype, dev)


# ---------------------------------------------------------------------------------------------
# The Python protocol.

def tensor_dlpack(t, stream=-1, max_version=None, dl_device=None, copy=None):
    """``Tensor.__dlpack__`` (PyTorch's checks and stream rules; see there)."""
    if t._requires_grad:
        raise BufferError("Can't export tensors that require gradient, use tensor.detach()")
    if t._keyset & CONJUGATE:  # (PyTorch exports a negative view's memory as it is)
        raise BufferError("Can't export tensors with the conjugate bit set")
    if t._device.type == "cuda":
        import ember.cuda
        current = ember.cuda.current_device()
        if (t._device.index or 0) != current:
            raise BufferError(f"Can't export tensors on a different CUDA device index. "
                              f"Expected: {t._device.index}. Current device: {current}.")
    if stream is not None and type(stream) is not int:
        raise TypeError("stream must be ``int`` or ``none``")
    if t._device.type == "cuda" and stream != -1:
        _make_stream_wait(stream)
    elif t._device.type == "cpu" and stream is not None and stream != -1:
        raise AssertionError("stream should be None on cpu.")
    versioned = max_version is not None and max_version[0] >= 1
    return to_capsule(t, versioned, dl_device, copy)


def _make_stream_wait(stream):
    """The consumer will use the memory on ``stream``: make it wait for the work queued so far on
    the current stream (DLPack's rule; 1 or None is the legacy default stream)."""
    import ember.cuda
    if stream is None or stream == 1:
        consumer = ember.cuda.default_stream()
    else:
        if stream == 2:
            raise BufferError("per-thread default stream is not supported.")
        if stream == 0:
            raise AssertionError(f"unsupported stream on CUDA: {stream}.")
        consumer = ember.cuda.ExternalStream(stream)
    current = ember.cuda.current_stream()
    if consumer != current:
        event = ember.cuda.Event()
        event.record(current)
        consumer.wait_event(event)


def from_dlpack(ext_tensor, *, device=None, copy=None):
    """``ember.from_dlpack``: a tensor sharing the memory of an object with ``__dlpack__`` (or of
    a DLPack capsule), as PyTorch's ``torch.utils.dlpack.from_dlpack``."""
    if not hasattr(ext_tensor, "__dlpack__"):
        if device is not None or copy is not None:
            raise AssertionError("device and copy kwargs not supported when ext_tensor is "
                                 "already a DLPack capsule.")
        return from_capsule(ext_tensor)
    kwargs = {"max_version": DLPACK_VERSION}
    requested_copy, producer_handled_copy, cross_device = copy, True, False
    if copy is not None:
        kwargs["copy"] = copy
    ext_device = tuple(ext_tensor.__dlpack_device__())
    if device is not None:
        device = _device(device) if isinstance(device, str) else device
        if not isinstance(device, _device):
            raise AssertionError(f"from_dlpack: unsupported device type: {type(device)}")
        target = (DLDeviceType.kDLCUDA, device.index or 0) if device.type == "cuda" else \
            (DLDeviceType.kDLCPU, 0)
        cross_device = (int(ext_device[0]), int(ext_device[1])) != (int(target[0]), target[1]) \
            and not (device.type == "cpu" and ext_device[0] == DLDeviceType.kDLCUDAHost)
        if not cross_device:
            kwargs["dl_device"] = target
        elif copy is False:
            raise ValueError(f"cannot move DLPack tensor from device {ext_device} to {target} "
                             f"without copying. Set copy=None or copy=True.")
    if ext_device[0] == DLDeviceType.kDLCUDA:
        import ember.cuda
        s = ember.cuda.current_stream(f"cuda:{ext_device[1]}")
        kwargs["stream"] = 1 if s.cuda_stream == 0 else s.cuda_stream  # legacy default: 1
    capsule = None
    # Older producers lack some keywords: drop them one at a time, as PyTorch does.
    for drop in (None, "max_version", "copy", "dl_device"):
        if drop is not None:
            kwargs.pop(drop, None)
            if drop == "copy":
                producer_handled_copy = False
        try:
            capsule = ext_tensor.__dlpack__(**kwargs)
            break
        except TypeError:
            if drop == "dl_device":
                raise
    t = from_capsule(capsule)
    if requested_copy is True and not producer_handled_copy and not cross_device:
        t = t.clone()
    if cross_device:
        t = t.to(device)
    return t
