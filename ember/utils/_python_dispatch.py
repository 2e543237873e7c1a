"""``__torch_dispatch__``: Python handlers called from inside the dispatcher, at the Python key.

Two runtime keys carry it (PyTorch's design):

* ``PythonTLSSnapshot`` (near the top, above autocast and autograd) records this thread's
  included/excluded key sets as they were when the call entered the dispatcher;
* ``Python`` (below autograd, ADInplaceOrView and the functionalization layer, above the
  backends) calls the Python handler: the innermost active :class:`TorchDispatchMode`, else the
  ``__torch_dispatch__`` of the tensor subclasses among the arguments.

Both are boxed fallbacks installed once (:func:`install`). The keys get into a call in two ways:
a ``__torch_dispatch__`` subclass instance carries them in its key set, and while a mode is
active they are in this thread's included set. The handler runs with the TLS recorded at entry
plus every key above Python excluded, so an op it calls goes straight to the kernels below
Python (or to the next mode down). The handler receives the OpOverload (``aten.addmm.default``)
after autograd and autocast have run, positional arguments as a tuple and keyword-only ones in
``kwargs``, with arguments left at their schema default dropped, as PyTorch passes them.
"""
import contextlib
import threading

from .._dispatch import dispatcher as _d
from .._dispatch import tls as _dtls
from .._dispatch.keys import FULL, K, below, bit

__all__ = ["TorchDispatchMode", "is_traceable_wrapper_subclass", "transform_subclass",
           "_get_current_dispatch_mode", "_get_current_dispatch_mode_stack",
           "_pop_mode_temporarily", "_disable_current_modes", "_push_mode", "_pop_mode"]

PYTHON_BITS = bit(K.Python) | bit(K.PythonTLSSnapshot)
ABOVE_PYTHON = FULL & ~below(K.Python) & ~bit(K.Python)
_BELOW_PYTHON = below(K.Python)
_BELOW_SNAPSHOT = below(K.PythonTLSSnapshot)
_state = _dtls.state


class _TLS(threading.local):
    def __init__(self):
        self.stack = []  # active TorchDispatchModes, innermost last
        self.on_entry = None  # (included, excluded) recorded by PythonTLSSnapshot


_tls = _TLS()

# (OpOverload, mode or subclass type) -> fn(mode_or_cls, func, types, args, kwargs);
# filled by ember.library.register_torch_dispatch
_dispatch_rules = {}


# ---------------------------------------------------------------------------------------------
# The mode stack. The Python keys are in the included set exactly while it is non-empty.

def _push_mode(mode):
    _tls.stack.append(mode)
    _state.included |= PYTHON_BITS


def _pop_mode(k=None):
    if not _tls.stack:
        raise AssertionError("Trying to pop from an empty mode stack")
    mode = _tls.stack.pop()
    if not _tls.stack:
        _state.included &= ~PYTHON_BITS
    return mode


@contextlib.contextmanager
def _pop_mode_temporarily(k=None):
    mode = _pop_mode()
    try:
        yield mode
    finally:
        _push_mode(mode)


@contextlib.contextmanager
def _disable_current_modes():
    """Run a block with no dispatch mode active (they come back afterwards)."""
    saved = []
    while _tls.stack:
        saved.append(_pop_mode())
    try:
        yield list(reversed(saved))
    finally:
        for mode in reversed(saved):
            _push_mode(mode)


def _get_current_dispatch_mode():
    return _tls.stack[-1] if _tls.stack else None


def _get_current_dispatch_mode_stack():
    return list(_tls.stack)


def _len_torch_dispatch_stack():
    return len(_tls.stack)


class TorchDispatchMode:
    """Intercepts every operator call below autograd inside a ``with`` block: override
    ``__torch_dispatch__(self, func, types, args=(), kwargs=None)``; ``func(*args, **kwargs)``
    inside it runs the op (on the next mode down, or the kernels). Modes nest, one stack per
    thread; leaving the block, also by an exception, removes this mode."""

    def __init__(self, _dispatch_key=None):
        self._dispatch_key = _dispatch_key

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        raise NotImplementedError()

    def __enter__(self):
        _push_mode(self)
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        if _tls.stack and _tls.stack[-1] is self:
            _pop_mode()
        elif self in _tls.stack:
            _tls.stack.remove(self)
            if not _tls.stack:
                _state.included &= ~PYTHON_BITS
        return False

    @classmethod
    def push(cls, *args, **kwargs):
        raise NotImplementedError("Use `with mode:` (TorchDispatchMode.push was removed)")

    @classmethod
    def is_infra_mode(cls):
        return False


# ---------------------------------------------------------------------------------------------
# The two fallbacks.

def _snapshot_fallback(op, ks, *args, **kwargs):
    """PythonTLSSnapshot: remember the TLS at dispatcher entry (only the outermost call)."""
    values = args + tuple(kwargs.values()) if kwargs else args
    if _tls.on_entry is not None:
        return op._entry.redispatch(ks & _BELOW_SNAPSHOT, *values)
    _tls.on_entry = (_state.included, _state.excluded)
    try:
        return op._entry.redispatch(ks & _BELOW_SNAPSHOT, *values)
    finally:
        _tls.on_entry = None


def _python_fallback(op, ks, *args, **kwargs):
    """Python: hand the call to the active mode or the subclasses' ``__torch_dispatch__``."""
    on_entry = _tls.on_entry or (_state.included, _state.excluded)
    args, kwargs = _trim_defaults(op, args, kwargs)
    overloaded = _overloaded(args, kwargs)
    if not _tls.stack and not overloaded:
        # Python key with nothing to call (e.g. a mode exited in a callee): run what is below
        return op._entry.redispatch(ks & _BELOW_PYTHON, *_positional(op, args, kwargs))
    saved_entry = _tls.on_entry
    _tls.on_entry = None  # empty while Python code runs
    try:
        with _dtls.ForceDispatchKeyGuard(on_entry[0], on_entry[1] | ABOVE_PYTHON):
            return _call_handlers(op, overloaded, args, kwargs)
    finally:
        _tls.on_entry = saved_entry


def _call_handlers(op, overloaded, args, kwargs):
    types = tuple(type(a) for a in overloaded)
    if _tls.stack:
        with _pop_mode_temporarily() as mode:
            rule = _dispatch_rules.get((op, type(mode)))
            if rule is not None:
                ret = rule(mode, op, types, args, kwargs)
            else:
                ret = mode.__torch_dispatch__(op, types, args, kwargs)
        if ret is not NotImplemented:
            return ret
    for arg in overloaded:
        cls = type(arg)
        rule = _dispatch_rules.get((op, cls))
        if rule is not None:
            ret = rule(cls, op, types, args, kwargs)
        else:
            ret = cls.__torch_dispatch__(op, types, args, kwargs)
        if ret is not NotImplemented:
            return ret
    raise TypeError(f"Multiple dispatch failed for '{op.__module__}.{getattr(op, '__name__', op)}'; all "
                    f"__torch_dispatch__ handlers "
                    f"returned NotImplemented:\n\n"
                    + "".join(f"  - tensor subclass {t}\n" for t in types)
                    + "\nFor more information, try re-running with TORCH_LOGS=not_implemented")


def _positional(op, args, kwargs):
    """Every schema argument positionally (the dispatcher's calling convention)."""
    return op._normalize(*args, **kwargs)


def _same(v, d):
    if v is d:
        return True
    if hasattr(v, "_keyset") or hasattr(d, "_keyset") or type(v) is not type(d):
        if isinstance(v, (list, tuple)) and isinstance(d, (list, tuple)):
            return list(v) == list(d)
        return False
    try:
        return bool(v == d)
    except Exception:  # noqa: BLE001  (an exotic value: treat as explicitly passed)
        return False


def _trim_defaults(op, args, kwargs):
    """Drop trailing positional arguments and keyword arguments equal to their defaults."""
    from .._ops.overload import default_value
    schema_args = op._schema.arguments
    n = len(args)
    while n and schema_args[n - 1].has_default() and \
            _same(args[n - 1], default_value(schema_args[n - 1])):
        n -= 1
    args = tuple(args[:n])
    if kwargs:
        defaults = {a.name: a for a in schema_args if a.kwarg_only}
        kwargs = {k: v for k, v in kwargs.items()
                  if not (defaults[k].has_default() and _same(v, default_value(defaults[k])))}
    return args, kwargs


def _dispatch_overrides(t):
    from .._tensor import Tensor
    tdf = getattr(t, "__torch_dispatch__", None)
    return tdf is not None and tdf is not Tensor.__torch_dispatch__


def _overloaded(args, kwargs):
    """Arguments whose class has a ``__torch_dispatch__``, subclasses before superclasses."""
    found, types = [], []

    def consider(v):
        t = type(v)
        if not hasattr(v, "_keyset") or t in types or not _dispatch_overrides(t):
            return
        idx = len(found)
        for i, prev in enumerate(types):
            if issubclass(t, prev):
                idx = i
                break
        types.insert(idx, t)
        found.insert(idx, v)
    for v in list(args) + list(kwargs.values()):
        if isinstance(v, (list, tuple)):
            for x in v:
                consider(x)
        else:
            consider(v)
    return found


_installed = []


def install():
    """Register the PythonTLSSnapshot and Python fallbacks (once, at ``import ember``)."""
    if _installed:
        return
    _d.register_fallback(K.PythonTLSSnapshot, _d.Kernel(
        _snapshot_fallback, _d.BOXED_KEYSET, "PythonTLSSnapshot fallback "
        "(ember/utils/_python_dispatch.py)"))
    _d.register_fallback(K.Python, _d.Kernel(
        _python_fallback, _d.BOXED_KEYSET, "Python fallback (ember/utils/_python_dispatch.py)"))
    _installed.append(True)


class _DisableTorchDispatch:
    """Excludes the Python keys for a block: ops on subclasses run the kernels below."""

    def __enter__(self):
        self._guard = _dtls.ExcludeDispatchKeyGuard(PYTHON_BITS)
        self._guard.__enter__()
        return self

    def __exit__(self, *exc):
        return self._guard.__exit__(*exc)


# ---------------------------------------------------------------------------------------------
# Helpers for wrapper subclasses.

def is_traceable_wrapper_subclass(t):
    """A Tensor subclass implementing ``__tensor_flatten__`` / ``__tensor_unflatten__``."""
    from .._tensor import Tensor
    return isinstance(t, Tensor) and type(t) is not Tensor and \
        hasattr(t, "__tensor_flatten__") and hasattr(type(t), "__tensor_unflatten__")


def transform_subclass(t, callback, outer_size=None, outer_stride=None):
    """Rebuild a traceable wrapper subclass with ``callback(name, inner)`` applied to each
    inner tensor."""
    names, ctx = t.__tensor_flatten__()
    inner = {n: callback(n, getattr(t, n)) for n in names}
    return type(t).__tensor_unflatten__(inner, ctx, outer_size or t.size(),
                                        outer_stride or t.stride())
