"""Operator entries, their kernel tables, and the call path.

Each overload (``aten::add.Tensor``) has one :class:`OperatorEntry`. Registrations put kernels on
runtime keys or alias keys; :meth:`OperatorEntry._slot` fills a runtime key's table slot by
PyTorch's rules (``computeDispatchTableEntry``): a kernel registered on the key itself, else a
composite kernel (CompositeExplicitAutograd, then CompositeImplicitAutograd, then the Autograd
alias), else the key's backend fallback, else "missing". Fallthrough slots are removed from the
op's key mask up front, so they cost nothing at call time.

The steady-state call is: OR the tensor arguments' key sets, apply the thread-local include and
exclude sets, look the result up in a per-operator cache, call. :func:`make_call` builds that
function per overload so that no schema is consulted on the hot path.
"""
import functools
import os
import sys
import threading

from . import tls
from .._core.codegen import compile_source
from .keys import (ALIAS_EXPANSION, AUTOGRAD_KEYS, BACKEND_BITS, BACKEND_OF_AUTOGRAD,
                   NUM_RUNTIME_KEYS, DispatchKey, K, bit, highest, parse_key)
from .schema import parse_schema

PLAIN, KEYSET, BOXED, BOXED_KEYSET = "plain", "keyset", "boxed", "boxed_keyset"


class _Fallthrough:
    """Registering this on a key makes the dispatcher skip the key for the op (or for every op)."""

    def __repr__(self):
        return "fallthrough_kernel"


FALLTHROUGH = _Fallthrough()
_RUNTIME_KEYS = [DispatchKey(i) for i in range(NUM_RUNTIME_KEYS)]

# runtime key -> Kernel registered with Library.fallback (FALLTHROUGH for fallthroughs)
_backend_fallbacks = {}
# "ns::name.overload" -> OperatorEntry
_operators = {}
_registry_lock = threading.RLock()


class Kernel:
    __slots__ = ("fn", "kind", "debug", "owner")

    def __init__(self, fn, kind, debug, owner=None):
        self.fn, self.kind, self.debug, self.owner = fn, kind, debug, owner

    def __repr__(self):
        return f"Kernel({self.debug})"


class OperatorEntry:
    """Everything the dispatcher knows about one overload."""

    def __init__(self, qualname, schema, tags=(), debug=""):
        self.qualname = qualname  # "aten::add.Tensor"
        self.schema = schema
        self.tags = tuple(tags)
        self.debug = debug
        self.kernels = {}  # DispatchKey (runtime or alias) -> [Kernel], last one wins
        self.cache = {}  # raw key set -> callable(*args), for calls entering the dispatcher
        self.rcache = {}  # the same for redispatches (kept apart so observers can tell them apart)
        self._table = {}
        self._mask = None
        self.overload = None  # the OpOverload, set by ember._ops
        self.device_check = True  # False for ops declared "device_check: NoCheck" (copy_, _to_copy)
        ns, _, rest = qualname.partition("::")
        self.namespace = ns

    # -- registration -------------------------------------------------------------------------
    def register(self, key, kernel):
        key = parse_key(key)
        stack = self.kernels.setdefault(key, [])
        stack.append(kernel)
        self.invalidate()
        return kernel

    def deregister(self, key, kernel):
        stack = self.kernels.get(key, [])
        if kernel in stack:
            stack.remove(kernel)
            if not stack:
                del self.kernels[key]
        self.invalidate()

    def invalidate(self):
        self.cache.clear()
        self.rcache.clear()
        self._table.clear()
        self._mask = None

    def has_kernel(self, key):
        return bool(self.kernels.get(key))

    def _kernel(self, key):
        stack = self.kernels.get(key)
        return stack[-1] if stack else None

    # -- the table ----------------------------------------------------------------------------
    def _slot(self, key):
        """(Kernel or FALLTHROUGH or None, how it was found) for one runtime key."""
        r = self._table.get(key)
        if r is None:
            r = self._table[key] = self._compute_slot(key)
        return r

    def _compute_slot(self, key):
        k = self._kernel(key)
        if k is not None:
            return k, "kernel"
        if key == K.Undefined:
            for alias in (K.CompositeExplicitAutogradNonFunctional, K.CompositeExplicitAutograd,
                          K.CompositeImplicitAutograd):
                k = self._kernel(alias)
                if k is not None:
                    return k, "math kernel" if alias == K.CompositeImplicitAutograd else "default backend kernel"
            return None, "missing"
        for alias in (K.CompositeExplicitAutogradNonFunctional, K.CompositeExplicitAutograd):
            if key in ALIAS_EXPANSION[alias]:
                k = self._kernel(alias)
                if k is not None:
                    return k, "default backend kernel"
        if key in ALIAS_EXPANSION[K.CompositeImplicitAutograd]:
            k = self._kernel(K.CompositeImplicitAutograd)
            if k is not None:
                if key in AUTOGRAD_KEYS:
                    backend = BACKEND_OF_AUTOGRAD.get(key)
                    if key == K.AutogradOther:
                        has_backend = False
                    else:
                        has_backend = (backend is not None and self._kernel(backend) is not None) \
                            or self._kernel(K.CompositeExplicitAutograd) is not None \
                            or self._kernel(K.CompositeExplicitAutogradNonFunctional) is not None
                    if not has_backend:
                        return k, "math kernel"
                else:
                    return k, "math kernel"
        if key in AUTOGRAD_KEYS:
            k = self._kernel(K.Autograd)
            if k is not None:
                return k, "autograd kernel"
        fb = _backend_fallbacks.get(key)
        if fb is not None:
            return fb, "backend fallback"
        return None, "missing"

    def mask(self):
        m = self._mask
        if m is None:
            m = 0
            for key in _RUNTIME_KEYS:
                k, _ = self._slot(key)
                if not (k is not None and k.fn is FALLTHROUGH):
                    m |= bit(key)
            self._mask = m
        return m

    # -- calling ------------------------------------------------------------------------------
    def resolve(self, ks, label="call"):
        """The callable for a key set (wrapped for observers while any is registered), cached."""
        masked = ks & self.mask()
        key = highest(masked)
        k, _ = self._slot(key)
        if k is None or k.fn is FALLTHROUGH:
            raise _missing_kernel(self, key)
        fn, kind = k.fn, k.kind
        if kind == PLAIN:
            call = fn
        elif kind == KEYSET:
            # a generated autograd kernel can bind itself to the key set (and the kernel below
            # it) once; any other keyset kernel gets the key set as its first argument
            bind = getattr(fn, "_bind", None)
            call = bind(masked) if bind is not None else functools.partial(fn, masked)
        else:
            call = _boxed(fn, self, () if kind == BOXED else (masked,))
        if _observers:
            call = _observed(call, label, self, key)
        (self.cache if label == "call" else self.rcache)[ks] = call
        return call

    def redispatch(self, ks, *args):
        ks = getattr(ks, "repr_", ks)
        call = self.rcache.get(ks)
        if call is None:
            call = self.resolve(ks, "redispatch")
        return call(*args)


def _boxed(fn, entry, extra):
    """Adapt a boxed kernel ``fn(op, [keyset,] *args, **kwargs)`` to the positional calling
    convention: keyword-only schema arguments are passed by keyword, as PyTorch's boxed
    fallbacks receive them."""
    args = entry.schema.arguments
    npos = sum(1 for a in args if not a.kwarg_only)
    kw_names = [a.name for a in args if a.kwarg_only]
    op = entry.overload

    def boxed(*values):
        return fn(op, *extra, *values[:npos], **dict(zip(kw_names, values[npos:])))
    return boxed


def _missing_kernel(entry, key):
    available = sorted({str(k) for k in entry.kernels})
    if key == K.Undefined:
        return NotImplementedError(
            f"There were no tensor arguments to this function (e.g., you passed an empty list of "
            f"Tensors), but no fallback function is registered for schema {entry.qualname}. "
            f"This usually means that this function requires a non-empty list of Tensors, or that "
            f"you (the operator writer) forgot to register a fallback function. Available functions "
            f"are [{', '.join(available)}].")
    return NotImplementedError(
        f"Could not run '{entry.qualname}' with arguments from the '{key.name}' backend. This "
        f"could be because the operator doesn't exist for this backend. '{entry.qualname}' is only "
        f"available for these backends: [{', '.join(available)}].")


# ---------------------------------------------------------------------------------------------
# The generated call path.

def _list_ks(ts):
    ks = 0
    for t in ts:
        if t is not None:
            ks |= t._keyset
    return ks


def check_same_device(entry, args):
    """Called only when a key set holds two backends: PyTorch allows 0-dim CPU tensors to mix."""
    devs = []
    for a in args:
        items = a if isinstance(a, (list, tuple)) else (a,)
        for t in items:
            d = getattr(t, "_device", None)
            if d is not None and not (d.type == "cpu" and not t._size):
                if d not in devs:
                    devs.append(d)
    if len(devs) > 1:
        raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two "
                           f"devices, {devs[0]} and {devs[1]}! (when checking arguments for "
                           f"{entry.qualname})")


def make_call(entry):
    """``call(*args)`` for one overload: extract key sets, apply TLS, look up the cache, call.

    The code depends only on the schema's shape (how many arguments, which are Tensors or Tensor
    lists), so it is compiled once per shape and bound to each entry through a closure factory."""
    kinds = tuple("L" if a.base == "Tensor" and a.is_list else "T" if a.base == "Tensor" else "-"
                  for a in entry.schema.arguments)
    factory = _CALL_FACTORIES.get(kinds)
    if factory is None:
        factory = _CALL_FACTORIES[kinds] = _compile_call_factory(kinds)
    call = factory(entry.cache, entry.resolve, entry)
    call.__qualname__ = call.__name__ = entry.qualname
    return call


_CALL_FACTORIES = {}


def _compile_call_factory(kinds):
    names = [f"a{i}" for i in range(len(kinds))]
    parts = [f"_list_ks({n})" if k == "L" else f"getattr({n}, '_keyset', 0)"
             for n, k in zip(names, kinds) if k != "-"]
    extract = " | ".join(parts) if parts else "0"
    params = ", ".join(names)
    src = (
        f"def factory(_cache, _resolve, _entry):\n"
        f"    def call({params}):\n"
        f"        ks = (({extract}) | _state.included) & ~_state.excluded\n"
        f"        b = ks & {BACKEND_BITS}\n"
        f"        if b & (b - 1) and _entry.device_check:\n"
        f"            _check_same_device(_entry, ({params}{',' if len(names) == 1 else ''}))\n"
        f"        k = _cache.get(ks)\n"
        f"        if k is None:\n"
        f"            k = _resolve(ks)\n"
        f"        return k({params})\n"
        f"    call._source = _SRC\n"
        f"    return call\n"
    )
    ns = {"_list_ks": _list_ks, "_state": tls.state, "_check_same_device": check_same_device,
          "_SRC": src}
    compile_source(src, f"<ember dispatch call factory {''.join(kinds)}>", ns)
    return ns["factory"]


# ---------------------------------------------------------------------------------------------
# Registry-wide operations.

def get_entry(qualname):
    return _operators.get(qualname)


def define(qualname, schema_text, tags=(), debug=""):
    with _registry_lock:
        if qualname in _operators:
            raise RuntimeError(f"Tried to register an operator ({qualname}) with the same name and "
                               f"overload name multiple times.")
        schema = parse_schema(schema_text)
        schema.namespace = qualname.partition("::")[0]
        entry = OperatorEntry(qualname, schema, tags, debug)
        _operators[qualname] = entry
        return entry


def undefine(qualname):
    with _registry_lock:
        _operators.pop(qualname, None)


def register_fallback(key, kernel):
    key = parse_key(key)
    _backend_fallbacks[key] = kernel
    _invalidate_all()


def deregister_fallback(key, kernel):
    key = parse_key(key)
    if _backend_fallbacks.get(key) is kernel:
        del _backend_fallbacks[key]
    _invalidate_all()


def _invalidate_all():
    for e in _operators.values():
        e.invalidate()


# ---------------------------------------------------------------------------------------------
# Observers: objects told about every operator call (the dispatch trace, the profiler).
#
# An observer has ``enter(entry, key, label, args) -> token`` and ``exit(token)``; ``label`` is
# "call" for a call entering the dispatcher and "redispatch" for a kernel redispatching below
# itself; one with a true ``calls_only`` attribute (the profiler: PyTorch's RecordFunction sees
# operator calls, not redispatches) is told about calls only. While an observer is registered,
# the cached callables it watches are wrapped; with none, the cached callables are the kernels
# themselves, so an idle observer costs nothing per op.

_observers = []


def add_observer(obs):
    _observers.append(obs)
    _invalidate_all()


def remove_observer(obs):
    if obs in _observers:
        _observers.remove(obs)
    _invalidate_all()


def _observed(call, label, entry, key):
    observers = tuple(o for o in _observers
                      if label == "call" or not getattr(o, "calls_only", False))
    if not observers:
        return call
    if len(observers) == 1:  # the common case (a profiler), without the loops
        enter, exit_ = observers[0].enter, observers[0].exit

        def observed_once(*args):
            token = enter(entry, key, label, args)
            try:
                return call(*args)
            finally:
                exit_(token)
        return observed_once

    def observed(*args):
        tokens = [o.enter(entry, key, label, args) for o in observers]
        try:
            return call(*args)
        finally:
            for o, tok in zip(reversed(observers), reversed(tokens)):
                o.exit(tok)
    return observed


class DispatchTrace:
    """TORCH_SHOW_DISPATCH_TRACE=1 (or EMBER_SHOW_DISPATCH_TRACE=1): one line per call and
    redispatch, indented by nesting depth, in PyTorch's format."""

    def __init__(self, stream=None):
        self.stream = stream
        self._depth = threading.local()

    def enter(self, entry, key, label, args):
        depth = getattr(self._depth, "n", 0)
        (self.stream or sys.stderr).write(
            f"{' ' * depth}[{label}] op=[{entry.qualname}], key=[{key.name}]\n")
        self._depth.n = depth + 1

    def exit(self, token):
        self._depth.n -= 1


_trace = [None]


def set_dispatch_trace(enabled, stream=None):
    """Turn the dispatch trace on or off (process-wide)."""
    if _trace[0] is not None:
        remove_observer(_trace[0])
        _trace[0] = None
    if enabled:
        _trace[0] = DispatchTrace(stream)
        add_observer(_trace[0])


if os.environ.get("TORCH_SHOW_DISPATCH_TRACE") or os.environ.get("EMBER_SHOW_DISPATCH_TRACE"):
    set_dispatch_trace(True)


# ---------------------------------------------------------------------------------------------
# Inspection: ember._C._dispatch_dump / _dispatch_dump_table.

def dump(qualname):
    entry = _lookup(qualname)
    lines = [f"name: {entry.qualname}", f"schema: {entry.schema}",
             f"debug: {entry.debug or 'registered through ember.library'}",
             "alias analysis kind: FROM_SCHEMA"]
    for key in sorted(entry.kernels, key=lambda k: (k >= 100, k)):
        for kern in entry.kernels[key]:
            lines.append(f"{key.name}: {kern.debug}")
    return "\n".join(lines) + "\n"


def dump_table(qualname):
    entry = _lookup(qualname)
    lines = []
    for key in [K.Undefined] + _RUNTIME_KEYS:
        k, how = entry._slot(key)
        if k is None:
            continue
        what = "fallthrough" if k.fn is FALLTHROUGH else k.debug
        lines.append(f"{key.name}: {what} [{how}]")
    return "\n".join(lines) + "\n"


def _lookup(qualname):
    if "." not in qualname.partition("::")[2]:
        qualname_try = qualname
        entry = _operators.get(qualname_try) or _operators.get(qualname + ".default")
    else:
        entry = _operators.get(qualname)
        if entry is None and qualname.endswith(".default"):
            entry = _operators.get(qualname[: -len(".default")])
    if entry is None:
        raise RuntimeError(f"operator {qualname} does not exist")
    return entry
