"""``ember.nn.functional``: the stateless forms of the layers, with PyTorch's signatures.

This module is the Python layer over the aten ops: it normalizes arguments (``reduction=`` and
the legacy ``size_average``/``reduce``, ``padding_idx``, implicit softmax dims, ``inplace=``),
raises PyTorch's argument errors and warnings, and calls the op PyTorch's functional calls. The
heavy ops are native with fused backward kernels (``ember/_kernels/cpu/nn.py``); losses and
distances PyTorch builds from other ops are written here the same way, in ember ops.
Convolution, pooling, resampling, padding and folding live in ``_functional_conv``.
"""
import enum
import functools
import importlib.util
import math
import types
import warnings

import numpy as np

import ember
from .._core.api_name import as_ember
from .. import overrides as _overrides
from .._ops.bindings import _index, check_numbers as _check_numbers
from .._ops.overload import ops
from ..overrides import _TF_ON
from . import _reduction as _Reduction
from .._kernels.rules.nn import check_loss_dtype as _check_loss_dtype


class _ScalingType(enum.IntEnum):
    """How a scale applies to a _scaled_mm_v2 operand (ATen's at::blas::ScalingType codes)."""
    TensorWise = 0
    RowWise = 1
    BlockWise1x16 = 2
    BlockWise1x32 = 3
    BlockWise1x128 = 4
    BlockWise128x128 = 5


class _SwizzleType(enum.IntEnum):
    """The layout of a _scaled_mm_v2 scale (ATen's at::blas::SwizzleType codes)."""
    NO_SWIZZLE = 0
    SWIZZLE_32_4_4 = 1


ScalingType = _ScalingType
SwizzleType = _SwizzleType

_aten = ops.aten


# ---------------------------------------------------------------------------------------------
# reduction= handling (torch.nn._reduction)

_reduction_enum = _Reduction.get_enum
_check_reduction = _Reduction.get_enum  # (for losses that check before computing)


def _int_arg(fname, pos, name, v):
    """An int argument of the binding PyTorch's function calls (ember calls the op): that
    binding's TypeError for another type, the Python int for an integral 0-dim tensor."""
    _check_numbers(fname, ((pos, name, v, "int"),))
    return _index(v)


def _legacy_reduction(size_average, reduce, reduction, emit_warning=True):
    """``reduction``, unless the legacy size_average/reduce are given: they override it."""
    if size_average is None and reduce is None:
        return reduction
    return _Reduction.legacy_get_string(size_average, reduce, emit_warning)


def _reduce(loss, reduction):
    r = _Reduction.get_enum(reduction)
    return loss if r == 0 else loss.mean() if r == 1 else loss.sum()


def _check_same_size(name, input, target):
    if target.size() != input.size():
        warnings.warn(f"Using a target size ({target.size()}) that is different to the input "
                      f"size ({input.size()}). This will likely lead to incorrect results due to "
                      f"broadcasting. Please ensure they have the same size.", stacklevel=3)


# ---------------------------------------------------------------------------------------------
# Linear layers and embeddings

# ``input @ weight.T + bias`` (one fused addmm whenever the bias allows): the generated binding
# itself, as PyTorch's F.linear is torch._C._nn.linear (its argument errors are the parser's)
linear = ember._C._nn.linear


def bilinear(input1, input2, weight, bias=None):
    return _aten.bilinear.default(input1, input2, weight, bias)


def grouped_mm(mat_a, mat_b, *, offs=None, bias=None, out_dtype=None):
    """One product per group, the groups of a 2-D operand delimited by the int32 ``offs``
    (the experts of a mixture-of-experts layer): ``ember._grouped_mm``."""
    return _aten._grouped_mm.default(mat_a, mat_b, offs, bias, out_dtype)


def _padding_idx(padding_idx, weight):
    if padding_idx is None:
        return -1
    num = weight.size(0)
    if padding_idx > 0:
        if padding_idx >= num:
            raise AssertionError("Padding_idx must be within num_embeddings")
    elif padding_idx < 0:
        if padding_idx < -num:
            raise AssertionError("Padding_idx must be within num_embeddings")
        padding_idx = num + padding_idx
    return padding_idx


def _no_grad_embedding_renorm_(weight, input, max_norm, norm_type):
    """Rescale, in place and outside autograd, the rows of ``weight`` that ``input`` looks up
    to norms of at most ``max_norm``."""
    _aten.embedding_renorm_.default(weight.detach(), input, max_norm, norm_type)


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    padding_idx = _padding_idx(padding_idx, weight)
    if max_norm is not None:
        input = input.contiguous()
        _no_grad_embedding_renorm_(weight, input, max_norm, norm_type)
    return ember.embedding(weight, input, padding_idx, scale_grad_by_freq, sparse)


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2,
                  scale_grad_by_freq=False, mode="mean", sparse=False, per_sample_weights=None,
                  include_last_offset=False, padding_idx=None):
    """PyTorch's argument handling (a 2-D input is a batch of equal bags), then
    ``aten::embedding_bag`` (``ember/_kernels/composite/losses.py``)."""
    if weight.dtype == ember.long and input.is_floating_point():
        warnings.warn("Argument order of nn.functional.embedding_bag was changed. Usage "
                      "`embedding_bag(weight, input, ...)` is deprecated, and should now be "
                      "`embedding_bag(input, weight, ...)`.", stacklevel=2)
        weight, input = input, weight
    if per_sample_weights is not None and input.size() != per_sample_weights.size():
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) "
                         f"is not None, then it must have the same shape as the input "
                         f"({input.shape})")
    if not weight.dim() == 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension "
                         f"{weight.dim()}")
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError(f"if input is 2D, then offsets has to be None, as input is treated "
                             f"is a mini-batch of fixed length sequences. However, found offsets "
                             f"of type {type(offsets)}")
        offsets = ember.arange(0, input.numel(), input.size(1), dtype=input.dtype,
                               device=input.device)
        include_last_offset = False
        input = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension "
                         f"{input.dim()}")
    if mode not in _BAG_MODES:
        raise ValueError("mode has to be one of sum, mean or max")
    if mode == "max":
        if scale_grad_by_freq:
            raise ValueError("max mode does not support scaling the gradient by the frequency")
        if sparse:
            raise ValueError("max mode does not support sparse weights")
    if max_norm is not None:
        with ember.no_grad():
            _aten.embedding_renorm_.default(weight, input, max_norm, norm_type)
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. "
                                  f"per_sample_weights is only supported for mode='sum' "
                                  f"(got mode='{mode}'). Please open a feature request on "
                                  f"GitHub.")
    return ember.embedding_bag(weight, input, offsets, scale_grad_by_freq, _BAG_MODES[mode],
                               sparse, per_sample_weights, include_last_offset, padding_idx)[0]


_BAG_MODES = {"sum": 0, "mean": 1, "max": 2}


def one_hot(tensor, num_classes=-1):
    if num_classes.__class__ is not int:
        num_classes = _int_arg("one_hot", 2, "num_classes", num_classes)
    if tensor.dtype != ember.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if num_classes == -1:
        if tensor.numel() == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(tensor.max()) + 1
    if tensor.numel():
        if int(tensor.min()) < 0:
            raise RuntimeError("Class values must be non-negative.")
        if int(tensor.max()) >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
    return (tensor.unsqueeze(-1) == ember.arange(num_classes)).to(ember.int64)


# ---------------------------------------------------------------------------------------------
# Normalization

def _verify_batch_size(size):
    n = size[0]
    for s in size[2:]:
        n *= s
    if n == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                         f"{size}")


def _verify_spatial_size(size):
    n = 1
    for s in size[2:]:
        n *= s
    if n == 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size "
                         f"{size}")


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    if training:
        _verify_batch_size(input.size())
    if training and eps <= 0.0:
        raise ValueError(f"batch_norm eps must be positive during training, but got {eps}")
    elif eps < 0.0:
        raise ValueError(f"batch_norm eps must be non-negative, but got {eps}")
    return ember.batch_norm(input, weight, bias, running_mean, running_var, training, momentum,
                           eps, False)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-5):
    if use_input_stats:
        _verify_spatial_size(input.size())
    return ember.instance_norm(input, weight, bias, running_mean, running_var, use_input_stats,
                              momentum, eps, False)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    # (the binding, as PyTorch's torch.layer_norm: its TypeError for a bad shape or eps)
    return ember.layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    if input.dim() < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received "
                           f"{input.dim()}")
    _verify_batch_size([input.size(0) * input.size(1) // num_groups, num_groups] +
                       list(input.size()[2:]))
    return ember.group_norm(input, num_groups, weight, bias, eps)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    return ember.rms_norm(input, list(normalized_shape), weight, eps)


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """Each channel divided by (k + alpha * mean of squares over ``size`` neighbouring
    channels)^beta: PyTorch's zero-padded average pool over the channel axis, in its order of
    operations (so the rounding is the same)."""
    dim = input.dim()
    if dim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {dim} dimensions)")
    if input.numel() == 0:
        return input
    div = input.mul(input)
    if dim == 3:
        div = pad(div.unsqueeze(1), (0, 0, size // 2, (size - 1) // 2))
        div = avg_pool2d(div, (size, 1), stride=1).squeeze(1)
    else:
        sizes = input.size()
        div = div.view(sizes[0], 1, sizes[1], sizes[2], -1)
        div = pad(div, (0, 0, 0, 0, size // 2, (size - 1) // 2))
        div = avg_pool3d(div, (size, 1, 1), stride=1).squeeze(1).view(sizes)
    div = div.mul(alpha).add(k).pow(beta)
    return input / div


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    # Tensor.norm, as PyTorch: a reduced-precision input's norm is accumulated in float and
    # rounded once, and its gradient at a zero vector is zero (a square root's would be NaN)
    if out is None:
        denom = input.norm(p, dim, keepdim=True).clamp_min(eps).expand_as(input)
        return input / denom
    denom = input.norm(p, dim, keepdim=True).clamp_min_(eps).expand_as(input)
    return ember.div(input, denom, out=out)


# ---------------------------------------------------------------------------------------------
# Dropout

def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def dropout(input, p=0.5, training=True, inplace=False):
    _check_p(p)
    return ember.dropout_(input, p, training) if inplace else ember.dropout(input, p, training)


def _feature_dropout(name, input, p, training, inplace, dims):
    _check_p(p)
    nd = input.dim()
    if nd not in dims:
        if name == "dropout1d":
            raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {nd}D "
                               f"input. Note that dropout1d exists to provide channel-wise "
                               f"dropout on inputs with 1 spatial dimension, a channel "
                               f"dimension, and an optional batch dimension (i.e. 2D or 3D "
                               f"inputs).")
        warnings.warn(f"{name}: Received a {nd}-D input to {name}(), which is deprecated and "
                      f"will result in an error in a future release. To retain the behavior and "
                      f"silence this warning, please use dropout instead. Note that {name} "
                      f"exists to provide channel-wise dropout on inputs with "
                      f"{dims[1] - 2} spatial dimensions, a channel dimension, and an "
                      f"optional batch dimension (i.e. {dims[0]}D or {dims[1]}D inputs).",
                      stacklevel=3)
    if name == "dropout2d" and nd == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise "
                      "1D dropout behavior is desired - input is interpreted as shape (N, C, L), "
                      "where C is the channel dim. This behavior will change in a future release "
                      "to interpret the input as one without a batch dimension, i.e. shape "
                      "(C, H, W). To maintain the 1D channel-wise dropout behavior, please switch "
                      "to using dropout1d instead.", stacklevel=3)
    # PyTorch's dropout2d takes every input as batched (a 3-D one as (N, C, L)), so its result
    # is feature_dropout's own (the input itself when not training); the others add a batch dim
    batched = name == "dropout2d" or nd == dims[1]
    x = input if batched else input.unsqueeze(0)
    if inplace:  # (an unbatched input is written through its unsqueezed view)
        ember.feature_dropout_(x, p, training)
        return input
    result = ember.feature_dropout(x, p, training)
    return result if batched else result.squeeze(0)


def dropout1d(input, p=0.5, training=True, inplace=False):
    return _feature_dropout("dropout1d", input, p, training, inplace, (2, 3))


def dropout2d(input, p=0.5, training=True, inplace=False):
    return _feature_dropout("dropout2d", input, p, training, inplace, (3, 4))


def dropout3d(input, p=0.5, training=True, inplace=False):
    return _feature_dropout("dropout3d", input, p, training, inplace, (4, 5))


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    _check_p(p)
    if inplace:
        return ember.alpha_dropout_(input, p, training)
    return ember.alpha_dropout(input, p, training)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    _check_p(p)
    if inplace:
        return ember.feature_alpha_dropout_(input, p, training)
    return ember.feature_alpha_dropout(input, p, training)


# ---------------------------------------------------------------------------------------------
# Activations: the op and, for inplace=True, its in-place form.

def threshold(input, threshold, value, inplace=False):
    if inplace:
        return _aten.threshold_.default(input, threshold, value)
    return _aten.threshold.default(input, threshold, value)


def threshold_(input, threshold, value):
    return _aten.threshold_.default(input, threshold, value)


def relu(input, inplace=False):
    return input.relu_() if inplace else input.relu()


def relu_(input):
    return input.relu_()


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    if inplace:
        return _aten.hardtanh_.default(input, min_val, max_val)
    return _aten.hardtanh.default(input, min_val, max_val)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return _aten.hardtanh_.default(input, min_val, max_val)


def relu6(input, inplace=False):
    return _aten.relu6_.default(input) if inplace else _aten.relu6.default(input)


def elu(input, alpha=1.0, inplace=False):
    return _aten.elu_.default(input, alpha) if inplace else _aten.elu.default(input, alpha)


def elu_(input, alpha=1.0):
    return _aten.elu_.default(input, alpha)


def selu(input, inplace=False):
    return _aten.selu_.default(input) if inplace else _aten.selu.default(input)


def selu_(input):
    return _aten.selu_.default(input)


def celu(input, alpha=1.0, inplace=False):
    return _aten.celu_.default(input, alpha) if inplace else _aten.celu.default(input, alpha)


def celu_(input, alpha=1.0):
    return _aten.celu_.default(input, alpha)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    if inplace:
        return _aten.leaky_relu_.default(input, negative_slope)
    return _aten.leaky_relu.default(input, negative_slope)


def leaky_relu_(input, negative_slope=0.01):
    return _aten.leaky_relu_.default(input, negative_slope)


def prelu(input, weight):
    return _aten.prelu.default(input, weight)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    if inplace:
        return ember.rrelu_(input, lower, upper, training)
    return ember.rrelu(input, lower, upper, training)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    return ember.rrelu_(input, lower, upper, training)


def glu(input, dim=-1):
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    return _aten.glu.default(input, dim)


def gelu(input, approximate="none"):
    return _aten.gelu.default(input, approximate=approximate)


def logsigmoid(input):
    return _aten.log_sigmoid.default(input)


def hardshrink(input, lambd=0.5):
    return _aten.hardshrink.default(input, lambd)


def tanhshrink(input):
    return input - input.tanh()


def softsign(input):
    return input / (ember.abs(input) + 1)


def softplus(input, beta=1, threshold=20):
    return _aten.softplus.default(input, beta, threshold)


def softshrink(input, lambd=0.5):
    return _aten.softshrink.default(input, lambd)


def tanh(input):
    return input.tanh()


def sigmoid(input):
    return input.sigmoid()


def hardsigmoid(input, inplace=False):
    return _aten.hardsigmoid_.default(input) if inplace else _aten.hardsigmoid.default(input)


def silu(input, inplace=False):
    return _aten.silu_.default(input) if inplace else _aten.silu.default(input)


def mish(input, inplace=False):
    return _aten.mish_.default(input) if inplace else _aten.mish.default(input)


def hardswish(input, inplace=False):
    return _aten.hardswish_.default(input) if inplace else _aten.hardswish.default(input)


# ---------------------------------------------------------------------------------------------
# softmax family

def _get_softmax_dim(name, ndim, stacklevel):
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to "
                  f"include dim=X as an argument.", stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _get_softmax_dim("softmax", input.dim(), _stacklevel)
    return input.softmax(dim, dtype=dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _get_softmax_dim("log_softmax", input.dim(), _stacklevel)
    return input.log_softmax(dim, dtype=dtype)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _get_softmax_dim("softmin", input.dim(), _stacklevel)
    return _aten.softmax.int(-input, dim, dtype)  # (negated before the conversion, as PyTorch)


def gumbel_softmax(logits, tau=1, hard=False, eps=1e-10, dim=-1):
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    u = ember.rand(logits.shape, dtype=logits.dtype)
    gumbels = -ember.log(-ember.log(u))  # -log(Exp(1)) samples
    y_soft = softmax((logits + gumbels) / tau, dim)
    if not hard:
        return y_soft
    d = dim % max(logits.dim(), 1)
    index = y_soft.argmax(d, keepdim=True)
    shape = [1] * logits.dim()
    shape[d] = logits.shape[d]
    y_hard = (ember.arange(logits.shape[d]).view(shape) == index).to(logits.dtype)
    return y_hard - y_soft.detach() + y_soft


# ---------------------------------------------------------------------------------------------
# Losses

def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if ignore_index.__class__ is not int:
        ignore_index = _int_arg("nll_loss_nd", 5, "ignore_index", ignore_index)
    return _aten.nll_loss_nd.default(input, target, weight, _reduction_enum(reduction),
                                     ignore_index)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if ignore_index.__class__ is not int:
        ignore_index = _int_arg("cross_entropy_loss", 5, "ignore_index", ignore_index)
    return _aten.cross_entropy_loss.default(input, target, weight, _reduction_enum(reduction),
                                            ignore_index, label_smoothing)


def linear_cross_entropy(input, linear_weight, target, *, linear_bias=None, weight=None,
                         reduction="mean", ignore_index=None, label_smoothing=0.0, options=None):
    """``cross_entropy(linear(input, linear_weight, linear_bias), target, ...)``; with
    ``options`` (``nn.LinearCrossEntropyOptions``) the batch is processed in chunks, so the
    full logits never exist (LLM vocabulary heads)."""
    if input.dim() < 1 or input.dim() > 2:
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.dim()}")
    if linear_weight.dim() < 2:
        raise RuntimeError(f"expected linear_weight with dimensionality at least 2, got "
                           f"{linear_weight.dim()}")
    batches, in_features = tuple(input.shape[:-1]), input.shape[-1]
    if in_features != linear_weight.shape[-1]:
        raise RuntimeError(f"expected equal input and linear_weight last dimensions "
                           f"(in_features), got {input.shape[-1]} and "
                           f"{linear_weight.shape[-1]}, respectively")
    num_classes, out_features = linear_weight.shape[0], tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (num_classes, *out_features):
        raise RuntimeError(f"expected linear_bias shape {(num_classes, *out_features)}, got "
                           f"{tuple(linear_bias.shape)}")
    if out_features and not batches:
        raise RuntimeError(f"K-dimensional loss defined by linear_weight shape "
                           f"{tuple(linear_weight.shape)} requires batched input, (N, "
                           f"{in_features}), got unbatched input with shape "
                           f"{tuple(input.shape)}")
    logits_shape = (*batches, num_classes, *out_features)
    if tuple(target.shape) == logits_shape and ignore_index is not None:
        raise RuntimeError("ignore_index cannot be specified when target contains probabilities")
    ignore_index = -100 if ignore_index is None else ignore_index
    if options is not None:
        chunkable = (not out_features and reduction in ("mean", "sum", "none")
                     and label_smoothing == 0.0 and target.dtype == ember.int64)
        if chunkable:
            return _chunked_linear_cross_entropy(input, linear_weight, target, linear_bias,
                                                 weight, reduction, ignore_index, options)
        warnings.warn(f"linear_cross_entropy: ``options`` ignored; chunked path needs reduction "
                      f"in {{'mean','sum','none'}}, label_smoothing == 0, target.dtype == "
                      f"int64, out_features == (). Got reduction={reduction!r}, "
                      f"label_smoothing={label_smoothing}, target.dtype={target.dtype}, "
                      f"out_features={out_features}, tracing=False, linear_bias.shape="
                      f"{tuple(linear_bias.shape) if linear_bias is not None else None}.",
                      stacklevel=2)
    if out_features:
        linear_weight = linear_weight.reshape((math.prod(out_features, start=num_classes),
                                               in_features))
        if linear_bias is not None:
            linear_bias = linear_bias.reshape(math.prod(out_features, start=num_classes))
    logits = linear(input, linear_weight, linear_bias).reshape(logits_shape)
    return cross_entropy(logits, target, weight=weight, reduction=reduction,
                         ignore_index=ignore_index, label_smoothing=label_smoothing)


def _chunked_linear_cross_entropy(input, linear_weight, target, linear_bias, weight, reduction,
                                  ignore_index, options):
    from ._linear_cross_entropy import (ChunkedLinearCrossEntropy,
                                        ChunkedLinearCrossEntropyNoReduction)
    batched = input.dim() == 2
    if not batched:
        input, target = input.unsqueeze(0), target.unsqueeze(0)
    opts = options._adjust(num_batches=input.shape[0], in_features=input.shape[1],
                           num_classes=linear_weight.shape[0], dtype=input.dtype,
                           device=input.device)
    acc = opts.acc_dtype
    if input.dtype != acc and not (input.dtype in (ember.float16, ember.bfloat16)
                                   and acc == ember.float32):
        raise RuntimeError(f"linear_cross_entropy supports float32 acc_dtype with "
                           f"float16/bfloat16 inputs, but got {acc} acc_dtype and "
                           f"{input.dtype} inputs.")
    if reduction == "none":
        out = ChunkedLinearCrossEntropyNoReduction.apply(
            input, linear_weight, target, linear_bias, weight, ignore_index,
            opts.batch_chunk_size, acc)
    else:
        out = ChunkedLinearCrossEntropy.apply(
            input, linear_weight, target, linear_bias, weight, reduction, ignore_index,
            opts.batch_chunk_size, acc, opts.allow_retain_graph)
    # (squeezed whatever the reduction, as PyTorch's: a reduced loss is then a view of itself)
    return out if batched else out.squeeze(0)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    _check_same_size("mse_loss", input, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if weight is not None:
        return _reduce(weight * (input - target) ** 2, reduction)
    return _aten.mse_loss.default(input, target, _reduction_enum(reduction))


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    _check_same_size("l1_loss", input, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    loss = ember.abs(input - target)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    _check_same_size("smooth_l1_loss", input, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    _check_loss_dtype("smooth_l1_loss", input, target)
    d = ember.abs(input - target)
    if beta == 0:
        return _reduce(d, reduction)
    loss = ember.where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta)
    return _reduce(loss, reduction)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    _check_same_size("huber_loss", input, target)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    _check_loss_dtype("huber_loss", input, target)
    d = ember.abs(input - target)
    loss = ember.where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta))
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if target.size() != input.size():
        raise ValueError(f"Using a target size ({target.size()}) that is different to the input "
                         f"size ({input.size()}) is deprecated. Please ensure they have the same "
                         f"size.")
    if weight is not None:
        weight = weight.expand(input.shape)
    return _aten.binary_cross_entropy.default(input, target, weight, _reduction_enum(reduction))


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if target.size() != input.size():
        raise ValueError(f"Target size ({target.size()}) must be the same as input size "
                         f"({input.size()})")
    return _aten.binary_cross_entropy_with_logits.default(input, target, weight, pos_weight,
                                                          _reduction_enum(reduction))


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce, reduction)
    elif reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the "
                      "support size.'batchmean' divides only by the batch size, and aligns with "
                      "the KL div math definition.'mean' will be changed to behave the same as "
                      "'batchmean' in the next major release.", stacklevel=2)
    # aten::kl_div (its dtype checks included), batchmean as its sum over the batch size
    reduced = _aten.kl_div.default(input, target,
                                   _reduction_enum("sum" if reduction == "batchmean" else
                                                   reduction), log_target=log_target)
    if reduction == "batchmean" and input.dim() != 0:
        reduced = reduced / input.size(0)
    return reduced


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8,
                     reduce=None, reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if reduction not in ("none", "mean", "sum"):  # (no "elementwise_mean" here in PyTorch)
        raise ValueError(reduction + " is not a valid value for reduction")
    return ember.poisson_nll_loss(input, target, log_input, full, eps, _reduction_enum(reduction))


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    if isinstance(var, (int, float)):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = ember.full(input.shape, float(var), dtype=input.dtype)
    elif bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    if var.size() != input.size():
        if input.size()[:-1] == var.size():
            var = var.unsqueeze(-1)
        elif not (input.dim() == var.dim() and
                  sum(v for i, v in zip(input.size(), var.size()) if i != v) == 1):
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    # a clamp outside the graph: var's gradient passes unclamped, as PyTorch's; and in place,
    # so an integer var is refused as PyTorch refuses it ("result type Float can't be cast")
    var = var.clone()
    with ember.no_grad():
        var.clamp_(min=eps)
    loss = 0.5 * (ember.log(var) + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def _relu_(x):
    return x.relu()


def margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                        reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension "
                           f"but got sizes: input1: {input1.size()}, input2: {input2.size()}, "
                           f"target: {target.size()} ")
    return ember.margin_ranking_loss(input1, input2, target, margin, _reduction_enum(reduction))


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None,
                         reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return ember.hinge_embedding_loss(input, target, margin, _reduction_enum(reduction))


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    return _aten.cosine_similarity.default(x1, x2, dim, eps)


def cosine_embedding_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                          reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return ember.cosine_embedding_loss(input1, input2, target, margin,
                                       _reduction_enum(reduction))


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    return _aten.pairwise_distance.default(x1, x2, p, eps, keepdim)


def pdist(input, p=2):
    return _aten.pdist.default(input, p)


_CDIST_MODES = {"use_mm_for_euclid_dist_if_necessary": None, "use_mm_for_euclid_dist": 1,
                "donot_use_mm_for_euclid_dist": 2}


def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """Distances between the rows of x1 and x2 (batched): ``aten::cdist``."""
    if compute_mode not in _CDIST_MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    return _aten.cdist.default(x1, x2, p, _CDIST_MODES[compute_mode])


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    return ember.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                     _reduction_enum(reduction))


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None,
                                      margin=1.0, swap=False, reduction="mean"):
    if margin <= 0:
        raise ValueError(f"triplet_margin_with_distance_loss: expected margin to be greater "
                         f"than 0, got {margin} instead")
    dist = distance_function if distance_function is not None else pairwise_distance
    d_pos = dist(anchor, positive)
    d_neg = dist(anchor, negative)
    if swap:
        d_neg = ember.minimum(d_neg, dist(positive, negative))
    return _reduce(_relu_(margin + d_pos - d_neg), reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    # ATen's arithmetic, in place on a copy of the input's dtype: log(1 + exp(-input * target))
    # (so an integer input is refused at exp_, as PyTorch refuses it)
    # (log1p out of place: exp_'s gradient reads its result)
    return _reduce(ember.neg(input).mul_(target).exp_().log1p(), reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    loss = loss.sum(input.dim() - 1) / input.size(-1)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    return _reduce(loss, reduction)


def _multilabel_margin_shape_check(input, target):
    """ATen's multilabel_margin_loss_shape_check."""
    shape, nd = list(input.shape), input.dim()
    if not (nd == 2 and shape[1] != 0 or nd == 1 and shape[0] != 0 or nd == 0):
        raise RuntimeError("Expected non-empty vector or matrix with optional 0-dim batch size, "
                           f"but got: {shape}")
    if nd <= 1:
        ok = target.dim() <= 1 and target.numel() == (1 if nd == 0 else shape[0])
    else:
        ok = target.dim() == 2 and list(target.shape) == shape
    if not ok:
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of size: "
                           f"{shape}")


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """sum over targets j and non-targets i of max(0, 1 - (x[j] - x[i])) / C; the targets of a
    sample are its entries of ``target`` before the first -1, a repeated one counted each time
    (PyTorch's loop runs over the target entries)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    _multilabel_margin_shape_check(input, target)
    _check_loss_dtype("multilabel_margin_loss", input)
    x = input if input.dim() == 2 else input.reshape(1, -1)
    t = target.reshape(x.shape).numpy()
    n, c = x.shape
    count = np.zeros((n, c), np.int64)
    for_row = np.cumprod(t >= 0, axis=1).astype(bool)  # entries before the first -1
    rows = np.repeat(np.arange(n), c)[for_row.reshape(-1)]
    np.add.at(count, (rows, t[for_row]), 1)
    # pair[n, j, i] = relu(1 - x[n, j] + x[n, i]) for target j, non-target i
    pair = _relu_(1 - x.unsqueeze(2) + x.unsqueeze(1))
    w = ember.from_numpy(count[:, :, None] * (count == 0)[:, None, :]).to(x.dtype)
    loss = (pair * w).sum((1, 2)) / c
    if input.dim() < 2:
        loss = loss.reshape(())
    return _reduce(loss, reduction)


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None,
                      reduce=None, reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.dim() != 1:
        raise ValueError("weight must be one-dimensional")
    _check_loss_dtype("multi_margin_loss", input)
    x = input if input.dim() == 2 else input.reshape(1, -1)
    t = target.reshape(-1)
    c = x.size(1)
    xt = x.gather(1, t.unsqueeze(1)) if hasattr(x, "gather") else \
        x[ember.arange(x.size(0)), t].unsqueeze(1)
    z = _relu_(margin - xt + x)
    if p == 2:
        z = z * z
    if weight is not None:
        z = z * weight[t].unsqueeze(1)
    notself = (ember.arange(c).unsqueeze(0) != t.unsqueeze(1)).to(x.dtype)
    loss = (z * notself).sum(1) / c
    if input.dim() < 2:
        loss = loss.reshape(())
    return _reduce(loss, reduction)


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean",
             zero_infinity=False):
    return ember.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank,
                          _reduction_enum(reduction), zero_infinity)


# ---------------------------------------------------------------------------------------------
# Attention

def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    """softmax(q k^T * scale + mask) v. The backend is chosen by PyTorch's rules
    (``ember.backends._sdp``): on the CPU the fused blockwise kernel
    ``aten::_scaled_dot_product_flash_attention_for_cpu``, on CUDA
    ``aten::_scaled_dot_product_flash_attention`` (float16, bfloat16) or the memory-efficient
    ``aten::_scaled_dot_product_efficient_attention``, when one can take the inputs and is
    enabled, else the math decomposition (``sdpa_kernel([SDPBackend.MATH])`` forces it)."""
    if query.device.type in ("cpu", "cuda"):
        from ..backends import _sdp
        if is_causal and attn_mask is not None:
            raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be "
                               "set when is_causal=True")
        choice = _sdp.fused_sdp_choice(query, key, value, attn_mask, dropout_p, is_causal,
                                       scale, enable_gqa)
        if choice == _sdp.SDPBackend.ERROR:
            raise RuntimeError(_sdp._NO_VIABLE)
        if choice == _sdp.SDPBackend.EFFICIENT_ATTENTION:  # (CUDA)
            return _aten._scaled_dot_product_efficient_attention.default(
                query, key, value, None, ember.is_grad_enabled() and (
                    query.requires_grad or key.requires_grad or value.requires_grad),
                dropout_p, is_causal, scale=scale)[0]
        if choice == _sdp.SDPBackend.FLASH_ATTENTION and query.device.type == "cuda":
            return _aten._scaled_dot_product_flash_attention.default(
                query, key, value, dropout_p, is_causal, scale=scale)[0]
        if choice == _sdp.SDPBackend.FLASH_ATTENTION:  # (CPU)
            if attn_mask is not None and attn_mask.dtype == ember.bool:
                # PyTorch's convert_boolean_attn_mask: True may attend
                attn_mask = ember.where(attn_mask, ember.zeros((), dtype=query.dtype),
                                       ember.full((), -math.inf, dtype=query.dtype))
            return _aten._scaled_dot_product_flash_attention_for_cpu.default(
                query, key, value, dropout_p, is_causal, attn_mask=attn_mask, scale=scale)[0]
    return _sdpa_math(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)


def _sdpa_math(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
               enable_gqa=False):
    """PyTorch's math path (``_scaled_dot_product_attention_math``): softmax(q k^T * scale +
    mask) v, with a boolean mask meaning "may attend"; ``enable_gqa`` repeats key/value heads to
    match the query's."""
    L, S = query.size(-2), key.size(-2)
    scale_factor = 1 / math.sqrt(query.size(-1)) if scale is None else scale
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set "
                           "when is_causal=True")
    if enable_gqa and query.dim() >= 3:
        hq, hk = query.size(-3), key.size(-3)
        if hq % hk:
            raise RuntimeError("Number of heads in key and value must divide the number of heads "
                               "in query")
        rep = hq // hk
        if rep > 1:
            key = key.unsqueeze(-3).expand(*key.shape[:-2], rep, S, key.size(-1)) \
                .reshape(*key.shape[:-3], hq, S, key.size(-1))
            value = value.unsqueeze(-3).expand(*value.shape[:-2], rep, S, value.size(-1)) \
                .reshape(*value.shape[:-3], hq, S, value.size(-1))
    scores = ember.matmul(query, key.transpose(-2, -1)) * scale_factor
    if is_causal:
        causal = ember.ones(L, S, dtype=ember.bool, device=scores.device).tril()
        scores = ember.where(causal, scores, ember.full((), -math.inf, dtype=scores.dtype,
                                                 device=scores.device))
    if attn_mask is not None:
        if attn_mask.dtype == ember.bool:
            scores = ember.where(attn_mask, scores, ember.full((), -math.inf, dtype=scores.dtype,
                                                       device=scores.device))
        else:
            scores = scores + attn_mask
    attn = _aten._softmax.default(scores, -1, False)
    if dropout_p > 0.0:
        attn = ember.dropout(attn, dropout_p, True)
    return ember.matmul(attn, value)


def _none_or_dtype(input):
    if input is None:
        return None
    if hasattr(input, "_keyset"):
        return input.dtype
    raise RuntimeError("input to _none_or_dtype() must be None or torch.Tensor")


def _canonical_mask(mask, mask_name, other_type, other_name, target_type, check_other=True):
    """A boolean mask as an additive float one (-inf where True), as PyTorch's attention modules
    take masks; float masks pass through."""
    if mask is None:
        return None
    if mask.dtype != ember.bool and not mask.is_floating_point():
        raise AssertionError(f"only bool and floating types of {mask_name} are supported")
    if check_other and other_type is not None and mask.dtype != other_type:
        warnings.warn(f"Support for mismatched {mask_name} and {other_name} is deprecated. Use "
                      f"same type for both instead.", stacklevel=2)
    if not mask.is_floating_point():
        mask = ember.zeros_like(mask, dtype=target_type).masked_fill_(mask, float("-inf"))
    return mask


def _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads):
    """Whether multi-head attention's inputs are batched (a 3-d query) or not (2-d), after
    PyTorch's checks of the other inputs' ranks against it."""
    if query.dim() == 3:
        if key.dim() != 3 or value.dim() != 3:
            raise AssertionError(f"For batched (3-D) `query`, expected `key` and `value` to be "
                                 f"3-D but found {key.dim()}-D and {value.dim()}-D tensors "
                                 f"respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 2:
            raise AssertionError(f"For batched (3-D) `query`, expected `key_padding_mask` to be "
                                 f"`None` or 2-D but found {key_padding_mask.dim()}-D tensor "
                                 f"instead")
        if attn_mask is not None and attn_mask.dim() not in (2, 3):
            raise AssertionError(f"For batched (3-D) `query`, expected `attn_mask` to be `None`, "
                                 f"2-D or 3-D but found {attn_mask.dim()}-D tensor instead")
        return True
    if query.dim() == 2:
        if key.dim() != 2 or value.dim() != 2:
            raise AssertionError(f"For unbatched (2-D) `query`, expected `key` and `value` to be "
                                 f"2-D but found {key.dim()}-D and {value.dim()}-D tensors "
                                 f"respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 1:
            raise AssertionError(f"For unbatched (2-D) `query`, expected `key_padding_mask` to "
                                 f"be `None` or 1-D but found {key_padding_mask.dim()}-D tensor "
                                 f"instead")
        if attn_mask is not None:
            if attn_mask.dim() not in (2, 3):
                raise AssertionError(f"For unbatched (2-D) `query`, expected `attn_mask` to be "
                                     f"`None`, 2-D or 3-D but found {attn_mask.dim()}-D tensor "
                                     f"instead")
            expected = (num_heads, query.shape[0], key.shape[0])
            if attn_mask.dim() == 3 and attn_mask.shape != expected:
                raise AssertionError(f"Expected `attn_mask` shape to be {expected} but got "
                                     f"{attn_mask.shape}")
        return False
    raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received "
                         f"{query.dim()}-D query tensor")


def _check_key_padding_mask(key_padding_mask, src_len, bsz):
    if key_padding_mask.shape[0] != bsz:
        raise AssertionError(f"Expected key_padded_mask.shape[0] to be {bsz}, but got "
                             f"{key_padding_mask.shape[0]}")
    if key_padding_mask.shape[1] != src_len:
        raise AssertionError(f"Expected key_padded_mask.shape[1] to be {src_len}, but got "
                             f"{key_padding_mask.shape[1]}")


def _in_projection_packed(q, k, v, w, b=None):
    """The query, key and value projections by one packed (3E, E) weight: one product for
    self-attention (q is k is v), two for encoder-decoder attention (k is v), else three."""
    E = q.size(-1)
    if k is v:
        if q is k:
            proj = linear(q, w, b)
            # (3, E) rather than (E, 3): each projection contiguous, in chunk()'s order
            proj = proj.unflatten(-1, (3, E)).unsqueeze(0).transpose(0, -2).squeeze(-2) \
                .contiguous()
            return proj[0], proj[1], proj[2]
        w_q, w_kv = w.split([E, E * 2])
        b_q, b_kv = (None, None) if b is None else b.split([E, E * 2])
        kv = linear(k, w_kv, b_kv).unflatten(-1, (2, E)).unsqueeze(0).transpose(0, -2) \
            .squeeze(-2).contiguous()
        return linear(q, w_q, b_q), kv[0], kv[1]
    w_q, w_k, w_v = w.chunk(3)
    b_q, b_k, b_v = (None, None, None) if b is None else b.chunk(3)
    return linear(q, w_q, b_q), linear(k, w_k, b_k), linear(v, w_v, b_v)


def _in_projection(q, k, v, w_q, w_k, w_v, b_q=None, b_k=None, b_v=None):
    """The query, key and value projections by separate weights (kdim/vdim may differ from
    the embedding dim), with PyTorch's shape checks."""
    Eq, Ek, Ev = q.size(-1), k.size(-1), v.size(-1)
    for name, t, shape in (("query weights", w_q, (Eq, Eq)), ("key weights", w_k, (Eq, Ek)),
                           ("value weights", w_v, (Eq, Ev)), ("query bias", b_q, (Eq,)),
                           ("key bias", b_k, (Eq,)), ("value bias", b_v, (Eq,))):
        if t is not None and t.shape != shape:
            raise AssertionError(f"expecting {name} shape of {shape}, but got {t.shape}")
    return linear(q, w_q, b_q), linear(k, w_k, b_k), linear(v, w_v, b_v)


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads,
                                 in_proj_weight, in_proj_bias, bias_k, bias_v, add_zero_attn,
                                 dropout_p, out_proj_weight, out_proj_bias, training=True,
                                 key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None,
                                 k_proj_weight=None, v_proj_weight=None, static_k=None,
                                 static_v=None, average_attn_weights=True, is_causal=False):
    """nn.MultiheadAttention's computation for (L, N, E) inputs (or unbatched (L, E)), step for
    step PyTorch's: masks made additive and merged, the weights by ``baddbmm`` of the scaled
    query when they are returned, otherwise ``scaled_dot_product_attention`` over the heads."""
    is_batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not is_batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask",
                                       _none_or_dtype(attn_mask), "attn_mask", query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the "
                           "Transformer module method `generate_square_subsequent_mask` to "
                           "create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        # the mask is the causal one SDPA builds itself
        attn_mask = None
    else:
        attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype,
                                    check_other=False)
        if key_padding_mask is not None:
            is_causal = False
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but "
                             f"got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        if key.shape[:2] != value.shape[:2]:
            raise AssertionError(f"key's sequence and batch dims {key.shape[:2]} do not match "
                                 f"value's {value.shape[:2]}")
        for name, w in (("q", q_proj_weight), ("k", k_proj_weight), ("v", v_proj_weight)):
            if w is None:
                raise AssertionError(f"use_separate_proj_weight is True but {name}_proj_weight "
                                     f"is None")
        b_q, b_k, b_v = (None, None, None) if in_proj_bias is None else in_proj_bias.chunk(3)
        q, k, v = _in_projection(query, key, value, q_proj_weight, k_proj_weight, v_proj_weight,
                                 b_q, b_k, b_v)
    else:
        if key.shape != value.shape:
            raise AssertionError(f"key shape {key.shape} does not match value shape "
                                 f"{value.shape}")
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        q, k, v = _in_projection_packed(query, key, value, in_proj_weight, in_proj_bias)

    if attn_mask is not None:
        if attn_mask.dim() == 2:
            if attn_mask.shape != (tgt_len, src_len):
                raise RuntimeError(f"The shape of the 2D attn_mask is {attn_mask.shape}, but "
                                   f"should be {(tgt_len, src_len)}.")
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.dim() == 3:
            if attn_mask.shape != (bsz * num_heads, tgt_len, src_len):
                raise RuntimeError(f"The shape of the 3D attn_mask is {attn_mask.shape}, but "
                                   f"should be {(bsz * num_heads, tgt_len, src_len)}.")
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")
    if bias_k is not None and bias_v is not None:
        if static_k is not None:
            raise AssertionError("bias cannot be added to static key.")
        if static_v is not None:
            raise AssertionError("bias cannot be added to static value.")
        k = ember.cat([k, bias_k.repeat(1, bsz, 1)])
        v = ember.cat([v, bias_v.repeat(1, bsz, 1)])
        if attn_mask is not None:
            attn_mask = pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = pad(key_padding_mask, (0, 1))
    elif bias_k is not None:
        raise AssertionError("bias_k is set but bias_v is None")
    elif bias_v is not None:
        raise AssertionError("bias_v is set but bias_k is None")

    # (L, N, E) -> (N * heads, L, head_dim)
    q = q.view(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    k = _heads(k, static_k, "static_k", bsz * num_heads, head_dim)
    v = _heads(v, static_v, "static_v", bsz * num_heads, head_dim)
    if add_zero_attn:
        zeros = (bsz * num_heads, 1, head_dim)
        k = ember.cat([k, ember.zeros(zeros, dtype=k.dtype, device=k.device)], dim=1)
        v = ember.cat([v, ember.zeros(zeros, dtype=v.dtype, device=v.device)], dim=1)
        if attn_mask is not None:
            attn_mask = pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = pad(key_padding_mask, (0, 1))
    src_len = k.size(1)
    if key_padding_mask is not None:
        _check_key_padding_mask(key_padding_mask, src_len, bsz)
        key_padding_mask = key_padding_mask.view(bsz, 1, 1, src_len) \
            .expand(-1, num_heads, -1, -1).reshape(bsz * num_heads, 1, src_len)
        attn_mask = key_padding_mask if attn_mask is None else attn_mask + key_padding_mask
    if not training:
        dropout_p = 0.0

    if need_weights:
        q_scaled = q * math.sqrt(1.0 / float(q.shape[-1]))
        if is_causal and attn_mask is None:
            raise AssertionError("FIXME: is_causal not implemented for need_weights")
        if attn_mask is not None:
            weights = ember.baddbmm(attn_mask, q_scaled, k.transpose(-2, -1))
        else:
            weights = ember.bmm(q_scaled, k.transpose(-2, -1))
        weights = softmax(weights, dim=-1)
        if dropout_p > 0.0:
            weights = dropout(weights, p=dropout_p)
        out = ember.bmm(weights, v).transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
        out = linear(out, out_proj_weight, out_proj_bias).view(tgt_len, bsz, -1)
        weights = weights.view(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            weights = weights.mean(dim=1)
        if not is_batched:
            return out.squeeze(1), weights.squeeze(0)
        return out, weights
    if attn_mask is not None:
        if attn_mask.size(0) == 1 and attn_mask.dim() == 3:
            attn_mask = attn_mask.unsqueeze(0)
        else:
            attn_mask = attn_mask.view(bsz, num_heads, -1, src_len)
    q = q.view(bsz, num_heads, tgt_len, head_dim)
    k = k.view(bsz, num_heads, src_len, head_dim)
    v = v.view(bsz, num_heads, src_len, head_dim)
    out = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
    out = out.permute(2, 0, 1, 3).reshape(bsz * tgt_len, embed_dim)
    out = linear(out, out_proj_weight, out_proj_bias).view(tgt_len, bsz, -1)
    return (out if is_batched else out.squeeze(1)), None


def _heads(t, static, name, batch_heads, head_dim):
    """Keys or values as (N * heads, S, head_dim): ``t`` split into heads, or the given
    ``static_k``/``static_v``, whose shape is checked."""
    if static is None:
        return t.view(t.shape[0], batch_heads, head_dim).transpose(0, 1)
    if static.size(0) != batch_heads:
        raise AssertionError(f"expecting {name}.size(0) of {batch_heads}, but got "
                             f"{static.size(0)}")
    if static.size(2) != head_dim:
        raise AssertionError(f"expecting {name}.size(2) of {head_dim}, but got "
                             f"{static.size(2)}")
    return static


def channel_shuffle(input, groups):
    return _aten.channel_shuffle.default(input, groups)


def native_channel_shuffle(input, groups):
    return _aten.native_channel_shuffle.default(input, groups)

# names PyTorch's functional module carries for code that reaches them there
from .._jit_internal import (BroadcastingList1, BroadcastingList2,  # noqa: E402,F401
                             BroadcastingList3)
from ..overrides import (handle_torch_function, has_torch_function,  # noqa: E402,F401
                         has_torch_function_unary, has_torch_function_variadic)
conv_tbc = ember.conv_tbc
_threshold = threshold
from .modules.utils import _list_with_default, _pair, _single, _triple  # noqa: E402,F401


def _is_integer(x):
    """Whether ``x`` is an integer: a Python or NumPy integer, a SymInt, or a tensor of an
    integer (or bool) dtype."""
    if isinstance(x, (int, ember.SymInt, np.integer)):
        return True
    return isinstance(x, ember.Tensor) and not x.is_floating_point()


def assert_int_or_pair(arg, arg_name, message):
    if not (isinstance(arg, int) or len(arg) == 2):
        raise AssertionError(message.format(arg_name))


def boolean_dispatch(arg_name, arg_index, default, if_true, if_false, module_name, func_name):
    """One function calling ``if_true`` or ``if_false`` by a boolean argument (given by name
    or at ``arg_index``; ``default`` otherwise): how PyTorch spells ``max_pool2d``'s two return
    forms. The docstring is the one of the two that has one."""
    def fn(*args, **kwargs):
        flag = kwargs[arg_name] if arg_name in kwargs else \
            args[arg_index] if arg_index < len(args) else default
        return if_true(*args, **kwargs) if flag else if_false(*args, **kwargs)
    docs = [f.__doc__ for f in (if_true, if_false) if f.__doc__ is not None]
    if len(docs) == 2:
        raise RuntimeError("only one function can have a docstring")
    if docs:
        if_true.__doc__ = if_false.__doc__ = docs[0]
    fn.__doc__ = docs[0] if docs else None
    if module_name is not None:
        fn.__module__ = module_name
    if func_name is not None:
        fn.__name__ = func_name
    return fn


# convolution, pooling, resampling, padding, folding: the conv helper's module (when present)
if importlib.util.find_spec(__name__.rpartition(".")[0] + "._functional_conv") is not None:
    from ._functional_conv import *  # noqa: F401,F403,E402
    from ._functional_conv import (_adaptive_max_pool1d, _adaptive_max_pool2d,  # noqa: F401,E402
                                   _adaptive_max_pool3d, _fractional_max_pool2d,
                                   _fractional_max_pool3d, _max_pool1d, _max_pool2d,
                                   _max_pool3d, _unpool_output_size)


# Every function here first asks, as PyTorch's do, whether an argument's type or a
# TorchFunctionMode takes the call through __torch_function__ (a CausalBias mask takes
# scaled_dot_product_attention, say); the check costs one list test while no subclass or mode
# is about (ember.overrides._TF_ON).
def _dispatching_torch_function(fn):
    @functools.wraps(fn)
    def public(*args, **kwargs):
        if _TF_ON:
            relevant = args + tuple(kwargs.values()) if kwargs else args
            if _overrides._check(relevant):
                return _overrides.handle_torch_function(public, relevant, *args, **kwargs)
        return fn(*args, **kwargs)
    return public


def _wrap_public_functions(namespace):
    for name, fn in list(namespace.items()):
        if (not name.startswith("_") and isinstance(fn, types.FunctionType)
                and as_ember(fn.__module__).startswith("ember.nn.")):
            namespace[name] = _dispatching_torch_function(fn)


_wrap_public_functions(globals())
