"""The nested int: the symbolic size of a jagged tensor's ragged dimension (PyTorch's
``NestedIntNode``).

A jagged tensor of shape ``(B, j1, D)`` has ``j1`` in its size: an ``ember.SymInt`` whose node
is a :class:`NestedIntNode`. Two jagged tensors share a nested int exactly when they share their
offsets (or lengths) tensor, so shape equality tells whether their raggedness matches. The node
answers ``==`` and ``!=`` with plain bools, ``*`` by an int gives a new nested int (the ragged
stride ``4*j1``), and an order comparison is decided only against ints below 2 (a nested int is
at least 2); everything else (``int()``, ``+``) has no answer, as in PyTorch.
"""
from ..._core.symint import SymInt

__all__ = ["NestedIntNode"]


class _ConstantNode:
    """An int or bool taking part in a nested-int expression (PyTorch's ConstantIntNode);
    ``wrapped()`` is the plain value."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def wrapped(self):
        return self.value

    # the reflected side of ``4 * j1`` and ``2 <= j1``
    def mul(self, other):
        return other.mul(self)

    def eq(self, other):
        return _ConstantNode(_eq(self, other))

    def ne(self, other):
        return _ConstantNode(not _eq(self, other))

    def ge(self, other):
        return _ConstantNode(_ge(self, other))

    def le(self, other):
        return _ConstantNode(_ge(other, self))

    def gt(self, other):
        return _ConstantNode(not _ge(other, self))

    def lt(self, other):
        return _ConstantNode(not _ge(self, other))


def _eq(lhs, rhs):
    return (isinstance(lhs, NestedIntNode) and isinstance(rhs, NestedIntNode)
            and lhs.t_id == rhs.t_id and lhs.coeff == rhs.coeff)


def _ge(lhs, rhs):
    if isinstance(lhs, NestedIntNode) and isinstance(rhs, NestedIntNode):
        if lhs.t_id == rhs.t_id:
            return lhs.coeff >= rhs.coeff
        raise ValueError("ge: relation is indeterminate")
    if isinstance(lhs, NestedIntNode):
        if rhs.value <= 2:
            return True
        raise ValueError("ge: relation is indeterminate")
    if lhs.value < 2:
        return False
    raise ValueError("ge: relation is indeterminate")


class NestedIntNode:
    """``coeff * j<t_id>``: see the module docstring."""

    __slots__ = ("t_id", "coeff")

    def __init__(self, t_id, coeff):
        self.t_id = t_id
        self.coeff = coeff

    def wrapped(self):
        return SymInt(self)

    def wrap(self, value):
        return value if isinstance(value, NestedIntNode) else _ConstantNode(value)

    def nested_int(self):
        return self.t_id

    def nested_int_coeff(self):
        return self.coeff

    def is_nested_int(self):
        return True

    def is_nonnegative(self):
        return True

    def mul(self, other):
        if not isinstance(other, _ConstantNode):
            raise ValueError(f"unsupported: {type(other)}")
        return NestedIntNode(self.t_id, self.coeff * other.value)

    def eq(self, other):
        return _ConstantNode(_eq(self, other))

    def ne(self, other):
        return _ConstantNode(not _eq(self, other))

    def gt(self, other):
        return _ConstantNode(not _ge(other, self))

    def lt(self, other):
        return _ConstantNode(not _ge(self, other))

    def le(self, other):
        return _ConstantNode(_ge(other, self))

    def ge(self, other):
        return _ConstantNode(_ge(self, other))

    def guard_int(self):
        raise RuntimeError(f"Cannot convert the nested int {self} to a Python int: a ragged "
                           "dimension has no single size")

    def __str__(self):
        return f"j{self.t_id}" if self.coeff == 1 else f"{self.coeff}*j{self.t_id}"

    __repr__ = __str__


def is_nested_int(x):
    return isinstance(x, SymInt) and isinstance(x.node, NestedIntNode)
