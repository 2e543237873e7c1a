"""Tensor predicates and metadata (``numel``, ``is_floating_point``, ``is_nonzero``,
``result_type`` ...): CompositeImplicitAutograd kernels, as in PyTorch."""
from ..._core import dtype as D
from ..._ops.overload import ops

_aten = ops.aten


def numel(self):
    return self.numel()


def sym_size_int(self, dim):
    return self.size(dim)


def sym_stride_int(self, dim):
    return self.stride(dim)


def sym_numel(self):
    return self.numel()


def _shape_as_tensor(self):
    from ..._factories import tensor
    return tensor(tuple(self.shape), dtype=D.int64)


def is_floating_point(self):
    return self.dtype.is_floating_point


def is_complex(self):
    return self.dtype.is_complex


def is_signed(self):
    return self.dtype.is_signed


def is_inference(self):
    return self.is_inference()


def is_nonzero(self):
    n = self.numel()
    if n == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if n > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(_aten.item.default._call(self))


def is_same_size(self, other):
    return tuple(self.shape) == tuple(other.shape)


def _result_type(*operands):
    from ..._core.promotion import result_type_of
    return result_type_of(operands)


result_type_Tensor = result_type_Scalar = result_type_Scalar_Tensor = _result_type
result_type_Scalar_Scalar = _result_type


def broadcast_tensors(tensors):
    from ..._core.strides import broadcast_shapes
    shape = tuple(broadcast_shapes(*[tuple(t.shape) for t in tensors]))
    # (ATen's expand_outplace: a tensor already of the shape is returned itself)
    return [t if tuple(t._size) == shape else _aten.expand.default._call(t, list(shape), False)
            for t in tensors]
