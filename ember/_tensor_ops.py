"""Python operators on Tensor (``+``, ``-``, ``@``, ``==``, ``+=`` ...), each mapped to the aten
overload PyTorch calls for it. An operand that is neither a Tensor nor a number makes the operator
return NotImplemented, so Python can try the other operand.

Where PyTorch picks a different overload for a Python-number operand (``a == 1`` is
``aten::eq.Scalar``, ``a ** 2`` is ``aten::pow.Tensor_Scalar``) the table names both.
"""
import numbers

import numpy as np

from . import overrides as _overrides
from ._dispatch import tls as _tls
from ._dispatch.keys import BACKEND_BITS
from ._ops.bindings import NUMPY_SCALARS
from ._ops.overload import default_value, ops
from ._tensor import Tensor
from ._core.codegen import compile_source

_NUMBERS = frozenset((int, float, bool, complex))

# operator -> (tensor-operand overload, number-operand overload or None for the same one,
#              how the operands are passed: "self" = op(self, other), "swap" = op(other, self))
BINARY = {
    "__add__": ("add.Tensor", None, "self"),
    "__radd__": ("add.Tensor", None, "self"),
    "__iadd__": ("add_.Tensor", None, "self"),
    "__sub__": ("sub.Tensor", None, "self"),
    "__rsub__": ("rsub.Tensor", "rsub.Scalar", "self"),
    "__isub__": ("sub_.Tensor", None, "self"),
    "__mul__": ("mul.Tensor", None, "self"),
    "__rmul__": ("mul.Tensor", None, "self"),
    "__imul__": ("mul_.Tensor", None, "self"),
    "__truediv__": ("div.Tensor", None, "self"),
    "__itruediv__": ("div_.Tensor", None, "self"),
    "__div__": ("div.Tensor", None, "self"),  # (Python 2's names, which PyTorch keeps)
    "__idiv__": ("div_.Tensor", None, "self"),
    "__floordiv__": ("floor_divide.default", None, "self"),
    "__rfloordiv__": ("floor_divide.default", None, "swap"),
    "__ifloordiv__": ("floor_divide_.Tensor", None, "self"),
    "__mod__": ("remainder.Tensor", "remainder.Scalar", "self"),
    "__rmod__": ("remainder.Tensor", "remainder.Scalar_Tensor", "swap"),
    "__imod__": ("remainder_.Tensor", "remainder_.Scalar", "self"),
    "__pow__": ("pow.Tensor_Tensor", "pow.Tensor_Scalar", "self"),
    "__rpow__": ("pow.Tensor_Tensor", "pow.Scalar", "swap"),
    "__ipow__": ("pow_.Tensor", "pow_.Scalar", "self"),
    "__matmul__": ("matmul.default", False, "self"),
    "__rmatmul__": ("matmul.default", False, "swap"),
    "__and__": ("bitwise_and.Tensor", "bitwise_and.Scalar", "self"),
    "__rand__": ("bitwise_and.Tensor", "bitwise_and.Scalar", "self"),
    "__iand__": ("bitwise_and_.Tensor", "bitwise_and_.Scalar", "self"),
    "__or__": ("bitwise_or.Tensor", "bitwise_or.Scalar", "self"),
    "__ror__": ("bitwise_or.Tensor", "bitwise_or.Scalar", "self"),
    "__ior__": ("bitwise_or_.Tensor", "bitwise_or_.Scalar", "self"),
    "__xor__": ("bitwise_xor.Tensor", "bitwise_xor.Scalar", "self"),
    "__rxor__": ("bitwise_xor.Tensor", "bitwise_xor.Scalar", "self"),
    "__ixor__": ("bitwise_xor_.Tensor", "bitwise_xor_.Scalar", "self"),
    "__lshift__": ("__lshift__.Tensor", "__lshift__.Scalar", "self"),
    "__rlshift__": ("bitwise_left_shift.Tensor", "bitwise_left_shift.Scalar_Tensor", "swap"),
    "__ilshift__": ("__ilshift__.Tensor", "__ilshift__.Scalar", "self"),
    "__rshift__": ("__rshift__.Tensor", "__rshift__.Scalar", "self"),
    "__rrshift__": ("bitwise_right_shift.Tensor", "bitwise_right_shift.Scalar_Tensor", "swap"),
    "__irshift__": ("__irshift__.Tensor", "__irshift__.Scalar", "self"),
    "__eq__": ("eq.Tensor", "eq.Scalar", "self"),
    "__ne__": ("ne.Tensor", "ne.Scalar", "self"),
    "__lt__": ("lt.Tensor", "lt.Scalar", "self"),
    "__le__": ("le.Tensor", "le.Scalar", "self"),
    "__gt__": ("gt.Tensor", "gt.Scalar", "self"),
    "__ge__": ("ge.Tensor", "ge.Scalar", "self"),
}

UNARY = {
    "__neg__": "neg.default",
    "__pos__": "positive.default",
    "__abs__": "abs.default",
}


def _overload(qualname):
    name, _, ov = qualname.partition(".")
    return getattr(getattr(ops.aten, name), ov)


def _is_number(x):
    return x.__class__ in _NUMBERS or x.__class__ is np.bool_ or (
        isinstance(x, numbers.Number) and not isinstance(x, Tensor))


def _args(qualname, prefix, first, second):
    """Source of the positional arguments of a call to ``qualname`` (the dispatcher takes every
    argument positionally: ``add.Tensor(a, b, 1)``) and the namespace holding its defaults."""
    schema = _overload(qualname)._schema
    ns = {f"{prefix}{i}": default_value(a) for i, a in enumerate(schema.arguments[2:])}
    return ", ".join([first, second, *ns]), ns


def _binary(tensor_qualname, number_qualname, order, dunder=None):
    """``op(self, other)`` for a binary operator, generated so the hot path is one type check
    and one dispatcher call. number_qualname: the overload for a Python-number operand (None:
    the tensor overload takes numbers too; False: numbers are not accepted)."""
    first, second = ("self", "other") if order == "self" else ("other", "self")
    t_args, ns = _args(tensor_qualname, "_t", first, second)
    ns.update(_on_tensor=_overload(tensor_qualname)._call, Tensor=Tensor, _is_number=_is_number,
              _NUMBERS=_NUMBERS, _np_scalars=NUMPY_SCALARS, _TF_ON=_overrides._TF_ON, _tf_check=_overrides._check,
              _tf_op=_overrides._dispatch_operator, _state=_tls.state,
              _cache=_overload(tensor_qualname)._entry.cache)
    method = tensor_qualname.partition(".")[0]
    src = ["def op(self, other):",
           # called unbound on a non-tensor (Tensor.__rand__(2, t)): PyTorch's C descriptors
           # refuse it with a TypeError
           "    if self.__class__ is not Tensor and not isinstance(self, Tensor):",
           f"        raise TypeError(\"descriptor '{dunder}' for 'Tensor' objects doesn't apply \"",
           "                        f\"to a '{type(self).__name__}' object\")",
           f"    if _TF_ON and _tf_check((self, other)): return _tf_op({dunder!r}, {method!r}, self, other)",
           # two plain tensors on one backend: the dispatcher's call inlined (its key set and
           # cached kernel, one Python frame less on the hottest path of all)
           "    if other.__class__ is Tensor:",
           "        ks = ((self._keyset | other._keyset) | _state.included) & ~_state.excluded",
           f"        b = ks & {BACKEND_BITS}",
           "        k = _cache.get(ks)",
           "        if k is not None and not b & (b - 1):",
           f"            return k({t_args})",
           f"        return _on_tensor({t_args})",
           "    if isinstance(other, Tensor):",
           f"        return _on_tensor({t_args})"]
    if number_qualname is not False:
        n_qualname = number_qualname or tensor_qualname
        n_args, n_ns = _args(n_qualname, "_n", first, second)
        ns.update(n_ns, _on_number=_overload(n_qualname)._call)
        src += ["    if other.__class__ in _NUMBERS:",
                f"        return _on_number({n_args})",
                "    if _is_number(other):",
                "        if other.__class__ in _np_scalars: other = other.item()",
                f"        return _on_number({n_args})"]
    src.append("    return NotImplemented")
    compile_source("\n".join(src), f"<ember operator Tensor.{dunder}>", ns)
    return ns["op"]


def _rtruediv(self, other):
    # PyTorch's Tensor.__rtruediv__ (and its alias __rdiv__, which takes a tensor ``other``
    # too): ``self.reciprocal() * other``; an unbound call on a non-tensor ``self`` fails on
    # ``reciprocal`` as PyTorch's does
    if _overrides._TF_ON and _overrides._check((self, other)):
        return _overrides._dispatch_operator("__rtruediv__", None, self, other)
    if not (_is_number(other) or isinstance(other, Tensor)):
        return NotImplemented
    return ops.aten.mul.Tensor._call(self.reciprocal(), other)


def _invert(self):
    # PyTorch checks the dtype in Python, before any kernel: a TypeError, not a kernel error
    if self._dtype.is_floating_point or self._dtype.is_complex:
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type "
                        "tensors")
    return ops.aten.bitwise_not.default._call(self)


def _unary(qualname):
    call = _overload(qualname)._call
    method = qualname.partition(".")[0]

    def op(self):
        if _overrides._TF_ON and _overrides._check((self,)):
            return _overrides._dispatch_operator(None, method, self)
        return call(self)
    return op


def install():
    for dunder, (on_tensor, on_number, order) in BINARY.items():
        setattr(Tensor, dunder, _binary(on_tensor, on_number, order, dunder))
    Tensor.__rtruediv__ = Tensor.__rdiv__ = _rtruediv
    Tensor.__invert__ = _invert
    for dunder, qualname in UNARY.items():
        setattr(Tensor, dunder, _unary(qualname))
    # ``==`` returns a tensor; Tensor.__hash__ (defined in _tensor.py) stays identity-based, as
    # PyTorch's, so tensors remain usable as dict keys.
