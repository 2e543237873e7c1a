"""Rules of the sorting and selection ops (sort, topk, kthvalue, searchsorted, histc ...), for
every backend: argument checks and result shapes and dtypes, with PyTorch's errors. The CPU
kernels (``cpu/sorting.py``) and the Meta kernels (``meta/sorting.py``) call them; this module
imports no backend."""
from ..._core import dtype as D
from ..._core import strides as _st
from .reduction import reduce_dims, reduced_shape


def _fmt(shape):
    return "[" + ", ".join(map(str, shape)) + "]"


def _not_implemented(kernel, dt):
    raise NotImplementedError(f'"{kernel}" not implemented for \'{dt._short}\'')


def check_sort(name, self, dim):
    if self._dtype in D.FLOAT8:  # ATen's sort and topk kernels have no float8 instances
        _not_implemented("topk_cpu" if name == "topk" else "sorting_kernel_method_name",
                         self._dtype)
    if self._dtype.is_complex:  # (ATen's message starts with a space)
        raise RuntimeError(f" {'topk' if name == 'topk' else 'Sort'} does not support complex "
                           f"dtypes on CPU")
    return _st.wrap_dim(dim, len(self._size))


def topk_shape(self, k, dim):
    if self._dtype is D.bool_:
        raise RuntimeError("topk does not support bool dtypes on CPU")
    d = check_sort("topk", self, dim)
    n = self._size[d] if self._size else 1
    if not 0 <= k <= n:
        raise RuntimeError("selected index k out of range")
    shape = list(self._size)  # 0-dim inputs give 0-dim results
    if shape:
        shape[d] = k
    return d, tuple(shape)


# op -> (the kernel name PyTorch's dtype error names, whether bool is supported); median and
# nanmedian share ATen's median kernels: median_cpu for the whole tensor, median_out along a dim
SELECTIONS = {"kthvalue": ("kthvalue_cpu", False), "median": ("median_cpu", False),
              "nanmedian": ("median_cpu", False), "mode": ("mode_cpu", True)}


def check_selection(name, self, along_dim=False):
    kernel, bool_ok = SELECTIONS[name]
    if along_dim and name in ("median", "nanmedian"):
        kernel = "median_out"
    # (float8 reaches other dtype dispatches than bool does)
    if self._dtype in D.FLOAT8 or (self._dtype is D.bool_ and not bool_ok) or \
            self._dtype.is_complex:
        _not_implemented(kernel, self._dtype)


def selection_dim(name, self, dim, keepdim, check_dtype=True):
    """(wrapped dim, result shape) of a selection along ``dim``; empty dims are an error. The
    dtype is checked last (``check_dtype=False`` defers it to the caller), as in PyTorch."""
    dims = reduce_dims(name, self, dim, True)
    d = _st.wrap_dim(dim, len(self._size))
    if check_dtype:
        check_selection(name, self, along_dim=True)
    return d, reduced_shape(self._size, dims, keepdim)


def kthvalue_shape(self, k, dim, keepdim):
    d, shape = selection_dim("kthvalue", self, dim, keepdim, check_dtype=False)
    n = self._size[d] if self._size else 1
    if not 1 <= k <= n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {dim}")
    check_selection("kthvalue", self)
    return d, shape


def check_histc(self, bins, min, max):  # noqa: A002  (schema names)
    # the bin edges come first (linspace, which has no bool kernel), and without a range
    # the input's aminmax before them
    if self._dtype is D.bool_:
        _not_implemented("linspace_cpu", self._dtype)
    if self._dtype.is_complex and min == max:
        _not_implemented("aminmax_cpu", self._dtype)
    if self._dtype._category != D.FLOATING:
        _not_implemented("histogram_cpu", self._dtype)
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    if min > max:
        raise RuntimeError("torch.histc: max must be larger than min")
    return (bins,)


def check_searchsorted(seq, self_shape, self_dtype, out_int32, right, side, sorter):
    """PyTorch's checks; returns (NumPy side, result dtype)."""
    if side is not None and side not in ("left", "right"):
        raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got "
                           f"{side}")
    if side == "left" and right:
        raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, got "
                           "side of left while right was True")
    if len(seq._size) == 0:
        raise RuntimeError("torch.searchsorted(): boundaries tensor should have positive "
                           "dimension, but got 0 dimension")
    if len(seq._size) > 1 and (len(self_shape) != len(seq._size) or
                               tuple(seq._size[:-1]) != tuple(self_shape[:-1])):
        raise RuntimeError(f"torch.searchsorted(): boundaries tensor should be 1 dimension or the "
                           f"first N-1 dimensions of boundaries tensor and input value tensor "
                           f"must match, but we got boundaries tensor {_fmt(seq._size)} and input "
                           f"value tensor {_fmt(self_shape)}")
    if sorter is not None:
        if tuple(sorter._size) != tuple(seq._size):
            raise RuntimeError(f"torch.searchsorted(): boundary and sorter must have the same "
                               f"size, but got boundary tensor {_fmt(seq._size)}and got sorter "
                               f"tensor {_fmt(sorter._size)}")
        if sorter._dtype is not D.int64:
            raise RuntimeError(f"torch.searchsorted(): sorter must be a tensor of long dtype but "
                               f"got dtype {sorter._dtype._short}")
    if _st.numel(self_shape):  # (no values: ATen returns before its dtype dispatch)
        for dt in (seq._dtype, self_dtype):
            if dt is D.bool_ or dt.is_complex:
                _not_implemented("searchsorted_out_cpu", dt)
    return ("right" if right or side == "right" else "left"), (D.int32 if out_int32 else D.int64)


def check_bucketize(boundaries):
    if len(boundaries._size) != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim("
                           f"{len(boundaries._size)})")
