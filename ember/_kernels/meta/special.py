"""Meta kernels of the special functions (``cpu/special.py``): shape and dtype from the same
pointwise rules and operand checks as the CPU kernels (``rules/special.py``), so both raise
alike. mvlgamma is written out (it takes p); every other overload gets the kernel of its calling
form (``meta/pointwise.py``)."""
from ..rules import special as _RS
from ..rules.special import check_mvlgamma, check_mvlgamma_
from .pointwise import _meta, _meta_into, register_overloads


def meta_mvlgamma(self, p):
    check_mvlgamma(self, p)
    return _meta("mvlgamma", self)


def meta_mvlgamma_(self, p):
    check_mvlgamma_(self, p)
    return _meta_into("mvlgamma", self, self)


register_overloads(_RS.OVERLOADS)
