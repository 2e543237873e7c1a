"""Copies, views, indexing and comparison of quantized tensors (ATen's ``quantized/QTensor.cpp``,
``TensorShape.cpp``'s quantized branches, ``Copy.cpp``'s and ``TensorAdvancedIndexing.cpp``'s).

A view runs the dense view op on the integer alias of the tensor (so its checks and geometry are
the dense op's) and wraps the result's sizes, strides and offset as a view of the quantized
tensor, with the quantizer PyTorch gives it: the same one, or for a per-channel tensor one whose
axis, scales and zero points follow the view. Views that set arbitrary strides (permute,
transpose, expand, as_strided ...) need a per-tensor quantizer, as ATen's
``as_strided_qtensorimpl`` does.
"""
import numpy as np

from ..._core.device import channels_last, channels_last_3d, contiguous_format
from ..._core.quantizer import (PerChannelAffineQuantizer, PerTensorAffineQuantizer,
                                per_channel_affine, per_tensor_affine)
from ..._core import dtype as _dt
from ..._core import strides as _st
from ..._core.tensor_impl import quantized_tensor_impl
from ..._ops.overload import ops
from ..registration import register
from .affine import (_IMPROVE, _check_qdtype, dequantize_array, int_alias, is_quantized,
                     new_qtensor, quantize_into)

_aten = ops.aten


def _view_of(self, r, quantizer):
    """Quantized ``self``'s view with the geometry of ``r`` (a view of its integer alias)."""
    return quantized_tensor_impl(self._storage, r._size, r._stride, r._offset, quantizer,
                                 self._device, base=self)


def _strided_view(op):
    """A view op that sets strides: per-tensor quantized tensors only."""
    def kernel(self, *args):
        if self._quantizer.qscheme is not per_tensor_affine:
            raise RuntimeError("Setting strides is possible only on uniformly quantized tensor")
        return _view_of(self, op._call(int_alias(self), *args), self._quantizer)
    kernel.__name__ = kernel.__qualname__ = f"quantized_{op.__name__.replace('.', '_')}"
    return kernel


def _subtensor_quantizer(self, is_select, dim, start, end=None, step=1):
    """ATen's ``create_subtensor_quantizer``: a per-channel tensor sliced or selected along
    its axis keeps those channels' parameters, and one channel left makes it per-tensor;
    select moves the axis down by one whichever dim it drops (as ATen does)."""
    quantizer = self._quantizer
    if quantizer.qscheme is per_tensor_affine:
        return quantizer
    scales, zero_points, axis = quantizer.scales, quantizer.zero_points, quantizer.axis
    if dim == axis:
        if is_select:
            scales, zero_points = scales.select(0, start), zero_points.select(0, start)
        else:
            scales = _aten.slice.Tensor(scales, 0, start, end, step)
            zero_points = _aten.slice.Tensor(zero_points, 0, start, end, step)
    if scales.numel() > 1:
        return PerChannelAffineQuantizer(quantizer.dtype, scales, zero_points,
                                         axis - 1 if is_select else axis)
    return PerTensorAffineQuantizer(quantizer.dtype, scales.item(), zero_points.item())


def select_int(self, dim, index):
    r = int_alias(self).select(dim, index)
    d = _st.wrap_dim(dim, self.dim())
    index = index + self._size[d] if index < 0 else index
    return _view_of(self, r, _subtensor_quantizer(self, True, d, index))


def slice_Tensor(self, dim=0, start=None, end=None, step=1):
    r = _aten.slice.Tensor(int_alias(self), dim, start, end, step)
    d = _st.wrap_dim(dim, self.dim())
    return _view_of(self, r, _subtensor_quantizer(self, False, d, start, end, step))


def _pieces(self, pieces, dim):
    """Quantized views of the dense split's ``pieces`` (consecutive slices along ``dim``), each
    with the quantizer ``slice`` gives it."""
    d = _st.wrap_dim(dim, self.dim())
    out, start = [], 0
    for r in pieces:
        end = start + r._size[d]
        out.append(_view_of(self, r, _subtensor_quantizer(self, False, d, start, end)))
        start = end
    return type(pieces)(out)


def split_Tensor(self, split_size, dim=0):
    return _pieces(self, _aten.split.Tensor(int_alias(self), split_size, dim), dim)


def split_with_sizes(self, split_sizes, dim=0):
    return _pieces(self, _aten.split_with_sizes.default(int_alias(self), split_sizes, dim), dim)


def unbind_int(self, dim=0):
    """One select per index (ATen's ``unbind``), each with its own quantizer."""
    d = _st.wrap_dim(dim, self.dim())
    return [_aten.select.int(self, d, i) for i in range(self._size[d])]


def _moved_axis(quantizer, axis):
    return PerChannelAffineQuantizer(quantizer.dtype, quantizer.scales, quantizer.zero_points,
                                     axis)


def unsqueeze(self, dim):
    r = int_alias(self).unsqueeze(dim)
    quantizer = self._quantizer
    if quantizer.qscheme is per_channel_affine:
        d = _st.wrap_dim(dim, self.dim() + 1)
        quantizer = _moved_axis(quantizer, quantizer.axis + (quantizer.axis >= d))
    return _view_of(self, r, quantizer)


def _squeeze(self, dims):
    """ATen's ``squeeze_qtensor``: the size-1 dims among ``dims`` go; a per-channel axis may not,
    and moves down past those before it."""
    r = int_alias(self).squeeze(dims)
    quantizer = self._quantizer
    if quantizer.qscheme is per_channel_affine:
        axis, shift = quantizer.axis, 0
        for d in sorted({_st.wrap_dim(d, max(self.dim(), 1)) for d in dims}):
            if self.dim() and self._size[d] == 1:
                if d == axis:
                    raise RuntimeError("Squeeze is only possible on non-axis dimension for "
                                       "Per-Channel Quantized Tensors.")
                shift += d < axis
        quantizer = _moved_axis(quantizer, axis - shift)
    return _view_of(self, r, quantizer)


def squeeze(self):
    return _squeeze(self, tuple(range(self.dim())))


def squeeze_dim(self, dim):
    return _squeeze(self, (dim,))


def squeeze_dims(self, dim):
    return _squeeze(self, tuple(dim))


def clone(self, memory_format=None):
    """ATen's ``quantized_clone``: contiguous unless ``memory_format`` says otherwise (preserve
    means the suggested format, not the input's strides)."""
    if memory_format is None:
        memory_format = contiguous_format
    if memory_format._name == "preserve_format":
        memory_format = _suggested_format(self)
    dst, out = new_qtensor(self._size, self._quantizer,
                           memory_format._name.startswith("channels_last"))
    out[...] = int_alias(self)._nd()
    return dst


def empty_like(self, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    """ATen's ``empty_like_quantized``: a fresh tensor with ``self``'s quantizer (a copy of its
    parameters), laid out as ``self`` suggests unless ``memory_format`` says otherwise."""
    if memory_format is None or memory_format._name == "preserve_format":
        memory_format = _suggested_format(self)
    if dtype is not None and dtype is not self._dtype:
        _check_qdtype(dtype)
    quantizer = self._quantizer
    if quantizer.qscheme is per_tensor_affine:
        quantizer = PerTensorAffineQuantizer(dtype or self._dtype, quantizer.scale,
                                             quantizer.zero_point)
    else:
        quantizer = PerChannelAffineQuantizer(dtype or self._dtype, quantizer.scales.clone(),
                                              quantizer.zero_points.clone(), quantizer.axis)
    return new_qtensor(self._size, quantizer, memory_format._name.startswith("channels_last"))[0]


def _to_copy(self, dtype=None, layout=None, device=None, pin_memory=None, non_blocking=False,
             memory_format=None):
    """ATen's ``_to_copy`` of a quantized tensor: an ``empty_quantized`` of the dtype asked
    for (a quantized one: a float dtype is refused there), then ``copy_``."""
    if device is not None and device.type != self._device.type:
        raise NotImplementedError(f"ember has no quantized tensors on {device.type}")
    r = empty_like(self, dtype, None, None, None, memory_format)
    return _aten.copy_.default(r, self)


def fill__Scalar(self, value):
    """ATen's ``fill_quantized_``: ``value`` quantized with ``self``'s parameters everywhere."""
    values = _aten.full.default(list(self._size), value, dtype=_dt.float32)
    return _aten.copy_.default(self, values)


def _local_scalar_dense(self):
    """``item()``: the dequantized value, as a Python float."""
    return float(dequantize_array(self).reshape(()))


def _suggested_format(t):
    if not _st.suggests_channels_last(t._size, t._stride):
        return contiguous_format
    return channels_last if t.dim() == 4 else channels_last_3d


def copy_(self, src, non_blocking=False):
    """ATen's ``copy_impl`` with a quantized operand: a float source is quantized into ``self``
    with ``self``'s parameters; a quantized source of the same scheme and dtype gives ``self``
    its quantizer and integers; a quantized source never goes into a plain tensor."""
    if not is_quantized(self):
        raise RuntimeError("Copying from quantized Tensor to non-quantized Tensor is not "
                           "allowed, please use dequantize to get a float Tensor from a "
                           "quantized Tensor")
    if not is_quantized(src):
        if src._dtype.name != "float32":
            raise RuntimeError("Quantized copy only works with kFloat as source Tensor")
        if not ((self.is_contiguous() and src.is_contiguous())
                or (self.is_contiguous(memory_format=channels_last)
                    and src.is_contiguous(memory_format=channels_last))):
            raise RuntimeError("Quantized copy only works with contiguous and NHWC Tensors")
        if self._size != src._size:
            raise RuntimeError("Quantized copy only works with Tensors with the same shape")
        quantize_into(int_alias(self)._nd(), src, self._quantizer)
        return self
    if self._quantizer.qscheme is not src._quantizer.qscheme:
        raise RuntimeError("Quantized Copy only works with same qscheme")
    if self._dtype is not src._dtype:
        raise RuntimeError("Expected self.scalar_type() == src.scalar_type() to be true, but "
                           "got false." + _IMPROVE)
    self._quantizer = src._quantizer
    int_alias(self).copy_(int_alias(src))
    return self


def equal(self, other):
    """ATen's ``equal_quantized_cpu``: same sizes, quantizer and integers."""
    if not is_quantized(other) or self._size != other._size or self._dtype is not other._dtype:
        return False
    if not self._quantizer.equal_to(other._quantizer):
        return False
    return bool(np.array_equal(int_alias(self)._nd(), int_alias(other)._nd()))


def index_Tensor(self, indices):
    """ATen's ``quantized_index``: dequantize, index, quantize again (per-tensor only)."""
    if self._quantizer.qscheme is not per_tensor_affine:
        raise RuntimeError("self.qscheme() == c10::kPerTensorAffine || self.qscheme() == "
                           "c10::kPerTensorSymmetric INTERNAL ASSERT FAILED: Indexing is only "
                           "supported for per-Tensor quantized Tensors.")
    result = _aten.index.Tensor(self.dequantize(), indices)
    return _aten.quantize_per_tensor.default(result, self._quantizer.scale,
                                             self._quantizer.zero_point, self._dtype)


_STRIDED = ("as_strided", "permute", "transpose.int", "t", "expand", "unfold", "diagonal")
for _name in _STRIDED:
    _base, _, _overload = _name.partition(".")
    register(_name, "QuantizedCPU",
             _strided_view(getattr(getattr(_aten, _base), _overload or "default")))
for _name, _fn in (("select.int", select_int), ("slice.Tensor", slice_Tensor),
                   ("unbind.int", unbind_int), ("split.Tensor", split_Tensor),
                   ("split_with_sizes", split_with_sizes), ("empty_like", empty_like),
                   ("_to_copy", _to_copy), ("_local_scalar_dense", _local_scalar_dense),
                   ("fill_.Scalar", fill__Scalar),
                   ("unsqueeze", unsqueeze), ("squeeze", squeeze), ("squeeze.dim", squeeze_dim),
                   ("squeeze.dims", squeeze_dims), ("clone", clone), ("copy_", copy_),
                   ("equal", equal), ("index.Tensor", index_Tensor)):
    register(_name, "QuantizedCPU", _fn)
