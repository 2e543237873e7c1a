"""Helpers every CPU kernel uses: NumPy views of tensors and adoption of result arrays."""
import collections
import sys
import threading

import numpy as np

from ..._core.tensor_impl import wrap_array as wrap  # noqa: F401  (re-exported for kernels)
from . import add_rows


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
    if a.__class__ is np.ndarray or isinstance(a, np.generic):
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


_DEVICE_TABLES = collections.OrderedDict()  # (device, dtype, shape, bytes) -> device copy
_DEVICE_TABLE_BYTES = 64 << 20  # kept in all (the least recently used go first)
_device_table_bytes = 0
_tables_lock = threading.Lock()


def like(a, table):
    """``table``, a small array made on the host (an index table, a weight matrix), where array
    ``a`` lies: itself beside a NumPy array, a device copy beside a device array (CuPy takes no
    host arrays as operands; without the copy the op would leave the device altogether). Device
    copies are kept (64 MiB of them), so the same call again copies nothing: a CUDA graph
    capture, which refuses host-to-device copies, follows a warm-up call. A scalar is an operand
    CuPy takes as it is."""
    global _device_table_bytes
    xp = array_module(a)
    if xp is np or np.isscalar(table):
        return table
    table = np.ascontiguousarray(table)
    key = (getattr(getattr(a, "device", None), "id", None), table.dtype.str, table.shape,
           table.tobytes())
    with _tables_lock:
        found = _DEVICE_TABLES.get(key)
        if found is not None:
            _DEVICE_TABLES.move_to_end(key)
            return found
    found = xp.asarray(table)
    if table.nbytes <= _DEVICE_TABLE_BYTES // 4:
        with _tables_lock:
            if key not in _DEVICE_TABLES:
                _DEVICE_TABLES[key] = found
                _device_table_bytes += table.nbytes
            while _device_table_bytes > _DEVICE_TABLE_BYTES:
                _device_table_bytes -= _DEVICE_TABLES.popitem(last=False)[1].nbytes
    return found


def contiguous(a):
    """``np.ascontiguousarray(a)`` that leaves a device array on its device."""
    return array_module(a).ascontiguousarray(a)


def strided_view(a, shape, strides):
    """``as_strided``: a view of ``a``'s memory with ``shape`` and byte ``strides`` (NumPy's,
    or CuPy's for a device array: NumPy's reads the host interface a device array lacks)."""
    xp = array_module(a)
    return (np.lib.stride_tricks if xp is np else xp.lib.stride_tricks).as_strided(
        a, shape, strides)


def array_of(r):
    """``np.asarray(r)`` that leaves a device array (a device reduction's 0-dim result) on its
    device: CuPy refuses the implicit conversion."""
    return array_module(r).asarray(r)


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


def check_all(ok, error, message):
    """Refuse a False element of boolean array ``ok``: ``error(message)`` at once on the host;
    on a GPU a device-side check (:func:`check_index_range` of ``ok`` against ``[1, 2)``)."""
    if array_module(ok) is np:
        if not ok.all():
            raise error(message)
        return
    check_index_range(ok.astype(np.int8), 1, 2, error, message)


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
    element at a time. The C loop of ``add_rows.py`` does this where built (float32/float64);
    otherwise round r adds every index's r-th row at once (a fancy-index add: no index repeats
    within a round), ~10x faster for rows of more than a few elements; when an index repeats
    very often (many rounds), ``np.add.at`` is kept."""
    n = idx.size
    if n == 0:
        return
    if add_rows.add_rows(out, idx, src):  # the C loop: ATen's order at any repeat count
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


def fma_float32(a, b, c):
    """float32 ``a * b + c`` rounded once, as a fused multiply-add instruction rounds it
    (PyTorch's vectorized kernels, FBGEMM's quantization): the product is exact in double; the
    double sum differs from the exact one's float32 rounding only when it lands on a float32
    midpoint, and then the sum's rounding error says which way the exact value lies."""
    p = np.asarray(a, np.float64) * np.asarray(b, np.float64)
    c = np.asarray(c, np.float64)
    s = p + c
    with np.errstate(over="ignore", invalid="ignore"):  # (beyond float32: inf, as the FMA)
        r = np.asarray(s.astype(np.float32))
    tie = (s.view(np.uint64) & np.uint64(0x1FFFFFFF)) == np.uint64(0x10000000)
    if tie.any():
        bb = s - p
        err = (p - (s - bb)) + (c - bb)
        up = tie & (err > 0) & (r.astype(np.float64) < s)
        down = tie & (err < 0) & (r.astype(np.float64) > s)
        r = np.where(up, np.nextafter(r, np.float32(np.inf)),
                     np.where(down, np.nextafter(r, np.float32(-np.inf)), r))
    return r
