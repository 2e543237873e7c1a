"""Rules of the shape ops (cat, stack, gather, scatter, index_select, masked ops ...), for every
backend: argument checks and result shapes and dtypes, with PyTorch's errors. The CPU kernels
(``cpu/shape.py``) and the Meta kernels (``meta/shape.py``) call them; this module imports no
backend."""
from functools import reduce

from ..._core import dtype as D
from ..._core import strides as _st
from ..._core.promotion import promote_types
from .unsigned import BAREBONES


_fmt = _st._fmt_list


_INDEX_DTYPES = (D.int64, D.int32)


def _is_legacy_empty(t):
    return t._size == (0,)


def result_dtype(tensors):
    return reduce(promote_types, (t._dtype for t in tensors))


def cat_shape(tensors, dim):
    """cat's result shape and dtype. Legacy 1-D empty tensors are skipped (PyTorch keeps that
    rule for old code that used ``torch.tensor([])`` as a neutral element)."""
    if len(tensors) == 0:
        raise RuntimeError("torch.cat(): expected a non-empty list of Tensors")
    dtype = result_dtype(tensors)
    for i, t in enumerate(tensors):
        if t.dim() == 0:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be concatenated")
    real = [(i, t) for i, t in enumerate(tensors) if not _is_legacy_empty(t)]
    if not real:
        return tensors[0]._size, dtype
    i0, ref = real[0]
    d = _st.wrap_dim(dim, ref.dim())
    total = 0
    for i, t in real:
        if t.dim() != ref.dim():
            raise RuntimeError(f"Tensors must have same number of dimensions: got {ref.dim()} and "
                               f"{t.dim()}")
        for k in range(ref.dim()):
            if k != d and t._size[k] != ref._size[k]:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. Expected "
                                   f"size {ref._size[k]} but got size {t._size[k]} for tensor "
                                   f"number {i} in the list.")
        total += t._size[d]
    shape = list(ref._size)
    shape[d] = total
    return tuple(shape), dtype


def check_stack(tensors):
    if len(tensors) == 0:
        raise RuntimeError("stack expects a non-empty TensorList")
    for i, t in enumerate(tensors[1:], 1):
        if t._size != tensors[0]._size:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got "
                               f"{_fmt(tensors[0]._size)} at entry 0 and {_fmt(t._size)} at entry "
                               f"{i}")


def flip_dims(self, dims):
    out = [_st.wrap_dim(d, self.dim()) for d in dims]
    seen = set()
    for d in out:
        if d in seen:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        seen.add(d)
    inner = [d for d, n in enumerate(self._size) if n > 1][-1:]
    if (self._dtype in D.FLOAT8 or self._dtype is D.complex32) and inner and inner[0] in out:
        # ATen's dtype-dispatched flip kernel runs only when the innermost dim of two or more
        # elements is flipped (flipping outer dims alone copies whole rows, for any dtype)
        raise NotImplementedError(f"\"flip_cpu\" not implemented for '{self._dtype._short}'")
    return out


def roll_args(self, shifts, dims):
    if len(shifts) == 0:
        raise RuntimeError("`shifts` required")
    if len(dims) == 0 and len(shifts) == 1:
        return list(shifts), []
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:"
                           f"{len(dims)}")
    return list(shifts), [_st.wrap_dim(d, self.dim()) for d in dims]


def check_tri(name, self):
    if self.dim() < 2:
        raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")


def repeat_shape(self, repeats):
    repeats = tuple(repeats)
    if len(repeats) < self.dim():
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of "
                           "dimensions of tensor")
    padded = (1,) * (len(repeats) - self.dim()) + tuple(self._size)
    shape = tuple(s * r for s, r in zip(padded, repeats))
    if any(r < 0 for r in repeats):
        raise RuntimeError(f"Trying to create tensor with negative dimension "
                           f"{min(shape)}: {_fmt(shape)}")
    return shape


def _check_index_long(name, index):
    if index._dtype not in _INDEX_DTYPES:
        raise RuntimeError(f"{name}(): Expected dtype int32/int64 for index")


def _no_complex32(self, kernel):
    """ATen has no ComplexHalf instance of these CPU kernels."""
    if self._dtype is D.complex32:
        raise NotImplementedError(f"\"{kernel}\" not implemented for 'ComplexHalf'")


def check_gather(self, dim, index):
    """gather's checks; returns the wrapped dim (the result has index's shape). An empty index
    of any dtype gives an empty result, as in PyTorch."""
    d = _st.wrap_dim(dim, self.dim())
    nd_self, nd_index = max(self.dim(), 1), max(index.dim(), 1)
    if index.numel() == 0:
        return d
    _check_index_long("gather", index)
    if nd_self != nd_index:
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    for k in range(index.dim()):
        if k != d and index._size[k] > (self._size[k] if self.dim() else 1):
            raise RuntimeError(f"Size does not match at dimension {k} expected index "
                               f"{_fmt(index._size)} to be no larger than self "
                               f"{_fmt(self._size)} apart from dimension {d}")
    _no_complex32(self, "scatter_gather_tensor_cpu")
    return d


def check_scatter_reduce_dtype(self, reduce):
    """The reductions ATen's CPU scatter_reduce kernels lack: mean of bools, extrema of complex
    numbers."""
    if (reduce == "mean" and self._dtype is D.bool_) or \
            (reduce in ("amax", "amin") and self._dtype.is_complex):
        raise NotImplementedError(f"\"scatter_gather_tensor_cpu_reduce_{reduce}\" not "
                                  f"implemented for '{self._dtype._short}'")


def check_index_reduce_dtype(self):
    """ATen's index_reduce kernel has no bool, complex or barebones unsigned types."""
    if self._dtype is D.bool_ or self._dtype.is_complex or self._dtype in BAREBONES:
        raise NotImplementedError(f"\"index_func_\" not implemented for '{self._dtype._short}'")


def check_scatter(name, self, dim, index, src=None):
    """scatter's checks (src is None for the value overloads); returns the wrapped dim."""
    _check_index_long(name, index)
    d = _st.wrap_dim(dim, self.dim())
    if src is not None and src._dtype is not self._dtype:
        # (scatter_meta_impl checks as "scatter" for scatter_add and scatter_reduce too)
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    if index.numel() == 0:
        return d
    if max(self.dim(), 1) != max(index.dim(), 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    if src is not None and max(src.dim(), 1) != max(index.dim(), 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as src tensor")
    for k in range(index.dim()):
        if k != d and index._size[k] > self._size[k]:
            raise RuntimeError(f"Expected index {_fmt(index._size)} to be no larger than self "
                               f"{_fmt(self._size)} apart from dimension {d} and to be no larger "
                               f"size than src {_fmt(src._size if src is not None else ())}")
        if src is not None and index._size[k] > src._size[k]:
            raise RuntimeError(f"Expected index {_fmt(index._size)} to be no larger than self "
                               f"{_fmt(self._size)} apart from dimension {d} and to be no larger "
                               f"size than src {_fmt(src._size)}")
    _no_complex32(self, "scatter_gather_tensor_cpu")
    return d


SCATTER_REDUCES = {"add": "sum", "multiply": "prod"}  # scatter's reduce= names -> scatter_reduce's


SCATTER_REDUCE_TWO = ("sum", "prod", "mean", "amax", "amin")


def check_scatter_reduce(reduce_, two):
    if two:
        if reduce_ not in SCATTER_REDUCE_TWO:
            raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got "
                               f"{reduce_}")
    elif reduce_ not in SCATTER_REDUCES:
        raise RuntimeError(f"reduce argument must be either add or multiply. Got {reduce_}")


def check_index_select(self, dim, index):
    """Returns (wrapped dim, result shape)."""
    if index.dim() > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    if index._dtype not in _INDEX_DTYPES:
        raise RuntimeError("index_select(): Expected dtype int32 or int64 for index")
    d = _st.wrap_dim(dim, self.dim())
    shape = list(self._size)
    if shape:
        shape[d] = index.numel()
    elif index.numel() != 1:
        raise RuntimeError(f"index_select(): Index to scalar can have only 1 value, got "
                           f"{index.numel()} value(s)")
    return d, tuple(shape)


def check_index_source(name, self, dim, index, source):
    """Checks shared by index_add / index_copy; returns the wrapped dim."""
    d = _st.wrap_dim(dim, self.dim())
    if index.dim() > 1:
        raise IndexError(f"{name}(): Index is supposed to be a vector")
    if name == "index_copy_":
        if index._dtype is not D.int64:
            raise RuntimeError(f"index_copy_(): Expected a long tensor for index, but got "
                               f"{index._dtype._short}")
    elif index._dtype not in _INDEX_DTYPES:
        raise RuntimeError(f"{name}(): Expected dtype int32/int64 for index")
    if source._dtype is not self._dtype and name == "index_add_":
        # (index_func_meta_impl's own wording; index_copy's meta function has another)
        raise RuntimeError(f"index_add_(): self ({self._dtype._short}) and source "
                           f"({source._dtype._short}) must have the same scalar type")
    if source._dtype is not self._dtype:
        raise RuntimeError(f"{name}(): self and source expected to have the same dtype, but got "
                           f"(self) {self._dtype._short} and (source) {source._dtype._short}")
    if name != "index_copy_" and not (d == 0 or d < source.dim()):
        raise RuntimeError(f"{name}(): Indexing dim {d} is out of bounds of the source tensor "
                           f"with dim {source.dim()}")
    n_src = source._size[d] if source.dim() else 1
    if index.numel() != n_src:
        if name == "index_copy_":  # PyTorch raises IndexError here, RuntimeError in index_add_
            raise IndexError(f"index_copy_(): Number of indices ({index.numel()}) should be equal "
                             f"to source.size(dim) ({n_src})")
        raise RuntimeError(f"{name}(): Number of indices ({index.numel()}) should be equal to "
                           f"source.size(dim): ({n_src}), for dim: {d}")
    if name != "index_copy_":  # ATen's index_func_meta_impl: shapes equal but at dim
        self_sizes, source_sizes = list(self._size), list(source._size)
        if source.dim() != 0 and self.dim() != 0:
            del self_sizes[d], source_sizes[d]
        if self_sizes != source_sizes:
            raise RuntimeError(f"source tensor shape must match self tensor shape, excluding the "
                               f"specified dimension. Got self.shape = {_fmt(self._size)} "
                               f"source.shape = {_fmt(source._size)}")
        return d
    if source.dim() != self.dim() and max(source.dim(), 1) != max(self.dim(), 1):
        raise IndexError(f"{name}(): When source and destination are not scalars, their "
                         f"dimensionality must match. Source dimensionality "
                         f"({source.dim()}), destination dimensionality ({self.dim()})")
    for k in range(source.dim()):
        if k != d and source._size[k] != self._size[k]:
            # (ATen prints each slice's sizes, dim ``d`` left out, as an IntArrayRef's elements)
            def sl(t):
                return " ".join(str(n) for j, n in enumerate(t._size) if j != d)
            raise RuntimeError(f"{name}(): Source/destination tensor must have same slice shapes. "
                               f"Destination slice shape: {sl(self)} at dimension {d} "
                               f"and source slice shape: {sl(source)} at dimension 0.")
    return d


def check_index_fill(self, dim, index, value=None):
    d = _st.wrap_dim(dim, self.dim())
    if index._dtype is not D.int64:
        raise IndexError("index_fill_(): Expected dtype int64 for index.")
    if index.dim() > 1:
        raise IndexError("Index has to be a vector/scalar")
    if value is not None and value.dim() != 0:
        raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got "
                           f"tensor with {value.dim()} dimension(s).")
    return d


def check_masked_fill(self, mask, value=None, scalar=None):
    """Returns the out-of-place result shape (self and mask broadcast together). A Scalar value
    must fit self's dtype, as for ``fill_``."""
    if mask._dtype is not D.bool_:
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{mask._dtype._cpp}")
    if value is not None and value.dim() != 0:
        raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got "
                           f"tensor with {value.dim()} dimension(s).")
    if self._dtype in D.FLOAT8:
        raise NotImplementedError(f"\"masked_fill\" not implemented for '{self._dtype._short}'")
    if scalar is not None:
        from ..rules.factory import check_fits
        check_fits(scalar, self._dtype)
    return _st.broadcast_shapes(self._size, mask._size)


def check_masked_select(self, mask):
    if mask._dtype is not D.bool_:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    return _st.broadcast_shapes(self._size, mask._size)


def check_masked_scatter(self, mask, source):
    if mask._dtype is not D.bool_:
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with dtype "
                           f"{mask._dtype._short}")
    if source._dtype is not self._dtype:
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but got"
                           f"{self._dtype._short} and {source._dtype._short}")
    _no_complex32(self, "masked_scatter")
    return _st.broadcast_shapes(self._size, mask._size)


def check_take(self, index):
    if index._dtype is not D.int64:
        raise RuntimeError(f"take(): Expected a long tensor for index, but got "
                           f"{index._dtype._short}")
    _no_complex32(self, "take_cpu")


def check_put(self, index, source):
    if index._dtype is not D.int64:
        raise RuntimeError(f"put_(): Expected a long tensor for index, but got "
                           f"{index._dtype._short}")
    if source._dtype is not self._dtype:
        raise RuntimeError(f"put_(): self and source expected to have the same dtype, but got "
                           f"self.dtype = {self._dtype._short} and source.dtype = "
                           f"{source._dtype._short}")
    if source.numel() != index.numel():
        raise IndexError(f"put_(): Expected source and index to have the same number of "
                           f"elements, but got source.numel() = {source.numel()}, index.numel() = "
                           f"{index.numel()}")


def diag_embed_shape(self, offset, dim1, dim2):
    nd = self.dim() + 1
    d1, d2 = _st.wrap_dim(dim1, nd), _st.wrap_dim(dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    n = (self._size[-1] if self.dim() else 1) + abs(offset)
    rest = list(self._size[:-1])
    shape = []
    for k in range(nd):
        shape.append(n if k in (d1, d2) else rest.pop(0))
    return tuple(shape), d1, d2


def trace_dtype(self):
    if self.dim() != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {self.dim()}")
    if self._dtype is D.bool_:  # (ATen's trace kernel has no bool)
        raise NotImplementedError("\"trace\" not implemented for 'Bool'")
    return D.int64 if self._dtype._category <= D.INTEGRAL else self._dtype


def cross_shape(self, other, dim):
    if self.dim() != other.dim():
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    shape = _st.broadcast_shapes(self._size, other._size)
    d = _st.wrap_dim(dim, len(shape))
    if self._size[d] != 3 or other._size[d] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got "
                           f"{self._size[d]} and {other._size[d]}")
    dtype = promote_types(self._dtype, other._dtype)
    if dtype is D.bool_:  # (ATen's cross kernel has no bool)
        raise NotImplementedError("\"cross\" not implemented for 'Bool'")
    return shape, d, dtype


def check_block_diag(tensors):
    for i, t in enumerate(tensors):
        if t.dim() > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. "
                               f"Input {i} has {t.dim()} dimensions")


def block_diag_shape(tensors):
    """(rows, cols) of each input as a matrix, and the result shape and dtype."""
    check_block_diag(tensors)
    mats = [(1, 1) if t.dim() == 0 else ((1, t._size[0]) if t.dim() == 1 else tuple(t._size))
            for t in tensors]
    shape = (sum(m[0] for m in mats), sum(m[1] for m in mats))
    return mats, shape, result_dtype(tensors) if tensors else D.float32
