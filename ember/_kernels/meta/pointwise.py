"""Meta kernels of the pointwise ops: broadcast shape and result dtype, generated from the same
``BINARY``/``UNARY`` tables and operand checks as the CPU kernels, so both raise alike."""
from ..._core import strides as _st
from ..._core.device import META
from ..._core.promotion import result_type_of
from ..._tensor import empty_tensor
from ..cpu import pointwise as _pw



def _shape(*operands):
    return _st.broadcast_shapes(*[getattr(x, "_size", ()) for x in operands])


def _meta(name, *operands):
    fn, rule, check = _pw.BINARY[name] if len(operands) == 2 else _pw.UNARY[name]
    cdt, rdt = _pw.result_dtype(rule, operands)
    _pw.check_operands(name, operands, check, cdt, rdt)
    return empty_tensor(_shape(*operands), rdt, META)


def _meta_into(name, self, *operands):
    fn, rule, check = _pw.BINARY[name] if len(operands) == 2 else _pw.UNARY[name]
    cdt, rdt = _pw.result_dtype(rule, operands)
    _pw.check_operands(name, operands, check, cdt, rdt, self)
    return self


def _alpha_operands(name, self, other, alpha):
    if name == "sub":
        _pw.check_sub(name, (self, other), None)
    _pw.check_alpha(result_type_of((self, other)), alpha)


def _make(name, kind):
    """Meta kernel for a CPU kernel of the given calling form."""
    if kind == "binary":
        def k(self, other):
            return _meta(name, self, other)
    elif kind == "unary":
        def k(self):
            return _meta(name, self)
    elif kind == "inplace_binary":
        def k(self, other):
            return _meta_into(name, self, self, other)
    elif kind == "inplace_unary":
        def k(self):
            return _meta_into(name, self, self)
    elif kind == "alpha":
        def k(self, other, alpha=1):
            _alpha_operands(name, self, other, alpha)
            return _meta(name, self, other)
    elif kind == "ralpha":
        def k(self, other, alpha=1):
            _alpha_operands("sub", other, self, alpha)
            return _meta("sub", other, self)
    elif kind == "inplace_alpha":
        def k(self, other, alpha=1):
            _alpha_operands(name, self, other, alpha)
            return _meta_into(name, self, self, other)
    elif kind == "mode":
        def k(self, other, rounding_mode):
            _pw.check_rounding_mode(rounding_mode)
            return _meta(_pw._DIV_MODES[rounding_mode], self, other)
    else:  # inplace_mode
        def k(self, other, rounding_mode):
            _pw.check_rounding_mode(rounding_mode)
            return _meta_into(_pw._DIV_MODES[rounding_mode], self, self, other)
    return k


def meta_where_self(condition, self, other):
    if condition._dtype._short not in ("Bool", "Byte"):
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor "
                           f"with dtype {condition._dtype._short}")
    return empty_tensor(_shape(condition, self, other), result_type_of((self, other)), META)


def _generate():
    """One meta kernel per CPU pointwise kernel name, ``meta_<name>``."""
    forms = {
        "add_Tensor": ("add", "alpha"), "add_Scalar": ("add", "alpha"),
        "sub_Tensor": ("sub", "alpha"), "sub_Scalar": ("sub", "alpha"),
        "rsub_Tensor": ("sub", "ralpha"), "rsub_Scalar": ("sub", "ralpha"),
        "add__Tensor": ("add", "inplace_alpha"), "add__Scalar": ("add", "inplace_alpha"),
        "sub__Tensor": ("sub", "inplace_alpha"), "sub__Scalar": ("sub", "inplace_alpha"),
        "mul_Tensor": ("mul", "binary"), "mul_Scalar": ("mul", "binary"),
        "div_Tensor": ("div", "binary"), "div_Scalar": ("div", "binary"),
        "div_Tensor_mode": ("div", "mode"), "div_Scalar_mode": ("div", "mode"),
        "div__Tensor_mode": ("div", "inplace_mode"), "div__Scalar_mode": ("div", "inplace_mode"),
    }
    for op, (functional, inplace) in _pw._BINARY_OVERLOADS.items():
        for ov in functional:
            forms.setdefault(_pw.kernel_name(op, ov), (op, "binary"))
        for ov in inplace:
            forms.setdefault(_pw.kernel_name(op + "_", ov), (op, "inplace_binary"))
    for op in _pw.UNARY:
        forms[op] = (op, "unary")
        forms[op + "_"] = (op, "inplace_unary")
    return {"meta_" + k: _make(op, kind) for k, (op, kind) in forms.items()}


_GENERATED = _generate()
globals().update(_GENERATED)
__all__ = ["meta_where_self", *_GENERATED]
