"""``ember.library``: the one path by which operators and kernels enter the dispatcher.

``Library(ns, "DEF")`` owns a namespace and defines operators in it; ``"IMPL"`` adds kernels to
existing operators for one dispatch key; ``"FRAGMENT"`` may do both. Every registration a Library
makes is undone when the Library is destroyed (``lib._destroy()`` or garbage collection), so a
test can override ``aten::add.Tensor`` on CPU for a scope. ember's own aten ops are registered
through this same class from ``native_functions.yaml``.
"""
import inspect
import traceback
import warnings
import weakref

from ._dispatch import dispatcher as _d
from ._dispatch.keys import DispatchKeySet, K, parse_key
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
