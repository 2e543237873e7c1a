"""``ember.fft``: PyTorch's ``torch.fft`` functions. Each is the generated binding of its
``fft_*`` aten op (composites over ``_fft_r2c`` / ``_fft_c2r`` / ``_fft_c2c``, declared in
native_functions.yaml), so ``out=``, argument parsing and autograd behave as in every other op. fftfreq and rfftfreq
add the ``out=`` that PyTorch's parser merges into factory signatures."""
from .._ops.overload import ops as _ops
from .._C import _fft as _bindings  # the generated fft_* bindings (python_module: fft)

fft, ifft, fft2, ifft2 = _bindings.fft_fft, _bindings.fft_ifft, _bindings.fft_fft2, _bindings.fft_ifft2
fftn, ifftn = _bindings.fft_fftn, _bindings.fft_ifftn
rfft, irfft, rfft2, irfft2 = (_bindings.fft_rfft, _bindings.fft_irfft, _bindings.fft_rfft2,
                              _bindings.fft_irfft2)
rfftn, irfftn = _bindings.fft_rfftn, _bindings.fft_irfftn
hfft, ihfft, hfft2, ihfft2 = (_bindings.fft_hfft, _bindings.fft_ihfft, _bindings.fft_hfft2,
                              _bindings.fft_ihfft2)
hfftn, ihfftn = _bindings.fft_hfftn, _bindings.fft_ihfftn
fftshift, ifftshift = _bindings.fft_fftshift, _bindings.fft_ifftshift
_fftfreq, _rfftfreq = _bindings.fft_fftfreq, _bindings.fft_rfftfreq

__all__ = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2",
           "rfftn", "irfftn", "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn", "fftfreq",
           "rfftfreq", "fftshift", "ifftshift"]


def fftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False,
            pin_memory=False):
    if out is not None:
        return _ops.aten.fft_fftfreq.out(n, d, out=out)
    return _fftfreq(n, d, dtype=dtype, layout=layout, device=device, requires_grad=requires_grad,
                    pin_memory=pin_memory)


def rfftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False,
             pin_memory=False):
    if out is not None:
        return _ops.aten.fft_rfftfreq.out(n, d, out=out)
    return _rfftfreq(n, d, dtype=dtype, layout=layout, device=device, requires_grad=requires_grad,
                     pin_memory=pin_memory)
