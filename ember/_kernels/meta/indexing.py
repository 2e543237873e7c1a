"""Meta kernels of advanced indexing (``index.Tensor``, ``_index_put_impl_``), and the shape
rules and checks the CPU kernels share: which index tensors are valid, how bool masks expand,
how the advanced indices broadcast and where their dims land in the result."""
from ..._core.device import META
from ..._core.tensor_impl import empty_tensor
from ..rules.indexing import check_index_put, index_shape


def meta_index_Tensor(self, indices):
    return empty_tensor(index_shape(self, indices), self._dtype, META)


def meta_index_put_impl_(self, indices, values, accumulate=False, unsafe=False):
    check_index_put(self, indices, values)
    return self
