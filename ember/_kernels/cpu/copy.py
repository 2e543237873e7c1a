"""CPU copy kernels: ``copy_`` (any strides, dtype conversion, host<-other device) and
``_local_scalar_dense`` (``item()``)."""
import numpy as np

from ._util import nd

__all__ = ["copy_", "_local_scalar_dense"]


def copy_(self, src, non_blocking=False):
    dst = nd(self)
    if src._device.type == "meta":
        raise NotImplementedError("Cannot copy out of meta tensor; no data!")
    s = nd(src) if src._device.type == "cpu" else src._to_host_array()
    if dst.shape != s.shape:
        try:
            s = np.broadcast_to(s, dst.shape)
        except ValueError:
            raise RuntimeError(f"The size of tensor a ({dst.shape}) must match the size of tensor b "
                               f"({s.shape}) for copy_") from None
    if np.may_share_memory(dst, s):
        s = s.copy()
    np.copyto(dst, s, casting="unsafe")
    return self


def _local_scalar_dense(self):
    a = nd(self)
    v = a.reshape(()) if a.ndim else a
    return v.item() if self._dtype.name != "bfloat16" else float(v)
