"""``SymInt`` and ``SymBool``: Python ints and bools whose value is a symbolic expression.

A symbolic size (``s0``) behaves like an int in shape arithmetic: ``+ - * // %``, negation and
``max``/``min`` give new SymInts, comparisons give SymBools. Each wraps a ``SymNode``
(``ember.fx.experimental.sym_node``: the sympy expression, the ShapeEnv and the concrete *hint*
the expression has for the example inputs). Where Python needs a real value — ``bool()`` on a
comparison the program branches on, ``int()``, ``operator.index`` (indexing, ``range``) — the
ShapeEnv records a guard that the answer stays the same and returns the hint, as PyTorch's
guard-on-evaluate does. This module has no sympy: it only forwards to the node.

``sym_int`` helpers for the shape rules live here too: :func:`is_symbolic` tells a SymInt from
an int, :func:`prod` is ``math.prod`` that keeps SymInts (``math.prod`` would call ``__index__``
and specialise).
"""
import operator

__all__ = ["SymInt", "SymBool", "SymFloat", "is_symbolic", "prod", "sym_max", "sym_min",
           "hint_int"]


# make_fx(tracing_mode="symbolic") pushes a recorder here while it traces
_trace_hooks = []


def _node(other, like):
    """``other`` as a SymNode in ``like``'s ShapeEnv (ints and bools become constants)."""
    if isinstance(other, (SymInt, SymBool)):
        return other.node
    return like.wrap(other)


def _binary(name, reflected=False):
    def op(self, other):
        if not isinstance(other, (int, SymInt, SymBool)):
            if isinstance(other, float):  # int-float arithmetic leaves the int world: specialise
                return getattr(operator, name)(*((other, int(self)) if reflected
                                                 else (int(self), other)))
            return NotImplemented
        a, b = self.node, _node(other, self.node)
        if reflected:
            a, b = b, a
        out = getattr(a, name)(b).wrapped()
        if _trace_hooks and out.__class__ is SymInt:  # make_fx records size arithmetic
            _trace_hooks[-1](getattr(operator, name),
                             (other, self) if reflected else (self, other), out)
        return out
    op.__name__ = f"__{'r' if reflected else ''}{name}__"
    return op


class SymInt:
    """An int whose value is ``node.expr``; see the module docstring."""

    __slots__ = ("node",)

    def __init__(self, node):
        self.node = node

    __add__, __radd__ = _binary("add"), _binary("add", True)
    __sub__, __rsub__ = _binary("sub"), _binary("sub", True)
    __mul__, __rmul__ = _binary("mul"), _binary("mul", True)
    __floordiv__, __rfloordiv__ = _binary("floordiv"), _binary("floordiv", True)
    __mod__, __rmod__ = _binary("mod"), _binary("mod", True)
    __eq__, __ne__ = _binary("eq"), _binary("ne")
    __lt__, __le__ = _binary("lt"), _binary("le")
    __gt__, __ge__ = _binary("gt"), _binary("ge")

    def __pow__(self, other):
        if isinstance(other, int) and other >= 0:
            return self.node.pow(self.node.wrap(other)).wrapped()
        return int(self) ** other

    def __truediv__(self, other):  # a float result: specialised (no SymFloat in ember)
        return int(self) / other

    def __rtruediv__(self, other):
        return other / int(self)

    def __neg__(self):
        out = self.node.neg().wrapped()
        if _trace_hooks and out.__class__ is SymInt:
            _trace_hooks[-1](operator.neg, (self,), out)
        return out

    def __pos__(self):
        return self

    def __abs__(self):
        return self if self.node.is_nonnegative() else self.node.neg().wrapped()

    def __int__(self):
        return self.node.guard_int()

    __index__ = __int__

    def __float__(self):
        return float(self.node.guard_int())

    def __bool__(self):
        return bool(self != 0)

    def __round__(self, ndigits=None):
        return self

    def __trunc__(self):
        return self

    def __hash__(self):
        raise TypeError("unhashable type: non-nested SymInt")

    def __repr__(self):
        return str(self.node)

    __str__ = __repr__

    def __sym_max__(self, other):
        return self.node.max(_node(other, self.node)).wrapped()

    def __sym_min__(self, other):
        return self.node.min(_node(other, self.node)).wrapped()


class SymBool:
    """A bool whose value is ``node.expr`` (a sympy relation)."""

    __slots__ = ("node",)

    def __init__(self, node):
        self.node = node

    def __bool__(self):
        return self.node.guard_bool()

    def __and__(self, other):
        return self.node.and_(_node(other, self.node)).wrapped()

    __rand__ = __and__

    def __or__(self, other):
        return self.node.or_(_node(other, self.node)).wrapped()

    __ror__ = __or__

    def __invert__(self):
        return self.node.not_().wrapped()

    def __hash__(self):
        raise TypeError("unhashable type: SymBool")

    def __repr__(self):
        return str(self.node)

    __str__ = __repr__


class SymFloat:
    """PyTorch's symbolic float. ember's shape arithmetic makes none (a SymInt's true division
    specialises to a float, see ``SymInt.__truediv__``), so no instance exists; the type is
    here for PyTorch programs' checks, such as kornia's
    ``isinstance(x, (int, float, torch.SymInt, torch.SymFloat))``."""

    __slots__ = ()


def is_symbolic(x):
    return isinstance(x, (SymInt, SymBool))


def prod(xs, start=1):
    """``math.prod`` that keeps SymInts symbolic."""
    out = start
    for x in xs:
        out = out * x
    return out


def sym_max(a, b):
    """``max(a, b)`` without a guard when either is symbolic (``ember.sym_max``)."""
    if isinstance(a, SymInt):
        return a.__sym_max__(b)
    if isinstance(b, SymInt):
        return b.__sym_max__(a)
    return max(a, b)


def sym_min(a, b):
    if isinstance(a, SymInt):
        return a.__sym_min__(b)
    if isinstance(b, SymInt):
        return b.__sym_min__(a)
    return min(a, b)


def hint_int(x):
    """The concrete value of an int or SymInt for the example inputs, without a guard
    (for heuristics such as a kernel's block size, never for results)."""
    return x.node.hint if isinstance(x, SymInt) else x


# a SymInt is an integer to code that asks numbers.Integral (a Scalar argument of an op)
import numbers as _numbers  # noqa: E402
_numbers.Integral.register(SymInt)
