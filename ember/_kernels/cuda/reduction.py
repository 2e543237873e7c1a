"""CUDA reductions: sum, mean, prod, amax, amin, all, any and ``linalg_vector_norm``.

Result dtypes, reduced dims and PyTorch's errors are the rules' (``rules/reduction.py``,
``rules/linalg.py``); the values are the array module's reductions of the CPU table's names
(``np.sum`` there, ``cupy.sum`` on a GPU), accumulating half precision in float32 as PyTorch's
CUDA kernels do.
"""
import numpy as np

from ..._core import dtype as D
from ..rules.linalg import vector_norm_check, vector_norm_shape
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


def sum(self, dtype=None):  # noqa: A001  (PyTorch's name)
    return _reduce("sum", self, None, False, dtype)


def sum_dim_IntList(self, dim, keepdim=False, dtype=None):
    return _reduce("sum", self, dim, keepdim, dtype)


def mean(self, dtype=None):
    return _reduce("mean", self, None, False, dtype)


def mean_dim(self, dim, keepdim=False, dtype=None):
    return _reduce("mean", self, dim, keepdim, dtype)


def prod(self, dtype=None):
    return _reduce("prod", self, None, False, dtype)


def prod_dim_int(self, dim, keepdim=False, dtype=None):
    return _reduce("prod", self, dim, keepdim, dtype)


def amax(self, dim=(), keepdim=False):
    return _reduce("amax", self, dim, keepdim)


def amin(self, dim=(), keepdim=False):
    return _reduce("amin", self, dim, keepdim)


def all(self):  # noqa: A001
    return _reduce("all", self, None, False)


def any(self):  # noqa: A001
    return _reduce("any", self, None, False)


def linalg_vector_norm(self, ord=2, dim=None, keepdim=False, dtype=None):
    dims, out = vector_norm_check(self, ord, dim, dtype)
    if self._dtype is D.complex32:
        raise NeedsHost("complex32 norm")
    work = dtype or self._dtype
    axis = None if dims is None else tuple(dims)
    shape = vector_norm_shape(self, dims, keepdim)
    p = float(ord)

    def body(xp, rt):
        a = device_array(self, rt)
        a = xp.abs(a.astype(np.float32 if work in _ACC else work._np, copy=False))
        if p == float("inf"):
            r = xp.max(a, axis=axis, keepdims=keepdim) if a.size else xp.zeros((), a.dtype)
        elif p == float("-inf"):
            r = xp.min(a, axis=axis, keepdims=keepdim)
        elif p == 0:
            r = xp.sum(a != 0, axis=axis, keepdims=keepdim).astype(a.dtype)
        elif p == 1:
            r = xp.sum(a, axis=axis, keepdims=keepdim)
        elif p == 2:
            r = xp.sqrt(xp.sum(a * a, axis=axis, keepdims=keepdim))
        else:
            r = xp.power(xp.sum(xp.power(a, p), axis=axis, keepdims=keepdim), 1.0 / p)
        return to_tensor(xp.asarray(r).reshape(shape), out, self._device, rt)
    return launch(self._device, body)


def kernels():
    return {"sum": sum, "sum.dim_IntList": sum_dim_IntList, "mean": mean, "mean.dim": mean_dim,
            "prod": prod, "prod.dim_int": prod_dim_int, "amax": amax, "amin": amin,
            "all": all, "any": any, "linalg_vector_norm": linalg_vector_norm}
