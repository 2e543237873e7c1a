"""CPU kernels of advanced indexing: ``index.Tensor`` (gather by NumPy fancy indexing) and
``_index_put_impl_`` (scatter, optionally accumulating). Shapes and checks come from the meta
kernels; what only data can tell (bounds, mask counts) is checked here."""
import warnings

import numpy as np

from ..._core import dtype as D
from ..rules.indexing import check_index_put, index_shape
from ._util import add_rows_at, array_module, check_index_range, nd, wrap


def _mask_counts(indices):
    return {i: int(np.count_nonzero(nd(t))) for i, t in enumerate(indices)
            if t is not None and t._dtype in (D.bool_, D.uint8)}


def _numpy_index(self, indices):
    """The NumPy index tuple for ``indices``; integer indices are bounds-checked with PyTorch's
    message (the dim it names counts advanced indices only, as PyTorch's does)."""
    out, d, nth = [], 0, 0
    for t in indices:
        if t is None:
            out.append(slice(None))
            d += 1
            continue
        a = nd(t)
        if t._dtype is D.uint8:
            warnings.warn("indexing with dtype torch.uint8 is now deprecated, please use a dtype "
                          "torch.bool instead.", UserWarning, stacklevel=2)
            a = a.astype(np.bool_)
        if a.dtype == np.bool_:
            out.extend(np.nonzero(a))
            d += a.ndim
            nth += a.ndim
            continue
        size = self._size[d]
        if array_module(a) is not np:  # on a GPU: a device-side assert, as PyTorch's kernel
            check_index_range(a, -size, size, IndexError, "index out of bounds")
        elif a.size and (a.min() < -size or a.max() >= size):
            bad = a[(a < -size) | (a >= size)].flat[0]
            raise IndexError(f"index {bad} is out of bounds for dimension {nth} with size {size}")
        out.append(a)
        d += 1
        nth += 1
    return tuple(out)


def index_Tensor(self, indices):
    index_shape(self, indices, _mask_counts(indices))
    return wrap(np.ascontiguousarray(nd(self)[_numpy_index(self, indices)]))


def _leading_rows(a, idx, v):
    """(a as rows, row numbers, v as rows) when ``a[idx] += v`` adds whole trailing blocks:
    ``idx`` one 1-d integer array per leading dim, ``v`` one block per index, ``a``
    contiguous (its rows are views); else None."""
    k = len(idx) if isinstance(idx, tuple) else 0
    if not k or k >= a.ndim or not a.flags.c_contiguous or any(
            not isinstance(i, np.ndarray) or i.ndim != 1 or i.dtype.kind not in "iu" or
            i.shape != idx[0].shape for i in idx):
        return None
    n = idx[0].shape[0]
    if v.shape != (n,) + a.shape[k:] or v.size == 0:
        return None
    row = np.ravel_multi_index(idx, a.shape[:k], mode="wrap")  # (negatives count from the end)
    return a.reshape(-1, int(np.prod(a.shape[k:]))), row, v.reshape(n, -1)


def _index_put_impl_(self, indices, values, accumulate=False, unsafe=False):
    check_index_put(self, indices, values, _mask_counts(indices))
    a, idx, v = nd(self), _numpy_index(self, indices), nd(values)
    if np.may_share_memory(a, v):
        v = v.copy()
    if accumulate:
        rows = _leading_rows(a, idx, v)
        if rows is not None:  # whole rows added at index tuples (a sparse tensor's entries)
            add_rows_at(*rows)
        else:
            np.add.at(a, idx, v)
    else:
        a[idx] = v
    return self
