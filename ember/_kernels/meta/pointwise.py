"""Meta kernels of the pointwise ops: the broadcast shape in the dtype the op's type-promotion
kind gives, after the op's operand checks (``rules/pointwise.py``, the rules the CPU kernels
apply), so both raise alike. One kernel per entry of ``rules.pointwise.OVERLOADS``, made by its
calling form and registered by reference."""
from ..._core.device import META
from ..._core.promotion import result_type_of
from ..._core.tensor_impl import empty_tensor
from ..registration import register
from ..rules import pointwise as _R
from ..rules.pointwise import broadcast_shape as _shape


def _meta(name, *operands):
    rule, check = _R.RULES[len(operands)][name]
    cdt, rdt = _R.result_dtype(rule, operands)
    _R.check_operands(name, operands, check, cdt, rdt)
    return empty_tensor(_shape(*operands), rdt, META)


def _meta_into(name, self, *operands):
    rule, check = _R.RULES[len(operands)][name]
    cdt, rdt = _R.result_dtype(rule, operands)
    _R.check_operands(name, operands, check, cdt, rdt, self)
    return self


def _alpha_operands(name, self, other, alpha):
    if name == "sub":
        _R.check_sub(name, (self, other), None)
    _R.check_alpha(result_type_of((self, other)), alpha)


# One kernel factory per calling form (rules/pointwise.py): form -> (row name -> kernel).

def _unary(name):
    def k(self):
        return _meta(name, self)
    return k


def _binary(name):
    def k(self, other):
        return _meta(name, self, other)
    return k


def _inplace_unary(name):
    def k(self):
        return _meta_into(name, self, self)
    return k


def _inplace_binary(name):
    def k(self, other):
        return _meta_into(name, self, self, other)
    return k


def _unary_params(name):
    def k(self, *params):
        return _meta(_R.params_row(name, params), self)
    return k


def _inplace_unary_params(name):
    def k(self, *params):
        return _meta_into(_R.params_row(name, params), self, self)
    return k


def _ternary_value(name):
    def k(self, tensor1, tensor2, value=1):
        return _meta(name, self, tensor1, tensor2)
    return k


def _inplace_ternary_value(name):
    def k(self, tensor1, tensor2, value=1):
        return _meta_into(name, self, self, tensor1, tensor2)
    return k


def _ternary(name):
    def k(self, a, b):
        return _meta(name, self, a, b)
    return k


def _inplace_ternary(name):
    def k(self, a, b):
        return _meta_into(name, self, self, a, b)
    return k


def _alpha(name):
    def k(self, other, alpha=1):
        _alpha_operands(name, self, other, alpha)
        return _meta(name, self, other)
    return k


def _ralpha(name):
    def k(self, other, alpha=1):
        _alpha_operands("sub", other, self, alpha)
        return _meta("sub", other, self)
    return k


def _inplace_alpha(name):
    def k(self, other, alpha=1):
        _alpha_operands(name, self, other, alpha)
        return _meta_into(name, self, self, other)
    return k


def _mode(name):
    def k(self, other, rounding_mode):
        _R.check_rounding_mode(rounding_mode)
        return _meta(_R._DIV_MODES[rounding_mode], self, other)
    return k


def _inplace_mode(name):
    def k(self, other, rounding_mode):
        _R.check_rounding_mode(rounding_mode)
        return _meta_into(_R._DIV_MODES[rounding_mode], self, self, other)
    return k


FORMS = {
    _R.UNARY: _unary, _R.BINARY: _binary, _R.TERNARY: _ternary,
    _R.INPLACE_UNARY: _inplace_unary, _R.INPLACE_BINARY: _inplace_binary,
    _R.INPLACE_TERNARY: _inplace_ternary,
    _R.UNARY_PARAMS: _unary_params, _R.INPLACE_UNARY_PARAMS: _inplace_unary_params,
    _R.TERNARY_VALUE: _ternary_value, _R.INPLACE_TERNARY_VALUE: _inplace_ternary_value,
    _R.ALPHA: _alpha, _R.RALPHA: _ralpha, _R.INPLACE_ALPHA: _inplace_alpha,
    _R.MODE: _mode, _R.INPLACE_MODE: _inplace_mode,
}


def register_overloads(overloads):
    """Register a Meta kernel for each ``op overload -> (row, calling form)`` of ``overloads``."""
    for op, (name, form) in overloads.items():
        register(op, "Meta", FORMS[form](name))


register_overloads(_R.OVERLOADS)


# ---------------------------------------------------------------------------------------------
# Ops with their own argument rules.

def meta_clamp(self, min=None, max=None):  # noqa: A002  (schema names)
    name, operands = _R.clamp_operands("clamp", self, min, max)
    return _meta(name, *operands)


def meta_clamp_(self, min=None, max=None):  # noqa: A002
    name, operands = _R.clamp_operands("clamp", self, min, max)
    return _meta_into(name, self, *operands)


meta_clamp_Tensor = meta_clamp
meta_clamp__Tensor = meta_clamp_


def meta_polygamma(n, self):
    _R.check_polygamma_order(n, self)
    return _meta("polygamma", self)


def meta_polygamma_(self, n):
    _R.check_polygamma_order(n, self)
    return _meta_into("polygamma", self, self)


def meta_abs_(self):
    if self._dtype.is_complex:
        raise RuntimeError("In-place abs is not supported for complex tensors.")
    return _meta_into("abs", self, self)


def meta_polar(abs, angle):  # noqa: A002
    dt = _R.check_polar(abs, angle)
    return empty_tensor(_shape(abs, angle), dt, META)


def meta_where_self(condition, self, other):
    _R.check_where_condition(condition)
    return empty_tensor(_shape(condition, self, other), result_type_of((self, other)), META)
