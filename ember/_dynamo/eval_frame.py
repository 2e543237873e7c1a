"""The entry points (PyTorch's ``eval_frame.py``): ``optimize``/``ember.compile`` wrap a function
or module; the wrapper owns the call, so no PEP 523 frame hook is needed. The wrapper is
generated Python with the function's own signature; it passes the frame's arguments (defaults
applied) and closure to the code object's dispatch function (``convert_frame.FrameState``).
Also ``disable``, ``allow_in_graph``, ``OptimizedModule``, the compiler's stance
(``set_stance``), ``optimize_assert`` and the recording that ``explain`` reads."""
import dataclasses
import functools
import threading
import types
import typing

from .._core.codegen import compile_source
from ..nn.modules.module import Module
from .backends.registry import lookup_backend
from .convert_frame import get_frame_state

__all__ = ["optimize", "optimize_assert", "OptimizedModule", "disable", "allow_in_graph",
           "assume_constant_result", "reset", "is_compiling", "DynamoStance"]


class _EvalState(threading.local):
    def __init__(self):
        self.disabled = 0
        # inside torch._dynamo.run(fn): cached entries run, a miss runs eagerly
        self.run_only = 0
        # error_on_graph_break(True) entered outside a capture: graph breaks raise
        self.error_on_graph_break = False


_state = _EvalState()
_disabled_fns = set()   # functions marked ember.compiler.disable: a graph break when called
_allowed_fns = set()    # allow_in_graph: captured as one graph call, not inlined
_disallowed_fns = set()  # disallow_in_graph (and graph_break): a graph break when called
_constant_result_fns = set()  # assume_constant_result: called at capture, its value a constant
_polyfills = {}         # substitute_in_graph: original (and its wrapper) -> traced stand-in
_recorders = []         # explain's collectors


@dataclasses.dataclass
class DynamoStance:
    """The compiler's stance (PyTorch's class of the same name), set by ``set_stance``."""
    stance: str = "default"
    skip_guard_eval_unsafe: bool = False
    backend: typing.Any = None


# The stances set_stance takes; another name is accepted there and refused at the next call
# of compiled code, as PyTorch does.
STANCES = ("default", "force_eager", "eager_on_recompile", "fail_on_recompile",
           "eager_then_compile", "aot_eager_then_compile")


class _StanceFlags:
    """What every dispatch reads: ``special`` is set while the stance changes how a call
    with cached entries runs (force_eager, a forced backend, guards skipped, an unknown
    stance); the other stances matter only on a cache miss."""
    special = False


_stance = DynamoStance()
_stance_flags = _StanceFlags()


def _set_stance(stance):
    """Make ``stance`` the current stance; returns the one it replaces."""
    global _stance
    from .convert_frame import _compiling
    if _compiling[0]:
        raise RuntimeError("attempted to set_stance in a torch.compile region")
    prior, _stance = _stance, stance
    _stance_flags.special = (stance.stance == "force_eager" or stance.stance not in STANCES
                             or stance.backend is not None or stance.skip_guard_eval_unsafe)
    return prior


class _DimRange(typing.NamedTuple):
    """A dim mark_dynamic named, with its bounds (None: unbounded), as PyTorch's."""
    dim: int
    min: typing.Optional[int]
    max: typing.Optional[int]


def marked_dynamic_dims(t):
    """The dims mark_dynamic named on ``t``, each with its (min, max) range (None: unbounded)."""
    return {r.dim: (r.min, r.max) for r in getattr(t, "_dynamo_dynamic_range", ())}


def _record_graph(gm, reason):
    # as PyTorch's explain: a break's reason is the reason its graph was compiled (a break
    # before any op, or a skipped frame, compiles no graph and reports none)
    for r in _recorders:
        r.graphs.append(gm)
        if reason.graph_break:
            r.break_reasons.append(reason)


def _record_guards(guards):
    for r in _recorders:
        r.guards.extend(guards)


def check_if_dynamo_supported():
    """RuntimeError on a Python whose bytecode the capture does not read (3.11 and 3.12 it
    does)."""
    import sys

    from .convert_frame import supported_python
    if not supported_python():
        raise RuntimeError(f"Python {sys.version_info.major}.{sys.version_info.minor}+ is not "
                           f"supported for torch.compile")


def is_dynamo_supported():
    try:
        check_if_dynamo_supported()
    except RuntimeError:
        return False
    return True


def is_compiling():
    from .convert_frame import _compiling
    return bool(_compiling[0])


def _signature_parts(fn):
    """(parameter list text, forwarding list text, namespace) mirroring ``fn``'s signature."""
    co = fn.__code__
    names = co.co_varnames
    npos, nkw = co.co_argcount, co.co_kwonlyargcount
    defaults = fn.__defaults__ or ()
    kwdefaults = fn.__kwdefaults__ or {}
    params, fwd = [], []
    first_default = npos - len(defaults)
    for i in range(npos):
        p = names[i]
        params.append(p + (f"=___d[{i - first_default}]" if i >= first_default else ""))
        fwd.append(p)
        if co.co_posonlyargcount and i == co.co_posonlyargcount - 1:
            params.append("/")
    i = npos
    star = None
    if co.co_flags & 0x04:
        star = names[npos + nkw]
    if star:
        params.append("*" + star)
    elif nkw:
        params.append("*")
    for j in range(nkw):
        p = names[i + j]
        params.append(p + (f"=___kwd[{p!r}]" if p in kwdefaults else ""))
        fwd.append(p)
    if star:
        fwd.append(star)
    if co.co_flags & 0x08:
        k = names[npos + nkw + (1 if star else 0)]
        params.append("**" + k)
        fwd.append(k)
    return params, fwd, {"___d": defaults, "___kwd": kwdefaults}


def _eager_call_text(fn):
    co = fn.__code__
    names = co.co_varnames
    npos, nkw = co.co_argcount, co.co_kwonlyargcount
    parts = list(names[:npos])
    i = npos + nkw
    if co.co_flags & 0x04:
        parts.append("*" + names[i])
        i += 1
    parts += [f"{n}={n}" for n in names[npos:npos + nkw]]
    if co.co_flags & 0x08:
        parts.append("**" + names[i])
    return ", ".join(parts)


def _wrap_function(fn, compiler_fn, fullgraph, owner=None, dynamic=None,
                   guard_filter_fn=None):
    """A function with ``fn``'s signature that runs ``fn`` through the capture cache."""
    if isinstance(fn, types.MethodType):
        inner = _wrap_function(fn.__func__, compiler_fn, fullgraph, owner or id(fn.__self__),
                               dynamic, guard_filter_fn)
        return types.MethodType(inner, fn.__self__)
    if isinstance(fn, functools.partial):
        return functools.partial(_wrap_function(fn.func, compiler_fn, fullgraph, owner,
                                                dynamic, guard_filter_fn),
                                 *fn.args, **fn.keywords)
    call = getattr(type(fn), "__call__", None)
    if not isinstance(fn, (types.FunctionType, type)) and isinstance(call, types.FunctionType):
        # a callable object: its __call__, bound to it
        inner = _wrap_function(call, compiler_fn, fullgraph, owner or id(fn), dynamic,
                               guard_filter_fn)
        return types.MethodType(inner, fn)
    if not isinstance(fn, types.FunctionType):
        raise TypeError(f"ember.compile expects a Python function, callable object or "
                        f"nn.Module, got {fn!r}")
    if fn in _disabled_fns or fn.__code__.co_flags & (0x20 | 0x80 | 0x100 | 0x200):
        return fn  # disabled, or a generator/coroutine function: runs eagerly (PyTorch skips)
    st = get_frame_state(fn.__code__, fn.__globals__, compiler_fn, fullgraph, owner,
                         dynamic=dynamic, guard_filter_fn=guard_filter_fn)
    return _entry_function(fn, st.dispatch, {"_frame_state": st})


def _entry_function(fn, dispatch, attrs):
    """The generated function with ``fn``'s signature that hands the frame's arguments and
    closure to ``dispatch`` (and runs ``fn`` itself inside ``disable()``)."""
    params, fwd, ns = _signature_parts(fn)
    ns.update(___dispatch=dispatch, ___fn=fn, ___closure=fn.__closure__, ___state=_state)
    name = fn.__name__ if fn.__name__.isidentifier() else "compiled_fn"
    src = (f"def {name}({', '.join(params)}):\n"
           f"    if ___state.disabled:\n"
           f"        return ___fn({_eager_call_text(fn)})\n"
           f"    return ___dispatch({', '.join(fwd + ['___closure'])})\n")
    compile_source(src, f"<ember dynamo entry {fn.__qualname__}>", ns)
    wrapper = ns[name]
    functools.update_wrapper(wrapper, fn)
    wrapper._torchdynamo_orig_callable = fn
    wrapper.__dict__.update(attrs)
    return wrapper


def _nested_entry_factory(code, f_globals, ndefaults, kwdefault_names, compiler_fn,
                          dynamic=None, guard_filter_fn=None):
    """For functions of ``code`` that are new objects at each call (a closure the captured
    frame made, or was given, whose call broke the graph): a function of such a function
    returning its entry, which runs it through the capture cache of ``code`` with its own
    defaults and closure."""
    st = get_frame_state(code, f_globals, compiler_fn, False, dynamic=dynamic,
                         guard_filter_fn=guard_filter_fn)
    shape = types.SimpleNamespace(__code__=code, __defaults__=(None,) * ndefaults,
                                  __kwdefaults__=dict.fromkeys(kwdefault_names))
    params, fwd, _ = _signature_parts(shape)
    name = code.co_name if code.co_name.isidentifier() else "compiled_fn"
    src = (f"def ___make(___fn):\n"
           f"    ___d = ___fn.__defaults__ or ()\n"
           f"    ___kwd = ___fn.__kwdefaults__ or {{}}\n"
           f"    ___closure = ___fn.__closure__\n"
           f"    def {name}({', '.join(params)}):\n"
           f"        if ___state.disabled:\n"
           f"            return ___fn({_eager_call_text(shape)})\n"
           f"        return ___dispatch({', '.join(fwd + ['___closure'])})\n"
           f"    return {name}\n")
    ns = {"___dispatch": st.dispatch, "___state": _state}
    compile_source(src, f"<ember dynamo nested entry {code.co_qualname}>", ns)
    return ns["___make"]


class OptimizedModule(Module):
    """Created by ``ember.compile(module)``: an ``nn.Module`` whose call runs the original
    module's ``_call_impl`` (hooks included) through the capture cache. ``_orig_mod`` is a
    submodule (state_dict keys start with ``_orig_mod.``, as PyTorch's); other attributes are
    read from the original module."""

    def __init__(self, mod, compiler_fn, fullgraph, dynamic=None, guard_filter_fn=None):
        super().__init__()
        self._orig_mod = mod
        object.__setattr__(self, "_compiled_call",
                           _wrap_function(mod._call_impl, compiler_fn, fullgraph, id(mod),
                                          dynamic, guard_filter_fn))

    def __call__(self, *args, **kwargs):
        return self._compiled_call(*args, **kwargs)

    def forward(self, *args, **kwargs):
        return self._compiled_call(*args, **kwargs)

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self._modules["_orig_mod"], name)


def optimize(backend="inductor", *, nopython=False, fullgraph=None, dynamic=None,
             disable=False, guard_filter_fn=None):
    """PyTorch's ``torch._dynamo.optimize``: a decorator that compiles with ``backend``.
    ``dynamic``: None specialises sizes first and makes a dim symbolic when a second size of it
    is seen (automatic dynamic); True makes input sizes symbolic from the start; False always
    specialises. ``guard_filter_fn`` (``ember.compile``'s ``options["guard_filter_fn"]``) is
    given each capture's guards as ``GuardFilterEntry`` values and returns one bool per guard:
    the guards it drops are not checked again (the ``torch.compiler.*_unsafe`` filters)."""
    compiler_fn = lookup_backend(backend)
    fg = bool(nopython or fullgraph)

    def decorate(fn):
        from ..nn.modules.module import Module
        if disable:
            return fn
        if isinstance(fn, Module):
            wrapped = OptimizedModule(fn, compiler_fn, fg, dynamic, guard_filter_fn)
            state = wrapped._compiled_call._frame_state
        else:
            wrapped = _wrap_function(fn, compiler_fn, fg, dynamic=dynamic,
                                     guard_filter_fn=guard_filter_fn)
            state = getattr(getattr(wrapped, "func", wrapped), "_frame_state", None)
        if state is not None:
            # what the user compiled (not a callee or a resume function): its frame holds
            # tensors as far as the stance's recompile check goes, as PyTorch's
            # always_optimize_code_objects
            state.always_optimize = True
        return wrapped
    return decorate


def optimize_assert(backend, *, dynamic=None):
    """PyTorch's ``torch._dynamo.optimize_assert``: :func:`optimize` that captures each frame
    as one graph — a graph break raises ``Unsupported`` (``error_on_graph_break`` cannot turn
    that off)."""
    return optimize(backend, nopython=True, dynamic=dynamic)


class disable:
    """``ember.compiler.disable(fn)``: never capture ``fn`` (a call to it inside a compiled
    region is a graph break; called from outside it runs eagerly). Without a function: a
    context manager that turns compilation off in its region, and a decorator
    (``@disable(recursive=False)``).

    ``recursive=False`` asks PyTorch to skip only ``fn``'s own frame and still compile the
    functions it calls. ember captures no frame it was not asked to compile (a compiled
    function's callees are inlined into its graph, not compiled on their own), so the two
    differ only in that PyTorch may compile a callee where ember runs it eagerly."""

    def __new__(cls, fn=None, recursive=True, *, reason=None):
        if fn is None:
            return super().__new__(cls)
        orig = getattr(fn, "_torchdynamo_orig_callable", fn)
        _disabled_fns.add(orig)
        try:  # what is_dynamo_disable_recursive reads
            orig._torchdynamo_disable_recursive = recursive
        except (AttributeError, TypeError):
            pass  # a builtin: nothing to mark
        return orig

    def __init__(self, fn=None, recursive=True, *, reason=None):
        self._recursive, self._reason = recursive, reason

    def __call__(self, fn):
        return disable(fn, self._recursive, reason=self._reason)

    def __enter__(self):
        _state.disabled += 1

    def __exit__(self, *exc):
        _state.disabled -= 1
        return False


def allow_in_graph(fn):
    """Capture calls to ``fn`` as one graph node (run on FakeTensors at capture time) instead
    of inlining it."""
    if isinstance(fn, (list, tuple)):
        return [allow_in_graph(f) for f in fn]
    _disallowed_fns.discard(fn)
    _allowed_fns.add(fn)
    return fn


def assume_constant_result(fn):
    """Call ``fn`` once while capturing and bake its value into the graph (the caller's
    promise: the value does not change); its arguments must be constants of the capture."""
    _constant_result_fns.add(fn)
    return fn


def reset():
    """Forget every compiled entry (``ember._dynamo.reset``)."""
    from . import convert_frame
    convert_frame.reset()
