"""What the interpreter makes of the functions and objects of ``ember._dynamo.decorators``
and ``nested_compile_region`` when captured code calls them: a user-inserted graph break or
skipped frame, a polyfill traced in place of a function, ``mark_static`` specialising sizes,
``error_on_graph_break`` blocks, and compile regions traced into reusable subgraphs."""
import types

from .base import VariableTracker, unimplemented
from .constant import ConstantVariable
from .misc import ContextManagerVariable, SkippedFunctionVariable

__all__ = ["decorator_variable", "UserBreakVariable", "PolyfilledFunctionVariable",
           "MarkStaticVariable", "ErrorOnGraphBreakVariable", "CompileRegionVariable"]


def _message(kwargs, default):
    # PyTorch reads the message from the keyword only
    msg = kwargs.get("msg")
    return msg.as_python_constant() if msg is not None else default


class UserBreakVariable(SkippedFunctionVariable):
    """``torch._dynamo.graph_break()`` (a graph break; the residual code calls it, a no-op) or
    ``torch._dynamo.skip_frame()`` (the frame runs eagerly), with PyTorch's messages."""

    def call_function(self, tx, args, kwargs):
        from .. import decorators
        if self.fn is decorators.skip_frame:
            from ..exc import SkipFrame
            raise SkipFrame("Call to `torch._dynamo.skip_frame()`\n"
                            f"  Explanation: User-inserted skip frame. Message: "
                            f"{_message(kwargs, '')}\n"
                            "  Hint: Remove the `torch._dynamo.skip_frame()` call.",
                            tx.user_stack())
        unimplemented("Call to `torch._dynamo.graph_break()`\n"
                      f"  Explanation: User-inserted graph break. Message: "
                      f"{_message(kwargs, None)}\n"
                      "  Hint: Remove the `torch._dynamo.graph_break()` call.")


class PolyfilledFunctionVariable(VariableTracker):
    """A function ``substitute_in_graph`` gave a traceable stand-in: calls trace the stand-in
    (or, when it may be constant folded and the arguments are constants, call the original
    now)."""

    def __init__(self, fn, polyfill, can_constant_fold_through, source=None):
        super().__init__(source)
        self.fn, self.polyfill = fn, polyfill
        self.can_constant_fold_through = can_constant_fold_through

    def as_python_constant(self):
        return self.fn

    def call_function(self, tx, args, kwargs):
        from .functions import UserFunctionVariable
        if self.can_constant_fold_through and all(
                v.is_python_constant() for v in [*args, *kwargs.values()]):
            from .builder import wrap_constant_like
            return wrap_constant_like(tx, self.fn(*[a.as_python_constant() for a in args],
                                                  **{k: v.as_python_constant()
                                                     for k, v in kwargs.items()}))
        return UserFunctionVariable(self.polyfill).call_function(tx, args, kwargs)

    def __repr__(self):
        return f"PolyfilledFunctionVariable({getattr(self.fn, '__qualname__', self.fn)})"


class MarkStaticVariable(VariableTracker):
    """``mark_static(t, index)`` inside captured code: the sizes named are specialised (each
    symbolic one guarded to its current value), as PyTorch's ``comptime.force_static``."""

    def __init__(self, fn, source=None):
        super().__init__(source)
        self.fn = fn

    def as_python_constant(self):
        return self.fn

    def call_function(self, tx, args, kwargs):
        from ..._core.symint import SymInt
        from .tensor import TensorVariable
        bound = dict(zip(("t", "index"), args))
        bound.update(kwargs)
        t, index = bound.get("t"), bound.get("index", ConstantVariable(None))
        if not isinstance(t, TensorVariable):
            unimplemented("mark_static of a value other than a tensor inside captured code")
        index = index.as_python_constant()
        sizes = t.example._size
        dims = range(len(sizes)) if index is None else \
            index if isinstance(index, (list, tuple)) else [index]
        for i in dims:
            if isinstance(sizes[i], SymInt):
                int(sizes[i])  # guards the symbol to its value
        return ConstantVariable(None)


class ErrorOnGraphBreakVariable(ContextManagerVariable):
    """An ``error_on_graph_break(value)`` block in captured code: while its body is traced,
    a graph break raises (True) or breaks (False)."""

    def __init__(self, value):
        super().__init__()
        self.value = value
        self.prev = []

    def enter(self, tx):
        self.prev.append(tx.output.error_on_graph_break)
        tx.output.error_on_graph_break = self.value
        return ConstantVariable(None)

    def exit(self, tx):
        tx.output.error_on_graph_break = self.prev.pop()


class _ErrorOnGraphBreakFunction(VariableTracker):
    """``torch._dynamo.error_on_graph_break`` called in captured code."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def as_python_constant(self):
        return self.fn

    def call_function(self, tx, args, kwargs):
        value = (args[0] if args else kwargs["error_on_graph_break"]).as_python_constant()
        return ErrorOnGraphBreakVariable(value)


class CompileRegionVariable(VariableTracker):
    """A ``nested_compile_region`` function: its calls become ``invoke_subgraph`` calls of a
    subgraph traced once (``higher_order_ops.trace_invoke_subgraph``); inside another
    subgraph (an ``ember.cond`` branch, another region) its body is traced inline."""

    def __init__(self, wrapper, source=None):
        super().__init__(source)
        self.wrapper = wrapper

    def as_python_constant(self):
        return self.wrapper

    def call_function(self, tx, args, kwargs):
        from ..source import AttrSource
        from .functions import UserFunctionVariable
        from .higher_order_ops import trace_invoke_subgraph
        fn, src = self.wrapper, self.source
        while hasattr(fn, "__marked_compile_region_fn__"):
            fn = fn.__marked_compile_region_fn__
            src = AttrSource(src, "__marked_compile_region_fn__") if src is not None else None
        fn_vt = UserFunctionVariable(fn, src)
        if tx.output.graph is not tx.output.root_graph:
            return fn_vt.call_function(tx, args, kwargs)
        return trace_invoke_subgraph(
            tx, fn_vt, args, kwargs,
            getattr(fn, "__marked_compile_region_max_reuse_entries__", 8),
            getattr(fn, "__marked_compile_region_reuse_hash_fn__", None))


def decorator_variable(tx, value, src):
    """The variable for ``value`` when it is one of the above (None otherwise); ``value`` is
    hashable."""
    from .. import decorators, eval_frame
    guards = tx.output.guards
    if value in eval_frame._disallowed_fns:
        if src is not None:
            guards.id_match(src, value)
        if value is decorators.graph_break or value is decorators.skip_frame:
            return UserBreakVariable(value, None, src)
        return SkippedFunctionVariable(
            value, f"Attempted to call function marked as skipped: "
                   f"{getattr(value, '__qualname__', value)} (disallow_in_graph)", src)
    hit = eval_frame._polyfills.get(value)
    if hit is not None:
        if src is not None:
            guards.id_match(src, value)
        return PolyfilledFunctionVariable(hit[2].__torch_dynamo_original__, hit[0], hit[1], src)
    if value is decorators.mark_static:
        return MarkStaticVariable(value, src)
    if value is decorators.error_on_graph_break:
        return _ErrorOnGraphBreakFunction(value)
    if isinstance(value, decorators.ErrorOnGraphBreakDecoratorContextManager):
        return ErrorOnGraphBreakVariable(value.error_on_graph_break)
    if isinstance(value, types.FunctionType) and \
            "__marked_compile_region_fn__" in value.__dict__:
        if src is not None:
            guards.id_match(src, value)
        return CompileRegionVariable(value, src)
    return None
