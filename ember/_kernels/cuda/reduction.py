"""CUDA reductions: sum, mean, prod, amax, amin, all, any.

Result dtypes, reduced dims and PyTorch's errors are the rules' (``rules/reduction.py``); the
values are the array module's reductions of the CPU table's names
(``np.sum`` there, ``cupy.sum`` on a GPU), accumulating half precision in float32 as PyTorch's
CUDA kernels do.
"""
from ..._core import dtype as D
from ..rules.reduction import (LOGICAL, REDUCTION_RULES, SAME, reduce_dims, reduced_shape,
                               reduction_dtype)
from .arrays import NeedsHost, device_array, launch, to_tensor

# op -> the array module's function computing it (the CPU table's NumPy names)
_FUNCTIONS = {"sum": "sum", "nansum": "nansum", "prod": "prod", "mean": "mean", "amax": "max",
              "amin": "min", "all": "all", "any": "any"}
_ACC = {D.float16: D.float32, D.bfloat16: D.float32}


def _reduce(name, self, dim, keepdim, dtype=None):
    rule, empty_error, upcast = REDUCTION_RULES[name]
    rdt = reduction_dtype(name, rule, self, dtype)
    dims = reduce_dims(name, self, dim, empty_error, rule != LOGICAL)
    if self._dtype is D.complex32 or self._dtype in D.FLOAT8 or rdt in D.FLOAT8:
        raise NeedsHost("float8/complex32 reduction")
    shape = reduced_shape(self._size, dims, keepdim)

    def body(xp, rt):
        a = device_array(self, rt)
        fn = getattr(xp, _FUNCTIONS[name])
        if rule == LOGICAL:
            r = fn(a != 0, axis=dims, keepdims=keepdim)
        elif rule == SAME:
            r = fn(a, axis=dims, keepdims=keepdim)
        else:
            acc = _ACC.get(rdt, rdt) if upcast else rdt
            if a.dtype != acc._np:
                a = a.astype(acc._np)
            if name == "mean" and a.size == 0:  # 0/0 without NumPy's empty-slice warning
                r = xp.true_divide(xp.sum(a, axis=dims, keepdims=keepdim, dtype=acc._np), 0)
            else:
                r = fn(a, axis=dims, keepdims=keepdim, dtype=acc._np)
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
