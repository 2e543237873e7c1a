"""Pinned memory ops: ``is_pinned``, ``_pin_memory`` (a copy into page-locked memory) and
``pin_memory`` (that copy unless the tensor is pinned already), as PyTorch's ``Memory.cpp``.
The memory itself comes from the accelerator's caching host allocator
(``ember.cuda._host_allocator``), through ``empty_strided(..., pin_memory=True)``."""
import warnings

from ..._ops.overload import ops


def _warn_device(device, method):
    if device is not None:
        warnings.warn(f"The argument 'device' of Tensor.{method}() is deprecated. Please do not "
                      f"pass this argument.", DeprecationWarning, stacklevel=4)


def is_pinned(self, device=None):
    """Whether the tensor's memory is pinned host memory (looked up in the host allocator)."""
    _warn_device(device, "is_pinned")
    if self._device.type != "cpu" or self._storage.nbytes() == 0:
        return False
    from ...cuda import _host_allocator
    return _host_allocator.is_pinned_ptr(self._storage.data_ptr())


def _pin_memory(self, device=None):
    """A copy of ``self`` in pinned memory, same sizes and strides (never an alias)."""
    _warn_device(device, "pin_memory")
    from ... import accelerator
    if accelerator._accelerator() is None:
        raise RuntimeError(accelerator._NONE)
    if self._device.type != "cpu":
        raise RuntimeError(f"cannot pin '{self.type()}' only dense CPU tensors can be pinned")
    out = ops.aten.empty_strided.default._call(self._size, self._stride, self._dtype, None,
                                               self._device, True)
    return ops.aten.copy_.default._call(out, self, False)


def pin_memory(self, device=None):
    """``self`` if it is pinned already, else a pinned copy."""
    # (the device only draws is_pinned's deprecation warning: one per call, from _pin_memory)
    if ops.aten.is_pinned.default._call(self, None):
        _warn_device(device, "pin_memory")
        return self
    return ops.aten._pin_memory.default._call(self, device)
