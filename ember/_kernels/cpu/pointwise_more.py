"""CPU kernels of pointwise ops added for issue 18: heaviside, gcd, lcm, nextafter (rows of the
pointwise tables, so promotion, broadcasting, out= and in-place forms are the shared ones),
frexp (two outputs) and complex (a complex tensor from real and imaginary parts)."""
import numpy as np

from ..._core import dtype as D
from ..._core import strides as _st
from . import pointwise as _pw
from ._util import nd, wrap


def check_heaviside(name, operands, dt):
    a, b = operands
    if a._dtype.is_complex or b._dtype.is_complex:
        raise RuntimeError("heaviside is not yet implemented for complex tensors.")
    if a._dtype is not b._dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")


def heaviside_values(x, values, dt):
    # values where x == 0, else (x > 0): NaN inputs give 0, as PyTorch's comparison does
    return np.where(x == 0, values, (x > 0).astype(x.dtype))


def _reject(kernel, categories):
    def check(name, operands, dt):
        if dt._category in categories or dt in kernel[1]:
            raise NotImplementedError(f'"{kernel[0]}" not implemented for \'{dt._short}\'')
    return check


def nextafter_values(x, y, dt):
    if dt is not D.bfloat16:
        return np.nextafter(x, y)
    # NumPy has no bfloat16 nextafter: step the bit pattern by one towards y
    xf, yf = np.asarray(x, np.float32), np.asarray(y, np.float32)
    bits = np.asarray(x).view(np.uint16).astype(np.int32)
    toward = np.where((yf > xf) == (xf >= 0), 1, -1)
    stepped = np.where(xf == 0, np.where(yf > 0, 1, 0x8001), bits + toward)
    r = stepped.astype(np.uint16).view(np.asarray(x).dtype)
    r = np.where(xf == yf, y, r)
    return np.where(np.isnan(xf) | np.isnan(yf), np.asarray(xf + yf).astype(r.dtype), r)


_NOT_INT = (D.BOOL, D.FLOATING, D.COMPLEX)
BINARY = {
    "heaviside": (heaviside_values, _pw.PROMOTE, check_heaviside),
    "gcd": (_pw._ufunc(np.gcd), _pw.PROMOTE, _pw.not_for(_NOT_INT, "gcd_cpu")),
    "lcm": (_pw._ufunc(np.lcm), _pw.PROMOTE, _pw.not_for(_NOT_INT, "lcm_cpu")),
    "nextafter": (nextafter_values, _pw.PROMOTE,
                  _pw.not_for((D.BOOL, D.INTEGRAL, D.COMPLEX), "nextafter_cpu")),
}
_pw.BINARY.update(BINARY)


# ---------------------------------------------------------------------------------------------
# frexp and complex

def check_frexp(self):
    if not self._dtype.is_floating_point:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")


def frexp_Tensor(self):
    check_frexp(self)
    a = nd(self)
    m, e = np.frexp(np.asarray(a, np.float32) if self._dtype is D.bfloat16 else a)
    return wrap(np.asarray(m).astype(self._dtype._np)), wrap(np.asarray(e).astype(np.int32))


def check_complex(real, imag):
    """complex's checks, in PyTorch's order; returns the result dtype."""
    r, i = real._dtype, imag._dtype
    if r not in (D.float16, D.float32, D.float64) or i not in (D.float16, D.float32, D.float64):
        raise RuntimeError(f"Expected both inputs to be Half, Float or Double tensors but got "
                           f"{r._short} and {i._short}")
    if r is not i:
        raise RuntimeError(f"Expected object of scalar type {r._short} but got scalar type "
                           f"{i._short} for second argument")
    if r is D.float16:
        raise NotImplementedError("\"complex_cpu\" not implemented for 'ComplexHalf'")
    _st.broadcast_shapes(real._size, imag._size)
    return r.to_complex()


def complex(real, imag):  # noqa: A001  (the op's name)
    dt = check_complex(real, imag)
    re, im = np.broadcast_arrays(nd(real), nd(imag))
    out = np.empty(re.shape, dt._np)
    out.real = re
    out.imag = im
    return wrap(out)


_GENERATED = {}
for _op in BINARY:
    _GENERATED[_op] = _pw._binary_kernel(_op)
    _GENERATED[_op + "_"] = _pw._inplace_kernel(_op, 2)
globals().update(_GENERATED)

__all__ = ["frexp_Tensor", "complex", *_GENERATED]
