"""CPU kernels of pointwise ops added for issue 18: heaviside, gcd, lcm, nextafter (rows of the
pointwise tables, so promotion, broadcasting, out= and in-place forms are the shared ones),
frexp (two outputs) and complex (a complex tensor from real and imaginary parts). Their rules
are in ``rules/pointwise.py``."""
import numpy as np

from ..._core import dtype as D
from ..rules.pointwise import check_complex, check_frexp
from . import pointwise as _pw
from .pointwise_values import _ufunc
from ._util import nd, wrap


def heaviside_values(x, values, dt):
    # values where x == 0, else (x > 0): NaN inputs give 0, as PyTorch's comparison does
    return np.where(x == 0, values, (x > 0).astype(x.dtype))


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


# Compute rows (their rules: rules/pointwise.py's BINARY_RULES; their overloads, with the
# functional and in-place kernels generated for them: rules.pointwise.OVERLOADS).
BINARY = {
    "heaviside": heaviside_values,
    "gcd": _ufunc(np.gcd),
    "lcm": _ufunc(np.lcm),
    "nextafter": nextafter_values,
}
_pw.BINARY.update(BINARY)


# ---------------------------------------------------------------------------------------------
# frexp and complex

def frexp_Tensor(self):
    check_frexp(self)
    a = nd(self)
    m, e = np.frexp(np.asarray(a, np.float32) if self._dtype is D.bfloat16 else a)
    return wrap(np.asarray(m).astype(self._dtype._np)), wrap(np.asarray(e).astype(np.int32))


def complex(real, imag):  # noqa: A001  (the op's name)
    dt = check_complex(real, imag)
    re, im = np.broadcast_arrays(nd(real), nd(imag))
    out = np.empty(re.shape, dt._np)
    if dt is D.complex32:  # (two float16 fields)
        out["real"], out["imag"] = re, im
    else:
        out.real = re
        out.imag = im
    return wrap(out)
