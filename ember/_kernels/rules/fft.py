"""Rules of the FFT primitives (_fft_r2c, _fft_c2r, _fft_c2c), for every backend: argument checks
and result shapes and dtypes, with PyTorch's errors. The CPU kernels (``cpu/fft.py``) and the
Meta kernels (``meta/fft.py``) call them; this module imports no backend."""
from ..._core import dtype as D
from ..._core import strides as _st


def signal_dims(self, dim):
    """``dim`` wrapped (PyTorch's IndexError when out of range), unique, of non-empty sizes."""
    ndim = len(self._size)
    dims = [_st.wrap_dim(d, ndim, False) for d in dim]
    if len(set(dims)) != len(dims):
        raise RuntimeError("FFT dims must be unique")
    for d in dims:
        if self._size[d] == 0:
            raise RuntimeError(f"Invalid number of data points ({self._size[d]}) specified")
    return dims


def _check_mkl_dtype(d):
    # CPU FFTs exist for float and double only, as with PyTorch's MKL/pocketfft backends
    if d.to_real() not in (D.float32, D.float64):
        raise RuntimeError(f"MKL FFT doesn't support tensors of type: {d._short}")


def fft_r2c_rule(self, dim, onesided):
    """(dims, shape, dtype) of the real-to-complex transform."""
    d = self._dtype
    if not d.is_floating_point:
        raise RuntimeError(f"Only supports floating-point dtypes, but found: {d._short}")
    _check_mkl_dtype(d)
    dims = signal_dims(self, dim)
    shape = list(self._size)
    if onesided and dims:
        shape[dims[-1]] = shape[dims[-1]] // 2 + 1
    return dims, tuple(shape), d.to_complex()


def _check_complex(d):
    if not d.is_complex:
        raise RuntimeError(f"Only supports complex dtypes, but found: {d._short}")
    _check_mkl_dtype(d)


def fft_c2r_rule(self, dim, last_dim_size):
    """(dims, output shape, dtype) of the one-sided complex-to-real inverse transform."""
    _check_complex(self._dtype)
    dims = signal_dims(self, dim)
    if last_dim_size < 1:
        raise RuntimeError(f"Invalid number of data points ({last_dim_size}) specified")
    shape = list(self._size)
    if dims:
        shape[dims[-1]] = last_dim_size
    return dims, tuple(shape), self._dtype.to_real()


def fft_c2c_rule(self, dim):
    _check_complex(self._dtype)
    return signal_dims(self, dim), tuple(self._size), self._dtype
