"""SyncBatchNorm's primitives (``torch.batch_norm_stats``, ``batch_norm_elemt``,
``batch_norm_gather_stats[_with_counts]``, ``batch_norm_backward_reduce``,
``batch_norm_backward_elemt``, ``batch_norm_update_stats``), written in ember ops with the
formulas of ATen's CUDA kernels (``Normalization.cuh``): per-channel statistics of a local batch,
their combination over ranks (Chan's parallel variance), the normalization, and the two halves
of the backward. ATen has these on CUDA only, except ``batch_norm_update_stats`` (CPU and
CUDA), so the others are registered on the CUDA key here: a CPU tensor gets PyTorch's "Could
not run ... 'CPU' backend". The statistics of a half or bfloat16 input are float32, as there.
"""
from ..._core import dtype as D
from ..._ops.overload import ops
from ..registration import register

_aten = ops.aten


def _stat_dtype(input):
    return D.float32 if input._dtype in (D.float16, D.bfloat16) else input._dtype


def _reduce_dims(input):
    return [0] + list(range(2, input.dim()))


def _channel(t, input):
    """A per-channel vector shaped to broadcast against ``input`` (N, C, *)."""
    return t.reshape([1, -1] + [1] * (input.dim() - 2))


def _invstd(var, eps):
    """ATen's InvStd: 1 / sqrt(var + eps), and 0 where var and eps are both 0."""
    inv = (var + eps).rsqrt()
    if eps == 0:
        inv = _aten.where.self._call(var == 0, _aten.zeros_like.default._call(
            inv, None, None, None, None, None), inv)
    return inv


def batch_norm_stats(input, eps):
    """(mean, invstd) of each channel over the batch and spatial dims (biased variance)."""
    x = input.to(_stat_dtype(input))
    dims = _reduce_dims(input)
    mean = x.mean(dims)
    var = ((x - _channel(mean, x)) ** 2).mean(dims)
    return mean, _invstd(var, eps)


def batch_norm_elemt(input, weight, bias, mean, invstd, eps):
    x = input.to(_stat_dtype(input))
    out = (x - _channel(mean, x)) * _channel(invstd, x)
    if weight is not None:
        out = out * _channel(weight, x)
    if bias is not None:
        out = out + _channel(bias, x)
    return out.to(input._dtype)


def batch_norm_gather_stats_with_counts(input, mean, invstd, running_mean, running_var,
                                        momentum, eps, counts):
    """The global (mean, invstd) from each rank's (mean, invstd, count), rows of ``mean`` and
    ``invstd``; the running statistics (unbiased variance) are updated in place."""
    c = counts.to(mean._dtype).unsqueeze(1)
    n = c.sum()
    avg = (mean * c).sum(0) / n
    var = 1 / (invstd * invstd) - eps
    var_n = (var * c).sum(0) + (((mean - avg) ** 2) * c).sum(0)
    if running_mean is not None:
        running_mean.copy_(running_mean * (1 - momentum) + avg * momentum)
    if running_var is not None:
        running_var.copy_(running_var * (1 - momentum) + var_n / (n - 1) * momentum)
    return avg, _invstd(var_n / n, eps)


def batch_norm_gather_stats(input, mean, invstd, running_mean, running_var, momentum, eps,
                            count):
    counts = _aten.full.default._call((mean.size(0),), count, mean._dtype, None, mean.device,
                                      None)
    return batch_norm_gather_stats_with_counts(input, mean, invstd, running_mean, running_var,
                                               momentum, eps, counts)


def batch_norm_backward_reduce(grad_out, input, mean, invstd, weight, input_g, weight_g,
                               bias_g):
    """(sum_dy, sum_dy_xmu, grad_weight, grad_bias) per channel; the ones not asked for are
    None (ATen's undefined tensors)."""
    dims = _reduce_dims(input)
    dtype = _stat_dtype(input)
    dy = grad_out.to(dtype)
    sum_dy = dy.sum(dims)
    sum_dy_xmu = (dy * (input.to(dtype) - _channel(mean, dy))).sum(dims)
    param_dtype = weight._dtype if weight is not None else dtype
    return (sum_dy if input_g else None, sum_dy_xmu if input_g else None,
            (sum_dy_xmu * invstd).to(param_dtype) if weight_g else None,
            sum_dy.to(param_dtype) if bias_g else None)


def batch_norm_backward_elemt(grad_out, input, mean, invstd, weight, sum_dy, sum_dy_xmu,
                              count):
    """The input gradient from the reduced sums, ``count`` holding each rank's count."""
    dtype = _stat_dtype(input)
    norm = count.sum().to(dtype).reciprocal()  # (on the device: no synchronisation)
    x, dy = input.to(dtype), grad_out.to(dtype)
    factor_1 = invstd * invstd * sum_dy_xmu * norm
    factor_2 = invstd if weight is None else weight.to(dtype) * invstd
    grad = (dy - _channel(sum_dy * norm, dy) - (x - _channel(mean, x)) * _channel(factor_1, x))
    return (grad * _channel(factor_2, x)).to(input._dtype)


def batch_norm_update_stats(input, running_mean, running_var, momentum):
    """(mean, biased variance) of each channel, and the running statistics (unbiased variance)
    updated in place, as ATen's batch_norm_update_stats_cpu."""
    dims = _reduce_dims(input)
    x = input.to(_stat_dtype(input))
    mean = x.mean(dims)
    var = ((x - _channel(mean, x)) ** 2).mean(dims)
    n = input.numel() // input.size(1)
    if running_mean is not None:
        running_mean.copy_(running_mean * (1 - momentum) + mean * momentum)
    if running_var is not None:
        running_var.copy_(running_var * (1 - momentum) + var * (n / (n - 1)) * momentum)
    return mean.to(input._dtype), var.to(input._dtype)


for _kernel in (batch_norm_stats, batch_norm_elemt, batch_norm_gather_stats,
                batch_norm_gather_stats_with_counts, batch_norm_backward_reduce,
                batch_norm_backward_elemt):
    register(_kernel.__name__, "CUDA", _kernel)
