"""The static quantized Conv2d's operators, ``quantized::conv2d_prepack``, ``conv2d_unpack``,
``conv2d.new``, ``conv2d_relu.new`` and the packed weight's accessors (``conv2d_stride`` ...), as
PyTorch's x86 engine runs them (ATen's ``quantized/cpu/qconv.cpp``), bit for bit.

The x86 engine packs a weight whose zero points are all zero for oneDNN and any other for
FBGEMM. Both accumulate every window's products of ``(x - x_zp)`` and ``(w - w_zp)`` exactly in
int32 (the input padded with its zero point, i.e. zero after the subtraction); the output is
channels-last. They differ in

* the requantization: FBGEMM's is ``quantized::linear``'s (``linear.requantize``, the output
  channels as columns: rounded, then the zero point added); oneDNN's scales the accumulator by
  ``x_scale * w_scale`` in float, adds the bias, multiplies by the float reciprocal of the
  output scale and adds the zero point *before* rounding (ties to even), so ties land
  differently;
* what ``unpack()`` gives back: FBGEMM's weight channels-last with its scales rounded to float,
  oneDNN's contiguous and as given;
* their checks and messages.

(PyTorch's oneDNN weight also caches the primitive of its first call, ReLU or not, for later
calls of the other op; ember computes the op that is called.)
"""
import numpy as np

from ..._core import dtype as _dt
from ..._core.quantizer import PerTensorAffineQuantizer, per_channel_affine, per_tensor_affine
from ..._core.device import channels_last as _channels_last, contiguous_format as _contiguous
from ..._ops.overload import ops
from ...library import Library
from .affine import int_alias, new_qtensor
from .linear import requantize

_aten = ops.aten
_qint8, _quint8 = _dt.ALIASES["qint8"], _dt.ALIASES["quint8"]

_PACKED = "__torch__.torch.classes.quantized.Conv2dPackedParamsBase"


class Conv2dPackedParamsBase:
    """A prepacked quantized Conv2d weight and bias with the convolution's geometry (what
    ``quantized::conv2d_prepack`` returns, PyTorch's ``Conv2dPackedParamsBase`` script
    object)."""

    def __init__(self, weight, bias, stride, padding, dilation, groups):
        self._set(weight, bias, stride, padding, dilation, groups)

    def _set(self, weight, bias, stride, padding, dilation, groups):
        self._weight, self._bias = weight, bias
        self._stride, self._padding = list(stride), list(padding)
        self._dilation, self._groups = list(dilation), int(groups)
        quantizer = weight._quantizer
        oc = weight.shape[0]
        if quantizer.qscheme is per_tensor_affine:
            self._w_scale = np.full(1, quantizer.scale, np.float32)
            w_zp = np.full(oc, quantizer.zero_point, np.int64)
        else:
            self._w_scale = quantizer.scales._nd().astype(np.float32)
            w_zp = quantizer.zero_points._nd().astype(np.int64)
        self._per_channel = quantizer.qscheme is per_channel_affine
        self._onednn = not w_zp.any()
        ints = int_alias(weight)._nd().astype(np.int64) - w_zp.reshape(-1, 1, 1, 1)
        # (groups, K = C/g*kh*kw, OC/g) in float64: products of windows stay exact below 2**53
        g = self._groups
        self._w_cols = ints.reshape(g, oc // g, -1).transpose(0, 2, 1).astype(np.float64)
        self._bias_f32 = None if bias is None else bias.detach()._nd().astype(np.float32)

    def unpack(self):
        return self._weight, self._bias

    def weight(self):
        return self._weight

    def bias(self):
        return self._bias

    def stride(self):
        return list(self._stride)

    def padding(self):
        return list(self._padding)

    def output_padding(self):
        return [0, 0]

    def dilation(self):
        return list(self._dilation)

    def groups(self):
        return self._groups

    def transpose(self):
        return False

    def __getstate__(self):
        return (self._weight, self._bias, self._stride, self._padding, self._dilation,
                self._groups)

    def __setstate__(self, state):
        self._set(*state)


def conv2d_prepack(weight, bias, stride, padding, dilation, groups):
    """``quantized::conv2d_prepack`` (x86: oneDNN for zero-point-free weights, else FBGEMM)."""
    if weight.dim() != 4:
        raise RuntimeError("Weights are expected to have 4 dimensions")
    if len(stride) != 2:
        raise RuntimeError("stride should contain 2 elements for 2D convolution.")
    if len(padding) != 2:
        raise RuntimeError("Specify front/top/left padding only. end/bottom/right padding "
                           "assumed to be equal to front/top/left")
    if len(dilation) != 2:
        raise RuntimeError("dilation should contain 2 elements for 2D convolution.")
    if weight.dtype is not _qint8:
        raise RuntimeError(f"expected scalar type QInt8 but found {weight.dtype._short}")
    oc = weight.shape[0]
    if groups <= 0 or oc % groups:
        # (FBGEMM's check; oneDNN's prepack takes such groups and computes nonsense)
        raise RuntimeError(f"groups = {groups} does not divide number of output channels = "
                           f"{oc}")
    quantizer = weight._quantizer
    per_tensor = quantizer.qscheme is per_tensor_affine
    if not per_tensor and quantizer.axis != 0:
        raise RuntimeError("Only per-channel quantization along the output channels "
                           "(axis 0) is supported by quantized::conv2d_prepack")
    fbgemm = (quantizer.zero_point != 0 if per_tensor
              else bool(_aten.any(quantizer.zero_points != 0)))
    # FBGEMM keeps the weight channels-last and its scales as floats; oneDNN as given
    ints = int_alias(_aten.clone(weight, memory_format=_channels_last if fbgemm
                                 else _contiguous))
    if per_tensor:
        scale = float(np.float32(quantizer.scale)) if fbgemm else quantizer.scale
        packed = _aten._make_per_tensor_quantized_tensor(ints, scale, quantizer.zero_point)
    else:
        scales = quantizer.scales.to(_dt.float32).to(_dt.float64) if fbgemm else \
            quantizer.scales
        packed = _aten._make_per_channel_quantized_tensor(ints, scales, quantizer.zero_points,
                                                          quantizer.axis)
    if bias is not None:
        if bias.dim() != 1:
            raise RuntimeError("bias should be a vector (1D Tensor)")
        if bias.shape[0] != oc:
            raise RuntimeError(f"bias should have K elements: {oc}")
        bias = bias.contiguous()
    return Conv2dPackedParamsBase(packed, bias, stride, padding, dilation, groups)


def conv2d_unpack(packed_weights):
    return packed_weights.unpack()


def conv2d_stride(packed_weights):
    return packed_weights.stride()


def conv2d_padding(packed_weights):
    return packed_weights.padding()


def conv2d_output_padding(packed_weights):
    return packed_weights.output_padding()


def conv2d_dilation(packed_weights):
    return packed_weights.dilation()


def conv2d_groups(packed_weights):
    return packed_weights.groups()


def conv2d_transpose(packed_weights):
    return int(packed_weights.transpose())


def _requantize_onednn(acc, x_scale, w_scale, bias, y_scale, y_zero_point, relu):
    """oneDNN's requantization: ``acc * (x_scale * w_scale) + bias`` in float, times the
    float reciprocal of ``y_scale``, plus the zero point before rounding (ties to even)."""
    xf = acc.astype(np.float32) * (np.float32(x_scale) * w_scale)
    if bias is not None:
        xf = xf + bias
    if relu:
        xf = np.maximum(xf, np.float32(0))
    with np.errstate(over="ignore", invalid="ignore"):
        xf = xf * np.float32(1.0 / y_scale) + np.float32(y_zero_point)
        in_range = np.abs(xf) < np.float32(2 ** 31)
        rounded = np.where(in_range, np.rint(xf), -2 ** 31).astype(np.int64)
    return np.clip(rounded, 0, 255)


def _check_input(qx, packed, relu):
    """The input checks of the engine that packed the weight, with its messages; the output's
    height and width."""
    name = "quantized::conv2d_relu" if relu else "quantized::conv2d"
    onednn = packed._onednn
    if qx.dim() != 4:
        raise RuntimeError(f"{name + '2d' if onednn else 'quantized::conv2d'}(): Expected "
                           f"activation tensor to have 4 dimensions, got {qx.dim()}")
    if qx.dtype is not _quint8:
        raise RuntimeError(f"{name} (ONEDNN): data type of input should be QUint8." if onednn
                           else f"quantized::conv(FBGEMM): Expected activation data type "
                                f"QUInt8 but got {qx.dtype._short}")
    g = packed._groups
    oc, c_g, kh, kw = packed._weight.shape
    n, c, h, w = qx.shape
    if c != c_g * g:
        raise RuntimeError(
            "could not create a primitive descriptor for the convolution forward propagation "
            "primitive. Run workload with environment variable ONEDNN_VERBOSE=all to get "
            "additional diagnostic information." if onednn else
            f"[QConv2D] Given groups={g}, weight of size {oc}, {kh}, {kw}, {c_g}, expected "
            f"input (NCHW) {n}, {c}, {h}, {w} to have {c_g * g} channels, but got {c} channels "
            f"instead")
    (sh, sw), (ph, pw), (dh, dw) = packed._stride, packed._padding, packed._dilation
    # (C's division, which truncates: oneDNN makes an empty output of a window just too big)
    oh = int((h + 2 * ph - dh * (kh - 1) - 1) / sh) + 1
    ow = int((w + 2 * pw - dw * (kw - 1) - 1) / sw) + 1
    if not onednn and (oh <= 0 or ow <= 0):
        raise RuntimeError("[QConv2D] each dimension of output tensor should be greater than 0")
    if oh < 0 or ow < 0:
        bad = oh if oh < 0 else ow
        raise RuntimeError(f"Trying to create tensor with negative dimension {bad}: "
                           f"[{n}, {oc}, {oh}, {ow}]")
    return oh, ow


def _conv2d(qx, packed, output_scale, output_zero_point, relu):
    oh, ow = _check_input(qx, packed, relu)
    g = packed._groups
    oc, _, kh, kw = packed._weight.shape
    n, c = qx.shape[:2]
    (sh, sw), (ph, pw), (dh, dw) = packed._stride, packed._padding, packed._dilation
    bias = packed._bias_f32
    if bias is not None and packed._bias.dtype is not _dt.float32:
        raise RuntimeError(f"expected scalar type Float but found {packed._bias.dtype._short}")
    q, view = new_qtensor((n, oc, oh, ow),
                          PerTensorAffineQuantizer(_quint8, output_scale,
                                                   int(output_zero_point)),
                          channels_last=True)
    if view.size == 0:
        return q
    # the input less its zero point, padded with zeros: FBGEMM's and oneDNN's padding with the
    # zero point
    x = np.asarray(int_alias(qx)._nd(), np.float64) - qx.q_zero_point()
    x = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    # columns (n, oh, ow, groups, C/g, kh, kw): each window's inputs by group
    cols = np.empty((n, oh, ow, c, kh, kw))
    for i in range(kh):
        for j in range(kw):
            window = x[:, :, i * dh:i * dh + sh * (oh - 1) + 1:sh,
                       j * dw:j * dw + sw * (ow - 1) + 1:sw]
            cols[..., i, j] = window.transpose(0, 2, 3, 1)
    cols = cols.reshape(n * oh * ow, g, -1).transpose(1, 0, 2)
    acc = np.matmul(cols, packed._w_cols)  # (groups, rows, OC/g)
    acc = acc.transpose(1, 0, 2).reshape(n * oh * ow, oc).astype(np.int64).astype(np.int32)
    if packed._onednn:
        out = _requantize_onednn(acc, qx.q_scale(), packed._w_scale, bias, output_scale,
                                 output_zero_point, relu)
    else:
        out = requantize(acc, qx.q_scale(), packed._w_scale, packed._per_channel, bias,
                         output_scale, output_zero_point, relu)
    view[...] = out.reshape(n, oh, ow, oc).transpose(0, 3, 1, 2)
    return q


def conv2d(qx, packed_weight, output_scale, output_zero_point):
    """``quantized::conv2d.new`` (see the module docstring)."""
    return _conv2d(qx, packed_weight, output_scale, output_zero_point, False)


def conv2d_relu(qx, packed_weight, output_scale, output_zero_point):
    """``quantized::conv2d_relu.new``: ``conv2d`` whose outputs stop at the zero point."""
    return _conv2d(qx, packed_weight, output_scale, output_zero_point, True)


# PyTorch's TORCH_LIBRARY(quantized, ...) schemas (the namespace is linear.py's library)
_lib = Library("quantized", "FRAGMENT")
_lib.define(f"conv2d_prepack(Tensor weight, Tensor? bias, int[] stride, int[] padding, "
            f"int[] dilation, int groups) -> {_PACKED}")
_lib.define(f"conv2d_unpack({_PACKED} packed_weights) -> (Tensor unpacked_weights, "
            f"Tensor? B_origin)")
_lib.define(f"conv2d.new(Tensor qx, {_PACKED} packed_weight, float output_scale, "
            f"int output_zero_point) -> Tensor")
_lib.define(f"conv2d_relu.new(Tensor qx, {_PACKED} packed_weight, float output_scale, "
            f"int output_zero_point) -> Tensor")
_lib.impl("conv2d_prepack", conv2d_prepack, "QuantizedCPU")
_lib.impl("conv2d_unpack", conv2d_unpack, "CompositeExplicitAutograd")
_lib.impl("conv2d.new", conv2d, "QuantizedCPU")
_lib.impl("conv2d_relu.new", conv2d_relu, "QuantizedCPU")
for _name, _fn, _returns in (("stride", conv2d_stride, "int[]"),
                             ("padding", conv2d_padding, "int[]"),
                             ("output_padding", conv2d_output_padding, "int[]"),
                             ("dilation", conv2d_dilation, "int[]"),
                             ("groups", conv2d_groups, "int"),
                             ("transpose", conv2d_transpose, "int")):
    _lib.define(f"conv2d_{_name}({_PACKED} packed_weights) -> {_returns}")
    _lib.impl(f"conv2d_{_name}", _fn, "CompositeExplicitAutograd")
