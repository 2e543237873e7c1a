"""Intra-op parallelism for NumPy kernels: ATen's ``at::parallel_for`` in Python.

A kernel whose work splits into independent chunks (an attention kernel's heads) runs them on
``ember.get_num_threads()`` threads. Python threads run concurrently here because NumPy releases
the GIL inside BLAS products and ufunc loops, where such a kernel spends its time; the Python
between those calls is short. Meanwhile every BLAS product runs on the calling thread alone
(:func:`ember._core.blas.one_thread`): a BLAS pool per product on top of these threads would
oversubscribe the cores. (With a single chunk, or one thread, the chunks run on the calling
thread and their products keep the BLAS pool.)
"""
import threading
from concurrent.futures import ThreadPoolExecutor, wait

from . import blas

_region = threading.local()  # .active: this thread runs a parallel_for chunk
_executor = {}  # worker count -> ThreadPoolExecutor (kept: starting threads per call costs)


def num_threads():
    """The intra-op thread count (what ``ember.set_num_threads`` set, else the BLAS pool's)."""
    return blas._pool[0] or 1


def in_parallel_region():
    """Whether this thread runs a chunk of a :func:`parallel_for` (``at::in_parallel_region``):
    a parallel_for inside one runs its chunks serially, as ATen's does (the pool's threads are
    busy with the outer chunks; waiting for them there could deadlock)."""
    return getattr(_region, "active", False)


def parallel_for(n, fn):
    """``fn(i)`` for every ``i`` in ``range(n)``, on up to :func:`num_threads` threads. Chunks
    are handed out one at a time (chunks of uneven cost balance themselves); the calling thread
    takes part. The first exception raised by a chunk is raised here once all threads stop."""
    workers = 1 if in_parallel_region() else min(n, num_threads())
    if workers <= 1:  # one thread of chunks: a product inside may use the BLAS pool
        for i in range(n):
            fn(i)
        return
    with blas.one_thread():
        chunks = iter(range(n))  # next() on it is one C call under the GIL: workers share it

        def work():
            _region.active = True
            try:
                for i in chunks:
                    fn(i)
            finally:
                _region.active = False
        pool = _executor.get(workers - 1)
        if pool is None:
            pool = _executor[workers - 1] = ThreadPoolExecutor(workers - 1,
                                                               thread_name_prefix="ember-intraop")
        futures = [pool.submit(work) for _ in range(workers - 1)]
        try:
            work()
        finally:
            wait(futures)
        for f in futures:
            f.result()
