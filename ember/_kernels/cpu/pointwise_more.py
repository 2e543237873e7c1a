"""CPU kernels of pointwise ops added for issue 18: heaviside, gcd, lcm, nextafter (rows of the
pointwise tables, so promotion, broadcasting, out= and in-place forms are the shared ones),
frexp (two outputs) and complex (a complex tensor from real and imaginary parts). Their rules
are in ``rules/pointwise.py``."""
import numpy as np

from ..._core import dtype as D
from ..rules.pointwise import check_complex, check_frexp
from . import pointwise as _pw
from .pointwise_values import _ufunc
from ._util import array_module, array_of, nd, wrap


def heaviside_values(x, values, dt):
    # values where x == 0, else (x > 0): NaN inputs give 0, as PyTorch's comparison does
    return np.where(x == 0, values, (x > 0).astype(x.dtype))


_BITS = {2: np.uint16, 4: np.uint32, 8: np.uint64}


def nextafter_values(x, y, dt):
    """The float next to ``x`` towards ``y``, stepped on the bit patterns (musl's nextafter):
    exact in every float dtype (bfloat16 included, which NumPy lacks) and on a device that
    flushes subnormals to zero — CuPy's float32 nextafter(0, -1) gives -FLT_MIN on an H200, not
    the smallest subnormal, and its float16 one NaN at ±inf. NumPy or CuPy arrays alike."""
    xp = array_module(x)
    xp = array_module(y) if xp is np else xp
    u = _BITS[dt.itemsize]
    sign, one = u(1 << (8 * dt.itemsize - 1)), u(1)
    inf = np.asarray(np.inf, dt._np).view(u)[()]

    def bits(a):  # a device array, or a NumPy scalar beside one (CuPy takes scalars as arguments)
        if xp is not np and array_module(a) is np:
            return np.asarray(a).view(u)[()]
        return xp.asarray(a).view(u)

    ux, uy = bits(x), bits(y)
    ax, ay = ux & ~sign, uy & ~sign
    with np.errstate(over="ignore"):  # ux - 1 wraps where ax == 0, replaced below
        stepped = xp.where((ax > ay) | (((ux ^ uy) & sign) != 0), ux - one, ux + one)
    stepped = xp.where(ax == 0, (uy & sign) | one, stepped)  # from ±0: the smallest subnormal
    r = xp.where((ux == uy) | ((ax | ay) == 0), uy, stepped).view(dt._np)
    return xp.where((ax > inf) | (ay > inf), x + y, r)  # NaN in, NaN out


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
    m, e = np.frexp(a.astype(np.float32) if self._dtype is D.bfloat16 else a)
    return wrap(array_of(m).astype(self._dtype._np)), wrap(array_of(e).astype(np.int32))


def complex(real, imag):  # noqa: A001  (the op's name)
    dt = check_complex(real, imag)
    re, im = np.broadcast_arrays(nd(real), nd(imag))
    out = array_module(re).empty(re.shape, dt._np)
    if dt is D.complex32:  # (two float16 fields)
        out["real"], out["imag"] = re, im
    else:
        out.real = re
        out.imag = im
    return wrap(out)
