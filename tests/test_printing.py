"""``repr(tensor)`` and ``set_printoptions`` compared character for character with PyTorch.

ember prints ``ember.float64`` where PyTorch prints ``torch.float64``; everything else must be
identical, so each check compares ``repr(e).replace('ember.', 'torch.')`` with ``repr(t)``.
"""
import math

import ml_dtypes
import numpy as np
import pytest

import ember
from helpers import from_np

nan, inf = math.nan, math.inf


def _torch_from_np(torch, a):
    if a.dtype == ml_dtypes.bfloat16:
        return torch.from_numpy(a.astype(np.float32)).to(torch.bfloat16)
    return torch.from_numpy(np.array(a))


def check(torch, a):
    """ember and PyTorch print a tensor holding the NumPy array ``a`` identically."""
    e, t = from_np(a), _torch_from_np(torch, a)
    assert repr(e).replace("ember.", "torch.") == repr(t)
    assert str(e).replace("ember.", "torch.") == str(t)


@pytest.fixture
def restore_options(torch):
    """Undo print-option and default-dtype changes in both libraries after the test."""
    yield
    ember.set_printoptions(profile="default")
    torch.set_printoptions(profile="default")
    ember.set_default_dtype(ember.float32)
    torch.set_default_dtype(torch.float32)


def arr(values, dtype):
    return np.array(values, dtype=dtype)


FLOAT_CASES = {
    "simple": [0.1, 1.5, -2.25],
    "integral": [1.0, 2.0, -3.0],
    "integral_large": [1e7, 2.0],
    "zero": [0.0],
    "neg_zero": [-0.0],
    "zeros_mixed": [0.0, -0.0, 1.0],
    "zeros_fraction": [0.0, -0.0, 0.5],
    "small_sci": [1e-5, 1.0],
    "big_sci": [1e9, 1.0],
    "ratio_sci": [1e3, 1e-1],
    "ratio_edge": [1000.0, 1.0],
    "big_integral_sci": [1e8 + 8, 3.0],
    "single_big": [123456.789],
    "tiny": [1e-10],
    "mixed_sign_sci": [-1.5e-5, 3e10],
    "nan": [nan],
    "nonfinite": [inf, -inf, nan],
    "int_with_inf": [1.0, inf, -inf, nan],
    "frac_with_nan": [1.5, nan],
    "sci_with_nan": [1e-7, nan, -inf],
    "third": [1 / 3, 2 / 3],
    "negatives": [-1.25, -100.5, 3.0],
    "rounding": [0.99995, 1.00004],
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(FLOAT_CASES))
def test_float_values(torch, name, dtype):
    check(torch, arr(FLOAT_CASES[name], dtype))


@pytest.mark.parametrize("name", ["simple", "integral", "small_sci", "big_sci", "nonfinite",
                                  "neg_zero", "rounding", "third"])
@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16])
def test_half_precision_values(torch, name, dtype):
    values = [v for v in FLOAT_CASES[name] if not math.isfinite(v) or abs(v) < 6e4 or
              dtype is ml_dtypes.bfloat16]
    check(torch, arr(values, dtype))


def test_extreme_floats(torch):
    check(torch, arr([np.finfo(np.float32).max, np.finfo(np.float32).tiny], np.float32))
    check(torch, arr([5e-324, 1.0], np.float64))
    check(torch, arr([np.finfo(np.float64).max, -1.0], np.float64))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("shape", [(7,), (3, 4), (2, 3, 4), (2, 1, 2, 3)])
def test_random_floats_by_shape(torch, shape, dtype):
    rng = np.random.default_rng(sum(shape))
    check(torch, (rng.standard_normal(shape) * 10).astype(dtype))


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64, np.uint8])
def test_integer_dtypes(torch, dtype):
    info = np.iinfo(dtype)
    check(torch, arr([0, 1, info.max, info.min], dtype))
    check(torch, arr([[1, -2 if info.min else 2], [30, 4]], dtype))
    check(torch, arr(5, dtype))


def test_int64_extremes_and_bool(torch):
    check(torch, arr([np.iinfo(np.int64).min, 0, np.iinfo(np.int64).max], np.int64))
    check(torch, arr([True, False, True], np.bool_))
    check(torch, arr([[True], [True]], np.bool_))
    check(torch, arr(False, np.bool_))


COMPLEX_CASES = {
    "simple": [1 + 2j, -1 - 1j],
    "zero": [0j],
    "neg_zero_imag": [complex(1.0, -0.0), complex(-0.0, 0.0)],
    "fraction": [0.5 + 0.25j, 3 - 1.125j],
    "sci_imag": [1e-5 + 1e5j, 2 + 3j],
    "nan_inf": [complex(nan, 1), complex(1, inf), complex(-inf, -inf)],
    "big": [1e10 + 1j],
}


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("name", sorted(COMPLEX_CASES))
def test_complex_values(torch, name, dtype):
    check(torch, arr(COMPLEX_CASES[name], dtype))


def test_complex_scalar_and_matrix(torch):
    check(torch, arr(1 - 2j, np.complex64))
    check(torch, arr(-0.5j, np.complex128))
    rng = np.random.default_rng(0)
    z = rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))
    check(torch, z.astype(np.complex64))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, ml_dtypes.bfloat16,
                                   np.int32, np.int64, np.uint8, np.bool_, np.complex64,
                                   np.complex128])
def test_zero_dim_each_dtype(torch, dtype):
    check(torch, arr(1, dtype))
    check(torch, arr(0, dtype))


@pytest.mark.parametrize("shape", [(0,), (0, 3), (3, 0), (2, 0, 3), (0, 0)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.bool_, np.complex64])
def test_empty(torch, shape, dtype):
    check(torch, np.zeros(shape, dtype))


def test_line_wrapping(torch):
    check(torch, np.arange(100, dtype=np.int64))
    check(torch, np.arange(60, dtype=np.float32) / 7)
    check(torch, np.arange(60, dtype=np.float64).reshape(3, 20) * 1.5)
    rng = np.random.default_rng(1)
    check(torch, (rng.standard_normal((2, 3, 30)) * 1e6).astype(np.float32))
    check(torch, (rng.standard_normal(30) + 1j * rng.standard_normal(30)).astype(np.complex128))


@pytest.mark.parametrize("n", [8, 9, 10, 11, 12, 13, 14])
def test_suffix_wrapping(torch, n):
    """The dtype suffix moves to its own line when the last line would pass 80 columns."""
    check(torch, np.arange(n, dtype=np.float64) + 0.5)
    check(torch, np.arange(2 * n, dtype=np.int32).reshape(2, n) * 1000)


def test_summarized_1d(torch):
    check(torch, np.arange(2000, dtype=np.int64))
    check(torch, np.arange(2000, dtype=np.float32) / 3)
    check(torch, np.arange(1001, dtype=np.float64))
    check(torch, np.arange(1000, dtype=np.float64))  # threshold is exclusive: not summarized
    check(torch, np.arange(2000) % 2 == 0)


def test_summarized_values_pick_the_format(torch):
    """Only the shown edges decide the format: a hidden 1e-9 does not force scientific mode."""
    a = np.ones(2000, np.float32)
    a[1000] = 1e-9
    check(torch, a)
    a[1] = 1e-9
    check(torch, a)


def test_summarized_nd(torch):
    check(torch, np.arange(2000, dtype=np.float32).reshape(20, 100))
    check(torch, np.arange(2000, dtype=np.int64).reshape(10, 10, 20))
    check(torch, np.arange(2000, dtype=np.float64).reshape(2000, 1))
    check(torch, np.arange(2400, dtype=np.int32).reshape(4, 6, 100))
    rng = np.random.default_rng(2)
    check(torch, (rng.standard_normal((40, 40)) + 1j).astype(np.complex64))


def test_non_contiguous(torch):
    a = np.arange(24, dtype=np.float32).reshape(4, 6) / 4
    check(torch, a.T)  # from_np keeps the transposed (column-major) layout
    check(torch, a[::2, 1::2])
    e = ember.as_strided(from_np(a), (3, 2), (1, 6), 1)
    t = torch.as_strided(torch.from_numpy(a), (3, 2), (1, 6), 1)
    assert repr(e) == repr(t)
    e = ember.as_strided(from_np(np.arange(5.0)), (3, 4), (0, 1))  # broadcast-like stride 0
    t = torch.as_strided(torch.arange(5.0, dtype=torch.float64), (3, 4), (0, 1))
    assert repr(e).replace("ember.", "torch.") == repr(t)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "bool", "complex64",
                                   "float16", "bfloat16"])
@pytest.mark.parametrize("shape", [(2, 3), (), (0,), (4, 0)])
def test_meta(torch, dtype, shape):
    e = ember.empty(shape, device="meta", dtype=getattr(ember, dtype))
    t = torch.empty(shape, device="meta", dtype=getattr(torch, dtype))
    assert repr(e).replace("ember.", "torch.") == repr(t)


def test_requires_grad_suffix(torch):
    a = np.array([[1.0, 2.5], [3.0, 4.0]], np.float32)
    e, t = from_np(a).requires_grad_(), torch.from_numpy(a).requires_grad_()
    assert repr(e) == repr(t)
    a64 = a.astype(np.float64)
    e, t = from_np(a64).requires_grad_(), torch.from_numpy(a64).requires_grad_()
    assert repr(e).replace("ember.", "torch.") == repr(t)


def test_grad_fn_suffix(torch):
    a = np.array([1.0, 2.0], np.float32)
    e, t = from_np(a).requires_grad_(), torch.from_numpy(a).requires_grad_()
    e, t = e + e, t + t
    if e.grad_fn is None:
        pytest.skip("ember autograd does not record add yet")
    assert repr(e) == repr(t)


def test_tensor_contents_override(torch):
    e, t = from_np(np.arange(3.0)), torch.arange(3.0, dtype=torch.float64)
    assert (e.__repr__(tensor_contents="[x]").replace("ember.", "torch.")
            == t.__repr__(tensor_contents="[x]"))


def test_default_dtype_changes_implied_dtype(torch, restore_options):
    ember.set_default_dtype(ember.float64)
    torch.set_default_dtype(torch.float64)
    for a in (arr([1.5, 2.0], np.float32), arr([1.5, 2.0], np.float64), arr([1j], np.complex64),
              arr([1j], np.complex128), np.zeros((0,), np.float64), np.zeros((0,), np.float32)):
        check(torch, a)


OPTION_CASES = {
    "precision2": dict(precision=2),
    "precision8": dict(precision=8),
    "threshold5": dict(threshold=5),
    "edgeitems1": dict(threshold=5, edgeitems=1),
    "edgeitems0": dict(threshold=5, edgeitems=0),
    "edgeitems0_no_summary": dict(edgeitems=0),
    "linewidth30": dict(linewidth=30),
    "sci_on": dict(sci_mode=True),
    "sci_off": dict(sci_mode=False),
    "short": dict(profile="short"),
    "full": dict(profile="full"),
    "full_precision": dict(profile="full", precision=6),
}

OPTION_ARRAYS = [
    np.arange(10, dtype=np.float32) / 3,
    np.arange(12, dtype=np.int64).reshape(3, 4),
    np.arange(24, dtype=np.float64).reshape(2, 3, 4) * 1e-5,
    np.array([1e-5, 1e5, 1.0], np.float32),
    np.array([1.0, 2.0], np.float32),
    np.array([0.5 + 2j, -1j], np.complex64),
    np.arange(1200, dtype=np.float32).reshape(3, 400),
    np.array(3.25, np.float32),
]


@pytest.mark.parametrize("name", sorted(OPTION_CASES))
def test_set_printoptions(torch, name, restore_options):
    ember.set_printoptions(**OPTION_CASES[name])
    torch.set_printoptions(**OPTION_CASES[name])
    for a in OPTION_ARRAYS:
        check(torch, a)


def test_get_printoptions_round_trip(torch, restore_options):
    assert ember.get_printoptions() == torch._tensor_str.get_printoptions()
    ember.set_printoptions(precision=2, linewidth=120, sci_mode=True)
    torch.set_printoptions(precision=2, linewidth=120, sci_mode=True)
    saved = ember.get_printoptions()
    assert saved == torch._tensor_str.get_printoptions()
    ember.set_printoptions(profile="full")
    ember.set_printoptions(**saved)
    assert ember.get_printoptions() == saved
    ember.set_printoptions(profile="default")
    assert ember.get_printoptions() == {"precision": 4, "threshold": 1000, "edgeitems": 3,
                                        "linewidth": 80, "sci_mode": None}


def test_sci_mode_is_reset_by_any_call(torch, restore_options):
    """As in PyTorch, ``set_printoptions`` without ``sci_mode`` turns automatic mode back on."""
    for lib in (ember, torch):
        lib.set_printoptions(sci_mode=True)
        lib.set_printoptions(precision=3)
    check(torch, np.array([1.5, 2.0], np.float32))
    assert ember.get_printoptions()["sci_mode"] is None


def test_printoptions_context_manager(torch):
    from ember._tensor_str import printoptions
    with printoptions(precision=1), torch._tensor_str.printoptions(precision=1):
        check(torch, np.array([1.25, 2.5], np.float32))
    assert ember.get_printoptions()["precision"] == 4
    check(torch, np.array([1.25, 2.5], np.float32))


def test_factory_tensor_if_available(torch):
    if not hasattr(ember, "tensor"):
        pytest.skip("ember.tensor not written yet")
    for data in ([1.0, 2.5], [[1, 2], [3, 4]], [True], 3.5, [1 + 1j], []):
        assert repr(ember.tensor(data)).replace("ember.", "torch.") == repr(torch.tensor(data))
