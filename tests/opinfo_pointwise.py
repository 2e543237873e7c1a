"""OpInfo entries of the pointwise area: unary math (exp2 ... digamma, rounding, predicates),
binary math (fmod ... shifts), clamp/lerp/addcmul/addcdiv, float_power, isclose and the complex
basics (view_as_real/complex, real/imag, conj, angle, polar). Loaded by tests/opinfo.py."""
import math

import numpy as np

from opinfo import (ALL, FLOATS, INTS, NOT_IN_TABLE, OPS, OpInfo, Sample, T, binary_samples,
                    tensor, unary_samples, values)

NUMERIC = tuple(d for d in ALL if d != "bool")
INTEGRAL = INTS + ("bool",)
COMPLEX = ("complex64", "complex128")


def _add(name, samples, dtypes=ALL, inplace=None, out=None, **tol):
    OPS.append(OpInfo(name, samples, dtypes, inplace, out, **tol))


def complex_tensor(shape, dtype, layout="contiguous", low=-3, high=3):
    v = values(shape, "float64", low, high) + 1j * values(shape, "float64", low, high)
    return T(np.asarray(v), dtype, layout)


def with_specials(dtype):
    """Values holding NaN, +-inf, +-0 (floats) next to ordinary numbers."""
    if dtype in FLOATS:
        return T(np.array([[math.nan, math.inf, -math.inf], [0.0, -0.0, -2.5]]), dtype)
    return tensor((2, 3), dtype)


# ---------------------------------------------------------------------------------------------
# Unary

def unary_with_complex(op, **kw):
    yield from unary_samples(op, **kw)
    for dt in COMPLEX:
        yield Sample((complex_tensor((2, 3), dt),), desc=f"{dt}")
        yield Sample((complex_tensor((3, 4), dt, "transposed"),), desc=f"{dt} transposed")


_UNARY = {  # op -> (value kwargs, tolerances)
    "sign": ({}, {}), "sgn": ({}, {}),
    "exp2": ({}, {"rtol": 1e-2}), "expm1": ({}, {"rtol": 1e-2, "atol": 1e-3}),
    "log2": ({"positive": True}, {"rtol": 1e-2}),
    "log10": ({"positive": True}, {"rtol": 1e-2}),
    "log1p": ({"positive": True}, {"rtol": 1e-2}),
    "rsqrt": ({"positive": True}, {"rtol": 1e-2}),
    "tan": ({"low": -1, "high": 1}, {"rtol": 1e-2, "atol": 1e-3}),
    "asin": ({"low": -1, "high": 1}, {"rtol": 1e-2, "atol": 1e-3}),
    "acos": ({"low": -1, "high": 1}, {"rtol": 1e-2, "atol": 1e-3}),
    "atan": ({}, {"rtol": 1e-2, "atol": 1e-3}),
    "sinh": ({}, {"rtol": 1e-2, "atol": 1e-3}), "cosh": ({}, {"rtol": 1e-2}),
    "asinh": ({}, {"rtol": 1e-2, "atol": 1e-3}),
    "acosh": ({"positive": True}, {"rtol": 1e-2, "atol": 1e-3}),
    "atanh": ({"low": -1, "high": 1}, {"rtol": 1e-2, "atol": 1e-3}),
    "erf": ({}, {"rtol": 1e-2, "atol": 1e-3}), "erfc": ({}, {"rtol": 1e-2, "atol": 1e-3}),
    "erfinv": ({"low": -1, "high": 1}, {"rtol": 1e-2, "atol": 1e-3}),
    "lgamma": ({"positive": True}, {"rtol": 1e-2, "atol": 1e-3}),
    "digamma": ({"positive": True}, {"rtol": 1e-2, "atol": 1e-3}),
    "floor": ({}, {}), "ceil": ({}, {}), "round": ({}, {}),
    "trunc": ({}, {}), "frac": ({}, {}),
    "square": ({}, {"rtol": 1e-3}),
}
for _u, (_kw, _tol) in _UNARY.items():
    _add(f"{_u}.default", lambda op, kw=_kw: unary_with_complex(op, **kw), ALL, f"{_u}_.default",
         f"{_u}.out", **_tol)


def round_decimals_samples(op):
    for dt in op.dtypes:
        for d in (0, 1, 2, -1):
            yield Sample((T(values((2, 3), "float64") * 1.37, dt),), {"decimals": d},
                         desc=f"{dt} decimals={d}")
    yield Sample((tensor((3, 4), "float32", "transposed"),), {"decimals": 1}, desc="transposed")
    yield Sample((complex_tensor((2,), "complex64"),), {"decimals": 1}, desc="complex")


_add("round.decimals", round_decimals_samples, ALL, "round_.decimals", "round.decimals_out",
     rtol=1e-3, atol=1e-3)


def logit_samples(op):
    for dt in op.dtypes:
        for eps in (None, 0.3):
            yield Sample((T(values((2, 3), "float64", 0, 1), dt),), {"eps": eps},
                         desc=f"{dt} eps={eps}")
    yield Sample((tensor((3, 4), "float32", "sliced", low=0, high=1),), desc="sliced")
    yield Sample((complex_tensor((2,), "complex64"),), desc="complex")


_add("logit.default", logit_samples, ALL, "logit_.default", "logit.out", rtol=1e-2, atol=1e-3)


def polygamma_samples(op, inplace=False):
    for dt in op.dtypes:
        for n in (0, 1, 2):
            t = tensor((2, 3), dt, positive=True)
            yield Sample((t, n) if inplace else (n, t), desc=f"{dt} n={n}")
    t = tensor((2, 3), "float32", positive=True)
    yield Sample((t, -1) if inplace else (-1, t), desc="negative n")
    if not inplace:
        yield Sample((1, tensor((3, 4), "float64", "transposed", positive=True)), desc="strided")


_add("polygamma.default", polygamma_samples, ALL, None, "polygamma.out", rtol=1e-2, atol=1e-3)
# polygamma_ takes (self, n): its own entry, since the functional op's samples are (n, self)
_add("polygamma_.default", lambda op: polygamma_samples(op, inplace=True), FLOATS + ("int64",),
     rtol=1e-2, atol=1e-3)


def specials_samples(op):
    for dt in op.dtypes:
        yield Sample((with_specials(dt),), desc=f"{dt} specials")
        yield Sample((tensor((0, 3), dt),), desc=f"{dt} empty")
        yield Sample((tensor((), dt),), desc=f"{dt} 0-dim")
    yield Sample((T(np.array([[math.nan, 1.0], [math.inf, -math.inf]]), "float32", "transposed"),),
                 desc="transposed")
    for dt in COMPLEX:
        v = np.array([complex(math.nan, 1), complex(1, math.inf), complex(-math.inf, 0), 1 + 2j])
        yield Sample((T(v, dt),), desc=dt)


_add("nan_to_num.default", specials_samples, ALL, "nan_to_num_.default", "nan_to_num.out")
OPS.append(OpInfo("nan_to_num.default", lambda op: iter([
    Sample((with_specials("float32"),), {"nan": 1.5, "posinf": 7.0, "neginf": -9.0}),
    Sample((with_specials("float64"),), {"posinf": 1e300}),
    Sample((with_specials("float16"),), {"nan": -1.0})]), ALL, "nan_to_num_.default",
    "nan_to_num.out"))
for _p in ("isnan", "isinf", "isposinf", "isneginf", "signbit"):
    _add(f"{_p}.default", specials_samples, ALL, None, f"{_p}.out")
_add("isfinite.default", specials_samples, ALL)
_add("angle.default", lambda op: (s for f in (specials_samples, unary_with_complex)
                                  for s in f(op)), ALL, None, "angle.out", rtol=1e-5)
_add("abs.default", lambda op: unary_with_complex(op), COMPLEX, "abs_.default", "abs.out")

# ---------------------------------------------------------------------------------------------
# Binary


def _binary(name, inplace, out, dtypes=ALL, rhs="tensor", lhs="tensor", extra=None,
            complex_ok=False, **kw):
    tol = {k: kw.pop(k) for k in ("rtol", "atol") if k in kw}

    def samples(op, kw=kw):
        yield from binary_samples(op, rhs, lhs, extra, **kw)
        if complex_ok and rhs == lhs == "tensor":  # the complex sample (or PyTorch's error)
            yield Sample((complex_tensor((2, 3), "complex64"), complex_tensor((3,), "complex64")),
                         dict(extra or {}), desc="complex64")
    _add(name, samples, dtypes, inplace, out, **tol)


_binary("fmod.Tensor", "fmod_.Tensor", "fmod.Tensor_out", nonzero=True, complex_ok=True,
        rtol=1e-3, atol=1e-2)
_binary("fmod.Scalar", "fmod_.Scalar", "fmod.Scalar_out", NUMERIC, rhs="number", rtol=1e-3,
        atol=1e-2)
OPS.append(OpInfo("fmod.Tensor", lambda op: iter([
    Sample((T(np.array([5, -5, 3]), "int64"), T(np.array([2, 0, 1]), "int64")),
           data_dependent=True, desc="integer division by zero")]), ALL, "fmod_.Tensor",
    "fmod.Tensor_out"))
_binary("atan2.default", "atan2_.default", "atan2.out", complex_ok=True, numbers=False,
        rtol=1e-2, atol=1e-3)
_binary("hypot.default", "hypot_.default", "hypot.out", complex_ok=True, numbers=False, rtol=1e-2)
for _m in ("sigmoid_backward", "tanh_backward"):  # grad_output, output: no in-place form
    _binary(f"{_m}.default", None, f"{_m}.grad_input", complex_ok=True, numbers=False,
            rtol=1e-2)
for _m in ("fmax", "fmin"):
    _binary(f"{_m}.default", None, f"{_m}.out", complex_ok=True, numbers=False)
    OPS.append(OpInfo(f"{_m}.default", lambda op: iter([Sample(
        (T(np.array([math.nan, 1.0, math.nan, -0.0]), "float32"),
         T(np.array([2.0, math.nan, math.nan, 0.0]), "float32")), desc="NaN operands")]),
        ALL, None, f"{_m}.out"))
_binary("copysign.Tensor", "copysign_.Tensor", "copysign.out", complex_ok=True)
_binary("copysign.Scalar", "copysign_.Scalar", "copysign.Scalar_out", NUMERIC, rhs="number")
for _m in ("logaddexp", "logaddexp2"):
    _binary(f"{_m}.default", None, f"{_m}.out", complex_ok=True, numbers=False, rtol=1e-2,
            atol=1e-3)
_binary("xlogy.Tensor", "xlogy_.Tensor", "xlogy.OutTensor", complex_ok=True, positive=True,
        rtol=1e-2, atol=1e-3)
_binary("xlogy.Scalar_Self", None, "xlogy.OutScalar_Self", NUMERIC, lhs="number",
        positive=True, rtol=1e-2, atol=1e-3)
_binary("xlogy.Scalar_Other", "xlogy_.Scalar_Other", "xlogy.OutScalar_Other", NUMERIC,
        rhs="number", positive=True, rtol=1e-2, atol=1e-3)
OPS.append(OpInfo("xlogy.Tensor", lambda op: iter([Sample(
    (T(np.array([0.0, 0.0, 2.0, 0.0]), "float64"),
     T(np.array([0.0, math.nan, -1.0, 3.0]), "float64")),
    desc="x == 0")]), ALL, "xlogy_.Tensor", "xlogy.OutTensor"))

_SHIFT_DTYPES = INTEGRAL + ("float32",)
for _s, _py in (("bitwise_left_shift", "__lshift__"), ("bitwise_right_shift", "__rshift__")):
    _binary(f"{_s}.Tensor", f"{_s}_.Tensor", f"{_s}.Tensor_out", _SHIFT_DTYPES, numbers=False,
            high=9)
    _binary(f"{_s}.Tensor_Scalar", f"{_s}_.Tensor_Scalar", f"{_s}.Tensor_Scalar_out",
            _SHIFT_DTYPES, rhs="number", int_only=True)
    _binary(f"{_s}.Scalar_Tensor", None, f"{_s}.Scalar_Tensor_out", INTS, lhs="number")
    _ipy = "__i" + _py[2:]
    _binary(f"{_py}.Tensor", f"{_ipy}.Tensor", None, _SHIFT_DTYPES, numbers=False, high=70)
    _binary(f"{_py}.Scalar", f"{_ipy}.Scalar", None, _SHIFT_DTYPES, rhs="number", int_only=True)

# ---------------------------------------------------------------------------------------------
# clamp, lerp, addcmul, addcdiv


def clamp_samples(op, bounds="number"):
    """clamp(self, min, max): numbers or tensors, either bound may be None."""
    for dt in op.dtypes:
        x = tensor((2, 3), dt)
        if bounds == "number":
            pairs = [(-1, 2), (None, 2), (-1, None), (0.5, 2.5), (3, -3), (None, None),
                     (True, True), (math.nan, 1.0)]
        else:
            lo, hi = tensor((3,), dt, low=-5, high=0), tensor((2, 1), dt, low=0, high=5)
            pairs = [(lo, hi), (None, hi), (lo, None), (None, None), (hi, lo),
                     (tensor((), "float64"), None), (tensor((4,), dt), None)]
        for lo, hi in pairs:
            yield Sample((x, lo, hi), desc=f"{dt} {lo!r}, {hi!r}"[:60])
        yield Sample((tensor((3, 4), dt, "transposed"), 0, 1) if bounds == "number" else
                     (tensor((3, 4), dt, "transposed"), tensor((3, 4), dt, "sliced"), None),
                     desc=f"{dt} strided")
        yield Sample((tensor((0, 3), dt), 0, 1) if bounds == "number" else
                     (tensor((0, 3), dt), tensor((3,), dt), None), desc=f"{dt} empty")
    if bounds == "number":
        yield Sample((tensor((2, 3), "uint8"), -1, 300), desc="bound overflows uint8")
        yield Sample((complex_tensor((2,), "complex64"), 0, 1), desc="complex")


def clamp_one_samples(op, bound="number"):
    for dt in op.dtypes:
        b = (2, 0.5, True) if bound == "number" else (tensor((3,), dt), tensor((), "float64"),
                                                     tensor((2, 1), "int64"))
        for v in b:
            yield Sample((tensor((2, 3), dt), v), desc=f"{dt} {v!r}"[:60])
        yield Sample((tensor((3, 4), dt, "sliced"), 1 if bound == "number" else
                      tensor((3, 4), dt, "transposed")), desc=f"{dt} strided")
    if bound == "tensor":
        yield Sample((tensor((2, 3), "float32"), tensor((4,), "float32")), desc="broadcast error")


for _c in ("clamp", "clip"):
    _add(f"{_c}.default", clamp_samples, ALL, f"{_c}_.default", f"{_c}.out")
    _add(f"{_c}.Tensor", lambda op: clamp_samples(op, "tensor"), ALL, f"{_c}_.Tensor",
         f"{_c}.Tensor_out")
for _c in ("clamp_min", "clamp_max"):
    _add(f"{_c}.default", clamp_one_samples, ALL, f"{_c}_.default", f"{_c}.out")
    _add(f"{_c}.Tensor", lambda op: clamp_one_samples(op, "tensor"), ALL, f"{_c}_.Tensor",
         f"{_c}.Tensor_out")


def lerp_samples(op, weight="number"):
    for dt in op.dtypes:
        w = [0.25, 0.75, 2, -1] if weight == "number" else [tensor((3,), dt, low=-1, high=2)]
        for wt in w:
            yield Sample((tensor((2, 3), dt), tensor((2, 3), dt), wt), desc=f"{dt} w={wt!r}"[:50])
        yield Sample((tensor((3, 4), dt, "transposed"), tensor((3, 4), dt, "sliced"),
                      0.5 if weight == "number" else tensor((3, 4), dt, "expanded")),
                     desc=f"{dt} strided")
        yield Sample((tensor((2, 1), dt), tensor((1, 3), dt),
                      0.5 if weight == "number" else tensor((), dt)), desc=f"{dt} broadcast")
    yield Sample((tensor((2, 3), "float32"), tensor((2, 3), "float64"),
                  0.5 if weight == "number" else tensor((2, 3), "float32")), desc="end dtype")
    if weight == "tensor":
        yield Sample((tensor((2, 3), "float32"), tensor((2, 3), "float32"),
                      tensor((2, 3), "float64")), desc="weight dtype")
    yield Sample((tensor((2, 3), "float32"), tensor((4,), "float32"),
                  0.5 if weight == "number" else tensor((3,), "float32")), desc="broadcast error")


_add("lerp.Scalar", lerp_samples, ALL, "lerp_.Scalar", "lerp.Scalar_out", rtol=1e-4)
_add("lerp.Tensor", lambda op: lerp_samples(op, "tensor"), ALL, "lerp_.Tensor", "lerp.Tensor_out",
     rtol=1e-4)


def addc_samples(op, nonzero=False):
    for dt in op.dtypes:
        for value in (1, 2, 0.5):
            yield Sample((tensor((2, 3), dt), tensor((2, 3), dt),
                          tensor((2, 3), dt, nonzero=nonzero)), {"value": value},
                         desc=f"{dt} value={value}")
        yield Sample((tensor((3, 4), dt, "transposed"), tensor((3, 4), dt, "sliced"),
                      tensor((3, 4), dt, "expanded", nonzero=nonzero)), desc=f"{dt} strided")
        yield Sample((tensor((2, 1), dt), tensor((3,), dt), tensor((), dt, nonzero=nonzero)),
                     desc=f"{dt} broadcast")
    yield Sample((tensor((2, 3), "int64"), tensor((2, 3), "float32"),
                  tensor((2, 3), "float32", nonzero=True)), desc="mixed")
    yield Sample((tensor((2, 3), "float32"), tensor((2, 3), "int64"),
                  tensor((2, 3), "int64", nonzero=True)), desc="integer tensors")
    yield Sample((tensor((2, 3), "float32"), tensor((4,), "float32"), tensor((3,), "float32")),
                 desc="broadcast error")


_add("addcmul.default", addc_samples, ALL, "addcmul_.default", "addcmul.out", rtol=1e-4)
_add("addcdiv.default", lambda op: addc_samples(op, nonzero=True), ALL, "addcdiv_.default",
     "addcdiv.out", rtol=1e-3, atol=1e-4)

# ---------------------------------------------------------------------------------------------
# float_power, isclose


_binary("float_power.Tensor_Tensor", "float_power_.Tensor", "float_power.Tensor_Tensor_out",
        complex_ok=True, positive=True, high=3, rtol=1e-6)
_binary("float_power.Tensor_Scalar", "float_power_.Scalar", "float_power.Tensor_Scalar_out",
        rhs="number", positive=True, high=3, rtol=1e-6)
_binary("float_power.Scalar", None, "float_power.Scalar_out", lhs="number", positive=True,
        high=3, rtol=1e-6)
OPS.append(OpInfo("float_power.Tensor_Scalar", lambda op: iter([
    Sample((tensor((2, 3), "float64"), 2.5j), desc="complex exponent"),
    Sample((complex_tensor((2, 3), "complex64"), 2), desc="complex base")]),
    ALL, "float_power_.Scalar", "float_power.Tensor_Scalar_out"))


def isclose_samples(op):
    for dt in op.dtypes:
        a = with_specials(dt)
        b = T(np.where(np.isnan(a.values), a.values, a.values * 1.001 + 1e-9)
              if dt in FLOATS else a.values, dt)
        for kw in ({}, {"rtol": 0.01}, {"atol": 0.1, "rtol": 0}, {"equal_nan": True},
                   {"rtol": 0, "atol": 0}):
            yield Sample((a, b), kw, desc=f"{dt} {kw}")
    yield Sample((tensor((3, 4), "float32", "transposed"), tensor((4,), "float32")), desc="bcast")
    yield Sample((tensor((2, 3), "float32"), tensor((2, 3), "float64")), desc="dtype mismatch")
    yield Sample((tensor((2, 3), "float32"), tensor((2, 3), "float32")), {"rtol": -1.0},
                 desc="negative rtol")
    yield Sample((tensor((2, 3), "float32"), tensor((4,), "float32")), desc="broadcast error")
    yield Sample((complex_tensor((2,), "complex64"), complex_tensor((2,), "complex64")),
                 desc="complex")


_add("isclose.default", isclose_samples, ALL)

# ---------------------------------------------------------------------------------------------
# Complex basics


def complex_samples(op, real_too=True):
    for dt in COMPLEX:
        yield Sample((complex_tensor((2, 3), dt),), desc=dt)
        yield Sample((complex_tensor((3, 4), dt, "transposed"),), desc=f"{dt} transposed")
        yield Sample((complex_tensor((3, 4), dt, "sliced"),), desc=f"{dt} sliced")
        yield Sample((complex_tensor((), dt),), desc=f"{dt} 0-dim")
        yield Sample((complex_tensor((0, 2), dt),), desc=f"{dt} empty")
    if real_too:
        for dt in ("float32", "int64", "bool"):
            yield Sample((tensor((2, 3), dt),), desc=dt)


def view_as_complex_samples(op):
    for dt in ("float32", "float64"):
        yield Sample((tensor((3, 2), dt),), desc=dt)
        yield Sample((tensor((2, 3, 2), dt, "expanded"),), desc=f"{dt} expanded")
        yield Sample((tensor((2,), dt),), desc=f"{dt} 1-d")
    # (no "transposed" error sample: the harness's transposed torch tensor is contiguous)
    for bad in [tensor((2, 3), "float32"), tensor((2, 2), "int64"), tensor((2, 2), "bfloat16"),
                tensor((), "float32"),
                tensor((3, 2), "float32", "sliced")]:
        yield Sample((bad,), desc=f"error {bad.dtype} {bad.layout} {bad.values.shape}")


_add("view_as_real.default", lambda op: complex_samples(op), ALL)
_add("view_as_complex.default", view_as_complex_samples, ALL)
for _c in ("real", "imag", "conj", "resolve_conj"):
    _add(f"{_c}.default", lambda op: complex_samples(op), ALL)
_add("conj_physical.default", lambda op: complex_samples(op), ALL, "conj_physical_.default",
     "conj_physical.out")
_add("_conj_physical.default", lambda op: complex_samples(op), ALL, None, "_conj_physical.out")


def polar_samples(op):
    for dt in ("float32", "float64"):
        yield Sample((tensor((2, 3), dt, positive=True), tensor((2, 3), dt)), desc=dt)
        yield Sample((tensor((3, 4), dt, "transposed"), tensor((4,), dt)), desc=f"{dt} bcast")
        yield Sample((tensor((0, 3), dt), tensor((3,), dt)), desc=f"{dt} empty")
    yield Sample((tensor((2,), "float32"), tensor((2,), "float64")), desc="dtype mismatch")
    yield Sample((tensor((2,), "int64"), tensor((2,), "int64")), desc="integers")
    yield Sample((tensor((2,), "float16"), tensor((2,), "float16")), desc="half")
    yield Sample((tensor((2,), "float32"), tensor((3,), "float32")), desc="broadcast error")


_add("polar.default", polar_samples, ALL, None, "polar.out", rtol=1e-5)

NOT_IN_TABLE.update({
    "equal.default": "returns a Python bool: checked by tests/test_pointwise_more.py",
    "allclose.default": "returns a Python bool: checked by tests/test_pointwise_more.py",
    "is_conj.default": "returns a Python bool: checked by tests/test_pointwise_more.py",
})
