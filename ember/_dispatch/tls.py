"""Thread-local dispatch state: the included and excluded key sets, and the guards that edit them.

Defaults match PyTorch: BackendSelect and ADInplaceOrView are included, every Autocast key is
excluded. The hot path reads ``state.included`` and ``state.excluded`` (two attribute loads).
"""
import threading

from .keys import AUTOCAST_BITS, DispatchKeySet, K, bit, parse_key

DEFAULT_INCLUDED = bit(K.BackendSelect) | bit(K.ADInplaceOrView)
DEFAULT_EXCLUDED = AUTOCAST_BITS


class _State(threading.local):
    def __init__(self):
        self.included = DEFAULT_INCLUDED
        self.excluded = DEFAULT_EXCLUDED
        self.inference = False  # inference_mode: new tensors are inference tensors
        self.grad_enabled = True  # GradMode: autograd kernels record graph nodes only when set


state = _State()


def _bits(keys):
    if isinstance(keys, (str, K)):
        return bit(parse_key(keys))
    if isinstance(keys, int):
        return keys
    if hasattr(keys, "repr_"):
        return keys.repr_
    r = 0
    for k in keys:
        r |= bit(parse_key(k))
    return r


class _Guard:
    __slots__ = ("_bits", "_saved")

    def __init__(self, keys):
        self._bits = _bits(keys)

    def __exit__(self, *exc):
        state.included, state.excluded = self._saved
        return False


class IncludeDispatchKeyGuard(_Guard):
    """Adds keys to this thread's included set for the ``with`` block."""
    __slots__ = ()

    def __enter__(self):
        self._saved = (state.included, state.excluded)
        state.included |= self._bits
        return self


class ExcludeDispatchKeyGuard(_Guard):
    """Adds keys to this thread's excluded set for the ``with`` block."""
    __slots__ = ()

    def __enter__(self):
        self._saved = (state.included, state.excluded)
        state.excluded |= self._bits
        return self


class ForceDispatchKeyGuard:
    """Replaces both sets for the ``with`` block (what PythonTLSSnapshot restores)."""

    def __init__(self, included, excluded):
        self._sets = (_bits(included), _bits(excluded))

    def __enter__(self):
        self._saved = (state.included, state.excluded)
        state.included, state.excluded = self._sets
        return self

    def __exit__(self, *exc):
        state.included, state.excluded = self._saved
        return False


def _dispatch_tls_local_include_set():
    return DispatchKeySet(state.included)


def _dispatch_tls_local_exclude_set():
    return DispatchKeySet(state.excluded)


def _dispatch_tls_is_dispatch_key_included(key):
    return bool(state.included & bit(parse_key(key)))


def _dispatch_tls_is_dispatch_key_excluded(key):
    return bool(state.excluded & bit(parse_key(key)))


def _dispatch_tls_set_dispatch_key_included(key, flag):
    b = bit(parse_key(key))
    state.included = state.included | b if flag else state.included & ~b


def _dispatch_tls_set_dispatch_key_excluded(key, flag):
    b = bit(parse_key(key))
    state.excluded = state.excluded | b if flag else state.excluded & ~b
