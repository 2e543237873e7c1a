"""``call_for_per_sample_grads``: run a module with its trainable parameters replaced by
ExpandedWeights, so that backward leaves each sample's gradient in ``param.grad_sample``."""
import functools

import ember
from ._expanded_weights.expanded_weights_impl import ExpandedWeight
from ...utils import _pytree as pytree


# (depends on functional_call, so it cannot be exposed in nn.utils without an import cycle)
def call_for_per_sample_grads(module, *, batch_size=None, loss_reduction="sum", batch_first=True):
    r"""A forward function for ``module`` whose backward fills every trainable parameter's
    ``grad_sample`` with per-sample gradients (``.grad`` stays untouched).

    Args:
        module: the ``nn.Module``.
        batch_size: the batch size of the input; if None, every tensor argument must have the same
            batch size, the size of its first dimension (second if not ``batch_first``).
        loss_reduction: ``"sum"`` or ``"mean"``: with ``"mean"`` the per-sample gradients are
            scaled by the batch size, undoing the mean's ``1 / batch_size``.
        batch_first: whether the batch dimension is the first one (else the second).

    Example::

        >>> model = nn.Linear(4, 3)
        >>> res = call_for_per_sample_grads(model)(torch.randn(5, 4)).sum()
        >>> res.backward()
        >>> model.weight.grad_sample.shape
        torch.Size([5, 3, 4])
    """
    def maybe_build_expanded_weight(og_tensor, batch_size):
        if og_tensor.requires_grad:
            return ExpandedWeight(og_tensor, batch_size, loss_reduction)
        return og_tensor

    def compute_batch_size(*args, **kwargs):
        args_and_kwargs = pytree.arg_tree_leaves(*args, **kwargs)
        batch_size = None
        for arg in args_and_kwargs:
            if not isinstance(arg, ember.Tensor):
                continue
            arg_batch_size = arg.shape[0] if batch_first else arg.shape[1]
            if batch_size is not None and batch_size != arg_batch_size:
                raise RuntimeError(
                    "When computing batch size, found at least one input with batch size "
                    f"{batch_size} and one with batch size {arg_batch_size}. Please specify it "
                    "explicitly using the batch size kwarg in call_for_per_sample_grads")
            batch_size = arg_batch_size
        if batch_size is None:
            raise RuntimeError(
                "Unable to find a tensor in the passed args and kwargs. They may not be "
                "pytree-able and so ExpandedWeights cannot compute the batch size from the "
                "inputs. Please specify it explicitly")
        return batch_size

    if loss_reduction not in ["sum", "mean"]:
        raise RuntimeError(f"Expected loss_reduction argument to be sum or mean, got "
                           f"{loss_reduction}")
    if not isinstance(module, ember.nn.Module):
        raise RuntimeError(f"Module passed must be nn.Module, got {type(module).__name__}")
    if not (batch_size is None or isinstance(batch_size, int)):
        raise RuntimeError(f"Batch size passed must be None or an integer, got "
                           f"{type(batch_size).__name__}")
    if batch_size is not None and batch_size < 1:
        raise RuntimeError(f"Batch size must be positive, got {batch_size}")
    for weight in module.parameters():
        if hasattr(weight, "grad_sample") and weight.grad_sample is not None:
            raise RuntimeError(
                "Current Expanded Weights accumulates the gradients, which will be incorrect for "
                f"multiple calls without clearing gradients. Please clear out the grad_sample "
                f"parameter of {weight} or post an issue to pytorch/pytorch to prioritize "
                "correct behavior")

    @functools.wraps(module.forward)
    def wrapper(*args, **kwargs):
        wrapper_batch_size = batch_size
        if wrapper_batch_size is None:
            wrapper_batch_size = compute_batch_size(*args, **kwargs)
        params = {name: maybe_build_expanded_weight(value, wrapper_batch_size)
                  for name, value in module.named_parameters()}
        return ember.func.functional_call(module, params, args, kwargs)

    return wrapper
