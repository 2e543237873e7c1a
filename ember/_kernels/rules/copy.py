"""Rules of the copy ops, for every backend: argument checks, result shapes and dtypes.
The CPU kernels (``meta/rules.py``) and the Meta kernels call them; this module imports no
backend."""

from ..._core import strides as _st


def check_copy(self, src):
    """copy_ broadcasts src to self's shape, never the other way round."""
    shape = _st.broadcast_shapes(self._size, src._size)
    if shape != tuple(self._size):
        raise RuntimeError(f"output with shape [{', '.join(map(str, self._size))}] doesn't match "
                           f"the broadcast shape [{', '.join(map(str, shape))}]")
