"""OpInfo entries of the PyTorch API-surface ops (issue 3 follow-up): the aliases (absolute,
arccos, divide, greater, concat, ...), sampled lightly since their base ops are covered in full
elsewhere, and the ops added with them. Loaded by tests/opinfo.py."""
import numpy as np

from opinfo import (NOT_IN_TABLE, OPS, OpInfo, Sample, T, binary_samples, tensor,  # noqa: F401
                    unary_samples, values)
from opinfo_shape import cat_samples

_FEW = ("float32", "float64", "int64", "bool")


def _add(name, samples, dtypes=_FEW, inplace=None, out=None, **kw):
    OPS.append(OpInfo(name, samples, dtypes, inplace, out, **kw))


# -- aliases -------------------------------------------------------------------------------------

_UNARY_ALIASES = {  # alias -> value kwargs that keep the base op in its domain
    "absolute": {}, "negative": {}, "fix": {}, "arctan": {}, "arcsinh": {},
    "arccos": {"low": -1, "high": 1}, "arcsin": {"low": -1, "high": 1},
    "arctanh": {"low": -1, "high": 1}, "arccosh": {"positive": True},
}
for _a, _kw in _UNARY_ALIASES.items():
    _add(f"{_a}.default", lambda op, kw=_kw: unary_samples(op, **kw), _FEW, f"{_a}_.default",
         f"{_a}.out", rtol=1e-4, atol=1e-5)


def _binary(name, inplace, out, rhs="tensor", extra=None, **kw):
    _add(name, lambda op: binary_samples(op, rhs, "tensor", extra, **kw), _FEW, inplace, out,
         rtol=1e-4, atol=1e-5)


_binary("arctan2.default", "arctan2_.default", "arctan2.out", numbers=False)
_binary("divide.Tensor", "divide_.Tensor", "divide.out")
_binary("divide.Scalar", "divide_.Scalar", None, rhs="number")
for _mode in ("trunc", "floor", None):
    _binary("divide.Tensor_mode", "divide_.Tensor_mode", "divide.out_mode", nonzero=True,
            extra={"rounding_mode": _mode})
    _binary("divide.Scalar_mode", "divide_.Scalar_mode", None, rhs="number", nonzero=True,
            extra={"rounding_mode": _mode})
for _a in ("multiply", "subtract"):
    _binary(f"{_a}.Tensor", f"{_a}_.Tensor", f"{_a}.out")
    _binary(f"{_a}.Scalar", f"{_a}_.Scalar", None, rhs="number")
_binary("subtract.Tensor", "subtract_.Tensor", "subtract.out", extra={"alpha": 2})
for _a in ("greater", "greater_equal", "less", "less_equal", "not_equal"):
    _binary(f"{_a}.Tensor", f"{_a}_.Tensor", f"{_a}.Tensor_out")
    _binary(f"{_a}.Scalar", f"{_a}_.Scalar", f"{_a}.Scalar_out", rhs="number")
for _a in ("concat", "concatenate"):
    _add(f"{_a}.default", cat_samples, _FEW, None, f"{_a}.out")
