"""Per-sample gradients of ``F.group_norm``'s weight and bias (per channel: the normalized input
times the output gradient, and the output gradient, summed over each sample's positions)."""
import operator
from functools import reduce

import ember
from ... import functional as F
from .expanded_weights_impl import ExpandedWeight, implements_per_sample_grads
from .expanded_weights_utils import (forward_helper, set_grad_sample_if_exists, standard_call,
                                     unpack_expanded_weight_or_tensor)


@implements_per_sample_grads(F.group_norm)
class GroupNormPerSampleGrad(ember.autograd.Function):
    @staticmethod
    def forward(ctx, kwarg_names, _, *expanded_args_and_kwargs):
        expanded_args, expanded_kwargs = standard_call(F.group_norm, kwarg_names,
                                                       expanded_args_and_kwargs, 2)
        input, num_groups = expanded_args
        N = input.shape[0]
        C = input.shape[1]
        HxW = reduce(operator.mul, input.shape[2:], 1)
        weight, bias, eps = (expanded_kwargs["weight"], expanded_kwargs["bias"],
                             expanded_kwargs["eps"])
        output, mean, rstd = forward_helper(ember.native_group_norm,
                                            (input, weight, bias, N, C, HxW, num_groups, eps), {})
        ctx.input, ctx.num_groups = input, num_groups
        ctx.weight, ctx.eps = weight, eps
        ctx.mean, ctx.rstd = mean, rstd
        if isinstance(bias, ExpandedWeight):
            ctx.bias = bias
        if input.requires_grad and isinstance(weight, ExpandedWeight):
            ctx.weight = weight
        return output

    @staticmethod
    def backward(ctx, grad_output):
        input, num_groups = ctx.input, ctx.num_groups
        # (PyTorch reads ctx.bias unguarded: a group norm without an expanded bias fails here
        # with AttributeError there too)
        weight, bias, eps = ctx.weight, ctx.bias, ctx.eps
        mean, rstd = ctx.mean, ctx.rstd

        results = [None, None]  # kwarg names, op reference
        if input.requires_grad:
            weight_c = unpack_expanded_weight_or_tensor(weight, lambda t: t.contiguous())
            input_c = input.contiguous()
            grad_output_c = grad_output.contiguous() if grad_output is not None else None
            N = input.shape[0]
            C = input.shape[1]
            HxW = 1
            for s in input.shape[2:]:
                HxW *= s
            results.append(ember.ops.aten.native_group_norm_backward(
                grad_output_c, input_c, mean, rstd, weight_c, N, C, HxW, num_groups,
                (True, False, False))[0])
        else:
            results.append(None)
        # weight and bias get per-sample gradients instead; nothing else is differentiable
        results = results + [None] * 4

        if hasattr(ctx, "weight"):
            set_grad_sample_if_exists(weight, lambda _: ember.einsum(
                "ni...->ni", F.group_norm(input, num_groups, eps=eps) * grad_output))
        if hasattr(ctx, "bias"):
            set_grad_sample_if_exists(bias, lambda _: ember.einsum("ni...->ni", grad_output))
        return tuple(results)
