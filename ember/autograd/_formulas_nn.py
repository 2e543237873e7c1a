"""Helpers the ``nn.functional`` entries of ``derivatives.yaml`` call (PyTorch's
FunctionsManual names), re-exported by ``_formulas`` so formulas see them.

Most nn backward ops are ``python: false`` (PyTorch keeps them out of ``torch.*`` too), so the
names below give formulas PyTorch's spelling (``gelu_backward(grad, self, approximate)``) for
the dispatcher call ``ops.aten.gelu_backward.default``.
"""
import ember

from .._ops.overload import ops
from .._kernels.composite.rnn import layer_steps
from .._kernels.rules.rnn import LSTM


def _op(name, overload="default"):
    def call(*args, **kwargs):
        return getattr(getattr(ops.aten, name), overload)(*args, **kwargs)
    call.__name__ = name.lstrip("_")
    return call


_BACKWARD_OPS = [
    "gelu_backward", "silu_backward", "mish_backward", "elu_backward", "leaky_relu_backward",
    "hardtanh_backward", "hardsigmoid_backward", "hardswish_backward", "softplus_backward",
    "softshrink_backward", "hardshrink_backward", "log_sigmoid_backward", "glu_backward",
    "_prelu_kernel_backward", "native_layer_norm_backward", "native_batch_norm_backward",
    "native_group_norm_backward", "nll_loss_backward", "embedding_backward",
    "native_dropout_backward", "mse_loss_backward", "binary_cross_entropy_backward",
    "nll_loss", "embedding", "_softmax_backward_data", "_log_softmax_backward_data",
    "_scaled_dot_product_flash_attention_for_cpu_backward", "batch_norm_backward",
    "_scaled_dot_product_efficient_attention_backward",
    "_scaled_dot_product_flash_attention_backward", "_cdist_backward", "_pdist_backward",
]
# (a leading underscore would hide a helper from formulas: _prelu_kernel_backward is spelled
# prelu_kernel_backward there)
_HELPERS = {n.lstrip("_"): _op(n) for n in _BACKWARD_OPS}
globals().update(_HELPERS)


def not_implemented(name):
    # PyTorch's not_implemented() formula raises NotImplementedError (a RuntimeError subclass)
    raise NotImplementedError(f"the derivative for '{name}' is not implemented.")


def dropout_scale(p, train):
    """The scale native_dropout's backward multiplies by (ATen's formula)."""
    if train is False:
        return 1.0
    return 0.0 if p == 1 else 1.0 / (1.0 - p)


def _reduce(t, reduction):
    return t.mean() if reduction == 1 else (t.sum() if reduction == 2 else t)


def _grad_scale(grad, reduction, numel):
    return grad / numel if reduction == 1 else grad


def binary_cross_entropy_target_backward(grad, self, target, weight, reduction):
    g = ember.log(1 - self) - ember.log(self)
    g = g * _grad_scale(grad, reduction, self.numel())
    return g * weight if weight is not None else g


def binary_cross_entropy_with_logits_backward(grad, self, target, weight, pos_weight,
                                              reduction):
    s = ember.sigmoid(self)
    if pos_weight is not None:
        t = pos_weight * target
        g = (t + 1 - target) * s - t
    else:
        g = s - target
    g = g * _grad_scale(grad, reduction, self.numel())
    return g * weight if weight is not None else g


def binary_cross_entropy_with_logits_target_backward(grad, self, target, weight, pos_weight,
                                                     reduction):
    if pos_weight is not None:
        # d/dy [(1-y) x + (1 + (pw-1) y) softplus(-x)] = -x + (pw-1) softplus(-x)
        g = -self + (pos_weight - 1) * -ember.nn.functional.logsigmoid(self)
    else:
        g = -self
    g = g * _grad_scale(grad, reduction, self.numel())
    return g * weight if weight is not None else g


def embedding_dense_double_backward(grad, indices, padding_idx):
    out = ember.embedding(grad, indices)
    if padding_idx >= 0:
        keep = (indices != padding_idx).unsqueeze(-1).to(out.dtype)
        out = out * keep
    return out


def softmax_double_backward(grad, grad_output, dim, output):
    return grad_output * grad - (output * grad_output).sum(dim, keepdim=True) * grad - \
        grad_output * (output * grad).sum(dim, keepdim=True)


def log_softmax_double_backward(grad, grad_output, dim, output):
    return -grad_output.sum(dim, keepdim=True) * ember.exp(output) * grad


def elu_double_backward(grad, grad_output, alpha, scale, input_scale, is_result, self_or_result):
    """d elu_backward / d self_or_result: only the negative branch depends on it (its
    backward is negcoef * input_scale * exp(x * input_scale), or input_scale * (y + negcoef)
    in terms of the result)."""
    negative = (self_or_result < 0).to(grad.dtype)
    if is_result:
        return grad * grad_output * input_scale * negative
    return elu_backward(grad * grad_output * input_scale, alpha, scale, input_scale, False,
                        self_or_result) * negative


def gelu_double_backward(grad, grad_output, self, approximate):
    """gelu'' times ``grad * grad_output``: phi(x) (2 - x^2) exactly; for the tanh form,
    (1 - t^2) (u' + x (u'' - 2 t u'^2) / 2) with u = k (x + c x^3), t = tanh(u)."""
    x = self
    if approximate == "tanh":
        k, c = 0.7978845608028654, 0.044715
        t = ember.tanh(k * (x + c * x * x * x))
        du = k * (1 + 3 * c * x * x)
        second = (1 - t * t) * (du + 0.5 * x * (6 * k * c * x - 2 * t * du * du))
    else:
        second = ember.exp(-0.5 * x * x) * 0.3989422804014327 * (2 - x * x)
    return grad * grad_output * second


def silu_double_backward(grad, grad_output, self):
    """silu'' = s (1 - s) (2 + x (1 - 2 s)), s = sigmoid(x) (PyTorch differentiates its
    composite silu_backward)."""
    s = ember.sigmoid(self)
    return grad * grad_output * s * (1 - s) * (2 + self * (1 - 2 * s))


def mish_double_backward(grad, grad_output, self):
    """mish'' = s (1 - t^2) (2 + x (1 - s) - 2 x s t), s = sigmoid(x), t = tanh(softplus(x))
    (PyTorch differentiates its composite mish_backward)."""
    s = ember.sigmoid(self)
    t = ember.tanh(ember.nn.functional.softplus(self))
    return grad * grad_output * s * (1 - t * t) * (2 + self * (1 - s) - 2 * self * s * t)


def softplus_double_backward(grad, self, beta, threshold):
    """softplus'' = beta s (1 - s), s = sigmoid(beta x), below the linear threshold."""
    x = self * beta
    s = ember.sigmoid(x)
    return grad * s * (1 - s) * (x < threshold).to(grad.dtype) * beta


def log_sigmoid_double_backward(grad, self):
    """logsigmoid'' = -s (1 - s), s = sigmoid(x)."""
    s = ember.sigmoid(self)
    return grad * (s - 1) * s


__all__ = [*_HELPERS, "not_implemented", "dropout_scale",
           "binary_cross_entropy_target_backward", "binary_cross_entropy_with_logits_backward",
           "binary_cross_entropy_with_logits_target_backward", "embedding_dense_double_backward",
           "softmax_double_backward", "log_softmax_double_backward", "group_norm_backward_all",
           "elu_double_backward", "gelu_double_backward", "silu_double_backward",
           "mish_double_backward", "softplus_double_backward", "log_sigmoid_double_backward",
           "rnn_layer_backward", "rnn_layer_jvp"]


def group_norm_backward_all(grads, input, mean, rstd, weight, N, C, HxW, group, mask):
    """native_group_norm's backward with PyTorch's three differentiable outputs: the fused kernel
    for the output's gradient, plus what arrives through ``mean`` and ``rstd`` (each a function
    of the group's elements: d mean/dx = 1/M, d rstd/dx = -rstd^3 (x - mean) / M)."""
    g_out, g_mean, g_rstd = grads
    if g_out is not None:
        gi, gw, gb = native_group_norm_backward(g_out, input, mean, rstd, weight, N, C, HxW,
                                                group, mask)
    else:
        gi = gw = gb = None
    if mask[0] and (g_mean is not None or g_rstd is not None):
        x = input.reshape(N, group, -1)
        m = x.shape[2]
        extra = 0
        if g_mean is not None:
            extra = g_mean.unsqueeze(-1) / m
        if g_rstd is not None:
            centered = x - mean.unsqueeze(-1)
            extra = extra - (g_rstd * rstd.pow(3)).unsqueeze(-1) * centered / m
        extra = extra.expand(x.shape).reshape(input.shape)
        gi = extra if gi is None else gi + extra
    return gi, gw, gb


def rnn_layer_backward(grads, input, weight_ih, weight_hh, bias_ih, bias_hh, hx, cx, output,
                       workspace, reverse, batch_sizes, mode, grad_input_mask):
    """_rnn_layer's gradients. Outside create_graph: the fused ``_rnn_layer_backward`` (BPTT in
    one kernel). Under create_graph (grad mode on while the backward runs), PyTorch's
    ``mkldnn_rnn_layer_differentiable_backward`` role: the layer is recomputed step by step in
    ember ops from its inputs and differentiated with create_graph, so the gradients have a
    graph of their own."""
    is_lstm = mode == LSTM
    grad_output, grad_hy, grad_cy = grads[0], grads[1], grads[2] if is_lstm else None
    if not ember.is_grad_enabled():
        return ops.aten._rnn_layer_backward.default(
            input, weight_ih, weight_hh, bias_ih, bias_hh, hx, cx, output, workspace,
            grad_output, grad_hy, grad_cy, reverse, batch_sizes, mode)
    args = (input, weight_ih, weight_hh, bias_ih, bias_hh, hx, cx)
    wanted = [i for i, (a, m) in enumerate(zip(args, grad_input_mask))
              if m and a is not None and a.requires_grad]
    out, hy, cy = layer_steps(input, weight_ih, weight_hh, bias_ih, bias_hh, hx, cx, reverse,
                               batch_sizes, mode)
    outs, gouts = [out, hy], [grad_output, grad_hy]
    if is_lstm:
        outs.append(cy)
        gouts.append(grad_cy)
    got = ember.autograd.grad(outs, [args[i] for i in wanted], gouts, create_graph=True,
                              allow_unused=True)
    result = [None] * len(args)
    for i, g in zip(wanted, got):
        result[i] = g if g is not None else ember.zeros_like(args[i])
    return tuple(result)


def rnn_layer_jvp(input_p, input_t, weight_ih_p, weight_ih_t, weight_hh_p, weight_hh_t, bias_ih_p,
                  bias_ih_t, bias_hh_p, bias_hh_t, hx_p, hx_t, cx_p, cx_t, reverse, batch_sizes,
                  mode, cy):
    """_rnn_layer's forward derivative (output, h_n, c_n): the JVP of the step-by-step
    recomputation (the layer is a composition of differentiable ops, so its JVP is theirs)."""
    primals = [input_p, weight_ih_p, weight_hh_p, bias_ih_p, bias_hh_p, hx_p, cx_p]
    tangents = [input_t, weight_ih_t, weight_hh_t, bias_ih_t, bias_hh_t, hx_t, cx_t]
    present = [i for i, p in enumerate(primals) if p is not None]

    def layer(*args):
        full = [None] * len(primals)
        for i, a in zip(present, args):
            full[i] = a
        out, hy, c = layer_steps(*full, reverse, batch_sizes, mode)
        return out, hy, (c if c is not None else cy.new_zeros(cy.shape))

    _, t = ember.func.jvp(layer, tuple(primals[i] for i in present),
                          tuple(tangents[i] if tangents[i] is not None
                                else ember.zeros_like(primals[i]) for i in present))
    return t
