"""Eager CPU kernels written by Inductor's C code generator: when a CPU kernel's operands are
large and simply laid out, the NumPy computation is replaced by a compiled C loop.

Why: NumPy runs an elementwise op on one thread where PyTorch uses every core above 32768
elements, and a fused backward op such as ``gelu_backward`` or ``native_layer_norm_backward`` is
many NumPy passes over memory where PyTorch makes one. The kernels come from
``ember/_inductor/codegen/eager.py`` (size-generic C from the same ``ops`` handler, prelude and
vector math as compiled graphs), built once per op, dtype and layout class and cached on disk
under ``TORCHINDUCTOR_CACHE_DIR``.

This module is the policy; the calling kernels keep everything else. A kernel first does what
it always did (argument checks, type promotion, the conversion of its operands to the
computation dtype), then asks here for a result array; ``None`` means "compute it with NumPy as
before". The answer is ``None`` unless all of these hold:

* the computation dtype is float32 or float64 (half precision and integer ops stay NumPy's);
* the result has at least ``MIN_NUMEL`` elements (``at::internal::GRAIN_SIZE``: below it
  PyTorch runs on one thread too, and a NumPy ufunc call is cheaper than ours), except for the
  row kernels (softmax, log_softmax, layer_norm and their backward ops), which NumPy computes
  in four to ten calls: one C call is cheaper at any size (layer_norm forward of 4x1024 with
  its autograd recording: 29 -> 19 us), and below ``GRAIN_SIZE`` the kernel runs on the calling
  thread;
* every operand is C-contiguous with the result's shape or holds a single element (rows:
  softmax over the last dim of a C-contiguous tensor);
* generated kernels are on: ``EMBER_EAGER_CODEGEN=0`` turns them off (PyTorch has no switch of
  its own for this: its CPU kernels are compiled ahead of time), and they turn themselves off,
  with one log line and no warning, when no C compiler works.

Threads: ``ember.get_num_threads()``. In a process forked from one that ran OpenMP threads the
kernels run serially without entering the OpenMP runtime, since GNU libgomp's thread pool does
not survive ``fork`` (the child's first parallel region can wait forever on threads that do not
exist); PyTorch makes the same choice for its forked DataLoader workers.
"""
import logging
import math
import os
import threading

import numpy as np

from ..._core.allocator import cpu_cache as _cpu_cache
from ..._core.dtype import float64 as _float64
# (the ops proxy alone: a light module; the code generator is imported on the first build)
from ..._inductor.virtualized import ops

log = logging.getLogger(__name__)

MIN_NUMEL = 32768
# EMBER_EAGER_CODEGEN=0: NumPy kernels only. Read per call (a dict lookup), so tests and users
# may change it at run time.
_ENV = "EMBER_EAGER_CODEGEN"

_lock = threading.Lock()
_modules = {}           # (spec name, numpy dtype) -> built module, or None where building failed
_no_compiler = False    # set once when the first build finds no working compiler
_forked = False


def _after_fork_in_child():
    global _forked
    _forked = True


os.register_at_fork(after_in_child=_after_fork_in_child)


# os.environ keeps its variables in ``_data`` (encoded on POSIX), which its setters update:
# read there, the switch costs a dict lookup instead of os.environ.get's half microsecond.
_ENV_DATA = getattr(os.environ, "_data", None)
_ENV_KEY = os.environ.encodekey(_ENV) if hasattr(os.environ, "encodekey") else None


def enabled():
    """Whether large eager ops may use generated kernels now."""
    if _no_compiler:
        return False
    if _ENV_DATA is not None and _ENV_KEY is not None:
        return _ENV_DATA.get(_ENV_KEY, b"1") not in (b"0", "0")
    return os.environ.get(_ENV, "1") != "0"


_get_num_threads = None  # ember.get_num_threads, bound on first use (ember imports this module)


def _threads():
    global _get_num_threads
    if _forked:
        return 1
    if _get_num_threads is None:
        from ..._functional_ops import get_num_threads as _get_num_threads
    return _get_num_threads()


_FLOAT_DTYPES = {np.dtype(np.float32): "float32", np.dtype(np.float64): "float64"}


def _ember_dtype(np_dtype):
    import ember
    return getattr(ember, _FLOAT_DTYPES[np_dtype])


# ---------------------------------------------------------------------------------------------
# The ops as ``ops`` expressions. Each entry: the aten op(s) it computes (for the C comment)
# and the inner function of the operands' values.

def _c(v, k):
    return ops.constant(k, v.dtype)


def _pointwise_exprs():
    from ..._inductor.lowering import BINARY, UNARY
    exprs = {}
    # the unary rows whose NumPy function and C function agree on every input, NaN/inf included
    for name in ("neg", "abs", "relu", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p",
                 "sqrt", "rsqrt", "reciprocal", "sin", "cos", "tan", "asin", "acos", "atan",
                 "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "sigmoid", "erf", "erfc",
                 "floor", "ceil", "trunc", "round"):
        exprs[name] = (f"aten::{name}", lambda a, _m=UNARY[name]: getattr(ops, _m)(a))
    for name in ("mul", "div", "maximum", "minimum", "fmax", "fmin", "pow", "atan2", "hypot",
                 "copysign"):
        exprs[name] = (f"aten::{name}", lambda a, b, _m=BINARY[name]: getattr(ops, _m)(a, b))
    exprs["add"] = ("aten::add", ops.add)
    exprs["sub"] = ("aten::sub", ops.sub)
    # self + alpha * other (add with alpha: SGD's and Adam's foreach updates); alpha is the
    # third operand, one element. ATen's vectorised kernel computes it as one fused
    # multiply-add, which the compiler makes of this too.
    exprs["add_alpha"] = ("aten::add (alpha)", lambda a, b, alpha: ops.add(a, ops.mul(b, alpha)))
    exprs["lerp"] = ("aten::lerp (a number weight, the third operand)", _lerp)
    exprs["clamp_min"] = ("aten::clamp_min", ops.maximum)
    exprs["clamp_max"] = ("aten::clamp_max", ops.minimum)
    exprs["sigmoid_backward"] = (
        "aten::sigmoid_backward: grad * (1 - out) * out",
        lambda g, y: ops.mul(g, ops.mul(ops.sub(_c(y, 1), y), y)))
    exprs["tanh_backward"] = (
        "aten::tanh_backward: grad * (1 - out * out)",
        lambda g, y: ops.mul(g, ops.sub(_c(y, 1), ops.mul(y, y))))
    return exprs


def _lerp(start, end, weight):
    # ATen's vectorised kernel: one fused multiply-add from the nearer end, which the compiler
    # makes of each a * b + c (as cpu/pointwise_values.lerp_values computes it in NumPy)
    diff = ops.sub(end, start)
    small = ops.lt(ops.abs(weight), _c(weight, 0.5))
    return ops.where(small, ops.add(ops.mul(weight, diff), start),
                     ops.add(ops.mul(ops.sub(weight, _c(weight, 1)), diff), end))


_SQRT1_2 = 1 / math.sqrt(2.0)
_INV_SQRT_2PI = 1 / math.sqrt(2 * math.pi)
_GELU_K = math.sqrt(2 / math.pi)
_GELU_C = 0.044715


# PyTorch's GELU kernels (GeluKernelImpl, GeluBackwardKernelImpl) compute a float erf as
# Vectorized<float>::erf: Abramowitz and Stegun's 7.1.26, sign(x) (1 - r(t) t exp(-x^2)) with
# t = 1 / (1 + p |x|), within 1.5e-7 of erf; a double one as erf. So do these.
_AS_P = 0.3275911
_AS_R = (1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592)


def _gelu_erf(v, gauss=None):
    """erf(v) as GELU's kernels compute it; ``gauss``: exp(-v^2), where the caller has it."""
    if v.dtype == _float64:
        return ops.erf(v)
    t = ops.reciprocal(ops.add(ops.mul(_c(v, _AS_P), ops.abs(v)), _c(v, 1)))
    r = _c(v, _AS_R[0])
    for k in _AS_R[1:]:
        r = ops.add(ops.mul(r, t), _c(v, k))
    if gauss is None:
        gauss = ops.exp(ops.neg(ops.mul(v, v)))
    y = ops.sub(_c(v, 1), ops.mul(ops.mul(r, t), gauss))
    return ops.where(ops.signbit(v), ops.neg(y), y)


def _gelu(x, approximate):
    if approximate == "tanh":
        inner = ops.mul(_c(x, _GELU_K),
                        ops.add(x, ops.mul(_c(x, _GELU_C), ops.mul(x, ops.mul(x, x)))))
        return ops.mul(ops.mul(_c(x, 0.5), x), ops.add(_c(x, 1), ops.tanh(inner)))
    return ops.mul(ops.mul(_c(x, 0.5), x),
                   ops.add(_c(x, 1), _gelu_erf(ops.mul(x, _c(x, _SQRT1_2)))))


def _gelu_backward(x, g, approximate):
    if approximate == "tanh":
        x2 = ops.mul(x, x)
        t = ops.tanh(ops.mul(_c(x, _GELU_K), ops.add(x, ops.mul(ops.mul(_c(x, _GELU_C), x2), x))))
        dinner = ops.mul(_c(x, _GELU_K), ops.add(_c(x, 1), ops.mul(_c(x, 3 * _GELU_C), x2)))
        left = ops.mul(_c(x, 0.5), ops.add(_c(x, 1), t))
        right = ops.mul(ops.mul(ops.mul(_c(x, 0.5), x), ops.sub(_c(x, 1), ops.mul(t, t))), dinner)
        return ops.mul(g, ops.add(left, right))
    v = ops.mul(x, _c(x, _SQRT1_2))
    if x.dtype == _float64:
        gauss = ops.exp(ops.mul(_c(x, -0.5), ops.mul(x, x)))
        cdf = ops.mul(_c(x, 0.5), ops.add(_c(x, 1), ops.erf(v)))
    else:  # the float erf's exp(-v^2) is the density's exp(-x^2 / 2): computed once
        gauss = ops.exp(ops.neg(ops.mul(v, v)))
        cdf = ops.mul(_c(x, 0.5), ops.add(_c(x, 1), _gelu_erf(v, gauss)))
    pdf = ops.mul(gauss, _c(x, _INV_SQRT_2PI))
    return ops.mul(g, ops.add(cdf, ops.mul(x, pdf)))


def _threshold_backward(x, g, threshold):
    return ops.where(ops.le(x, threshold), _c(g, 0), g)


# The MobileNet/EfficientNet activations in ATen's arithmetic (Activation.cpp's CPU kernels;
# cpu/nn.py's NumPy rows compute the same expressions)
def _silu(x):
    return ops.truediv(x, ops.add(_c(x, 1), ops.exp(ops.neg(x))))


def _silu_backward(x, g):
    s = ops.truediv(_c(x, 1), ops.add(_c(x, 1), ops.exp(ops.neg(x))))
    return ops.mul(ops.mul(g, s), ops.add(_c(x, 1), ops.mul(x, ops.sub(_c(x, 1), s))))


def _relu6_of_shifted(x):
    return ops.minimum(ops.maximum(ops.add(x, _c(x, 3)), _c(x, 0)), _c(x, 6))


def _hardswish_backward(x, g):
    # PyTorch 2.13 takes the outer pieces at the kinks: 0 at x = -3 and g at x = 3; a NaN takes
    # the middle piece (NaN)
    inner = ops.mul(g, ops.add(ops.truediv(x, _c(x, 3)), _c(x, 0.5)))
    return ops.where(ops.le(x, _c(x, -3)), _c(x, 0), ops.where(ops.ge(x, _c(x, 3)), g, inner))


def _hardsigmoid_backward(x, g):
    inside = ops.logical_and(ops.gt(x, _c(x, -3)), ops.lt(x, _c(x, 3)))
    return ops.where(inside, ops.mul(g, _c(x, 1 / 6)), _c(x, 0))


# (activation, gelu's approximate or None) -> (spec name, aten text, inner function)
def _activation_exprs():
    return {
        ("gelu", "none"): ("gelu", "aten::gelu (approximate='none')",
                           lambda x: _gelu(x, "none")),
        ("gelu", "tanh"): ("gelu_tanh", "aten::gelu (approximate='tanh')",
                           lambda x: _gelu(x, "tanh")),
        ("silu", None): ("silu", "aten::silu: x / (1 + exp(-x))", _silu),
        ("hardswish", None): ("hardswish", "aten::hardswish: x * min(max(x + 3, 0), 6) / 6",
                              lambda x: ops.truediv(ops.mul(x, _relu6_of_shifted(x)), _c(x, 6))),
        ("hardsigmoid", None): ("hardsigmoid", "aten::hardsigmoid: min(max(x + 3, 0), 6) / 6",
                                lambda x: ops.truediv(_relu6_of_shifted(x), _c(x, 6))),
    }


def _activation_backward_exprs():
    return {
        ("gelu", "none"): ("gelu_backward", "aten::gelu_backward (approximate='none')",
                           lambda x, g: _gelu_backward(x, g, "none")),
        ("gelu", "tanh"): ("gelu_backward_tanh", "aten::gelu_backward (approximate='tanh')",
                           lambda x, g: _gelu_backward(x, g, "tanh")),
        ("silu", None): ("silu_backward", "aten::silu_backward", _silu_backward),
        ("hardswish", None): ("hardswish_backward", "aten::hardswish_backward",
                              _hardswish_backward),
        ("hardsigmoid", None): ("hardsigmoid_backward", "aten::hardsigmoid_backward",
                                _hardsigmoid_backward),
        # threshold_backward(grad, self, threshold): the threshold is a broadcast operand
        ("threshold", None): ("threshold_backward", "aten::threshold_backward",
                              _threshold_backward),
    }


_exprs = None


def _tables():
    global _exprs
    if _exprs is None:
        _exprs = (_pointwise_exprs(), _activation_exprs(), _activation_backward_exprs())
    return _exprs


# ---------------------------------------------------------------------------------------------
# Building and calling.

def _module(key, make_spec):
    """The built module for ``key`` ((spec name, numpy dtype)), or None if it cannot be built.
    The first missing compiler turns generated kernels off for the process (logged once); a
    build that fails is logged as a warning and that kernel stays NumPy's."""
    module = _modules.get(key, False)
    if module is not False:
        return module
    global _no_compiler
    from ..._inductor.exc import CppCompileError, InvalidCxxCompiler
    from ..._inductor.codegen import eager
    with _lock:
        module = _modules.get(key, False)
        if module is not False:
            return module
        try:
            module = eager.load_module(make_spec(eager))
        except InvalidCxxCompiler as e:
            _no_compiler = True
            log.info("eager ops use NumPy kernels: %s", e)
            return None
        except CppCompileError as e:
            log.warning("eager kernel %s stays NumPy's: %s", key[0], e)
            module = None
        _modules[key] = module
        return module


def _layout(arrays, size):
    """The layout letters of ``arrays`` for a result of ``size`` elements and the result shape,
    or None when an operand is neither a C-contiguous array of that shape nor one element."""
    shape = None
    letters = ""
    ndim = 0
    for a in arrays:
        if a.ndim > ndim:
            ndim = a.ndim
        if a.size == 1 and size != 1:
            letters += "s"
        elif a.size == size and a.flags.c_contiguous:
            if shape is None:
                shape = a.shape
            elif a.shape != shape:
                return None
            letters += "v"
        else:
            return None
    if shape is None or len(shape) < ndim:
        return None  # (a broadcast that adds dims: NumPy's result shape, not ours)
    return letters, shape


def _eligible(arrays, min_numel=MIN_NUMEL):
    """The float dtype name and element count of a result computed from ``arrays``, or None."""
    dt = arrays[0].dtype
    size = 0
    for a in arrays:  # (a loop, not generators: this runs for every large eager op)
        if a.size > size:
            size = a.size
        if a.dtype != dt:
            return None
        if a.__class__ is not np.ndarray and not isinstance(a, (np.ndarray, np.generic)):
            return None  # a device array (a CUDA op running its CPU body): NumPy's calls take it
    if size < min_numel or dt not in _FLOAT_DTYPES or not enabled():
        return None
    return dt, size


def _pointwise_module(name, dt, n):
    aten, fn = _tables()[0][name]
    layouts = _LAYOUTS[n]

    def make_spec(eager):
        edt = _ember_dtype(dt)
        return eager.PointwiseSpec(name, aten, fn, (edt,) * (n + 1), layouts)
    return _module((name, dt), make_spec)


_entry_points = {}  # (module, spec name, dtype, layout) -> the module's function


def _run_pointwise(module, spec_name, dt, layout, out, arrays, size):
    key = (module, spec_name, dt, layout)
    fn = _entry_points.get(key)
    if fn is None:
        fn = _entry_points[key] = getattr(module, f"{spec_name}_{_FLOAT_DTYPES[dt]}_{layout}")
    fn(out, *arrays, size, _threads())
    return out


def _plan(name, arrays):
    """``(dtype, element count, (layout class, result shape))`` when ``name`` has a generated
    kernel and ``arrays`` qualify for one, else None."""
    if name not in _POINTWISE_NAMES or len(arrays) > _ARITY.get(name, 2):
        return None
    found = _eligible(arrays)
    if found is None:
        return None
    dt, size = found
    lay = _layout(arrays, size)
    return None if lay is None or lay[0] not in _LAYOUTS[len(arrays)] else (dt, size, lay)


def _pow_exponent(name, arrays):
    """The exponent of a float ``pow`` by a scalar that PyTorch computes otherwise
    (``pow_tensor_scalar_optimized_kernel``: x*x, x*x*x, sqrt, rsqrt, 1/x, 1/(x*x) — its
    values, and several times faster than powf), else None."""
    if name != "pow" or arrays[1].ndim or arrays[0].dtype.kind != "f":
        return None
    e = float(arrays[1])
    return e if e in (2.0, 3.0, 0.5, -0.5, -1.0, -2.0) else None


def _special_pow(x, e):
    """``x ** e`` for an exponent :func:`_pow_exponent` names, as PyTorch computes it (None
    where a generated kernel does not apply)."""
    if e in (0.5, -0.5, -1.0):
        return pointwise({0.5: "sqrt", -0.5: "rsqrt", -1.0: "reciprocal"}[e], [x])
    square = pointwise("mul", [x, x])
    if square is None or e == 2.0:
        return square
    return pointwise("mul", [square, x]) if e == 3.0 else pointwise("reciprocal", [square])


def pointwise(name, arrays):
    """``name``'s result (a table row of ``cpu/pointwise.py``) computed from ``arrays`` (NumPy
    arrays already in the computation dtype), or None where NumPy should compute it."""
    e = _pow_exponent(name, arrays)
    if e is not None:
        return _special_pow(arrays[0], e)
    plan = _plan(name, arrays)
    if plan is None:
        return None
    dt, size, lay = plan
    module = _pointwise_module(name, dt, len(arrays))
    if module is None:
        return None
    return _run_pointwise(module, name, dt, lay[0], _cpu_cache.empty(lay[1], dt), arrays, size)


def pointwise_into(name, dst, arrays):
    """In-place form of :func:`pointwise`: writes ``name``'s result into ``dst`` (a
    C-contiguous array of the computation dtype and the result's shape) and returns True, or
    returns False where NumPy should compute it."""
    e = _pow_exponent(name, arrays)
    if e is not None:
        r = _special_pow(arrays[0], e)
        if r is None or r.shape != dst.shape or r.dtype != dst.dtype:
            return False
        np.copyto(dst, r)
        return True
    plan = _plan(name, arrays) if dst.dtype == arrays[0].dtype else None
    if plan is None:
        return False
    dt, size, lay = plan
    if dst.shape != lay[1] or not dst.flags.c_contiguous:
        return False
    module = _pointwise_module(name, dt, len(arrays))
    if module is None:
        return False
    _run_pointwise(module, name, dt, lay[0], dst, arrays, size)
    return True


# the table rows with a generated kernel (kept in step with _pointwise_exprs by the tests)
_POINTWISE_NAMES = frozenset((
    "neg", "abs", "relu", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt",
    "rsqrt", "reciprocal", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh",
    "asinh", "acosh", "atanh", "sigmoid", "erf", "erfc", "floor", "ceil", "trunc", "round",
    "add", "sub", "mul", "div", "maximum", "minimum", "fmax", "fmin", "pow", "atan2", "hypot",
    "copysign", "clamp_min", "clamp_max", "sigmoid_backward", "tanh_backward", "add_alpha",
    "lerp"))
_ARITY = {"add_alpha": 3, "lerp": 3}  # rows of more than two operands
# the operand layouts each arity's kernels are built for (v: the result's shape, s: one element)
_LAYOUTS = {1: ("v",), 2: ("vv", "vs", "sv"), 3: ("vvs",)}


def _mode(name, params):
    if name == "gelu":
        return params[0] if params else "none"
    return None


def activation(name, x, params):
    """The forward activation ``name`` of ``x`` (its computation-dtype array), or None."""
    # the size gate first: the tables import the compiler layer (sympy), which a small
    # tensor's activation never needs
    if _eligible([x]) is None:
        return None
    entry = _tables()[1].get((name, _mode(name, params)))
    if entry is None or _layout([x], x.size) is None:
        return None
    spec_name, aten, fn = entry
    dt = x.dtype

    def make_spec(eager):
        edt = _ember_dtype(dt)
        return eager.PointwiseSpec(spec_name, aten, fn, (edt, edt), ("v",))
    module = _module((spec_name, dt), make_spec)
    if module is None:
        return None
    return _run_pointwise(module, spec_name, dt, "v", _cpu_cache.empty(x.shape, dt), [x],
                          x.size)


def activation_backward(name, x, g, params):
    """The input gradient of activation ``name`` from ``x`` and ``grad`` (computation-dtype
    arrays of one shape), or None."""
    if _eligible([x, g]) is None or x.shape != g.shape:  # (before the tables: see activation)
        return None
    entry = _tables()[2].get((name, _mode(name, params)))
    if entry is None:
        return None
    spec_name, aten, fn = entry
    operands = [x, g]
    if name == "threshold":
        operands.append(np.asarray(params[0]).astype(x.dtype))
    lay = _layout(operands, x.size)
    if lay is None or "s" in lay[0][:2]:
        return None
    dt = x.dtype

    def make_spec(eager):
        edt = _ember_dtype(dt)
        return eager.PointwiseSpec(spec_name, aten, fn, (edt,) * (len(operands) + 1),
                                   (lay[0],))
    module = _module((spec_name, dt), make_spec)
    if module is None:
        return None
    return _run_pointwise(module, spec_name, dt, lay[0], _cpu_cache.empty(x.shape, dt), operands,
                          x.size)


# ---------------------------------------------------------------------------------------------
# Row kernels: softmax, log_softmax, their backward ops, layer_norm's input gradient.

def _row_specs(eager):

    def ld(name):
        return ops.load(name, None)

    def shifted():
        return ops.sub(ld("x"), ld("amax"))
    amax = (eager.Reduce("amax", "max", lambda: ld("x")),)
    sum_exp = (eager.Reduce("sum_exp", "sum", lambda: ops.exp(shifted())),)

    def xhat():
        return ops.mul(ops.sub(ld("x"), ld("mean")), ld("rstd"))

    def dxhat(weighted):
        return ops.mul(ld("grad"), ld("weight")) if weighted else ld("grad")

    def layer_norm(weighted):
        # rstd * (dxhat - (xhat * sum(dxhat * xhat) + sum(dxhat)) / cols), as the NumPy kernel
        def grad_input():
            inv_n = ops.truediv(ops.constant(1, ld("cols").dtype), ld("cols"))
            r = ops.add(ops.mul(xhat(), ops.mul(ld("dot"), inv_n)), ops.mul(ld("total"), inv_n))
            return ops.mul(ops.sub(dxhat(weighted), r), ld("rstd"))
        return ((eager.Reduce("dot", "sum", lambda: ops.mul(dxhat(weighted), xhat())),
                 eager.Reduce("total", "sum", lambda: dxhat(weighted))), grad_input)

    def layer_norm_forward(weighted, biased):
        def normalized():
            out = ops.mul(ops.sub(ld("x"), ld("mean")), ld("rstd"))
            out = ops.mul(out, ld("weight")) if weighted else out
            return ops.add(out, ld("bias")) if biased else out
        operands = (("x", "v"), ("eps", "s")) + ((("weight", "c"),) if weighted else ()) + \
            ((("bias", "c"),) if biased else ())
        return ("aten::native_layer_norm over the last dim", operands, (
            (eager.Reduce("total", "sum", lambda: ld("x")),),
            eager.Store("mean", lambda: ops.truediv(ld("total"), ld("cols"))),
            (eager.Reduce("squares", "sum",
                          lambda: ops.square(ops.sub(ld("x"), ld("mean")))),),
            eager.Store("rstd", lambda: ops.rsqrt(ops.add(ops.truediv(ld("squares"), ld("cols")),
                                                          ld("eps")))),
            eager.Store("out", normalized)))

    return {
        **{f"layer_norm{'_w' if w else ''}{'_b' if b else ''}": layer_norm_forward(w, b)
           for w in (True, False) for b in (True, False)},
        # the sum's pass keeps each exp in the output, the last pass divides it in place
        "softmax": ("aten::_softmax over the last dim", (("x", "v"),),
                    (amax, (eager.Reduce("sum_exp", "sum", lambda: ops.exp(shifted()), "out"),),
                     lambda: ops.truediv(ld("out"), ld("sum_exp")))),
        "log_softmax": ("aten::_log_softmax over the last dim", (("x", "v"),),
                        (amax, sum_exp, lambda: ops.sub(shifted(), ops.log(ld("sum_exp"))))),
        "softmax_backward": (
            "aten::_softmax_backward_data: out * (grad - sum(grad * out))",
            (("grad", "v"), ("y", "v")),
            ((eager.Reduce("dot", "sum", lambda: ops.mul(ld("grad"), ld("y"))),),
             lambda: ops.sub(ops.mul(ld("grad"), ld("y")), ops.mul(ld("y"), ld("dot"))))),
        "log_softmax_backward": (
            "aten::_log_softmax_backward_data: grad - exp(out) * sum(grad)",
            (("grad", "v"), ("y", "v")),
            ((eager.Reduce("total", "sum", lambda: ld("grad")),),
             lambda: ops.sub(ld("grad"), ops.mul(ops.exp(ld("y")), ld("total"))))),
        "layer_norm_backward": (
            "aten::native_layer_norm_backward, the input gradient",
            (("grad", "v"), ("x", "v"), ("mean", "r"), ("rstd", "r"), ("weight", "c")),
            layer_norm(True)),
        "layer_norm_backward_weight_bias_input": (
            "aten::native_layer_norm_backward: the input gradient, and the weight and bias "
            "gradients summed down the columns in the same pass",
            (("grad", "v"), ("x", "v"), ("mean", "r"), ("rstd", "r"), ("weight", "c")),
            layer_norm(True)),
        "layer_norm_backward_noweight": (
            "aten::native_layer_norm_backward without weight, the input gradient",
            (("grad", "v"), ("x", "v"), ("mean", "r"), ("rstd", "r")),
            layer_norm(False)),
    }


# the row kernels with outputs besides ``out`` (of the input's shape): name -> (name, layout)
_ROW_OUTPUTS = {f"layer_norm{w}{b}": (("out", "v"), ("mean", "r"), ("rstd", "r"))
                for w in ("_w", "") for b in ("_b", "")}


def _layer_norm_weight_bias_sums():
    """layer_norm's weight and bias gradients as (output, inner_fn) sums over the rows: the
    column kernel's, and summed beside the input gradient by
    ``layer_norm_backward_weight_bias_input``."""
    def ld(operand):
        return ops.load(operand, None)

    def grad_weight():
        return ops.mul(ld("grad"), ops.mul(ops.sub(ld("x"), ld("mean")), ld("rstd")))
    return (("grad_weight", grad_weight), ("grad_bias", lambda: ld("grad")))


# the row kernels that also sum over the rows: name -> their sums (RowSpec.column_sums)
_ROW_COLUMN_SUMS = {"layer_norm_backward_weight_bias_input": _layer_norm_weight_bias_sums}


def _rows(spec_name, arrays, rows, cols):
    """Run row kernel ``spec_name`` on ``arrays`` (matching its operands' layouts); its result
    (a tuple for a kernel of several outputs, ``(rows, 1)`` arrays for per-row ones, ``(cols,)``
    arrays for its column sums), or None."""
    dt = arrays[0].dtype
    outputs = _ROW_OUTPUTS.get(spec_name, (("out", "v"),))
    sums = _ROW_COLUMN_SUMS[spec_name]() if spec_name in _ROW_COLUMN_SUMS else ()

    def make_spec(eager):
        aten, operands, passes = _row_specs(eager)[spec_name]
        return eager.RowSpec(spec_name, aten, operands, passes, _ember_dtype(dt), outputs, sums)
    module = _module((spec_name, dt), make_spec)
    if module is None:
        return None
    outs = [_cpu_cache.empty(arrays[0].shape, dt) if lay == "v" else np.empty((rows, 1), dt)
            for _, lay in outputs] + [np.empty(cols, dt) for _ in sums]
    getattr(module, f"{spec_name}_{_FLOAT_DTYPES[dt]}")(*outs, *arrays, rows, cols, _threads())
    return outs[0] if len(outs) == 1 else tuple(outs)


def _column_specs(eager):
    """The column kernels (sums over the rows, one per column): name -> (aten, operands,
    sums)."""
    return {"layer_norm_backward_weight_bias": (
        "aten::native_layer_norm_backward, the weight and bias gradients",
        (("grad", "v"), ("x", "v"), ("mean", "r"), ("rstd", "r")),
        _layer_norm_weight_bias_sums())}


def layer_norm_backward_weight_bias(grad, x, mean, rstd):
    """native_layer_norm_backward's weight and bias gradients, ``(n,)`` arrays, from ``(m, n)``
    arrays ``grad`` and ``x`` and ``(m, 1)`` ``mean`` and ``rstd`` — one pass summing
    ``grad * (x - mean) * rstd`` and ``grad`` down the columns — or None."""
    arrays = [grad, x, mean, rstd]
    if _row_shape([grad, x], 1) is None or any(
            a.dtype != x.dtype or not a.flags.c_contiguous for a in arrays):
        return None
    m, n = x.shape
    dt = x.dtype
    name = "layer_norm_backward_weight_bias"

    def make_spec(eager):
        return eager.ColumnSpec(name, *_column_specs(eager)[name], _ember_dtype(dt))
    module = _module((name, dt), make_spec)
    if module is None:
        return None
    dw, db = np.empty(n, dt), np.empty(n, dt)
    getattr(module, f"{name}_{_FLOAT_DTYPES[dt]}")(dw, db, grad, x, mean, rstd, m, n,
                                                   _threads())
    return dw, db


def _row_shape(arrays, dim):
    """(rows, cols) when every array is C-contiguous with one shape and ``dim`` is the last dim,
    else None."""
    x = arrays[0]
    if x.ndim == 0 or dim != x.ndim - 1 or _eligible(arrays, 1) is None:
        return None
    if any(a.shape != x.shape or not a.flags.c_contiguous for a in arrays):
        return None
    cols = x.shape[-1]
    return (x.size // cols, cols) if cols else None


def softmax(x, dim, log=False):
    """softmax (log_softmax) of ``x`` over ``dim``, or None."""
    shape = _row_shape([x], dim)
    if shape is None:
        return None
    return _rows("log_softmax" if log else "softmax", [x], *shape)


def softmax_backward(grad, y, dim, log=False):
    """_softmax_backward_data (_log_softmax_backward_data) over ``dim``, or None."""
    shape = _row_shape([grad, y], dim)
    if shape is None:
        return None
    return _rows("log_softmax_backward" if log else "softmax_backward", [grad, y], *shape)


def layer_norm(x, weight, bias, eps):
    """native_layer_norm of the ``(m, n)`` array ``x`` with ``(1, n)`` ``weight`` and ``bias``
    (or None): ``(out, mean, rstd)``, the statistics ``(m, 1)``; or None."""
    arrays = [x, np.asarray(eps).astype(x.dtype)] + \
        [a for a in (weight, bias) if a is not None]
    if _row_shape([x], 1) is None or any(
            a.dtype != x.dtype or not a.flags.c_contiguous for a in arrays):
        return None
    m, n = x.shape
    name = f"layer_norm{'_w' if weight is not None else ''}{'_b' if bias is not None else ''}"
    return _rows(name, arrays, m, n)


def layer_norm_backward_input(grad, x, mean, rstd, weight):
    """native_layer_norm_backward's input gradient from ``(m, n)`` arrays ``grad`` and ``x``,
    ``(m, 1)`` ``mean`` and ``rstd`` and ``(1, n)`` ``weight`` (or None), or None."""
    arrays = [grad, x, mean, rstd] + ([weight] if weight is not None else [])
    if _row_shape([grad, x], 1) is None or any(
            a.dtype != x.dtype or not a.flags.c_contiguous for a in arrays):
        return None
    m, n = x.shape
    return _rows("layer_norm_backward" if weight is not None else "layer_norm_backward_noweight",
                 arrays, m, n)


def layer_norm_backward(grad, x, mean, rstd, weight):
    """native_layer_norm_backward's three gradients in one pass over ``grad`` and ``x`` (arrays
    as :func:`layer_norm_backward_input` takes them, ``weight`` given): ``(input gradient,
    weight gradient, bias gradient)``, the last two ``(n,)``; or None. PyTorch's CPU kernel
    makes one pass too; separately the column sums read both arrays again."""
    arrays = [grad, x, mean, rstd, weight]
    if _row_shape([grad, x], 1) is None or any(
            a.dtype != x.dtype or not a.flags.c_contiguous for a in arrays):
        return None
    m, n = x.shape
    return _rows("layer_norm_backward_weight_bias_input", arrays, m, n)
