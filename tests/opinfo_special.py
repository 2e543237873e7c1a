"""OpInfo entries of the special functions (``torch.special``'s ops, i0, sinc, igamma, igammac,
mvlgamma): values at ordinary points and at 0, +-inf, NaN, every dtype (the integer and bool ones
compute in float; the half ones are an error where PyTorch has no kernel), broadcasting, the
Scalar overloads, complex inputs (PyTorch's dtype error), out= and in-place forms. Loaded by
tests/opinfo.py."""
import math

import numpy as np

from opinfo import ALL, FLOATS, OPS, OpInfo, Sample, T, tensor, values

_TOL = {"rtol": 1e-4, "atol": 1e-5}
_FIRST = len(OPS)  # this module's entries draw values from their own generator (see the end)


def _add(name, samples, dtypes=ALL, inplace=None, out=None, **tol):
    OPS.append(OpInfo(name, samples, dtypes, inplace, out, **{**_TOL, **tol}))


def _specials(dt):
    if dt in FLOATS:
        return T(np.array([[math.nan, math.inf, -math.inf], [0.0, -0.0, -2.5], [0.5, 1.0, 7.25]]),
                 dt)
    return tensor((3, 3), dt)


def _complex(shape, dt):
    v = values(shape, "float64") + 1j * values(shape, "float64")
    return T(np.asarray(v), dt)


def unary_samples(op):
    for dt in op.dtypes:
        yield Sample((_specials(dt),), desc=f"{dt} specials")
        yield Sample((tensor((2, 3), dt, high=9),), desc=f"{dt}")
        yield Sample((tensor((), dt),), desc=f"{dt} 0-dim")
    yield Sample((tensor((3, 4), "float32", "transposed"),), desc="transposed")
    yield Sample((tensor((0, 2), "float64"),), desc="empty")
    yield Sample((_complex((2,), "complex64"),), desc="complex")


def _poly_x(dt):
    """x values for the polynomials: no NaN, since for NaN x and degree >= 2 PyTorch's loops
    never run and return an uninitialized value."""
    t = _specials(dt)
    if dt in FLOATS:
        t.values[0, 0] = 0.3
    return t


def binary_samples(op, rhs=None, lhs=None, degrees=False):
    """Tensor/tensor samples; ``lhs``/``rhs`` = "number" for the Scalar overloads; ``degrees``:
    the second operand is a polynomial degree (small integers, negative, fractional, NaN)."""
    first = _poly_x if degrees else _specials
    def second(shape, dt):
        if not degrees:
            return tensor(shape, dt)
        if dt in FLOATS:
            return T(np.resize(np.array([0, 1, 2, 3, 7, 10, -1, 2.5, 12, math.nan]),
                               shape), dt)
        return T(np.resize(np.array([0, 1, 2, 3, 7, 10, 1, 4, 12, 5]), shape), dt)

    for dt in op.dtypes:
        if lhs == "number":
            yield Sample((1.5, second((2, 3), dt)), desc=f"number, {dt}")
            yield Sample((2, second((3,), dt)), desc=f"int number, {dt}")
            continue
        if rhs == "number":
            yield Sample((first(dt), 3), desc=f"{dt}, int number")
            yield Sample((tensor((2, 3), dt), 2.5), desc=f"{dt}, float number")
            continue
        yield Sample((first(dt), second((3, 3), dt)), desc=f"{dt} specials")
        yield Sample((tensor((2, 3), dt), second((3,), dt)), desc=f"{dt} broadcast")
        yield Sample((tensor((2, 1), dt), second((), dt)), desc=f"{dt} 0-dim")
    if lhs is None and rhs is None:
        yield Sample((tensor((2, 3), "float32"), second((2, 3), "float64")), desc="f32+f64")
        yield Sample((tensor((2, 3), "int64"), second((2, 3), "float32")), desc="int+f32")
        yield Sample((tensor((3, 4), "float64", "transposed"), second((3, 4), "float64")),
                     desc="transposed")
        yield Sample((tensor((2, 3), "float32"), second((4,), "float32")), desc="broadcast error")
        yield Sample((_complex((2,), "complex64"), _complex((2,), "complex64")), desc="complex")


# the torch.special ops with CPU kernels of their own
for _u in ("entr", "ndtri", "log_ndtr", "erfcx", "i0e", "i1", "i1e", "bessel_j0", "bessel_j1",
           "bessel_y0", "bessel_y1", "modified_bessel_i0", "modified_bessel_i1",
           "modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0",
           "scaled_modified_bessel_k1", "airy_ai", "spherical_bessel_j0"):
    _add(f"special_{_u}.default", unary_samples, out=f"special_{_u}.out")
# the aliases (CompositeImplicitAutograd) and ndtr
for _u in ("expm1", "exp2", "psi", "digamma", "gammaln", "erf", "erfc", "erfinv", "ndtr", "i0",
           "expit", "sinc", "log1p"):
    _add(f"special_{_u}.default", unary_samples, out=f"special_{_u}.out")
for _u in ("i0", "sinc"):
    _add(f"{_u}.default", unary_samples, ALL, f"{_u}_.default", f"{_u}.out")

_add("special_xlog1py.default", binary_samples, out="special_xlog1py.out")
_add("special_xlog1py.self_scalar", lambda op: binary_samples(op, lhs="number"),
     out="special_xlog1py.self_scalar_out")
_add("special_xlog1py.other_scalar", lambda op: binary_samples(op, rhs="number"),
     out="special_xlog1py.other_scalar_out")
_add("special_zeta.default", binary_samples, out="special_zeta.out")
_add("special_zeta.self_scalar", lambda op: binary_samples(op, lhs="number"),
     out="special_zeta.self_scalar_out")
_add("special_zeta.other_scalar", lambda op: binary_samples(op, rhs="number"),
     out="special_zeta.other_scalar_out")
_add("special_xlogy.default", binary_samples, out="special_xlogy.out")
_add("special_xlogy.self_scalar", lambda op: binary_samples(op, lhs="number"),
     out="special_xlogy.self_scalar_out")
_add("special_xlogy.other_scalar", lambda op: binary_samples(op, rhs="number"),
     out="special_xlogy.other_scalar_out")
for _p in ("chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
           "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
           "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
           "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
           "laguerre_polynomial_l", "legendre_polynomial_p"):
    _n = f"special_{_p}"
    _add(f"{_n}.default", lambda op: binary_samples(op, degrees=True), out=f"{_n}.out",
         rtol=1e-3)
    _add(f"{_n}.x_scalar", lambda op: binary_samples(op, lhs="number", degrees=True),
         out=f"{_n}.x_scalar_out", rtol=1e-3)
    _add(f"{_n}.n_scalar", lambda op: binary_samples(op, rhs="number", degrees=True),
         out=f"{_n}.n_scalar_out", rtol=1e-3)

_POLY_EDGES = T(np.array([[-1.0, 1.0, 0.0, 0.5, -0.5], [1.0, -1.0, 0.25, 0.0, 2.0]]), "float64")
_POLY_DEGREES = T(np.array([[7, 8, 9, 25, 40], [100, 101, 30, 1000, 600]]), "float64")
for _p in ("chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
           "chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
           "laguerre_polynomial_l", "legendre_polynomial_p"):
    OPS.append(OpInfo(f"special_{_p}.default", lambda op: iter([
        Sample((_POLY_EDGES, _POLY_DEGREES), desc="|x| = 1, x = 0, large degrees")]),
        ("float64",), None, f"special_{_p}.out", rtol=1e-6, atol=1e-8))


def igamma_samples(op):
    for dt in op.dtypes:
        if dt in FLOATS:
            a = T(np.array([[0.5, 1.0, 3.0], [0.0, 2.0, math.inf]]), dt)
            x = T(np.array([[0.25, 1.0, 2.0], [1.0, 0.0, 1.0]]), dt)
            yield Sample((a, x), desc=dt)
        yield Sample((tensor((2, 3), dt, positive=True), tensor((3,), dt, positive=True)),
                     desc=f"{dt} broadcast")
    yield Sample((T(np.array([-1.0, 1.0, math.nan]), "float64"),
                  T(np.array([1.0, -1.0, 1.0]), "float64")), desc="negative, NaN")
    yield Sample((tensor((2, 3), "float32", positive=True), tensor((2, 3), "float64",
                                                                   positive=True)), desc="mixed")
    yield Sample((_complex((2,), "complex64"), _complex((2,), "complex64")), desc="complex")


for _g, _s in (("igamma", "gammainc"), ("igammac", "gammaincc")):
    _add(f"{_g}.default", igamma_samples, ALL, f"{_g}_.default", f"{_g}.out")
    _add(f"special_{_s}.default", igamma_samples, ALL, None, f"special_{_s}.out")


def mvlgamma_samples(op, inplace=False):
    for dt in op.dtypes:
        for p in (1, 2, 3):
            yield Sample((tensor((2, 3), dt, low=2, high=9), p), desc=f"{dt} p={p}")
    yield Sample((tensor((2,), "float64", positive=True), 0), desc="p = 0")
    yield Sample((T(np.array([0.75, 1.0, 0.0, -1.0]), "float64"), 3), desc="poles")
    yield Sample((_complex((2,), "complex64"), 1), desc="complex")


_add("mvlgamma.default", mvlgamma_samples, FLOATS + ("int64", "bool"), "mvlgamma_.default",
     "mvlgamma.out")
_add("special_multigammaln.default", mvlgamma_samples, ("float32", "float64", "int64"), None,
     "special_multigammaln.out")


def alias_samples(op):
    name = op.name.split(".")[0]
    x = tensor((2, 3), "float32", low=0, high=1)
    if name == "special_logit":
        yield Sample((x,), desc="no eps")
        yield Sample((x, 0.25), desc="eps")
    elif name == "special_polygamma":
        for n in (0, 1, 3):
            yield Sample((n, tensor((2, 3), "float64", positive=True)), desc=f"n={n}")
        yield Sample((-1, x), desc="negative n")
    elif name == "special_logsumexp":
        for dim, keep in (([1], False), ([0, 1], True), ([], False)):
            yield Sample((tensor((2, 3), "float64"), dim, keep), desc=f"dim={dim}")
    elif name == "special_round":
        for d in (0, 1, -1):
            yield Sample((T(values((2, 3), "float64") * 1.37, "float64"),), {"decimals": d},
                         desc=f"decimals={d}")
        yield Sample((tensor((2, 3), "int64"),), desc="int64")
    else:  # softmax, log_softmax
        yield Sample((tensor((2, 3), "float32"), 1), desc="dim=1")
        yield Sample((tensor((2, 3), "float32"), 0, DT_F64), desc="dtype")
        yield Sample((tensor((2, 3), "int64"), 0, DT_F64), desc="int64 with dtype")


from opinfo import DT  # noqa: E402
DT_F64 = DT("float64")
_add("special_logit.default", alias_samples, out="special_logit.out")
_add("special_polygamma.default", alias_samples, out="special_polygamma.out")
_add("special_logsumexp.default", alias_samples, out="special_logsumexp.out")
_add("special_round.default", alias_samples, out="special_round.out")
_add("special_softmax.default", alias_samples)
OPS.append(OpInfo("special_log_softmax.default", lambda op: (
    Sample(s.args[:2], {"dtype": s.args[2]} if len(s.args) > 2 else {}, desc=s.desc)
    for s in alias_samples(op)), ALL, **_TOL))


# ---------------------------------------------------------------------------------------------
# Top-level ops added with the special functions (issue 18): heaviside, gcd, lcm, nextafter,
# frexp, complex, isin, addr, fill, resolve_neg, sum_to_size. The factories (logspace,
# triu_indices, tril_indices) are checked by tests/test_missing_ops.py.

from opinfo import NOT_IN_TABLE, INTS  # noqa: E402

NOT_IN_TABLE.update(dict.fromkeys(
    "logspace.default logspace.out triu_indices.default triu_indices.out tril_indices.default "
    "tril_indices.out".split(), "factory: checked by tests/test_missing_ops.py"))


def same_dtype_samples(op):
    for dt in op.dtypes:
        yield Sample((_specials(dt), _specials(dt)), desc=f"{dt} specials")
        yield Sample((tensor((2, 3), dt), tensor((3,), dt)), desc=f"{dt} broadcast")
        yield Sample((tensor((2, 3), dt, "transposed"), tensor((), dt)), desc=f"{dt} 0-dim")
    yield Sample((tensor((2, 3), "float32"), tensor((2, 3), "float64")), desc="mixed dtypes")
    yield Sample((tensor((2, 3), "int32"), tensor((2, 3), "int64")), desc="mixed ints")
    yield Sample((tensor((2, 3), "float32"), tensor((4,), "float32")), desc="broadcast error")
    yield Sample((_complex((2,), "complex64"), _complex((2,), "complex64")), desc="complex")


_add("heaviside.default", same_dtype_samples, ALL, "heaviside_.default", "heaviside.out")
_add("gcd.default", same_dtype_samples, ALL, "gcd_.default", "gcd.out")
_add("lcm.default", same_dtype_samples, ALL, "lcm_.default", "lcm.out")
_add("nextafter.default", same_dtype_samples, ALL, "nextafter_.default", "nextafter.out",
     rtol=0, atol=0)
OPS.append(OpInfo("gcd.default", lambda op: iter([Sample(
    (T(np.array([0, -4, -6, 0, 7]), "int64"), T(np.array([0, 6, -4, 5, 0]), "int64")),
    desc="zeros and signs")]), INTS, "gcd_.default", "gcd.out"))
OPS.append(OpInfo("lcm.default", lambda op: iter([Sample(
    (T(np.array([0, -4, -6, 3, 7]), "int64"), T(np.array([0, 6, -4, 5, 0]), "int64")),
    desc="zeros and signs")]), INTS, "lcm_.default", "lcm.out"))
_add("frexp.Tensor", unary_samples, ALL, None, "frexp.Tensor_out")


def complex_samples(op):
    # (float16 would give ComplexHalf, a dtype ember does not have)
    for dt in ("float32", "float64", "int64"):
        yield Sample((tensor((2, 3), dt), tensor((3,), dt)), desc=dt)
    yield Sample((tensor((2, 3), "float32"), tensor((2, 3), "float64")), desc="mixed")
    yield Sample((tensor((2, 3), "float32"), tensor((4,), "float32")), desc="broadcast error")
    yield Sample((_specials("float64"), _specials("float64")), desc="specials")


OPS.append(OpInfo("complex.default", complex_samples, ALL, None, "complex.out"))


def isin_samples(op):
    name = op.name.split(".")[1]
    for dt in ("float32", "int64", "bool", "uint8", "float16"):
        for invert in (False, True):
            kw = {"invert": invert}
            if name == "Tensor_Tensor":
                yield Sample((tensor((3, 4), dt), tensor((5,), dt)), kw, desc=f"{dt} {invert}")
                yield Sample((tensor((3, 4), dt), tensor((2, 2), "float64")), kw, desc="mixed")
            elif name == "Tensor_Scalar":
                yield Sample((tensor((3, 4), dt), 2), kw, desc=f"{dt} {invert}")
            else:
                yield Sample((2, tensor((3, 4), dt)), kw, desc=f"{dt} {invert}")


for _ov in ("Tensor_Tensor", "Tensor_Scalar", "Scalar_Tensor"):
    OPS.append(OpInfo(f"isin.{_ov}", isin_samples, ALL, None, f"isin.{_ov}_out"))


def addr_samples(op):
    for dt in ("float32", "float64", "int64", "bool"):
        yield Sample((tensor((2, 3), dt), tensor((2,), dt), tensor((3,), dt)), desc=dt)
        yield Sample((tensor((3,), dt), tensor((2,), dt), tensor((3,), dt)), desc=f"{dt} bcast")
    f = "float64"
    yield Sample((_specials(f), tensor((3,), f), tensor((3,), f)), {"beta": 0, "alpha": 2},
                 desc="beta=0 ignores NaN")
    yield Sample((tensor((2, 3), f), tensor((2,), f), tensor((3,), f)), {"beta": 0.5,
                                                                         "alpha": -1.5})
    yield Sample((tensor((2, 3), "int64"), tensor((2,), "int64"), tensor((3,), "int64")),
                 {"beta": 2, "alpha": 3}, desc="int scalars")
    yield Sample((tensor((2, 3), f), tensor((2, 2), f), tensor((3,), f)), desc="2-D vec1")
    yield Sample((tensor((2, 3), "float32"), tensor((2,), "int64"), tensor((3,), f)),
                 desc="mixed dtypes")


OPS.append(OpInfo("addr.default", addr_samples, ALL, "addr_.default", "addr.out", rtol=1e-5))


def fill_samples(op):
    tensor_value = op.name.endswith("Tensor")
    for dt in ("float32", "int64", "bool", "float16"):
        value = T(np.array(2.5), "float64") if tensor_value else 2.5
        yield Sample((tensor((2, 3), dt), value), desc=dt)
        yield Sample((tensor((3, 4), dt, "transposed"), value), desc=f"{dt} transposed")
    if tensor_value:
        yield Sample((tensor((2, 3), "float32"), tensor((2,), "float32")), desc="non-0-dim value")


OPS.append(OpInfo("fill.Scalar", fill_samples, ALL))
OPS.append(OpInfo("fill.Tensor", fill_samples, ALL))
OPS.append(OpInfo("resolve_neg.default", unary_samples, ALL))


def sum_to_size_samples(op):
    for dt in ("float32", "int64", "float64"):
        x = tensor((2, 3, 4), dt)
        for size in ([1, 3, 1], [4], [3, 4], [2, 3, 4], [1, 1, 1], []):
            yield Sample((x, size), desc=f"{dt} {size}")
    yield Sample((tensor((2, 3), "float32"), [3, 3]), desc="not expandable")


OPS.append(OpInfo("sum_to_size.default", sum_to_size_samples, ALL, rtol=1e-5))


# Sample values come from opinfo's shared generator, drawn when a test runs. These entries swap
# in a generator of their own, so adding them leaves the values every other entry draws (and
# any order-sensitive half-precision sample there) exactly as they were.
import opinfo as _opinfo  # noqa: E402

_OWN_RNG = np.random.default_rng(18)


def _own_values(gen):
    def samples(op):
        saved, _opinfo._rng = _opinfo._rng, _OWN_RNG
        try:
            items = list(gen(op))
        finally:
            _opinfo._rng = saved
        return iter(items)
    return samples


for _op in OPS[_FIRST:]:
    _op.samples = _own_values(_op.samples)
