"""Intra-op parallelism for NumPy kernels: ATen's ``at::parallel_for`` in Python.

A kernel whose work splits into independent chunks (an attention kernel's heads) runs them on
``ember.get_num_threads()`` threads. Python threads run concurrently here because NumPy releases
the GIL inside BLAS products and ufunc loops, where such a kernel spends its time; the Python
between those calls is short. Meanwhile every BLAS product runs on the calling thread alone
(:func:`ember._core.blas.one_thread`): a BLAS pool per product on top of these threads would
oversubscribe the cores.
"""
from concurrent.futures import ThreadPoolExecutor, wait

from . import blas

_executor = {}  # worker count -> ThreadPoolExecutor (kept: starting threads per call costs)


def num_threads():
    """The intra-op thread count (what ``ember.set_num_threads`` set, else the BLAS pool's)."""
    return blas._pool[0] or 1


def parallel_for(n, fn):
    """``fn(i)`` for every ``i`` in ``range(n)``, on up to :func:`num_threads` threads. Chunks
    are handed out one at a time (chunks of uneven cost balance themselves); the calling thread
    takes part. The first exception raised by a chunk is raised here once all threads stop."""
    workers = min(n, num_threads())
    with blas.one_thread():
        if workers <= 1:
            for i in range(n):
                fn(i)
            return
        chunks = iter(range(n))  # next() on it is one C call under the GIL: workers share it

        def work():
            for i in chunks:
                fn(i)
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
