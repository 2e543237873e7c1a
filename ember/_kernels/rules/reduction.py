"""Rules of the reductions and scans, for every backend: result dtypes, reduced dimensions and
shapes, and PyTorch's errors for them. The CPU kernels (``cpu/reduction.py``) and the Meta
kernels (``meta/reduction.py``) call them; this module imports no backend."""
import numpy as np

from ..._core import dtype as D
from ..._core import strides as _st
from ..._core.promotion import promote_types

# dtype rules
ACCUMULATE = "accumulate"  # sum/prod: integral and bool accumulate in int64; dtype= wins
MEAN = "mean"              # mean: floating/complex only
SAME = "same"              # amax/amin: the input's dtype
LOGICAL = "logical"        # all/any: bool (uint8 stays uint8)

# op -> (dtype rule, empty reduction raises, half precision accumulates in float32 as PyTorch's
#        CPU kernel does); the computing NumPy function is cpu/reduction.py's row of that name
REDUCTION_RULES = {
    "sum": (ACCUMULATE, False, True),
    "nansum": (ACCUMULATE, False, True),
    "prod": (ACCUMULATE, False, False),
    "mean": (MEAN, False, True),
    "amax": (SAME, True, False),
    "amin": (SAME, True, False),
    "all": (LOGICAL, False, False),
    "any": (LOGICAL, False, False),
}


# ATen's CPU reductions have no float8 kernels (a reduction given another ``dtype`` converts
# first): the names their dtype dispatch reports
_FLOAT8_KERNELS = {"sum": "sum_cpu", "mean": "sum_cpu", "nansum": "nansum_cpu",
                   "prod": "prod_out_cpu", "amax": "max_values_cpu", "amin": "min_values_cpu",
                   "max": "max_all", "min": "min_all", "max_dim": "max_cpu",
                   "min_dim": "min_cpu", "argmax": "argmax_cpu", "argmin": "argmin_cpu",
                   "aminmax": "aminmax_cpu", "cumsum": "cumsum_out_cpu",
                   "cumprod": "cumprod_out_cpu", "logcumsumexp": "logcumsumexp_out_cpu",
                   "nonzero": "nonzero_count_cpu"}


# ATen's CPU reductions with no ComplexHalf kernel (any/all, norm, var/std, count_nonzero and
# nonzero have one; argmax/argmin and nansum reject complex first)
_COMPLEX32_MISSING = frozenset(("sum", "mean", "prod", "amax", "amin", "max", "min",
                                "max_dim", "min_dim", "aminmax", "cumsum", "cumprod"))


# the extrema, which complex numbers (having no order) lack at every precision
_COMPLEX_MISSING = frozenset(("amax", "amin", "max", "min", "aminmax"))


def check_float8(name, self, dtype=None):
    """The float8 (and complex32) reductions ATen has no kernel for: its NotImplementedError."""
    if (self._dtype is D.complex32 and name in _COMPLEX32_MISSING
            and dtype in (None, D.complex32)):
        kernel = _FLOAT8_KERNELS.get(name, f"{name}_cpu")
        raise NotImplementedError(f"\"{kernel}\" not implemented for 'ComplexHalf'")

    named = dtype if dtype is not None else self._dtype  # (the dtype it computes in)
    if named in D.FLOAT8:
        kernel = _FLOAT8_KERNELS.get(name, f"{name}_cpu")
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{named._short}'")


def check_extremum(name, self, along_dim):
    """Complex numbers have no order: ATen's extrema refuse them once the dims are checked
    (max/min along a dim in their meta function, the others in their dtype dispatch)."""
    if not self._dtype.is_complex or self._dtype is D.complex32 or name not in _COMPLEX_MISSING:
        return
    if along_dim and name in ("max", "min"):
        raise RuntimeError(f"{name}(): does not support complex input")
    raise NotImplementedError(f"\"{_FLOAT8_KERNELS[name]}\" not implemented for "
                              f"'{self._dtype._short}'")


def reduction_dtype(name, rule, self, dtype=None):
    """PyTorch's result dtype of reduction ``name`` (with its errors for unsupported dtypes)."""
    if rule != LOGICAL:
        check_float8(name, self, dtype)
    if name == "nansum" and self._dtype.is_complex:
        raise RuntimeError("nansum on CPU does not support complex inputs")
    if rule == ACCUMULATE:
        if dtype is not None:
            return dtype
        return D.int64 if self._dtype._category <= D.INTEGRAL else self._dtype
    if rule == MEAN:
        dt = dtype if dtype is not None else self._dtype
        if dt._category < D.FLOATING:
            what = "Optional dtype" if dtype is not None else "Input dtype"
            raise RuntimeError(f"{name}(): could not infer output dtype. {what} must be either a "
                               f"floating point or complex dtype. Got: {dt._short}")
        return dt
    if rule == LOGICAL:
        return D.uint8 if self._dtype is D.uint8 else D.bool_
    return self._dtype


def reduce_dims(name, self, dim, empty_error, empty_list_is_all=True):
    """The wrapped dims to reduce: all dims for None (and for [] unless ``empty_list_is_all``
    is False: all.dims/any.dims reduce nothing then). PyTorch's errors: out-of-range dims,
    zero-size dims for reductions without identity, repeated dims."""
    ndim = len(self._size)
    if dim is None or (empty_list_is_all and isinstance(dim, (tuple, list)) and len(dim) == 0):
        if empty_error and _st.numel(self._size) == 0:
            _empty_full(name)
        check_extremum(name, self, False)
        return tuple(range(ndim))
    if ndim > 64:  # ATen's dim_list_to_bitset
        raise RuntimeError("only tensors with up to 64 dims are supported")
    dims = [_st.wrap_dim(d, ndim) for d in ((dim,) if isinstance(dim, int) else dim)]
    if empty_error and ndim:
        for w in dims:
            if self._size[w] == 0:
                raise IndexError(f"{name}(): Expected reduction dim {w} to have non-zero size.")
    for i, w in enumerate(dims):
        if w in dims[:i]:
            raise RuntimeError(f"dim {w} appears multiple times in the list of dims")
    check_extremum(name, self, True)
    return tuple(d for d in dims if d < ndim)


def _empty_full(name):
    if name in ("argmax", "argmin"):
        raise IndexError(f"{name}(): Expected reduction dim to be specified for "
                         f"input.numel() == 0.")
    raise RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0. "
                       f"Specify the reduction dim with the 'dim' argument.")


def reduced_shape(size, dims, keepdim):
    if keepdim:
        return tuple(1 if i in dims else s for i, s in enumerate(size))
    return tuple(s for i, s in enumerate(size) if i not in dims)


def check_arg(name, self):
    check_float8(name, self)
    if self._dtype is D.bool_:
        raise RuntimeError(f"{name}(): does not support bool input")
    if self._dtype.is_complex:
        raise RuntimeError(f"{name}(): does not support complex input")


def aminmax_dims(self, dim):
    """aminmax reduces every dim (an empty input is an error: no identity) or the one given."""
    check_float8("aminmax", self)
    if dim is None:
        if _st.numel(self._size) == 0:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the "
                               "operation has no identity.")
        check_extremum("aminmax", self, False)
        return tuple(range(len(self._size)))
    return reduce_dims("aminmax", self, dim, True)


# op -> (takes the square root, returns the mean too)
MOMENTS = {"var": (False, False), "std": (True, False),
           "var_mean": (False, True), "std_mean": (True, True)}


def check_moments(name, self):
    """std/var need floating or complex input (not float8); the result is real."""
    if self._dtype in D.FLOAT8:
        raise RuntimeError(f"std_var_all: Unsupported dtype {self._dtype._short}")
    if self._dtype._category < D.FLOATING:
        what = "std and var" if name in ("std", "var") else name
        raise RuntimeError(f"{what} only support floating point and complex dtypes")
    return self._dtype.to_real()


def check_no_narrowing(self, dtype):
    """A norm's ``dtype=`` may widen the input's dtype, never narrow it (linalg.vector_norm's
    check, which norm and _foreach_norm reach too)."""
    if promote_types(self._dtype, dtype) is not dtype:
        raise RuntimeError(f"linalg.vector_norm: the dtype of the input ({self._dtype._short}) "
                           f"should be convertible without narrowing to the specified dtype "
                           f"({dtype._short})")


def norm_dtype(self, dtype):
    """The real result dtype of norm, with PyTorch's errors for integral input or output."""
    check_float8("norm", self, dtype)
    if dtype is not None:
        if dtype._category < D.FLOATING:
            raise RuntimeError(f"norm(): the desired output dtype should be either floating point "
                               f"or complex. Got {dtype._short} instead.")
        if self._dtype._category < D.FLOATING:
            raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor "
                               f"as input. Got {self._dtype._short}")
        check_no_narrowing(self, dtype)
        return dtype.to_real()
    if self._dtype._category < D.FLOATING:
        raise RuntimeError(f"norm(): input dtype should be either floating point or complex. Got "
                           f"{self._dtype._short} instead.")
    return self._dtype.to_real()


def norm_dims(self, p, dim):
    """The reduced dims of norm; the inf and negative norms have no identity on empty input."""
    dims = reduce_dims("norm", self, dim, False)
    if p is not None and (p < 0 or p == np.inf) and _st.numel(self._size) == 0:
        what = "inf" if p == np.inf else ("-inf" if p == -np.inf else p)
        if dim is None or len(dim) == 0:
            raise RuntimeError(f"linalg.vector_norm cannot compute the {what} norm on an empty "
                               f"tensor because the operation does not have an identity")
        for d in dims:
            if self._size[d] == 0:
                raise RuntimeError(f"linalg.vector_norm cannot compute the {what} norm on the "
                                   f"dimension {d}because this dimension is empty and the "
                                   f"operation does not have an identity")
    return dims


def logsumexp_dtype(self):
    """Integral and bool inputs give the default floating dtype."""
    if self._dtype is D.complex32:
        raise NotImplementedError("\"exp_vml_cpu\" not implemented for 'ComplexHalf'")
    return self._dtype if self._dtype._category >= D.FLOATING else D.get_default_dtype()


def logsumexp_dims(self, dim, keepdim):
    ndim = len(self._size)
    if len(dim) == 0 and not keepdim and ndim and _st.numel(self._size):
        # PyTorch reduces every dim of the max with keepdim and cannot add it back to the result
        raise RuntimeError(f"output with shape [] doesn't match the broadcast shape "
                           f"[{', '.join(['1'] * ndim)}]")
    return reduce_dims("logsumexp", self, dim, False)


FLOAT_ONLY = "float_only"  # logcumsumexp: floating and complex inputs only, dtype kept


# op -> (NumPy ufunc whose .accumulate is the scan, dtype rule)
SCANS = {
    "cumsum": (np.add, ACCUMULATE),
    "cumprod": (np.multiply, ACCUMULATE),
    "logcumsumexp": (np.logaddexp, FLOAT_ONLY),
}


def scan_dtype(name, self, dim, dtype=None):
    """The result dtype of a scan (after checking ``dim``, as PyTorch does first)."""
    _st.wrap_dim(dim, len(self._size))
    rule = SCANS[name][1] if name in SCANS else SAME
    if rule == FLOAT_ONLY and (self._dtype._category not in (D.FLOATING, D.COMPLEX) or
                               self._dtype is D.complex32):
        raise NotImplementedError(f'"{name}_out_cpu" not implemented for \'{self._dtype._short}\'')
    result = reduction_dtype(name, rule, self, dtype)
    # ATen's scans have no bool loop; a 0-dim or empty input is copied before it
    if result is D.bool_ and name in ("cumsum", "cumprod") and self._size and \
            _st.numel(self._size):
        raise NotImplementedError(f'"{name}_out_cpu" not implemented for \'Bool\'')
    return result


def check_cum_extremum(name, self, dim):
    """An empty input returns at once in PyTorch, before its dim is checked, and a 0-dim one
    is copied before the dtype dispatch (which has no complex kernel)."""
    if _st.numel(self._size):
        _st.wrap_dim(dim, len(self._size))
        if self._dtype.is_complex and self._size:
            raise NotImplementedError(f"\"{name}_cpu\" not implemented for "
                                      f"'{self._dtype._short}'")
