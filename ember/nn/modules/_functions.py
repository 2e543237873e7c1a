"""Custom autograd Functions behind ``nn`` modules (PyTorch's ``torch/nn/modules/_functions.py``):
``CrossMapLRN2d``, the legacy Lua-Torch cross-channel local response normalization."""
from ... import einsum, tensor
from ...autograd.function import Function

__all__ = ["CrossMapLRN2d"]


def _forward_window(channels, size):
    """Which squared channels sum into each channel's scale, as a ``channels x channels`` matrix
    of counts.

    Lua Torch's kernel (which PyTorch keeps) builds the scales as a running sum: channel 0 sums
    the first ``pre_pad`` squares, and each next channel adds the square ``pre_pad - 1`` ahead
    and drops the one ``pre_pad`` behind, but only past channel ``pre_pad``. The window is
    therefore not centred for every channel (channel 0's square stays in every scale once
    ``channels > pre_pad``); replaying the recurrence keeps its exact windows."""
    pre_pad = int((size - 1) / 2 + 1)
    rows = [[1 if j < min(pre_pad, channels) else 0 for j in range(channels)]]
    for c in range(1, channels):
        row = list(rows[-1])
        if c < channels - pre_pad + 1:
            row[c + pre_pad - 1] += 1
        if c > pre_pad:
            row[c - pre_pad] -= 1
        rows.append(row)
    return rows


class CrossMapLRN2d(Function):
    """``output = input * (k + alpha / size * sum of squares in the window) ** -beta`` over the
    channels of a 4-D input; its backward is Lua Torch's hand-written one."""

    @staticmethod
    def forward(ctx, input, size, alpha=1e-4, beta=0.75, k=1):
        ctx.size = size
        ctx.alpha = alpha
        ctx.beta = beta
        ctx.k = k
        ctx.scale = None
        if input.dim() != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D "
                             f"instead.")
        window = tensor(_forward_window(input.size(1), size), dtype=input.dtype,
                        device=input.device)
        squares = einsum("dc,nchw->ndhw", window, input.pow(2))
        ctx.scale = squares.mul(alpha / size).add(k)
        output = ctx.scale.pow(-beta).mul(input)
        ctx.save_for_backward(input, output)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        input, output = ctx.saved_tensors
        size, channels = ctx.size, input.size(1)
        cache_ratio_value = 2 * ctx.alpha * ctx.beta / ctx.size
        inverse_pre_pad = int(ctx.size - (ctx.size - 1) / 2)

        grad_input = ctx.scale.pow(-ctx.beta).mul(grad_output)
        # Each channel's correction sums ``size`` consecutive ratios of a zero-padded stack whose
        # channel c sits at ``inverse_pre_pad + c`` (for size 1 the stack is too short for the
        # ratios, and narrow refuses, as in PyTorch)
        n, _, h, w = input.shape
        padded_ratio = input.new_zeros((n, channels + size - 1, h, w))
        padded_ratio.narrow(1, inverse_pre_pad, channels).copy_(
            grad_output.mul(output).div(ctx.scale))
        accum_ratio = padded_ratio.unfold(1, size, 1).sum(-1)
        grad_input = grad_input.addcmul(input, accum_ratio, value=-cache_ratio_value)
        return grad_input, None, None, None, None
