"""Helpers every CPU kernel uses: NumPy views of tensors and adoption of result arrays."""
import numpy as np

from ..._core.tensor_impl import wrap_array as wrap  # noqa: F401  (re-exported for kernels)


def nd(x):
    """The NumPy array behind a CPU tensor (cached on the tensor), or a Python scalar unchanged."""
    a = getattr(x, "_np", x)
    if a is None:
        return x._nd()
    return a


def own(a):
    """A result array that does not alias any input (copy only if NumPy returned a view)."""
    if a.__class__ is not np.ndarray:
        return np.asarray(a)
    if a.base is not None:
        return a.copy()
    return a
