"""The functional foreach ops as decompositions into their single-tensor op: PyTorch generates a
per-element derivative for them, and decomposing gives ember the same gradients. (The in-place
forms the optimizers use have fast CPU kernels in ``cpu/foreach.py``.)"""
from ..rules.foreach import _check_lengths, foreach_norm_check
from ..._ops.overload import ops

_aten = ops.aten  # ops resolve when called: the op table is built after the kernels load


def _foreach_norm_Scalar(self, ord=2, dtype=None):
    """PyTorch's slow path (``foreach_tensor_norm_slow``): each tensor's vector norm, one
    dispatcher call each, so every backend that has ``linalg_vector_norm`` has this op. Its
    gradient is its own ``derivatives.yaml`` entry, as in PyTorch."""
    foreach_norm_check(self, ord)
    return tuple(_aten.linalg_vector_norm.default._call(t, ord, None, False, dtype) for t in self)


def _foreach_sqrt(self):
    _check_lengths(self)
    return tuple(_aten.sqrt.default._call(t) for t in self)


def _foreach_neg(self):
    _check_lengths(self)
    return tuple(_aten.neg.default._call(t) for t in self)


def _foreach_add_List(self, other, alpha=1):
    _check_lengths(self, other)
    return tuple(_aten.add.Tensor._call(t, o, alpha) for t, o in zip(self, other))


def _foreach_sub_List(self, other, alpha=1):
    _check_lengths(self, other)
    return tuple(_aten.sub.Tensor._call(t, o, alpha) for t, o in zip(self, other))
