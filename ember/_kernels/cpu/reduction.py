"""CPU reduction and scan kernels.

Plain reductions (sum, nansum, mean, prod, amax/amin, all/any) come from the ``REDUCTIONS``
table: op -> (NumPy reduction, dtype rule, whether an empty reduction is an error). Statistics
(std/var and their _mean twins, norm, logsumexp, count_nonzero, aminmax) and the scans along one
dim (``SCANS``: cumsum, cumprod, cummax, cummin, logcumsumexp) follow. Dimension handling, result
dtypes and PyTorch's errors live in :func:`reduce_dims`, :func:`reduction_dtype` and the other
``*_dtype``/``check_*`` rules, shared with the Meta kernels."""
import numpy as np

from ..._core import dtype as D
from ..._core import strides as _st
from ._util import own, wrap

# dtype rules
ACCUMULATE = "accumulate"  # sum/prod: integral and bool accumulate in int64; dtype= wins
MEAN = "mean"              # mean: floating/complex only
SAME = "same"              # amax/amin: the input's dtype
LOGICAL = "logical"        # all/any: bool (uint8 stays uint8)

# op -> (numpy reduction, dtype rule, empty reduction raises, half precision accumulates in
#        float32 as PyTorch's CPU kernel does)
REDUCTIONS = {
    "sum": (np.sum, ACCUMULATE, False, True),
    "nansum": (np.nansum, ACCUMULATE, False, True),
    "prod": (np.prod, ACCUMULATE, False, False),
    "mean": (np.mean, MEAN, False, True),
    "amax": (np.max, SAME, True, False),
    "amin": (np.min, SAME, True, False),
    "all": (np.all, LOGICAL, False, False),
    "any": (np.any, LOGICAL, False, False),
}

_ACC = {D.float16: D.float32, D.bfloat16: D.float32}


def reduction_dtype(name, rule, self, dtype=None):
    """PyTorch's result dtype of reduction ``name`` (with its errors for unsupported dtypes)."""
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
        return tuple(range(ndim))
    dims = [_st.wrap_dim(d, ndim) for d in ((dim,) if isinstance(dim, int) else dim)]
    if empty_error and ndim:
        for w in dims:
            if self._size[w] == 0:
                raise IndexError(f"{name}(): Expected reduction dim {w} to have non-zero size.")
    for i, w in enumerate(dims):
        if w in dims[:i]:
            raise RuntimeError(f"dim {w} appears multiple times in the list of dims")
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


def _reduce(name, self, dim, keepdim, dtype=None):
    fn, rule, empty_error, upcast = REDUCTIONS[name]
    rdt = reduction_dtype(name, rule, self, dtype)
    dims = reduce_dims(name, self, dim, empty_error, rule != LOGICAL)
    a = self._nd()
    if rule == LOGICAL:
        r = fn(a != 0, axis=dims, keepdims=keepdim)
    elif rule == SAME:
        r = fn(a, axis=dims, keepdims=keepdim)
    else:
        acc = _ACC.get(rdt, rdt) if upcast else rdt
        if a.dtype != acc._np:
            a = a.astype(acc._np)
        with np.errstate(all="ignore"):
            r = fn(a, axis=dims, keepdims=keepdim, dtype=acc._np)
    return wrap(own(np.asarray(r).astype(rdt._np, copy=False)))


# -- sum / prod / mean / amax / amin / all / any -----------------------------------------------

def sum(self, dtype=None):  # noqa: A001  (PyTorch's name)
    return _reduce("sum", self, None, False, dtype)


def sum_dim_IntList(self, dim, keepdim=False, dtype=None):
    return _reduce("sum", self, dim, keepdim, dtype)


def nansum(self, dim=None, keepdim=False, dtype=None):
    return _reduce("nansum", self, dim, keepdim, dtype)


def prod(self, dtype=None):
    return _reduce("prod", self, None, False, dtype)


def prod_dim_int(self, dim, keepdim=False, dtype=None):
    return _reduce("prod", self, dim, keepdim, dtype)


def mean(self, dtype=None):
    return _reduce("mean", self, None, False, dtype)


def mean_dim(self, dim, keepdim=False, dtype=None):
    return _reduce("mean", self, dim, keepdim, dtype)


def amax(self, dim=(), keepdim=False):
    return _reduce("amax", self, dim, keepdim)


def amin(self, dim=(), keepdim=False):
    return _reduce("amin", self, dim, keepdim)


def all(self):  # noqa: A001
    return _reduce("all", self, None, False)


def all_dim(self, dim, keepdim=False):
    return _reduce("all", self, dim, keepdim)


def all_dims(self, dim=None, keepdim=False):
    return _reduce("all", self, dim, keepdim)


def any(self):  # noqa: A001
    return _reduce("any", self, None, False)


def any_dim(self, dim, keepdim=False):
    return _reduce("any", self, dim, keepdim)


def any_dims(self, dim=None, keepdim=False):
    return _reduce("any", self, dim, keepdim)


# -- max / min (full and along a dim) and argmax / argmin --------------------------------------

# op -> (numpy value reduction, numpy index reduction)
EXTREMA = {"max": (np.max, np.argmax), "min": (np.min, np.argmin)}


def _extremum_full(name, self):
    if _st.numel(self._size) == 0:
        _empty_full(name)
    return wrap(own(np.asarray(EXTREMA[name][0](self._nd()))))


def _extremum_dim(name, self, dim, keepdim):
    (d,) = reduce_dims(name, self, dim, True) or (None,)
    a = self._nd()
    if d is None:  # a 0-dim tensor: its value, index 0
        return wrap(own(np.array(a))), wrap(np.zeros((), np.int64))
    idx = EXTREMA[name][1](a, axis=d, keepdims=True)
    values = np.take_along_axis(a, idx, axis=d)
    if not keepdim:
        values, idx = values.squeeze(d), idx.squeeze(d)
    return wrap(own(values)), wrap(own(idx.astype(np.int64, copy=False)))


def check_arg(name, self):
    if self._dtype is D.bool_:
        raise RuntimeError(f"{name}(): does not support bool input")


def _arg(name, self, dim, keepdim):
    check_arg(name, self)
    a = self._nd()
    if dim is None:
        if _st.numel(self._size) == 0:
            _empty_full(name)
        r = EXTREMA[name[3:]][1](a.reshape(-1))
        if keepdim:
            return wrap(np.full((1,) * a.ndim, r, np.int64))
        return wrap(np.asarray(r, np.int64))
    (d,) = reduce_dims(name, self, dim, True) or (None,)
    if d is None:
        return wrap(np.zeros((), np.int64))
    return wrap(own(EXTREMA[name[3:]][1](a, axis=d, keepdims=keepdim).astype(np.int64)))


def max(self):  # noqa: A001
    return _extremum_full("max", self)


def min(self):  # noqa: A001
    return _extremum_full("min", self)


def max_dim(self, dim, keepdim=False):
    return _extremum_dim("max", self, dim, keepdim)


def min_dim(self, dim, keepdim=False):
    return _extremum_dim("min", self, dim, keepdim)


def argmax(self, dim=None, keepdim=False):
    return _arg("argmax", self, dim, keepdim)


def argmin(self, dim=None, keepdim=False):
    return _arg("argmin", self, dim, keepdim)


