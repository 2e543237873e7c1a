"""Meta kernels of the shape and indexing ops (cat, flip, roll, tril, repeat, gather, scatter,
index_select/add/copy/fill, masked_fill/scatter, take, put_, diag_embed, trace, cross), and the
shape/dtype rules with PyTorch's checks that the CPU kernels (``cpu/shape.py``) share.
Ops whose result shape depends on data (nonzero, masked_select) have no Meta kernel, as in
PyTorch."""
from functools import reduce

from ..._core import strides as _st
from ..._core.device import META
from ..._core.tensor_impl import empty_tensor
from ..rules.shape import (block_diag_shape, cat_shape, check_gather, check_index_fill,
                           check_index_select, check_index_source, check_masked_fill,
                           check_masked_scatter, check_masked_select, check_put, check_scatter,
                           check_scatter_reduce, check_stack, check_take, check_tri, cross_shape,
                           diag_embed_shape, flip_dims, repeat_shape, result_dtype, roll_args,
                           trace_dtype)


def _empty(shape, dtype):
    return empty_tensor(tuple(shape), dtype, META)


# -- concatenation ---------------------------------------------------------------------------


# -- reordering --------------------------------------------------------------------------------


# -- gather / scatter --------------------------------------------------------------------------


# -- index_* ops -------------------------------------------------------------------------------


# -- masks --------------------------------------------------------------------------------------


# -- diagonals, trace, cross ---------------------------------------------------------------------


# -- Meta kernels -------------------------------------------------------------------------------

def meta_cat(tensors, dim=0):
    shape, dtype = cat_shape(tensors, dim)
    return _empty(shape, dtype)


def meta_stack(tensors, dim=0):
    check_stack(tensors)
    d = _st.wrap_dim(dim, tensors[0].dim() + 1)
    shape = list(tensors[0]._size)
    shape.insert(d, len(tensors))
    return _empty(shape, result_dtype(tensors))


def meta_block_diag(tensors):
    _, shape, dtype = block_diag_shape(tensors)
    return _empty(shape, dtype)


def meta_flip(self, dims):
    flip_dims(self, dims)
    return _empty(self._size, self._dtype)


def meta_roll(self, shifts, dims=()):
    roll_args(self, shifts, dims)
    return _empty(self._size, self._dtype)


def meta_tril(self, diagonal=0):
    check_tri("tril", self)
    return _empty(self._size, self._dtype)


def meta_triu(self, diagonal=0):
    check_tri("triu", self)
    return _empty(self._size, self._dtype)


def meta_repeat(self, repeats):
    return _empty(repeat_shape(self, repeats), self._dtype)


def meta_gather(self, dim, index, sparse_grad=False):
    check_gather(self, dim, index)
    return _empty(index._size, self._dtype)


def meta_scatter_src(self, dim, index, src):
    check_scatter("scatter", self, dim, index, src)
    return _empty(self._size, self._dtype)


def meta_scatter_value(self, dim, index, value):
    check_scatter("scatter", self, dim, index)
    return _empty(self._size, self._dtype)


def meta_scatter_reduce(self, dim, index, src, reduce):  # noqa: A002  (schema name)
    check_scatter("scatter", self, dim, index, src)
    check_scatter_reduce(reduce, False)
    return _empty(self._size, self._dtype)


def meta_scatter_value_reduce(self, dim, index, value, reduce):  # noqa: A002
    check_scatter("scatter", self, dim, index)
    check_scatter_reduce(reduce, False)
    return _empty(self._size, self._dtype)


def meta_scatter_add(self, dim, index, src):
    check_scatter("scatter_add", self, dim, index, src)
    return _empty(self._size, self._dtype)


def meta_scatter_reduce_two(self, dim, index, src, reduce, include_self=True):  # noqa: A002
    check_scatter("scatter_reduce", self, dim, index, src)
    check_scatter_reduce(reduce, True)
    return _empty(self._size, self._dtype)


def meta_index_select(self, dim, index):
    return _empty(check_index_select(self, dim, index)[1], self._dtype)


def meta_index_add(self, dim, index, source, alpha=1):
    check_index_source("index_add_", self, dim, index, source)
    return _empty(self._size, self._dtype)


def meta_index_copy(self, dim, index, source):
    check_index_source("index_copy_", self, dim, index, source)
    return _empty(self._size, self._dtype)


def meta_index_fill_int_Scalar(self, dim, index, value):
    check_index_fill(self, dim, index)
    return _empty(self._size, self._dtype)


def meta_index_fill_int_Tensor(self, dim, index, value):
    check_index_fill(self, dim, index, value)
    return _empty(self._size, self._dtype)


def meta_masked_fill_Scalar(self, mask, value):
    return _empty(check_masked_fill(self, mask, scalar=value), self._dtype)


def meta_masked_fill_Tensor(self, mask, value):
    return _empty(check_masked_fill(self, mask, value), self._dtype)


def meta_masked_select(self, mask):
    check_masked_select(self, mask)
    raise NotImplementedError("aten::masked_select: the result size depends on the mask's "
                              "values, which meta tensors do not have")


def meta_masked_scatter(self, mask, source):
    return _empty(check_masked_scatter(self, mask, source), self._dtype)


def meta_take(self, index):
    check_take(self, index)
    return _empty(index._size, self._dtype)


def meta_put(self, index, source, accumulate=False):
    check_put(self, index, source)
    return _empty(self._size, self._dtype)


def meta_diag_embed(self, offset=0, dim1=-2, dim2=-1):
    return _empty(diag_embed_shape(self, offset, dim1, dim2)[0], self._dtype)


def meta_trace(self):
    return _empty((), trace_dtype(self))


def meta_linalg_cross(self, other, dim=-1):
    shape, _, dtype = cross_shape(self, other, dim)
    return _empty(shape, dtype)
