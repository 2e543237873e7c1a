"""The per-sample rules' shared steps: separating the arguments ``__torch_function__`` handed over,
checking them and running the forward on the original weights (``forward_helper``), and storing
a rule's per-sample gradient in the original weight's ``grad_sample``."""
import inspect

import ember
from .expanded_weights_impl import ExpandedWeight


def is_batch_first(expanded_args_and_kwargs):
    batch_first = None
    for arg in expanded_args_and_kwargs:
        if not isinstance(arg, ExpandedWeight):
            continue
        if not batch_first:
            batch_first = arg.batch_first
        elif arg.batch_first != batch_first:
            raise RuntimeError("Got conflicting batch_first arguments in the same layer")
    return batch_first


def standard_kwargs(kwarg_names, expanded_args):
    r"""Separate args and kwargs from `__torch_function__`s that standardize kwargs.

    Most `__torch_function__`s standardize the kwargs that they give, so this will separate
    the args and kwargs they pass. Functions that don't are linear and convND.
    """
    kwarg_values = expanded_args[len(expanded_args) - len(kwarg_names):]
    expanded_args_without_kwargs = expanded_args[:len(expanded_args) - len(kwarg_names)]
    expanded_kwargs = dict(zip(kwarg_names, kwarg_values, strict=True))
    return expanded_args_without_kwargs, expanded_kwargs


def standard_call(func, kwarg_names, expanded_args_and_kwargs, num_positional):
    """``standard_kwargs`` for a call however it was spelled: bound to ``func``'s signature,
    the first ``num_positional`` parameters as args and every other one (defaults filled in) as
    kwargs — the form PyTorch's Python-level functionals hand to ``__torch_function__``
    (``embedding(input, weight, padding_idx=..., ...)``). ember's functionals pass the caller's
    own spelling, so a rule binds it here."""
    args, kwargs = standard_kwargs(kwarg_names, expanded_args_and_kwargs)
    bound = inspect.signature(func).bind(*args, **kwargs)
    bound.apply_defaults()
    values = list(bound.arguments.items())
    return (tuple(v for _, v in values[:num_positional]),
            {k: v for k, v in values[num_positional:]})


def forward_helper(func, expanded_args, expanded_kwargs):
    r"""Compute the forward pass for a function that has expanded weight(s) passed to it.

    It runs ``func`` with every ExpandedWeight replaced by its original weight, after checking
    the arguments. The first argument in :attr:`expanded_args` must be the input, with the batch
    dimension first; :attr:`func` must return a Tensor or a tuple of Tensors.
    """
    unexpanded_args, unexpanded_kwargs = _check_and_unexpand_args(func, expanded_args,
                                                                  expanded_kwargs)
    return func(*unexpanded_args, **unexpanded_kwargs)


def _check_and_unexpand_args(func, expanded_args, expanded_kwargs):
    # input must be the first argument passed
    input = expanded_args[0]
    if isinstance(input, ExpandedWeight):
        raise RuntimeError("Expanded Weights do not support inputs that are also ExpandedWeights. "
                           f"Input must be a Tensor, got {type(input).__name__} in function "
                           f"{func.__name__}")
    if not isinstance(input, ember.Tensor):
        raise RuntimeError("Expanded Weights requires a Tensor as the first input to get the "
                           f"batch dimension, got {type(input).__name__} in function "
                           f"{func.__name__}")
    if len(input.shape) == 0:
        raise RuntimeError("Expanded Weights requires a batch dimension but got an input of "
                           f"size 0 in function {func.__name__}")
    if input.shape[0] == 0:
        raise RuntimeError("0 is not a valid batch size for Expanded Weights but got input "
                           f"tensor of {input} in function {func.__name__}")
    for arg in expanded_args + tuple(expanded_kwargs.values()):
        if not isinstance(arg, ExpandedWeight):
            continue
        batch_size = input.shape[0] if arg.batch_first else input.shape[1]
        if (arg.allow_smaller_batches and batch_size > arg.batch_size) or (
                not arg.allow_smaller_batches and arg.batch_size != batch_size):
            raise RuntimeError("Expected ExpandedWeights to have batch size matching input but "
                               f"got input batch size of {batch_size} with ExpandedWeight of "
                               f"batch size {arg.batch_size}")

    loss_reduction = None
    for arg in expanded_args + tuple(expanded_kwargs.values()):
        if isinstance(arg, ExpandedWeight):
            if loss_reduction is None:
                loss_reduction = arg.loss_reduction
            elif loss_reduction != arg.loss_reduction:
                raise RuntimeError("Expected ExpandedWeights to all have the same loss_reduction "
                                   f"argument but got onewith {loss_reduction} and one with "
                                   f"{arg.loss_reduction}")

    unexpanded_args = tuple(arg.orig_weight if isinstance(arg, ExpandedWeight) else arg
                            for arg in expanded_args)
    unexpanded_kwargs = {name: arg.orig_weight if isinstance(arg, ExpandedWeight) else arg
                         for name, arg in expanded_kwargs.items()}
    return unexpanded_args, unexpanded_kwargs


def maybe_scale_by_batch_size(grad_sample, expanded_weight):
    # a mean over the batch scaled every sample's gradient by 1 / batch_size: undo it
    if expanded_weight.loss_reduction == "mean":
        return grad_sample * expanded_weight.batch_size
    return grad_sample


def set_grad_sample_if_exists(maybe_expanded_weight, per_sample_grad_fn):
    """Add ``per_sample_grad_fn(weight)`` to the original weight's ``grad_sample`` when
    ``maybe_expanded_weight`` is an ExpandedWeight."""
    unpacked = unpack_expanded_weight_or_tensor(maybe_expanded_weight)
    if isinstance(maybe_expanded_weight, ExpandedWeight):
        grad_sample_contribution = maybe_scale_by_batch_size(per_sample_grad_fn(unpacked),
                                                             maybe_expanded_weight)
        if maybe_expanded_weight.batch_size > grad_sample_contribution.shape[0]:
            # a packed sequence's shorter step (only allowed with allow_smaller_batches): the
            # samples past its end get zeros
            intermediate = ember.zeros(maybe_expanded_weight.batch_size,
                                       *grad_sample_contribution.shape[1:],
                                       dtype=grad_sample_contribution.dtype,
                                       device=grad_sample_contribution.device)
            intermediate[:grad_sample_contribution.shape[0]] = grad_sample_contribution
            grad_sample_contribution = intermediate

        if hasattr(unpacked, "grad_sample") and unpacked.grad_sample is not None:
            unpacked.grad_sample = unpacked.grad_sample + grad_sample_contribution
        else:
            unpacked.grad_sample = grad_sample_contribution


def unpack_expanded_weight_or_tensor(maybe_expanded_weight, func=lambda x: x):
    if isinstance(maybe_expanded_weight, ExpandedWeight):
        return func(maybe_expanded_weight.orig_weight)
    elif isinstance(maybe_expanded_weight, ember.Tensor) and \
            not maybe_expanded_weight.requires_grad:
        return func(maybe_expanded_weight)
    elif isinstance(maybe_expanded_weight, ember.Tensor):
        raise RuntimeError("ExpandedWeights currently does not support a mixture of "
                           "ExpandedWeight parameters and normal Parameters. Please file and "
                           "issue with pytorch/pytorch")


def sum_over_all_but_batch_and_last_n(tensor, n_dims):
    r"""Sum ``tensor`` (shape ``(B, ..., X[n_dims-1])``) over every dimension but the first
    (the batch) and the last ``n_dims``: ``ones(1, 2, 3, 4, 5)`` with ``n_dims=2`` gives shape
    ``(1, 4, 5)``."""
    if tensor.dim() == n_dims + 1:
        return tensor
    dims = list(range(1, tensor.dim() - n_dims))
    return tensor.sum(dim=dims)
