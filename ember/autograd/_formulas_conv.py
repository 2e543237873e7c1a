"""derivatives.yaml helpers of the convolution / pooling / resampling ops (PyTorch's
FunctionsManual names), in ember ops so that backward passes stay differentiable. Imported into
``_formulas`` (and so into the formula namespace) by its last line."""
import math

import ember

from .._ops.overload import ops

_aten = ops.aten  # ops resolve when called: the op table is built after the kernels load

__all__ = ["convolution_backward_", "convolution_double_backward", "max_pool_double_backward",
           "constant_pad_nd_backward"]


def convolution_backward_(grad, input, weight, bias, stride, padding, dilation, transposed,
                          output_padding, groups, grad_input_mask):
    """convolution's gradients through the fused convolution_backward op."""
    bias_sizes = None if bias is None else list(bias.shape)
    mask = list(grad_input_mask) + [False] * (3 - len(grad_input_mask))
    return _aten.convolution_backward.default(grad, input, weight, bias_sizes, stride, padding,
                                                dilation, transposed, output_padding, groups,
                                                mask)


def convolution_double_backward(ggI, ggW, ggb, gO, weight, input, stride, padding, dilation,
                                transposed, output_padding, groups, grad_input_mask):
    """Gradients of convolution_backward's outputs (gI, gW, gb) w.r.t. (grad_output, input,
    weight): convolution is bilinear, so each is one convolution or one convolution_backward."""
    aten = _aten

    def conv(x, w):
        return aten.convolution.default(x, w, None, stride, padding, dilation, transposed,
                                        output_padding, groups)

    def back(x, w, mask):
        return aten.convolution_backward.default(gO, x, w, None, stride, padding, dilation,
                                                 transposed, output_padding, groups, mask)

    # an undefined (None) incoming gradient contributes nothing
    g_gO = g_input = g_weight = None
    if grad_input_mask[0]:
        terms = [conv(ggI, weight) if ggI is not None else None,
                 conv(input, ggW) if ggW is not None else None,
                 ggb.reshape([1, -1] + [1] * (input.dim() - 2)) if ggb is not None else None]
        for t in terms:
            if t is not None:
                g_gO = t if g_gO is None else g_gO + t
        if g_gO is not None and tuple(g_gO.shape) != tuple(gO.shape):
            g_gO = g_gO.expand(gO.shape)
    if grad_input_mask[1] and ggW is not None:
        g_input = back(input, ggW, [True, False, False])[0]
    if grad_input_mask[2] and ggI is not None:
        g_weight = back(ggI, weight, [False, True, False])[1]
    return g_gO, g_input, g_weight


def max_pool_double_backward(grad, indices, dim):
    """grad (shaped like the pooled input) gathered at the pooling indices."""
    lead = indices.shape[:-dim]
    rows = math.prod(lead)
    g = grad.reshape(rows, -1)
    idx = indices.reshape(rows, -1)
    return g[ember.arange(rows).unsqueeze(1), idx].reshape(indices.shape)


def constant_pad_nd_backward(grad, pad):
    """Padding's adjoint is the negative padding (a crop)."""
    return _aten.constant_pad_nd.default(grad, [-p for p in pad], 0)
