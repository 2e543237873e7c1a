"""Stride arithmetic: the one module that knows how sizes, strides and offsets relate.

Every device shares it: view ops, ``is_contiguous`` and the channels-last layouts,
``reshape``'s view-or-copy decision, broadcasting, dimension wrapping and the layout of a
preserve_format or elementwise output all live here (``torch._prims_common`` calls them).
Strides are in elements, as in PyTorch.
"""
from functools import lru_cache

from .symint import hint_int


def contiguous_strides(size):
    try:
        return _contiguous_strides(size)
    except TypeError:  # symbolic sizes (SymInts) are unhashable: computed without the cache
        return _contiguous_strides.__wrapped__(size)


@lru_cache(maxsize=4096)
def _contiguous_strides(size):
    strides = [1] * len(size)
    acc = 1
    for i in range(len(size) - 1, -1, -1):
        strides[i] = acc
        acc *= max(size[i], 1)
    return tuple(strides)


def channels_last_strides(size):
    if len(size) not in (4, 5):
        raise RuntimeError(f"required rank 4 tensor to use channels_last format, got rank "
                           f"{len(size)}")
    return channels_last_order_strides(size)


def channels_last_order_strides(size):
    """Dense strides with C innermost, then the spatial dims from the last, then N (c10's
    get_channels_last_strides_2d/3d, and the rank-3 "channels_last_1d" layout of
    ``_prims_common``). Sizes are not clamped to 1, as in c10."""
    rank = len(size)
    strides = [0] * rank
    acc = 1
    for d in (1, *range(rank - 1, 1, -1), 0):
        strides[d] = acc
        acc *= size[d]
    return tuple(strides)


def numel(size):
    n = 1
    for s in size:
        n *= s
    return n


def is_contiguous(size, stride):
    """PyTorch's rule: dims of size 1 may have any stride; empty tensors are contiguous."""
    if 0 in size:
        return True
    expected = 1
    for sz, st in zip(reversed(size), reversed(stride)):
        if sz == 0:
            return True
        if sz != 1:
            if st != expected:
                return False
            expected *= sz
    return True


def is_channels_last(size, stride):
    """Channels-last contiguity of its rank: NHWC for 4 dims, NDHWC for 5, else False."""
    if len(size) == 4:
        return is_channels_last_contiguous_2d(size, stride)
    return is_channels_last_contiguous_3d(size, stride)


def _dense_in_order(size, stride, order):
    # dims of size 1 may have any stride; unlike contiguity, an empty dim does not end the walk
    # (TensorImpl's compute_channels_last_contiguous_2d/3d)
    expected = 1
    for d in order:
        sz = size[d]
        if sz != 1:
            if stride[d] != expected:
                return False
            expected *= sz
    return True


def is_channels_last_contiguous_2d(size, stride):
    return len(size) == 4 and _dense_in_order(size, stride, (1, 3, 2, 0))


def is_channels_last_contiguous_3d(size, stride):
    return len(size) == 5 and _dense_in_order(size, stride, (1, 4, 3, 2, 0))


def suggests_channels_last(size, stride):
    """PyTorch's ``suggest_memory_format`` is channels_last(_3d): ATen's
    ``is_channels_last_strides_2d``/``_3d``, an order of the strides (C innermost, then W, H,
    (D), N), not a density check; ambiguous cases fall back to contiguous_format as ATen's do."""
    if len(size) not in (4, 5) or stride[1] == 0:
        return False
    floor = 0
    for d in (1, 3, 2, 0) if len(size) == 4 else (1, 4, 3, 2, 0):
        if size[d] == 0 or stride[d] < floor:
            return False
        # N111 with equal strides (a contiguous one, or a slice of N11W): contiguous
        if d == 0 and floor == stride[1]:
            return False
        floor = stride[d] * size[d] if size[d] > 1 else stride[d]
    return True


def is_non_overlapping_and_dense(size, stride):
    if numel(size) == 0:
        return True
    dims = sorted((st, sz) for sz, st in zip(size, stride) if sz != 1)
    expected = 1
    for st, sz in dims:
        if st != expected:
            return False
        expected *= sz
    return True


def storage_extent(size, stride, offset):
    """Number of elements a (size, stride, offset) view needs from its storage."""
    if numel(size) == 0:
        return offset
    return offset + 1 + sum((sz - 1) * st for sz, st in zip(size, stride))


def check_storage_size(size, itemsize):
    """PyTorch's overflow check on a new tensor's byte count (it must fit a signed 64-bit int)."""
    n = itemsize
    for s in size:
        n *= hint_int(s)  # a symbolic size is checked at its example value (no guard)
    if n >= 1 << 63:
        raise RuntimeError(f"Storage size calculation overflowed with sizes="
                           f"[{', '.join(map(str, size))}]")


def wrap_dim(dim, ndim, scalar_ok=True):
    """PyTorch's maybe_wrap_dim: negative dims count from the end; a 0-dim tensor acts as 1-dim."""
    if ndim == 0 and scalar_ok:
        ndim = 1
    if not -ndim <= dim < ndim:
        if ndim == 0:
            raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
        raise IndexError(f"Dimension out of range (expected to be in range of "
                         f"[{-ndim}, {ndim - 1}], but got {dim})")
    return dim + ndim if dim < 0 else dim


def broadcast_shapes(*shapes, _kind="non-singleton"):
    """The broadcast of several shapes, with PyTorch's error naming the first mismatch
    (``_prims_common.infer_size_shapes`` words it a "non-jagged" dimension)."""
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for s in shapes:
        off = ndim - len(s)
        for i, sz in enumerate(s):
            j = off + i
            cur = out[j]
            if cur == sz or sz == 1:
                continue
            if cur == 1:
                out[j] = sz
                continue
            raise RuntimeError(f"The size of tensor a ({cur}) must match the size of tensor b "
                               f"({sz}) at {_kind} dimension {j}")
    return tuple(out)


def infer_size(shape, numel_, invalid_dim=None):
    """Resolve one -1 in a view/reshape shape; PyTorch's errors for bad shapes (ATen's
    infer_size_impl). ``invalid_dim(d, i)`` words the error for a negative size ``d`` at index
    ``i`` (``_prims_common.infer_size`` has its own)."""
    newsize = 1
    infer = None
    for i, s in enumerate(shape):
        if s == -1:
            if infer is not None:
                raise RuntimeError("only one dimension can be inferred")
            infer = i
        elif s >= 0:
            newsize *= s
        else:
            raise RuntimeError(invalid_dim(s, i) if invalid_dim is not None else
                               f"invalid shape dimension {s} at index {i} of shape "
                               f"{_fmt_list(shape)}")
    if infer is None:
        if newsize != numel_:
            raise RuntimeError(f"shape '{_fmt_list(shape)}' is invalid for input of size {numel_}")
        return tuple(shape)
    if newsize == 0 or numel_ % newsize:
        if newsize == 0 and numel_ == 0:
            raise RuntimeError(f"cannot reshape tensor of 0 elements into shape "
                               f"{_fmt_list(shape)} because the unspecified dimension "
                               f"size -1 can be any value and is ambiguous")
        raise RuntimeError(f"shape '{_fmt_list(shape)}' is invalid for input of size {numel_}")
    out = list(shape)
    out[infer] = numel_ // newsize
    return tuple(out)


def compute_view_stride(oldshape, oldstride, newshape):
    """Strides for viewing (oldshape, oldstride) as newshape without copying, or None
    (a port of ATen's computeStride: chunks of contiguous dims may be re-split)."""
    if not oldshape:
        return (1,) * len(newshape)
    try:  # a contiguous tensor (the usual case): any shape of its size views it contiguously
        if _contiguous_strides(tuple(oldshape)) == tuple(oldstride):
            return _contiguous_strides(tuple(newshape))
    except TypeError:  # symbolic sizes are unhashable: the walk
        pass
    return _view_stride_walk(oldshape, oldstride, newshape)


def _view_stride_walk(oldshape, oldstride, newshape):
    n = numel(oldshape)
    if n == 0 and tuple(oldshape) == tuple(newshape):
        return tuple(oldstride)
    newstride = [0] * len(newshape)
    if n == 0:
        return contiguous_strides(tuple(newshape))
    view_d = len(newshape) - 1
    chunk_base_stride = oldstride[-1]
    tensor_numel = 1
    view_numel = 1
    for tensor_d in range(len(oldshape) - 1, -1, -1):
        tensor_numel *= oldshape[tensor_d]
        if tensor_d == 0 or (oldshape[tensor_d - 1] != 1 and
                             oldstride[tensor_d - 1] != tensor_numel * chunk_base_stride):
            while view_d >= 0 and (view_numel < tensor_numel or newshape[view_d] == 1):
                newstride[view_d] = view_numel * chunk_base_stride
                view_numel *= newshape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                chunk_base_stride = oldstride[tensor_d - 1]
                tensor_numel = 1
                view_numel = 1
    if view_d != -1:
        return None
    return tuple(newstride)


def suggest_memory_format_strides(size, stride):
    """Strides for a dense output laid out like the input (PyTorch's preserve_format rule, as
    empty_like, clone and _to_copy apply it): the input's own when it is dense, else dense
    strides in the order of the input's (``infer_dense_strides``)."""
    if is_non_overlapping_and_dense(size, stride):
        return tuple(stride)
    return infer_dense_strides(size, stride)


def reorder_dims(ndim, should_swap):
    """TensorIterator's reorder_dimensions: the dims, innermost first, insertion-sorted from
    the reversed order; ``should_swap(d0, d1)`` is 1 when d0 belongs outside d1, -1 when inside,
    0 when the operands do not tell (the dims then keep their order)."""
    perm = list(range(ndim - 1, -1, -1))
    for i in range(1, ndim):
        dim1 = i
        for dim0 in range(i - 1, -1, -1):
            c = should_swap(perm[dim0], perm[dim1])
            if c > 0:
                perm[dim0], perm[dim1] = perm[dim1], perm[dim0]
                dim1 = dim0
            elif c < 0:
                break
    return perm


def infer_dense_strides(size, stride):
    """Dense strides that keep the order of ``stride`` (ATen's infer_dense_strides): an
    insertion sort of the dims by stride, smaller size first among equal strides, dims of
    stride 0 left where they are (TensorIterator's order)."""
    ndim = len(size)
    if ndim == 0:
        return ()
    if ndim == 1:
        return (1,)

    def should_swap(d0, d1):  # 1: d0 goes after d1, -1: before, 0: ambiguous
        s0, s1 = stride[d0], stride[d1]
        if s0 == 0 or s1 == 0:
            return 0
        if s0 < s1:
            return -1
        if s0 > s1:
            return 1
        return 1 if size[d0] > size[d1] else 0

    perm = reorder_dims(ndim, should_swap)
    out = [0] * ndim
    acc = 1
    for d in perm:
        out[d] = acc
        acc *= max(size[d], 1)
    return tuple(out)


def is_expandable_to(shape, desired):
    """Whether ``shape`` broadcasts to ``desired`` without changing it (ATen's
    is_expandable_to)."""
    if len(shape) > len(desired):
        return False
    for i in range(1, len(shape) + 1):
        if shape[-i] != desired[-i] and shape[-i] != 1:
            return False
    return True


# ---- the layout of an elementwise op's output (TensorIterator's permutation) -----------------

def elementwise_output_perm(shape, strides_list, ambiguity_check=False):
    """(perm, ambiguous): the logical-to-physical permutation of an elementwise output over
    operands of one ``shape`` with the given strides (outermost dim first) — contiguous when
    all are, NHWC when all are channels-last, else an insertion sort of the dims by the
    operands' strides, the first operand deciding, ties and zero strides passed over
    (TensorIterator's reorder_dimensions as ``_prims_common`` states it) — and, with
    ``ambiguity_check``, whether the sort left two neighbouring dims unordered."""
    ndim = len(shape)
    if ndim == 0:
        return [], False
    if ndim == 1:
        return [0], False
    contiguous = all(is_contiguous(shape, st) for st in strides_list)
    channels_last = all(is_channels_last_contiguous_2d(shape, st) for st in strides_list)
    if contiguous and not channels_last:
        return list(range(ndim)), False
    if channels_last and not contiguous:
        return [0, *range(2, ndim), 1], False

    def ge(a, b):  # a >= b for sizes/strides (both >= 0)
        if b == 0:
            return True
        if a == 0:
            return False
        return a >= b or a % b == 0

    def should_swap(da, db):
        for st in strides_list:
            sa, sb = st[da], st[db]
            if sa == 0 or sb == 0:
                continue
            if sa == sb:
                if ge(shape[db], shape[da]):
                    continue
                return 1
            if ge(sb, sa):
                return -1
            if ge(sa, sb):
                return 1
        return 0

    # sorted innermost first, then reversed: the natural order of a permutation is front to back
    perm = reorder_dims(ndim, should_swap)
    ambiguous = ambiguity_check and any(should_swap(perm[i], perm[i + 1]) != -1
                                        for i in range(ndim - 1))
    return list(reversed(perm)), ambiguous


def elementwise_output_strides(shape, strides_list):
    """Dense strides of an elementwise output over operands of one ``shape``: a single
    operand's own when it is dense (else preserve_format's), otherwise contiguous strides in
    the order ``elementwise_output_perm`` gives."""
    ndim = len(shape)
    if ndim == 0:
        return ()
    if ndim == 1:
        return (1,)
    if len(strides_list) == 1:
        return suggest_memory_format_strides(shape, strides_list[0])
    perm, _ = elementwise_output_perm(shape, strides_list)
    physical = contiguous_strides(tuple(shape[d] for d in perm))
    out = [0] * ndim
    for i, d in enumerate(perm):
        out[d] = physical[i]
    return tuple(out)


# ---- view geometry: (sizes, strides) of a view of (size, stride), PyTorch's rules -------------

def _fmt_list(xs):
    return "[" + ", ".join(map(str, xs)) + "]"


def expand_geometry(size, stride, target):
    """ATen's inferExpandGeometry: sizes/strides of ``expand(target)``; a new or size-1 dim gets
    stride 0, -1 keeps an existing size."""
    ndim, tdim = len(size), len(target)
    out_size, out_stride = [0] * tdim, [0] * tdim
    for i in range(tdim - 1, -1, -1):
        offset = tdim - 1 - i
        d = ndim - 1 - offset
        sz = size[d] if d >= 0 else 1
        st = stride[d] if d >= 0 else out_size[i + 1] * out_stride[i + 1] if i + 1 < tdim else 1
        t = target[i]
        if t == -1:
            if d < 0:
                raise RuntimeError(f"The expanded size of the tensor (-1) isn't allowed in a "
                                   f"leading, non-existing dimension {i}")
            t = sz
        if sz != t:
            if sz != 1:
                raise RuntimeError(f"The expanded size of the tensor ({t}) must match the existing "
                                   f"size ({sz}) at non-singleton dimension {i}.  Target sizes: "
                                   f"{_fmt_list(target)}.  Tensor sizes: {_fmt_list(size)}")
            st = 0
        if t < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {t}: "
                               f"{_fmt_list(target)}")
        out_size[i], out_stride[i] = t, st
    return tuple(out_size), tuple(out_stride)


def diagonal_geometry(size, stride, offset, dim1, dim2):
    """Sizes, strides and the storage-offset shift of ``diagonal(offset, dim1, dim2)``: both dims
    are removed and one of stride ``stride[dim1] + stride[dim2]`` is appended."""
    if offset >= 0:
        n = max(min(size[dim1], size[dim2] - offset), 0)
        shift = offset * stride[dim2] if n else 0
    else:
        n = max(min(size[dim1] + offset, size[dim2]), 0)
        shift = -offset * stride[dim1] if n else 0
    keep = [d for d in range(len(size)) if d not in (dim1, dim2)]
    return (tuple(size[d] for d in keep) + (n,),
            tuple(stride[d] for d in keep) + (stride[dim1] + stride[dim2],), shift)


def unfold_geometry(size, stride, dim, width, step):
    """``unfold(dim, width, step)``: dim becomes the window count (stride * step) and a last dim
    of ``width`` with the old stride is appended. A 0-dim tensor acts as size 1."""
    if not size:
        return (width,), (1,)
    new_size, new_stride = list(size), list(stride)
    new_size[dim] = (size[dim] - width) // step + 1
    new_stride[dim] = stride[dim] * step
    return tuple(new_size) + (width,), tuple(new_stride) + (stride[dim],)


def dtype_view_geometry(size, stride, offset, ratio_num, ratio_den, describe):
    """Reinterpret elements as ones ``ratio_den / ratio_num`` times as wide (``view(dtype)``).

    One of the ratios is 1. Shrinking (ratio_num > 1) splits the last dim; growing (ratio_den > 1)
    merges it and needs every other stride, the last size and the offset divisible. ``describe``
    ends PyTorch's messages ("to view Float as Double (different element sizes)")."""
    if not size:
        raise RuntimeError(f"self.dim() cannot be 0 {describe}")
    if ratio_num > 1:
        if stride[-1] != 1:
            raise RuntimeError(f"self.stride(-1) must be 1 {describe}, but got {stride[-1]}")
        r = ratio_num
        return (size[:-1] + (size[-1] * r,), tuple(s * r for s in stride[:-1]) + (1,), offset * r)
    r = ratio_den
    if size[-1] % r:
        raise RuntimeError(f"self.size(-1) must be divisible by {r} {describe}, but got {size[-1]}")
    if offset % r:
        raise RuntimeError(f"self.storage_offset() must be divisible by {r} {describe}, but got "
                           f"{offset}")
    if stride[-1] != 1:
        raise RuntimeError(f"self.stride(-1) must be 1 {describe}, but got {stride[-1]}")
    for d, s in enumerate(stride[:-1]):
        if s % r:
            raise RuntimeError(f"self.stride({d}) must be divisible by {r} {describe}, but got {s}")
    return (size[:-1] + (size[-1] // r,), tuple(s // r for s in stride[:-1]) + (1,), offset // r)
