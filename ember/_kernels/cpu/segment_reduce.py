"""CPU kernels of segment_reduce and _segment_reduce_backward (ATen's SegmentReduce.cpp).

The data is viewed as (outer, axis, inner) rows; each segment is a run of rows of one outer
index. The forward reduces all segments at once with ``ufunc.reduceat`` over (start, end)
boundary pairs, so gaps between segments (``unsafe`` lengths that do not cover the axis) are
skipped; the backward maps every covered row to its segment and applies ATen's per-reduction
rule, quirks included."""
import math

import numpy as np

from ._util import nd, wrap
from ..rules.segment_reduce import check_segment_reduce, check_segment_reduce_backward

_UFUNC = {"max": np.maximum, "min": np.minimum, "sum": np.add, "mean": np.add,
          "prod": np.multiply}
_EMPTY = {"max": -np.inf, "min": np.inf, "sum": 0, "mean": np.nan, "prod": 1}


def _bounds(seg, is_offsets, size, unsafe):
    """(starts, ends) of every segment, (outer, count) int64, checked to lie in [0, size]."""
    s = nd(seg).astype(np.int64).reshape(-1, seg._size[-1])
    if is_offsets:
        starts, ends = s[:, :-1], s[:, 1:]
    else:
        if not unsafe:
            if s.size and s.min() < 0:
                raise RuntimeError("lengths contains negative value!")
            if not (s.sum(axis=1) == size).all():
                raise RuntimeError("segment_reduce(): Expected all rows of lengths along axis "
                                   "to sum to data.size(lengths.dim()-1) when !unsafe.")
        ends = np.cumsum(s, axis=1)
        starts = ends - s
    if (ends < starts).any():
        raise RuntimeError("Expected segment_length >= 0 to be true, but got false.  (Could "
                           "this error message be improved?  If so, please report an "
                           "enhancement request to PyTorch.)")
    if starts.size and (starts.min() < 0 or ends.max() > size):
        # ATen reads past the data here; refuse instead
        raise RuntimeError(f"segment_reduce(): segments must lie within data.size(axis)={size}")
    return starts, ends


def _rows(data, axis):
    """data as (outer, axis, inner)."""
    x = nd(data)
    return x.reshape(math.prod(x.shape[:axis]), x.shape[axis], -1)


def segment_reduce_kernel(data, reduce, lengths=None, indices=None, offsets=None, axis=0,
                          unsafe=False, initial=None):
    red, axis, seg, is_offsets, shape = check_segment_reduce(data, reduce, lengths, indices,
                                                             offsets, axis)
    x = _rows(data, axis)
    outer, size, inner = x.shape
    starts, ends = _bounds(seg, is_offsets, size, unsafe)
    count = starts.shape[1]
    dt = x.dtype
    init = _EMPTY[red] if initial is None else initial
    out = np.full((outer, count, inner), init, dt)
    nonempty = ends > starts
    if nonempty.any() and inner:
        # boundaries as flat row numbers; one zero row appended so that an end may equal the
        # row count; reduceat over (start, end) pairs reduces [start, end) at the even slots
        rows = np.concatenate([x.reshape(outer * size, inner), np.zeros((1, inner), dt)])
        base = (np.arange(outer) * size)[:, None]
        pairs = np.stack([(starts + base)[nonempty], (ends + base)[nonempty]], 1).ravel()
        reduced = _UFUNC[red].reduceat(rows, pairs, axis=0)[::2]
        if initial is not None:
            reduced = _UFUNC[red](np.asarray(initial, dt), reduced)
        if red == "mean":
            reduced = reduced / (ends - starts)[nonempty][:, None].astype(dt)
        out[nonempty] = reduced.astype(dt, copy=False)
    out = out.reshape(*shape[:axis], count, *shape[axis + 1:])
    return wrap(out)


def _segment_reduce_backward_kernel(grad, output, data, reduce, lengths=None, offsets=None,
                                    axis=0, initial=None):
    red, axis, seg, is_offsets, shape = check_segment_reduce_backward(
        grad, output, data, reduce, lengths, offsets, axis)
    x = _rows(data, axis)
    outer, size, inner = x.shape
    dt = x.dtype
    starts, ends = _bounds(seg, is_offsets, size, True)
    count = starts.shape[1]
    res = np.zeros((outer * size, inner), dt)
    lens = (ends - starts).ravel()
    if lens.sum() == 0 or inner == 0:
        return wrap(res.reshape(data._size))
    # every covered row: its flat row number and its segment's flat number
    seg_of_row = np.repeat(np.arange(outer * count), lens)
    first = np.repeat((starts + (np.arange(outer) * size)[:, None]).ravel(), lens)
    row = first + np.arange(lens.sum()) - np.repeat(np.cumsum(lens) - lens, lens)
    g = nd(grad).reshape(outer, count, inner).reshape(-1, inner)[seg_of_row]
    o = nd(output).reshape(outer, count, inner).reshape(-1, inner)[seg_of_row]
    v = x.reshape(-1, inner)[row]
    if red == "sum":
        res[row] = g
    elif red == "mean":
        res[row] = g / lens[seg_of_row][:, None].astype(dt)
    elif red in ("max", "min"):
        hit = np.isnan(v) | (v == o)
        gi = np.where(hit, g, np.zeros((), dt))
        counter = np.zeros((outer * count, inner), np.int64)
        np.add.at(counter, seg_of_row, hit.astype(np.int64))
        c = counter[seg_of_row]
        # ATen shares a tied segment's gradient among its maxima, but only where it is
        # positive (it tests grad_input > 0); negative gradients stay whole
        share = (c >= 2) & (gi > 0)
        res[row] = np.where(share, gi / np.maximum(c, 1).astype(dt), gi)
    else:  # prod: grad * output / value, or the explicit product of the others at 0 / NaN
        init = dt.type(1 if initial is None else initial)
        with np.errstate(divide="ignore", invalid="ignore"):
            gi = (g * o) / v
        special = np.isnan(v) | (v == 0)
        for k in np.flatnonzero(special.any(axis=1)):
            r, s = row[k], seg_of_row[k]
            b, j = divmod(int(s), count)
            lo, hi = b * size + starts[b, j], b * size + ends[b, j]
            others = np.delete(x.reshape(-1, inner)[lo:hi], r - lo, axis=0)
            excl = init * np.prod(others, axis=0, dtype=dt)
            gi[k] = np.where(special[k], g[k] * excl, gi[k])
        res[row] = gi
    return wrap(res.reshape(data._size))
