"""The thread-local default device for factory functions: ``with ember.device(...)`` pushes one,
``ember.set_default_device`` sets the one used when none is pushed."""
import threading

_tls = threading.local()


def current_device():
    stack = getattr(_tls, "stack", None)
    return stack[-1] if stack else getattr(_tls, "default", None)


def push_device(d):
    if not hasattr(_tls, "stack"):
        _tls.stack = []
    _tls.stack.append(d)


def pop_device():
    _tls.stack.pop()


def set_default_device(d):
    """ember.set_default_device: the device used when no ``with ember.device(...)`` is active
    (None restores cpu)."""
    _tls.default = d
