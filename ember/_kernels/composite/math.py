"""Composite arithmetic kernels written in ember ops (every call goes through the dispatcher):
the aliases PyTorch decomposes (true_divide -> div, max.other -> maximum, where's Scalar forms
-> where.self), ``positive``, the two-output out= forms of max/min, and ``matmul``, which picks
dot / mv / mm / bmm by the operands' ranks exactly as ATen's ``matmul`` does."""
from ..._core import strides as _st
from .. import generic as _generic
from ..._ops.overload import ops

_aten = ops.aten  # ops resolve when called: the op table is built after the kernels load


# -- aliases -------------------------------------------------------------------------------------

def true_divide_Tensor(self, other):
    return _aten.div.Tensor._call(self, other)


def true_divide_Scalar(self, other):
    return _aten.div.Scalar._call(self, other)


def true_divide__Tensor(self, other):
    return _aten.div_.Tensor._call(self, other)


def true_divide__Scalar(self, other):
    return _aten.div_.Scalar._call(self, other)


def max_other(self, other):
    return _aten.maximum.default._call(self, other)


def min_other(self, other):
    return _aten.minimum.default._call(self, other)


def where_ScalarSelf(condition, self, other):
    return _aten.where.self._call(condition, self, other)


def where_ScalarOther(condition, self, other):
    return _aten.where.self._call(condition, self, other)


def where_Scalar(condition, self, other):
    return _aten.where.self._call(condition, self, other)


def positive(self):
    if self._dtype.name == "bool":
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return self


# -- out= forms whose out names differ from the returns' (PyTorch's max.dim_max quirk) ----------

def max_dim_max(self, dim, keepdim, max, max_values):  # noqa: A002  (schema names)
    _generic.write_checked("max.dim", (self, dim, keepdim), _aten.max.dim._call(self, dim, keepdim),
                           (max, max_values))
    return max, max_values


def min_dim_min(self, dim, keepdim, min, min_indices):  # noqa: A002
    _generic.write_checked("min.dim", (self, dim, keepdim), _aten.min.dim._call(self, dim, keepdim),
                           (min, min_indices))
    return min, min_indices


# -- matmul ----------------------------------------------------------------------------------------
# The same aten ops as ATen's matmul (checked with a TorchDispatchMode): unsqueeze/squeeze_ for a
# vector operand of mm, reshape + mm/mv + _unsafe_view when self's batch dims fold into its rows,
# else expand + reshape to (batch, n, m) + bmm + _unsafe_view.

def matmul(self, other):
    aten = _aten
    d1, d2 = len(self._size), len(other._size)
    if d1 == 0 or d2 == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {d1}D "
                           f"and {d2}D")
    if d1 == 1 and d2 == 1:
        return aten.dot.default._call(self, other)
    if d1 == 2 and d2 == 1:
        return aten.mv.default._call(self, other)
    if d1 == 1 and d2 == 2:
        r = aten.mm.default._call(aten.unsqueeze.default._call(self, 0), other)
        return aten.squeeze_.dim._call(r, 0)
    if d1 == 2 and d2 == 2:
        return aten.mm.default._call(self, other)
    if d1 >= 3 and d2 <= 2:
        # fold the batch dims of self into its rows: one mm (or mv) instead of a bmm
        # (the row count spelled out, as ATen's folded_dim1: -1 is ambiguous for an empty self)
        folded = aten.reshape.default._call(self, (_st.numel(self._size[:-1]), self._size[-1]))
        if d2 == 1:
            r = aten.mv.default._call(folded, other)
            return aten._unsafe_view.default._call(r, self._size[:-1])
        r = aten.mm.default._call(folded, other)
        return aten._unsafe_view.default._call(r, self._size[:-1] + (other._size[1],))
    # batched: broadcast the batch dims, then one bmm over the flattened batch
    t1 = aten.unsqueeze.default._call(self, 0) if d1 == 1 else self
    t2 = aten.unsqueeze.default._call(other, -1) if d2 == 1 else other
    n, m1 = t1._size[-2:]
    m2, p = t2._size[-2:]
    batch = _st.broadcast_shapes(t1._size[:-2], t2._size[:-2])
    b = _st.numel(batch)
    t1 = aten.reshape.default._call(aten.expand.default._call(t1, batch + (n, m1), False),
                                    (b, n, m1))
    t2 = aten.reshape.default._call(aten.expand.default._call(t2, batch + (m2, p), False),
                                    (b, m2, p))
    r = aten.bmm.default._call(t1, t2)
    out_shape = batch + ((n,) if d1 > 1 else ()) + ((p,) if d2 > 1 else ())
    return aten._unsafe_view.default._call(r, out_shape)
