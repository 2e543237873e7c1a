"""``ember.utils``: data loading (``ember.utils.data``), activation checkpointing, hook and
dispatch helpers, ``swap_tensors``.

Submodules load on first access: ``ember`` itself imports parts of this package while it is
still initializing, and ``data`` needs the finished ``ember`` namespace.
"""
import importlib
import weakref

from .backend_registration import (generate_methods_for_privateuse1_backend,  # noqa: F401
                                   rename_privateuse1_backend)

__all__ = ["checkpoint", "data", "deterministic", "dlpack", "hooks", "weak",
           "rename_privateuse1_backend", "generate_methods_for_privateuse1_backend",
           "swap_tensors"]


_SWAPPED_ERROR = (
    "Trying to execute AccumulateGrad node that was poisoned by swap_tensors this can happen "
    "when you try to run backward on a tensor that was swapped. For a module m with "
    "`torch.__future__.set_swap_module_params_on_conversion(True)` you should not change the "
    "device or dtype of the module (e.g. `m.cpu()` or `m.half()`) between running forward and "
    "backward. To resolve this, please only change the device/dtype before running forward (or "
    "after both forward and backward).")


def swap_tensors(t1, t2):
    """Swap the contents of two tensors: ``t1`` gets ``t2``'s class, attributes, storage,
    metadata and autograd state while keeping its identity (every reference to ``t1`` sees the
    new tensor), and the other way round. As PyTorch's: refused when either has weak
    references or the two classes have different slots; a gradient accumulator already made
    for either tensor (a forward ran) is poisoned, so a backward through it raises."""
    from .._tensor import IMPL_SLOTS
    from ..autograd.views import forget_view
    for t in (t1, t2):  # (ember's own: a view noted on its base, which PyTorch keeps in C++)
        forget_view(t)
    if weakref.getweakrefs(t1):
        raise RuntimeError("Cannot swap t1 because it has weakref associated with it")
    if weakref.getweakrefs(t2):
        raise RuntimeError("Cannot swap t2 because it has weakref associated with it")
    if _extra_slots(type(t1)) != _extra_slots(type(t2)):
        raise RuntimeError("Cannot swap t1 and t2 if they have different slots")
    for t in (t1, t2):
        meta = t._autograd
        acc = meta.grad_accumulator() if meta is not None and meta.grad_accumulator else None
        if acc is not None:
            acc.register_prehook(_poisoned)
    t1.__class__, t2.__class__ = type(t2), type(t1)
    d1, d2 = dict(t1.__dict__), dict(t2.__dict__)
    t1.__dict__.clear()
    t1.__dict__.update(d2)
    t2.__dict__.clear()
    t2.__dict__.update(d1)
    missing = object()
    for slot in IMPL_SLOTS + _extra_slots(type(t1)):
        v1, v2 = getattr(t1, slot, missing), getattr(t2, slot, missing)
        for t, v in ((t1, v2), (t2, v1)):
            if v is missing:
                if hasattr(t, slot):
                    delattr(t, slot)
            else:
                setattr(t, slot, v)


def _extra_slots(cls):
    """The slots a Tensor subclass adds."""
    from .._tensor import Tensor
    return tuple(s for k in cls.__mro__ if k is not Tensor and issubclass(k, Tensor)
                 for s in k.__dict__.get("__slots__", ()))


def _poisoned(grad_outputs):
    raise RuntimeError(_SWAPPED_ERROR)


def __getattr__(name):
    # (backcompat and collect_env are attributes of torch.utils too, not in its list)
    if name in __all__ or name in ("backcompat", "collect_env"):
        return importlib.import_module(f".{name}", __name__)
    if name == "ThroughputBenchmark":
        from .throughput_benchmark import ThroughputBenchmark
        return ThroughputBenchmark
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
