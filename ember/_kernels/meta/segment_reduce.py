"""Meta kernels of segment_reduce and _segment_reduce_backward: the rules' shapes, no data."""
from ..._core.device import META
from ..._tensor import empty_tensor
from ..rules import segment_reduce as _s


def meta_segment_reduce(data, reduce, lengths=None, indices=None, offsets=None, axis=0,
                        unsafe=False, initial=None):
    shape = _s.check_segment_reduce(data, reduce, lengths, indices, offsets, axis)[-1]
    return empty_tensor(shape, data._dtype, META)


def meta_segment_reduce_backward(grad, output, data, reduce, lengths=None, offsets=None, axis=0,
                                 initial=None):
    _s.check_segment_reduce_backward(grad, output, data, reduce, lengths, offsets, axis)
    return empty_tensor(data._size, data._dtype, META)
