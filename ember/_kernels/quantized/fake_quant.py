"""Fake quantization (ATen's ``FakeQuantPerTensorAffine.cpp``, ``FakeQuantPerChannelAffine.cpp``,
``fused_obs_fake_quant.cpp`` and their CPU kernels): float tensors rounded to the values a
quantized tensor would hold, with the mask of the values inside the range (what the
straight-through gradient passes), the learnable variants' gradients for scale and zero point,
and the fused moving-average observer of quantization-aware training.

The arithmetic is the kernels' C++, bit for bit: ``x * (1/scale)`` in float (in double for a
double input), ``nearbyint`` (ties to even), the zero point added in that type, the clamp in
double, and ``(q - zero_point) * scale`` in float per tensor and in double per channel. A value
C++ converts to int64 out of range (NaN, infinities) becomes the int64 minimum, as x86's
conversion leaves it.
"""
import numpy as np

from ..._core import dtype as _dt
from ..._core.device import preserve_format
from ..._core.tensor_impl import wrap_array
from ..._ops.overload import ops
from ..cpu._util import fma_float32
from ..registration import register
from .affine import choose_qparams
from ..rules import fake_quant as _rules

_aten = ops.aten
_INT64_MIN = np.iinfo(np.int64).min


def _values(self):
    """``self``'s values in the type its kernel computes in: double stays double, the other
    floating types (exactly) as float; and that NumPy type."""
    if self._dtype is _dt.float64:
        return self.contiguous()._nd(), np.float64
    return _aten._to_copy.default(self, dtype=_dt.float32).contiguous()._nd(), np.float32


def _to_int64(v):
    """C++'s ``static_cast<int64_t>`` of float values: truncation, the int64 minimum where the
    value has none."""
    v = np.asarray(v, np.float64)
    bad = ~(np.abs(v) < 2.0 ** 63)
    out = np.trunc(np.where(bad, 0, v)).astype(np.int64)
    out[bad] = _INT64_MIN
    return out


def _like(self, arr, dtype=None):
    """A result laid out as ``empty_like(self, memory_format=preserve)`` holding ``arr`` (of
    ``self``'s shape), converted to ``dtype`` (default ``self``'s) as a C++ assignment
    converts."""
    dtype = self._dtype if dtype is None else dtype
    t = wrap_array(np.ascontiguousarray(arr).reshape(self._size))
    if self.is_contiguous() and t._dtype is dtype:
        return t
    out = _aten.empty_like.default(self, dtype=dtype, memory_format=preserve_format)
    return _aten.copy_.default(out, t)


# -- per tensor ---------------------------------------------------------------------------------

def _fake_quant_tensor(self, scale, zero_point, quant_min, quant_max, enabled):
    """``_fake_quantize_tensor_helper``: (output, mask)."""
    if not enabled:
        return (_aten.clone.default(self, memory_format=preserve_format),
                _aten.ones_like.default(self, dtype=_dt.bool_, memory_format=preserve_format))
    x, ct = _values(self)
    x = x.reshape(-1)  # (1-d: NumPy makes scalars of 0-d results)
    sc = np.float32(scale)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        inv = np.float32(1.0) / sc
        qval_f = ct(zero_point) + np.rint(x * ct(inv))
        qval = np.fmin(np.fmax(qval_f.astype(np.float64), quant_min), quant_max)
        out = (qval.astype(np.int64) - zero_point).astype(np.float32) * sc
    mask = (ct(quant_min) <= qval_f) & (qval_f <= ct(quant_max))
    return _like(self, out), _like(self, mask, _dt.bool_)


def fake_quantize_per_tensor_affine_cachemask(self, scale, zero_point, quant_min, quant_max):
    _rules.check_per_tensor(self, zero_point, quant_min, quant_max)
    return _fake_quant_tensor(self, scale, zero_point, quant_min, quant_max, True)


def _fake_quantize_per_tensor_affine_cachemask_tensor_qparams(self, scale, zero_point,
                                                              fake_quant_enabled, quant_min,
                                                              quant_max):
    _rules.check_qrange(quant_min, quant_max)
    _rules.check_input_dtype(self, "fake_quantize_tensor_cachemask_kernel_type_handling")
    enabled = int(fake_quant_enabled.item())
    return _fake_quant_tensor(self, float(scale.item()), int(zero_point.item()), quant_min,
                              quant_max, enabled)


def fake_quantize_per_tensor_affine(self, scale, zero_point, quant_min, quant_max):
    return _aten.fake_quantize_per_tensor_affine_cachemask.default(
        self, scale, zero_point, quant_min, quant_max)[0]


def fake_quantize_per_tensor_affine_tensor_qparams(self, scale, zero_point, quant_min,
                                                   quant_max):
    enabled = _aten.ones.default([1], dtype=_dt.int64, device=self.device)
    return _aten._fake_quantize_per_tensor_affine_cachemask_tensor_qparams.default(
        self, scale, zero_point, enabled, quant_min, quant_max)[0]


def _cachemask_backward(dY, mask):
    """The backward of every cachemask op: the gradient where the value was in range."""
    _rules.expect(mask._dtype is _dt.bool_, "mask.scalar_type() == ScalarType::Bool")
    if mask.numel() != dY.numel():
        raise RuntimeError(f"`mask` and `dY` are not the same size: `mask` is size "
                           f"{mask.numel()} and `dY` is size {dY.numel()}")
    if dY.numel() <= 0:
        return dY
    return _aten.mul.Tensor(dY, mask)


def _zero_point_of(zero_point, quant_min, quant_max, is_forward):
    """``_get_zero_point_from_tensor``: the first zero point as float, rounded to nearest (the
    forward) or plus one half (the backward), clamped, truncated."""
    zp = np.float32(_aten.select.int(zero_point, 0, 0).item())
    zp = np.rint(zp) if is_forward else zp + np.float32(0.5)
    return int(min(max(zp, np.float32(quant_min)), np.float32(quant_max)))


def _fake_quantize_learnable_per_tensor_affine(self, scale, zero_point, quant_min, quant_max,
                                               grad_factor=1.0):
    scale_val = float(np.float32(_aten.select.int(scale, 0, 0).item()))
    zero_point_val = _zero_point_of(zero_point, quant_min, quant_max, True)
    return _aten.fake_quantize_per_tensor_affine.default(self, scale_val, zero_point_val,
                                                          quant_min, quant_max)


def _learnable_grads(x, dy, scale, inv_scale, zero_point, quant_min, quant_max, grad_factor):
    """``fake_quantize_learnable_*_grad_kernel_cpu``'s float arithmetic, elementwise (scale,
    inv_scale and zero_point float32 scalars or arrays broadcast to ``x``): dX, dScale and
    dZeroPoint before the sums. The kernel is compiled for AVX2/AVX-512 with FMA, and the
    compiler contracts ``zero_point + x * inv_scale`` and ``xfqi - x`` into fused
    multiply-adds."""
    gf = np.float32(grad_factor)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        xqi = _to_int64(np.rint(fma_float32(x, inv_scale, zero_point)))
        inside = (xqi >= quant_min) & (xqi <= quant_max)
        dx = dy * inside.astype(np.float32)
        clamped = np.maximum(np.minimum(xqi, quant_max), quant_min).astype(np.float32)
        small = np.float32(quant_min) - zero_point
        big = np.float32(quant_max) - zero_point
        d_outside = np.where(xqi < quant_min, dy * small, dy * big) * gf
        # xfqi - x: (clamped - zero_point) * scale - x, one fused multiply-add
        d_inside = dy * fma_float32(clamped - zero_point, scale, -x) * inv_scale * gf
        dscale = np.where(inside, d_inside, d_outside).astype(np.float32)
        dzp = np.where(inside, np.float32(0), (dy * np.float32(-1)) * scale * gf)
    return dx, dscale, dzp.astype(np.float32)


def _fake_quantize_learnable_per_tensor_affine_backward(dY, X, scale, zero_point, quant_min,
                                                        quant_max, grad_factor=1.0):
    scale_val = np.float32(_aten.select.int(scale, 0, 0).item())
    inv_scale = np.float32(1.0) / scale_val
    zero_point_val = _zero_point_of(zero_point, quant_min, quant_max, False)
    _rules.check_learnable_dtypes(dY, X, scale, zero_point, "_")
    if X.numel() != dY.numel():
        raise RuntimeError("`X` and `dY` are not the same size")
    if not (quant_min <= 0 and quant_max >= 0):
        raise RuntimeError("`quant_min` should be less than or         equal to `quant_max`, "
                           "and the quantization range should include 0.")
    _rules.check_zero_point_in_range(zero_point_val, zero_point_val, quant_min, quant_max)
    if X.numel() <= 0:
        return X, scale, zero_point
    x = X.contiguous()._nd().reshape(-1)
    dy = dY.contiguous()._nd().reshape(-1)
    dx, dscale, dzp = _learnable_grads(x, dy, scale_val, inv_scale, np.float32(zero_point_val),
                                       quant_min, quant_max, grad_factor)
    # (the sums are ATen's reductions, as PyTorch sums the per-element vectors)
    d_scale = _aten.unsqueeze.default(_aten.sum.default(_like(X, dscale)), 0)
    d_zero_point = _aten.unsqueeze.default(_aten.sum.default(_like(X, dzp)), 0)
    return _like(X, dx), d_scale, d_zero_point


# -- per channel --------------------------------------------------------------------------------

def _channel_shape(self, axis):
    shape = [1] * self.dim()
    shape[axis] = self._size[axis]
    return shape


def fake_quantize_per_channel_affine_cachemask(self, scale, zero_point, axis, quant_min,
                                               quant_max):
    _rules.check_per_channel(self, scale, zero_point, axis, quant_min, quant_max)
    zero_point_is_float = zero_point._dtype.is_floating_point
    if not zero_point_is_float:
        zp_min, zp_max = _aten.aminmax.default(zero_point)
        _rules.check_zero_point_in_range(zp_min.item(), zp_max.item(), quant_min, quant_max)
    _rules.check_axis(self, axis)
    _rules.check_per_channel_kernel(self, scale)
    x, ct = _values(self)
    shape = _channel_shape(self, axis)
    sc = scale.contiguous()._nd().reshape(shape)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        inv = np.float32(1.0) / sc
        if zero_point_is_float:
            # lrintf(zero_point + self * inv_scale): the sum in the input's arithmetic type,
            # rounded to float for lrintf
            zp = zero_point.contiguous()._nd().reshape(shape)
            zp_f = zp.astype(np.float32)
            if ct is np.float32 and zp.dtype == np.float32:
                # (contracted into a fused multiply-add, as the learnable's; not through the
                # Half operator of a half zero point)
                qval = _to_int64(np.rint(fma_float32(x, inv, zp_f)))
            else:
                qval = _to_int64(np.rint((zp_f + x * inv.astype(ct)).astype(np.float32)))
            out = (np.fmin(np.fmax(qval.astype(np.float64), quant_min), quant_max)
                   - zp_f.astype(np.float64)) * sc.astype(np.float64)
        else:
            zp = zero_point.contiguous()._nd().reshape(shape)
            qval = _to_int64(zp.astype(ct) + np.rint(x * inv.astype(ct)))
            out = ((np.fmin(np.fmax(qval.astype(np.float64), quant_min), quant_max)
                    - zp.astype(np.float64)) * sc.astype(np.float64))
    mask = (quant_min <= qval) & (qval <= quant_max)
    # a double result converts to float (then to half or bfloat16) as C++'s assignment does
    if self._dtype is not _dt.float64:
        out = out.astype(np.float32)
    return _like(self, out), _like(self, mask, _dt.bool_)


def fake_quantize_per_channel_affine(self, scale, zero_point, axis, quant_min, quant_max):
    return _aten.fake_quantize_per_channel_affine_cachemask.default(
        self, scale, zero_point, axis, quant_min, quant_max)[0]


def _rounded_zero_point(zero_point, quant_min, quant_max):
    return _aten.clamp_.default(_aten.round.default(zero_point), quant_min, quant_max)


def _fake_quantize_learnable_per_channel_affine(self, scale, zero_point, axis, quant_min,
                                                quant_max, grad_factor=1.0):
    zp = _aten._to_copy.default(_rounded_zero_point(zero_point, quant_min, quant_max),
                                dtype=_dt.int32)
    return _aten.fake_quantize_per_channel_affine.default(self, scale, zp, axis, quant_min,
                                                          quant_max)


def _fake_quantize_learnable_per_channel_affine_backward(dY, X, scale, zero_point, axis,
                                                         quant_min, quant_max, grad_factor=1.0):
    if X._dtype is _dt.bfloat16:
        X_, dY_, scale_, zero_point_ = (_aten._to_copy.default(t, dtype=_dt.float32)
                                        for t in (X, dY, scale, zero_point))
    else:
        X_, dY_, scale_, zero_point_ = X, dY, scale, zero_point
    zero_point_rounded = _rounded_zero_point(zero_point_, quant_min, quant_max)
    _rules.check_learnable_dtypes(dY_, X_, scale_, zero_point_, "_")
    if X_._size != dY_._size:
        raise RuntimeError("`X` and `dY` are not the same size")
    if not (quant_min <= 0 and quant_max >= 0):
        raise RuntimeError("Expecting `quant_min` <= 0 and `quant_max` >= 0")
    if scale_.dim() != 1:
        raise RuntimeError("scale should be a 1-D tensor")
    if zero_point_.dim() != 1:
        raise RuntimeError("zero point should be a 1-D tensor")
    if scale_.numel() != zero_point_.numel():
        raise RuntimeError("scale and zero-point need to have the same dimensions")
    if scale_.numel() != X_.size(axis):
        raise RuntimeError("dimensions of scale and zero-point are not consistent with input "
                           "tensor")
    zp_min, zp_max = _aten.aminmax.default(zero_point_rounded)
    _rules.check_zero_point_in_range(int(zp_min.item()), int(zp_max.item()), quant_min,
                                     quant_max)
    _rules.check_axis(X_, axis, inclusive=False)
    if X_.numel() <= 0:
        return X, scale, zero_point
    shape = _channel_shape(X_, axis)
    x = X_.contiguous()._nd()
    dy = dY_.contiguous()._nd()
    sc = scale_.contiguous()._nd().reshape(shape)
    zp = zero_point_rounded.contiguous()._nd().reshape(shape)
    with np.errstate(divide="ignore", over="ignore"):
        inv = np.float32(1.0) / sc
    dx, dscale, dzp = _learnable_grads(x, dy, sc, inv, zp, quant_min, quant_max, grad_factor)
    others = [d for d in range(X_.dim()) if d != axis]
    d_scale = _aten.sum.dim_IntList(_like(X_, dscale), others)
    d_zero_point = _aten.sum.dim_IntList(_like(X_, dzp), others)
    return _like(X_, dx), d_scale, d_zero_point


# -- the fused moving-average observer ----------------------------------------------------------

def _float_data(t):
    """``t.data_ptr<float>()``'s check."""
    if t._dtype is not _dt.float32:
        raise RuntimeError(f"expected scalar type Float but found {t._dtype._short}")
    return t.contiguous()._nd().reshape(-1)


def _moving_average(x, running_min, running_max, averaging_const, per_row_fake_quant,
                    ch_axis):
    """``calculate_moving_average``: the running min and max move ``averaging_const`` of the way
    to this batch's (per row for per-channel fake quantization); infinite ones (unobserved)
    take it."""
    if per_row_fake_quant:
        if ch_axis != 0:
            raise RuntimeError("Per-channel FakeQuant in fused_moving_avg_obs_fake_quant is only "
                               "supported on axis == 0")
        x_min, x_max = _aten.aminmax.default(x, dim=1)
    else:
        x_min, x_max = _aten.aminmax.default(x)
    c = np.float32(averaging_const)
    for cur, running in ((_float_data(x_min), running_min), (_float_data(x_max), running_max)):
        n = cur.size
        old = _float_data(running)[:n]
        with np.errstate(invalid="ignore"):  # (the infinite starts take ``cur`` instead)
            new = np.where(np.isinf(old), cur, old + c * (cur - old)).astype(np.float32)
        _aten.copy_.default(_aten.slice.Tensor(running.view(-1), 0, 0, n), wrap_array(new))


def _fused_moving_avg_obs_fq_helper(self, observer_on, fake_quant_on, running_min, running_max,
                                    scale, zero_point, averaging_const, quant_min, quant_max,
                                    ch_axis, per_row_fake_quant=False, symmetric_quant=False):
    observe = int(observer_on.item())
    if per_row_fake_quant:
        # rows: the channel axis first, the rest flattened
        y = self
        if self.dim() != 2:
            order = list(range(self.dim()))
            order[ch_axis], order[0] = 0, ch_axis
            y = _aten.flatten.using_ints(_aten.permute.default(self, order), 1)
        size = self.size(ch_axis)
        if running_min.numel() == 0:  # (a per-channel observer's buffers start empty)
            _aten.fill_.Scalar(_aten.resize_.default(running_min, [size]), float("inf"))
            _aten.fill_.Scalar(_aten.resize_.default(running_max, [size]), float("-inf"))
            _aten.resize_.default(scale, [size])
            _aten.resize_.default(zero_point, [size])
        if observe:
            _moving_average(y, running_min, running_max, averaging_const, True, ch_axis)
    elif observe:
        _moving_average(self, running_min, running_max, averaging_const, False, ch_axis)
    if not int(fake_quant_on.item()):
        return (_aten.clone.default(self),
                _aten.ones_like.default(self, dtype=_dt.bool_, memory_format=preserve_format))
    if per_row_fake_quant:
        mins, maxs = _float_data(running_min).tolist(), _float_data(running_max).tolist()
    else:
        mins, maxs = [float(running_min.item())], [float(running_max.item())]
    qparams = [choose_qparams(lo, hi, quant_min, quant_max, False, symmetric_quant)
               for lo, hi in zip(mins, maxs)]
    n = len(qparams)
    _aten.copy_.default(_aten.slice.Tensor(scale, 0, 0, n),
                        wrap_array(np.array([s for s, _ in qparams], np.float64)))
    _aten.copy_.default(_aten.slice.Tensor(zero_point, 0, 0, n),
                        wrap_array(np.array([z for _, z in qparams], np.int64)))
    if per_row_fake_quant:
        return _aten.fake_quantize_per_channel_affine_cachemask.default(
            self, scale, zero_point, ch_axis, quant_min, quant_max)
    enabled = _aten.ones.default([1], dtype=_dt.int64, device=self.device)
    return _aten._fake_quantize_per_tensor_affine_cachemask_tensor_qparams.default(
        self, scale, zero_point, enabled, quant_min, quant_max)


def fused_moving_avg_obs_fake_quant(self, observer_on, fake_quant_on, running_min, running_max,
                                    scale, zero_point, averaging_const, quant_min, quant_max,
                                    ch_axis, per_row_fake_quant=False, symmetric_quant=False):
    if self.numel() == 0:
        return _aten.clone.default(self)
    return _aten._fused_moving_avg_obs_fq_helper.default(
        self, observer_on, fake_quant_on, running_min, running_max, scale, zero_point,
        averaging_const, quant_min, quant_max, ch_axis, per_row_fake_quant, symmetric_quant)[0]


for _name, _fn in (
        ("fake_quantize_per_tensor_affine_cachemask", fake_quantize_per_tensor_affine_cachemask),
        ("_fake_quantize_per_tensor_affine_cachemask_tensor_qparams",
         _fake_quantize_per_tensor_affine_cachemask_tensor_qparams),
        ("_fake_quantize_learnable_per_tensor_affine",
         _fake_quantize_learnable_per_tensor_affine),
        ("_fake_quantize_learnable_per_tensor_affine_backward",
         _fake_quantize_learnable_per_tensor_affine_backward),
        ("fake_quantize_per_channel_affine_cachemask",
         fake_quantize_per_channel_affine_cachemask),
        ("_fake_quantize_learnable_per_channel_affine",
         _fake_quantize_learnable_per_channel_affine),
        ("_fake_quantize_learnable_per_channel_affine_backward",
         _fake_quantize_learnable_per_channel_affine_backward),
        ("_fused_moving_avg_obs_fq_helper", _fused_moving_avg_obs_fq_helper)):
    register(_name, "CPU", _fn)
# (PyTorch's CompositeImplicitAutograd kernels: the cachemask op under them records the graph)
for _name, _fn in (
        ("fake_quantize_per_tensor_affine", fake_quantize_per_tensor_affine),
        ("fake_quantize_per_tensor_affine.tensor_qparams",
         fake_quantize_per_tensor_affine_tensor_qparams),
        ("fake_quantize_per_tensor_affine_cachemask_backward", _cachemask_backward),
        ("fake_quantize_per_channel_affine", fake_quantize_per_channel_affine),
        ("fake_quantize_per_channel_affine_cachemask_backward", _cachemask_backward),
        ("fused_moving_avg_obs_fake_quant", fused_moving_avg_obs_fake_quant)):
    register(_name, "CompositeImplicitAutograd", _fn)
