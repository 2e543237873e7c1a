"""Meta kernels of the ordering ops (``cpu/sorting.py``): shapes and dtypes from the shared rules.
unique and bincount have none: their output size depends on the data (PyTorch's Meta backend
rejects them too)."""
from ..._core import dtype as D
from ..._core.device import META
from ..._core.tensor_impl import empty_tensor
from ..rules import sorting as _s


def _pair(shape, dtype):
    return empty_tensor(shape, dtype, META), empty_tensor(shape, D.int64, META)


def meta_sort(self, dim=-1, descending=False):
    _s.check_sort("sort", self, dim)
    return _pair(self._size, self._dtype)


def meta_sort_stable(self, stable, dim=-1, descending=False):
    return meta_sort(self, dim, descending)


def meta_topk(self, k, dim=-1, largest=True, sorted=True):  # noqa: A002
    return _pair(_s.topk_shape(self, k, dim)[1], self._dtype)


def _selection(name):
    def k(self, dim=-1, keepdim=False):
        return _pair(_s.selection_dim(name, self, dim, keepdim)[1], self._dtype)
    return k


def meta_kthvalue(self, k, dim=-1, keepdim=False):
    return _pair(_s.kthvalue_shape(self, k, dim, keepdim)[1], self._dtype)


def _full(name):
    def k(self):
        if self.numel():
            _s.check_selection(name, self)
        return empty_tensor((), self._dtype, META)
    return k


meta_median_dim = _selection("median")
meta_nanmedian_dim = _selection("nanmedian")
meta_mode = _selection("mode")
meta_median = _full("median")
meta_nanmedian = _full("nanmedian")


def meta_histc(self, bins=100, min=0, max=0):  # noqa: A002
    return empty_tensor(_s.check_histc(self, bins, min, max), self._dtype, META)


def meta_searchsorted_Tensor(sorted_sequence, self, out_int32=False, right=False, side=None,
                             sorter=None):
    _, rdt = _s.check_searchsorted(sorted_sequence, self._size, self._dtype, out_int32, right,
                                   side, sorter)
    return empty_tensor(self._size, rdt, META)


def meta_searchsorted_Scalar(sorted_sequence, self, out_int32=False, right=False, side=None,
                             sorter=None):
    from ..._core.promotion import scalar_dtype
    _, rdt = _s.check_searchsorted(sorted_sequence, (), scalar_dtype(self), out_int32, right,
                                   side, sorter)
    return empty_tensor((), rdt, META)


def meta_bucketize_Tensor(self, boundaries, out_int32=False, right=False):
    _s.check_bucketize(boundaries)
    return meta_searchsorted_Tensor(boundaries, self, out_int32, right)


def meta_bucketize_Scalar(self, boundaries, out_int32=False, right=False):
    _s.check_bucketize(boundaries)
    return meta_searchsorted_Scalar(boundaries, self, out_int32, right)
