"""The thread-local stack of function-transform layers.

Each active transform (a ``vmap``, a ``grad``/``vjp`` or a ``functionalize``) pushes a layer with a level, its depth
in the stack, so levels of live transforms are unique and increase inwards. A BatchedTensor
records the level of the vmap that created it; batching kernels always peel off the highest
level present among their arguments first, which is what makes ``vmap(vmap(f))`` work.
``grad`` reads the vmap layers beneath it to give per-sample gradients (see ember.func).

While any vmap layer is on the stack, FuncTorchVmapMode is in the thread's included key set so
random ops (which may have no tensor argument at all) reach the randomness kernels.
"""
import contextlib
import threading

from .._dispatch import tls as _tls
from .._dispatch.keys import K, bit

_VMAP_MODE = bit(K.FuncTorchVmapMode)


class VmapLayer:
    __slots__ = ("level", "batch_size", "randomness")
    kind = "vmap"

    def __init__(self, level, batch_size, randomness):
        self.level, self.batch_size, self.randomness = level, batch_size, randomness

    def __repr__(self):
        return f"VmapLayer(level={self.level}, batch_size={self.batch_size}, " \
               f"randomness={self.randomness!r})"


class GradLayer:
    __slots__ = ("level",)
    kind = "grad"

    def __init__(self, level):
        self.level = level

    def __repr__(self):
        return f"GradLayer(level={self.level})"


class _Stack(threading.local):
    def __init__(self):
        self.layers = []


_stack = _Stack()


def layers():
    return _stack.layers


def vmap_layers():
    return [la for la in _stack.layers if la.kind == "vmap"]


def current_vmap_layer():
    for la in reversed(_stack.layers):
        if la.kind == "vmap":
            return la
    return None


def _sync_vmap_mode():
    if any(la.kind == "vmap" for la in _stack.layers):
        _tls.state.included |= _VMAP_MODE
    else:
        _tls.state.included &= ~_VMAP_MODE


def vmap_increment_nesting(batch_size, randomness):
    """Push a vmap layer; its level (``torch._C._functorch._vmap_increment_nesting``)."""
    layer = VmapLayer(len(_stack.layers) + 1, batch_size, randomness)
    _stack.layers.append(layer)
    _sync_vmap_mode()
    return layer.level


def vmap_decrement_nesting():
    """Pop the innermost layer, a vmap layer; its level."""
    if not _stack.layers or _stack.layers[-1].kind != "vmap":
        raise RuntimeError("_vmap_decrement_nesting: the innermost transform is not a vmap")
    level = _stack.layers.pop().level
    _sync_vmap_mode()
    return level


@contextlib.contextmanager
def push_grad():
    layer = GradLayer(len(_stack.layers) + 1)
    _stack.layers.append(layer)
    try:
        yield layer
    finally:
        _stack.layers.remove(layer)


@contextlib.contextmanager
def hidden(layer):
    """Run with ``layer`` taken off the stack: what a randomness kernel does once it has dealt
    with its level, so the op it calls next is seen by the vmap layers below only."""
    idx = _stack.layers.index(layer)
    _stack.layers.pop(idx)
    _sync_vmap_mode()
    try:
        yield
    finally:
        _stack.layers.insert(idx, layer)
        _sync_vmap_mode()


@contextlib.contextmanager
def push_functionalize(reapply_views):
    """A ``functionalize`` layer: its level numbers the wrappers it makes (see
    ember._functorch.functional_wrapper, which keeps the layers that functionalize)."""
    from .functional_wrapper import push_layer
    slot = _FunctionalizeSlot(len(_stack.layers) + 1)
    _stack.layers.append(slot)
    try:
        with push_layer(slot.level, reapply_views) as fl:
            yield fl
    finally:
        _stack.layers.remove(slot)


class _FunctionalizeSlot:
    __slots__ = ("level",)
    kind = "functionalize"

    def __init__(self, level):
        self.level = level

    def __repr__(self):
        return f"FunctionalizeLayer(level={self.level})"


def find_vmap_layer(level):
    for la in _stack.layers:
        if la.kind == "vmap" and la.level == level:
            return la
    return None
