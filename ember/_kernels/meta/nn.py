"""Meta kernels of the ``nn.functional`` native ops: the CPU kernels' checks and shape rules
(``cpu/nn.py``), applied without touching data."""
from ..._core import dtype as D
from ..._core import strides as _st
from ..._core.device import META
from ..._core.tensor_impl import empty_tensor
from ..rules import nn as _nn
from ..registration import register


def _like(t, dtype=None):
    return empty_tensor(t._size, dtype or t._dtype, META)


def _activation_kernels(name):
    def functional(self, *params):
        _nn.check_activation(name, self, params)
        return _like(self)

    def inplace(self, *params):
        _nn.check_activation(name, self, params)
        return self

    def backward(grad_output, self, *params):
        check, kernel = _nn.ACTIVATION_RULES[name]
        check(kernel, self)
        return empty_tensor(_nn.activation_backward_shape(grad_output, self), self._dtype, META)
    return functional, inplace, backward


for _name in _nn.ACTIVATION_RULES:
    _f, _i, _b = _activation_kernels(_name)
    register(_name, "Meta", _f)
    if _name not in _nn.NO_INPLACE:
        register(_name + "_", "Meta", _i)
    if _nn.has_generated_backward(_name):
        register(_name + "_backward", "Meta", _b)


def meta_elu_backward(grad_output, alpha, scale, input_scale, is_result, self_or_result):
    _nn.check_floating("elu_backward_cpu", self_or_result)
    return _like(grad_output)


def meta_leaky_relu_backward(grad_output, self, negative_slope, self_is_result):
    _nn.check_floating("leaky_relu_backward_cpu", self)
    return _like(self)


def meta_log_sigmoid_forward(self):
    _nn.check_floating("log_sigmoid_cpu", self)
    return _like(self), _like(self)


def meta_log_sigmoid_backward(grad_output, self, buffer):
    _nn.check_floating("log_sigmoid_backward_cpu", self)
    return _like(self)


def meta_glu(self, dim=-1):
    _nn.check_floating("glu_cpu", self)
    return empty_tensor(_nn.glu_shape(self, dim)[1], self._dtype, META)


def meta_glu_backward(grad_output, self, dim):
    _nn.glu_shape(self, dim)
    return _like(self)


def meta__prelu_kernel(self, weight):
    _nn.check_prelu(self, weight)
    return _like(self)


def meta__prelu_kernel_backward(grad_output, self, weight):
    _nn.check_prelu(self, weight)
    return _like(self), _like(weight)


def meta__softmax(self, dim, half_to_float):
    _nn.check_softmax(self, dim, half_to_float)
    return _like(self)


def meta__log_softmax(self, dim, half_to_float):
    _nn.check_softmax(self, dim, half_to_float, "log_softmax")
    return _like(self)


def meta__softmax_backward_data(grad_output, output, dim, input_dtype):
    _nn.check_softmax_backward(grad_output, output, dim, input_dtype)
    return _like(output, input_dtype)


def meta__log_softmax_backward_data(grad_output, output, dim, input_dtype):
    _nn.check_softmax_backward(grad_output, output, dim, input_dtype, "log_softmax")
    return _like(output, input_dtype)


def meta_native_layer_norm(input, normalized_shape, weight, bias, eps):
    _nn.check_floating("LayerNormKernelImpl", input)
    _, _, stat = _nn.layer_norm_shapes(input, normalized_shape, weight, bias)
    dt = _nn.norm_stats_dtype(input, weight, bias)
    return _like(input), empty_tensor(stat, dt, META), empty_tensor(stat, dt, META)


def meta_native_layer_norm_backward(grad_out, input, normalized_shape, mean, rstd, weight, bias,
                                    output_mask):
    _nn.layer_norm_shapes(input, normalized_shape, weight, bias)
    return (_like(input) if output_mask[0] else None,
            _like(weight) if output_mask[1] and weight is not None else None,
            _like(bias) if output_mask[2] and bias is not None else None)


def meta_native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum,
                           eps):
    _nn.check_floating("batch_norm", input)
    c = _nn.batch_norm_shapes(input, weight, bias, running_mean, running_var)
    stat = (c,) if training else (0,)
    dt = _nn.norm_stats_dtype(input, weight, bias, running_mean, running_var)
    return _like(input), empty_tensor(stat, dt, META), empty_tensor(stat, dt, META)


def meta_native_batch_norm_backward(grad_out, input, weight, running_mean, running_var,
                                    save_mean, save_invstd, train, eps, output_mask):
    c = (input._size[1],)
    wdt = weight._dtype if weight is not None else input._dtype
    return (_like(input) if output_mask[0] else None,
            empty_tensor(c, wdt, META) if output_mask[1] else None,
            empty_tensor(c, wdt, META) if output_mask[2] else None)


def meta_native_group_norm(input, weight, bias, N, C, HxW, group, eps):
    _nn.check_floating("GroupNormKernelImpl", input)
    _nn.check_group_norm(input, weight, bias, N, C, HxW, group)
    dt = _nn.norm_stats_dtype(input, weight, bias)
    return _like(input), empty_tensor((N, group), dt, META), empty_tensor((N, group), dt, META)


def meta_native_group_norm_backward(grad_out, input, mean, rstd, weight, N, C, HxW, group,
                                    output_mask):
    wdt = weight._dtype if weight is not None else input._dtype
    return (_like(input) if output_mask[0] else None,
            empty_tensor((C,), wdt, META) if output_mask[1] else None,
            empty_tensor((C,), wdt, META) if output_mask[2] else None)


def meta_nll_loss_forward(self, target, weight, reduction, ignore_index):
    _nn.check_floating("nll_loss_out_frame", self)
    shape = _nn.nll_loss_shapes(self, target, weight, reduction, ignore_index)
    return empty_tensor(shape, self._dtype, META), empty_tensor((), self._dtype, META)


def meta_nll_loss_backward(grad_output, self, target, weight, reduction, ignore_index,
                           total_weight):
    return _like(self)


def meta_embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    return empty_tensor(_nn.check_embedding(weight, indices), weight._dtype, META)


def meta_embedding_dense_backward(grad_output, indices, num_weights, padding_idx,
                                  scale_grad_by_freq):
    return empty_tensor((num_weights, grad_output._size[-1]), grad_output._dtype, META)


def meta_embedding_renorm_(self, indices, max_norm, norm_type):
    return self


def meta_native_dropout(input, p, train):
    _nn.check_dropout(input, p)
    # laid out as the CPU kernel lays them out (cpu/nn.py: ATen's CPU kernel's layouts)
    size = input._size
    mask_stride = _st.suggest_memory_format_strides(size, input._stride)
    if input.numel() == 0:  # the input's own (ATen's CPU kernel returns it)
        out_stride = input._stride
    elif train is False:
        out_stride = mask_stride
    else:
        out_stride = _st.elementwise_output_strides(size, [input._stride, mask_stride])
    return (empty_tensor(size, input._dtype, META, out_stride),
            empty_tensor(size, D.bool_, META, mask_stride))


def meta_native_dropout_backward(grad_output, mask, scale):
    return _like(grad_output, _nn.dropout_backward_dtype(grad_output, mask, scale))


def meta_mse_loss(self, target, reduction=1):
    _nn.check_floating("mse_cpu", self)
    return empty_tensor(_nn.loss_shapes("mse_loss", self, target, reduction), self._dtype, META)


def meta_mse_loss_backward(grad_output, self, target, reduction):
    return _like(self)


def meta_binary_cross_entropy(self, target, weight=None, reduction=1):
    _nn.check_floating("binary_cross_entropy", self)
    _nn.check_bce(self, target, weight)
    return empty_tensor(self._size if reduction == 0 else (),
                        _nn.bce_with_logits_dtype(self, target), META)


def meta_binary_cross_entropy_backward(grad_output, self, target, weight=None, reduction=1):
    return _like(self)


def meta_binary_cross_entropy_with_logits(self, target, weight=None, pos_weight=None,
                                          reduction=1):
    _nn.check_floating("log_sigmoid_cpu", self)  # (ATen's composite: log_sigmoid first)
    _nn.check_bce(self, target, weight)
    return empty_tensor(self._size if reduction == 0 else (),
                        _nn.bce_with_logits_dtype(self, target), META)
