"""The ``Functionalize`` dispatch key: ``FunctionalTensorWrapper`` and its kernel.

PyTorch's runtime functionalization (aten/src/ATen/FunctionalTensorWrapper.cpp,
FunctionalStorageImpl.cpp, FunctionalizeFallbackKernel.cpp), in Python:

* a :class:`FunctionalTensorWrapper` holds a ``value`` (a plain tensor, or a wrapper of a lower
  level) and shares a :class:`FunctionalStorage` with every view of it: the *alias group*. The
  storage keeps the group's ``base`` value, the updates not yet applied to it, and a generation
  counter bumped by every update;
* a **view op** on a wrapper runs the view (``view_copy`` and friends when views are not
  reapplied) on the value and returns a new wrapper of the same storage whose ``view_metas``
  (the chain of :class:`ViewMeta` from the base) grows by one. The input is *not* synced first,
  as in PyTorch: a stale view is regenerated when it is next used;
* an **in-place or out= op** runs its functional form (``add_`` -> ``add``, ``copy_`` -> ``copy``,
  ``zero_`` -> ``zero``, ``add.out`` -> ``add.Tensor``) on the synced values, then *replaces* the
  mutated wrapper's value, *commits* the new value to the storage as an update (with the
  wrapper's view chain) and *syncs* the wrapper;
* **sync**: a wrapper older than its storage applies the storage's pending updates to the base
  (each update walks its view chain back with the inverse of each view: ``slice`` ->
  ``slice_scatter``, ``view`` -> ``view`` to the base's sizes, ``transpose`` -> ``transpose``...)
  and regenerates its value by replaying its own view chain on the new base;
* an **in-place view op** (``transpose_``, ``unsqueeze_``, ``t_``, ``squeeze_``, ``as_strided_``:
  the ops tagged ``inplace_view``) appends to the wrapper's own view chain;
* any **other op** syncs and unwraps its wrapper arguments, runs, and wraps tensor results in
  fresh storages; a factory op (no tensor argument) reaches the key while a functionalize layer
  has it in the thread's included set, and its result is wrapped too.

Wrappers carry a ``level``. The kernel handles the highest level among its arguments, and runs
what it calls with that level (and those above) switched off, so wrappers of a lower level (a
nested ``functionalize``) are functionalized by the same kernel in turn; plain values never
re-enter it. Nothing here touches the dispatcher's call path: with no wrapper and no active
layer the key is in no key set, so eager ops pay nothing.

``ember._to_functional_tensor`` / ``_from_functional_tensor`` / ``_sync`` /
``_is_functional_tensor`` / ``_enable_functionalization`` / ``_disable_functionalization`` are
torch's functions of those names.
"""
import contextlib
import threading

from .._dispatch import dispatcher as _d
from .._dispatch import tls as _dtls
from .._dispatch.keys import AUTOGRAD_BITS, K, below, bit
from .._ops.overload import ops
from .._tensor import Tensor, _PYTHON_KEYS
from .wrapper_tensor import WrapperTensor, new_wrapper

__all__ = ["FunctionalTensorWrapper", "to_functional", "from_functional", "sync",
           "is_functional", "install", "_to_functional_tensor", "_from_functional_tensor", "_sync",
           "_is_functional_tensor", "_enable_functionalization", "_disable_functionalization",
           "_functionalize_sync", "_functionalize_has_data_mutation",
           "_functionalize_has_metadata_mutation", "_functionalize_replace",
           "_functionalize_commit_update"]

aten = ops.aten  # ops resolve when called
_FUNC = bit(K.Functionalize)
# A wrapper keeps its value's keys at and below Functionalize (backends), ADInplaceOrView and
# the conjugate and negative bits (as PyTorch's wrapper does: ops on it resolve them above the
# Functionalize kernel); the Python keys, the functorch keys and autograd stay on the value.
# Autograd records on the values (as under torch.func.functionalize, whose outputs carry the
# inner graph): while a layer is active the autograd keys are excluded at the top, so an op
# mixing a wrapper with a plain tensor that requires grad does not record on the wrapper, and
# the kernel switches them back on for the ops it runs on the values.
_KEEP = ((below(K.Functionalize) & ~_PYTHON_KEYS) | bit(K.ADInplaceOrView) | bit(K.Conjugate)
         | bit(K.Negative))
_OUTER_KEYS = AUTOGRAD_BITS | bit(K.FuncTorchVmapMode)


# ---------------------------------------------------------------------------------------------
# Layers: which levels are functionalizing now.

class FunctionalizeLayer:
    __slots__ = ("level", "reapply_views")
    kind = "functionalize"

    def __init__(self, level, reapply_views):
        self.level, self.reapply_views = level, reapply_views

    def __repr__(self):
        return f"FunctionalizeLayer(level={self.level}, reapply_views={self.reapply_views})"


class _TLS(threading.local):
    def __init__(self):
        self.layers = []  # active FunctionalizeLayers, innermost last
        self.ceiling = None  # levels >= this are switched off (inside the kernel of that level)
        self.saved_outer = None  # the _OUTER_KEYS bits of the excluded set before a layer


_tls = _TLS()


def _active():
    c = _tls.ceiling
    return [la for la in _tls.layers if c is None or la.level < c]


def _sync_include():
    """While an active layer is on, Functionalize is in the included set and the keys of the
    transforms around it (autograd, vmap's randomness mode) in the excluded set, so an op meets
    functionalization first (see _KEEP); otherwise both sets are as they were."""
    st = _dtls.state
    if _active():
        if _tls.saved_outer is None:
            _tls.saved_outer = st.excluded & _OUTER_KEYS
        st.included |= _FUNC
        st.excluded |= _OUTER_KEYS
    else:
        st.included &= ~_FUNC
        if _tls.saved_outer is not None:
            st.excluded = (st.excluded & ~_OUTER_KEYS) | _tls.saved_outer
            _tls.saved_outer = None


@contextlib.contextmanager
def push_layer(level, reapply_views):
    layer = FunctionalizeLayer(level, reapply_views)
    _tls.layers.append(layer)
    _sync_include()
    try:
        yield layer
    finally:
        _tls.layers.remove(layer)
        _sync_include()


@contextlib.contextmanager
def _below(level):
    """Run with ``level`` and every level above it switched off."""
    saved = _tls.ceiling, _tls.saved_outer, _dtls.state.included, _dtls.state.excluded
    _tls.ceiling = level if saved[0] is None else min(saved[0], level)
    _sync_include()
    try:
        yield
    finally:
        _tls.ceiling, _tls.saved_outer, _dtls.state.included, _dtls.state.excluded = saved


def _reapply_views(level):
    for la in _tls.layers:
        if la.level == level:
            return la.reapply_views
    return _default_reapply[0]


_default_reapply = [False]  # _enable_functionalization(reapply_views=...) for level-0 wrappers


# ---------------------------------------------------------------------------------------------
# Storage, view metas, wrappers.

class FunctionalStorage:
    """One alias group: its base value, the updates not yet applied to it, a generation."""
    __slots__ = ("base", "updates", "generation")

    def __init__(self, base):
        self.base, self.updates, self.generation = base, [], 0

    def add_update(self, new_val, view_metas):
        self.updates.append((new_val, view_metas))
        self.generation += 1

    def apply_updates(self, reapply):
        for new_val, metas in self.updates:
            self.base = _apply_update(self.base, new_val, metas, reapply)
        self.updates = []


class ViewMeta:
    """One view op of a chain: ``func(base, *args)`` (``[out_index]`` of a multi-output view)."""
    __slots__ = ("func", "args", "out_index")

    def __init__(self, func, args, out_index=None):
        self.func, self.args, self.out_index = func, tuple(args), out_index

    def forward(self, base, reapply):
        func = self.func if reapply else (_copy_variant(self.func) or self.func)
        out = func._call(base, *self.args)
        return out if self.out_index is None else out[self.out_index]

    def reverse(self, base, mutated_view, reapply):
        return _inverse(self, base, mutated_view, reapply)

    def __repr__(self):
        return f"ViewMeta({self.func}, {self.args}, {self.out_index})"


def _apply_update(base, new_val, metas, reapply):
    """``base`` with the view ``metas`` of it replaced by ``new_val`` (FunctionalStorageImpl's
    apply_update): the views along the chain, then the inverses back up it."""
    if not metas:
        return new_val
    vals = [base]
    for m in metas[:-1]:
        vals.append(m.forward(vals[-1], reapply))
    t = new_val
    for i in range(len(metas) - 1, -1, -1):
        t = metas[i].reverse(vals[i], t, reapply)
    return t


class FunctionalTensorWrapper(WrapperTensor):
    """A tensor whose mutations are recorded as new values (see the module docstring)."""
    __slots__ = ("_fstorage", "_view_metas", "_generation", "_has_metadata_mutation")

    @property
    def grad(self):
        return self._value.grad

    # -- data is the synced value's ------------------------------------------------------------
    def _nd(self):
        sync(self)
        return self._value._nd()

    def __repr__(self, *, tensor_contents=None):
        sync(self)
        return f"_to_functional_tensor({self._value!r})"  # PyTorch's repr


def _set_value(t, value):
    """(Re)point ``t`` at ``value``: its metadata follows (PyTorch's replace_)."""
    t._value = value
    t._size = value._size
    t._stride = value._stride
    t._offset = value._offset
    t._storage_ = value._storage_
    t._dtype = value._dtype
    t._device = value._device
    t._keyset = (value._keyset & _KEEP) | _FUNC


def _make(value, storage, view_metas, generation, level):
    t = new_wrapper(FunctionalTensorWrapper, level)
    _set_value(t, value)
    t._fstorage = storage
    t._view_metas = view_metas
    t._generation = generation
    t._has_metadata_mutation = False
    t._vc = [0]
    return t


def to_functional(value, level=0):
    """A wrapper of ``value`` in a fresh alias group (``torch._to_functional_tensor``)."""
    if not isinstance(value, Tensor):
        raise RuntimeError("_to_functional_tensor expects a Tensor")
    return _make(value, FunctionalStorage(value), (), 0, level)


def is_functional(t):
    return t.__class__ is FunctionalTensorWrapper


def _expect(t):
    if t.__class__ is not FunctionalTensorWrapper:
        raise RuntimeError("Expected a FunctionalTensorWrapper")
    return t


def from_functional(t):
    """The wrapper's current value, without syncing (``torch._from_functional_tensor``)."""
    return _expect(t)._value


def sync(t):
    """Bring ``t`` up to date with its alias group (``torch._sync``)."""
    if t.__class__ is not FunctionalTensorWrapper:
        return
    s = t._fstorage
    if t._generation == s.generation:
        return
    reapply = _reapply_views(t._level)
    with _below(t._level):
        s.apply_updates(reapply)
        v = s.base
        for m in t._view_metas:
            v = m.forward(v, reapply)
    _set_value(t, v)
    t._generation = s.generation


def _replace_commit_sync(t, new):
    """An in-place or out= op wrote ``new`` into ``t``: replace_, commit_update, sync."""
    if new._dtype is not t._dtype and t._size == new._size:
        new = aten._to_copy.default._call(new, t._dtype, None, None, None, False, None)
    _set_value(t, new)
    t._fstorage.add_update(new, t._view_metas)
    sync(t)


# ---------------------------------------------------------------------------------------------
# View inverses (PyTorch's FunctionalInverses.cpp).

def _copy_variant(func):
    """``view.default`` -> ``view_copy.default`` (None when there is no copy form)."""
    memo = _copy_variant.memo
    if func in memo:
        return memo[func]
    name = func._schema.base_name
    packet = getattr(aten, f"{name}_copy", None) if name != "_unsafe_view" else aten.view_copy
    found = None
    if packet is not None:
        ov = func._overloadname if name != "_unsafe_view" else "default"
        if ov in packet.overloads():
            found = getattr(packet, ov)
    memo[func] = found
    return found


_copy_variant.memo = {}


def _v(op, reapply):
    """``op`` (a view) or its ``_copy`` form."""
    return op if reapply else (_copy_variant(op) or op)


def _inverse(meta, base, mv, reapply):
    name = meta.func._schema.base_name
    args = meta.args
    if meta.out_index is not None:
        return _inverse_multi(meta, base, mv)
    if name in ("view", "_unsafe_view", "reshape", "view_as", "flatten", "unflatten") \
            and meta.func._overloadname != "dtype":
        return _v(aten.view.default, reapply)._call(mv, list(base._size))
    if name == "view" and meta.func._overloadname == "dtype":
        return _v(aten.view.dtype, reapply)._call(mv, base._dtype)
    if name == "slice":
        return aten.slice_scatter.default._call(base, mv, *args)
    if name == "select":
        return aten.select_scatter.default._call(base, mv, *args)
    if name == "diagonal":
        return aten.diagonal_scatter.default._call(base, mv, *args)
    if name == "as_strided":
        return aten.as_strided_scatter.default._call(base, mv, *args)
    if name == "transpose":
        return _v(aten.transpose.int, reapply)._call(mv, *args)
    if name == "t":
        return _v(aten.t.default, reapply)._call(mv)
    if name == "permute":
        dims = [d % len(args[0]) for d in args[0]]
        inv = [0] * len(dims)
        for i, d in enumerate(dims):
            inv[d] = i
        return _v(aten.permute.default, reapply)._call(mv, inv)
    if name == "unsqueeze":
        return _v(aten.squeeze.dim, reapply)._call(mv, args[0])
    if name == "squeeze":  # unsqueeze back every size-1 dim of the base it removed
        out = mv
        for d in range(len(base._size)):
            if _squeezed(meta, d, base):
                out = _v(aten.unsqueeze.default, reapply)._call(out, d)
        return out
    if name in ("alias", "detach", "lift_fresh"):
        return mv
    if name == "expand":
        return aten.sum_to_size.default._call(mv, list(base._size)) \
            if hasattr(aten, "sum_to_size") else _sum_to(mv, base._size)
    if name in ("_conj", "_neg_view"):  # (each its own inverse)
        return _v(meta.func, reapply)._call(mv)
    if name == "view_as_real":
        return _v(aten.view_as_complex.default, reapply)._call(mv)
    if name == "view_as_complex":
        return _v(aten.view_as_real.default, reapply)._call(mv)
    # any other view: write through its strides, taken from the real view of the base
    real = meta.func._call(base, *args)
    if meta.out_index is not None:
        real = real[meta.out_index]
    return aten.as_strided_scatter.default._call(
        base, mv, list(real._size), list(real._stride), real._offset - base._offset)


def _squeezed(meta, d, base):
    """Whether squeeze ``meta`` removed dim ``d`` of ``base``."""
    if base._size[d] != 1:
        return False
    ov = meta.func._overloadname
    if ov == "default":
        return True
    dims = [meta.args[0]] if ov == "dim" else list(meta.args[0])
    n = len(base._size)
    return d in [x % max(n, 1) for x in dims]


def _sum_to(t, size):
    lead = len(t._size) - len(size)
    dims = list(range(lead)) + [lead + i for i, n in enumerate(size)
                                if n == 1 and t._size[lead + i] != 1]
    if dims:
        t = aten.sum.dim_IntList._call(t, dims, True, None)
    return aten.view.default._call(t, list(size)) if lead else t


def _inverse_multi(meta, base, mv):
    """The inverse of one piece of split / split_with_sizes / unbind / chunk."""
    name, args, k = meta.func._schema.base_name, meta.args, meta.out_index
    if name in ("unbind", "unbind_copy"):
        dim = args[0] if args else 0
        return aten.select_scatter.default._call(base, mv, dim, k)
    dim = args[1] if len(args) > 1 else 0
    dim %= max(len(base._size), 1)
    size = base._size[dim]
    if name in ("split_with_sizes", "unsafe_split_with_sizes"):
        lens = list(args[0])
    elif name in ("split", "unsafe_split"):
        step = args[0]
        lens = [min(step, size - i) for i in range(0, size, step)] or [0]
    else:
        real = meta.func._call(base, *args)[k]
        return aten.as_strided_scatter.default._call(
            base, mv, list(real._size), list(real._stride), real._offset - base._offset)
    start = sum(lens[:k])
    return aten.slice_scatter.default._call(base, mv, dim, start, start + lens[k], 1)


# ---------------------------------------------------------------------------------------------
# The kernel.

def _functional_overload(op):
    memo = _functional_overload.memo
    if op in memo:
        return memo[op]
    name = op._schema.base_name
    if name == "copy_":
        found = aten.copy.default
    elif name == "zero_":
        found = aten.zero.default
    elif name == "normal_":  # PyTorch's names for these two functional forms
        found = aten.normal_functional.default
    elif op is aten.bernoulli_.float:
        found = aten.bernoulli.p
    else:
        from .functionalize import _functional_overload as find
        found = find(op)
    memo[op] = found
    return found


_functional_overload.memo = {}


def _inplace_view_target(op):
    """The view overload an ``inplace_view`` op (``transpose_``) applies to its input."""
    memo = _inplace_view_target.memo
    if op in memo:
        return memo[op]
    found = None
    packet = getattr(aten, op._schema.base_name[:-1], None)
    if packet is not None:
        want = [(a.name, a.type) for a in op._schema.arguments[1:]]
        for ov in packet.overloads():
            o = getattr(packet, ov)
            if o.is_view and [(a.name, a.type) for a in o._schema.arguments[1:]] == want:
                found = o
                break
    memo[op] = found
    return found


_inplace_view_target.memo = {}


def _level_of(values):
    lvl = None
    for a in values:
        if a.__class__ is FunctionalTensorWrapper:
            if lvl is None or a._level > lvl:
                lvl = a._level
        elif a.__class__ in (list, tuple):
            for t in a:
                if t.__class__ is FunctionalTensorWrapper and (lvl is None or t._level > lvl):
                    lvl = t._level
    return lvl


def _has_tensor(values):
    for a in values:
        if isinstance(a, Tensor):
            return True
        if a.__class__ in (list, tuple) and any(isinstance(t, Tensor) for t in a):
            return True
    return False


def _unwrap(x, level):
    """Sync and unwrap wrappers of ``level`` (lists too); anything else as it is."""
    if x.__class__ is FunctionalTensorWrapper and x._level == level:
        sync(x)
        return x._value
    if x.__class__ in (list, tuple) and any(
            t.__class__ is FunctionalTensorWrapper for t in x):
        return x.__class__(_unwrap(t, level) for t in x)
    return x


def _wrap_fresh(out, level):
    if isinstance(out, Tensor):
        return to_functional(out, level)
    if out.__class__ in (tuple, list):
        return out.__class__(_wrap_fresh(o, level) for o in out)
    return out


def _kernel(op, *args, **kwargs):
    values = list(args) + list(kwargs.values())
    entry = op._entry
    math = entry._kernel(K.CompositeImplicitAutograd)
    if math is not None and entry._kernel(K.CPU) is None and entry._kernel(
            K.CompositeExplicitAutograd) is None:
        # a composite op decomposes on the wrappers, as it would at the autograd key
        return math.fn(*values)
    level = _level_of(values)
    if level is None:
        active = _active()
        if not active:
            return entry.redispatch(below(K.Functionalize), *values)
        level = active[-1].level
        if _has_tensor(values):  # plain tensors only: run the op as it is, on the level below
            with _below(level):
                return op._call(*values)
        # a factory op: its result joins the layer
    reapply = _reapply_views(level)
    schema = op._schema
    with _below(level):
        if "inplace_view" in op.tags:
            return _inplace_view(op, values, level, reapply)
        if schema.is_mutable:
            return _mutation(op, values, level)
        if op.is_view and values and values[0].__class__ is FunctionalTensorWrapper \
                and values[0]._level == level:
            return _view(op, values, level, reapply)
        if schema.base_name == "native_batch_norm" and len(values) >= 6 and values[5] \
                and values[3] is not None and values[4] is not None:
            return _batch_norm(values, level)
        out = op._call(*[_unwrap(v, level) for v in values])
        return _wrap_fresh(out, level)


def _view(op, values, level, reapply):
    self = values[0]
    # the view of the value as it is now (stale or not: PyTorch does not sync here either)
    func = op if reapply else (_copy_variant(op) or op)
    rest = [_unwrap(v, level) for v in values[1:]]
    out = func._call(self._value, *rest)
    # a view starts at generation 0 (PyTorch's view constructor leaves it unset), so a view
    # taken after its storage saw updates is regenerated from the base when first used
    s, metas = self._fstorage, self._view_metas
    if isinstance(out, Tensor):
        return _make(out, s, metas + (ViewMeta(op, rest),), 0, level)
    return out.__class__(_make(o, s, metas + (ViewMeta(op, rest, i),), 0, level)
                         for i, o in enumerate(out))


def _inplace_view(op, values, level, reapply):
    self = values[0]
    target = _inplace_view_target(op)
    if self.__class__ is not FunctionalTensorWrapper or self._level != level or target is None:
        return op._call(*[_unwrap(v, level) for v in values])
    sync(self)  # (unlike a view op, PyTorch's in-place view ops sync their input first)
    meta = ViewMeta(target, [_unwrap(v, level) for v in values[1:]])
    self._view_metas = self._view_metas + (meta,)
    self._has_metadata_mutation = True
    _set_value(self, meta.forward(self._value, reapply))
    return self


def _mutation(op, values, level):
    schema = op._schema
    written = [i for i, a in enumerate(schema.arguments) if a.is_write]
    # the tensors written, one list per written argument (a Tensor[] argument: the _foreach_
    # ops write every tensor of it)
    targets = [list(values[i]) if values[i].__class__ in (list, tuple) else [values[i]]
               for i in written]
    flat_targets = [t for ts in targets for t in ts]
    if not any(t.__class__ is FunctionalTensorWrapper and t._level == level
               for t in flat_targets):
        if any(v.__class__ is FunctionalTensorWrapper for v in values):
            raise RuntimeError(
                "mutating a non-functional tensor with a functional tensor is not allowed. "
                "Please ensure that all of your inputs are wrapped inside of a functionalize() "
                "call.")
        return op._call(*values)
    functional = _functional_overload(op)
    unwrapped = [_unwrap(v, level) for v in values]
    if functional is None:
        # no functional form in ember (some _foreach_ ops): run the op on fresh copies, which
        # is what PyTorch's generated functional variants do
        for i in written:
            v = unwrapped[i]
            unwrapped[i] = [aten.clone.default._call(t, None) for t in v] \
                if v.__class__ in (list, tuple) else aten.clone.default._call(v, None)
        op._call(*unwrapped)
        new = [t for i in written for t in (unwrapped[i] if unwrapped[i].__class__ is list
                                             else [unwrapped[i]])]
    else:
        if schema.kind_is_out:
            args = [v for v, a in zip(unwrapped, schema.arguments)
                    if not (a.is_write and a.kwarg_only)]
        else:
            args = unwrapped
        out = functional._call(*args)
        outs = [out] if isinstance(out, Tensor) else list(out)
        if len(written) == 1 and values[written[0]].__class__ in (list, tuple):
            new = outs  # one Tensor[] written: the functional op returns its new list
        else:
            new = outs[:len(written)]
    for t, n in zip(flat_targets, new):
        _replace_commit_sync(t, n)
    if not schema.returns:
        return None
    if len(written) == 1:
        return values[written[0]]
    return tuple(values[i] for i in written)


def _batch_norm(values, level):
    """``native_batch_norm`` in training updates its running statistics although its schema
    does not say so (as in PyTorch, which decomposes it for functionalization): run the
    functional form and write the new statistics into the running-stat wrappers."""
    x, w, b, rm, rv, training, momentum, eps = values[:8]
    u = [_unwrap(v, level) for v in values[:8]]
    out, mean, rstd, new_rm, new_rv = aten._native_batch_norm_legit_functional.default._call(*u)
    for t, n in ((rm, new_rm), (rv, new_rv)):
        if t.__class__ is FunctionalTensorWrapper and t._level == level:
            _replace_commit_sync(t, n)
        else:
            aten.copy_.default._call(t, n, False)
    return _wrap_fresh((out, mean, rstd), level)


def install():
    """Register the kernel as the Functionalize fallback (once, at ``import ember``)."""
    _d.register_fallback(K.Functionalize, _d.Kernel(
        _kernel, _d.BOXED, "Functionalize fallback (ember/_functorch/functional_wrapper.py)"))


# ---------------------------------------------------------------------------------------------
# torch's names.

def _to_functional_tensor(t):
    return to_functional(t, 0)


def _from_functional_tensor(t):
    return from_functional(t)


def _sync(t):
    sync(t)


def _is_functional_tensor(t):
    return is_functional(t)


def _functionalize_sync(t):
    sync(t)


def _functionalize_has_data_mutation(t):
    """Whether ``t``'s alias group saw a data mutation (its storage's generation moved)."""
    return _expect(t)._fstorage.generation > 0


def _functionalize_has_metadata_mutation(t):
    """Whether ``t`` went through an in-place view op (``transpose_``...)."""
    return _expect(t)._has_metadata_mutation


def _functionalize_replace(t, other):
    """PyTorch's replace_: ``t`` holds ``other`` now (committed by _functionalize_commit_update)."""
    _set_value(_expect(t), other)


def _functionalize_commit_update(t):
    _expect(t)._fstorage.add_update(t._value, t._view_metas)


def _enable_functionalization(*, reapply_views=False):
    """Functionalize factory ops too, until ``_disable_functionalization`` (level-0 wrappers)."""
    _default_reapply[0] = reapply_views
    if not any(la.level == 0 for la in _tls.layers):
        _tls.layers.insert(0, FunctionalizeLayer(0, reapply_views))
    _sync_include()


def _disable_functionalization():
    _tls.layers[:] = [la for la in _tls.layers if la.level != 0]
    _default_reapply[0] = False
    _sync_include()
