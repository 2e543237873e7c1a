"""Helpers every CPU kernel uses: NumPy views of tensors and adoption of result arrays."""
import sys

import numpy as np

from ..._core.tensor_impl import wrap_array as wrap  # noqa: F401  (re-exported for kernels)


def nd(x):
    """The NumPy array behind a CPU tensor (cached on the tensor), or a Python scalar unchanged."""
    a = getattr(x, "_np", x)
    if a is None:
        return x._nd()
    return a


def array_module(a):
    """The module computing on array ``a``: NumPy, or CuPy for a device array. The CUDA key runs
    some CPU kernel bodies on device arrays (``ember/_kernels/cuda/shared.py``); a body that
    makes new arrays asks this for the module that makes them."""
    if a.__class__ is np.ndarray:
        return np
    root = type(a).__module__.partition(".")[0]
    return sys.modules[root] if root == "cupy" else np


# CuPy joins more than 8 arrays with one kernel that reads a table of their addresses copied
# from the host, a copy CuPy refuses while a CUDA graph captures the stream (PyTorch's cat passes
# the addresses as kernel arguments); up to 8 it copies each array with its own kernel. A device
# join is therefore made of groups of 8, each written into its slice of the result.
_CUPY_JOIN_GROUP = 8


def concatenate_arrays(arrays, axis):
    """``np.concatenate(arrays, axis)`` of arrays of one dtype; on device arrays, capturable."""
    xp = array_module(arrays[0])
    if xp is np or len(arrays) <= _CUPY_JOIN_GROUP:
        return xp.concatenate(arrays, axis=axis)
    return _grouped_concatenate(xp, arrays, axis)


def stack_arrays(arrays, axis):
    """``np.stack(arrays, axis)`` of arrays of one dtype; on device arrays, capturable."""
    xp = array_module(arrays[0])
    if xp is np or len(arrays) <= _CUPY_JOIN_GROUP:
        return xp.stack(arrays, axis=axis)
    return _grouped_concatenate(xp, [xp.expand_dims(a, axis) for a in arrays], axis)


def _grouped_concatenate(xp, arrays, axis):
    shape = list(arrays[0].shape)
    shape[axis] = sum(a.shape[axis] for a in arrays)
    out = xp.empty(shape, arrays[0].dtype)
    index = [slice(None)] * len(shape)
    start = 0
    for i in range(0, len(arrays), _CUPY_JOIN_GROUP):
        group = arrays[i:i + _CUPY_JOIN_GROUP]
        n = sum(a.shape[axis] for a in group)
        index[axis] = slice(start, start + n)
        xp.concatenate(group, axis=axis, out=out[tuple(index)])
        start += n
    return out


def check_index_range(index, low, high, error, message):
    """Refuse an element of ``index`` outside ``[low, high)``: on the host, ``error(message)`` at
    once; on a GPU (CuPy arrays) a device-side check, reported at the next synchronisation as
    PyTorch's CUDA kernels report theirs (``ember/cuda/_device_assert.py``: no host round trip,
    so the op stays asynchronous and can be captured in a graph)."""
    if index.size == 0:
        return
    if array_module(index) is np:
        if index.min() < low or index.max() >= high:
            raise error(message)
        return
    from ...cuda import _device_assert
    _device_assert.check_range(index, low, high, message)


def own(a):
    """A result array that does not alias any input (copy only if NumPy returned a view)."""
    if a.__class__ is not np.ndarray:
        return np.asarray(a) if array_module(a) is np else (a.copy() if a.base is not None else a)
    if a.base is not None:
        return a.copy()
    return a


def add_rows_at(out, idx, src):
    """``out[idx[i]] += src[i]`` for every i, rows of 2-d ``out``/``src`` (a repeated index
    gets each of its rows), in the order PyTorch's CPU kernels add them: into each row, its
    current value first, then the source rows in index order — as ``np.add.at``, which goes one
    element at a time. Here round r adds every index's r-th row at once (a fancy-index add:
    no index repeats within a round), ~10x faster for rows of more than a few elements; when
    an index repeats very often (many rounds), ``np.add.at`` is kept."""
    n = idx.size
    if n == 0:
        return
    if out.shape[1] < 8 or out.dtype.kind not in "fciu":  # short rows: add.at is as fast
        np.add.at(out, idx, src)
        return
    order = np.argsort(idx, kind="stable")
    sorted_idx = idx[order]
    new_run = np.concatenate(([True], sorted_idx[1:] != sorted_idx[:-1]))
    run_start = np.maximum.accumulate(np.where(new_run, np.arange(n), 0))
    rank = np.arange(n) - run_start  # how many earlier rows this index already had
    rounds = int(rank.max()) + 1
    if rounds > 16:
        np.add.at(out, idx, src)
        return
    src = src.astype(out.dtype, copy=False)
    for r in range(rounds):
        pick = order[rank == r]
        out[idx[pick]] += src[pick]
