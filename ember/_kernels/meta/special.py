"""Meta kernels of the special functions (``cpu/special.py``): shape and dtype from the same
pointwise rows and operand checks as the CPU kernels, so both raise alike."""
from ..cpu import special as _sp
from .pointwise import _meta, _meta_into


def _make(op, form):
    if form == "unary":
        def k(self):
            return _meta(op, self)
    elif form == "binary":
        def k(self, other):
            return _meta(op, self, other)
    elif form == "inplace_unary":
        def k(self):
            return _meta_into(op, self, self)
    else:
        def k(self, other):
            return _meta_into(op, self, self, other)
    return k


def meta_mvlgamma(self, p):
    _sp.check_mvlgamma(self, p)
    return _meta("mvlgamma", self)


def meta_mvlgamma_(self, p):
    _sp.check_mvlgamma(self, p)
    return _meta_into("mvlgamma", self, self)


def _generate():
    kernels = {}
    for op in _sp.UNARY:
        if op != "mvlgamma":
            kernels["meta_" + op] = _make(op, "unary")
    for op, overloads in _sp.BINARY_OVERLOADS.items():
        for ov in overloads:
            kernels["meta_" + _sp._pw.kernel_name(op, ov)] = _make(op, "binary")
    for op, n in _sp.INPLACE.items():
        kernels[f"meta_{op}_"] = _make(op, "inplace_unary" if n == 1 else "inplace_binary")
    return kernels


_GENERATED = _generate()
globals().update(_GENERATED)
__all__ = ["meta_mvlgamma", "meta_mvlgamma_", *_GENERATED]
