"""PyTorch's CUDA caching allocator (``c10/cuda/CUDACachingAllocator.cpp``), in Python, over
ember's runtime interface (:mod:`ember.cuda._runtime`).

One :class:`DeviceCachingAllocator` per device keeps the memory it got from the device in
*segments* (one ``cudaMalloc`` each, or one growing range of mapped pages with
``expandable_segments``) and hands out *blocks*, pieces of segments:

* a request is rounded (:func:`round_size`: 512 B steps, or power-of-two divisions with
  ``roundup_power2_divisions``) and goes to the small pool (≤ 1 MiB) or the large pool; a new
  segment is 2 MiB (small), 20 MiB (``large_segment_size``, for requests under 10 MiB) or the
  request rounded to 2 MiB;
* free blocks are ordered by (stream, size, address) and a request takes the best fit among the
  blocks of its own stream; the remainder is split off (small pool: ≥ 512 B left; large pool:
  > 1 MiB left and the request under ``max_split_size``); a freed block merges with free
  neighbours of its segment;
* a block used on other streams (:meth:`DeviceCachingAllocator.record_stream`) is only reused once
  an event recorded on each of them has completed (checked at each malloc);
* when no cached block fits: garbage collection (``garbage_collection_threshold`` with a memory
  fraction), ``cudaMalloc``, freeing oversize cached blocks (``max_split_size``), freeing every
  unsplit cached block and retrying, and finally ``OutOfMemoryError`` with PyTorch's message;
* CUDA-graph captures allocate from private pools (:meth:`begin_allocate_to_pool`), whose memory
  is released only after every graph using them is reset.

It keeps PyTorch's statistics (``memory_stats``), snapshots and the allocation-history ring buffer
that ``ember.cuda.memory`` presents. Beyond PyTorch: a fragmentation figure (free bytes in segments
that are partly in use, over reserved bytes) in the statistics and in the OOM message.

Threads share an allocator as in PyTorch: its methods hold a lock. The common malloc and free (a
cached block that fits, nothing recording or capturing) run in C (``caching_allocator.c``, built
when the first allocator is made), about 3× faster than these methods, which stay the
definition: the C functions decline every other call before changing anything.
"""
import bisect
import functools
import os
import sys
import threading
import time

from . import _alloc_config
from ._alloc_config import SIZE_MAX, _as_int64
from ._runtime import DeviceOutOfMemory

__all__ = ["OutOfMemoryError", "DeviceCachingAllocator", "Block", "CUDADataPtr", "allocate",
           "get_allocator", "round_size", "format_size"]

K_MIN_BLOCK_SIZE = 512  # all sizes are rounded to at least 512 bytes
K_SMALL_SIZE = 1 << 20  # the largest "small" allocation is 1 MiB
K_SMALL_BUFFER = 2 << 20  # small allocations are packed in 2 MiB segments
K_MIN_LARGE_ALLOC = 10 << 20  # allocations between 1 and 10 MiB may use a large-buffer segment
K_ROUND_LARGE = 2 << 20  # larger allocations are rounded up to 2 MiB
ONE_EXA_BYTES = 1 << 60

AGGREGATE, SMALL_POOL, LARGE_POOL = 0, 1, 2
_STAT_TYPE_NAMES = ("all", "small_pool", "large_pool")

# RecordContext
NEVER, STATE, ALLOC, ALL = 0, 1, 2, 3

_DOCS_URL = "https://pytorch.org/docs/stable/notes/cuda.html#environment-variables"


class OutOfMemoryError(RuntimeError):
    """The device has no memory left for a request, after the allocator's retries
    (``torch.OutOfMemoryError``, also ``torch.cuda.OutOfMemoryError``)."""


def format_size(size):
    """c10's ``format_size``: bytes up to 1 KiB, then KiB / MiB / GiB with two decimals."""
    if size <= 1024:
        return f"{size} bytes"
    if size <= 1048576:
        return f"{size / 1024.0:.2f} KiB"
    if size <= 1073741824:
        return f"{size / 1048576.0:.2f} MiB"
    return f"{size / 1073741824.0:.2f} GiB"


def _roundup_power2_next_division(size, divisions):
    if size & (size - 1) == 0:
        return size
    if divisions < 2:
        raise RuntimeError("Only 2 or more divisions are supported")
    floor = 1 << (size.bit_length() - 1)
    step = floor >> (divisions.bit_length() - 1)
    if step == 0:
        return floor << 1
    rounded_floor = size & ~(step - 1)
    return size if rounded_floor == size else rounded_floor + step


def round_size(size, cfg=None):
    """The block size for a request of ``size`` bytes."""
    if size < K_MIN_BLOCK_SIZE:
        return K_MIN_BLOCK_SIZE
    divisions = (cfg or _alloc_config.config()).divisions_for(size)
    if divisions > 1 and size > K_MIN_BLOCK_SIZE * divisions:
        return _roundup_power2_next_division(size, divisions)
    return K_MIN_BLOCK_SIZE * ((size + K_MIN_BLOCK_SIZE - 1) // K_MIN_BLOCK_SIZE)


def get_allocation_size(size, cfg=None):
    """The size of a new segment for a (rounded) request."""
    if size <= K_SMALL_SIZE:
        return K_SMALL_BUFFER
    if size < K_MIN_LARGE_ALLOC:
        return (cfg or _alloc_config.config()).large_segment_size
    return K_ROUND_LARGE * ((size + K_ROUND_LARGE - 1) // K_ROUND_LARGE)


# ---------------------------------------------------------------------------------------------
# Statistics

class Stat:
    __slots__ = ("current", "peak", "allocated", "freed")

    def __init__(self):
        self.current = self.peak = self.allocated = self.freed = 0

    def increase(self, amount):
        _increase((self,), amount)

    def decrease(self, amount):
        _decrease((self,), amount)

    def reset_accumulated(self):
        self.allocated = self.freed = 0

    def reset_peak(self):
        self.peak = self.current

    def as_dict(self):
        return {"current": self.current, "peak": self.peak, "allocated": self.allocated,
                "freed": self.freed}


# Stat.increase / Stat.decrease of several stats: the hot paths (malloc, free) move the same
# statistic of AGGREGATE and of the block's pool type together, one call per statistic.
def _increase(stats, amount):
    for s in stats:
        current = s.current + amount
        s.current = current
        if current > s.peak:
            s.peak = current
        s.allocated += amount


def _decrease(stats, amount):
    for s in stats:
        current = s.current - amount
        assert current >= 0, "Negative tracked stat in CUDA allocator (likely logic error)."
        s.current = current
        s.freed += amount


def _stat_array():
    return [Stat(), Stat(), Stat()]


def _array_dict(arr):
    return {name: arr[i].as_dict() for i, name in enumerate(_STAT_TYPE_NAMES)}


_ARRAY_STATS = ("allocation", "segment", "active", "inactive_split", "allocated_bytes",
                "reserved_bytes", "active_bytes", "inactive_split_bytes", "requested_bytes")


class DeviceStats:
    def __init__(self):
        for name in _ARRAY_STATS:
            setattr(self, name, _stat_array())
        self.oversize_allocations = Stat()
        self.oversize_segments = Stat()
        self.num_alloc_retries = 0
        self.num_ooms = 0
        self.num_sync_all_streams = 0
        self.num_device_alloc = 0
        self.num_device_free = 0
        self.num_oom_rejections = 0
        self.max_split_size = 0
        self.small_pool = _PoolStats(self, SMALL_POOL)
        self.large_pool = _PoolStats(self, LARGE_POOL)

    def of(self, pool):
        """The (AGGREGATE, pool type) pairs of ``pool``'s blocks (a :class:`_PoolStats`)."""
        return self.small_pool if pool.is_small else self.large_pool


class _PoolStats:
    """Each statistic of a :class:`DeviceStats` as the pair (AGGREGATE, one pool type) that a
    block of that pool type moves: what :func:`_increase` and :func:`_decrease` take."""
    __slots__ = _ARRAY_STATS

    def __init__(self, stats, pool_type):
        for name in _ARRAY_STATS:
            arr = getattr(stats, name)
            setattr(self, name, (arr[AGGREGATE], arr[pool_type]))


# ---------------------------------------------------------------------------------------------
# Blocks and pools

class Block:
    """A piece of a segment: free (in its pool) or handed out."""
    __slots__ = ("device", "stream", "stream_uses", "size", "requested_size", "pool", "ptr",
                 "allocated", "mapped", "prev", "next", "event_count", "gc_count_base",
                 "context_when_allocated", "context_when_segment_allocated",
                 "expandable_segment", "__weakref__")

    def __init__(self, device, stream, size, pool=None, ptr=0):
        self.device, self.stream, self.size, self.pool, self.ptr = device, stream, size, pool, ptr
        self.stream_uses = set()
        self.requested_size = 0
        self.allocated = False
        self.mapped = True
        self.prev = self.next = None
        self.event_count = 0
        self.gc_count_base = 0
        self.context_when_allocated = None
        self.context_when_segment_allocated = None
        self.expandable_segment = None

    def is_split(self):
        return self.prev is not None or self.next is not None

    def gc_count(self):
        return self.pool.get_free_blocks_call_count - self.gc_count_base

    def splice(self, before, after):
        if before is not None:
            before.next = self
        self.prev = before
        if after is not None:
            after.prev = self
        self.next = after

    def __repr__(self):
        state = "allocated" if self.allocated else "free"
        return f"Block(ptr={self.ptr:#x}, size={self.size}, stream={self.stream}, {state})"


class _SortedBlocks:
    """A set of blocks ordered by a key (PyTorch's ``std::set<Block*, Comparison>``). A block's
    key fields must not change while it is in the set."""
    __slots__ = ("_by_size", "_keys", "_blocks")

    def __init__(self, by_size):
        self._by_size = by_size
        self._keys = []
        self._blocks = []

    def _key(self, b):
        return (b.stream, b.size, b.ptr) if self._by_size else (b.stream, b.ptr)

    def add(self, block):
        k = self._key(block)
        i = bisect.bisect_left(self._keys, k)
        if i < len(self._keys) and self._keys[i] == k:
            return False
        self._keys.insert(i, k)
        self._blocks.insert(i, block)
        return True

    def discard(self, block):
        k = self._key(block)
        i = bisect.bisect_left(self._keys, k)
        if i < len(self._keys) and self._keys[i] == k and self._blocks[i] is block:
            del self._keys[i]
            del self._blocks[i]
            return True
        return False

    def lower_bound(self, key):
        return bisect.bisect_left(self._keys, key)

    def __getitem__(self, i):
        return self._blocks[i]

    def __len__(self):
        return len(self._blocks)

    def __iter__(self):
        return iter(list(self._blocks))

    def __contains__(self, block):
        k = self._key(block)
        i = bisect.bisect_left(self._keys, k)
        return i < len(self._keys) and self._blocks[i] is block


class BlockPool:
    __slots__ = ("stat_types", "blocks", "unmapped", "is_small", "owner_private_pool",
                 "get_free_blocks_call_count")

    def __init__(self, small, private_pool=None):
        self.stat_types = (AGGREGATE, SMALL_POOL if small else LARGE_POOL)
        self.blocks = _SortedBlocks(by_size=True)
        self.unmapped = _SortedBlocks(by_size=False)
        self.is_small = small
        self.owner_private_pool = private_pool
        self.get_free_blocks_call_count = 0

    def insert_into_blocks(self, block):
        block.gc_count_base = self.get_free_blocks_call_count
        return self.blocks.add(block)


class PrivatePool:
    """A CUDA graph's memory pool: its own small and large pools, kept until every graph using
    it is reset (``use_count``) and then freed once its segments are unsplit."""

    def __init__(self, mempool_id):
        self.id = mempool_id
        self.use_count = 1
        self.cuda_malloc_count = 0  # unfreed segments (cudaMalloc'd or mapped ranges)
        self.large_blocks = BlockPool(False, self)
        self.small_blocks = BlockPool(True, self)
        self.reserved_bytes = _stat_array()  # reserved_bytes_by_private_pools


class _AllocParams:
    __slots__ = ("device", "stream", "size", "pool", "alloc_size", "block", "stat_types", "err")

    def __init__(self, device, size, stream, pool, alloc_size):
        self.device, self.size, self.stream, self.pool = device, size, stream, pool
        self.alloc_size = alloc_size
        self.block = None
        self.stat_types = ()
        self.err = None


# ---------------------------------------------------------------------------------------------
# Expandable segments: one reserved address range whose pages are mapped on demand.

class ExpandableSegment:
    def __init__(self, runtime, device, stream, segment_size):
        self.runtime, self.device, self.stream = runtime, device, stream
        self.segment_size = segment_size
        total = runtime.get_device_properties(device).total_memory
        # Address space for 1 1/8 of the device's memory, as PyTorch reserves: room to move
        # pages to the end after ones earlier in the range were unmapped.
        self.max_handles = -(-(total + total // 8) // segment_size)
        self.ptr = runtime.address_reserve(device, segment_size * self.max_handles)
        self.handles = []  # physical memory handle per page, None where unmapped

    def size(self):
        return self.max_handles * self.segment_size

    def _left(self, p):
        return (p - self.ptr) // self.segment_size

    def _right(self, p):
        return -(-(p - self.ptr) // self.segment_size)

    def _range(self, begin, end):
        return self.ptr + self.segment_size * begin, self.segment_size * (end - begin)

    def map(self, ptr, size):
        """Map pages covering ``[ptr, ptr + size)``; returns the range mapped (size 0: OOM)."""
        begin, end = self._left(ptr), self._right(ptr + size)
        if begin == end:
            return self._range(begin, end)
        while end > len(self.handles):
            self.handles.append(None)
        for i in range(begin, end):
            assert self.handles[i] is None
            try:
                self.handles[i] = self.runtime.mem_create(self.device, self.segment_size)
            except DeviceOutOfMemory:
                for j in range(begin, i):
                    self.runtime.mem_release(self.handles[j])
                    self.handles[j] = None
                self._trim()
                return self._range(begin, begin)
        for i in range(begin, end):
            self.runtime.mem_map(self.ptr + i * self.segment_size, self.segment_size,
                                 self.handles[i])
        return self._range(begin, end)

    def unmap(self, ptr, size):
        """Unmap the whole pages inside ``[ptr, ptr + size)``; returns the range unmapped."""
        begin, end = self._right(ptr), self._left(ptr + size)
        if begin >= end:
            return ptr, 0
        self._unmap_handles(begin, end)
        return self._range(begin, end)

    def _unmap_handles(self, begin, end):
        # Unmapping does not wait for the GPU as cudaFree does: wait for the stream first.
        if self.stream is not None:
            self.runtime.stream_synchronize(self.stream)
        else:
            self.runtime.device_synchronize(self.device)
        for i in range(begin, end):
            h, self.handles[i] = self.handles[i], None
            self.runtime.mem_unmap(self.ptr + self.segment_size * i, self.segment_size)
            self.runtime.mem_release(h)
        self._trim()

    def _trim(self):
        while self.handles and self.handles[-1] is None:
            self.handles.pop()

    def release(self):
        i = 0
        while i < len(self.handles):
            if self.handles[i] is None:
                i += 1
                continue
            j = i
            while j < len(self.handles) and self.handles[j] is not None:
                j += 1
            self._unmap_handles(i, j)
            i = 0
        self.runtime.address_free(self.ptr, self.size())


# ---------------------------------------------------------------------------------------------
# History

def _gather_python_frames():
    """The Python stack at an allocator call, innermost first, without the allocator's own
    frames (PyTorch's ``CapturedTraceback`` with Python frames)."""
    frames = []
    f = sys._getframe(1)
    skip = (__file__, _MEMORY_PY)
    while f is not None:
        code = f.f_code
        if code.co_filename not in skip:
            frames.append({"filename": code.co_filename, "line": f.f_lineno,
                           "name": code.co_name})
        f = f.f_back
    return frames


_MEMORY_PY = os.path.join(os.path.dirname(__file__), "memory.py")


class TraceEntry:
    __slots__ = ("action", "device", "addr", "size", "stream", "time_us", "context")

    def __init__(self, action, device, addr, size, stream, context):
        self.action, self.device, self.addr, self.size = action, device, addr, size
        self.stream, self.context = stream, context
        self.time_us = time.time_ns() // 1000

    def as_dict(self):
        d = {"action": self.action,
             ("device_free" if self.action == "oom" else "addr"): self.addr,
             "size": self.size, "stream": self.stream, "time_us": self.time_us,
             "frames": list(self.context) if self.context else []}
        return d


class _RingBuffer:
    """PyTorch's TraceEntryRingBuffer: the last ``max_entries`` entries, oldest first."""

    def __init__(self):
        self.max_entries = 1
        self.entries = []
        self.next = 0

    def set_max_entries(self, n):
        self.max_entries = max(1, n)

    def insert(self, te):
        if len(self.entries) < self.max_entries:
            self.entries.append(te)
        else:
            self.entries[self.next] = te
            self.next += 1
            if self.next == self.max_entries:
                self.next = 0

    def get(self):
        return self.entries[self.next:] + self.entries[:self.next]

    def clear(self):
        self.entries, self.next = [], 0


# ---------------------------------------------------------------------------------------------
# The common case of malloc and free in C (caching_allocator.c: no history, capture, events,
# garbage collection threshold or expandable segments, a cached block that fits). The Python
# methods stay the definition: the C functions decline every other call before changing anything.

_C = None
_c_tried = False


def _load_c():
    """Load the C functions once (when the first allocator is made): not where
    ``EMBER_CUDA_ALLOCATOR_C=0``, nor without a compiler or after a failed build (logged; the
    Python methods run)."""
    global _C, _c_tried
    if _c_tried:
        return
    _c_tried = True
    if os.environ.get("EMBER_CUDA_ALLOCATOR_C") == "0":
        return
    from .._inductor.codecache import HandWrittenModule

    def source():
        with open(os.path.join(os.path.dirname(__file__), "caching_allocator.c")) as f:
            return f.read()
    module = HandWrittenModule("ember_caching_allocator", source,
                               "the caching allocator runs in Python", parallel=False).get()
    if module is not None:
        from .._core import tensor_impl
        if tensor_impl._C is None:  # (it reads the slots' offsets)
            return

        def offsets(cls):
            return {n: tensor_impl._C.slot_offset(cls, n) for n in cls.__slots__
                    if n != "__weakref__"}
        module.configure(Block, *(offsets(c) for c in (Block, Stat, _SortedBlocks, BlockPool,
                                                         _PoolStats)))
    _C = module


# ---------------------------------------------------------------------------------------------
# The allocator

def _exclusive(method):
    """Run ``method`` holding the allocator's lock (another thread waits, as on PyTorch's
    mutex) and with the allocator marked busy. A tensor freed by Python's cyclic garbage
    collector can die at any allocation, including one inside the allocator's own work, on this
    thread; its block is then queued (:meth:`CUDADataPtr.free`) and freed here once the
    allocator is done, never while its pools are half updated."""
    @functools.wraps(method)
    def run(self, *args, **kwargs):
        with self._lock:
            self._busy += 1
            try:
                return method(self, *args, **kwargs)
            finally:
                self._busy -= 1
                if not self._busy and self._deferred_frees:
                    self.free_deferred()
    return run


class DeviceCachingAllocator:
    """The caching allocator of one device (see the module docstring)."""

    def __init__(self, runtime, device):
        _load_c()
        self.runtime = runtime
        self.device = device
        self.stats = DeviceStats()
        self.large_blocks = BlockPool(False)
        self.small_blocks = BlockPool(True)
        self.active_blocks = set()
        self.captures_underway = []  # [(mempool_id, filter(stream) -> bool)]
        self.needs_events_deferred_until_no_capture = []
        self.cuda_events = {}  # stream -> [(event, block)], oldest first
        self.event_pool = []
        self.total_allocated_memory = 0  # reserved bytes
        self.allowed_memory_maximum = 0
        self.set_fraction = False
        self.fraction = 1.0
        self.expandable_segments = []
        self.graph_pools = {}
        self.graph_pools_freeable = {}
        self._lock = threading.RLock()
        self._busy = 0  # > 0 while a public method runs (see _exclusive)
        self._deferred_frees = []
        self.block_to_cudagraph_stream_uses = {}
        self.oom_observers = []
        self.trace_trackers = []
        # history
        self.record_history = False
        self.record_context = NEVER
        self.context_recorder = None
        self.alloc_buffer = _RingBuffer()
        self.skip_actions = frozenset()
        self.keep_trace = True
        cfg = _alloc_config.config()
        self.stats.max_split_size = _as_int64(cfg.max_split_size)
        if cfg.per_process_memory_fraction < 1.0:
            self.set_memory_fraction(cfg.per_process_memory_fraction)

    @property
    def cfg(self):
        return _alloc_config.config()

    # -- history -------------------------------------------------------------------------------
    def record_memory_history(self, enabled, context_recorder, max_entries, when,
                              clear_history=False, skip_actions=(), keep_trace=True):
        self.record_history = enabled
        self.context_recorder = context_recorder if enabled else None
        self.alloc_buffer.set_max_entries(max_entries)
        self.record_context = when if enabled else NEVER
        self.skip_actions = frozenset(skip_actions)
        self.keep_trace = keep_trace
        if not enabled or clear_history:
            self.alloc_buffer.clear()

    def is_history_enabled(self):
        return self.record_history

    def _gather(self, level):
        if self.record_context < level or self.context_recorder is None:
            return None
        return self.context_recorder()

    def _record_trace(self, action, addr, size, stream, context):
        if not self.record_history and not self.trace_trackers:
            return
        te = TraceEntry(action, self.device, addr, size, stream,
                        context if self.record_context >= ALLOC else None)
        for cb in self.trace_trackers:
            cb(te)
        if self.record_history and self.keep_trace and action not in self.skip_actions:
            self.alloc_buffer.insert(te)

    def attach_out_of_memory_observer(self, observer):
        self.oom_observers.append(observer)

    def attach_allocator_trace_tracker(self, tracker):
        self.trace_trackers.append(tracker)

    # -- malloc --------------------------------------------------------------------------------
    def malloc(self, orig_size, stream=0):
        """A block of at least ``orig_size`` bytes usable on ``stream``."""
        if _C is not None:  # (atomic: see begin_update in caching_allocator.c)
            block = _C.malloc(self, orig_size, stream, _alloc_config.config())
            if block is not None:
                return block
        return self._malloc(orig_size, stream)

    @_exclusive
    def _malloc(self, orig_size, stream):
        context = self._gather(STATE) if self.record_context else None
        if not self.captures_underway and (self.cuda_events
                                           or self.needs_events_deferred_until_no_capture):
            # Reclaim blocks whose cross-stream uses are over. Not during a capture: querying
            # an event recorded during capture is illegal.
            self._process_events(context)
        cfg = _alloc_config.config()
        size = round_size(orig_size, cfg)
        pool = self._get_pool(size, stream) if self.captures_underway else (
            self.small_blocks if size <= K_SMALL_SIZE else self.large_blocks)
        alloc_size = get_allocation_size(size, cfg)
        p = _AllocParams(self.device, size, stream, pool, alloc_size)
        p.stat_types = pool.stat_types

        found = self._get_free_block(p) or (self._trigger_free_memory_callbacks(p)
                                            and self._get_free_block(p))
        if not found:
            if self.set_fraction and cfg.garbage_collection_threshold > 0.0:
                self._garbage_collect_cached_blocks(context)
            found = (self._alloc_block(p, False, context)
                     or (self._release_available_cached_blocks(p, context)
                         and self._alloc_block(p, False, context))
                     or (not self.captures_underway and self._release_cached_blocks(context)
                         and self._alloc_block(p, True, context)))
        if not found:
            self._raise_oom(p, alloc_size, context)
        return self._alloc_found_block(p, orig_size, context, self._should_split(p.block, size))

    def _raise_oom(self, p, alloc_size, context):
        device_free, device_total = self.runtime.mem_get_info(self.device)
        allowed_info = (format_size(self.allowed_memory_maximum) + " allowed; "
                        if self.set_fraction else "")
        proc_info = _report_process_memory_info(self.runtime, self.device)
        self._record_trace("oom", device_free, p.size, p.stream, context)
        self.stats.num_ooms += 1
        allocated = self.stats.allocated_bytes[AGGREGATE].current
        reserved = self.stats.reserved_bytes[AGGREGATE].current
        # PyTorch counts the *cached* blocks of private pools here (its variable says
        # "allocated"); kept as it is so the message matches.
        in_private = sum(b.size for gp in self.graph_pools.values()
                         for pl in (gp.large_blocks, gp.small_blocks) for b in pl.blocks)
        private_msg = (f"with {format_size(in_private)} allocated in private pools (e.g., CUDA "
                       f"Graphs), " if in_private > 0 else "")
        for obs in list(self.oom_observers):
            obs(self.device, alloc_size,
                self.allowed_memory_maximum if self.set_fraction else device_total, device_free)
        frag_bytes = self.fragmentation_bytes()
        frag = frag_bytes / reserved if reserved else 0.0
        raise OutOfMemoryError(
            f"CUDA out of memory. Tried to allocate {format_size(alloc_size)}. GPU {self.device} "
            f"has a total capacity of {format_size(device_total)} of which "
            f"{format_size(device_free)} is free. {proc_info}{allowed_info}Of the allocated "
            f"memory {format_size(allocated + in_private)} is allocated by PyTorch, "
            f"{private_msg}and {format_size(reserved - allocated - in_private)} is reserved by "
            f"PyTorch but unallocated. If reserved but unallocated memory is large try setting "
            f"PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See "
            f"documentation for Memory Management  ({_DOCS_URL}) "
            f"[ember] Fragmentation: {format_size(frag_bytes)} free in partly used segments, "
            f"{100.0 * frag:.1f}% of reserved memory.")

    def _alloc_found_block(self, p, orig_size, context, split_remainder):
        size, pool, stream = p.size, p.pool, p.stream
        block = p.block
        already_split = block.is_split()
        if split_remainder:
            remaining = block
            block = Block(self.device, stream, size, pool, remaining.ptr)
            block.expandable_segment = remaining.expandable_segment
            block.prev = remaining.prev
            if block.prev is not None:
                block.prev.next = block
            block.next = remaining
            remaining.prev = block
            remaining.ptr += size
            remaining.size -= size
            pool.insert_into_blocks(remaining)
            if already_split and block.expandable_segment is None:
                # an already-split inactive block shrinks by size bytes
                _decrease(self.stats.of(pool).inactive_split_bytes, block.size)
            elif block.expandable_segment is None:
                # a new inactive piece is split off a previously whole block
                _increase(self.stats.of(pool).inactive_split_bytes, remaining.size)
                _increase(self.stats.of(pool).inactive_split, 1)
        elif already_split and block.expandable_segment is None:
            _decrease(self.stats.of(pool).inactive_split_bytes, block.size)
            _decrease(self.stats.of(pool).inactive_split, 1)

        block.allocated = True
        block.requested_size = orig_size
        block.context_when_allocated = context
        if self.record_history or self.trace_trackers:
            self._record_trace("alloc", block.ptr, orig_size, block.stream, context)
        self.active_blocks.add(block)
        size = block.size
        hot = self.stats.of(pool)
        _increase(hot.allocation, 1)
        _increase(hot.allocated_bytes, size)
        _increase(hot.active, 1)
        _increase(hot.active_bytes, size)
        _increase(hot.requested_bytes, orig_size)
        if size >= _alloc_config.config().max_split_size:
            self.stats.oversize_allocations.increase(1)
        return block

    # -- free ----------------------------------------------------------------------------------
    def free(self, block):
        """Give ``block`` back; it becomes reusable once the streams it was used on are done."""
        if _C is None or not _C.free(self, block, _alloc_config.config()):
            self._free(block)

    @_exclusive
    def _free(self, block):
        if not block.allocated:
            raise RuntimeError(f"invalid device pointer: {block.ptr:#x}")
        context = self._gather(ALL) if self.record_context else None
        block.allocated = False
        hot = self.stats.of(block.pool)
        _decrease(hot.allocation, 1)
        _decrease(hot.allocated_bytes, block.size)
        if self.record_history or self.trace_trackers:
            self._record_trace("free_requested", block.ptr, block.requested_size, block.stream,
                               context or block.context_when_allocated)
        if block.size >= _alloc_config.config().max_split_size:
            self.stats.oversize_allocations.decrease(1)
        if block.stream_uses:
            if self.captures_underway:
                # Events recorded during a capture cannot be queried: record them after it.
                self.needs_events_deferred_until_no_capture.append(block)
            else:
                self._insert_events(block)
        else:
            self._free_block(block, context)

    def _free_block(self, block, context):
        assert not block.allocated and block.event_count == 0 and not block.stream_uses
        if self.record_history or self.trace_trackers:
            self._record_trace("free_completed", block.ptr, block.requested_size, block.stream,
                               context or block.context_when_allocated)
        block.context_when_allocated = None
        original_size, requested_size = block.size, block.requested_size
        pool = block.pool
        net_blocks = net_size = 0
        for candidate in (block.prev, block.next):
            if candidate is None or candidate.allocated:
                continue  # what _try_merge_blocks checks first, without the call
            subsumed = self._try_merge_blocks(block, candidate, pool)
            if subsumed > 0:
                net_blocks -= 1
                net_size -= subsumed
        self.active_blocks.discard(block)
        inserted = pool.insert_into_blocks(block)
        assert inserted
        if block.prev is not None or block.next is not None:
            net_blocks += 1
            net_size += block.size
        hot = self.stats.of(pool)
        # Free pages of expandable segments can always be released: they are left out of
        # inactive_split, as in PyTorch.
        if block.expandable_segment is None:
            if net_blocks > 0:
                _increase(hot.inactive_split, net_blocks)
            elif net_blocks < 0:
                _decrease(hot.inactive_split, -net_blocks)
            if net_size > 0:
                _increase(hot.inactive_split_bytes, net_size)
            elif net_size < 0:
                _decrease(hot.inactive_split_bytes, -net_size)
        _decrease(hot.active, 1)
        _decrease(hot.active_bytes, original_size)
        _decrease(hot.requested_bytes, requested_size)

    def _try_merge_blocks(self, dst, src, pool):
        if (src is None or src.allocated or src.event_count > 0 or src.stream_uses
                or dst.mapped != src.mapped):
            return 0
        assert dst.is_split() and src.is_split()
        (pool.blocks if src.mapped else pool.unmapped).discard(src)
        if dst.prev is src:  # [src dst]
            dst.ptr = src.ptr
            dst.prev = src.prev
            if dst.prev is not None:
                dst.prev.next = dst
            dst.context_when_segment_allocated = src.context_when_segment_allocated
        else:  # [dst src]
            dst.next = src.next
            if dst.next is not None:
                dst.next.prev = dst
        dst.size += src.size
        return src.size

    # -- streams and events --------------------------------------------------------------------
    @_exclusive
    def record_stream(self, block, stream):
        """Mark ``block`` as used on ``stream``: freeing it then waits for that stream's work."""
        if stream == block.stream:
            return  # uses on the allocation stream need no synchronization
        block.stream_uses.add(stream)
        if self.captures_underway:
            self.block_to_cudagraph_stream_uses.setdefault(block, set()).add(stream)

    def _get_event(self):
        if self.event_pool:
            return self.event_pool.pop()
        return self.runtime.event_create(self.device, enable_timing=False)

    def _insert_events(self, block):
        streams, block.stream_uses = block.stream_uses, set()
        for s in streams:
            ev = self._get_event()
            self.runtime.event_record(ev, s)
            block.event_count += 1
            self.cuda_events.setdefault(s, []).append((ev, block))

    def _remove_cudagraph_stream_uses(self, block):
        during = self.block_to_cudagraph_stream_uses.pop(block, None)
        if during:
            block.stream_uses = {s for s in block.stream_uses if s not in during}

    def _insert_events_deferred_until_no_capture(self, context):
        if self.needs_events_deferred_until_no_capture:
            for block in self.needs_events_deferred_until_no_capture:
                # streams used during the capture have finished with it when capture ends
                self._remove_cudagraph_stream_uses(block)
                self._insert_events(block)
                if block.event_count == 0:
                    self._free_block(block, context)
            self.needs_events_deferred_until_no_capture = []

    def _process_events(self, context):
        self._insert_events_deferred_until_no_capture(context)
        for stream in list(self.cuda_events):
            q = self.cuda_events[stream]
            while q:
                ev, block = q[0]
                if not self.runtime.event_query(ev):
                    break
                q.pop(0)
                self.event_pool.append(ev)
                block.event_count -= 1
                if block.event_count == 0:
                    self._free_block(block, context)
            if not q:
                del self.cuda_events[stream]

    def _synchronize_and_free_events(self, context):
        self.stats.num_sync_all_streams += 1
        if self.captures_underway:
            raise RuntimeError("captures_underway.empty() INTERNAL ASSERT FAILED: cannot "
                               "synchronize the allocator's events during a CUDA graph capture")
        self._insert_events_deferred_until_no_capture(context)
        for q in self.cuda_events.values():
            for ev, block in q:
                self.runtime.event_synchronize(ev)
                self.event_pool.append(ev)
                block.event_count -= 1
                if block.event_count == 0:
                    self._free_block(block, context)
        self.cuda_events = {}

    # -- finding and getting memory ------------------------------------------------------------
    def _get_pool(self, size, stream):
        for mempool_id, filt in self.captures_underway:
            if filt(stream):
                gp = self.graph_pools[mempool_id]
                return gp.small_blocks if size <= K_SMALL_SIZE else gp.large_blocks
        return self.small_blocks if size <= K_SMALL_SIZE else self.large_blocks

    @staticmethod
    def _stat_types(pool):
        return pool.stat_types

    def _should_split(self, block, size):
        remaining = block.size - size
        if block.pool.is_small:
            return remaining >= K_MIN_BLOCK_SIZE
        cfg = _alloc_config.config()
        if cfg.expandable_segments:
            return remaining >= K_MIN_BLOCK_SIZE
        return size < cfg.max_split_size and remaining > K_SMALL_SIZE

    def _get_free_block(self, p):
        cfg = _alloc_config.config()
        pool = p.pool
        if self.set_fraction and cfg.garbage_collection_threshold > 0.0:
            pool.get_free_blocks_call_count += 1  # block ages count only with GC enabled
        blocks = pool.blocks
        i = bisect.bisect_left(blocks._keys, (p.stream, p.size, 0))
        b = blocks._blocks[i] if i < len(blocks._blocks) else None
        if b is None or b.stream != p.stream:
            return False
        if b.expandable_segment is not None:
            if cfg.expandable_segments:
                # The block next to the unmapped end of a segment can grow: for best fit, its
                # size is what it can grow to.
                def expandable_size(b):
                    n = b.next
                    return b.size + (n.size if n is not None and not n.mapped else 0)
                j = i + 1
                while (blocks[i].expandable_segment is not None and j < len(blocks)
                       and blocks[j].stream == p.stream
                       and expandable_size(blocks[j]) < expandable_size(blocks[i])):
                    i, j = j, j + 1
            else:
                # expandable segments were switched off: use ordinary blocks only
                i += 1
                while (i < len(blocks) and blocks[i].expandable_segment is not None
                       and blocks[i].stream == p.stream):
                    i += 1
                if i == len(blocks) or blocks[i].stream != p.stream:
                    return False
            b = blocks[i]
        # no oversize cached block for a request below max_split_size ...
        if p.size < cfg.max_split_size and b.size >= cfg.max_split_size:
            return False
        # ... and not one much larger than an oversize request
        if p.size >= cfg.max_split_size and b.size >= p.size + cfg.max_non_split_rounding_size:
            return False
        p.block = b
        del blocks._keys[i], blocks._blocks[i]  # blocks.discard(b), b being blocks[i]
        return True

    def _trigger_free_memory_callbacks(self, p):
        freed = False
        for cb in list(_free_memory_callbacks):
            freed |= bool(cb())
        return freed

    def _garbage_collect_cached_blocks(self, context):
        cfg = self.cfg
        gc_threshold = int(cfg.garbage_collection_threshold * self.allowed_memory_maximum)
        if self.total_allocated_memory <= gc_threshold:
            return
        target = self.total_allocated_memory - gc_threshold
        reclaimed = 0
        total_age = 0
        count = 0
        for b in self.large_blocks.blocks:
            if not b.is_split():
                total_age += b.gc_count()
                count += 1
        if count == 0:
            return
        freed = True
        while reclaimed < target and freed and count > 0:
            age_threshold = total_age / count
            freed = False
            for b in self.large_blocks.blocks:  # a copy: release_block edits the pool
                if not b.is_split() and b.gc_count() >= age_threshold:
                    freed = True
                    reclaimed += b.size
                    total_age -= b.gc_count()
                    count -= 1
                    self._release_block(b, context)

    def _alloc_block(self, p, is_retry, context):
        cfg = self.cfg
        size = p.alloc_size
        if is_retry:
            self.stats.num_alloc_retries += 1
        if self.set_fraction and self.total_allocated_memory + size > self.allowed_memory_maximum:
            if cfg.throw_on_cudamalloc_oom:
                self.stats.num_oom_rejections += 1
            p.err = "oom"
            return False
        if cfg.expandable_segments:
            p.block = self._try_allocate_expandable_block(p.stream, p.pool, p.size, context)
            if p.block is None:
                p.err = "oom"
                return False
            p.err = None
            if p.pool.owner_private_pool is not None:
                p.pool.owner_private_pool.cuda_malloc_count += 1
            return True
        try:
            ptr = self._cuda_malloc_maybe_capturing(size)
        except DeviceOutOfMemory:
            p.err = "oom"
            return False
        if p.pool.owner_private_pool is not None:
            p.pool.owner_private_pool.cuda_malloc_count += 1
        self.total_allocated_memory += size
        p.block = Block(self.device, p.stream, size, p.pool, ptr)
        for t in p.stat_types:
            self.stats.segment[t].increase(1)
            self.stats.reserved_bytes[t].increase(size)
        self._private_reserved(p.pool, size)
        if size >= cfg.max_split_size:
            self.stats.oversize_segments.increase(1)
        self.stats.num_device_alloc += 1
        self._record_trace("segment_alloc", ptr, size, p.stream, context)
        p.block.context_when_segment_allocated = context
        p.err = None
        return True

    def _cuda_malloc_maybe_capturing(self, size):
        # During a capture PyTorch calls cudaMalloc in relaxed capture mode: the graph gets
        # fresh memory, and replays do not allocate again.
        if self.captures_underway:
            return self.runtime.malloc(self.device, size, relaxed=True)
        return self.runtime.malloc(self.device, size)

    def _private_reserved(self, pool, delta):
        pp = pool.owner_private_pool
        if pp is None:
            return
        for t in self._stat_types(pool):
            if delta > 0:
                pp.reserved_bytes[t].increase(delta)
            else:
                pp.reserved_bytes[t].decrease(-delta)

    def _release_available_cached_blocks(self, p, context):
        """Free oversize cached blocks of this stream: the smallest one that is large enough,
        or else the largest ones until enough is freed."""
        cfg = self.cfg
        if cfg.max_split_size == SIZE_MAX:
            return False
        blocks = p.pool.blocks
        key_size = max(p.size, cfg.max_split_size)
        i = blocks.lower_bound((p.stream, key_size, 0))
        if i == len(blocks) or blocks[i].stream != p.stream:
            if i == 0:
                return False
            released = 0
            i -= 1  # now on the largest block of this stream (if it has any)
            while (released < key_size and blocks[i].size >= cfg.max_split_size
                   and blocks[i].stream == p.stream and blocks[i].expandable_segment is None):
                cur = blocks[i]
                released += cur.size
                self._release_block(cur, context)
                if i == 0:
                    break
                i -= 1
            if released < key_size:
                return False
        else:
            if blocks[i].expandable_segment is not None:
                return False
            self._release_block(blocks[i], context)
        return True

    def _release_cached_blocks(self, context):
        """Free every whole cached segment (after waiting for all pending events)."""
        self._synchronize_and_free_events(context)
        self._release_blocks(self.large_blocks, context)
        self._release_blocks(self.small_blocks, context)
        for mempool_id, gp in list(self.graph_pools_freeable.items()):
            assert gp.use_count == 0
            self._release_blocks(gp.small_blocks, context)
            self._release_blocks(gp.large_blocks, context)
            if gp.cuda_malloc_count == 0:
                del self.graph_pools[mempool_id]
                del self.graph_pools_freeable[mempool_id]
        return True

    def _release_blocks(self, pool, context):
        to_unmap = []
        for b in pool.blocks:
            if b.expandable_segment is not None:
                to_unmap.append(b)
            elif b.prev is None and b.next is None:
                self._release_block(b, context)
        for b in to_unmap:
            self._unmap_block(b, context)
            if b.prev is None and b.next is None:
                self._release_expandable_segment(b)

    def _release_block(self, block, context):
        assert block.expandable_segment is None
        self.stats.num_device_free += 1
        self._record_trace("segment_free", block.ptr, block.size, block.stream,
                           context or block.context_when_segment_allocated)
        self.runtime.free(self.device, block.ptr)
        self.total_allocated_memory -= block.size
        pool = block.pool
        if pool.owner_private_pool is not None:
            assert pool.owner_private_pool.cuda_malloc_count > 0
            pool.owner_private_pool.cuda_malloc_count -= 1
        for t in self._stat_types(pool):
            self.stats.segment[t].decrease(1)
            self.stats.reserved_bytes[t].decrease(block.size)
        self._private_reserved(pool, -block.size)
        if block.size >= self.cfg.max_split_size:
            self.stats.oversize_segments.decrease(1)
        pool.blocks.discard(block)

    # -- expandable segments -------------------------------------------------------------------
    def _find_expandable_block(self, stream, pool, size):
        def allocatable(b):
            return (b is not None and not b.allocated and b.event_count == 0
                    and not b.stream_uses)

        def has_room(b):
            got = 0
            while got < size and allocatable(b):
                got += b.size
                b = b.next
            return got >= size

        um = pool.unmapped
        i = um.lower_bound((stream, 0))
        while i < len(um) and um[i].stream == stream:
            c = um[i]
            if allocatable(c.prev):  # a free block just before the unmapped range joins it
                c = c.prev
            if has_room(c):
                return c
            i += 1
        segment_size = K_SMALL_BUFFER if pool.is_small else self.cfg.large_segment_size
        es = ExpandableSegment(self.runtime, self.device, stream, segment_size)
        self.expandable_segments.append(es)
        candidate = Block(self.device, stream, es.size(), pool, es.ptr)
        candidate.mapped = False
        candidate.expandable_segment = es
        pool.unmapped.add(candidate)
        return candidate

    def _map_block(self, to_map, size, context):
        assert not to_map.mapped and size <= to_map.size
        mptr, msize = to_map.expandable_segment.map(to_map.ptr, size)
        if msize == 0:
            return False
        assert mptr == to_map.ptr and msize >= size
        pool = to_map.pool
        pool.unmapped.discard(to_map)
        to_map.mapped = True
        if msize < to_map.size:
            remaining = Block(to_map.device, to_map.stream, to_map.size - msize, pool,
                              to_map.ptr + msize)
            remaining.mapped = False
            remaining.expandable_segment = to_map.expandable_segment
            remaining.splice(to_map, to_map.next)
            pool.unmapped.add(remaining)
            to_map.size = msize
        self._try_merge_blocks(to_map, to_map.prev, pool)
        self._try_merge_blocks(to_map, to_map.next, pool)
        pool.insert_into_blocks(to_map)
        self.total_allocated_memory += msize
        for t in self._stat_types(pool):
            self.stats.reserved_bytes[t].increase(msize)
        self._private_reserved(pool, msize)
        self.stats.num_device_alloc += 1
        self._record_trace("segment_map", mptr, msize, to_map.stream, context)
        if to_map.prev is None and to_map.context_when_segment_allocated is None:
            to_map.context_when_segment_allocated = context
        return True

    def _try_allocate_expandable_block(self, stream, pool, size, context):
        candidate = self._find_expandable_block(stream, pool, size)
        # candidate: unmapped -> end, unmapped -> free -> ..., or free -> unmapped -> ...
        if not candidate.mapped and not self._map_block(candidate, min(candidate.size, size),
                                                        context):
            return None
        while candidate.size < size:
            # invariant: free -> unmapped -> ...; map some of the unmapped part and merge
            nxt = candidate.next
            if not self._map_block(nxt, min(size - candidate.size, nxt.size), context):
                return None
            candidate = nxt
        pool.blocks.discard(candidate)
        return candidate

    def _unmap_block(self, block, context):
        uptr, usize = block.expandable_segment.unmap(block.ptr, block.size)
        if usize == 0:
            return
        pool = block.pool
        pool.blocks.discard(block)
        before = uptr - block.ptr
        if before > 0:
            bf = Block(block.device, block.stream, before, pool, block.ptr)
            bf.expandable_segment = block.expandable_segment
            bf.splice(block.prev, block)
            pool.insert_into_blocks(bf)
        after = block.size - (before + usize)
        if after > 0:
            af = Block(block.device, block.stream, after, pool, uptr + usize)
            af.expandable_segment = block.expandable_segment
            af.splice(block, block.next)
            pool.insert_into_blocks(af)
        block.ptr, block.size, block.mapped = uptr, usize, False
        self._try_merge_blocks(block, block.prev, pool)
        self._try_merge_blocks(block, block.next, pool)
        pool.unmapped.add(block)
        self.total_allocated_memory -= usize
        for t in self._stat_types(pool):
            self.stats.reserved_bytes[t].decrease(usize)
        self._private_reserved(pool, -usize)
        if pool.owner_private_pool is not None:
            assert pool.owner_private_pool.cuda_malloc_count > 0
            pool.owner_private_pool.cuda_malloc_count -= 1
        self.stats.num_device_free += 1
        self._record_trace("segment_unmap", uptr, usize, block.stream,
                           context or block.context_when_segment_allocated)

    def _release_expandable_segment(self, block):
        es = block.expandable_segment
        assert block.size == es.size() and not block.mapped, "block disagrees with segment"
        self.expandable_segments.remove(es)
        block.pool.unmapped.discard(block)
        es.release()

    # -- public operations ---------------------------------------------------------------------
    @_exclusive
    def set_memory_fraction(self, fraction):
        _, total = self.runtime.mem_get_info(self.device)
        self.allowed_memory_maximum = int(fraction * total)
        self.set_fraction = True
        self.fraction = fraction

    def get_memory_fraction(self):
        return self.fraction

    @_exclusive
    def empty_cache(self):
        """Give every whole cached segment back to the device."""
        self._release_cached_blocks(self._gather(ALL))
        for ev in self.event_pool:
            self.runtime.event_destroy(ev)
        self.event_pool = []

    def cache_info(self):
        """The size of the largest cached free block (free device memory if larger)."""
        largest, _ = self.runtime.mem_get_info(self.device)
        pools = [self.large_blocks, self.small_blocks]
        for gp in self.graph_pools.values():
            pools += [gp.large_blocks, gp.small_blocks]
        for pl in pools:
            for b in pl.blocks:
                largest = max(largest, b.size)
        return largest

    def reset_accumulated_stats(self):
        s = self.stats
        for name in _ARRAY_STATS:
            for st in getattr(s, name):
                st.reset_accumulated()
        s.num_alloc_retries = s.num_ooms = s.num_sync_all_streams = 0
        s.num_device_alloc = s.num_device_free = s.num_oom_rejections = 0
        s.oversize_allocations.reset_accumulated()
        s.oversize_segments.reset_accumulated()
        for gp in self.graph_pools.values():
            for st in gp.reserved_bytes:
                st.reset_accumulated()

    def reset_peak_stats(self):
        s = self.stats
        for name in _ARRAY_STATS:
            for st in getattr(s, name):
                st.reset_peak()
        s.oversize_allocations.reset_peak()
        s.oversize_segments.reset_peak()
        for gp in self.graph_pools.values():
            for st in gp.reserved_bytes:
                st.reset_peak()

    def fragmentation_bytes(self):
        """Free bytes in segments (mapped ranges) that also hold blocks in use: memory that is
        reserved but cannot be released, nor serve a request larger than its pieces."""
        total = 0
        for seg in self._segments():
            used = any(b.allocated or b.event_count > 0 or b.stream_uses for b in seg)
            if used:
                total += sum(b.size for b in seg
                             if not (b.allocated or b.event_count > 0 or b.stream_uses))
        return total

    def memory_stats(self):
        """The statistics as a nested dict (what PyTorch's ``_cuda_memoryStats`` returns), plus
        ember's fragmentation figures."""
        s = self.stats
        s.max_split_size = _as_int64(self.cfg.max_split_size)
        out = {
            "num_alloc_retries": s.num_alloc_retries,
            "num_ooms": s.num_ooms,
            "num_sync_all_streams": s.num_sync_all_streams,
            "num_device_alloc": s.num_device_alloc,
            "num_device_free": s.num_device_free,
            "num_oom_rejections": s.num_oom_rejections,
            "max_split_size": s.max_split_size,
        }
        for name in _ARRAY_STATS:
            out[name] = _array_dict(getattr(s, name))
        out["oversize_allocations"] = s.oversize_allocations.as_dict()
        out["oversize_segments"] = s.oversize_segments.as_dict()
        out["reserved_bytes_by_private_pools"] = {
            mid: _array_dict(gp.reserved_bytes) for mid, gp in self.graph_pools.items()}
        frag = self.fragmentation_bytes()
        reserved = s.reserved_bytes[AGGREGATE].current
        out["fragmentation_bytes"] = frag
        out["fragmentation"] = frag / reserved if reserved else 0.0
        return out

    # -- snapshots -----------------------------------------------------------------------------
    def _all_blocks(self):
        pools = [self.small_blocks, self.large_blocks]
        for gp in self.graph_pools.values():
            pools += [gp.small_blocks, gp.large_blocks]
        out = [b for pl in pools for b in pl.blocks]
        out += list(self.active_blocks)
        return out

    def _segments(self):
        """Each segment (each mapped range of an expandable segment) as its list of blocks."""
        segs = []
        for head in self._all_blocks():
            if head.prev is not None and head.prev.mapped:
                continue
            blocks, b = [], head
            while b is not None and b.mapped:
                blocks.append(b)
                b = b.next
            segs.append(blocks)
        return segs

    @_exclusive
    def snapshot(self):
        """The segments as PyTorch's snapshot records (a list of dicts, by address)."""
        pool_to_id = {gp: mid for mid, gp in self.graph_pools.items()}
        pool_to_id.update({gp: mid for mid, gp in self.graph_pools_freeable.items()})
        result = []
        total_active = 0
        for blocks in self._segments():
            head = blocks[0]
            seg = {"device": head.device, "address": head.ptr, "total_size": 0,
                   "allocated_size": 0, "active_size": 0, "requested_size": 0,
                   "stream": head.stream,
                   "segment_type": "small" if head.pool.is_small else "large",
                   "segment_pool_id": pool_to_id.get(head.pool.owner_private_pool, (0, 0)),
                   "is_expandable": head.expandable_segment is not None,
                   "frames": list(head.context_when_segment_allocated or []),
                   "blocks": []}
            for b in blocks:
                active = b.allocated or b.event_count > 0 or bool(b.stream_uses)
                seg["total_size"] += b.size
                if b.allocated:
                    seg["allocated_size"] += b.size
                if active:
                    seg["active_size"] += b.size
                    seg["requested_size"] += b.requested_size
                seg["blocks"].append({
                    "address": b.ptr, "size": b.size, "requested_size": b.requested_size,
                    "state": ("active_allocated" if b.allocated else
                              "active_pending_free" if active else "inactive"),
                    "frames": list(b.context_when_allocated or [])})
            total_active += seg["active_size"]
            result.append(seg)
        result.sort(key=lambda s: s["address"])
        self._record_trace("snapshot", 0, total_active, 0, None)
        return result

    def trace(self):
        return [te.as_dict() for te in self.alloc_buffer.get()]

    # -- CUDA graph private pools --------------------------------------------------------------
    @_exclusive
    def begin_allocate_to_pool(self, mempool_id, filter):
        """From now on, allocations on streams for which ``filter(stream)`` is true come from
        the private pool ``mempool_id`` (made now, or shared with the graphs already using it)."""
        mempool_id = tuple(mempool_id)
        gp = self.graph_pools.get(mempool_id)
        if gp is None:
            self.graph_pools[mempool_id] = PrivatePool(mempool_id)
        else:
            assert gp.use_count > 0
            gp.use_count += 1
        for mid, _ in self.captures_underway:
            if mid == mempool_id:
                raise RuntimeError("beginAllocateToPool: already recording to mempool_id")
        self.captures_underway.append((mempool_id, filter))

    @_exclusive
    def end_allocate_to_pool(self, mempool_id):
        mempool_id = tuple(mempool_id)
        for k, (mid, _) in enumerate(self.captures_underway):
            if mid == mempool_id:
                del self.captures_underway[k]
                return
        raise RuntimeError("endAllocatePool: not currently recording to mempool_id")

    def free_deferred(self):
        """Free the blocks whose tensors died while the allocator was busy."""
        while self._deferred_frees:
            self.free(self._deferred_frees.pop())

    @_exclusive
    def release_pool(self, mempool_id):
        """A graph using pool ``mempool_id`` was reset; at no users left, its cached segments
        become releasable (by ``empty_cache`` or an allocation's retry)."""
        mempool_id = tuple(mempool_id)
        gp = self.graph_pools[mempool_id]
        gp.use_count -= 1
        assert gp.use_count >= 0
        if gp.use_count == 0:
            assert mempool_id not in self.graph_pools_freeable
            self.graph_pools_freeable[mempool_id] = gp

    def create_or_incref_pool(self, mempool_id):
        """``MemPool``'s hold on its pool (made at use count 1, or one more user)."""
        mempool_id = tuple(mempool_id)
        gp = self.graph_pools.get(mempool_id)
        if gp is None:
            self.graph_pools[mempool_id] = PrivatePool(mempool_id)
        else:
            gp.use_count += 1
            self.graph_pools_freeable.pop(mempool_id, None)

    def get_pool_use_count(self, mempool_id):
        gp = self.graph_pools.get(tuple(mempool_id))
        return 0 if gp is None else gp.use_count


def _report_process_memory_info(runtime, device):
    """PyTorch's NVML part of the OOM message. The simulated device belongs to this process
    alone, so its memory in use is this process's; on a GPU, NVML (``pynvml``) is asked when it
    is installed, and the part is left out otherwise, as PyTorch leaves it out without NVML."""
    if getattr(runtime, "simulated", False):
        free, total = runtime.mem_get_info(device)
        return (f"Including non-PyTorch memory, this process has {format_size(total - free)} "
                f"memory in use. ")
    try:
        import pynvml
    except ImportError:
        return ""
    try:
        pynvml.nvmlInit()
        props = runtime.get_device_properties(device)
        bus_id = f"{props.pci_domain_id:08x}:{props.pci_bus_id:02x}:{props.pci_device_id:02x}.0"
        handle = pynvml.nvmlDeviceGetHandleByPciBusId(bus_id)
        procs = pynvml.nvmlDeviceGetComputeRunningProcesses(handle)
    except pynvml.NVMLError:
        return ""
    me = os.getpid()
    parts = []
    for proc in procs:
        who = ("Including non-PyTorch memory, this process" if proc.pid == me
               else f"Process {proc.pid}")
        parts.append(f"{who} has {format_size(proc.usedGpuMemory or 0)} memory in use. ")
    return "".join(parts)


# ---------------------------------------------------------------------------------------------
# Free-memory callbacks (PyTorch's FreeCudaMemoryCallbacksRegistry): run when no cached block
# fits, before asking the device; each returns whether it freed something.
_free_memory_callbacks = []


def register_free_memory_callback(fn):
    _free_memory_callbacks.append(fn)
    return fn


# ---------------------------------------------------------------------------------------------
# The process's allocators and the data pointers storages hold

_allocators = {}
_history = None  # the last record_memory_history arguments, for allocators made later


def get_allocator(device):
    """The caching allocator of CUDA device ``device`` (made at first use)."""
    a = _allocators.get(device)
    if a is None:
        from . import _runtime
        rt = _runtime.get_runtime()
        if rt is None:
            raise RuntimeError("No CUDA GPUs are available")
        if not 0 <= device < rt.device_count():
            raise RuntimeError("CUDA error: invalid device ordinal")
        a = _allocators[device] = DeviceCachingAllocator(rt, device)
        if _history is not None:
            a.record_memory_history(*_history[0], **_history[1])
    return a


def record_memory_history(*args, **kwargs):
    """Set history recording on every device's allocator, now and for those made later."""
    global _history
    _history = (args, kwargs)
    for a in _allocators.values():
        a.record_memory_history(*args, **kwargs)


# MempoolId_t = (capture id, handle id): graph captures without a pool get (n, 0); pools made
# by graph_pool_handle() or MemPool get (0, n). Two counters, as PyTorch's.
_capture_uid = [0]
_pool_uid = [0]


def next_capture_pool_id():
    _capture_uid[0] += 1
    return (_capture_uid[0], 0)


def next_user_pool_id():
    _pool_uid[0] += 1
    return (0, _pool_uid[0])


def _initialized_allocators():
    return dict(_allocators)


def _reset_for_tests():
    """Forget the allocators (tests that install a fresh runtime)."""
    global _history
    _allocators.clear()
    _by_ptr.clear()
    _history = None


_by_ptr = {}  # ptr -> Block, for caching_allocator_delete and record_stream by address


class CUDADataPtr:
    """Device memory from the caching allocator, as a CUDA storage holds it: gives its block
    back when it is no longer referenced."""
    __slots__ = ("block", "ptr", "size", "device", "_allocator", "__weakref__")

    def __init__(self, block, device, allocator):
        self.block = block
        self.ptr = block.ptr if block is not None else 0
        self.size = block.requested_size if block is not None else 0
        self.device = device
        self._allocator = allocator

    def data_ptr(self):
        return self.ptr

    def __len__(self):
        return self.size

    def record_stream(self, stream):
        if self.block is not None:
            self._allocator.record_stream(self.block, stream)

    def free(self):
        block, self.block = self.block, None
        if block is not None and block.allocated:
            _by_ptr.pop(block.ptr, None)
            a = self._allocator
            if a._busy:  # finalized by a GC pass inside the allocator's own work: free it after
                a._deferred_frees.append(block)
            else:
                a.free(block)

    def __del__(self):
        try:
            self.free()
        except Exception:  # noqa: BLE001  (interpreter shutdown: the allocator may be gone)
            if sys is not None and not sys.is_finalizing():
                raise

    def __repr__(self):
        return f"CUDADataPtr(ptr={self.ptr:#x}, size={self.size}, device=cuda:{self.device})"


def allocate(nbytes, device, stream=0):
    """``nbytes`` of device memory on ``device`` for use on ``stream`` (a null pointer for 0)."""
    if nbytes >= ONE_EXA_BYTES:
        raise OutOfMemoryError("CUDA out of memory. Tried to allocate more than 1EB memory.")
    alloc = get_allocator(device)
    if nbytes == 0:
        return CUDADataPtr(None, device, alloc)
    block = alloc.malloc(nbytes, stream)
    _by_ptr[block.ptr] = block
    return CUDADataPtr(block, device, alloc)


def raw_alloc(nbytes, device, stream=0):
    """``caching_allocator_alloc``: a bare address, freed by :func:`raw_delete`."""
    if nbytes == 0:
        return 0
    block = get_allocator(device).malloc(nbytes, stream)
    _by_ptr[block.ptr] = block
    return block.ptr


def raw_delete(ptr):
    if not ptr:
        return
    block = _by_ptr.pop(ptr, None)
    if block is None:
        raise RuntimeError(f"invalid device pointer: {ptr:#x}")
    get_allocator(block.device).free(block)


def block_for_ptr(ptr):
    return _by_ptr.get(ptr)

