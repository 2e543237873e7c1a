"""The virtualised ``ops`` handler (PyTorch's ``torch._inductor.virtualized``).

An IR node's ``inner_fn`` describes one element of its result by calling ``ops.load``,
``ops.add``, ``ops.exp``... ``ops`` forwards each call to whichever handler is installed: the C
code generator turns the calls into lines of C, an analysis handler records which buffers are
read. The same ``inner_fn`` therefore serves every consumer, and a lowering never sees a backend.
"""
import contextlib
import threading

__all__ = ["ops", "set_ops_handler", "V", "set_graph_handler"]

_state = threading.local()


class _OpsProxy:
    """``ops.<name>(...)`` calls ``<name>`` on the handler installed by :func:`set_ops_handler`
    when the call happens (so ``ops.add`` may be taken before a handler is installed)."""

    def __getattr__(self, name):
        def call(*args, **kwargs):
            handler = getattr(_state, "handler", None)
            if handler is None:
                raise RuntimeError(f"ops.{name} called with no ops handler installed")
            return getattr(handler, name)(*args, **kwargs)
        call.__name__ = name
        return call


ops = _OpsProxy()


@contextlib.contextmanager
def _installed(slot, value):
    prior = getattr(_state, slot, None)
    setattr(_state, slot, value)
    try:
        yield value
    finally:
        setattr(_state, slot, prior)


def set_ops_handler(handler):
    """``with set_ops_handler(h):`` ``ops.*`` calls go to ``h`` on this thread."""
    return _installed("handler", handler)


class _GraphSlot:
    """``V.graph``: the ``GraphLowering`` being built on this thread (lowerings read the fx
    node they lower and register the buffers they create through it)."""

    @property
    def graph(self):
        g = getattr(_state, "graph", None)
        if g is None:
            raise RuntimeError("no Inductor graph is being lowered")
        return g


V = _GraphSlot()


def set_graph_handler(graph):
    """``with set_graph_handler(g):`` ``V.graph`` is ``g`` on this thread."""
    return _installed("graph", graph)
