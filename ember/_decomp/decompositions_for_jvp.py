"""The decompositions forward-mode AD runs for ops that have no forward formula (PyTorch's
``torch/_decomp/decompositions_for_jvp.py`` and its mechanism in ``VariableType``).

When an input of such an op carries a tangent, its autograd kernel runs the op's decomposition
instead of the op (``ember/autograd/derivatives.py``): the decomposition's ops carry the
tangents, and record the backward graph too. The backward ops of the normalizations get
versions of their own here that recompute the mean and variance from the input, so the
tangents flow through them rather than through the saved statistics; the other ops use their
ordinary decomposition (``decompositions.py``). An op with neither still raises PyTorch's "not
implemented" error."""
import math

from .. import ops
from . import decomposition_table, register_decomposition

aten = ops.aten

decomposition_table_for_jvp = {}

# the ops PyTorch registers for forward AD (``_register_jit_decomposition_for_jvp``), those
# ember declares (it has no nll_loss2d or cuDNN/MIOpen batch norm)
JVP_DECOMPOSED = ("trace.default", "nll_loss_backward.default",
                  "_log_softmax_backward_data.default", "_softmax_backward_data.default",
                  "log_sigmoid_forward.default", "native_layer_norm_backward.default",
                  "native_batch_norm_backward.default", "batch_norm_backward.default")


def register_decomposition_for_jvp(fn):
    return register_decomposition(fn, registry=decomposition_table_for_jvp)


def jvp_decomposition(op):
    """The function forward AD runs in place of ``op`` (an OpOverload), or None."""
    if f"{op._opname}.{op._overloadname}" not in JVP_DECOMPOSED or op.namespace != "aten":
        return None
    return decomposition_table_for_jvp.get(op) or decomposition_table.get(op)


def recompute_mean_var(input, rstd, inner_dim_indices, keepdim):
    """The mean and 1/std of ``input`` over ``inner_dim_indices``, computed from the input so
    that they carry its tangent; eps is what ``rstd`` implies, held constant."""
    var, mean = aten.var_mean.correction(input, inner_dim_indices, correction=0,
                                         keepdim=keepdim)
    eps = aten.detach.default(aten.sub.Tensor(aten.pow.Tensor_Scalar(
        aten.reciprocal.default(rstd), 2), var))
    return mean, aten.rsqrt.default(aten.add.Tensor(var, eps))


def _zeros(shape, like):
    return aten.zeros.default(list(shape), dtype=like.dtype, device=like.device)


@register_decomposition_for_jvp(aten.native_layer_norm_backward.default)
def native_layer_norm_backward(grad_out, input, normalized_shape, mean, rstd, weight, bias,
                               output_mask):
    input_shape = list(input.shape)
    input_ndim = input.dim()
    axis = input_ndim - len(normalized_shape)
    inner_dim_indices = list(range(axis, input_ndim))
    outer_dim_indices = list(range(axis))
    N = math.prod(input_shape[axis:])
    M = math.prod(input_shape[:axis])
    if M <= 0 or N <= 0:
        return (_zeros(input_shape, input), _zeros(input_shape[axis:], input),
                _zeros(input_shape[axis:], input))
    mean_, rstd_ = recompute_mean_var(input, rstd, inner_dim_indices, keepdim=True)
    x_hat = aten.mul.Tensor(aten.sub.Tensor(input, mean_), rstd_)
    grad_x_hat = grad_out if weight is None else aten.mul.Tensor(grad_out, weight)
    a = aten.mul.Scalar(grad_x_hat, N)
    b = aten.sum.dim_IntList(grad_x_hat, inner_dim_indices, True)
    c2 = aten.sum.dim_IntList(aten.mul.Tensor(grad_x_hat, x_hat), inner_dim_indices, True)
    inner = aten.sub.Tensor(aten.sub.Tensor(a, b), aten.mul.Tensor(x_hat, c2))
    # (masked-off gradients are zeros, not None, as PyTorch's: vjp needs tensors)
    if output_mask[0]:
        d_input = aten.mul.Tensor(aten.div.Scalar(rstd_, N), inner)
    else:
        d_input = aten.zeros_like.default(input)
    if output_mask[1] and weight is not None:
        prod = aten.mul.Tensor(grad_out, x_hat)
        d_weight = aten.sum.dim_IntList(prod, outer_dim_indices, False) \
            if outer_dim_indices else prod
    elif weight is not None:
        d_weight = aten.zeros_like.default(weight)
    else:
        d_weight = _zeros((), input)
    if output_mask[2] and bias is not None:
        d_bias = aten.sum.dim_IntList(grad_out, outer_dim_indices, False) \
            if outer_dim_indices else aten.clone.default(grad_out)
    elif bias is not None:
        d_bias = aten.zeros_like.default(bias)
    else:
        d_bias = _zeros((), input)
    return d_input, d_weight, d_bias


@register_decomposition_for_jvp(aten.native_batch_norm_backward.default)
def native_batch_norm_backward(grad_out, input, weight, running_mean, running_var, save_mean,
                               save_invstd, train, eps, output_mask):
    input_shape = list(input.shape)
    input_rank = input.dim()
    if input_rank < 2:
        raise AssertionError(f"rank of the input must be at least 2, got {input_rank}")
    axis = 1
    num_features = math.prod(input_shape) / input_shape[axis]
    if train:
        if save_mean is None or save_invstd is None:
            raise AssertionError("when train=True, save_mean and save_invstd are required")
        reduction_dims = [0] + list(range(2, input_rank))
        mean, invstd = recompute_mean_var(input, save_invstd, reduction_dims, keepdim=False)
    else:
        if running_mean is None or running_var is None:
            raise AssertionError(
                "running_mean and running_var must not be None when train=False")
        mean = running_mean
        invstd = aten.rsqrt.default(aten.add.Scalar(running_var, eps))
    broadcast_mask = [1] * input_rank
    broadcast_mask[axis] = input_shape[axis]
    reduction_axes = [i for i in range(input_rank) if i != axis]
    mean = aten.reshape.default(mean, broadcast_mask)
    norm = 1.0 / num_features
    grad_output_sum = aten.sum.dim_IntList(grad_out, reduction_axes)
    dot_p = aten.sum.dim_IntList(
        aten.mul.Tensor(grad_out, aten.sub.Tensor(input, mean)), reduction_axes)
    grad_mean = aten.reshape.default(aten.mul.Scalar(grad_output_sum, norm), broadcast_mask)
    proj_scale = aten.reshape.default(aten.mul.Tensor(
        aten.mul.Scalar(dot_p, norm), aten.mul.Tensor(invstd, invstd)), broadcast_mask)
    if weight is None:
        grad_scale = aten.mul.Scalar(aten.reshape.default(invstd, broadcast_mask), 1.0)
    else:
        grad_scale = aten.reshape.default(aten.mul.Tensor(invstd, weight), broadcast_mask)
    if train:
        proj = aten.mul.Tensor(aten.sub.Tensor(input, mean), proj_scale)
        grad_input = aten.mul.Tensor(aten.sub.Tensor(aten.sub.Tensor(grad_out, proj),
                                                     grad_mean), grad_scale)
    else:
        grad_input = aten.mul.Tensor(grad_out, grad_scale)
    if output_mask[1]:
        grad_weight = aten.mul.Tensor(dot_p, invstd)
    elif weight is not None:
        grad_weight = aten.zeros_like.default(weight)
    else:
        grad_weight = _zeros((), input)
    if output_mask[2]:
        grad_bias = grad_output_sum
    else:
        grad_bias = aten.zeros_like.default(grad_output_sum)
    return grad_input, grad_weight, grad_bias


@register_decomposition_for_jvp(aten.batch_norm_backward.default)
def batch_norm_backward(grad_out, input, weight, running_mean, running_var, save_mean, save_var,
                        update, eps, output_mask, reserve):
    return native_batch_norm_backward(grad_out, input, weight, running_mean, running_var,
                                      save_mean, save_var, update, eps, output_mask)
