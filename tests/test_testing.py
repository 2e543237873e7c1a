"""ember.testing against torch.testing: the same inputs give the same outcome, exception type
and message text."""
import warnings

import numpy as np
import pytest

import ember
import ember.testing as et


def _convert(mod, x):
    """Build the same structure for one library: ('t', array, dtype-name) leaves become tensors."""
    if isinstance(x, tuple) and x and x[0] == "t":
        _, arr, dt = x
        return mod.tensor(np.asarray(arr).tolist(), dtype=getattr(mod, dt))
    if isinstance(x, list):
        return [_convert(mod, v) for v in x]
    if isinstance(x, dict):
        return {k: _convert(mod, v) for k, v in x.items()}
    return x


def _outcome(fn, *args, **kwargs):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 -- the outcome itself is what is compared
        return type(e).__name__, str(e)
    return None


def T(a, dt="float32"):
    return ("t", a, dt)


CASES = [
    (T([1.0, 2.0, 3.0]), T([1.0, 4.0, 5.0]), {}),
    (T([1.0, 2.0, 3.0]), T([1.0, 2.0, 3.0 + 1e-6]), {}),
    (T([[1, 2], [3, 4]], "int64"), T([[1, 2], [3, 5]], "int64"), {}),
    (T([[1, 2], [3, 4]], "int32"), T([[0, 2], [3, 9]], "int32"), {}),
    (T([True, False]), T([True, True]), {}) if False else
    (T([1.0, float("nan")]), T([1.0, float("nan")]), {}),
    (T([1.0, float("nan")]), T([1.0, float("nan")]), {"equal_nan": True}),
    (T([1.0, float("inf")]), T([1.0, float("inf")]), {}),
    (T([1.0, float("inf")]), T([1.0, -float("inf")]), {}),
    (T([0.0, 1.0]), T([1e-3, 1.0]), {}),
    (T([1.0, 2.0], "float64"), T([1.0, 2.0 + 1e-6], "float64"), {}),
    (T([1.0, 2.0], "float16"), T([1.0, 2.001], "float16"), {}),
    (T([1.0, 2.0], "float16"), T([1.0, 2.01], "float16"), {}),
    (T([1.0, 2.0], "bfloat16"), T([1.0, 2.02], "bfloat16"), {}),
    (T([1.0, 2.0]), T([1.0, 2.5]), {"rtol": 0.3, "atol": 0.0}),
    (T([1.0, 2.0]), T([1.0, 2.5]), {"rtol": 0.0, "atol": 0.0}),
    (T([1.0, 2.0]), T([1.0, 2.5]), {"rtol": 0.1}),
    (T([1.0, 2.0]), T([1.0, 2.5]), {"atol": 0.1}),
    (T([1.0, 2.0]), T([1.0, 2.0], "float64"), {}),
    (T([1.0, 2.0]), T([1.0, 2.0], "float64"), {"check_dtype": False}),
    (T([1.0, 2.0]), T([1.0, 2.5], "float64"), {"check_dtype": False}),
    (T([1.0, 2.0]), T([1.0, 2.0, 3.0]), {}),
    (T([[1.0, 2.0]]), T([1.0, 2.0]), {}),
    (T(3.0), T(3.5), {}),
    (T([1.0, 2.0]), T([1.0, 2.5]), {"msg": "custom message"}),
    (T([1.0, 2.0]), T([1.0, 2.5]), {"msg": lambda m: f"Header\n\n{m}\n\nFooter"}),
    ([T([1.0]), T([2.0])], [T([1.0]), T([2.5])], {}),
    ([T([1.0]), T([2.0])], [T([1.0])], {}),
    ({"a": T([1.0]), "b": [T([2.0]), 3]}, {"a": T([1.0]), "b": [T([2.0]), 4]}, {}),
    ({"a": T([1.0]), "b": T([2.0])}, {"a": T([1.0]), "c": T([2.0])}, {}),
    (1.0, 1.0 + 1e-8, {}),
    (1.0, 1.1, {}),
    (1, 2, {}),
    (1, 1.0, {}),
    (1, 1.0, {"check_dtype": True}),
    (float("nan"), float("nan"), {}),
    (float("nan"), float("nan"), {"equal_nan": True}),
    (complex(1, 2), complex(1, 2.5), {}),
    (True, False, {}),
    (True, True, {}),
    (None, None, {}),
    (None, 1, {}),
    ("abc", "abc", {}),
    (T([1.0]), 1.0, {}),
    (T([1 + 2j, 3 + 0j], "complex64"), T([1 + 2j, 3 + 1j], "complex64"), {}),
    (T(np.arange(24.0).reshape(2, 3, 4)), T(np.arange(24.0).reshape(2, 3, 4) * 1.01), {}),
]


@pytest.mark.parametrize("actual,expected,kwargs", CASES)
def test_assert_close_matches_torch(torch, actual, expected, kwargs):
    ours = _outcome(et.assert_close, _convert(ember, actual), _convert(ember, expected), **kwargs)
    theirs = _outcome(torch.testing.assert_close, _convert(torch, actual),
                      _convert(torch, expected), **kwargs)
    if theirs is not None:
        # The one place the texts name their library: dtypes print as ember.X / torch.X.
        theirs = (theirs[0], theirs[1].replace("torch.", "ember."))
    assert ours == theirs


def test_numpy_inputs(torch):
    a, b = np.array([1.0, 2.0]), np.array([1.0, 2.1])
    assert _outcome(et.assert_close, a, b) == _outcome(torch.testing.assert_close, a, b)
    et.assert_close(a, a.copy())


def test_check_stride(torch):
    x = ember.arange(6.0).reshape(2, 3)
    y = x.t().contiguous().t()
    et.assert_close(x, y)
    ours = _outcome(et.assert_close, x, y, check_stride=True)
    tx = torch.arange(6.0).reshape(2, 3)
    theirs = _outcome(torch.testing.assert_close, tx, tx.t().contiguous().t(), check_stride=True)
    assert ours == theirs
    assert ours[1] == "The values for attribute 'stride()' do not match: (3, 1) != (1, 2)."


def test_check_device():
    x = ember.ones(3)
    m = ember.empty(3, device="meta")
    with pytest.raises(AssertionError, match="The values for attribute 'device' do not match: "
                                             "cpu != meta."):
        et.assert_close(x, m)
    # Against a meta tensor only attributes are compared.
    et.assert_close(ember.empty(3, device="meta"), m)


def test_subclasses_and_unrelated_types(torch):
    p = ember.nn.Parameter(ember.ones(2))
    et.assert_close(p, ember.ones(2))
    with pytest.raises(TypeError, match="No comparison pair was able to handle inputs of type"):
        et.assert_close(p, ember.ones(2), allow_subclasses=False)
    with pytest.raises(TypeError, match="No comparison pair was able to handle inputs of type "
                                        "<class 'numpy.ndarray'> and <class 'ember.Tensor'>"):
        et.assert_close(np.ones(2), ember.ones(2))


def test_assert_allclose(torch):
    with pytest.warns(FutureWarning, match="assert_allclose"):
        et.assert_allclose(ember.tensor([1.0, 2.0]), [1.0, 2.0 + 1e-5])
    # Looser float32 defaults than assert_close (rtol 1e-4), NaNs equal by default, no dtype check.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        et.assert_allclose(ember.tensor([1.0, float("nan")]), ember.tensor([1.0, float("nan")]))
        et.assert_allclose(ember.tensor([1.0]), ember.tensor([1.0], dtype=ember.float64))
        ours = _outcome(et.assert_allclose, ember.tensor([1.0, 2.0]), [1.0, 2.1])
        theirs = _outcome(torch.testing.assert_allclose, torch.tensor([1.0, 2.0]), [1.0, 2.1])
    assert ours == theirs and ours[0] == "AssertionError"


@pytest.mark.parametrize("dtype,lo,hi", [("float32", -9, 9), ("float64", -9, 9),
                                         ("int64", -9, 10), ("uint8", 0, 10), ("int8", -9, 10)])
def test_make_tensor_default_ranges(dtype, lo, hi):
    t = et.make_tensor((50, 40), dtype=getattr(ember, dtype), device="cpu")
    assert t.shape == (50, 40) and t.dtype == getattr(ember, dtype)
    v = t.numpy()
    assert v.min() >= lo and v.max() < hi
    assert len(np.unique(v)) > 5  # really random, not a constant fill


def test_make_tensor_options():
    t = et.make_tensor(2, 3, dtype=ember.float32, device="cpu", low=-1, high=1,
                       requires_grad=True)
    assert t.requires_grad and t.is_leaf and float(t.abs().max()) < 1
    t = et.make_tensor((4, 5), dtype=ember.float32, device="cpu", noncontiguous=True)
    assert t.shape == (4, 5) and not t.is_contiguous()
    t = et.make_tensor((100,), dtype=ember.int64, device="cpu", low=0, high=2, exclude_zero=True)
    assert bool((t == 1).all())
    b = et.make_tensor((64,), dtype=ember.bool, device="cpu")
    assert b.dtype == ember.bool
    c = et.make_tensor((3,), dtype=ember.complex64, device="cpu", low=0, high=1)
    assert c.dtype == ember.complex64 and float(c.real.min()) >= 0 and float(c.imag.max()) < 1
    t = et.make_tensor((2, 3), dtype=ember.float32, device="cpu", low=-1e40, high=1e40)
    assert bool(t.isfinite().all())  # clamped to the dtype's finite range


def test_make_tensor_errors(torch):
    for kwargs in [dict(low=2, high=1), dict(low=float("nan")), dict(requires_grad=True)]:
        dt = "int64" if "requires_grad" in kwargs else "float32"
        ours = _outcome(et.make_tensor, (2,), dtype=getattr(ember, dt), device="cpu", **kwargs)
        theirs = _outcome(torch.testing.make_tensor, (2,), dtype=getattr(torch, dt),
                          device="cpu", **kwargs)
        assert ours[0] == theirs[0] == "ValueError"
        assert ours[1] == theirs[1].replace("torch.", "ember.")
    with pytest.raises(ValueError, match="mutually exclusive"):
        et.make_tensor((2, 2), dtype=ember.float32, device="cpu", noncontiguous=True,
                       memory_format=ember.channels_last)
