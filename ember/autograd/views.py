"""Views + in-place: ``CopySlices`` (PyTorch's ``torch/csrc/autograd/functions/tensor.cpp``).

When an in-place op writes through a view ``v`` of ``base``, the base's history must change too:
``base.grad_fn`` becomes a ``CopySlices`` wrapping the in-place op's node ``fn``. Its backward
takes the gradient of the whole base, runs ``fn`` on the slice the view covers, writes the result
back into that slice (the rest of the base passes through unchanged), and sends ``fn``'s other
gradients to ``fn``'s other inputs. The view's own ``grad_fn`` becomes an ``AsStridedBackward0``
reading its slice out of the new base history.
"""
from .graph import Node, gradient_edge

__all__ = ["CopySlices", "copy_slices"]


def _E():
    import ember
    return ember


class CopySlices(Node):
    def __init__(self, base, view, fn):
        super().__init__()
        self.fn = fn
        self.base_geom = (tuple(base._size), tuple(base._stride), base._offset)
        self.view_geom = (tuple(view._size), tuple(view._stride), view._offset)
        self._next = (gradient_edge(base),) + tuple(fn._next[1:])
        self._edge_meta = ((base._size, base._dtype),) + tuple(fn._edge_meta[1:])
        self._out_meta = ((base._size, base._dtype, base._device),)

    def name(self):
        return "torch::autograd::CopySlices"

    def apply(self, grads):
        E = _E()
        grad = grads[0]
        bsize, bstride, boff = self.base_geom
        vsize, vstride, voff = self.view_geom
        # result: the base's gradient laid out like the base, so the view's geometry applies
        result = E.empty_strided(bsize, bstride, dtype=grad._dtype, device=grad._device)
        result.copy_(grad)
        grad_slice = result.as_strided(vsize, vstride, voff - boff + result._offset)
        res = self.fn.apply([grad_slice.clone()])
        if res[0] is not None:
            grad_slice.copy_(res[0])
        else:
            grad_slice.zero_() if hasattr(grad_slice, "zero_") else grad_slice.copy_(
                E.zeros(vsize, dtype=grad._dtype, device=grad._device))
        return [result] + list(res[1:])

    def release_variables(self):
        self.fn.release_variables()
        self._released = True


class AsStridedViewBackward(Node):
    """Gradient of a view w.r.t. its base after an in-place op rewrote the base's history."""

    def __init__(self, base, view):
        super().__init__()
        self.base_geom = (tuple(base._size), tuple(base._stride), base._offset)
        self.view_geom = (tuple(view._size), tuple(view._stride), view._offset)
        self._next = (gradient_edge(base),)
        self._edge_meta = ((base._size, base._dtype),)
        self._out_meta = ((view._size, view._dtype, view._device),)

    def name(self):
        return "AsStridedBackward0"

    def apply(self, grads):
        E = _E()
        grad = grads[0]
        bsize, bstride, boff = self.base_geom
        vsize, vstride, voff = self.view_geom
        # a zero gradient laid out like the base, so the view's geometry applies to it
        result = E.empty_strided(bsize, bstride, dtype=grad._dtype, device=grad._device).copy_(
            E.zeros(bsize, dtype=grad._dtype, device=grad._device))
        result.as_strided(vsize, vstride, voff - boff + result._offset).copy_(grad)
        return [result]


def copy_slices(view, fn):
    """Rebase history after in-place op ``fn`` wrote through ``view``."""
    base = view._base_
    if not base.is_non_overlapping_and_dense():
        raise RuntimeError("ember: in-place operation on a view of a base with overlapping or "
                           "non-dense memory is not supported by autograd")
    cs = CopySlices(base, view, fn)
    base._grad_fn = cs
    base._output_nr = 0
    base._requires_grad = True
    view._grad_fn = AsStridedViewBackward(base, view)
    view._output_nr = 0
    view._requires_grad = True
