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


def own(a):
    """A result array that does not alias any input (copy only if NumPy returned a view)."""
    if a.__class__ is not np.ndarray:
        return np.asarray(a) if array_module(a) is np else (a.copy() if a.base is not None else a)
    if a.base is not None:
        return a.copy()
    return a
