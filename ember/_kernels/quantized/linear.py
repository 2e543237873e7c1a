"""The static quantized Linear's operators, ``quantized::linear_prepack``, ``linear_unpack``,
``linear`` and ``linear_relu``, as PyTorch's x86 engine runs them (FBGEMM's
``PackedLinearWeight``, ATen's ``quantized/cpu/qlinear.cpp``), bit for bit.

A prepacked weight is a :class:`LinearPackedParamsBase` (PyTorch's
``torch.classes.quantized.LinearPackedParamsBase`` script object): the int8 weight, its scales
rounded to float as FBGEMM keeps them, its zero points, the column sums FBGEMM precomputes, and
the float bias. ``linear`` multiplies quint8 rows by it with FBGEMM's arithmetic:

* the products of the integers accumulate exactly (AVX-512 VNNI does not saturate), and the
  zero points come off through the column and row sums, all in wrapping int32;
* with a bias, each accumulator becomes ``float(acc) + bias * float(1 / act_times_w_scale)``
  (per tensor; per channel ``bias / act_times_w_scale``) in float, ``act_times_w_scale`` being
  ``input_scale * weight_scale`` in float;
* that float times ``act_times_w_scale / output_scale`` (float) is rounded to the nearest
  integer, ties to even (``CVTPS2DQ``: out of the int32 range, or NaN, it is the int32
  minimum), saturated to int16, plus the output zero point (saturating int16), saturated to
  uint8, and with ReLU fused raised to the zero point.
"""
import numpy as np

from ..._core import dtype as _dt
from ..._core.quantizer import PerTensorAffineQuantizer
from ..._core.device import contiguous_format as _contiguous
from ...library import Library
from .affine import int_alias, new_qtensor
from .packed import PackedParams, check_bias, check_weight_dtype, packed_weight

_quint8 = _dt.ALIASES["quint8"]

_PACKED = "__torch__.torch.classes.quantized.LinearPackedParamsBase"


class LinearPackedParamsBase(PackedParams):
    """A prepacked quantized Linear weight and bias (what ``quantized::linear_prepack``
    returns; ``unpack()`` gives them back as FBGEMM does, the weight's scales rounded to
    float)."""

    def _pack(self, ints):
        n, k = ints.shape
        self._w_ints = ints.astype(np.float64)  # (exact: a product of rows stays below 2**53)
        self._col_offsets = ints.sum(1) - self._w_zp * k


def linear_prepack(W, B=None):
    """``quantized::linear_prepack`` (FBGEMM's ``PackedLinearWeight::prepack``)."""
    if W.dim() != 2:
        raise RuntimeError("The weight tensor for quantized::linear_prepack (fbgemm) should be "
                           "2-dimensional.")
    check_weight_dtype(W)
    return LinearPackedParamsBase(packed_weight(W, _contiguous, fbgemm=True),
                                  check_bias(B, W.shape[0], "N"))


def linear_unpack(W_prepack):
    return W_prepack.unpack()


def requantize(acc, x_scale, w_scale, per_channel, bias, y_scale, y_zero_point, relu):
    """FBGEMM's requantization of int32 accumulators ``acc`` (rows by output channels) to
    quint8 integers (see the module docstring); ``w_scale`` holds float scales, one per channel
    when ``per_channel``, ``bias`` is a float array or None."""
    act_times_w_scale = np.float32(x_scale) * w_scale  # float32 products
    multiplier = act_times_w_scale / np.float32(y_scale)
    xf = acc.astype(np.float32)
    if bias is not None:
        if per_channel:
            xf = xf + bias / act_times_w_scale
        else:
            # (the reciprocal is a double quotient rounded to float)
            reciprocal = np.float32(1.0 / float(act_times_w_scale[0]))
            xf = xf + bias * reciprocal
    with np.errstate(over="ignore", invalid="ignore"):
        scaled = xf * multiplier
        in_range = np.abs(scaled) < np.float32(2 ** 31)
        rounded = np.where(in_range, np.rint(scaled), -2 ** 31).astype(np.int64)
    zp = int(y_zero_point)
    out = np.clip(np.clip(rounded, -32768, 32767) + zp, -32768, 32767)
    out = np.clip(out, 0, 255)
    if relu:
        out = np.maximum(out, zp & 0xFF)  # (the zero point as a byte)
    return out


def _linear(X, packed, Y_scale_i, Y_zero_point_i, relu):
    if X.dtype is not _quint8:
        raise RuntimeError(f"Expected input data type QUInt8 but got {X.dtype._short}")
    if X.dim() < 2:
        raise RuntimeError("The dimension of input tensor should be larger than or equal to 2")
    k = X.shape[-1]
    n, k_w = packed._w_ints.shape
    if k != k_w:
        raise RuntimeError(f"The number of rows in the packB should be equal to K: {k}")
    bias = packed._bias_f32
    if bias is not None and packed._bias.dtype is not _dt.float32:
        raise RuntimeError(f"expected scalar type Float but found "
                           f"{packed._bias.dtype._short}")
    x_ints = np.asarray(int_alias(X)._nd(), np.int64).reshape(-1, k)
    x_zp = X.q_zero_point()
    acc = np.matmul(x_ints.astype(np.float64), packed._w_ints.T).astype(np.int64)
    acc -= x_zp * packed._col_offsets
    acc -= x_ints.sum(1, keepdims=True) * packed._w_zp
    acc = acc.astype(np.int32)  # (FBGEMM's int32 arithmetic wraps)

    out = requantize(acc, X.q_scale(), packed._w_scale, packed._per_channel, bias, Y_scale_i,
                     Y_zero_point_i, relu)
    q, view = new_qtensor((*X.shape[:-1], n),
                          PerTensorAffineQuantizer(_quint8, Y_scale_i, int(Y_zero_point_i)))
    view[...] = out.reshape(view.shape)
    return q


def linear(X, W_prepack, Y_scale_i, Y_zero_point_i):
    """``quantized::linear`` on FBGEMM (see the module docstring)."""
    return _linear(X, W_prepack, Y_scale_i, Y_zero_point_i, False)


def linear_relu(X, W_prepack, Y_scale_i, Y_zero_point_i):
    """``quantized::linear_relu``: ``quantized::linear`` whose outputs stop at the zero point."""
    return _linear(X, W_prepack, Y_scale_i, Y_zero_point_i, True)


# PyTorch's TORCH_LIBRARY(quantized, ...) schemas; the kernels take quantized tensors
# (QuantizedCPU), unpacking takes none (CatchAll, here CompositeExplicitAutograd)
_lib = Library("quantized", "DEF")
_lib.define(f"linear_prepack(Tensor W, Tensor? B=None) -> {_PACKED} W_prepack")
_lib.define(f"linear_unpack({_PACKED} W_prepack) -> (Tensor W_origin, Tensor? B_origin)")
_lib.define(f"linear(Tensor X, {_PACKED} W_prepack, float Y_scale_i, int Y_zero_point_i) "
            f"-> Tensor Y")
_lib.define(f"linear_relu(Tensor X, {_PACKED} W_prepack, float Y_scale_i, int Y_zero_point_i) "
            f"-> Tensor Y")
_lib.impl("linear_prepack", linear_prepack, "QuantizedCPU")
_lib.impl("linear_unpack", linear_unpack, "CompositeExplicitAutograd")
_lib.impl("linear", linear, "QuantizedCPU")
_lib.impl("linear_relu", linear_relu, "QuantizedCPU")
