"""Regression tests for the op-database fixes of issue 18 (helper opdb2): error inputs of the
range factories and complex, and the wrong-value fixes, each checked against PyTorch."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _both(fn):
    """fn(torch) and fn(ember): each a result list or (exception type name, message)."""
    out = []
    for m in (torch, ember):
        try:
            r = fn(m)
            out.append(r.tolist() if hasattr(r, "tolist") else r)
        except Exception as e:  # noqa: BLE001
            out.append((type(e).__name__, str(e).split("\n")[0]))
    return out


@pytest.mark.parametrize("args,dtype", [
    ((0, 64, 0.5), "int64"),      # the step truncates to 0 in int64: ValueError
    ((0, 3, 0.3), "int32"),       # other integral dtypes size in double: ten zeros
    ((0, 3, 1.5), "int32"),
    ((-5, 10, 2.5), "int64"),
    ((0, 3, 0), None),
    ((0, 3, -1), None),
    ((0, float("inf"), 2), None),
    ((0.0, 1.0, 0.1), None),
    ((10, 0, -3), "uint8"),
])
def test_arange_checks_and_values(args, dtype):
    t, e = _both(lambda m: m.arange(*args, **({"dtype": getattr(m, dtype)} if dtype else {})))
    assert t == e


def test_arange_out_int64_fractional_step():
    t, e = _both(lambda m: m.arange(0, 64, 0.5, out=m.empty(0, dtype=m.int64)))
    assert t == e == ("ValueError", "step must be nonzero")


LINSPACE_CASES = [
    lambda m: m.linspace(m.tensor(1), m.tensor(3.0), 5),
    lambda m: m.linspace(m.tensor(1), 3, 5, dtype=m.int32),
    lambda m: m.linspace(0, m.tensor(2.0), 4),
    lambda m: m.linspace(m.tensor([3, 3]), m.tensor([3, 3]), 1),
    lambda m: m.linspace(m.tensor([3, 3]), 3, 1),
    lambda m: m.linspace(3, m.tensor([[3]]), 1),
    lambda m: m.linspace(m.tensor(0), m.tensor(3), 4, out=m.empty(4)),
    lambda m: m.logspace(m.tensor(1), 3, 5, base=2.0),
    lambda m: m.logspace(m.tensor(0), m.tensor(2), 3, out=m.empty(3, dtype=m.float64)),
    lambda m: m.logspace(2, m.tensor([1, 2]), 3),
]


@pytest.mark.parametrize("case", range(len(LINSPACE_CASES)))
def test_linspace_logspace_tensor_overloads(case):
    t, e = _both(LINSPACE_CASES[case])
    assert t == e


@pytest.mark.parametrize("name", ["linspace", "logspace"])
def test_float_steps_is_an_invalid_combination(name):
    t, e = _both(lambda m: getattr(m, name)(0, 3, 1.0))
    assert e[0] == t[0] == "TypeError"
    assert e[1] == t[1]  # "<name>() received an invalid combination of arguments - got (...)"


@pytest.mark.parametrize("name", ["complex", "polar"])
@pytest.mark.parametrize("dt,out_dt", [("float64", "complex64"), ("float32", "complex128"),
                                       ("float32", "float32"), ("float32", "complex64")])
def test_complex_out_dtype_is_exact(name, dt, out_dt):
    def f(m):
        a = m.ones(2, dtype=getattr(m, dt))
        return getattr(m, name)(a, a * 0, out=m.zeros(2, dtype=getattr(m, out_dt)))
    t, e = _both(f)
    assert t == e


def test_clamp_min_takes_a_python_number():
    # the database lists this as an error input, but PyTorch accepts it (its own test_errors is
    # an expectedFailure): ember computes what PyTorch computes
    x = np.array([1, 5, 3])
    assert ember.clamp_min(ember.tensor(x), 2).tolist() == torch.clamp_min(torch.tensor(x), 2).tolist()
    assert ember.clamp_max(ember.tensor(x), 2).tolist() == torch.clamp_max(torch.tensor(x), 2).tolist()


def test_unfold_fold_bool():
    x = np.random.default_rng(0).random((2, 2, 5, 4)) > 0.5
    res = []
    for m in (torch, ember):
        u = m.nn.functional.unfold(m.tensor(x), 2, padding=1)
        f = m.nn.functional.fold(u, (5, 4), 2, padding=1)
        res.append((str(u.dtype).split(".")[1], u.tolist(), f.tolist()))
    assert res[0] == res[1]


@pytest.mark.parametrize("seed", range(4))
def test_kthvalue_tie_index_is_atens_quickselect(seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 3, size=(6, 9)).astype(np.float64)
    if seed % 2:
        x[rng.random(x.shape) < 0.2] = np.nan
    for dim in (0, 1):
        for k in range(1, x.shape[dim] + 1):
            tv, ti = torch.kthvalue(torch.tensor(x), k, dim)
            ev, ei = ember.kthvalue(ember.tensor(x), k, dim)
            np.testing.assert_array_equal(ev.numpy(), tv.numpy())
            np.testing.assert_array_equal(ei.numpy(), ti.numpy())


@pytest.mark.parametrize("n,k", [(5, 3), (10, 10), (17, 4), (40, 39), (130, 2), (200, 3)])
@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("sorted_", [True, False])
def test_topk_ties_and_unsorted_order_are_atens(n, k, largest, sorted_):
    # k * 64 <= n takes ATen's partial-sort path, the others nth_element (+ sort)
    rng = np.random.default_rng(n + k)
    x = rng.integers(0, 3, size=(4, n)).astype(np.float64)
    x[1, rng.random(n) < 0.3] = np.nan
    x[2] = rng.standard_normal(n)
    tv, ti = torch.topk(torch.tensor(x), k, 1, largest, sorted_)
    ev, ei = ember.topk(ember.tensor(x), k, 1, largest, sorted_)
    np.testing.assert_array_equal(ev.numpy(), tv.numpy())
    np.testing.assert_array_equal(ei.numpy(), ti.numpy())


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("channels", [1, 3, 4, 6])
def test_interpolate_uint8_is_atens_integer_path(mode, align_corners, channels):
    # ATen resamples uint8 with int16 weights, W pass then H pass, each rounded and clamped
    rng = np.random.default_rng(channels)
    x = rng.integers(0, 256, (2, channels, 5, 7)).astype(np.uint8)
    for kw in ({"scale_factor": 1.7}, {"scale_factor": 0.6}, {"size": (9, 4)}, {"size": (5, 11)}):
        t = torch.nn.functional.interpolate(torch.tensor(x), mode=mode,
                                            align_corners=align_corners, **kw)
        e = ember.nn.functional.interpolate(ember.tensor(x), mode=mode,
                                            align_corners=align_corners, **kw)
        assert e.dtype == ember.uint8
        np.testing.assert_array_equal(e.numpy(), t.numpy())


@pytest.mark.parametrize("dt", ["int32", "bool", "uint8"])
@pytest.mark.parametrize("mode,shape,channels_last", [
    ("linear", (1, 1, 4), False), ("bilinear", (1, 1, 3, 3), False),
    ("bilinear", (1, 1, 70, 3), False), ("bilinear", (1, 4, 70, 3), True),
    ("bicubic", (1, 1, 3, 3), False), ("trilinear", (1, 1, 2, 2, 2), False),
    ("trilinear", (1, 4, 2, 2, 2), True), ("nearest", (1, 1, 100, 3), False),
    ("nearest-exact", (1, 1, 3), False)])
def test_interpolate_dtype_errors_name_atens_kernel(dt, mode, shape, channels_last):
    def f(m):
        x = m.zeros(shape, dtype=getattr(m, dt))
        if channels_last:
            x = x.contiguous(memory_format=m.channels_last if len(shape) == 4
                             else m.channels_last_3d)
        return m.nn.functional.interpolate(x, scale_factor=2, mode=mode).shape
    t, e = _both(f)
    assert (t == e) if isinstance(t, tuple) and isinstance(t[0], str) else tuple(t) == tuple(e)


def test_linspace_tensor_overloads_are_factories():
    # category_override: factory: requires_grad= is taken, and a grad-requiring bound records
    # no grad_fn (the result is a fresh leaf), as in PyTorch
    for m in (torch, ember):
        s = m.tensor(1.0, requires_grad=True)
        r = m.linspace(s, 3.0, 4)
        assert not r.requires_grad and r.grad_fn is None
        r = m.logspace(s, m.tensor(3.0), 4, requires_grad=True)
        assert r.requires_grad and r.is_leaf
