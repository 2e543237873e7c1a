"""``torch._prims_common``: the helpers PyTorch's Python references and decompositions share,
under PyTorch's names — type aliases, dtype predicates and maps, elementwise and reduction
type promotion, stride and contiguity predicates, dim canonicalization and argument checks.

The rules themselves have one home each in ember and are called from here: type promotion and
the computation dtype in ``_core/promotion.py``, strides, contiguity, memory formats,
broadcasting, ``-1`` inference and dim wrapping in ``_core/strides.py``. What is left here is
what belongs to this module alone: its own orderings of types and dtypes (``get_higher_type``,
``get_higher_dtype``), its messages, and the checks libraries call.

Symbolic sizes: ember's SymInts are all backed (each has its example value), so no question
about a size is undecidable, and the guard-free ``*_or_false`` variants answer as the plain
ones do, guarding where the answer depends on a symbol (what PyTorch's ``guard_or_false``
does for backed symbols).
"""
import operator
import warnings
from collections.abc import Sequence
from enum import Enum
from functools import reduce
from typing import TypeAlias

import ember
from .._core import dtype as D
from .._core import promotion as _promotion
from .._core import strides as _st
from .._core.symint import SymBool, SymFloat, SymInt
from .._tensor import Tensor

ShapeType: TypeAlias = ember.Size | list[int] | tuple[int, ...]
StrideType: TypeAlias = list[int] | tuple[int, ...]
DimsType: TypeAlias = int | list[int] | tuple[int, ...]
DimsSequenceType: TypeAlias = list[int] | tuple[int, ...]
NumberTypeType: TypeAlias = type[bool] | type[int] | type[float] | type[complex]
NumberType: TypeAlias = bool | int | float | complex
RealNumberType: TypeAlias = bool | int | float

Number = (bool, int, float, complex, SymInt, SymFloat, SymBool)
# (IntLike, unlike numbers.Integral, does not name bool)
Dim = int
IntLike = (int, SymInt)
FloatLike = (float, SymFloat)
BoolLike = (bool, SymBool)
IntWithoutSymInt = int
FloatWithoutSymFloat = float
DeviceLikeType: TypeAlias = str | ember.device | int

TensorLikeType = Tensor
TensorLike = Tensor
TensorSequenceType: TypeAlias = list[TensorLikeType] | tuple[TensorLikeType, ...]
TensorOrNumberLikeType: TypeAlias = TensorLikeType | NumberType

CustomOutParamAnnotation = "__custom_out_param__"

# functions a __torch_function__ mode of the references lets through untouched
torch_function_passthrough = {
    ember.device, ember.sym_not, ember.sym_float, ember.sym_int, ember.sym_max, ember.sym_min,
    ember.sym_ite, Tensor.dim, Tensor.ndim.__get__, Tensor.numel, Tensor.size,
    Tensor.storage_offset, Tensor.stride, Tensor.dtype.__get__, Tensor.is_sparse.__get__,
    Tensor.shape.__get__, Tensor.device.__get__, Tensor.requires_grad.__get__,
    Tensor.layout.__get__, Tensor.is_contiguous, Tensor.__format__, Tensor.__repr__,
    Tensor.__getitem__,
}


def _is_symbolic(xs):
    return any(isinstance(x, (SymInt, SymBool)) for x in xs)


# ---------------------------------------------------------------------------------------------
# Comparing tensors' metadata

def same_shape(a, b, *, allow_rhs_unbacked=False):
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if allow_rhs_unbacked and isinstance(y, SymInt):
            continue
        if x != y:
            return False
    return True


def _maybe_get_pytype(t):
    if t is SymFloat:
        return float
    if t is SymInt:
        return int
    if t is SymBool:
        return bool
    return t


def compare_tensor_meta(a, b, check_sizes=True, check_strides=False, *,
                        allow_rhs_unbacked=False, check_conj=True):
    """Checks that two tensors have the same shape, dtype and device (and, when asked, the
    same significant strides and storage offset), raising MetadataMismatchError."""
    from .._subclasses.fake_tensor import MetadataMismatchError

    if not isinstance(a, TensorLike):
        raise AssertionError(f"a must be TensorLike, got {type(a)}")
    if not isinstance(b, TensorLike):
        raise AssertionError(f"b must be TensorLike, got {type(b)}")
    if check_sizes and not same_shape(a.shape, b.shape, allow_rhs_unbacked=allow_rhs_unbacked):
        raise MetadataMismatchError(f"Shapes {a.shape} and {b.shape} are not equal!")
    if a.dtype != b.dtype:
        raise MetadataMismatchError(f"Dtypes {a.dtype} and {b.dtype} are not equal!")
    if a.device != b.device:
        # "cuda" and "cuda:0" name one device
        if not (str(a.device) in ("cuda:0", "cuda") and str(b.device) in ("cuda:0", "cuda")):
            raise MetadataMismatchError(f"Devices {a.device} and {b.device} are not equal!")
    if check_strides:
        same_strides, idx = check_significant_strides(a, b, only_cuda=False,
                                                      allow_rhs_unbacked=allow_rhs_unbacked)
        if not same_strides:
            raise MetadataMismatchError(f"Stride mismatch! Strides are {a.stride()} and "
                                        f"{b.stride()} (mismatched at {idx})!")
        if a.storage_offset() != b.storage_offset():
            raise MetadataMismatchError(f"Storage offset mismatch! Storage offsets are "
                                        f"{a.storage_offset()} and {b.storage_offset()}!")
    if check_conj and a.is_conj() != b.is_conj():
        raise MetadataMismatchError(f"Conj mismatch! is_conj is set to {a.is_conj()} and "
                                    f"{b.is_conj()}")
    if a.is_neg() != b.is_neg():
        raise MetadataMismatchError(f"Neg mismatch! is_neg is set to {a.is_neg()} and "
                                    f"{b.is_neg()}")


def _check_strides_helper(a, b, *, only_cuda=True, significant_only=True,
                          allow_rhs_unbacked=False):
    # only on CUDA by default: PyTorch's CPU elementwise strides are not a contract
    if (not only_cuda or a.device.type == "cuda" or b.device.type == "cuda") and a.numel() > 0:
        for idx in range(a.ndim):
            check = not significant_only or a.shape[idx] > 1
            if isinstance(b.stride()[idx], SymInt):
                continue
            if a.stride()[idx] != b.stride()[idx] and check:
                return False, idx
    return True, None


def check_significant_strides(a, b, *, only_cuda=True, allow_rhs_unbacked=False):
    """Compares the strides of the dims longer than 1: (True, None) or (False, first dim)."""
    return _check_strides_helper(a, b, only_cuda=only_cuda, significant_only=True,
                                 allow_rhs_unbacked=allow_rhs_unbacked)


def check_all_strides(a, b, *, only_cuda=True):
    return _check_strides_helper(a, b, only_cuda=only_cuda, significant_only=False)


# ---------------------------------------------------------------------------------------------
# Contiguity (the rules are _core/strides.py's; see the module docstring on false_if_dde)

def check_contiguous_sizes_strides(sizes, strides, false_if_dde=False):
    """Whether (sizes, strides) are contiguous: dims of length 1 may have any stride."""
    return _st.is_contiguous(tuple(sizes), tuple(strides))


def is_contiguous(a, false_if_dde=False):
    """Whether ``a`` is contiguous: no elements, one element, or nested strides."""
    return _st.is_contiguous(tuple(a.shape), tuple(a.stride()))


def is_channels_last_contiguous_2d(a, false_if_dde=False):
    return _st.is_channels_last_contiguous_2d(tuple(a.shape), tuple(a.stride()))


def is_channels_last_contiguous_3d(a, false_if_dde=False):
    return _st.is_channels_last_contiguous_3d(tuple(a.shape), tuple(a.stride()))


_memory_formats = {ember.contiguous_format, ember.preserve_format, ember.channels_last,
                   ember.channels_last_3d}


def validate_memory_format(memory_format):
    ember._check(memory_format in _memory_formats,
                 lambda: f"Received unknown memory format {memory_format}!")


def is_contiguous_for_memory_format(a, *, memory_format, false_if_dde=False):
    validate_memory_format(memory_format)
    if memory_format == ember.contiguous_format:
        return is_contiguous(a, false_if_dde)
    if memory_format == ember.channels_last:
        return is_channels_last_contiguous_2d(a, false_if_dde)
    if memory_format == ember.channels_last_3d:
        return is_channels_last_contiguous_3d(a, false_if_dde)
    ember._check(False,
                 lambda: f"is_contiguous received unsupported memory format {memory_format}")


def is_contiguous_or_false(a):
    return is_contiguous(a, false_if_dde=True)


def is_channels_last_contiguous_or_false_2d(a):
    return is_channels_last_contiguous_2d(a, false_if_dde=True)


def is_channels_last_contiguous_or_false_3d(a):
    return is_channels_last_contiguous_3d(a, false_if_dde=True)


def is_contiguous_for_memory_format_or_false(a, *, memory_format):
    return is_contiguous_for_memory_format(a, memory_format=memory_format, false_if_dde=True)


def is_channels_last_contiguous(a):
    """True when ``a`` is channels-last contiguous: NHWC (4 dims) or NDHWC (5 dims) with
    nested strides, C innermost."""
    return is_channels_last_contiguous_2d(a) or is_channels_last_contiguous_3d(a)


def is_channels_last_contiguous_or_false(a):
    return is_channels_last_contiguous_or_false_2d(a) or is_channels_last_contiguous_or_false_3d(a)


def _is_non_overlapping_and_dense_or_false(sizes, strides):
    return _st.is_non_overlapping_and_dense(tuple(sizes), tuple(strides))


def is_non_overlapping_and_dense_or_false(a):
    """True when some permutation of ``a``'s dims is contiguous (a sparse tensor: False)."""
    if a.is_sparse:
        return False
    return _is_non_overlapping_and_dense_or_false(a.shape, a.stride())


def compute_elementwise_output_logical_to_physical_perm(*tensors, _skip_checks=False,
                                                        ambiguity_check=False):
    """(perm, ambiguous): the order, outermost first, in which an elementwise output over
    ``tensors`` lays out its dims, and with ``ambiguity_check`` whether the operands' strides
    left two neighbouring dims unordered."""
    if not _skip_checks and len(tensors) == 0:
        raise ValueError("Can't compute elementwise output strides for zero tensors!")
    if not _skip_checks:
        check_same_shape(*tensors, allow_cpu_scalar_tensors=True)
        tensors = tuple(a for a in tensors
                        if isinstance(a, TensorLike) and not is_cpu_scalar_tensor(a))
    if len(tensors) == 0:
        return [], False
    return _st.elementwise_output_perm(tuple(tensors[0].shape),
                                       [tuple(t.stride()) for t in tensors], ambiguity_check)


def compute_elementwise_output_strides(*tensors):
    """The strides of an elementwise op's output over ``tensors`` (numbers and CPU scalar
    tensors take no part)."""
    if len(tensors) == 0:
        raise ValueError("Can't compute elementwise output strides for zero tensors!")
    check_same_shape(*tensors, allow_cpu_scalar_tensors=True)
    tensors = tuple(a for a in tensors if isinstance(a, TensorLike) and not is_cpu_scalar_tensor(a))
    if len(tensors) == 0:
        return ()
    return _st.elementwise_output_strides(tuple(tensors[0].shape),
                                          [tuple(t.stride()) for t in tensors])


def apply_perm(inp, perm):
    """``inp`` reordered by ``perm`` (the identity is [0, 1, 2, ...])."""
    out = [-1] * len(inp)
    for idx, x in enumerate(perm):
        out[idx] = inp[x]
    return out


def invert_perm(perm):
    out = [-1] * len(perm)
    for idx, x in enumerate(perm):
        out[x] = idx
    return out


# ---------------------------------------------------------------------------------------------
# Shapes, strides and dims

def validate_dim_length(length):
    """Validates that ``length`` is a valid dimension length."""
    if isinstance(length, (int, SymInt)):
        ember._check(length >= 0)
    elif length < 0:  # (inductor passes sympy expressions)
        raise AssertionError(f"length must be non-negative, got {length}")


def validate_shape(shape):
    """Validates that ``shape`` is a sequence of valid dimension lengths."""
    if not isinstance(shape, Sequence):
        raise AssertionError(f"shape must be a Sequence, got {type(shape)}")
    for length in shape:
        validate_dim_length(length)


def validate_strides(strides):
    """Validates that ``strides`` is a sequence of non-negative strides."""
    if not isinstance(strides, Sequence):
        raise AssertionError(f"strides must be a Sequence, got {type(strides)}")
    for stride in strides:
        if stride < 0:
            raise AssertionError(f"stride must be non-negative, got {stride}")


def validate_idx(rank, idx):
    """Validates that an already canonicalized ``idx`` indexes a shape of ``rank`` dims."""
    if not isinstance(idx, Dim):
        raise AssertionError(f"idx must be Dim, got {type(idx)}")
    if not isinstance(rank, Dim):
        raise AssertionError(f"rank must be Dim, got {type(rank)}")
    if not (idx >= 0 and idx < rank or idx == 0):
        raise AssertionError(f"idx {idx} is out of bounds for rank {rank}")


def validate_dimension_indices(rank, indices):
    for idx in indices:
        validate_idx(rank, idx)


def validate_exclusive_idx(rank, ex_idx):
    """Validates that ``ex_idx`` is a valid exclusive index (one past a dim) for ``rank``."""
    if not isinstance(ex_idx, Dim):
        raise AssertionError(f"ex_idx must be Dim, got {type(ex_idx)}")
    if not isinstance(rank, Dim):
        raise AssertionError(f"rank must be Dim, got {type(rank)}")
    if not (ex_idx > 0 and ex_idx <= rank):
        raise AssertionError(f"ex_idx {ex_idx} is out of bounds for rank {rank} "
                             f"(must be in (0, rank])")


def canonicalize_dim(rank, idx, wrap_scalar=True):
    """``idx`` wrapped once for ``rank`` dims (a 0-dim tensor acts as 1-dim when
    ``wrap_scalar``), with ATen's IndexError otherwise."""
    if rank < 0:
        raise IndexError(f"Rank cannot be negative but got {rank}")
    return _st.wrap_dim(idx, rank, wrap_scalar)


def canonicalize_dims(rank, indices, wrap_scalar=True):
    """One dim or a sequence of dims, each canonicalized (a sequence comes back a tuple)."""
    if isinstance(indices, Dim):
        return canonicalize_dim(rank, indices, wrap_scalar)
    return tuple(canonicalize_dim(rank, x, wrap_scalar) for x in indices)


def is_valid_permutation(rank, perm):
    """Validates that ``perm`` is a permutation of length ``rank``."""
    return isinstance(perm, Sequence) and sorted(perm) == list(range(rank))


def is_same_shape(a, b):
    """Whether shapes ``a`` and ``b`` have the same rank and lengths (a SymBool, not a guard,
    when a length is symbolic)."""
    a, b = tuple(a), tuple(b)
    if not (_is_symbolic(a) or _is_symbolic(b)):
        return a == b
    from ..fx.experimental.symbolic_shapes import sym_eq
    return sym_eq(a, b)


def is_cpu_scalar_tensor(a):
    return isinstance(a, TensorLike) and a.ndim == 0 and a.device.type == "cpu"


def check_same_device(*args, allow_cpu_scalar_tensors):
    """Checks that every Tensor of ``args`` is on one device (numbers pass; so do CPU scalar
    tensors when ``allow_cpu_scalar_tensors``); RuntimeError otherwise."""
    if len(args) <= 1:
        return
    device = None
    for arg in args:
        if isinstance(arg, Number):
            continue
        if isinstance(arg, TensorLike):
            if allow_cpu_scalar_tensors and is_cpu_scalar_tensor(arg):
                continue
            if device is None:
                device = arg.device
            if device != arg.device:
                raise RuntimeError(f"Tensor on device {arg.device} is not on the expected "
                                   f"device {device}!")
        else:
            raise RuntimeError(f"Unexpected type when checking for same device, {type(arg)}!")


def canonicalize_device(device):
    if isinstance(device, ember.device):
        return device
    if not isinstance(device, str):
        raise AssertionError(f"device must be torch.device or str, got {type(device)}")
    return ember.device(device)


def check_same_shape(*args, allow_cpu_scalar_tensors):
    """Checks that every Tensor of ``args`` has one shape (numbers pass; so do CPU scalar
    tensors when ``allow_cpu_scalar_tensors``); RuntimeError otherwise."""
    shape = None
    for arg in args:
        if isinstance(arg, Number):
            continue
        if isinstance(arg, TensorLike):
            if allow_cpu_scalar_tensors and is_cpu_scalar_tensor(arg):
                continue
            if shape is None:
                shape = arg.shape
            if not is_same_shape(shape, arg.shape):
                raise RuntimeError(f"Shape {arg.shape} is not the expected shape {shape}!")
        else:
            raise RuntimeError(f"Unexpected type when checking for same shape, {type(arg)}!")


def extract_shape(*args, allow_cpu_scalar_tensors):
    """The common shape of the tensors of ``args`` (numbers skipped), or None when they
    disagree or an argument is neither."""
    shape = None
    scalar_shape = None
    for arg in args:
        if isinstance(arg, Number):
            continue
        if isinstance(arg, TensorLike):
            if allow_cpu_scalar_tensors and is_cpu_scalar_tensor(arg):
                scalar_shape = arg.shape
                continue
            if shape is None:
                shape = arg.shape
            if not is_same_shape(shape, arg.shape):
                return None
        else:
            return None
    return shape if shape is not None else scalar_shape


def extract_dims_from_varargs(dims):
    """Dims given as varargs (``permute(0, 2, 1)``) or as one sequence (``permute((0, 2, 1))``)."""
    if dims and isinstance(dims[0], Sequence):
        if len(dims) != 1:
            raise AssertionError(f"Expected exactly 1 element in dims when first element is a "
                                 f"Sequence, got {len(dims)}")
        return dims[0]
    return dims


def extract_shape_from_varargs(shape, validate=True):
    """A shape given as varargs (``foo(1, 2, 3)``) or as one sequence (``foo((1, 2, 3))``),
    validated."""
    if len(shape) == 1 and isinstance(shape[0], Sequence):
        shape = shape[0]
    if validate:
        validate_shape(shape)
    return shape


def infer_size_shapes(a, b):
    """The broadcast of shapes ``a`` and ``b``."""
    return _st.broadcast_shapes(tuple(a), tuple(b), _kind="non-jagged")


def infer_size(shape, numel):
    """``shape`` with its -1 (if any) inferred from ``numel``, checked against ``numel``."""
    return _st.infer_size(tuple(shape), numel, invalid_dim=lambda d, i: (
        f"invalid shape dimension {d}. If this was symbolic, it was assumed to not be -1."
        "If this was meant to be inferred, please explicitly pass in -1."))


# ---------------------------------------------------------------------------------------------
# Dtypes

_integer_dtypes = (D.uint8, D.uint16, D.uint32, D.uint64, D.int8, D.int16, D.int32, D.int64)
_low_precision_dtypes = (D.float16, D.bfloat16, D.complex32)
_complex_dtypes = (D.complex32, D.complex64, D.complex128)


def _check_dtype(dtype):
    if not isinstance(dtype, D.dtype):
        raise AssertionError(f"Expected torch.dtype, got {type(dtype)}")


def is_boolean_dtype(dtype):
    _check_dtype(dtype)
    return dtype is D.bool_


def is_integer_dtype(dtype):
    _check_dtype(dtype)
    return dtype._category == D.INTEGRAL


def is_low_precision_dtype(dtype):
    _check_dtype(dtype)
    return dtype in _low_precision_dtypes


def is_float_dtype(dtype):
    _check_dtype(dtype)
    return dtype.is_floating_point


def is_complex_dtype(dtype):
    _check_dtype(dtype)
    return dtype.is_complex


def is_grad_dtype(dtype):
    """Whether a tensor of ``dtype`` can require a gradient."""
    return dtype.is_floating_point or is_complex_dtype(dtype)


_complex_to_real_dtype_map = {d: d.to_real() for d in _complex_dtypes}
_real_to_complex_dtype_map = {d: d.to_complex()
                              for d in (D.float16, D.bfloat16, D.float32, D.float64)}


def corresponding_real_dtype(dtype):
    """complex32/64/128 -> float16/32/64 (KeyError for any other dtype)."""
    return _complex_to_real_dtype_map[dtype]


def corresponding_complex_dtype(dtype):
    """float16 -> complex32, bfloat16 and float32 -> complex64, float64 -> complex128
    (KeyError for any other dtype)."""
    return _real_to_complex_dtype_map[dtype]


def dtype_to_type(dtype):
    """The Python type ("type kind") of ``dtype``: bool, int, float or complex."""
    _check_dtype(dtype)
    if dtype is D.bool_:
        return bool
    if dtype._category == D.INTEGRAL:
        return int
    if dtype.is_floating_point:
        return float
    if dtype.is_complex:
        return complex
    raise ValueError("Invalid dtype!")


def dtype_to_type_ctor(dtype):
    """The Python constructor of ``dtype``'s type kind (SymInt-preserving for ints and
    floats)."""
    _check_dtype(dtype)
    if dtype is D.bool_:
        return lambda x: bool(x)
    if dtype._category == D.INTEGRAL:
        return ember.sym_int
    if dtype.is_floating_point:
        return ember.sym_float
    if dtype.is_complex:
        return lambda x: complex(x)
    raise ValueError("Invalid dtype!")


def type_to_dtype(typ):
    """The dtype of a Python number type: bool, int64, the default dtype or its complex."""
    if not isinstance(typ, type):
        raise AssertionError(f"Expected type, got {type(typ)}")
    if typ in (bool, SymBool):
        return D.bool_
    if typ in (int, SymInt):
        return D.int64
    if typ in (float, SymFloat):
        return D.get_default_dtype()
    if typ is complex:
        return corresponding_complex_dtype(D.get_default_dtype())
    raise ValueError(f"Invalid type {typ}!")


def get_dtype(x):
    if isinstance(x, Tensor):
        return x.dtype
    return type_to_dtype(type(x))


_ordered_types = (bool, int, float, complex)


def check_fp_or_complex(dtype, fn_name, allow_low_precision_dtypes=True):
    """Checks that ``dtype`` is floating or complex (and not a half type unless allowed)."""
    ember._check(is_float_dtype(dtype) or is_complex_dtype(dtype),
                 lambda: f"{fn_name}: Expected a floating point or complex tensor as input. "
                         f"Got {dtype}")
    ember._check(allow_low_precision_dtypes or not is_low_precision_dtype(dtype),
                 lambda: f"{fn_name}: Half precision dtypes not supported. Got {dtype}")


def check_is_matrix(A, f_name, arg_name="A"):
    ember._check(len(A.shape) >= 2,
                 lambda: f"{f_name}: The input tensor {arg_name} must have at least 2 dimensions.")


def get_higher_type(a, b):
    """The higher of two Python number types in the order bool < int < float < complex."""
    a, b = _maybe_get_pytype(a), _maybe_get_pytype(b)
    if a not in _ordered_types or b not in _ordered_types:
        raise RuntimeError(f"Expected builtin numeric types, found {a}, {b}")
    if a is b:
        return a
    for typ in _ordered_types:
        if a is typ:
            return b
        if b is typ:
            return a
    raise ValueError("Unknown Python scalar type!")


# this module's total order of dtypes; two of one rank go to the next rank up
_ordered_datatypes = (
    (D.bool_,), (D.uint8, D.int8), (D.int16,), (D.int32,), (D.int64,), (D.float16, D.bfloat16),
    (D.float32,), (D.float64,), (D.complex32,), (D.complex64,), (D.complex128,))


def get_higher_dtype(a, b):
    """The "lowest" dtype weakly "higher" than both ``a`` and ``b`` (each a dtype, tensor,
    number or None) in this module's order: bool < uint8, int8 < int16 < int32 < int64 <
    float16, bfloat16 < float32 < float64 < complex32 < complex64 < complex128."""
    if a is not None and not isinstance(a, (D.dtype, TensorLike, Number)):
        raise AssertionError(f"a must be None, torch.dtype, TensorLike, or Number, got {type(a)}")
    if b is not None and not isinstance(b, (D.dtype, TensorLike, Number)):
        raise AssertionError(f"b must be None, torch.dtype, TensorLike, or Number, got {type(b)}")

    def _extract_dtype(x):
        if x is None or isinstance(x, D.dtype):
            return x
        if isinstance(x, TensorLike):
            return x.dtype
        return type_to_dtype(type(x))

    a, b = _extract_dtype(a), _extract_dtype(b)
    if a is b:
        return a
    if a is None:
        return b
    if b is None:
        return a
    for idx, dtypes in enumerate(_ordered_datatypes):
        if a in dtypes and b in dtypes:
            return _ordered_datatypes[idx + 1][0]
        if a in dtypes:
            return b
        if b in dtypes:
            return a
    raise RuntimeError("Unexpected termination!")


def check_pin_memory(pin_memory):
    ember._check_not_implemented(not pin_memory,
                                 lambda: "PrimTorch does not support pinned memory")


def check_layout(layout):
    ember._check_not_implemented(layout == ember.strided,
                                 lambda: f"PrimTorch doesn't support layout={layout}")


def is_weakly_lesser_type(a, b):
    """Whether Python number type ``a`` is weakly below ``b`` (bool < int < float < complex)."""
    a, b = _maybe_get_pytype(a), _maybe_get_pytype(b)
    if a not in _ordered_types or b not in _ordered_types:
        raise RuntimeError(f"Expected builtin numeric types, found {a}, {b}")
    for typ in _ordered_types:
        if a == typ:
            return True
        if b == typ:
            return False
    raise RuntimeError("Unexpected termination!")


def can_safe_cast_to(*, cast_to, cast_from):
    """Whether ``cast_from`` values may be written to ``cast_to`` (no lower category)."""
    for d in (cast_to, cast_from):
        _check_dtype(d)
    if not all(d._category >= D.BOOL for d in (cast_to, cast_from)):
        raise ValueError(f"Received unknown dtypes {cast_to}, {cast_from}!")
    return _promotion.can_cast(cast_from, cast_to)


def check_same_dtype(*args):
    """Checks that every Tensor of ``args`` has one dtype (numbers pass); RuntimeError
    otherwise."""
    full_dtype = None
    scalar_type = None
    for arg in args:
        if isinstance(arg, Number):
            continue  # (PyTorch no longer checks numbers' types)
        if isinstance(arg, TensorLike):
            if full_dtype is None:
                full_dtype = arg.dtype
            if scalar_type is None:
                scalar_type = dtype_to_type(arg.dtype)
            if full_dtype is not arg.dtype:
                raise RuntimeError(f"Tensor with dtype {arg.dtype} is not the expected dtype of "
                                   f"{full_dtype}!")
            arg_type = dtype_to_type(arg.dtype)
            if arg_type is not scalar_type:
                raise RuntimeError(f"Tensor with corresponding Python type {arg_type} is not the "
                                   f"expected type of {scalar_type}!")
        else:
            raise RuntimeError(f"Unexpected type when checking for same dtype, {type(arg)}!")


_computation_dtype_map = _promotion._COMPUTATION


def get_computation_dtype(dtype):
    """The dtype elementwise math on ``dtype`` runs in (float16/bfloat16 -> float32,
    complex32 -> complex64)."""
    return _promotion.computation_dtype(dtype)


_cpu_acc_type_map = {D.bfloat16: D.float64, D.float16: D.float64, D.float32: D.float64,
                     D.complex32: D.complex128, D.complex64: D.complex128}


def get_acc_type(dtype, device):
    """The accumulation dtype of ``dtype`` on ``device`` (double precision on the CPU)."""
    if device.type == "cpu":
        return _cpu_acc_type_map.get(dtype, dtype)
    return get_computation_dtype(dtype)


# ---------------------------------------------------------------------------------------------
# Type promotion

class ELEMENTWISE_TYPE_PROMOTION_KIND(Enum):
    DEFAULT = (0,)
    NO_OPMATH = (1,)
    INT_TO_FLOAT = (2,)
    ALWAYS_BOOL = (3,)
    COMPLEX_TO_FLOAT = (4,)
    BOOL_TO_LONG = (5,)


class REDUCTION_OUTPUT_TYPE_KIND(Enum):
    SAME = (0,)
    COMPLEX_TO_FLOAT = (1,)  # a complex input gives its real dtype
    KEEP_PROMOTED_TYPE = (2,)  # the output stays in the computation dtype (mean)
    ALWAYS_BOOL = (3,)


class RETURN_TYPE(Enum):
    """What a primitive returns: a new tensor, a view, its mutated input, or nothing."""
    NEW = (0,)
    VIEW = (1,)
    INPLACE = (2,)
    NONE = (3,)


def number_type(x):
    if isinstance(x, SymInt):
        return int
    if isinstance(x, SymFloat):
        return float
    if isinstance(x, SymBool):
        return bool
    return type(x)


def expr_type(x):
    """The Python type of a sympy expression (inductor's sizes): bool, int or float."""
    import sympy
    if x.kind is sympy.core.kind.BooleanKind:
        return bool
    if x.is_integer:
        return int
    return float  # (no sympy complex numbers here)


# a stand-in value of each Python number type, for _core.promotion, which reads values
_TYPE_EXAMPLE = {bool: False, int: 0, float: 0.0, complex: 0j}


def elementwise_dtypes(*_args, type_promotion_kind):
    """(computation dtype, result dtype) of an elementwise op over ``_args`` (tensors, numbers,
    sympy expressions; None is passed over) under ``type_promotion_kind``.

    The result dtype is PyTorch's ``result_type`` (``_core/promotion.py``: tensors with
    dimensions outrank 0-dim ones, which outrank numbers, within the category bool < integer
    < floating < complex); the kind then maps it: DEFAULT computes low-precision floats in
    float32 ("op math"), NO_OPMATH computes in the result dtype, INT_TO_FLOAT makes bool and
    integer results the default float dtype, COMPLEX_TO_FLOAT gives complex results their real
    dtype (computing in the complex one), BOOL_TO_LONG makes bool int64, ALWAYS_BOOL gives a
    bool result. Examples: add (DEFAULT), where (NO_OPMATH), sin (INT_TO_FLOAT), abs
    (COMPLEX_TO_FLOAT), pow (BOOL_TO_LONG), eq (ALWAYS_BOOL).
    """
    args = tuple(x for x in _args if x is not None)
    operands = []
    for x in args:
        if isinstance(x, TensorLike):
            operands.append(x)
        elif isinstance(x, Number):
            operands.append(_TYPE_EXAMPLE[get_higher_type(bool, number_type(x))])
        elif type(x).__module__.partition(".")[0] == "sympy":
            import sympy
            if not isinstance(x, sympy.Basic):
                raise ValueError(f"Unexpected type {str(type(x))} when computing elementwise "
                                 f"type promotion!")
            operands.append(_TYPE_EXAMPLE[expr_type(x)])
        else:
            raise ValueError(f"Unexpected type {str(type(x))} when computing elementwise type "
                             f"promotion!")
    result_dtype = _promotion.result_type_of(operands) if operands else D.bool_
    if result_dtype is None:
        result_dtype = D.bool_

    kind = type_promotion_kind
    if kind is ELEMENTWISE_TYPE_PROMOTION_KIND.DEFAULT:
        return get_computation_dtype(result_dtype), result_dtype
    if kind is ELEMENTWISE_TYPE_PROMOTION_KIND.NO_OPMATH:
        return result_dtype, result_dtype
    if kind is ELEMENTWISE_TYPE_PROMOTION_KIND.INT_TO_FLOAT:
        if is_integer_dtype(result_dtype) or is_boolean_dtype(result_dtype):
            result_dtype = D.get_default_dtype()
        return get_computation_dtype(result_dtype), result_dtype
    if kind is ELEMENTWISE_TYPE_PROMOTION_KIND.COMPLEX_TO_FLOAT:
        computation_dtype = get_computation_dtype(result_dtype)
        if is_complex_dtype(result_dtype):
            result_dtype = corresponding_real_dtype(result_dtype)
        return computation_dtype, result_dtype
    if kind is ELEMENTWISE_TYPE_PROMOTION_KIND.BOOL_TO_LONG:
        if is_boolean_dtype(result_dtype):
            return D.int64, D.int64
        return get_computation_dtype(result_dtype), result_dtype
    if kind is ELEMENTWISE_TYPE_PROMOTION_KIND.ALWAYS_BOOL:
        return get_computation_dtype(result_dtype), D.bool_
    raise ValueError(f"Unknown type promotion kind {str(type_promotion_kind)}")


def reduction_dtypes(arg, output_dtype_kind, dtype=None):
    """(computation dtype, result dtype) of a reduction of ``arg`` (to ``dtype`` if given);
    the result is None for KEEP_PROMOTED_TYPE (it stays in the computation dtype)."""
    inp_dtype = dtype if dtype is not None else arg.dtype
    computation_dtype = get_computation_dtype(inp_dtype)
    if output_dtype_kind in (REDUCTION_OUTPUT_TYPE_KIND.SAME,
                             REDUCTION_OUTPUT_TYPE_KIND.COMPLEX_TO_FLOAT):
        result_dtype = dtype if dtype else arg.dtype
        if (output_dtype_kind == REDUCTION_OUTPUT_TYPE_KIND.COMPLEX_TO_FLOAT
                and is_complex_dtype(result_dtype)):
            result_dtype = corresponding_real_dtype(result_dtype)
    elif output_dtype_kind == REDUCTION_OUTPUT_TYPE_KIND.KEEP_PROMOTED_TYPE:
        result_dtype = None
    else:  # ALWAYS_BOOL
        result_dtype = D.bool_
    return computation_dtype, result_dtype


# ---------------------------------------------------------------------------------------------
# Strides of fresh tensors

def make_contiguous_strides_for(shape, row_major=True):
    """The strides of a contiguous tensor of ``shape``; with ``row_major=False`` those of a
    contiguous batch of column-major (Fortran) matrices, as BLAS/LAPACK take them."""
    validate_shape(shape)
    if not shape:
        return ()
    result = _st.contiguous_strides(tuple(shape))
    if row_major or len(shape) < 2:
        return result
    return result[:-2] + (1, ember.sym_max(shape[-2], 1))


def make_channels_last_1d_strides_for(shape):
    ember._check(len(shape) == 3,
                 lambda: "Only tensors of rank 3 can use the channels_last_1d memory format")
    return _st.channels_last_order_strides(tuple(shape))


def make_channels_last_2d_strides_for(shape):
    ember._check(len(shape) == 4,
                 lambda: "Only tensors of rank 4 can use the channels_last memory format")
    return _st.channels_last_order_strides(tuple(shape))


def make_channels_last_3d_strides_for(shape):
    ember._check(len(shape) == 5,
                 lambda: "Only tensors of rank 5 can use the channels_last_3d memory format")
    return _st.channels_last_order_strides(tuple(shape))


def make_channels_last_strides_for(shape):
    ndim = len(shape) if isinstance(shape, Sequence) else 1
    if ndim == 3:
        return make_channels_last_1d_strides_for(shape)
    if ndim == 4:
        return make_channels_last_2d_strides_for(shape)
    if ndim == 5:
        return make_channels_last_3d_strides_for(shape)
    raise RuntimeError(f"no channels last format strides exist in {ndim} dimensions")


# ---------------------------------------------------------------------------------------------
# Reductions

def compute_reduction_output_shape(shape, dimensions):
    """``shape`` without the (canonical) ``dimensions``."""
    for idx in dimensions:
        validate_idx(len(shape), idx)
    return tuple(shape[idx] for idx in range(len(shape)) if idx not in dimensions)


def validate_no_repeating_dims(dims):
    if len(dims) != len(set(dims)):
        raise RuntimeError("duplicate value in the list of dims")


def reduction_dims(shape, dims):
    """The canonical dims a reduction over ``dims`` (None: all) of ``shape`` reduces."""
    if dims is None:
        return tuple(range(len(shape)))
    dims = tuple(canonicalize_dim(len(shape), idx) for idx in dims)
    validate_no_repeating_dims(dims)
    return dims


def set_correction(unbiased=None, correction=None):
    """var/std's correction as a float from ``unbiased`` or ``correction`` (default 1)."""
    if correction is not None and unbiased is not None:
        raise RuntimeError("cannot specify both correction and unbiased arguments")
    if correction is None and unbiased is None:
        correction = 1.0
    elif correction is None and unbiased is not None:
        correction = 0.0 if unbiased is False else 1.0
    if not isinstance(correction, (IntLike, FloatLike)):
        raise ValueError("correction argument should be integer or float")
    return ember.sym_float(correction)


# ---------------------------------------------------------------------------------------------
# Storage

def compute_required_storage_length(shape, strides, storage_offset):
    """The fewest elements a storage needs to hold a tensor of this geometry (0 when it has
    no elements).

    >>> t = torch.empty((10, 20))
    >>> compute_required_storage_length(t.shape, t.stride(), t.storage_offset())
    200
    """
    if reduce(operator.mul, shape, 1) == 0:
        return 0
    return _st.storage_extent(shape, strides, storage_offset)


def check_in_bounds_for_storage(a, shape, strides, storage_offset):
    """Checks that storage ``a`` holds the given geometry (ValueError otherwise)."""
    required_length = compute_required_storage_length(shape, strides, storage_offset)
    if a.size() < required_length:
        raise ValueError(f"Can't view a storage of size {a.size()} with an offset of "
                         f"{storage_offset}, shape of {str(shape)}, and strides of "
                         f"{str(strides)}, which requires a storage of size {required_length}")


def check(b, s, exc_type=RuntimeError):
    """Raises ``exc_type(s())`` when ``b`` is false. Deprecated by PyTorch for ``torch._check*``."""
    warnings.warn("`torch._prims_common.check` is deprecated and will be removed in the future. "
                  "Please use `torch._check*` functions instead.", FutureWarning, stacklevel=2)
    ember._check_with(exc_type, b, s)


# ---------------------------------------------------------------------------------------------
# Memory formats

def are_strides_like_channels_last_or_false(shape, strides):
    """Whether (shape, strides) are ordered as channels_last (4 dims) or channels_last_3d
    (5 dims); ambiguous layouts (a trivial C, N111) count as contiguous (c10's
    is_channels_last_strides_2d/3d)."""
    return _st.suggests_channels_last(tuple(shape), tuple(strides))


def suggest_memory_format(x):
    """``Tensor.suggest_memory_format()``: channels_last / channels_last_3d for tensors whose
    strides are ordered that way, else contiguous_format."""
    if x.layout != ember.strided:
        return ember.contiguous_format
    if are_strides_like_channels_last_or_false(x.shape, x.stride()):
        return ember.channels_last if x.ndim == 4 else ember.channels_last_3d
    return ember.contiguous_format


def prod(xs):
    """Product of the elements of ``xs`` (1 for an empty sequence)."""
    return reduce(operator.mul, xs, 1)


def is_expandable_to(shape, desired):
    """Whether ``shape`` broadcasts to ``desired`` without changing ``desired``."""
    return _st.is_expandable_to(tuple(shape), tuple(desired))


def mask_tensor(mask, t):
    """``torch.where(mask, t, 0)``, but a bool ``t`` stays bool."""
    if t.dtype is D.bool_:
        return mask.logical_and(t)
    return ember.where(mask, t, 0)


def get_aten_op(fn, name):
    """The aten op of reference ``fn`` (a function of ``<torch>._refs``) named ``name``: the
    module path after ``_refs`` prefixes it (``_refs.special.zeta`` -> ``aten.special_zeta``)."""
    module = fn.__module__
    prefix = f"{ember.__name__}._refs"
    if not module.startswith(prefix):
        raise AssertionError(f"module must start with {prefix}, got {module}")
    module = module[len(prefix):]
    if module:
        module = module[1:].replace(".", "_") + "_"
    return getattr(ember.ops.aten, f"{module}{name}")


def dtype_or_default(dtype):
    return dtype if dtype is not None else D.get_default_dtype()


def device_or_default(device):
    return device if device is not None else ember.device("cpu")


def layout_or_default(layout):
    return layout if layout is not None else ember.strided


def clone_preserve_strides(x):
    """A copy of ``x`` with its strides and storage offset (the storage span it reads is
    copied, outside autograd's view tracking, as PyTorch's scatter references need)."""
    needed_size = compute_required_storage_length(x.size(), x.stride(), x.storage_offset())
    C = ember._C
    old = C._dispatch_tls_is_dispatch_key_excluded(C.DispatchKey.ADInplaceOrView)
    try:
        C._dispatch_tls_set_dispatch_key_excluded(C.DispatchKey.ADInplaceOrView, True)
        buffer = ember.as_strided(x, (needed_size,), (1,), 0).clone()
        return ember.as_strided(buffer, x.size(), x.stride(), x.storage_offset())
    finally:
        C._dispatch_tls_set_dispatch_key_excluded(C.DispatchKey.ADInplaceOrView, old)


def alert_not_deterministic(caller):
    """Warns or raises, as ``torch.use_deterministic_algorithms`` asks, that ``caller`` has
    no deterministic implementation."""
    if not ember.are_deterministic_algorithms_enabled():
        return
    if ember.is_deterministic_algorithms_warn_only_enabled():
        warnings.warn(
            f"{caller} does not have a deterministic implementation, but you set "
            f"'torch.use_deterministic_algorithms(True, warn_only=True)'. "
            f"You can file an issue at https://github.com/pytorch/pytorch/issues "
            f"to help us prioritize adding deterministic support for this operation.",
            stacklevel=2)
    else:
        ember._check(False, lambda: (
            f"{caller} does not have a deterministic implementation, but you set "
            f"'torch.use_deterministic_algorithms(True)'. You can turn off "
            f"determinism just for this operation, or you can use the "
            f"'warn_only=True' option, if that's acceptable for your application. "
            f"You can also file an issue at https://github.com/pytorch/pytorch/issues "
            f"to help us prioritize adding deterministic support for this operation."))
