"""TensorImpl construction: a tensor's fields set from a storage, or from a kernel's fresh NumPy
array adopted as its storage (PyTorch's ``TensorImpl`` constructors and ``at::empty``).

A tensor is (storage, sizes, strides, storage_offset, dtype, device) plus its dispatch key set
and a version counter shared with its views. As in PyTorch, the key set also carries the
conjugate and negative bits (the ``Conjugate``/``Negative`` keys, :func:`_set_conj` and
:func:`_set_neg`): a view copies its base's key set, so it keeps them. Kernels build their
results here, so they need not import the frontend (``ember/_tensor.py``, which defines the
methods). The Python class a TensorImpl is an instance of is the frontend's ``Tensor``; it
registers itself with :func:`set_tensor_class` when it is defined, as PyTorch's
``THPVariableClass`` is set once ``torch._C`` has the Python class.

The key set comes from ``ember/_dispatch/keys.py`` and the thread's inference mode from
``ember/_dispatch/tls.py``: both are c10-level leaves (in PyTorch, ``c10/core``) that import
nothing above them.

The fast constructors skip ``Tensor.__new__`` (which parses user input) and set every slot.
The ones on the hot paths, :func:`wrap_array` (each op's result), :func:`_alias` (each view),
:func:`make_tensor` and :func:`data_ptr` (each buffer and kernel argument of a compiled graph's
wrapper), also exist in C (``tensor_impl.c``, built at import by the compiler the generated
kernels use): the C versions take the common case and call the Python functions here for every
other, so these stay the definition. ``EMBER_TENSOR_IMPL_C=0`` keeps the Python ones.
"""
import os

import numpy as np

from .._dispatch import tls as _tls
from .._dispatch.keys import K as _K, bit as _bit, quantized_keyset, sparse_keyset, tensor_keyset
from . import complex32 as _complex32
from . import dtype as _dt
from . import strides as _st
from .device import CPU, sparse_csr
from .storage import UntypedStorage, _alloc_observers, _notify_alloc, from_array, get_allocator
from .storage import meta_storage

__all__ = ["make_tensor", "wrap_array", "empty_tensor", "set_tensor_class", "data_ptr"]

_new = object.__new__

# The Python tensor class (``ember.Tensor``), set by ember/_tensor.py once it is defined.
Tensor = None


def set_tensor_class(cls):
    """Register the Python class that plain tensors are instances of."""
    global Tensor
    Tensor = cls
    if _C is not None:
        _C.configure(cls, _NUM_TO_DT, CPU, _CPU_KS, _CPU_INFERENCE_KS, _ADINPLACE,
                     _alloc_observers, _tls.state, _wrap_array_py, _alias_py, _make_tensor_py,
                     _data_ptr_py)


_KEYSETS = {}


def _keyset_for(dev, inference=False):
    """The dispatch key set of a tensor on ``dev`` (an inference tensor has no
    ADInplaceOrView/Autograd keys); cached per (device type, inference)."""
    k = (dev.type, inference)
    ks = _KEYSETS.get(k)
    if ks is None:
        ks = _KEYSETS[k] = tensor_keyset(dev.type, inference)
    return ks


# Assigned, not imported by name: CPython 3.11 compiles ``name.get(...)`` on an imported name as
# an attribute load plus call (a bound method per call) instead of a method call.
_NP_TO_DT = _dt._BY_NP
_NUM_TO_DT = _dt._BY_NP_NUM  # NumPy type number -> dtype: wrap_array's fast lookup
_ADINPLACE = _bit(_K.ADInplaceOrView)
_PYTHON_KEYS = _bit(_K.Python) | _bit(_K.PythonTLSSnapshot)  # a __torch_dispatch__ subclass
_CONTIGUOUS = {}  # shape -> contiguous strides, for wrap_array
_CPU_KS = _keyset_for(CPU, False)
_CPU_INFERENCE_KS = _keyset_for(CPU, True)
_CPU_ALLOCATOR = get_allocator(CPU)


def make_tensor(storage, size, stride, offset, dtype, device, cls=None):
    """A ``cls`` instance (default ``Tensor``) viewing ``storage`` with this metadata."""
    t = _new(Tensor if cls is None else cls)
    t._storage = storage
    t._size = size
    t._stride = stride
    t._offset = offset
    t._dtype = dtype
    t._device = device
    t._keyset = _keyset_for(device, _tls.state.inference)
    t._vc = None if t._keyset & _ADINPLACE == 0 else [0]
    t._base_ = None
    t._np = None
    t._requires_grad = False
    t._grad = None
    t._grad_fn = None
    t._output_nr = 0
    t._autograd = None
    return t


# array class -> function making a tensor of one of its arrays, for kernels computing on device
# arrays (ember/_kernels/cuda/arrays.py registers CuPy's)
DEVICE_ARRAY_ADOPTERS = {}


def wrap_array(a, device=CPU):
    """Adopt a fresh NumPy array produced by a CPU kernel as a new tensor (no copy).

    This runs once per op on the hot path, so it avoids generic helpers: dtype by the NumPy
    type number, contiguous strides from a dict, and no UntypedStorage until one is asked for."""
    if a.__class__ is not np.ndarray:
        adopt = DEVICE_ARRAY_ADOPTERS.get(a.__class__)
        if adopt is not None:  # a device array (CuPy's): a tensor on its device
            return adopt(a)
        a = np.asarray(a)
    dtype = _NUM_TO_DT.get(a.dtype.num)
    if dtype is None:
        dtype = _NP_TO_DT.get(a.dtype)
        if dtype is None:
            if a.dtype.kind == "V":  # the bytes of a dtype without arithmetic (_ShellDtype)
                raise NotImplementedError("ember computes no values of the quantized, bits, "
                                          "sub-byte integer or float4 dtypes: it holds their "
                                          "bytes (empty tensors, views, copies) only")
            raise TypeError(f"kernel produced unsupported NumPy dtype {a.dtype}")
        if dtype is _dt.complex32:
            _complex32.warn_experimental()
    shape = a.shape
    if a.flags.c_contiguous:
        stride = _CONTIGUOUS.get(shape)
        if stride is None:
            stride = _CONTIGUOUS[shape] = _st.contiguous_strides(shape)
    else:
        isz = dtype.itemsize
        stride = tuple(s // isz for s in a.strides)
        if any(s < 0 for s in stride) or not _st.is_non_overlapping_and_dense(shape, stride):
            a = np.ascontiguousarray(a)
            stride = _st.contiguous_strides(shape)
    t = _new(Tensor)
    # The UntypedStorage is built lazily from the array (Tensor._storage); the memory profiler
    # must see every allocation as it happens, so it gets the storage now.
    t._storage_ = _adopt(a, device) if _alloc_observers or device is not CPU else a
    t._size = shape
    t._stride = stride
    t._offset = 0
    t._dtype = dtype
    t._device = device
    if device is CPU:
        ks = _CPU_INFERENCE_KS if _tls.state.inference else _CPU_KS
    else:
        ks = _keyset_for(device, _tls.state.inference)
    t._keyset = ks
    t._vc = None if ks & _ADINPLACE == 0 else [0]
    t._base_ = None
    t._np = a
    t._requires_grad = False
    t._grad = None
    t._grad_fn = None
    t._output_nr = 0
    t._autograd = None
    return t


def _adopt(a, device):
    """The UntypedStorage of a kernel's fresh result array (from_array, inlined: it is hot)."""
    storage = _new(UntypedStorage)
    storage._buf = a
    storage._bytes = None
    storage._nbytes = a.nbytes
    storage.device = device
    storage._resizable = True
    storage._allocator = _CPU_ALLOCATOR if device is CPU else get_allocator(device)
    if _alloc_observers:  # the memory profiler (see ember/_core/storage.py)
        _notify_alloc(storage)
    return storage


def empty_tensor(size, dtype, device, stride=None):
    """A fresh tensor with uninitialized storage on ``device`` (contiguous unless ``stride``)."""
    size = tuple(size)
    for s in size:
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: "
                               f"[{', '.join(map(str, size))}]")
    if stride is None:
        _st.check_storage_size(size, dtype.itemsize)
        stride = _st.contiguous_strides(size)
    nbytes = _st.storage_extent(size, stride, 0) * dtype.itemsize
    if dtype is _dt.complex32:
        _complex32.warn_experimental()
    if device.type == "meta":
        storage = meta_storage(nbytes)
    elif device.type == "cpu":
        storage = from_array(get_allocator(device).allocate(nbytes), device)
    else:
        storage = UntypedStorage(nbytes, device=device)
    return make_tensor(storage, size, stride, 0, dtype, device)


def _alias(base, size, stride, offset, dtype=None):
    """A tensor sharing ``base``'s storage (the building block of every view)."""
    t = _new(Tensor)
    t._storage = base._storage
    t._size = size
    t._stride = stride
    t._offset = offset
    t._dtype = base._dtype if dtype is None else dtype
    t._device = base._device
    t._keyset = base._keyset  # (with the conjugate and negative bits: a view keeps them)
    t._vc = base._vc
    t._base_ = base._base_ if base._base_ is not None else base
    t._np = None
    t._requires_grad = False
    t._grad = None
    t._grad_fn = None
    t._output_nr = 0
    t._autograd = None
    if base._keyset & _QUANTIZED:  # a view of a quantized tensor keeps its quantizer
        t._quantizer = base._quantizer
    return t


_QUANTIZED = _bit(_K.QuantizedCPU) | _bit(_K.QuantizedCUDA)
CONJUGATE = _bit(_K.Conjugate)
NEGATIVE = _bit(_K.Negative)


def _set_conj(t, flag):
    """Set or clear ``t``'s conjugate bit (PyTorch's ``TensorImpl::_set_conj``): its memory then
    holds the conjugates of its values."""
    t._keyset = t._keyset | CONJUGATE if flag else t._keyset & ~CONJUGATE


def _set_neg(t, flag):
    """Set or clear ``t``'s negative bit (``TensorImpl::_set_neg``): its memory holds the
    negatives of its values."""
    t._keyset = t._keyset | NEGATIVE if flag else t._keyset & ~NEGATIVE


def tensor_metadata(t):
    """The bits as a checkpoint records them (PyTorch's ``torch._utils.get_tensor_metadata``):
    ``{"conj": True}``, ``{"neg": True}``, both or neither."""
    return {name: True for name, b in (("conj", CONJUGATE), ("neg", NEGATIVE)) if t._keyset & b}


def set_tensor_metadata(t, metadata):
    """Set the bits :func:`tensor_metadata` recorded (``torch._utils.set_tensor_metadata``)."""
    if metadata:
        _set_conj(t, metadata.get("conj", False))
        _set_neg(t, metadata.get("neg", False))


def quantized_tensor_impl(storage, size, stride, offset, quantizer, device=CPU, base=None):
    """A quantized tensor (PyTorch's ``QTensorImpl``): ``storage`` holds the integers of
    ``quantizer.dtype`` (its ``_dtype``), ``quantizer`` says what they mean. With ``base`` it
    is a view of that tensor (its storage and version counter)."""
    t = make_tensor(storage, tuple(size), tuple(stride), offset, quantizer.dtype, device)
    t._keyset = quantized_keyset(device.type, _tls.state.inference)
    if base is not None:
        t._vc = base._vc
        t._base_ = base._base_ if base._base_ is not None else base
    t._quantizer = quantizer
    return t


class SparseCOO:
    """What a sparse COO tensor holds instead of a storage (PyTorch's ``SparseTensorImpl``):
    ``indices``, an int64 (sparse_dim, nnz) tensor, and ``values``, a (nnz, *dense sizes)
    tensor, both dense tensors on the sparse tensor's device; ``coalesced`` says the indices are
    sorted and unique (a promise the kernels keep, not a check)."""
    __slots__ = ("indices", "values", "sparse_dim", "coalesced")

    def __init__(self, indices, values, sparse_dim, coalesced):
        self.indices, self.values = indices, values
        self.sparse_dim, self.coalesced = sparse_dim, coalesced


def _untracked(t):
    """``t``, or an alias of it outside autograd's view: a sparse tensor's parts are plain
    tensors, so the kernels computing on them record nothing (autograd sees the sparse one)."""
    if not (t._requires_grad or t._grad_fn is not None):
        return t
    a = _alias(t, t._size, t._stride, t._offset)
    a._base_ = None
    return a


class SparseCompressed:
    """What a sparse compressed tensor holds (PyTorch's ``SparseCsrTensorImpl``, which serves
    the four compressed layouts): its ``layout`` (sparse_csr, sparse_csc, sparse_bsr or
    sparse_bsc), ``compressed_indices`` — entry (or block) run i is positions
    compressed_indices[i]:compressed_indices[i + 1] of the others, one run per row (CSR, BSR)
    or column (CSC, BSC) of elements or blocks — and those entries' ``plain_indices`` (their
    columns, or rows) and ``values`` ((nnz,) or, for blocks, (nnz, block rows, block cols))."""
    __slots__ = ("layout", "compressed_indices", "plain_indices", "values")

    def __init__(self, layout, compressed_indices, plain_indices, values):
        self.layout = layout
        self.compressed_indices, self.plain_indices = compressed_indices, plain_indices
        self.values = values


def sparse_compressed_tensor_impl(compressed_indices, plain_indices, values, size, layout):
    """A sparse compressed tensor of ``size`` and ``layout`` over its three parts (no checks:
    see ``ember/_kernels/rules/sparse.py``). Its dtype and device are the values'; every
    compressed layout has PyTorch's SparseCsrCPU/SparseCsrCUDA key."""
    size = tuple(size)
    t = make_tensor(None, size, (0,) * len(size), 0, values._dtype, values._device)
    t._keyset = sparse_keyset(values._device.type, _tls.state.inference, csr=True)
    t._sparse = SparseCompressed(layout, _untracked(compressed_indices),
                                 _untracked(plain_indices), _untracked(values))
    return t


def sparse_csr_tensor_impl(crow_indices, col_indices, values, size):
    """A sparse CSR tensor (``sparse_compressed_tensor_impl`` of the CSR layout)."""
    return sparse_compressed_tensor_impl(crow_indices, col_indices, values, size, sparse_csr)


def sparse_coo_tensor_impl(indices, values, size, coalesced=False):
    """A sparse COO tensor of ``size`` over ``indices`` and ``values`` (no checks: the rules in
    ``ember/_kernels/rules/sparse.py`` make them). Its dtype and device are the values'."""
    size = tuple(size)
    # no storage; PyTorch 2.13's stride() of a sparse tensor is zeros
    t = make_tensor(None, size, (0,) * len(size), 0, values._dtype, values._device)
    t._keyset = sparse_keyset(values._device.type, _tls.state.inference)
    t._sparse = SparseCOO(_untracked(indices), _untracked(values), indices._size[0], coalesced)
    return t


def data_ptr(t):
    """``t.data_ptr()``: the address of ``t``'s first element, 0 for an empty tensor (PyTorch's
    ``TensorImpl::data()`` returns nullptr then). A kernel's result whose storage was never asked
    for answers with its array's address, without building the storage."""
    if 0 in t._size:
        return 0
    s = t._storage_
    p = s.__array_interface__["data"][0] if s.__class__ is np.ndarray else s.data_ptr()
    return p + t._offset * t._dtype.itemsize if p else 0


def _load_c():
    """The C constructors (``tensor_impl.c``), or None: switched off, no compiler, or a failed
    build (logged; the Python functions run)."""
    if os.environ.get("EMBER_TENSOR_IMPL_C") == "0":
        return None
    from .._inductor.codecache import HandWrittenModule
    return HandWrittenModule("ember_tensor_impl", _c_source, "tensors are built in Python",
                             parallel=False).get()


def _c_source():
    with open(os.path.join(os.path.dirname(__file__), "tensor_impl.c")) as f:
        return f.read()


_wrap_array_py, _alias_py, _make_tensor_py, _data_ptr_py = wrap_array, _alias, make_tensor, data_ptr
_C = _load_c()
if _C is not None:
    wrap_array, _alias, make_tensor, data_ptr = (_C.wrap_array, _C._alias, _C.make_tensor,
                                                 _C.data_ptr)
