"""Rules of the pointwise ops, for every backend: each op's type-promotion kind and operand
check (``UNARY_RULES``, ``BINARY_RULES``, ``TERNARY_RULES``, by row name), the result dtype a kind
gives, PyTorch's broadcast and in-place checks, and ``OVERLOADS``: which row and calling form
each aten overload (``add.Tensor``, ``add_.Scalar``, ``__lshift__.Tensor`` ...) is. The CPU
kernels (``cpu/pointwise.py``) compute each row with NumPy; the Meta kernels
(``meta/pointwise.py``) allocate the broadcast shape in the dtype the kind gives. Both register a
kernel for every entry of ``OVERLOADS``, so an op is one rule row, one compute row and its
overloads here.

Operands may be Python numbers ("wrapped numbers"): they take part in type promotion weakly
(``result_type_of``).
"""
import enum

from ..._core import dtype as D
from ..._core import strides as _st
from ..._core.promotion import can_cast, result_type_of


# ---------------------------------------------------------------------------------------------
# Type-promotion kinds (torch._prims_common's ELEMENTWISE_TYPE_PROMOTION_KIND, plus the kinds
# ATen's TensorIterator configurations give): operands -> (computation dtype, result dtype).

class ELEMENTWISE_TYPE_PROMOTION_KIND(enum.Enum):
    DEFAULT = "promote"                         # PyTorch's result_type
    INT_TO_FLOAT = "float"                      # result_type, integral/bool -> default float
    ALWAYS_BOOL = "compare"                     # computed in result_type, result bool
    LOGICAL = "logical"                         # result bool, inputs of any dtype
    INTEGRAL = "integral"                       # result_type, integral or bool (bitwise ops)
    SAME = "same"                               # unary: the input's dtype
    COMPLEX_TO_FLOAT = "real"                   # the input's dtype, complex -> its real (abs)
    INT_TO_FLOAT_COMPLEX_TO_FLOAT = "float_real"  # INT_TO_FLOAT, complex -> its real (angle)
    FIRST = "first"                             # the first operand's, the others share it (lerp)


_KIND = ELEMENTWISE_TYPE_PROMOTION_KIND
PROMOTE = _KIND.DEFAULT
INT_TO_FLOAT = _KIND.INT_TO_FLOAT
COMPARE = _KIND.ALWAYS_BOOL
LOGICAL = _KIND.LOGICAL
INTEGRAL = _KIND.INTEGRAL
SAME = _KIND.SAME
TO_REAL = _KIND.COMPLEX_TO_FLOAT
FLOAT_REAL = _KIND.INT_TO_FLOAT_COMPLEX_TO_FLOAT
FIRST = _KIND.FIRST


def result_dtype(rule, operands):
    """(computation dtype, result dtype) of a pointwise op of promotion kind ``rule``."""
    if rule is SAME or rule is FIRST:
        dt = operands[0]._dtype
        return dt, dt
    if rule is TO_REAL:
        dt = operands[0]._dtype
        return dt, dt.to_real()
    dt = result_type_of(operands)
    if rule is PROMOTE or rule is INTEGRAL:
        return dt, dt
    if rule is INT_TO_FLOAT or rule is FLOAT_REAL:
        if dt._category < D.FLOATING:
            dt = D.get_default_dtype()
        return dt, (dt.to_real() if rule is FLOAT_REAL else dt)
    if rule is COMPARE:
        return dt, D.bool_
    return None, D.bool_  # LOGICAL


# ---------------------------------------------------------------------------------------------
# Operand checks (dtype-level, so the Meta kernels raise the same errors). Each receives the op
# name, the operands and the computation dtype.

def _not_implemented(name, dt):
    return NotImplementedError(f'"{name}_cpu" not implemented for \'{dt._short}\'')


def _is_bool(x):
    return getattr(x, "_dtype", None) is D.bool_ or x.__class__ is bool


def in_meta(check):
    """Mark an operand check that ATen runs in the op's meta function, before TensorIterator
    is built: ahead of the broadcast and in-place checks."""
    check.in_meta = True
    return check


@in_meta
def check_sub(name, operands, dt):
    self, other = operands[0], operands[1]
    if _is_bool(self) and _is_bool(other):
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. "
                           "Use the `^` or `logical_xor()` operator instead.")
    if _is_bool(self) or _is_bool(other):
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. "
                           "If you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")


def check_integral(name, operands, dt):
    if dt._category > D.INTEGRAL:
        raise _not_implemented(name, dt)


def no_bool(kernel):
    """Check for ops PyTorch has no bool kernel for (named as its dtype-dispatch error does)."""
    def check(name, operands, dt):
        if dt is D.bool_:
            raise NotImplementedError(f'"{kernel}" not implemented for \'Bool\'')
    return check


def check_pow(name, operands, dt):
    e = operands[1]
    # PyTorch answers x ** 0 and x ** 1 (Python numbers) before dispatching on dtype
    if not (e.__class__ in (int, float, bool) and e in (0, 1)):
        no_bool("pow")(name, operands, dt)
    # only a Python-number exponent is checked; PyTorch lets tensor exponents through
    if dt._category <= D.INTEGRAL and e.__class__ is int and e < 0:
        raise RuntimeError("Integers to negative integer powers are not allowed.")


def check_not_bool(message):
    def check(name, operands, dt):
        if dt is D.bool_:
            raise RuntimeError(message)
    return check


def check_relu(name, operands, dt):
    if dt is D.bool_:
        raise RuntimeError("Boolean inputs not supported for relu")
    if dt.is_complex:  # relu is clamp_min(self, 0) in PyTorch
        raise NotImplementedError("clamp is not supported for complex types")


def check_abs(name, operands, dt):
    if dt is D.bool_:
        raise _not_implemented(name, dt)


def check_alpha(dt, alpha):
    """add/sub/rsub's alpha must fit the result dtype (PyTorch's alpha_check)."""
    if alpha.__class__ is bool and dt is not D.bool_:
        raise RuntimeError("Boolean alpha only supported for Boolean results.")
    if dt._category <= D.INTEGRAL and isinstance(alpha, float):
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating "
                           "point number.")
    from .factory import check_fits
    check_fits(alpha, dt)


def not_for(categories, kernel=None, message=None, exc=NotImplementedError):
    """Reject computation dtypes of the given categories: with PyTorch's dtype-dispatch error
    naming ``kernel``, or with a fixed ``message``."""
    def check(name, operands, dt):
        if dt._category in categories:
            raise exc(message if message is not None else
                      f'"{kernel}" not implemented for \'{dt._short}\'')
    return check


def check_rounding(op):
    """floor/ceil/trunc: no bool kernel, and complex numbers have no order to round in."""
    no_bool_kernel = not_for((D.BOOL,), f"{op}_vml_cpu")
    no_complex = not_for((D.COMPLEX,), message=f"{op} is not supported for complex inputs")

    def check(name, operands, dt):
        no_bool_kernel(name, operands, dt)
        no_complex(name, operands, dt)
    return check


_NOT_FLOAT = (D.BOOL, D.INTEGRAL, D.COMPLEX)
_NOT_REAL_FLOAT = (D.BOOL, D.INTEGRAL)
_BOOL_COMPLEX = (D.BOOL, D.COMPLEX)
_NOT_INTEGRAL = (D.BOOL, D.FLOATING, D.COMPLEX)


def check_addcdiv(name, operands, dt):
    t1, t2 = operands[1], operands[2]
    if all(getattr(t, "_dtype", D.float32)._category <= D.INTEGRAL for t in (t1, t2)):
        raise RuntimeError(
            "Integer division with addcdiv is no longer supported, and in a future  release "
            "addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv "
            "behavior can be implemented as (input + value * torch.trunc(tensor1 / tensor2))."
            "to(input.dtype) for integer inputs and as (input + value * tensor1 / tensor2) for "
            "float inputs. The future addcdiv behavior is just the latter implementation: "
            "(input + value * tensor1 / tensor2), for all dtypes.")
    not_for((D.BOOL,), "addcdiv_cpu_out")(name, operands, dt)


def lerp_check(kernel):
    """lerp computes in self's dtype: end (and a tensor weight) must share it; a 0-dim weight
    of another dtype is read in self's, as ATen's lerp reads it."""
    def check(name, operands, dt):
        for what, x in zip(("end", "weight"), operands[1:]):
            if hasattr(x, "_keyset") and x._dtype is not dt and \
                    not (what == "weight" and not x._size):
                # (self.dtype(), a TypeMeta: "long int", "c10::Half")
                raise RuntimeError(f"expected dtype {dt._cpp} for `{what}` but got dtype "
                                   f"{x._dtype._cpp}")
        not_for(_NOT_REAL_FLOAT, kernel)(name, operands, dt)
    return check


def clamp_check(scalar_kernel, tensor_kernel=None, complex_tensor_kernel=None):
    """clamp rejects complex (one-sided clamp with a tensor bound in the dtype dispatch of its
    maximum/minimum kernel), and bool in its scalar kernels (and in two-sided clamp.Tensor);
    Python-number bounds are converted to the computation dtype with c10's overflow check
    (unsigned types accept -max..max, floating types inf and nan)."""
    def check(name, operands, dt):
        numbers = [b for b in operands[1:] if not hasattr(b, "_keyset")]
        if dt.is_complex and complex_tensor_kernel is not None and not numbers:
            raise NotImplementedError(f'"{complex_tensor_kernel}" not implemented for '
                                      f'\'{dt._short}\'')
        if dt.is_complex:
            raise NotImplementedError("clamp is not supported for complex types")
        kernel = scalar_kernel if numbers else tensor_kernel
        if dt is D.bool_ and kernel is not None:
            raise NotImplementedError(f'"{kernel}" not implemented for \'Bool\'')
        from .factory import check_fits
        for b in numbers:
            check_fits(b, dt)
    return check


def params_row(name, params):
    """The row a params overload runs: round.decimals with decimals=0 is round_zero_decimals."""
    if name == "round_decimals" and params and params[0] == 0:
        return "round_zero_decimals"
    return name


ROUNDING_MODES = (None, "trunc", "floor")


def check_rounding_mode(mode):
    if mode not in ROUNDING_MODES:
        raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' "
                           f"but found '{mode}'")


@in_meta
def check_heaviside(name, operands, dt):
    a, b = operands
    if a._dtype.is_complex or b._dtype.is_complex:
        raise RuntimeError("heaviside is not yet implemented for complex tensors.")
    if a._dtype is not b._dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")


_NOT_INT = (D.BOOL, D.FLOATING, D.COMPLEX)


# ---------------------------------------------------------------------------------------------
# Argument rules of the ops with non-tensor arguments or optional operands.

def check_where_condition(condition):
    if condition._dtype is not D.bool_ and condition._dtype is not D.uint8:
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor "
                           f"with dtype {condition._dtype._short}")


def clamp_operands(opname, self, min, max):  # noqa: A002  (schema names)
    if min is None and max is None:
        raise RuntimeError(f"torch.{opname}: At least one of 'min' or 'max' must not be None")
    # (clamp's own meta check: a one-sided clamp is not clamp_min/clamp_max here, whose tensor
    # overloads fail in maximum's/minimum's dtype dispatch instead)
    if result_type_of([x for x in (self, min, max) if x is not None]).is_complex:
        raise NotImplementedError("clamp is not supported for complex types")
    if max is None:
        return "clamp_min", (self, min)
    if min is None:
        return "clamp_max", (self, max)
    return "clamp", (self, min, max)


_DIV_MODES = {None: "div", "trunc": "div_trunc", "floor": "div_floor"}  # rounding_mode -> row


def check_polygamma_order(n, self):
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    if self._dtype.is_complex and n in (0, 1):  # ATen's polygamma is digamma/trigamma there
        raise NotImplementedError(f"\"{('digamma', 'trigamma')[n]}\" not implemented for "
                                  f"'{self._dtype._short}'")


def check_polar(abs, angle):  # noqa: A002  (schema names)
    """polar's dtype checks, in PyTorch's order; returns the complex result dtype."""
    a, b = abs._dtype, angle._dtype
    if a not in (D.float16, D.float32, D.float64) or b not in (D.float16, D.float32, D.float64):
        raise RuntimeError(f"Expected both inputs to be Half, Float or Double tensors but got "
                           f"{a._short} and {b._short}")
    if a is not b:
        raise RuntimeError(f"Expected object of scalar type {a._short} but got scalar type "
                           f"{b._short} for second argument")
    if a is D.float16:  # the result would be ComplexHalf, which PyTorch's CPU polar lacks
        raise NotImplementedError("\"polar_cpu\" not implemented for 'Half'")
    _st.broadcast_shapes(abs._size, angle._size)
    return a.to_complex()


def check_frexp(self):
    if not self._dtype.is_floating_point:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")


def check_complex(real, imag):
    """complex's checks, in PyTorch's order; returns the result dtype."""
    r, i = real._dtype, imag._dtype
    if r not in (D.float16, D.float32, D.float64) or i not in (D.float16, D.float32, D.float64):
        raise RuntimeError(f"Expected both inputs to be Half, Float or Double tensors but got "
                           f"{r._short} and {i._short}")
    if r is not i:
        raise RuntimeError(f"Expected object of scalar type {r._short} but got scalar type "
                           f"{i._short} for second argument")
    _st.broadcast_shapes(real._size, imag._size)
    return r.to_complex()


# ---------------------------------------------------------------------------------------------
# Broadcasting and the in-place checks.

def broadcast_shape(*operands):
    """The broadcast shape of tensors and Python numbers."""
    return _st.broadcast_shapes(*[getattr(x, "_size", ()) for x in operands])


def check_operands(name, operands, check, cdt, rdt, out=None):
    """PyTorch's order: broadcast errors, then (in-place) the output's shape and castability,
    then the op's own dtype check (which runs when the kernel dispatches on dtype), unless ATen
    runs it in the op's meta function (``in_meta``): then first."""
    early = getattr(check, "in_meta", False)
    if early:
        check(name, operands, cdt if cdt is not None else rdt)
    if len(operands) > 1:
        sizes = [x._size for x in operands if hasattr(x, "_keyset")]
        # lengths first: tuples of different lengths compare their elements, and a
        # symbolic size compared to a number would take a guard
        if any(len(sz) != len(sizes[0]) or sz != sizes[0] for sz in sizes):
            _st.broadcast_shapes(*sizes)
    if out is not None:
        check_inplace(out, operands, rdt, name)
    if cdt in D.FLOAT8:
        check_float8(name, operands, cdt)
    elif cdt is None:  # logical ops read any dtype, but have no float8 kernels
        for x in operands:
            if getattr(x, "_dtype", None) in D.FLOAT8:
                check_float8(name, operands, x._dtype)
    if check is not None and not early:
        check(name, operands, cdt if cdt is not None else rdt)
    if cdt is D.complex32 or cdt is None and any(
            getattr(x, "_dtype", None) is D.complex32 for x in operands):
        check_complex32(name)


# ATen's CPU kernels dispatch on ComplexHalf for these pointwise ops only (after the ops' own
# complex checks, which run first: "ceil is not supported for complex inputs" ...); the others
# fail in their dtype dispatch, named ``<op>_cpu`` unless listed here.
_COMPLEX32_OK = frozenset(("add", "sub", "mul", "neg", "conj_physical", "eq", "ne", "isnan",
                           "isinf", "sgn", "abs", "addcmul"))
_COMPLEX32_KERNELS = {"div": "div_cpu", "pow": "pow", "exp2": "exp2", "nan_to_num": "nan_to_num",
                      "lerp": "lerp_kernel_scalar", "addcdiv": "addcdiv_cpu_out",
                      **{op: f"{op}_vml_cpu" for op in (
                          "acos", "asin", "atan", "cos", "exp", "expm1", "log", "log10", "log1p",
                          "log2", "round", "sin", "sqrt", "tan", "tanh")}}


def check_complex32(name):
    if name not in _COMPLEX32_OK:
        kernel = _COMPLEX32_KERNELS.get(name, name + "_cpu")
        raise NotImplementedError(f"\"{kernel}\" not implemented for 'ComplexHalf'")


# ATen's CPU kernels dispatch on the float8 types for equality, abs (not float8_e8m0fnu) and
# the product of two tensors; every other pointwise op fails in its dtype dispatch, named as
# below (``<op>_cpu`` unless listed).
_FLOAT8_KERNELS = {"add": "add_stub", "sub": "add_stub", "mul": "mul_cpu_reduced_float",
                   "div": "div_cpu_reduced_float", "isinf": "isinf", "isfinite": "isfinite",
                   "relu": "clamp_min_scalar_cpu",
                   "pow": "pow", "sigmoid": "sigmoid_cpu_reduced_float",
                   "lerp": "lerp_kernel_scalar", "addcmul": "addcmul_cpu_out",
                   "addcdiv": "addcdiv_cpu_out", "clamp_min": "clamp_min_scalar_cpu",
                   "clamp_max": "clamp_max_scalar_cpu", "clamp": "clamp_scalar_cpu",
                   "exp2": "exp2", "nan_to_num": "nan_to_num", "floor_divide": "div_floor_cpu",
                   "sgn": "sign_cpu",
                   **{op: f"{op}_vml_cpu" for op in (
                       "exp", "log", "log10", "log2", "log1p", "expm1", "sqrt", "sin",
                       "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "floor",
                       "ceil", "trunc", "round", "erf", "erfc", "erfinv", "lgamma")}}


def check_float8(name, operands, dt):
    if name in ("eq", "ne", "isnan") or name == "abs" and dt is not D.float8_e8m0fnu:
        return
    # mul: the second operand may not be a CPU scalar (a Python number or a 0-dim tensor);
    # div by one has its own kernel name, div of two tensors the usual one
    scalar = len(operands) > 1 and not getattr(operands[1], "_size", ())
    if name == "mul" and not scalar:
        return
    kernel = _FLOAT8_KERNELS.get(name, name + "_cpu")
    if name == "div" and not scalar:
        kernel = "div_cpu"
    elif name in ("div_floor", "div_trunc", "floor_divide") and scalar:
        kernel += "_reduced_float"  # (by a CPU scalar: the reduced-float kernel, named so)
    raise NotImplementedError(f'"{kernel}" not implemented for \'{dt._short}\'')


def _fmt(shape):
    return "[" + ", ".join(map(str, shape)) + "]"


# Ops whose Python-number-bound overloads check the cast in their own meta function, printing
# self's dtype as a TypeMeta ("long int", "bool")
_TYPEMETA_CAST_CHECK = frozenset(("clamp", "clamp_min", "clamp_max"))


def check_inplace(self, operands, rdt, name=None):
    """PyTorch's in-place checks: the broadcast must keep self's shape; the result must cast."""
    shape = _st.broadcast_shapes(*[getattr(x, "_size", ()) for x in operands])
    if shape != self._size:
        raise RuntimeError(f"output with shape {_fmt(self._size)} doesn't match the broadcast "
                           f"shape {_fmt(shape)}")
    if not can_cast(rdt, self._dtype):
        typemeta = name in _TYPEMETA_CAST_CHECK and \
            any(not hasattr(b, "_keyset") for b in operands[1:])
        raise RuntimeError(f"result type {rdt._short} can't be cast to the desired output type "
                           f"{self._dtype._cpp if typemeta else self._dtype._short}")


# ---------------------------------------------------------------------------------------------
# The rule rows: op row name -> (type-promotion kind, operand check or None). A check receives
# the row name, the operands and the computation dtype.

BINARY_RULES = {
    "add": (PROMOTE, None),
    "sub": (PROMOTE, check_sub),
    "mul": (PROMOTE, None),
    "div": (INT_TO_FLOAT, None),
    "div_trunc": (PROMOTE, not_for(_BOOL_COMPLEX, "div_trunc_cpu")),
    "div_floor": (PROMOTE, not_for(_BOOL_COMPLEX, "div_floor_cpu")),
    "floor_divide": (PROMOTE, not_for(_BOOL_COMPLEX, "div_floor_cpu")),
    "remainder": (PROMOTE, not_for(_BOOL_COMPLEX, "remainder_cpu")),
    "pow": (PROMOTE, check_pow),
    "eq": (COMPARE, None),
    "ne": (COMPARE, None),
    # (complex numbers have no order: ATen's comparison kernels do not dispatch on them)
    "lt": (COMPARE, not_for((D.COMPLEX,), "lt_cpu")),
    "le": (COMPARE, not_for((D.COMPLEX,), "le_cpu")),
    "gt": (COMPARE, not_for((D.COMPLEX,), "gt_cpu")),
    "ge": (COMPARE, not_for((D.COMPLEX,), "ge_cpu")),
    "logical_and": (LOGICAL, None),
    "logical_or": (LOGICAL, None),
    "logical_xor": (LOGICAL, None),
    "bitwise_and": (INTEGRAL, check_integral),
    "bitwise_or": (INTEGRAL, check_integral),
    "bitwise_xor": (INTEGRAL, check_integral),
    "maximum": (PROMOTE, not_for(
        (D.COMPLEX,), message="maximum not implemented for complex tensors.", exc=RuntimeError)),
    "minimum": (PROMOTE, not_for(
        (D.COMPLEX,), message="minimum not implemented for complex tensors.", exc=RuntimeError)),
    "fmod": (PROMOTE, not_for(_BOOL_COMPLEX, "fmod_cpu")),
    "atan2": (INT_TO_FLOAT, not_for((D.COMPLEX,), "atan2_cpu")),
    "hypot": (PROMOTE, not_for(_NOT_FLOAT, "hypot_cpu")),
    "sigmoid_backward": (PROMOTE, not_for(_NOT_REAL_FLOAT, "sigmoid_backward_cpu")),
    "tanh_backward": (PROMOTE, not_for(_NOT_REAL_FLOAT, "tanh_backward_cpu")),
    "fmax": (PROMOTE, not_for(
        (D.COMPLEX,), message="fmax not implemented for complex tensors.", exc=RuntimeError)),
    "fmin": (PROMOTE, not_for(
        (D.COMPLEX,), message="fmin not implemented for complex tensors.", exc=RuntimeError)),
    "copysign": (INT_TO_FLOAT, not_for((D.COMPLEX,), "copysign_cpu")),
    "logaddexp": (PROMOTE, not_for(_NOT_REAL_FLOAT, "logaddexp_cpu")),
    "logaddexp2": (PROMOTE, not_for(_NOT_FLOAT, "logaddexp2_cpu")),
    "xlogy": (INT_TO_FLOAT, not_for((D.COMPLEX,), "xlogy_cpu")),
    "bitwise_left_shift": (PROMOTE, not_for(_NOT_INTEGRAL, "lshift_cpu")),
    "bitwise_right_shift": (PROMOTE, not_for(_NOT_INTEGRAL, "rshift_cpu")),
    "clamp_min": (PROMOTE, clamp_check("clamp_min_scalar_cpu",
                                       complex_tensor_kernel="maximum_cpu")),
    "clamp_max": (PROMOTE, clamp_check("clamp_max_scalar_cpu",
                                       complex_tensor_kernel="minimum_cpu")),
    "heaviside": (PROMOTE, check_heaviside),
    "gcd": (PROMOTE, not_for(_NOT_INT, "gcd_cpu")),
    "lcm": (PROMOTE, not_for(_NOT_INT, "lcm_cpu")),
    "nextafter": (PROMOTE, not_for((D.BOOL, D.INTEGRAL, D.COMPLEX), "nextafter_cpu")),
}

TERNARY_RULES = {
    "clamp": (PROMOTE, clamp_check("clamp_scalar_cpu", "clamp_cpu")),
    "lerp": (FIRST, lerp_check("lerp_kernel_scalar")),
    "addcmul": (PROMOTE, not_for((D.BOOL,), "addcmul_cpu_out")),
    "addcdiv": (PROMOTE, check_addcdiv),
}

UNARY_RULES = {
    "neg": (SAME, check_not_bool(
        "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to "
        "invert a mask, use the `~` or `logical_not()` operator instead.")),
    "abs": (TO_REAL, check_abs),
    "relu": (SAME, check_relu),
    "exp": (INT_TO_FLOAT, None),
    "log": (INT_TO_FLOAT, None),
    "sqrt": (INT_TO_FLOAT, None),
    "sin": (INT_TO_FLOAT, None),
    "cos": (INT_TO_FLOAT, None),
    "tanh": (INT_TO_FLOAT, None),
    "sigmoid": (INT_TO_FLOAT, None),
    "reciprocal": (INT_TO_FLOAT, None),
    "logical_not": (LOGICAL, None),
    "bitwise_not": (INTEGRAL, check_integral),
    "sign": (SAME, not_for((D.COMPLEX,), message=(
        "Unlike NumPy, torch.sign is not intended to support complex numbers. Please use "
        "torch.sgn instead."))),
    "sgn": (SAME, None),
    "exp2": (INT_TO_FLOAT, None),
    "expm1": (INT_TO_FLOAT, None),
    "log2": (INT_TO_FLOAT, None),
    "log10": (INT_TO_FLOAT, None),
    "log1p": (INT_TO_FLOAT, None),
    "rsqrt": (INT_TO_FLOAT, None),
    "tan": (INT_TO_FLOAT, None),
    "asin": (INT_TO_FLOAT, None),
    "acos": (INT_TO_FLOAT, None),
    "atan": (INT_TO_FLOAT, None),
    "sinh": (INT_TO_FLOAT, None),
    "cosh": (INT_TO_FLOAT, None),
    "asinh": (INT_TO_FLOAT, None),
    "acosh": (INT_TO_FLOAT, None),
    "atanh": (INT_TO_FLOAT, None),
    "logit": (INT_TO_FLOAT, not_for((D.COMPLEX,), "logit_cpu")),
    "erf": (INT_TO_FLOAT, not_for((D.COMPLEX,), "erf_vml_cpu")),
    "erfc": (INT_TO_FLOAT, not_for((D.COMPLEX,), "erfc_vml_cpu")),
    "erfinv": (INT_TO_FLOAT, not_for((D.COMPLEX,), "erfinv_vml_cpu")),
    "lgamma": (INT_TO_FLOAT, not_for((D.COMPLEX,), "lgamma_vml_cpu")),
    "digamma": (INT_TO_FLOAT, not_for((D.COMPLEX,), "digamma")),
    "polygamma": (INT_TO_FLOAT, not_for((D.COMPLEX,), "polygamma")),
    "floor": (SAME, check_rounding("floor")),
    "ceil": (SAME, check_rounding("ceil")),
    "trunc": (SAME, check_rounding("trunc")),
    "round": (SAME, not_for(_BOOL_COMPLEX, "round_vml_cpu")),
    "round_decimals": (SAME, not_for(_NOT_REAL_FLOAT + (D.COMPLEX,),
                                                            "round_cpu")),
    # round.decimals with decimals=0: ATen runs round's own kernel, without its integral copy
    "round_zero_decimals": (SAME, not_for(_NOT_REAL_FLOAT + (D.COMPLEX,), "round_vml_cpu")),
    "frac": (SAME, not_for(_NOT_FLOAT, "frac_cpu")),
    "nan_to_num": (SAME, None),
    "isnan": (COMPARE, None),
    "isinf": (COMPARE, None),
    "isposinf": (COMPARE, not_for(
        (D.COMPLEX,), message="isposinf does not support complex inputs.", exc=RuntimeError)),
    "isneginf": (COMPARE, not_for(
        (D.COMPLEX,), message="isneginf does not support complex inputs.", exc=RuntimeError)),
    "signbit": (COMPARE, not_for(
        (D.COMPLEX,), message="signbit is not implemented for complex tensors.")),
    "angle": (FLOAT_REAL, None),
    "conj_physical": (SAME, None),
}

RULES = {1: UNARY_RULES, 2: BINARY_RULES, 3: TERNARY_RULES}  # by number of operands


def rule(name, n):
    """(type-promotion kind, check) of row ``name`` applied to ``n`` operands."""
    return RULES[n][name]


# ---------------------------------------------------------------------------------------------
# Calling forms: how an overload's arguments map to its row's operands (each backend has one
# kernel factory per form).

UNARY = "unary"                                  # (self)
BINARY = "binary"                                # (self, other)
TERNARY = "ternary"                              # (self, a, b): lerp
INPLACE_UNARY = "inplace_unary"                  # self.op_()
INPLACE_BINARY = "inplace_binary"                # self.op_(other)
INPLACE_TERNARY = "inplace_ternary"
UNARY_PARAMS = "unary_params"                    # (self, *params): round.decimals, logit ...
INPLACE_UNARY_PARAMS = "inplace_unary_params"
TERNARY_VALUE = "ternary_value"                  # (self, tensor1, tensor2, value): addcmul
INPLACE_TERNARY_VALUE = "inplace_ternary_value"
ALPHA = "alpha"                                  # (self, other, alpha): add, sub
RALPHA = "ralpha"                                # rsub: (other - alpha * self)
INPLACE_ALPHA = "inplace_alpha"
MODE = "mode"                                    # (self, other, rounding_mode): div
INPLACE_MODE = "inplace_mode"

# aten overload, as native_functions.yaml spells it -> (row, calling form). Every backend
# registers one kernel per entry (ember/_kernels/registration.py).
OVERLOADS = {
    "add.Tensor": ("add", ALPHA), "add.Scalar": ("add", ALPHA),
    "add_.Tensor": ("add", INPLACE_ALPHA), "add_.Scalar": ("add", INPLACE_ALPHA),
    "sub.Tensor": ("sub", ALPHA), "sub.Scalar": ("sub", ALPHA), "rsub.Tensor": ("sub", RALPHA),
    "rsub.Scalar": ("sub", RALPHA), "sub_.Tensor": ("sub", INPLACE_ALPHA),
    "sub_.Scalar": ("sub", INPLACE_ALPHA),
    "mul.Tensor": ("mul", BINARY), "mul.Scalar": ("mul", BINARY),
    "mul_.Tensor": ("mul", INPLACE_BINARY), "mul_.Scalar": ("mul", INPLACE_BINARY),
    "div.Tensor": ("div", BINARY), "div.Scalar": ("div", BINARY), "div.Tensor_mode": ("div", MODE),
    "div.Scalar_mode": ("div", MODE), "div_.Tensor_mode": ("div", INPLACE_MODE),
    "div_.Scalar_mode": ("div", INPLACE_MODE), "div_.Tensor": ("div", INPLACE_BINARY),
    "div_.Scalar": ("div", INPLACE_BINARY),
    "floor_divide": ("floor_divide", BINARY), "floor_divide.Scalar": ("floor_divide", BINARY),
    "floor_divide_.Tensor": ("floor_divide", INPLACE_BINARY),
    "floor_divide_.Scalar": ("floor_divide", INPLACE_BINARY),
    "remainder.Tensor": ("remainder", BINARY), "remainder.Scalar": ("remainder", BINARY),
    "remainder.Scalar_Tensor": ("remainder", BINARY),
    "remainder_.Tensor": ("remainder", INPLACE_BINARY),
    "remainder_.Scalar": ("remainder", INPLACE_BINARY),
    "pow.Tensor_Tensor": ("pow", BINARY), "pow.Tensor_Scalar": ("pow", BINARY),
    "pow.Scalar": ("pow", BINARY), "pow_.Tensor": ("pow", INPLACE_BINARY),
    "pow_.Scalar": ("pow", INPLACE_BINARY),
    "eq.Tensor": ("eq", BINARY), "eq.Scalar": ("eq", BINARY), "eq_.Tensor": ("eq", INPLACE_BINARY),
    "eq_.Scalar": ("eq", INPLACE_BINARY),
    "ne.Tensor": ("ne", BINARY), "ne.Scalar": ("ne", BINARY), "ne_.Tensor": ("ne", INPLACE_BINARY),
    "ne_.Scalar": ("ne", INPLACE_BINARY),
    "lt.Tensor": ("lt", BINARY), "lt.Scalar": ("lt", BINARY), "lt_.Tensor": ("lt", INPLACE_BINARY),
    "lt_.Scalar": ("lt", INPLACE_BINARY),
    "le.Tensor": ("le", BINARY), "le.Scalar": ("le", BINARY), "le_.Tensor": ("le", INPLACE_BINARY),
    "le_.Scalar": ("le", INPLACE_BINARY),
    "gt.Tensor": ("gt", BINARY), "gt.Scalar": ("gt", BINARY), "gt_.Tensor": ("gt", INPLACE_BINARY),
    "gt_.Scalar": ("gt", INPLACE_BINARY),
    "ge.Tensor": ("ge", BINARY), "ge.Scalar": ("ge", BINARY), "ge_.Tensor": ("ge", INPLACE_BINARY),
    "ge_.Scalar": ("ge", INPLACE_BINARY),
    "logical_and": ("logical_and", BINARY), "logical_and_": ("logical_and", INPLACE_BINARY),
    "logical_or": ("logical_or", BINARY), "logical_or_": ("logical_or", INPLACE_BINARY),
    "logical_xor": ("logical_xor", BINARY), "logical_xor_": ("logical_xor", INPLACE_BINARY),
    "bitwise_and.Tensor": ("bitwise_and", BINARY), "bitwise_and.Scalar": ("bitwise_and", BINARY),
    "bitwise_and.Scalar_Tensor": ("bitwise_and", BINARY),
    "bitwise_and_.Tensor": ("bitwise_and", INPLACE_BINARY),
    "bitwise_and_.Scalar": ("bitwise_and", INPLACE_BINARY),
    "bitwise_or.Tensor": ("bitwise_or", BINARY), "bitwise_or.Scalar": ("bitwise_or", BINARY),
    "bitwise_or.Scalar_Tensor": ("bitwise_or", BINARY),
    "bitwise_or_.Tensor": ("bitwise_or", INPLACE_BINARY),
    "bitwise_or_.Scalar": ("bitwise_or", INPLACE_BINARY),
    "bitwise_xor.Tensor": ("bitwise_xor", BINARY), "bitwise_xor.Scalar": ("bitwise_xor", BINARY),
    "bitwise_xor.Scalar_Tensor": ("bitwise_xor", BINARY),
    "bitwise_xor_.Tensor": ("bitwise_xor", INPLACE_BINARY),
    "bitwise_xor_.Scalar": ("bitwise_xor", INPLACE_BINARY),
    "maximum": ("maximum", BINARY),
    "minimum": ("minimum", BINARY),
    "fmod.Tensor": ("fmod", BINARY), "fmod.Scalar": ("fmod", BINARY),
    "fmod_.Tensor": ("fmod", INPLACE_BINARY), "fmod_.Scalar": ("fmod", INPLACE_BINARY),
    "atan2": ("atan2", BINARY), "atan2_": ("atan2", INPLACE_BINARY),
    "hypot": ("hypot", BINARY), "hypot_": ("hypot", INPLACE_BINARY),
    "sigmoid_backward": ("sigmoid_backward", BINARY),
    "tanh_backward": ("tanh_backward", BINARY),
    "fmax": ("fmax", BINARY),
    "fmin": ("fmin", BINARY),
    "copysign.Tensor": ("copysign", BINARY), "copysign.Scalar": ("copysign", BINARY),
    "copysign_.Tensor": ("copysign", INPLACE_BINARY),
    "copysign_.Scalar": ("copysign", INPLACE_BINARY),
    "logaddexp": ("logaddexp", BINARY),
    "logaddexp2": ("logaddexp2", BINARY),
    "xlogy.Tensor": ("xlogy", BINARY), "xlogy.Scalar_Self": ("xlogy", BINARY),
    "xlogy.Scalar_Other": ("xlogy", BINARY), "xlogy_.Tensor": ("xlogy", INPLACE_BINARY),
    "xlogy_.Scalar_Other": ("xlogy", INPLACE_BINARY),
    "bitwise_left_shift.Tensor": ("bitwise_left_shift", BINARY),
    "bitwise_left_shift.Tensor_Scalar": ("bitwise_left_shift", BINARY),
    "bitwise_left_shift.Scalar_Tensor": ("bitwise_left_shift", BINARY),
    "bitwise_left_shift_.Tensor": ("bitwise_left_shift", INPLACE_BINARY),
    "bitwise_left_shift_.Tensor_Scalar": ("bitwise_left_shift", INPLACE_BINARY),
    "__lshift__.Tensor": ("bitwise_left_shift", BINARY),
    "__ilshift__.Tensor": ("bitwise_left_shift", INPLACE_BINARY),
    "__lshift__.Scalar": ("bitwise_left_shift", BINARY),
    "__ilshift__.Scalar": ("bitwise_left_shift", INPLACE_BINARY),
    "bitwise_right_shift.Tensor": ("bitwise_right_shift", BINARY),
    "bitwise_right_shift.Tensor_Scalar": ("bitwise_right_shift", BINARY),
    "bitwise_right_shift.Scalar_Tensor": ("bitwise_right_shift", BINARY),
    "bitwise_right_shift_.Tensor": ("bitwise_right_shift", INPLACE_BINARY),
    "bitwise_right_shift_.Tensor_Scalar": ("bitwise_right_shift", INPLACE_BINARY),
    "__rshift__.Tensor": ("bitwise_right_shift", BINARY),
    "__irshift__.Tensor": ("bitwise_right_shift", INPLACE_BINARY),
    "__rshift__.Scalar": ("bitwise_right_shift", BINARY),
    "__irshift__.Scalar": ("bitwise_right_shift", INPLACE_BINARY),
    "clamp_min": ("clamp_min", BINARY), "clamp_min.Tensor": ("clamp_min", BINARY),
    "clamp_min_": ("clamp_min", INPLACE_BINARY),
    "clamp_min_.Tensor": ("clamp_min", INPLACE_BINARY),
    "clamp_max": ("clamp_max", BINARY), "clamp_max.Tensor": ("clamp_max", BINARY),
    "clamp_max_": ("clamp_max", INPLACE_BINARY),
    "clamp_max_.Tensor": ("clamp_max", INPLACE_BINARY),
    "neg": ("neg", UNARY), "neg_": ("neg", INPLACE_UNARY),
    "abs": ("abs", UNARY),
    "relu": ("relu", UNARY), "relu_": ("relu", INPLACE_UNARY),
    "exp": ("exp", UNARY), "exp_": ("exp", INPLACE_UNARY),
    "log": ("log", UNARY), "log_": ("log", INPLACE_UNARY),
    "sqrt": ("sqrt", UNARY), "sqrt_": ("sqrt", INPLACE_UNARY),
    "sin": ("sin", UNARY), "sin_": ("sin", INPLACE_UNARY),
    "cos": ("cos", UNARY), "cos_": ("cos", INPLACE_UNARY),
    "tanh": ("tanh", UNARY), "tanh_": ("tanh", INPLACE_UNARY),
    "sigmoid": ("sigmoid", UNARY), "sigmoid_": ("sigmoid", INPLACE_UNARY),
    "reciprocal": ("reciprocal", UNARY), "reciprocal_": ("reciprocal", INPLACE_UNARY),
    "logical_not": ("logical_not", UNARY), "logical_not_": ("logical_not", INPLACE_UNARY),
    "bitwise_not": ("bitwise_not", UNARY), "bitwise_not_": ("bitwise_not", INPLACE_UNARY),
    "sign": ("sign", UNARY), "sign_": ("sign", INPLACE_UNARY),
    "sgn": ("sgn", UNARY), "sgn_": ("sgn", INPLACE_UNARY),
    "exp2": ("exp2", UNARY), "exp2_": ("exp2", INPLACE_UNARY),
    "expm1": ("expm1", UNARY), "expm1_": ("expm1", INPLACE_UNARY),
    "log2": ("log2", UNARY), "log2_": ("log2", INPLACE_UNARY),
    "log10": ("log10", UNARY), "log10_": ("log10", INPLACE_UNARY),
    "log1p": ("log1p", UNARY), "log1p_": ("log1p", INPLACE_UNARY),
    "rsqrt": ("rsqrt", UNARY), "rsqrt_": ("rsqrt", INPLACE_UNARY),
    "tan": ("tan", UNARY), "tan_": ("tan", INPLACE_UNARY),
    "asin": ("asin", UNARY), "asin_": ("asin", INPLACE_UNARY),
    "acos": ("acos", UNARY), "acos_": ("acos", INPLACE_UNARY),
    "atan": ("atan", UNARY), "atan_": ("atan", INPLACE_UNARY),
    "sinh": ("sinh", UNARY), "sinh_": ("sinh", INPLACE_UNARY),
    "cosh": ("cosh", UNARY), "cosh_": ("cosh", INPLACE_UNARY),
    "asinh": ("asinh", UNARY), "asinh_": ("asinh", INPLACE_UNARY),
    "acosh": ("acosh", UNARY), "acosh_": ("acosh", INPLACE_UNARY),
    "atanh": ("atanh", UNARY), "atanh_": ("atanh", INPLACE_UNARY),
    "erf": ("erf", UNARY), "erf_": ("erf", INPLACE_UNARY),
    "erfc": ("erfc", UNARY), "erfc_": ("erfc", INPLACE_UNARY),
    "erfinv": ("erfinv", UNARY), "erfinv_": ("erfinv", INPLACE_UNARY),
    "lgamma": ("lgamma", UNARY), "lgamma_": ("lgamma", INPLACE_UNARY),
    "digamma": ("digamma", UNARY), "digamma_": ("digamma", INPLACE_UNARY),
    "floor": ("floor", UNARY), "floor_": ("floor", INPLACE_UNARY),
    "ceil": ("ceil", UNARY), "ceil_": ("ceil", INPLACE_UNARY),
    "trunc": ("trunc", UNARY), "trunc_": ("trunc", INPLACE_UNARY),
    "round": ("round", UNARY), "round_": ("round", INPLACE_UNARY),
    "frac": ("frac", UNARY), "frac_": ("frac", INPLACE_UNARY),
    "isnan": ("isnan", UNARY),
    "isinf": ("isinf", UNARY),
    "isposinf": ("isposinf", UNARY),
    "isneginf": ("isneginf", UNARY),
    "signbit": ("signbit", UNARY),
    "angle": ("angle", UNARY),
    "_conj_physical": ("conj_physical", UNARY),
    "round.decimals": ("round_decimals", UNARY_PARAMS),
    "round_.decimals": ("round_decimals", INPLACE_UNARY_PARAMS),
    "logit": ("logit", UNARY_PARAMS), "logit_": ("logit", INPLACE_UNARY_PARAMS),
    "nan_to_num": ("nan_to_num", UNARY_PARAMS),
    "nan_to_num_": ("nan_to_num", INPLACE_UNARY_PARAMS),
    "addcmul": ("addcmul", TERNARY_VALUE), "addcmul_": ("addcmul", INPLACE_TERNARY_VALUE),
    "addcdiv": ("addcdiv", TERNARY_VALUE), "addcdiv_": ("addcdiv", INPLACE_TERNARY_VALUE),
    "lerp.Scalar": ("lerp", TERNARY), "lerp_.Scalar": ("lerp", INPLACE_TERNARY),
    "lerp.Tensor": ("lerp", TERNARY), "lerp_.Tensor": ("lerp", INPLACE_TERNARY),
    "heaviside": ("heaviside", BINARY), "heaviside_": ("heaviside", INPLACE_BINARY),
    "gcd": ("gcd", BINARY), "gcd_": ("gcd", INPLACE_BINARY),
    "lcm": ("lcm", BINARY), "lcm_": ("lcm", INPLACE_BINARY),
    "nextafter": ("nextafter", BINARY), "nextafter_": ("nextafter", INPLACE_BINARY),
}
