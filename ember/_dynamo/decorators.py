"""Decorators and switches that steer capture (PyTorch's ``torch._dynamo.decorators``): the
compiler's stance, run-only mode, functions that break the graph (``graph_break``,
``disallow_in_graph``), skip the frame (``skip_frame``) or must never be traced
(``forbid_in_graph``), polyfills traced in place of a function (``substitute_in_graph``),
``mark_static`` and ``error_on_graph_break``.

The interpreter recognises what these mark when it meets them (``variables/builder.py`` and
``variables/decorators.py``); outside a capture each is plain Python."""
import functools
import inspect
import types

from . import eval_frame
from .eval_frame import DynamoStance, _set_stance, _state

__all__ = ["run", "set_stance", "disallow_in_graph", "forbid_in_graph", "graph_break",
           "skip_frame", "substitute_in_graph", "mark_static", "error_on_graph_break",
           "is_dynamo_disable_recursive"]


def innermost_fn(fn):
    """The function a chain of compile wrappers was made from."""
    while hasattr(fn, "_torchdynamo_orig_callable") and not isinstance(fn, types.MethodType):
        fn = fn._torchdynamo_orig_callable
    return fn


# -- run-only ---------------------------------------------------------------------------------
class _RunOnlyContext:
    """What ``run()`` returns: applied to a function it is ``run(fn)``; as PyTorch's, it is
    not a context manager."""

    def __call__(self, fn):
        return run(fn)

    def __enter__(self):
        raise RuntimeError(
            "torch._dynamo.optimize(...) is used with a context manager. Please refer to "
            "https://pytorch.org/tutorials/intermediate/torch_compile_tutorial.html to use "
            "torch._dynamo.optimize(...) as an annotation/decorator. ")

    def __exit__(self, *exc):
        return False


def run(fn=None):
    """Don't do any dynamic compiles, just use prior optimizations: ``run(fn)`` calls ``fn``
    through the entries earlier captures of its code left (each checked on its guards) and
    runs it eagerly where none matches; nothing is captured while it runs, its callees and
    resume functions included."""
    from .convert_frame import run_cached
    from ..nn.modules.module import Module
    if fn is None:
        return _RunOnlyContext()
    if isinstance(fn, eval_frame.OptimizedModule):
        fn = fn._orig_mod
    if isinstance(fn, Module):
        fn = fn._call_impl
    fn = innermost_fn(fn)
    if not callable(fn):
        raise AssertionError("fn must be callable")
    bound = None
    if isinstance(fn, types.MethodType):
        fn, bound = innermost_fn(fn.__func__), fn.__self__
    if not isinstance(fn, types.FunctionType):
        raise TypeError(f"torch._dynamo.run expects a Python function, method or nn.Module, "
                        f"got {fn!r}")
    entry = eval_frame._entry_function(fn, run_cached(fn.__code__, fn.__globals__), {})

    @functools.wraps(fn)
    def run_only(*args, **kwargs):
        _state.run_only += 1
        try:
            return entry(*args, **kwargs)
        finally:
            _state.run_only -= 1
    return types.MethodType(run_only, bound) if bound is not None else run_only


# -- the stance -------------------------------------------------------------------------------
class set_stance:
    """Decorator, context manager and function setting the compiler's stance; see
    ``ember.compiler.set_stance``. Called, it sets the stance at once (and keeps the previous
    one for ``__exit__``); as a decorator it sets it only while the function runs."""

    _dynamo_forbidden = True

    def __init__(self, stance="default", *, skip_guard_eval_unsafe=False, force_backend=None):
        if force_backend is not None and stance != "default":
            raise RuntimeError("non-default stance cannot have force_backend set")
        self.stance = DynamoStance(stance, skip_guard_eval_unsafe, force_backend)
        self.prev = _set_stance(self.stance)

    def __call__(self, fn):
        _set_stance(self.prev)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)
        wrapper._dynamo_forbidden = True
        return wrapper

    def __enter__(self):
        _set_stance(self.stance)

    def __exit__(self, exc_type, exc_value, traceback):
        _set_stance(self.prev)

    def clone(self):
        return self.__class__(self.stance.stance,
                              skip_guard_eval_unsafe=self.stance.skip_guard_eval_unsafe,
                              force_backend=self.stance.backend)


# -- graph breaks and forbidden functions ---------------------------------------------------------
def _is_allowed(fn):
    """Whether capture puts calls of ``fn`` into the graph as they are."""
    from .variables.builder import _is_ember_callable
    return fn in eval_frame._allowed_fns or _is_ember_callable(fn)


def _disallow(fn, throw_if_not_allowed):
    if isinstance(fn, (list, tuple)):
        return [disallow_in_graph(x) for x in fn]
    if not callable(fn):
        raise AssertionError("disallow_in_graph expects a callable")
    if throw_if_not_allowed and not _is_allowed(fn):
        raise RuntimeError(
            "disallow_in_graph is expected to be used on an already allowed callable (like "
            "torch.* ops). Allowed callables means callables that TorchDynamo puts as-is in "
            "the extracted graph.")
    eval_frame._allowed_fns.discard(fn)
    eval_frame._disallowed_fns.add(fn)
    return fn


def disallow_in_graph(fn):
    """Make calls of ``fn`` (an ember op or an ``allow_in_graph`` function: one the graph
    would take as it is) graph breaks: the graph so far is compiled, ``fn`` runs eagerly and
    capture resumes after it. ``allow_in_graph`` undoes it."""
    return _disallow(fn, throw_if_not_allowed=True)


def graph_break(msg=""):
    """Force a graph break"""


def skip_frame(msg=""):
    """Force a skipped frame"""


_disallow(graph_break, throw_if_not_allowed=False)
_disallow(skip_frame, throw_if_not_allowed=False)


def forbid_in_graph(fn):
    """Make tracing a call of ``fn`` an error (``AssertionError``: "Attempt to trace
    forbidden callable ..."), where ``disallow_in_graph`` would break the graph."""
    if isinstance(fn, (list, tuple)):
        return [forbid_in_graph(x) for x in fn]
    if not callable(fn):
        raise AssertionError("forbid_in_graph applies only to callables")
    fn._dynamo_forbidden = True
    return fn


def is_dynamo_disable_recursive(method):
    """True if ``method`` was given to ``disable(recursive=True)``, False for
    ``recursive=False``, None if it was not disabled."""
    return getattr(method, "_torchdynamo_disable_recursive", None)


# -- polyfills ----------------------------------------------------------------------------------
def _is_function(value):
    return isinstance(value, (types.FunctionType, types.BuiltinFunctionType,
                              types.MethodDescriptorType, types.WrapperDescriptorType))


def _sig_ident(sig):
    """A signature without annotations, keyword-only order and the names of ``*args`` and
    ``**kwargs`` (what PyTorch compares)."""
    params = sig.parameters.values()
    return (tuple(p.name for p in params if p.kind not in (p.KEYWORD_ONLY, p.VAR_POSITIONAL,
                                                           p.VAR_KEYWORD)),
            {p.name for p in params if p.kind == p.KEYWORD_ONLY},
            {p.name: p.default for p in params if p.kind not in (p.VAR_POSITIONAL,
                                                                 p.VAR_KEYWORD)})


def substitute_in_graph(original_fn, *, can_constant_fold_through=False,
                        skip_signature_check=False):
    """Register ``traceable_fn`` (the decorated function) to be traced wherever captured code
    calls ``original_fn`` (usually a C function capture cannot look into). The decorator
    returns a function calling ``original_fn`` itself: eager code keeps the original.
    ``can_constant_fold_through``: a call with constant arguments is computed at capture time
    by ``original_fn``."""
    if not _is_function(original_fn):
        raise TypeError(f"substitute_in_graph expects a function but got {type(original_fn)!r}")

    def wrapper(traceable_fn):
        if not _is_function(traceable_fn):
            raise TypeError(f"@substitute_in_graph(...) expects a function but got "
                            f"{type(traceable_fn)!r}")
        if not skip_signature_check:
            try:
                original_sig = inspect.signature(original_fn)
            except ValueError:
                pass
            else:
                traceable_sig = inspect.signature(traceable_fn)
                wildcard = _sig_ident(inspect.signature(lambda *args, **kwargs: None))
                if _sig_ident(original_sig) != _sig_ident(traceable_sig) and \
                        wildcard not in (_sig_ident(original_sig), _sig_ident(traceable_sig)):
                    raise TypeError(f"Signature mismatch between {original_fn} and "
                                    f"{traceable_fn}: {original_sig} != {traceable_sig}")
        if original_fn in eval_frame._polyfills:
            raise ValueError(f"Duplicate polyfill handlers for {original_fn}: already handled "
                             f"by {eval_frame._polyfills[original_fn][2]}")

        @functools.wraps(traceable_fn)
        def wrapped(*args, **kwargs):
            return original_fn(*args, **kwargs)

        wrapped.__torch_dynamo_original__ = original_fn
        wrapped.__torch_dynamo_polyfill__ = traceable_fn
        wrapped.__torch_dynamo_can_constant_fold_through__ = can_constant_fold_through
        eval_frame._polyfills[original_fn] = eval_frame._polyfills[wrapped] = (
            traceable_fn, can_constant_fold_through, wrapped)
        return wrapped
    return wrapper


# -- static marks ---------------------------------------------------------------------------------
def mark_static(t, index=None):
    """Keep dim ``index`` of tensor ``t`` (an int, a list of ints, or None: every dim) static
    when a compiled function would make it symbolic (``dynamic=True``, automatic dynamic
    shapes); ``mark_dynamic`` wins over it. Called inside captured code it specialises the
    sizes there. Given an nn.Module class, marks it static (its instances' attributes are
    taken as constants, which ember does for every module)."""
    from .._tensor import Tensor
    from ..nn.modules.module import Module
    if not isinstance(t, Tensor) and issubclass(t, Module):
        t._dynamo_marked_static = True
        return t
    if not isinstance(t, Tensor):
        raise TypeError(f"mark_static expects a tensor/nn.Module class but received {type(t)}")
    if isinstance(index, int):
        if not hasattr(t, "_dynamo_static_indices"):
            t._dynamo_static_indices = set()
        t._dynamo_static_indices.add(index)
        t._has_dynamo_dim_marking = True
    elif index is None:
        for i in range(t.dim()):
            mark_static(t, i)
    else:
        if not isinstance(index, (list, tuple)):
            raise AssertionError(f"Expected index to be int, list, or tuple, got {type(index)}")
        for i in index:
            mark_static(t, i)


# -- error_on_graph_break -------------------------------------------------------------------------
class ErrorOnGraphBreakDecoratorContextManager:
    """What ``error_on_graph_break`` returns: as a context manager around compiled calls it
    holds for their captures; inside captured code (a ``with`` block, or a decorated function
    called there) the capture follows it while it traces the block."""

    def __init__(self, error_on_graph_break):
        self.error_on_graph_break = error_on_graph_break
        self.prev_error_on_graph_break = []

    def __call__(self, fn):
        @functools.wraps(fn)
        def inner(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)
        return inner

    def __enter__(self):
        self.prev_error_on_graph_break.append(_state.error_on_graph_break)
        _state.error_on_graph_break = self.error_on_graph_break

    def __exit__(self, exc_type, exc_val, exc_tb):
        _state.error_on_graph_break = self.prev_error_on_graph_break.pop()


def error_on_graph_break(error_on_graph_break):
    """Context manager/decorator: with True, a graph break (or a frame that cannot be captured)
    raises ``Unsupported`` instead of splitting the graph; False restores breaking. Under
    ``fullgraph=True`` every break raises anyway."""
    return ErrorOnGraphBreakDecoratorContextManager(error_on_graph_break)

