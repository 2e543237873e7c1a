"""``ember.accelerator``: the device-generic API over the current accelerator, as PyTorch 2.13's
``torch.accelerator``.

ember's accelerator is the one it can compute on besides the CPU: CUDA when ember has a CUDA
runtime (``ember.backends.cuda.is_built()``), or the out-of-tree backend renamed onto
PrivateUse1 that registered a device module (``ember.utils.backend_registration``). Every
function delegates to that device module (``ember.cuda``, ``ember.<name>``). On a machine with
neither, ``current_accelerator()`` is None, ``is_available()`` False, ``device_count()`` 0 and
the functions that need a device raise PyTorch's "Cannot access accelerator device when none is
available."."""
import functools
import warnings

from .._core.device import device as _device

__all__ = ["current_accelerator", "current_device_idx", "current_device_index",
           "get_device_capability", "current_stream", "device_count", "device_index",
           "empty_cache", "empty_host_cache", "get_memory_info", "is_available",
           "max_memory_allocated", "max_memory_reserved", "memory_allocated", "memory_reserved",
           "memory_stats", "reset_accumulated_memory_stats", "reset_peak_memory_stats",
           "set_device_idx", "set_device_index", "set_stream", "synchronize"]

_NONE = "Cannot access accelerator device when none is available."


def _accelerator():
    """PyTorch's ``getAccelerator``: the compiled-in accelerator's device type, or None."""
    import ember
    from ..backends import cuda as _cuda_backend
    from ..utils.backend_registration import _get_privateuse1_backend_name
    if _cuda_backend.is_built():
        return _device("cuda")
    name = _get_privateuse1_backend_name()
    if name != "privateuseone" and hasattr(ember, name):
        return _device(name)
    return None


def _module(acc=None):
    import ember
    acc = acc or _accelerator()
    if acc is None:
        raise RuntimeError(_NONE)
    return getattr(ember, acc.type)


def _call(fn_name, *args):
    mod = _module()
    fn = getattr(mod, fn_name, None)
    if fn is None:
        raise RuntimeError(f"The {mod.__name__} device module does not provide {fn_name}()")
    return fn(*args)


def current_accelerator(check_available: bool = False):
    r"""Return the device of the accelerator ember was built with (index None), or None. With
    ``check_available``, also None when :func:`is_available` is False."""
    acc = _accelerator()
    if acc is not None and (not check_available or is_available()):
        return acc
    return None


def is_available() -> bool:
    r"""Whether the current accelerator is built and has a device visible now."""
    acc = current_accelerator()
    if acc is None:
        return False
    return bool(_module(acc).is_available())


def device_count() -> int:
    r"""The number of devices of the current accelerator (0 without one)."""
    acc = current_accelerator()
    if acc is None:
        return 0
    return _module(acc).device_count()


def _get_device_index(device, optional=False):
    if isinstance(device, int) and not isinstance(device, bool):
        return device
    if isinstance(device, str):
        device = _device(device)
    device_index = None
    if isinstance(device, _device):
        acc = current_accelerator()
        if acc is None:
            raise RuntimeError("Accelerator expected")
        if acc.type != device.type:
            raise ValueError(f"{device.type} doesn't match the current accelerator {acc}.")
        device_index = device.index
    if device_index is None:
        if not optional:
            raise ValueError(f"Expected a torch.device with a specified index or an integer, but "
                             f"got:{device}")
        return current_device_index()
    return device_index


def current_device_index() -> int:
    r"""The index of the currently selected device of the current accelerator."""
    return _call("current_device")


def set_device_index(device, /) -> None:
    r"""Select a device (an index or a device of the accelerator's type); negative: no-op."""
    _module()
    index = _get_device_index(device, optional=False)
    if index >= 0:
        _call("set_device", index)


def _deprecated(new_name, fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        warnings.warn(f"Use `{new_name}` instead.", FutureWarning, stacklevel=2)
        return fn(*args, **kwargs)
    return wrapper


current_device_idx = _deprecated("current_device_index", current_device_index)
set_device_idx = _deprecated("set_device_index", set_device_index)


def get_device_capability(device=None, /):
    r"""A dict describing the device (``supported_dtypes``)."""
    _module()
    index = _get_device_index(device, optional=True)
    return _call("get_device_capability", index)


def current_stream(device=None, /):
    r"""The current stream of the given (or current) device."""
    _module()
    index = _get_device_index(device, optional=True)
    return _call("current_stream", index)


def set_stream(stream) -> None:
    r"""Make ``stream`` current (and its device the current device)."""
    _call("set_stream", stream)


def synchronize(device=None, /) -> None:
    r"""Wait for all kernels in all streams on the given (or current) device."""
    _module()
    index = _get_device_index(device, optional=True)
    _call("synchronize", index)


class device_index:
    r"""Context manager selecting device ``device`` of the current accelerator for its block
    (``None``: no switch)."""

    def __init__(self, device, /):
        self.idx = device
        self.prev_idx = -1

    def __enter__(self):
        if self.idx is not None:
            self.prev_idx = current_device_index()
            if self.prev_idx != self.idx:
                set_device_index(self.idx)

    def __exit__(self, *exc_info):
        if self.idx is not None and self.prev_idx != self.idx:
            set_device_index(self.prev_idx)


# Memory: delegated to the device module's caching-allocator statistics.

def empty_cache() -> None:
    r"""Release unused cached memory of the current accelerator."""
    _call("empty_cache")


def empty_host_cache() -> None:
    r"""Release unused cached pinned host memory (the caching host allocator's free blocks)."""
    acc = _accelerator()
    _module(acc)
    if acc.type == "cuda":
        from ..cuda import _host_allocator
        _host_allocator.empty_cache()


def memory_stats(device_index=None, /):
    _module()
    return _call("memory_stats", _get_device_index(device_index, optional=True))


def memory_allocated(device_index=None, /) -> int:
    _module()
    return _call("memory_allocated", _get_device_index(device_index, optional=True))


def max_memory_allocated(device_index=None, /) -> int:
    _module()
    return _call("max_memory_allocated", _get_device_index(device_index, optional=True))


def memory_reserved(device_index=None, /) -> int:
    _module()
    return _call("memory_reserved", _get_device_index(device_index, optional=True))


def max_memory_reserved(device_index=None, /) -> int:
    _module()
    return _call("max_memory_reserved", _get_device_index(device_index, optional=True))


def reset_accumulated_memory_stats(device_index=None, /) -> None:
    _module()
    return _call("reset_accumulated_memory_stats", _get_device_index(device_index,
                                                                     optional=True))


def reset_peak_memory_stats(device_index=None, /) -> None:
    _module()
    return _call("reset_peak_memory_stats", _get_device_index(device_index, optional=True))


def get_memory_info(device_index=None, /):
    r"""(free, total) bytes of the device."""
    _module()
    return _call("mem_get_info", _get_device_index(device_index, optional=True))
