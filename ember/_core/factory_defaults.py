"""The thread-local default device that ``with ember.device(...)`` sets for factory functions."""
import threading

_tls = threading.local()


def current_device():
    stack = getattr(_tls, "stack", None)
    return stack[-1] if stack else None


def push_device(d):
    if not hasattr(_tls, "stack"):
        _tls.stack = []
    _tls.stack.append(d)


def pop_device():
    _tls.stack.pop()
