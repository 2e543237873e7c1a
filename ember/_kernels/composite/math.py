"""Composite arithmetic kernels written in ember ops (every call goes through the dispatcher):
the aliases PyTorch decomposes (true_divide -> div, max.other -> maximum, where's Scalar forms
-> where.self), ``positive``, the two-output out= forms of max/min, and ``matmul``, which picks
dot / mv / mm / bmm by the operands' ranks exactly as ATen's ``matmul`` does."""
from ..._core import strides as _st
from .. import generic as _generic


def _aten():
    from ..._ops.overload import ops
    return ops.aten


# -- aliases -------------------------------------------------------------------------------------

def true_divide_Tensor(self, other):
    return _aten().div.Tensor._call(self, other)


def true_divide_Scalar(self, other):
    return _aten().div.Scalar._call(self, other)


def true_divide__Tensor(self, other):
    return _aten().div_.Tensor._call(self, other)


def true_divide__Scalar(self, other):
    return _aten().div_.Scalar._call(self, other)


def max_other(self, other):
    return _aten().maximum.default._call(self, other)


def min_other(self, other):
    return _aten().minimum.default._call(self, other)


def where_ScalarSelf(condition, self, other):
    return _aten().where.self._call(condition, self, other)


def where_ScalarOther(condition, self, other):
    return _aten().where.self._call(condition, self, other)


def where_Scalar(condition, self, other):
    return _aten().where.self._call(condition, self, other)


def positive(self):
    if self._dtype.name == "bool":
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return self


# -- out= forms whose out names differ from the returns' (PyTorch's max.dim_max quirk) ----------

def max_dim_max(self, dim, keepdim, max, max_values):  # noqa: A002  (schema names)
    _generic.write_out("max", _aten().max.dim._call(self, dim, keepdim), (max, max_values))
    return max, max_values


def min_dim_min(self, dim, keepdim, min, min_indices):  # noqa: A002
    _generic.write_out("min", _aten().min.dim._call(self, dim, keepdim), (min, min_indices))
    return min, min_indices


# -- matmul ----------------------------------------------------------------------------------------

def _reshape(t, shape):
    """``t`` viewed as ``shape``, through a contiguous copy when its strides do not allow it."""
    aten = _aten()
    shape = _st.infer_size(tuple(shape), _st.numel(t._size))
    if _st.compute_view_stride(t._size, t._stride, shape) is None:
        c = aten.empty.memory_format._call(t._size, t._dtype, None, t._device, None, None)
        t = aten.copy_.default._call(c, t, False)
    return aten.view.default._call(t, shape)


def _expand(t, shape):
    """``t`` broadcast to ``shape`` (stride 0 along the broadcast dims)."""
    if t._size == tuple(shape):
        return t
    off = len(shape) - len(t._size)
    stride = [0] * off + [0 if s == 1 and n != 1 else st
                          for s, st, n in zip(t._size, t._stride, shape[off:])]
    return _aten().as_strided.default._call(t, tuple(shape), tuple(stride), None)


def matmul(self, other):
    aten = _aten()
    d1, d2 = len(self._size), len(other._size)
    if d1 == 0 or d2 == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {d1}D "
                           f"and {d2}D")
    if d1 == 1 and d2 == 1:
        return aten.dot.default._call(self, other)
    if d1 == 2 and d2 == 1:
        return aten.mv.default._call(self, other)
    if d1 == 1 and d2 == 2:
        r = aten.mm.default._call(_reshape(self, (1, self._size[0])), other)
        return _reshape(r, (other._size[1],))
    if d1 == 2 and d2 == 2:
        return aten.mm.default._call(self, other)
    if d1 >= 3 and d2 <= 2:
        # fold the batch dims of self into its rows: one mm (or mv) instead of a bmm
        folded = _reshape(self, (-1, self._size[-1]))
        if d2 == 1:
            return _reshape(aten.mv.default._call(folded, other), self._size[:-1])
        r = aten.mm.default._call(folded, other)
        return _reshape(r, self._size[:-1] + (other._size[1],))
    # batched: broadcast the batch dims, then one bmm over the flattened batch
    n = self._size[-2] if d1 > 1 else 1
    m1 = self._size[-1]
    m2 = other._size[-2] if d2 > 1 else other._size[-1]
    p = other._size[-1] if d2 > 1 else 1
    batch = _st.broadcast_shapes(self._size[:-2], other._size[:-2])
    b = _st.numel(batch)
    t1 = _reshape(self, (n, m1)) if d1 == 1 else self
    t2 = _reshape(other, (m2, p)) if d2 == 1 else other
    t1 = _reshape(_expand(t1, batch + (n, m1)), (b, n, m1))
    t2 = _reshape(_expand(t2, batch + (m2, p)), (b, m2, p))
    r = aten.bmm.default._call(t1, t2)
    out_shape = batch + ((n,) if d1 > 1 else ()) + ((p,) if d2 > 1 else ())
    return _reshape(r, out_shape)


__all__ = ["true_divide_Tensor", "true_divide_Scalar", "true_divide__Tensor",
           "true_divide__Scalar", "max_other", "min_other", "where_ScalarSelf", "where_ScalarOther",
           "where_Scalar", "positive", "max_dim_max", "min_dim_min", "matmul"]
