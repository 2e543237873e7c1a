"""CUDA fills, constant factories and copies that convert: ``fill_``, ``zero_``, ``zeros``,
``ones``, ``full``, ``scalar_tensor``, ``arange`` (the CPU's formula on CuPy, no host buffer: a
graph can capture it) and the device-to-device ``copy_`` that casts, broadcasts or reorders; and
the fused optimizer ops (``_fused_adam_``, ``_fused_adamw_``), the CPU's update on device arrays.

A factory is ``empty`` on the device plus a fill there, so no host buffer is made or copied. The
values written are the CPU's (``cpu/factory._cast``: truncation, wrap-around, real parts) and the
checks are the rules' (``rules/factory.py``).
"""
import math

from ..._core import overlap as _overlap
from ..._core.dtype import get_default_dtype
from ..._core.tensor_impl import empty_tensor
from ..cpu.factory import _cast
from ..cpu.optim import fused_adam
from ..cpu.ranges import arange_values
from ..rules.copy import check_copy
from ..rules.factory import check_fill, scalar_dtype
from .arrays import HOST_DTYPES, NeedsHost, device_array, launch, to_tensor


def _fill(t, value):
    if t._dtype in HOST_DTYPES:
        raise NeedsHost("float8/complex32 fill")

    def body(xp, rt):
        if t.numel():
            device_array(t, rt)[...] = value
        return t
    return launch(t._device, body)


def fill_Scalar(self, value):
    check_fill(value, self._dtype, self.numel())
    return _fill(self, _cast(value, self._dtype))


def zero_(self):
    return _fill(self, 0)


def _constant(size, dtype, device, value):
    from . import _device_of
    return _fill(empty_tensor(size, dtype, _device_of(device)), value)


def zeros(size, dtype=None, layout=None, device=None, pin_memory=None):
    if any(s < 0 for s in size):  # the CPU kernel's check, in its words
        raise RuntimeError("zeros: Dimension size must be non-negative.")
    return _constant(size, dtype or get_default_dtype(), device, 0)


def ones(size, dtype=None, layout=None, device=None, pin_memory=None):
    return _constant(size, dtype or get_default_dtype(), device, 1)


def full(size, fill_value, dtype=None, layout=None, device=None, pin_memory=None):
    dtype = dtype or scalar_dtype(fill_value)
    check_fill(fill_value, dtype, math.prod(size))
    return _constant(size, dtype, device, _cast(fill_value, dtype))


def scalar_tensor(s, dtype=None, layout=None, device=None, pin_memory=None):
    """(Inductor's graphs make their constants with it: the CPU's, computed on the host and
    copied, would be a host-to-device copy that a CUDA graph capture refuses.)"""
    dtype = dtype or get_default_dtype()
    check_fill(s, dtype, 1)
    return _constant((), dtype, device, _cast(s, dtype))


def arange_start_step(start, end, step=1, dtype=None, layout=None, device=None,
                      pin_memory=None):
    from . import _device_of
    dev = _device_of(device)

    def body(xp, rt):
        dt, values = arange_values(xp, start, end, step, dtype)
        return to_tensor(values, dt, dev, rt)
    return launch(dev, body)


def arange(end, dtype=None, layout=None, device=None, pin_memory=None):
    return arange_start_step(0, end, 1, dtype, device=device)


def arange_start(start, end, dtype=None, layout=None, device=None, pin_memory=None):
    return arange_start_step(start, end, 1, dtype, device=device)


def copy_on_device(self, src):
    """``self.copy_(src)`` with both on CUDA: the CPU kernel's checks, then the cast, broadcast
    and strided copy of ``copyto`` (``unsafe`` casting: C's conversions, as ATen's copy)."""
    if self._dtype in HOST_DTYPES or src._dtype in HOST_DTYPES or (
            src._dtype.is_complex and not self._dtype.is_complex):
        raise NeedsHost("float8/complex32 copy, or complex to real (the CPU kernel warns)")
    if 0 in self._stride or src._storage is self._storage:
        _overlap.check_write(self, (src,))
    if src._size != self._size:
        check_copy(self, src)

    def body(xp, rt):
        if self.numel():
            dst, s = device_array(self, rt), device_array(src, rt)
            if src._storage is self._storage:  # read everything before writing
                s = s.copy()
            xp.copyto(dst, xp.broadcast_to(s, dst.shape), casting="unsafe")
        return self
    return launch(self._device, body)


def _fused_adam(adamw):
    """``_fused_adam_``/``_fused_adamw_``: the CPU kernel's update (cpu/optim.py) on device
    arrays, every tensor of the group in one call."""
    def kernel(self, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, lr, beta1,
               beta2, weight_decay, eps, amsgrad, maximize, grad_scale=None, found_inf=None):
        tensors = [*self, *grads, *exp_avgs, *exp_avg_sqs, *max_exp_avg_sqs, *state_steps]
        if not self:
            return None
        if any(t._device.type != "cuda" or t._dtype in HOST_DTYPES for t in tensors):
            raise NeedsHost("fused Adam over tensors off the device or in float8/complex32")

        def body(xp, rt):
            fused_adam(lambda t: device_array(t, rt),
                       lambda t: (device_array(t, rt) if t._device.type == "cuda"
                                  else t._nd()).reshape(()).item(),
                       self, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, adamw,
                       lr=lr, beta1=beta1, beta2=beta2, weight_decay=weight_decay, eps=eps,
                       amsgrad=amsgrad, maximize=maximize, grad_scale=grad_scale,
                       found_inf=found_inf)
        return launch(self[0]._device, body)
    return kernel


def kernels():
    return {"fill_.Scalar": fill_Scalar, "zero_": zero_, "zeros": zeros, "ones": ones,
            "full": full, "scalar_tensor": scalar_tensor, "arange": arange,
            "arange.start": arange_start, "arange.start_step": arange_start_step, "_fused_adam_": _fused_adam(False),
            "_fused_adamw_": _fused_adam(True)}
