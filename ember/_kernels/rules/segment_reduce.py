"""Rules of aten ``segment_reduce`` and ``_segment_reduce_backward`` (ATen's SegmentReduce.cpp),
for every backend: argument checks, the reduction's name, the output shape. Segments run along
``axis``; ``lengths`` (or ``offsets``, one longer) has data's leading dims and one segment axis
last. Imports no backend."""
from ..._core import dtype as D
from ..._core.strides import wrap_dim

_REDUCTIONS = {"max": "max", "amax": "max", "min": "min", "amin": "min", "mean": "mean",
               "sum": "sum", "prod": "prod"}


def reduction(reduce):
    """ATen's get_reduction_enum: the canonical reduction (amax/amin are max/min)."""
    try:
        return _REDUCTIONS[reduce]
    except KeyError:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce}") from None


def _check_true(cond, text):
    if not cond:
        raise RuntimeError(f"Expected {text} to be true, but got false.  (Could this error "
                           f"message be improved?  If so, please report an enhancement request "
                           f"to PyTorch.)")


def check_segment_reduce(data, reduce, lengths, indices, offsets, axis):
    """segment_reduce's checks; returns (reduction, wrapped axis, segments tensor, is_offsets,
    output shape). The per-row sums of ``lengths`` (a data-dependent check) are the backends'."""
    axis = wrap_dim(axis, len(data._size))
    if indices is not None:
        raise RuntimeError("segment_reduce(): indices based reduction is not supported yet.")
    if lengths is None and offsets is None:
        raise RuntimeError("segment_reduce(): Either lengths or offsets must be defined.")
    red = reduction(reduce)
    seg, is_offsets = (offsets, True) if offsets is not None else (lengths, False)
    what = "offsets" if is_offsets else "lengths"
    _check_true(len(data._size) >= len(seg._size), f"data.dim() >= {what}_value.dim()")
    if axis != len(seg._size) - 1:
        raise RuntimeError(f"segment_reduce(): Expected axis to be the last dimension of {what} "
                           f"but got {axis}.")
    # ATen reads lengths/offsets row by row over data's leading dims (unchecked there: a
    # mismatch reads out of bounds)
    if tuple(seg._size[:-1]) != tuple(data._size[:axis]):
        raise RuntimeError(f"segment_reduce(): Expected the leading dims of {what} "
                           f"{list(seg._size[:-1])} to match data's {list(data._size[:axis])}")
    if not (data._dtype.is_floating_point):
        raise NotImplementedError(f"\"_segment_reduce_cpu\" not implemented for "
                                  f"'{data._dtype._short}'")
    if seg._dtype not in (D.int32, D.int64):
        kernel = "_segment_reduce_cpu_kernel1" if is_offsets else \
            "_segment_reduce_lengths_cpu_kernel1"
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{seg._dtype._short}'")
    count = seg._size[-1] - 1 if is_offsets else seg._size[-1]
    shape = list(data._size)
    shape[axis] = max(count, 0)
    return red, axis, seg, is_offsets, tuple(shape)


def check_segment_reduce_backward(grad, output, data, reduce, lengths, offsets, axis):
    """_segment_reduce_backward's checks; returns what check_segment_reduce does."""
    res = check_segment_reduce(data, reduce, lengths, None, offsets, axis)
    for t in (grad, output):
        if t._dtype is not data._dtype:
            raise RuntimeError(f"expected scalar type {data._dtype._short} but found "
                               f"{t._dtype._short}")
        if tuple(t._size) != res[-1]:
            raise RuntimeError(f"_segment_reduce_backward(): Expected grad and output of size "
                               f"{list(res[-1])}, but got {list(t._size)}")
    return res
