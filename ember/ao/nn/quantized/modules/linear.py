"""The static quantized Linear (``torch.ao.nn.quantized.Linear``): quint8 inputs and outputs,
an int8 weight (per tensor or per channel) and a float bias held prepacked by
``quantized::linear_prepack``, each call one ``quantized::linear``; and ``LinearPackedParams``,
the child that holds the packed weight (the dynamic Linear's too).

State dicts have PyTorch's keys and values (``_packed_params._packed_params`` is the unpacked
``(weight, bias)`` pair, ``scale`` and ``zero_point`` tensors), so they load in either library.
"""
from collections.abc import Iterable

import ember
from ..... import nn
from .....nn.utils.parametrize import type_before_parametrizations
from .utils import WeightedQuantizedModule, _hide_packed_params_repr, _quantize_weight

__all__ = ["LinearPackedParams", "Linear"]


class LinearPackedParams(nn.Module):
    """Holds a quantized Linear's prepacked weight and bias."""
    _version = 3

    def __init__(self, dtype=ember.qint8):
        super().__init__()
        self.dtype = dtype
        if dtype is ember.float16:
            raise NotImplementedError("ember's quantized Linear supports dtype=torch.qint8 only "
                                      "(no float16 packed weights)")
        wq = ember._empty_affine_quantized([1, 1], scale=1.0, zero_point=0, dtype=ember.qint8)
        self.set_weight_bias(wq, None)

    def set_weight_bias(self, weight, bias):
        if self.dtype is not ember.qint8:
            raise RuntimeError("Unsupported dtype on dynamic quantized linear!")
        self._packed_params = ember.ops.quantized.linear_prepack(weight, bias)

    def _weight_bias(self):
        if self.dtype is not ember.qint8:
            raise RuntimeError("Unsupported dtype on dynamic quantized linear!")
        return ember.ops.quantized.linear_unpack(self._packed_params)

    def forward(self, x):
        return x

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        super()._save_to_state_dict(destination, prefix, keep_vars)
        destination[prefix + "dtype"] = self.dtype
        destination[prefix + "_packed_params"] = self._weight_bias()

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        version = local_metadata.get("version", None)
        if version is None or version < 2:
            self.dtype = ember.qint8
        else:
            self.dtype = state_dict.pop(prefix + "dtype")
        if version is None or version < 3:
            self.set_weight_bias(state_dict.pop(prefix + "weight"),
                                 state_dict.pop(prefix + "bias"))
        if version == 3:
            weight, bias = state_dict.pop(prefix + "_packed_params")
            self.set_weight_bias(weight, bias)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, False, missing_keys,
                                      unexpected_keys, error_msgs)

    def __repr__(self):
        return self._weight_bias().__repr__()


class Linear(WeightedQuantizedModule):
    """A Linear whose input, weight and output are quantized (output ``scale`` and
    ``zero_point`` are the module's)."""
    _version = 3
    _FLOAT_MODULE = (nn.Linear, nn.modules.linear.NonDynamicallyQuantizableLinear)

    def __init__(self, in_features, out_features, bias_=True, dtype=ember.qint8):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        bias = ember.zeros(out_features, dtype=ember.float) if bias_ else None
        if dtype is ember.qint8:
            qweight = ember._empty_affine_quantized([out_features, in_features], scale=1,
                                                    zero_point=0, dtype=ember.qint8)
        elif dtype is ember.float16:
            raise NotImplementedError("ember's quantized Linear supports dtype=torch.qint8 only "
                                      "(no float16 packed weights)")
        else:
            raise RuntimeError("Unsupported dtype specified for quantized Linear!")
        self._packed_params = LinearPackedParams(dtype)
        self._packed_params.set_weight_bias(qweight, bias)
        self.scale = 1.0
        self.zero_point = 0

    def _get_name(self):
        return "QuantizedLinear"

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"scale={self.scale}, zero_point={self.zero_point}, "
                f"qscheme={self.weight().qscheme()}")

    def __repr__(self):
        return _hide_packed_params_repr(self, LinearPackedParams)

    def forward(self, x):
        return ember.ops.quantized.linear(x, self._packed_params._packed_params, self.scale,
                                          self.zero_point)

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        super()._save_to_state_dict(destination, prefix, keep_vars)
        destination[prefix + "scale"] = ember.tensor(self.scale)
        destination[prefix + "zero_point"] = ember.tensor(self.zero_point)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        self.scale = float(state_dict.pop(prefix + "scale"))
        self.zero_point = int(state_dict.pop(prefix + "zero_point"))
        version = local_metadata.get("version", None)
        if version is None or version == 1:  # the parameters moved into a submodule
            state_dict[prefix + "_packed_params.weight"] = state_dict.pop(prefix + "weight")
            state_dict[prefix + "_packed_params.bias"] = state_dict.pop(prefix + "bias")
        super()._load_from_state_dict(state_dict, prefix, local_metadata, False, missing_keys,
                                      unexpected_keys, error_msgs)

    def _weight_bias(self):
        return self._packed_params._weight_bias()

    def weight(self):
        return self._weight_bias()[0]

    def bias(self):
        return self._weight_bias()[1]

    def set_weight_bias(self, w, b):
        self._packed_params.set_weight_bias(w, b)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """The quantized twin of an observed float (or QAT) Linear: its weight quantized with
        the weight observer's (or fake quantizer's) parameters, its output's with those its
        activation observer computed."""
        from ...intrinsic import LinearReLU as _FusedLinearReLU
        # (PyTorch folds a QAT LinearBn1d's batch norm in here first; ember has no such module)
        if hasattr(mod, "weight_fake_quant"):
            weight_post_process = mod.weight_fake_quant
            activation_post_process = mod.activation_post_process
        else:
            float_modules = (cls._FLOAT_MODULE if isinstance(cls._FLOAT_MODULE, Iterable)
                             else [cls._FLOAT_MODULE])
            supported = ", ".join(m.__name__ for m in float_modules)
            if type_before_parametrizations(mod) not in float_modules:
                raise AssertionError(f"nnq.{cls.__name__}.from_float only works for {supported}, "
                                     f"but got: {type(mod)}")
            if not hasattr(mod, "qconfig"):
                raise AssertionError("Input float module must have qconfig defined")
            activation_post_process = mod.activation_post_process
            if type_before_parametrizations(mod) is _FusedLinearReLU:
                mod = mod[0]
            weight_post_process = (mod.qconfig.weight() if not hasattr(mod, "weight_fake_quant")
                                   else mod.weight_fake_quant)
        if not use_precomputed_fake_quant:
            weight_post_process(mod.weight)
        dtype = weight_post_process.dtype
        act_scale, act_zp = activation_post_process.calculate_qparams()
        if dtype is not ember.qint8:
            raise AssertionError(f"Weight observer must have dtype torch.qint8, got {dtype}")
        qweight = _quantize_weight(mod.weight.float(), weight_post_process)
        qlinear = cls(mod.in_features, mod.out_features, dtype=dtype)
        qlinear.set_weight_bias(qweight, mod.bias)
        qlinear.scale = float(act_scale)
        qlinear.zero_point = int(act_zp)
        return qlinear

    @classmethod
    def from_reference(cls, ref_qlinear, output_scale, output_zero_point):
        """The quantized Linear of a reference quantized Linear (one whose
        ``get_quantized_weight()`` gives its int8 weight) and the output's parameters."""
        qlinear = cls(ref_qlinear.in_features, ref_qlinear.out_features)
        qlinear.set_weight_bias(ref_qlinear.get_quantized_weight(), ref_qlinear.bias)
        qlinear.scale = float(output_scale)
        qlinear.zero_point = int(output_zero_point)
        return qlinear
