"""The static quantized convolutions (``torch.ao.nn.quantized.Conv1d``, ``Conv2d``,
``Conv3d``): a quint8 input, an int8 weight (per tensor or per output channel) and a float bias
held prepacked by ``quantized::conv{1,2,3}d_prepack``, each call one ``quantized::conv{1,2,3}d``;
and the transposed ones (``ConvTranspose1d``/``2d``/``3d``: per-tensor weights,
``quantized::conv_transpose{1,2,3}d``).

State dicts have PyTorch's keys (``weight``, ``bias``, ``scale``, ``zero_point``: the packed
weight unpacked), so they load in either library.
"""
import ember
from ..... import nn
from .....nn import functional as F
from .....nn.modules.utils import _pair, _single, _triple
from .....nn.utils.fusion import fuse_conv_bn_weights
from ... import intrinsic as nni  # (ao.nn imports intrinsic, and its qat, first)
from ...intrinsic import qat as nniqat
from .utils import WeightedQuantizedModule, _quantize_weight

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
           "ConvTranspose3d"]

_SUPPORTED_PADDING = {"zeros", "reflect"}


def _reverse_repeat_padding(padding):
    return [p for p in reversed(padding) for _ in range(2)]


class _ConvNd(WeightedQuantizedModule):
    """What the quantized convolutions share: geometry, the packed weight's serialization and
    the conversion from observed (or QAT) float modules."""

    def _init(self, in_channels, out_channels, kernel_size, stride, padding, dilation,
              transposed, output_padding, groups, bias, padding_mode="zeros", device=None,
              dtype=None):
        super().__init__()
        if out_channels <= 0:
            raise ValueError(f"out_channels must be greater than 0, got {out_channels}")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.dilation = dilation
        self.transposed = transposed
        self.output_padding = output_padding
        self.groups = groups
        if padding_mode not in _SUPPORTED_PADDING:
            raise ValueError(f"'padding_mode' {padding_mode} is not supported by quantized "
                             f"convolution")
        self.padding_mode = padding_mode
        weight_shape = ([in_channels, out_channels // self.groups] if transposed
                        else [out_channels, in_channels // self.groups])
        qweight = ember._empty_affine_quantized(weight_shape + list(kernel_size), scale=1,
                                                zero_point=0, dtype=ember.qint8, device=device)
        bias_float = (ember.zeros(out_channels, dtype=ember.float, device=device) if bias
                      else None)
        self.set_weight_bias(qweight, bias_float)
        self.scale = 1.0
        self.zero_point = 0

    def extra_repr(self):
        s = ("{in_channels}, {out_channels}, kernel_size={kernel_size}"
             ", stride={stride}, scale={scale}, zero_point={zero_point}")
        if self.padding != (0,) * len(self.padding):
            s += ", padding={padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += ", dilation={dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += ", output_padding={output_padding}"
        if self.groups != 1:
            s += ", groups={groups}"
        if self.bias() is None:
            s += ", bias=False"
        return s.format(**self.__dict__)

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        super()._save_to_state_dict(destination, prefix, keep_vars)
        w, b = self._weight_bias()
        destination[prefix + "weight"] = w
        destination[prefix + "bias"] = b
        destination[prefix + "scale"] = ember.tensor(self.scale)
        destination[prefix + "zero_point"] = ember.tensor(self.zero_point)

    def __getstate__(self):
        w, b = self._weight_bias()
        return (self.in_channels, self.out_channels, self.kernel_size, self.stride,
                self.padding, self.dilation, self.transposed, self.output_padding, self.groups,
                self.padding_mode, w, b, self.scale, self.zero_point, self.training)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        self.set_weight_bias(state_dict.pop(prefix + "weight"), state_dict.pop(prefix + "bias"))
        self.scale = float(state_dict.pop(prefix + "scale"))
        self.zero_point = int(state_dict.pop(prefix + "zero_point"))
        super()._load_from_state_dict(state_dict, prefix, local_metadata, False, missing_keys,
                                      unexpected_keys, error_msgs)

    def __setstate__(self, state):
        (self.in_channels, self.out_channels, self.kernel_size, self.stride, self.padding,
         self.dilation, self.transposed, self.output_padding, self.groups,
         self.padding_mode) = state[:10]
        self.set_weight_bias(state[10], state[11])
        self.scale, self.zero_point, self.training = state[12], state[13], state[14]

    def __deepcopy__(self, memo):
        new_instance = type(self).__new__(type(self))
        nn.Module.__init__(new_instance)
        new_instance.__setstate__(self.__getstate__())
        return new_instance

    def __copy__(self):
        return self.__deepcopy__({})

    @classmethod
    def get_qconv(cls, mod, activation_post_process, weight_post_process=None):
        """The quantized twin of float convolution ``mod``: its weight quantized with
        ``weight_post_process``'s parameters, its output with the activation observer's."""
        if weight_post_process is None:
            weight_post_process = mod.qconfig.weight()
        weight_post_process(mod.weight)
        if weight_post_process.dtype != ember.qint8:
            raise AssertionError(f"Weight observer must have a dtype of qint8, got "
                                 f"{weight_post_process.dtype}")
        qweight = _quantize_weight(mod.weight.float(), weight_post_process)
        qconv = cls(mod.in_channels, mod.out_channels, mod.kernel_size, mod.stride,
                    mod.padding, mod.dilation, mod.groups, mod.bias is not None,
                    mod.padding_mode)
        qconv.set_weight_bias(qweight, mod.bias)
        if activation_post_process is None or activation_post_process.dtype == ember.float:
            return qconv  # (dynamic quantization needs no output parameters)
        act_scale, act_zp = activation_post_process.calculate_qparams()
        qconv.scale = float(act_scale)
        qconv.zero_point = int(act_zp)
        return qconv

    @staticmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        if hasattr(mod, "weight_fake_quant"):
            if type(mod) is cls._NNIQAT_CONV_BN_MODULE:  # (the batch norm folds in)
                mod.weight, mod.bias = fuse_conv_bn_weights(
                    mod.weight, mod.bias, mod.bn.running_mean, mod.bn.running_var, mod.bn.eps,
                    mod.bn.weight, mod.bn.bias)
            if not hasattr(mod, "activation_post_process"):
                raise AssertionError("Input QAT module must have observer attached")
            weight_post_process = mod.weight_fake_quant
            activation_post_process = mod.activation_post_process
        else:
            if type(mod) is not cls._FLOAT_MODULE:
                raise AssertionError(f"nnq.{cls.__name__}.from_float only works for "
                                     f"{cls._FLOAT_MODULE.__name__} but got: "
                                     f"{type(mod).__name__}")
            if not hasattr(mod, "qconfig"):
                raise AssertionError("Input float module must have qconfig defined.")
            activation_post_process = getattr(mod, "activation_post_process", None)
            if type(mod) is cls._NNI_CONV_RELU_MODULE:
                mod = mod[0]
            weight_post_process = mod.qconfig.weight()
        return cls.get_qconv(mod, activation_post_process, weight_post_process)

    @classmethod
    def from_reference(cls, ref_qconv, output_scale, output_zero_point):
        """The quantized convolution of a reference one (whose ``get_quantized_weight()``
        gives its int8 weight) and the output's parameters."""
        qconv = cls(ref_qconv.in_channels, ref_qconv.out_channels, ref_qconv.kernel_size,
                    ref_qconv.stride, ref_qconv.padding, ref_qconv.dilation, ref_qconv.groups,
                    ref_qconv.bias is not None, ref_qconv.padding_mode,
                    device=ref_qconv.weight.device, dtype=ref_qconv.weight.dtype)
        qconv.set_weight_bias(ref_qconv.get_quantized_weight(), ref_qconv.bias)
        qconv.scale = float(output_scale)
        qconv.zero_point = int(output_zero_point)
        return qconv


class _ConvNdOps(_ConvNd):
    """The packed weight and the call of the ``quantized::conv{n}d`` ops (``_N`` spatial dims,
    ``_RELU`` for the fused ReLU); reflect padding pads the input first."""
    _RELU = False
    _SHAPES = {1: "(N, C, L)", 2: "(N, C, H, W)", 3: "(N, C, D, H, W)"}

    def set_weight_bias(self, w, b):
        padding = self.padding if self.padding_mode == "zeros" else _pair(0)
        prepack = getattr(ember.ops.quantized, f"conv{self._N}d_prepack")
        self._packed_params = prepack(w, b, self.stride, padding, self.dilation, self.groups)

    def _weight_bias(self):
        return getattr(ember.ops.quantized, f"conv{self._N}d_unpack")(self._packed_params)

    def weight(self):
        return self._weight_bias()[0]

    def bias(self):
        return self._weight_bias()[1]

    def _padded(self, input):
        if len(input.shape) != self._N + 2:
            raise ValueError(f"Input shape must be `{self._SHAPES[self._N]}`!")
        if self.padding_mode != "zeros":
            input = F.pad(input, _reverse_repeat_padding(self.padding[:self._N]),
                          mode=self.padding_mode)
        return input

    def forward(self, input):
        op = getattr(ember.ops.quantized, f"conv{self._N}d{'_relu' if self._RELU else ''}")
        return op(self._padded(input), self._packed_params, self.scale, self.zero_point)

    def _get_name(self):
        return f"QuantizedConv{'ReLU' if self._RELU else ''}{self._N}d"

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """The quantized convolution of an observed float one (or fused ConvReLU) or of a QAT
        one: Conv, ConvBn (folded), ConvReLU."""
        return _ConvNd.from_float(cls, mod, use_precomputed_fake_quant)


class Conv1d(_ConvNdOps):
    """A Conv1d whose input, weight and output are quantized (output ``scale`` and
    ``zero_point`` are the module's)."""
    _N = 1
    _FLOAT_MODULE = nn.Conv1d
    _NNIQAT_CONV_BN_MODULE = nniqat.ConvBn1d
    _NNI_CONV_RELU_MODULE = nni.ConvReLU1d

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=True, padding_mode="zeros", device=None,
                 dtype=None):
        self._init(in_channels, out_channels, _single(kernel_size), _single(stride),
                   padding if isinstance(padding, str) else _single(padding),
                   _single(dilation), False, _single(0), groups, bias, padding_mode,
                   device=device, dtype=dtype)


class Conv2d(_ConvNdOps):
    """A Conv2d whose input, weight and output are quantized (output ``scale`` and
    ``zero_point`` are the module's)."""
    _N = 2
    _FLOAT_MODULE = nn.Conv2d
    _NNIQAT_CONV_BN_MODULE = nniqat.ConvBn2d
    _NNI_CONV_RELU_MODULE = nni.ConvReLU2d

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=True, padding_mode="zeros", device=None,
                 dtype=None):
        self._init(in_channels, out_channels, _pair(kernel_size), _pair(stride),
                   _pair(padding), _pair(dilation), False, _pair(0), groups, bias,
                   padding_mode, device=device, dtype=dtype)


class Conv3d(_ConvNdOps):
    """A Conv3d whose input, weight and output are quantized (output ``scale`` and
    ``zero_point`` are the module's; no reflect padding)."""
    _N = 3
    _FLOAT_MODULE = nn.Conv3d
    _NNIQAT_CONV_BN_MODULE = nniqat.ConvBn3d
    _NNI_CONV_RELU_MODULE = nni.ConvReLU3d

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=True, padding_mode="zeros", device=None,
                 dtype=None):
        if padding_mode == "reflect":
            raise AssertionError("Conv3d does not support reflection padding")
        self._init(in_channels, out_channels, _triple(kernel_size), _triple(stride),
                   _triple(padding), _triple(dilation), False, _triple(0), groups, bias,
                   padding_mode, device=device, dtype=dtype)


class _ConvTransposeNd(_ConvNd):
    """What the quantized transposed convolutions share: zero padding only, the packed weight
    of ``quantized::conv_transpose{n}d_prepack`` (per tensor) and the conversion from observed
    float modules."""
    _SHAPES = {1: "(N, C, L)", 2: "(N, C, H, W)", 3: "(N, C, D, H, W)"}

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation,
                 transposed, output_padding, groups, bias, padding_mode, device=None,
                 dtype=None):
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for '
                             f'{self.__class__.__name__}')
        self._init(in_channels, out_channels, kernel_size, stride, padding, dilation,
                   transposed, output_padding, groups, bias, padding_mode, device=device,
                   dtype=dtype)

    def _input_padding(self, kernel_size, dilation, padding):
        return [dilation[k] * (kernel_size[k] - 1) - padding[k] for k in range(len(kernel_size))]

    def set_weight_bias(self, w, b):
        prepack = getattr(ember.ops.quantized, f"conv_transpose{self._N}d_prepack")
        self._packed_params = prepack(w, b, self.stride, self.padding, self.output_padding,
                                      self.dilation, self.groups)

    def _weight_bias(self):
        # (PyTorch unpacks the 2-d and 3-d weights with the plain convolutions' ops)
        name = "conv_transpose1d_unpack" if self._N == 1 else f"conv{self._N}d_unpack"
        return getattr(ember.ops.quantized, name)(self._packed_params)

    def weight(self):
        return self._weight_bias()[0]

    def bias(self):
        return self._weight_bias()[1]

    def forward(self, input):
        if len(input.shape) != self._N + 2:
            raise ValueError(f"Input shape must be `{self._SHAPES[self._N]}`!")
        return getattr(ember.ops.quantized, f"conv_transpose{self._N}d")(
            input, self._packed_params, self.scale, self.zero_point)

    def _get_name(self):
        return f"QuantizedConvTranspose{self._N}d"

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """The quantized transposed convolution of an observed float one: its weight quantized
        with a fresh weight observer of its qconfig, its output with the activation
        observer's parameters."""
        if type(mod) is not cls._FLOAT_MODULE:
            raise AssertionError(f" nnq.{cls.__name__}.from_float only works for "
                                 f"{cls._FLOAT_MODULE.__name__}")
        if not hasattr(mod, "qconfig"):
            raise AssertionError("Input float module must have qconfig defined.")
        weight_post_process = mod.qconfig.weight()
        weight_post_process(mod.weight)
        if weight_post_process.dtype != ember.qint8:
            raise AssertionError(f"Weight observer must have a dtype of qint8, got "
                                 f"{weight_post_process.dtype}")
        qweight = _quantize_weight(mod.weight.float(), weight_post_process)
        qconv = cls(mod.in_channels, mod.out_channels, mod.kernel_size, mod.stride,
                    mod.padding, mod.output_padding, mod.groups, mod.bias is not None,
                    mod.dilation, mod.padding_mode)
        qconv.set_weight_bias(qweight, mod.bias)
        if (not hasattr(mod, "activation_post_process")
                or mod.activation_post_process.dtype == ember.float):
            return qconv  # (dynamic quantization needs no output parameters)
        act_scale, act_zp = mod.activation_post_process.calculate_qparams()
        qconv.scale = float(act_scale)
        qconv.zero_point = int(act_zp)
        return qconv

    @classmethod
    def from_reference(cls, ref_qconvt, output_scale, output_zero_point):
        """The quantized transposed convolution of a reference one and the output's
        parameters."""
        qconv = cls(ref_qconvt.in_channels, ref_qconvt.out_channels, ref_qconvt.kernel_size,
                    ref_qconvt.stride, ref_qconvt.padding, ref_qconvt.output_padding,
                    ref_qconvt.groups, ref_qconvt.bias is not None, ref_qconvt.dilation,
                    ref_qconvt.padding_mode, device=ref_qconvt.weight.device,
                    dtype=ref_qconvt.weight.dtype)
        qconv.set_weight_bias(ref_qconvt.get_quantized_weight(), ref_qconvt.bias)
        qconv.scale = float(output_scale)
        qconv.zero_point = int(output_zero_point)
        return qconv


class ConvTranspose1d(_ConvTransposeNd):
    """A ConvTranspose1d whose input, weight (per tensor) and output are quantized."""
    _N = 1
    _FLOAT_MODULE = nn.ConvTranspose1d

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros",
                 device=None, dtype=None):
        super().__init__(in_channels, out_channels, _single(kernel_size), _single(stride),
                         _single(padding), _single(dilation), True, _single(output_padding),
                         groups, bias, padding_mode, device=device, dtype=dtype)


class ConvTranspose2d(_ConvTransposeNd):
    """A ConvTranspose2d whose input, weight (per tensor) and output are quantized."""
    _N = 2
    _FLOAT_MODULE = nn.ConvTranspose2d

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros",
                 device=None, dtype=None):
        super().__init__(in_channels, out_channels, _pair(kernel_size), _pair(stride),
                         _pair(padding), _pair(dilation), True, _pair(output_padding), groups,
                         bias, padding_mode, device=device, dtype=dtype)


class ConvTranspose3d(_ConvTransposeNd):
    """A ConvTranspose3d whose input, weight (per tensor) and output are quantized."""
    _N = 3
    _FLOAT_MODULE = nn.ConvTranspose3d

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros",
                 device=None, dtype=None):
        super().__init__(in_channels, out_channels, _triple(kernel_size), _triple(stride),
                         _triple(padding), _triple(dilation), True, _triple(output_padding),
                         groups, bias, padding_mode, device=device, dtype=dtype)
