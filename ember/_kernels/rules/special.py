"""Rules of the special functions (``torch.special``'s ops and i0, sinc, igamma, igammac,
mvlgamma), for every backend: each is a pointwise row, so its type-promotion kind and operand
check join ``rules/pointwise.py``'s rule tables here, and ``OVERLOADS`` says which row and
calling form each aten overload is. CPU values: ``cpu/special.py``; Meta: ``meta/special.py``."""
from ..._core import dtype as D
from ..._core.promotion import can_cast
from . import pointwise as _pw
from .pointwise import BINARY, INPLACE_BINARY, INPLACE_UNARY, INT_TO_FLOAT as _F, PROMOTE, UNARY

_HALVES = (D.float16, D.bfloat16)
_NO_HALF = dict(half=False)


def floating_kernel(kernel, half=True, integral=True):
    """PyTorch's dtype dispatch of a floating special function: complex computation dtypes are
    rejected; so are float16/bfloat16 where ``half`` is False, and bool/integer ones where the op
    computes in the promoted dtype without converting integers (``integral`` False: igamma)."""
    def check(name, operands, dt):
        if (dt.is_complex or (not half and dt in _HALVES)
                or (not integral and dt._category <= D.INTEGRAL)):
            raise NotImplementedError(f'"{kernel}" not implemented for \'{dt._short}\'')
    return check


def check_mvlgamma(self, p):
    """mvlgamma's checks, in PyTorch's order (its kernel computes in the default float dtype
    for integers; complex inputs fail in the arange it builds)."""
    if self._dtype is D.bool_:
        raise RuntimeError("The input tensor may not be a boolean tensor.")
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    if self._dtype.is_complex:
        raise NotImplementedError(f'"arange_cpu" not implemented for \'{self._dtype._short}\'')


def check_mvlgamma_(self, p):
    """mvlgamma_'s checks: mvlgamma's, then (ATen's mvlgamma_ copies the out-of-place result
    into self) the cast of the result into self, with mvlgamma_out's wording."""
    check_mvlgamma(self, p)
    rdt = _pw.result_dtype(_F, (self,))[1]
    if not can_cast(rdt, self._dtype):
        raise RuntimeError(f"mvlgamma: result type {self._dtype._short} can't be cast to the "
                           f"desired output type {rdt._short}")


UNARY_RULES = {
    "special_entr": (_F, floating_kernel("entr_cpu")),
    "special_ndtri": (_F, floating_kernel("ndtri_cpu", **_NO_HALF)),
    "special_log_ndtr": (_F, floating_kernel("log_ndtr_cpu", **_NO_HALF)),
    "special_erfcx": (_F, floating_kernel("erfcx_cpu", **_NO_HALF)),
    "special_i0e": (_F, floating_kernel("i0e_cpu")),
    "special_i1": (_F, floating_kernel("i1_cpu")),
    "special_i1e": (_F, floating_kernel("i1e_cpu")),
    "special_bessel_j0": (_F, floating_kernel("bessel_j0_cpu", **_NO_HALF)),
    "special_bessel_j1": (_F, floating_kernel("bessel_j1_cpu", **_NO_HALF)),
    "special_bessel_y0": (_F, floating_kernel("bessel_y0_cpu", **_NO_HALF)),
    "special_bessel_y1": (_F, floating_kernel("bessel_y1_cpu", **_NO_HALF)),
    "special_modified_bessel_i0": (_F, floating_kernel("modified_bessel_i0_cpu", **_NO_HALF)),
    "special_modified_bessel_i1": (_F, floating_kernel("modified_bessel_i1_cpu", **_NO_HALF)),
    "special_modified_bessel_k0": (_F, floating_kernel("modified_bessel_k0_cpu", **_NO_HALF)),
    "special_modified_bessel_k1": (_F, floating_kernel("modified_bessel_k1_cpu", **_NO_HALF)),
    "special_scaled_modified_bessel_k0": (_F, floating_kernel(
        "scaled_modified_bessel_k0_cpu", **_NO_HALF)),
    "special_scaled_modified_bessel_k1": (_F, floating_kernel(
        "scaled_modified_bessel_k1_cpu", **_NO_HALF)),
    "special_airy_ai": (_F, floating_kernel("airy_ai_cpu", **_NO_HALF)),
    "special_spherical_bessel_j0": (_F, floating_kernel("spherical_bessel_j0_cpu", **_NO_HALF)),
    "i0": (_F, floating_kernel("i0_vml_cpu")),
    "sinc": (_F, None),
    "mvlgamma": (_F, None),
}

# The orthogonal polynomials: binary rows special_<name>(x, n), computed in float, no half.
POLYNOMIALS = ("chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
               "chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
               "laguerre_polynomial_l", "legendre_polynomial_p",
               "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
               "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w")

BINARY_RULES = {
    "special_xlog1py": (_F, floating_kernel("xlog1py_cpu")),
    "special_zeta": (_F, floating_kernel("zeta_cpu", **_NO_HALF)),
    "igamma": (PROMOTE, floating_kernel("igamma_cpu", integral=False)),
    "igammac": (PROMOTE, floating_kernel("igammac_cpu", integral=False)),
}
for _name in POLYNOMIALS:
    BINARY_RULES["special_" + _name] = (_F, floating_kernel(_name + "_cpu", **_NO_HALF))

_pw.UNARY_RULES.update(UNARY_RULES)
_pw.BINARY_RULES.update(BINARY_RULES)

# aten overload -> (row, calling form), as rules.pointwise.OVERLOADS (mvlgamma has its own
# kernels: it takes p).
OVERLOADS = {
    "special_entr": ("special_entr", UNARY),
    "special_ndtri": ("special_ndtri", UNARY),
    "special_log_ndtr": ("special_log_ndtr", UNARY),
    "special_erfcx": ("special_erfcx", UNARY),
    "special_i0e": ("special_i0e", UNARY),
    "special_i1": ("special_i1", UNARY),
    "special_i1e": ("special_i1e", UNARY),
    "special_bessel_j0": ("special_bessel_j0", UNARY),
    "special_bessel_j1": ("special_bessel_j1", UNARY),
    "special_bessel_y0": ("special_bessel_y0", UNARY),
    "special_bessel_y1": ("special_bessel_y1", UNARY),
    "special_modified_bessel_i0": ("special_modified_bessel_i0", UNARY),
    "special_modified_bessel_i1": ("special_modified_bessel_i1", UNARY),
    "special_modified_bessel_k0": ("special_modified_bessel_k0", UNARY),
    "special_modified_bessel_k1": ("special_modified_bessel_k1", UNARY),
    "special_scaled_modified_bessel_k0": ("special_scaled_modified_bessel_k0", UNARY),
    "special_scaled_modified_bessel_k1": ("special_scaled_modified_bessel_k1", UNARY),
    "special_airy_ai": ("special_airy_ai", UNARY),
    "special_spherical_bessel_j0": ("special_spherical_bessel_j0", UNARY),
    "i0": ("i0", UNARY), "i0_": ("i0", INPLACE_UNARY),
    "sinc": ("sinc", UNARY), "sinc_": ("sinc", INPLACE_UNARY),
    "special_xlog1py": ("special_xlog1py", BINARY),
    "special_xlog1py.self_scalar": ("special_xlog1py", BINARY),
    "special_xlog1py.other_scalar": ("special_xlog1py", BINARY),
    "special_zeta": ("special_zeta", BINARY), "special_zeta.self_scalar": ("special_zeta", BINARY),
    "special_zeta.other_scalar": ("special_zeta", BINARY),
    "igamma": ("igamma", BINARY), "igamma_": ("igamma", INPLACE_BINARY),
    "igammac": ("igammac", BINARY), "igammac_": ("igammac", INPLACE_BINARY),
    "special_chebyshev_polynomial_t": ("special_chebyshev_polynomial_t", BINARY),
    "special_chebyshev_polynomial_t.x_scalar": ("special_chebyshev_polynomial_t", BINARY),
    "special_chebyshev_polynomial_t.n_scalar": ("special_chebyshev_polynomial_t", BINARY),
    "special_chebyshev_polynomial_u": ("special_chebyshev_polynomial_u", BINARY),
    "special_chebyshev_polynomial_u.x_scalar": ("special_chebyshev_polynomial_u", BINARY),
    "special_chebyshev_polynomial_u.n_scalar": ("special_chebyshev_polynomial_u", BINARY),
    "special_chebyshev_polynomial_v": ("special_chebyshev_polynomial_v", BINARY),
    "special_chebyshev_polynomial_v.x_scalar": ("special_chebyshev_polynomial_v", BINARY),
    "special_chebyshev_polynomial_v.n_scalar": ("special_chebyshev_polynomial_v", BINARY),
    "special_chebyshev_polynomial_w": ("special_chebyshev_polynomial_w", BINARY),
    "special_chebyshev_polynomial_w.x_scalar": ("special_chebyshev_polynomial_w", BINARY),
    "special_chebyshev_polynomial_w.n_scalar": ("special_chebyshev_polynomial_w", BINARY),
    "special_hermite_polynomial_h": ("special_hermite_polynomial_h", BINARY),
    "special_hermite_polynomial_h.x_scalar": ("special_hermite_polynomial_h", BINARY),
    "special_hermite_polynomial_h.n_scalar": ("special_hermite_polynomial_h", BINARY),
    "special_hermite_polynomial_he": ("special_hermite_polynomial_he", BINARY),
    "special_hermite_polynomial_he.x_scalar": ("special_hermite_polynomial_he", BINARY),
    "special_hermite_polynomial_he.n_scalar": ("special_hermite_polynomial_he", BINARY),
    "special_laguerre_polynomial_l": ("special_laguerre_polynomial_l", BINARY),
    "special_laguerre_polynomial_l.x_scalar": ("special_laguerre_polynomial_l", BINARY),
    "special_laguerre_polynomial_l.n_scalar": ("special_laguerre_polynomial_l", BINARY),
    "special_legendre_polynomial_p": ("special_legendre_polynomial_p", BINARY),
    "special_legendre_polynomial_p.x_scalar": ("special_legendre_polynomial_p", BINARY),
    "special_legendre_polynomial_p.n_scalar": ("special_legendre_polynomial_p", BINARY),
    "special_shifted_chebyshev_polynomial_t": ("special_shifted_chebyshev_polynomial_t", BINARY),
    "special_shifted_chebyshev_polynomial_t.x_scalar": ("special_shifted_chebyshev_polynomial_t", BINARY),
    "special_shifted_chebyshev_polynomial_t.n_scalar": ("special_shifted_chebyshev_polynomial_t", BINARY),
    "special_shifted_chebyshev_polynomial_u": ("special_shifted_chebyshev_polynomial_u", BINARY),
    "special_shifted_chebyshev_polynomial_u.x_scalar": ("special_shifted_chebyshev_polynomial_u", BINARY),
    "special_shifted_chebyshev_polynomial_u.n_scalar": ("special_shifted_chebyshev_polynomial_u", BINARY),
    "special_shifted_chebyshev_polynomial_v": ("special_shifted_chebyshev_polynomial_v", BINARY),
    "special_shifted_chebyshev_polynomial_v.x_scalar": ("special_shifted_chebyshev_polynomial_v", BINARY),
    "special_shifted_chebyshev_polynomial_v.n_scalar": ("special_shifted_chebyshev_polynomial_v", BINARY),
    "special_shifted_chebyshev_polynomial_w": ("special_shifted_chebyshev_polynomial_w", BINARY),
    "special_shifted_chebyshev_polynomial_w.x_scalar": ("special_shifted_chebyshev_polynomial_w", BINARY),
    "special_shifted_chebyshev_polynomial_w.n_scalar": ("special_shifted_chebyshev_polynomial_w", BINARY),
}
