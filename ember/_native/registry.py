"""Override graphs and their routers: which DSL kernels replace an aten op at a dispatch key.

``register_op_override(dsl, "aten", "topk", "CUDA", cond, impl)`` appends a node to the graph of
(``topk``, ``CUDA``). Each graph installs one router kernel at its key (through
``ember.library``): the router tries the enabled nodes in order and runs the first ``impl`` whose
``cond`` holds on the call's arguments, else the kernel that was at the key before it. Disabling
a DSL, an op or a key (the filter state) reinstalls the affected routers without the filtered
nodes; a graph with no enabled node removes its router, so the op is exactly what it was.

``cond`` and ``impl`` take the op's arguments positionally, in schema order (ember's kernel
calling convention). ``op_symbol`` is the op's name with its overload (``"topk"``,
``"add.Tensor"``); a bare name means the default overload.
"""
import logging
import warnings
from dataclasses import dataclass, field

from .._dispatch import dispatcher as _d
from .._dispatch.keys import parse_key

log = logging.getLogger(__name__)

# overrides live at backend keys: a router at Meta or a composite key would be called for fake
# tensors and decompositions, and its fallback would recurse
_DISALLOWED_DISPATCH_KEYS = {"Meta", "CompositeImplicitAutograd", "CompositeExplicitAutograd"}


@dataclass
class _OverrideNode:
    dsl_name: str
    op_symbol: str
    dispatch_key: str
    cond_fn: object
    impl_fn: object
    unconditional_override: bool = False
    active: bool = True


def _as_set(names):
    if names is None:
        return set()
    return {names} if isinstance(names, str) else set(names)


@dataclass
class _FilterState:
    """What is disabled: whole DSLs, ops (across DSLs) and dispatch keys."""

    _dsl_names: set = field(default_factory=set)
    _op_symbols: set = field(default_factory=set)
    _dispatch_keys: set = field(default_factory=set)

    def check_enabled(self, node):
        return not (node.dsl_name in self._dsl_names or node.op_symbol in self._op_symbols
                    or node.dispatch_key in self._dispatch_keys)

    def update(self, dsl_names, op_symbols, dispatch_keys, remove_keys=False):
        for mine, new in ((self._dsl_names, dsl_names), (self._op_symbols, op_symbols),
                          (self._dispatch_keys, dispatch_keys)):
            if remove_keys:
                mine -= _as_set(new)
            else:
                mine |= _as_set(new)


_graphs = {}  # (op_symbol, dispatch_key) -> [_OverrideNode], tried in order
_libraries = {}  # (op_symbol, dispatch_key) -> the ember.library.Library holding the router
_filter_state = _FilterState()


def _entry(op_symbol):
    name = op_symbol if "." in op_symbol else f"{op_symbol}.default"
    qualname = f"aten::{name[:-len('.default')] if name.endswith('.default') else name}"
    entry = _d.get_entry(qualname)
    if entry is None:
        raise ValueError(f"register_op_override: aten::{op_symbol} is not an operator")
    return entry


def register_op_override(backend, lib_symbol, op_symbol, dispatch_key, cond, impl, *,
                         allow_multiple_override=False, unconditional_override=False):
    """Add an override of ``aten::op_symbol`` at ``dispatch_key`` from DSL ``backend`` and
    (re)install that op's router."""
    if lib_symbol != "aten":
        raise ValueError(f'Unsupported lib_symbol (must be "aten", got: "{lib_symbol}"')
    if dispatch_key in _DISALLOWED_DISPATCH_KEYS:
        raise ValueError(f"dispatch_key={dispatch_key!r} is not supported. Overrides must be "
                         f"installed at a backend key (e.g. CPU, CUDA, XPU); the router's fake "
                         f"kernel redispatches to aten and would recurse otherwise.")
    if cond is None:
        if not unconditional_override:
            raise ValueError("cond must be provided unless unconditional_override=True")
        cond = _always_true
    _entry(op_symbol)  # the op must exist
    key = (op_symbol, dispatch_key)
    graph = _graphs.setdefault(key, [])
    if graph and not allow_multiple_override and any(n.dsl_name == backend for n in graph):
        raise RuntimeError(f"{backend} already overrides aten::{op_symbol} at {dispatch_key} "
                           f"(pass allow_multiple_override=True to add another)")
    graph.append(_OverrideNode(backend, op_symbol, dispatch_key, cond, impl,
                               unconditional_override))
    _install(key)


def _always_true(*args, **kwargs):
    return True


def _install(key):
    """Install the router of one graph over its enabled nodes (or none, if none is)."""
    old = _libraries.pop(key, None)
    if old is not None:
        old._destroy()
    nodes = []
    for node in _graphs.get(key, ()):
        node.active = _filter_state.check_enabled(node)
        if node.active:
            nodes.append(node)
    if not nodes:
        return
    op_symbol, dispatch_key = key
    entry = _entry(op_symbol)
    below, _how = entry._compute_slot(parse_key(dispatch_key))

    def router(ks, *args):
        for node in nodes:
            if node.cond_fn(*args):
                return node.impl_fn(*args)
        if below is None:
            raise NotImplementedError(f"aten::{op_symbol}: no kernel at {dispatch_key} below "
                                      f"the DSL overrides and no override applies")
        return _call(below, entry, ks, args)

    from ..library import Library
    lib = Library("aten", "IMPL", dispatch_key)
    with warnings.catch_warnings():  # replacing the native kernel is the point
        warnings.simplefilter("ignore")
        lib.impl(entry.qualname, router, dispatch_key, _kind=_d.KEYSET)
    _libraries[key] = lib


def _call(kernel, entry, ks, args):
    if kernel.kind == _d.PLAIN:
        return kernel.fn(*args)
    if kernel.kind == _d.KEYSET:
        return kernel.fn(ks, *args)
    extra = () if kernel.kind == _d.BOXED else (ks,)
    return _d._boxed(kernel.fn, entry, extra)(*args)


def _affected(dsl_names, op_symbols, dispatch_keys):
    dsl_names, op_symbols, dispatch_keys = (_as_set(dsl_names), _as_set(op_symbols),
                                            _as_set(dispatch_keys))
    return [key for key, nodes in _graphs.items()
            if key[0] in op_symbols or key[1] in dispatch_keys
            or any(n.dsl_name in dsl_names for n in nodes)]


def deregister_op_overrides(*, disable_dsl_names=None, disable_op_symbols=None,
                            disable_dispatch_keys=None):
    """Disable overrides by DSL, op or key; the native kernels come back where nothing
    remains."""
    log.info("De-registering ops by dsl: %s, op_symbol: %s, dispatch_key: %s",
             disable_dsl_names, disable_op_symbols, disable_dispatch_keys)
    _filter_state.update(disable_dsl_names, disable_op_symbols, disable_dispatch_keys)
    for key in _affected(disable_dsl_names, disable_op_symbols, disable_dispatch_keys):
        _install(key)


def reenable_op_overrides(*, enable_dsl_names=None, enable_op_symbols=None,
                          enable_dispatch_keys=None):
    log.info("Re-registering ops by dsl: %s, op_symbol: %s, dispatch_key: %s",
             enable_dsl_names, enable_op_symbols, enable_dispatch_keys)
    _filter_state.update(enable_dsl_names, enable_op_symbols, enable_dispatch_keys,
                         remove_keys=True)
    for key in _affected(enable_dsl_names, enable_op_symbols, enable_dispatch_keys):
        _install(key)


def get_dsl_operations(dsl_name):
    """Sorted op symbols that ``dsl_name`` overrides (enabled or not)."""
    return sorted({op for (op, _key), nodes in _graphs.items()
                   if any(n.dsl_name == dsl_name for n in nodes)})


def _remove_dsl(dsl_name):
    """Forget every override of one DSL (for tests that register a DSL of their own)."""
    for key in list(_graphs):
        _graphs[key] = [n for n in _graphs[key] if n.dsl_name != dsl_name]
        if not _graphs[key]:
            del _graphs[key]
        _install(key)
    _filter_state._dsl_names.discard(dsl_name)


__all__ = ["register_op_override", "deregister_op_overrides", "reenable_op_overrides",
           "get_dsl_operations"]
