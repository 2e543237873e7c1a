"""Rules of aten ``hash_tensor``: a xor reduction of the elements' 64-bit patterns (floats
widened to float64, integers and bools to uint64) over ``dim`` (all dims when empty); the result
is uint64. Checks in ATen's order: dims, mode, dtype. Imports no backend."""
from ..._core import dtype as D
from ..._core import strides as _st

# dtypes the CPU kernel (ATen's xor_sum_cpu) handles
_SUPPORTED = (D.bool_, D.uint8, D.int8, D.int16, D.int32, D.int64, D.float16, D.bfloat16,
              D.float32, D.float64)


def check_hash_tensor(self, dim, keepdim, mode):
    """The reduced dims and the result shape."""
    ndim = len(self._size)
    if not dim:
        if _st.numel(self._size) == 0:
            raise RuntimeError("hash_tensor: Expected reduction dim to be specified for "
                               "input.numel() == 0. Specify the reduction dim with the 'dim' "
                               "argument.")
        dims = tuple(range(ndim))
    else:
        dims = [_st.wrap_dim(d, ndim) for d in dim]
        for i, w in enumerate(dims):
            if w in dims[:i]:
                raise RuntimeError(f"dim {w} appears multiple times in the list of dims")
        if ndim:
            for w in dims:
                if self._size[w] == 0:
                    raise IndexError(f"hash_tensor: Expected reduction dim {w} to have "
                                     f"non-zero size.")
        dims = tuple(d for d in dims if d < ndim)  # a 0-dim tensor's dim 0 reduces nothing
    if mode != 0:
        raise RuntimeError(f"Unknown hash_tensor mode: {mode}")
    if self._dtype not in _SUPPORTED:
        raise NotImplementedError(f"\"xor_sum_cpu\" not implemented for '{self._dtype._short}'")
    if keepdim:
        shape = tuple(1 if i in dims else s for i, s in enumerate(self._size))
    else:
        shape = tuple(s for i, s in enumerate(self._size) if i not in dims)
    return dims, shape
