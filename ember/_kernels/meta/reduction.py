"""Meta kernels of the reductions and scans: result shape and dtype from the same rules (and
errors) as the CPU kernels (``cpu/reduction.py``), without touching data."""
from ..._core import dtype as D
from ..._core.device import META
from ..._core.tensor_impl import empty_tensor
from ..rules import reduction as _r
from ..registration import register


def _meta_reduce(name, self, dim, keepdim, dtype=None):
    rule, empty_error, upcast = _r.REDUCTION_RULES[name]
    rdt = _r.reduction_dtype(name, rule, self, dtype)
    dims = _r.reduce_dims(name, self, dim, empty_error, rule != _r.LOGICAL)
    return empty_tensor(_r.reduced_shape(self._size, dims, keepdim), rdt, META)


def _full(name):
    def k(self, dtype=None):
        return _meta_reduce(name, self, None, False, dtype)
    return k


def _along(name):
    def k(self, dim=None, keepdim=False, dtype=None):
        return _meta_reduce(name, self, dim, keepdim, dtype)
    return k


def _extremum_full(name):
    def k(self):
        if self.numel() == 0:
            _r._empty_full(name)
        _r.check_extremum(name, self, False)
        return empty_tensor((), self._dtype, META)
    return k


def _extremum_dim(name):
    def k(self, dim, keepdim=False):
        dims = _r.reduce_dims(name, self, dim, True)
        shape = _r.reduced_shape(self._size, dims, keepdim)
        return empty_tensor(shape, self._dtype, META), empty_tensor(shape, D.int64, META)
    return k


def _arg(name):
    def k(self, dim=None, keepdim=False):
        _r.check_arg(name, self)
        if dim is None:
            if self.numel() == 0:
                _r._empty_full(name)
            shape = (1,) * len(self._size) if keepdim else ()
        else:
            shape = _r.reduced_shape(self._size, _r.reduce_dims(name, self, dim, True), keepdim)
        return empty_tensor(shape, D.int64, META)
    return k


def _aminmax(self, dim=None, keepdim=False):
    shape = _r.reduced_shape(self._size, _r.aminmax_dims(self, dim), keepdim)
    return empty_tensor(shape, self._dtype, META), empty_tensor(shape, self._dtype, META)


def _moments(name):
    def k(self, dim=None, correction=None, keepdim=False):
        rdt = _r.check_moments(name, self)
        shape = _r.reduced_shape(self._size, _r.reduce_dims(name, self, dim, False), keepdim)
        if _r.MOMENTS[name][1]:
            return empty_tensor(shape, rdt, META), empty_tensor(shape, self._dtype, META)
        return empty_tensor(shape, rdt, META)
    return k


def _norm(self, p, dim, keepdim, dtype):
    rdt = _r.norm_dtype(self, dtype)
    dims = _r.norm_dims(self, 2 if p is None else p, dim)
    return empty_tensor(_r.reduced_shape(self._size, dims, keepdim), rdt, META)


def _logsumexp(self, dim, keepdim=False):
    rdt = _r.logsumexp_dtype(self)
    shape = _r.reduced_shape(self._size, _r.logsumexp_dims(self, dim, keepdim), keepdim)
    return empty_tensor(shape, rdt, META)


def _count_nonzero(self, dim=None):
    dims = _r.reduce_dims("count_nonzero", self, dim, False)
    return empty_tensor(_r.reduced_shape(self._size, dims, False), D.int64, META)


def _scan(name):
    def k(self, dim, dtype=None):
        rdt = _r.scan_dtype(name, self, dim, dtype)
        return empty_tensor(self._size, rdt, META)
    return k


def _cum_extremum(name):
    def k(self, dim):
        _r.check_cum_extremum(name, self, dim)
        return empty_tensor(self._size, self._dtype, META), empty_tensor(self._size, D.int64, META)
    return k


# op overload -> its Meta kernel, registered by reference
KERNELS = {
    "nansum": _along("nansum"), "aminmax": _aminmax,
    "var.correction": _moments("var"), "std.correction": _moments("std"),
    "var_mean.correction": _moments("var_mean"),
    "std_mean.correction": _moments("std_mean"),
    "norm.Scalar": lambda self, p=2: _norm(self, p, None, False, None),
    "norm.ScalarOpt_dtype": lambda self, p, dtype: _norm(self, p, None, False, dtype),
    "norm.ScalarOpt_dim": lambda self, p, dim, keepdim=False: _norm(self, p, dim, keepdim,
                                                                          None),
    "norm.ScalarOpt_dim_dtype": _norm,
    "logsumexp": _logsumexp,
    "count_nonzero": _count_nonzero, "count_nonzero.dim_IntList": _count_nonzero,
    "cumsum": _scan("cumsum"), "cumprod": _scan("cumprod"),
    "logcumsumexp": _scan("logcumsumexp"),
    "cummax": _cum_extremum("cummax"), "cummin": _cum_extremum("cummin"),
    "sum": _full("sum"), "sum.dim_IntList": _along("sum"),
    "prod": _full("prod"), "prod.dim_int": _along("prod"),
    "mean": _full("mean"), "mean.dim": _along("mean"),
    "amax": _along("amax"), "amin": _along("amin"),
    "all": _full("all"), "all.dim": _along("all"), "all.dims": _along("all"),
    "any": _full("any"), "any.dim": _along("any"), "any.dims": _along("any"),
    "max": _extremum_full("max"), "min": _extremum_full("min"),
    "max.dim": _extremum_dim("max"), "min.dim": _extremum_dim("min"),
    "argmax": _arg("argmax"), "argmin": _arg("argmin"),
}
for _op, _fn in KERNELS.items():
    register(_op, "Meta", _fn)
