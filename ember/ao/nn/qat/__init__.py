"""``torch.ao.nn.qat``: the modules quantization-aware training swaps in for Linear and the
convolutions (``prepare_qat``): the same computation on the weight as its fake quantizer
(``qconfig.weight()``, ``weight_fake_quant``) rounds it, sharing the float module's
parameters."""
from .... import nn
from ....nn import functional as F
from ....nn.utils.parametrize import (is_parametrized, transfer_parametrizations_and_params,
                                      type_before_parametrizations)

__all__ = ["Linear", "Conv1d", "Conv2d", "Conv3d"]


def _check_float(cls, mod, mod_type):
    if mod_type is not cls._FLOAT_MODULE:
        raise AssertionError(f"qat.{cls.__name__}.from_float only works for "
                             f"{cls._FLOAT_MODULE.__name__}, got {mod_type.__name__}")
    if not hasattr(mod, "qconfig"):
        raise AssertionError("Input float module must have qconfig defined")
    if not mod.qconfig:
        raise AssertionError("Input float module must have a valid qconfig")


class Linear(nn.Linear):
    """Linear whose weight passes through ``weight_fake_quant`` at each call."""

    _FLOAT_MODULE = nn.Linear

    def __init__(self, in_features, out_features, bias=True, qconfig=None, device=None,
                 dtype=None):
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__(in_features, out_features, bias, **factory_kwargs)
        if not qconfig:
            raise AssertionError("qconfig must be provided for QAT module")
        self.qconfig = qconfig
        self.weight_fake_quant = qconfig.weight(factory_kwargs=factory_kwargs)

    def forward(self, input):
        return F.linear(input, self.weight_fake_quant(self.weight), self.bias)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """The QAT module over ``mod``'s parameters (the Linear of a fused LinearReLU)."""
        _check_float(cls, mod, type_before_parametrizations(mod))
        from ..intrinsic import LinearReLU
        if type_before_parametrizations(mod) is LinearReLU:
            mod = mod[0]
        qat_linear = cls(mod.in_features, mod.out_features, bias=mod.bias is not None,
                         qconfig=mod.qconfig)
        for name in ("weight", "bias"):
            if is_parametrized(mod, name):
                transfer_parametrizations_and_params(mod, qat_linear, name)
            else:
                setattr(qat_linear, name, getattr(mod, name))
        return qat_linear

    def to_float(self):
        linear = nn.Linear(self.in_features, self.out_features, self.bias is not None)
        linear.weight = nn.Parameter(self.weight.detach())
        if self.bias is not None:
            linear.bias = nn.Parameter(self.bias.detach())
        linear.train(self.training)
        return linear


class _ConvNd(nn.modules.conv._ConvNd):
    """A convolution whose weight passes through ``weight_fake_quant`` at each call."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation,
                 transposed, output_padding, groups, bias, padding_mode, qconfig=None,
                 device=None, dtype=None):
        factory_kwargs = {"device": device, "dtype": dtype}
        nn.modules.conv._ConvNd.__init__(self, in_channels, out_channels, kernel_size, stride,
                                         padding, dilation, transposed, output_padding, groups,
                                         bias, padding_mode, **factory_kwargs)
        if not qconfig:
            raise AssertionError("qconfig must be provided for QAT module")
        self.qconfig = qconfig
        self.weight_fake_quant = qconfig.weight(factory_kwargs=factory_kwargs)

    def forward(self, input):
        return self._conv_forward(input, self.weight_fake_quant(self.weight), self.bias)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        _check_float(cls, mod, type(mod))
        from ..intrinsic import _FusedModule
        if isinstance(mod, _FusedModule):
            mod = mod[0]
        qat_conv = cls(mod.in_channels, mod.out_channels, mod.kernel_size, stride=mod.stride,
                       padding=mod.padding, dilation=mod.dilation, groups=mod.groups,
                       bias=mod.bias is not None, padding_mode=mod.padding_mode,
                       qconfig=mod.qconfig)
        qat_conv.weight = mod.weight
        qat_conv.bias = mod.bias
        return qat_conv

    def to_float(self):
        from ..intrinsic import _FusedModule
        cls = type(self)
        conv = cls._FLOAT_CONV_MODULE(self.in_channels, self.out_channels, self.kernel_size,
                                      self.stride, self.padding, self.dilation, self.groups,
                                      self.bias is not None, self.padding_mode)
        conv.weight = nn.Parameter(self.weight.detach())
        if self.bias is not None:
            conv.bias = nn.Parameter(self.bias.detach())
        if issubclass(cls, _FusedModule):
            fused = cls._FLOAT_MODULE(conv, cls._FLOAT_RELU_MODULE())
            fused.train(self.training)
            return fused
        conv.train(self.training)
        return conv


def _conv_class(name, float_conv):
    """qat.Conv{1,2,3}d: ``float_conv``'s arguments and ``_conv_forward``."""
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", qconfig=None, device=None,
                 dtype=None):
        nt = nn.modules.conv._NTUPLE[float_conv._n]
        _ConvNd.__init__(self, in_channels, out_channels, nt(kernel_size), nt(stride),
                         padding if isinstance(padding, str) else nt(padding), nt(dilation),
                         False, nt(0), groups, bias, padding_mode, qconfig=qconfig,
                         device=device, dtype=dtype)
    return type(name, (_ConvNd, float_conv),
                {"__init__": __init__, "_FLOAT_MODULE": float_conv,
                 "_FLOAT_CONV_MODULE": float_conv, "__module__": __name__, "__qualname__": name,
                 "__doc__": f"{float_conv.__name__} whose weight is fake-quantized at each "
                            f"call."})


Conv1d = _conv_class("Conv1d", nn.Conv1d)
Conv2d = _conv_class("Conv2d", nn.Conv2d)
Conv3d = _conv_class("Conv3d", nn.Conv3d)
