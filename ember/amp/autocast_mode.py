"""``autocast``: the context manager / decorator that turns a device's Autocast dispatch key on.

Autocast is a dispatch layer (see :mod:`ember.amp.policies` for its kernels). This module holds
its thread-local state and the public API over it, as PyTorch splits them between
``aten/src/ATen/autocast_mode.cpp`` (state) and ``torch/amp/autocast_mode.py`` (API):

* enabled or not, per device: whether the device's Autocast key is *excluded* in this thread's
  dispatch TLS (ember/_dispatch/tls.py excludes every Autocast key by default);
* the lower-precision dtype per device (bfloat16 on CPU, float16 on CUDA by default);
* the nesting depth of autocast regions, and the cast cache that is cleared when the outermost
  region exits; whether that cache is used.
"""
import collections
import functools
import threading
import warnings

import numpy as np

from .._core import dtype as D
from .._core.device import device as _device
from .._dispatch import tls as _tls
from .._dispatch.keys import K, bit

__all__ = ["autocast", "autocast_decorator", "is_autocast_available", "custom_fwd",
           "custom_bwd"]

# Device types with an Autocast dispatch key in ember, and that key's bit.
_AUTOCAST_KEY_BIT = {"cpu": bit(K.AutocastCPU), "cuda": bit(K.AutocastCUDA),
                     "xpu": bit(K.AutocastXPU), "privateuseone": bit(K.AutocastPrivateUse1)}
# PyTorch's default lower-precision dtype per device type (get_lower_precision_fp_from_device_type).
_DEFAULT_DTYPE = {"cpu": D.bfloat16, "cuda": D.float16, "xpu": D.float16,
                  "privateuseone": D.float16, "mps": D.float16, "ipu": D.float16,
                  "hpu": D.bfloat16, "xla": D.bfloat16, "mtia": D.float16,
                  "maia": D.float16}
# Device types whose per-op policies ember registers (ember.amp.policies.TABLES).
_AVAILABLE = ("cpu", "cuda")
# PyTorch's other autocast device types: ember has no backend for them (no op runs there), so
# their enabled flag is thread-local state only, not a dispatch key.
_KEYLESS = tuple(t for t in _DEFAULT_DTYPE if t not in _AUTOCAST_KEY_BIT)


class _AutocastState(threading.local):
    def __init__(self):
        self.dtype = dict(_DEFAULT_DTYPE)
        self.nesting = 0
        self.cache_enabled = True
        self.keyless_enabled = set()  # the _KEYLESS device types autocast is on for
        # id(source tensor) -> (source, its cast). Holding the source keeps its id from being
        # reused while the entry lives (PyTorch keeps a weak reference and checks it instead).
        self.cache = {}


state = _AutocastState()


def _device_type(device_type):
    """Validate a device type string the way PyTorch's device parser does; PyTorch's autocast
    device types pass as they are, also those ember has no device for ("xpu", "mps" ...)."""
    if device_type in _AUTOCAST_KEY_BIT or device_type in _KEYLESS:
        return device_type
    return _device(device_type).type


def _key_bit(device_type):
    b = _AUTOCAST_KEY_BIT.get(_device_type(device_type))
    if b is None:
        raise RuntimeError("unknown device type for autocast in "
                           "get_autocast_dispatch_key_from_device_type")
    return b


# ---------------------------------------------------------------------------------------------
# torch-level state functions (torch.is_autocast_enabled, torch.set_autocast_dtype, ...).

def is_autocast_available(device_type):
    """Whether autocast has per-op policies for ``device_type``."""
    return _device_type(device_type) in _AVAILABLE


def is_autocast_enabled(device_type="cuda"):
    """Whether autocast is on for ``device_type`` in this thread (CUDA when not given)."""
    if device_type in _KEYLESS:
        return device_type in state.keyless_enabled
    return not (_tls.state.excluded & _key_bit(device_type))


def set_autocast_enabled(device_type, enabled=None):
    if enabled is None:  # the legacy one-argument form: set_autocast_enabled(bool) means CUDA
        device_type, enabled = "cuda", device_type
    if device_type in _KEYLESS:
        (state.keyless_enabled.add if enabled else state.keyless_enabled.discard)(device_type)
        return
    b = _key_bit(device_type)
    _tls.state.excluded = _tls.state.excluded & ~b if enabled else _tls.state.excluded | b


def get_autocast_dtype(device_type):
    return state.dtype[_device_type(device_type)]


def set_autocast_dtype(device_type, dtype):
    state.dtype[_device_type(device_type)] = dtype


def is_autocast_cache_enabled():
    return state.cache_enabled


def set_autocast_cache_enabled(enabled):
    state.cache_enabled = bool(enabled)


def clear_autocast_cache():
    state.cache.clear()


def autocast_increment_nesting():
    state.nesting += 1
    return state.nesting


def autocast_decrement_nesting():
    state.nesting -= 1
    return state.nesting


def _deprecated(old, new):
    warnings.warn(f"torch.{old}() is deprecated. Please use torch.{new} instead.",
                  DeprecationWarning, stacklevel=3)


def is_autocast_cpu_enabled():
    _deprecated("is_autocast_cpu_enabled", "is_autocast_enabled('cpu')")
    return is_autocast_enabled("cpu")


def set_autocast_cpu_enabled(enabled):
    _deprecated("set_autocast_cpu_enabled", "set_autocast_enabled('cpu', enabled)")
    set_autocast_enabled("cpu", enabled)


def get_autocast_cpu_dtype():
    _deprecated("get_autocast_cpu_dtype", "get_autocast_dtype('cpu')")
    return get_autocast_dtype("cpu")


def set_autocast_cpu_dtype(dtype):
    _deprecated("set_autocast_cpu_dtype", "set_autocast_dtype('cpu', dtype)")
    set_autocast_dtype("cpu", dtype)


def get_autocast_gpu_dtype():
    _deprecated("get_autocast_gpu_dtype", "get_autocast_dtype('cuda')")
    return get_autocast_dtype("cuda")


def set_autocast_gpu_dtype(dtype):
    _deprecated("set_autocast_gpu_dtype", "set_autocast_dtype('cuda', dtype)")
    set_autocast_dtype("cuda", dtype)


# ---------------------------------------------------------------------------------------------
# The context manager.

def autocast_decorator(autocast_instance, func):
    @functools.wraps(func)
    def decorate_autocast(*args, **kwargs):
        with autocast_instance:
            return func(*args, **kwargs)
    return decorate_autocast


def _cuda_available():
    from .. import cuda
    return cuda.is_available()


class autocast:
    """Run the ops of a region in an op-specific dtype (PyTorch's ``torch.autocast``).

    Usable as a context manager or a decorator, nestable, thread-local. ``dtype`` defaults to
    ``get_autocast_dtype(device_type)``; ``enabled=False`` opens a region with autocast off.
    """

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.fast_dtype = get_autocast_dtype(device_type) if dtype is None else dtype
        self.device = device_type
        if not is_autocast_available(self.device):
            raise RuntimeError(
                f"User specified an unsupported autocast device_type '{self.device}'")
        self._cache_enabled = is_autocast_cache_enabled() if cache_enabled is None else cache_enabled
        supported = [D.bfloat16, D.float16]
        if enabled:
            if self.device == "cuda":
                if not _cuda_available():
                    warnings.warn("CUDA is not available or torch_xla is imported. Disabling "
                                  "autocast.", stacklevel=2)
                    enabled = False
            elif self.fast_dtype not in supported:
                name = self.device.upper()
                warnings.warn(
                    f"In {name} autocast, but the target dtype is not supported. Disabling "
                    f"autocast.\n{name} Autocast only supports dtypes of "
                    + ", ".join(map(str, supported)) + " currently.", stacklevel=2)
                enabled = False
        self._enabled = enabled

    def __enter__(self):
        self.prev_cache_enabled = is_autocast_cache_enabled()
        self.prev = is_autocast_enabled(self.device)
        self.prev_fastdtype = get_autocast_dtype(self.device)
        set_autocast_enabled(self.device, self._enabled)
        set_autocast_dtype(self.device, self.fast_dtype)
        autocast_increment_nesting()
        set_autocast_cache_enabled(self._cache_enabled)
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        if autocast_decrement_nesting() == 0:
            clear_autocast_cache()
        set_autocast_enabled(self.device, self.prev)
        set_autocast_dtype(self.device, self.prev_fastdtype)
        set_autocast_cache_enabled(self.prev_cache_enabled)
        return False

    def __call__(self, func):
        if not callable(func):
            raise TypeError(
                f"autocast()(func) requires a callable, but got {type(func).__name__}. "
                f"Did you mean to use autocast as a context manager? For example:\n"
                f"    with torch.autocast(device_type=...):\n"
                f"        output = model(input)")
        return autocast_decorator(self, func)


# ---------------------------------------------------------------------------------------------
# Helpers for custom autograd Functions.

def _cast(value, device_type, dtype):
    """Cast every eligible floating tensor inside ``value`` (nested containers too) to ``dtype``."""
    from .._tensor import Tensor
    if isinstance(value, Tensor):
        eligible = (value.is_floating_point() and value.device.type == device_type
                    and value.dtype is not D.float64)
        return value.to(dtype) if eligible else value
    if isinstance(value, (str, bytes, np.ndarray)):
        return value
    if isinstance(value, collections.abc.Mapping):
        return {_cast(k, device_type, dtype): _cast(v, device_type, dtype)
                for k, v in value.items()}
    if isinstance(value, collections.abc.Iterable):
        iterable = (_cast(v, device_type, dtype) for v in value)
        return type(value)(iterable) if isinstance(value, (list, tuple)) else iterable
    return value


def custom_fwd(fwd=None, *, device_type, cast_inputs=None):
    """Decorator for a custom Function's ``forward``: records the autocast state for
    ``custom_bwd``; with ``cast_inputs``, casts floating inputs and runs with autocast off."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        args[0]._dtype = get_autocast_dtype(device_type)
        if cast_inputs is None:
            args[0]._fwd_used_autocast = is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        autocast_context = is_autocast_enabled(device_type)
        args[0]._fwd_used_autocast = False
        if autocast_context:
            with autocast(device_type=device_type, enabled=False):
                return fwd(*_cast(args, device_type, cast_inputs),
                           **_cast(kwargs, device_type, cast_inputs))
        return fwd(*args, **kwargs)
    return decorate_fwd


def custom_bwd(bwd=None, *, device_type):
    """Decorator for a custom Function's ``backward``: runs it under the autocast state that
    ``forward`` saw."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        with autocast(device_type=device_type, enabled=args[0]._fwd_used_autocast,
                      dtype=args[0]._dtype):
            return bwd(*args, **kwargs)
    return decorate_bwd


# Graph-level entry/exit of an autocast region (PyTorch's torch.amp.autocast_mode._enter_autocast
# and _exit_autocast): compiled graphs record these two calls around the region's ops.
def _enter_autocast(*vals):
    mode = autocast(*vals)
    mode.__enter__()
    return mode


def _exit_autocast(mode):
    mode.__exit__(None, None, None)
