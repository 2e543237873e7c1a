"""View kernels: each returns a tensor sharing its input's storage and version counter, with new
sizes, strides and offset. They serve every device, because only metadata changes."""
from ..._core import strides as _st
from ..._tensor import _alias

__all__ = ["view", "as_strided"]


def _fmt(shape):
    return "[" + ", ".join(map(str, shape)) + "]"


def view(self, size):
    shape = _st.infer_size(tuple(size), _st.numel(self._size))
    stride = _st.compute_view_stride(self._size, self._stride, shape)
    if stride is None:
        raise RuntimeError("view size is not compatible with input tensor's size and stride (at "
                           "least one dimension spans across two contiguous subspaces). Use "
                           ".reshape(...) instead.")
    return _alias(self, shape, stride, self._offset)


def as_strided(self, size, stride, storage_offset=None):
    size, stride = tuple(size), tuple(stride)
    if len(size) != len(stride):
        raise RuntimeError(f"mismatch in length of strides and shape")
    offset = self._offset if storage_offset is None else storage_offset
    need = _st.storage_extent(size, stride, offset) * self._dtype.itemsize
    if need > self._storage.nbytes():
        raise RuntimeError(f"setStorage: sizes {_fmt(size)}, strides {_fmt(stride)}, storage offset "
                           f"{offset}, and itemsize {self._dtype.itemsize} requiring a storage size of "
                           f"{need} are out of bounds for storage of size {self._storage.nbytes()}")
    return _alias(self, size, stride, offset)
