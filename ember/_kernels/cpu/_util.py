"""Helpers every CPU kernel uses: NumPy views of tensors and adoption of result arrays."""
import sys

import numpy as np

from ..._core.tensor_impl import wrap_array as wrap  # noqa: F401  (re-exported for kernels)


def nd(x):
    """The NumPy array behind a CPU tensor (cached on the tensor), or a Python scalar unchanged."""
    a = getattr(x, "_np", x)
    if a is None:
        return x._nd()
    return a


def array_module(a):
    """The module computing on array ``a``: NumPy, or CuPy for a device array. The CUDA key runs
    some CPU kernel bodies on device arrays (``ember/_kernels/cuda/shared.py``); a body that
    makes new arrays asks this for the module that makes them."""
    if a.__class__ is np.ndarray:
        return np
    root = type(a).__module__.partition(".")[0]
    return sys.modules[root] if root == "cupy" else np


def check_index_range(index, low, high, error, message):
    """Refuse an element of ``index`` outside ``[low, high)``: on the host, ``error(message)`` at
    once; on a GPU (CuPy arrays) a device-side check, reported at the next synchronisation as
    PyTorch's CUDA kernels report theirs (``ember/cuda/_device_assert.py``: no host round trip,
    so the op stays asynchronous and can be captured in a graph)."""
    if index.size == 0:
        return
    if array_module(index) is np:
        if index.min() < low or index.max() >= high:
            raise error(message)
        return
    from ...cuda import _device_assert
    _device_assert.check_range(index, low, high, message)


def own(a):
    """A result array that does not alias any input (copy only if NumPy returned a view)."""
    if a.__class__ is not np.ndarray:
        return np.asarray(a) if array_module(a) is np else (a.copy() if a.base is not None else a)
    if a.base is not None:
        return a.copy()
    return a
