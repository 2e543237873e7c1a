"""Stride arithmetic: the one module that knows how sizes, strides and offsets relate.

Every device shares it: view ops, ``is_contiguous``, ``reshape``'s view-or-copy decision,
broadcasting and dimension wrapping all live here. Strides are in elements, as in PyTorch.
"""
from functools import lru_cache


@lru_cache(maxsize=4096)
def contiguous_strides(size):
    strides = [1] * len(size)
    acc = 1
    for i in range(len(size) - 1, -1, -1):
        strides[i] = acc
        acc *= max(size[i], 1)
    return tuple(strides)


def channels_last_strides(size):
    if len(size) == 4:
        n, c, h, w = size
        return (h * w * c, 1, w * c, c)
    if len(size) == 5:
        n, c, d, h, w = size
        return (d * h * w * c, 1, h * w * c, w * c, c)
    raise RuntimeError(f"required rank 4 tensor to use channels_last format, got rank {len(size)}")


def numel(size):
    n = 1
    for s in size:
        n *= s
    return n


def is_contiguous(size, stride):
    """PyTorch's rule: dims of size 1 may have any stride; empty tensors are contiguous."""
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
    if len(size) not in (4, 5):
        return False
    order = [1] + list(range(len(size) - 1, 1, -1)) + [0]  # C, W, H, (D), N: innermost first
    expected = 1
    for d in order:
        sz = size[d]
        if sz == 0:
            return True
        if sz != 1:
            if stride[d] != expected:
                return False
            expected *= sz
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


def broadcast_shapes(*shapes):
    """The broadcast of several shapes, with PyTorch's error naming the first mismatch."""
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
                               f"({sz}) at non-singleton dimension {i}")
    return tuple(out)


def infer_size(shape, numel_):
    """Resolve one -1 in a view/reshape shape; PyTorch's errors for bad shapes."""
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
            raise RuntimeError(f"invalid shape dimension {s}")
    if infer is None:
        if newsize != numel_:
            raise RuntimeError(f"shape '[{', '.join(map(str, shape))}]' is invalid for input of size {numel_}")
        return tuple(shape)
    if newsize == 0 or numel_ % newsize:
        if newsize == 0:
            raise RuntimeError(f"cannot reshape tensor of 0 elements into shape "
                               f"[{', '.join(map(str, shape))}] because the unspecified dimension "
                               f"size -1 can be any value and is ambiguous")
        raise RuntimeError(f"shape '[{', '.join(map(str, shape))}]' is invalid for input of size {numel_}")
    out = list(shape)
    out[infer] = numel_ // newsize
    return tuple(out)


def compute_view_stride(oldshape, oldstride, newshape):
    """Strides for viewing (oldshape, oldstride) as newshape without copying, or None
    (a port of ATen's computeStride: chunks of contiguous dims may be re-split)."""
    if not oldshape:
        return (1,) * len(newshape)
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
    """Strides for a dense output laid out like the input (PyTorch's preserve_format rule)."""
    if is_non_overlapping_and_dense(size, stride):
        return tuple(stride)
    if is_channels_last(size, stride) and len(size) == 4:
        return channels_last_strides(size)
    return contiguous_strides(tuple(size))
