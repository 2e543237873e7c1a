"""CUDA reductions: sum, mean, prod, amax, amin, all, any.

Result dtypes, reduced dims and PyTorch's errors are the rules' (``rules/reduction.py``); the
values are the CPU kernels' ``reduce_values`` on device arrays (``cupy.sum`` where the CPU calls
``np.sum``), accumulating half precision in float32 as PyTorch's kernels do.
"""
from ..._core import dtype as D
from ..cpu.reduction import reduce_values
from ..rules.reduction import (LOGICAL, REDUCTION_RULES, reduce_dims, reduced_shape,
                               reduction_dtype)
from .arrays import NeedsHost, device_array, launch, to_tensor


def _reduce(name, self, dim, keepdim, dtype=None):
    rule, empty_error, _ = REDUCTION_RULES[name]
    rdt = reduction_dtype(name, rule, self, dtype)
    dims = reduce_dims(name, self, dim, empty_error, rule != LOGICAL)
    if self._dtype is D.complex32 or self._dtype in D.FLOAT8 or rdt in D.FLOAT8:
        raise NeedsHost("float8/complex32 reduction")
    shape = reduced_shape(self._size, dims, keepdim)

    def body(xp, rt):
        r = reduce_values(xp, device_array(self, rt), name, dims, keepdim, rdt)
        return to_tensor(xp.asarray(r).reshape(shape), rdt, self._device, rt)
    return launch(self._device, body)


def _whole(name):
    return lambda self, dtype=None: _reduce(name, self, None, False, dtype)


def _along(name):
    return lambda self, dim, keepdim=False, dtype=None: _reduce(name, self, dim, keepdim, dtype)


def _extremum(name):
    return lambda self, dim=(), keepdim=False: _reduce(name, self, dim, keepdim)


def _logical(name):
    return lambda self: _reduce(name, self, None, False)


def kernels():
    """op overload -> CUDA kernel (the CPU's signatures: cpu/reduction.py)."""
    return {"sum": _whole("sum"), "sum.dim_IntList": _along("sum"), "mean": _whole("mean"),
            "mean.dim": _along("mean"), "prod": _whole("prod"), "prod.dim_int": _along("prod"),
            "amax": _extremum("amax"), "amin": _extremum("amin"), "all": _logical("all"),
            "any": _logical("any")}
