"""CPU copy kernels: ``copy_`` (broadcasting, any strides, dtype conversion, overlapping source
and destination, host <- other device) and ``_local_scalar_dense`` (``item()``)."""
import warnings

import numpy as np

from ..._core import complex32 as _complex32
from ..._core import dtype as D
from ..._core import float8 as _float8
from ..._core import overlap as _overlap
from ..rules.copy import check_copy
from ._util import nd


def copy_(self, src, non_blocking=False):
    if src._device.type == "meta":
        raise NotImplementedError("Cannot copy out of meta tensor; no data!")
    if 0 in self._stride or src._storage_ is self._storage_:  # cheap: may overlap
        _overlap.check_write(self, (src,))
    dst = nd(self)
    s = nd(src) if src._device.type == "cpu" else src._to_host_array()
    if (self._dtype._category < 0 or src._dtype._category < 0) and self._dtype is not src._dtype:
        raise NotImplementedError(  # (bytes without a type to convert: D._ShellDtype)
            f'"copy_" not implemented for \'{(src if src._dtype._category < 0 else self)._dtype._short}\'')
    if s.shape != dst.shape:
        check_copy(self, src)
        s = np.broadcast_to(s, dst.shape)
    if src._dtype.is_complex and not self._dtype.is_complex:
        warnings.warn("Casting complex values to real discards the imaginary part", UserWarning,
                      stacklevel=2)
        if self._dtype is D.bool_ and src._dtype is not D.complex32:
            s = s != 0  # (c10's complex -> bool is real || imag, not the real part's)
        elif src._dtype is not D.complex32:
            s = s.real
    if np.may_share_memory(dst, s):  # e.g. x[1:].copy_(x[:-1]): read everything before writing
        s = s.copy()
    # float -> int of nan/inf is unspecified in PyTorch too; NumPy's warning would be noise
    if (self._dtype is D.complex32) is not (src._dtype is D.complex32):
        s = _complex32.cast(s, dst.dtype)  # NumPy cannot cast to/from the float16 pair
    elif (self._dtype in D.FLOAT8 or src._dtype in D.FLOAT8) and self._dtype is not src._dtype:
        s = _float8.cast(s, dst.dtype)  # c10's rounding, saturation and NaN bits
    elif self._dtype is D.float16 and src._dtype is D.float64:
        s = D.cast_values(s, D.float16)  # (c10's double -> float -> half)
    with np.errstate(invalid="ignore", over="ignore"):
        np.copyto(dst, s, casting="unsafe")
    return self


def _local_scalar_dense(self):
    a = nd(self)
    v = a.reshape(()) if a.ndim else a
    # ml_dtypes' scalars (bfloat16, float8) are not Python numbers: read them as floats
    if self._dtype is D.complex32:
        return complex(_complex32.to_complex64(v))
    return float(v) if self._dtype is D.bfloat16 or self._dtype in D.FLOAT8 else v.item()
