"""Rules of advanced indexing (index.Tensor, index_put), for every backend: argument checks and
result shapes and dtypes, with PyTorch's errors. The CPU kernels (``cpu/indexing.py``) and the
Meta kernels (``meta/indexing.py``) call them; this module imports no backend."""
from ..._core import dtype as D
from ..._core import strides as _st


_MASK_DTYPES = (D.bool_, D.uint8)


_INT_DTYPES = (D.int64, D.int32)


_fmt = _st._fmt_list


def index_shape(self, indices, mask_counts=None):
    """Result shape of ``self[indices]`` (PyTorch's index rules, NumPy's layout): ``None`` slots
    keep a dim; a k-dim mask stands for k index tensors of length ``mask_counts[i]`` (its number
    of true elements, known only on CPU); the advanced indices broadcast together, and their dims
    go where they are when adjacent, else first."""
    if not indices:
        raise IndexError("at least one index must be provided")
    dims, adv_shapes, adv_pos = [], [], []
    d = 0
    for slot, t in enumerate(indices):
        if t is None:
            dims.append(self._size[d] if d < len(self._size) else None)
            d += 1
            continue
        if t._dtype in _MASK_DTYPES:
            k = t.dim()
            if d + k > len(self._size):
                raise IndexError(f"too many indices for tensor of dimension {len(self._size)} "
                                 f"(got {d + k})")
            for j in range(k):
                if t._size[j] != self._size[d + j]:
                    raise IndexError(f"The shape of the mask {_fmt(t._size)} at index {j} does "
                                     f"not match the shape of the indexed tensor "
                                     f"{_fmt(self._size)} at index {d + j}")
            if mask_counts is None:
                raise NotImplementedError("aten::index: a boolean mask index needs its values to "
                                          "know the result shape; meta tensors have none")
            adv_shapes.append((mask_counts[slot],))
            adv_pos.extend(range(len(dims), len(dims) + k))
            dims.extend([None] * k)
            d += k
        elif t._dtype in _INT_DTYPES:
            adv_shapes.append(t._size)
            adv_pos.append(len(dims))
            dims.append(None)
            d += 1
        else:
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    if d > len(self._size):
        raise IndexError(f"too many indices for tensor of dimension {len(self._size)} (got {d})")
    try:
        bshape = _st.broadcast_shapes(*adv_shapes)
    except RuntimeError:
        raise IndexError("shape mismatch: indexing tensors could not be broadcast together with "
                         "shapes " + ", ".join(_fmt(s) for s in adv_shapes)) from None
    if not adv_pos:  # only None slots: every dim is kept
        return tuple(self._size)
    kept = [(i, n) for i, n in enumerate(dims) if i not in adv_pos]
    rest = self._size[d:]
    if adv_pos == list(range(adv_pos[0], adv_pos[-1] + 1)):
        before = tuple(n for i, n in kept if i < adv_pos[0])
        after = tuple(n for i, n in kept if i > adv_pos[-1])
        return before + bshape + after + rest
    return bshape + tuple(n for _, n in kept) + rest


def check_index_put(self, indices, values, mask_counts=None):
    """PyTorch's checks of ``index_put_``: same dtypes, values broadcastable to the result;
    the result's shape (None for a meta tensor indexed by a mask: that shape is data)."""
    if values._dtype is not self._dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{self._dtype._short} for the destination and {values._dtype._short} "
                           f"for the source.")
    if mask_counts is None and any(t is not None and t._dtype in _MASK_DTYPES
                                   for t in indices):
        # meta tensors: a mask's count is data, so the values' broadcast cannot be checked
        # (PyTorch's meta kernel checks no shape); the indices' shapes are (any count will do)
        index_shape(self, indices, [1] * len(indices))
        return None
    shape = index_shape(self, indices, mask_counts)
    try:
        ok = len(values._size) <= len(shape) and _st.broadcast_shapes(values._size, shape) == shape
    except RuntimeError:
        ok = False
    if not ok:
        raise RuntimeError(f"shape mismatch: value tensor of shape {_fmt(values._size)} cannot be "
                           f"broadcast to indexing result of shape {_fmt(shape)}")
    return shape
