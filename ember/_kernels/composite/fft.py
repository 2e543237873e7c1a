"""The ``fft_*`` ops behind ``ember.fft``: CompositeImplicitAutograd decompositions into the three
primitives ``_fft_r2c``, ``_fft_c2r`` and ``_fft_c2c`` (PyTorch's aten/native/SpectralOps.cpp,
function by function), plus fftfreq/rfftfreq (CompositeExplicitAutograd factories) and
fftshift/ifftshift (rolls).

Common steps: promote the input (integers to the default float dtype, then to complex where the
transform needs it), trim or zero-pad each signal dim to the requested length ``n``/``s``, and
turn ``norm`` ("backward" / "forward" / "ortho") into the primitives' normalization mode.
"""
import math

from ..._core import dtype as D
from ..._core import strides as _st
from ..._ops.overload import ops
from ..generic import write_checked, write_out


# fft_norm_mode
_NONE, _BY_ROOT_N, _BY_N = 0, 1, 2


def _norm_mode(norm, forward):
    if norm is None or norm == "backward":
        return _NONE if forward else _BY_N
    if norm == "forward":
        return _BY_N if forward else _NONE
    if norm == "ortho":
        return _BY_ROOT_N
    raise RuntimeError(f'Invalid normalization mode: "{norm}"')


def _promote(x, require_complex=False):
    """PyTorch's promote_tensor_fft: integral -> default float; only float/double (and their
    complex) have CPU FFTs."""
    d = x._dtype
    if d.is_complex:
        return x
    t = d if d.is_floating_point else D.get_default_dtype()
    if t not in (D.float32, D.float64):
        raise RuntimeError(f"Unsupported dtype {t._short}")
    if require_complex:
        t = t.to_complex()
    if t is d:
        return x
    return ops.aten._to_copy.default._call(x, t, None, None, None, False, None)


def _resize(x, dims, sizes):
    """Trim (a view) or zero-pad (a copy) each of ``dims`` to its size in ``sizes`` (-1: keep)."""
    pad = [0] * (2 * len(x._size))
    must_pad = False
    for d, n in zip(dims, sizes):
        if n == -1:
            continue
        if x._size[d] < n:
            must_pad = True
            pad[len(pad) - 2 * d - 1] = n - x._size[d]
        if x._size[d] > n:
            x = ops.aten.slice.Tensor._call(x, d, 0, n, 1)
    return ops.aten.constant_pad_nd.default._call(x, pad, 0) if must_pad else x


def _fft_r2c_out(self, dim, normalization, onesided, out):
    """The two-sided transform fills the mirrored half in place in out: complex outs only."""
    if not onesided and not out._dtype.is_complex:
        raise NotImplementedError(f'"_fft_fill_with_conjugate_symmetry" not implemented for '
                                  f"'{out._dtype._short}'")
    write_checked("_fft_r2c", (self, dim, normalization, onesided),
                  (ops.aten._fft_r2c.default._call(self, dim, normalization, onesided),), (out,))
    return out


def _conjugate(x):
    return ops.aten.conj_physical.default._call(x)


# ---------------------------------------------------------------------------------------------
# One-dimensional transforms

def _check_n(n):
    if n is not None and n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")


def _c2c(x, n, dim, norm, forward):
    _check_n(n)
    x = _promote(x, require_complex=True)
    dim = _st.wrap_dim(dim, len(x._size), False)
    n_ = x._size[dim] if n is None else n
    _check_n(n_)
    if n is not None:
        x = _resize(x, [dim], [n])
    return ops.aten._fft_c2c.default._call(x, [dim], _norm_mode(norm, forward), forward)


def _r2c(name, x, n, dim, norm, forward, onesided):
    if x._dtype.is_complex:
        raise RuntimeError(f"{name} expects a real input tensor, but got {x._dtype._short}")
    _check_n(n)
    x = _promote(x)
    dim = _st.wrap_dim(dim, len(x._size), False)
    _check_n(x._size[dim] if n is None else n)
    if n is not None:
        x = _resize(x, [dim], [n])
    r = ops.aten._fft_r2c.default._call(x, [dim], _norm_mode(norm, forward), onesided)
    # the inverse real transform is the conjugate forward one: PyTorch returns the lazy view
    return r if forward else ops.aten.conj.default._call(r)


def _c2r(x, n, dim, norm, forward):
    _check_n(n)
    x = _promote(x, require_complex=True)
    dim = _st.wrap_dim(dim, len(x._size), False)
    n_ = 2 * (x._size[dim] - 1) if n is None else n
    _check_n(n_)
    if n is not None:
        x = _resize(x, [dim], [n // 2 + 1])
    if forward:  # hfft: a C2R transform of the conjugate
        x = _conjugate(x)
    return ops.aten._fft_c2r.default._call(x, [dim], _norm_mode(norm, forward), n_)


def fft_fft(self, n=None, dim=-1, norm=None):
    if self._dtype.is_complex:
        return _c2c(self, n, dim, norm, True)
    return _r2c("fft", self, n, dim, norm, True, False)


def fft_ifft(self, n=None, dim=-1, norm=None):
    if self._dtype.is_complex:
        return _c2c(self, n, dim, norm, False)
    return _r2c("ifft", self, n, dim, norm, False, False)


def fft_rfft(self, n=None, dim=-1, norm=None):
    return _r2c("rfft", self, n, dim, norm, True, True)


def fft_irfft(self, n=None, dim=-1, norm=None):
    return _c2r(self, n, dim, norm, False)


def fft_hfft(self, n=None, dim=-1, norm=None):
    return _c2r(self, n, dim, norm, True)


def fft_ihfft(self, n=None, dim=-1, norm=None):
    return _r2c("ihfft", self, n, dim, norm, False, True)


# ---------------------------------------------------------------------------------------------
# N-dimensional transforms

def _shape_and_dims(x, s, dim):
    """PyTorch's canonicalize_fft_shape_and_dim_args: (signal sizes, dims)."""
    ndim = len(x._size)
    dims = None
    if dim is not None:
        dims = [_st.wrap_dim(d, ndim, False) for d in dim]
        if len(set(dims)) != len(dims):
            raise RuntimeError("FFT dims must be unique")
    if s is not None:
        if dims is not None and len(dims) != len(s):
            raise RuntimeError("When given, dim and shape arguments must have the same length")
        if len(s) > ndim:
            raise RuntimeError(f"Got shape with {len(s)} values but input tensor only has {ndim} "
                               f"dimensions.")
        if dims is None:
            dims = list(range(ndim - len(s), ndim))
        shape = [x._size[d] if n == -1 else n for d, n in zip(dims, s)]
    else:
        if dims is None:
            dims = list(range(ndim))
        shape = [x._size[d] for d in dims]
    for n in shape:
        if n <= 0:
            raise RuntimeError(f"Invalid number of data points ({n}) specified")
    return shape, dims


def _c2r_shape_and_dims(name, x, s, dim):
    """canonicalize_fft_c2r_shape_and_dim_args: (input sizes, dims, output size of last dim)."""
    shape, dims = _shape_and_dims(x, s, dim)
    if not shape:
        raise RuntimeError(f"{name} must transform at least one axis")
    last = 2 * (x._size[dims[-1]] - 1) if s is None or s[-1] == -1 else shape[-1]
    if last < 1:
        raise RuntimeError(f"Invalid number of data points ({last}) specified")
    shape[-1] = last // 2 + 1
    return shape, dims, last


def _fftn_c2c(self, s, dim, norm, forward):
    shape, dims = _shape_and_dims(self, s, dim)
    x = _resize(_promote(self, require_complex=True), dims, shape)
    return ops.aten._fft_c2c.default._call(x, dims, _norm_mode(norm, forward), forward)


def fft_fftn(self, s=None, dim=None, norm=None):
    return _fftn_c2c(self, s, dim, norm, True)


def fft_ifftn(self, s=None, dim=None, norm=None):
    return _fftn_c2c(self, s, dim, norm, False)


def fft_rfftn(self, s=None, dim=None, norm=None):
    if self._dtype.is_complex:
        raise RuntimeError(f"rfftn expects a real-valued input tensor, but got "
                           f"{self._dtype._short}")
    shape, dims = _shape_and_dims(self, s, dim)
    if not shape:
        raise RuntimeError("rfftn must transform at least one axis")
    x = _resize(_promote(self), dims, shape)
    return ops.aten._fft_r2c.default._call(x, dims, _norm_mode(norm, True), True)


def fft_irfftn(self, s=None, dim=None, norm=None):
    shape, dims, last = _c2r_shape_and_dims("irfftn", self, s, dim)
    x = _resize(_promote(self, require_complex=True), dims, shape)
    return ops.aten._fft_c2r.default._call(x, dims, _norm_mode(norm, False), last)


def fft_hfftn(self, s=None, dim=None, norm=None):
    shape, dims, last = _c2r_shape_and_dims("hfftn", self, s, dim)
    x = _resize(_promote(self, require_complex=True), dims, shape)
    mode = _norm_mode(norm, True)
    if len(dims) > 1:
        x = ops.aten._fft_c2c.default._call(x, dims[:-1], mode, True)
    return ops.aten._fft_c2r.default._call(_conjugate(x), dims[-1:], mode, last)


def fft_ihfftn(self, s=None, dim=None, norm=None):
    shape, dims = _shape_and_dims(self, s, dim)
    if not shape:
        raise RuntimeError("ihfftn must transform at least one axis")
    x = _resize(_promote(self), dims, shape)
    mode = _norm_mode(norm, False)
    r = ops.aten._fft_r2c.default._call(x, dims[-1:], mode, True)
    if len(dims) == 1:
        return ops.aten.conj.default._call(r)  # (the lazy view, as PyTorch's)
    return ops.aten._fft_c2c.default._call(_conjugate(r), dims[:-1], mode, False)


def fft_fft2(self, s=None, dim=(-2, -1), norm=None):
    return fft_fftn(self, s, dim, norm)


def fft_ifft2(self, s=None, dim=(-2, -1), norm=None):
    return fft_ifftn(self, s, dim, norm)


def fft_rfft2(self, s=None, dim=(-2, -1), norm=None):
    return fft_rfftn(self, s, dim, norm)


def fft_irfft2(self, s=None, dim=(-2, -1), norm=None):
    return fft_irfftn(self, s, dim, norm)


def fft_hfft2(self, s=None, dim=(-2, -1), norm=None):
    return fft_hfftn(self, s, dim, norm)


def fft_ihfft2(self, s=None, dim=(-2, -1), norm=None):
    return fft_ihfftn(self, s, dim, norm)


# ---------------------------------------------------------------------------------------------
# Sample frequencies and shifts

def _freq_out(name, n, d, indices, out):
    """indices (an int64 tensor) * 1/(n*d), computed in out's dtype, written into out."""
    if not (out._dtype.is_floating_point or out._dtype.is_complex):
        raise RuntimeError(f"{name} requires a floating point or complex dtype")
    if out._dtype.is_complex:  # PyTorch builds the indices with arange, which has no complex
        raise NotImplementedError(f'"arange_cpu" not implemented for \'{out._dtype._short}\'')
    r = ops.aten._to_copy.default._call(indices, out._dtype, None, None, None, False, None)
    span = n * d
    scale = 1.0 / span if span else math.copysign(math.inf, span)  # C++ division by zero
    write_out(name, (ops.aten.mul.Scalar._call(r, scale),), (out,))
    return out


def fft_fftfreq_out(n, d=1.0, out=None):
    """Frequencies 0, 1, ..., (n-1)//2, -(n//2), ..., -1 over n*d."""
    i = ops.aten.arange.default._call(n, D.int64, None, out._device, None)
    upper = ops.aten.ge.Scalar._call(i, (n + 1) // 2)
    i = ops.aten.where.self._call(upper, ops.aten.sub.Scalar._call(i, n, 1), i)
    return _freq_out("fftfreq", n, d, i, out)


def _half(n):
    """n / 2 + 1 with C++'s division (truncation: a negative n still gives one bin)."""
    return int(n / 2) + 1


def fft_rfftfreq_out(n, d=1.0, out=None):
    i = ops.aten.arange.default._call(_half(n), D.int64, None, out._device, None)
    return _freq_out("rfftfreq", n, d, i, out)


def _freq(out_fn, size, n, d, dtype, layout, device, pin_memory):
    out = ops.aten.empty.memory_format._call([size], dtype or D.get_default_dtype(), layout, device,
                                             pin_memory, None)
    return out_fn(n, d, out)


def fft_fftfreq(n, d=1.0, dtype=None, layout=None, device=None, pin_memory=None):
    return _freq(fft_fftfreq_out, n, n, d, dtype, layout, device, pin_memory)


def fft_rfftfreq(n, d=1.0, dtype=None, layout=None, device=None, pin_memory=None):
    return _freq(fft_rfftfreq_out, _half(n), n, d, dtype, layout, device, pin_memory)


def _shift(x, dim, amount):
    ndim = len(x._size)
    dims = list(range(ndim)) if dim is None else [_st.wrap_dim(d, ndim) for d in dim]
    return ops.aten.roll.default._call(x, [amount(x._size[d]) for d in dims], dims)


def fft_fftshift(self, dim=None):
    return _shift(self, dim, lambda n: n // 2)


def fft_ifftshift(self, dim=None):
    return _shift(self, dim, lambda n: (n + 1) // 2)
