"""ember._core.parallel.parallel_for (ATen's at::parallel_for for NumPy kernels) and the BLAS
pool rule that goes with it: every chunk runs once, on several threads, with products on one
BLAS thread, the pool size restored afterwards, and a chunk's exception raised to the caller."""
import threading

import numpy as np
import pytest

from ember._core import blas, parallel


@pytest.fixture
def two_threads(monkeypatch):
    monkeypatch.setattr(parallel, "num_threads", lambda: 2)


def test_every_chunk_runs_once_on_several_threads(two_threads):
    seen, threads = [], set()
    barrier = threading.Barrier(2, timeout=10)

    def chunk(i):
        if i < 2:  # the first two chunks meet: they can only do so on two threads
            barrier.wait()
        threads.add(threading.get_ident())
        seen.append(i)
    parallel.parallel_for(50, chunk)
    assert sorted(seen) == list(range(50))
    assert len(threads) == 2


def test_products_run_on_one_blas_thread_and_the_pool_is_restored(two_threads):
    if blas._set is None:
        pytest.skip("no OpenBLAS found: ember does not size a BLAS pool")
    before = blas._get()
    pools = []

    def chunk(i):
        pools.append(blas._get())
        a = np.ones((64, 64))
        assert (blas.matmul(a, a) == 64).all()  # matmul inside leaves the pool alone
    blas.set_threads(2)
    try:
        parallel.parallel_for(4, chunk)
        assert set(pools) == {1}
        assert blas._get() == 2
    finally:
        blas.set_threads(before)


def test_a_chunk_exception_reaches_the_caller_after_all_threads_stop(two_threads):
    done = []

    def chunk(i):
        if i == 3:
            raise ValueError("chunk 3")
        done.append(i)
    with pytest.raises(ValueError, match="chunk 3"):
        parallel.parallel_for(20, chunk)
    assert sorted(done) == [i for i in range(20) if i != 3]
    assert blas._held[0] == 0


def test_one_thread_runs_in_the_caller(monkeypatch):
    monkeypatch.setattr(parallel, "num_threads", lambda: 1)
    threads = set()
    parallel.parallel_for(5, lambda i: threads.add(threading.get_ident()))
    assert threads == {threading.get_ident()}


def test_nested_parallel_for_runs_serially_inside_a_chunk(two_threads):
    inner_threads = []

    def inner(i):
        inner_threads.append(threading.get_ident())

    def outer(i):
        assert parallel.in_parallel_region()
        before = len(inner_threads)
        me = threading.get_ident()
        parallel.parallel_for(4, inner)  # would deadlock if it waited for the busy pool
        assert inner_threads[before:].count(me) >= 4
    parallel.parallel_for(6, outer)
    assert len(inner_threads) == 24 and not parallel.in_parallel_region()
