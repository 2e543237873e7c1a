"""CPU factory kernels: allocation of uninitialized tensors."""
from ..._core import strides as _st
from ..._core.device import CPU
from ..._core.dtype import get_default_dtype
from ..._tensor import empty_tensor

__all__ = ["empty_memory_format", "empty_strided"]


def empty_memory_format(size, dtype=None, layout=None, device=None, pin_memory=None,
                        memory_format=None):
    dtype = dtype or get_default_dtype()
    stride = None
    if memory_format is not None and memory_format._name == "channels_last":
        stride = _st.channels_last_strides(tuple(size))
    return empty_tensor(size, dtype, device or CPU, stride)


def empty_strided(size, stride, dtype=None, layout=None, device=None, pin_memory=None):
    return empty_tensor(size, dtype or get_default_dtype(), device or CPU, tuple(stride))
