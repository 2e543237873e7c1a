"""Decompositions added for issue 18, written in ember ops: the unsafe_split/unsafe_chunk family,
addr (beta * self + alpha *
outer(vec1, vec2)), the functional fill, resolve_neg, sum_to_size, nonzero_static, resize_as_,
new_empty_strided, empty_permuted and _safe_softmax."""
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
