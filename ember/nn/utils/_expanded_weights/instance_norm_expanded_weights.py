"""Per-sample gradients of ``F.instance_norm``'s weight and bias (per channel: the normalized
input times the output gradient, and the output gradient, summed over each sample's
positions); the input's gradient by batch norm's backward over samples times channels."""
from functools import partial

import ember
from ... import functional as F
from .expanded_weights_impl import implements_per_sample_grads
from .expanded_weights_utils import (forward_helper, set_grad_sample_if_exists, standard_call,
                                     unpack_expanded_weight_or_tensor)


@implements_per_sample_grads(F.instance_norm)
class InstanceNormPerSampleGrad(ember.autograd.Function):
    @staticmethod
    def forward(ctx, kwarg_names, _, *expanded_args_and_kwargs):
        instance_norm = partial(ember.instance_norm, cudnn_enabled=True)
        expanded_args, expanded_kwargs = standard_call(F.instance_norm, kwarg_names,
                                                       expanded_args_and_kwargs, 1)
        output = forward_helper(instance_norm, expanded_args, expanded_kwargs)
        ctx.input = expanded_args[0]
        ctx.running_mean, ctx.running_var = (expanded_kwargs["running_mean"],
                                             expanded_kwargs["running_var"])
        ctx.weight, ctx.bias, ctx.eps = (expanded_kwargs["weight"], expanded_kwargs["bias"],
                                         expanded_kwargs["eps"])
        return output

    @staticmethod
    def backward(ctx, grad_output):
        input, running_mean, running_var = ctx.input, ctx.running_mean, ctx.running_var
        weight, bias, eps = ctx.weight, ctx.bias, ctx.eps

        results = [None, None]  # kwarg names, op reference
        if input.requires_grad:
            b = input.shape[0]
            c = input.shape[1]
            new_shape = (1, b * c, *input.shape[2:])

            weight_ = unpack_expanded_weight_or_tensor(
                weight, lambda orig_weight: orig_weight.repeat(b))
            running_mean_ = running_mean.repeat(b) if running_mean is not None else None
            running_var_ = running_var.repeat(b) if running_var is not None else None
            input_reshaped = input.reshape(new_shape)
            grad_output_reshaped = grad_output.reshape(new_shape)
            var, mean = ember.var_mean(input_reshaped, (0,) + tuple(range(2, input.dim())),
                                       correction=0, keepdim=False)
            rstd = 1 / ember.sqrt(var + eps)
            # batch norm's backward takes every input; which kernel ran the forward was not
            # recorded
            res = ember.ops.aten.native_batch_norm_backward(
                grad_output_reshaped, input_reshaped, weight_, running_mean_, running_var_,
                mean, rstd, True, eps, (True, False, False))
            results.append(res[0].reshape(input.shape))
        else:
            results.append(None)
        # weight and bias get per-sample gradients instead; nothing else is differentiable
        results = results + [None] * 7

        set_grad_sample_if_exists(weight, lambda _: ember.einsum(
            "ni...->ni", F.instance_norm(input, eps=eps) * grad_output))
        set_grad_sample_if_exists(bias, lambda _: ember.einsum("ni...->ni", grad_output))
        return tuple(results)
