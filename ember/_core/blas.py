"""The thread pool of the BLAS behind NumPy (OpenBLAS), sized per product.

Products too small to gain from splitting (below ``SMALL_WORK`` multiply-adds, ~40 us on one
core: starting a parallel region costs a few us with the workers awake, tens when they sleep)
run on one thread; larger ones use the configured pool (``ember.set_num_threads``). Switching
costs two C calls (~0.3 us each). Kernels call :func:`matmul` in place of ``np.matmul``.

OpenBLAS's parallel calls run on the OpenMP pool of the generated kernels once one of those is
loaded (``ember._inductor.blas_threads``, through :func:`openblas_function`): two pools on the
same cores make each wait for the other's threads.

Only OpenBLAS, found among the libraries loaded by the process, is controlled; with another
BLAS (or none found) :func:`matmul` is ``np.matmul``.
"""
import contextlib
import ctypes

import numpy as np

SMALL_WORK = 1 << 22  # multiply-adds (m*k*n): below this a product runs on one thread

_PREFIXES = ("scipy_openblas", "openblas")
_SUFFIXES = ("64_", "")


def _find():
    """(the OpenBLAS library NumPy loaded, its symbol prefix, its suffix), or (None, None, None)."""
    try:
        import numpy.linalg  # noqa: F401  (makes sure NumPy's BLAS is loaded)
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if "openblas" in line.lower()}
    except OSError:  # not Linux: leave the pool alone
        return None, None, None
    for path in sorted(paths):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix in _PREFIXES:
            for suffix in _SUFFIXES:
                if hasattr(lib, f"{prefix}_set_num_threads{suffix}"):
                    return lib, prefix, suffix
    return None, None, None


_lib, _prefix, _suffix = _find()


def openblas_function(name):
    """OpenBLAS's ``openblas_<name>`` (e.g. ``set_num_threads``) as a ctypes function, or None
    where there is no OpenBLAS or it lacks the function."""
    if _lib is None:
        return None
    return getattr(_lib, f"{_prefix}_{name}{_suffix}", None)


_set, _get = openblas_function("set_num_threads"), openblas_function("get_num_threads")
if _set is not None and _get is not None:
    _set.restype, _set.argtypes = None, [ctypes.c_int]
    _get.restype = ctypes.c_int
else:
    _set = _get = None
_pool = [_get() if _get is not None else None]  # the configured pool size


def set_threads(n):
    """Size the BLAS pool (what ``ember.set_num_threads`` sets); True if a BLAS took it."""
    _pool[0] = n
    if _set is None:
        return False
    _set(n)
    return True


def matmul(a, b, out=None):
    """``np.matmul(a, b, out=out)``, on one BLAS thread when the product is small (and the pool
    has more than one). The work estimate, ``a.size * n``, is m*k*n for matrices and batches
    alike.

    A batch of outer products (inner dim 1: per-sample weight gradients under vmap) is a
    broadcasting multiply: NumPy's stacked matmul does not reach BLAS there and is several
    times slower than ``np.multiply``, which gives the same values (one term per sum).

    A float16 product is a float32 one rounded once: NumPy multiplies float16 in loops of its
    own, not BLAS (~140x slower: 390 ms against 2.8 ms for 256 x 1024 x 384), and PyTorch's CPU
    kernel sums in float32 too."""
    if a.dtype == np.float16 and b.dtype == np.float16:
        product = matmul(a.astype(np.float32), b.astype(np.float32))
        if out is None:
            return product.astype(np.float16)
        np.copyto(out, product, casting="same_kind")
        return out
    if a.ndim > 2 and b.ndim > 2 and a.shape[-1] == 1 and b.shape[-2] == 1:
        return np.multiply(a, b, out=out)
    if (_set is None or _pool[0] == 1 or _held[0]
            or a.size * (b.shape[-1] if b.ndim else 1) >= SMALL_WORK):
        return np.matmul(a, b, out=out)
    _set(1)
    try:
        return np.matmul(a, b, out=out)
    finally:
        _set(_pool[0])


_held = [0]  # depth of one_thread() blocks: inside one, the pool stays at one thread


def in_one_thread():
    """Whether a :func:`one_thread` block is open: products run on one thread there (the caller
    runs several at once, or many small ones)."""
    return _held[0] > 0


@contextlib.contextmanager
def one_thread():
    """A block whose products all run on one BLAS thread: many small products (a recurrent
    kernel's time steps), or products made on several Python threads at once
    (:func:`ember._core.parallel.parallel_for`), where a pool per call would oversubscribe the
    cores. :func:`matmul` inside the block leaves the pool alone."""
    if _set is None or _pool[0] == 1:
        yield
        return
    if _held[0] == 0:
        _set(1)
    _held[0] += 1
    try:
        yield
    finally:
        _held[0] -= 1
        if _held[0] == 0:
            _set(_pool[0])


def products_of(work):
    """A block of many small products of ``work`` multiply-adds each (a recurrent kernel's time
    steps), run on the threads :func:`matmul` would pick for one of them, switched once for the
    block; the block calls ``np.dot``, whose call costs less than ``np.matmul``'s on tiny
    matrices."""
    return one_thread() if work < SMALL_WORK else contextlib.nullcontext()
