"""The thread-local state that follows work onto another thread (PyTorch's
``at::ThreadLocalState``).

The autograd engine runs the backward nodes of CUDA tensors on a device thread; those nodes must
see the calling thread's grad mode, dispatch key sets, functorch layers, mode stacks and
saved-tensor hooks, as if they ran where ``backward()`` was called. :func:`capture` copies that
state (the containers too, so the two threads never share a stack) and :func:`restored` installs
a copy in the running thread for a block.

Per-thread counters (the autograd sequence number) and the profiler's state stay with their
thread, as in PyTorch.
"""
import contextlib

__all__ = ["capture", "restored"]


_LOCALS = []


def _locals():
    """The ``threading.local`` objects that travel (imported late, once: they live in layers
    above)."""
    if not _LOCALS:
        _LOCALS.append(_find_locals())
    return _LOCALS[0]


def _find_locals():
    from .._dispatch import tls
    from .._functorch import functional_wrapper, interpreter
    from ..amp import autocast_mode
    from ..autograd import anomaly_mode, graph
    from .. import overrides
    from ..utils import _python_dispatch
    from . import factory_defaults
    return (tls.state, interpreter._stack, functional_wrapper._tls, autocast_mode.state,
            anomaly_mode._state, graph._hooks, overrides._tls, _python_dispatch._tls,
            factory_defaults._tls)


def _copy(value):
    if isinstance(value, list):
        return list(value)
    if isinstance(value, dict):
        return dict(value)
    return value


def capture():
    """This thread's propagated state, as ``[(local, {attribute: value})]``."""
    return [(loc, {k: _copy(v) for k, v in vars(loc).items()}) for loc in _locals()]


@contextlib.contextmanager
def restored(snapshot):
    """Run the block with ``snapshot`` (from :func:`capture`) as this thread's state; the
    thread's own state comes back afterwards."""
    saved = [(loc, dict(vars(loc))) for loc, _ in snapshot]
    for loc, values in snapshot:
        vars(loc).update({k: _copy(v) for k, v in values.items()})
    try:
        yield
    finally:
        for loc, values in saved:
            vars(loc).clear()
            vars(loc).update(values)
