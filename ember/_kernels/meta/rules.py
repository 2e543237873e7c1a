"""Shape and dtype rules shared by the meta kernels."""
from ..._core import strides as _st
from ..._core.device import META
from ..._core.dtype import get_default_dtype
from ..._core.promotion import result_type_of
from ..._tensor import empty_tensor

__all__ = ["meta_empty_memory_format", "meta_empty_strided", "meta_copy_", "meta_binary",
           "meta_local_scalar_dense"]


def meta_empty_memory_format(size, dtype=None, layout=None, device=None, pin_memory=None,
                             memory_format=None):
    stride = None
    if memory_format is not None and memory_format._name == "channels_last":
        stride = _st.channels_last_strides(tuple(size))
    return empty_tensor(size, dtype or get_default_dtype(), META, stride)


def meta_empty_strided(size, stride, dtype=None, layout=None, device=None, pin_memory=None):
    return empty_tensor(size, dtype or get_default_dtype(), META, tuple(stride))


def meta_copy_(self, src, non_blocking=False):
    _st.broadcast_shapes(self._size, src._size)
    return self


def meta_local_scalar_dense(self):
    raise RuntimeError("Tensor.item() cannot be called on meta tensors")


def shape_of(x):
    return getattr(x, "_size", ())


def meta_binary(self, other, *args):
    """Broadcast shape and promoted dtype of a pointwise binary op."""
    shape = _st.broadcast_shapes(self._size, shape_of(other))
    return empty_tensor(shape, result_type_of((self, other)), META)
