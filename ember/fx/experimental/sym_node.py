"""``SymNode``: the sympy expression behind a SymInt/SymBool, its ShapeEnv and its hint.

Every operation builds the sympy expression of the result and computes the hint (the value
for the example inputs) with the same Python operation on the hints; an expression sympy
reduces to a number comes back as a plain int/bool. Floor division is ``sympy.floor(a/b)``
and modulo ``sympy.Mod`` (sizes are non-negative, so Python's and sympy's agree); the
ShapeEnv prints both back as ``//`` and ``%``.
"""
import sympy

from ..._core.symint import SymBool, SymInt

__all__ = ["SymNode"]


class SymNode:
    __slots__ = ("expr", "shape_env", "pytype", "hint")

    def __init__(self, expr, shape_env, pytype, hint):
        self.expr, self.shape_env, self.pytype, self.hint = expr, shape_env, pytype, hint

    def wrap(self, value):
        """A constant in this node's ShapeEnv."""
        if isinstance(value, bool):
            return SymNode(sympy.true if value else sympy.false, self.shape_env, bool, value)
        return SymNode(sympy.Integer(value), self.shape_env, int, value)

    def wrapped(self):
        """The Python value: a plain int/bool when the expression is a number."""
        e = self.expr
        if self.pytype is bool:
            if e is sympy.true or e is sympy.false:
                return bool(e)
            return SymBool(self)
        if e.is_Integer:
            return int(e)
        return SymInt(self)

    def _int(self, expr, hint):
        return SymNode(expr, self.shape_env, int, hint)

    def _bool(self, expr, hint):
        # relations sympy can decide from the symbols' assumptions come back as true/false
        return SymNode(expr, self.shape_env, bool, hint)

    # -- arithmetic --------------------------------------------------------------------------
    def add(self, o):
        return self._int(self.expr + o.expr, self.hint + o.hint)

    def sub(self, o):
        return self._int(self.expr - o.expr, self.hint - o.hint)

    def mul(self, o):
        return self._int(self.expr * o.expr, self.hint * o.hint)

    def floordiv(self, o):
        if o.expr == 1:
            return self
        return self._int(sympy.floor(self.expr / o.expr), self.hint // o.hint)

    def mod(self, o):
        return self._int(sympy.Mod(self.expr, o.expr), self.hint % o.hint)

    def pow(self, o):
        return self._int(self.expr ** o.expr, self.hint ** o.hint)

    def neg(self):
        return self._int(-self.expr, -self.hint)

    def max(self, o):
        return self._int(sympy.Max(self.expr, o.expr), max(self.hint, o.hint))

    def min(self, o):
        return self._int(sympy.Min(self.expr, o.expr), min(self.hint, o.hint))

    # -- relations ---------------------------------------------------------------------------
    def eq(self, o):
        return self._bool(sympy.Eq(self.expr, o.expr), self.hint == o.hint)

    def ne(self, o):
        return self._bool(sympy.Ne(self.expr, o.expr), self.hint != o.hint)

    def lt(self, o):
        return self._bool(sympy.Lt(self.expr, o.expr), self.hint < o.hint)

    def le(self, o):
        return self._bool(sympy.Le(self.expr, o.expr), self.hint <= o.hint)

    def gt(self, o):
        return self._bool(sympy.Gt(self.expr, o.expr), self.hint > o.hint)

    def ge(self, o):
        return self._bool(sympy.Ge(self.expr, o.expr), self.hint >= o.hint)

    def and_(self, o):
        return self._bool(sympy.And(self.expr, o.expr), self.hint and o.hint)

    def or_(self, o):
        return self._bool(sympy.Or(self.expr, o.expr), self.hint or o.hint)

    def not_(self):
        return self._bool(sympy.Not(self.expr), not self.hint)

    def is_nonnegative(self):
        return self.shape_env.statically_known(sympy.Ge(self.expr, 0)) is True

    # -- evaluation (guards) -----------------------------------------------------------------
    def guard_bool(self):
        return bool(self.shape_env.evaluate_expr(self.expr, self.hint))

    def guard_int(self):
        return int(self.shape_env.evaluate_expr(self.expr, self.hint))

    def __str__(self):
        return str(self.expr)
