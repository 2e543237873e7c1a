"""``opcheck``: the checks PyTorch runs on a custom op's registrations.

* ``test_schema``: arguments the schema does not mark mutable are left unchanged, and outputs
  alias no input unless the schema says so;
* ``test_autograd_registration``: with inputs that require grad, the op has an autograd kernel
  (an Autograd or CompositeImplicitAutograd registration), so it is not silently
  non-differentiable;
* ``test_faketensor``: under FakeTensorMode the op's shapes, dtypes, strides and devices match a
  real run (this needs ``register_fake``);
* ``test_aot_dispatch_dynamic``: PyTorch traces the op with AOTAutograd. ember has no compiler
  yet, so this checks what that trace relies on: under a TorchDispatchMode the op is seen as one
  opaque call with the same results as eager, and its gradients (when inputs require grad)
  match eager's.
"""
from .._tensor import Tensor
from ..utils._pytree import tree_leaves, tree_map

__all__ = ["opcheck", "OpCheckError", "DEFAULT_TEST_UTILS"]

DEFAULT_TEST_UTILS = ("test_schema", "test_autograd_registration", "test_faketensor",
                      "test_aot_dispatch_dynamic")


class OpCheckError(Exception):
    pass


def _clone(x):
    if isinstance(x, Tensor):
        c = x.detach().clone()
        return c.requires_grad_(x.requires_grad) if x.requires_grad else c
    return x


def _tensors(tree):
    return [t for t in tree_leaves(tree) if isinstance(t, Tensor)]


def _host(t):
    """A tensor's values as a NumPy array (through the dispatcher's copy to CPU)."""
    import numpy as np
    a = t.detach().cpu()._nd()
    return a.astype(np.float64) if a.dtype.kind == "V" or str(a.dtype) == "bfloat16" else a


def _same(a, b):
    import numpy as np
    return a.shape == b.shape and a.dtype == b.dtype and \
        np.array_equal(_host(a), _host(b), equal_nan=a.dtype.is_floating_point)


def _close(a, b, atol, rtol):
    import numpy as np
    return a.shape == b.shape and a.dtype == b.dtype and \
        np.allclose(_host(a), _host(b), atol=atol or 1e-5, rtol=rtol or 1.3e-6, equal_nan=True)


def _test_schema(op, args, kwargs, atol, rtol):
    schema = op._schema
    cargs, ckwargs = tree_map(_clone, args), tree_map(_clone, kwargs)
    before = tree_map(lambda t: t.detach().clone() if isinstance(t, Tensor) else t,
                      (cargs, ckwargs))
    out = op(*cargs, **ckwargs)
    bound = dict(zip([a.name for a in schema.arguments if not a.kwarg_only], cargs))
    bound.update(ckwargs)
    bbound = dict(zip([a.name for a in schema.arguments if not a.kwarg_only], before[0]))
    bbound.update(before[1])
    for a in schema.arguments:
        if a.name not in bound or a.is_write:
            continue
        for new, old in zip(_tensors(bound[a.name]), _tensors(bbound[a.name])):
            if not _same(new, old):
                raise OpCheckError(f"{op}: argument {a.name} is not defined as mutable but was "
                                   f"mutated")
    aliased = any(r.alias for r in schema.returns)
    if not aliased:
        inputs = {t.untyped_storage().data_ptr() for t in _tensors((cargs, ckwargs))
                  if t.untyped_storage().data_ptr()}
        for o in _tensors(out):
            if o.untyped_storage().data_ptr() in inputs:
                raise OpCheckError(f"{op}: operator returned a Tensor that aliases an input, "
                                   f"but the schema says the outputs are new tensors. Return "
                                   f"a clone instead.")


def _test_autograd_registration(op, args, kwargs, atol, rtol):
    from .._dispatch.keys import AUTOGRAD_KEYS, K
    if not any(t.requires_grad for t in _tensors((args, kwargs))):
        return
    entry = op._entry
    has = any(entry.has_kernel(k) for k in [K.Autograd, K.CompositeImplicitAutograd]
              + AUTOGRAD_KEYS)
    if not has:
        raise OpCheckError(f"{op}: inputs require grad but the operator has no autograd "
                           f"registration (register_autograd, or a kernel on the Autograd or "
                           f"CompositeImplicitAutograd key); its outputs would silently not "
                           f"require grad.")


def _test_faketensor(op, args, kwargs, atol, rtol):
    from .._subclasses.fake_tensor import FakeTensorMode
    real = op(*tree_map(_clone, args), **tree_map(_clone, kwargs))
    mode = FakeTensorMode()
    fargs = tree_map(lambda x: mode.from_tensor(x) if isinstance(x, Tensor) else x, args)
    fkwargs = tree_map(lambda x: mode.from_tensor(x) if isinstance(x, Tensor) else x, kwargs)
    with mode:
        fake = op(*fargs, **fkwargs)
    for r, f in zip(_tensors(real), _tensors(fake)):
        checks = (("shape", r.shape, f.shape), ("dtype", r.dtype, f.dtype),
                  ("device", r.device, f.device))
        for what, rv, fv in checks:
            if rv != fv:
                raise OpCheckError(f"{op}: fake implementation gives {what} {fv}, the real "
                                   f"kernel {rv}")
        if r.is_contiguous() and f.stride() != r.stride():
            raise OpCheckError(f"{op}: fake implementation gives strides {f.stride()}, the real "
                               f"kernel {r.stride()}")


def _test_aot_dispatch(op, args, kwargs, atol, rtol):
    from ..utils._python_dispatch import TorchDispatchMode

    class Recorder(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops = []

        def __torch_dispatch__(self, func, types, a=(), kw=None):
            self.ops.append(func)
            return func(*a, **(kw or {}))

    _test_faketensor(op, args, kwargs, atol, rtol)  # tracing runs the op on FakeTensors first
    eager_args, eager_kwargs = tree_map(_clone, args), tree_map(_clone, kwargs)
    traced_args, traced_kwargs = tree_map(_clone, args), tree_map(_clone, kwargs)
    eager = op(*eager_args, **eager_kwargs)
    rec = Recorder()
    with rec:
        traced = op(*traced_args, **traced_kwargs)
    if op not in rec.ops:
        raise OpCheckError(f"{op}: a dispatch-mode trace did not see the operator as one call "
                           f"(saw {[str(o) for o in rec.ops]})")
    for e, t in zip(_tensors(eager), _tensors(traced)):
        if not _close(e, t, atol, rtol):
            raise OpCheckError(f"{op}: traced and eager results differ")
    outs = [o for o in _tensors(eager) if o.requires_grad]
    if outs:
        from .. import autograd
        e_in = [t for t in _tensors((eager_args, eager_kwargs)) if t.requires_grad]
        t_in = [t for t in _tensors((traced_args, traced_kwargs)) if t.requires_grad]
        t_outs = [o for o in _tensors(traced) if o.requires_grad]
        ge = autograd.grad([o.sum() for o in outs], e_in, allow_unused=True)
        gt = autograd.grad([o.sum() for o in t_outs], t_in, allow_unused=True)
        for a, b in zip(ge, gt):
            if (a is None) != (b is None) or (a is not None and not _close(a, b, atol, rtol)):
                raise OpCheckError(f"{op}: gradients of the traced call differ from eager")


_TESTS = {"test_schema": _test_schema, "test_autograd_registration": _test_autograd_registration,
          "test_faketensor": _test_faketensor, "test_aot_dispatch_dynamic": _test_aot_dispatch}


def opcheck(op, args, kwargs=None, *, test_utils=DEFAULT_TEST_UTILS, raise_exception=True,
            atol=None, rtol=None):
    """Run the checks on ``op(*args, **kwargs)``; returns {test name: "SUCCESS" or the
    exception}. With ``raise_exception`` the first failure raises OpCheckError."""
    from ..library import _to_overload
    op = _to_overload(op)
    kwargs = kwargs or {}
    if isinstance(test_utils, str):
        test_utils = (test_utils,)
    results = {}
    for name in test_utils:
        if name not in _TESTS:
            raise ValueError(f"test_utils {name!r} is not one of {list(_TESTS)}")
        try:
            _TESTS[name](op, args, kwargs, atol, rtol)
            results[name] = "SUCCESS"
        except Exception as e:  # noqa: BLE001  (reported per test, as PyTorch does)
            if raise_exception:
                raise OpCheckError(f"opcheck(op, ...): {name} failed with {e} (scroll up for "
                                   f"stack trace)") from e
            results[name] = e
    return results
