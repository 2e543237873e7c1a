"""Forward-mode AD (``torch.autograd.forward_ad``): dual levels, dual tensors, and where tangents
live.

A tangent is carried on its primal tensor (``Tensor._fw_grad``: a dict level -> tangent). The
autograd kernels generated from ``derivatives.yaml`` compute the outputs' tangents from the
inputs' tangents with the ops' forward formulas (``ember/autograd/derivatives.py``), for every
*visible* level: :data:`visible` lists them. Levels nest (``ember.func.jvp`` inside
``jvp``): a formula for level L is evaluated with only the levels below L visible, so its ops
carry the lower levels' tangents and the result is differentiable by the outer transforms. The
user API allows one level at a time, as PyTorch's does ("Nested forward mode AD is not
supported at the moment"); ``ember.func`` pushes its own levels with :func:`_push_level`.
"""
import contextlib
import weakref
from typing import NamedTuple, Optional

__all__ = ["dual_level", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual",
           "UnpackedDualTensor"]

# Levels live now, innermost last; every one is visible outside formula evaluation.
_active = []
# The levels whose tangents ops propagate right now (a list mutated in place: the generated
# autograd kernels test it on their fast path).
visible = []
# level -> weak references to the tensors holding a tangent at that level (cleared on exit)
_holders = {}
# the level of the user API (enter_dual_level), -1 when none
_current_level = -1


def _push_level():
    level = len(_active)
    _active.append(level)
    _holders[level] = []
    _sync()
    return level


def _pop_level(level):
    _active.remove(level)
    for ref in _holders.pop(level, ()):
        t = ref()
        if t is not None:
            d = getattr(t, "_fw_grad", None)
            if d is not None:
                d.pop(level, None)
                if not d:
                    t._fw_grad = None
    _sync()


def _sync():
    visible[:] = _active if _fwd_grad_enabled[0] else []


@contextlib.contextmanager
def _only_below(level):
    """Formula evaluation for ``level``: only the levels below it are visible."""
    saved = visible[:]
    visible[:] = [lv for lv in saved if lv < level]
    try:
        yield
    finally:
        visible[:] = saved


@contextlib.contextmanager
def _hide(level):
    saved = visible[:]
    visible[:] = [lv for lv in saved if lv != level]
    try:
        yield
    finally:
        visible[:] = saved


def get_tangent(t, level):
    d = getattr(t, "_fw_grad", None)
    return None if d is None else d.get(level)


def set_tangent(t, level, tangent):
    d = getattr(t, "_fw_grad", None)
    if d is None:
        d = t._fw_grad = {}
    if level not in d:
        _holders[level].append(weakref.ref(t))
    d[level] = tangent


def tangent_levels(t):
    """The visible levels at which ``t`` has a tangent."""
    d = getattr(t, "_fw_grad", None)
    if not d:
        return ()
    return [lv for lv in d if lv in visible]


def enter_dual_level():
    """Enter a new forward grad level; returns its index."""
    global _current_level
    if _current_level >= 0:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    _current_level = _push_level()
    return _current_level


def exit_dual_level(*, level=None):
    """Exit a forward grad level, deleting every tangent of that level."""
    global _current_level
    if level is None:
        level = _current_level
    if level != _current_level:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that was "
                           "created. This is not supported.")
    _pop_level(level)
    _current_level = -1


def make_dual(tensor, tangent, *, level=None):
    """A view of ``tensor`` with ``tangent`` as its forward gradient at ``level``."""
    if level is None:
        level = _current_level
    if level < 0:
        raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, "
                           "make sure to enter_dual_level() first.")
    if not (tensor.is_floating_point() or tensor.is_complex()):
        raise ValueError(f"Expected primal to be floating point or complex, but got: "
                         f"{tensor.dtype}")
    if not (tangent.is_floating_point() or tangent.is_complex()):
        raise ValueError(f"Expected tangent to be floating point or complex, but got: "
                         f"{tangent.dtype}")
    return _make_dual(tensor, tangent, level)


def _make_dual(tensor, tangent, level):
    from .._functorch.batched_tensor import BatchedTensor
    if tensor.__class__ is BatchedTensor or tangent.__class__ is BatchedTensor:
        return _make_dual_batched(tensor, tangent, level)
    if get_tangent(tensor, level) is not None:
        raise RuntimeError(f"Making a dual Tensor based on a Tensor that already has a forward "
                           f"gradient at the same level {level} is not supported.")
    if tuple(tangent.shape) != tuple(tensor.shape):
        raise RuntimeError(f"Trying to set a forward gradient that has a different size than "
                           f"that of the original Tensor, this is not supported. Tensor is of "
                           f"size {list(tensor.shape)} while the given forward gradient is of "
                           f"size {list(tangent.shape)}.")
    if tangent.dtype != tensor.dtype:
        tangent = tangent.to(tensor.dtype)
    with _hide(level):
        dual = tensor.view_as(tensor)
    set_tangent(dual, level, tangent)
    return dual


def _make_dual_batched(tensor, tangent, level):
    """Under vmap the tangent is carried on the physical tensors (as autograd records on them):
    primal and tangent are first batched at the same levels with the same dims."""
    from .._functorch.batched_tensor import BatchedTensor, physical, wrap_like
    from .._functorch.interpreter import find_vmap_layer
    levels = set()
    for x in (tensor, tangent):
        while x.__class__ is BatchedTensor:
            levels.add(x._level)
            x = x._value
    p, t = tensor, tangent
    for lvl in sorted(levels):
        layer = find_vmap_layer(lvl)
        p, t = _add_level(p, layer), _add_level(t, layer)
    from ember.func import _align_to
    t_phys = _align_to(t, p)
    return wrap_like(p, _make_dual(physical(p), t_phys, level))


def _add_level(x, layer):
    from ember.func import _add_level as add, _levels
    return x if layer.level in _levels(x) else add(x, layer)


class UnpackedDualTensor(NamedTuple):
    """Namedtuple returned by :func:`unpack_dual`: the primal and tangent of a dual tensor."""
    primal: object
    tangent: Optional[object]


def unpack_dual(tensor, *, level=None):
    """``(primal, tangent)`` of ``tensor``: ``primal`` is a view of it without the tangent of
    ``level``, ``tangent`` its tangent as is (None when it has none)."""
    if level is None:
        level = _current_level
    if level < 0:
        return UnpackedDualTensor(tensor, None)
    return _unpack_dual(tensor, level)


def _unpack_dual(tensor, level):
    from .._functorch.batched_tensor import BatchedTensor, physical, wrap_like
    if tensor.__class__ is BatchedTensor:
        p = physical(tensor)
        primal, tangent = _unpack_dual(p, level)
        return UnpackedDualTensor(wrap_like(tensor, primal),
                                  None if tangent is None else wrap_like(tensor, tangent))
    tangent = get_tangent(tensor, level)
    if tangent is None:
        return UnpackedDualTensor(tensor, None)
    with _hide(level):
        primal = tensor.view_as(tensor)
    return UnpackedDualTensor(primal, tangent)


class dual_level:
    """Context manager for forward AD: every forward AD computation happens inside it; on exit
    the level's tangents are deleted."""

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, exc_type, exc_value, traceback):
        exit_dual_level()

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__():
                return fn(*args, **kwargs)
        return wrapper


_fwd_grad_enabled = [True]


def _is_fwd_grad_enabled():
    return _fwd_grad_enabled[0]


class _set_fwd_grad_enabled:
    """Turn tangent propagation off (or on) inside the block."""

    def __init__(self, mode):
        self.prev = _fwd_grad_enabled[0]
        self._saved = visible[:]
        _fwd_grad_enabled[0] = bool(mode)
        visible[:] = _active if mode else []

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        _fwd_grad_enabled[0] = self.prev
        visible[:] = self._saved
