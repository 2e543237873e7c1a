"""Copies that change layout, dtype or device: ``clone``, ``_to_copy`` (behind ``Tensor.to``)
and ``contiguous``. Each allocates with ``empty``/``empty_strided`` on the target device and
fills with ``copy_``, so one definition serves every pair of devices."""
from ..._core import strides as _st
from ..._ops.overload import ops
from .factory import empty_like, fill_new


def clone(self, memory_format=None):
    r = empty_like(self, None, None, None, None, memory_format)
    return fill_new(ops.aten.copy_.default._call, r, self, False)


def _to_copy(self, dtype=None, layout=None, device=None, pin_memory=None, non_blocking=False,
             memory_format=None):
    dtype = dtype or self._dtype
    device = device or self._device
    if non_blocking and self._device.type == "cuda" and device.type == "cpu":
        pin_memory = True  # PyTorch's pin_out: the async device-to-host copy needs pinned memory
    if memory_format is None or memory_format._name == "preserve_format":
        stride = _st.suggest_memory_format_strides(self._size, self._stride)
        r = ops.aten.empty_strided.default._call(self._size, stride, dtype, layout, device,
                                                 pin_memory)
    else:
        r = ops.aten.empty.memory_format._call(self._size, dtype, layout, device, pin_memory,
                                               memory_format)
    return fill_new(ops.aten.copy_.default._call, r, self, non_blocking)


def to_dtype_layout(self, dtype=None, layout=None, device=None, pin_memory=None,
                    non_blocking=False, copy=False, memory_format=None):
    """ATen's ``to``: ``self`` itself when dtype, layout, device and memory format would not
    change (``to_will_alias``), else a ``_to_copy``."""
    if (not copy and (dtype is None or dtype is self._dtype)
            and (layout is None or layout is self.layout)
            and (device is None or device == self._device)
            and (memory_format is None or memory_format._name == "preserve_format"
                 or memory_format is _suggest_memory_format(self))):
        return self
    return ops.aten._to_copy.default._call(self, dtype, layout, device, pin_memory,
                                           non_blocking, memory_format)


def to_device(self, device, dtype, non_blocking=False, copy=False, memory_format=None):
    return to_dtype_layout(self, dtype, None, device, None, non_blocking, copy, memory_format)


def to_dtype(self, dtype, non_blocking=False, copy=False, memory_format=None):
    return to_dtype_layout(self, dtype, None, None, None, non_blocking, copy, memory_format)


def to_other(self, other, non_blocking=False, copy=False, memory_format=None):
    return to_dtype_layout(self, other._dtype, other.layout, other._device, None, non_blocking,
                           copy, memory_format)


def _suggest_memory_format(t):
    """PyTorch's suggest_memory_format: channels_last(_3d) for tensors strided that way, else
    contiguous_format (whatever the actual strides: a transposed matrix suggests contiguous)."""
    from ..._core.device import channels_last, channels_last_3d, contiguous_format
    if _st.suggests_channels_last(t._size, t._stride):
        return channels_last if len(t._size) == 4 else channels_last_3d
    return contiguous_format


def chalf(self, memory_format=None):
    from ..._core import dtype as D
    from ..._factories import tensor_to
    return tensor_to(self, D.complex32, memory_format=memory_format)


def contiguous(self, memory_format):
    if memory_format._name == "preserve_format":
        raise RuntimeError("preserve memory format is unsupported by the contiguous operator")
    if self.is_contiguous(memory_format):
        return self
    return ops.aten.clone.default._call(self, memory_format)
