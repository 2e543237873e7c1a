"""CPU kernel of hash_tensor: widen, reinterpret as uint64, xor-reduce."""
import numpy as np

from ._util import nd, wrap
from ..rules.hash_tensor import check_hash_tensor


def hash_tensor(self, dim=(), keepdim=False, mode=0):
    dims, shape = check_hash_tensor(self, dim, keepdim, mode)
    x = nd(self)
    if self._dtype.is_floating_point:
        bits = x.astype(np.float64).view(np.uint64)
    else:  # integers wrap (two's complement), bools are 0/1
        bits = x.astype(np.int64).view(np.uint64) if x.dtype.kind == "i" else \
            x.astype(np.uint64)
    res = np.bitwise_xor.reduce(bits, axis=dims, keepdims=keepdim) if dims else bits.copy()
    return wrap(np.asarray(res, np.uint64).reshape(shape))
