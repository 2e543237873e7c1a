"""Decompositions added for issue 18, written in ember ops: the unsafe_split/unsafe_chunk family,
addr (beta * self + alpha *
outer(vec1, vec2)), the functional fill, resolve_neg, sum_to_size, nonzero_static, resize_as_,
new_empty_strided, empty_permuted, _safe_softmax, index_reduce, _chunk_cat and the masked
``_unsafe_*`` indexing ops."""
import warnings

from ..._core import dtype as D
from ..._ops.overload import ops

_aten = ops.aten


def addr(self, vec1, vec2, beta=1, alpha=1):
    for name, v in (("vec1", vec1), ("vec2", vec2)):
        if v.dim() != 1:
            raise RuntimeError(f"addr: Expected 1-D argument {name}, but got {v.dim()}-D")
    outer = _aten.outer.default._call(vec1, vec2)
    if not (alpha == 1 and alpha.__class__ is int):
        outer = _aten.mul.Tensor._call(outer, alpha)
    if beta == 0:  # self is ignored (NaN and inf in it do not propagate), but still broadcast
        scaled = _aten.mul.Tensor._call(_aten.zeros_like.default._call(
            self, None, None, None, None, None), 0)
    elif beta == 1 and beta.__class__ is int:
        scaled = self
    else:
        scaled = _aten.mul.Tensor._call(self, beta)
    return _aten.add.Tensor._call(scaled, outer, 1)


def fill_Scalar(self, value):
    return _aten.fill_.Scalar._call(_aten.clone.default._call(self, None), value)


def fill_Tensor(self, value):
    return _aten.fill_.Tensor._call(_aten.clone.default._call(self, None), value)


def resolve_neg(self):
    # ember has no negative bit: every tensor is already resolved (PyTorch returns self then)
    return self


def sum_to_size(self, size):
    size = tuple(size)
    shape = tuple(self._size)
    lead = len(shape) - len(size)
    ok = lead >= 0 and all(s == 1 or s == t for s, t in zip(size, shape[lead:]))
    if not ok:
        raise RuntimeError(f"size {{[{', '.join(map(str, size))}]}} is not expandable to size "
                           f"{{[{', '.join(map(str, shape))}]}}.")
    from ...autograd.engine import sum_to
    return sum_to(self, size)


def nonzero_static(self, size, fill_value=-1):
    """``nonzero`` with a fixed number of rows: truncated to ``size``, or padded with
    ``fill_value`` rows (what compiled code can allocate before it knows the data)."""
    if size < 0:
        raise RuntimeError(f"nonzero_static: 'size' must be an non-negative integer, but got "
                           f"size: {size}")
    found = _aten.nonzero.default._call(self)
    n, ndim = found.size(0), found.size(1)
    if n >= size:
        return _aten.slice.Tensor._call(found, 0, 0, size, 1).clone()
    pad = _aten.full.default._call([size - n, ndim], fill_value, found._dtype, None,
                                   found._device, None)
    return _aten.cat.default._call([found, pad], 0)


def resize_as_(self, the_template, memory_format=None):
    return _aten.resize_.default._call(self, list(the_template._size), memory_format)


def new_empty_strided(self, size, stride, dtype=None, layout=None, device=None,
                      pin_memory=None):
    return _aten.empty_strided.default._call(size, stride, dtype or self._dtype, layout,
                                             device or self._device, pin_memory)


def empty_permuted(size, physical_layout, dtype=None, layout=None, device=None,
                   pin_memory=None):
    """An empty tensor of logical ``size`` whose memory holds the dims in ``physical_layout``
    order (the last one fastest)."""
    size, order = list(size), list(physical_layout)
    if sorted(order) != list(range(len(size))):
        raise RuntimeError(f"Number of dimensions in size does not match the length of the "
                           f"physical_layout; got {len(size)} and {len(order)}"
                           if len(order) != len(size) else
                           f"physical_layout must be a permutation of the dims; got {order}")
    stride = [0] * len(size)
    step = 1
    for d in reversed(order):
        stride[d] = step
        step *= max(size[d], 1)
    return _aten.empty_strided.default._call(size, stride, dtype, layout, device, pin_memory)


def _safe_softmax(self, dim, dtype=None):
    """softmax, with rows that are all -inf (fully masked attention rows) giving 0, not NaN."""
    out = _aten._softmax.default._call(self if dtype is None else
                                       _aten._to_copy.default._call(self, dtype), dim, False)
    masked = _aten.all.dim._call(_aten.eq.Scalar._call(self, float("-inf")), dim, True)
    zero = _aten.zeros.default._call([], out._dtype, None, out._device, None)
    return _aten.where.self._call(masked, zero, out)


def _unviewed(parts):
    """The pieces as tensors over the same memory that autograd does not track as views
    (PyTorch's ``unsafe_*`` ops: in-place changes to one piece are the caller's business)."""
    from ..._tensor import make_tensor
    return [make_tensor(t._storage, t._size, t._stride, t._offset, t._dtype, t._device)
            for t in parts]


def unsafe_split_Tensor(self, split_size, dim=0):
    return _unviewed(_aten.split.Tensor._call(self, split_size, dim))


def unsafe_split_with_sizes(self, split_sizes, dim=0):
    return _unviewed(_aten.split_with_sizes.default._call(self, split_sizes, dim))


def unsafe_chunk(self, chunks, dim=0):
    sizes = [t.size(dim) for t in _aten.chunk.default._call(self, chunks, dim)]
    return _aten.unsafe_split_with_sizes.default._call(self, sizes, dim)


def channel_shuffle(self, groups):
    """Regroup the channels: (N, g, C/g, *) -> (N, C/g, g, *) -> (N, C, *) (ShuffleNet)."""
    if self.dim() <= 2:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with "
                           f"sizes [{', '.join(map(str, self._size))}]")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of "
                           f"groups:{groups}")
    n, c, rest = self._size[0], self._size[1], list(self._size[2:])
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels "
                           f"and {groups} groups.")
    grouped = _aten.reshape.default._call(self, [n, groups, c // groups] + rest)
    swapped = _aten.transpose.int._call(grouped, 1, 2)
    return _aten.reshape.default._call(swapped, [n, c] + rest)


native_channel_shuffle = channel_shuffle



# -- index_reduce: scatter_reduce with the 1-D index spread over source's other dims ---------
_INDEX_REDUCE = ("prod", "mean", "amax", "amin")
_index_reduce_warned = []


def index_reduce(self, dim, index, source, reduce, include_self=True):
    if not _index_reduce_warned:
        _index_reduce_warned.append(True)
        warnings.warn("index_reduce() is in beta and the API may change at any time.")
    if reduce not in _INDEX_REDUCE:
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or "
                           f"amin but got {reduce}.")
    dim = _wrap(dim, self.dim())
    if index.dim() > 1:
        raise IndexError(f"index_reduce_(): Index is supposed to be a vector, but got dim: "
                         f"{index.dim()} with type: {index._dtype._cpp} and size: "
                         f"[{', '.join(map(str, index._size))}]")
    if index._dtype not in (D.int32, D.int64):
        raise RuntimeError(f"index_reduce_(): Expected dtype int32/int64 for index but got: "
                           f"{index._dtype._cpp}")
    if self._dtype is not source._dtype:
        raise RuntimeError(f"index_reduce_(): self ({self._dtype._cpp}) and source "
                           f"({source._dtype._cpp}) must have the same scalar type")
    n = index.numel()
    if source.dim() and n != source._size[dim]:
        raise RuntimeError(f"index_reduce_(): Number of indices ({n}) should be equal to "
                           f"source.size(dim): ({source._size[dim]}), for dim: {dim}")
    outside = [s for i, s in enumerate(self._size) if i != dim]
    if source.dim() and [s for i, s in enumerate(source._size) if i != dim] != outside:
        raise RuntimeError(f"source tensor shape must match self tensor shape, excluding the "
                           f"specified dimension. Got self.shape = "
                           f"[{', '.join(map(str, self._size))}] source.shape = "
                           f"[{', '.join(map(str, source._size))}]")
    if self.dim() == 0:  # a scalar is a 1-element vector here
        one = _aten.index_reduce.default._call(
            _aten.reshape.default._call(self, [1]), 0, index,
            _aten.reshape.default._call(source, [1]), reduce, include_self)
        return _aten.reshape.default._call(one, [])
    shape = [1] * source.dim()
    shape[dim] = n
    spread = _aten.expand.default._call(_aten.reshape.default._call(index, shape),
                                        list(source._size), False)
    return _aten.scatter_reduce.two._call(self, dim, spread, source, reduce, include_self)


def index_reduce_(self, dim, index, source, reduce, include_self=True):
    return _aten.copy_.default._call(
        self, _aten.index_reduce.default._call(self, dim, index, source, reduce, include_self),
        False)


def _wrap(dim, ndim):
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {dim})")
    return dim % n


# -- _chunk_cat: each tensor cut into num_chunks along dim (zero-padded), chunks side by side --
def _chunk_cat(tensors, dim, num_chunks):
    if num_chunks < 1:
        raise RuntimeError("_chunk_cat expects positive num_chunks")
    if not tensors:
        raise RuntimeError("_chunk_cat expects a non-empty input tensor list")
    first = tensors[0]
    for t in tensors:
        if t.numel() == 0:
            raise RuntimeError("_chunk_cat expects non-empty tensor")
        if t._dtype is not first._dtype:
            raise RuntimeError("_chunk_cat expects all input tensors with the same dtype")
        if t._device != first._device:
            raise RuntimeError("_chunk_cat expects all inputs tensors on the same device")
    if all(t.dim() == first.dim() for t in tensors):
        dim = _wrap(dim, first.dim())
    else:
        if dim < 0:
            raise RuntimeError("_chunk_cat expects non-negative dim when input tensors have "
                               "different ndims")
        if any(dim >= t.dim() for t in tensors):
            raise RuntimeError("_chunk_cat expects dim < ndim for all input tensors")
    lead = list(first._size[:dim])
    if any(list(t._size[:dim]) != lead for t in tensors):
        raise RuntimeError("_chunk_cat expects same sizes of 0,...,dim-1 dimensions for all "
                           "tensors")
    pieces = []
    for t in tensors:
        size = t._size[dim]
        padded = (size + num_chunks - 1) // num_chunks * num_chunks
        if padded != size:
            t = _aten.constant_pad_nd.default._call(
                t, [0, 0] * (t.dim() - dim - 1) + [0, padded - size], 0)
        pieces.append(_aten.reshape.default._call(t, lead + [num_chunks, -1]))
    return _aten.cat.default._call(pieces, dim + 1)


# -- masked indexing (what compiled code emits for bounds-checked gathers and scatters) -------
def _check_masked_index(mask, indices):
    for index in indices:
        if index is not None and index._dtype not in (D.int64, D.int32):
            raise RuntimeError("tensors used as indices must be long or int tensors")
    if mask._dtype is not D.bool_:
        raise RuntimeError("tensors used as masks must be bool tensors")


def _unsafe_masked_index(self, mask, indices, fill):
    """``self[indices]`` where ``mask`` holds and ``fill`` elsewhere; indices are clamped into
    range first, so masked-off positions may hold any value."""
    _check_masked_index(mask, indices)
    if self.numel() == 0:
        shape = _aten.index.Tensor._call(_aten.empty.memory_format._call(
            [max(s, 1) for s in self._size], self._dtype, None, self._device, None, None),
            indices)._size
        return _aten.full.default._call(list(shape), fill, self._dtype, None, self._device, None)
    clamped = [None if ix is None else _aten.clamp.default._call(ix, 0, self._size[i] - 1)
               for i, ix in enumerate(indices)]
    gathered = _aten.index.Tensor._call(self, clamped)
    return _aten.masked_fill.Scalar._call(gathered, _aten.logical_not.default._call(mask), fill)


def _unsafe_masked_index_put_accumulate(self, mask, indices, values):
    """``self.index_put(indices, values, accumulate=True)`` with the values where ``mask``
    is False dropped (indices clamped into range, negative ones kept)."""
    _check_masked_index(mask, indices)
    if self.numel() == 0:
        return _aten.clone.default._call(self, None)
    clamped = [None if ix is None else
               _aten.clamp.default._call(ix, -self._size[i], self._size[i] - 1)
               for i, ix in enumerate(indices)]
    kept = _aten.masked_fill.Scalar._call(values, _aten.logical_not.default._call(mask), 0)
    return _aten.index_put.default._call(self, clamped, kept, True)

__all__ = ["channel_shuffle", "native_channel_shuffle", "unsafe_split_Tensor", "unsafe_split_with_sizes", "unsafe_chunk", "addr", "fill_Scalar", "fill_Tensor", "resolve_neg", "sum_to_size", "nonzero_static",
           "resize_as_", "new_empty_strided", "empty_permuted", "_safe_softmax", "index_reduce",
           "index_reduce_", "_chunk_cat", "_unsafe_masked_index",
           "_unsafe_masked_index_put_accumulate"]
