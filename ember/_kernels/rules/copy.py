"""Rules of copy_, for every backend: argument checks and result shapes and dtypes, with PyTorch's
errors. The CPU kernels (``cpu/copy.py``) and the Meta kernels (``meta/memory.py``) call them;
this module imports no backend."""
from ..._core import strides as _st


def check_copy(self, src):
    """copy_ broadcasts src to self's shape, never the other way round."""
    shape = _st.broadcast_shapes(self._size, src._size)
    if shape != tuple(self._size):
        raise RuntimeError(f"output with shape [{', '.join(map(str, self._size))}] doesn't match "
                           f"the broadcast shape [{', '.join(map(str, shape))}]")
