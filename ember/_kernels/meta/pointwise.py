"""Meta kernels of the pointwise ops: broadcast shape and result dtype, generated from the same
``UNARY``/``BINARY``/``TERNARY`` tables and operand checks as the CPU kernels, so both raise
alike."""
from ..._core import strides as _st
from ..._core.device import META
from ..._core.promotion import result_type_of
from ..._tensor import empty_tensor
from ..cpu import pointwise as _pw



def _shape(*operands):
    return _st.broadcast_shapes(*[getattr(x, "_size", ()) for x in operands])


def _meta(name, *operands):
    fn, rule, check = _pw.row(name, len(operands))
    cdt, rdt = _pw.result_dtype(rule, operands)
    _pw.check_operands(name, operands, check, cdt, rdt)
    return empty_tensor(_shape(*operands), rdt, META)


def _meta_into(name, self, *operands):
    fn, rule, check = _pw.row(name, len(operands))
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
    elif kind == "unary_params":
        def k(self, *params):
            return _meta(name, self)
    elif kind == "inplace_unary_params":
        def k(self, *params):
            return _meta_into(name, self, self)
    elif kind == "ternary_value":
        def k(self, tensor1, tensor2, value=1):
            return _meta(name, self, tensor1, tensor2)
    elif kind == "inplace_ternary_value":
        def k(self, tensor1, tensor2, value=1):
            return _meta_into(name, self, self, tensor1, tensor2)
    elif kind == "ternary":
        def k(self, a, b):
            return _meta(name, self, a, b)
    elif kind == "inplace_ternary":
        def k(self, a, b):
            return _meta_into(name, self, self, a, b)
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


def meta_clamp(self, min=None, max=None):  # noqa: A002  (schema names)
    name, operands = _pw.clamp_operands("clamp", self, min, max)
    return _meta(name, *operands)


def meta_clamp_(self, min=None, max=None):  # noqa: A002
    name, operands = _pw.clamp_operands("clamp", self, min, max)
    return _meta_into(name, self, *operands)


def meta_polygamma(n, self):
    _pw.check_polygamma_order(n)
    return _meta("polygamma", self)


def meta_polygamma_(self, n):
    _pw.check_polygamma_order(n)
    return _meta_into("polygamma", self, self)


def meta_abs_(self):
    if self._dtype.is_complex:
        raise RuntimeError("In-place abs is not supported for complex tensors.")
    return _meta_into("abs", self, self)


def meta_polar(abs, angle):  # noqa: A002
    dt = _pw.check_polar(abs, angle)
    return empty_tensor(_shape(abs, angle), dt, META)


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
    for short, op in _pw._SHIFT_OPERATORS.items():
        for ov in ("Tensor", "Scalar"):
            forms[f"{short}_{ov}"] = (op, "binary")
            forms[f"i{short}_{ov}"] = (op, "inplace_binary")
    for op in _pw.UNARY:
        if op in _pw._UNARY_EXPLICIT:
            continue
        forms[op] = (op, "unary")
        if op not in _pw._UNARY_NO_INPLACE:
            forms[op + "_"] = (op, "inplace_unary")
    forms.update({
        "_conj_physical": ("conj_physical", "unary"),
        "round_decimals": ("round_decimals", "unary_params"),
        "round__decimals": ("round_decimals", "inplace_unary_params"),
        "logit": ("logit", "unary_params"), "logit_": ("logit", "inplace_unary_params"),
        "nan_to_num": ("nan_to_num", "unary_params"),
        "nan_to_num_": ("nan_to_num", "inplace_unary_params"),
        "addcmul": ("addcmul", "ternary_value"), "addcmul_": ("addcmul", "inplace_ternary_value"),
        "addcdiv": ("addcdiv", "ternary_value"), "addcdiv_": ("addcdiv", "inplace_ternary_value"),
    })
    for ov in ("Scalar", "Tensor"):  # lerp's weight is a number or a tensor: one ternary row
        forms[f"lerp_{ov}"] = ("lerp", "ternary")
        forms[f"lerp__{ov}"] = ("lerp", "inplace_ternary")
    return {"meta_" + k: _make(op, kind) for k, (op, kind) in forms.items()}


_GENERATED = _generate()
globals().update(_GENERATED)
meta_clamp_Tensor = meta_clamp
meta_clamp__Tensor = meta_clamp_
__all__ = ["meta_where_self", "meta_clamp", "meta_clamp_", "meta_clamp_Tensor",
           "meta_clamp__Tensor", "meta_abs_", "meta_polar", "meta_polygamma", "meta_polygamma_", *_GENERATED]
