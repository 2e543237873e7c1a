"""Per-sample gradients of ``F.embedding``: each sample's output gradient scattered into the rows
its indices chose."""
import ember
from ... import functional as F
from .expanded_weights_impl import implements_per_sample_grads
from .expanded_weights_utils import forward_helper, set_grad_sample_if_exists, standard_call


@implements_per_sample_grads(F.embedding)
class EmbeddingPerSampleGrad(ember.autograd.Function):
    @staticmethod
    def forward(ctx, kwarg_names, _, *expanded_args_and_kwargs):
        expanded_args, expanded_kwargs = standard_call(F.embedding, kwarg_names,
                                                       expanded_args_and_kwargs, 2)
        if len(expanded_args[0].shape) == 1:
            raise RuntimeError(f"Expanded Weights needs an input with a batch size, got a 1D "
                               f"tensor, {expanded_args[0]}")
        output = forward_helper(F.embedding, expanded_args, expanded_kwargs)
        ctx.input, ctx.weight = expanded_args
        ctx.padding_idx, ctx.scale_grad_by_freq = (expanded_kwargs["padding_idx"],
                                                   expanded_kwargs["scale_grad_by_freq"])
        ctx.sparse = expanded_kwargs["sparse"]
        return output

    @staticmethod
    def backward(ctx, grad_output):
        input, weight = ctx.input, ctx.weight
        padding_idx, scale_grad_by_freq, sparse = (ctx.padding_idx, ctx.scale_grad_by_freq,
                                                   ctx.sparse)

        def weight_per_sample_grad(weight):
            batch_size = input.shape[0]
            embedding_dim = weight.shape[1]
            index = (input.unsqueeze(-1).expand(*input.shape, embedding_dim)
                     .reshape(batch_size, -1, embedding_dim))
            grad_sample = ember.zeros(batch_size, *weight.shape, device=weight.device,
                                      dtype=grad_output.dtype)
            return grad_sample.scatter_add_(1, index,
                                            grad_output.reshape(batch_size, -1, embedding_dim))

        results = [None, None]  # kwarg names, op reference
        if input.requires_grad:
            # (an index tensor never requires grad; PyTorch's rule keeps this branch)
            results.append(ember.ops.aten.embedding_backward(
                grad_output, input, weight.shape[0], padding_idx, scale_grad_by_freq, sparse))
        else:
            results.append(None)
        # the weight gets per-sample gradients instead; nothing else is differentiable
        results = results + [None] * 6

        set_grad_sample_if_exists(weight, weight_per_sample_grad)
        return tuple(results)
