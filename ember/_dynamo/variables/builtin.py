"""Python builtins and operators during capture: folded on constants, recorded as graph calls on
tensors (``operator.add``), modelled on containers (``len``, ``zip``, ``enumerate``, ...), and a
graph break where the builtin has effects Dynamo does not model (``print``)."""
import builtins
import functools
import operator

from ..exc import SUPPORTABLE_HINT, ObservedException, format_graph_break_message
from .base import VariableTracker, unimplemented
from .constant import ConstantVariable

__all__ = ["BuiltinVariable", "binary_op", "compare_eq", "contains_tensor"]

_PURE = {abs, all, any, bool, callable, chr, divmod, float, format, hash, int, len, max, min,
         ord, pow, repr, round, sorted, str, sum, tuple, list, dict, isinstance, issubclass,
         range, slice, getattr, hasattr, type, enumerate, zip, reversed, iter, next, map,
         filter, set, frozenset}


def contains_tensor(args, kwargs=None):
    from .tensor import TensorVariable
    from .lists import BaseListVariable
    from .dicts import ConstDictVariable
    from .misc import TracedFunctionVariable, TracedObjectVariable

    def has(v):
        if isinstance(v, (TensorVariable, TracedObjectVariable, TracedFunctionVariable)):
            return True
        if isinstance(v, BaseListVariable):
            return any(has(i) for i in v.items)
        if isinstance(v, ConstDictVariable):
            return any(has(i) for i in v.items.values())
        return False
    return any(has(a) for a in args) or any(has(v) for v in (kwargs or {}).values())


def _type_name(v):
    """The name of the Python type ``v`` stands for (its tracker's when that is unknown)."""
    from ..exc import Unsupported
    try:
        return v.python_type().__name__
    except Unsupported:
        return type(v).__name__


def _const(tx, v):
    from .builder import wrap_constant_like
    return wrap_constant_like(tx, v)


_REFLECTED = {operator.add: "__add__", operator.mul: "__mul__", operator.iadd: "__iadd__"}


def _sym_operands(a, b):
    """True when a binary op involves a symbolic size and otherwise ints."""
    from .tensor import SymNodeVariable
    if not (isinstance(a, SymNodeVariable) or isinstance(b, SymNodeVariable)):
        return False
    return all(isinstance(x, SymNodeVariable) or
               (x.is_python_constant() and isinstance(x.as_python_constant(), (int, float)))
               for x in (a, b))


_SYM_OPS = {operator.add, operator.sub, operator.mul, operator.floordiv, operator.mod,
            operator.iadd, operator.isub, operator.imul}


_OUT_OF_PLACE = {operator.iadd: operator.add, operator.isub: operator.sub,
                 operator.imul: operator.mul, operator.itruediv: operator.truediv}


def binary_op(tx, op, args):
    from .tensor import TensorVariable, constant_or_specialized
    from .lists import BaseListVariable
    a, b = args
    if _sym_operands(a, b):
        if op in _SYM_OPS and not any(x.is_python_constant() and
                                      isinstance(x.as_python_constant(), float) for x in args):
            op = {operator.iadd: operator.add, operator.isub: operator.sub,
                  operator.imul: operator.mul}.get(op, op)
            return tx.output.call_graph(tx, "call_function", op, [a, b], {})
        # true division, powers, float operands: the size is specialised (a guard)
        return _const(tx, op(constant_or_specialized(a), constant_or_specialized(b)))
    if isinstance(a, TensorVariable) or isinstance(b, TensorVariable):
        from .tensor import SymNodeVariable
        if not all(isinstance(x, (TensorVariable, SymNodeVariable)) or x.is_python_constant()
                   or isinstance(x, BaseListVariable) for x in args):
            unimplemented(f"{op.__name__} of a tensor and {b if isinstance(a, TensorVariable) else a}")
        if not isinstance(a, TensorVariable):
            # `n += tensor` on a number: Python falls back to n + tensor (numbers have no
            # in-place operators), so the graph gets the out-of-place op
            op = _OUT_OF_PLACE.get(op, op)
        return tx.output.call_graph(tx, "call_function", op, [a, b], {})
    if a.is_python_constant() and b.is_python_constant():
        try:
            return _const(tx, op(a.as_python_constant(), b.as_python_constant()))
        except Exception as e:  # noqa: BLE001 - the user's error happens again eagerly
            unimplemented(f"{op.__name__} raised {type(e).__name__} in captured code")
    if isinstance(a, BaseListVariable) and op in (operator.add, operator.iadd, operator.mul,
                                                  operator.imul):
        if op in (operator.iadd, operator.imul) and a.python_type() is list:
            return a.call_method(tx, "__iadd__" if op is operator.iadd else "__imul__", [b],
                                 {})
        return a.call_method(tx, "__add__" if op in (operator.add, operator.iadd) else
                             "__mul__", [b], {})
    if isinstance(b, BaseListVariable) and op in (operator.mul, operator.imul):
        return b.call_method(tx, "__mul__", [a], {})
    unimplemented(f"{op.__name__}({a}, {b})")


def compare_eq(tx, a, b):
    """``a == b`` known at capture time (identity for non-constants)."""
    if a.is_python_constant() and b.is_python_constant():
        return a.as_python_constant() == b.as_python_constant()
    return a is b


def compare_op(tx, op, a, b):
    from .tensor import SymNodeVariable, TensorVariable
    if (isinstance(a, SymNodeVariable) or isinstance(b, SymNodeVariable)) and \
            op not in (operator.is_, operator.is_not) and _sym_operands(a, b):
        # decided now by the ShapeEnv, with a guard unless the ranges decide it
        ex = [x.example if isinstance(x, SymNodeVariable) else x.as_python_constant()
              for x in (a, b)]
        return ConstantVariable(bool(op(*ex)))
    if isinstance(a, TensorVariable) or isinstance(b, TensorVariable):
        if op in (operator.is_, operator.is_not):
            same = a is b or (isinstance(a, TensorVariable) and isinstance(b, TensorVariable)
                              and a.example is b.example)
            return ConstantVariable(same if op is operator.is_ else not same)
        return tx.output.call_graph(tx, "call_function", op, [a, b], {})
    if op in (operator.is_, operator.is_not):
        if a.is_python_constant() and b.is_python_constant():
            r = a.as_python_constant() is b.as_python_constant()
            _guard_identity(tx, a, b, r)
        else:
            r = a is b
        return ConstantVariable(r if op is operator.is_ else not r)
    if a.is_python_constant() and b.is_python_constant():
        if op in (operator.eq, operator.ne):  # (a function's equality is its identity)
            _guard_identity(tx, a, b, a.as_python_constant() is b.as_python_constant())
        return _const(tx, op(a.as_python_constant(), b.as_python_constant()))
    from .lists import BaseListVariable
    if isinstance(a, BaseListVariable) and isinstance(b, BaseListVariable) and \
            op in (operator.eq, operator.ne):
        eq = len(a.items) == len(b.items) and all(
            compare_eq(tx, x, y) for x, y in zip(a.items, b.items))
        return ConstantVariable(eq if op is operator.eq else not eq)
    if op in (operator.eq, operator.ne):
        eq = a is b
        return ConstantVariable(eq if op is operator.eq else not eq)
    unimplemented(f"comparison {op.__name__} of {a} and {b}")


def _guard_identity(tx, a, b, same):
    """Two closures guarded on their code only (``guards.closure_match``) may be one object
    at this call and two at the next: an identity the trace decided is guarded."""
    from .functions import UserFunctionVariable
    if isinstance(a, UserFunctionVariable) and isinstance(b, UserFunctionVariable) and \
            a.source is not None and b.source is not None and \
            (a.fn.__closure__ or b.fn.__closure__):
        tx.output.guards.identity(a.source, b.source, same)


class BuiltinVariable(VariableTracker):
    def __init__(self, fn, source=None):
        super().__init__(source)
        self.fn = fn

    def as_python_constant(self):
        return self.fn

    def python_type(self):
        return type(self.fn)

    def call_function(self, tx, args, kwargs):
        from .tensor import TensorVariable
        from .lists import ListIteratorVariable, ListVariable, TupleVariable
        from .dicts import ConstDictVariable
        fn = self.fn
        name = getattr(fn, "__name__", str(fn))
        # operators
        if fn in (operator.add, operator.sub, operator.mul, operator.truediv,
                  operator.floordiv, operator.mod, operator.pow, operator.matmul,
                  operator.and_, operator.or_, operator.xor, operator.lshift, operator.rshift,
                  operator.iadd, operator.isub, operator.imul, operator.itruediv):
            return binary_op(tx, fn, args)
        if fn in (operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne,
                  operator.is_, operator.is_not):
            return compare_op(tx, fn, *args)
        from .tensor import SymNodeVariable, constant_or_specialized
        if fn is operator.neg and isinstance(args[0], SymNodeVariable):
            return tx.output.call_graph(tx, "call_function", fn, args, {})
        if fn in (operator.neg, operator.pos, operator.invert, operator.not_, abs) and \
                isinstance(args[0], TensorVariable):
            if fn is operator.not_:
                unimplemented("generic_jump: `not` of a tensor (Tensor.__bool__)")
            return tx.output.call_graph(tx, "call_function", fn, args, {})
        if fn is operator.getitem:
            return tx.getitem(args[0], args[1])
        if fn is operator.not_:
            return ConstantVariable(not args[0].truth(tx))
        if fn is operator.contains:
            return args[0].call_method(tx, "__contains__", [args[1]], {})
        if fn is print:
            types = [_type_name(a) for a in args]
            unimplemented(format_graph_break_message(
                "Failed to trace builtin operator",
                f"builtin print {[type(a).__name__ for a in args]} {bool(kwargs)}",
                f"Dynamo does not know how to trace builtin operator `print` with argument "
                f"types {types} (has_kwargs {bool(kwargs)})",
                [f"Avoid calling builtin `print` with argument types {types}. Consider using "
                 f"an equivalent alternative function/method to `print`.",
                 "If you are attempting to call a logging function (e.g. `print`), you can "
                 "try adding it to `torch._dynamo.config.reorderable_logging_functions`.",
                 "Please report an issue to PyTorch."]))
        if fn is len:
            a = args[0]
            if isinstance(a, TensorVariable):
                if a.example.dim() == 0:
                    return ConstantVariable(len(a.example))  # raises as eager does
                return tx.output.wrap_int(tx, a.example.shape[0])
            return a.call_method(tx, "__len__", [], {})
        if fn is isinstance:
            a, cls = args
            c = cls.as_python_constant()
            t = a.python_type()
            return ConstantVariable(issubclass(t, c))
        if fn is type:
            from .builder import VariableBuilder
            return VariableBuilder(tx, None)(args[0].python_type())
        if fn is getattr:
            n = args[1].as_python_constant()
            if len(args) < 3:
                return tx.getattr(args[0], n)
            try:
                return tx.getattr(args[0], n)
            except ObservedException as e:  # only an AttributeError gives the default
                if not issubclass(e.exc.python_type(), AttributeError):
                    raise
                return args[2]
        if fn in (setattr, delattr) and not kwargs:
            from .misc import NewObjectVariable
            obj, name = args[0], args[1].as_python_constant()
            if isinstance(obj, TensorVariable):
                unimplemented(f"{name}() of attribute {name!r} on a tensor")
            if fn is setattr:
                if isinstance(obj, NewObjectVariable):
                    obj.store_attr(tx, name, args[2])
                else:
                    tx.output.side_effects.store_attr(obj, name, args[2])
            elif isinstance(obj, NewObjectVariable):
                obj.delete_attr(tx, name)
            else:
                unimplemented(f"delattr of {name!r} on {obj}")
            return ConstantVariable(None)
        if fn is hasattr:
            try:
                tx.getattr(args[0], args[1].as_python_constant())
                return ConstantVariable(True)
            except ObservedException as e:  # as CPython's: other errors propagate
                if not issubclass(e.exc.python_type(), AttributeError):
                    raise
                return ConstantVariable(False)
        if fn is range:
            return ConstantVariable(range(*[constant_or_specialized(a) for a in args]))
        if fn in (iter, reversed):
            items = tx.unpack(args[0])
            return ListIteratorVariable(items[::-1] if fn is reversed else items)
        if fn is next:
            it = args[0]
            if isinstance(it, ListIteratorVariable):
                v = it.next_item(tx)
                if v is None:
                    if len(args) > 1:
                        return args[1]
                    unimplemented("StopIteration from next() in captured code")
                return v
            unimplemented(f"next() of {it}")
        if fn is enumerate:
            start = args[1].as_python_constant() if len(args) > 1 else \
                kwargs["start"].as_python_constant() if "start" in kwargs else 0
            return ListIteratorVariable([TupleVariable([ConstantVariable(i + start), v])
                                         for i, v in enumerate(tx.unpack(args[0]))])
        if fn is zip and set(kwargs) <= {"strict"}:
            seqs = [tx.unpack(a) for a in args]
            if kwargs and kwargs["strict"].as_python_constant() and \
                    len({len(q) for q in seqs}) > 1:
                unimplemented("ValueError: zip() arguments of different lengths with "
                              "strict=True")
            return ListIteratorVariable([TupleVariable(list(t)) for t in zip(*seqs)])
        if fn is map:
            f = args[0]
            seqs = [tx.unpack(a) for a in args[1:]]
            return ListIteratorVariable([f.call_function(tx, list(t), {}) for t in zip(*seqs)])
        if fn is filter:
            f = args[0]
            out = []
            for v in tx.unpack(args[1]):
                keep = v.truth(tx) if f.is_python_constant() and f.as_python_constant() is None \
                    else f.call_function(tx, [v], {}).truth(tx)
                if keep:
                    out.append(v)
            return ListIteratorVariable(out)
        if fn in (list, tuple) and args:
            items = tx.unpack(args[0])
            return ListVariable(items) if fn is list else TupleVariable(items)
        if fn is list:
            return ListVariable([])
        if fn is tuple:
            return TupleVariable([])
        if fn is dict:
            d = {}
            if args:
                a = args[0]
                if isinstance(a, ConstDictVariable):
                    d.update(a.items)
                else:
                    for pair in tx.unpack(a):
                        k, v = tx.unpack(pair)
                        d[k.as_python_constant()] = v
            d.update(kwargs)
            return ConstDictVariable(d)
        if fn is functools.reduce and not kwargs and len(args) in (2, 3):
            items = tx.unpack(args[1])
            if len(args) == 2 and not items:
                unimplemented("TypeError: reduce() of empty iterable with no initial value")
            acc, rest = (args[2], items) if len(args) == 3 else (items[0], items[1:])
            for v in rest:
                acc = tx.call(args[0], [acc, v], {})
            return acc
        if fn is sum:
            items = tx.unpack(args[0])
            acc = args[1] if len(args) > 1 else kwargs.get("start", ConstantVariable(0))
            for v in items:
                acc = binary_op(tx, operator.add, [acc, v])
            return acc
        if fn in (min, max, sorted) and args and \
                set(kwargs) <= ({"key", "reverse"} if fn is sorted else {"key", "default"}):
            return _order(tx, fn, args, kwargs)
        if fn in (all, any):
            vals = [v.truth(tx) for v in tx.unpack(args[0])]
            return ConstantVariable(fn(vals))
        if fn is bool:
            return ConstantVariable(args[0].truth(tx)) if args else ConstantVariable(False)
        if fn in (int, float) and args and isinstance(args[0], TensorVariable):
            unimplemented(f"{name}() of a tensor: reading tensor data into Python")
        if fn is callable:
            return ConstantVariable(_is_callable(args[0]))
        if fn is super:
            if args:
                return _super(tx, args[0].as_python_constant(), args[1])
            return tx.zero_arg_super()
        if fn is id:
            unimplemented("id() in captured code")
        if fn in _PURE or getattr(fn, "__module__", None) in ("math", "operator"):
            try:
                cargs = [constant_or_specialized(a) for a in args]
                ckw = {k: constant_or_specialized(v) for k, v in kwargs.items()}
            except Exception:  # noqa: BLE001
                unimplemented(f"builtin {name} with non-constant arguments {args}")
            try:
                result = fn(*cargs, **ckw)
            except Exception as e:  # noqa: BLE001 - raised in the captured code, as eager does
                from .misc import raise_observed
                raise_observed(e)
            return _const(tx, result)
        if getattr(fn, "__module__", None) == "math" and any(isinstance(a, TensorVariable)
                                                            for a in args):
            unimplemented(f"math.{name} of a tensor")
        if fn is builtins.__build_class__:
            # a class statement: residual code runs it (PyTorch's default,
            # enable_trace_load_build_class=False), and the class made is a constant after it
            unimplemented(format_graph_break_message(
                "Invalid call to __build_class__",
                f"Non-constant args to __build_class__: {args} {kwargs}",
                "Cannot trace class definition: the class body function is unsupported or the "
                "base class argument are not compile-time constants",
                [SUPPORTABLE_HINT]))
        module = getattr(fn, "__module__", None) or "builtins"
        unimplemented(format_graph_break_message(
            "Attempted to call function marked as skipped",
            f"module: {module}, qualname: {name}, skip reason: C code Dynamo does not model",
            f"Dynamo does not know how to trace the builtin `{module}.{name}.` This function "
            f"is either a Python builtin (e.g. _warnings.warn) or a third-party C/C++ Python "
            f"extension (perhaps created with pybind).",
            ["If it is a Python builtin, please file an issue on GitHub so the PyTorch team "
             "can add support for it and see the next case for a workaround.",
             "If it is a third-party C/C++ Python extension, please either wrap it into a "
             "PyTorch-understood custom operator (see https://pytorch.org/tutorials/advanced/"
             "custom_ops_landing_page.html for more details) or, if it is traceable, use "
             "`torch.compiler.allow_in_graph`."]))

    def __repr__(self):
        return f"BuiltinVariable({getattr(self.fn, '__name__', self.fn)})"


def _is_callable(v):
    """``callable(v)`` as CPython answers it (its type has ``__call__``): the real object's
    answer where capture holds one (a user object, new ones included, answers for its class),
    else its type's. Iterators (of every kind the capture models as a list of items) are not
    callable; what remains without a type here is a function or method made during capture."""
    from ..exc import Unsupported
    from .lists import ListIteratorVariable
    from .misc import UserDefinedObjectVariable
    if isinstance(v, UserDefinedObjectVariable):
        return callable(v.obj)
    if isinstance(v, ListIteratorVariable):
        return False
    try:
        return callable(v.as_python_constant())
    except Unsupported:
        pass
    try:
        t = v.python_type()
    except Unsupported:
        return True
    return any("__call__" in k.__dict__ for k in t.__mro__)


def _order(tx, fn, args, kwargs):
    """``min``, ``max`` and ``sorted`` over items whose keys (the items, or what ``key`` maps
    them to) are constants of the capture: the items themselves are returned, in Python's
    order (a stable sort; the first of equal extremes)."""
    items = list(args) if fn is not sorted and len(args) > 1 else tx.unpack(args[0])
    key = kwargs.get("key")
    if key is not None and key.is_python_constant() and key.as_python_constant() is None:
        key = None
    keys = items if key is None else [tx.call(key, [i], {}) for i in items]
    if not all(k.is_python_constant() for k in keys):
        unimplemented(f"{fn.__name__}() of tensors (Tensor.__bool__)")
    kv = [k.as_python_constant() for k in keys]
    if fn is not sorted and not items:
        if "default" in kwargs:
            return kwargs["default"]
        unimplemented(f"ValueError: {fn.__name__}() iterable argument is empty")
    try:
        if fn is sorted:
            from .lists import ListVariable
            reverse = kwargs["reverse"].as_python_constant() if "reverse" in kwargs else False
            return ListVariable([items[i] for i in sorted(range(len(items)),
                                                          key=kv.__getitem__, reverse=reverse)])
        return items[fn(range(len(items)), key=kv.__getitem__)]
    except TypeError as e:  # keys Python cannot compare: raised again eagerly
        unimplemented(f"{fn.__name__}() raised TypeError: {e}")


def _super(tx, cls, obj):
    from .misc import SuperVariable
    return SuperVariable(cls, obj)

