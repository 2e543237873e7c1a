"""Meta kernels for factories, fills and random ops: what the rules (``rules/factory.py``) say,
allocated on the meta device.

Meta kernels check what PyTorch's meta kernels check (shapes, ranges, step counts) and, like
them, skip the value checks that only matter when data is written (fill values that overflow,
uniform_/random_ bounds); they never touch data.
"""
from ..._core import dtype as D
from ..._core import strides as _st
from ..._core.device import META
from ..._core.dtype import get_default_dtype
from ..._core.tensor_impl import empty_tensor
from ..rules.factory import (arange_dtype, arange_params, check_eye, check_resize_memory_format,
                             check_size, check_steps, linspace_dtype, normal_tensor_dtype,
                             scalar_dtype)


# ---------------------------------------------------------------------------------------------
# Meta kernels.

def _new(size, dtype):
    size = tuple(size)
    check_size(size)
    return empty_tensor(size, dtype, META)


def meta_zeros(size, dtype=None, layout=None, device=None, pin_memory=None):
    return _new(size, dtype or get_default_dtype())


meta_ones = meta_zeros


def meta_full(size, fill_value, dtype=None, layout=None, device=None, pin_memory=None):
    return _new(size, dtype or scalar_dtype(fill_value))


def meta_scalar_tensor(s, dtype=None, layout=None, device=None, pin_memory=None):
    return _new((), dtype or get_default_dtype())


def meta_arange_start_step(start, end, step=1, dtype=None, layout=None, device=None,
                           pin_memory=None):
    dtype = arange_dtype(start, end, step, dtype)
    return _new((arange_params(start, end, step, dtype)[2],), dtype)


def meta_arange(end, dtype=None, layout=None, device=None, pin_memory=None):
    return meta_arange_start_step(0, end, 1, dtype)


def meta_arange_start(start, end, dtype=None, layout=None, device=None, pin_memory=None):
    return meta_arange_start_step(start, end, 1, dtype)


def meta_linspace(start, end, steps, dtype=None, layout=None, device=None, pin_memory=None):
    check_steps(steps)
    return _new((steps,), linspace_dtype(start, end, dtype))


def meta_eye_m(n, m, dtype=None, layout=None, device=None, pin_memory=None):
    check_eye(n, m)
    return _new((n, m), dtype or get_default_dtype())


def meta_eye(n, dtype=None, layout=None, device=None, pin_memory=None):
    return meta_eye_m(n, n, dtype)


def meta_fill_Scalar(self, value):
    return self


def meta_fill_Tensor(self, value):
    if not hasattr(value, "_keyset"):  # the binding passes numbers to the Tensor overload
        return meta_fill_Scalar(self, value)
    if value._size:
        raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                           f"{len(value._size)} dimensions.")
    return self


def meta_zero_(self):
    return self


def meta_resize_(self, size, memory_format=None):
    check_resize_memory_format(size, memory_format)
    self._resize_metadata(size, memory_format)
    return self


def meta_uniform_(self, from_=0.0, to=1.0, generator=None):
    return self


def _meta_check_normal(dtype, std):
    # PyTorch's meta normal is its Python reference: Python formats the number
    if dtype._category < D.FLOATING:
        raise RuntimeError(f"expected a floating-point or complex dtype, but got dtype={dtype}")
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {float(std)}")


def meta_normal_(self, mean=0.0, std=1.0, generator=None):
    _meta_check_normal(self._dtype, std)
    return self


def meta_random_(self, generator=None):
    return self


def meta_random__from(self, from_, to, generator=None):
    return self


def meta_random__to(self, to, generator=None):
    return self


def meta_normal_Tensor_float(mean, std=1.0, generator=None):
    _meta_check_normal(mean._dtype, std)
    return _new(mean._size, mean._dtype)


def meta_normal_float_Tensor(mean, std, generator=None):
    _meta_check_normal(std._dtype, 0.0)
    return _new(std._size, std._dtype)


def meta_normal_Tensor_Tensor(mean, std, generator=None):
    dtype = normal_tensor_dtype(mean, std)
    _meta_check_normal(dtype, 0.0)
    return _new(_st.broadcast_shapes(mean._size, std._size), dtype)
