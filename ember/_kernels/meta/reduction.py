"""Meta kernels of the reductions: result shape and dtype from the same rules (and errors) as the
CPU kernels (``cpu/reduction.py``), without touching data."""
from ..._core import dtype as D
from ..._core.device import META
from ..._tensor import empty_tensor
from ..cpu import reduction as _r


def _meta_reduce(name, self, dim, keepdim, dtype=None):
    fn, rule, empty_error, upcast = _r.REDUCTIONS[name]
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


_KERNELS = {
    "meta_sum": _full("sum"), "meta_sum_dim_IntList": _along("sum"),
    "meta_prod": _full("prod"), "meta_prod_dim_int": _along("prod"),
    "meta_mean": _full("mean"), "meta_mean_dim": _along("mean"),
    "meta_amax": _along("amax"), "meta_amin": _along("amin"),
    "meta_all": _full("all"), "meta_all_dim": _along("all"), "meta_all_dims": _along("all"),
    "meta_any": _full("any"), "meta_any_dim": _along("any"), "meta_any_dims": _along("any"),
    "meta_max": _extremum_full("max"), "meta_min": _extremum_full("min"),
    "meta_max_dim": _extremum_dim("max"), "meta_min_dim": _extremum_dim("min"),
    "meta_argmax": _arg("argmax"), "meta_argmin": _arg("argmin"),
}
globals().update(_KERNELS)
__all__ = list(_KERNELS)
