"""PyTorch's CUDA caching allocator (ember/cuda/_caching_allocator.py) on the simulated device:
PyTorch's arithmetic for scripted workloads, stream-aware reuse, OOM handling, private pools,
the configuration parser, and the observability of ember.cuda.memory checked against PyTorch's
own Python (memory_summary, _memory_viz) as the oracle."""
import gc
import pickle
import re
import sys

import pytest

import ember

from ember.cuda import _alloc_config, _memory_viz
from ember.cuda import _caching_allocator as ca
from ember.cuda import _runtime, memory
from ember.cuda._caching_allocator import DeviceCachingAllocator, OutOfMemoryError

MiB = 1 << 20


@pytest.fixture
def conf(monkeypatch):
    """Install allocator settings for one test (PyTorch's defaults when called with None)."""
    monkeypatch.setattr(_alloc_config, "_config", None)

    def install(env=None):
        return _alloc_config._reset_for_tests(env)
    install()
    return install


@pytest.fixture
def rt():
    return _runtime.SimulatedRuntime(capacity_mb=256)


@pytest.fixture
def alloc(conf, rt):
    return DeviceCachingAllocator(rt, 0)


@pytest.fixture
def sim(conf):
    """A fresh simulated device behind ember.cuda (for the ember.cuda.memory functions)."""
    ember.cuda._forget_runtime()  # (on a GPU too: its runtime is started afresh after)
    _runtime._set_runtime_for_tests(_runtime.SimulatedRuntime(capacity_mb=256))
    yield _runtime.get_runtime()
    ember.cuda._forget_runtime()


def stat(a, name, pool="all", kind="current"):
    s = a.memory_stats()[name]
    return s[pool][kind] if pool in s else s[kind]


def check_consistent(a):
    """The statistics agree with the blocks and with the device's own accounting."""
    segs = a._segments()
    blocks = [b for seg in segs for b in seg]
    assert stat(a, "reserved_bytes") == sum(b.size for b in blocks) == a.total_allocated_memory
    assert stat(a, "allocated_bytes") == sum(b.size for b in blocks if b.allocated)
    assert stat(a, "allocation") == sum(1 for b in blocks if b.allocated)
    assert stat(a, "requested_bytes") == sum(b.requested_size for b in blocks
                                             if b.allocated or b.event_count or b.stream_uses)
    plain = [seg for seg in segs if seg[0].expandable_segment is None]
    assert stat(a, "segment") == len(plain)
    free_split = [b for seg in plain if len(seg) > 1 for b in seg
                  if not (b.allocated or b.event_count or b.stream_uses)]
    assert stat(a, "inactive_split") == len(free_split)
    assert stat(a, "inactive_split_bytes") == sum(b.size for b in free_split)
    assert a.runtime.in_use == stat(a, "reserved_bytes")
    for seg in segs:  # blocks tile their segment
        for x, y in zip(seg, seg[1:]):
            assert x.ptr + x.size == y.ptr and x.next is y and y.prev is x


# ---------------------------------------------------------------------------------------------
# Sizes, pools, segments

def test_a_one_element_request_takes_512_bytes_of_a_2mib_segment(alloc):
    b = alloc.malloc(4)
    assert (b.size, b.requested_size) == (512, 4)
    assert stat(alloc, "allocated_bytes") == stat(alloc, "allocated_bytes", "small_pool") == 512
    assert stat(alloc, "reserved_bytes") == stat(alloc, "reserved_bytes", "small_pool") == 2 * MiB
    assert stat(alloc, "requested_bytes") == 4
    assert stat(alloc, "segment", "small_pool") == 1
    check_consistent(alloc)


@pytest.mark.parametrize("req,segment", [
    (1 * MiB, 2 * MiB),            # 1 MiB is still small
    (1 * MiB + 1, 20 * MiB),       # 1-10 MiB: a 20 MiB segment
    (9 * MiB + 7, 20 * MiB),
    (10 * MiB, 10 * MiB),          # from 10 MiB: rounded up to 2 MiB
    (11 * MiB, 12 * MiB),
    (33 * MiB + 5, 34 * MiB),
])
def test_segment_sizes(alloc, req, segment):
    alloc.malloc(req)
    assert stat(alloc, "reserved_bytes") == segment
    assert stat(alloc, "segment") == 1


def test_round_size_and_power2_divisions(conf):
    assert ca.round_size(1) == 512
    assert ca.round_size(513) == 1024
    assert ca.round_size(1200) == 1536  # 1200 <= 512 * 4: plain 512 steps even with divisions
    conf("roundup_power2_divisions:4")
    assert ca._roundup_power2_next_division(1200, 4) == 1280
    assert ca.round_size(int(1.2 * MiB)) == int(1.25 * MiB)
    assert ca.round_size(5 * MiB + 1) == 6 * MiB
    assert ca.round_size(4 * MiB) == 4 * MiB  # a power of two stays
    conf("roundup_power2_divisions:[64:8,256:4,1024:4,>:1]")
    divs = _alloc_config.config().roundup_power2_divisions
    assert divs[:7] == [8] * 7 and divs[8] == 4 and divs[10] == 4 and divs[11:] == [1] * 5
    assert ca.round_size(70 * MiB) == 72 * MiB  # 64..128 MiB in 8 steps of 8 MiB
    assert ca.round_size(300 * MiB) == 320 * MiB  # 256..512 MiB in 4 steps of 64 MiB
    assert ca.round_size(5000 * MiB + 3) == 5000 * MiB + 512  # 1 division: 512 B steps


# ---------------------------------------------------------------------------------------------
# Splitting, merging, best fit

def test_small_blocks_split_and_merge_back(alloc):
    a, b, c = alloc.malloc(1000), alloc.malloc(600), alloc.malloc(10)
    assert (b.ptr, c.ptr) == (a.ptr + 1024, a.ptr + 1024 + 1024)
    assert stat(alloc, "segment") == 1
    assert stat(alloc, "inactive_split") == 1  # the rest of the 2 MiB segment
    alloc.free(a)
    alloc.free(c)
    assert stat(alloc, "inactive_split") == 2  # a's hole, and c merged into the tail
    check_consistent(alloc)
    alloc.free(b)  # everything merges into one free 2 MiB block
    assert stat(alloc, "inactive_split") == stat(alloc, "inactive_split_bytes") == 0
    assert [len(s) for s in alloc._segments()] == [1]
    check_consistent(alloc)
    alloc.empty_cache()
    assert stat(alloc, "reserved_bytes") == 0 and alloc.runtime.in_use == 0


def test_large_split_rules(alloc):
    a = alloc.malloc(3 * MiB)  # 20 MiB segment, 17 MiB left: split
    assert stat(alloc, "inactive_split_bytes", "large_pool") == 17 * MiB
    b = alloc.malloc(int(16.5 * MiB))  # best fit is the 17 MiB rest; 0.5 MiB left: no split
    assert b.ptr == a.ptr + 3 * MiB and b.size == 17 * MiB
    assert stat(alloc, "allocated_bytes") == 20 * MiB
    assert stat(alloc, "requested_bytes") == 3 * MiB + int(16.5 * MiB)
    assert stat(alloc, "inactive_split") == 0
    check_consistent(alloc)


def test_best_fit_picks_the_smallest_block_that_fits(alloc):
    blocks = [alloc.malloc(n * MiB) for n in (12, 16, 14)]
    for b in blocks:
        alloc.free(b)
    got = alloc.malloc(13 * MiB)
    assert got.ptr == blocks[2].ptr  # the 14 MiB block
    assert got.size == 14 * MiB  # 1 MiB left is not > 1 MiB: not split
    assert stat(alloc, "reserved_bytes") == 42 * MiB
    check_consistent(alloc)


def test_blocks_are_reused_only_on_their_own_stream(alloc, rt):
    s1 = rt.stream_create(0)
    a = alloc.malloc(1000, stream=0)
    ptr = a.ptr  # (a freed block object may become another piece: keep the address)
    alloc.free(a)
    b = alloc.malloc(1000, stream=s1)
    assert b.ptr != ptr and stat(alloc, "segment") == 2
    assert alloc.malloc(1000, stream=0).ptr == ptr
    check_consistent(alloc)


# ---------------------------------------------------------------------------------------------
# Streams and events

def test_a_block_used_on_another_stream_waits_for_its_event(alloc, rt):
    side = rt.stream_create(0)
    a = alloc.malloc(4096)
    ptr = a.ptr
    alloc.record_stream(a, side)
    alloc.record_stream(a, 0)  # its own stream is ignored
    assert a.stream_uses == {side}
    rt.hold(side)
    rt.launch(side, lambda: None)  # work still running on the side stream
    alloc.free(a)
    assert stat(alloc, "allocated_bytes") == 0 and stat(alloc, "active_bytes") == 512 * 8
    b = alloc.malloc(4096)
    assert b.ptr != ptr  # not reusable while the event is pending
    snap = {blk["address"]: blk["state"] for seg in alloc.snapshot() for blk in seg["blocks"]}
    assert snap[ptr] == "active_pending_free"
    check_consistent(alloc)
    alloc.free(b)
    rt.release(side)
    c = alloc.malloc(4096)  # malloc processed the completed event: a's block is free again
    assert c.ptr == ptr
    assert len(alloc.event_pool) == 1  # the event went back to the pool
    check_consistent(alloc)


def test_empty_cache_waits_for_pending_events(alloc, rt):
    side = rt.stream_create(0)
    a = alloc.malloc(3 * MiB)
    alloc.record_stream(a, side)
    rt.hold(side)
    rt.launch(side, lambda: None)
    alloc.free(a)
    alloc.empty_cache()
    assert alloc.memory_stats()["num_sync_all_streams"] == 1
    assert stat(alloc, "reserved_bytes") == 0 and rt.in_use == 0


# ---------------------------------------------------------------------------------------------
# max_split_size, garbage collection

def test_max_split_size_and_oversize_blocks(conf, rt):
    conf("max_split_size_mb:40")
    a = DeviceCachingAllocator(rt, 0)
    assert a.memory_stats()["max_split_size"] == 40 * MiB
    x = a.malloc(50 * MiB)
    assert a.memory_stats()["oversize_segments"]["current"] == 1
    assert a.memory_stats()["oversize_allocations"]["current"] == 1
    a.free(x)
    y = a.malloc(30 * MiB)  # below max_split_size: never served by an oversize block
    assert y.ptr != x.ptr and stat(a, "reserved_bytes") == 80 * MiB
    z = a.malloc(45 * MiB)  # oversize request: the 50 MiB block, whole
    assert (z.ptr, z.size) == (x.ptr, 50 * MiB)
    a.free(z)
    a.free(y)
    big = a.malloc(80 * MiB)
    a.free(big)
    bigptr = big.ptr
    w = a.malloc(60 * MiB)  # 80 MiB >= 60 + 20 (max_non_split_rounding): a new segment
    assert w.ptr != bigptr and w.size == 60 * MiB
    v = a.malloc(61 * MiB)  # 80 < 61 + 20: the 80 MiB block, whole
    assert (v.ptr, v.size) == (bigptr, 80 * MiB)
    check_consistent(a)


def test_oversize_blocks_are_freed_before_giving_up(conf):
    conf("max_split_size_mb:40")
    rt = _runtime.SimulatedRuntime(capacity_mb=150)
    a = DeviceCachingAllocator(rt, 0)
    for n in (50, 60):
        a.free(a.malloc(n * MiB))
    b = a.malloc(70 * MiB)  # the device has 40 MiB left: both cached oversize blocks go
    s = a.memory_stats()
    assert s["num_device_free"] == 2 and s["num_alloc_retries"] == 0
    assert stat(a, "reserved_bytes") == 70 * MiB and b.size == 70 * MiB
    check_consistent(a)


def test_garbage_collection_frees_old_cached_blocks(conf, rt):
    conf("garbage_collection_threshold:0.4")
    a = DeviceCachingAllocator(rt, 0)
    a.set_memory_fraction(100 / 256)  # allowed 100 MiB, GC above 40 MiB
    old = a.malloc(20 * MiB)
    a.free(old)
    for _ in range(3):
        a.free(a.malloc(30 * MiB))  # the 30 MiB block is young
    assert stat(a, "reserved_bytes") == 50 * MiB
    a.malloc(40 * MiB)  # GC reclaims the blocks at least as old as the average: the 20 MiB one
    s = a.memory_stats()
    assert s["num_device_free"] == 1 and s["num_alloc_retries"] == 0
    assert stat(a, "reserved_bytes") == 70 * MiB
    check_consistent(a)


def test_without_a_threshold_nothing_is_collected(conf, rt):
    a = DeviceCachingAllocator(rt, 0)
    a.set_memory_fraction(100 / 256)
    a.free(a.malloc(20 * MiB))
    a.free(a.malloc(30 * MiB))
    a.malloc(40 * MiB)
    assert stat(a, "reserved_bytes") == 90 * MiB and a.memory_stats()["num_device_free"] == 0


# ---------------------------------------------------------------------------------------------
# OOM

def test_fraction_limited_oom_with_retry(conf):
    rt = _runtime.SimulatedRuntime(capacity_mb=64)
    a = DeviceCachingAllocator(rt, 0)
    a.set_memory_fraction(0.5)  # 32 MiB allowed
    a.free(a.malloc(20 * MiB))
    b = a.malloc(24 * MiB)  # 20 + 24 > 32: free the cached segment, retry
    s = a.memory_stats()
    assert s["num_alloc_retries"] == 1 and s["num_sync_all_streams"] == 1 and s["num_ooms"] == 0
    assert stat(a, "reserved_bytes") == 24 * MiB
    with pytest.raises(OutOfMemoryError) as ei:
        a.malloc(24 * MiB)
    assert str(ei.value).startswith(
        "CUDA out of memory. Tried to allocate 24.00 MiB. GPU 0 has a total capacity of 64.00 MiB "
        "of which 40.00 MiB is free. Including non-PyTorch memory, this process has 24.00 MiB "
        "memory in use. 32.00 MiB allowed; Of the allocated memory 24.00 MiB is allocated by "
        "PyTorch, and 0 bytes is reserved by PyTorch but unallocated. If reserved but "
        "unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True "
        "to avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/"
        "docs/stable/notes/cuda.html#environment-variables)")
    assert "[ember] Fragmentation: 0 bytes free in partly used segments, 0.0% of reserved" in \
        str(ei.value)
    assert isinstance(ei.value, RuntimeError)
    s = a.memory_stats()
    assert s["num_ooms"] == 1 and s["num_alloc_retries"] == 2
    # still consistent and usable
    check_consistent(a)
    a.free(b)
    c = a.malloc(30 * MiB)
    assert stat(a, "allocated_bytes") == 30 * MiB
    a.free(c)
    a.empty_cache()
    assert stat(a, "reserved_bytes") == 0 and rt.in_use == 0


def test_device_oom_is_recorded_in_the_trace(conf):
    rt = _runtime.SimulatedRuntime(capacity_mb=32)
    a = DeviceCachingAllocator(rt, 0)
    a.record_memory_history(True, None, 100, ca.NEVER)
    keep = a.malloc(20 * MiB)
    with pytest.raises(OutOfMemoryError, match=r"Tried to allocate 20\.00 MiB\. GPU 0 has a "
                                               r"total capacity of 32\.00 MiB of which 12\.00 MiB"):
        a.malloc(20 * MiB)
    oom = a.trace()[-1]
    assert oom["action"] == "oom" and oom["device_free"] == 12 * MiB and oom["size"] == 20 * MiB
    check_consistent(a)
    a.free(keep)


# ---------------------------------------------------------------------------------------------
# Seed 002, exercise 5: fragmentation OOM, and expandable segments avoiding it

def _exercise_5(a):
    """Phase 1 caches four 60 MiB blocks; phase 2 allocates alternating 12 and 44 MiB tensors
    into them and frees every other one; then a 64 MiB request."""
    for blk in [a.malloc(60 * MiB) for _ in range(4)]:
        a.free(blk)
    pairs = [(a.malloc(12 * MiB), a.malloc(44 * MiB)) for _ in range(4)]
    for _, big in pairs:
        a.free(big)
    return [small for small, _ in pairs]


def test_exercise_5_fragmentation_ooms(conf, rt):
    a = DeviceCachingAllocator(rt, 0)
    kept = _exercise_5(a)
    assert stat(a, "allocated_bytes") == 48 * MiB and stat(a, "reserved_bytes") == 240 * MiB
    assert a.memory_stats()["fragmentation_bytes"] == 192 * MiB
    assert a.memory_stats()["fragmentation"] == pytest.approx(0.8)
    a.empty_cache()  # nothing to give back: every segment is partly used
    assert stat(a, "reserved_bytes") == 240 * MiB
    with pytest.raises(OutOfMemoryError) as ei:
        a.malloc(64 * MiB)
    msg = str(ei.value)
    assert "Of the allocated memory 48.00 MiB is allocated by PyTorch, and 192.00 MiB is " \
           "reserved by PyTorch but unallocated." in msg
    assert "[ember] Fragmentation: 192.00 MiB free in partly used segments, 80.0% of " \
           "reserved memory." in msg
    check_consistent(a)
    for b in kept:
        a.free(b)
    a.malloc(64 * MiB)  # usable afterwards


def test_exercise_5_memory_summary_shows_it(sim):
    a = ca.get_allocator(0)
    _exercise_5(a)
    text = memory.memory_summary()
    assert "| Allocated memory      |  49152 KiB |" in text
    assert "| GPU reserved memory   | 245760 KiB |" in text
    assert "| Non-releasable memory | 196608 KiB |" in text


def test_exercise_5_expandable_segments_avoid_the_oom(conf, rt):
    conf("expandable_segments:True")
    a = DeviceCachingAllocator(rt, 0)
    _exercise_5(a)
    assert stat(a, "reserved_bytes") == 240 * MiB
    b = a.malloc(64 * MiB)  # whole free pages are unmapped and mapped again at the end
    assert b.size == 64 * MiB
    s = a.memory_stats()
    assert s["num_ooms"] == 0 and s["num_alloc_retries"] == 1
    assert stat(a, "reserved_bytes") <= 240 * MiB
    check_consistent(a)


def test_expandable_segments_grow_one_segment_and_unmap_pages(conf, rt):
    conf("expandable_segments:True")
    a = DeviceCachingAllocator(rt, 0)
    a.record_memory_history(True, None, 1000, ca.NEVER)
    x = a.malloc(3 * MiB)
    assert stat(a, "reserved_bytes") == 20 * MiB  # one 20 MiB page of the large pool
    y = a.malloc(30 * MiB)
    assert y.ptr == x.ptr + 3 * MiB  # the same segment grows
    assert stat(a, "reserved_bytes") == 40 * MiB
    s = a.malloc(100)
    assert stat(a, "reserved_bytes", "small_pool") == 2 * MiB  # small pool: 2 MiB pages
    segs = a.snapshot()
    assert sorted(seg["total_size"] for seg in segs) == [2 * MiB, 40 * MiB]
    assert all(seg["is_expandable"] for seg in segs)
    check_consistent(a)
    for blk in (x, y, s):
        a.free(blk)
    a.empty_cache()
    assert stat(a, "reserved_bytes") == 0 and rt.in_use == 0 and not a.expandable_segments
    actions = [e["action"] for e in a.trace()]
    assert actions.count("segment_map") == 3 and "segment_unmap" in actions
    assert "segment_alloc" not in actions
    assert a.memory_stats()["num_device_alloc"] == 3


# ---------------------------------------------------------------------------------------------
# CUDA-graph private pools

def test_private_pool_during_capture(alloc, rt):
    s1 = rt.stream_create(0)
    pool = (1, 0)
    rt.stream_begin_capture(s1, "global")
    alloc.begin_allocate_to_pool(pool, lambda s: s == s1)
    with pytest.raises(RuntimeError, match="already recording to mempool_id"):
        alloc.begin_allocate_to_pool(pool, lambda s: s == s1)
    alloc.graph_pools[pool].use_count -= 1  # undo the refused second begin's increment
    g = alloc.malloc(1000, stream=s1)  # cudaMalloc in relaxed capture mode
    gptr = g.ptr
    outside = alloc.malloc(1000, stream=0)
    rt.stream_end_capture(s1)
    alloc.end_allocate_to_pool(pool)
    assert g.pool is alloc.graph_pools[pool].small_blocks
    assert outside.pool is alloc.small_blocks
    by_addr = {seg["address"]: seg for seg in alloc.snapshot()}
    assert by_addr[g.ptr]["segment_pool_id"] == (1, 0)
    assert alloc.memory_stats()["reserved_bytes_by_private_pools"][(1, 0)]["all"]["current"] \
        == 2 * MiB
    alloc.free(g)
    alloc.free(outside)
    alloc.empty_cache()  # the graph still uses its pool
    assert stat(alloc, "reserved_bytes") == 2 * MiB
    assert alloc.malloc(1000, stream=s1).ptr != gptr  # no capture now: the ordinary pool
    alloc.release_pool(pool)
    alloc.empty_cache()
    assert pool not in alloc.graph_pools
    check_consistent(alloc)


def test_record_stream_during_capture_is_deferred(alloc, rt):
    s1, s2 = rt.stream_create(0), rt.stream_create(0)
    b = alloc.malloc(1000)
    ptr = b.ptr
    alloc.record_stream(b, s2)
    alloc.begin_allocate_to_pool((2, 0), lambda s: s == s1)
    alloc.free(b)
    assert alloc.needs_events_deferred_until_no_capture == [b]
    alloc.end_allocate_to_pool((2, 0))
    assert alloc.malloc(1000).ptr == ptr  # events recorded after capture, done, reused


# ---------------------------------------------------------------------------------------------
# Configuration

def test_config_precedence(monkeypatch):
    monkeypatch.setattr(_alloc_config, "_config", None)
    monkeypatch.setenv("PYTORCH_ALLOC_CONF", "max_split_size_mb:100")
    monkeypatch.setenv("PYTORCH_CUDA_ALLOC_CONF", "max_split_size_mb:200")
    assert _alloc_config.config().max_split_size == 200 * MiB
    monkeypatch.setattr(_alloc_config, "_config", None)
    monkeypatch.delenv("PYTORCH_CUDA_ALLOC_CONF")
    assert _alloc_config.config().max_split_size == 100 * MiB


def test_config_keys(conf):
    c = conf("expandable_segments:True, garbage_collection_threshold:0.6,"
             "large_segment_size_mb:40,max_non_split_rounding_mb:64,"
             "per_process_memory_fraction:0.5,release_lock_on_cudamalloc:True,"
             "pinned_num_register_threads:8,backend:native")
    assert c.expandable_segments and c.garbage_collection_threshold == 0.6
    assert c.large_segment_size == 40 * MiB and c.max_non_split_rounding_size == 64 * MiB
    assert c.per_process_memory_fraction == 0.5 and c.release_lock_on_cudamalloc
    assert c.pinned_num_register_threads == 8
    assert ca.get_allocation_size(3 * MiB, c) == 40 * MiB
    rt = _runtime.SimulatedRuntime(capacity_mb=100)
    assert DeviceCachingAllocator(rt, 0).allowed_memory_maximum == 50 * MiB


_GENERIC_BAD = ["max_split_size_mb:10", "expandable_segments:maybe", "max_split_size_mb:abc",
                "garbage_collection_threshold:1.5", "roundup_power2_divisions:3",
                "roundup_power2_divisions:[3:4]", "roundup_power2_divisions:[64:3]",
                "max_split_size_mb", "large_segment_size_mb:5", "max_non_split_rounding_mb:5",
                "pinned_max_cached_size_mb:x", "pinned_use_background_threads:yes"]


@pytest.mark.parametrize("env", _GENERIC_BAD)
def test_config_errors_match_pytorch(conf, env):
    torch = pytest.importorskip("torch")
    if not torch.__version__.startswith("2.13"):  # ember follows 2.13's parser and messages
        pytest.skip(f"the oracle is PyTorch 2.13's parser; this is {torch.__version__}")
    with pytest.raises(Exception) as theirs:
        torch._C._accelerator_setAllocatorSettings(env)
    with pytest.raises(Exception) as ours:
        _alloc_config.set_allocator_settings(env)
    assert type(ours.value) is type(theirs.value)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("env,exc,msg", [
    # CUDA keys and unknown keys: PyTorch's CUDA build (the CPU oracle has no CUDA parser)
    ("foo:1", ValueError, "Unrecognized key 'foo' in Accelerator allocator config."),
    ("backend:foo", ValueError, "Unknown allocator backend, options are native and "
                                "cudaMallocAsync"),
    ("pinned_num_register_threads:3", ValueError,
     "Number of register threads has to be power of 2, got 3"),
    ("pinned_num_register_threads:256", ValueError,
     "Number of register threads should be less than or equal to 128, got 256"),
    ("per_process_memory_fraction:2", ValueError,
     "per_process_memory_fraction is invalid, set it in [0.0, 1.0]"),
    ("pinned_reserve_segment_size_mb:0", ValueError,
     "Pinned reserve segment size has to be greater than 0"),
    ("release_lock_on_cudamalloc:x", ValueError,
     "Expected 'True' or 'False' at index 2 in ConfigTokenizer but got 'x'"),
])
def test_cuda_config_errors(conf, env, exc, msg):
    with pytest.raises(exc) as ei:
        _alloc_config.set_allocator_settings(env)
    assert str(ei.value) == msg


def test_set_allocator_settings_at_run_time(sim):
    memory._set_allocator_settings("max_split_size_mb:64")
    assert memory.memory_stats()["max_split_size"] == 64 * MiB
    memory._set_allocator_settings("")  # each parse resets max_split_size
    assert memory.memory_stats()["max_split_size"] == -1


# ---------------------------------------------------------------------------------------------
# ember.cuda.memory and PyTorch's Python as the oracle

def _workload():
    """A state with every kind of block: small and large, split, freed, oversize."""
    keep = [ca.allocate(n, 0) for n in (4, 1000, 3 * MiB, 12 * MiB, 700 * 1024)]
    temp = [ca.allocate(n, 0) for n in (5000, 2 * MiB, 25 * MiB)]
    del temp
    gc.collect()
    return keep


@pytest.mark.parametrize("abbreviated", [False, True])
def test_memory_summary_matches_pytorch(sim, monkeypatch, abbreviated):
    torch = pytest.importorskip("torch")
    keep = _workload()
    ours = memory.memory_stats()
    monkeypatch.setattr(torch.cuda.memory, "memory_stats", lambda device=None: ours)
    theirs = torch.cuda.memory.memory_summary(0, abbreviated=abbreviated)
    mine = memory.memory_summary(0, abbreviated=abbreviated)
    assert mine.splitlines() == theirs.splitlines()
    assert len(mine.splitlines()[0]) == 77
    del keep


def test_memory_stats_keys_and_functions(sim):
    keep = _workload()
    s = memory.memory_stats()
    assert list(s) == sorted(s)
    for name in ("allocation", "segment", "active", "inactive_split", "allocated_bytes",
                 "reserved_bytes", "active_bytes", "inactive_split_bytes", "requested_bytes"):
        for pool in ("all", "small_pool", "large_pool"):
            for kind in ("current", "peak", "allocated", "freed"):
                assert f"{name}.{pool}.{kind}" in s
    for k in ("num_alloc_retries", "num_ooms", "num_sync_all_streams", "num_device_alloc",
              "num_device_free", "num_oom_rejections", "max_split_size", "fragmentation",
              "fragmentation_bytes", "oversize_allocations.peak", "oversize_segments.freed"):
        assert k in s
    assert memory.memory_allocated() == s["allocated_bytes.all.current"] == \
        512 + 1024 + 3 * MiB + 12 * MiB + 700 * 1024
    # small segment; 20 MiB segment holding 3 MiB and 12 MiB (best fit: its rest); 25 MiB
    assert memory.memory_reserved() == 2 * MiB + 20 * MiB + 26 * MiB
    peak = memory.max_memory_allocated()
    assert peak > memory.memory_allocated()
    memory.reset_peak_memory_stats()
    assert memory.max_memory_allocated() == memory.memory_allocated()
    with pytest.warns(FutureWarning):
        memory.reset_max_memory_allocated()
    memory.reset_accumulated_memory_stats()
    s = memory.memory_stats()
    assert s["allocated_bytes.all.allocated"] == 0 and s["num_device_alloc"] == 0
    assert memory.memory_stats_as_nested_dict()["allocated_bytes"]["all"]["current"] == \
        memory.memory_allocated()
    del keep
    gc.collect()
    assert memory.memory_allocated() == 0
    memory.empty_cache()
    assert memory.memory_reserved() == 0
    assert memory.mem_get_info() == (256 * MiB, 256 * MiB)


def test_fraction_functions(sim):
    assert memory.get_per_process_memory_fraction() == 1.0
    memory.set_per_process_memory_fraction(0.25)
    assert memory.get_per_process_memory_fraction() == 0.25
    with pytest.raises(TypeError, match="Invalid type for fraction argument, must be `float`"):
        memory.set_per_process_memory_fraction(1)
    with pytest.raises(ValueError, match="Invalid fraction value: 1.5. Allowed range: 0~1"):
        memory.set_per_process_memory_fraction(1.5)
    with pytest.raises(OutOfMemoryError, match="64.00 MiB allowed; "):
        ca.allocate(65 * MiB, 0)


def test_caching_allocator_alloc_and_delete(sim):
    p = memory.caching_allocator_alloc(3000, stream=0)
    assert memory.memory_allocated() == 3072
    memory.caching_allocator_delete(p)
    assert memory.memory_allocated() == 0
    with pytest.raises(RuntimeError, match="invalid device pointer"):
        memory.caching_allocator_delete(p)
    with pytest.raises(TypeError, match="Invalid type for stream argument"):
        memory.caching_allocator_alloc(10, stream="s")


def test_data_ptr_frees_its_block_when_dropped(sim):
    d = ca.allocate(100, 0)
    assert (d.data_ptr(), len(d), d.device) == (d.ptr, 100, 0) and d.ptr
    assert memory.memory_allocated() == 512
    del d
    gc.collect()
    assert memory.memory_allocated() == 0
    assert ca.allocate(0, 0).data_ptr() == 0
    with pytest.raises(OutOfMemoryError, match="Tried to allocate more than 1EB memory"):
        ca.allocate(1 << 60, 0)


def test_history_ring_buffer_and_frames(sim):
    memory._record_memory_history(max_entries=4)
    keep = ca.allocate(1000, 0)  # segment_alloc, alloc
    for _ in range(2):
        ca.allocate(2000, 0).free()  # alloc, free_requested, free_completed each
    trace = memory._snapshot()["device_traces"][0]
    # the last 4 of 8 entries (the trace is read before the snapshot adds its own entry)
    assert [e["action"] for e in trace] == ["free_completed", "alloc", "free_requested",
                                            "free_completed"]
    assert trace[1]["frames"][0]["name"] == "test_history_ring_buffer_and_frames"
    assert trace[1]["frames"][0]["filename"].endswith("test_cuda_allocator.py")
    seg = memory.memory_snapshot()[0]
    blk = next(b for b in seg["blocks"] if b["address"] == keep.ptr)
    assert blk["state"] == "active_allocated" and blk["requested_size"] == 1000
    assert blk["frames"][0]["name"] == "test_history_ring_buffer_and_frames"
    memory._record_memory_history(enabled=None)
    assert memory._snapshot()["device_traces"][0] == []
    with pytest.raises(RuntimeError, match="expected context to be"):
        memory._record_memory_history(context="everything")


def test_pytorch_memory_viz_reads_our_pickle(sim, tmp_path):
    torch = pytest.importorskip("torch")
    from torch.cuda import _memory_viz as viz
    memory._record_memory_history()
    keep = _workload()
    path = tmp_path / "snap.pickle"
    memory._dump_snapshot(str(path))
    with open(path, "rb") as f:
        data = pickle.load(f)
    assert set(data) == {"segments", "device_traces", "allocator_settings"}
    text = viz.segsum(data)  # asserts that every segment's bytes add up
    assert f"segments: {len(data['segments'])}" in text
    assert "total_reserved: 48.0MiB" in text
    out = viz.trace(data)
    assert "cudaMalloc(" in out and "del " in out
    for html in (viz.trace_plot(data), viz.segment_plot(data)):
        assert "snapshot.pickle" in html
    del keep


def test_our_svg_plots(sim):
    memory._record_memory_history()
    keep = _workload()
    snap = memory._snapshot()
    svg = _memory_viz.segment_plot(snap)
    assert svg.startswith("<svg") and svg.count("<text x=\"10\" y=") == 1 + len(snap["segments"])
    summ = _memory_viz.segment_summary(snap)
    assert summ["reserved"] == memory.memory_reserved()
    assert summ["allocated"] == memory.memory_allocated()
    assert summ["fragmentation_bytes"] == memory.memory_stats()["fragmentation_bytes"]
    plot = _memory_viz.trace_plot(snap)
    assert "<polyline" in plot and "reserved" in plot
    assert re.search(r"peak reserved 48\.0 MiB", plot)
    del keep


def test_mem_pool(sim):
    pool = memory.MemPool()
    assert pool.id[0] == 0 and pool.use_count() == 1
    with memory.use_mem_pool(pool):
        assert pool.use_count() == 2
        d = ca.allocate(1000, 0)
    e = ca.allocate(1000, 0)
    assert pool.use_count() == 1
    assert [s["segment_pool_id"] for s in pool.snapshot()] == [pool.id]
    assert d.block.pool.owner_private_pool.id == pool.id and e.block.pool.owner_private_pool is None
    assert memory.memory_stats()[f"reserved_bytes_by_private_pools.0_{pool.id[1]}.all.current"] \
        == 2 * MiB


# ---------------------------------------------------------------------------------------------
# The C fast paths (caching_allocator.c) against the Python methods

class _AddressRuntime(_runtime.SimulatedRuntime):
    """The simulated device handing out addresses in order, with no memory behind them: two
    allocators given the same requests see the same addresses, so best-fit ties (broken by
    address) fall the same way in both."""

    def __init__(self):
        super().__init__(capacity_mb=256)
        self._next, self._sizes = 1 << 32, {}

    def malloc(self, device, nbytes, relaxed=False):
        if not relaxed:
            self._forbid_during_capture("cudaMalloc")
        if self.used[device] + nbytes > self.capacity:
            raise _runtime.DeviceOutOfMemory(nbytes)
        ptr, self._next = self._next, self._next + nbytes + (1 << 21)
        self._sizes[ptr] = nbytes
        self.used[device] += nbytes
        return ptr

    def free(self, device, ptr):
        self.used[device] -= self._sizes.pop(ptr)


def _allocator_state(a):
    pools = [[(b.stream, b.size, b.ptr) for b in p.blocks]
             for p in (a.small_blocks, a.large_blocks)]
    return a.memory_stats(), a.snapshot(), pools, len(a.active_blocks)


def _replay_workload(a, rt, seed):
    """A seeded mix of small and large requests on two streams, frees in random order, blocks
    used on the other stream, cache flushes and a memory fraction for a while; the allocator's
    whole state after each step."""
    import random
    r = random.Random(seed)
    side = rt.stream_create(0)
    live, states = [], []
    for step in range(700):
        roll = r.random()
        if (roll < 0.5 and len(live) < 40) or not live:
            size = r.choice([r.randrange(1, 4096), r.randrange(4096, 1 << 20),
                             r.randrange(1 << 20, 24 << 20), 512, 1 << 20, 3 << 20])
            try:
                live.append(a.malloc(size, side if r.random() < 0.2 else 0))
            except OutOfMemoryError:  # (under the memory fraction) the same in both
                states.append("out of memory")
        elif roll < 0.9:
            a.free(live.pop(r.randrange(len(live))))
        elif roll < 0.93:
            b = live[r.randrange(len(live))]
            a.record_stream(b, side if b.stream == 0 else 0)  # its free waits for an event
        elif roll < 0.95:
            a.empty_cache()
        if step in (300, 450):
            a.set_memory_fraction(0.5 if step == 300 else 1.0)
        states.append(_allocator_state(a))
    for b in live:
        a.free(b)
    rt.device_synchronize(0)
    a.empty_cache()
    states.append(_allocator_state(a))
    return states


@pytest.mark.parametrize("env", [None, "max_split_size_mb:20", "roundup_power2_divisions:4",
                                 "garbage_collection_threshold:0.5"])
def test_c_malloc_and_free_decide_as_the_python_methods(conf, monkeypatch, env):
    """malloc/free through caching_allocator.c give the Python methods' blocks, statistics and
    snapshots step by step (the C functions take the common case and decline the rest)."""
    ca._load_c()
    assert ca._C is not None, "caching_allocator.c did not build"
    counting = _Counting(ca._C)
    runs = []
    for fast in (counting, None):
        conf(env)
        monkeypatch.setattr(ca, "_C", fast)
        rt = _AddressRuntime()
        runs.append(_replay_workload(DeviceCachingAllocator(rt, 0), rt, seed=7))
    assert len(runs[0]) == len(runs[1])
    for step, (with_c, python) in enumerate(zip(*runs)):
        assert with_c == python, f"step {step}"
    assert counting.served > 150  # of ~700 calls: the comparison covers the C paths


class _Counting:
    """caching_allocator.c's functions, counting the calls they serve."""

    def __init__(self, module):
        self.module, self.served = module, 0

    def malloc(self, *args):
        block = self.module.malloc(*args)
        self.served += block is not None
        return block

    def free(self, *args):
        done = self.module.free(*args)
        self.served += done
        return done


def test_c_paths_take_the_common_case(conf):
    """The C functions really serve plain mallocs and frees (the Python methods are not
    called), and decline while history is recorded."""
    calls = []
    a = DeviceCachingAllocator(_AddressRuntime(), 0)
    a._malloc = lambda *args: calls.append("malloc") or DeviceCachingAllocator._malloc(a, *args)
    a._free = lambda *args: calls.append("free") or DeviceCachingAllocator._free(a, *args)
    first = a.malloc(1000)  # a new segment: Python
    a.free(first)
    calls.clear()
    for _ in range(3):
        a.free(a.malloc(1000))
    assert calls == []
    a.record_memory_history(True, None, 100, ca.STATE)
    a.free(a.malloc(1000))
    assert calls == ["malloc", "free"]


@pytest.mark.parametrize("with_c", [True, False])
def test_threads_share_an_allocator(conf, monkeypatch, with_c):
    """Two threads allocating and freeing at once, switching as often as the interpreter can:
    the pools and statistics stay consistent (the Python methods hold the allocator's lock; the
    C functions run no Python code while they change the pools)."""
    import random
    import threading
    ca._load_c()
    if not with_c:
        monkeypatch.setattr(ca, "_C", None)
    a = DeviceCachingAllocator(_AddressRuntime(), 0)
    errors = []

    def work(seed):
        r = random.Random(seed)
        live = []
        try:
            for _ in range(3000):
                if live and r.random() < 0.5:
                    a.free(live.pop(r.randrange(len(live))))
                else:
                    live.append(a.malloc(r.choice([512, 3000, 70000, 2 << 20, 5 << 20])))
            for b in live:
                a.free(b)
        except Exception as e:  # noqa: BLE001  (reported below)
            errors.append(e)
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=work, args=(seed,)) for seed in (1, 2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(old)
    assert not errors
    assert stat(a, "allocated_bytes") == 0 and stat(a, "allocation") == 0
    check_consistent(a)
