"""C code for fused kernels (PyTorch's ``torch._inductor.codegen.cpp``).

A kernel is a loop nest over ``outer`` dims (run on OpenMP threads) holding one or more
*bodies*, each a loop over the ``inner`` dims (vectorised with ``#pragma omp simd``). Every
scheduled node is one statement group in a body: pointwise nodes compute and store an element,
reductions accumulate and store once the body's loop ends. A node that reads a reduction
finished in the current body starts the next body. A scan keeps its running value in a carry
local and stores every element, so pointwise consumers read it in the same iteration; its body
runs in order (no ``simd``). A scatter (accumulating stores) has a loop nest of its own: see
:meth:`CppKernel.codegen_scatter`. Values produced and consumed in the same
kernel at the same element are passed in C locals (``tmpN``, the accumulators ``acc0``...) and
never touch memory when no one else needs them.

C expressions come from :class:`CppOverrides`, the ``ops`` handler: one method per op, common
subexpressions folded. Math calls keep IEEE semantics (no ``-ffast-math``); the libm functions
are declared ``simd`` so gcc calls glibc's vector variants (libmvec) inside ``omp simd`` loops.
"""
import collections
import math
import os
import re

import sympy

import ember

from ..._core.strides import contiguous_strides, storage_extent
from .. import config, ir
from ..scheduler import is_outer_only, loop_vars, node_index, store_index
from ..virtualized import set_ops_handler

__all__ = ["CTYPES", "STORAGE_CTYPES", "CppKernel", "module_source", "CppOverrides",
           "epilogue_source"]

# C types of values in registers: float16/bfloat16 are computed in float, as PyTorch's Inductor
# does (rounded only where the graph converts, and when stored)
CTYPES = {ember.float32: "float", ember.float64: "double", ember.float16: "float",
          ember.bfloat16: "float", ember.int64: "int64_t", ember.int32: "int32_t",
          ember.int16: "int16_t", ember.int8: "int8_t", ember.uint8: "uint8_t", ember.bool: "bool"}
# C types of elements in memory
STORAGE_CTYPES = {**CTYPES, ember.float16: "_Float16", ember.bfloat16: "uint16_t"}
# element in memory -> register, register -> element in memory
_LOAD = {ember.float16: "(float)({})", ember.bfloat16: "ember_bf16_to_float({})"}
_STORE = {ember.float16: "(_Float16)({})", ember.bfloat16: "ember_float_to_bf16({})"}
_HALVES = (ember.float16, ember.bfloat16)

# glibc's libmvec vector variants (x86-64): the first five since 2.22, the rest since 2.35
_MVEC_OLD = ("sin", "cos", "exp", "log", "pow")
_MVEC_NEW = ("acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "cosh", "erf", "erfc",
             "exp2", "expm1", "hypot", "log10", "log1p", "log2", "sinh", "tan", "tanh")
_ARITY2 = {"pow", "atan2", "hypot"}


def _mvec_functions():
    try:
        version = os.confstr("CS_GNU_LIBC_VERSION") or ""
    except (ValueError, OSError):
        version = ""
    if not version.startswith("glibc ") or os.uname().machine != "x86_64":
        return ()
    major, minor = (int(p) for p in version.split()[1].split(".")[:2])
    if (major, minor) >= (2, 35):
        return _MVEC_OLD + _MVEC_NEW
    return _MVEC_OLD if (major, minor) >= (2, 22) else ()


def prelude(vector_math, streaming=False):
    """The C text every kernel module starts with; ``streaming``: with the helpers of streaming
    stores (x86-64 only; see :meth:`CppKernel.streamed`)."""
    lines = ["#define PY_SSIZE_T_CLEAN", "#include <Python.h>", "#include <math.h>",
             "#include <stdbool.h>", "#include <stdint.h>", "#include <string.h>", "",
             "/* set by a kernel whose workspace allocation failed; its caller raises MemoryError */",
             "static _Thread_local int ember_kernel_oom __attribute__((unused));", ""]
    if vector_math:
        lines.append("/* vector variants from glibc's libmvec, called inside omp simd loops */")
        for fn in _mvec_functions():
            for t, sfx in (("float", "f"), ("double", "")):
                params = ", ".join([t] * (2 if fn in _ARITY2 else 1))
                lines.append(f'{t} {fn}{sfx}({params}) __attribute__((simd("notinbranch")));')
        lines.append("")
    lines += [
        "/* NaN-propagating max/min (torch.maximum/minimum, clamp) */",
        "#define EMBER_MAX(a, b) (((a) != (a) || (a) > (b)) ? (a) : (b))",
        "#define EMBER_MIN(a, b) (((a) != (a) || (a) < (b)) ? (a) : (b))",
        "/* fmax/fmin (torch.fmax/fmin): NaN only where both are; the first operand at a tie",
        "   (fmax(0.0, -0.0) is 0.0), as ATen's, where libm's may give either */",
        "#define EMBER_FMAX(a, b) (((b) != (b) || (a) >= (b)) ? (a) : (b))",
        "#define EMBER_FMIN(a, b) (((b) != (b) || (a) <= (b)) ? (a) : (b))",
        "/* bfloat16 <-> float, rounding to nearest even; NaN stays NaN */",
        "static inline float ember_bf16_to_float(uint16_t h)",
        "{ uint32_t u = (uint32_t)h << 16; float f; memcpy(&f, &u, 4); return f; }",
        "static inline uint16_t ember_float_to_bf16(float f)",
        "{ uint32_t u; memcpy(&u, &f, 4); if (f != f) return (uint16_t)((u >> 16) | 0x40);",
        "  u += 0x7fff + ((u >> 16) & 1); return (uint16_t)(u >> 16); }",
        "/* Python's remainder: the sign of the divisor */",
        "static inline float ember_remainderf(float a, float b)",
        "{ float r = fmodf(a, b); return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r; }",
        "static inline double ember_remainder(double a, double b)",
        "{ double r = fmod(a, b); return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r; }",
        "",
    ] + _FLOAT_MATH
    if streaming:
        lines += _STREAM_HELPERS
    return "\n".join(lines)


# exp of float as PyTorch's vectorised CPU kernels (and torch.compile's C++ kernels) compute
# it: SLEEF's expf_u10, behind Vectorized<float>::exp. Plain C, so gcc vectorises it inline in
# omp simd loops, where libmvec's expf is a call and 23 % slower alone; a loop that calls libmvec
# anyway keeps libmvec's expf (_exp_beside_calls; benchmarks/NOTES.md, session 16).
_FLOAT_MATH = [
    "/* exp(d) for float, as SLEEF's expf_u10 (PyTorch's vectorised exp): at most 1 ulp;",
    "   inf above 100, 0 below -104 (subnormal from -87.3), NaN stays NaN */",
    "static inline float ember_pow2if(int32_t q)",
    "{ int32_t bits = (q + 0x7f) << 23; float f; memcpy(&f, &bits, 4); return f; }",
    "#ifdef __FMA__  /* (SLEEF's choice too: a fused multiply-add where the CPU has one) */",
    "#define EMBER_FMAF(a, b, c) fmaf(a, b, c)",
    "#else",
    "#define EMBER_FMAF(a, b, c) ((a) * (b) + (c))",
    "#endif",
    "static inline float ember_expf(float d)",
    "{",
    "    /* (for NaN and |d| beyond 2^31 the conversion is out of range: x86 gives INT_MIN, no",
    "       trap under -fno-trapping-math, and the selects at the end discard that value, as",
    "       SLEEF's do; clamping d first made GELU's kernel 40 % slower) */",
    "    int32_t q = (int32_t)rintf(d * 1.442695040888963407359924681001892137f);",
    "    float s = EMBER_FMAF((float)q, -0.693145751953125f, d);",
    "    s = EMBER_FMAF((float)q, -1.428606765330187045e-06f, s);",
    "    float u = 0.000198527617612853646278381f;",
    "    u = EMBER_FMAF(u, s, 0.00139304355252534151077271f);",
    "    u = EMBER_FMAF(u, s, 0.00833336077630519866943359f);",
    "    u = EMBER_FMAF(u, s, 0.0416664853692054748535156f);",
    "    u = EMBER_FMAF(u, s, 0.166666671633720397949219f);",
    "    u = EMBER_FMAF(u, s, 0.5f);",
    "    u = 1.0f + EMBER_FMAF(s * s, u, s);",
    "    u = u * ember_pow2if(q >> 1) * ember_pow2if(q - (q >> 1));",
    "    u = d < -104.0f ? 0.0f : u;",
    "    return d > 100.0f ? INFINITY : u;  /* NaN: u is NaN */",
    "}",
    "",
]


# SSE2 (every x86-64) suffices: the CPU combines four 16-byte streaming stores into one line's
# write, as fast as one 64-byte store (measured); and <emmintrin.h> parses in a few ms where
# <immintrin.h> takes 0.1 s of every build
_STREAM_HELPERS = [
    "#include <emmintrin.h>",
    "/* A row computed into a stack array, written to memory with streaming (non-temporal)",
    "   stores: the cache neither reads each line before it is written nor keeps it. Whole",
    "   64-byte lines only; the partial lines at either end take ordinary stores. */",
    "static inline void ember_stream_row(void* restrict dst, const void* restrict src, int64_t n)",
    "{",
    "    char* d = (char*)dst;",
    "    const char* s = (const char*)src;",
    "    int64_t head = (int64_t)(-(uintptr_t)d & 63);",
    "    if (head > n) head = n;",
    "    memcpy(d, s, head);",
    "    for (d += head, s += head, n -= head; n >= 64; d += 64, s += 64, n -= 64)",
    "        for (int k = 0; k < 64; k += 16)",
    "            _mm_stream_si128((__m128i*)(d + k), _mm_loadu_si128((const __m128i*)(s + k)));",
    "    memcpy(d, s, n);",
    "}",
    "/* streaming stores are weakly ordered: each thread fences its own before the kernel ends */",
    "static inline void ember_stream_fence(void) { _mm_sfence(); }",
    "",
]


def last_level_cache_bytes():
    """The size of the CPU's last-level cache in bytes (Linux's sysfs), or None where unknown."""
    global _LLC
    if _LLC is False:
        base = "/sys/devices/system/cpu/cpu0/cache"
        try:
            caches = [(int(_read(base, entry, "level")), _size(_read(base, entry, "size")))
                      for entry in os.listdir(base) if entry.startswith("index")]
        except (OSError, ValueError, KeyError):
            caches = []
        _LLC = max(caches)[1] if caches else None
    return _LLC


def _read(*path):
    with open(os.path.join(*path)) as f:
        return f.read().strip()


def _size(text):
    """sysfs's ``32768K`` in bytes."""
    if text[-1].isdigit():
        return int(text)
    return int(text[:-1]) << {"K": 10, "M": 20, "G": 30}[text[-1]]


_LLC = False  # not read yet


class CSEVar:
    """A C local holding one value of the kernel (its name and dtype)."""

    __slots__ = ("name", "dtype")

    def __init__(self, name, dtype):
        self.name = name
        self.dtype = dtype

    def __str__(self):
        return self.name


def _is_float(dtype):
    return dtype.is_floating_point


def _fn(name, dtype):
    if dtype != ember.float64 and name in _OWN_FLOAT_MATH:
        return _OWN_FLOAT_MATH[name]
    return name + ("" if dtype == ember.float64 else "f")


# float functions the prelude defines (PyTorch's vectorised CPU formulas) instead of libm's
_OWN_FLOAT_MATH = {"exp": "ember_expf"}


def _float_only(a, op):
    # the integer forms need Python's rounding and a division-by-zero error: the eager kernel
    if not _is_float(a.dtype):
        raise NotImplementedError(f"integer {op} runs eagerly")


def load_code(ref, dtype):
    return _LOAD[dtype].format(ref) if dtype in _LOAD else ref


def store_code(value, dtype):
    return _STORE[dtype].format(value) if dtype in _STORE else str(value)


def index_code(expr):
    return sympy.ccode(sympy.expand(expr))


def constant_code(value, dtype):
    if dtype == ember.bool:
        return "true" if value else "false"
    if _is_float(dtype):
        value = float(value)
        if math.isnan(value):
            return "NAN"
        if math.isinf(value):
            return "INFINITY" if value > 0 else "-INFINITY"
        text = repr(value)
        return text if dtype == ember.float64 else text + "f"
    value = int(value)
    if dtype == ember.int64 and value == -2**63:
        return "INT64_MIN"  # its magnitude does not fit a signed literal
    if dtype == ember.int64 and not -2**31 <= value < 2**31:
        return f"INT64_C({value})"
    return str(value)


class CppOverrides:
    """The ``ops`` handler writing C: each call appends ``T tmpN = <expr>;`` to the current
    body (reusing an identical earlier line) and returns the new local."""

    def __init__(self, kernel):
        self.kernel = kernel

    # -- memory and constants -------------------------------------------------------------
    def load(self, name, index):
        return self.kernel.load(name, index)

    def constant(self, value, dtype):
        return self.kernel.cse(constant_code(value, dtype), dtype)

    def store(self, name, index, value, mode=None):
        """``name[index] = value``, or ``+=`` with ``mode="atomic_add"`` (PyTorch's store
        mode): the scatter kernel's loops give each element to one thread (codegen_scatter),
        so the accumulation needs no atomic instruction."""
        self.kernel.store(name, index, value, mode)

    def indirect_indexing(self, x):
        """An index read from a tensor, for use in load indices: a C local named like the
        sympy symbol returned (the wrapper checked its bounds before the kernel runs)."""
        var = self.kernel.cse(f"(int64_t)({x})", ember.int64)
        return sympy.Symbol(var.name, integer=True)

    def index_expr(self, expr, dtype):
        return self.kernel.cse(f"({CTYPES[dtype]})({index_code(expr)})", dtype)

    def to_dtype(self, x, dtype):
        if x.dtype == dtype:
            return x
        if dtype == ember.bool:
            return self.kernel.cse(f"{x} != 0", dtype)
        if dtype in _HALVES:  # round to the narrow type, keep computing in float
            return self.kernel.cse(load_code(store_code(f"(float)({x})", dtype), dtype), dtype)
        return self.kernel.cse(f"({CTYPES[dtype]})({x})", dtype)

    # -- arithmetic -------------------------------------------------------------------------
    def _bin(self, fmt, a, b, dtype=None):
        return self.kernel.cse(fmt.format(a=a, b=b), dtype or a.dtype)

    def add(self, a, b):
        return self._bin("{a} + {b}", a, b)

    def sub(self, a, b):
        return self._bin("{a} - {b}", a, b)

    def mul(self, a, b):
        return self._bin("{a} * {b}", a, b)

    def truediv(self, a, b):
        return self._bin("{a} / {b}", a, b)

    def neg(self, a):
        return self.kernel.cse(f"-{a}", a.dtype)

    def reciprocal(self, a):
        return self.kernel.cse(f"{constant_code(1, a.dtype)} / {a}", a.dtype)

    def square(self, a):
        return self._bin("{a} * {a}", a, a)

    def abs(self, a):
        if _is_float(a.dtype):
            return self._call("fabs", a)
        return self.kernel.cse(f"{a} < 0 ? -{a} : {a}", a.dtype)

    def relu(self, a):
        # keeps NaN, as torch.relu does
        return self.kernel.cse(f"{a} < 0 ? {constant_code(0, a.dtype)} : {a}", a.dtype)

    def sigmoid(self, a):
        one = constant_code(1, a.dtype)
        return self.kernel.cse(f"{one} / ({one} + {_fn('exp', a.dtype)}(-{a}))", a.dtype)

    def rsqrt(self, a):
        return self.kernel.cse(f"{constant_code(1, a.dtype)} / {_fn('sqrt', a.dtype)}({a})",
                               a.dtype)

    def sign(self, a):
        t = CTYPES[a.dtype]
        if a.dtype == ember.bool:
            return a
        # torch.sign(nan) is 0, as this comparison gives
        return self.kernel.cse(f"({t})(({a} > 0) - ({a} < 0))", a.dtype)

    def round(self, a):
        return self._call("nearbyint", a) if _is_float(a.dtype) else a

    def _call(self, name, *args):
        dtype = args[0].dtype
        return self.kernel.cse(f"{_fn(name, dtype)}({', '.join(map(str, args))})", dtype)

    def pow(self, a, b):
        _float_only(a, "pow")
        return self._call("pow", a, b)

    def remainder(self, a, b):
        _float_only(a, "remainder")
        return self.kernel.cse(f"{_fn('ember_remainder', a.dtype)}({a}, {b})", a.dtype)

    def fmod(self, a, b):
        _float_only(a, "fmod")
        return self._call("fmod", a, b)

    def floordiv(self, a, b):
        _float_only(a, "floor_divide")
        return self.kernel.cse(f"{_fn('floor', a.dtype)}({a} / {b})", a.dtype)

    def maximum(self, a, b):
        return self._bin("EMBER_MAX({a}, {b})", a, b)

    def minimum(self, a, b):
        return self._bin("EMBER_MIN({a}, {b})", a, b)

    clamp_min = maximum
    clamp_max = minimum

    def fmax(self, a, b):
        return self._bin("EMBER_FMAX({a}, {b})", a, b)

    def fmin(self, a, b):
        return self._bin("EMBER_FMIN({a}, {b})", a, b)

    def where(self, c, a, b):
        return self.kernel.cse(f"{c} ? {a} : {b}", a.dtype)

    def masked(self, mask, body, other):
        """``body()`` where ``mask`` holds, else ``other``: the loads ``body`` makes are
        guarded by the mask (C evaluates only the chosen side of ``?:``), so they may index
        outside their buffer where it does not hold (padding, the other inputs of a cat)."""
        self.kernel.masks.append(mask)
        try:
            value = body()
        finally:
            self.kernel.masks.pop()
        return self.where(mask, value, self.constant(other, value.dtype))

    # -- predicates -------------------------------------------------------------------------
    def _cmp(op):
        def fn(self, a, b):
            return self.kernel.cse(f"{a} {op} {b}", ember.bool)
        return fn

    eq, ne, lt, le, gt, ge = _cmp("=="), _cmp("!="), _cmp("<"), _cmp("<="), _cmp(">"), _cmp(">=")
    del _cmp

    def logical_and(self, a, b):
        return self.kernel.cse(f"({a} != 0) && ({b} != 0)", ember.bool)

    def logical_or(self, a, b):
        return self.kernel.cse(f"({a} != 0) || ({b} != 0)", ember.bool)

    def logical_xor(self, a, b):
        return self.kernel.cse(f"({a} != 0) != ({b} != 0)", ember.bool)

    def logical_not(self, a):
        return self.kernel.cse(f"{a} == 0", ember.bool)

    def bitwise_and(self, a, b):
        return self._bin("{a} & {b}", a, b)

    def bitwise_or(self, a, b):
        return self._bin("{a} | {b}", a, b)

    def bitwise_xor(self, a, b):
        return self._bin("{a} ^ {b}", a, b)

    def bitwise_not(self, a):
        return self.kernel.cse(f"!{a}" if a.dtype == ember.bool else f"~{a}", a.dtype)

    def isnan(self, a):
        return self.kernel.cse(f"{a} != {a}" if _is_float(a.dtype) else "false", ember.bool)

    def isinf(self, a):
        return self.kernel.cse(f"isinf({a})" if _is_float(a.dtype) else "false", ember.bool)

    def isfinite(self, a):
        return self.kernel.cse(f"isfinite({a})" if _is_float(a.dtype) else "true", ember.bool)

    def signbit(self, a):
        return self.kernel.cse(f"signbit({a}) != 0" if _is_float(a.dtype) else f"{a} < 0",
                               ember.bool)


# ops that are a libm call of the same name (sinf / sin by dtype)
for _name in ("exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "sin", "cos",
              "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh",
              "erf", "erfc", "floor", "ceil", "trunc", "atan2", "hypot", "copysign"):
    def _libm(self, *args, _n=_name):
        if not _is_float(args[0].dtype):
            if _n in ("floor", "ceil", "trunc"):
                return args[0]
            raise NotImplementedError(f"{_n} of an integer tensor")
        return self._call(_n, *args)
    setattr(CppOverrides, _name, _libm)


class _Scratch:
    """A kernel stand-in for :func:`can_codegen`: locals are made up, nothing is kept."""

    def __init__(self, dtype_of):
        self.dtype_of = dtype_of
        self.masks = []

    def cse(self, expr, dtype):
        return CSEVar("t", dtype)

    def load(self, name, index):
        return CSEVar("t", self.dtype_of(name))

    def indirect_indexing(self, x):
        return sympy.Symbol("t", integer=True)


def can_codegen(loops, dtype_of):
    """Whether C can be written for ``loops`` (e.g. integer ``pow`` cannot: it runs eagerly)."""
    idx = ir.index_vars("x", loops.ranges)
    try:
        with set_ops_handler(CppOverrides(_Scratch(dtype_of))):
            loops._call(idx, ir.index_vars("r", loops._rranges()))
    except NotImplementedError:
        return False
    return True


# reduction_type -> (initial value, update expression, OpenMP reduction operator)
REDUCTIONS = {
    "sum": (0, "{acc} + {v}", "+"),
    "prod": (1, "{acc} * {v}", "*"),
    "max": (-math.inf, "{v} > {acc} ? {v} : {acc}", "max"),
    "min": (math.inf, "{v} < {acc} ? {v} : {acc}", "min"),
    "any": (False, "{acc} || {v}", "||"),
}
_INT_LIMITS = {ember.int64: ("INT64_MIN", "INT64_MAX"), ember.int32: ("INT32_MIN", "INT32_MAX"),
               ember.int16: ("INT16_MIN", "INT16_MAX"), ember.int8: ("INT8_MIN", "INT8_MAX"),
               ember.uint8: ("0", "UINT8_MAX"), ember.bool: ("false", "true")}


class _Body:
    """One loop over the kernel's inner dims: C lines, accumulators and the locals that hold
    this body's stored values (buffer, index) -> local."""

    def __init__(self, loop=True):
        self.loop = loop         # False: statements run once per outer iteration
        self.lines = []
        self.accumulators = []   # (name, ctype, init, omp op, nan flag or None)
        self.after = []          # lines after the loop (reduction stores)
        self.carries = []        # scans' running values: (name, ctype, init)
        self.simd = True         # False: iterations depend on each other (scan, Welford)
        self.forward = {}
        self.reductions = set()  # buffers reduced in this body
        self.cse = {}


class CppKernel:
    """The C function of one ``FusedKernel``."""

    def __init__(self, name, fused, graph):
        self.name = name
        self.nodes = fused.nodes
        self.outer = fused.outer
        self.inner = fused.inner
        self.graph = graph
        self.xs, self.rs = loop_vars(self.outer, self.inner)
        self.bodies = [_Body()]
        self.memory_loads = {}      # buffer -> set of indices loaded from memory
        self.reduction_vars = {}    # buffer -> (index, accumulator) for finished reductions
        self.produced = {n.name for n in self.nodes}
        # values of outer-only nodes: locals of the outer loop, visible to every later body
        self.outer_forward = {}
        self._tmp = 0
        self.masks = []             # conditions guarding the loads made now (ops.masked)
        self.handler = CppOverrides(self)
        self.scan_carries = {}      # (scan group, body, element index) -> its carry locals
        self.welford_vars = {}      # (welford group, body) -> its (mean, m2, weight) locals
        self.scatter = None         # a scatter kernel's (init loop vars, loop vars, free dims)
        self.stores = {}            # buffer -> (body, index) of its store in a loop body

    # -- the ops handler's services -------------------------------------------------------------
    @property
    def body(self):
        return self.bodies[-1]

    def cse(self, expr, dtype):
        hit = self.body.cse.get(expr)
        if hit is not None:
            return hit
        var = CSEVar(f"tmp{self._tmp}", dtype)
        self._tmp += 1
        self.body.lines.append(f"{CTYPES[dtype]} {var} = {expr};")
        self.body.cse[expr] = var
        return var

    def load(self, name, index):
        index = sympy.expand(index)
        hit = self.body.forward.get((name, index)) or self.outer_forward.get((name, index))
        if hit is not None:
            return hit
        red = self.reduction_vars.get(name)
        if red is not None and red[0] == index:
            return red[1]
        self.memory_loads.setdefault(name, set()).add(index)
        dtype = self.graph.dtype_of(name)
        ref = f"{self.pointer(name)}[{index_code(index)}]"
        guard = f"({' && '.join(str(m) for m in self.masks)}) ? " if self.masks else ""
        if name not in self.produced:
            return self.cse(f"{guard}{load_code(ref, dtype)}{' : 0' if guard else ''}", dtype)
        # written earlier in this kernel: the line is settled once it is known whether the
        # buffer lives in memory or in a row-local array (see source())
        key = guard + ref
        hit = self.body.cse.get(key)
        if hit is None:
            hit = self.body.cse[key] = CSEVar(f"tmp{self._tmp}", dtype)
            self._tmp += 1
            # row-local copies hold register values: no conversion
            decl = f"{CTYPES[dtype]} {hit} = {guard}"
            tail = " : 0;" if guard else ";"
            self.body.lines.append(("load", name, decl + load_code(ref, dtype) + tail,
                                    decl + self._row_ref(name) + tail))
        return hit

    def store(self, name, index, value, mode):
        ref = f"{self.pointer(name)}[{index_code(index)}]"
        if mode == "atomic_add":
            # the element is read too: the buffer must stay in memory
            self.memory_loads.setdefault(name, set()).add(sympy.expand(index))
            if value.dtype in _HALVES:  # the sum is rounded to the narrow type at each add
                total = f"{load_code(ref, value.dtype)} + {value}"
                self.body.lines.append(f"{ref} = {store_code(total, value.dtype)};")
            else:
                self.body.lines.append(f"{ref} += {value};")
        elif mode is None:
            self.body.lines.append(f"{ref} = {store_code(value, value.dtype)};")
        else:
            raise NotImplementedError(f"store mode {mode!r}")

    def _row_linear(self):
        # a row-local array is indexed by the inner loop variables alone
        return sum((r * s for r, s in zip(self.rs, contiguous_strides(self.inner))),
                   sympy.Integer(0))

    def _row_ref(self, name, kind="row"):
        return f"{name}_{kind}[{index_code(self._row_linear())}]"

    def pointer(self, name):
        return f"ptr_{name}"

    # -- emitting nodes ---------------------------------------------------------------------------
    def codegen_node(self, node):
        data = node.data
        if isinstance(data, ir.Scatter):
            return self.codegen_scatter(node)
        loop = not is_outer_only(node, self.xs, self.rs)
        if self._reads_current_reduction(node) or loop != self.body.loop:
            self.bodies.append(_Body(loop))
        idx, ridx = node_index(node, self.xs, self.rs)
        store = store_index(node, self.xs, self.rs)
        with set_ops_handler(self.handler):
            if isinstance(data, ir.Reduction):
                value = data.inner_fn(idx, ridx)
                self._accumulate(node, value, store)
                return
            value = self._scan(data, idx) if isinstance(data, ir.Scan) else data.inner_fn(idx)
            if value.dtype != node.get_dtype():
                value = self.handler.to_dtype(value, node.get_dtype())
            self.body.forward[(node.name, store)] = value
            if not loop:
                self.outer_forward[(node.name, store)] = value
            ref = f"{self.pointer(node.name)}[{index_code(store)}]"
            stored = store_code(value, value.dtype)
            self.body.lines.append(("store", node.name, f"{ref} = {stored};",
                                    f"{self._row_ref(node.name)} = {value};",
                                    f"{self._row_ref(node.name, 'stream')} = {stored};"))
            if loop:
                self.stores[node.name] = (self.body, store)

    def _scan(self, data, idx):
        """The scan's running value after element ``idx``: carries declared before the body's
        loop (once per row), updated in order; nodes of one scan (cummax's values and
        indices) share them."""
        self.body.simd = False
        key = (data.group, id(self.body), tuple(sympy.expand(i) for i in idx))
        carries = self.scan_carries.get(key)
        if carries is None:
            carries = []
            for init, dtype in zip(data.inits, data.dtypes):
                name = f"scan{len(self.scan_carries)}_{len(carries)}"
                self.body.carries.append((name, CTYPES[dtype], constant_code(init, dtype)))
                carries.append(CSEVar(name, dtype))
            # assigned only once the whole combine has read the old values
            new = data.combine_fn(tuple(carries), data.inner_fn(idx))
            for c, v in zip(carries, new):
                self.body.lines.append(f"{c} = {v};")
            # expressions of the old carries are not the new ones' (``carry + x`` again)
            stale = re.compile(r"\b(" + "|".join(c.name for c in carries) + r")\b")
            self.body.cse = {k: v for k, v in self.body.cse.items() if not stale.search(k)}
            self.scan_carries[key] = carries
        return carries[data.output_index]

    def _reads_current_reduction(self, node):
        reads = node.reads()
        return any(name in self.body.reductions for name in reads)

    def _accumulate(self, node, value, store):
        rtype = node.data.reduction_type
        dtype = node.get_dtype()
        if value.dtype != dtype:
            value = self.handler.to_dtype(value, dtype)
        if rtype == "welford_reduce":
            return self._welford(node, value, store)
        init, update, omp_op = REDUCTIONS[rtype]
        acc = f"acc{len(self.reduction_vars)}"
        nan_flag = None
        if rtype in ("max", "min") and not _is_float(dtype):
            init_code = _INT_LIMITS[dtype][0 if rtype == "max" else 1]
        else:
            init_code = constant_code(init, dtype)
        if rtype in ("max", "min") and _is_float(dtype):
            # the vectorisable compare-select skips NaN; a flag restores torch's propagation
            nan_flag = f"{acc}_nan"
            self.body.lines.append(f"{nan_flag} = {nan_flag} | ({value} != {value});")
        self.body.lines.append(f"{acc} = {update.format(acc=acc, v=value)};")
        self.body.accumulators.append((acc, CTYPES[dtype], init_code, omp_op, nan_flag))
        if nan_flag:
            self.body.after.append(f"if ({nan_flag}) {acc} = NAN;")
        ref = f"{self.pointer(node.name)}[{index_code(store)}]"
        self.body.after.append(("store", node.name, f"{ref} = {store_code(acc, dtype)};", None))
        self.body.reductions.add(node.name)
        self.reduction_vars[node.name] = (store, CSEVar(acc, dtype))

    def _welford(self, node, value, store):
        """Welford's update of the running mean, m2 and count, shared by the nodes of one
        WelfordReduction. OpenMP has no reduction clause for it, so a row body runs in order;
        the column layout (``_column_source``) keeps one set per lane and vectorises. float
        and the half types accumulate in double, as ATen's CPU kernels do: a float running
        mean of ``1e4 + noise`` cannot take steps smaller than its ulp, and m2 then measures
        the deviations from a stale mean."""
        data, dtype = node.data, node.get_dtype()
        key = (data.group, id(self.body))
        names = self.welford_vars.get(key)
        if names is None:
            acc = f"acc{len(self.reduction_vars)}"
            names = self.welford_vars[key] = (f"{acc}_mean", f"{acc}_m2", f"{acc}_weight")
            mean, m2, weight = names
            ctype = "double" if dtype in (ember.float32,) + _HALVES else CTYPES[dtype]
            self.body.simd = False
            self.body.lines += [f"{weight} = {weight} + 1;",
                                f"{ctype} {acc}_delta = {value} - {mean};",
                                f"{mean} = {mean} + {acc}_delta / {weight};",
                                f"{m2} = {m2} + {acc}_delta * ({value} - {mean});"]
            self.body.accumulators += [(n, ctype, "0", None, None) for n in names]
        result = names[data.output_index]
        ref = f"{self.pointer(node.name)}[{index_code(store)}]"
        self.body.after.append(("store", node.name, f"{ref} = {store_code(result, dtype)};",
                                None))
        self.body.reductions.add(node.name)
        self.reduction_vars[node.name] = (store, CSEVar(result, dtype))

    # -- scatters ---------------------------------------------------------------------------------
    def codegen_scatter(self, node):
        """Two loop nests: the buffer's initial values, then the accumulation. An accumulated
        loop dim that is itself some coordinate of the element written (embedding backward's
        columns, every dim but ``dim`` of scatter_add) sends different iterations to different
        elements: those *free* dims run on threads (the last one in chunks, vectorised), the
        others (the rows the index tensors pick) run in order inside each thread. No two
        threads or vector lanes then add to one element, and each element sums in index
        order, as the eager kernels do."""
        data, layout = node.data, node.layout
        ys = ir.index_vars("y", data.size)
        xs = ir.index_vars("x", data.ranges)
        self.bodies = [_Body()]
        with set_ops_handler(self.handler):
            value = data.init_fn(ys)
            if value.dtype != data.dtype:
                value = self.handler.to_dtype(value, data.dtype)
            self.handler.store(node.name, layout.index(ys) - layout.offset, value)
            self.bodies.append(_Body())
            coords = data.output_indexer(xs)
            value = data.inner_fn(xs)
            if value.dtype != data.dtype:
                value = self.handler.to_dtype(value, data.dtype)
            self.handler.store(node.name, layout.index(coords) - layout.offset, value,
                               mode="atomic_add")
        free = [k for k, x in enumerate(xs) if any(c == x for c in coords)]
        self.scatter = (ys, xs, free)

    def _scatter_source(self, head):
        ys, xs, free = self.scatter
        data = self.nodes[0].data
        init, acc = self.bodies
        out = list(head)
        ind = "    "
        threads = _threads()
        # the initial values: every element once
        numel = math.prod(data.size)
        out.append(f"{ind}/* initial values */")
        parallel = numel >= config.parallel_threshold and threads > 1
        for k, (y, n) in enumerate(zip(ys, data.size)):
            last = k == len(ys) - 1
            if k == 0 and parallel:
                out.append(f"{ind}#pragma omp parallel for{' simd' if last else ''} "
                           f"num_threads({threads})")
            elif last:
                out.append(f"{ind}#pragma omp simd")
            out.append(f"{ind}for (int64_t {y} = 0; {y} < {n}; {y}++)")
        out += [ind + "{"] + [ind + "    " + ln for ln in init.lines] + [ind + "}"]
        # the accumulation
        out.append(f"{ind}/* accumulation: threads own the free dims' elements */")
        numel = math.prod(data.ranges)
        if not numel:
            return out
        serial = [k for k in range(len(xs)) if k not in free]
        parallel = numel >= config.parallel_threshold and threads > 1 and free
        if not free:
            loops = [(xs[k], f"0; {xs[k]} < {data.ranges[k]}", "") for k in serial]
        else:
            last = free[-1]
            n, chunk = data.ranges[last], min(self.SCATTER_CHUNK, data.ranges[last])
            x = xs[last]
            loops = [(xs[k], f"0; {xs[k]} < {data.ranges[k]}", "") for k in free[:-1]]
            loops.append((f"{x}c", f"0; {x}c < {n}", f" += {chunk}"))
            loops += [(xs[k], f"0; {xs[k]} < {data.ranges[k]}", "") for k in serial]
            loops.append((x, f"{x}c; {x} < ({x}c + {chunk} < {n} ? {x}c + {chunk} : {n})", ""))
        for k, (var, bounds, step) in enumerate(loops):
            if k == 0 and parallel:
                collapse = len(free)
                out.append(f"{ind}#pragma omp parallel for"
                           f"{f' collapse({collapse})' if collapse > 1 else ''} "
                           f"num_threads({threads})")
            if free and k == len(loops) - 1:
                out.append(f"{ind}#pragma omp simd")
            out.append(f"{ind}for (int64_t {var} = {bounds}; {var}{step or '++'})")
        out += [ind + "{"] + [ind + "    " + ln for ln in acc.lines] + [ind + "}"]
        return out

    SCATTER_CHUNK = 64  # elements of the last free dim per thread's task

    # -- the C text ---------------------------------------------------------------------------------
    def codegen(self):
        for node in self.nodes:
            self.codegen_node(node)
        return self

    def row_local_candidates(self):
        """Buffers of this kernel that could live in a per-row array (on the thread's stack)
        instead of memory, if no one outside the kernel reads them: pointwise values over the
        outer x inner loops when rows are small enough."""
        if not self.outer or not self.inner:
            return set()
        row = math.prod(self.inner)
        return {n.name for n in self.nodes
                if not isinstance(n.data, ir.Reduction)
                and not is_outer_only(n, self.xs, self.rs)
                and row * n.get_dtype().itemsize <= config.row_local_max_bytes}

    def source(self, args, removed, local, origins_comment, final=()):
        """The kernel function: ``args`` is [(buffer name, is_output)]; ``removed`` are the
        buffers no one reads from memory (their stores are dropped), ``local`` those kept in
        row-local arrays, ``final`` the outputs only the graph's caller reads (see
        :meth:`streamed`)."""
        params = []
        for name, is_out in args:
            t = STORAGE_CTYPES[self.graph.dtype_of(name)]
            params.append(f"{'' if is_out else 'const '}{t}* restrict {self.pointer(name)}")
        out = [f"/* {origins_comment} */",
               f"static void {self.name}({', '.join(params)})", "{"]
        if self.scatter is not None:
            return "\n".join(self._scatter_source(out) + ["}"])
        numel = math.prod(self.outer) * max(math.prod(self.inner), 1) * len(self.bodies)
        parallel = numel >= config.parallel_threshold and _threads() > 1
        streamed = self.streamed(args, final)
        bodies = [(b, [_resolve(x, removed, local, streamed) for x in b.lines],
                   [_resolve(x, removed, local) for x in b.after]) for b in self.bodies]
        bodies = _drop_unused([(b, _exp_beside_calls([ln for ln in lines if ln]),
                                [ln for ln in after if ln]) for b, lines, after in bodies])
        if self._is_column_reduction(local, bodies):
            return "\n".join(out + self._column_source(bodies, parallel) + ["}"])
        ind = "    " * (2 if self.outer else 1)
        n_row = math.prod(self.inner)
        row = [f"{ind}{CTYPES[self.graph.dtype_of(name)]} {name}_row[{n_row}];"
               for name in sorted(local)]
        row += [f"{ind}{STORAGE_CTYPES[self.graph.dtype_of(name)]} {name}_stream[{n_row}] "
                f"__attribute__((aligned(64)));" for name in sorted(streamed)]
        for body, lines, after in bodies:
            if lines or after:
                row += self._body_source(body, lines, after, ind, parallel and not self.outer)
            for name in sorted(streamed):
                if self.stores[name][0] is body:
                    start = self.stores[name][1].subs({r: 0 for r in self.rs})
                    row.append(f"{ind}ember_stream_row(&{self.pointer(name)}"
                               f"[{index_code(start)}], {name}_stream, sizeof({name}_stream));")
        if not self.outer:
            return "\n".join(out + row + ["}"])
        loops = [f"    for (int64_t {x} = 0; {x} < {n}; {x}++)"
                 for x, n in zip(self.xs, self.outer)]
        fence = ["    ember_stream_fence();"] if streamed else []
        if not parallel:
            return "\n".join(out + loops + ["    {"] + row + ["    }"] + fence + ["}"])
        # One outer iteration in a function of its own, called from the parallel loop: GCC
        # (12) leaves a loop after an `omp simd reduction` loop unvectorised when both sit in
        # the body that OpenMP outlines (layer_norm's backward: 1.55 ms scalar, 0.6 vectorised).
        xs = [str(x) for x in self.xs]
        names = [self.pointer(name) for name, _ in args]
        collapse = f" collapse({len(self.outer)})" if len(self.outer) > 1 else ""
        row_params = ", ".join(params + [f"int64_t {x}" for x in xs])
        call = f"        {self.name}_row({', '.join(names + xs)});"
        if streamed:  # each thread fences its streaming stores after its share of the rows
            run = [f"    #pragma omp parallel num_threads({_threads()})", "    {",
                   f"        #pragma omp for{collapse}"] + ["    " + ln for ln in loops] + \
                ["    " + call, "    " + fence[0], "    }"]
        else:
            run = [f"    #pragma omp parallel for{collapse} num_threads({_threads()})"] + \
                loops + [call]
        return "\n".join(
            [out[0], f"static void {self.name}_row({row_params})", "{"] +
            [ln[4:] for ln in row] + ["}", ""] + out[1:] + run + ["}"])

    def streamed(self, args, final):
        """The outputs this kernel writes with streaming stores (``ember_stream_row``): on
        x86-64, when the buffers it reads and writes add up to at least
        ``config.streaming_store_min_bytes`` (by default the last-level cache's size, so the
        first rows written would be evicted before anyone reads them anyway), each output of
        ``final`` (read by no later kernel of the graph nor saved for backward: those would
        rather find the last rows in the cache) whose row is contiguous in memory, stored in
        one loop and not read back by the kernel itself. Its row goes to a stack array,
        streamed out after the loop: the cache then neither reads each line before it is
        written (a third of layer_norm's forward traffic) nor gives up the inputs' lines to
        hold the row (layer_norm forward + backward on 4096x1024: see benchmarks/NOTES.md)."""
        threshold = config.streaming_store_min_bytes
        if threshold is None:
            threshold = last_level_cache_bytes()
        if not (config.streaming_stores and threshold is not None and self.outer and self.inner
                and os.uname().machine == "x86_64"):
            return set()
        try:
            footprint = sum(int(self._nbytes(name)) for name, _ in args)
            row_elems = int(math.prod(self.inner))
        except TypeError:  # symbolic sizes: unknown until run time
            return set()
        if footprint < threshold:
            return set()
        linear = sympy.expand(self._row_linear())
        chosen = set()
        for name in final:
            body, index = self.stores.get(name, (None, None))
            row_bytes = row_elems * self.graph.dtype_of(name).itemsize
            if (body is not None and body.simd and name not in self.memory_loads
                    and 64 <= row_bytes <= config.row_local_max_bytes
                    and sympy.expand(index - index.subs({r: 0 for r in self.rs})) == linear):
                chosen.add(name)
        return chosen

    def _nbytes(self, name):
        layout = self.graph.get_buffer(name).layout
        return storage_extent(layout.size, layout.stride, 0) * layout.dtype.itemsize

    # -- reductions over a strided dim ------------------------------------------------------------
    COLUMN_CHUNK = 64  # kept elements reduced side by side (one accumulator array each)

    def _is_column_reduction(self, local, bodies):
        """Whether this kernel reduces over a dim whose elements lie far apart while the kept
        elements are adjacent (``sum(x, 0)`` of a matrix: the bias gradient): then the loops
        swap, each reduction step adding one contiguous row into a chunk of accumulators."""
        if not (self.outer and self.inner) or local:
            return False
        loops = [b for b in self.bodies if b.loop]
        # reduction loops storing nothing per step; values computed once per kept element
        # between them, each used in its own body only (every body becomes a loop of its own)
        if not loops or not all(b.accumulators for b in loops) or any(
                isinstance(ln, tuple) and ln[0] == "store" for b in loops for ln in b.lines):
            return False
        for k, (b, lines, after) in enumerate(bodies):
            if b.loop:
                continue
            names = {m.group(1) for ln in lines + after if (m := _DECL.match(ln))}
            others = "\n".join(ln for n, (_, ls, af) in enumerate(bodies) if n != k
                               for ln in ls + af)
            if names & set(re.findall(r"\btmp\d+\b", others)):
                return False
        x, r = self.xs[-1], self.rs[-1]
        # loads that vary across the chunk (the others are one value per reduction step)
        rows = [e for indices in self.memory_loads.values() for i in indices
                if (e := sympy.expand(i)).coeff(x) != 0]
        return any(i.coeff(x) == 1 and i.coeff(r) not in (0, 1) for i in rows) and \
            all(i.coeff(r) != 1 for i in rows)

    def _column_source(self, bodies, parallel):
        """The kernel with the loops swapped: outer dims but the last, then chunks of the last
        outer dim (parallel); in each chunk, every reduction body loops over the reduction
        dims with the chunk as its vectorised loop, and stores and values computed from the
        results run per element of the chunk."""
        n, chunk = self.outer[-1], min(self.COLUMN_CHUNK, self.outer[-1])
        x = self.xs[-1]
        accs = [a for b, _, _ in bodies for a in b.accumulators]
        names = [a[0] for a in accs] + [a[4] for a in accs if a[4]]
        lane = re.compile(r"\b(" + "|".join(map(re.escape, names)) + r")\b")
        at = lambda ln: lane.sub(rf"\1[{x} - {x}c]", ln)  # noqa: E731
        ind, ind2 = "    ", "        "
        out = []
        if parallel:
            collapse = len(self.outer)
            out.append(f"{ind}#pragma omp parallel for"
                       f"{f' collapse({collapse})' if collapse > 1 else ''} "
                       f"num_threads({_threads()})")
        for xv, size in zip(self.xs[:-1], self.outer[:-1]):
            out.append(f"{ind}for (int64_t {xv} = 0; {xv} < {size}; {xv}++)")
        out.append(f"{ind}for (int64_t {x}c = 0; {x}c < {n}; {x}c += {chunk})")
        out.append(ind + "{")
        out.append(f"{ind2}int64_t {x}e = {x}c + {chunk} < {n} ? {x}c + {chunk} : {n};")
        for acc, ctype, _, _, nan_flag in accs:
            out.append(f"{ind2}{ctype} {acc}[{chunk}];")
            if nan_flag:
                out.append(f"{ind2}int {nan_flag}[{chunk}];")

        def per_element(lines, pragma=""):
            if lines:
                out.extend([f"{ind2}{pragma}" if pragma else None,
                            f"{ind2}for (int64_t {x} = {x}c; {x} < {x}e; {x}++)", ind2 + "{"])
                out.extend(ind2 + "    " + at(ln) for ln in lines)
                out.append(ind2 + "}")
        for body, lines, after in bodies:
            if not body.loop:
                per_element(lines + after)
                continue
            per_element([f"{acc} = {init};" for acc, _, init, _, _ in body.accumulators] +
                        [f"{flag} = 0;" for _, _, _, _, flag in body.accumulators if flag])
            for rv, size in zip(self.rs, self.inner):
                out.append(f"{ind2}for (int64_t {rv} = 0; {rv} < {size}; {rv}++)")
            per_element(lines, "#pragma omp simd")
            per_element(after)
        out.append(ind + "}")
        return [ln for ln in out if ln is not None]

    def _body_source(self, body, lines, after, ind, parallel_inner):
        out = []
        clauses = []
        for acc, ctype, init, omp_op, nan_flag in body.accumulators:
            out.append(f"{ind}{ctype} {acc} = {init};")
            if omp_op:  # (Welford's have none: their body runs in order)
                clauses.append(f"reduction({omp_op}:{acc})")
            if nan_flag:
                # an int: with a bool flag gcc does not vectorise the loop
                out.append(f"{ind}int {nan_flag} = 0;")
                clauses.append(f"reduction(|:{nan_flag})")
        red = (" " + " ".join(clauses)) if clauses else ""
        out += [f"{ind}{ctype} {name} = {init};" for name, ctype, init in body.carries]
        if not self.inner or not body.loop:
            out += [ind + ln for ln in lines]
        else:
            n_inner = len(self.inner)
            for k, (r, n) in enumerate(zip(self.rs, self.inner)):
                if not body.simd:
                    pass  # a scan or Welford's update: each step needs the one before
                elif k == 0 and parallel_inner:
                    simd = " simd" if n_inner == 1 else ""
                    out.append(f"{ind}#pragma omp parallel for{simd}{red} num_threads({_threads()})")
                elif k == n_inner - 1:
                    out.append(f"{ind}#pragma omp simd{red}")
                out.append(f"{ind}for (int64_t {r} = 0; {r} < {n}; {r}++)")
            out.append(ind + "{")
            out += [ind + "    " + ln for ln in lines]
            out.append(ind + "}")
        out += [ind + ln for ln in after]
        return out


class _EpilogueLoops:
    """The loops a template's epilogue nodes run in, in the shape ``CppKernel`` takes."""

    def __init__(self, group):
        self.nodes = group.nodes[1:]
        self.outer, self.inner = group.shape[:-1], group.shape[-1:]


def epilogue_source(name, group, graph, kept):
    """The epilogue of template kernel ``name`` (a ``TemplateKernel`` ``group``) as C run for
    one element of the product, which the template holds in the local ``acc``:
    ``(prelude, lines, loads)``. ``prelude`` names the scheduler's loop variables after the
    template's (``b``, ``i``, ``j``); ``lines`` are the nodes' statements from the ``ops``
    handler, stores of nodes outside ``kept`` (read by no one else) left out; ``loads`` are the
    buffers read from memory."""
    buf = group.template
    kernel = CppKernel(name, _EpilogueLoops(group), graph)
    # the product's element is in a register: loads of it at this element are `acc`
    kernel.body.forward[(buf.name, group.store_index(buf))] = CSEVar("acc", buf.get_dtype())
    kernel.codegen()
    assert len(kernel.bodies) == 1, "an epilogue is pointwise: one body"
    removed = {n.name for n in kernel.nodes} - kept
    lines = [ln for ln in (_resolve(x, removed, set()) for x in kernel.body.lines) if ln]
    [(_, lines, _)] = _drop_unused([(kernel.body, lines, [])])
    dims = ("b", "i", "j")[-len(buf.get_size()):]
    variables = iter(group.xs + group.rs)
    aliases = [(str(next(variables)), d) for d, n in zip(dims, buf.get_size()) if n != 1]
    text = "\n".join(lines)
    prelude = [f"const int64_t {v} = {d};" for v, d in aliases
               if re.search(rf"\b{v}\b", text)]
    return prelude, lines, list(kernel.memory_loads)


_DECL = re.compile(r"^\w+ (tmp\d+) = ")


def _exp_beside_calls(lines):
    """A loop's lines with libmvec's ``expf`` for ``ember_expf`` when the loop calls libmvec
    anyway: the inline exp is faster alone (GELU's kernel, softmax's) but slower after another
    vector call, whose registers the call clobbers (``exp(relu(sin(x) * 2 + 1))`` on 1M:
    240 us with two calls, 283 us with one call and the inline exp; benchmarks/NOTES.md)."""
    text = "\n".join(lines)
    if "ember_expf(" not in text or not _VECTOR_CALL.search(text.replace("ember_expf(", "")):
        return lines
    return [ln.replace("ember_expf(", "expf(") for ln in lines]


def _vector_call_pattern():
    names = [f"{fn}{sfx}" for fn in _mvec_functions() for sfx in ("f", "")]
    return re.compile(r"\b(" + "|".join(names) + r")\(") if names else re.compile(r"$^")


_VECTOR_CALL = _vector_call_pattern()


def _drop_unused(bodies):
    """``bodies`` without the locals nothing reads (values only a dropped store used); the
    locals of one body may be read by later ones (outer-only values)."""
    while True:
        text = "\n".join(ln for _, lines, after in bodies for ln in lines + after)
        uses = collections.Counter(re.findall(r"\btmp\d+\b", text))
        kept = [(b, [ln for ln in lines if not (m := _DECL.match(ln)) or uses[m.group(1)] > 1],
                 after) for b, lines, after in bodies]
        if sum(len(k[1]) for k in kept) == sum(len(b[1]) for b in bodies):
            return kept
        bodies = kept


def _resolve(line, removed, local, streamed=()):
    """A body line; memory accesses of this kernel's own buffers are settled here: dropped
    (a store no one reads), to the row-local array, to the row's stack array that streaming
    stores write out, or to memory."""
    if isinstance(line, tuple):
        kind, name, memory_line, local_line = line[:4]
        if kind == "store" and name in removed:
            return None
        if kind == "store" and name in streamed:
            return line[4]
        return local_line if name in local else memory_line
    return line


def _threads():
    return config.threads or ember.get_num_threads()


def module_source(name, kernels, vector_math=True, wrapper=None):
    """A C extension module holding the kernels: each ``(kernel_name, c_source, n_args)`` gets
    a METH_FASTCALL entry point taking data pointers as Python ints. ``wrapper`` is the C
    wrapper's ``(source, method table lines)`` (``cpp_wrapper.CppWrapperCodeGen``), put after
    the kernels it calls."""
    parts = [prelude(vector_math, any("ember_stream_row(" in k[1] for k in kernels))]
    methods = []
    for kname, src, nargs, ctypes_ in kernels:
        parts.append(src)
        casts = ", ".join(f"({t}*)p[{i}]" for i, t in enumerate(ctypes_))
        parts.append("\n".join([
            f"static PyObject* py_{kname}(PyObject* self, PyObject* const* args, Py_ssize_t nargs)",
            "{",
            f"    void* p[{max(nargs, 1)}];",
            f"    for (Py_ssize_t i = 0; i < {nargs}; i++) p[i] = PyLong_AsVoidPtr(args[i]);",
            "    if (PyErr_Occurred()) return NULL;",
            "    Py_BEGIN_ALLOW_THREADS",
            f"    {kname}({casts});",
            "    Py_END_ALLOW_THREADS",
            "    if (ember_kernel_oom) { ember_kernel_oom = 0; return PyErr_NoMemory(); }",
            "    Py_RETURN_NONE;",
            "}",
        ]))
        methods.append(f'    {{"{kname}", (PyCFunction)(void(*)(void))py_{kname}, METH_FASTCALL, NULL}},')
    if wrapper is not None:
        parts.append(wrapper[0].rstrip("\n"))
        methods += wrapper[1]
    parts.append("\n".join([
        "static PyMethodDef methods[] = {", *methods, "    {NULL, NULL, 0, NULL}", "};",
        f'static struct PyModuleDef module = {{PyModuleDef_HEAD_INIT, "{name}", NULL, -1, methods}};',
        f"PyMODINIT_FUNC PyInit_{name}(void) {{ return PyModule_Create(&module); }}",
    ]))
    return "\n\n".join(parts) + "\n"
