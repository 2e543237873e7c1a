"""Pointwise ops at zeros, infinities, NaN and subnormals against PyTorch: the cases where the op
table's random samples (multiples of 0.25) rarely or never land, and where ember's kernels once
gave other values (found with benchmarks/gpu_special_values_check.py and its CPU twin): every
pairing of the edge values, compared value by value with signs of zero and NaN positions."""
import itertools

import numpy as np
import pytest

import ember
from helpers import assert_identical, to_np

torch = pytest.importorskip("torch")

_INF, _NAN = float("inf"), float("nan")
_EDGES = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1e30, -1e30, _INF, -_INF, _NAN]
_SUBNORMAL = {"float16": 6e-8, "float32": 1e-40, "float64": 5e-324, "bfloat16": 1e-40}


def _grid(dtype, n, values):
    cols = [list(c) for c in zip(*itertools.product(values, repeat=n))]
    return ([ember.tensor(c, dtype=getattr(ember, dtype)) for c in cols],
            [torch.tensor(c, dtype=getattr(torch, dtype)) for c in cols])


def _numbers(t):
    a = to_np(t) if isinstance(t, ember.Tensor) else t.float().numpy() \
        if t.dtype == torch.bfloat16 else t.numpy()
    return a.astype(np.float64) if a.dtype.kind == "f" or str(a.dtype) == "bfloat16" else a


def _identical(e, t):
    assert_identical(_numbers(e), _numbers(t))


def _edges_identical(e, t, rtol=1e-6):
    """NaN positions, infinities and signed zeros identical; finite values within ``rtol``
    (the libraries' special functions differ by an ulp or so)."""
    got, want = _numbers(e), _numbers(t)
    for x, y in ([(got.real, want.real), (got.imag, want.imag)] if np.iscomplexobj(want)
                 else [(got, want)]):
        exact = ~np.isfinite(y) | (y == 0)
        assert_identical(x[exact], y[exact])
        np.testing.assert_allclose(x[~exact], y[~exact], rtol=rtol)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_nextafter_steps_into_the_subnormals(dtype):
    values = _EDGES + [_SUBNORMAL[dtype], -_SUBNORMAL[dtype]]
    (ex, ey), (tx, ty) = _grid(dtype, 2, values)
    _identical(ember.nextafter(ex, ey), torch.nextafter(tx, ty))


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("name", ["reciprocal", "rsqrt"])
def test_complex_reciprocals_divide_as_c10_complex(name, dtype):
    """1 / 0j is inf + NaNj in PyTorch (NumPy's reciprocal: NaN + NaNj)."""
    parts = [0.0, -0.0, 1.0, -2.5, _INF, -_INF]
    (ez,), (tz,) = _grid(dtype, 1, [complex(a, b) for a in parts for b in parts])
    _identical(getattr(ember, name)(ez), getattr(torch, name)(tz))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_sigmoid_rounds_once_from_float(dtype):
    values = np.linspace(-8, 8, 257).tolist()
    e = ember.sigmoid(ember.tensor(values, dtype=getattr(ember, dtype)))
    _identical(e, torch.sigmoid(torch.tensor(values, dtype=getattr(torch, dtype))))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_sigmoid_backward_multiplies_in_pytorchs_order(dtype):
    """grad * (1 - y) * y: a zero gradient stays (signed) zero where (1 - y) * y overflows."""
    (eg, ey), (tg, ty) = _grid(dtype, 2, [0.0, -0.0, 1.0, -2.5, 1e30, -1e30])
    _identical(ember.ops.aten.sigmoid_backward(eg, ey), torch.ops.aten.sigmoid_backward(tg, ty))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("name", ["relu", "erfinv", "lgamma"])
def test_signed_zeros_and_subnormals_of_unary_ops(name, dtype):
    """relu(-0.0) and erfinv(-0.0) are -0.0 (NumPy's maximum and SciPy's erfinv gave +0.0);
    lgamma of a float64 subnormal is finite (SciPy's gammaln overflows). relu also at a length
    that takes the generated C kernel, which must agree."""
    values = _EDGES + [_SUBNORMAL[dtype], -_SUBNORMAL[dtype]]
    for n in (1, 2048):
        (e,), (t,) = _grid(dtype, 1, values * n)
        _edges_identical(getattr(ember, name)(e), getattr(torch, name)(t),
                         rtol=1e-2 if dtype in ("float16", "bfloat16") else 1e-6)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("name", ["fmax", "fmin"])
def test_fmax_and_fmin_keep_the_first_operand_at_a_tie(name, dtype):
    """fmax(0.0, -0.0) is 0.0 and fmax(-0.0, 0.0) -0.0 in PyTorch at every length; NumPy's and
    libm's gave either. Also at a length that takes the generated C kernel. (PyTorch's bfloat16
    kernel keeps the second; ember's keeps the first in every dtype.)"""
    for n in (1, 64):
        (ea, eb), (ta, tb) = _grid(dtype, 2, _EDGES * n if n == 1 else _EDGES)
        if n > 1:
            ea, eb, ta, tb = (x.repeat(n) for x in (ea, eb, ta, tb))
        _identical(getattr(ember, name)(ea, eb), getattr(torch, name)(ta, tb))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", ["igamma", "igammac"])
def test_incomplete_gamma_boundaries_in_atens_order(name, dtype):
    """igamma(NaN, 0) is 0 and igamma(inf, NaN) 0 in PyTorch (its boundary cases come before
    any NaN test); SciPy's gammainc gives NaN."""
    (ea, ex), (ta, tx) = _grid(dtype, 2, _EDGES)
    _edges_identical(getattr(ember, name)(ea, ex), getattr(torch, name)(ta, tx), rtol=1e-5)


def test_relu_refuses_complex_as_clamp_does():
    z = ember.tensor([1 + 1j])
    for fn in (ember.relu, ember.nn.functional.relu, ember.relu_):
        with pytest.raises(NotImplementedError, match="clamp is not supported for complex types"):
            fn(z.clone())


def test_binary_cross_entropy_refuses_nan_as_out_of_range():
    """PyTorch's check is ``0 <= x <= 1``, which NaN fails (a min/max test lets it through)."""
    for lib in (torch, ember):
        with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
            lib.nn.functional.binary_cross_entropy(lib.tensor([float("nan"), 0.5]),
                                                   lib.tensor([1.0, 0.0]))
