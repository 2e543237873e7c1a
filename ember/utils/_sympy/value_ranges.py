"""``ValueRanges``: the closed integer interval a symbolic size may take (PyTorch's class of
the same name, as ``ExportedProgram.range_constraints`` reports it: ``VR[2, int_oo]``)."""
import sympy

__all__ = ["ValueRanges"]


class ValueRanges:
    """``[lower, upper]``; ``upper`` is ``sympy.oo`` when unbounded (printed ``int_oo``, the
    name PyTorch gives its integer infinity)."""

    __slots__ = ("lower", "upper")

    def __init__(self, lower, upper):
        self.lower = sympy.Integer(lower)
        self.upper = sympy.oo if upper in (sympy.oo, float("inf")) else sympy.Integer(upper)

    def __contains__(self, x):
        return self.lower <= x <= self.upper

    def __eq__(self, other):
        return isinstance(other, ValueRanges) and (self.lower, self.upper) == \
            (other.lower, other.upper)

    def __hash__(self):
        return hash((self.lower, self.upper))

    def __repr__(self):
        upper = "int_oo" if self.upper == sympy.oo else self.upper
        return f"VR[{self.lower}, {upper}]"
