"""The caching host allocator: pinned (page-locked) host memory for ``pin_memory``, as PyTorch's
``CachingHostAllocator``.

Copies between the device and pinned memory can run asynchronously (``non_blocking=True``); from
pageable memory they cannot. Pinning is slow (``cudaHostAlloc`` maps and locks pages), so blocks
are cached and reused, with PyTorch's rules:

* a request is rounded up to a power of two, and the free blocks of that size (one free list per
  power) serve it, newest first; blocks are never split;
* a block that a ``non_blocking`` copy used is tied to that copy's stream (:meth:`record_event`);
  when the block is freed, an event is recorded on each such stream, and the block returns to its
  free list only when all of them have completed (checked at each allocation, oldest event first,
  stopping at the first that has not) — so memory a copy still reads or writes is never handed out;
* :meth:`empty_cache` gives the free blocks back (``cudaFreeHost``).

A pinned block reaches ember as the NumPy array behind a CPU storage; the block returns to the
allocator when the last array (or view) over it is gone. ``Tensor.is_pinned`` looks the address up
here. Statistics (:func:`host_memory_stats`) use PyTorch 2.13's keys.
"""
import bisect
import collections
import ctypes
import threading
import time

import numpy as np

__all__ = ["CachingHostAllocator", "allocate", "get_allocator", "is_pinned_ptr", "record_event",
           "empty_cache", "host_memory_stats", "host_memory_stats_as_nested_dict",
           "reset_accumulated_host_memory_stats", "reset_peak_host_memory_stats"]

_NO_ALLOCATOR = ("pin_memory=True requires a CUDA or other accelerator backend; no pinned memory "
                 "allocator is available on this system.")


def _round_size(nbytes):
    """``c10::llvm::PowerOf2Ceil``."""
    return 1 << (nbytes - 1).bit_length()


class _Stat:
    """PyTorch's ``Stat``: current, peak, allocated (total increase), freed (total decrease)."""
    __slots__ = ("current", "peak", "allocated", "freed")

    def __init__(self):
        self.current = self.peak = self.allocated = self.freed = 0

    def increase(self, n):
        self.current += n
        self.allocated += n
        self.peak = max(self.peak, self.current)

    def decrease(self, n):
        self.current -= n
        self.freed += n

    def as_dict(self):
        return {"current": self.current, "peak": self.peak, "allocated": self.allocated,
                "freed": self.freed}


class _DurationStat:
    """PyTorch's ``DurationStat`` (microseconds)."""
    __slots__ = ("total", "max", "min", "count")

    def __init__(self):
        self.total = self.max = self.min = self.count = 0

    def add(self, us):
        self.min = us if self.count == 0 else min(self.min, us)
        self.max = max(self.max, us)
        self.total += us
        self.count += 1

    def as_dict(self):
        avg = self.total // self.count if self.count else 0
        return {"total": self.total, "max": self.max, "min": self.min, "count": self.count,
                "avg": avg}


class HostBlock:
    """One ``cudaHostAlloc`` allocation (a power of two bytes)."""
    __slots__ = ("size", "ptr", "allocated", "event_count", "streams")

    def __init__(self, size, ptr):
        self.size, self.ptr = size, ptr
        self.allocated = False
        self.event_count = 0  # events recorded at free time that have not completed yet
        self.streams = set()  # (device, stream handle) of non_blocking copies that used it

    def __repr__(self):
        return f"HostBlock(ptr={self.ptr:#x}, size={self.size}, allocated={self.allocated})"


class _Owner:
    """Held by the array over a block: when the last view is gone, the block goes back."""
    __slots__ = ("allocator", "block", "__weakref__")

    def __init__(self, allocator, block):
        self.allocator, self.block = allocator, block

    def __del__(self):
        try:
            self.allocator.free(self.block)
        except Exception:  # noqa: BLE001  (interpreter shutdown: the runtime may be gone)
            pass


class CachingHostAllocator:
    """PyTorch's CachingHostAllocator over one runtime (see the module docstring)."""

    def __init__(self, runtime):
        self.rt = runtime
        self._lock = threading.RLock()
        self._free = collections.defaultdict(list)  # size -> free blocks (a stack: newest last)
        self._blocks = {}  # ptr -> block, every block the allocator owns
        self._bases = []  # sorted block addresses (is_pinned looks up interior pointers)
        self._events = collections.deque()  # (event, block), newest at the left
        self.allocations = _Stat()  # blocks owned (active + cached)
        self.allocated_bytes = _Stat()
        self.active_requests = _Stat()  # blocks handed out and not yet reusable
        self.active_bytes = _Stat()
        self.host_alloc_time = _DurationStat()
        self.host_free_time = _DurationStat()

    # -- allocation --------------------------------------------------------------------------
    def allocate(self, nbytes):
        """A uint8 array of ``nbytes`` pinned bytes; its block is freed with the array."""
        if nbytes == 0:
            return np.empty(0, np.uint8)  # PyTorch: a null pointer, not pinned
        with self._lock:
            self._process_events()
            size = _round_size(nbytes)
            free = self._free.get(size)
            if free:
                block = free.pop()
            else:
                t0 = time.perf_counter()
                ptr = self.rt.host_alloc(size)
                self.host_alloc_time.add(int((time.perf_counter() - t0) * 1e6))
                block = HostBlock(size, ptr)
                self._blocks[ptr] = block
                bisect.insort(self._bases, ptr)
                self.allocations.increase(1)
                self.allocated_bytes.increase(size)
            block.allocated = True
            self.active_requests.increase(1)
            self.active_bytes.increase(size)
        raw = (ctypes.c_uint8 * size).from_address(block.ptr)
        raw._ember_owner = _Owner(self, block)  # every NumPy view keeps ``raw`` alive
        return np.frombuffer(raw, np.uint8)[:nbytes]

    def free(self, block):
        """The block's last user is gone: back to its free list, or — if non_blocking copies
        used it — once the events recorded now on their streams have completed."""
        with self._lock:
            block.allocated = False
            if not block.streams:
                self._make_reusable(block)
                return
            for device, stream in block.streams:
                ev = self.rt.event_create(device)
                self.rt.event_record(ev, stream)
                self._events.appendleft((ev, block))
                block.event_count += 1
            block.streams.clear()

    def _make_reusable(self, block):
        self._free[block.size].append(block)
        self.active_requests.decrease(1)
        self.active_bytes.decrease(block.size)

    def _process_events(self):
        """Oldest event first; stop at the first one not completed (as PyTorch)."""
        while self._events:
            ev, block = self._events[-1]
            if not self.rt.event_query(ev):
                break
            self._events.pop()
            self.rt.event_destroy(ev)
            block.event_count -= 1
            if block.event_count == 0:
                self._make_reusable(block)

    # -- lookups -----------------------------------------------------------------------------
    def find(self, ptr):
        """The block whose bytes contain address ``ptr``, or None."""
        with self._lock:
            i = bisect.bisect_right(self._bases, ptr) - 1
            if i >= 0:
                block = self._blocks[self._bases[i]]
                if ptr < block.ptr + block.size:
                    return block
        return None

    def record_event(self, ptr, stream, device=0):
        """A non_blocking copy on ``stream`` uses the block holding ``ptr``: tie the block to the
        stream. False when ``ptr`` is not pinned memory of this allocator."""
        block = self.find(ptr)
        if block is None or not block.allocated:
            return False
        with self._lock:
            block.streams.add((device, stream))
        return True

    # -- cache control and statistics --------------------------------------------------------
    def empty_cache(self):
        """Give every free block back to the runtime (blocks still waiting on events stay)."""
        with self._lock:
            self._process_events()
            for size, blocks in self._free.items():
                for block in blocks:
                    del self._blocks[block.ptr]
                    self._bases.pop(bisect.bisect_left(self._bases, block.ptr))
                    t0 = time.perf_counter()
                    self.rt.free_host(block.ptr)
                    self.host_free_time.add(int((time.perf_counter() - t0) * 1e6))
                    self.allocations.decrease(1)
                    self.allocated_bytes.decrease(size)
                blocks.clear()

    def stats(self):
        with self._lock:
            return {
                "allocations": self.allocations.as_dict(),
                "allocated_bytes": self.allocated_bytes.as_dict(),
                "active_requests": self.active_requests.as_dict(),
                "active_bytes": self.active_bytes.as_dict(),
                "num_host_alloc": self.allocations.allocated,
                "num_host_free": self.allocations.freed,
                "host_alloc_time": self.host_alloc_time.as_dict(),
                "host_free_time": self.host_free_time.as_dict(),
            }

    def reset_accumulated_stats(self):
        with self._lock:
            for s in (self.allocations, self.allocated_bytes, self.active_requests,
                      self.active_bytes):
                s.allocated = s.freed = 0
            self.host_alloc_time = _DurationStat()
            self.host_free_time = _DurationStat()

    def reset_peak_stats(self):
        with self._lock:
            for s in (self.allocations, self.allocated_bytes, self.active_requests,
                      self.active_bytes):
                s.peak = s.current


# ---------------------------------------------------------------------------------------------
# The process's allocator (one per runtime: tests may install a fresh simulated runtime).

_allocators = {}  # id(runtime) -> (runtime, allocator)


def _existing():
    """The allocator of the current runtime if one was made, without starting CUDA."""
    from . import _runtime
    rt = _runtime._runtime
    entry = _allocators.get(id(rt)) if rt is not None else None
    return entry[1] if entry is not None and entry[0] is rt else None


def get_allocator():
    """The current runtime's host allocator (starting CUDA). Pinning needs an accelerator:
    without one, PyTorch's error."""
    from .. import accelerator
    if accelerator._accelerator() is None:
        raise RuntimeError(_NO_ALLOCATOR)
    from . import _lazy_init
    rt = _lazy_init()
    entry = _allocators.get(id(rt))
    if entry is None or entry[0] is not rt:
        entry = _allocators[id(rt)] = (rt, CachingHostAllocator(rt))
    return entry[1]


def allocate(nbytes):
    """``nbytes`` of pinned host memory as a uint8 array (``empty(..., pin_memory=True)``)."""
    return get_allocator().allocate(nbytes)


def is_pinned_ptr(ptr):
    """Whether host address ``ptr`` lies in a pinned block (False when CUDA never pinned)."""
    a = _existing()
    return a is not None and ptr != 0 and a.find(ptr) is not None


def record_event(ptr, stream, device=0):
    """``CachingHostAllocator_recordEvent``: see :meth:`CachingHostAllocator.record_event`."""
    a = _existing()
    return a is not None and a.record_event(ptr, stream, device)


def empty_cache():
    """Release the free cached pinned blocks (``torch._C._host_emptyCache``)."""
    a = _existing()
    if a is not None:
        a.empty_cache()


def host_memory_stats_as_nested_dict():
    """``torch.cuda.host_memory_stats_as_nested_dict``: {} until CUDA has started."""
    from . import is_initialized
    if not is_initialized():
        return {}
    a = _existing()
    return (a or CachingHostAllocator(None)).stats()


def host_memory_stats():
    """``torch.cuda.host_memory_stats``: the pinned allocator's statistics, flattened into
    sorted dotted keys (``"active_bytes.current"``, ``"num_host_alloc"``, ...)."""
    result = []

    def add(prefix, obj):
        if isinstance(obj, dict):
            for k, v in obj.items():
                add(f"{prefix}.{k}" if prefix else k, v)
        else:
            result.append((prefix, obj))

    add("", host_memory_stats_as_nested_dict())
    return collections.OrderedDict(sorted(result))


def reset_accumulated_host_memory_stats():
    a = _existing()
    if a is not None:
        a.reset_accumulated_stats()


def reset_peak_host_memory_stats():
    a = _existing()
    if a is not None:
        a.reset_peak_stats()
