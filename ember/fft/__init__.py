"""``ember.fft``: PyTorch's ``torch.fft`` functions. Each is the generated binding of its
``fft_*`` aten op (composites over ``_fft_r2c`` / ``_fft_c2r`` / ``_fft_c2c``, declared in
native_functions.yaml), so ``out=``, argument parsing and autograd behave as in every other op. fftfreq and rfftfreq
add the ``out=`` that PyTorch's parser merges into factory signatures."""
from .._ops.overload import ops as _ops
from .. import (fft_fft as fft, fft_fft2 as fft2, fft_fftfreq as _fftfreq,  # noqa: F401
                fft_fftn as fftn, fft_fftshift as fftshift, fft_hfft as hfft, fft_hfft2 as hfft2,
                fft_hfftn as hfftn, fft_ifft as ifft, fft_ifft2 as ifft2, fft_ifftn as ifftn,
                fft_ifftshift as ifftshift, fft_ihfft as ihfft, fft_ihfft2 as ihfft2,
                fft_ihfftn as ihfftn, fft_irfft as irfft, fft_irfft2 as irfft2,
                fft_irfftn as irfftn, fft_rfft as rfft, fft_rfft2 as rfft2,
                fft_rfftfreq as _rfftfreq, fft_rfftn as rfftn)

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
