"""CPU random kernels: the in-place samplers (uniform_, normal_, random_ and its ranges,
bernoulli_, exponential_, geometric_, cauchy_, log_normal_), the tensor-parameter ``normal``
overloads, multinomial, poisson, randperm, and the samplers behind ember.distributions
(``_standard_gamma`` with its reparameterisation gradient ``_standard_gamma_grad``,
``_sample_dirichlet``, ``binomial``). rand/randn/randint/normal(float, float, size),
randint_like, bernoulli and randperm's functional forms are composites over these
(``composite/factory.py``, ``composite/random.py``), as in PyTorch.

Each draws the 32/64-bit words of ``generator`` (or the default generator, ``ember.random``'s
mt19937) and turns them into values as ATen's CPU kernels do (``DistributionTemplates.h``,
``DistributionsHelper.h``, ``TransformationHelper.h``, ``Distributions.cpp``): the same words in
the same order, the same arithmetic, so the values are PyTorch's bit for bit. Three things that
takes:

* the order: a serial kernel fills its tensor in TensorIterator's order (dimensions sorted by
  stride, :func:`_iteration_order`), so a transposed tensor gets its values in memory order;
* the rounding: the kernels built for AVX2 contract ``a * b + c`` into a fused multiply-add
  (``uniform_``'s ``x * (to - from) + from``, the vectorised Box-Muller), emulated exactly here
  (``_util.fma_float32``, :func:`_fma64`); ``normal_`` of float tensors of 16 or more contiguous
  elements is ATen's AVX2 Box-Muller (``avx_mathfun.h``'s ``log256_ps``/``sincos256_ps``),
  reproduced operation by operation in float32 (:func:`_box_muller_f32`);
* the libm: ATen calls the C library's ``log``/``log1p``/``exp``/``tan`` per element, which
  NumPy's vectorised versions do not always equal to the last bit; those go through ``math``
  (the same libm) element by element. NumPy's float64 ``sqrt``/``sin``/``cos`` give the C
  library's results (tests/test_random_pytorch_streams.py compares) and stay vectorised.

That emulation is exact and slow (``randn(1_000_000)`` 88 ms against PyTorch's 3.4 ms). Where a
C compiler is found, ``_random_c`` does the hot loops instead, in C with ATen's roundings and
libm, drawing the engine's words itself: uniform_, normal_fill and the double Box-Muller pairs,
dropout's bernoulli mask, randperm's swaps, the libm calls and fused multiply-adds of the other
samplers. The NumPy code stays the reference and runs without a compiler; the tests run both.

The rejection samplers (poisson, gamma, binomial) are sequential in ATen and are Python loops
here over a :class:`_WordStream`, which takes words from the engine in blocks and gives back the
ones it did not use; so is randperm without the compiled kernels. Argument checks are the meta
rules, so both devices reject the same calls.
"""
import ctypes
import ctypes.util
import math

import numpy as np

from ..._core import complex32 as _complex32
from ..._core import dtype as D
from ..._core import strides as _st
from ...random import generator_of
from ..rules import check_failed
from ..rules.factory import (check_normal, check_uniform, normal_tensor_dtype, random_bounds,
                            random_default_bounds)
from ..rules.random import (binomial_shape, check_bernoulli_float, check_bernoulli_tensor,
                            check_cauchy, check_exponential, check_geometric, check_log_normal,
                            check_poisson, check_randperm, check_standard_gamma,
                            multinomial_shape)
from . import _random_c
from ._util import fma_float32, nd, wrap

_U64 = np.uint64
_F32 = np.float32
_TWO_PI = 2.0 * math.pi  # c10::pi<double> * 2
_MASK24 = _U64((1 << 24) - 1)
_MASK53 = _U64((1 << 53) - 1)


# ---------------------------------------------------------------------------------------------
# Words to values: ATen's transformations

def _uniform24(gen, n):
    """uniform_real_distribution<float>(0, 1): 24 bits of one 32-bit draw, times 2**-24."""
    return (gen._random(n) & _MASK24).astype(_F32) * _F32(2.0 ** -24)


def _uniform53(gen, n):
    """uniform_real_distribution<double>(0, 1): 53 bits of a 64-bit draw, times 2**-53."""
    return (gen._random64(n) & _MASK53).astype(np.float64) * 2.0 ** -53


def _two_sum(a, b):
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _split(a):
    t = a * 134217729.0  # Veltkamp: 2**27 + 1
    hi = t - (t - a)
    return hi, a - hi


def _fma64(a, b, c):
    """float64 ``a * b + c`` rounded once (Boldo and Melquiond: the exact product as two
    doubles, the low parts summed with rounding to odd, then one rounding to nearest)."""
    a, b, c = (np.asarray(x, np.float64) for x in (a, b, c))
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    th, tl = _two_sum(c, p)
    v, err = _two_sum(tl, e)
    odd = (err != 0) & ((v.view(_U64) & _U64(1)) == 0)
    if odd.any():
        v = np.where(odd, np.nextafter(v, np.where(err > 0, np.inf, -np.inf)), v)
    return th + v


def _log_or_ninf(v):
    return math.log(v) if v > 0.0 else -math.inf


# the C library's functions as ``math`` has them (log(0) is -inf, as C's, where math raises)
_MATH = {"log": _log_or_ninf, "log1p": math.log1p, "exp": math.exp, "tan": math.tan}


def _fma64_into(x, scale, shift):
    """``fma(x, scale, shift)`` over a float64 array the caller owns, in place where compiled."""
    c = _compiled(x.size)
    if c is None:
        return _fma64(x, scale, shift)
    c.fma(x, scale, shift)
    return x


def _libm(name, x):
    """The C library's function ``name`` on each element of float64 ``x`` (a new array): in C
    where compiled, else through ``math`` element by element."""
    c = _compiled(x.size)
    if c is not None:
        y = np.array(x, np.float64)
        c.libm(name, y)
        return y
    return np.fromiter(map(_MATH[name], x.ravel().tolist()), np.float64, x.size).reshape(x.shape)


def _compiled(n):
    """The compiled kernels (``_random_c``) for drawing ``n`` values, or None: not built, or
    nothing to draw (a kernel handed the engine draws from it)."""
    return _random_c.module() if n else None


def _direct(self):
    """``self``'s memory as a flat array a compiled kernel may fill in place (a contiguous
    float or double tensor), or None."""
    if self._dtype in (D.float32, D.float64) and self.is_contiguous():
        a = nd(self)
        return a if a.flags.c_contiguous else None
    return None


_log1pf_fn = []  # glibc's log1pf (float binomial inversion), loaded at first use


def _log1pf(x):
    """libm's float ``log1pf`` (not NumPy's float32 log1p, whose SIMD path may round apart)."""
    if not _log1pf_fn:
        f = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6").log1pf
        f.restype, f.argtypes = ctypes.c_float, [ctypes.c_float]
        _log1pf_fn.append(f)
    return _log1pf_fn[0](x)


# ---------------------------------------------------------------------------------------------
# Where the values go: TensorIterator's order

def _iteration_order(shape, *strides):
    """The dimensions, outermost first, in the order TensorIterator runs a serial kernel over
    tensors of ``shape`` with these strides (the output's first): reorder_dimensions' insertion
    sort by ascending stride of the first operand that tells two dimensions apart (broadcast
    zero strides tell nothing; of equal strides the smaller size goes inside)."""
    def should_swap(d0, d1):
        for st in strides:
            s0, s1 = st[d0], st[d1]
            if s0 == 0 or s1 == 0:
                continue
            if s0 != s1:
                return 1 if s0 > s1 else -1
            if shape[d0] > shape[d1]:
                return 1
        return 0

    return _st.reorder_dims(len(shape), should_swap)[::-1]


def _arrange(values, shape, order):
    """``values`` (in iteration order) as an array of ``shape`` in logical order."""
    if order == sorted(order):
        return values.reshape(shape)
    out = np.empty(shape, values.dtype)
    out.transpose(order)[...] = values.reshape([shape[d] for d in order])
    return out


def _real_geometry(self):
    """Shape and strides of ``self`` as ATen's kernels see it (view_as_real for complex)."""
    if self._dtype.is_complex:
        return self._size + (2,), tuple(2 * s for s in self._stride) + (1,)
    return self._size, self._stride


def _serial(self, draw):
    """``draw(n)`` values laid out in ``self``'s (real view's) TensorIterator order."""
    shape, stride = _real_geometry(self)
    n = math.prod(shape)
    return _arrange(draw(n), shape, _iteration_order(shape, stride))


def _store(self, values):
    """Write real samples into self; complex tensors take pairs (real, imaginary). Doubles
    reach half and bfloat16 through float, as C++'s casts to c10::Half/BFloat16 do; a value
    beyond the type's range becomes infinite without a warning, as there."""
    with np.errstate(over="ignore"):
        if values.dtype == np.float64 and self._dtype.to_real() in (D.float16, D.bfloat16):
            values = values.astype(_F32)
        if self._dtype.is_complex:
            values = values[..., 0] + 1j * values[..., 1]
        if self._dtype is D.complex32:  # (NumPy cannot cast into the float16 pair)
            values = _complex32.from_any(values)
        np.copyto(nd(self), values, casting="unsafe")
    return self


def _real_np(d):
    """NumPy scalar type of the real values a tensor of dtype ``d`` holds."""
    return d.to_real()._np.type


# ---------------------------------------------------------------------------------------------
# uniform_ and normal_

def _uniform_values(gen, n, from_, to, double, out=None):
    """uniform_'s ``n`` values in double or float (the accumulate type of float, half and
    bfloat16): ``x * (to - from) + from`` fused, a value rounded up to ``to`` made ``from``, as
    ATen's kernel. Into ``out`` where given (then the compiled kernels are built)."""
    c = _compiled(n)
    if c is not None:
        if out is None:
            out = np.empty(n, np.float64 if double else _F32)
        (c.uniform_double if double else c.uniform_float)(gen._bitgen(), out, from_, to)
        return out
    if double:
        x = _uniform53(gen, n)
        x = x if (from_, to) == (0.0, 1.0) else _fma64(x, to - from_, from_)
    else:
        from_, to = _F32(from_), _F32(to)
        x = _uniform24(gen, n)
        x = x if (from_, to) == (0.0, 1.0) else fma_float32(x, to - from_, from_)
    x[x == to] = from_
    return x


def uniform_(self, from_=0.0, to=1.0, generator=None):
    check_uniform(self, from_, to)
    n = self.numel()
    if n == 0:
        return self
    gen = generator_of(generator)
    real = self._dtype.to_real()
    direct = _direct(self) if _compiled(n) else None
    if direct is not None:
        _uniform_values(gen, n, from_, to, real is D.float64, direct)
        return self
    v = _serial(self, lambda k: _uniform_values(gen, k, from_, to, real is D.float64))
    if real in (D.float16, D.bfloat16):  # ... and again once rounded to the tensor's type
        scalar = _real_np(self._dtype)
        v = v.astype(scalar)
        v[v == scalar(_F32(to))] = scalar(_F32(from_))
    return _store(self, v)


def _normal_pairs(gen, n):
    """``n`` samples of normal_distribution<double>(0, 1): Box-Muller on two 53-bit uniforms
    per pair, cos first, the sin of an odd last pair cached on the generator (and a cached one
    used first)."""
    out = np.empty(n, np.float64)
    start = 0
    if n and gen._next_double_normal is not None:
        out[0] = gen._next_double_normal
        gen._next_double_normal = None
        start = 1
    pairs = (n - start + 1) // 2
    c = _compiled(pairs)
    if c is not None:
        both = np.empty(2 * pairs)
        c.normal_pairs(gen._bitgen(), both)
    elif pairs:
        u = _uniform53(gen, 2 * pairs).reshape(pairs, 2)
        r = np.sqrt(-2.0 * _libm("log1p", -u[:, 1]))
        theta = _TWO_PI * u[:, 0]
        both = np.stack([r * np.cos(theta), r * np.sin(theta)], axis=1).reshape(-1)
    if pairs:
        out[start:] = both[:n - start]
        if (n - start) % 2:
            gen._next_double_normal = float(both[-1])
    return out


def _serial_normal(gen, n, mean, std):
    """normal_distribution<double>(mean, std): ``z * std + mean``, contracted as ATen's AVX2
    build does."""
    z = _normal_pairs(gen, n)
    return z if (mean, std) == (0.0, 1.0) else _fma64_into(z, std, mean)


def _log256_ps(x):
    """avx_mathfun.h's log256_ps (Cephes' logf) in float32, its multiply-adds fused."""
    x = np.maximum(x, np.array(0x00800000, np.int32).view(_F32))
    bits = x.view(np.int32)
    e = ((bits >> 23) - 0x7F).astype(_F32) + _F32(1)
    x = ((bits & ~0x7F800000) | np.array(0.5, _F32).view(np.int32)).view(_F32)
    small = x < _F32(0.707106781186547524)
    x = x - _F32(1) + np.where(small, x, _F32(0))
    e = e - np.where(small, _F32(1), _F32(0))
    z = x * x
    y = np.full_like(x, _F32(7.0376836292e-2))
    for c in (-1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1, 1.4249322787e-1,
              -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1, 3.3333331174e-1):
        y = fma_float32(y, x, _F32(c))
    y = fma_float32(y * x, z, e * _F32(-2.12194440e-4))
    y = fma_float32(z, _F32(-0.5), y)
    return fma_float32(e, _F32(0.693359375), x + y)


def _sincos256_ps(x):
    """avx_mathfun.h's sincos256_ps (Cephes' sinf/cosf) in float32, its multiply-adds fused."""
    sign_sin = x.view(np.int32) & np.int32(-2 ** 31)
    x = np.abs(x)
    j = ((x * _F32(1.27323954473516)).astype(np.int32) + 1) & ~1
    y = j.astype(_F32)
    sign_sin = sign_sin ^ ((j & 4) << 29)
    sign_cos = (~(j - 2) & 4) << 29
    poly = (j & 2) == 0
    for c in (-0.78515625, -2.4187564849853515625e-4, -3.77489497744594108e-8):
        x = fma_float32(y, _F32(c), x)
    z = x * x
    c1 = fma_float32(np.full_like(z, _F32(2.443315711809948e-005)), z, _F32(-1.388731625493765e-003))
    c1 = fma_float32(c1, z, _F32(4.166664568298827e-002))
    c1 = fma_float32(c1 * z, z, -(z * _F32(0.5))) + _F32(1)
    s1 = fma_float32(np.full_like(z, _F32(-1.9515295891e-4)), z, _F32(8.3321608736e-3))
    s1 = fma_float32(s1, z, _F32(-1.6666654611e-1))
    s1 = fma_float32(s1 * z, x, x)
    ysin2 = np.where(poly, s1, _F32(0))
    ysin1 = np.where(poly, _F32(0), c1)
    s = (ysin1 + ysin2).view(np.int32) ^ sign_sin
    c = ((c1 - ysin1) + (s1 - ysin2)).view(np.int32) ^ sign_cos
    return s.view(_F32), c.view(_F32)


def _box_muller_f32(u, mean, std):
    """NormalFill16<float> (AVX2) on rows of 16 uniforms: u1 = 1 - first 8, u2 = last 8."""
    u1, u2 = _F32(1) - u[:, :8], u[:, 8:]
    radius = np.sqrt(_F32(-2) * _log256_ps(u1))
    s, c = _sincos256_ps(_F32(_TWO_PI) * u2)
    m, sd = _F32(mean), _F32(std)
    return np.concatenate([fma_float32(radius * c, sd, m), fma_float32(radius * s, sd, m)], axis=1)


def _box_muller_f64(u, mean, std):
    """NormalFill16<double> on rows of 16 uniforms: libm log, then fma(r * cos, std, mean)."""
    u1, u2 = 1.0 - u[:, :8], u[:, 8:]
    radius = np.sqrt(-2.0 * _libm("log", u1))
    theta = _TWO_PI * u2
    return np.concatenate([_fma64(radius * np.cos(theta), std, mean),
                           _fma64(radius * np.sin(theta), std, mean)], axis=1)


def _normal_fill(gen, n, mean, std, double, per_block, out=None):
    """ATen's normal_fill for ``n`` >= 16 contiguous values: Box-Muller on blocks of 16
    uniforms, the last 16 values recomputed from 16 fresh ones when n is not a multiple of 16.
    float and double draw all n uniforms first (``per_block`` False); half and bfloat16 draw
    16 per block, so a partial block's uniforms are never drawn. Into ``out`` where given
    (then the compiled kernels are built)."""
    c = _compiled(n)
    if c is not None:
        if out is None:
            out = np.empty(n, np.float64 if double else _F32)
        fill = c.normal_fill_double if double else c.normal_fill_float
        fill(gen._bitgen(), out, mean, std, 0 if per_block else n % 16)
        return out
    uniform = _uniform53 if double else _uniform24
    fill = _box_muller_f64 if double else _box_muller_f32
    blocks = n // 16
    if per_block:
        u = uniform(gen, 16 * blocks)
    else:
        u = uniform(gen, n)[:16 * blocks]
    out = np.empty(n, np.float64 if double else _F32)
    out[:16 * blocks] = fill(u.reshape(blocks, 16), mean, std).reshape(-1)
    if n % 16:
        out[n - 16:] = fill(uniform(gen, 16).reshape(1, 16), mean, std).reshape(-1)
    return out


def _normal_values(self, gen, mean, std):
    """normal_kernel's values for ``self`` (its real view), in logical order."""
    shape, _ = _real_geometry(self)
    n = math.prod(shape)
    if n >= 16 and self.is_contiguous():
        real = self._dtype.to_real()
        per_block = real in (D.float16, D.bfloat16)
        return _normal_fill(gen, n, mean, std, real is D.float64, per_block).reshape(shape)
    return _serial(self, lambda k: _serial_normal(gen, k, mean, std))


def normal_(self, mean=0.0, std=1.0, generator=None):
    check_normal(self._dtype, std)
    if self.numel() == 0:
        return self
    if self._dtype.is_complex:  # each part gets half the variance, as PyTorch does
        std = std / math.sqrt(2)
    n = self.numel()
    direct = _direct(self) if n >= 16 and _compiled(n) else None
    if direct is not None:
        _normal_fill(generator_of(generator), n, mean, std, self._dtype is D.float64, False,
                     direct)
        return self
    return _store(self, _normal_values(self, generator_of(generator), mean, std))


def _normal_like(dtype, shape, generator, std=1.0):
    """A new contiguous tensor's normal_(0, std) values (the tensor-parameter overloads draw
    these into their result, then scale and shift it)."""
    z = _normal_values(_Geometry(dtype, shape), generator_of(generator), 0.0, std)
    if z.dtype == np.float64 and dtype in (D.float16, D.bfloat16):
        z = z.astype(_F32)
    return z.astype(dtype._np)


class _Geometry:
    """The shape, strides and dtype of a contiguous tensor not made yet."""

    def __init__(self, dtype, shape):
        self._dtype, self._size = dtype, tuple(shape)
        self._stride = _st.contiguous_strides(self._size)

    @staticmethod
    def is_contiguous():
        return True


def _check_std_tensor(std):
    if std._dtype.is_complex:
        raise RuntimeError("normal expects standard deviation to be non-complex")
    if (nd(std) < 0).any():
        raise RuntimeError("normal expects all elements of std >= 0.0")


def normal_Tensor_float(mean, std=1.0, generator=None):
    """normal_(0, std) into the result, then ``add_(mean)``."""
    check_normal(mean._dtype, std)
    z = _normal_like(mean._dtype, mean._size, generator, std)
    return wrap((z + nd(mean)).astype(mean._dtype._np, copy=False))


def normal_float_Tensor(mean, std, generator=None):
    """normal_(0, 1) into the result, then ``mul_(std).add_(mean)``."""
    check_normal(std._dtype, 0.0)
    _check_std_tensor(std)
    z = _normal_like(std._dtype, std._size, generator)
    return wrap((z * nd(std) + np.asarray(mean, std._dtype._np)).astype(std._dtype._np,
                                                                       copy=False))


def normal_Tensor_Tensor(mean, std, generator=None):
    """normal_(0, 1) into the broadcast result, then ``mul_(std).add_(mean)``."""
    dtype = normal_tensor_dtype(mean, std)
    check_normal(dtype, 0.0)
    _check_std_tensor(std)
    shape = _st.broadcast_shapes(mean._size, std._size)
    z = _normal_like(dtype, shape, generator)
    return wrap((z * nd(std) + nd(mean)).astype(dtype._np, copy=False))


# ---------------------------------------------------------------------------------------------
# random_ and its ranges

# the dtypes random_() draws (transformation::uniform_int, modulo the default range's size),
# with a 64-bit word for int64 and float64
_RANDOM_DTYPES = frozenset((D.bool_, D.uint8, D.int8, D.int16, D.int32, D.int64, D.float16,
                            D.bfloat16, D.float32, D.float64))
_FULL_RANGE_DTYPES = (D.int64, D.float64, D.float32, D.bfloat16)


def _write_ints(self, draw):
    v = _serial(self, draw)
    if self._dtype is D.bool_:
        v = v != 0
    np.copyto(nd(self), v, casting="unsafe")
    return self


def random_(self, generator=None):
    _, high = random_default_bounds(self)  # (with its checks)
    if self._dtype not in _RANDOM_DTYPES:
        raise RuntimeError(f'"random_kernel_cpu" not implemented for '
                           f"'{self._dtype._short}'")
    gen = generator_of(generator)
    modulus, wide = high + 1, self._dtype in (D.int64, D.float64)
    return _write_ints(self, lambda n: ((gen._random64(n) if wide else gen._random(n))
                                        % _U64(modulus)).astype(np.int64))


def _random_from_to(self, low, high, generator):
    """Integers uniform over [low, high] (both included): ``(v % range) + low`` with a 64-bit
    draw when the range is 2**28 or more, else a 32-bit one; the full 64-bit range takes the
    64-bit draws as they are."""
    gen = generator_of(generator)
    span = high - low + 1
    if span == 1 << 64:
        if self._dtype not in _FULL_RANGE_DTYPES:
            raise RuntimeError("random_full_64_bits_range_kernel_cpu handles only int64, double, "
                               "float and bfloat16")
        return _write_ints(self, lambda n: gen._random64(n).view(np.int64))

    def draw(n):
        w = gen._random64(n) if span >= 1 << 28 else gen._random(n)
        return ((w % _U64(span)) + _U64(low % (1 << 64))).view(np.int64)
    return _write_ints(self, draw)


def random__from(self, from_, to, generator=None):
    if to is None and from_ == -(1 << 63):  # [int64 min, int64 max]: every 64-bit value
        return _random_from_to(self, from_, (1 << 63) - 1, generator)
    low, high = random_bounds(self, from_, to)
    return _random_from_to(self, low, high, generator)


def random__to(self, to, generator=None):
    low, high = random_bounds(self, 0, to)
    return _random_from_to(self, low, high, generator)


# ---------------------------------------------------------------------------------------------
# Sequential samplers: words taken as needed

class _WordStream:
    """The engine's words one at a time for a sequential sampler: drawn in blocks, and the
    words of the last block left unused given back (the engine is rewound to that block's start
    and advanced by the words used), so the generator ends where ATen's would."""

    _BLOCK = 4096

    def __init__(self, gen):
        self.gen = gen
        self._words = []
        self._used = 0
        self._start = None

    def u32(self):
        if self._used == len(self._words):
            self._start = self.gen._engine.state
            self._words = self.gen._random(self._BLOCK).tolist()
            self._used = 0
        self._used += 1
        return self._words[self._used - 1]

    def uniform(self):
        """uniform_real_distribution<double>(0, 1)."""
        hi = self.u32()
        return (((hi << 32) | self.u32()) & ((1 << 53) - 1)) * 2.0 ** -53

    def normal(self):
        """normal_distribution<double>(0, 1), with the generator's cached sample."""
        gen = self.gen
        if gen._next_double_normal is not None:
            z, gen._next_double_normal = gen._next_double_normal, None
            return z
        u1 = self.uniform()
        u2 = self.uniform()
        r = math.sqrt(-2.0 * math.log1p(-u2))
        theta = _TWO_PI * u1
        gen._next_double_normal = r * math.sin(theta)
        return r * math.cos(theta)

    def close(self):
        if self._start is not None and self._used < len(self._words):
            self.gen._engine.state = self._start
            self.gen._engine.random_raw(self._used)


def randperm_generator_out(n, generator, out):
    """Fisher-Yates with ``random() % (n - i)`` (ATen's randperm_cpu); from
    uint32_max / 20 elements on, the inside-out variant with ``random64() % (i + 1)``."""
    check_randperm(n, out._dtype)
    out._resize_metadata((n,))  # PyTorch resizes randperm's out silently
    gen = generator_of(generator)
    c = _compiled(max(n - 1, 0))
    if c is not None:
        perm = np.empty(n, np.int64)
        c.randperm(gen._bitgen(), perm)
    elif n < 0xFFFFFFFF // 20:
        perm = list(range(n))
        if n > 1:
            z = (gen._random(n - 1) % np.arange(n, 1, -1, dtype=_U64)).tolist()
            for i, k in enumerate(z):
                j = i + k
                perm[i], perm[j] = perm[j], perm[i]
    else:
        draws = gen._random64(n)
        perm = [0] * n
        for i in range(n):
            z = int(draws[i] % _U64(i + 1))
            perm[i] = perm[z]
            perm[z] = i
    np.copyto(nd(out), np.asarray(perm, np.int64), casting="unsafe")
    return out


# ---------------------------------------------------------------------------------------------
# Bernoulli and the other in-place samplers

def bernoulli__Tensor(self, p, generator=None):
    """Each element of self becomes 1 with the probability at the same (broadcast) place of p:
    a 53-bit uniform below p for a double p, else a 24-bit (float) one below float(p)."""
    check_bernoulli_tensor(self, p)
    probs = nd(p)
    if not ((probs >= 0) & (probs <= 1)).all():  # NaN fails too, as in PyTorch
        raise RuntimeError(check_failed("p_in >= 0 && p_in <= 1"))
    if self.numel() == 0:
        return self
    gen = generator_of(generator)
    shape = self._size
    lead = len(shape) - len(p._size)
    p_stride = [0] * lead + [0 if (ps == 1 and s != 1) else st for ps, s, st in
                             zip(p._size, shape[lead:], p._stride)]
    order = _iteration_order(shape, self._stride, p_stride)
    if p._dtype is D.float64:
        u, pv = _uniform53(gen, self.numel()), np.broadcast_to(probs, shape)
    else:
        u, pv = _uniform24(gen, self.numel()), np.broadcast_to(probs.astype(_F32), shape)
    np.copyto(nd(self), _arrange(u, shape, order) < pv, casting="unsafe")
    return self


def bernoulli_mask(like, p, generator=None):
    """bernoulli_(p)'s values for a tensor shaped and strided as ``like`` (bool, logical
    order): bernoulli_distribution<double>(p), a 53-bit uniform below p, per element. This is
    ATen's default CPU kernel; PyTorch builds with MKL may draw bernoulli_(float) from MKL's VSL
    stream instead on Intel CPUs, which ember does not reproduce."""
    gen = generator_of(generator)

    def draw(n):
        c = _compiled(n)
        if c is None:
            return _uniform53(gen, n) < p
        mask = np.empty(n, np.bool_)
        c.bernoulli(gen._bitgen(), mask, p)
        return mask
    return _serial(like, draw)


def bernoulli__float(self, p=0.5, generator=None):
    check_bernoulli_float(self, p)
    if self.numel() == 0:
        return self
    np.copyto(nd(self), bernoulli_mask(self, p, generator), casting="unsafe")
    return self


def exponential_(self, lambd=1.0, generator=None):
    """``-1 / lambda * log1p(-u)`` in double per element."""
    check_exponential(self, lambd)
    if self.numel() == 0:
        return self
    gen = generator_of(generator)
    scale = -1.0 / lambd
    return _store(self, _serial(self, lambda n: scale * _libm("log1p", -_uniform53(gen, n))))


def geometric_(self, p, generator=None):
    """Number of Bernoulli(p) trials up to the first success: ``ceil(log(u) / log1p(-p))``."""
    check_geometric(self, p)
    if self.numel() == 0:
        return self
    gen = generator_of(generator)
    denom = math.log1p(-p)
    return _store(self, _serial(self, lambda n: np.ceil(
        _libm("log", _uniform53(gen, n)) / denom)))


def cauchy_(self, median=0.0, sigma=1.0, generator=None):
    """``median + sigma * tan(pi * (u - 0.5))`` in double, contracted into one fma."""
    check_cauchy(self, sigma)
    if self.numel() == 0:
        return self
    gen = generator_of(generator)
    return _store(self, _serial(self, lambda n: _fma64_into(
        _libm("tan", math.pi * (_uniform53(gen, n) - 0.5)), sigma, median)))


def log_normal_(self, mean=1.0, std=2.0, generator=None):
    """``exp`` of normal_distribution<double>(mean, std) per element."""
    check_log_normal(self, std)
    if self.numel() == 0:
        return self
    gen = generator_of(generator)
    return _store(self, _serial(self, lambda n: _libm("exp",
                                                      _serial_normal(gen, n, mean, std))))


# ---------------------------------------------------------------------------------------------
# multinomial and poisson

def _check_multinomial_rows(probs):
    """ATen's per-entry checks of the with-replacement kernel, first offending entry first."""
    bad = ~(probs >= 0) | ~np.isfinite(probs)
    if bad.any():
        first = probs.reshape(-1)[np.argmax(bad.reshape(-1))]
        if not first >= 0:
            raise RuntimeError("invalid multinomial distribution (encountering probability entry "
                               "< 0)")
        raise RuntimeError("invalid multinomial distribution (encountering probability entry = "
                           "infinity or NaN)")


def multinomial(self, num_samples, replacement=False, generator=None):
    """Category indices drawn from each row of (unnormalised) probabilities: with replacement,
    a binary search of each 53-bit uniform in the row's normalised cumulative sums (float, or
    double for double input); without, or for a single sample, the largest ``p / q`` for
    q ~ Exp(1) (an ``exponential_`` draw of self's shape)."""
    shape = multinomial_shape(self, num_samples, replacement)
    if math.prod(shape) == 0:
        return wrap(np.empty(shape, np.int64))
    rows = self._size[0] if len(self._size) == 2 else 1
    k = self._size[-1]
    gen = generator_of(generator)
    if not replacement or num_samples == 1:
        probs = nd(self)
        if not (probs.max() < np.inf and probs.min() >= 0):
            raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
        if (probs.reshape(rows, k).sum(axis=1) == 0).any():
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        q = _Geometry(self._dtype, self._size)
        q._stride = _st.suggest_memory_format_strides(self._size, self._stride)
        draws = _serial(q, lambda n: -_libm("log1p", -_uniform53(gen, n)))
        keys = (probs / draws.astype(probs.dtype)).reshape(rows, k)
        if num_samples == 1:
            idx = np.argmax(keys, axis=1)[:, None]
        else:
            idx = np.argsort(-keys, axis=1, kind="stable")[:, :num_samples]
        return wrap(np.ascontiguousarray(idx, dtype=np.int64).reshape(shape))
    work = np.float64 if self._dtype is D.float64 else _F32
    probs = nd(self).astype(work).reshape(rows, k)
    _check_multinomial_rows(probs)
    cum = np.cumsum(probs, axis=1, dtype=work)
    total = cum[:, -1:]
    if (total <= 0).any():
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    cum /= total
    cum[:, -1] = 1
    u = _uniform53(gen, rows * num_samples).reshape(rows, num_samples)
    cum = cum.astype(np.float64, copy=False)  # (once: the rows are searched one by one)
    idx = np.stack([np.searchsorted(cum[r], u[r], side="left") for r in range(rows)])
    return wrap(np.ascontiguousarray(idx, dtype=np.int64).reshape(shape))


def _poisson_one(lam, words):
    """ATen's sample_poisson (NumPy's legacy algorithm): transformed rejection from rate 10 on,
    products of uniforms below."""
    if lam >= 10:
        slam = math.sqrt(lam)
        loglam = math.log(lam)
        b = 0.931 + 2.53 * slam
        a = -0.059 + 0.02483 * b
        invalpha = 1.1239 + 1.1328 / (b - 3.4)
        vr = 0.9277 - 3.6224 / (b - 2)
        while True:
            u = words.uniform() - 0.5
            v = words.uniform()
            us = 0.5 - abs(u)
            k = math.floor((2 * a / us + b) * u + lam + 0.43)
            if us >= 0.07 and v <= vr:
                return k
            if k < 0 or (us < 0.013 and v > us):
                continue
            if (_log_or_ninf(v) + math.log(invalpha) - math.log(a / (us * us) + b)
                    <= -lam + k * loglam - math.lgamma(k + 1.0)):
                return k
    if lam == 0:
        return 0
    enlam = math.exp(-lam)
    x, prod = 0, 1.0
    while True:
        prod *= words.uniform()
        if prod > enlam:
            x += 1
        else:
            return x


def poisson(self, generator=None):
    check_poisson(self)
    rate = nd(self).astype(np.float64)
    if not (rate >= 0).all():
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    words = _WordStream(generator_of(generator))
    try:
        draws = [float(_poisson_one(lam, words)) for lam in rate.reshape(-1).tolist()]
    finally:
        words.close()
    return wrap(np.array(draws).reshape(rate.shape).astype(self._dtype._np))


# ---------------------------------------------------------------------------------------------
# Gamma, Dirichlet and binomial draws (ember.distributions)

def _gamma_one(alpha, words, scalar):
    """ATen's sample_gamma<scalar, double> (Marsaglia and Tsang, boosted below 1): ``alpha``'s
    own arithmetic in ``scalar`` (float for float tensors), the rest in double."""
    scale = 1.0
    if alpha < 1.0:
        if alpha == 0.0:
            return 0.0
        scale *= math.pow(1 - words.uniform(), float(scalar(1.0) / alpha))
        alpha = scalar(alpha + scalar(1.0))
    d = float(alpha - _F32(1.0) / _F32(3.0))  # (1.0f / 3.0f: a float constant)
    if not d > 0:  # (ATen loops forever here)
        return math.nan
    c = 1.0 / math.sqrt(9.0 * d)
    c331 = float(_F32(0.0331))
    while True:
        while True:
            x = words.normal()
            y = 1.0 + c * x
            if y > 0:
                break
        v = y * y * y
        u = 1 - words.uniform()
        xx = x * x
        if u < 1.0 - c331 * xx * xx:
            return scale * d * v
        if _log_or_ninf(u) < 0.5 * xx + d * (1.0 - v + math.log(v)):
            return scale * d * v


def _gammas(alpha, generator, scalar):
    words = _WordStream(generator_of(generator))
    try:
        return np.array([_gamma_one(scalar(a), words, scalar) for a in alpha.reshape(-1).tolist()],
                        np.float64).reshape(alpha.shape)
    finally:
        words.close()


def _standard_gamma(self, generator=None):
    """Gamma(concentration=self, rate=1) draws, one per element, kept off zero (the smallest
    normal number of the dtype, as ATen: log(x) stays finite)."""
    check_standard_gamma(self, "_standard_gamma")
    scalar = self._dtype._np.type
    draws = _gammas(nd(self).astype(scalar), generator, scalar).astype(scalar)
    return wrap(np.maximum(draws, np.finfo(scalar).tiny))


def _standard_gamma_grad(self, output):
    """d x / d alpha of a standard gamma draw x, by implicit differentiation of its CDF:
    dx/da = -(dP(a, x)/da) / p(x; a), with P the regularised lower incomplete gamma function.
    dP/da has no closed form in SciPy; a Richardson-extrapolated central difference gives it to
    about 1e-10 relative in double precision."""
    from scipy import special
    a = nd(self).astype(np.float64)
    x = nd(output).astype(np.float64)

    def central(h):
        return (special.gammainc(a + h, x) - special.gammainc(a - h, x)) / (2 * h)

    h = np.minimum(1e-3 * a, 0.5 * a)
    dp_da = (4 * central(h / 2) - central(h)) / 3
    log_density = (a - 1) * np.log(x) - x - special.gammaln(a)
    grad = -dp_da / np.exp(log_density)
    return wrap(grad.astype(self._dtype._np))


def _sample_dirichlet(self, generator=None):
    """Dirichlet draws along the last dimension: double gammas (at least the smallest normal
    double), normalised, then kept within [smallest normal, the float below 1] of the dtype."""
    check_standard_gamma(self, "_sample_dirichlet")
    g = np.maximum(_gammas(nd(self).astype(np.float64), generator, np.float64),
                   np.finfo(np.float64).tiny)
    ratio = (g / g.sum(-1, keepdims=True)).astype(self._dtype._np)
    scalar = self._dtype._np.type
    top = np.nextafter(scalar(1), scalar(0))
    return wrap(np.minimum(top, np.maximum(np.finfo(scalar).tiny, ratio)))


def _stirling_tail(k):
    if k < 10:
        return (0.0810614667953272, 0.0413406959554092, 0.0276779256849983, 0.02079067210376509,
                0.0166446911898211, 0.0138761288230707, 0.0118967099458917, 0.0104112652619720,
                0.00925546218271273, 0.00833056343336287)[int(k)]
    kp1sq = (k + 1) * (k + 1)
    return (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)


def _binomial_inversion(count, prob, words, scalar):
    logprob = float(_log1pf(-prob)) if scalar is _F32 else math.log1p(-prob)
    geom_sum = 0.0
    num_geom = scalar(0)
    while True:
        geom_sum += math.ceil(_log_or_ninf(words.uniform()) / logprob)
        if geom_sum > count:
            return num_geom
        num_geom = scalar(num_geom + scalar(1))


def _btrs(count, prob, words, scalar):
    """TensorFlow's BTRS (Hormann's transformed rejection) as ATen has it: ``count``/``prob``
    arithmetic in ``scalar``, the rest in double."""
    one = scalar(1)
    stddev = float(np.sqrt(scalar(count * prob * (one - prob))))
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * float(prob)
    c = float(count * prob) + 0.5
    v_r = 0.92 - 4.2 / b
    r = float(prob / (one - prob))
    alpha = (2.83 + 5.1 / b) * stddev
    m = float(np.floor(scalar((count + one) * prob)))
    count_f = float(count)
    while True:
        u = words.uniform() - 0.5
        v = words.uniform()
        us = 0.5 - abs(u)
        k = scalar(math.floor((2 * a / us + b) * u + c))
        if k < 0 or k > count:
            continue
        if us >= 0.07 and v <= v_r:
            return k
        v = _log_or_ninf(v * alpha / (a / (us * us) + b))
        k_f = float(k)
        upperbound = ((m + 0.5) * math.log((m + 1) / (r * (count_f - m + 1)))
                      + float(count + one) * math.log((count_f - m + 1) / float(count - k + one))
                      + (k_f + 0.5) * math.log(r * float(count - k + one) / float(k + one))
                      + _stirling_tail(m) + _stirling_tail(count_f - m)
                      - _stirling_tail(k_f) - _stirling_tail(float(count - k)))
        if v <= upperbound:
            return k


def _binomial_one(count, prob, words, scalar):
    if count <= 0.0 or prob <= 0.0:
        return 0.0
    if prob >= 1.0:
        return float(count)
    if prob <= 0.5:
        if count * prob >= 10.0:
            return float(_btrs(count, prob, words, scalar))
        return float(_binomial_inversion(count, prob, words, scalar))
    if prob > 0.5:
        q = scalar(1.0 - prob)
        if count * q >= 10.0:
            return float(count - _btrs(count, q, words, scalar))
        return float(count - _binomial_inversion(count, q, words, scalar))
    return math.nan


def binomial(count, prob, generator=None):
    """Number of successes in ``count`` Bernoulli(``prob``) trials, element by element (ATen's
    sample_binomial: inversion below a mean of 10, BTRS above)."""
    shape = binomial_shape(count, prob)
    scalar = count._dtype._np.type
    n = np.broadcast_to(nd(count).astype(scalar), shape)
    p = np.broadcast_to(nd(prob).astype(scalar), shape)
    words = _WordStream(generator_of(generator))
    try:
        draws = [_binomial_one(scalar(c), scalar(q), words, scalar)
                 for c, q in zip(n.reshape(-1).tolist(), p.reshape(-1).tolist())]
    finally:
        words.close()
    return wrap(np.array(draws, np.float64).reshape(shape).astype(scalar))
