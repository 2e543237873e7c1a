"""PyTorch's type promotion: ``promote_types``, ``result_type``, ``can_cast`` and the
computation ("op math") dtype of a result dtype.

Tensors with dimensions outrank 0-dim tensors, which outrank Python scalars ("wrapped numbers"):
a lower-priority operand only changes the result when it belongs to a higher category
(bool < integral < floating < complex), exactly as c10's ``ResultTypeState``.
"""
from functools import lru_cache

from . import dtype as D

_INT_ORDER = [D.uint8, D.int8, D.int16, D.int32, D.int64]
_FLOAT_WIDTH = {D.float16: 16, D.bfloat16: 16, D.float32: 32, D.float64: 64}


@lru_cache(maxsize=None)
def promote_types(a, b):
    """The smallest dtype both ``a`` and ``b`` cast to safely (c10's promoteTypes table)."""
    if a is b:
        return a
    if a in D.SHELL_DTYPES or b in D.SHELL_DTYPES:
        if "quantized" in str(getattr(a, "_signed", "")) + str(getattr(b, "_signed", "")):
            raise RuntimeError(f"promoteTypes with quantized numbers is not handled yet; figure "
                               f"out what the correct rules should be, offending types: "
                               f"{a._short} {b._short}")
        raise RuntimeError(f"Promotion for {a._short} and {b._short} types is not supported")
    if a in D.FLOAT8 or b in D.FLOAT8:
        raise RuntimeError(f"Promotion for Float8 Types is not supported, attempted to promote "
                           f"{a._short} and {b._short}")
    if a in D.BAREBONES_UNSIGNED or b in D.BAREBONES_UNSIGNED:
        # c10 promotes uint16/32/64 only with floating types (int64 would overflow uint64)
        if a.is_floating_point:
            return a
        if b.is_floating_point:
            return b
        raise RuntimeError(f"Promotion for uint16, uint32, uint64 types is not supported, "
                           f"attempted to promote {a._short} and {b._short}")
    ca, cb = a._category, b._category
    if ca == D.BOOL:
        return b
    if cb == D.BOOL:
        return a
    if ca == D.INTEGRAL and cb == D.INTEGRAL:
        if D.uint8 in (a, b):
            other = b if a is D.uint8 else a
            return D.int16 if other is D.int8 else other
        return a if a.itemsize >= b.itemsize else b
    if ca == D.INTEGRAL:
        return b
    if cb == D.INTEGRAL:
        return a
    if ca == D.COMPLEX or cb == D.COMPLEX:
        ra, rb = a.to_real(), b.to_real()
        return promote_types(ra, rb).to_complex() if not (ca == cb == D.COMPLEX) else (
            a if a.itemsize >= b.itemsize else b)
    # both floating
    if {a, b} == {D.float16, D.bfloat16}:
        return D.float32
    return a if _FLOAT_WIDTH[a] >= _FLOAT_WIDTH[b] else b


def can_cast(from_, to):
    """Whether a result of dtype ``from_`` may be written into a ``to`` tensor (c10::canCast)."""
    if from_.is_complex and not to.is_complex:
        return False
    if from_.is_floating_point and to._category < D.FLOATING:
        return False
    if from_ is not D.bool_ and to is D.bool_:
        return False
    return True


# the dtype elementwise math runs in for a result dtype: low-precision floats compute in float32
# (torch._prims_common's get_computation_dtype)
_COMPUTATION = {D.float16: D.float32, D.bfloat16: D.float32, D.complex32: D.complex64}


def computation_dtype(dt):
    """The dtype an elementwise op of result dtype ``dt`` computes in."""
    return _COMPUTATION.get(dt, dt)


def scalar_dtype(x):
    """The dtype a Python scalar would get as a wrapped number."""
    if isinstance(x, bool):
        return D.bool_
    if isinstance(x, int):
        return D.int64
    if isinstance(x, float):
        return D.get_default_dtype()
    if isinstance(x, complex):
        return D.default_complex_dtype()
    if type(x).__name__ == "SymInt":  # a symbolic size: an int
        return D.int64
    raise TypeError(f"unsupported scalar type {type(x).__name__}")


def _combine(higher, lower):
    # c10::combine_categories
    if higher is None:
        return lower
    if lower is None:
        return higher
    if higher.is_complex:
        return higher
    if lower.is_complex:
        return higher.to_complex() if higher.is_floating_point else lower
    if higher.is_floating_point:
        return higher
    if higher is D.bool_ or lower.is_floating_point:
        return promote_types(higher, lower)
    return higher


def result_type_of(operands):
    """Result dtype of tensors and Python scalars together, by PyTorch's three-tier rule."""
    dim = zero = wrapped = None
    for x in operands:
        dt = getattr(x, "_dtype", None)
        if dt is None:
            if x is None:
                continue
            s = scalar_dtype(x)
            # wrapped numbers participate with their category's default dtype
            if s.is_floating_point:
                s = D.get_default_dtype()
            wrapped = s if wrapped is None else promote_types(wrapped, s)
        elif x._size:
            dim = dt if dim is None else promote_types(dim, dt)
        else:
            zero = dt if zero is None else promote_types(zero, dt)
    return _combine(dim, _combine(zero, wrapped))
