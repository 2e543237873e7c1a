"""CPU factory kernels: allocation (empty, empty_strided), constant tensors (zeros, ones, full,
scalar_tensor), in-place fills (fill_, zero_) and resize_.

Dtype inference and argument checks come from the rules (``rules/factory.py``) so both
devices agree on every result's dtype and on every error.
"""
import math
import numpy as np

from ..._core import complex32 as _complex32
from ..._core import dtype as D
from ..._core import float8 as _float8
from ..._core import strides as _st
from ..._core.device import CPU
from ..._core.storage import allocation_error
from ...backends._context import fill_uninitialized, fills_uninitialized
from ..._core.dtype import get_default_dtype
from ..._core.storage import from_array
from ..._core.tensor_impl import empty_tensor, make_tensor
from ..rules.factory import (check_fill, check_resize_memory_format, check_size,
                             memory_format_strides, scalar_dtype)
from ._util import nd, wrap
from .copy import copy_


def empty_memory_format(size, dtype=None, layout=None, device=None, pin_memory=None,
                        memory_format=None):
    stride = None if memory_format is None else memory_format_strides(size, memory_format)
    if pin_memory:
        out = _pinned_empty(size, dtype or get_default_dtype(), stride)
    else:
        out = empty_tensor(size, dtype or get_default_dtype(), device or CPU, stride)
    if fills_uninitialized():  # under use_deterministic_algorithms (PyTorch's empty_cpu)
        fill_uninitialized(nd(out))
    return out


def empty_strided(size, stride, dtype=None, layout=None, device=None, pin_memory=None):
    if pin_memory:
        out = _pinned_empty(size, dtype or get_default_dtype(), tuple(stride))
    else:
        out = empty_tensor(size, dtype or get_default_dtype(), device or CPU, tuple(stride))
    if fills_uninitialized():
        fill_uninitialized(nd(out))
    return out


def _pinned_empty(size, dtype, stride=None):
    """PyTorch's empty_cpu with pin_memory=True: the storage comes from the accelerator's
    caching host allocator (``ember.cuda._host_allocator``)."""
    from ...cuda import _host_allocator
    size = tuple(size)
    if any(s < 0 for s in size):
        return empty_tensor(size, dtype, CPU, stride)  # raises PyTorch's negative-size error
    if stride is None:
        _st.check_storage_size(size, dtype.itemsize)
        stride = _st.contiguous_strides(size)
    nbytes = _st.storage_extent(size, stride, 0) * dtype.itemsize
    storage = from_array(_host_allocator.allocate(nbytes), CPU)
    return make_tensor(storage, size, stride, 0, dtype, CPU)


def honour_pin_memory(kernel):
    """Wrap a CPU factory kernel whose result is a fresh array so that ``pin_memory=True``
    gives that result in pinned memory (PyTorch's factories allocate with empty(pin_memory))."""
    import inspect
    at = list(inspect.signature(kernel).parameters).index("pin_memory")

    def pinned_factory(*args, **kwargs):
        # the dispatcher passes every argument positionally, in schema order
        if len(args) > at and args[at]:
            args = args[:at] + (None,) + args[at + 1:]
        elif kwargs.get("pin_memory"):
            kwargs["pin_memory"] = None
        else:
            return kernel(*args, **kwargs)
        r = kernel(*args, **kwargs)
        return copy_(_pinned_empty(r._size, r._dtype, r._stride), r)

    pinned_factory.__name__ = kernel.__name__
    pinned_factory.__doc__ = kernel.__doc__
    return pinned_factory


def _constant(size, dtype, maker):
    size = tuple(size)
    check_size(size)
    _st.check_storage_size(size, dtype.itemsize)
    try:
        return wrap(maker(size, dtype._np))
    except (MemoryError, ValueError):
        raise allocation_error(_st.numel(size) * dtype.itemsize) from None


@honour_pin_memory
def zeros(size, dtype=None, layout=None, device=None, pin_memory=None):
    if any(s < 0 for s in size):  # ATen's CPU zeros checks before allocating, in its own words
        raise RuntimeError("zeros: Dimension size must be non-negative.")
    return _constant(size, dtype or get_default_dtype(), np.zeros)


@honour_pin_memory
def ones(size, dtype=None, layout=None, device=None, pin_memory=None):
    dtype = dtype or get_default_dtype()
    if dtype is D.complex32:  # (NumPy's ones would set both float16 fields)
        return _constant(size, dtype, lambda shape, npd: np.full(shape, _cast(1, dtype), npd))
    return _constant(size, dtype, np.ones)


@honour_pin_memory
def full(size, fill_value, dtype=None, layout=None, device=None, pin_memory=None):
    dtype = dtype or scalar_dtype(fill_value)
    check_fill(fill_value, dtype, math.prod(size))
    return _constant(size, dtype, lambda shape, npd: np.full(shape, _cast(fill_value, dtype), npd))


@honour_pin_memory
def scalar_tensor(s, dtype=None, layout=None, device=None, pin_memory=None):
    dtype = dtype or get_default_dtype()
    check_fill(s, dtype, 1)
    return wrap(np.array(_cast(s, dtype), dtype._np))


def _cast(value, dtype):
    """A checked Python number as the value NumPy should store: real part for real dtypes,
    truth for bool, truncation for integers, two's-complement wrap for unsigned."""
    if isinstance(value, complex) and not dtype.is_complex:
        value = value.real
    if dtype in D.FLOAT8:  # c10's rounding and NaN bits
        return _float8.to_float8(np.asarray(float(value)), dtype)
    if dtype is D.complex32:  # a 0-dim float16 pair
        return _complex32.scalar(value)
    if dtype is D.float16 or dtype is D.bfloat16:  # (c10's double -> float -> half; silent inf)
        return D.cast_values(float(value), dtype)
    if dtype.is_floating_point or dtype.is_complex or dtype._np.kind == "b":
        return value
    value = int(value)
    if value < 0 and not dtype.is_signed:
        value += 1 << (8 * dtype.itemsize)
    return value


def fill_Scalar(self, value):
    check_fill(value, self._dtype, self.numel())
    nd(self)[...] = _cast(value, self._dtype)
    return self


def fill_Tensor(self, value):
    if not hasattr(value, "_keyset"):  # the binding passes numbers to the Tensor overload
        return fill_Scalar(self, value)
    if value._size:
        raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                           f"{len(value._size)} dimensions.")
    return copy_(self, value)


def zero_(self):
    nd(self)[...] = 0
    return self


def resize_(self, size, memory_format=None):
    check_resize_memory_format(size, memory_format)
    old_nbytes = self._storage.nbytes()
    self._resize_metadata(size, memory_format)
    if self._storage.nbytes() > old_nbytes:
        # PyTorch's fill_resize_deterministic_: only the elements in the newly grown bytes
        flat = nd(self).reshape(-1) if self.is_contiguous() else None
        if flat is not None:
            first = max(0, -(-old_nbytes // self._dtype.itemsize) - self._offset)
            fill_uninitialized(flat[first:])
    return self
