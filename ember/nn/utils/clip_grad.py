"""Gradient clipping: ``clip_grad_norm_``, ``clip_grad_value_``, ``get_total_norm``,
``clip_grads_with_norm_``."""
import ember  # resolved when clipping runs: ember imports this package
from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad
from ...utils._foreach_utils import (_device_has_foreach_support,
                                     _group_tensors_by_device_and_dtype, _has_foreach_support)

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "get_total_norm",
           "clip_grads_with_norm_"]


def _as_list(tensors):
    return [tensors] if isinstance(tensors, Tensor) else list(tensors)


def _use_foreach(foreach, tensors, device):
    """PyTorch's choice: the foreach ops by default where the device has them (CPU and CUDA)
    for plain tensors; ``foreach=True`` asks for them and is an error where there are none."""
    if (foreach is None and _has_foreach_support(tensors, device)) or (
            foreach and _device_has_foreach_support(device)):
        return True
    if foreach:
        raise RuntimeError(f"foreach=True was passed, but can't use the foreach API on "
                           f"{device.type} tensors")
    return False


@no_grad()
def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The norm of the norms of ``tensors`` (as if they were concatenated)."""
    tensors = [t for t in _as_list(tensors) if t is not None]
    norm_type = float(norm_type)
    if len(tensors) == 0:
        return ember.tensor(0.0)
    norms = []
    for (device, _), ([group], _) in _group_tensors_by_device_and_dtype([tensors]).items():
        if _use_foreach(foreach, group, device):
            norms.extend(ember._foreach_norm(group, norm_type))
        else:
            norms.extend(ember.linalg.vector_norm(g, norm_type) for g in group)
    first_device = tensors[0].device
    total_norm = ember.linalg.vector_norm(ember.stack([n.to(first_device) for n in norms]),
                                          norm_type)
    if error_if_nonfinite and bool(total_norm.isnan() | total_norm.isinf()):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, "
            "so it cannot be clipped. To disable this error and scale the gradients by the "
            "non-finite norm anyway, set `error_if_nonfinite=False`")
    return total_norm


@no_grad()
def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """Scale the gradients by ``max_norm / (total_norm + 1e-6)`` when that is below 1."""
    grads = [p.grad for p in _as_list(parameters) if p.grad is not None]
    if not grads:
        return
    clip_coef_clamped = ember.clamp(max_norm / (total_norm + 1e-6), max=1.0)
    for (device, _), ([group], _) in _group_tensors_by_device_and_dtype([grads]).items():
        coef = clip_coef_clamped.to(device)
        if _use_foreach(foreach, group, device):
            ember._foreach_mul_(group, coef)
        else:
            for g in group:
                g.mul_(coef)


@no_grad()
def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False,
                    foreach=None):
    """Clip the gradients' total norm to ``max_norm`` in place; returns the total norm."""
    parameters = _as_list(parameters)
    grads = [p.grad for p in parameters if p.grad is not None]
    total_norm = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total_norm, foreach)
    return total_norm


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    import warnings
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`torch.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


@no_grad()
def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient element to ``[-clip_value, clip_value]`` in place."""
    clip_value = float(clip_value)
    grads = [p.grad for p in _as_list(parameters) if p.grad is not None]
    # (no gradients at all: the grouping's error, as in PyTorch)
    for (device, _), ([group], _) in _group_tensors_by_device_and_dtype([grads]).items():
        if _use_foreach(foreach, group, device):
            ember._foreach_clamp_min_(group, -clip_value)
            ember._foreach_clamp_max_(group, clip_value)
        else:
            for g in group:
                g.clamp_(min=-clip_value, max=clip_value)
