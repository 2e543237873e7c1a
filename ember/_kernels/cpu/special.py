"""CPU kernels of the special functions: ``torch.special``'s own ops (entr, erfcx, ndtri, the
Bessel, Airy and orthogonal-polynomial families, xlog1py, zeta ...) and the top-level ones it
builds on (i0, sinc, igamma, igammac, mvlgamma).

Each op is a row of the pointwise tables (``pointwise.UNARY`` / ``BINARY``), added here, so dtype
rules, operand checks, broadcasting, wrapped numbers, out= and in-place forms behave exactly as
for every other pointwise op; the rules (``rules/special.py``) are the Meta kernels' too. Values
come from ``scipy.special`` where SciPy has the function; the orthogonal polynomials follow
PyTorch's definitions (``n`` truncated to an integer, 0 for negative ``n``, closed forms at
``|x| == 1`` and trigonometric forms for large ``n``), evaluated by their three-term recurrences.
"""
import math

import numpy as np
import scipy.special as _sp

from ..._core import dtype as D
from ..rules import special as _RS
from ..rules.special import check_mvlgamma, check_mvlgamma_
from . import pointwise as _pw
from .pointwise_values import _half_as_float, _ufunc
from ._util import wrap

_HALVES = (D.float16, D.bfloat16)


def _in_float(f):
    """Compute float16/bfloat16 in float32 (SciPy has no half loops); PyTorch does the same."""
    return _half_as_float(f)


# ---------------------------------------------------------------------------------------------
# Unary values

def spherical_bessel_j0_values(x):
    # sin(x)/x, 1 at 0; PyTorch returns 0 at +-inf
    with np.errstate(all="ignore"):
        r = np.where(x == 0, x.dtype.type(1), np.sin(x) / np.where(x == 0, 1, x))
    return np.where(np.isinf(x), x.dtype.type(0), r)


def sinc_values(x, dt):
    if dt in _HALVES:
        x = np.asarray(x, np.float32)
    # np.sinc computes sin(pi x) / (pi x) with 1 at 0, for real and complex x
    return np.sinc(x)


def airy_ai_values(x):
    return _sp.airy(x)[0]


def mvlgamma_values(x, dt, p):
    if dt in _HALVES:
        x = np.asarray(x, np.float32)
    r = np.full(x.shape, p * (p - 1) / 4 * math.log(math.pi), x.dtype)
    for j in range(p):
        r = r + _sp.gammaln(x - x.dtype.type(j / 2))
    return r


# ---------------------------------------------------------------------------------------------
# Binary values

def xlog1py_values(x, y):
    # 0 where x == 0 unless y is NaN (as xlogy)
    return np.where((x == 0) & ~np.isnan(y), x.dtype.type(0), x * np.log1p(y))


def zeta_values(x, q):
    # Hurwitz zeta: inf at x == 1, NaN for x < 1, inf at non-positive integer q; PyTorch's
    # series gives NaN (0 * inf in its tail) at q == +inf, where SciPy returns the limit 0
    r = np.where(x == 1, x.dtype.type(np.inf), _sp.zeta(x, q))
    return np.where((q == np.inf) & (x != 1), x.dtype.type(np.nan), r)


def igamma_values(a, x, dt):
    return _at_boundaries(a, x, _in_float(_sp.gammainc)(a, x, dt), 1)


def igammac_values(a, x, dt):
    return _at_boundaries(a, x, _in_float(_sp.gammaincc)(a, x, dt), 0)


def _at_boundaries(a, x, r, at_infinite_x):
    """``r`` with ATen's boundary values (calc_igamma/calc_igammac), the first case that holds
    deciding: a NaN operand decides nothing before its turn, so igamma(NaN, 0) is 0 and
    igamma(inf, NaN) is 0 where SciPy gives NaN. ``at_infinite_x``: the value at x = inf (1
    for igamma, 0 for igammac), which the cases a = 0 and x = 0 mirror. (Applied last case
    first, so that an earlier case overrides a later one.)"""
    where, isinf = np.where, np.isinf
    at_zero_x, nan = 1 - at_infinite_x, np.nan
    r = where(isinf(x), at_infinite_x, r)
    r = where(isinf(a), where(isinf(x), nan, at_zero_x), r)
    r = where(x == 0, at_zero_x, r)
    r = where(a == 0, where(x > 0, at_infinite_x, nan), r)
    return where((x < 0) | (a < 0), nan, r).astype(r.dtype, copy=False)


def _degree(n):
    """PyTorch's static_cast<int64_t>(n): truncation, and -1 (a zero polynomial) for NaN/inf."""
    n = np.asarray(n)
    if n.dtype.kind == "f":
        return np.where(np.isfinite(n), np.trunc(np.where(np.isfinite(n), n, -1)), -1).astype(
            np.int64)
    return n.astype(np.int64)


def _recurrence(x, n, first, second, step):
    """Evaluate P_n(x) elementwise from P_0 = ``first``, P_1 = ``second`` and
    P_{k+1} = step(k, x, P_k, P_{k-1}); a lane stops once its degree is reached (or its value
    is NaN, as PyTorch's loops stop)."""
    x, n = np.broadcast_arrays(x, n)
    p = np.broadcast_to(first, x.shape).astype(x.dtype)
    q = np.broadcast_to(second, x.shape).astype(x.dtype)
    out = np.where(n == 0, p, q)
    top = int(n.max()) if n.size else 0
    k = 1
    while k < top:
        live = n > k
        if not live.any() or np.isnan(q[live]).all():
            break
        r = step(k, x, q, p)
        p, q = q, r
        out = np.where(n == k + 1, q, out)
        k += 1
    out = np.where(n > k, np.where(np.isnan(q), q, out), out)  # stopped early: NaN lanes
    return out


def _chebyshev(kind):
    def values(x, n):
        n = _degree(n)
        x, n = np.broadcast_arrays(x, n)
        one = x.dtype.type(1)
        first = {"t": x, "u": x + x, "v": x + x - one, "w": x + x + one}[kind]
        ax = np.abs(x)
        big = n > (6 if kind == "t" else 8)
        closed = (big & (ax < 1)) | (ax == 1)  # lanes a closed form answers: no recurrence
        r = _recurrence(x, np.where(closed, 0, np.maximum(n, 0)), one, first,
                        lambda k, x, q, p: (x + x) * q - p)
        nf = n.astype(x.dtype)
        even = (n % 2) == 0
        theta = np.arccos(np.clip(x, -1, 1))
        # at |x| == 1 each kind has a closed form; for |x| < 1 and large n, PyTorch uses the
        # trigonometric definition (the recurrence loses accuracy there)
        if kind == "t":
            at_one = np.where((x > 0) | even, one, -one)
            trig = np.cos(nf * theta)
        elif kind == "u":
            at_one = np.where((x > 0) | even, nf + 1, -(nf + 1))
            s = np.sin(theta)
            trig = np.where(s != 0, np.sin((nf + 1) * theta) / np.where(s != 0, s, 1),
                            (nf + 1) * np.cos((nf + 1) * theta) / x)
        elif kind == "v":
            at_one = np.where(x > 0, one, np.where(even, nf + nf + 1, -(nf + nf + 1)))
            trig = np.where(np.sin(theta / 2) != 1,
                            np.cos((nf + x.dtype.type(0.5)) * theta) / np.cos(theta / 2),
                            np.where(even, nf + nf + 1, -(nf + nf + 1)))
        else:
            at_one = np.where(x > 0, nf + nf + 1, np.where(even, one, -one))
            c = np.sin(theta / 2)
            trig = np.where(np.cos(theta / 2) != 1,
                            np.sin((nf + x.dtype.type(0.5)) * theta) / np.where(c != 0, c, 1),
                            np.where(x > 0, nf + nf + 1, np.where(even, one, -one)))
        r = np.where(big & (ax < 1), trig, r)
        r = np.where(ax == 1, at_one, r)
        return np.where(n < 0, x.dtype.type(0), r)
    return values


def _shifted(values):
    """The shifted Chebyshev polynomials: T*_n(x) = T_n(2x - 1) (and U, V, W alike)."""
    def shifted(x, n):
        return values(x + x - x.dtype.type(1), n)
    return shifted


def hermite_h_values(x, n):
    n = _degree(n)
    x, n = np.broadcast_arrays(x, n)
    limit = 128 if x.dtype == np.float32 else 512
    two = x.dtype.type(2)
    r = _recurrence(x, np.clip(n, 0, limit), x.dtype.type(1), x + x,
                    lambda k, x, q, p: (x + x) * q - two * k * p)
    r = np.where(n > limit, x.dtype.type(np.nan), r)
    return np.where(n < 0, x.dtype.type(0), r)


def hermite_he_values(x, n):
    n = _degree(n)
    x, n = np.broadcast_arrays(x, n)
    limit = 128 if x.dtype == np.float32 else 512
    r = _recurrence(x, np.clip(n, 0, limit), x.dtype.type(1), x,
                    lambda k, x, q, p: x * q - k * p)
    r = np.where(n > limit, x.dtype.type(np.nan), r)
    return np.where(n < 0, x.dtype.type(0), r)


def laguerre_l_values(x, n):
    n = _degree(n)
    x, n = np.broadcast_arrays(x, n)
    one = x.dtype.type(1)
    r = _recurrence(x, np.maximum(n, 0), one, one - x,
                    lambda k, x, q, p: ((2 * k + one - x) * q - k * p) / (k + 1))
    r = np.where(x == 0, one, r)
    return np.where(n < 0, x.dtype.type(0), r)


def legendre_p_values(x, n):
    n = _degree(n)
    x, n = np.broadcast_arrays(x, n)
    one = x.dtype.type(1)
    r = _recurrence(x, np.maximum(n, 0), one, x,
                    lambda k, x, q, p: ((2 * k + 1) * x * q - k * p) / (k + 1))
    even = (n % 2) == 0
    r = np.where(np.abs(x) == 1, np.where((x > 0) | even, one, -one), r)
    return np.where(n < 0, x.dtype.type(0), r)


def _plain(f):
    """A NumPy/SciPy function of the arrays only (the row convention appends the dtype)."""
    return _ufunc(f)


# ---------------------------------------------------------------------------------------------
# The compute rows, by op name as native_functions.yaml names it (their rules and overloads:
# rules/special.py).

UNARY = {
    "special_entr": _in_float(_sp.entr),
    "special_ndtri": _plain(_sp.ndtri),
    "special_log_ndtr": _plain(_sp.log_ndtr),
    "special_erfcx": _plain(_sp.erfcx),
    "special_i0e": _in_float(_sp.i0e),
    "special_i1": _in_float(_sp.i1),
    "special_i1e": _in_float(_sp.i1e),
    "special_bessel_j0": _plain(_sp.j0),
    "special_bessel_j1": _plain(_sp.j1),
    "special_bessel_y0": _plain(_sp.y0),
    "special_bessel_y1": _plain(_sp.y1),
    "special_modified_bessel_i0": _plain(_sp.i0),
    "special_modified_bessel_i1": _plain(_sp.i1),
    "special_modified_bessel_k0": _plain(_sp.k0),
    "special_modified_bessel_k1": _plain(_sp.k1),
    "special_scaled_modified_bessel_k0": _plain(_sp.k0e),
    "special_scaled_modified_bessel_k1": _plain(_sp.k1e),
    "special_airy_ai": _plain(airy_ai_values),
    "special_spherical_bessel_j0": _plain(spherical_bessel_j0_values),
    "i0": _in_float(_sp.i0),
    "sinc": sinc_values,
    "mvlgamma": mvlgamma_values,
}

_POLYNOMIALS = {
    "chebyshev_polynomial_t": _chebyshev("t"), "chebyshev_polynomial_u": _chebyshev("u"),
    "chebyshev_polynomial_v": _chebyshev("v"), "chebyshev_polynomial_w": _chebyshev("w"),
    "hermite_polynomial_h": hermite_h_values, "hermite_polynomial_he": hermite_he_values,
    "laguerre_polynomial_l": laguerre_l_values, "legendre_polynomial_p": legendre_p_values,
}
_POLYNOMIALS.update({"shifted_" + k: _shifted(_POLYNOMIALS[k]) for k in
                     ("chebyshev_polynomial_t", "chebyshev_polynomial_u",
                      "chebyshev_polynomial_v", "chebyshev_polynomial_w")})

BINARY = {
    "special_xlog1py": _in_float(xlog1py_values),
    "special_zeta": _plain(zeta_values),
    "igamma": igamma_values,
    "igammac": igammac_values,
}
for _name, _fn in _POLYNOMIALS.items():
    BINARY["special_" + _name] = _plain(_fn)

_pw.UNARY.update(UNARY)
_pw.BINARY.update(BINARY)


# ---------------------------------------------------------------------------------------------
# Kernels: mvlgamma (it takes p), and one per overload of rules.special.OVERLOADS.

def mvlgamma(self, p):
    check_mvlgamma(self, p)
    return wrap(_pw.evaluate("mvlgamma", self, params=(p,))[0])


def mvlgamma_(self, p):
    check_mvlgamma_(self, p)
    return _pw.evaluate_into("mvlgamma", self, self, params=(p,))


_pw.register_overloads(_RS.OVERLOADS)
