"""A caching allocator for large CPU blocks, with statistics (``ember.cpu.memory_stats()``).

Why: a fresh large NumPy array is fresh pages from the OS (glibc maps blocks above its mmap
threshold and unmaps them on free), so every large op result pays one page fault per 4 KiB
before the kernel even runs — about a third of the time of a 16M-element ``add``. Reusing the
pages of a block that is no longer used removes that cost, as PyTorch's CUDA caching allocator
does on the GPU.

How a block comes back without a free hook: each large request is served as a view of a cached
base array (``np.empty(nbytes + ALIGNMENT, uint8)``); NumPy points every view, and every view of
a view, at that base. So while any tensor, NumPy view or buffer still uses the memory, the
base's reference count is above what the cache itself holds, and a block whose count is back to
that baseline is free to hand out again. Requests below ``THRESHOLD`` go straight to NumPy (small
arrays come from malloc's free lists, which are already warm).

Sizes are rounded up to ``ROUND`` bytes so that nearby sizes share blocks; blocks are never split.
A block starts on a ``ALIGNMENT``-byte boundary, PyTorch's CPU allocator's (``c10::gAlignment``):
NumPy's large arrays start 16 bytes past a page, so every 64-byte vector load of a row kernel
spanned two cache lines, and a kernel's streaming stores (``_inductor/codegen/cpp.py``) could not
write whole lines (layer_norm's backward on 4096x1024: 1.00 -> 0.90 ms, benchmarks/NOTES.md).
Cached blocks are kept until ``empty_cache()`` or until a request would take the cache past
``LIMIT`` bytes: the free blocks are released then, and if that is not enough the request bypasses
the cache.
"""
import math
import sys
import threading

import numpy as np

THRESHOLD = 1 << 20  # 1 MiB: smaller requests are not cached
ROUND = 1 << 16  # 64 KiB granularity of block sizes
LIMIT = 1 << 30  # at most 1 GiB reserved by the cache
ALIGNMENT = 64  # bytes: a cache line, and the widest vector register

_getrefcount = sys.getrefcount


def _baseline():
    """The reference count a free block shows inside :meth:`CachingAllocator._take`'s loop (its
    bucket list, the loop variable, getrefcount's argument), measured rather than assumed."""
    bucket = [np.empty(1, np.uint8)]
    for blk in bucket:
        return _getrefcount(blk)


_FREE = _baseline()


class CachingAllocator:
    """Hands out uint8 arrays of at least ``nbytes`` bytes; large ones are views of cached blocks."""

    def __init__(self):
        self._buckets = {}  # rounded size -> [base arrays], in use or free
        self._skip = {}  # id(base array) -> bytes before its first ALIGNMENT boundary
        self._lock = threading.Lock()
        self.reserved_bytes = 0
        self.peak_reserved_bytes = 0
        self.num_allocs = 0  # large requests
        self.num_cache_hits = 0  # ... served by reusing a free block
        self.num_bypassed = 0  # ... not cached because LIMIT was reached

    def _take(self, size):
        bucket = self._buckets.get(size)
        if bucket:
            for blk in bucket:
                if _getrefcount(blk) == _FREE:
                    return blk
        return None

    def allocate(self, nbytes):
        """A fresh 1-d uint8 array of ``nbytes`` bytes (its contents are undefined)."""
        if nbytes < THRESHOLD:
            return np.empty(nbytes, np.uint8)
        size = -(-nbytes // ROUND) * ROUND
        with self._lock:
            self.num_allocs += 1
            blk = self._take(size)
            if blk is not None:
                self.num_cache_hits += 1
            elif self.reserved_bytes + size > LIMIT and (
                    self._release_free() or self.reserved_bytes + size > LIMIT):
                self.num_bypassed += 1
                return np.empty(nbytes, np.uint8)
            else:
                blk = np.empty(size + ALIGNMENT, np.uint8)
                self._skip[id(blk)] = -blk.ctypes.data % ALIGNMENT
                self._buckets.setdefault(size, []).append(blk)
                self.reserved_bytes += size
                if self.reserved_bytes > self.peak_reserved_bytes:
                    self.peak_reserved_bytes = self.reserved_bytes
            skip = self._skip[id(blk)]
            return blk[skip:skip + nbytes]

    def empty(self, shape, dtype, nbytes=None):
        """An uninitialized C-contiguous array of ``shape`` and NumPy ``dtype``; ``nbytes``, its
        size in bytes, where the caller has it at hand (a hot path saves working it out)."""
        if nbytes is None:
            dtype = np.dtype(dtype)
            nbytes = math.prod(shape) * dtype.itemsize
        return self.allocate(nbytes).view(dtype).reshape(shape)

    def allocated_bytes(self):
        """Bytes of cached blocks in use now."""
        with self._lock:
            return sum(size for size, bucket in self._buckets.items() for blk in bucket
                       if _getrefcount(blk) > _FREE)

    def empty_cache(self):
        """Release every cached block that nothing uses any more."""
        with self._lock:
            self._release_free()

    def _release_free(self):
        """(Lock held.) Drop the free blocks; returns None so it can sit in a condition."""
        for size in list(self._buckets):
            bucket = self._buckets[size]
            keep = []
            for blk in bucket:
                if _getrefcount(blk) > _FREE:
                    keep.append(blk)
                else:
                    del self._skip[id(blk)]
            self.reserved_bytes -= size * (len(bucket) - len(keep))
            if keep:
                self._buckets[size] = keep
            else:
                del self._buckets[size]

    def memory_stats(self):
        allocated = self.allocated_bytes()
        return {
            "allocated_bytes.all.current": allocated,
            "reserved_bytes.all.current": self.reserved_bytes,
            "reserved_bytes.all.peak": self.peak_reserved_bytes,
            "inactive_split_bytes.all.current": self.reserved_bytes - allocated,
            "num_alloc_requests": self.num_allocs,
            "num_cache_hits": self.num_cache_hits,
            "num_cache_bypassed": self.num_bypassed,
        }

    def reset_peak_stats(self):
        self.peak_reserved_bytes = self.reserved_bytes


cpu_cache = CachingAllocator()


# ---------------------------------------------------------------------------------------------
# Host malloc tuning. The cache above covers tensors ember allocates; NumPy's own temporaries
# inside a kernel (GELU's erf makes a dozen 2 MB intermediates) come from malloc, which by default
# maps every block over ~128 KiB fresh from the OS and unmaps it on free, so each pass over the
# data first page-faults it in. Raising glibc's mmap and trim thresholds keeps freed blocks in
# the heap for reuse: GELU on 16x64x512 float32 went from 8.8 to 2.6 ms (benchmarks/NOTES.md).
# This is what PyTorch's CPU performance guide gets by preloading jemalloc or tcmalloc.
# EMBER_MALLOC_TUNING=0 leaves malloc alone.

MMAP_THRESHOLD = 1 << 26  # 64 MiB: blocks up to this size are reused from the heap
TRIM_THRESHOLD = 1 << 28  # 256 MiB of free heap is kept before it is returned to the OS


def tune_host_malloc():
    """Apply the thresholds above through glibc's ``mallopt``; a no-op elsewhere. Returns whether
    the tuning is in effect."""
    import os
    if os.environ.get("EMBER_MALLOC_TUNING", "1") == "0" or not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes
        libc = ctypes.CDLL("libc.so.6")
        m_trim_threshold, m_mmap_threshold = -1, -3  # <malloc.h>
        return bool(libc.mallopt(m_mmap_threshold, MMAP_THRESHOLD)
                    and libc.mallopt(m_trim_threshold, TRIM_THRESHOLD))
    except (OSError, AttributeError):  # not glibc (musl, ...): keep the platform's malloc
        return False


host_malloc_tuned = tune_host_malloc()
