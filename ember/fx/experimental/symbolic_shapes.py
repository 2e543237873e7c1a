"""``ShapeEnv``: the symbols behind symbolic sizes, their value ranges, and the guards taken.

A tensor made symbolic gets one sympy symbol per dynamic dimension (``s0``, ``s1``, ... in
creation order, positive integers). Two rules from PyTorch decide which dims get one:

* **0/1 specialisation** — sizes 0 and 1 are never symbolic (broadcasting and emptiness depend
  on them), so every symbol's range starts at 2;
* **duck sizing** — dimensions with the same size share one symbol (``x: [s0, s1]``,
  ``y: [s0]`` when ``x.size(0) == y.size(0)``), and a guard checks they stay equal.

When a program needs a concrete answer (``bool(s0 > 4)``, ``int(s0)``), :meth:`evaluate_expr`
first tries to decide it from the ranges alone (``s0 >= 2`` always holds: no guard); otherwise
it records the answer for the example inputs as a guard and returns it. A guard relating one
symbol to a constant narrows that symbol's range instead of being kept on its own.
:meth:`produce_guards` turns ranges, duck-sizing equalities and the recorded guards into
Python expressions over the inputs' sizes, which Dynamo compiles into its guard function.
"""
import enum
import functools
import operator
import traceback
import warnings

import sympy
from sympy.printing.str import StrPrinter

from ..._core.symint import SymBool, SymInt, hint_int, is_symbolic
from .sym_node import SymNode

__all__ = ["ShapeEnv", "ConstraintViolationError", "SymInt", "SymBool", "DimDynamic",
           "StatelessSymbolicContext", "ShapeGuard", "guard_int", "guard_bool", "has_free_symbols", "is_symbolic",
           "hint_int", "free_symbols", "GuardOnDataDependentSymNode", "guard_or_false",
           "guard_or_true", "statically_known_true", "statically_known_false", "sym_and", "sym_or",
           "sym_eq", "guard_scalar", "is_concrete_int", "is_concrete_bool", "expect_true",
           "free_unbacked_symbols", "has_free_unbacked_symbols", "guard_size_oblivious"]


class ConstraintViolationError(RuntimeError):
    """A size that a ``mark_dynamic`` range excludes (PyTorch's class of the same name)."""


class DimDynamic(enum.Enum):
    DYNAMIC = 0
    DUCK = 1
    STATIC = 2


class StatelessSymbolicContext:
    """Which dimensions of a tensor become symbolic (PyTorch's class of the same name);
    ``dynamic_sizes`` holds one ``DimDynamic`` per dimension."""

    def __init__(self, dynamic_sizes, constraint_sizes=None):
        self.dynamic_sizes = list(dynamic_sizes)
        self.constraint_sizes = constraint_sizes


class ShapeGuard:
    __slots__ = ("expr", "stack")

    def __init__(self, expr, stack):
        self.expr, self.stack = expr, stack

    def __repr__(self):
        return f"ShapeGuard({self.expr})"


def guard_int(x):
    return int(x)


def guard_bool(x):
    return bool(x)


class GuardOnDataDependentSymNode(RuntimeError):
    """A guard on a size known only at run time (an unbacked symbol, PyTorch's class of the
    same name). Every ember symbol is backed (it has its example input's value), so ember
    raises none; programs catch it, and the ``guard_or_*`` functions below are defined by it."""


# Every symbol has a hint, so guarding never meets a data-dependent size: guard_or_false and
# guard_or_true guard like bool() (PyTorch's fall back to their default only where it would).
def guard_or_false(a):
    """``a`` as a bool, guarding on it (False where PyTorch could not decide)."""
    return bool(a)


def guard_or_true(a):
    """``a`` as a bool, guarding on it (True where PyTorch could not decide)."""
    return bool(a)


def guard_size_oblivious(expr):
    """Deprecated by PyTorch: a guard that treats sizes 0 and 1 like any other; ember's
    symbols are backed, so it is an ordinary guard."""
    warnings.warn("guard_size_oblivious will be removed. Consider using explicit unbacked "
                  "handling potentially utilizing guard_or_false, guard_or_true, or "
                  "statically_known_true", FutureWarning, stacklevel=2)
    return bool(expr)


def _static_value(x):
    """True/False when ``x`` (a bool or SymBool) is decided without a guard, else None."""
    if isinstance(x, bool):
        return x
    if not isinstance(x, SymBool):
        raise AssertionError(f"Expected bool, got {type(x)}")
    return x.node.shape_env.statically_known(x.node.expr)


def statically_known_true(x):
    """True when ``x`` holds for every size the ranges allow (no guard is added)."""
    return _static_value(x) is True


def statically_known_false(x):
    """True when ``x`` fails for every size the ranges allow (no guard is added)."""
    return _static_value(x) is False


def expect_true(a, skip=0):
    """PyTorch asserts ``a`` at run time when it cannot decide it; with backed symbols that
    is a guard."""
    return bool(a)


def sym_and(x, *others):
    """``x and others...`` without turning symbolic values into bools."""
    for y in others:
        x = operator.and_(x, y)
    return x


def sym_or(x, *others):
    """``x or others...`` without turning symbolic values into bools."""
    for y in others:
        x = operator.or_(x, y)
    return x


def sym_eq(x, y):
    """``==``, elementwise over lists and tuples and joined with :func:`sym_and`, without
    guarding."""
    if isinstance(x, (tuple, list)) and isinstance(y, (list, tuple)):
        if len(x) != len(y):
            return False
        return functools.reduce(operator.and_, map(sym_eq, x, y), True)
    if isinstance(x, (int, SymInt)) and isinstance(y, (int, SymInt)):
        return x == y
    raise AssertionError(f"unexpected sym_eq between {type(x)} {type(y)}")


def guard_scalar(a):
    """A bool, int or float (symbolic or not) as its Python value, guarding on it."""
    if isinstance(a, (SymBool, bool)):
        return bool(a)
    if isinstance(a, (SymInt, int)):
        return int(a)
    if isinstance(a, float):
        return a
    raise AssertionError(f"unrecognized scalar {a}")


def is_concrete_int(a):
    """``a`` is an int, or a SymInt whose expression is a number."""
    if not isinstance(a, (SymInt, int)):
        raise AssertionError(f"Expected SymInt or int, got {type(a)}")
    return isinstance(a, int) or isinstance(a.node.expr, sympy.Integer)


def is_concrete_bool(a):
    """``a`` is a bool, or a SymBool whose expression is true or false."""
    if not isinstance(a, (SymBool, bool)):
        raise AssertionError(f"Expected SymBool or bool, got {type(a)}")
    return isinstance(a, bool) or a.node.expr in (sympy.true, sympy.false)


def free_unbacked_symbols(x):
    """The unbacked symbols of ``x``: none, as ember makes no unbacked symbols."""
    return set()


def has_free_unbacked_symbols(x):
    return False


def has_free_symbols(x):
    return isinstance(x, (SymInt, SymBool)) and bool(x.node.expr.free_symbols)


def free_symbols(x):
    return x.node.expr.free_symbols if is_symbolic(x) else set()


class _PythonPrinter(StrPrinter):
    """sympy to Python source with each symbol replaced by how to read it."""

    def __init__(self, names):
        super().__init__()
        self.names = names

    def _print_Symbol(self, s):
        return self.names.get(s, s.name)

    def _print_floor(self, e):
        num, den = sympy.fraction(sympy.together(e.args[0]))
        if den == 1:
            return self._print(num)
        return f"(({self._print(num)}) // ({self._print(den)}))"

    def _print_Mod(self, e):
        return f"(({self._print(e.args[0])}) % ({self._print(e.args[1])}))"

    def _print_Relational(self, e):
        op = {"==": "==", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}[e.rel_op]
        return f"{self._print(e.lhs)} {op} {self._print(e.rhs)}"

    def _print_Not(self, e):
        return f"not ({self._print(e.args[0])})"

    def _print_And(self, e):
        return " and ".join(f"({self._print(a)})" for a in e.args)

    def _print_Or(self, e):
        return " or ".join(f"({self._print(a)})" for a in e.args)

    def _print_Max(self, e):
        return f"max({', '.join(self._print(a) for a in e.args)})"

    def _print_Min(self, e):
        return f"min({', '.join(self._print(a) for a in e.args)})"


class ShapeEnv:
    """See the module docstring."""

    def __init__(self, *, duck_shape=True, specialize_zero_one=True):
        self.duck_shape = duck_shape
        self.specialize_zero_one = specialize_zero_one
        self.var_to_val = {}      # symbol -> its value for the example inputs
        self.var_to_range = {}    # symbol -> [lower, upper] (upper may be sympy.oo)
        self.var_to_sources = {}  # symbol -> sources of the sizes it stands for
        self.val_to_var = {}      # duck sizing: size -> the symbol that has it
        self.guards = []          # ShapeGuard: relations kept as they were taken
        self._decided = {}        # expression -> answer (each guard is taken once)

    # -- creating symbols ---------------------------------------------------------------------
    def create_symbol(self, val, source, dynamic_dim=DimDynamic.DUCK, constraint=None):
        """The sympy expression for a size ``val`` read from ``source``: an Integer for 0/1
        and static dims, else a (possibly shared) symbol. ``constraint``: the (min, max) a
        ``mark_dynamic`` gave (either None: unbounded on that side), narrowing the range."""
        if dynamic_dim is DimDynamic.STATIC or \
                (self.specialize_zero_one and val in (0, 1)):
            return sympy.Integer(val)
        if self.duck_shape and dynamic_dim is DimDynamic.DUCK and val in self.val_to_var:
            sym = self.val_to_var[val]
            self.var_to_sources[sym].append(source)
            return sym
        sym = sympy.Symbol(self._symbol_name(source), positive=True, integer=True)
        self.var_to_val[sym] = val
        lo, hi = 2 if self.specialize_zero_one else 0, sympy.oo
        if constraint is not None:
            cmin, cmax = constraint
            lo = lo if cmin is None else max(lo, cmin)
            hi = hi if cmax is None else cmax
            if not lo <= val <= hi:
                raise ConstraintViolationError(
                    f"{val} not in range [{lo}, {'int_oo' if hi == sympy.oo else hi}]")
        self.var_to_range[sym] = [lo, hi]
        self.var_to_sources[sym] = [source]
        if dynamic_dim is DimDynamic.DUCK:
            self.val_to_var[val] = sym
        return sym

    def _symbol_name(self, source):
        """The next symbol's name: ``s<N>`` in creation order."""
        return f"s{len(self.var_to_val)}"

    def create_symint(self, expr, hint):
        return SymNode(sympy.sympify(expr), self, int, hint).wrapped()

    def create_symbolic_sizes_strides(self, t, source, dynamic_sizes, constraint_sizes=None):
        """Sizes (SymInts where dynamic) and strides for a tensor like ``t`` read from
        ``source``. Strides follow the tensor's layout: walking the dims from the smallest
        stride up, a stride equal to the product of the sizes before it (a dense layout:
        contiguous, transposed, channels-last) is that symbolic product; any other stays the
        concrete number."""
        from ..._dynamo.source import TensorProperty, TensorPropertySource
        constraint_sizes = constraint_sizes or [None] * len(dynamic_sizes)
        exprs = [self.create_symbol(v, TensorPropertySource(source, TensorProperty.SIZE, i), d,
                                    c)
                 for i, (v, d, c) in enumerate(zip(t._size, dynamic_sizes, constraint_sizes))]
        sizes = tuple(self.create_symint(e, v) for e, v in zip(exprs, t._size))
        strides = list(t._stride)
        acc, acc_hint = sympy.Integer(1), 1
        order = sorted(range(len(sizes)), key=lambda i: (t._stride[i], -i))
        for i in order:
            if t._stride[i] == acc_hint:
                strides[i] = self.create_symint(acc, acc_hint)
            acc_hint *= max(t._size[i], 1)
            acc = acc * (exprs[i] if t._size[i] > 0 else 1)
        return sizes, tuple(strides)

    # -- deciding -------------------------------------------------------------------------------
    def _fixed(self, expr):
        """``expr`` with the symbols whose range is one value replaced by it."""
        subs = {s: sympy.Integer(r[0]) for s, r in self.var_to_range.items() if r[0] == r[1]}
        return expr.xreplace(subs) if subs else expr

    def _interval(self, e):
        """(lower, upper) bounds of ``e`` by interval arithmetic over the ranges, or None
        for a form it does not know; cheap, so tried before :meth:`_bounds_diff`."""
        if e.is_Rational:
            return e, e
        if e.is_Symbol:
            r = self.var_to_range.get(e)
            return (r[0], r[1]) if r is not None else None
        if isinstance(e, (sympy.Add, sympy.Mul)):
            parts = [self._interval(a) for a in e.args]
            if any(p is None for p in parts):
                return None
            lo, hi = parts[0]
            for a, b in parts[1:]:
                if isinstance(e, sympy.Add):
                    lo, hi = lo + a, hi + b
                else:
                    prods = [x * y for x in (lo, hi) for y in (a, b)
                             if not ((x == 0 and abs(y) == sympy.oo) or
                                     (y == 0 and abs(x) == sympy.oo))]
                    if len(prods) < 4:
                        return None
                    lo, hi = min(prods), max(prods)
            return lo, hi
        if isinstance(e, sympy.Mod) and e.args[1].is_Integer and e.args[1] > 0:
            return 0, int(e.args[1]) - 1
        if isinstance(e, sympy.floor):
            inner = self._interval(e.args[0])
            return None if inner is None else (sympy.floor(inner[0]), sympy.floor(inner[1]))
        return None

    def _bounds_diff(self, diff):
        """(proved >= 0?, proved > 0?, proved <= 0?, proved < 0?) for an integer expression,
        from the ranges: interval arithmetic first; else each symbol is written as lower + u
        and as upper - u (u >= 0) and sympy decides the sign of the expanded result."""
        iv = self._interval(diff)
        if iv is not None:
            lo, hi = iv
            res = [lo >= 0, lo > 0, hi <= 0, hi < 0]
            if any(res):
                return res
        syms = diff.free_symbols
        lo = {s: self.var_to_range[s][0] + sympy.Dummy(nonnegative=True, integer=True)
              for s in syms if s in self.var_to_range}
        d_lo = sympy.expand(diff.xreplace(lo))
        pos_nonneg, pos_pos = d_lo.is_nonnegative, d_lo.is_positive
        neg = sympy.expand(-d_lo)
        res = [pos_nonneg, pos_pos, None, None]
        if all(self.var_to_range[s][1] != sympy.oo for s in syms if s in self.var_to_range):
            hi = {s: self.var_to_range[s][1] - sympy.Dummy(nonnegative=True, integer=True)
                  for s in syms if s in self.var_to_range}
            d_hi = sympy.expand(diff.xreplace(hi))
            res[2], res[3] = (-d_hi).is_nonnegative, (-d_hi).is_positive
        if not (res[2] or res[3]) and (neg.is_nonnegative or neg.is_positive):
            # e.g. -s0 - 1, or 48*s1 - 48*s0*s1 (bounded or not: from the lower bounds)
            res[2], res[3] = neg.is_nonnegative, neg.is_positive
        return res

    def statically_known(self, expr):
        """True/False when the ranges decide the relation ``expr``, else None."""
        expr = self._fixed(expr)
        if expr is sympy.true or expr is sympy.false:
            return bool(expr)
        if expr in self._decided:
            return self._decided[expr]
        if isinstance(expr, sympy.Not):
            r = self.statically_known(expr.args[0])
            return None if r is None else not r
        if isinstance(expr, (sympy.And, sympy.Or)):
            rs = [self.statically_known(a) for a in expr.args]
            if isinstance(expr, sympy.And):
                return False if False in rs else (True if all(r is True for r in rs) else None)
            return True if True in rs else (False if all(r is False for r in rs) else None)
        if not isinstance(expr, sympy.core.relational.Relational):
            return None
        ge0, gt0, le0, lt0 = self._bounds_diff(expr.lhs - expr.rhs)
        op = expr.rel_op
        if op == ">":
            return True if gt0 else (False if le0 else None)
        if op == ">=":
            return True if ge0 else (False if lt0 else None)
        if op == "<":
            return True if lt0 else (False if ge0 else None)
        if op == "<=":
            return True if le0 else (False if gt0 else None)
        if op in ("==", "!="):
            if gt0 or lt0:
                return op == "!="
            if ge0 and le0:
                return op == "=="
        return None

    def evaluate_expr(self, expr, hint):
        """The value of ``expr`` for the example inputs; a guard keeps it so unless the
        ranges already decide it."""
        expr = self._fixed(expr)
        is_bool = isinstance(hint, bool)  # (a sympy Symbol is a Boolean too)
        if expr is sympy.true or expr is sympy.false:
            return bool(expr)
        if expr.is_number:
            return int(expr)
        if is_bool:
            known = self.statically_known(expr)
            if known is not None:
                return known
            self._add_guard(expr if hint else sympy.Not(expr), bool(hint))
            self._decided[expr] = bool(hint)
            return bool(hint)
        # an int the program needs as a Python int: specialise it
        self._add_guard(sympy.Eq(expr, hint), True)
        return hint

    def _add_guard(self, rel, value):
        """Record a guard; one symbol against a constant narrows its range instead."""
        if isinstance(rel, sympy.Not) and isinstance(rel.args[0], sympy.core.relational.Relational):
            rel = rel.args[0].negated
        if isinstance(rel, sympy.core.relational.Relational) and len(rel.free_symbols) == 1 \
                and rel.rel_op != "!=" and self._narrow(rel):
            return
        self.guards.append(ShapeGuard(rel, traceback.extract_stack()[:-3]))

    def _narrow(self, rel):
        """Fold a linear relation of one symbol (``3*s0 + 1 > 7``) into its range; False for
        anything else (``Mod``, ``floor``), which is kept as a guard instead."""
        sym = next(iter(rel.free_symbols))
        diff = sympy.expand(rel.lhs - rel.rhs)
        if not diff.is_polynomial(sym):
            return False
        poly = sympy.Poly(diff, sym)
        if poly.degree() != 1 or not all(c.is_number for c in poly.all_coeffs()):
            return False
        a, b = poly.all_coeffs()
        bound = -b / a  # the relation is  sym <op> bound  (op flipped when a < 0)
        op = rel.rel_op
        if a < 0:
            op = {">": "<", ">=": "<=", "<": ">", "<=": ">="}.get(op, op)
        r = self.var_to_range[sym]
        if op == "==":
            if not bound.is_Integer:
                return False
            r[0] = r[1] = int(bound)
        elif op in (">", ">="):
            lo = sympy.floor(bound) + 1 if op == ">" else sympy.ceiling(bound)
            r[0] = max(r[0], int(lo))
        else:
            hi = sympy.ceiling(bound) - 1 if op == "<" else sympy.floor(bound)
            r[1] = int(hi) if r[1] == sympy.oo else min(r[1], int(hi))
        return True

    # -- guards as code -------------------------------------------------------------------------
    def produce_guards(self, *, readable=False):
        """Python expressions (over each source's ``expr()``, or ``name()`` when
        ``readable``) that hold for the inputs this trace is valid for."""
        def show(src):
            return src.name() if readable else src.expr()
        names = {s: show(srcs[0]) for s, srcs in self.var_to_sources.items()}
        printer = _PythonPrinter(names)
        out = []
        for s, srcs in self.var_to_sources.items():
            for other in srcs[1:]:
                out.append(f"{show(other)} == {names[s]}")
        for s, (lo, hi) in self.var_to_range.items():
            if lo == hi:
                out.append(f"{names[s]} == {lo}")
                continue
            out.append(f"{lo} <= {names[s]}" if hi == sympy.oo else
                       f"{lo} <= {names[s]} <= {hi}")
        for g in self.guards:
            e = self._fixed(g.expr)
            if e is not sympy.true:  # decided by a later specialisation
                out.append(printer.doprint(e))
        return out

    def python_expr(self, expr, *, readable=False):
        """``expr`` as Python source reading each symbol from its first source (spelled
        with source names when ``readable``)."""
        return _PythonPrinter({s: srcs[0].name() if readable else srcs[0].expr()
                               for s, srcs in self.var_to_sources.items()}).doprint(
            self._fixed(expr))

    def format_guards(self, verbose=False):
        return "\n".join(f" - {g}" for g in self.produce_guards(readable=True))

    def bound(self, sym):
        return tuple(self.var_to_range[sym])

    def size_hint(self, expr):
        return expr.xreplace(self.var_to_val)
