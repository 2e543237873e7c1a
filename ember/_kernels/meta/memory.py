"""Meta kernels of allocation and copies: ``empty``, ``empty_strided``, ``copy_`` (after its
rules, ``rules/copy.py``) and ``_local_scalar_dense``."""
from ..._core.device import META
from ..._core.dtype import get_default_dtype
from ..._core.tensor_impl import empty_tensor
from ..rules.copy import check_copy


def meta_empty_memory_format(size, dtype=None, layout=None, device=None, pin_memory=None,
                             memory_format=None):
    from ..rules.factory import memory_format_strides
    stride = None if memory_format is None else memory_format_strides(size, memory_format)
    return empty_tensor(size, dtype or get_default_dtype(), META, stride)


def meta_empty_strided(size, stride, dtype=None, layout=None, device=None, pin_memory=None):
    return empty_tensor(size, dtype or get_default_dtype(), META, tuple(stride))


def meta_copy_(self, src, non_blocking=False):
    # A copy between a meta and a CPU tensor lands here (Meta is the highest backend key).
    if self._device.type != "meta":
        raise NotImplementedError("Cannot copy out of meta tensor; no data!")
    check_copy(self, src)
    return self


def meta_local_scalar_dense(self):
    raise RuntimeError("Tensor.item() cannot be called on meta tensors")
