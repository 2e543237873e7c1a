"""``ember.compiler`` (PyTorch's ``torch.compiler``): the user-facing controls of
``ember.compile`` — reset the caches, ask whether code is being captured, keep a function out
of capture, or capture a function as one graph call."""
__all__ = ["reset", "is_compiling", "is_dynamo_compiling", "is_exporting", "disable",
           "allow_in_graph", "assume_constant_result", "compile", "cudagraph_mark_step_begin"]


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
