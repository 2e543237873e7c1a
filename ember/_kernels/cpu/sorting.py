"""CPU kernels that order values: sort, topk, kthvalue, median/nanmedian, mode, unique (sorted,
by dim, consecutive), bincount, histc, searchsorted and bucketize.

``sort``/``argsort`` with ``stable=False`` (their default) order equal values as ATen's
``std::sort`` does (``introsort.py``), except where ATen's own sort is stable: a dimension of
stride 0, and the radix sort of a 1-d integer tensor of at least 32768 elements ascending.
Everything else that selects by rank goes through one stable sort (:func:`stable_argsort`:
NaN sorts last ascending and first descending, ties keep their input order), so the indices
PyTorch's stable CPU sort returns are reproduced. Where ATen picks among ties with a C++
selection instead (topk, kthvalue), the rows with ties replay it on the host; on device arrays (a GPU,
where finding those rows would read them back) the vectorised pick stands. The shape/dtype
rules and errors (``check_*``, ``*_shape``) are shared with the Meta kernels in
``meta/sorting.py``; the ops whose output size depends on the data (unique, bincount) have no
Meta kernel, as in PyTorch.
"""
import numpy as np

from ..._core import dtype as D
from ..._core import strides as _st
from . import _stl
from .introsort import unstable_argsort
from ._util import array_module, array_of, own, wrap
from ..rules.sorting import (_not_implemented, check_bucketize, check_histc, check_searchsorted,
                             check_selection, check_sort, kthvalue_shape, selection_dim, topk_shape)

# dtypes NumPy cannot order natively are compared as float32 (exact for both)
_KEY = {D.float16: np.float32, D.bfloat16: np.float32}


def _keys(self):
    """The tensor's values as an array NumPy sorts correctly (at least 1-d)."""
    a = self._nd()
    k = _KEY.get(self._dtype)
    if k is not None:
        a = a.astype(k)
    return a.reshape(1) if a.ndim == 0 else a


def stable_argsort(a, axis, descending=False):
    """Stable argsort along ``axis``; descending keeps ties in input order (not reversed)."""
    if not descending:
        return np.argsort(a, axis=axis, kind="stable")
    n = a.shape[axis]
    rev = np.argsort(np.flip(a, axis), axis=axis, kind="stable")
    return (n - 1) - np.flip(rev, axis)


def _result(self, values, idx, shape):
    idx = idx.reshape(shape).astype(np.int64, copy=False)
    return wrap(own(values.reshape(shape))), wrap(own(idx))


# -- sort / topk -------------------------------------------------------------------------------


# ATen's radix sort (stable) takes 1-d integer tensors of at least GRAIN_SIZE elements
_RADIX_NUMEL = 32768


def _atens_sort_is_stable(self, d, descending):
    """Where ATen's unstable sort gives the stable order: a dimension of stride 0 (the indices
    are left as filled) and its radix sort (1-d, integer, ascending, large)."""
    return (self._stride[d] == 0 if self._size else True) or (
        len(self._size) == 1 and not descending and self._dtype._category == D.INTEGRAL
        and self._size[0] >= _RADIX_NUMEL)


def _sort(self, dim, descending, stable):
    d = check_sort("sort", self, dim)
    a = self._nd()
    a1 = a.reshape(1) if a.ndim == 0 else a
    keys = _keys(self)
    idx = None
    if not stable and not _atens_sort_is_stable(self, d, descending):
        idx = unstable_argsort(keys, d, descending)
    if idx is None:
        idx = stable_argsort(keys, d, descending)
    return _result(self, np.take_along_axis(a1, idx, d), idx, self._size)


def sort(self, dim=-1, descending=False):
    return _sort(self, dim, descending, False)


def sort_stable(self, stable, dim=-1, descending=False):
    return _sort(self, dim, descending, bool(stable))


def _nan_first_gt(x, y):
    return (x[0] != x[0] and y[0] == y[0]) or x[0] > y[0]


def _nan_last_lt(x, y):
    return (x[0] == x[0] and y[0] != y[0]) or x[0] < y[0]


def _atens_topk_row(row, k, largest, sorted_):  # noqa: A002
    """The indices ATen's topk_impl_loop (TopKImpl.h) returns for one row: a partial sort when
    k is small against the row (k * 64 <= n), else nth_element and a sort of the first k - 1."""
    q = [(v, j) for j, v in enumerate(row.tolist())]
    n = len(q)
    comp = _nan_first_gt if largest else _nan_last_lt
    if k * 64 <= n:
        _stl.std_partial_sort(q, 0, k, n, comp)
    else:
        _stl.std_nth_element(q, 0, k - 1, n, comp)
        if sorted_:
            _stl.std_sort(q, 0, k - 1, comp)
    return [j for _, j in q[:k]]


def topk(self, k, dim=-1, largest=True, sorted=True):  # noqa: A002  (schema name)
    d, shape = topk_shape(self, k, dim)
    a = self._nd()
    xp = array_module(a)
    if a.ndim == 0:  # the value itself, whatever k (0 or 1)
        return wrap(a.copy()), wrap(xp.zeros((), np.int64))
    keys = np.moveaxis(_keys(self), d, -1)
    n = keys.shape[-1]
    rows = keys.reshape(_st.numel(keys.shape[:-1]), n)
    order = stable_argsort(rows, 1, largest)
    idx = order[:, :k].copy()
    if k and xp is np:
        # Where the first k + 1 values in order hold no tie, the answer is the sorted one
        # (ATen's partial sort for small k sorts them even when sorted=False); ties there
        # (which of equal values, in which order) and the order nth_element leaves for
        # sorted=False with a large k are whatever the C++ selection ATen runs leaves, so those
        # rows replay it (in Python: ~1 ms per 1000-element row). On a GPU the sorted answer
        # stands, ties in input order (PyTorch's CUDA topk, a radix select, does not follow
        # the CPU's tie order either).
        head = np.take_along_axis(rows, order[:, :k + 1], 1)
        tied = ((head[:, 1:] == head[:, :-1]) | ((head[:, 1:] != head[:, 1:]) &
                                                 (head[:, :-1] != head[:, :-1]))).any(axis=1)
        every_row = not sorted and k * 64 > n
        for r in (range(len(rows)) if every_row else np.nonzero(tied)[0]):
            idx[r] = _atens_topk_row(rows[r], k, largest, sorted)
    idx = np.moveaxis(idx.reshape(keys.shape[:-1] + (k,)), -1, d)
    return _result(self, np.take_along_axis(a, idx, d), idx, shape)


# -- rank selections along a dim: kthvalue, median, nanmedian, mode ------------------------------


def _select_rank(self, d, shape, rank):
    """Values and indices at stable-sorted position ``rank`` along ``d`` (``rank`` broadcasts
    against the input with ``d`` of size 1)."""
    a = self._nd()
    a1 = a.reshape(1) if a.ndim == 0 else a
    idx = stable_argsort(_keys(self), d)
    pick = np.take_along_axis(idx, np.broadcast_to(rank, idx.shape[:d] + (1,) + idx.shape[d + 1:]),
                              d)
    return _result(self, np.take_along_axis(a1, pick, d), pick, shape)


def _gt_or_nan(x, y):
    """ATen's selection order: NaN above everything, then ``>``."""
    return (x != x and y == y) or x > y


def _quick_select(row, k):
    """The input index ATen's ``quick_select_template`` (Sorting.cpp, Sedgewick's median-of-three
    partitioning) leaves at position ``k`` of ``row``: which of several equal values kthvalue
    reports."""
    arr = row.tolist()
    ind = list(range(len(arr)))

    def swap(i, j):
        arr[i], arr[j] = arr[j], arr[i]
        ind[i], ind[j] = ind[j], ind[i]

    gt = _gt_or_nan
    lo, hi = 0, len(arr) - 1
    while True:
        if hi <= lo:
            return ind[k]
        if hi == lo + 1:
            if gt(arr[lo], arr[hi]):
                swap(lo, hi)
            return ind[k]
        swap((lo + hi) >> 1, lo + 1)
        if gt(arr[lo + 1], arr[hi]):
            swap(lo + 1, hi)
        if gt(arr[lo], arr[hi]):
            swap(lo, hi)
        if gt(arr[lo + 1], arr[lo]):
            swap(lo + 1, lo)
        i, j, piv = lo + 1, hi, arr[lo]
        while True:
            i += 1
            while gt(piv, arr[i]):
                i += 1
            j -= 1
            while gt(arr[j], piv):
                j -= 1
            if j < i:
                break
            swap(i, j)
        swap(lo, j)
        if j <= k:
            lo = i
        if j >= k:
            hi = j - 1


def kthvalue(self, k, dim=-1, keepdim=False):
    d, shape = kthvalue_shape(self, k, dim, keepdim)  # (1 <= k <= n: no empty slice)
    keys = np.moveaxis(_keys(self), d, -1)
    n = keys.shape[-1]
    rows = keys.reshape(-1, n)
    kth = np.sort(rows, axis=-1)[:, k - 1:k]  # NumPy sorts NaN last, as ATen's order does
    # where the k-th value occurs once its index is unambiguous; where it is tied, the index is
    # the one ATen's quickselect ends on, so those rows replay it. On a GPU the first of the
    # tied indices stands (PyTorch's CUDA kthvalue, a radix select, does not follow the CPU's
    # choice either).
    same = (rows == kth) | ((rows != rows) & (kth != kth))
    picks = np.argmax(same, axis=-1)
    if array_module(rows) is np:
        for r in np.nonzero(same.sum(axis=-1) > 1)[0]:
            picks[r] = _quick_select(rows[r], k - 1)
    a = self._nd()
    a = np.moveaxis(a.reshape(1) if a.ndim == 0 else a, d, -1)
    vals = np.take_along_axis(a.reshape(-1, n), picks[:, None], -1)
    return _result(self, vals, picks, shape)


def _nan_counts(self, d):
    a = _keys(self)
    return np.sum(a != a, axis=d, keepdims=True), a.shape[d]


def median_dim(self, dim, keepdim=False):
    d, shape = selection_dim("median", self, dim, keepdim)
    n_nan, n = _nan_counts(self, d)
    # any NaN makes the median NaN: the first NaN sits right after the valid values
    return _select_rank(self, d, shape, np.where(n_nan > 0, n - n_nan, (n - 1) // 2))


def nanmedian_dim(self, dim, keepdim=False):
    d, shape = selection_dim("nanmedian", self, dim, keepdim)
    n_nan, n = _nan_counts(self, d)
    return _select_rank(self, d, shape, np.maximum((n - n_nan - 1) // 2, 0))


def _full_median(name, self):
    if _st.numel(self._size) == 0:  # NaN in the input's dtype, before any dtype check
        with np.errstate(invalid="ignore"):
            return wrap(np.array(np.nan).astype(self._dtype._np))
    check_selection(name, self)
    flat = wrap(self._nd().reshape(-1).copy())
    values, _ = (median_dim if name == "median" else nanmedian_dim)(flat, 0)
    return values


def median(self):
    return _full_median("median", self)


def nanmedian(self):
    return _full_median("nanmedian", self)


def mode(self, dim=-1, keepdim=False):
    d, shape = selection_dim("mode", self, dim, keepdim)
    a = self._nd()
    xp = array_module(a)
    if a.ndim == 0 or a.size == 0:  # one element (index 0) or no slices at all
        return _result(self, a.copy(), xp.zeros(a.shape, np.int64), shape)
    keys = np.moveaxis(_keys(self), d, -1)
    n = keys.shape[-1]
    rows = keys.reshape(-1, n)
    s = np.sort(rows, axis=1)
    # the runs of equal sorted values (NaN != NaN: each NaN a run of its own): a stable sort of
    # the 'no run starts here' flags lists a row's run starts first, in order, then n stands
    # for the runs it lacks; a run's length is the next start less its own (CuPy has no
    # maximum.accumulate to carry each run's start along)
    new_run = xp.ones(s.shape, bool)
    new_run[:, 1:] = s[:, 1:] != s[:, :-1]
    starts = np.where(xp.arange(n) < new_run.sum(axis=1, keepdims=True),
                      np.argsort(~new_run, axis=1, kind="stable"), n)
    length = xp.empty_like(starts)
    length[:, :-1] = starts[:, 1:] - starts[:, :-1]
    length[:, -1] = n - starts[:, -1]
    # the first longest run holds the smallest most frequent value, reported at its last index
    # (PyTorch's, where its std::sort keeps ties in order: rows of up to 16); a NaN mode (only
    # an all-NaN row has one: each NaN is a run of one, sorted last) at index 0
    first = np.take_along_axis(starts, np.argmax(length, axis=1)[:, None], 1)
    value = np.take_along_axis(s, first, 1)
    last = (n - 1) - np.argmax((rows == value)[:, ::-1], axis=1)[:, None]
    idx = np.where(value == value, last, 0)
    values = np.take_along_axis(np.moveaxis(a, d, -1).reshape(-1, n), idx, 1)
    return _result(self, values, idx, shape)


# -- unique (data-dependent sizes: no Meta kernels) ---------------------------------------------

def _empty_index():
    return wrap(np.zeros((0,), np.int64))


def _unique_outputs(self, values, inverse, counts, inverse_shape, return_inverse, return_counts):
    return (wrap(own(values.astype(self._dtype._np, copy=False))),
            wrap(own(inverse.reshape(inverse_shape).astype(np.int64))) if return_inverse
            else _empty_index(),
            wrap(own(counts.astype(np.int64))) if return_counts else _empty_index())


def _runs(s_rows_equal_prev, n):
    """Group ids (0-based) and counts from 'equal to the previous element' flags of length n."""
    new = np.ones(n, bool)
    new[1:] = ~s_rows_equal_prev
    group = np.cumsum(new) - 1
    starts = np.flatnonzero(new)
    return group, np.diff(np.append(starts, n)), starts


def _unique2(self, sorted=True, return_inverse=False, return_counts=False):  # noqa: A002
    if self._dtype.is_complex:
        _not_implemented("unique", self._dtype)
    flat = _keys(self).reshape(-1)
    order = np.argsort(flat, kind="stable")
    s = flat[order]
    # NaN != NaN, so every NaN is its own value, as in PyTorch (always sorted on CPU)
    group, counts, starts = _runs(s[1:] == s[:-1], s.size)
    inverse = np.empty(s.size, np.int64)
    inverse[order] = group
    values = self._nd().reshape(-1)[order[starts]]
    return _unique_outputs(self, values, inverse, counts, self._size, return_inverse,
                           return_counts)


def _unique_slices(self, dim, name):
    """(wrapped dim, rows: the slices along ``dim`` flattened to rows of keys)."""
    d = _st.wrap_dim(dim, len(self._size), scalar_ok=False)
    if _st.numel(self._size) == 0 and self._size[d] != 0:
        raise RuntimeError(f"There are 0 sized dimensions, and they aren't selected, so "
                           f"{name} cannot be applied")
    if self._dtype.is_complex:  # (ATen's kernels have no complex types)
        _not_implemented("unique_dim", self._dtype)
    keys = np.moveaxis(_keys(self), d, 0)
    return d, keys.reshape(keys.shape[0], _st.numel(keys.shape[1:]))


def _slices_out(self, d, take):
    return np.take(self._nd(), take, axis=d)


def unique_dim(self, dim, sorted=True, return_inverse=False, return_counts=False):  # noqa: A002
    d, rows = _unique_slices(self, dim, "unique")
    n = rows.shape[0]
    order = np.lexsort(rows.T[::-1]) if rows.shape[1] else np.arange(n)
    s = rows[order]
    group, counts, starts = _runs(np.all(s[1:] == s[:-1], axis=1), n)
    inverse = np.empty(n, np.int64)
    inverse[order] = group
    # along a dim PyTorch always returns the inverse and the counts
    return _unique_outputs(self, _slices_out(self, d, order[starts]), inverse, counts, (n,),
                           True, True)


def unique_consecutive(self, return_inverse=False, return_counts=False, dim=None):
    if dim is None or (dim == 0 and len(self._size) == 1):  # PyTorch's test, literally dim == 0
        if self._dtype.is_complex:  # (ATen's kernels have no complex types)
            _not_implemented("unique", self._dtype)
        flat = _keys(self).reshape(-1)
        group, counts, starts = _runs(flat[1:] == flat[:-1], flat.size)
        values = self._nd().reshape(-1)[starts]
        return _unique_outputs(self, values, group, counts, self._size, return_inverse,
                               return_counts)
    d, rows = _unique_slices(self, dim, "unique_consecutive")
    n = rows.shape[0]
    group, counts, starts = _runs(np.all(rows[1:] == rows[:-1], axis=1), n)
    return _unique_outputs(self, _slices_out(self, d, starts), group, counts, (n,), True, True)


# -- counting: bincount (data-dependent size), histc ------------------------------------------

def bincount(self, weights=None, minlength=0):
    if self._dtype._category != D.INTEGRAL:
        _not_implemented("bincount_cpu", self._dtype)
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    # weights of dtype float keep it; every other weights dtype counts in double
    rdt = D.int64 if weights is None else (D.float32 if weights._dtype is D.float32
                                           else D.float64)
    a = self._nd()
    if a.ndim == 1 and a.size == 0:  # (int64 counts even with weights, as ATen)
        return wrap(np.zeros((minlength,), np.int64))
    if a.ndim != 1 or a.min() < 0:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    w = None
    if weights is not None:
        if len(weights._size) != 1 or weights._size[0] != self._size[0]:
            raise RuntimeError("weights should be 1-d and have the same length as input")
        if rdt is D.float32:
            # ATen adds float weights one by one in float (np.bincount would add in double)
            out = np.zeros(max(minlength, int(a.max()) + 1), np.float32)
            np.add.at(out, a, weights._nd())
            return wrap(out)
        w = weights._nd().astype(np.float64)
    return wrap(own(np.bincount(a.astype(np.int64), w, minlength).astype(rdt._np, copy=False)))


def histc(self, bins=100, min=0, max=0):  # noqa: A002
    check_histc(self, bins, min, max)
    a = self._nd().reshape(-1).astype(np.float64)  # only for the range
    lo, hi = float(min), float(max)
    if lo == hi and a.size:
        lo, hi = float(a.min()), float(a.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise RuntimeError(f"torch.histc: range of [{lo}, {hi}] is not finite")
    # PyTorch's histc bins in the input's dtype (each operation rounded there):
    # floor((x - lo) * bins / (hi - lo)); x == hi belongs to the last bin
    t = self._dtype._np
    x = self._nd().reshape(-1)
    x = x[(x >= lo) & (x <= hi)]
    lo_t, hi_t = t.type(lo), t.type(hi)
    with np.errstate(all="ignore"):
        pos = ((x - lo_t) * t.type(bins) / (hi_t - lo_t)).astype(np.int64)
    pos = np.minimum(pos, bins - 1)
    return wrap(np.bincount(pos, minlength=bins).astype(t))


# -- searchsorted / bucketize ----------------------------------------------------------------


def _search_rows(s, v, side):
    """``np.searchsorted`` of each row of ``v`` (its last dim) in the same row of ``s``, in
    NumPy's order (NaN last). NumPy's and CuPy's searchsorted take one row of boundaries; here
    every value is searched at once, a branchless bisection whose steps depend on the row length
    alone (no loop over the rows, nothing read back)."""
    xp = array_module(s)
    m = s.shape[-1]
    v = v.reshape(_st.numel(s.shape[:-1]), v.shape[-1])
    if m == 0:
        return xp.zeros(v.shape, np.int64)
    flat = s.reshape(-1)
    v_nan = v != v if v.dtype.kind == "f" else None

    def before(b):  # whether boundary b counts before the value
        if side == "left":
            return b < v if v_nan is None else (b < v) | (v_nan & (b == b))
        return b <= v if v_nan is None else (b <= v) | v_nan

    first = xp.arange(0, flat.size, m)[:, None]  # each row's first boundary in flat
    base, n = first, m  # the position sought lies in [base, base + n] (less first)
    while n > 1:
        half = n // 2
        base = base + half * before(flat[base + half])
        n -= half
    return base - first + before(flat[base])


def _searchsorted(seq, values, self_shape, self_dtype, out_int32, right, side, sorter):
    np_side, rdt = check_searchsorted(seq, self_shape, self_dtype, out_int32, right, side, sorter)
    s = _keys(seq)
    if sorter is not None:
        s = np.take_along_axis(s, sorter._nd(), -1)
    v = array_of(values)
    if _KEY.get(self_dtype):
        v = v.astype(np.float64)
    # N-d boundaries: each leading row has its own
    r = np.searchsorted(s, v, np_side) if s.ndim == 1 else _search_rows(s, v, np_side)
    return wrap(own(array_of(r).reshape(self_shape).astype(rdt._np)))


def searchsorted_Tensor(sorted_sequence, self, out_int32=False, right=False, side=None,
                        sorter=None):
    return _searchsorted(sorted_sequence, self._nd(), self._size, self._dtype, out_int32, right,
                         side, sorter)


def searchsorted_Scalar(sorted_sequence, self, out_int32=False, right=False, side=None,
                        sorter=None):
    from ..._core.promotion import scalar_dtype
    return _searchsorted(sorted_sequence, self, (), scalar_dtype(self), out_int32, right, side,
                         sorter)


def bucketize_Tensor(self, boundaries, out_int32=False, right=False):
    check_bucketize(boundaries)
    return searchsorted_Tensor(boundaries, self, out_int32, right)


def bucketize_Scalar(self, boundaries, out_int32=False, right=False):
    check_bucketize(boundaries)
    return searchsorted_Scalar(boundaries, self, out_int32, right)
