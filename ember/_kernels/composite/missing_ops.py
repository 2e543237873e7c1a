"""Decompositions added for issue 18, written in ember ops: the unsafe_split/unsafe_chunk family,
addr (beta * self + alpha * outer(vec1, vec2)), addmv_, the functional fill, resolve_neg,
is_neg, sum_to_size, nonzero_static, resize_as_, fill_diagonal_, new_empty_strided,
empty_permuted, _safe_softmax, index_reduce, _chunk_cat and the masked ``_unsafe_*`` indexing
ops."""
import builtins
import math
import warnings

from ..._core import dtype as D
from ..._core import strides as _st
from ..._ops.overload import ops
from ..._core.tensor_impl import NEGATIVE, make_tensor
from ..._core.promotion import result_type_of
from ..rules.shape import check_index_reduce_dtype
from ..rules.unsigned import BAREBONES as _BAREBONES

_aten = ops.aten


def addr(self, vec1, vec2, beta=1, alpha=1):
    """ATen's CPU addr: the 1-d checks, self expanded to the outer product's shape, the three
    tensors promoted to their common dtype (whose dispatch, "addr_cpu", lacks complex32, float8
    and the barebones unsigned types), beta and alpha checked against it; bool computes
    ``(beta and self) or (alpha and vec1 and vec2)``."""
    for name, v in (("vec1", vec1), ("vec2", vec2)):
        if v.dim() != 1:
            raise RuntimeError(f"addr: Expected 1-D argument {name}, but got {v.dim()}-D")
    self = _aten.expand.default._call(self, [vec1._size[0], vec2._size[0]], False)
    dt = result_type_of((self, vec1, vec2))
    for name, scalar in (("beta", beta), ("alpha", alpha)):
        if scalar.__class__ is bool and dt is not D.bool_:
            raise RuntimeError(f"Boolean {name} only supported for Boolean results.")
        if dt._category <= D.INTEGRAL and not isinstance(scalar, int):
            raise RuntimeError(f"For integral input tensors, argument {name} must not be a "
                               f"floating point number.")
    if self._device.type == "cpu" and (dt is D.complex32 or dt in D.FLOAT8 or dt in _BAREBONES):
        raise NotImplementedError(f'"addr_cpu" not implemented for \'{dt._short}\'')
    outer = _aten.outer.default._call(vec1, vec2)
    if dt is D.bool_:
        if not alpha:
            outer = _aten.zeros_like.default._call(outer, None, None, None, None, None)
        return _aten.logical_or.default._call(self, outer) if beta else outer
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
    if not self._keyset & NEGATIVE:
        return self
    return _aten.clone.default._call(self, None)  # (clone writes the values: copy_ resolves)


def is_neg(self):
    return bool(self._keyset & NEGATIVE)


def addmv_(self, mat, vec, beta=1, alpha=1):
    """PyTorch declares addmv_ a function too; the addmv result written into self."""
    result = _aten.addmv.default._call(self, mat, vec, beta, alpha)
    if tuple(result._size) != tuple(self._size):
        raise RuntimeError(f"Bad in-place call: input tensor size {list(self._size)} and "
                           f"output tensor size {list(result._size)} should match")
    if self.dim() == 1 and self._stride[0] == 0 and self._size[0] > 1:
        # ATen's addmv_ hands an expanded self to gemv as y with increment 0 (no overlap check)
        from .. import generic
        acc = generic.accumulate_shared(self, _aten.mv.default._call(mat, vec), beta, alpha)
        _aten.copy_.default._call(_aten.narrow.default._call(self, 0, 0, 1), acc, False)
        return self
    return _aten.copy_.default._call(self, result, False)


def sum_to_size(self, size):
    size = tuple(size)
    shape = tuple(self._size)
    lead = len(shape) - len(size)
    ok = lead >= 0 and all(s == 1 or s == t for s, t in zip(size, shape[lead:]))
    if not ok:
        raise RuntimeError(f"size {{[{', '.join(map(str, size))}]}} is not expandable to size "
                           f"{{[{', '.join(map(str, shape))}]}}.")
    if not size:  # ATen's sum_to sums to a scalar here even when self is one (ints promote)
        return _aten.sum.default._call(self, None)
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
    """resize_ to the template's sizes in ``memory_format``, preserve_format meaning the
    template's suggested one (ATen's resize_ then restride)."""
    if memory_format is not None and memory_format._name == "preserve_format":
        from .conversions import _suggest_memory_format
        memory_format = _suggest_memory_format(the_template)
    return _aten.resize_.default._call(self, list(the_template._size), memory_format)


def fill_diagonal_(self, fill_value, wrap=False):
    """ATen's: the main diagonal (every dim's index equal) is one strided view filled; with
    ``wrap``, a tall matrix's diagonal starts again every ``width + 1`` rows."""
    n = self.dim()
    if n < 2:
        raise RuntimeError("dimensions must larger than 1")
    height, width = self._size[0], self._size[1]
    if n > 2 and any(s != height for s in self._size[1:]):
        raise RuntimeError("all dimensions of input must be of equal length")
    size, stride = min(height, width), sum(self._stride)
    _aten.fill_.Scalar._call(_aten.as_strided.default._call(self, [size], [stride],
                                                            self._offset), fill_value)
    if wrap and n == 2 and height > width + 1:
        step = width + 1
        wrapped = (self.numel() + step - 1) // step - size
        _aten.fill_.Scalar._call(_aten.as_strided.default._call(
            self, [wrapped], [stride], self._offset + self._stride[0] * step), fill_value)
    return self


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
    dim = _st.wrap_dim(dim, self.dim())
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
    check_index_reduce_dtype(self)
    if self.dim() == 0:  # a scalar is a 1-element vector here
        one = _aten.index_reduce.default._call(
            _aten.reshape.default._call(self, [1]), 0, index,
            _aten.reshape.default._call(source, [1]), reduce, include_self)
        return _aten._unsafe_view.default._call(one, [])  # (a new tensor, as ATen's)
    if self._dtype in D.FLOAT8:
        # ATen's index_reduce kernel multiplies float8 (as float, rounding back), but its
        # mean/amax/amin reach add/maximum/minimum, which have no float8 kernel; scatter_reduce
        # has none at all, so prod runs in float32 here
        if reduce != "prod":
            kernel = {"mean": "add_stub", "amax": "maximum_cpu", "amin": "minimum_cpu"}[reduce]
            raise NotImplementedError(f'"{kernel}" not implemented for \'{self._dtype._short}\'')
        wide = [_aten._to_copy.default._call(t, D.float32, None, None, None, False, None)
                for t in (self, source)]
        return _aten._to_copy.default._call(
            index_reduce(wide[0], dim, index, wide[1], reduce, include_self), self._dtype,
            None, None, None, False, None)
    shape = [1] * source.dim()
    shape[dim] = n
    spread = _aten.expand.default._call(_aten.reshape.default._call(index, shape),
                                        list(source._size), False)
    return _aten.scatter_reduce.two._call(self, dim, spread, source, reduce, include_self)


def index_reduce_(self, dim, index, source, reduce, include_self=True):
    return _aten.copy_.default._call(
        self, _aten.index_reduce.default._call(self, dim, index, source, reduce, include_self),
        False)


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
        dim = _st.wrap_dim(dim, first.dim())
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


# -- gradient: central differences inside, one-sided (first or second order) at the edges ----
def _check_gradient(self, spacing_size, dims, edge_order):
    if self._dtype is D.uint8:
        raise RuntimeError("torch.gradient does not support uint8 input.")
    if spacing_size is not None and dims is None and spacing_size != self.dim():
        raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar, or a "
                           f"list of length equal to 'self.dim() = {self.dim()}', since dim "
                           f"argument was not given, but got a list of length {spacing_size}")
    if spacing_size is not None and dims is not None and spacing_size != len(dims):
        raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar or it's "
                           f"spacing and dim arguments to have the same length, but got a spacing "
                           f"argument of length {spacing_size} and a dim argument of length "
                           f"{len(dims)}.")
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    if dims is not None:
        seen = set()
        for d in dims:
            w = _st.wrap_dim(d, self.dim())
            if w in seen:
                raise RuntimeError(f"dim {w} appears multiple times in the list of dims")
            seen.add(w)
    for d in (range(self.dim()) if dims is None else dims):
        if self._size[d] < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least "
                               "edge_order+1")


def _slice(t, d, start, end=None):
    return _aten.slice.Tensor._call(t, d, start, end, 1)


def _gradient_uniform(self, spacing, dims, edge_order):
    """Scalar spacing per dim (ATen's ``gradient_helper_float``)."""
    out = []
    for d, h in zip(dims, spacing):
        d = _st.wrap_dim(d, self.dim())
        sub, mul = _aten.sub.Tensor._call, _aten.mul.Tensor._call

        def term(c, a, b=None):
            return mul(_slice(self, d, a, b), c)
        center = sub(_slice(self, d, 2), _slice(self, d, 0, -2), 1)
        if edge_order == 1:
            first = sub(_slice(self, d, 1, 2), _slice(self, d, 0, 1), 1)
            last = sub(_slice(self, d, -1), _slice(self, d, -2, -1), 1)
        else:
            first = _aten.add.Tensor._call(sub(term(-1.5, 0, 1), term(-2, 1, 2), 1),
                                           term(-0.5, 2, 3), 1)
            last = _aten.add.Tensor._call(sub(term(0.5, -3, -2), term(2, -2, -1), 1),
                                          term(1.5, -1), 1)
        parts = [_aten.div.Tensor._call(first, h), _aten.div.Tensor._call(
            _aten.div.Tensor._call(center, 2), h), _aten.div.Tensor._call(last, h)]
        out.append(_aten.cat.default._call(parts, d))
    return out


def _gradient_coordinates(self, coordinates, dims, edge_order):
    """Coordinates per dim: non-uniform second-order differences (ATen's ``gradient_helper``)."""
    for c in coordinates:
        if c._device != self._device:
            raise RuntimeError(f"torch.gradient expected each tensor to be on the same device, "
                               f"but got devices {self._device} and {c._device}!")
    add, sub, mul, div = (_aten.add.Tensor._call, _aten.sub.Tensor._call,
                          _aten.mul.Tensor._call, _aten.div.Tensor._call)
    out = []
    for d, coords in zip(dims, coordinates):
        if coords.dim() != 1:
            raise RuntimeError(f"torch.gradient expected each element of spacing to have one "
                               f"dimension, but got an element with {coords.dim()} dimensions!")
        d = _st.wrap_dim(d, self.dim())
        shape = [1] * self.dim()
        shape[d] = -1
        dx = _aten.diff.default._call(coords, 1, 0, None, None)
        dx1, dx2 = _slice(dx, 0, 0, -1), _slice(dx, 0, 1)

        def along(t):
            return _aten.reshape.default._call(t, shape)
        a = along(div(mul(dx2, -1), mul(dx1, add(dx1, dx2, 1))))
        b = along(div(sub(dx2, dx1, 1), mul(dx1, dx2)))
        c = along(div(dx1, mul(dx2, add(dx1, dx2, 1))))
        center = add(add(mul(a, _slice(self, d, 0, -2)), mul(b, _slice(self, d, 1, -1)), 1),
                     mul(c, _slice(self, d, 2)), 1)
        h0, h1 = _aten.select.int._call(dx, 0, 0), _aten.select.int._call(dx, 0, 1)
        hl, hm = _aten.select.int._call(dx, 0, -1), _aten.select.int._call(dx, 0, -2)
        if edge_order == 1:
            first = div(sub(_slice(self, d, 1, 2), _slice(self, d, 0, 1), 1), h0)
            last = div(sub(_slice(self, d, -1), _slice(self, d, -2, -1), 1), hl)
        else:
            s01, sml = add(h0, h1, 1), add(hl, hm, 1)
            ca = div(mul(add(mul(h0, 2.0), h1, 1), -1), mul(h0, s01))
            cb = div(s01, mul(h0, h1))
            cc = div(mul(h0, -1), mul(h1, s01))
            first = add(add(mul(ca, _slice(self, d, 0, 1)), mul(cb, _slice(self, d, 1, 2)), 1),
                        mul(cc, _slice(self, d, 2, 3)), 1)
            ca = div(hl, mul(hm, sml))
            cb = div(mul(sml, -1), mul(hl, hm))
            cc = div(add(mul(hl, 2), hm, 1), mul(hl, sml))
            last = add(add(mul(ca, _slice(self, d, -3, -2)), mul(cb, _slice(self, d, -2, -1)), 1),
                       mul(cc, _slice(self, d, -1)), 1)
        out.append(_aten.cat.default._call([first, center, last], d))
    return out


def _all_dims(self, dim):
    return list(range(self.dim())) if dim is None else [dim]


def gradient_scalarint(self, spacing=None, dim=None, edge_order=1):
    dims = _all_dims(self, dim)
    steps = [1.0 if spacing is None else spacing] * len(dims)
    _check_gradient(self, None if spacing is None else len(steps),
                    None if dim is None else dims, edge_order)
    return _gradient_uniform(self, steps, dims, edge_order)


def gradient_scalararray(self, spacing, dim, edge_order=1):
    _check_gradient(self, len(dim), dim, edge_order)
    return _gradient_uniform(self, [spacing] * len(dim), dim, edge_order)


def gradient_array(self, dim, edge_order=1):
    _check_gradient(self, len(dim), dim, edge_order)
    return _gradient_uniform(self, [1.0] * len(dim), dim, edge_order)


def gradient_scalarrayint(self, spacing, dim=None, edge_order=1):
    dims = _all_dims(self, dim)
    _check_gradient(self, len(spacing), None if dim is None else dims, edge_order)
    return _gradient_uniform(self, spacing, dims, edge_order)


def gradient_scalarrayarray(self, spacing, dim, edge_order=1):
    _check_gradient(self, len(spacing), dim, edge_order)
    return _gradient_uniform(self, spacing, dim, edge_order)


def gradient_tensorarrayint(self, spacing, dim=None, edge_order=1):
    dims = _all_dims(self, dim)
    _check_gradient(self, len(spacing), None if dim is None else dims, edge_order)
    return _gradient_coordinates(self, spacing, dims, edge_order)


def gradient_tensorarray(self, spacing, dim, edge_order=1):
    _check_gradient(self, len(spacing), dim, edge_order)
    return _gradient_coordinates(self, spacing, dim, edge_order)



# -- histogram / histogramdd (ATen's HistogramKernel.cpp, in ember ops) ---------------------------
# Bin edges are given tensors or linspace over [min, max] of each column (or ``range``; an empty
# range widened by +-0.5 as NumPy does); an element falls in bin upper_bound(edges, x) - 1, the
# last edge belonging to the last bin, and elements outside [edges[0], edges[-1]] (NaN too) are
# dropped.

def _fmt_double(v):
    return f"{v:g}"  # C++ ostream's default formatting of a double


def _histogramdd_check_inputs(self, bins, weight):
    """ATen's histogramdd_check_inputs; ``bins`` is a list of edge tensors or None."""
    if self.dim() < 2:
        raise RuntimeError("torch.histogramdd: input tensor should have at least 2 dimensions")
    n = self._size[-1]
    if bins is not None:
        if len(bins) != n:
            raise RuntimeError(f"torch.histogramdd: expected {n} sequences of bin edges for a "
                               f"{n}-dimensional histogram but got {len(bins)}")
        for d, b in enumerate(bins):
            if b._dtype is not self._dtype:
                raise RuntimeError(
                    f"torch.histogramdd: input tensor and bins tensors should have the same "
                    f"dtype, but got input with dtype {self._dtype._cpp} and bins for "
                    f"dimension {d} with dtype {b._dtype._cpp}")
            if b.dim() != 1:
                raise RuntimeError(f"torch.histogramdd: bins tensor should have one dimension, "
                                   f"but got {b.dim()} dimensions in the bins tensor for "
                                   f"dimension {d}")
            if b.numel() == 0:
                raise RuntimeError(f"torch.histogramdd: bins tensor should have at least 1 "
                                   f"element, but got 0 elements in the bins tensor for "
                                   f"dimension {d}")
    if weight is not None:
        if weight._dtype is not self._dtype:
            raise RuntimeError(f"torch.histogramdd: if weight tensor is provided, it should have "
                               f"the same dtype as the input tensor, but got weight with dtype "
                               f"{weight._dtype._cpp} and input with dtype {self._dtype._cpp}")
        if tuple(weight._size) != tuple(self._size[:-1]):
            raise RuntimeError(
                f"torch.histogramdd: if weight tensor is provided it should have the same shape "
                f"as the input tensor excluding its innermost dimension, but got input with "
                f"shape [{', '.join(map(str, self._size))}] and weight with shape "
                f"[{', '.join(map(str, weight._size))}]")
    if self._dtype not in (D.float32, D.float64):
        raise NotImplementedError(f"\"histogramdd\" not implemented for '{self._dtype._short}'")


def _outer_bin_edges(x, range):
    """ATen's select_outer_bin_edges: per-column (leftmost, rightmost) as Python floats."""
    n = x._size[-1]
    if range is not None:
        if len(range) != 2 * n:
            raise RuntimeError(f"torch.histogramdd: for a {n}-dimensional histogram range should "
                               f"have {2 * n} elements, but got {len(range)}")
        lo, hi = [float(v) for v in range[0::2]], [float(v) for v in range[1::2]]
    elif x.numel() > 0:
        mn, mx = _aten.aminmax.default._call(x, 0, False)
        lo, hi = mn.tolist(), mx.tolist()
    else:
        lo, hi = [0.0] * n, [1.0] * n
    for d in builtins.range(n):
        if not (math.isfinite(lo[d]) and math.isfinite(hi[d])):
            raise RuntimeError(f"torch.histogramdd: dimension {d}'s range "
                               f"[{_fmt_double(lo[d])}, {_fmt_double(hi[d])}] is not finite")
        if lo[d] > hi[d]:
            raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min "
                               f"{_fmt_double(lo[d])} max {_fmt_double(hi[d])} for dimension {d}")
        if lo[d] == hi[d]:
            lo[d] -= 0.5
            hi[d] += 0.5
    return lo, hi


def _check_bin_cts(x, bins):
    if len(bins) != x._size[-1]:
        raise RuntimeError("histogramdd: The size of bins must be equal to the innermost "
                           "dimension of the input.")
    for d, ct in enumerate(bins):
        if ct <= 0:
            raise RuntimeError(f"torch.histogramdd(): bins must be > 0, but got {ct} for "
                               f"dimension {d}")


def _edges_from_cts(x, bins, range):
    lo, hi = _outer_bin_edges(x, range)
    return [_aten.linspace.default._call(lo[d], hi[d], ct + 1, x._dtype, None, x._device, None)
            for d, ct in enumerate(bins)]


def _histogramdd_counts(x, edges, weight, density):
    """The histogram of the rows of ``x`` (M, N) over the N edge tensors."""
    import ember
    shape = [e.numel() - 1 for e in edges]
    flat_w = None if weight is None else weight.reshape(-1)
    hist = ember.zeros(shape, dtype=x.dtype, device=x.device)
    if hist.numel() == 0 or x._size[0] == 0:
        keep = None
    else:
        keep = ember.ones(x._size[0], dtype=ember.bool, device=x.device)
        lin = ember.zeros(x._size[0], dtype=ember.int64, device=x.device)
        for d, e in enumerate(edges):
            col = x.select(1, d).contiguous()
            pos = ember.searchsorted(e, col, right=True) - 1
            pos = pos.clamp(0, e.numel() - 2)  # x == last edge: the last bin
            keep = keep & (col >= e[0]) & (col <= e[-1])
            lin = lin * shape[d] + pos
        values = flat_w[keep] if flat_w is not None else \
            ember.ones(int(keep.sum()), dtype=x.dtype, device=x.device)
        # (ATen fills a new histogram: an _unsafe_view of the flat sum, not a view of it)
        hist = _aten._unsafe_view.default._call(hist.reshape(-1).index_add(0, lin[keep], values),
                                                shape)
    if density:
        hist = hist / hist.sum().item()
        for d, e in enumerate(edges):
            view = [1] * len(edges)
            view[d] = shape[d]
            hist = hist / e.diff().reshape(view)
    return hist


def _histogramdd_bin_edges(self, bins, range=None, weight=None, density=False):
    _histogramdd_check_inputs(self, None, weight)
    x = self.reshape(-1, self._size[-1])
    _check_bin_cts(x, bins)
    return _edges_from_cts(x, bins, range)


def _histogramdd_from_bin_cts(self, bins, range=None, weight=None, density=False):
    _histogramdd_check_inputs(self, None, weight)
    x = self.reshape(-1, self._size[-1])
    _check_bin_cts(x, bins)
    return _histogramdd_counts(x, _edges_from_cts(x, bins, range), weight, density)


def _histogramdd_from_bin_tensors(self, bins, weight=None, density=False):
    _histogramdd_check_inputs(self, bins, weight)
    return _histogramdd_counts(self.reshape(-1, self._size[-1]), bins, weight, density)


def histogramdd(self, bins, range=None, weight=None, density=False):
    edges = _histogramdd_bin_edges(self, bins, range, weight, density)
    hist = _histogramdd_from_bin_tensors(self, edges, weight, density)
    return hist, edges


def histogramdd_int_bins(self, bins, range=None, weight=None, density=False):
    return histogramdd(self, [bins] * (self._size[-1] if self.dim() else 1), range, weight,
                       density)


def histogramdd_TensorList_bins(self, bins, range=None, weight=None, density=False):
    return _histogramdd_from_bin_tensors(self, bins, weight, density), list(bins)


def _as_columns(self, weight):
    """histogram is histogramdd of the flattened input as one column."""
    return self.reshape(-1, 1), None if weight is None else weight.reshape(-1)


def histogram_bins_tensor(self, bins, weight=None, density=False):
    x, w = _as_columns(self, weight)
    hist = _histogramdd_from_bin_tensors(x, [bins], w, density)
    return hist, bins.clone()


def histogram_bin_ct(self, bins=100, range=None, weight=None, density=False):
    x, w = _as_columns(self, weight)
    edges = _histogramdd_bin_edges(x, [bins], range, w, density)
    return _histogramdd_from_bin_tensors(x, edges, w, density), edges[0]
