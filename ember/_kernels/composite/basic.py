"""Composite kernels for conversions and Python-scalar access."""
from ..._ops.overload import ops


def item(self):
    n = self.numel()
    if n != 1:
        raise RuntimeError(f"a Tensor with {n} elements cannot be converted to Scalar")
    return ops.aten._local_scalar_dense.default._call(self)
