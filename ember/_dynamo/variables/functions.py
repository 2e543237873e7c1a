"""User functions during capture: called functions are inlined (their bytecode interpreted in
a child frame of the same trace), so one graph spans many Python frames. A function made inside
the captured code (a closure, a lambda, a comprehension) keeps its cells as variables.
``functools.partial`` objects are modelled, so a partial made or read in captured code is
called like the function it wraps, and so is ``functools.wraps`` on a function made in it;
an ``lru_cache`` function is its wrapped function."""
import functools
import types

from .base import VariableTracker, unimplemented
from .constant import ConstantVariable

__all__ = ["UserFunctionVariable", "UserMethodVariable", "NestedUserFunctionVariable",
           "CellVariable", "FunctoolsPartialVariable", "FunctoolsWrapsVariable",
           "LruCacheWrapperVariable", "bind_args"]


class CellVariable(VariableTracker):
    """A cell during capture. A cell made in the trace (MAKE_CELL, or a cell of an inlined
    frame) holds ``value``, a VariableTracker (None: empty). A cell that exists outside the
    trace (``real``: a closure's cell, or one a resume function was handed) is read through
    ``contents_source`` (None: read as a constant), and a write to it is a side effect
    replayed on ``write_expr`` (None: the cell object itself, as a constant). Every function
    made in the trace over a cell shares this one variable, so ``nonlocal`` writes are seen
    by every reader, and residual code rebuilds such functions over one real cell."""

    def __init__(self, value=None, real=None, contents_source=None, write_expr=None):
        super().__init__()
        self.value = value
        self.real, self.contents_source, self.write_expr = real, contents_source, write_expr

    def contents(self, tx):
        """The cell's current contents, or None when it is empty."""
        if self.real is None:
            return self.value
        tx.output.side_effects.cell_reached(self.real, self.write_expr)
        pending = tx.output.side_effects.pending_cell(self.real)
        if pending is not None:
            from ..output_graph import _EMPTY_CELL
            return None if pending is _EMPTY_CELL else pending
        try:
            value = self.real.cell_contents
        except ValueError:
            return None
        from .builder import VariableBuilder
        return VariableBuilder(tx, self.contents_source)(value)

    def store(self, tx, value):
        if self.real is None:
            self.value = value
        else:
            tx.output.side_effects.cell_reached(self.real, self.write_expr)
            tx.output.side_effects.store_cell(self.real, value, self.write_expr)

    def delete(self, tx):
        """``del`` of the cell's variable: the cell is empty after it."""
        if self.real is None:
            self.value = None
        else:
            tx.output.side_effects.cell_reached(self.real, self.write_expr)
            tx.output.side_effects.delete_cell(self.real, self.write_expr)

    def reconstruct(self, cg):
        """The real cell: the existing one, or (made in the trace) one new cell per capture,
        filled with the contents the trace left in it."""
        if self.real is not None:
            return self.write_expr or cg.const(self.real, "cell")
        hit = cg.cache.get(id(self))
        if hit is None:
            hit = cg.cache[id(self)] = cg.temp()
            cg.lines.append(f"{hit} = {cg.const(types.CellType, 'CellType')}()")
            if self.value is not None:  # (after caching: the contents may be a function
                # over this very cell)
                cg.lines.append(f"{hit}.cell_contents = {cg.reconstruct(self.value)}")
        return hit


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
        from ..source import CellContentsSource
        # read with a source, the function is guarded on its code only (a closure made for
        # each call): its cells are found, and written, through that source as well
        cells = {name: CellVariable(real=cell, contents_source=CellContentsSource(
                     src, i, name) if src else None,
                     write_expr=f"___getattr({src.expr()}, '__closure__')[{i}]" if src else None)
                 for i, (name, cell) in enumerate(zip(fn.__code__.co_freevars,
                                                      fn.__closure__ or ()))}
        return tx.inline_call(fn.__code__, fn.__globals__, bound, cells)

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
        self.wrapped = None  # functools.wraps' target: names and __wrapped__ read from it

    def python_type(self):
        return types.FunctionType

    def var_getattr(self, tx, name):
        if self.wrapped is not None and name in functools.WRAPPER_ASSIGNMENTS:
            return tx.getattr(self.wrapped, name)
        if self.wrapped is not None and name == "__wrapped__":
            return self.wrapped
        if name in ("__name__", "__qualname__"):
            return ConstantVariable(self.code.co_name if name == "__name__" else self.name)
        return super().var_getattr(tx, name)

    def get_code(self):
        return self.code

    def call_function(self, tx, args, kwargs):
        d = self.defaults.items if self.defaults is not None else None
        kwd = None
        if self.kwdefaults is not None:
            kwd = self.kwdefaults.items
        bound = bind_args(tx, self.code, d, kwd, args, kwargs, self.name)
        cells = dict(zip(self.code.co_freevars, self.closure.items if self.closure else ()))
        return tx.inline_call(self.code, self.f_globals, bound, cells)

    def reconstruct(self, cg):
        """Residual code that makes the function again: its code, globals, defaults and its
        cells (the real ones: shared with the frame and every other function over them, see
        CellVariable.reconstruct), then ``functools.wraps``' attributes."""
        hit = cg.cache.get(id(self))
        if hit is not None:
            return hit
        cells = [c.reconstruct(cg) for c in (self.closure.items if self.closure else ())]
        hit = cg.cache.get(id(self))
        if hit is not None:  # a cell's contents was this function: made while filling it
            return hit
        closure = f"({', '.join(cells)},)" if cells else "None"
        defaults = "None" if self.defaults is None else cg.reconstruct(self.defaults)
        t = cg.cache[id(self)] = cg.temp()
        cg.lines.append(f"{t} = {cg.const(types.FunctionType, 'FunctionType')}("
                        f"{cg.const(self.code, 'code')}, {cg.const(self.f_globals, 'globals')}, "
                        f"{self.code.co_name!r}, {defaults}, {closure})")
        cg.lines.append(f"{t}.__qualname__ = {self.name!r}")
        if self.kwdefaults is not None:
            cg.lines.append(f"{t}.__kwdefaults__ = {cg.reconstruct(self.kwdefaults)}")
        if self.wrapped is not None:
            cg.lines.append(f"{cg.const(functools.update_wrapper)}({t}, "
                            f"{cg.reconstruct(self.wrapped)})")
        return t

    def __repr__(self):
        return f"NestedUserFunctionVariable({self.name})"


class FunctoolsPartialVariable(VariableTracker):
    """``functools.partial(func, *args, **keywords)`` (PyTorch's FunctoolsPartialVariable):
    a call passes the bound arguments first and the call's keywords over the bound ones, and
    calls ``func`` in the trace; residual code builds a real partial where one leaves the
    graph. As ``functools.partial`` does, a partial of a partial is flattened."""

    def __init__(self, func, args, keywords, source=None):
        super().__init__(source)
        if isinstance(func, FunctoolsPartialVariable):
            args, keywords = func.args + list(args), {**func.keywords, **keywords}
            func = func.func
        self.func, self.args, self.keywords = func, list(args), dict(keywords)

    def python_type(self):
        return functools.partial

    def as_python_constant(self):
        return functools.partial(self.func.as_python_constant(),
                                 *[a.as_python_constant() for a in self.args],
                                 **{k: v.as_python_constant() for k, v in self.keywords.items()})

    def call_function(self, tx, args, kwargs):
        return tx.call(self.func, self.args + list(args), {**self.keywords, **kwargs})

    def var_getattr(self, tx, name):
        from .lists import TupleVariable
        from .dicts import ConstDictVariable
        if name == "func":
            return self.func
        if name == "args":
            return TupleVariable(list(self.args))
        if name == "keywords":
            return ConstDictVariable(dict(self.keywords))
        unimplemented(f"functools.partial attribute {name!r} in captured code")

    def reconstruct(self, cg):
        if self.source is not None:
            return cg.source_expr(self.source)
        parts = [cg.reconstruct(self.func)] + [cg.reconstruct(a) for a in self.args]
        parts += [f"**{{{k!r}: {cg.reconstruct(v)}}}" for k, v in self.keywords.items()]
        return f"{cg.const(functools.partial)}({', '.join(parts)})"

    def __repr__(self):
        return f"FunctoolsPartialVariable({self.func})"


class FunctoolsWrapsVariable(VariableTracker):
    """``functools.wraps`` (PyTorch's FunctoolsWrapsVariable): ``wraps(wrapped)(fn)`` on a
    function made in captured code is that function, its ``__wrapped__`` and the names it
    copies taken from ``wrapped`` (what ``update_wrapper`` writes on it), not traced."""

    def call_function(self, tx, args, kwargs):
        if len(args) != 1 or kwargs:
            unimplemented("functools.wraps with assigned= or updated= in captured code")
        return _WrapsDecorator(args[0])


class _WrapsDecorator(VariableTracker):
    """``functools.wraps(wrapped)``, the decorator it returns."""

    def __init__(self, wrapped):
        super().__init__()
        self.wrapped = wrapped

    def call_function(self, tx, args, kwargs):
        fn = args[0] if len(args) == 1 and not kwargs else None
        if not isinstance(fn, NestedUserFunctionVariable):
            unimplemented(f"functools.wraps(...)({fn}) in captured code")
        fn.wrapped = self.wrapped
        return fn


class LruCacheWrapperVariable(VariableTracker):
    """A ``functools.lru_cache`` function (einops' pattern parsers). Its cache is ignored, as
    PyTorch's Dynamo ignores it, since what it returns is the wrapped function's result: on
    constant arguments the call is made now and its result is a constant of the capture (the
    function is read as pure, as the cache already reads it); otherwise the wrapped function
    is traced."""

    def __init__(self, wrapper, source=None):
        super().__init__(source)
        self.wrapper = wrapper

    def as_python_constant(self):
        return self.wrapper

    def python_type(self):
        return type(self.wrapper)

    def call_function(self, tx, args, kwargs):
        from .builder import wrap_constant_like
        if all(a.is_python_constant() for a in list(args) + list(kwargs.values())):
            try:
                result = self.wrapper(*[a.as_python_constant() for a in args],
                                      **{k: v.as_python_constant() for k, v in kwargs.items()})
            except Exception:  # noqa: BLE001 - traced instead, which raises it as eager does
                pass
            else:
                return wrap_constant_like(tx, result)
        return UserFunctionVariable(self.wrapper.__wrapped__).call_function(tx, args, kwargs)

    def __repr__(self):
        return f"LruCacheWrapperVariable({self.wrapper.__wrapped__.__qualname__})"
