"""``_apply_optimizer_in_backward`` (PyTorch's
``torch/distributed/optim/apply_optimizer_in_backward.py``): each given parameter gets its own
optimizer, stepped by a hook on the parameter's gradient accumulator as soon as backward has
accumulated its gradient (which is then freed), so a parameter's update does not wait for
the whole backward and its gradient does not outlive it."""
from ember.utils.weak import WeakTensorKeyDictionary

__all__ = []

param_to_optim_hook_handle_map = WeakTensorKeyDictionary()
param_to_acc_grad_map = WeakTensorKeyDictionary()


def _apply_optimizer_in_backward(optimizer_class, params, optimizer_kwargs, register_hook=True):
    """Give each of ``params`` an ``optimizer_class(**optimizer_kwargs)`` that steps when its
    gradient has been accumulated in backward (the gradient is then set to None). With
    ``register_hook=False`` the optimizers are only attached (``param._in_backward_optimizers``)
    for a caller that steps them itself (DDP does)."""

    def _apply_optimizer_in_backward_to_param(param):
        # the accumulator is held so that the hook's node lives as long as the parameter
        if param not in param_to_acc_grad_map:
            param_to_acc_grad_map[param] = param.view_as(param).grad_fn.next_functions[0][0]
        optimizer = optimizer_class([param], **optimizer_kwargs)
        if not hasattr(param, "_in_backward_optimizers"):
            param._in_backward_optimizers = []
            param._optimizer_classes = []
            param._optimizer_kwargs = []
        param._in_backward_optimizers.append(optimizer)
        param._optimizer_classes.append(optimizer_class)
        param._optimizer_kwargs.append(optimizer_kwargs)
        if not register_hook:
            return

        def optimizer_hook(*_unused):
            for opt in param._in_backward_optimizers:
                opt.step()
            param.grad = None

        handle = param_to_acc_grad_map[param].register_hook(optimizer_hook)
        if param not in param_to_optim_hook_handle_map:
            param_to_optim_hook_handle_map[param] = []
        param_to_optim_hook_handle_map[param].append(handle)

    for param in params:
        _apply_optimizer_in_backward_to_param(param)


def _get_in_backward_optimizers(module):
    """The in-backward optimizers of ``module``'s parameters (for checkpointing; not to be
    stepped by hand)."""
    optims = []
    for param in module.parameters():
        optims.extend(getattr(param, "_in_backward_optimizers", []))
    return optims

