"""``ember.backends.openmp``: whether ember's own compiled kernels run on OpenMP threads.

ember's CPU kernels are NumPy (whose BLAS has its own thread pool, not OpenMP); ember ships no
C kernels built with ``-fopenmp``, so the answer is False."""


def is_available():
    r"""Return whether ember is built with OpenMP support."""
    return False
