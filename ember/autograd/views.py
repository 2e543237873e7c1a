"""Views + in-place (PyTorch's ``torch/csrc/autograd/functions/tensor.cpp`` and the view parts
of ``variable.cpp``).

* ``CopySlices``: when an in-place op writes through a view ``v`` of ``base``, the base's history
  must change too: ``base.grad_fn`` becomes a ``CopySlices`` wrapping the in-place op's node
  ``fn``. Its backward takes the gradient of the whole base, runs ``fn`` on the slice the view
  covers, writes the result back into that slice (the rest of the base passes through
  unchanged), and sends ``fn``'s other gradients to ``fn``'s other inputs.
* View replay: a differentiable view remembers the version counter (shared with its base) when
  its ``grad_fn`` was set. Once an in-place write to the base (or to another view of it) moved
  the counter, its ``grad_fn`` is regenerated on next use as an ``AsStridedBackward0`` reading
  its slice out of the base's new history, as PyTorch does lazily in ``VariableHooks::grad_fn``.
* A view whose conjugate or negative bit differs from its base's (``_conj``, ``_neg_view``:
  PyTorch's views with metadata change, which record a ``view_fn``) is its slice of the base
  with those bits flipped: CopySlices flips them on the gradient's slice, and its regenerated
  ``grad_fn`` replays the slice and the flips on the base (``ConjBackward0`` ...).
* Views of a base that requires no grad (made with grad mode on) are noted on the base, weakly;
  when the base starts requiring grad (an in-place op recorded on it or through another view,
  ``requires_grad_()``) they follow it (:func:`views_follow_base`), as PyTorch's
  ``DifferentiableViewMeta::requires_grad`` reads the base's flag.
* Creation meta: views made in no_grad mode (of a base that requires grad) and the outputs of
  multi-output view ops (``unbind``, ``split``, ``split_with_sizes``) cannot be written in place
  while autograd records; :func:`check_view_inplace` raises PyTorch's errors.
"""
from weakref import ref as _ref

import ember

from .._core.tensor_impl import CONJUGATE, NEGATIVE
from .._dispatch import tls
from .graph import (_BACKWARD_SUFFIX, AutogradMeta, Node, autograd_meta, gradient_edge,
                    move_retains_grad_hook)

__all__ = ["CopySlices", "copy_slices", "regenerate_grad_fn", "track_views",
           "mark_no_grad_views", "note_view", "forget_view", "views_follow_base",
           "check_view_inplace"]

# CreationMeta values (PyTorch's enum names); the multi-output one carries the node's name and
# the output index for the message: (MULTI_OUTPUT_NODE, "Unbind", 0).
NO_GRAD_MODE = "NO_GRAD_MODE"
MULTI_OUTPUT_NODE = "MULTI_OUTPUT_NODE"

_NO_GRAD_MSG = ("A view was created in no_grad mode and is being modified inplace with grad mode "
                "enabled. Given that this use case is ambiguous and error-prone, it is forbidden. "
                "You can clarify your code by moving both the view and the inplace either both "
                "inside the no_grad block (if you don't want the inplace to be tracked) or both "
                "outside (if you want the inplace to be tracked).")
_NO_GRAD_INDIRECT_MSG = _NO_GRAD_MSG.replace(
    "is being modified inplace", "its base or another view of its base has been modified inplace")
_MULTI_MSG = ("Output {nr} of {name} is a view and is being modified inplace. This view is the "
              "output of a function that returns multiple views. Such functions do not allow "
              "the output views to be modified inplace. You should replace the inplace "
              "operation by an out-of-place one.")
_MULTI_INDIRECT_MSG = _MULTI_MSG.replace(
    "is being modified inplace", "its base or another view of its base has been modified inplace")


def _geom(t):
    return (tuple(t._size), tuple(t._stride), t._offset)


def _replays(base, view):
    """Whether ``view`` is more than a slice of its base's memory: its math bits differ, or it
    reads a complex base as real pairs (``view_as_real``, ``.real``/``.imag``)."""
    return (base._keyset ^ view._keyset) & (CONJUGATE | NEGATIVE) or (
        view._dtype is not base._dtype and base._dtype.is_complex and not view._dtype.is_complex)


def _replay(t, base, view):
    """``view`` replayed on ``t``, a tensor laid out like ``base`` (PyTorch's ``view_fn``): the
    view's slice, read as real pairs if it is, with the math bits it flipped flipped."""
    flips = base._keyset ^ view._keyset
    if view._dtype is not t._dtype and t._dtype.is_complex:
        if t._keyset & CONJUGATE:  # (view_as_real needs the memory as it is)
            t = t._conj()
        t = ember.view_as_real(t)
        offset = view._offset - 2 * base._offset + t._offset
    else:
        offset = view._offset - base._offset + t._offset
    # the flips before the slice (as_strided keeps them), so that a replayed slice's grad_fn is
    # PyTorch's AsStridedBackward0 and a whole-base one's ConjBackward0 or NegViewBackward0
    if flips & CONJUGATE and t._dtype.is_complex:
        t = t._conj()
    if flips & NEGATIVE:
        t = t._neg_view()
    if _geom(t) != (tuple(view._size), tuple(view._stride), offset):
        t = t.as_strided(view._size, view._stride, offset)
    return t


class _Layout:
    """What :func:`_replay` reads of a base or view (CopySlices keeps no storage alive)."""
    __slots__ = ("_size", "_stride", "_offset", "_dtype", "_keyset")

    def __init__(self, t):
        self._size, self._stride, self._offset = t._size, t._stride, t._offset
        self._dtype, self._keyset = t._dtype, t._keyset


def _view_grad_fn(base, view):
    """The ``grad_fn`` of ``view`` through ``base``'s current history: a slice of the base
    (``AsStridedBackward0``), or the view replayed on the base."""
    if not _replays(base, view):
        return AsStridedBackward0(base, view)
    with ember.enable_grad():
        return _replay(base, base, view)._grad_fn


class CopySlices(Node):
    def __init__(self, base, view, fn):
        super().__init__()
        self.fn = fn
        self.base_geom = _geom(base)
        self.view_geom = _geom(view)
        self.replay = (_Layout(base), _Layout(view)) if _replays(base, view) else None
        self._next = (gradient_edge(base),) + tuple(fn._next[1:])
        self._edge_meta = ((base._size, base._dtype),) + tuple(fn._edge_meta[1:])
        self._out_meta = ((base._size, base._dtype, base._device),)

    def name(self):
        return "torch::autograd::CopySlices"

    def apply(self, grads):
        grad = grads[0]
        bsize, bstride, boff = self.base_geom
        vsize, vstride, voff = self.view_geom
        # result: the base's gradient laid out like the base, so the view's geometry applies
        result = ember.empty_strided(bsize, bstride, dtype=grad._dtype, device=grad._device)
        result.copy_(grad)
        if self.replay is None:
            grad_slice = result.as_strided(vsize, vstride, voff - boff + result._offset)
        else:
            # e.g. a conjugate view: its gradient is the conjugate of the slice, and writing the
            # gradient for the view's old values through it conjugates it back into the base's
            grad_slice = _replay(result, *self.replay)
        res = self.fn.apply([grad_slice.clone()])
        if res[0] is not None:
            grad_slice.copy_(res[0])
        else:
            grad_slice.zero_()
        return [result] + list(res[1:])

    def release_variables(self):
        self.fn.release_variables()
        self._released = True


class AsStridedBackward0(Node):
    """Gradient of a view w.r.t. its base after an in-place op rewrote the base's history."""

    def __init__(self, base, view):
        super().__init__()
        self.base_geom = _geom(base)
        self.view_geom = _geom(view)
        self._next = (gradient_edge(base),)
        self._edge_meta = ((base._size, base._dtype),)
        self._out_meta = ((view._size, view._dtype, view._device),)

    def name(self):
        return "AsStridedBackward0"

    def apply(self, grads):
        from ._formulas import as_strided_backward  # loaded late: _formulas loads the op surface
        return [as_strided_backward(grads[0], *self.base_geom, *self.view_geom)]


def _set_view_history(view, fn):
    old_fn, old_nr = view._grad_fn, view._output_nr
    view._grad_fn = fn
    view._output_nr = 0
    view._requires_grad = True
    autograd_meta(view).view_version = view._vc[0]
    move_retains_grad_hook(view, old_fn, old_nr)


def copy_slices(view, fn):
    """Rebase history after in-place op ``fn`` wrote through ``view``."""
    base = view._base_
    if not base.is_non_overlapping_and_dense():
        raise RuntimeError("ember: in-place operation on a view of a base with overlapping or "
                           "non-dense memory is not supported by autograd")
    cs = CopySlices(base, view, fn)
    old_fn, old_nr = base._grad_fn, base._output_nr
    base._grad_fn = cs
    base._output_nr = 0
    base._requires_grad = True
    move_retains_grad_hook(base, old_fn, old_nr)
    _set_view_history(view, _view_grad_fn(base, view))
    views_follow_base(base)


def regenerate_grad_fn(view, meta):
    """The view's grad_fn after its base was written in place since it was last set; a view
    that may not be written in place has none to regenerate (PyTorch's handle_view_on_rebase,
    indirect)."""
    cm = meta.creation_meta
    if cm is not None:
        raise RuntimeError(_NO_GRAD_INDIRECT_MSG if cm[0] == NO_GRAD_MODE else
                           _MULTI_INDIRECT_MSG.format(nr=cm[2], name=cm[1]))
    base = view._base_
    if base._requires_grad:
        _set_view_history(view, _view_grad_fn(base, view))
    else:
        meta.view_version = view._vc[0]
    return view._grad_fn


# ---------------------------------------------------------------------------------------------
# Creation meta: called by the autograd kernels of view ops (ember/autograd/derivatives.py).

def track_views(outs, node, multi_output):
    """After a view op recorded ``node``: remember each view's version (for replay) and, for a
    multi-output op, forbid in-place writes to its outputs."""
    for o in outs:
        if o._base_ is None or o._grad_fn is not node:
            continue
        m = autograd_meta(o)
        m.view_version = o._vc[0]
        if multi_output:
            m.creation_meta = (MULTI_OUTPUT_NODE, _forward_name(node.name()), o._output_nr)


def mark_no_grad_views(out, base_requires_grad, node_name, multi_output):
    """A view op that did not record: in no_grad mode with a base that requires grad the views
    require grad too (as leaves) and cannot be written in place once grad mode is back; with
    grad mode on (nothing required grad) the views are noted on their base (``note_view``), and
    a multi-output op's outputs cannot be written in place."""
    outs = out if isinstance(out, (tuple, list)) else (out,)
    no_grad = not tls.state.grad_enabled
    for i, o in enumerate(outs):
        if o._base_ is None or not (o._dtype.is_floating_point or o._dtype.is_complex):
            continue
        if no_grad:
            if not base_requires_grad:
                continue
            o._requires_grad = True
            autograd_meta(o).creation_meta = (NO_GRAD_MODE,)
            continue
        note_view(o)
        if multi_output:
            autograd_meta(o).creation_meta = (MULTI_OUTPUT_NODE, _forward_name(node_name), i)


def note_view(view):
    """A view op's output made with grad mode on, from a base that requires no grad: remembered
    on the base (PyTorch's differentiable view of such a base requires grad once the base does,
    ``DifferentiableViewMeta::requires_grad``; see :func:`views_follow_base`). Runs after every
    such view op, so it is lean; dead entries are swept each time the table reaches a power of
    two (64 or more)."""
    base = view._base_
    if base is None or not (view._dtype.is_floating_point or view._dtype.is_complex):
        return
    m = base._autograd
    if m is None:
        m = base._autograd = AutogradMeta()
    views = m.views
    if views is None:
        m.views = {id(view): _ref(view)}
        return
    n = len(views)
    if n >= 64 and n & (n - 1) == 0:
        for k in [k for k, r in views.items() if r() is None]:
            del views[k]
    views[id(view)] = _ref(view)


def forget_view(view):
    """Drop ``view`` from its base's table of :func:`note_view` (its weak reference goes)."""
    base = view._base_
    m = base._autograd if base is not None else None
    if m is not None and m.views:
        m.views.pop(id(view), None)


def views_follow_base(base):
    """``base`` now requires grad (an in-place op recorded on it or on one of its views, or
    ``requires_grad_()``): its views made before, when it required none, follow — with a history
    through the base where it has one (``AsStridedBackward0``, as PyTorch regenerates it), as
    leaves that require grad where it is a leaf, as PyTorch's."""
    m = base._autograd
    views = m.views if m is not None else None
    if not views:
        return
    m.views = None
    for ref in views.values():
        v = ref()
        if v is None or v._base_ is not base or v._requires_grad or v._grad_fn is not None:
            continue
        if base._grad_fn is not None:
            _set_view_history(v, _view_grad_fn(base, v))
        else:
            v._requires_grad = True


def _forward_name(node_name):
    return _BACKWARD_SUFFIX.sub(r"\1", node_name)


def check_view_inplace(t):
    """PyTorch's ``handle_view_on_rebase``: raise for views that must not be written in place."""
    m = t._autograd
    if m is None or m.creation_meta is None or t._base_ is None:
        return
    cm = m.creation_meta
    if cm[0] == NO_GRAD_MODE:
        raise RuntimeError(_NO_GRAD_MSG)
    raise RuntimeError(_MULTI_MSG.format(nr=cm[2], name=cm[1]))
