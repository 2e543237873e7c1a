"""``ember.library``: the one path by which operators and kernels enter the dispatcher.

``Library(ns, "DEF")`` owns a namespace and defines operators in it; ``"IMPL"`` adds kernels to
existing operators for one dispatch key; ``"FRAGMENT"`` may do both. Every registration a Library
makes is undone when the Library is destroyed (``lib._destroy()`` or garbage collection), so a
test can override ``aten::add.Tensor`` on CPU for a scope. ember's own aten ops are registered
through this same class from ``native_functions.yaml``.
"""
import traceback
import warnings
import weakref

from ._dispatch import dispatcher as _d
from ._dispatch.keys import DEVICE_TO_BACKEND, DispatchKeySet, K, below, parse_key
from ._ops import overload as _ov

fallthrough_kernel = _d.FALLTHROUGH

_DEF_NAMESPACES = set()


class Library:
    def __init__(self, ns, kind, dispatch_key=""):
        if kind not in ("DEF", "IMPL", "FRAGMENT"):
            raise ValueError(f"Unsupported kind: {kind}")
        if kind == "DEF":
            if ns in _DEF_NAMESPACES:
                raise RuntimeError(
                    f"Only a single TORCH_LIBRARY can be used to register the namespace {ns}; "
                    f"please put all of your definitions in a single TORCH_LIBRARY block. If you "
                    f"were trying to specify implementations, consider using TORCH_LIBRARY_IMPL "
                    f"(which can be duplicated). If you really intended to define operators for a "
                    f"single namespace in a distributed way, you can use TORCH_LIBRARY_FRAGMENT to "
                    f"explicitly indicate this.")
            _DEF_NAMESPACES.add(ns)
        self.ns = ns
        self.kind = kind
        self.dispatch_key = dispatch_key
        self._defs = []  # qualnames defined here
        self._impls = []  # (entry, key, Kernel)
        self._fallbacks = []  # (key, Kernel)
        self._finalizer = weakref.finalize(self, _undo, self._defs, self._impls, self._fallbacks,
                                           ns if kind == "DEF" else None)

    def __repr__(self):
        return f"Library(kind={self.kind}, ns={self.ns}, dispatch_key={self.dispatch_key})>"

    # -- define -------------------------------------------------------------------------------
    def define(self, schema, alias_analysis="", *, tags=(), _debug=None):
        if self.kind == "IMPL":
            raise RuntimeError("define is not allowed in an IMPL library")
        name = schema[: schema.index("(")].strip()
        if "::" in name:
            ns, _, name = name.partition("::")
            if ns != self.ns:
                raise RuntimeError(f"Explicitly provided namespace ({ns}) in schema string does not "
                                   f"match namespace of enclosing TORCH_LIBRARY ({self.ns}).")
            schema = schema[schema.index("::") + 2:]
        if isinstance(tags, str) or not isinstance(tags, (list, tuple)):
            tags = (tags,)
        qualname = f"{self.ns}::{name}"
        entry = _d.define(qualname, schema, tags=[str(t) for t in tags],
                          debug=_debug or _caller_debug())
        _setup_entry(entry)
        self._defs.append(qualname)
        _ov.add_overload(entry)
        return name

    # -- impl ---------------------------------------------------------------------------------
    def impl(self, op_name, fn, dispatch_key="", *, with_keyset=False, _kind=None, _debug=None):
        if not callable(fn) and fn is not fallthrough_kernel:
            raise TypeError(f"Input function is required to be a callable but found type {type(fn)}")
        if isinstance(op_name, _ov.OpOverload):
            qualname = op_name._entry.qualname
        else:
            qualname = op_name if "::" in op_name else f"{self.ns}::{op_name}"
            if qualname.endswith(".default"):
                qualname = qualname[: -len(".default")]
        entry = _d.get_entry(qualname)
        if entry is None:
            raise RuntimeError(f"operator {qualname} does not exist (define it before impl)")
        key = parse_key(dispatch_key or self.dispatch_key or "CompositeImplicitAutograd")
        if self.kind == "IMPL" and self.dispatch_key and key != parse_key(self.dispatch_key):
            raise RuntimeError(f"Library for key {self.dispatch_key} cannot register a kernel for {key}")
        kind = _kind or (_d.KEYSET if with_keyset else _d.PLAIN)
        if _kind is None and not with_keyset and fn is not fallthrough_kernel and \
                takes_positional_call(fn, len(entry.schema.arguments)) is False:
            # a kernel that cannot take every argument positionally (`def f(x, *, k=1)`) is
            # called as PyTorch calls Python kernels: keyword-only arguments by keyword
            fn = boxed_python_kernel(entry, fn)
        if with_keyset and _kind is None:
            user_fn = fn
            fn = lambda ks, *args, _f=user_fn: _f(DispatchKeySet(ks), *args)  # noqa: E731
        if entry.has_kernel(key):
            warnings.warn(f"Overriding a previously registered kernel for the same operator and the "
                          f"same dispatch key\n  operator: {entry.qualname}\n  dispatch key: {key.name}",
                          UserWarning, stacklevel=2)
        kernel = _d.Kernel(fn, kind, _debug or _caller_debug(), owner=self)
        entry.register(key, kernel)
        self._impls.append((entry, key, kernel))

    # -- fallback -----------------------------------------------------------------------------
    def fallback(self, fn, dispatch_key="", *, with_keyset=False):
        key = parse_key(dispatch_key or self.dispatch_key)
        if fn is fallthrough_kernel:
            kernel = _d.Kernel(fn, _d.PLAIN, "fallthrough")
        else:
            kind = _d.BOXED_KEYSET if with_keyset else _d.BOXED
            if with_keyset:
                user_fn = fn
                fn = lambda op, ks, *args, _f=user_fn, **kw: _f(op, DispatchKeySet(ks), *args, **kw)
            kernel = _d.Kernel(fn, kind, _caller_debug())
        _d.register_fallback(key, kernel)
        self._fallbacks.append((key, kernel))

    def _register_fake(self, op_name, fn, _stacklevel=1, *, allow_override=False):
        """``Library._register_fake``: the fake implementation of ``self.ns::op_name``, undone with
        the Library."""
        qualname = op_name if "::" in op_name else f"{self.ns}::{op_name}"
        entry = _to_overload(qualname)._entry
        if entry.qualname in _fake_impls and not allow_override:
            raise RuntimeError(f"register_fake(...): the operator {entry.qualname} already has an "
                               f"fake impl registered.")
        _fake_impls[entry.qualname] = fn
        weakref.finalize(self, _fake_impls.pop, entry.qualname, None)
        if not entry.has_kernel(K.Meta):
            self.impl(entry.qualname, fake_meta_kernel(entry, entry.qualname), "Meta",
                      _debug=_caller_debug())

    def _destroy(self):
        self._finalizer()


def _undo(defs, impls, fallbacks, def_ns):
    for entry, key, kernel in reversed(impls):
        entry.deregister(key, kernel)
    for key, kernel in fallbacks:
        _d.deregister_fallback(key, kernel)
    for qualname in defs:
        entry = _d.get_entry(qualname)
        if entry is not None:
            _ov.remove_overload(entry)
        _d.undefine(qualname)
    if def_ns is not None:
        _DEF_NAMESPACES.discard(def_ns)


def _caller_debug():
    for frame in traceback.extract_stack()[-4::-1]:
        if "ember/library.py" not in frame.filename and "ember/_ops/registry" not in frame.filename:
            return f"registered at {frame.filename}:{frame.lineno}"
    return "registered from Python"


# Per-op kernels that every defined operator gets automatically; set by ember._ops.registry so
# that custom ops behave like aten ops (BackendSelect for factories, version bumps for mutation).
_entry_setup_hooks = []


def _setup_entry(entry):
    for hook in _entry_setup_hooks:
        hook(entry)


# ---------------------------------------------------------------------------------------------
# The modern registration API (torch.library.custom_op and friends). The machinery lives in
# ember/_library/.

from ._library.custom_ops import (CustomOpDef, OPDEFS, _fake_impls, backend_keys,  # noqa: E402
                                  fake_meta_kernel, make_autograd_kernel, python_kernel,
                                  AutogradInfo, autocast_kernel, vmap_kernel,
                                  boxed_python_kernel, takes_positional_call)
from ._library.infer_schema import infer_schema  # noqa: E402,F401
from ._library.opcheck import OpCheckError, opcheck  # noqa: E402,F401
from ._library.triton import triton_op, wrap_triton  # noqa: E402,F401


def custom_op(name, fn=None, /, *, mutates_args, device_types=None, schema=None, tags=None):
    """Turn a Python function into the operator ``name`` ("ns::opname"), with the schema
    inferred from its type hints (or given as ``schema``). Returns a CustomOpDef."""
    def inner(fn):
        ns, sep, opname = name.partition("::")
        if not sep or not ns or not opname:
            raise ValueError(f"Expected there to be a namespace in {name}, i.e. The operator "
                             f"name should look something like ns::foo")
        s = schema if schema is not None else infer_schema(fn, mutates_args=mutates_args)
        return CustomOpDef(ns, opname, s, fn, device_types, tags or ())
    return inner(fn) if fn is not None else inner


def _to_overload(op):
    """An OpOverload from a CustomOpDef, OpOverload, OpOverloadPacket or "ns::name[.ov]"."""
    if isinstance(op, CustomOpDef):
        return op._opoverload
    if isinstance(op, _ov.OpOverload):
        return op
    if isinstance(op, _ov.OpOverloadPacket):
        return getattr(op, "default")
    if isinstance(op, str):
        return _d._lookup(op).overload
    raise TypeError(f"expected an operator (CustomOpDef, OpOverload or 'ns::name'), got {op!r}")


def _opdef(op):
    """The CustomOpDef behind ``op`` (itself, its overload or its "ns::name"), else None."""
    if isinstance(op, CustomOpDef):
        return op
    if isinstance(op, str):
        return OPDEFS.get(op.removesuffix(".default"))
    if isinstance(op, _ov.OpOverloadPacket):
        op = getattr(op, "default", None)
    if isinstance(op, _ov.OpOverload):
        return OPDEFS.get(op._entry.qualname)
    return None


# Libraries made by the module-level functions below, kept alive for the process.
_libraries = []


def _lib_for(entry, lib):
    if lib is None:
        lib = Library(entry.namespace, "FRAGMENT")
        _libraries.append(lib)
    return lib


def register_fake(op, func=None, /, *, lib=None, _stacklevel=1, allow_override=False):
    """Register ``func`` as the fake (meta) implementation of ``op``."""
    opdef = _opdef(op)
    if opdef is not None:
        return opdef.register_fake(func) if func is not None else opdef.register_fake

    def inner(func):
        entry = _to_overload(op)._entry
        if entry.qualname in _fake_impls and not allow_override:
            raise RuntimeError(f"register_fake(...): the operator {entry.qualname} already has "
                               f"an fake impl registered.")
        _fake_impls[entry.qualname] = func
        if not entry.has_kernel(K.Meta):
            _lib_for(entry, lib).impl(entry.qualname, fake_meta_kernel(entry, entry.qualname),
                                      "Meta", _debug=_caller_debug())
        return func
    return inner(func) if func is not None else inner


def impl_abstract(qualname, func=None, *, lib=None, _stacklevel=1):
    """PyTorch 2.4 renamed this :func:`register_fake`; kept, with PyTorch's FutureWarning."""
    warnings.warn("`torch.library.impl_abstract` was renamed to `torch.library.register_fake`. "
                  "Please use that instead; we will remove `torch.library.impl_abstract` in a "
                  "future version of PyTorch.", FutureWarning, stacklevel=2)
    return register_fake(qualname, func, lib=lib, _stacklevel=_stacklevel + 1)


def _resolve_for_registration(op, registration_name):
    """The CustomOpDef behind ``op``, else its "ns::name[.overload]" (PyTorch's check)."""
    if not isinstance(op, (str, _ov.OpOverload, CustomOpDef)):
        raise ValueError(f"{registration_name}({op}): got unexpected type for op: {type(op)}")
    opdef = _opdef(op)
    if opdef is not None:
        return opdef
    return op._entry.qualname if isinstance(op, _ov.OpOverload) else op


def register_vmap(op, func=None, /, *, lib=None):
    """Give ``op`` a batching rule: ``func(info, in_dims, *args, **kwargs)`` returns
    ``(output, out_dims)`` (see ember/_functorch/user_rules.py)."""
    op = _resolve_for_registration(op, "register_vmap")
    if isinstance(op, CustomOpDef):
        return op.register_vmap(func)
    entry = _to_overload(op)._entry
    if any(a.kwarg_only and a.base == "Tensor" for a in entry.schema.arguments):
        raise NotImplementedError(
            f"register_vmap with kwarg-only Tensor args. In the original definition of the op, "
            f"please make your tensors not kwarg-only. Got: {entry.schema}")

    def register(func):
        _lib_for(entry, lib).impl(entry.qualname, vmap_kernel(entry, lambda: func),
                                  "FuncTorchBatched", _debug=_caller_debug())
        return func
    return register(func) if func is not None else register


def register_autocast(op, device_type, cast_inputs, /, *, lib=None):
    """In an autocast region of ``device_type``, run ``op`` with its floating-point inputs on
    that device cast to ``cast_inputs`` (float64 excepted) and autocast off."""
    op = _resolve_for_registration(op, "register_autocast")
    if isinstance(op, CustomOpDef):
        return op.register_autocast(device_type, cast_inputs)
    if not isinstance(device_type, str):  # PyTorch's argument parser, before its own check
        raise TypeError(f"_is_autocast_available(): argument 'device_type' (position 1) must be "
                        f"str, not {type(device_type).__name__}")
    entry = _to_overload(op)._entry
    key, kernel = autocast_kernel(entry, device_type, cast_inputs)
    _lib_for(entry, lib).impl(entry.qualname, kernel, key, _kind=_d.PLAIN,
                              _debug=_caller_debug())


class _SafeKernelFunction:
    """One kernel of an operator's dispatch table, as :func:`get_kernel` returns it:
    ``call_boxed(keyset, *args, **kwargs)`` runs that kernel alone (it may redispatch below)."""

    def __init__(self, entry, key, kernel):
        self._entry, self._key, self._kernel = entry, key, kernel
        self.op_handle = entry.overload

    def __repr__(self):
        return f"SafeKernelFunction(debug='{self._kernel.debug}')"

    def call_boxed(self, keyset, *args, **kwargs):
        entry, k = self._entry, self._kernel
        values = entry.overload._normalize(*args, **kwargs)
        ks = getattr(keyset, "repr_", keyset)
        if k.fn is fallthrough_kernel:
            return entry.redispatch(ks & below(self._key), *values)
        if k.kind == _d.PLAIN:
            return k.fn(*values)
        if k.kind == _d.KEYSET:
            return k.fn(ks, *values)
        extra = (ks,) if k.kind == _d.BOXED_KEYSET else ()
        return _d._boxed(k.fn, entry, extra)(*values)


def get_kernel(op, dispatch_key):
    """The kernel ``op``'s dispatch table holds for ``dispatch_key`` (its own, a composite
    one, or a fallback, as the dispatcher computes it)."""
    if not isinstance(op, (str, _ov.OpOverload)):
        raise ValueError(f"get_kernel({op}): got unexpected type for op: {type(op)}")
    entry = _d._lookup(op._entry.qualname if isinstance(op, _ov.OpOverload) else op)
    try:
        key = parse_key(dispatch_key)
    except ValueError:
        raise ValueError(f"Invalid dispatch key: {dispatch_key}") from None
    kernel, _ = entry._slot(key)
    if kernel is None:
        raise RuntimeError(f"no kernel for {key.name} for {entry.qualname}")
    return _SafeKernelFunction(entry, key, kernel)


def get_ctx():
    """The context of the fake implementation now running (its ``new_dynamic_size()`` makes
    a data-dependent size); None outside one. See ``ember._library.fake_impl``."""
    from ._library import fake_impl
    return fake_impl.global_ctx_getter()


def register_autograd(op, backward, /, *, setup_context=None, lib=None):
    """Give ``op`` a backward: ``backward(ctx, *grads)``, ``setup_context(ctx, inputs, output)``."""
    opdef = _opdef(op)
    if opdef is not None:
        return opdef.register_autograd(backward, setup_context=setup_context)
    entry = _to_overload(op)._entry
    info = AutogradInfo(backward, setup_context)
    _lib_for(entry, lib).impl(entry.qualname, make_autograd_kernel(entry, lambda: info),
                              "Autograd", _kind=_d.KEYSET, _debug=_caller_debug())


def register_kernel(op, device_types, func=None, /, *, lib=None):
    """Use ``func`` as ``op``'s implementation for ``device_types`` ("cpu", "cuda", ...)."""
    opdef = _opdef(op)
    if opdef is not None:
        return opdef.register_kernel(device_types, func)

    def inner(func):
        entry = _to_overload(op)._entry
        for key in backend_keys(device_types):
            _lib_for(entry, lib).impl(entry.qualname, python_kernel(entry, func), key,
                                      _debug=_caller_debug())
        return func
    return inner(func) if func is not None else inner


def register_torch_dispatch(op, torch_dispatch_class, func=None, /, *, lib=None):
    """When ``op`` reaches the Python key with ``torch_dispatch_class`` (a TorchDispatchMode or
    a Tensor subclass) handling it, call ``func(mode_or_cls, func, types, args, kwargs)``
    instead of its ``__torch_dispatch__``."""
    from .utils._python_dispatch import _dispatch_rules

    def inner(func):
        overload = _to_overload(op)
        _dispatch_rules[(overload, torch_dispatch_class)] = func
        if lib is not None:
            weakref.finalize(lib, _dispatch_rules.pop, (overload, torch_dispatch_class), None)
        return func
    return inner(func) if func is not None else inner


def define(qualname, schema, *, lib=None, tags=()):
    """Define the operator ``qualname`` ("ns::name") with ``schema`` ("(Tensor x) -> Tensor")."""
    ns, _, name = qualname.partition("::")
    if lib is None:
        lib = Library(ns, "FRAGMENT")
        _libraries.append(lib)
    lib.define(name + schema, tags=tags)


def impl(qualname, types, func=None, *, lib=None):
    """Register ``func`` for ``qualname`` on the device types (or dispatch key) ``types``."""
    def inner(func):
        entry = _to_overload(qualname)._entry
        keys = [types] if isinstance(types, str) and types not in DEVICE_TO_BACKEND else \
            backend_keys(types)
        for key in keys:
            _lib_for(entry, lib).impl(entry.qualname, python_kernel(entry, func), key,
                                      _debug=_caller_debug())
        return func
    return inner(func) if func is not None else inner
