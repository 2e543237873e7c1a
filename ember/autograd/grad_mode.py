"""Grad modes: thread-local switches that decide whether autograd kernels record the graph.

``no_grad`` / ``enable_grad`` / ``set_grad_enabled`` flip one flag (``tls.state.grad_enabled``,
PyTorch's ``GradMode``); the autograd kernels still run, they just skip recording.
``inference_mode`` goes further, as PyTorch's does: it also removes ADInplaceOrView from the
thread's included key set and excludes every Autograd key, so the dispatcher never enters the
autograd layer, and it marks tensors created inside as inference tensors (no version counter, key
set ``{CPU, AutocastCPU}``). All of them work as context managers and as decorators.

``set_multithreading_enabled`` is the engine's thread-local switch (PyTorch's
``AutogradState::multithreading_enabled``): off, a backward pass runs its CUDA nodes on the
calling thread instead of the device worker threads (``ember.autograd.engine``).
"""
import threading

from .._dispatch import tls as _tls
from .._dispatch.keys import AUTOGRAD_BITS, K, bit
from ..utils._contextlib import _DecoratorContextManager, _NoParamDecoratorContextManager

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled", "inference_mode",
           "is_inference_mode_enabled", "set_multithreading_enabled", "is_multithreading_enabled"]

_state = _tls.state
_ADINPLACE = bit(K.ADInplaceOrView)


class _EngineModes(threading.local):
    def __init__(self):
        self.multithreading_enabled = True  # every thread starts with it on, as in PyTorch


engine_modes = _EngineModes()


def is_grad_enabled():
    return _state.grad_enabled


def is_inference_mode_enabled():
    return _state.inference


def is_multithreading_enabled():
    """Whether backward passes started in this thread may use the device worker threads."""
    return engine_modes.multithreading_enabled


def _set_multithreading_enabled(mode):
    if not isinstance(mode, bool):
        raise TypeError(f"set_multithreading_enabled(): argument 'enabled' (position 1) must be "
                        f"bool, not {type(mode).__name__}")
    engine_modes.multithreading_enabled = mode


class _GradModeSetter(_DecoratorContextManager):
    _mode = None

    def __enter__(self):
        self.prev = _state.grad_enabled
        _state.grad_enabled = self._mode

    def __exit__(self, *exc):
        _state.grad_enabled = self.prev
        return False


class no_grad(_GradModeSetter, _NoParamDecoratorContextManager):
    """Disable gradient recording in this thread (context manager or decorator)."""
    _mode = False

    def __init__(self, orig_func=None):
        pass


class enable_grad(_GradModeSetter, _NoParamDecoratorContextManager):
    """Enable gradient recording in this thread (context manager or decorator)."""
    _mode = True

    def __init__(self, orig_func=None):
        pass


class set_grad_enabled(_DecoratorContextManager):
    """Set grad mode on or off. Takes effect immediately (a plain call works, as in PyTorch), and
    restores the previous mode when used as a context manager."""

    def __init__(self, mode):
        self.prev = _state.grad_enabled
        self.mode = bool(mode)
        _state.grad_enabled = self.mode

    def __call__(self, func):
        _state.grad_enabled = self.prev
        return super().__call__(func)

    def __enter__(self):
        _state.grad_enabled = self.mode

    def __exit__(self, *exc):
        _state.grad_enabled = self.prev
        return False

    def clone(self):
        return self.__class__(self.mode)


class set_multithreading_enabled(_DecoratorContextManager):
    """Let backward passes of this thread run CUDA nodes on the device worker threads (True, the
    default) or run every node on the calling thread (False).

    As PyTorch's, it takes effect when constructed and the ``with`` block's exit restores the
    previous setting; so decorating a function leaves the setting on ``mode`` in this thread,
    and each call of the function sets it again."""

    def __init__(self, mode):
        self.prev = engine_modes.multithreading_enabled
        _set_multithreading_enabled(mode)
        self.mode = mode

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        _set_multithreading_enabled(self.prev)

    def clone(self):
        return self.__class__(self.mode)


class inference_mode(_DecoratorContextManager):
    """InferenceMode: no autograd layer at all, and new tensors are inference tensors."""

    def __init__(self, mode=True):
        self.mode = bool(mode)

    def __new__(cls, mode=True):
        if callable(mode) and not isinstance(mode, bool):
            return cls(True)(mode)
        return super().__new__(cls)

    def __enter__(self):
        self._saved = (_state.included, _state.excluded, _state.inference, _state.grad_enabled)
        if self.mode:
            _state.included &= ~_ADINPLACE
            _state.excluded |= AUTOGRAD_BITS
            _state.grad_enabled = False
        else:
            _state.included |= _ADINPLACE
            _state.excluded &= ~AUTOGRAD_BITS
            _state.grad_enabled = True
        _state.inference = self.mode

    def __exit__(self, *exc):
        _state.included, _state.excluded, _state.inference, _state.grad_enabled = self._saved
        return False

    def clone(self):
        return self.__class__(self.mode)


# Graph-level entry/exit of an inference_mode region (PyTorch's
# torch.autograd.grad_mode._enter_inference_mode / _exit_inference_mode): compiled graphs record
# these two calls around the region's ops.
def _enter_inference_mode(mode):
    ctx = inference_mode(mode)
    ctx.__enter__()
    return ctx


def _exit_inference_mode(ctx):
    ctx.__exit__(None, None, None)
