"""Activations of quantized tensors (ATen's ``qrelu.cpp``, ``qclamp.cpp``, ``qhardsigmoid.cpp``,
``qhardswish.cpp``, ``qelu.cpp``, ``qthreshold.cpp`` and their kernels in
``kernels/QuantizedOpKernels.cpp``), bit for bit on x86.

ReLU and the clamps (``clamp``, ``hardtanh``) compare integers: the bounds are quantized with
the input's parameters (``quantize_val``) and the integers kept between them. The other
activations dequantize, compute in float and quantize, and round differently in the two
halves of ATen's ``cpu_kernel_vec`` loop (see :func:`_vector_mask`):

* the vector body dequantizes with one fused multiply-add, ``fma(scale, q, scale * -zp)``,
  and quantizes ``rint(y * inverse_scale) + zp`` with the ``inverse_scale`` the kernel passes
  (for some ``float(1.0 / double(scale))``; qint32 vectors quantize as the scalar loop);
* the scalar loop dequantizes ``scale * (q - zp)`` and quantizes with ATen's
  ``quantize_val``: ``rint(y * (1.0f / scale) + zp)``, the zero point added in float before
  rounding (FBGEMM's legacy ``Quantize``).
"""
import numpy as np

from ..._core import dtype as _dt
from ..._core.quantizer import PerTensorAffineQuantizer, qrange
from ..._ops.overload import ops
from ...library import Library
from ..registration import register
from .affine import _scalar_quantize, _suggest_channels_last, int_alias, new_qtensor
from .pool import _per_tensor

_aten = ops.aten


def relu(self):
    zero_point = self.q_zero_point()
    q, view = new_qtensor(self._size, self._quantizer, _suggest_channels_last(self))
    view[...] = np.maximum(int_alias(self)._nd(), zero_point)
    return q


def relu_(self):
    zero_point = self.q_zero_point()
    ints = int_alias(self)._nd()
    np.maximum(ints, zero_point, out=ints)
    return self


# -- the dequantize / compute / quantize loop ---------------------------------------------------

# How many elements cpu_kernel_vec's vector body takes at a time, by element size (two vectors
# of AVX2's 32 bytes); measured against PyTorch 2.13, whose AVX-512 build runs the same widths
_LANES = {1: 64, 4: 16}
_GRAIN_SIZE = 32768  # (at::internal::GRAIN_SIZE)


def _vector_mask(out, x):
    """Which elements of ``out = op(x)`` ATen's ``cpu_kernel_vec`` computes in its vector body:
    TensorIterator walks the output's memory order, merging the dims both tensors keep dense
    into rows; a row whose input elements are adjacent runs ``lanes`` elements at a time while
    that many remain and its last ``len % lanes`` elements in the scalar loop; any other row
    runs wholly in the scalar loop; without AVX2 every element does. From TensorIterator's
    grain of 32768 elements on, ATen cuts the elements into one chunk per thread, and a row
    cut by a chunk's edge is two pieces, each with its own tail."""
    from ...backends.cpu import get_cpu_capability
    lanes = _LANES[x.dtype.itemsize] if get_cpu_capability() in ("AVX2", "AVX512") else 0
    shape = tuple(out.shape)
    if not lanes or not shape:
        return np.zeros(shape, bool)
    dims = [d for d in sorted(range(len(shape)), key=lambda d: -out._stride[d]) if shape[d] > 1]
    if not dims:
        return np.zeros(shape, bool)
    inner = dims[-1]
    if x._stride[inner] != 1 or out._stride[inner] != 1:
        return np.zeros(shape, bool)
    row = shape[inner]
    for d in reversed(dims[:-1]):
        if out._stride[d] != row or x._stride[d] != row:
            break
        row *= shape[d]
    offsets = sum(np.arange(n).reshape([-1 if i == d else 1 for i in range(len(shape))]) * s
                  for d, (n, s) in enumerate(zip(shape, out._stride)))
    numel = int(np.prod(shape))
    chunk = numel
    if numel >= _GRAIN_SIZE:
        # (at::parallel_for: one chunk per thread, at least a grain each)
        from ... import get_num_threads
        chunks = min(get_num_threads(), -(-numel // _GRAIN_SIZE))
        chunk = -(-numel // chunks)
    start = np.maximum(offsets // row * row, offsets // chunk * chunk)
    end = np.minimum(offsets // row * row + row, offsets // chunk * chunk + chunk)
    length = end - start
    return np.broadcast_to(offsets - start < length - length % lanes, shape)


def _dequantized(x, mask):
    """``x``'s values in float32 as each half of the loop dequantizes them (per tensor)."""
    scale, zp = np.float32(x.q_scale()), x.q_zero_point()
    ints = np.asarray(int_alias(x)._nd(), np.int64)
    scalar = scale * (ints - zp).astype(np.int32).astype(np.float32)
    if not mask.any():
        return scalar
    from ..cpu._util import fma_float32
    vector = fma_float32(scale, ints.astype(np.float32), scale * np.float32(-zp))
    return np.where(mask, vector, scalar)


def _quantized_into(view, y, mask, quantizer, vector_inverse):
    """Float32 ``y`` quantized into ``view`` with ``quantizer``'s parameters: the scalar loop's
    elements by ``quantize_val`` (FBGEMM's scalar ``Quantize``, the zero point added before
    rounding), the 8-bit vector body's (``mask``) by ``rint(y * vector_inverse) + zp``
    saturated (its ``QuantizeAvx2``/``QuantizeAvx512``; qint32 vectors quantize as the
    scalar loop)."""
    dtype, zp = quantizer.dtype, quantizer.zero_point
    out = _scalar_quantize(y, np.float32(1) / np.float32(quantizer.scale), zp, dtype)
    if dtype.itemsize == 1 and mask.any():
        lo, hi = qrange(dtype)
        with np.errstate(over="ignore", invalid="ignore"):
            # (clipped below 2**31 before the conversion, which makes NaN its maximum too)
            scaled = np.fmin(y * np.float32(vector_inverse), np.float32(2 ** 31 - 128))
        vector = np.clip(np.rint(scaled).astype(np.int64) + zp, lo, hi)
        out = np.where(mask, vector, out)
    view[...] = out


def _elementwise(x, fn, quantizer, vector_inverse, out=None, keep_layout=True):
    """``fn`` of per-tensor ``x``'s float values quantized with ``quantizer`` into a new tensor
    laid out as ``x`` suggests (contiguous unless ``keep_layout``), or into quantized
    ``out``."""
    _per_tensor(x)
    if out is None:
        out, view = new_qtensor(x._size, quantizer, keep_layout and _suggest_channels_last(x))
    else:
        view = int_alias(out)._nd()
    mask = _vector_mask(out, x)
    with np.errstate(over="ignore", invalid="ignore"):
        y = fn(_dequantized(x, mask))
    _quantized_into(view, np.asarray(y, np.float32), mask, quantizer, vector_inverse)
    return out


def _output(x, scale, zero_point):
    return PerTensorAffineQuantizer(x.dtype, float(scale), int(zero_point))


def _f32(v):
    return np.float32(float(v))


# -- leaky_relu (ATen's leaky_qrelu_out_kernel) -------------------------------------------------

def _leaky(negative_slope):
    slope = _f32(negative_slope)
    return lambda v: np.where(v > 0, v, v * slope)


def leaky_relu(self, negative_slope=0.01):
    """``leaky_relu_quantized_cpu``: on the input made contiguous in its suggested layout, the
    output with the input's parameters."""
    layout = _channels_last_format(self)
    x = _aten.contiguous(self, memory_format=layout)
    quantizer = _per_tensor(x)
    return _elementwise(x, _leaky(negative_slope), quantizer,
                        np.float32(1) / np.float32(quantizer.scale))


def leaky_relu_(self, negative_slope=0.01):
    _elementwise(self, _leaky(negative_slope), _per_tensor(self),
                 np.float32(1) / np.float32(self.q_scale()), out=self)
    return self


def leaky_relu_out(self, negative_slope, out):
    """``leaky_relu_out_quantized_cpu``: into ``out`` with *its* scale and zero point (the
    requantizing ``torch.ao.nn.quantized.functional.leaky_relu``)."""
    self.q_zero_point(), self.q_scale(), out.q_zero_point()  # (ATen reads these first)
    if out.dtype is not self.dtype:
        raise RuntimeError(f"Found dtype {out.dtype._short} but expected {self.dtype._short}")
    if tuple(out.shape) != tuple(self.shape):
        out.resize_(self.shape)
    _elementwise(self, _leaky(negative_slope), out._quantizer,
                 np.float32(1) / np.float32(out.q_scale()), out=out)
    return out


def _channels_last_format(t):
    from ..._core.device import channels_last, channels_last_3d, contiguous_format
    if not _suggest_channels_last(t):
        return contiguous_format
    return channels_last if t.dim() == 4 else channels_last_3d


# -- hardsigmoid, hardswish, elu, celu, threshold -----------------------------------------------

def hardsigmoid(self):
    """``hardsigmoid_quantized_cpu``: the output's scale is ``1 / 2**8`` (``1 / 2**32`` for
    qint32), its zero point 0 (-128 for qint8)."""
    _per_tensor(self)
    scale = 2.3283064365386963e-10 if self.dtype.itemsize == 4 else 0.00390625
    zero_point = -128 if self.dtype is _dt.ALIASES["qint8"] else 0
    return _elementwise(
        self, lambda v: np.minimum(np.maximum(v + np.float32(3), np.float32(0)),
                                   np.float32(6)) / np.float32(6),
        _output(self, scale, zero_point), np.float32(1.0 / np.float32(scale)))


def hardsigmoid_(self):
    """``hardsigmoid_quantized_cpu_``: the op's result copied into ``self``, its parameters
    with it."""
    return self.copy_(_aten.hardsigmoid(self))


def hardsigmoid_out(self, out):
    """``hardsigmoid_out_quantized_cpu``: the op's result copied into ``out``."""
    return out.copy_(_aten.hardsigmoid(self))


def hardswish(input, output_scale, output_zero_point):
    """``quantized::hardswish``: ``x * min(max(x + 3, 0), 6) / 6``."""
    return _elementwise(
        input, lambda v: v * np.minimum(np.maximum(v + np.float32(3), np.float32(0)),
                                        np.float32(6)) / np.float32(6),
        _output(input, output_scale, output_zero_point), np.float32(1.0 / output_scale))


def elu(self, output_scale, output_zero_point, alpha=1, scale=1, input_scale=1):
    """``quantized::elu``: ``x * scale`` above zero, ``(exp(x * input_scale) - 1) * alpha *
    scale`` below (float; ``exp`` correctly rounded); the output contiguous."""
    alpha, coef, in_coef = _f32(alpha), _f32(scale), _f32(input_scale)
    quantizer = _output(self, output_scale, output_zero_point)

    def fn(v):
        neg = (np.exp((v * in_coef).astype(np.float64)).astype(np.float32) - np.float32(1))
        return np.where(v >= 0, v * coef, neg * alpha * coef)
    return _elementwise(self, fn, quantizer, np.float32(1.0 / np.float32(quantizer.scale)),
                        keep_layout=False)


def celu(self, output_scale, output_zero_point, alpha=1):
    """``quantized::celu``: ``quantized::elu`` with ``input_scale = 1 / alpha``."""
    return ops.quantized.elu(self, output_scale, output_zero_point, alpha, 1.0,
                             float(np.float32(1.0 / float(np.float32(float(alpha))))))


def threshold(qx, threshold, value):
    """``quantized::threshold``: ``x`` above ``threshold``, else ``value``; the input's
    parameters."""
    quantizer = _per_tensor(qx)
    t, v = _f32(threshold), _f32(value)
    return _elementwise(qx, lambda x: np.where(x > t, x, v), quantizer,
                        np.float32(1.0 / np.float32(quantizer.scale)))


# -- clamp and hardtanh (ATen's qclamp kernels) ------------------------------------------------

def _quantize_val(quantizer, value):
    """ATen's ``quantize_val`` of one float."""
    return int(_scalar_quantize(np.full(1, float(value), np.float32),
                                np.float32(1) / np.float32(quantizer.scale),
                                quantizer.zero_point, quantizer.dtype)[0])


def _clamp(self, min, max):
    """``quantized_clamp_impl``: the integers kept between the quantized bounds; the output
    with the input's parameters and suggested layout."""
    quantizer = _per_tensor(self)
    if min is None and max is None:
        raise RuntimeError("At least one of 'min' or 'max' must not be None")
    lo, hi = qrange(quantizer.dtype)
    low = lo if min is None else _quantize_val(quantizer, min)
    high = hi if max is None else _quantize_val(quantizer, max)
    q, view = new_qtensor(self._size, quantizer, _suggest_channels_last(self))
    view[...] = np.minimum(np.maximum(int_alias(self)._nd(), low), high)
    return q


def clamp(self, min=None, max=None):
    return _clamp(self, min, max)


def hardtanh(self, min_val=-1, max_val=1):
    return _clamp(self, min_val, max_val)


def hardtanh_(self, min_val=-1, max_val=1):
    """``hardtanh_quantized_cpu_``: the clamp's result copied back into ``self``."""
    return self.copy_(_clamp(self, min_val, max_val))


def hardtanh_out(self, min_val, max_val, out):
    return out.copy_(_clamp(self, min_val, max_val))


for _name, _fn in (("relu", relu), ("relu_", relu_), ("leaky_relu", leaky_relu),
                   ("leaky_relu_", leaky_relu_), ("leaky_relu.out", leaky_relu_out),
                   ("hardsigmoid", hardsigmoid), ("hardsigmoid_", hardsigmoid_),
                   ("hardsigmoid.out", hardsigmoid_out), ("threshold", threshold),
                   ("clamp", clamp), ("hardtanh", hardtanh), ("hardtanh_", hardtanh_),
                   ("hardtanh.out", hardtanh_out)):
    register(_name, "QuantizedCPU", _fn)

# PyTorch's TORCH_LIBRARY(quantized, ...) schemas of the activations that take the output's
# parameters
_lib = Library("quantized", "FRAGMENT")
_lib.define("hardswish(Tensor input, float output_scale, int output_zero_point) -> Tensor")
_lib.define("elu(Tensor self, float output_scale, int output_zero_point, Scalar alpha=1, "
            "Scalar scale=1, Scalar input_scale=1) -> Tensor")
_lib.define("celu(Tensor self, float output_scale, int output_zero_point, Scalar alpha=1) "
            "-> Tensor")
_lib.define("threshold(Tensor qx, Scalar threshold, Scalar value) -> Tensor qy")
for _name, _fn in (("hardswish", hardswish), ("elu", elu), ("celu", celu),
                   ("threshold", threshold)):
    _lib.impl(_name, _fn, "QuantizedCPU")
