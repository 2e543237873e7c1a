"""``torch.ao.nn.intrinsic.qat``: what quantization-aware training swaps in for the fused
sequences. ``ConvBn*`` folds the batch norm into the convolution's fake-quantized weight
(scaled by ``gamma / sqrt(running_var + eps)``) and undoes the scale on the output before the
batch norm runs, so training sees the weight the folded quantized convolution will have while
the statistics keep updating (``freeze_bn_stats`` stops them); ``ConvReLU*`` and
``LinearReLU`` are the QAT convolution and Linear with a ReLU."""
import math

import ember
from ..... import nn
from .....nn import functional as F
from .....nn import init
from .....nn.utils.fusion import fuse_conv_bn_weights
from ... import intrinsic as nni
from ... import qat as nnqat

__all__ = ["ConvBn1d", "ConvBn2d", "ConvBn3d", "ConvBnReLU1d", "ConvBnReLU2d", "ConvBnReLU3d",
           "ConvReLU1d", "ConvReLU2d", "ConvReLU3d", "LinearReLU", "freeze_bn_stats",
           "update_bn_stats"]

_BN_CLASS_MAP = {1: nn.BatchNorm1d, 2: nn.BatchNorm2d, 3: nn.BatchNorm3d}


class _ConvBnNd(nn.modules.conv._ConvNd, nni._FusedModule):
    _version = 2

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation,
                 transposed, output_padding, groups, bias, padding_mode, eps=1e-05,
                 momentum=0.1, freeze_bn=False, qconfig=None, dim=2):
        nn.modules.conv._ConvNd.__init__(self, in_channels, out_channels, kernel_size, stride,
                                         padding, dilation, transposed, output_padding, groups,
                                         False, padding_mode)
        if not qconfig:
            raise AssertionError("qconfig must be provided for QAT module")
        self.qconfig = qconfig
        self.freeze_bn = freeze_bn if self.training else True
        self.bn = _BN_CLASS_MAP[dim](out_channels, eps, momentum, True, True)
        self.weight_fake_quant = self.qconfig.weight()
        if bias:
            self.bias = nn.Parameter(ember.empty(out_channels))
        else:
            self.register_parameter("bias", None)
        self.reset_bn_parameters()
        if self.training and not freeze_bn:
            self.update_bn_stats()
        else:
            self.freeze_bn_stats()
        self._enable_slow_path_for_better_numerical_stability = False

    def reset_running_stats(self):
        self.bn.reset_running_stats()

    def reset_bn_parameters(self):
        self.bn.reset_running_stats()
        init.uniform_(self.bn.weight)
        init.zeros_(self.bn.bias)
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in)
            init.uniform_(self.bias, -bound, bound)

    def update_bn_stats(self):
        self.freeze_bn = False
        self.bn.training = True
        return self

    def freeze_bn_stats(self):
        self.freeze_bn = True
        self.bn.training = False
        return self

    def _forward(self, input):
        if self._enable_slow_path_for_better_numerical_stability:
            return self._forward_slow(input)
        return self._forward_approximate(input)

    def _shapes(self):
        weight_shape = [1] * len(self.weight.shape)
        weight_shape[0] = -1
        bias_shape = [1] * len(self.weight.shape)
        bias_shape[1] = -1
        return weight_shape, bias_shape

    def _forward_approximate(self, input):
        """The convolution with the folded, fake-quantized weight; the scale undone before
        the batch norm (whose statistics then are the unfolded convolution's)."""
        running_std = ember.sqrt(self.bn.running_var + self.bn.eps)
        scale_factor = self.bn.weight / running_std
        weight_shape, bias_shape = self._shapes()
        scaled_weight = self.weight_fake_quant(self.weight * scale_factor.reshape(weight_shape))
        if self.bias is not None:
            zero_bias = ember.zeros_like(self.bias, dtype=input.dtype)
        else:
            zero_bias = ember.zeros(self.out_channels, device=scaled_weight.device,
                                    dtype=input.dtype)
        conv = self._conv_forward(input, scaled_weight, zero_bias)
        conv_orig = conv / scale_factor.reshape(bias_shape)
        if self.bias is not None:
            conv_orig = conv_orig + self.bias.reshape(bias_shape)
        return self.bn(conv_orig)

    def _forward_slow(self, input):
        """The batch statistics from an unquantized convolution first, then the quantized one
        rescaled to them (PyTorch's numerically stabler path)."""
        zero_bias = ember.zeros(self.out_channels, device=self.weight.device, dtype=input.dtype)
        weight_shape, bias_shape = self._shapes()
        if self.bn.training:
            conv_out = self._conv_forward(input, self.weight, zero_bias)
            with ember.no_grad():
                conv_out_bias = (conv_out if self.bias is None
                                 else conv_out + self.bias.reshape(bias_shape))
                self.bn(conv_out_bias)
            running_std = ember.sqrt(self.bn.running_var + self.bn.eps)
            scale_factor = self.bn.weight / running_std
            scaled_weight = self.weight_fake_quant(
                self.weight * scale_factor.reshape(weight_shape))
            conv_bn = self._conv_forward(input, scaled_weight, zero_bias)
            avg_dims = [0] + list(range(2, len(self.weight.shape)))
            batch_mean = conv_out.mean(avg_dims)
            batch_var = ember.square(conv_out - batch_mean.reshape(bias_shape)).mean(avg_dims)
            batch_std = ember.sqrt(batch_var + self.bn.eps)
            unscale_factor = running_std / batch_std
            conv_bn *= unscale_factor.reshape(bias_shape)
            fused_mean, fused_std = batch_mean, batch_std
        else:
            running_std = ember.sqrt(self.bn.running_var + self.bn.eps)
            scale_factor = self.bn.weight / running_std
            scaled_weight = self.weight_fake_quant(
                self.weight * scale_factor.reshape(weight_shape))
            conv_bn = self._conv_forward(input, scaled_weight, zero_bias)
            fused_mean = self.bn.running_mean - (self.bias if self.bias is not None else 0)
            fused_std = running_std
        fused_bias = self.bn.bias - self.bn.weight * fused_mean / fused_std
        conv_bn += fused_bias.reshape(bias_shape)
        if self.bias is not None:  # (keeps the bias in the graph: its gradient is zero)
            conv_bn += (self.bias - self.bias).reshape(bias_shape)
        return conv_bn

    def forward(self, input):
        return self._forward(input)

    def train(self, mode=True):
        """Batch norm statistics stay frozen (the bn in eval mode) after ``freeze_bn_stats``."""
        self.training = mode
        if not self.freeze_bn:
            for module in self.children():
                module.train(mode)
        return self

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        if type(mod) is not cls._FLOAT_MODULE:
            raise AssertionError("qat." + cls.__name__ + ".from_float only works for "
                                 + cls._FLOAT_MODULE.__name__)
        if not hasattr(mod, "qconfig"):
            raise AssertionError("Input float module must have qconfig defined")
        if not mod.qconfig:
            raise AssertionError("Input float module must have a valid qconfig")
        conv, bn = mod[0], mod[1]
        qat_convbn = cls(conv.in_channels, conv.out_channels, conv.kernel_size, conv.stride,
                         conv.padding, conv.dilation, conv.groups, conv.bias is not None,
                         conv.padding_mode, bn.eps, bn.momentum, False, mod.qconfig)
        qat_convbn.weight = conv.weight
        qat_convbn.bias = conv.bias
        qat_convbn.bn.weight = bn.weight
        qat_convbn.bn.bias = bn.bias
        qat_convbn.bn.running_mean = bn.running_mean
        qat_convbn.bn.running_var = bn.running_var
        qat_convbn.bn.num_batches_tracked = bn.num_batches_tracked
        return qat_convbn

    def to_float(self):
        """The float convolution with the batch norm folded in (and its ReLU)."""
        cls = type(self)
        conv = cls._FLOAT_CONV_MODULE(self.in_channels, self.out_channels, self.kernel_size,
                                      self.stride, self.padding, self.dilation, self.groups,
                                      self.bias is not None, self.padding_mode)
        conv.weight = nn.Parameter(self.weight.detach())
        if self.bias is not None:
            conv.bias = nn.Parameter(self.bias.detach())
        conv.weight, conv.bias = fuse_conv_bn_weights(
            conv.weight, conv.bias, self.bn.running_mean, self.bn.running_var, self.bn.eps,
            self.bn.weight, self.bn.bias)
        if cls._FLOAT_RELU_MODULE:
            conv_relu = cls._FUSED_FLOAT_MODULE(conv, cls._FLOAT_RELU_MODULE())
            conv_relu.train(self.training)
            return conv_relu
        conv.train(self.training)
        return conv


def _conv_bn_class(name, float_conv, dim, relu_of=None):
    """qat.ConvBn{1,2,3}d, or with ``relu_of`` (that class) its ConvBnReLU subclass."""
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=None, padding_mode="zeros", eps=1e-05, momentum=0.1,
                 freeze_bn=False, qconfig=None):
        nt = nn.modules.conv._NTUPLE[dim]
        _ConvBnNd.__init__(self, in_channels, out_channels, nt(kernel_size), nt(stride),
                           nt(padding), nt(dilation), False, nt(0), groups, bias, padding_mode,
                           eps, momentum, freeze_bn, qconfig, dim=dim)
    body = {"__init__": __init__, "__module__": __name__, "__qualname__": name,
            "_FLOAT_MODULE": getattr(nni, name), "_FLOAT_CONV_MODULE": float_conv,
            "_FLOAT_BN_MODULE": _BN_CLASS_MAP[dim], "_FLOAT_RELU_MODULE": None,
            "__doc__": f"{float_conv.__name__} and BatchNorm{dim}d folded for QAT."}
    if relu_of is not None:
        body.update(_FLOAT_RELU_MODULE=nn.ReLU,
                    _FUSED_FLOAT_MODULE=getattr(nni, f"ConvReLU{dim}d"),
                    forward=lambda self, input: F.relu(self._forward(input)),
                    __doc__=f"{float_conv.__name__}, BatchNorm{dim}d and ReLU folded for QAT.")
    bases = (relu_of,) if relu_of is not None else (_ConvBnNd, float_conv)
    return type(name, bases, body)


def _conv_relu_class(name, qat_conv, dim):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", qconfig=None):
        qat_conv.__init__(self, in_channels, out_channels, kernel_size, stride=stride,
                          padding=padding, dilation=dilation, groups=groups, bias=bias,
                          padding_mode=padding_mode, qconfig=qconfig)

    def forward(self, input):
        return F.relu(self._conv_forward(input, self.weight_fake_quant(self.weight),
                                         self.bias))
    return type(name, (qat_conv, nni._FusedModule),
                {"__init__": __init__, "forward": forward, "__module__": __name__,
                 "__qualname__": name, "_FLOAT_MODULE": getattr(nni, name),
                 "_FLOAT_CONV_MODULE": qat_conv._FLOAT_CONV_MODULE, "_FLOAT_BN_MODULE": None,
                 "_FLOAT_RELU_MODULE": nn.ReLU,
                 "__doc__": f"The QAT Conv{dim}d followed by ReLU."})


ConvBn1d = _conv_bn_class("ConvBn1d", nn.Conv1d, 1)
ConvBn2d = _conv_bn_class("ConvBn2d", nn.Conv2d, 2)
ConvBn3d = _conv_bn_class("ConvBn3d", nn.Conv3d, 3)
ConvBnReLU1d = _conv_bn_class("ConvBnReLU1d", nn.Conv1d, 1, ConvBn1d)
ConvBnReLU2d = _conv_bn_class("ConvBnReLU2d", nn.Conv2d, 2, ConvBn2d)
ConvBnReLU3d = _conv_bn_class("ConvBnReLU3d", nn.Conv3d, 3, ConvBn3d)
ConvReLU1d = _conv_relu_class("ConvReLU1d", nnqat.Conv1d, 1)
ConvReLU2d = _conv_relu_class("ConvReLU2d", nnqat.Conv2d, 2)
ConvReLU3d = _conv_relu_class("ConvReLU3d", nnqat.Conv3d, 3)


class LinearReLU(nnqat.Linear, nni._FusedModule):
    """The QAT Linear followed by ReLU."""

    _FLOAT_MODULE = nni.LinearReLU

    def __init__(self, in_features, out_features, bias=True, qconfig=None):
        super().__init__(in_features, out_features, bias, qconfig)

    def forward(self, input):
        return F.relu(F.linear(input, self.weight_fake_quant(self.weight), self.bias))

    def to_float(self):
        linear = nn.Linear(self.in_features, self.out_features, self.bias is not None)
        linear.weight = nn.Parameter(self.weight.detach())
        if self.bias is not None:
            linear.bias = nn.Parameter(self.bias.detach())
        return nni.LinearReLU(linear, nn.ReLU())


def update_bn_stats(mod):
    """``model.apply(update_bn_stats)``: the folded batch norms' statistics update again."""
    if type(mod) in {ConvBnReLU1d, ConvBnReLU2d, ConvBnReLU3d, ConvBn1d, ConvBn2d, ConvBn3d}:
        mod.update_bn_stats()


def freeze_bn_stats(mod):
    """``model.apply(freeze_bn_stats)``: the folded batch norms keep their statistics."""
    if type(mod) in {ConvBnReLU1d, ConvBnReLU2d, ConvBnReLU3d, ConvBn1d, ConvBn2d, ConvBn3d}:
        mod.freeze_bn_stats()
