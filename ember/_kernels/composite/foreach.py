"""The functional foreach ops as decompositions into their single-tensor op: PyTorch generates a
per-element derivative for them, and decomposing gives ember the same gradients. (The in-place
forms the optimizers use have fast CPU kernels in ``cpu/foreach.py``.)"""
from ..rules.foreach import _check_lengths
from ..._ops.overload import ops

_aten = ops.aten  # ops resolve when called: the op table is built after the kernels load


def _foreach_sqrt(self):
    _check_lengths(self)
    return tuple(_aten.sqrt.default._call(t) for t in self)


def _foreach_neg(self):
    _check_lengths(self)
    return tuple(_aten.neg.default._call(t) for t in self)


def _foreach_add_List(self, other, alpha=1):
    _check_lengths(self, other)
    return tuple(_aten.add.Tensor._call(t, o, alpha) for t, o in zip(self, other))
