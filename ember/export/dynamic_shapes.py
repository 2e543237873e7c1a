"""``dynamic_shapes`` for :func:`ember.export.export`: which input dimensions are symbolic.

A spec names, per input, the dims that may vary: ``Dim("batch", min=2, max=1024)`` (a named
dimension: one symbol wherever the same object appears, its range checked against what the
program needs) or a hint ``Dim.AUTO`` / ``Dim.DYNAMIC`` / ``Dim.STATIC`` (PyTorch's sentinels),
an int or ``None`` for a static dim. This module turns the spec into the symbolic
FakeTensors export traces on, and after the trace into PyTorch's ``range_constraints`` or its
``Constraints violated`` error when the program contradicts a named dim.
"""
import dataclasses
import inspect
from enum import Enum, auto

import sympy

from .._dynamo.exc import UserError, UserErrorType
from ..fx.experimental.symbolic_shapes import DimDynamic, ShapeEnv

__all__ = ["AdditionalInputs", "Dim", "dims", "ShapesCollection"]


class _DimHintType(Enum):
    AUTO = auto()
    STATIC = auto()
    DYNAMIC = auto()


@dataclasses.dataclass
class _DimHint:
    """``Dim.AUTO`` / ``Dim.DYNAMIC`` / ``Dim.STATIC``; calling one (``Dim.AUTO(max=64)``)
    gives a bounded hint."""
    type: _DimHintType
    min: int = None
    max: int = None
    _factory: bool = True

    def __call__(self, min=None, max=None):
        if not self._factory:
            raise TypeError(f"'{type(self)}' object is not callable")
        if min is not None and min < 0:
            raise AssertionError(f"min must be non-negative, got {min}")
        if max is not None and max < 0:
            raise AssertionError(f"max must be non-negative, got {max}")
        if min is not None and max is not None and min > max:
            raise AssertionError(f"min must be <= max, got min={min}, max={max}")
        return _DimHint(self.type, min=min, max=max, _factory=False)

    def __repr__(self):
        parts = [self.type.name]
        if self.min is not None:
            parts.append(f"min={self.min}")
        if self.max is not None:
            parts.append(f"max={self.max}")
        return f"DimHint({', '.join(parts)})"


class Dim:
    """A named dynamic dimension with the range ``[min, max]`` (default ``[0, int_oo]``)."""

    AUTO = _DimHint(_DimHintType.AUTO)
    DYNAMIC = _DimHint(_DimHintType.DYNAMIC)
    STATIC = _DimHint(_DimHintType.STATIC)

    def __init__(self, name, *, min=None, max=None):
        _min = 0 if min is None else min
        _max = sympy.oo if max is None else max
        if not _max > _min:
            raise AssertionError(f"Cannot create Dim with inconsistent min={min}, max={max}")
        if not name.isidentifier():
            raise AssertionError(f"Dim name must be a valid identifier, got {name}")
        self.__name__ = name
        self.min = _min
        self.max = _max

    @staticmethod
    def _readable(name, min_, max_):
        min_ = None if min_ == 2 else min_
        max_ = None if max_ == sympy.oo else max_
        if min_ is None and max_ is None:
            return f"Dim('{name}')"
        if min_ is None:
            return f"Dim('{name}', max={max_})"
        if max_ is None:
            return f"Dim('{name}', min={min_})"
        return f"Dim('{name}', min={min_}, max={max_})"

    def __repr__(self):
        return Dim._readable(self.__name__, self.min, self.max)

    # derived dims: increasing linear functions of a Dim (``2 * d``, ``d + 1``)
    def __add__(self, other):
        if type(other) is not int:
            raise NotImplementedError(
                f"Attempted to add {other} to {self.__name__}, where an integer was expected. "
                "(Only increasing linear operations with integer coefficients are supported.)")
        return self._derive(lambda x: x + other)

    def __radd__(self, other):
        return self + other

    def __sub__(self, other):
        if type(other) is not int:
            raise NotImplementedError(
                f"Attempted to subtract {other} from {self.__name__}, where an integer was "
                "expected. (Only increasing linear operations with integer coefficients are "
                "supported.)")
        return self._derive(lambda x: x - other)

    def __rsub__(self, other):
        raise NotImplementedError(
            f"Attempted to negate {self.__name__}. "
            "(Only increasing linear operations with integer coefficients are supported.)")

    def __mul__(self, other):
        if type(other) is not int or other <= 0:
            raise NotImplementedError(
                f"Attempted to multiply {other} with {self.__name__}, where a positive integer "
                "was expected. (Only increasing linear operations with integer coefficients "
                "are supported.)")
        return self._derive(lambda x: x * other)

    def __rmul__(self, other):
        return self * other

    def _derived_name(self, fn):
        return str(fn(sympy.sympify(self.__name__)))

    def _derive(self, fn):
        return _DerivedDim(self._derived_name(fn), self, fn)


class _DerivedDim(Dim):
    """``fn(root)`` for an increasing linear ``fn`` with integer coefficients: its size is
    that expression of the root's symbol, its range the root's mapped through ``fn``."""

    def __init__(self, name, root, fn):
        self.__name__ = name
        self.root = root
        self.fn = fn

    @property
    def min(self):
        lo = self.fn(sympy.Integer(self.root.min))
        if lo < 0:
            raise AssertionError(
                f"Expected derived min value of {self.__name__} to be >= 0. Please specify an "
                f"appropriate min value for {self.root.__name__} (currently {self.root.min}).")
        return int(lo)

    @property
    def max(self):
        return sympy.oo if self.root.max == sympy.oo else int(self.fn(sympy.Integer(
            self.root.max)))

    def _derive(self, fn):
        return _DerivedDim(self._derived_name(fn), self.root, lambda x: fn(self.fn(x)))

    def __repr__(self):
        return self.__name__


def dims(*names, min=None, max=None):
    """One :class:`Dim` per name, all with the same range."""
    return tuple(Dim(name, min=min, max=max) for name in names)


# ---------------------------------------------------------------------------------------------
# builders of a spec

def _combine_args(f, args, kwargs):
    """``{argument name: value}`` as ``f``'s forward binds ``(args, kwargs)``."""
    from . import ExportedProgram
    if isinstance(f, ExportedProgram):
        f = f.module()
    kwargs = kwargs if kwargs is not None else {}
    return inspect.signature(getattr(f, "forward", f)).bind(*args, **kwargs).arguments


def _tree_map_with_path(func, tree):
    """``tree_map_with_path`` over the standard containers; an instance of another
    registered pytree class (a dataclass) maps to the list of its children, as
    ``dynamic_shapes`` specs such an input."""
    from ..utils import _pytree as pytree

    def is_leaf(t):
        return pytree._get_node_type(t) not in pytree.BUILTIN_TYPES

    def f(path, t):
        typ = pytree._get_node_type(t)
        if typ in pytree.SUPPORTED_NODES:
            return pytree.tree_map_with_path(f, pytree.SUPPORTED_NODES[typ].flatten_fn(t)[0],
                                             is_leaf=is_leaf)
        return func(path, t)
    return pytree.tree_map_with_path(f, tree, is_leaf=is_leaf)


class ShapesCollection:
    """Builder for ``dynamic_shapes``: shapes assigned to the input tensors themselves
    (``shapes[x] = (batch, None)``, ``shapes[y] = {0: batch}``), wherever they sit in the
    inputs; :meth:`dynamic_shapes` puts each where its tensor is."""

    def __init__(self):
        self._shapes = {}

    def __setitem__(self, t, shape):
        from .._tensor import Tensor
        if not isinstance(t, Tensor):
            raise AssertionError(
                f"Cannot assign shape to non-tensor or non-_IntWrapper type {type(t)}")
        t_id = id(t)
        if t_id in self._shapes:
            _shape = self._shapes[t_id]
            if shape != _shape:
                raise AssertionError(
                    f"Shapes assigned to input do not match: expected {_shape}, got {shape}")
        else:
            self._shapes[t_id] = shape

    def __getitem__(self, t):
        return self._shapes.setdefault(id(t), {})

    def __len__(self):
        return len(self._shapes)

    def dynamic_shapes(self, m, args, kwargs=None):
        """The ``dynamic_shapes`` of ``m``'s inputs ``(args, kwargs)``: by argument name, each
        tensor's assigned shape (None for the rest)."""
        from .._tensor import Tensor
        t_ids = set()

        def find_shape(path, t):
            if isinstance(t, Tensor) and id(t) in self._shapes:
                t_ids.add(id(t))
                return self._shapes[id(t)]
            return None
        dynamic_shapes = _tree_map_with_path(find_shape, _combine_args(m, args, kwargs))
        if any(t_id not in t_ids for t_id in self._shapes):
            raise ValueError(
                "Some tensors that were assigned shapes were not found in args. Maybe such "
                "tensors were copied when passing them as args? Maybe such tensors are "
                "contained in classes that were not registered with pytree?")
        return dynamic_shapes


class AdditionalInputs:
    """``dynamic_shapes`` inferred from more example inputs: a size that differs between
    the examples is ``Dim.DYNAMIC``, one that does not is static; export then checks that
    the program runs on each example."""

    def __init__(self):
        self._examples = []

    def add(self, args, kwargs=None):
        """Additional input ``args`` (a tuple) and ``kwargs`` (None or a dict)."""
        if type(args) is not tuple:
            raise AssertionError(f"Representative args {args} must be a tuple")
        if kwargs is not None and type(kwargs) is not dict:
            raise AssertionError(f"Representative kwargs {kwargs} must be None or a dict")
        self._examples.append((args, kwargs))

    def dynamic_shapes(self, m, args, kwargs=None):
        """The ``dynamic_shapes`` merging the sizes of ``(args, kwargs)`` and of each
        additional input."""
        from .._tensor import Tensor
        from ..utils import _pytree as pytree
        dynamic_shapes, *other_dynamic_shapes = [
            _tree_map_with_path(lambda path, t: tuple(t.shape) if isinstance(t, Tensor) else t,
                                _combine_args(m, a, k))
            for a, k in [(args, kwargs), *self._examples]]

        def _mark_dynamism(v, *other_vs):
            if not all(type(v) is type(other) for other in other_vs):
                raise ValueError("The following inputs were found to have differing types, "
                                 f"so they cannot be marked as dynamic: {(v,) + other_vs}.")
            if isinstance(v, int) and not isinstance(v, bool):
                return None if all(other_v == v for other_v in other_vs) else Dim.DYNAMIC
            if not all(other_v == v for other_v in other_vs):
                raise ValueError("The following inputs were found to have differing values, "
                                 f"but they cannot be marked as dynamic: {(v,) + other_vs}.")
            return None
        return pytree.tree_map(_mark_dynamism, dynamic_shapes, *other_dynamic_shapes,
                               is_leaf=lambda i: type(i) is int)

    def verify(self, ep):
        """Check that exported program ``ep`` takes each additional input: the same input
        structure (ValueError), sizes and constants it allows (RuntimeError)."""
        from . import InputKind
        from .unflatten import _check_input_constraints, _input_expectations
        placeholders = [n for n, s in zip(ep.graph.find_nodes(op="placeholder"),
                                          ep.graph_signature.input_specs)
                        if s.kind == InputKind.USER_INPUT]
        expected = _input_expectations(ep, placeholders)
        for args, kwargs in self._examples:
            _check_input_constraints(expected, ep._flat_user_inputs(args, kwargs or {}),
                                     ep.range_constraints)


# ---------------------------------------------------------------------------------------------
# the spec, per flat user input

def _per_dim(spec, t, where):
    """The spec of tensor ``t`` as one entry per dim (None: static)."""
    n = t.dim()
    if spec is None:
        return [None] * n
    if isinstance(spec, dict):
        out = [None] * n
        for d, v in spec.items():
            if not isinstance(d, int) or not -n <= d < n:
                raise UserError(UserErrorType.INVALID_INPUT,
                                f"Dimension {d} in dynamic_shapes for {where} is out of "
                                f"range for a tensor of {n} dims",
                                case_name="dynamic_shapes_validation")
            out[d % n] = v
        return out
    if isinstance(spec, (list, tuple)):
        if len(spec) != n:
            raise UserError(UserErrorType.INVALID_INPUT,
                            f"Expected dynamic shape spec {spec} specified at {where} to have "
                            f"the same length as the actual tensor shape {t.shape} (expected "
                            f"{n}, but got {len(spec)} instead)",
                            case_name="dynamic_shapes_validation")
        return list(spec)
    raise UserError(UserErrorType.INVALID_INPUT,
                    f"Unexpected dynamic_shape {spec} of Tensor at {where}, try None instead",
                    case_name="dynamic_shapes_validation")


def _leaf_specs(mod, args, kwargs, dynamic_shapes):
    """Per-dim specs for the leaves of ``(args, kwargs)`` in pytree order (None for
    non-tensor leaves), from a spec keyed by forward's argument names or in their order."""
    from .._tensor import Tensor
    from ..utils import _pytree as pytree
    try:
        bound = inspect.signature(mod.forward).bind(*args, **kwargs)
        combined = dict(bound.arguments)
    except (TypeError, ValueError):
        combined = {f"arg{i}": a for i, a in enumerate(args)}
        combined.update(kwargs)
    if isinstance(dynamic_shapes, dict):
        if set(dynamic_shapes) != set(combined):
            raise UserError(
                UserErrorType.INVALID_INPUT,
                f"When `dynamic_shapes` is specified as a dict, its top-level keys must be the "
                f"arg names {list(combined)} of `inputs`, but here they are "
                f"{list(dynamic_shapes)}. Alternatively, you could also ignore arg names "
                f"entirely and specify `dynamic_shapes` as a list/tuple matching `inputs`.",
                case_name="dynamic_shapes_validation")
        by_name = dict(dynamic_shapes)
    elif isinstance(dynamic_shapes, (list, tuple)):
        if len(dynamic_shapes) != len(combined):
            raise UserError(
                UserErrorType.INVALID_INPUT,
                f"Detected mismatch between the structure of `inputs` and `dynamic_shapes`: "
                f"`inputs` has {len(combined)} elements, but `dynamic_shapes` has "
                f"{len(dynamic_shapes)} elements",
                case_name="dynamic_shapes_validation")
        by_name = dict(zip(combined, dynamic_shapes))
    else:
        raise UserError(UserErrorType.INVALID_INPUT,
                        f"Unexpected dynamic_shapes type {type(dynamic_shapes)}: expected a "
                        f"dict, list or tuple")

    def walk(value, spec, where):
        if isinstance(value, Tensor):
            return [(_per_dim(spec, value, where), spec, where)]
        leaves, _ = pytree.tree_flatten(value)
        if spec is None:
            return [([None] * x.dim(), None, where) if isinstance(x, Tensor) else None
                    for x in leaves]
        if isinstance(value, (list, tuple)) and isinstance(spec, (list, tuple)) and \
                len(spec) == len(value):
            return [s for i, (v, sp) in enumerate(zip(value, spec))
                    for s in walk(v, sp, f"{where[:-1]}[{i}]`")]
        if isinstance(value, dict) and isinstance(spec, dict) and set(spec) == set(value):
            return [s for k in value
                    for s in walk(value[k], spec[k], f"{where[:-1]}[{k!r}]`")]
        node = pytree.SUPPORTED_NODES.get(pytree._get_node_type(value))
        if node is not None and pytree._get_node_type(value) not in pytree.BUILTIN_TYPES and \
                isinstance(spec, (list, tuple)):
            # a registered class (a dataclass): its spec lists its children's
            children = node.flatten_fn(value)[0]
            if len(children) == len(spec):
                return [s for i, (v, sp) in enumerate(zip(children, spec))
                        for s in walk(v, sp, f"{where[:-1]}[{i}]`")]
        if not leaves:
            return []
        raise UserError(UserErrorType.INVALID_INPUT,
                        f"dynamic_shapes at {where} does not match the input's structure",
                        case_name="dynamic_shapes_validation")
    per_name = {name: walk(value, by_name[name], f"`dynamic_shapes['{name}']`")
                for name, value in combined.items()}
    # back to the pytree order of (args, kwargs): positional arguments, then kwargs as given
    names = list(combined)
    out = []
    for name in names[:len(args)]:
        out += per_name[name]
    for name in kwargs:
        out += per_name[name]
    return out


# ---------------------------------------------------------------------------------------------
# symbolic inputs

class _ExportShapeEnv(ShapeEnv):
    """A ShapeEnv in which every size spec'd by the same ``Dim`` object is one symbol (PyTorch
    ties them by an equality constraint; here the later sources join the first one's symbol,
    and the runtime check compares them)."""

    def __init__(self, dim_of_source):
        super().__init__()
        self._dim_of_source = dim_of_source  # size source name -> the Dim spec'ing it
        self._dim_symbol = {}  # id(Dim) -> its symbol
        self._names = {}  # size source name -> its symbol's name
        self._root_source = {}  # id(Dim) -> the first size source it specs directly

    def _derived(self, dim, val, source):
        """``fn(root symbol)`` for a size spec'd by a derived Dim; the root's symbol is made
        here (from ``val`` solved for the root) when no input has reached it yet."""
        root = self._dim_symbol.get(id(dim.root))
        if root is None:
            src = self._root_source.get(id(dim.root))
            if src is None:
                raise UserError(UserErrorType.CONSTRAINT_VIOLATION,
                                f"Expected {dim.root.__name__}, the root of the derived dim "
                                f"{dim.__name__}, to spec an input dimension of its own")
            r = sympy.Symbol("r", integer=True)
            sol = sympy.solve(sympy.Eq(dim.fn(r), val), r)
            rval = int(sol[0]) if sol and sol[0].is_Integer else None
            if rval is None:
                raise UserError(UserErrorType.CONSTRAINT_VIOLATION,
                                f"Expected {source.name()} = {val} to be {dim.__name__} for "
                                f"an integer {dim.root.__name__}")
            root = self.create_symbol(rval, src, DimDynamic.DYNAMIC, (
                dim.root.min, None if dim.root.max == sympy.oo else dim.root.max))
        expr = dim.fn(root)
        if expr.xreplace(self.var_to_val) != val:
            raise UserError(UserErrorType.CONSTRAINT_VIOLATION,
                            f"Expected input {source.name()} to be equal to {expr}, where "
                            f"{root} = {self.var_to_val[root]}, but got {val}")
        return expr

    def _name_symbols(self, marked):
        """PyTorch's symbol names: ``s<sha256(source name) % 100>`` (the next free number on
        a clash), given in input order to every size that gets a symbol; the sizes of one Dim
        share the smallest of their numbers (PyTorch keeps that one when it equates them)."""
        import hashlib
        used, ids, by_dim = set(), {}, {}
        for spec, src, size in marked:
            if size in (0, 1) or isinstance(spec, _DerivedDim):  # no symbol of its own
                continue
            n = int(hashlib.sha256(src.encode()).hexdigest(), 16) % 100
            while n in used:
                n += 1
            used.add(n)
            ids[src] = n
            if isinstance(spec, Dim):
                by_dim[id(spec)] = min(by_dim.get(id(spec), n), n)
        for spec, src, _ in marked:
            if src in ids and not isinstance(spec, _DerivedDim):
                n = by_dim[id(spec)] if isinstance(spec, Dim) else ids[src]
                self._names[src] = f"s{n}"

    def _symbol_name(self, source):
        name = self._names.get(source.name())
        return name if name is not None else super()._symbol_name(source)

    def create_symbol(self, val, source, dynamic_dim=DimDynamic.DUCK, constraint=None):
        dim = self._dim_of_source.get(source.name()) if source is not None else None
        if isinstance(dim, _DerivedDim):
            return self._derived(dim, val, source)
        sym = self._dim_symbol.get(id(dim)) if dim is not None else None
        if sym is not None:
            first = self.var_to_sources[sym][0].name()
            if self.var_to_val[sym] != val:
                raise UserError(UserErrorType.CONSTRAINT_VIOLATION,
                                f"Constraints violated ({dim.__name__})! The sizes "
                                f"{source.name()} = {val} and {first} = "
                                f"{self.var_to_val[sym]} share {dim.__name__} but differ in "
                                f"the example inputs.")
            if all(s.name() != source.name() for s in self.var_to_sources[sym]):
                self.var_to_sources[sym].append(source)
            return sym
        expr = super().create_symbol(val, source, dynamic_dim, constraint)
        if dim is not None and expr.is_Symbol:
            self._dim_symbol[id(dim)] = expr
        return expr


def _fake_user_inputs(fake_mode, leaves, specs, names, symbol_names=None):
    """FakeTensors for the user inputs: each spec'd dim symbolic (its Dim's range as its
    constraint), the rest static; ``names`` gives each leaf's Source (or the name of a local);
    ``symbol_names`` (size source name -> symbol name) names the symbols instead of PyTorch's
    hashing. Returns the fakes and [(Dim or hint, source name, example size)] for each dynamic
    dim, which the checks after the trace read."""
    from .._dynamo.source import LocalSource, Source, TensorProperty, TensorPropertySource
    from .._tensor import Tensor
    from ..fx.experimental.symbolic_shapes import DimDynamic, StatelessSymbolicContext
    shape_env = fake_mode.shape_env
    fakes, marked, pending = [], [], []
    for leaf, entry, name in zip(leaves, specs, names):
        if not isinstance(leaf, Tensor):
            pending.append((leaf, None, None, None))
            continue
        spec, given, where = entry
        source = name if isinstance(name, Source) else LocalSource(name)
        dyn, ranges = [], []
        for i, (s, size) in enumerate(zip(spec, leaf.shape)):
            src = TensorPropertySource(source, TensorProperty.SIZE, i)
            if isinstance(s, Dim):
                shape_env._dim_of_source[src.name()] = s
                if not isinstance(s, _DerivedDim):
                    shape_env._root_source.setdefault(id(s), src)
                dyn.append(DimDynamic.DYNAMIC)
                ranges.append((s.min, None if s.max == sympy.oo else s.max))
                marked.append((s, src.name(), size))
            elif isinstance(s, _DimHint) and s.type is not _DimHintType.STATIC:
                dyn.append(DimDynamic.DYNAMIC)
                ranges.append((s.min, s.max))
                marked.append((s, src.name(), size))
            elif s is None or isinstance(s, int) or isinstance(s, _DimHint):
                if isinstance(s, int) and not isinstance(s, bool) and s != size:
                    raise UserError(UserErrorType.CONSTRAINT_VIOLATION,
                                    f"Expected input {src.name()} to be equal to {s}, but "
                                    f"got {size}")
                dyn.append(DimDynamic.STATIC)
                ranges.append(None)
            else:
                raise UserError(UserErrorType.INVALID_INPUT,
                                f"Unexpected dimension mapped to index {i} in input tensor "
                                f"shape {given} specified at {where} (expected None, an int, "
                                f"a Dim, Dim.AUTO, Dim.STATIC, or Dim.DYNAMIC,  but got {s!r} "
                                f"instead)", case_name="dynamic_shapes_validation")
        pending.append((leaf, source, dyn, ranges))
    if symbol_names is None:
        shape_env._name_symbols(marked)
    else:  # a loaded program: the symbols it was saved with
        shape_env._names.update(symbol_names)
    for leaf, source, dyn, ranges in pending:
        if source is None:
            fakes.append(leaf)
            continue
        fakes.append(fake_mode.from_tensor(
            leaf, source=source,
            symbolic_context=StatelessSymbolicContext(dyn, constraint_sizes=ranges)))
    return fakes, marked


# ---------------------------------------------------------------------------------------------
# after the trace: violations and range_constraints

def _symbol_of(shape_env, source_name):
    for sym, srcs in shape_env.var_to_sources.items():
        if any(s.name() == source_name for s in srcs):
            return sym
    return None


def _check_constraints(shape_env, marked):
    """PyTorch's ``Constraints violated`` error when the trace specialised a named Dim (or
    ``Dim.DYNAMIC``), narrowed a named Dim's range, or related two named Dims (a
    ``Dim.DYNAMIC`` size, like ``Dim.AUTO``, may follow the program's relations and ranges)."""
    from ..fx.experimental.symbolic_shapes import _PythonPrinter
    failing, msgs, fixes = [], [], []
    by_symbol = {}
    for spec, src, size in marked:
        strict = isinstance(spec, Dim) or spec.type is _DimHintType.DYNAMIC
        if not strict or isinstance(spec, _DerivedDim):  # checked through its root
            continue
        name = spec.__name__ if isinstance(spec, Dim) else src
        sym = _symbol_of(shape_env, src)
        lo, hi = shape_env.var_to_range[sym] if sym is not None else (size, size)
        if lo == hi:
            if name not in failing:
                failing.append(name)
                msgs.append(
                    f"You marked {name} as dynamic but your code specialized it to be a "
                    f"constant ({lo}). If you're using mark_dynamic, either remove it or use "
                    f"maybe_mark_dynamic. If you're using Dim.DYNAMIC, replace it with either "
                    f"Dim.STATIC or Dim.AUTO.")
                if isinstance(spec, Dim):
                    fixes.append(f"{name} = {lo}")
            continue
        if not isinstance(spec, Dim):  # a Dim.DYNAMIC size must only not be specialised
            continue
        by_symbol.setdefault(sym, (name, src, spec))
        want_lo = max(2, spec.min) if spec.min is not None else 2
        want_hi = sympy.oo if spec.max is None else spec.max
        if (lo > want_lo or hi < want_hi) and name not in failing:
            failing.append(name)
            guard = f"{lo} <= {src}" + ("" if hi == sympy.oo else f" and {src} <= {hi}")
            msgs.append(f"Not all values of {name} = {src} in the specified range satisfy "
                        f"the generated guard {guard}")
            fixes.append(f"{name} = {Dim._readable(name, lo, hi)}")
    names = {s: srcs[0].name() for s, srcs in shape_env.var_to_sources.items()}
    replacements, runtime = {}, []
    for g in shape_env.guards:
        e = shape_env._fixed(g.expr)
        if e is sympy.true:
            continue
        mine = [s for s in e.free_symbols if s in by_symbol]
        if len(mine) < len(e.free_symbols):
            # an AUTO or DYNAMIC size is free to follow the program: an equality with another size
            # makes them one symbol (PyTorch's replacement); any other guard is checked
            # when the program runs
            if isinstance(e, sympy.Eq) and e.lhs.is_Symbol and e.rhs.is_Symbol:
                a, b = (e.lhs, e.rhs) if e.lhs in by_symbol or (
                    e.rhs not in by_symbol and e.lhs.name < e.rhs.name) else (e.rhs, e.lhs)
                replacements[b] = a
            else:
                runtime.append(e)
            continue
        if isinstance(e, sympy.Eq) and e.lhs.is_Symbol and e.rhs.is_Symbol and \
                len(mine) == 2:
            (na, sa, _), (nb, sb, _) = sorted((by_symbol[e.lhs], by_symbol[e.rhs]),
                                              key=lambda t: t[1])
            later, earlier = (nb, sb), (na, sa)
            if later[0] not in failing:
                failing.append(later[0])
                msgs.append(f"The values of {later[0]} = {later[1]} and {earlier[0]} = "
                            f"{earlier[1]} must always be equal.")
                fixes.append(f"{later[0]} = {earlier[0]}")
            continue
        name, src, _ = by_symbol[mine[0]]
        if name not in failing:
            failing.append(name)
            msgs.append(f"Not all values of {name} = {src} in the specified range satisfy the "
                        f"generated guard {_PythonPrinter(names).doprint(e)}")
    if failing:
        text = (f"Constraints violated ({', '.join(failing)})! For more information, run with "
                f"TORCH_LOGS=\"+dynamic\".\n" + "".join(f"  - {m}\n" for m in msgs))
        if fixes:
            text += "Suggested fixes:\n" + "".join(f"  {f}\n" for f in fixes)
        raise UserError(UserErrorType.CONSTRAINT_VIOLATION, text.rstrip("\n"))
    return replacements, [e.xreplace(replacements) for e in runtime]


def _range_constraints(shape_env, marked, replacements):
    """{symbol: ValueRanges} as PyTorch reports them: a named Dim keeps its own lower bound
    (0 unless given: sizes 0 and 1 are specialised while tracing but allowed at run time);
    other symbols their range after the trace."""
    from ..utils._sympy.value_ranges import ValueRanges
    lower = {}
    for spec, src, _ in marked:
        sym = _symbol_of(shape_env, src)
        if sym is not None and isinstance(spec, Dim) and not isinstance(spec, _DerivedDim):
            lower.setdefault(sym, spec.min)

    def own(sym):
        lo, hi = shape_env.var_to_range[sym]
        return [min(lo, lower[sym]) if sym in lower else lo, hi]
    out = {}
    for spec, src, _ in marked:  # PyTorch's order: as the inputs name them
        if isinstance(spec, _DerivedDim):
            root = shape_env._dim_symbol.get(id(spec.root))
            if root is not None:  # the root's range as reported, mapped through fn
                lo, hi = own(root)
                out.setdefault(spec.fn(root), [int(spec.fn(sympy.Integer(lo))),
                                               hi if hi == sympy.oo else
                                               int(spec.fn(sympy.Integer(hi)))])
            continue
        sym = _symbol_of(shape_env, src)
        if sym is not None and sym not in replacements and sym not in out:
            out[sym] = own(sym)
    for sym in shape_env.var_to_range:
        if sym not in out and sym not in replacements:
            out[sym] = own(sym)
    for gone, kept in replacements.items():  # one symbol: the intersection of the ranges
        lo, hi = shape_env.var_to_range[gone]
        out[kept] = [max(out[kept][0], lo), min(out[kept][1], hi)]
    return {sym: ValueRanges(lo, hi) for sym, (lo, hi) in out.items()
            if lo != hi or not getattr(sym, "is_Symbol", False)}
