"""``custom_op`` and the registrations that make a Python function a first-class operator.

A custom op is defined through a FRAGMENT :class:`ember.library.Library` it owns, so it lives in
the dispatcher like an aten op (``ember.ops.<ns>.<name>``, dispatch traces, ``_dispatch_dump``,
the profiler, dispatch modes). What gets registered, as in PyTorch:

* the implementation on ``CompositeExplicitAutograd`` (every backend), or on each backend key
  named by ``device_types`` / ``register_kernel``;
* a ``Meta`` kernel: the ``register_fake`` function, or until there is one an error saying so;
  FakeTensorMode calls the fake function directly with FakeTensors (:data:`_fake_impls`);
* an ``Autograd`` kernel that wraps the call in a generated ``autograd.Function``
  (``GeneratedBackwardFor_<ns>_<name>_<overload>``) whose backward is the ``register_autograd``
  function, or an error if none was registered.
"""
import functools
import inspect

from .._dispatch import dispatcher as _d
from .._dispatch import tls as _tls
from .._dispatch.keys import DEVICE_TO_BACKEND, K, below
from .fake_impl import meta_ctx_error, set_ctx_getter

# "ns::name.overload" -> fake implementation (register_fake / Library._register_fake)
_fake_impls = {}
_BELOW_AUTOGRAD = below(K.AutogradOther)
_state = _tls.state


def fake_impl_for(op):
    """The registered fake implementation of an OpOverload, or None."""
    return _fake_impls.get(op._entry.qualname) if _fake_impls else None


def python_kernel(entry, fn):
    """Adapt ``fn`` (called as the user wrote it: keyword-only arguments by keyword) to the
    dispatcher's calling convention (every argument positional, in schema order)."""
    args = entry.schema.arguments
    npos = sum(1 for a in args if not a.kwarg_only)
    kw_names = [a.name for a in args if a.kwarg_only]
    if not kw_names:
        return fn

    @functools.wraps(fn)
    def kernel(*values):
        return fn(*values[:npos], **dict(zip(kw_names, values[npos:])))
    return kernel


def takes_positional_call(fn, nargs):
    """Whether ``fn`` accepts ``nargs`` positional arguments (ember's calling convention for
    kernels); None when its signature cannot be read."""
    try:
        params = inspect.signature(fn, follow_wrapped=False).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return True
    return sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params) >= nargs


def boxed_python_kernel(entry, fn):
    """Adapt a Python kernel written for PyTorch's convention (parseIValuesToPyArgsKwargs: the
    positional arguments up to the last one that differs from its default, the keyword-only
    ones that differ from their defaults by keyword) to the dispatcher's positional calls."""
    from .._ops.overload import default_value
    args = entry.schema.arguments
    npos = sum(1 for a in args if not a.kwarg_only)
    names = [a.name for a in args]
    missing = object()
    defaults = [default_value(a) if a.has_default() else missing for a in args]

    def is_default(i, v):
        d = defaults[i]
        return d is not missing and type(v) is type(d) and v == d

    @functools.wraps(fn)
    def kernel(*values):
        end = npos
        while end and is_default(end - 1, values[end - 1]):
            end -= 1
        kwargs = {names[i]: values[i] for i in range(npos, len(values))
                  if not is_default(i, values[i])}
        return fn(*values[:end], **kwargs)
    return kernel


def backend_keys(device_types):
    if device_types is None:
        return ["CompositeExplicitAutograd"]
    if isinstance(device_types, str):
        device_types = [device_types]
    keys = []
    for dt in device_types:
        if dt not in DEVICE_TO_BACKEND:
            raise ValueError(f"Unknown device type {dt!r}")
        keys.append(DEVICE_TO_BACKEND[dt].name)
    return keys


# ---------------------------------------------------------------------------------------------
# Autograd

class AutogradInfo:
    def __init__(self, backward, setup_context):
        self.backward = backward
        self.setup_context = setup_context


def make_autograd_kernel(entry, info_ref):
    """The Autograd-key kernel of a custom op. ``info_ref()`` gives the AutogradInfo (or None
    while no autograd formula is registered)."""
    from ..autograd.function import Function
    op = entry.overload
    name = f"GeneratedBackwardFor_{op._ns}_{op._opname}_{op._overloadname}"
    schema_args = entry.schema.arguments
    npos = sum(1 for a in schema_args if not a.kwarg_only)
    kw_names = [a.name for a in schema_args if a.kwarg_only]

    def forward(below_ks, *values):
        return entry.redispatch(below_ks, *values)

    def setup_context(ctx, inputs, output):
        info = info_ref()
        if info is not None and info.setup_context is not None:
            # as PyTorch calls it: by keyword, the keyword-only arguments apart when the schema
            # has any (and then the backward returns gradients for the others only)
            values = tuple(inputs[1:])
            if kw_names:
                info.setup_context(ctx=ctx, inputs=values[:npos],
                                   keyword_only_inputs=dict(zip(kw_names, values[npos:])),
                                   output=output)
            else:
                info.setup_context(ctx=ctx, inputs=values, output=output)

    def backward(ctx, *grads):
        info = info_ref()
        if info is None:
            raise RuntimeError(f"Trying to backward through {op} but no autograd formula was "
                               f"registered. Please use register_autograd to add one.")
        result = info.backward(ctx, *grads)
        if not isinstance(result, tuple):
            result = (result,)
        if len(result) != npos:
            raise RuntimeError(f"{op}: expected the backward function to return {npos} "
                               f"gradients (one per input, None for non-Tensor inputs), got "
                               f"{len(result)}")
        return (None,) + result + (None,) * len(kw_names)

    fn_cls = type(name, (Function,), {"forward": staticmethod(forward),
                                      "setup_context": staticmethod(setup_context),
                                      "backward": staticmethod(backward)})

    def autograd_kernel(ks, *values):
        below_ks = ks & _BELOW_AUTOGRAD
        if _state.grad_enabled and any(_requires_grad(v) for v in values):
            return fn_cls.apply(below_ks, *values)
        return entry.redispatch(below_ks, *values)
    return autograd_kernel


def _requires_grad(v):
    if isinstance(v, (list, tuple)):
        return any(_requires_grad(x) for x in v)
    return getattr(v, "_requires_grad", False)


# ---------------------------------------------------------------------------------------------
# vmap and autocast rules

def vmap_kernel(entry, rule_ref):
    """The FuncTorchBatched kernel of an op with a ``register_vmap`` rule (``rule_ref()``)."""
    from .._functorch.user_rules import run_vmap_rule
    args = entry.schema.arguments
    npos = sum(1 for a in args if not a.kwarg_only)
    kw_names = [a.name for a in args if a.kwarg_only]

    def kernel(*values):
        return run_vmap_rule(rule_ref(), values[:npos], dict(zip(kw_names, values[npos:])))
    return kernel


def autocast_kernel(entry, device_type, cast_inputs):
    """(dispatch key name, kernel) of a ``register_autocast`` rule, after PyTorch's checks."""
    from ..amp.autocast_mode import is_autocast_available
    from ..amp.policies import _AUTOCAST_KEY_OF_DEVICE, cast_inputs_kernel
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if not is_autocast_available(device_type) or device_type not in _AUTOCAST_KEY_OF_DEVICE:
        raise ValueError(f"Device type '{device_type}' does not support autocast.")
    return (_AUTOCAST_KEY_OF_DEVICE[device_type].name,
            cast_inputs_kernel(entry, device_type, cast_inputs))


# ---------------------------------------------------------------------------------------------
# CustomOpDef

# qualname -> its CustomOpDef (PyTorch's OPDEFS): the module-level ``register_*`` functions,
# given an op by name or overload, go through its CustomOpDef as PyTorch's do.
OPDEFS = {}


class CustomOpDef:
    """What ``@ember.library.custom_op`` returns: callable like the op, with the registration
    methods ``register_fake``, ``register_autograd``, ``register_kernel``,
    ``register_torch_dispatch``."""

    def __init__(self, namespace, name, schema, fn, device_types=None, tags=()):
        from ..library import Library
        self._namespace = namespace
        self._name = name
        self._init_fn = fn
        self._lib = Library(namespace, "FRAGMENT")
        self._lib.define(f"{name}{schema}", tags=tags, _debug=_where(fn))
        qualname = f"{namespace}::{name}"
        self._entry = _d.get_entry(qualname)
        self._opoverload = self._entry.overload
        self._autograd_info = None
        self._vmap_fn = None
        self._autocast_dtype = {}  # device type -> the cast_inputs registered for it
        self._lib.impl(name, fake_meta_kernel(self._entry, self), "Meta", _debug=_where(fn))
        self._lib.impl(name, make_autograd_kernel(self._entry, lambda: self._autograd_info),
                       "Autograd", _kind=_d.KEYSET, _debug=_where(fn))
        self.register_kernel(device_types, fn)
        functools.update_wrapper(self, fn)
        OPDEFS[qualname] = self

    def __repr__(self):
        return f"<CustomOpDef({self._namespace}::{self._name})>"

    def __call__(self, *args, **kwargs):
        return self._opoverload(*args, **kwargs)

    def register_kernel(self, device_types, fn=None, /):
        """Use ``fn`` as the implementation for ``device_types`` ("cpu", "cuda", ..., or None
        for all of them)."""
        def inner(fn):
            for key in backend_keys(device_types):
                self._lib.impl(self._name, python_kernel(self._entry, fn), key,
                               _debug=_where(fn))
            return fn
        return inner(fn) if fn is not None else inner

    def register_fake(self, fn, /):
        """Register the fake (meta) implementation: same signature as the op, returns tensors
        of the right shape/dtype/device without computing (``ember.empty_like(x)``)."""
        _fake_impls[self._entry.qualname] = fn
        return fn

    def register_autograd(self, backward, /, *, setup_context=None):
        """``backward(ctx, *grads)`` returns one gradient per input (None for non-Tensors);
        ``setup_context(ctx, inputs, output)`` saves what it needs."""
        self._autograd_info = AutogradInfo(backward, setup_context)

    def register_vmap(self, fn=None, /):
        """``fn(info, in_dims, *args, **kwargs)`` returns ``(output, out_dims)``: the op's
        batching rule under ``vmap`` (ember/_functorch/user_rules.py)."""
        def register(fn):
            need_register = self._vmap_fn is None
            self._vmap_fn = fn
            if need_register:
                self._lib.impl(self._name, vmap_kernel(self._entry, lambda: self._vmap_fn),
                               "FuncTorchBatched", _debug=_where(fn))
            return fn
        return register(fn) if fn is not None else register

    def register_autocast(self, device_type, cast_inputs):
        """Under autocast on ``device_type``, cast floating-point inputs to ``cast_inputs`` and
        run with autocast off; the first registration per device type stays."""
        key, kernel = autocast_kernel(self._entry, device_type, cast_inputs)
        if device_type not in self._autocast_dtype:
            self._autocast_dtype[device_type] = cast_inputs
            self._lib.impl(self._name, kernel, key, _debug="registered by register_autocast")
        return kernel

    def register_torch_dispatch(self, torch_dispatch_class, fn=None, /):
        from ..library import register_torch_dispatch
        return register_torch_dispatch(self._opoverload, torch_dispatch_class, fn,
                                       lib=self._lib)

    def _destroy(self):
        _fake_impls.pop(self._entry.qualname, None)
        OPDEFS.pop(self._entry.qualname, None)
        self._lib._destroy()


def _where(fn):
    code = getattr(fn, "__code__", None)
    if code is None:
        return "registered from Python"
    return f"registered at {code.co_filename}:{code.co_firstlineno}"


def fake_meta_kernel(entry, owner):
    """The Meta kernel of an op with (eventually) a fake implementation: calls it on the meta
    tensors, or says that none is registered yet."""
    args = entry.schema.arguments
    npos = sum(1 for a in args if not a.kwarg_only)
    kw_names = [a.name for a in args if a.kwarg_only]

    def meta(*values):
        fn = _fake_impls.get(entry.qualname)
        if fn is None:
            short = getattr(getattr(owner, "_init_fn", None), "__name__", entry.schema.base_name)
            raise RuntimeError(f"There was no fake impl registered for {owner}. This is "
                               f"necessary for torch.compile/export/fx tracing to work. Please "
                               f"use `{short}.register_fake` to add an fake impl.")
        code = getattr(fn, "__code__", None)
        source = f"{code.co_filename}:{code.co_firstlineno}" if code else "Python"
        with set_ctx_getter(meta_ctx_error(entry.qualname, source)):
            return fn(*values[:npos], **dict(zip(kw_names, values[npos:])))
    return meta
