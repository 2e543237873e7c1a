"""The static quantized convolutions' operators, ``quantized::conv{2,3}d_prepack``,
``conv{2,3}d_unpack``, ``conv{2,3}d.new``, ``conv{2,3}d_relu.new``, the transposed
``conv_transpose{1,2,3}d_prepack``/``_unpack``/``conv_transpose{1,2,3}d`` and the packed
weights' accessors (``conv2d_stride`` ...), as PyTorch's x86 engine runs them (ATen's
``quantized/cpu/qconv.cpp``), bit for bit; one implementation for any number of spatial dims.
``quantized::conv1d*`` are ATen's too: the 2-d ops on a height-1 input and weight. Transposed
convolutions take per-tensor weights only (as ATen) and go to oneDNN only without output
padding.

The x86 engine packs a weight whose zero points are all zero for oneDNN (on Linux, a CPU with
AVX-512 VNNI, at most 100 groups) and any other for FBGEMM. Both accumulate every window's
products of ``(x - x_zp)`` and ``(w - w_zp)`` exactly in int32 (the input padded with its zero
point, i.e. zero after the subtraction); the output is channels-last. They differ in

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
import itertools
import sys

import numpy as np

from ..._core import dtype as _dt
from ..._core.quantizer import PerTensorAffineQuantizer, per_tensor_affine
from ..._core.device import (channels_last as _channels_last, channels_last_3d,
                             contiguous_format as _contiguous, preserve_format as _preserve)
from ..._ops.overload import ops
from ...library import Library
from .affine import int_alias, new_qtensor
from .linear import requantize
from .packed import PackedParams, check_bias, check_weight_dtype, packed_weight

_aten = ops.aten
_quint8 = _dt.ALIASES["quint8"]


class ConvPackedParamsBase(PackedParams):
    """A prepacked quantized convolution weight and bias with the convolution's geometry (what
    ``quantized::conv{2,3}d_prepack`` returns, PyTorch's ``Conv{2,3}dPackedParamsBase`` script
    objects)."""

    def _pack(self, ints, stride, padding, dilation, groups, output_padding=None,
              transpose=False):
        self._stride, self._padding = list(stride), list(padding)
        self._dilation, self._groups = list(dilation), int(groups)
        self._output_padding = list(output_padding or [0] * len(self._stride))
        self._transpose = bool(transpose)
        self._onednn = _uses_onednn(self._w_zp, self._groups, self._output_padding)
        ints = ints - self._w_zp.reshape((-1,) + (1,) * (ints.ndim - 1))
        g, oc = self._groups, ints.shape[0]
        if self._transpose:
            # (groups, C/g, OC/g, *kernel): a transposed weight's first dim is its input's
            self._w_groups = ints.reshape(g, oc // g, *ints.shape[1:]).astype(np.float64)
            return
        # (groups, K = C/g * kernel elements, OC/g) in float64: products of windows stay exact
        # below 2**53
        self._w_cols = ints.reshape(g, oc // g, -1).transpose(0, 2, 1).astype(np.float64)

    def _state(self):
        if self._transpose:
            return (self._stride, self._padding, self._dilation, self._groups,
                    self._output_padding, True)
        return self._stride, self._padding, self._dilation, self._groups

    def stride(self):
        return list(self._stride)

    def padding(self):
        return list(self._padding)

    def output_padding(self):
        return list(self._output_padding)

    def dilation(self):
        return list(self._dilation)

    def groups(self):
        return self._groups

    def transpose(self):
        return self._transpose


class Conv2dPackedParamsBase(ConvPackedParamsBase):
    """``quantized::conv2d_prepack``'s (and ``conv1d_prepack``'s) packed weight."""


class Conv3dPackedParamsBase(ConvPackedParamsBase):
    """``quantized::conv3d_prepack``'s packed weight."""


_PACKED = {2: Conv2dPackedParamsBase, 3: Conv3dPackedParamsBase}


def _uses_onednn(w_zp, groups, output_padding=()):
    """ATen's ``should_use_onednn_quant`` (x86 engine): symmetric weights, at most 100 groups,
    no output padding (transposed convolutions), Linux on a CPU with AVX-512 VNNI."""
    from ...backends.cpu import _cpu_flags
    return (not w_zp.any() and groups <= 100 and not any(output_padding)
            and sys.platform.startswith("linux") and "avx512_vnni" in _cpu_flags())


def _check_prepack_args(n, weight, stride, padding, dilation, output_padding=None):
    """The prepack ops' argument checks, in ATen's order (``output_padding``: transposed)."""
    if weight.dim() != n + 2:
        raise RuntimeError(f"Weights are expected to have {n + 2} dimensions")
    if len(stride) != n:
        raise RuntimeError(f"stride should contain {n} elements for {n}D convolution.")
    if len(padding) != n:
        raise RuntimeError("Specify front/top/left padding only. end/bottom/right padding "
                           "assumed to be equal to front/top/left")
    if output_padding is not None and len(output_padding) != n:
        raise RuntimeError("quantized::conv_prepack: Specify top/left output padding only. "
                           "bottom/right padding assumed to be equal to top/left")
    if len(dilation) != n:
        raise RuntimeError(f"dilation should contain {n} elements for {n}D convolution.")
    check_weight_dtype(weight)


def _prepack(n, weight, bias, stride, padding, dilation, groups):
    """``quantized::conv{n}d_prepack``'s checks and packing."""
    _check_prepack_args(n, weight, stride, padding, dilation)
    oc = weight.shape[0]
    if groups <= 0 or oc % groups:
        # (FBGEMM's check; oneDNN's prepack takes such groups and computes nonsense)
        raise RuntimeError(f"groups = {groups} does not divide number of output channels = "
                           f"{oc}")
    quantizer = weight._quantizer
    per_tensor = quantizer.qscheme is per_tensor_affine
    if not per_tensor and quantizer.axis != 0:
        raise RuntimeError(f"Only per-channel quantization along the output channels "
                           f"(axis 0) is supported by quantized::conv{n}d_prepack")
    zero_points = (np.full(1, quantizer.zero_point) if per_tensor
                   else quantizer.zero_points._nd())
    # FBGEMM keeps the weight channels-last and its scales as floats; oneDNN as given
    fbgemm = not _uses_onednn(zero_points, groups)
    layout = (_channels_last if n == 2 else channels_last_3d) if fbgemm else _contiguous
    return _PACKED[n](packed_weight(weight, layout, fbgemm), check_bias(bias, oc, "K"), stride,
                      padding, dilation, groups)


def conv2d_prepack(weight, bias, stride, padding, dilation, groups):
    """``quantized::conv2d_prepack`` (x86: oneDNN for zero-point-free weights, else FBGEMM)."""
    return _prepack(2, weight, bias, stride, padding, dilation, groups)


def conv3d_prepack(weight, bias, stride, padding, dilation, groups):
    """``quantized::conv3d_prepack``."""
    return _prepack(3, weight, bias, stride, padding, dilation, groups)


def _conv1d_arg(arg, base):
    """ATen's ``MakeArgForConv1d``: the width takes the argument's only or second element,
    the height ``base`` whatever was given for it."""
    if not arg:
        raise RuntimeError("Argument must have elements.")
    return [base, arg[0] if len(arg) == 1 else arg[1]]


def conv1d_prepack(weight, bias, stride, padding, dilation, groups):
    """``quantized::conv1d_prepack``: the 2-d packing of the weight with a height of one."""
    if weight.dim() == 3:
        weight = _aten.unsqueeze(weight, 2)
    return ops.quantized.conv2d_prepack(weight, bias, _conv1d_arg(stride, 1),
                                        _conv1d_arg(padding, 0), _conv1d_arg(dilation, 1),
                                        groups)


def _prepack_transpose(n, weight, bias, stride, padding, output_padding, dilation, groups):
    """``quantized::conv_transpose{n}d_prepack``'s checks and packing: per-tensor weights
    (in_channels, out_channels / groups, *kernel); FBGEMM keeps them in (out, *kernel, in)
    memory order."""
    _check_prepack_args(n, weight, stride, padding, dilation, output_padding)
    quantizer = weight._quantizer
    if quantizer.qscheme is not per_tensor_affine:
        raise RuntimeError("Per Channel Quantization is currently disabled for transposed conv")
    ic = weight.shape[0]
    if groups <= 0 or ic % groups:
        raise RuntimeError(f"groups = {groups} does not divide number of input channels = "
                           f"{ic}")
    oc = weight.shape[1] * groups
    fbgemm = not _uses_onednn(np.full(1, quantizer.zero_point), groups, output_padding)
    packed = packed_weight(weight, _contiguous, fbgemm)
    if fbgemm:
        order = [*range(1, n + 2), 0]
        inverse = [n + 1, *range(n + 1)]
        packed = _aten.permute(_aten.clone(_aten.permute(packed, order),
                                           memory_format=_contiguous), inverse)
    return _PACKED[n](packed, check_bias(bias, oc, "K"), stride, padding, dilation, groups,
                      output_padding, True)


def conv_transpose2d_prepack(weight, bias, stride, padding, output_padding, dilation, groups):
    """``quantized::conv_transpose2d_prepack`` (x86: oneDNN for zero-point-free weights
    without output padding, else FBGEMM)."""
    return _prepack_transpose(2, weight, bias, stride, padding, output_padding, dilation,
                              groups)


def conv_transpose3d_prepack(weight, bias, stride, padding, output_padding, dilation, groups):
    """``quantized::conv_transpose3d_prepack``."""
    return _prepack_transpose(3, weight, bias, stride, padding, output_padding, dilation,
                              groups)


def conv_transpose1d_prepack(weight, bias, stride, padding, output_padding, dilation, groups):
    """``quantized::conv_transpose1d_prepack``: the 2-d packing of the weight with a height of
    one."""
    if weight.dim() == 3:
        weight = _aten.unsqueeze(weight, 2)
    return ops.quantized.conv_transpose2d_prepack(
        weight, bias, _conv1d_arg(stride, 1), _conv1d_arg(padding, 0),
        _conv1d_arg(output_padding, 0), _conv1d_arg(dilation, 1), groups)


def conv_unpack(packed_weights):
    return packed_weights.unpack()


def conv1d_unpack(packed_weights):
    """The 2-d weight without its height of one (a copy in its layout)."""
    weight, bias = packed_weights.unpack()
    return _aten.squeeze.dim(_aten.clone(weight, memory_format=_preserve), 2), bias


def conv_transpose1d_unpack(packed_weights):
    """The 2-d weight without its height of one (a view)."""
    weight, bias = packed_weights.unpack()
    return _aten.squeeze.dim(weight, 2), bias


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


_LAYOUT_NAMES = {2: "NCHW", 3: "NCDHW"}


def _check_input(qx, packed, relu):
    """The input checks of the engine that packed the weight, with its messages; the output's
    spatial sizes."""
    w = packed._weight
    n = w.dim() - 2
    name = f"quantized::conv{n}d_relu" if relu else f"quantized::conv{n}d"
    onednn = packed._onednn
    if qx.dim() != n + 2:
        raise RuntimeError(f"{name + f'{n}d' if onednn else f'quantized::conv{n}d'}(): "
                           f"Expected activation tensor to have {n + 2} dimensions, got "
                           f"{qx.dim()}")
    if qx.dtype is not _quint8:
        raise RuntimeError(f"{name} (ONEDNN): data type of input should be QUint8." if onednn
                           else f"quantized::conv(FBGEMM): Expected activation data type "
                                f"QUInt8 but got {qx.dtype._short}")
    g = packed._groups
    oc, c_g, *kernel = w.shape
    batch, c, *size = qx.shape
    if c != c_g * g:
        raise RuntimeError(
            "could not create a primitive descriptor for the convolution forward propagation "
            "primitive. Run workload with environment variable ONEDNN_VERBOSE=all to get "
            "additional diagnostic information." if onednn else
            f"[QConv{n}D] Given groups={g}, weight of size "
            f"{', '.join(map(str, [oc, *kernel, c_g]))}, expected input ({_LAYOUT_NAMES[n]}) "
            f"{', '.join(map(str, qx.shape))} to have {c_g * g} channels, but got {c} "
            f"channels instead")
    # (C's division, which truncates: oneDNN makes an empty output of a window just too big)
    out = [int((i + 2 * p - d * (k - 1) - 1) / s) + 1 for i, k, s, p, d in
           zip(size, kernel, packed._stride, packed._padding, packed._dilation)]
    if not onednn and min(out) <= 0:
        raise RuntimeError(f"[QConv{n}D] each dimension of output tensor should be greater "
                           f"than 0")
    return out


def _conv(qx, packed, output_scale, output_zero_point, relu):
    out = _check_input(qx, packed, relu)
    g = packed._groups
    oc, _, *kernel = packed._weight.shape
    batch, c = qx.shape[:2]
    bias = packed._bias_f32
    if bias is not None and packed._bias.dtype is not _dt.float32:
        raise RuntimeError(f"expected scalar type Float but found {packed._bias.dtype._short}")
    q, view = new_qtensor((batch, oc, *out),
                          PerTensorAffineQuantizer(_quint8, output_scale,
                                                   int(output_zero_point)),
                          channels_last=True)
    if view.size == 0:
        return q
    # the input less its zero point, padded with zeros: FBGEMM's and oneDNN's padding with the
    # zero point
    x = np.asarray(int_alias(qx)._nd(), np.float64) - qx.q_zero_point()
    x = np.pad(x, ((0, 0), (0, 0)) + tuple((p, p) for p in packed._padding))
    # columns (batch, *out, C, *kernel): each window's inputs, channels then kernel offsets
    spatial = len(out)
    cols = np.empty((batch, *out, c, *kernel))
    to_last = (0, *range(2, 2 + spatial), 1)
    for offset in itertools.product(*map(range, kernel)):
        window = x[(slice(None), slice(None)) + tuple(
            slice(i * d, i * d + s * (o - 1) + 1, s) for i, d, s, o in
            zip(offset, packed._dilation, packed._stride, out))]
        cols[(Ellipsis,) + offset] = window.transpose(to_last)
    rows = int(np.prod([batch, *out]))
    cols = cols.reshape(rows, g, -1).transpose(1, 0, 2)
    acc = np.matmul(cols, packed._w_cols)  # (groups, rows, OC/g)
    acc = acc.transpose(1, 0, 2).reshape(rows, oc).astype(np.int64).astype(np.int32)
    _write_requantized(view, acc, qx, packed, bias, output_scale, output_zero_point, relu,
                       batch, out)
    return q


def _write_requantized(view, acc, qx, packed, bias, output_scale, output_zero_point, relu,
                       batch, out):
    """The int32 accumulators ``acc`` (rows of output channels, channels-last) requantized by
    the packing engine's arithmetic into the output's integers ``view``."""
    if packed._onednn:
        y = _requantize_onednn(acc, qx.q_scale(), packed._w_scale, bias, output_scale,
                               output_zero_point, relu)
    else:
        y = requantize(acc, qx.q_scale(), packed._w_scale, packed._per_channel, bias,
                       output_scale, output_zero_point, relu)
    spatial = len(out)
    view[...] = y.reshape(batch, *out, acc.shape[1]).transpose(0, spatial + 1,
                                                               *range(1, spatial + 1))


def conv_transpose(qx, packed, output_scale, output_zero_point):
    """``quantized::conv_transpose{2,3}d``, the transposed convolution: every input element times every kernel offset added at
    ``input position * stride + offset * dilation`` less the padding, exactly (products less
    the zero points, in float64), requantized by the packing engine; channels-last out."""
    w = packed._weight
    n = w.dim() - 2
    name, onednn = f"quantized::conv_transpose{n}d", packed._onednn
    if qx.dim() != n + 2:
        raise RuntimeError(f"{name}{f'{n}d' if onednn else ''}(): Expected activation tensor "
                           f"to have {n + 2} dimensions, got {qx.dim()}")
    if qx.dtype is not _quint8:
        raise RuntimeError(f"{name} (ONEDNN): data type of input should be QUint8." if onednn
                           else f"quantized::conv_transpose(FBGEMM): Expected activation data "
                                f"type QUInt8 but got {qx.dtype._short}")
    g = packed._groups
    ic, oc_g, *kernel = w.shape
    batch, c, *size = qx.shape
    if c != ic:
        raise RuntimeError(
            f"{name} (ONEDNN): input channel number should be {ic}, but got {c}" if onednn
            else f"[QConv{n}D] Given groups={g}, weight of size "
                 f"{', '.join(map(str, [oc_g * g, *kernel, ic // g]))}, expected input "
                 f"({_LAYOUT_NAMES[n]}) {', '.join(map(str, qx.shape))} to have {ic} "
                 f"channels, but got {c} channels instead")
    stride, padding, dilation = packed._stride, packed._padding, packed._dilation
    full = [(i - 1) * s + d * (k - 1) + 1 + op for i, k, s, d, op in
            zip(size, kernel, stride, dilation, packed._output_padding)]
    out = [f - 2 * p for f, p in zip(full, padding)]
    for axis, o in enumerate(out):
        if o <= 0:
            raise RuntimeError(
                f"Output dimension is zero for {axis} axis; kernel: {kernel[axis]}, stride: "
                f"{stride[axis]}, input padding: {padding[axis]}, output padding: "
                f"{packed._output_padding[axis]}, dilation: {dilation[axis]}")
    oc = oc_g * g
    bias = packed._bias_f32
    if bias is not None and packed._bias.dtype is not _dt.float32:
        raise RuntimeError(f"expected scalar type Float but found {packed._bias.dtype._short}")
    q, view = new_qtensor((batch, oc, *out),
                          PerTensorAffineQuantizer(_quint8, output_scale,
                                                   int(output_zero_point)),
                          channels_last=True)
    if view.size == 0:
        return q
    x = np.asarray(int_alias(qx)._nd(), np.float64) - qx.q_zero_point()
    x = x.reshape(batch, g, ic // g, *size)
    acc = np.zeros((batch, g, oc_g, *full))
    for offset in itertools.product(*map(range, kernel)):
        w_at = packed._w_groups[(Ellipsis,) + offset]  # (groups, C/g, OC/g)
        contribution = np.einsum("ngc...,gco->ngo...", x, w_at)
        acc[(Ellipsis,) + tuple(slice(o * d, o * d + s * (i - 1) + 1, s) for o, d, s, i in
                                zip(offset, dilation, stride, size))] += contribution
    acc = acc[(Ellipsis,) + tuple(slice(p, p + o) for p, o in zip(padding, out))]
    spatial = len(out)
    acc = acc.reshape(batch, oc, *out).transpose(0, *range(2, 2 + spatial), 1).reshape(-1, oc)
    acc = acc.astype(np.int64).astype(np.int32)
    _write_requantized(view, acc, qx, packed, bias, output_scale, output_zero_point, False,
                       batch, out)
    return q


def conv_transpose1d(qx, packed_weight, output_scale, output_zero_point):
    """``quantized::conv_transpose1d``: the 2-d op on the input with a height of one."""
    y = ops.quantized.conv_transpose2d(_aten.unsqueeze(qx, 2), packed_weight, output_scale,
                                       output_zero_point)
    return _aten.squeeze.dim(y, 2)


def conv(qx, packed_weight, output_scale, output_zero_point):
    """``quantized::conv{2,3}d.new`` (see the module docstring)."""
    return _conv(qx, packed_weight, output_scale, output_zero_point, False)


def conv_relu(qx, packed_weight, output_scale, output_zero_point):
    """``quantized::conv{2,3}d_relu.new``: the convolution whose outputs stop at the zero
    point."""
    return _conv(qx, packed_weight, output_scale, output_zero_point, True)


def _conv1d(name):
    """``quantized::conv1d`` / ``conv1d_relu``: the 2-d op on the input with a height of one,
    which the output loses again."""
    def kernel(qx, packed_weight, output_scale, output_zero_point):
        op = getattr(ops.quantized, name.replace("1d", "2d")).new
        y = op(_aten.unsqueeze(qx, 2), packed_weight, output_scale, output_zero_point)
        return _aten.squeeze.dim(y, 2)
    kernel.__name__ = kernel.__qualname__ = name
    return kernel


def _accessor(name):
    def accessor(packed_weights):
        return int(packed_weights.transpose()) if name == "transpose" else \
            getattr(packed_weights, name)()
    accessor.__name__ = accessor.__qualname__ = f"conv_{name}"
    return accessor


# PyTorch's TORCH_LIBRARY(quantized, ...) schemas (the namespace is linear.py's library); the
# kernels take quantized tensors (QuantizedCPU), unpacking and the accessors take none
# (CatchAll, here CompositeExplicitAutograd)
_lib = Library("quantized", "FRAGMENT")
for _n, _prepack_fn in ((2, conv2d_prepack), (3, conv3d_prepack)):
    _packed = f"__torch__.torch.classes.quantized.Conv{_n}dPackedParamsBase"
    _lib.define(f"conv{_n}d_prepack(Tensor weight, Tensor? bias, int[] stride, int[] padding, "
                f"int[] dilation, int groups) -> {_packed}")
    _lib.define(f"conv{_n}d_unpack({_packed} packed_weights) -> (Tensor unpacked_weights, "
                f"Tensor? B_origin)")
    for _op, _fn in (("conv", conv), ("conv_relu", conv_relu)):
        _name = _op.replace("conv", f"conv{_n}d")
        _lib.define(f"{_name}.new(Tensor qx, {_packed} packed_weight, float output_scale, "
                    f"int output_zero_point) -> Tensor")
        _lib.impl(f"{_name}.new", _fn, "QuantizedCPU")
    _lib.impl(f"conv{_n}d_prepack", _prepack_fn, "QuantizedCPU")
    _lib.impl(f"conv{_n}d_unpack", conv_unpack, "CompositeExplicitAutograd")
    for _name, _returns in (("stride", "int[]"), ("padding", "int[]"),
                            ("output_padding", "int[]"), ("dilation", "int[]"),
                            ("groups", "int"), ("transpose", "int")):
        _lib.define(f"conv{_n}d_{_name}({_packed} packed_weights) -> {_returns}")
        _lib.impl(f"conv{_n}d_{_name}", _accessor(_name), "CompositeExplicitAutograd")
_packed = "__torch__.torch.classes.quantized.Conv2dPackedParamsBase"
_lib.define(f"conv1d_prepack(Tensor weight, Tensor? bias, int[] stride, int[] padding, "
            f"int[] dilation, int groups) -> {_packed}")
_lib.define(f"conv1d_unpack({_packed} packed_weights) -> (Tensor unpacked_weights, "
            f"Tensor? B_origin)")
_lib.impl("conv1d_prepack", conv1d_prepack, "QuantizedCPU")
for _n, _prepack_fn in ((1, conv_transpose1d_prepack), (2, conv_transpose2d_prepack),
                        (3, conv_transpose3d_prepack)):
    _packed = f"__torch__.torch.classes.quantized.Conv{max(_n, 2)}dPackedParamsBase"
    _lib.define(f"conv_transpose{_n}d_prepack(Tensor weight, Tensor? bias, int[] stride, "
                f"int[] padding, int[] output_padding, int[] dilation, int groups) -> "
                f"{_packed}")
    _lib.define(f"conv_transpose{_n}d_unpack({_packed} packed_weights) -> (Tensor "
                f"unpacked_weights, Tensor? B_origin)")
    _lib.define(f"conv_transpose{_n}d(Tensor qx, {_packed} packed_weight, float output_scale, "
                f"int output_zero_point) -> Tensor")
    _lib.impl(f"conv_transpose{_n}d_prepack", _prepack_fn, "QuantizedCPU")
    _lib.impl(f"conv_transpose{_n}d_unpack",
              conv_transpose1d_unpack if _n == 1 else conv_unpack, "CompositeExplicitAutograd")
    _lib.impl(f"conv_transpose{_n}d", conv_transpose1d if _n == 1 else conv_transpose,
              "QuantizedCPU")
_packed = "__torch__.torch.classes.quantized.Conv2dPackedParamsBase"
_lib.impl("conv1d_unpack", conv1d_unpack, "CompositeExplicitAutograd")
for _name in ("conv1d", "conv1d_relu"):
    _lib.define(f"{_name}(Tensor qx, {_packed} packed_weight, float output_scale, "
                f"int output_zero_point) -> Tensor")
    _lib.impl(_name, _conv1d(_name), "QuantizedCPU")
