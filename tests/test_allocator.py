"""The caching allocator for large CPU blocks (ember/_core/allocator.py) and ember.cpu's stats."""
import gc

import numpy as np

import ember
from ember._core.allocator import THRESHOLD
from helpers import assert_same, to_torch

N = THRESHOLD // 4  # float32 elements in one large block


def test_a_freed_block_is_reused_and_a_live_one_is_not():
    ember.cpu.empty_cache()
    a, b = ember.ones(N), ember.ones(N)
    c = a + b
    ptr = c.data_ptr()
    view = c[10:]  # a view keeps the block in use
    del c
    d = a + b
    assert d.data_ptr() != ptr
    del view
    e = a * b
    assert e.data_ptr() == ptr  # the first block is free again: reused
    assert e.tolist()[:3] == [1.0, 1.0, 1.0]
    assert d.tolist()[-1] == 2.0


def test_numpy_views_keep_a_block_alive():
    ember.cpu.empty_cache()
    a = ember.full((N,), 3.0)
    c = a + a
    arr = c.numpy()
    ptr = c.data_ptr()
    del c
    d = a - a
    assert d.data_ptr() != ptr  # arr still uses the first block
    assert arr[0] == 6.0 and d[0].item() == 0.0


def test_stats_and_empty_cache():
    gc.collect()  # tensors other tests left in reference cycles would hold blocks
    ember.cpu.empty_cache()
    before = ember.cpu.memory_stats()
    in_use = ember.cpu.memory_allocated()
    assert ember.cpu.memory_reserved() == in_use  # empty_cache kept only blocks in use
    x = ember.ones(N)
    in_use = ember.cpu.memory_allocated()  # x may or may not come from the cache
    a, b = x + 1, x * 2
    stats = ember.cpu.memory_stats()
    assert stats["num_alloc_requests"] >= before["num_alloc_requests"] + 2
    assert ember.cpu.memory_allocated() == in_use + 2 * N * 4
    assert ember.cpu.max_memory_reserved() >= in_use + 2 * N * 4
    del a, b
    assert ember.cpu.memory_allocated() == in_use
    ember.cpu.empty_cache()
    assert ember.cpu.memory_reserved() == in_use
    ember.cpu.reset_peak_memory_stats()
    assert ember.cpu.max_memory_reserved() == in_use


def test_large_results_match_pytorch(torch):
    rng = np.random.default_rng(0)
    x = ember.from_numpy(rng.standard_normal(N + 7).astype(np.float32))
    y = ember.from_numpy(rng.standard_normal(N + 7).astype(np.float32))
    tx, ty = to_torch(torch, x), to_torch(torch, y)
    for e, t in ((x + y, tx + ty), (x - y, tx - ty), (x * y, tx * ty), (x + 2.5, tx + 2.5),
                 (x * 3, tx * 3), (x - 1, tx - 1)):
        assert_same(e, t)
    # non-contiguous and broadcast operands keep NumPy's own result layout
    m = ember.from_numpy(rng.standard_normal((N // 512, 512)).astype(np.float32))
    tm = to_torch(torch, m)
    assert_same(m.t() + m.t(), tm.t() + tm.t())
    assert_same(m + m[0], tm + tm[0])


def test_free_blocks_are_released_under_the_limit(monkeypatch):
    from ember._core import allocator
    gc.collect()
    ember.cpu.empty_cache()
    base = ember.cpu.memory_reserved()
    monkeypatch.setattr(allocator, "LIMIT", base + 3 * THRESHOLD)
    x = ember.ones(N)
    kept = [x + i for i in range(2)]  # two blocks in use
    del kept
    before = ember.cpu.memory_stats()
    y = ember.empty(N + (1 << 16)).fill_(1.0)  # another size: the two free blocks make room for it
    after = ember.cpu.memory_stats()
    assert after["num_alloc_requests"] == before["num_alloc_requests"] + 1
    assert after["num_cache_bypassed"] == before["num_cache_bypassed"]  # it was cached
    assert ember.cpu.memory_reserved() <= base + 3 * THRESHOLD
    assert y.sum().item() == N + (1 << 16) and x[0].item() == 1.0
