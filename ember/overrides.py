"""``ember.overrides``: ``__torch_function__``, the Python-API-level extension point.

Before a public function, Tensor method or operator does anything, it checks whether one of its
arguments is a Tensor subclass (or tensor-like object) defining ``__torch_function__``, or whether
a :class:`TorchFunctionMode` is active; if so the call is handed to :func:`handle_torch_function`
with the public function itself (``ember.add``, ``Tensor.add``) and the arguments as passed.

The rules are PyTorch's (``torch/overrides.py``):

* the active mode, if any, goes first; it runs with itself popped off the mode stack, so calls it
  makes go to the next mode (or to the subclasses, or to the real function);
* then the overloaded arguments' types, subclasses before their superclasses, otherwise left to
  right; the first handler that does not return ``NotImplemented`` wins; if all do, TypeError;
* ``DisableTorchFunctionSubclass`` turns off the subclass handlers (not the modes) for a block,
  ``DisableTorchFunction`` turns off both; ``Tensor.__torch_function__`` calls the function
  under ``DisableTorchFunctionSubclass`` and converts Tensor results to the subclass.

Keeping plain tensors fast: every generated binding starts with ``if _TF_ON and ...``.
``_TF_ON`` is a list that stays empty until a Tensor subclass with a live ``__torch_function__``
is defined or a mode is entered, so a plain ``a + b`` pays one global lookup and one truth test.
"""
import contextlib
import functools
import threading
from ._core import api_name
from ._core.api_name import as_ember

__all__ = ["get_ignored_functions", "get_overridable_functions", "get_testing_overrides",
           "handle_torch_function", "has_torch_function", "has_torch_function_unary",
           "has_torch_function_variadic", "is_tensor_like", "is_tensor_method_or_property",
           "TorchFunctionMode", "BaseTorchFunctionMode", "enable_reentrant_dispatch"]

# Non-empty while __torch_function__ may apply somewhere: holds one entry per defined overriding
# Tensor subclass (they stay) and one per entered mode (removed on exit).
_TF_ON = []
_NUMBERS = frozenset((int, float, bool, complex, str, type(None)))


class _TLS(threading.local):
    def __init__(self):
        self.modes = []  # the TorchFunctionMode stack, innermost last
        self.disabled_subclass = False  # DisableTorchFunctionSubclass
        self.disabled_all = False  # DisableTorchFunction


_tls = _TLS()


def _disabled_torch_function_impl(func, types, args=(), kwargs=None):
    """Assign to ``__torch_function__`` to opt a subclass out (as ``nn.Parameter`` does)."""
    with DisableTorchFunctionSubclass():
        return func(*args, **(kwargs or {}))


# ---------------------------------------------------------------------------------------------
# Finding the overloaded arguments.

_overrides_cache = {}  # type -> bool: does this type take part in __torch_function__?


def _type_overrides(t):
    r = _overrides_cache.get(t)
    if r is None:
        tf = getattr(t, "__torch_function__", None)
        r = tf is not None and getattr(tf, "__func__", tf) is not _disabled_torch_function_impl
        if r:
            from ._tensor import Tensor
            if t is Tensor:
                r = False  # plain tensors never dispatch to Tensor.__torch_function__
        _overrides_cache[t] = r
    return r


def _relevant(values):
    """The overloaded arguments among ``values`` (lists/tuples searched one level down), in
    PyTorch's order: a subclass goes before its superclass, otherwise first seen first."""
    found = []
    types = []

    def consider(v):
        t = type(v)
        if t in _NUMBERS or not _type_overrides(t) or t in types:
            return
        idx = len(found)
        for i, prev in enumerate(types):
            if issubclass(t, prev):
                idx = i
                break
        types.insert(idx, t)
        found.insert(idx, v)

    for v in values:
        if isinstance(v, (list, tuple)):
            for x in v:
                consider(x)
        else:
            consider(v)
    return found


def _check(values):
    """True when the call needs handle_torch_function (called only while _TF_ON)."""
    tls = _tls
    if tls.disabled_all:
        return False
    if tls.modes:
        return True
    if tls.disabled_subclass:
        return False
    for v in values:
        t = type(v)
        if t in _NUMBERS:
            continue
        if isinstance(v, (list, tuple)):
            if _check_list(v):
                return True
        elif _type_overrides(t):
            return True
    return False


def _check_list(v):
    for x in v:
        if type(x) not in _NUMBERS and _type_overrides(type(x)):
            return True
    return False


def has_torch_function(relevant_args):
    """Does any argument (or the mode stack) ask for __torch_function__ dispatch?"""
    return _check(relevant_args)


def has_torch_function_unary(arg):
    return _check((arg,))


def has_torch_function_variadic(*args):
    return _check(args)


def is_tensor_like(inp):
    """A Tensor, or an object whose type defines ``__torch_function__``."""
    from ._tensor import Tensor
    return type(inp) is Tensor or hasattr(inp, "__torch_function__")


# ---------------------------------------------------------------------------------------------
# Dispatch.

def handle_torch_function(public_api, relevant_args, *args, **kwargs):
    """Call the active mode's, then the overloaded arguments', ``__torch_function__``."""
    return _handle(public_api, relevant_args, args, kwargs, None)


def _handle(public_api, relevant_args, args, kwargs, c_name):
    """handle_torch_function for a Python function (``c_name`` None) or for what PyTorch
    implements in C++ (bindings, ``torch.ops``), named ``c_name`` in the error when no
    handler takes the call: the two raise different messages in PyTorch."""
    overloaded = [] if _tls.disabled_subclass or _tls.disabled_all else _relevant(relevant_args)
    types = tuple(type(a) for a in overloaded)
    mode = None
    if _tls.modes and not _tls.disabled_all:
        with _pop_mode_temporarily() as mode:
            ret = mode.__torch_function__(public_api, types, args, kwargs)
        if ret is not NotImplemented:
            return ret
    for arg in overloaded:
        method = arg.__torch_function__
        if getattr(method, "__self__", None) is arg:
            import warnings
            warnings.warn("Defining your `__torch_function__` as a plain method is deprecated and "
                          "will be an error in future, please define it as a classmethod.",
                          DeprecationWarning, stacklevel=2)
        ret = method(public_api, types, args, kwargs)
        if ret is not NotImplemented:
            return ret
    if c_name is not None:
        raise TypeError(f"Multiple dispatch failed for '{c_name}'; all __torch_function__ "
                        "handlers returned NotImplemented:\n\n"
                        + (f"  - mode object {mode!r}\n" if mode is not None else "")
                        + "".join(f"  - tensor subclass {t!r}\n" for t in types)
                        + "\nFor more information, try re-running with TORCH_LOGS=not_implemented")
    name = f"{getattr(public_api, '__module__', None)}.{getattr(public_api, '__name__', public_api)}"
    raise TypeError(f"no implementation found for '{name}' on types that implement "
                    f"__torch_function__: {[type(a) for a in overloaded]}"
                    + (f" nor in mode {mode!r}" if mode is not None else ""))


def _public_name(func):
    """How PyTorch's C++ names a binding in its errors: ``torch.add``, ``torch.Tensor.add``."""
    name = getattr(func, "__qualname__", None) or getattr(func, "__name__", func)
    if as_ember(getattr(func, "__module__", None)) == "ember":
        return f"{api_name.name}.{name}"
    return f"{api_name.name}.Tensor.{name}" if "." not in str(name) else str(name)


def _dispatch_bound(public_api, args, kwargs):
    """The generated bindings' slow path: ``args``/``kwargs`` as the caller passed them."""
    return _handle(public_api, tuple(args) + tuple(kwargs.values()), args, kwargs,
                   _public_name(public_api))


def _dispatch_named(public_api, positional, pos_defaults, keywords, kw_defaults):
    """The slow path of a generated binding with named parameters: rebuild what the caller
    passed, dropping trailing positional defaults and keyword arguments left at their default
    (compared by identity, so a value equal to the default still shows up if passed)."""
    n = len(positional)
    while n and positional[n - 1] is pos_defaults[n - 1]:
        n -= 1
    args = positional[:n]
    kwargs = {k: v for k, v, d in zip(keywords[0], keywords[1], kw_defaults) if v is not d}
    return _handle(public_api, args + tuple(kwargs.values()), args, kwargs,
                   _public_name(public_api))


def _convert(ret, cls):
    """Tensor results (also inside tuples/lists) become ``cls`` instances."""
    from ._tensor import Tensor
    if isinstance(ret, Tensor) and not isinstance(ret, cls):
        return ret.as_subclass(cls)
    if isinstance(ret, (tuple, list)):
        converted = [_convert(r, cls) for r in ret]
        if hasattr(type(ret), "_fields"):  # return_types namedtuples
            return type(ret)(*converted)
        return type(ret)(converted)
    return ret


@functools.lru_cache(None)
def get_default_nowrap_functions():
    """Functions whose results ``Tensor.__torch_function__`` leaves unconverted."""
    from ._tensor import Tensor
    return {Tensor._base.__get__, Tensor.grad.__get__}


def _default_torch_function(cls, func, types, args=(), kwargs=None):
    """``Tensor.__torch_function__``: run ``func`` with subclass handling off, convert results."""
    if kwargs is None:
        kwargs = {}
    if not all(issubclass(cls, t) for t in types):
        return NotImplemented
    with DisableTorchFunctionSubclass():
        ret = func(*args, **kwargs)
        if func in get_default_nowrap_functions():
            return ret
        return _convert(ret, cls)


# ---------------------------------------------------------------------------------------------
# Guards.

class DisableTorchFunctionSubclass:
    """Subclasses' ``__torch_function__`` is skipped inside the block (modes still run)."""

    def __enter__(self):
        self._saved = _tls.disabled_subclass
        _tls.disabled_subclass = True
        return self

    def __exit__(self, *exc):
        _tls.disabled_subclass = self._saved
        return False


class DisableTorchFunction:
    """Both subclass handlers and modes are skipped inside the block."""

    def __enter__(self):
        self._saved = (_tls.disabled_subclass, _tls.disabled_all)
        _tls.disabled_subclass = _tls.disabled_all = True
        return self

    def __exit__(self, *exc):
        _tls.disabled_subclass, _tls.disabled_all = self._saved
        return False


def _is_torch_function_enabled():
    return not _tls.disabled_subclass


def _is_torch_function_mode_enabled():
    return not _tls.disabled_all and bool(_tls.modes)


# ---------------------------------------------------------------------------------------------
# Modes.

def _push_mode(mode):
    _tls.modes.append(mode)
    _TF_ON.append(mode)


def _pop_mode():
    if not _tls.modes:
        raise RuntimeError("Trying to pop from an empty mode stack")
    mode = _tls.modes.pop()
    _TF_ON.remove(mode)
    return mode


@contextlib.contextmanager
def _pop_mode_temporarily():
    mode = _pop_mode()
    try:
        yield mode
    finally:
        _push_mode(mode)


def _get_current_function_mode():
    return _tls.modes[-1] if _tls.modes else None


def _get_current_function_mode_stack():
    return list(_tls.modes)


def _len_torch_function_stack():
    return len(_tls.modes)


class TorchFunctionMode:
    """Intercepts every overridable call in a ``with`` block: override
    ``__torch_function__(self, func, types, args=(), kwargs=None)``. Modes nest; each sees
    the calls its inner mode passes on. Leaving the block (normally or by an exception)
    removes exactly this mode."""

    def __init__(self):
        pass

    def __torch_function__(self, func, types, args=(), kwargs=None):
        raise NotImplementedError

    def __enter__(self):
        _push_mode(self)
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        if _tls.modes and _tls.modes[-1] is self:
            _pop_mode()
        elif self in _tls.modes:  # exited out of order: remove this one, keep the others
            _tls.modes.remove(self)
            _TF_ON.remove(self)
        return False

    @classmethod
    def push(cls, *args, **kwargs):
        raise NotImplementedError("Use `with mode:` (TorchFunctionMode.push was removed)")


class BaseTorchFunctionMode(TorchFunctionMode):
    """A mode that does nothing but call the function (subclass it and call super())."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


@contextlib.contextmanager
def enable_reentrant_dispatch():
    yield


# ---------------------------------------------------------------------------------------------
# Inventories.

_IGNORED_NAMES = {"tensor", "as_tensor", "from_numpy", "empty", "zeros", "ones", "full", "arange",
                  "linspace", "logspace", "eye", "rand", "randn", "randint", "randperm",
                  "empty_strided", "scalar_tensor", "manual_seed", "seed", "initial_seed",
                  "get_default_dtype", "set_default_dtype", "is_grad_enabled",
                  "set_printoptions", "get_printoptions", "promote_types", "can_cast"}


def get_ignored_functions():
    """Public functions that take no tensor to dispatch on (factories, global state)."""
    import ember
    return {getattr(ember, n) for n in _IGNORED_NAMES if hasattr(ember, n)}


def get_overridable_functions():
    """{namespace: [functions]} of everything that honours ``__torch_function__``:
    ``ember`` functions, ``Tensor`` methods, and ``ember.nn.functional`` if present."""
    import ember
    from ._ops import bindings
    from ._tensor import Tensor
    ignored = get_ignored_functions()
    out = {ember: [], Tensor: []}
    for kind, name in bindings._sources:
        if kind == "function":
            fn = getattr(ember, name, None)
            if fn is not None and fn not in ignored:
                out[ember].append(fn)
        else:
            out[Tensor].append(getattr(Tensor, name))
    for name in _WRAPPED_METHODS + tuple(_OPERATOR_FUNCS):
        fn = Tensor.__dict__.get(name)
        if fn is not None and fn not in out[Tensor]:
            out[Tensor].append(fn)
    return out


def get_testing_overrides():
    """{function: dummy with the same signature returning -1}, for tests of override coverage."""
    import inspect
    out = {}
    for fns in get_overridable_functions().values():
        for fn in fns:
            try:
                sig = inspect.signature(fn)
            except (TypeError, ValueError):
                sig = None

            def dummy(*args, **kwargs):
                return -1
            if sig is not None:
                dummy.__signature__ = sig
            out[fn] = dummy
    return out


def is_tensor_method_or_property(func):
    from ._tensor import Tensor
    name = getattr(func, "__name__", None)
    return name is not None and (Tensor.__dict__.get(name) is func or
                                 getattr(getattr(Tensor, name, None), "__get__", None) is func)


# ---------------------------------------------------------------------------------------------
# Hand-written Tensor methods (ember/_tensor.py) get the same check as the generated ones.

_WRAPPED_METHODS = ("__getitem__", "__setitem__", "to", "cpu", "cuda", "float", "double", "half",
                    "bfloat16", "int", "long", "short", "char", "byte", "bool", "type_as",
                    "expand_as", "view_as", "reshape_as", "item", "tolist", "numpy", "size",
                    "stride", "dim", "numel", "backward", "__len__", "__iter__", "__bool__",
                    "__int__", "__float__", "__index__", "__format__", "__repr__",
                    "storage_offset", "is_contiguous", "element_size", "requires_grad_")
_WRAPPED_PROPERTIES = ("shape", "dtype", "device", "T", "mT", "grad", "data", "requires_grad",
                       "grad_fn", "is_leaf", "ndim", "_base", "is_cuda", "is_meta")

# Operators whose public function in PyTorch is a Python-level dunder (the others report the
# method they call, e.g. ``a + b`` reports ``Tensor.add``).
_OPERATOR_FUNCS = ("__rsub__", "__rtruediv__", "__rdiv__", "__rpow__", "__rfloordiv__",
                   "__rmod__", "__rmatmul__", "__floordiv__", "__pow__", "__ipow__", "__mod__",
                   "__rand__", "__ror__", "__rxor__", "__and__", "__or__", "__xor__", "__iand__",
                   "__ior__", "__ixor__", "__imod__", "__ifloordiv__", "__eq__", "__ne__",
                   "__lt__", "__le__", "__gt__", "__ge__")


def _wrap_method(fn):
    @functools.wraps(fn)
    def method(self, *args, **kwargs):
        if _TF_ON and _check((self,) + args):
            return handle_torch_function(method, (self,) + args, self, *args, **kwargs)
        return fn(self, *args, **kwargs)
    return method


def _wrap_property(prop):
    getter = prop.fget

    def fget(self):
        if _TF_ON and _check((self,)):
            return handle_torch_function(wrapped.__get__, (self,), self)
        return getter(self)
    fget.__name__ = getter.__name__
    wrapped = property(fget, prop.fset, prop.fdel, prop.__doc__)
    return wrapped


def operator_public(tensor_cls, dunder, method_name):
    """The function ``__torch_function__`` sees for an operator (PyTorch's choice)."""
    if dunder in _OPERATOR_FUNCS or method_name is None:
        return tensor_cls.__dict__[dunder]
    return getattr(tensor_cls, method_name)


def install(tensor_cls):
    """Wrap the hand-written methods and properties of Tensor (called once at import)."""
    for name in _WRAPPED_METHODS:
        fn = tensor_cls.__dict__.get(name)
        if fn is not None and not getattr(fn, "_tf_wrapped", False):
            w = _wrap_method(fn)
            w._tf_wrapped = True
            setattr(tensor_cls, name, w)
    for name in _WRAPPED_PROPERTIES:
        prop = tensor_cls.__dict__.get(name)
        if isinstance(prop, property):
            setattr(tensor_cls, name, _wrap_property(prop))


def _dispatch_operator(dunder, method_name, *args):
    """The slow path of a Python operator (``a + b`` on a subclass, or under a mode). A binary
    operator's TypeError becomes NotImplemented, so Python tries the other operand, as
    PyTorch's do (TypeError_to_NotImplemented_, _wrap_type_error_to_not_implemented)."""
    from ._tensor import Tensor
    public = operator_public(Tensor, dunder, method_name)
    name = f"{api_name.name}.Tensor.{method_name or dunder}"
    if len(args) == 1:
        return _handle(public, args, args, {}, name)
    try:
        return _handle(public, args, args, {}, name)
    except TypeError:
        return NotImplemented
