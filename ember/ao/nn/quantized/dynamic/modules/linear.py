"""The dynamic quantized Linear (``torch.ao.nn.quantized.dynamic.Linear``): an int8 per-tensor
weight and a float bias; each call quantizes its float input and multiplies in integers.

The arithmetic is FBGEMM's ``qlinear_dynamic`` (PyTorch's x86 kernel), so outputs match
PyTorch's bit for bit: the input's scale and zero point come from its min and max over quint8
with ``reduce_range`` (``quantize_per_tensor_dynamic``), the products accumulate exactly in
int32, the zero points come off through the row and column sums, and each output element is
``float(acc) * float(x_scale * w_scale) + bias`` rounded once (FBGEMM's fused multiply-add).

The module is the static quantized Linear's subclass, as in PyTorch: the weight is held
prepacked (``quantized::linear_prepack``, whose ``unpack()`` gives it back with its scale
rounded to float, as FBGEMM keeps it) by ``LinearPackedParams``; state dicts have PyTorch's keys
and values (``_packed_params._packed_params`` is the ``(weight, bias)`` pair), so they load in
either library.
"""
import numpy as np

import ember
from ...... import nn
from ... import modules as nnq
from ...modules.utils import _quantize_weight

__all__ = ["Linear"]


def linear_dynamic(x, weight, bias=None, reduce_range=True):
    """``quantized::linear_dynamic`` on FBGEMM: ``x @ weight.T + bias`` with ``x`` quantized
    per call (see the module docstring)."""
    if x.dtype is not ember.float32:
        raise RuntimeError("qlinear_dynamic (FBGEMM): data type of input should be float.")
    k = weight.shape[1]
    rows = x.reshape(-1, k)
    qx = ember.quantize_per_tensor_dynamic(rows, ember.quint8, reduce_range)
    xi = qx.int_repr().to(ember.int32)
    wi = weight.int_repr().to(ember.int32)
    acc = ember.matmul(xi, wi.t())
    w_zp = weight.q_zero_point()
    col_offsets = wi.sum(1, dtype=ember.int32) - w_zp * k
    acc = acc - qx.q_zero_point() * col_offsets
    if w_zp:
        acc = acc - xi.sum(1, keepdim=True, dtype=ember.int32) * w_zp
    # FBGEMM's multiplier: the two scales as floats, their product rounded to float
    multiplier = float(np.float32(qx.q_scale()) * np.float32(weight.q_scale()))
    acc = acc.to(ember.float32)
    out = acc * multiplier if bias is None else _fma_float32(acc, multiplier, bias.detach())
    return out.reshape(*x.shape[:-1], weight.shape[0])


def _fma_float32(a, b, c):
    """``a * b + c`` rounded once to float32 (float32 tensors ``a``, ``c``, float32 value ``b``),
    as FBGEMM's fused multiply-add: the product is exact in double, the double sum's rounding
    error is kept (TwoSum), and a sum exactly halfway between two floats goes its way."""
    p = a.double() * b
    c = c.double()
    s = p + c
    bb = s - p
    rest = (p - (s - bb)) + (c - bb)
    r = s.float()
    d = s - r.double()
    inf = ember.full_like(r, float("inf"))
    toward = ember.nextafter(r, ember.where(d > 0, inf, -inf))
    half = (toward.double() - r.double()) / 2
    fix = (d != 0) & (d == half) & (rest != 0) & (rest.sign() == d.sign()) & r.isfinite()
    return ember.where(fix, toward, r)


class Linear(nnq.Linear):
    """A Linear with an int8 weight whose float inputs are quantized at each call."""
    _version = 4

    def __init__(self, in_features, out_features, bias_=True, dtype=ember.qint8):
        super().__init__(in_features, out_features, bias_, dtype=dtype)
        self.version = 4

    def forward(self, x):
        if self._packed_params.dtype is not ember.qint8:
            raise RuntimeError("Unsupported dtype on dynamic quantized linear!")
        weight, bias = self._weight_bias()
        # (version 4 on: the input's range halved, as FBGEMM's non-VNNI kernels need)
        reduce_range = self.version is not None and self.version >= 4
        return linear_dynamic(x, weight, bias, reduce_range).to(x.dtype)

    def _get_name(self):
        return "DynamicQuantizedLinear"

    def extra_repr(self):
        text = (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"dtype={self._packed_params.dtype}")
        if self._packed_params.dtype is ember.qint8:
            text += f", qscheme={self.weight().qscheme()}"
        return text

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        self.version = local_metadata.get("version", None)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, False, missing_keys,
                                      unexpected_keys, error_msgs)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """The dynamic quantized twin of float Linear ``mod``: its weight observed by its
        qconfig's weight observer (the default dynamic one without) and quantized per tensor."""
        float_modules = [nn.Linear, nn.modules.linear.NonDynamicallyQuantizableLinear]
        if type(mod) not in float_modules:
            raise AssertionError("nn.quantized.dynamic.Linear.from_float only works for one of"
                                 + str([m.__name__ for m in float_modules])
                                 + f", got {type(mod)}")
        if not hasattr(mod, "qconfig"):
            raise AssertionError("Input float module must have qconfig defined")
        if mod.qconfig is not None and mod.qconfig.weight is not None:
            weight_observer = mod.qconfig.weight()
        else:
            from .....quantization.qconfig import default_dynamic_qconfig
            weight_observer = default_dynamic_qconfig.weight()
        dtype = weight_observer.dtype
        if dtype is not ember.qint8:
            raise NotImplementedError(f"ember's dynamic quantized Linear supports qint8 weights "
                                      f"only, got: {dtype}")
        if weight_observer.qscheme not in (ember.per_tensor_affine, ember.per_tensor_symmetric):
            raise NotImplementedError(f"ember's dynamic quantized Linear supports per-tensor "
                                      f"weights only, got: {weight_observer.qscheme}")
        weight_observer(mod.weight)
        qweight = _quantize_weight(mod.weight.float(), weight_observer)
        qlinear = cls(mod.in_features, mod.out_features, dtype=dtype)
        qlinear.set_weight_bias(qweight, mod.bias)
        return qlinear

    @classmethod
    def from_reference(cls, ref_qlinear):
        """The dynamic quantized Linear of a reference quantized Linear."""
        qlinear = cls(ref_qlinear.in_features, ref_qlinear.out_features)
        qlinear.set_weight_bias(ref_qlinear.get_quantized_weight(), ref_qlinear.bias)
        return qlinear
