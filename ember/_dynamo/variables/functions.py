"""User functions during capture: called functions are inlined (their bytecode interpreted in
a child frame of the same trace), so one graph spans many Python frames. A function made inside
the captured code (a closure, a lambda, a comprehension) keeps its cells as variables."""
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


def bind_args(tx, code, defaults, kwdefaults, args, kwargs, fn_name):
    """Arguments of a call bound to the callee's parameter names, as CPython binds them
    (VariableTrackers; ``defaults``/``kwdefaults`` are VariableTrackers or None)."""
    from .lists import TupleVariable
    from .dicts import ConstDictVariable
    names = code.co_varnames
    npos, nkw, posonly = code.co_argcount, code.co_kwonlyargcount, code.co_posonlyargcount
    defaults = list(defaults or ())
    kwargs = dict(kwargs)
    out = {}
    for i, name in enumerate(names[:npos]):
        if i < len(args):
            out[name] = args[i]
        elif name in kwargs and i >= posonly:
            out[name] = kwargs.pop(name)
        elif i - (npos - len(defaults)) >= 0:
            out[name] = defaults[i - (npos - len(defaults))]
        else:
            unimplemented(f"TypeError: {fn_name}() missing required argument '{name}'")
    i = npos + nkw
    extra = list(args[npos:])
    if code.co_flags & 0x04:
        out[names[i]] = TupleVariable(extra)
        i += 1
    elif extra:
        unimplemented(f"TypeError: {fn_name}() takes {npos} positional arguments but "
                      f"{len(args)} were given")
    for name in names[npos:npos + nkw]:
        if name in kwargs:
            out[name] = kwargs.pop(name)
        elif kwdefaults and name in kwdefaults:
            out[name] = kwdefaults[name]
        else:
            unimplemented(f"TypeError: {fn_name}() missing keyword-only argument '{name}'")
    if code.co_flags & 0x08:
        out[names[i]] = ConstDictVariable(kwargs)
    elif kwargs:
        unimplemented(f"TypeError: {fn_name}() got an unexpected keyword argument "
                      f"'{next(iter(kwargs))}'")
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
        if name in ("__name__", "__qualname__", "__module__", "__doc__", "__code__"):
            # (a code object is immutable: its co_* attributes fold as constants)
            return ConstantVariable(getattr(self.fn, name))
        if name in self.fn.__dict__:
            src = AttrSource(self.source, name) if self.source else None
            return VariableBuilder(tx, src)(self.fn.__dict__[name])
        unimplemented(f"function attribute {name}")

    def call_function(self, tx, args, kwargs):
        fn = self.fn
        from .. import eval_frame
        if fn in eval_frame._constant_result_fns:
            values = [*args, *kwargs.values()]
            if not all(v.is_python_constant() for v in values):
                unimplemented(f"{fn.__qualname__} (assume_constant_result) called with values "
                              f"that are not constants of the capture")
            from .builder import wrap_constant_like
            return wrap_constant_like(tx, fn(*[a.as_python_constant() for a in args],
                                             **{k: v.as_python_constant()
                                                for k, v in kwargs.items()}))
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
