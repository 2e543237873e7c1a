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
