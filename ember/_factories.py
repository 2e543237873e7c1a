"""Python-level tensor creation that PyTorch also writes by hand (torch/csrc/utils/tensor_new.cpp):
``tensor``/``as_tensor``/``asarray``/``from_numpy``, the legacy ``Tensor(...)`` constructor,
``Tensor.to`` argument parsing, and pickling support.

Data from Python goes through one NumPy array: :func:`_data_to_array` walks nested sequences the
way PyTorch does (sizes from the first elements, ragged rows rejected with PyTorch's messages,
dtype inferred by promotion over every leaf), then the array is adopted without another copy.
"""
import collections.abc
import numbers
import math
import warnings

import numpy as np

from ._core import dtype as D
from ._core import factory_defaults
from ._core import complex32 as _complex32
from ._core import float8 as _float8
from ._core import device as _L
from ._core import tensor_impl as _ti
from ._core.device import CPU, device as _device
from ._core.allocator import cpu_cache
from ._core.promotion import promote_types
from ._core.storage import UntypedStorage, from_array, meta_storage
from ._dispatch import dispatcher as _dispatcher
from ._dispatch.tls import DEFAULT_INCLUDED as _DEFAULT_INCLUDED, state as _tls_state
from .storage import TypedStorage
from ._tensor import Tensor, _alias, make_tensor, requires_grad_of_factory, wrap_array

__all__ = ["tensor", "as_tensor", "asarray", "from_numpy", "frombuffer", "sparse_coo_tensor",
           "sparse_compressed_tensor", "sparse_csr_tensor", "sparse_csc_tensor",
           "sparse_bsr_tensor", "sparse_bsc_tensor"]

_PY_SCALARS = (bool, int, float, complex)
_NUMBER_TYPES = (numbers.Number, np.generic)


def _to_dtype(d, fname):
    if d is None:
        return None
    from ._ops.bindings import to_dtype
    return to_dtype(d, "dtype", fname)


def _target_device(device):
    if device is None:
        return factory_defaults.current_device() or CPU
    return _device(device)


# ---------------------------------------------------------------------------------------------
# Nested Python data -> NumPy array

def _is_sequence(x):
    if isinstance(x, (list, tuple, range, np.ndarray)):
        return not (isinstance(x, np.ndarray) and x.ndim == 0)
    return (isinstance(x, collections.abc.Sequence) and not isinstance(x, (str, bytes))
            and not isinstance(x, Tensor))


def _sizes(data):
    """PyTorch's compute_sizes: follow the first element down while it is a sequence."""
    sizes = []
    x = data
    while _is_sequence(x):
        n = len(x)
        sizes.append(n)
        if n == 0:
            break
        x = x[0]
    return sizes


def _leaves(data, sizes):
    """All scalars of ``data`` in row-major order, checking every row has its dimension's length."""
    level = [data]
    for dim, n in enumerate(sizes):
        nxt = []
        for item in level:
            if not _is_sequence(item):
                raise TypeError("not a sequence")
            if len(item) != n:
                raise ValueError(f"expected sequence of length {n} at dim {dim} (got {len(item)})")
            nxt.extend(item)
        level = nxt
    return level


def _numpy_dtype(np_dtype):
    """The ember dtype of a NumPy array's dtype, with PyTorch's TypeError for unsupported ones."""
    try:
        return D.from_numpy_dtype(np_dtype)
    except TypeError:
        raise TypeError(f"can't convert np.ndarray of type numpy.{np_dtype.type.__name__}. The only "
                        f"supported types are: float64, float32, float16, complex64, complex128, "
                        f"int64, int32, int16, int8, uint64, uint32, uint16, uint8, and bool.") from None


def _leaf_dtype(x):
    """The dtype PyTorch infers for one scalar of a nested sequence."""
    if x.__class__ in _PY_SCALARS:
        from ._kernels.rules.factory import scalar_dtype
        return scalar_dtype(x)
    if isinstance(x, np.generic):
        return _numpy_dtype(x.dtype)
    if isinstance(x, Tensor):
        return x._dtype
    if _is_sequence(x):  # a ragged leaf: its elements still decide the dtype
        return _infer_dtype(_leaves(x, _sizes(x)))
    if isinstance(x, str):
        raise TypeError(f"new(): invalid data type '{type(x).__name__}'")
    if isinstance(x, _PY_SCALARS):  # subclasses of Python numbers
        from ._kernels.rules.factory import scalar_dtype
        return scalar_dtype(x)
    raise RuntimeError(f"Could not infer dtype of {type(x).__name__}")


def _infer_dtype(leaves, types=None):
    if types is None:
        types = {x.__class__ for x in leaves}
    if types <= {bool}:
        return D.bool_ if leaves else D.get_default_dtype()
    if types <= {bool, int}:
        return D.int64
    if types <= {bool, int, float}:
        return D.get_default_dtype()
    if types <= {bool, int, float, complex}:
        return D.default_complex_dtype()
    result = None
    for x in leaves:
        d = _leaf_dtype(x)
        result = d if result is None else promote_types(result, d)
    return result


def _scalar_of(x, target):
    """A leaf as a value NumPy can store, with PyTorch's errors for what cannot be stored."""
    if isinstance(x, Tensor):
        if x.numel() != 1:
            if x._dtype._category <= D.INTEGRAL:
                raise TypeError("only integer tensors of a single element can be converted to an index")
            raise ValueError("only one element tensors can be converted to Python scalars")
        return x.item()
    if isinstance(x, str):
        raise TypeError(f"new(): invalid data type '{type(x).__name__}'")
    if _is_sequence(x) or not isinstance(x, _NUMBER_TYPES):
        name = type(x).__name__
        if target._category <= D.INTEGRAL:
            raise TypeError(f"'{name}' object cannot be interpreted as an integer")
        raise TypeError(f"must be real number, not {name}")
    if isinstance(x, complex) and not target.is_complex:
        raise TypeError("must be real number, not complex")
    return x


def _checked_astype(arr, target):
    """``arr`` (int64/float64/complex/bool work array) as ``target``: integer targets reject values
    out of range as PyTorch does (unsigned ones wrap negatives down to -max)."""
    if target._category == D.INTEGRAL and arr.dtype.kind in "iuf":
        from ._kernels.rules.factory import LIMITS
        lo, hi = LIMITS[target]
        if arr.dtype.kind == "f":
            bad = ~np.isfinite(arr) | (arr < lo) | (arr > hi)
        else:
            bad = (arr > hi) | (arr < (lo if target.is_signed else -hi))
        if bad.any():
            raise RuntimeError(f"value cannot be converted to type {target.name} without overflow")
    if target in D.FLOAT8:
        return _float8.to_float8(arr, target)
    if target is D.complex32:
        return _complex32.from_any(arr)
    with np.errstate(all="ignore"):
        return D.cast_values(arr, target)


def _data_to_array(data, dtype):
    """A fresh NumPy array holding ``data`` (no Tensor), with PyTorch's inferred dtype."""
    if isinstance(data, np.ndarray):
        target = (dtype or _numpy_dtype(data.dtype))._np
        if target == np.float16 and data.dtype == np.float64:
            data = D.cast_values(data, D.float16)  # (c10's double -> float -> half)
        if data.flags.c_contiguous:
            # the CPU allocator's memory, as every other new tensor's (large blocks start on a
            # cache line, and are reused)
            out = cpu_cache.empty(data.shape, target)
            np.copyto(out, data, casting="unsafe")
            return out
        return np.array(data, dtype=target, copy=True)  # its layout kept, as PyTorch keeps it
    if isinstance(data, np.generic):
        return D.cast_values(data, dtype or _numpy_dtype(data.dtype)).copy()
    if isinstance(data, str):
        raise TypeError(f"new(): invalid data type '{type(data).__name__}'")
    sizes = _sizes(data)
    if not sizes and not isinstance(data, _NUMBER_TYPES):
        raise RuntimeError(f"Could not infer dtype of {type(data).__name__}")
    leaves = _leaves(data, sizes) if sizes else [data]
    kinds = {x.__class__ for x in leaves}
    target = dtype or _infer_dtype(leaves, kinds)
    if kinds <= {bool, int, float} or (kinds <= {bool, int, float, complex} and target.is_complex):
        values = leaves  # plain Python numbers: NumPy converts them in one call
    else:
        values = [_scalar_of(x, target) for x in leaves]
        kinds = {v.__class__ for v in values}
    work = (np.complex128 if target.is_complex else np.float64 if target.is_floating_point
            else np.bool_ if target is D.bool_ else None)
    if work is None:  # integer target: keep Python ints exact, floats as floats
        work = np.float64 if kinds - {bool, int} else \
            np.uint64 if target is D.uint64 else np.int64  # uint64 values reach 2**64 - 1
    try:
        arr = np.array(values, dtype=work)
    except OverflowError:
        raise ValueError("Overflow when unpacking long long") from None
    return _checked_astype(arr, target).reshape(sizes)


# ---------------------------------------------------------------------------------------------
# Public constructors

def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A new tensor holding a copy of ``data`` (nested sequences, scalars, arrays, tensors)."""
    dtype = _to_dtype(dtype, "tensor")
    dev = _target_device(device)
    if isinstance(data, Tensor):
        warnings.warn("To copy construct from a tensor, it is recommended to use "
                      "sourceTensor.detach().clone() or sourceTensor.detach().clone()."
                      "requires_grad_(True), rather than torch.tensor(sourceTensor).",
                      UserWarning, stacklevel=2)
        t = _copy(data.data, dtype, dev, pin_memory)
    elif isinstance(data, np.ndarray):
        # (PyTorch copies an array with a dispatched .to(), no lift_fresh)
        t = wrap_array(_data_to_array(data, dtype))
        if dev.type != "cpu" or pin_memory:
            t = _copy(t, None, dev, pin_memory)
    else:
        # as PyTorch's internal_new_from_data: built (and moved) below the modes, then handed
        # to them through lift_fresh, so that FakeTensorMode makes it a FakeTensor
        from ._ops.overload import ops
        t = wrap_array(_data_to_array(data, dtype))
        if dev.type != "cpu" or pin_memory:
            from .utils._python_dispatch import _DisableTorchDispatch
            with _DisableTorchDispatch():
                t = _copy(t, None, dev, pin_memory)
        if _tls_state.included != _DEFAULT_INCLUDED or _dispatcher._observers:
            # (without a mode, functionalization or transform on, and no profiler or trace
            # watching, lift_fresh of a new plain tensor is the identity: the call is skipped)
            t = ops.aten.lift_fresh.default._call(t)
    return requires_grad_of_factory(t, requires_grad)


def _copy(t, dtype, dev, pin_memory=False):
    from ._ops.overload import ops
    return ops.aten._to_copy.default._call(t, dtype, None, dev, pin_memory or None, False, None)


def from_numpy(ndarray):
    """A CPU tensor SHARING ``ndarray``'s memory: writes through either one show in the other."""
    if not isinstance(ndarray, np.ndarray):
        cls = type(ndarray)
        name = cls.__name__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__name__}"
        raise TypeError(f"expected np.ndarray (got {name})")
    dtype = _numpy_dtype(ndarray.dtype) if ndarray.dtype.isnative else None
    if dtype is None:
        raise ValueError("given numpy array has byte order different from the native byte order. "
                         "Conversion between byte orders is currently not supported.")
    isz = ndarray.itemsize
    if any(s < 0 for s in ndarray.strides):
        raise ValueError("At least one stride in the given numpy array is negative, and tensors "
                         "with negative strides are not currently supported. (You can probably "
                         "work around this by making a copy of your array  with array.copy().) ")
    if any(s % isz for s in ndarray.strides):
        raise ValueError("given numpy array strides not a multiple of the element byte size. "
                         "Copy the numpy array to reallocate the memory.")
    if not ndarray.flags.writeable:
        warnings.warn("The given NumPy array is not writable, and PyTorch does not support "
                      "non-writable tensors. This means writing to this tensor will result in "
                      "undefined behavior. You may want to copy the array to protect its data or "
                      "make it writable before converting it to a tensor. This type of warning "
                      "will be suppressed for the rest of this program.", UserWarning, stacklevel=2)
    return _sharing(ndarray, dtype)


def _sharing(ndarray, dtype):
    """A CPU tensor of ``dtype`` over ``ndarray``'s memory (native order, non-negative strides
    that are multiples of its item size)."""
    isz = ndarray.itemsize
    stride = tuple(s // isz for s in ndarray.strides)
    if ndarray.size:
        span = 1 + sum((n - 1) * s for n, s in zip(ndarray.shape, stride))
        # a 1-d view from the first element to the last: the array's memory, not a copy
        flat = np.lib.stride_tricks.as_strided(ndarray, shape=(span,), strides=(isz,))
        storage = from_array(flat.view(np.uint8))
    else:
        storage = from_array(np.empty(0, np.uint8))
    storage._resizable = False  # the memory belongs to NumPy
    return make_tensor(storage, tuple(ndarray.shape), stride, 0, dtype, CPU)


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """A 1-d CPU tensor SHARING the memory of an object of the buffer protocol (``bytearray``,
    ``array.array``, ``memoryview``...): ``count`` elements of ``dtype`` (-1: all there are)
    from byte ``offset`` on, as ``torch.frombuffer``."""
    view = memoryview(buffer)
    length, size = view.nbytes, dtype.itemsize
    if length <= 0 or count == 0:
        raise ValueError(f"both buffer length ({length}) and count ({count}) must not be 0")
    if not 0 <= offset < length:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than "
                         f"buffer length ({length} bytes) minus 1")
    if count < 0 and (length - offset) % size:
        raise ValueError(f"buffer length ({length - offset} bytes) after offset ({offset} bytes) "
                         f"must be a multiple of element size ({size})")
    count = (length - offset) // size if count < 0 else count
    if offset + count * size > length:
        raise ValueError(f"requested buffer length ({count} * {size} bytes) after offset "
                         f"({offset} bytes) must not be greater than actual buffer length "
                         f"({length} bytes)")
    if view.readonly:
        warnings.warn("The given buffer is not writable, and PyTorch does not support "
                      "non-writable tensors. This means you can write to the underlying "
                      "(supposedly non-writable) buffer using the tensor. You may want to copy "
                      "the buffer to protect its data or make it writable before converting it "
                      "to a tensor. This type of warning will be suppressed for the rest of this "
                      "program.", UserWarning, stacklevel=2)
    raw = np.frombuffer(view.cast("B"), dtype=np.uint8, count=count * size, offset=offset)
    t = _sharing(raw.view(dtype._np), dtype)
    return requires_grad_of_factory(t, requires_grad)


def deprecated_range(start, end, step=1, *, out=None, dtype=None, layout=None, device=None,
                     requires_grad=False):
    """``torch.range`` (named so here not to shadow Python's ``range`` in this module),
    deprecated: ``start`` to ``end`` INCLUSIVE by ``step``, in the default dtype unless told;
    the values ``start + i * step`` computed in float64, as ATen's kernel computes them in its
    accumulate type."""
    warnings.warn("torch.range is deprecated and will be removed in a future release because "
                  "its behavior is inconsistent with Python's range builtin. Instead, use "
                  "torch.arange, which produces values in [start, end).", UserWarning,
                  stacklevel=2)
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (step > 0 and start > end) or (step < 0 and start < end):
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")
    from . import arange, float64, get_default_dtype
    n = int(math.floor((float(end) - float(start)) / float(step))) + 1
    values = arange(n, dtype=float64, device=device) * step + start
    r = values.to(dtype or get_default_dtype())
    if out is not None:
        out.resize_(r.shape).copy_(r)
        r = out
    return requires_grad_of_factory(r, requires_grad)


def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None, pin_memory=False,
                      requires_grad=False, check_invariants=None, is_coalesced=None):
    """A sparse COO tensor whose element at ``indices[:, i]`` is ``values[i]`` (summed where an
    index repeats). ``indices`` and ``values`` may be nested sequences, as ``tensor``'s data;
    the size is inferred from the indices when not given. ``check_invariants`` (default:
    ``ember.sparse.check_sparse_tensor_invariants.is_enabled()``) checks the indices against the
    size first."""
    from . import sparse
    from ._ops.overload import ops
    dtype = _to_dtype(dtype, "sparse_coo_tensor")
    if not isinstance(values, Tensor):
        values = tensor(values, dtype=dtype)
    dev = values.device if device is None else _device(device)
    if isinstance(indices, Tensor):
        indices = indices.detach().to(dtype=D.int64, device=dev)
    else:
        indices = tensor(indices, dtype=D.int64, device=dev)
    if check_invariants is None:
        check_invariants = sparse.check_sparse_tensor_invariants.is_enabled()
    if size is None:
        t = ops.aten.sparse_coo_tensor.indices._call(indices, values, dtype, None, dev,
                                                     pin_memory, is_coalesced)
    else:
        size = tuple(size)
        if check_invariants:
            ops.aten._validate_sparse_coo_tensor_args.default._call(indices, values, size,
                                                                    is_coalesced, None)
        t = ops.aten.sparse_coo_tensor.indices_size._call(indices, values, size, dtype, None,
                                                          dev, pin_memory, is_coalesced)
    return requires_grad_of_factory(t, requires_grad)


def _sparse_compressed(fname, layout, compressed_indices, plain_indices, values, size, dtype,
                       device, pin_memory, requires_grad, check_invariants):
    """The compressed factories' common work (PyTorch's ``sparse_compressed_tensor_ctor``): the
    parts as tensors (indices given as data are int64, tensors keep their dtype), the layout's
    constructor, then, with ``check_invariants`` (default: ``ember.sparse.
    check_sparse_tensor_invariants.is_enabled()``), PyTorch's invariants."""
    from . import sparse
    from ._ops.overload import ops
    dtype = _to_dtype(dtype, fname)
    if not isinstance(values, Tensor):
        values = tensor(values, dtype=dtype)
    dev = values.device if device is None else _device(device)
    compressed_indices, plain_indices = (
        t.detach().to(device=dev) if isinstance(t, Tensor) else tensor(t, dtype=D.int64,
                                                                       device=dev)
        for t in (compressed_indices, plain_indices))
    if check_invariants is None:
        check_invariants = sparse.check_sparse_tensor_invariants.is_enabled()
    if size is None:
        t = ops.aten.sparse_compressed_tensor.comp_plain_value._call(
            compressed_indices, plain_indices, values, dtype, layout, dev, pin_memory)
    else:
        t = ops.aten.sparse_compressed_tensor.comp_plain_value_size._call(
            compressed_indices, plain_indices, values, tuple(size), dtype, layout, dev,
            pin_memory)
    if check_invariants:
        ops.aten._validate_sparse_compressed_tensor_args.default._call(
            compressed_indices, plain_indices, values, tuple(t.shape), layout, None)
    return requires_grad_of_factory(t, requires_grad)


def sparse_compressed_tensor(compressed_indices, plain_indices, values, size=None, *,
                             dtype=None, layout=None, device=None, pin_memory=False,
                             requires_grad=False, check_invariants=None):
    """A sparse tensor of a compressed ``layout`` (sparse_csr, sparse_csc, sparse_bsr or
    sparse_bsc): run i of the entries (elements or blocks) is positions
    ``compressed_indices[i]:compressed_indices[i + 1]`` of ``plain_indices`` and ``values``,
    one run per row (CSR, BSR) or column (CSC, BSC). The parts may be nested sequences; the
    size is inferred when not given."""
    from ._kernels.rules import sparse as _rules
    _rules.check_compressed_layout("sparse_compressed_tensor", layout)
    return _sparse_compressed("sparse_compressed_tensor", layout, compressed_indices,
                              plain_indices, values, size, dtype, device, pin_memory,
                              requires_grad, check_invariants)


def _check_factory_layout(fname, layout, required):
    if layout is not None and layout is not required:
        from ._kernels.rules.sparse import layout_name
        raise RuntimeError(f"{fname}: layout must be {layout_name(required)} but got "
                           f"{layout_name(layout)}")


def sparse_csr_tensor(crow_indices, col_indices, values, size=None, *, dtype=None, layout=None,
                      device=None, pin_memory=False, requires_grad=False,
                      check_invariants=None):
    """A sparse CSR matrix: row i's elements are ``values[crow_indices[i]:crow_indices[i+1]]``
    in columns ``col_indices[...]`` of the same positions (``sparse_compressed_tensor`` of the
    CSR layout)."""
    _check_factory_layout("sparse_csr_tensor", layout, _L.sparse_csr)
    return _sparse_compressed("sparse_csr_tensor", _L.sparse_csr, crow_indices, col_indices,
                              values, size, dtype, device, pin_memory, requires_grad,
                              check_invariants)


def sparse_csc_tensor(ccol_indices, row_indices, values, size=None, *, dtype=None, layout=None,
                      device=None, pin_memory=False, requires_grad=False,
                      check_invariants=None):
    """A sparse CSC matrix: column j's elements are ``values[ccol_indices[j]:ccol_indices[j+1]]``
    in rows ``row_indices[...]`` of the same positions."""
    _check_factory_layout("sparse_csc_tensor", layout, _L.sparse_csc)
    return _sparse_compressed("sparse_csc_tensor", _L.sparse_csc, ccol_indices, row_indices,
                              values, size, dtype, device, pin_memory, requires_grad,
                              check_invariants)


def sparse_bsr_tensor(crow_indices, col_indices, values, size=None, *, dtype=None, layout=None,
                      device=None, pin_memory=False, requires_grad=False,
                      check_invariants=None):
    """A sparse BSR matrix: ``values`` (nnz, block rows, block cols) holds dense blocks, block
    row i's at positions ``crow_indices[i]:crow_indices[i+1]``, in the block columns
    ``col_indices[...]``."""
    _check_factory_layout("sparse_bsr_tensor", layout, _L.sparse_bsr)
    return _sparse_compressed("sparse_bsr_tensor", _L.sparse_bsr, crow_indices, col_indices,
                              values, size, dtype, device, pin_memory, requires_grad,
                              check_invariants)


def sparse_bsc_tensor(ccol_indices, row_indices, values, size=None, *, dtype=None, layout=None,
                      device=None, pin_memory=False, requires_grad=False,
                      check_invariants=None):
    """A sparse BSC matrix: ``values`` (nnz, block rows, block cols) holds dense blocks, block
    column j's at positions ``ccol_indices[j]:ccol_indices[j+1]``, in the block rows
    ``row_indices[...]``."""
    _check_factory_layout("sparse_bsc_tensor", layout, _L.sparse_bsc)
    return _sparse_compressed("sparse_bsc_tensor", _L.sparse_bsc, ccol_indices, row_indices,
                              values, size, dtype, device, pin_memory, requires_grad,
                              check_invariants)


def as_tensor(data, dtype=None, device=None):
    """``data`` as a tensor, sharing memory with a tensor, array or storage when dtype and
    device allow."""
    dtype = _to_dtype(dtype, "as_tensor")
    if isinstance(data, Tensor):
        return data.to(device=device, dtype=dtype)
    if isinstance(data, (UntypedStorage, TypedStorage)):
        return _over_storage(data, dtype).to(device=device)
    if isinstance(data, np.ndarray) and ndarray_shareable(data):
        t = from_numpy(data)
        if (dtype is None or dtype is t._dtype) and _target_device(device) == CPU:
            return t
        return _copy(t, dtype, _target_device(device))
    return tensor(data, dtype=dtype, device=device)


def _over_storage(storage, dtype):
    """A 1-d tensor over a whole storage, as PyTorch's: an untyped storage's bytes read as
    ``dtype`` (inferred, with none given, as from a sequence of ints: int64, or the default dtype
    when empty), a typed storage's elements if ``dtype`` (or the default dtype) is theirs."""
    if isinstance(storage, TypedStorage):
        want = dtype or D.get_default_dtype()
        if storage.dtype is not want:
            raise RuntimeError(f"Expected a Storage of type {want._short} or an UntypedStorage, "
                               f"but got {storage.dtype._short}")
        dtype, storage = want, storage._untyped_storage
    elif dtype is None:
        dtype = D.int64 if storage.nbytes() else D.get_default_dtype()
    return make_tensor(storage, (storage.nbytes() // dtype.itemsize,), (1,), 0, dtype,
                       storage.device)


def ndarray_shareable(a):
    return (a.dtype.isnative and all(s >= 0 and s % a.itemsize == 0 for s in a.strides)
            and D._BY_NP.get(a.dtype) is not None)


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
    """PyTorch's asarray: shares memory unless ``copy=True`` or a conversion needs one."""
    dtype = _to_dtype(dtype, "asarray")
    if copy:
        t = obj.data if isinstance(obj, Tensor) else None
        t = _copy(t, dtype, _target_device(device) if device is not None else t._device) \
            if t is not None else tensor(obj, dtype=dtype, device=device)
    else:
        t = as_tensor(obj, dtype=dtype, device=device)
    return requires_grad_of_factory(t, requires_grad)


# ---------------------------------------------------------------------------------------------
# ember.Tensor(...): the legacy constructor

def legacy_new(cls, args, device, dtype=None, device_type="cpu"):
    """``Tensor(*sizes)`` -> uninitialized default-dtype tensor; ``Tensor(sequence)`` -> data
    converted to the default dtype; ``Tensor(tensor)`` -> an alias of it; ``Tensor()`` -> empty.
    The legacy typed constructors (``torch.LongTensor``, ``torch.cuda.FloatTensor``) pass their
    dtype and device type."""
    from . import empty
    if device is not None:
        dev = _device(device)
        if dev.type != device_type:
            raise RuntimeError(f"legacy constructor expects device type: {device_type} but "
                               f"device type: {dev.type} was passed")
    else:
        dev = _device(device_type)
    default = dtype or D.get_default_dtype()
    if not args:
        return empty(0, dtype=default, device=dev)
    first = args[0]
    if len(args) == 1 and isinstance(first, Tensor):
        return _alias(first, first._size, first._stride, first._offset)
    from ._core.size import Size
    if len(args) == 1 and not isinstance(first, Size) and (
            _is_sequence(first) or isinstance(first, np.ndarray)):
        t = wrap_array(_data_to_array(first, default))
        return t if dev.type == "cpu" else t.to(dev)
    if len(args) == 1 and isinstance(first, Size):
        args = tuple(first)
    if all(isinstance(a, int) and not isinstance(a, bool) for a in args):
        return empty(args, dtype=default, device=dev)
    raise TypeError(f"new(): data must be a sequence (got {type(first).__name__})")


# ---------------------------------------------------------------------------------------------
# Tensor.to

_TO_SIGNATURES = [
    "(torch.device device = None, torch.dtype dtype = None, bool non_blocking = False, "
    "bool copy = False, *, torch.memory_format memory_format = None)",
    "(torch.dtype dtype, bool non_blocking = False, bool copy = False, *, "
    "torch.memory_format memory_format = None)",
    "(Tensor tensor, bool non_blocking = False, bool copy = False, *, "
    "torch.memory_format memory_format = None)",
]
_DTYPE_LIKE = (bool, int, float, complex)


def _is_dtype(x):
    return isinstance(x, D.dtype) or x in _DTYPE_LIKE


def _parse_to(args, kwargs):
    """(device, dtype, non_blocking, copy, memory_format) from any form of Tensor.to's arguments."""
    args = list(args)
    device = dtype = None
    if args and isinstance(args[0], Tensor):
        other = args.pop(0)
        device, dtype = other._device, other._dtype
    elif args and _is_dtype(args[0]):
        dtype = args.pop(0)
    elif args and (args[0] is None or isinstance(args[0], (str, _device, int))):
        device = args.pop(0)
        if args and _is_dtype(args[0]):
            dtype = args.pop(0)
    flags = {"non_blocking": False, "copy": False, "memory_format": None}
    for name, v in zip(("non_blocking", "copy"), args):
        flags[name] = v
    if len(args) > 2 or not set(kwargs) <= {"device", "dtype", "non_blocking", "copy",
                                            "memory_format"}:
        raise TypeError
    device = kwargs.get("device", device)
    dtype = kwargs.get("dtype", dtype)
    flags.update((k, v) for k, v in kwargs.items() if k in flags)
    if not all(isinstance(flags[k], bool) for k in ("non_blocking", "copy")):
        raise TypeError
    return device, dtype, flags["non_blocking"], flags["copy"], flags["memory_format"]


def tensor_to(self, *args, **kwargs):
    """Every form of ``Tensor.to``; returns ``self`` when nothing would change, as PyTorch does."""
    try:
        device, dtype, non_blocking, copy, memory_format = _parse_to(args, kwargs)
        dtype = _to_dtype(dtype, "to")
        device = None if device is None else _device(device)
    except TypeError:
        from ._ops.bindings import invalid_combination
        raise invalid_combination("to", _TO_SIGNATURES, args, kwargs) from None
    from ._ops.overload import ops
    return ops.aten.to.dtype_layout._call(self, dtype, None, device, None, non_blocking, copy,
                                          memory_format)


def new_tensor(self, data, dtype=None, device=None, requires_grad=False, layout=None,
               pin_memory=False):
    """``Tensor.new_tensor``: ``tensor(data)`` with this tensor's dtype and device as defaults."""
    return tensor(data, dtype=dtype or self._dtype, device=device or self._device,
                  requires_grad=requires_grad, pin_memory=pin_memory)


Tensor.new_tensor = new_tensor  # hand-written in PyTorch too (python_variable_methods.cpp)


# ---------------------------------------------------------------------------------------------
# pickle

def reduce_tensor(t):
    """``__reduce_ex__`` of a tensor: its storage bytes (or byte count on meta) and its layout,
    and the attributes set on it (pickle puts them back in the new tensor's ``__dict__``)."""
    if t._storage_ is None:  # a sparse tensor: its parts, pickled as tensors
        from .serialization import _rebuild_sparse_tensor
        parts = (t._sparse.compressed_indices, t._sparse.plain_indices, t.values(),
                 tuple(t._size)) if not t.is_sparse else (t._indices(), t._values(),
                                                           tuple(t._size), t.is_coalesced())
        args = (_rebuild_sparse_tensor, (t.layout, parts), t._requires_grad)
        return (_rebuild_sparse, args, t.__dict__) if t.__dict__ else (_rebuild_sparse, args)
    s = t._storage
    data = s.nbytes() if t._device.type == "meta" else bytes(s._data())
    args = (data, t._dtype, tuple(t._size), tuple(t._stride), t._offset, t._device,
            t._requires_grad)
    metadata = _ti.tensor_metadata(t)
    if metadata:  # (the conjugate and negative bits, as torch.save writes them)
        args += (metadata,)
    return (_rebuild_tensor, args, t.__dict__) if t.__dict__ else (_rebuild_tensor, args)


def _rebuild_sparse(rebuild, args, requires_grad):
    t = rebuild(*args)
    return requires_grad_of_factory(t, requires_grad)


def _rebuild_tensor(data, dtype, size, stride, offset, device, requires_grad, metadata=None):
    if device.type == "meta":
        storage = meta_storage(data)
    else:
        storage = from_array(np.frombuffer(data, np.uint8).copy(), device)
    t = make_tensor(storage, size, stride, offset, dtype, device)
    _ti.set_tensor_metadata(t, metadata)
    return requires_grad_of_factory(t, requires_grad)

