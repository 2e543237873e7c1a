"""CPU reduction and scan kernels.

Plain reductions (sum, nansum, mean, prod, amax/amin, all/any) are :func:`reduce_values`, from
the ``_VALUES`` table (op -> the array module's reduction) and the rules' ``REDUCTION_RULES``
(dtype rule, whether an empty reduction is an error). Statistics
(std/var and their _mean twins, norm, logsumexp, count_nonzero, aminmax) and the scans along one
dim (``SCANS``: cumsum, cumprod, cummax, cummin, logcumsumexp) follow. Dimension handling, result
dtypes and PyTorch's errors live in :func:`reduce_dims`, :func:`reduction_dtype` and the other
``*_dtype``/``check_*`` rules, shared with the Meta kernels."""
import builtins
import warnings

import numpy as np

from ..._core import complex32 as _complex32
from ..._core import dtype as D
from ..._core import strides as _st
from ..rules.float8 import REFUSED as _REFUSED, refuse as _refuse
from ..rules.reduction import LOGICAL, REDUCTION_RULES, SAME
from ._util import array_module, array_of, like, own, wrap
from ..rules.reduction import (MOMENTS, SCANS, _empty_full, aminmax_dims, check_arg,
                               check_cum_extremum, check_extremum, check_float8, check_moments,
                               logsumexp_dims, logsumexp_dtype, norm_dims, norm_dtype,
                               reduce_dims, reduced_shape, reduction_dtype, scan_dtype)


# op -> the array module's function computing it; its dtype rule, whether an empty reduction
# raises and whether half precision accumulates in float32 are rules.reduction.REDUCTION_RULES[op]
_VALUES = {"sum": "sum", "nansum": "nansum", "prod": "prod", "mean": "mean", "amax": "max",
           "amin": "min", "all": "all", "any": "any"}

_ACC = {D.float16: D.float32, D.bfloat16: D.float32}

# On NumPy, the reductions that are a ufunc's reduce, called as such: np.sum and friends are
# Python wrappers around the same call (~0.3 us of a one-element sum's 4 us).
_UFUNC_REDUCE = {"sum": np.add.reduce, "prod": np.multiply.reduce, "amax": np.maximum.reduce,
                 "amin": np.minimum.reduce, "all": np.logical_and.reduce,
                 "any": np.logical_or.reduce}


def _host(self):
    """The tensor's values as NumPy can compute on them (complex32 widened to complex64)."""
    a = self._nd()
    return a if self._dtype is not D.complex32 else _complex32.to_complex64(a)


def reduce_values(xp, a, name, dims, keepdim, rdt):
    """Reduction ``name`` of array ``a`` over ``dims`` with array module ``xp`` (the CUDA kernels
    call this too, on device arrays), before the cast to the result dtype ``rdt``."""
    rule, _, upcast = REDUCTION_RULES[name]
    fn = (_UFUNC_REDUCE.get(name) if xp is np else None) or getattr(xp, _VALUES[name])
    if rule == LOGICAL:
        return fn(a != 0, axis=dims, keepdims=keepdim)
    if rule == SAME:
        return fn(a, axis=dims, keepdims=keepdim)
    acc = _ACC.get(rdt, rdt) if upcast else rdt
    if a.dtype != acc._np:
        a = a.astype(acc._np)
    if name == "mean" and a.size == 0:  # 0/0, NaN, without NumPy's "Mean of empty slice"
        return xp.true_divide(xp.sum(a, axis=dims, keepdims=keepdim, dtype=acc._np), 0)
    return fn(a, axis=dims, keepdims=keepdim, dtype=acc._np)


def _reduce(name, self, dim, keepdim, dtype=None):
    rule, empty_error, _ = REDUCTION_RULES[name]
    rdt = reduction_dtype(name, rule, self, dtype)
    dims = reduce_dims(name, self, dim, empty_error, rule != LOGICAL)
    a = _host(self)
    r = None
    if name in _UFUNC_REDUCE:
        # without NumPy's error-state context (it costs more than a small sum): an overflow's
        # warning comes from this module and is filtered out (ember/_kernels/__init__.py);
        # where the user's filters make it an error, the quiet path below redoes the sum
        try:
            r = reduce_values(np, a, name, dims, keepdim, rdt)
        except RuntimeWarning:
            pass
    if r is None:
        with np.errstate(all="ignore"):
            r = reduce_values(np, a, name, dims, keepdim, rdt)
    return wrap(own(array_of(r).astype(rdt._np, copy=False)))


# -- sum / prod / mean / amax / amin / all / any -----------------------------------------------

def sum(self, dtype=None):  # noqa: A001  (PyTorch's name)
    if dtype in _REFUSED:  # (rules/float8.py's IN_KERNEL; a float8 self: the reduction rule's)
        _refuse("sum", (self, dtype))
    return _reduce("sum", self, None, False, dtype)


def sum_dim_IntList(self, dim, keepdim=False, dtype=None):
    if self._dtype in _REFUSED or dtype in _REFUSED:  # (rules/float8.py's IN_KERNEL)
        _refuse("sum.dim_IntList", (self, dim, keepdim, dtype))
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
    check_float8(name, self)
    if _st.numel(self._size) == 0:
        _empty_full(name)
    check_extremum(name, self, False)
    return wrap(own(array_of(EXTREMA[name][0](_host(self)))))


def _extremum_dim(name, self, dim, keepdim):
    check_float8(f"{name}_dim", self)
    (d,) = reduce_dims(name, self, dim, True) or (None,)
    a = _host(self)
    if d is None:  # a 0-dim tensor: its value, index 0
        return wrap(a.copy()), wrap(array_module(a).zeros((), np.int64))
    idx = EXTREMA[name][1](a, axis=d, keepdims=True)
    values = np.take_along_axis(a, idx, axis=d)
    if not keepdim:
        values, idx = values.squeeze(d), idx.squeeze(d)
    return wrap(own(values)), wrap(own(idx.astype(np.int64, copy=False)))


def _arg(name, self, dim, keepdim):
    check_arg(name, self)
    a = _host(self)
    if dim is None:
        if _st.numel(self._size) == 0:
            _empty_full(name)
        r = EXTREMA[name[3:]][1](a.reshape(-1))
        r = array_of(r).astype(np.int64)
        return wrap(r.reshape((1,) * a.ndim) if keepdim else r)
    (d,) = reduce_dims(name, self, dim, True) or (None,)
    if d is None:
        return wrap(np.zeros((), np.int64))
    return wrap(own(EXTREMA[name[3:]][1](a, axis=d, keepdims=keepdim).astype(np.int64)))


def max(self):  # noqa: A001
    return _extremum_full("max", self)


def min(self):  # noqa: A001
    return _extremum_full("min", self)


def max_dim(self, dim, keepdim=False):
    if self._dtype in _REFUSED:
        _refuse("max.dim", (self, dim, keepdim))
    return _extremum_dim("max", self, dim, keepdim)


def min_dim(self, dim, keepdim=False):
    return _extremum_dim("min", self, dim, keepdim)


def argmax(self, dim=None, keepdim=False):
    if self._dtype in _REFUSED:
        _refuse("argmax", (self, dim, keepdim))
    return _arg("argmax", self, dim, keepdim)


def argmin(self, dim=None, keepdim=False):
    return _arg("argmin", self, dim, keepdim)


# -- aminmax -----------------------------------------------------------------------------------


def aminmax(self, dim=None, keepdim=False):
    dims = aminmax_dims(self, dim)
    a = _host(self)
    return (wrap(own(array_of(np.min(a, axis=dims, keepdims=keepdim)))),
            wrap(own(array_of(np.max(a, axis=dims, keepdims=keepdim)))))


# -- std / var and their _mean twins ----------------------------------------------------------


def _reduced_count(size, dims):
    n = 1
    for d in dims:
        n *= size[d]
    return n


def _running_mean_nonfinite(a, mean, dims):
    """The mean of var_mean/std_mean where a reduced slice holds inf or NaN (real ``a``, the
    sum/n ``mean`` with kept dims). PyTorch takes that mean from its Welford update,
    m += (x - m) / k, visiting the slice in index order: once m is +-inf the next element makes
    it NaN (finite - inf added to inf, or inf - inf). So the mean is +-inf only when the slice's
    single non-finite element is an infinity visited last (the last index of every reduced dim);
    any other non-finite slice gives NaN, where sum/n gives +-inf ([inf, inf, 1], [1, inf, 2])."""
    nonfinite = np.sum(~np.isfinite(a), axis=dims, keepdims=True)
    last = a[tuple(slice(-1, None) if d in dims else slice(None) for d in range(a.ndim))]
    inf_last = (nonfinite == 1) & np.isinf(last)
    return np.where(nonfinite == 0, mean, np.where(inf_last, last, np.nan))


def _moments(name, self, dim, correction, keepdim):
    check_moments(name, self)
    dims = reduce_dims(name, self, dim, False)
    root, with_mean = MOMENTS[name]
    a = _host(self)
    a = a.astype(np.complex128 if self._dtype.is_complex else np.float64)
    n = _reduced_count(self._size, dims)
    dof = n - (1 if correction is None else correction)
    if dof <= 0:
        warnings.warn(f"{name.split('_')[0]}(): degrees of freedom is <= 0. Correction should be "
                      f"strictly less than the reduction factor (input numel divided by output "
                      f"numel).", UserWarning, stacklevel=3)
    with np.errstate(all="ignore"):
        mean = np.sum(a, axis=dims, keepdims=True) / n
        dev = a - mean
        r = np.sum((dev * np.conj(dev)).real, axis=dims, keepdims=keepdim) / builtins.max(dof, 0)
        if root:
            r = np.sqrt(r)
    out = wrap(own(array_of(r).astype(self._dtype.to_real()._np)))
    if not with_mean:
        return out
    if n and self._dtype.is_complex:  # each component on its own (1j * nan would spread)
        mean = array_of(mean).copy()
        mean.real = _running_mean_nonfinite(a.real, mean.real, dims)
        mean.imag = _running_mean_nonfinite(a.imag, mean.imag, dims)
    elif n:
        mean = _running_mean_nonfinite(a, mean, dims)
    if not keepdim:
        mean = mean.reshape(reduced_shape(self._size, dims, False))
    mean = array_of(mean)
    return out, wrap(own(_complex32.from_any(mean) if self._dtype is D.complex32
                         else mean.astype(self._dtype._np)))


def var_correction(self, dim=None, correction=None, keepdim=False):
    return _moments("var", self, dim, correction, keepdim)


def std_correction(self, dim=None, correction=None, keepdim=False):
    return _moments("std", self, dim, correction, keepdim)


def var_mean_correction(self, dim=None, correction=None, keepdim=False):
    return _moments("var_mean", self, dim, correction, keepdim)


def std_mean_correction(self, dim=None, correction=None, keepdim=False):
    return _moments("std_mean", self, dim, correction, keepdim)


# -- norm (the aten overloads; ember.norm in _functional_ops.py has torch.norm's semantics) -----


def _p_norm(x, p, dims, keepdim):
    """The p-norm of |x| (float64) over ``dims``, for p in 0, +-inf, 1, 2 and any other real."""
    kw = dict(axis=dims, keepdims=keepdim)
    if p == 0:
        return np.sum(x != 0, dtype=np.float64, **kw)
    if p == np.inf:
        return np.max(x, **kw)
    if p == -np.inf:
        return np.min(x, **kw)
    if p == 1:
        return np.sum(x, **kw)
    if p == 2:
        return np.sqrt(np.sum(x * x, **kw))
    return np.sum(x ** p, **kw) ** (1.0 / p)


def _norm(self, p, dim, keepdim, dtype):
    rdt = norm_dtype(self, dtype)
    p = 2 if p is None else p
    dims = norm_dims(self, p, dim)
    a = _host(self)
    if dtype is not None:
        a = a.astype(dtype._np)
    with np.errstate(all="ignore"):
        r = _p_norm(np.abs(a).astype(np.float64), p, dims, keepdim)
    return wrap(own(array_of(r).astype(rdt._np)))


def norm_Scalar(self, p=2):
    return _norm(self, p, None, False, None)


def norm_ScalarOpt_dtype(self, p, dtype):
    return _norm(self, p, None, False, dtype)


def norm_ScalarOpt_dim(self, p, dim, keepdim=False):
    return _norm(self, p, dim, keepdim, None)


def norm_ScalarOpt_dim_dtype(self, p, dim, keepdim, dtype):
    return _norm(self, p, dim, keepdim, dtype)


# -- logsumexp, count_nonzero --------------------------------------------------------------------


def logsumexp(self, dim, keepdim=False):
    rdt = logsumexp_dtype(self)
    dims = logsumexp_dims(self, dim, keepdim)
    a = _host(self).astype(np.complex128 if rdt.is_complex else np.float64)
    with np.errstate(all="ignore"):
        if a.size:
            m = np.max(a.real, axis=dims, keepdims=True)
            m = np.where(np.isfinite(m), m, 0.0)  # all -inf (or +inf) slices: no shift
        else:
            m = np.zeros((1,) * a.ndim)
        r = np.log(np.sum(np.exp(a - m), axis=dims, keepdims=True)) + m
    if not keepdim:
        r = r.reshape(reduced_shape(self._size, dims, False))
    return wrap(own(array_of(r).astype(rdt._np)))


def count_nonzero(self, dim=None):
    if dim is None:  # (ATen counts along dims with a sum, which float8 has, but not all at once)
        check_float8("nonzero", self)
    dims = reduce_dims("count_nonzero", self, dim, False)
    return wrap(own(array_of(np.count_nonzero(_host(self), axis=dims)).astype(np.int64)))


def count_nonzero_dim_IntList(self, dim):
    return count_nonzero(self, dim)


# -- scans along one dim ---------------------------------------------------------------------


def _scan_axis(self, dim):
    """(array with at least one dim, axis) for a scan along ``dim`` (0-dim tensors scan one
    element)."""
    d = _st.wrap_dim(dim, len(self._size))
    a = _host(self)
    return (a.reshape(1), 0) if a.ndim == 0 else (a, d)


# ATen's CPU scans carry the running value in acc_type<T, false>: double for float (and
# complex<double> for complex<float>), unlike its reductions; its CUDA scans stay in float
_HOST_SCAN_ACC = {D.float32: D.float64, D.complex64: D.complex128}


def _scan(name, self, dim, dtype=None):
    rdt = scan_dtype(name, self, dim, dtype)
    a, axis = _scan_axis(self, dim)
    acc = _ACC.get(rdt, rdt)
    if array_module(a) is np:
        acc = _HOST_SCAN_ACC.get(acc, acc)
    with np.errstate(all="ignore"):
        r = SCANS[name][0].accumulate(a.astype(acc._np, copy=False), axis=axis)
    return wrap(own(r.reshape(self._size).astype(rdt._np, copy=False)))


def cumsum(self, dim, dtype=None):
    return _scan("cumsum", self, dim, dtype)


def cumprod(self, dim, dtype=None):
    return _scan("cumprod", self, dim, dtype)


def logcumsumexp(self, dim):
    if not self._dtype.is_complex:
        return _scan("logcumsumexp", self, dim)
    scan_dtype("logcumsumexp", self, dim)
    a, axis = _scan_axis(self, dim)
    r = np.moveaxis(a.astype(a.dtype), axis, 0)  # (a copy, scanned in place step by step)
    with np.errstate(all="ignore"):
        for i in range(1, r.shape[0]):
            r[i] = _log_add_exp_complex(r[i - 1], r[i])
    return wrap(own(np.moveaxis(r, 0, axis).reshape(self._size)))


def _log_add_exp_complex(x, y):
    """ATen's complex log(exp(x) + exp(y)): log1p(exp(min - max)) + max, the operands ordered
    by real part; NaN if either is NaN, and two equal infinite real parts kept as they are
    (-inf) or summed directly (+inf)."""
    xp = array_module(x)
    first = x.real >= y.real
    big, small = xp.where(first, x, y), xp.where(first, y, x)
    r = xp.log1p(xp.exp(small - big)) + big
    inf = ~xp.isfinite(small.real) & (small.real == big.real)
    r = xp.where(inf, xp.where(small.real < 0, small, xp.log(xp.exp(small) + xp.exp(big))), r)
    nan = xp.isnan(small.real) | xp.isnan(small.imag)
    return xp.where(nan, xp.asarray(complex(np.nan, np.nan), r.dtype), r)


# op -> (running extremum ufunc); the index is the last position that set the running value
CUM_EXTREMA = {"cummax": np.maximum, "cummin": np.minimum}


def _cum_extremum(name, self, dim):
    check_cum_extremum(name, self, dim)
    if _st.numel(self._size) == 0:
        return wrap(np.empty(self._size, self._dtype._np)), wrap(np.empty(self._size, np.int64))
    a, axis = _scan_axis(self, dim)
    values = CUM_EXTREMA[name].accumulate(a, axis=axis)
    # a position updates the running value when it equals it (ties update, as PyTorch's >=)
    # or is NaN (NaN propagates and each later NaN takes over the index)
    sets = (a == values) | (a != a)
    shape = [1] * a.ndim
    shape[axis] = a.shape[axis]
    pos = like(a, np.arange(a.shape[axis], dtype=np.int64).reshape(shape))
    idx = np.maximum.accumulate(np.where(sets, pos, 0), axis=axis)
    return (wrap(own(values.reshape(self._size))),
            wrap(own(idx.reshape(self._size).astype(np.int64, copy=False))))


def cummax(self, dim):
    return _cum_extremum("cummax", self, dim)


def cummin(self, dim):
    return _cum_extremum("cummin", self, dim)
