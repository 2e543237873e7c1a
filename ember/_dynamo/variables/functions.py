"""User functions during capture: called functions are inlined (their bytecode interpreted in
a child frame of the same trace), so one graph spans many Python frames. A function made inside
the captured code (a closure, a lambda, a comprehension) keeps its cells as variables."""
import inspect
import types

from .base import VariableTracker, unimplemented
from .constant import ConstantVariable

__all__ = ["UserFunctionVariable", "UserMethodVariable", "NestedUserFunctionVariable",
           "CellVariable", "bind_args"]


class CellVariable(VariableTracker):
    """A cell of the captured frame: ``value`` is a VariableTracker (None: empty)."""

    def __init__(self, value=None, source=None):
        super().__init__(source)
        self.value = value


class _Default:
    def __init__(self, i, kw=False):
        self.i, self.kw = i, kw


def bind_args(tx, code, defaults, kwdefaults, args, kwargs, fn_name):
    """Arguments of a call bound to the callee's parameter names (VariableTrackers);
    ``defaults``/``kwdefaults`` are VariableTrackers or None."""
    nfree = len(code.co_freevars)
    dummy = types.FunctionType(code, {}, fn_name,
                               tuple(_Default(i) for i in range(len(defaults or ()))),
                               tuple(types.CellType() for _ in range(nfree)) if nfree else None)
    if kwdefaults:
        dummy.__kwdefaults__ = {k: _Default(k, True) for k in kwdefaults}
    try:
        bound = inspect.signature(dummy).bind(*args, **kwargs)
    except TypeError as e:
        unimplemented(f"call to {fn_name} with bad arguments: {e}")
    bound.apply_defaults()
    out = {}
    params = inspect.signature(dummy).parameters
    for name, v in bound.arguments.items():
        kind = params[name].kind
        if isinstance(v, _Default):
            v = kwdefaults[v.i] if v.kw else defaults[v.i]
        if kind is inspect.Parameter.VAR_POSITIONAL:
            from .lists import TupleVariable
            v = TupleVariable(list(v))
        elif kind is inspect.Parameter.VAR_KEYWORD:
            from .dicts import ConstDictVariable
            v = ConstDictVariable(dict(v))
        out[name] = v
    return out


class UserFunctionVariable(VariableTracker):
    """A Python function object that exists outside the trace."""

    def __init__(self, fn, source=None):
        super().__init__(source)
        self.fn = fn

    def python_type(self):
        return types.FunctionType

    def as_python_constant(self):
        return self.fn

    def get_code(self):
        return self.fn.__code__

    def var_getattr(self, tx, name):
        from .builder import VariableBuilder
        from ..source import AttrSource
        if name in ("__name__", "__qualname__", "__module__", "__doc__"):
            return ConstantVariable(getattr(self.fn, name))
        if name in self.fn.__dict__:
            src = AttrSource(self.source, name) if self.source else None
            return VariableBuilder(tx, src)(self.fn.__dict__[name])
        unimplemented(f"function attribute {name}")

    def call_function(self, tx, args, kwargs):
        fn = self.fn
        from .builder import VariableBuilder
        from ..source import DefaultsSource
        src = self.source
        defaults = None
        if fn.__defaults__:
            defaults = [VariableBuilder(tx, DefaultsSource(src, i) if src else None)(d)
                        for i, d in enumerate(fn.__defaults__)]
        kwd = None
        if fn.__kwdefaults__:
            kwd = {k: VariableBuilder(tx, DefaultsSource(src, k, True) if src else None)(d)
                   for k, d in fn.__kwdefaults__.items()}
        bound = bind_args(tx, fn.__code__, defaults, kwd, args, kwargs, fn.__name__)
        cells = []
        for i, name in enumerate(fn.__code__.co_freevars):
            cells.append(("real", fn.__closure__[i], i, name))
        return tx.inline_call(fn.__code__, fn.__globals__, bound, cells, self)

    def __repr__(self):
        return f"UserFunctionVariable({getattr(self.fn, '__qualname__', self.fn)})"


class UserMethodVariable(VariableTracker):
    """A bound method: the function inlined with ``obj`` as first argument."""

    def __init__(self, fn, obj, source=None):
        super().__init__(source)
        self.fn, self.obj = fn, obj

    def call_function(self, tx, args, kwargs):
        return UserFunctionVariable(self.fn).call_function(tx, [self.obj] + list(args), kwargs)

    def __repr__(self):
        return f"UserMethodVariable({getattr(self.fn, '__qualname__', self.fn)})"


class NestedUserFunctionVariable(VariableTracker):
    """A function created by MAKE_FUNCTION inside the trace (lambda, closure, comprehension)."""

    def __init__(self, code, f_globals, name, defaults=None, kwdefaults=None, closure=None):
        super().__init__()
        self.code, self.f_globals, self.name = code, f_globals, name
        self.defaults, self.kwdefaults, self.closure = defaults, kwdefaults, closure

    def python_type(self):
        return types.FunctionType

    def get_code(self):
        return self.code

    def call_function(self, tx, args, kwargs):
        d = self.defaults.items if self.defaults is not None else None
        kwd = None
        if self.kwdefaults is not None:
            kwd = self.kwdefaults.items
        bound = bind_args(tx, self.code, d, kwd, args, kwargs, self.name)
        cells = []
        for i, name in enumerate(self.code.co_freevars):
            cells.append(("var", self.closure.items[i], i, name))
        return tx.inline_call(self.code, self.f_globals, bound, cells, self)

    def __repr__(self):
        return f"NestedUserFunctionVariable({self.name})"
