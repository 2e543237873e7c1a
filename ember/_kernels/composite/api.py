"""CompositeImplicitAutograd kernels of the PyTorch API-surface ops that decompose into other
ops: the aliases (``absolute`` = ``abs``, ``divide`` = ``div``, ``concat`` = ``cat``, ...), each
overload calling the same overload of the op it aliases through the dispatcher, so autograd,
out= and in-place behaviour are the base op's."""
from ..._ops.overload import ops
from ..registration import register

_aten = ops.aten

# alias -> (the op it aliases, the overloads both declare); PyTorch's alias overloads take exactly
# the base overload's arguments
_UNARY = ("default", "out")
_DIVIDE = ("Tensor", "Scalar", "Tensor_mode", "Scalar_mode", "out", "out_mode")
_DIVIDE_ = ("Tensor", "Scalar", "Tensor_mode", "Scalar_mode")
_COMPARE = ("Tensor", "Scalar", "Tensor_out", "Scalar_out")
_ALIASES = {
    "absolute": ("abs", _UNARY), "absolute_": ("abs_", ("default",)),
    "arccos": ("acos", _UNARY), "arccos_": ("acos_", ("default",)),
    "arccosh": ("acosh", _UNARY), "arccosh_": ("acosh_", ("default",)),
    "arcsin": ("asin", _UNARY), "arcsin_": ("asin_", ("default",)),
    "arcsinh": ("asinh", _UNARY), "arcsinh_": ("asinh_", ("default",)),
    "arctan": ("atan", _UNARY), "arctan_": ("atan_", ("default",)),
    "arctanh": ("atanh", _UNARY), "arctanh_": ("atanh_", ("default",)),
    "arctan2": ("atan2", _UNARY), "arctan2_": ("atan2_", ("default",)),
    "negative": ("neg", _UNARY), "negative_": ("neg_", ("default",)),
    "fix": ("trunc", _UNARY), "fix_": ("trunc_", ("default",)),
    "divide": ("div", _DIVIDE), "divide_": ("div_", _DIVIDE_),
    "multiply": ("mul", ("Tensor", "Scalar", "out")), "multiply_": ("mul_", ("Tensor", "Scalar")),
    "subtract": ("sub", ("Tensor", "Scalar", "out")), "subtract_": ("sub_", ("Tensor", "Scalar")),
    "greater": ("gt", _COMPARE), "greater_": ("gt_", ("Tensor", "Scalar")),
    "greater_equal": ("ge", _COMPARE), "greater_equal_": ("ge_", ("Tensor", "Scalar")),
    "less": ("lt", _COMPARE), "less_": ("lt_", ("Tensor", "Scalar")),
    "less_equal": ("le", _COMPARE), "less_equal_": ("le_", ("Tensor", "Scalar")),
    "not_equal": ("ne", _COMPARE), "not_equal_": ("ne_", ("Tensor", "Scalar")),
    "concat": ("cat", _UNARY), "concatenate": ("cat", _UNARY),
}


def _alias_kernel(base, overload):
    def kernel(*args):
        return getattr(getattr(_aten, base), overload)._call(*args)
    return kernel


for _name, (_base, _overloads) in _ALIASES.items():
    for _ov in _overloads:
        register(_name if _ov == "default" else f"{_name}.{_ov}", "CompositeImplicitAutograd",
                 _alias_kernel(_base, _ov))
