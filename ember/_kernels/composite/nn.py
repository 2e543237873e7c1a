"""CompositeImplicitAutograd kernels of the ``nn.functional`` ops PyTorch decomposes (softmax.int,
layer_norm, batch_norm, group_norm, instance_norm, rms_norm, nll_loss(_nd), cross_entropy_loss,
dropout family and its in-place forms, rrelu, linear, bilinear, selu, relu6, log_sigmoid, prelu,
embedding_backward), written in ember ops as ATen writes them, so autograd records the ops they
call."""
import math

from ..._core import dtype as D
from ..._core import strides as _st
from ..._ops.overload import ops
from ..rules.nn import check_floating, check_inexact

_aten = ops.aten  # ops resolve when called: the op table is built after the kernels load


def _to(t, dtype):
    return t if dtype is None or t._dtype is dtype else t.to(dtype)


# -- softmax ---------------------------------------------------------------------------------

def softmax_int(self, dim, dtype=None):
    return _aten._softmax.default._call(_to(self, dtype), dim, False)


def log_softmax_int(self, dim, dtype=None):
    return _aten._log_softmax.default._call(_to(self, dtype), dim, False)


# -- activations that are other activations ----------------------------------------------------

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(self):
    return _aten.elu.default._call(self, _SELU_ALPHA, _SELU_SCALE, 1)


def selu_(self):
    return _aten.elu_.default._call(self, _SELU_ALPHA, _SELU_SCALE, 1)


def relu6(self):
    return _aten.hardtanh.default._call(self, 0, 6)


def relu6_(self):
    return _aten.hardtanh_.default._call(self, 0, 6)


def log_sigmoid(self):
    return _aten.log_sigmoid_forward.default._call(self)[0]


def prelu(self, weight):
    n = weight.numel()
    if n > 1:
        if self.dim() == 0:
            raise RuntimeError("Not allow zero-dim input tensor.")
        channels = self._size[1] if self.dim() > 1 else 1
        if channels != n:
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found "
                               f"parameter numbers = {n} and channel size = {channels}.")
    if weight.dim() > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: "
                           f"ndim = {weight.dim()}")
    if self.dim() > 1 and n > 1:
        weight = weight.reshape((n,) + (1,) * (self.dim() - 2))
    elif self.dim() == 0 and weight.dim():  # the result keeps a 0-d input's shape
        weight = weight.reshape(())
    return _aten._prelu_kernel.default._call(self, weight)


# -- linear layers -----------------------------------------------------------------------------

def linear(input, weight, bias=None):
    """ATen's linear: one addmm when the bias can be fused (2-D input, or a contiguous 1-D or
    N-D input folded to 2-D, the result a view), else matmul and an add."""
    aten = _aten
    # (the ops' entries, not the Tensor methods: a layer's every call comes here)
    ndim = len(input._size)
    if bias is not None and ndim >= 1 and len(weight._size) == 2:
        if ndim == 2:
            return aten.addmm.default._call(bias, input, aten.t.default._call(weight), 1, 1)
        if input.is_contiguous():
            lead = input._size[:-1]
            out = aten.addmm.default._call(bias, input.reshape(-1, input._size[-1]),
                                           aten.t.default._call(weight), 1, 1)
            return out.view(lead + (weight._size[0],))
    out = aten.matmul.default._call(input, aten.t.default._call(weight))
    if bias is not None:
        out = aten.add.Tensor._call(out, bias, 1)
    return out


def bilinear(input1, input2, weight, bias=None):
    if input1.dim() != input2.dim():
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.dim()} and "
                           f"{input2.dim()}")
    if weight.dim() != 3 or input1._size[-1] != weight._size[1] or \
            input2._size[-1] != weight._size[2]:
        raise RuntimeError(f"bilinear(): input sizes do not match the weight: got "
                           f"{list(input1._size)}, {list(input2._size)} and weight "
                           f"{list(weight._size)}")
    # y[..., o] = sum_ij x1[..., i] W[o, i, j] x2[..., j]: one mm of x1 with W as (i, o*j)
    aten = _aten
    o, i, j = weight._size
    lead = input1._size[:-1]
    w = weight.permute(1, 0, 2).reshape(i, o * j)
    t = aten.mm.default._call(input1.reshape(-1, i), w).reshape(lead + (o, j))
    out = (t * input2.unsqueeze(-2)).sum(-1, dtype=t.dtype)  # ATen's bilinear keeps int dtypes
    if bias is not None:
        out = out + bias
    return out


# -- normalization -----------------------------------------------------------------------------

def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05, cudnn_enable=True):
    return _aten.native_layer_norm.default._call(input, normalized_shape, weight, bias, eps)[0]


def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps,
               cudnn_enabled):
    """ATen's _batch_norm_impl_index: its checks, then an empty input's clone (scaled by the
    first weight and bias, which keeps the gradient chain and leaves the running statistics
    alone), else native_batch_norm."""
    # ATen reads sizes()[1] unchecked: past a 1-d input's sizes it finds 0
    c = input._size[1] if input.dim() > 1 else 0
    for name, t in (("running_mean", running_mean), ("running_var", running_var),
                    ("weight", weight), ("bias", bias)):
        if t is not None:
            if t.numel() != c:
                raise RuntimeError(f"{name} should contain {c} elements not {t.numel()}")
        elif not training and name.startswith("running"):
            raise RuntimeError(f"{name} must be defined in evaluation mode")
    if input.numel() == 0:
        aten = _aten
        out = aten.clone.default._call(input, None)
        if weight is not None:
            out = aten.mul.Tensor._call(out, aten.select.int._call(weight, 0, 0))
        if bias is not None:
            out = aten.add.Tensor._call(out, aten.select.int._call(bias, 0, 0), 1)
        return out
    return _aten.native_batch_norm.default._call(input, weight, bias, running_mean,
                                                   running_var, training, momentum, eps)[0]


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-05, cudnn_enabled=True):
    if input.dim() < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received "
                           f"{input.dim()}")
    n, c = input._size[:2]
    hxw = math.prod(input._size[2:])
    return _aten.native_group_norm.default._call(input, weight, bias, n, c, hxw, num_groups,
                                                   eps)[0]


def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum,
                  eps, cudnn_enabled):
    """Per-(sample, channel) statistics: a group norm with one group per channel; the running
    statistics take the batch average of the per-instance ones, as ATen's does."""
    aten = _aten
    if not use_input_stats:
        return aten.native_batch_norm.default._call(input, weight, bias, running_mean,
                                                    running_var, False, momentum, eps)[0]
    if input.dim() < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received "
                           f"{input.dim()}")
    check_floating("batch_norm", input)  # (ATen's instance_norm is a batch_norm)
    if running_mean is not None or running_var is not None:
        from ...autograd.grad_mode import no_grad
        with no_grad():
            dims = list(range(2, input.dim()))
            flat = input.detach()
            if running_mean is not None:
                m = flat.mean(dims).mean(0)
                running_mean.mul_(1 - momentum).add_(m * momentum)
            if running_var is not None:
                n = math.prod(input._size[2:])
                v = flat.var(dims, correction=1 if n > 1 else 0).mean(0)
                running_var.mul_(1 - momentum).add_(v * momentum)
    # as ATen's: the (N, C, ...) input normalized as one sample of N*C channels (one group
    # each, weight and bias repeated per sample), the result a view back to the input's shape
    n, c = input._size[:2]
    x = aten.reshape.default._call(input, [1, n * c, *input._size[2:]])
    w, b = (None if t is None else aten.repeat.default._call(t, [n]) for t in (weight, bias))
    return aten.view.default._call(group_norm(x, n * c, w, b, eps), list(input._size))


def rms_norm(input, normalized_shape, weight=None, eps=None):
    ns = tuple(normalized_shape)
    k = len(ns)
    if not k:
        raise RuntimeError("Expected normalized_shape to be at least 1-dimensional, i.e., "
                           "containing at least one element, but got normalized_shape = []")
    if input.dim() < k or input._size[input.dim() - k:] != ns:
        raise RuntimeError(f"Given normalized_shape={list(ns)}, expected input with shape "
                           f"[*, {', '.join(map(str, ns))}], but got input of size"
                           f"{list(input._size)}")
    check_inexact("rms_norm", input)
    x = input.to(D.float32) if input._dtype in (D.float16, D.bfloat16) else input
    if eps is None:
        eps = {D.float64: 2.220446049250313e-16}.get(x._dtype, 1.1920928955078125e-07)
    dims = list(range(input.dim() - k, input.dim()))
    y = x * (x * x).mean(dims, keepdim=True).add(eps).pow(-0.5)
    y = _to(y, input._dtype)
    if weight is not None:
        y = y * weight
    return y


# -- losses ------------------------------------------------------------------------------------

def nll_loss(self, target, weight=None, reduction=1, ignore_index=-100):
    return _aten.nll_loss_forward.default._call(self, target, weight, reduction,
                                                  ignore_index)[0]


def nll_loss_nd(self, target, weight=None, reduction=1, ignore_index=-100):
    aten = _aten
    if self.dim() < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {self.dim()})")
    if self.dim() != 1 and self._size[0] != target._size[0]:
        raise ValueError(f"Expected input batch_size ({self._size[0]}) to match target "
                         f"batch_size ({target._size[0]}).")
    if self.dim() <= 2:
        return aten.nll_loss_forward.default._call(self, target, weight, reduction,
                                                   ignore_index)[0]
    n, c = self._size[:2]
    spatial = self._size[2:]
    if target._size != (n,) + spatial:
        raise RuntimeError(f"Expected target size {list((n,) + spatial)}, got "
                           f"{list(target._size)}")
    # (N, C, d1..) -> (N*d1.., C): classes last, one row per prediction
    flat = self.movedim(1, -1).reshape(-1, c)
    out = aten.nll_loss_forward.default._call(flat, target.reshape(-1), weight, reduction,
                                              ignore_index)[0]
    return out.view((n,) + spatial) if reduction == 0 else out


def _class_weight_shape(weight, ndim, class_dim):
    shape = [1] * ndim
    shape[class_dim] = weight.numel()
    return weight.view(shape)


def cross_entropy_loss(self, target, weight=None, reduction=1, ignore_index=-100,
                       label_smoothing=0.0):
    aten = _aten
    class_dim = 0 if self.dim() == 1 else 1
    n_classes = self._size[class_dim]
    if self._size == target._size:  # class probabilities (ATen decides by the shapes)
        if target._dtype._category != D.FLOATING:
            raise RuntimeError(f"Expected floating point type for target with class "
                               f"probabilities, got {target._dtype._short}")
        if ignore_index >= 0:
            raise RuntimeError("ignore_index is not supported for floating point target")
        if label_smoothing > 0:
            target = target * (1 - label_smoothing) + label_smoothing / n_classes
        logp = aten._log_softmax.default._call(self, class_dim, False)
        prod = logp * target
        if weight is not None:
            prod = prod * _class_weight_shape(weight, self.dim(), class_dim)
        loss = -prod.sum(class_dim)
        if reduction == 1:
            return loss.sum() / (self.numel() // max(n_classes, 1)) if self.numel() else \
                loss.sum() / 0.0
        return loss.sum() if reduction == 2 else loss
    if not 0 <= label_smoothing <= 1:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    logp = aten._log_softmax.default._call(self, class_dim, False)
    nll = nll_loss_nd(logp, target, weight, reduction, ignore_index)
    if label_smoothing <= 0:
        return nll
    ignore = target == ignore_index
    lw = logp * _class_weight_shape(weight, self.dim(), class_dim) if weight is not None \
        else logp
    smooth = -lw.sum(class_dim)
    smooth = aten.where.ScalarSelf._call(ignore, 0.0, smooth)
    if reduction == 1:
        if weight is not None:
            # the weights of the non-ignored targets (ignored ones index class 0, then drop out)
            picked = weight[aten.where.ScalarSelf._call(ignore, 0, target)]
            smooth = smooth.sum() / (picked * (~ignore).to(picked._dtype)).sum()
        else:
            smooth = smooth.sum() / (~ignore).sum()
    elif reduction == 2:
        smooth = smooth.sum()
    return nll * (1 - label_smoothing) + smooth * (label_smoothing / n_classes)


# -- embedding ---------------------------------------------------------------------------------

def embedding_backward(grad, indices, num_weights, padding_idx, scale_grad_by_freq, sparse):
    if sparse:
        return _aten.embedding_sparse_backward.default._call(grad, indices, num_weights,
                                                             padding_idx, scale_grad_by_freq)
    return _aten.embedding_dense_backward.default._call(grad, indices, num_weights,
                                                          padding_idx, scale_grad_by_freq)


# -- dropout -----------------------------------------------------------------------------------

_ALPHA = 1.7580993408473766  # SELU's -alpha * scale: the value dropped units are set to


def _check_p(p):
    if not 0 <= p <= 1:  # (C++ prints the double: 2, not 2.0)
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p:g}")


def _noise(input, p, feature):
    """Keep-mask of 0/1 values in input's dtype, as ATen's: ``bernoulli_(1 - p)`` of
    ``empty_like(input)``, whose draws fill it in the input's memory order (a transposed or
    channels-last input keeps its strides there), or, for feature dropout, of a new contiguous
    tensor with one element per (sample, channel)."""
    if feature:
        if input.dim() < 2:
            raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
        noise = input.new_empty(input._size[:2] + (1,) * (input.dim() - 2))
    else:
        noise = _aten.empty_like.default._call(input, None, None, None, None, None)
    return _aten.bernoulli_.float._call(noise, 1 - p, None)


def _dropout_impl(input, p, train, feature, alpha, inplace=False):
    """ATen's _dropout_impl; the in-place forms (dropout_ ...) multiply ``input`` itself."""
    _check_p(p)
    if p == 0 or not train or input.numel() == 0:
        return input
    mul = input.mul_ if inplace else input.mul
    if p == 1:
        return mul(0.0)
    noise = _noise(input, p, feature)
    if alpha:  # (ATen's in-place steps: their roundings are its results' too)
        a = 1.0 / math.sqrt((_ALPHA * _ALPHA * p + 1) * (1 - p))
        b = noise.add(-1).mul_(_ALPHA * a).add_(_ALPHA * a * p)
        return mul(noise.mul_(a)).add_(b)
    return mul(noise.div_(1 - p))


def dropout(input, p, train):
    if train and 0 < p < 1 and input.numel():
        if input._device.type != "cpu":  # ATen's is_fused_kernel_acceptable
            return _aten.native_dropout.default._call(input, p, True)[0]
        # ATen's CPU dropout multiplies by noise.div_(1 - p), the noise bernoulli_(1 - p) of
        # empty_like(input): native_dropout's mask of the input laid out as empty_like lays it
        # out (its own strides when dense) is those draws, and one op the graph passes know as
        # random
        x = input if _st.is_non_overlapping_and_dense(input._size, input._stride) \
            else _aten.clone.default._call(input, None)
        keep = _aten.native_dropout.default._call(x, p, True)[1]
        return input.mul(keep.to(input._dtype).div_(1 - p))
    return _dropout_impl(input, p, train, False, False)


def feature_dropout(input, p, train):
    return _dropout_impl(input, p, train, True, False)


def alpha_dropout(input, p, train):
    return _dropout_impl(input, p, train, False, True)


def feature_alpha_dropout(input, p, train):
    return _dropout_impl(input, p, train, True, True)


def dropout_(self, p, train):
    return _dropout_impl(self, p, train, False, False, True)


def feature_dropout_(self, p, train):
    return _dropout_impl(self, p, train, True, False, True)


def alpha_dropout_(self, p, train):
    return _dropout_impl(self, p, train, False, True, True)


def feature_alpha_dropout_(self, p, train):
    return _dropout_impl(self, p, train, True, True, True)


# -- rrelu -------------------------------------------------------------------------------------

def _rrelu(self, lower, upper, training, generator, inplace):
    """ATen's rrelu_with_noise: in training each negative element is scaled by a slope drawn
    from U(lower, upper); in evaluation by their mean (leaky_relu)."""
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    if not training:
        slope = (lower + upper) / 2
        if inplace:
            return _aten.leaky_relu_.default._call(self, slope)
        return _aten.leaky_relu.default._call(self, slope)
    if self._dtype not in (D.float32, D.float64, D.bfloat16):
        raise NotImplementedError(f'"rrelu_with_noise_out_cpu" not implemented for '
                                  f"'{self._dtype._short}'")
    # one U(lower, upper) double per element <= 0, in order (x * (upper - lower) + lower,
    # unfused: ATen's Activation.cpp, the bounds first rounded to the compute type), taken in
    # the compute type; 1 for the others
    from ... import empty, ones, tensor
    work = D.float64 if self._dtype is D.float64 else D.float32
    lower, upper = (tensor(v, dtype=work).item() for v in (lower, upper))
    negative = self <= 0
    x = empty(int(negative.sum()), dtype=D.float64).uniform_(0.0, 1.0, generator=generator)
    noise = ones(self._size, dtype=work).masked_scatter_(negative, (x * (upper - lower) + lower)
                                                          .to(work))
    out = (self.to(work) * noise).to(self._dtype)
    return self.copy_(out) if inplace else out


def rrelu(self, lower=0.125, upper=1.0 / 3, training=False, generator=None):
    return _rrelu(self, lower, upper, training, generator, False)


def rrelu_(self, lower=0.125, upper=1.0 / 3, training=False, generator=None):
    return _rrelu(self, lower, upper, training, generator, True)
