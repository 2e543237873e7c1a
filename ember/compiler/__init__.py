"""``ember.compiler`` (PyTorch's ``torch.compiler``): the user-facing controls of
``ember.compile`` — reset the caches, ask whether code is being captured, keep a function out
of capture, capture a function as one graph call, set the compiler's stance, pick the default
backend, substitute a traceable function for another, mark regions captured once and reused,
run NumPy functions on tensors, and filter guards (the ``*_unsafe`` functions, given as
``ember.compile(..., options={"guard_filter_fn": ...})``)."""
from . import config  # noqa: F401

__all__ = ["reset", "is_compiling", "is_dynamo_compiling", "is_exporting", "disable",
           "allow_in_graph", "assume_constant_result", "compile", "cudagraph_mark_step_begin",
           "config", "substitute_in_graph", "list_backends", "set_default_backend",
           "get_default_backend", "set_stance", "wrap_numpy", "nested_compile_region",
           "keep_portable_guards_unsafe", "skip_guard_on_inbuilt_nn_modules_unsafe",
           "skip_guard_on_all_nn_modules_unsafe", "keep_tensor_guards_unsafe",
           "skip_guard_on_globals_unsafe", "skip_all_guards_unsafe"]


def compile(*args, **kwargs):
    from .. import compile as _compile
    return _compile(*args, **kwargs)


def reset():
    """Forget every compiled entry."""
    from .. import _dynamo
    _dynamo.reset()


def is_compiling():
    """True while ember captures the calling code (inside a compiled region the capture folds
    this call to ``True``); False when it runs eagerly."""
    from .._dynamo.eval_frame import is_compiling as _ic
    return _ic()


is_dynamo_compiling = is_compiling

# set by ember.export while it traces (PyTorch's flag of the same name)
_is_exporting_flag = False


def is_exporting():
    """True while ``ember.export`` traces the calling code (stricter than
    :func:`is_compiling`: ``ember.compile`` does not set it)."""
    return _is_exporting_flag


def disable(fn=None, recursive=True, *, reason=None):
    """Never capture ``fn``: calling it from a compiled region is a graph break."""
    from .._dynamo import disable as _disable
    return _disable(fn, recursive, reason=reason)


def allow_in_graph(fn):
    """Capture calls to ``fn`` as one graph node instead of inlining it."""
    from .._dynamo import allow_in_graph as _aig
    return _aig(fn)


def assume_constant_result(fn):
    """Treat ``fn``'s result as a constant of the capture: it is called once while capturing
    and its value is baked into the graph (PyTorch's contract: the caller promises it does not
    change)."""
    from .._dynamo import assume_constant_result as _acr
    return _acr(fn)


def cudagraph_mark_step_begin():
    """Mark the start of a new step for compiled CUDA graphs (``mode="reduce-overhead"``).

    PyTorch's cudagraph trees need the mark to know that outputs of earlier steps may be
    overwritten. ember's replays never overwrite an output still held — they move it to memory
    of its own first (``ember/_inductor/cudagraphs.py``) — so there is nothing to release
    here, and a program that marks its steps runs unchanged."""


def substitute_in_graph(original_fn, *, can_constant_fold_through=False,
                        skip_signature_check=False):
    """Register the decorated function as a traceable stand-in for ``original_fn`` (usually a
    C function): captured code calling ``original_fn`` traces the stand-in; eager code calls
    ``original_fn`` (the decorator returns a function doing so)."""
    from .._dynamo.decorators import substitute_in_graph as _sig
    return _sig(original_fn, can_constant_fold_through=can_constant_fold_through,
                skip_signature_check=skip_signature_check)


def list_backends(exclude_tags=("debug", "experimental")):
    """The names ``ember.compile(..., backend=name)`` takes, without those tagged
    ``exclude_tags``."""
    from .._dynamo import list_backends as _lb
    return _lb(exclude_tags)


def set_default_backend(backend):
    """Set the backend ``ember.compile`` uses when given none (None: back to
    ``"inductor"``)."""
    from .._dynamo.backends.registry import set_default_backend as _sdb
    _sdb(backend)


def get_default_backend():
    """The backend ``ember.compile`` uses when given none (initially ``"inductor"``)."""
    from .._dynamo.backends.registry import get_default_backend as _gdb
    return _gdb()


def set_stance(stance="default", *, skip_guard_eval_unsafe=False, force_backend=None):
    """Set the compiler's stance; usable as a function, a context manager and a decorator.

    Stances: "default" (compile); "force_eager" (every compiled function runs eagerly);
    "eager_on_recompile" (cached entries run, a miss runs eagerly instead of capturing);
    "fail_on_recompile" (a miss raises RuntimeError); "eager_then_compile" (the first call of
    a function runs eagerly, its sizes recorded, so the first capture knows which dims change);
    "aot_eager_then_compile" (the same, the first call through the aot_eager backend).
    ``skip_guard_eval_unsafe``: check only the guards that told a function's cached entries
    apart (tensor metadata, and what failed on recompiles) — unsafe: a change elsewhere goes
    unseen. ``force_backend``: with "default", compile with this backend instead. Calling it
    inside captured code is an error."""
    from .._dynamo.decorators import set_stance as _ss
    return _ss(stance, skip_guard_eval_unsafe=skip_guard_eval_unsafe,
               force_backend=force_backend)


set_stance._dynamo_forbidden = True


def wrap_numpy(fn):
    """Make ``fn``, a function of NumPy arrays, a function of tensors: tensor arguments
    (nested in lists, tuples, dicts) are passed as arrays (``Tensor.numpy()``) and the arrays
    it returns come back as tensors (``ember.as_tensor``). ember's capture does not trace
    NumPy: inside a compiled function its call is a graph break (it runs eagerly)."""
    import functools
    import numpy as np
    from .._tensor import Tensor
    from .. import as_tensor
    from ..utils import _pytree as pytree

    @functools.wraps(fn)
    def wrap(*args, **kwargs):
        args, kwargs = pytree.tree_map_only(Tensor, lambda x: x.numpy(), (args, kwargs))
        out = fn(*args, **kwargs)
        return pytree.tree_map_only(np.ndarray, as_tensor, out)
    return wrap


def nested_compile_region(fn=None, *, options=None, max_reuse_entries=8, reuse_hash_fn=None):
    """Mark ``fn`` (also usable as a decorator) as a region ``ember.compile`` captures once and
    reuses: its first call in a capture is traced into a subgraph, and every call with
    arguments of the same metadata (or the same ``reuse_hash_fn`` key) calls that subgraph
    (``invoke_subgraph``); other arguments trace another subgraph, up to
    ``max_reuse_entries`` of them. A graph break inside the region is an error. Eagerly the
    function runs as itself. ``options`` (a backend for the region) is PyTorch's experimental
    setting, refused as PyTorch refuses it by default."""
    if options is not None:
        raise RuntimeError("nested_compile_region config is an experimental feature for "
                           "testing only.")
    from .._higher_order_ops.invoke_subgraph import mark_compile_region
    return mark_compile_region(fn, options=options, max_reuse_entries=max_reuse_entries,
                               reuse_hash_fn=reuse_hash_fn)


# -- guard filters (ember.compile(..., options={"guard_filter_fn": f})) -----------------------
def keep_portable_guards_unsafe(guard_entries):
    """Keep only the guards on tensors the frame was given (their metadata and dynamic
    sizes) and on the global state (grad mode, autocast, default dtype, ...). Unsafe."""
    return [g.guard_type in ("GLOBAL_STATE", "SHAPE_ENV")
            or (g.guard_type == "TENSOR_MATCH" and not g.is_global) for g in guard_entries]


def skip_guard_on_inbuilt_nn_modules_unsafe(guard_entries):
    """Drop the guards on values read through ember.nn's own modules (``nn.Linear``, ...):
    their attributes are taken not to change. Unsafe."""
    return [not e.orig_guard.source.is_unspecialized_builtin_nn_module()
            for e in guard_entries]


def skip_guard_on_all_nn_modules_unsafe(guard_entries):
    """Drop the guards on values read through any nn.Module (user-defined and builtin), the
    modules themselves included. Unsafe."""
    return [not e.orig_guard.source.is_unspecialized_nn_module() for e in guard_entries]


def keep_tensor_guards_unsafe(guard_entries, keep_parameters=False):
    """Keep only the tensor guards (and of parameters only with ``keep_parameters``).
    Unsafe."""
    from ..nn.parameter import Parameter
    return [e.guard_type == "TENSOR_MATCH" and
            (keep_parameters or not isinstance(e.value, Parameter)) for e in guard_entries]


def skip_guard_on_globals_unsafe(guard_entries):
    """Drop the guards on globals. Unsafe."""
    return [not e.is_global for e in guard_entries]


def skip_all_guards_unsafe(guard_entries):
    """Drop every guard: the first capture runs for any input. Unsafe."""
    return [False for _ in guard_entries]
