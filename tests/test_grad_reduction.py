"""Gradients of the reductions, scans and sorting ops against PyTorch's (float64), gradcheck on a
few, and the Python-level semantics the OpInfo table cannot reach: torch.unique / torch.norm
wrappers, searchsorted's sorter, topk(sorted=False), the not-implemented backward of unique."""
import math
import warnings

import numpy as np
import pytest

import ember
from helpers import from_np, to_np

_rng = np.random.default_rng(11)


def _distinct(shape):
    """Values without ties (so the selected elements, hence the gradients, are unambiguous)."""
    n = int(np.prod(shape))
    return (_rng.permutation(n) - n / 2).reshape(shape) / 3.0 + _rng.uniform(0, 0.01, shape)


def _with_zeros(shape):
    v = _distinct(shape)
    v.reshape(-1)[[1, 4, 5]] = 0.0  # a slice with one zero and one with two
    return v


def _with_nan(shape):
    v = _distinct(shape)
    v.reshape(-1)[[0, 7]] = math.nan
    return v


def _sum_outputs(m, out):
    """A scalar loss over every differentiable (floating) output, weighted so each output gets
    a distinct gradient."""
    outs = out if isinstance(out, (tuple, list)) else (out,)
    total = 0
    for i, o in enumerate(outs):
        if o.dtype in (m.float32, m.float64):
            w = m.arange(o.numel(), dtype=m.float64).reshape(o.shape) / 7 + i + 1
            total = total + (m.where(o == o, o, m.zeros((), dtype=m.float64)) * w).sum()
    return total


# name -> (function of (module, x), values)
_CASES = {
    "nansum": (lambda m, x: m.nansum(x, 1), _with_nan((3, 4))),
    "nansum_all": (lambda m, x: m.nansum(x), _with_nan((3, 4))),
    "nanmean": (lambda m, x: m.nanmean(x, 0, keepdim=True), _with_nan((3, 4))),
    "aminmax": (lambda m, x: m.aminmax(x, dim=1), _distinct((3, 4))),
    "aminmax_all": (lambda m, x: m.aminmax(x), _distinct((3, 4))),
    "std": (lambda m, x: m.std(x, 1), _distinct((3, 4))),
    "var_correction": (lambda m, x: m.var(x, [0, 2], correction=0, keepdim=True),
                       _distinct((3, 4, 2))),
    "std_mean": (lambda m, x: m.std_mean(x, 0), _distinct((3, 4))),
    "var_mean": (lambda m, x: m.var_mean(x, correction=2), _distinct((3, 4))),
    "norm_2": (lambda m, x: m.norm(x), _distinct((3, 4))),
    "norm_1_dim": (lambda m, x: m.norm(x, 1, 1), _distinct((3, 4))),
    "norm_3": (lambda m, x: m.norm(x, 3, [0], keepdim=True), _distinct((3, 4))),
    "norm_inf": (lambda m, x: m.norm(x, math.inf, 1), _distinct((3, 4))),
    "norm_aten_dtype": (lambda m, x: m.ops.aten.norm.ScalarOpt_dtype(x, 2, dtype=m.float64),
                        _distinct((3, 4))),
    "logsumexp": (lambda m, x: m.logsumexp(x, 1), _distinct((3, 4))),
    "logsumexp_keep": (lambda m, x: m.logsumexp(x, [0, 1], keepdim=True), _distinct((3, 4))),
    "cumsum": (lambda m, x: m.cumsum(x, 1), _distinct((3, 4))),
    "cumsum_0d": (lambda m, x: m.cumsum(x, 0), _distinct(())),
    "cumprod": (lambda m, x: m.cumprod(x, 1), _distinct((3, 4))),
    "cumprod_zeros": (lambda m, x: m.cumprod(x, 0), _with_zeros((4, 3))),
    "cummax": (lambda m, x: m.cummax(x, 1), _distinct((3, 4))),
    "cummin": (lambda m, x: m.cummin(x, 0), _distinct((3, 4))),
    "logcumsumexp": (lambda m, x: m.logcumsumexp(x, 1), _distinct((3, 4))),
    "median": (lambda m, x: m.median(x), _distinct((3, 4))),
    "median_dim": (lambda m, x: m.median(x, 1), _distinct((3, 5))),
    "nanmedian_dim": (lambda m, x: m.nanmedian(x, 1), _with_nan((3, 4))),
    "kthvalue": (lambda m, x: m.kthvalue(x, 2, 0, keepdim=True), _distinct((3, 4))),
    "mode": (lambda m, x: m.mode(x, 1), np.array([[1.0, 2.0, 2.0, 3.0], [4.0, 4.0, 5.0, 6.0]])),
    "sort": (lambda m, x: m.sort(x, 1, descending=True), _distinct((3, 4))),
    "sort_stable": (lambda m, x: m.sort(x, stable=True, dim=0), _distinct((3, 4))),
    "msort": (lambda m, x: m.msort(x), _distinct((3, 4))),
    "topk": (lambda m, x: m.topk(x, 2, 1), _distinct((3, 4))),
    "topk_smallest": (lambda m, x: m.topk(x, 3, 0, largest=False), _distinct((3, 4))),
    "quantile": (lambda m, x: m.quantile(x, m.tensor([0.2, 0.5], dtype=m.float64), 1),
                 _distinct((3, 5))),
    "quantile_midpoint": (lambda m, x: m.quantile(x, 0.4, interpolation="midpoint"),
                          _distinct((3, 5))),
    "nanquantile": (lambda m, x: m.nanquantile(x, 0.7, 0, keepdim=True), _with_nan((4, 3))),
}


@pytest.mark.parametrize("name", list(_CASES))
def test_gradient_matches_pytorch(torch, name):
    fn, v = _CASES[name]
    xe = from_np(np.asarray(v, np.float64)).requires_grad_()
    xt = torch.tensor(np.asarray(v, np.float64), requires_grad=True)
    _sum_outputs(ember, fn(ember, xe)).backward()
    _sum_outputs(torch, fn(torch, xt)).backward()
    np.testing.assert_allclose(to_np(xe.grad), xt.grad.numpy(), rtol=1e-7, atol=1e-9,
                               err_msg=name)


@pytest.mark.parametrize("name", ["std", "var_mean", "norm_3", "logsumexp", "cumprod_zeros",
                                  "logcumsumexp", "sort", "quantile"])
def test_gradcheck(name):
    fn, v = _CASES[name]
    x = from_np(np.asarray(v, np.float64)).requires_grad_()
    assert ember.autograd.gradcheck(lambda t: _sum_outputs(ember, fn(ember, t)), (x,))


def test_grad_fn_names_match_pytorch(torch):
    x = ember.tensor([[1.0, 3.0], [2.0, 0.5]], requires_grad=True)
    t = torch.tensor([[1.0, 3.0], [2.0, 0.5]], requires_grad=True)
    for f in (lambda m, a: m.cumsum(a, 0), lambda m, a: m.sort(a)[0],
              lambda m, a: m.sort(a, stable=True)[0], lambda m, a: m.aminmax(a)[0],
              lambda m, a: m.logsumexp(a, 1), lambda m, a: m.topk(a, 1)[0],
              lambda m, a: m.std_mean(a)[1]):
        assert type(f(ember, x).grad_fn).__name__ == type(f(torch, t).grad_fn).__name__
    assert ember.sort(x)[1].grad_fn is None and ember.argsort(x).grad_fn is None


def test_unique_backward_is_not_implemented(torch):
    x = ember.tensor([1.0, 2.0, 1.0], requires_grad=True)
    y = ember.unique(x)
    assert type(y.grad_fn).__name__ == "Unique2Backward0"
    with pytest.raises(RuntimeError, match="the derivative for '_unique2' is not implemented"):
        y.sum().backward()
    t = torch.tensor([1.0, 2.0, 1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="the derivative for '_unique2' is not implemented"):
        torch.unique(t).sum().backward()


# -- Python-level wrappers -----------------------------------------------------------------------

@pytest.mark.parametrize("kw", [{}, {"return_inverse": True}, {"return_counts": True},
                                {"return_inverse": True, "return_counts": True}, {"dim": 0},
                                {"dim": 1, "return_counts": True}, {"sorted": False}])
def test_unique_wrapper(torch, kw):
    v = np.array([[3, 1, 3], [3, 1, 3], [0, 2, 0]])
    e, t = ember.unique(from_np(v), **kw), torch.unique(torch.tensor(v), **kw)
    assert isinstance(e, tuple) == isinstance(t, tuple)
    for a, b in zip(e if isinstance(e, tuple) else (e,), t if isinstance(t, tuple) else (t,)):
        np.testing.assert_array_equal(to_np(a), b.numpy())
    m = from_np(v).unique(**kw)
    for a, b in zip(m if isinstance(m, tuple) else (m,), t if isinstance(t, tuple) else (t,)):
        np.testing.assert_array_equal(to_np(a), b.numpy())


@pytest.mark.parametrize("kw", [{}, {"return_inverse": True, "return_counts": True},
                                {"dim": 0, "return_counts": True}])
def test_unique_consecutive_wrapper(torch, kw):
    v = np.array([[1, 1], [1, 1], [2, 2], [1, 1]])
    e = ember.unique_consecutive(from_np(v), **kw)
    t = torch.unique_consecutive(torch.tensor(v), **kw)
    for a, b in zip(e if isinstance(e, tuple) else (e,), t if isinstance(t, tuple) else (t,)):
        np.testing.assert_array_equal(to_np(a), b.numpy())


@pytest.mark.parametrize("args,kw", [((), {}), ((1,), {}), (("fro",), {"dim": 1}),
                                      ((3,), {"dim": [0, 1], "keepdim": True}),
                                      ((math.inf, 0), {}), ((None,), {}), (("nuc",), {}),
                                      ((2,), {"dtype": "float64"}), ((0,), {"dim": -1})])
def test_norm_wrapper(torch, args, kw):
    v = _distinct((3, 4))
    ek = dict(kw, **({"dtype": ember.float64} if "dtype" in kw else {}))
    tk = dict(kw, **({"dtype": torch.float64} if "dtype" in kw else {}))
    x = from_np(v.astype(np.float32))
    e, t = ember.norm(x, *args, **ek), torch.norm(torch.tensor(v, dtype=torch.float32), *args, **tk)
    assert e.dtype.name == str(t.dtype).split(".")[-1] and tuple(e.shape) == tuple(t.shape)
    np.testing.assert_allclose(to_np(e), t.numpy(), rtol=1e-5)
    np.testing.assert_allclose(to_np(x.norm(*args, **ek)), t.numpy(), rtol=1e-5)


def test_norm_out(torch):
    v = _distinct((3, 4)).astype(np.float32)
    out = ember.empty(0)
    r = ember.norm(from_np(v), 2, 1, out=out)
    assert r is out
    np.testing.assert_allclose(to_np(out), torch.norm(torch.tensor(v), 2, 1).numpy(), rtol=1e-6)


def test_searchsorted_sorter(torch):
    seq, vals, sorter = [3.0, 1.0, 2.0, 5.0], [0.5, 2.0, 2.5, 9.0], [1, 2, 0, 3]
    for side in ("left", "right"):
        e = ember.searchsorted(ember.tensor(seq), ember.tensor(vals), side=side,
                               sorter=ember.tensor(sorter))
        t = torch.searchsorted(torch.tensor(seq), torch.tensor(vals), side=side,
                               sorter=torch.tensor(sorter))
        assert e.tolist() == t.tolist()
    with pytest.raises(RuntimeError):
        ember.searchsorted(ember.tensor(seq), ember.tensor(vals), sorter=ember.tensor([0, 1]))


def test_topk_unsorted_selects_the_same_elements(torch):
    v = _distinct((4, 6))
    e = ember.topk(from_np(v), 3, 1, sorted=False)
    t = torch.topk(torch.tensor(v), 3, 1, sorted=False)
    np.testing.assert_array_equal(np.sort(to_np(e.indices), 1), np.sort(t.indices.numpy(), 1))
    np.testing.assert_array_equal(np.sort(to_np(e.values), 1), np.sort(t.values.numpy(), 1))


def test_sort_is_stable_on_large_ties(torch):
    v = _rng.integers(0, 3, (5, 200)).astype(np.float32)
    for desc in (False, True):
        e = ember.sort(from_np(v), dim=1, descending=desc, stable=True)
        t = torch.sort(torch.tensor(v), dim=1, descending=desc, stable=True)
        np.testing.assert_array_equal(to_np(e.indices), t.indices.numpy())


@pytest.mark.parametrize("fn", ["var_mean", "std_mean"])
@pytest.mark.parametrize("x,kw", [([2.], {}), ([[2.], [3.]], {"dim": 1}),
                                  ([1., 2.], {"correction": 2}),
                                  ([2., 2., 2.], {})])
def test_mean_only_gradient_skips_the_unused_variance(torch, fn, x, kw):
    """Only the mean used: PyTorch leaves the variance's term out (its gradient is undefined);
    a zero gradient would still meet var's 2 / (n - correction), infinite with no degrees of
    freedom left (0 * inf = NaN)."""
    grads = []
    for lib in (ember, torch):
        t = lib.tensor(x, dtype=lib.float64, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # degrees of freedom <= 0
            getattr(lib, fn)(t, **kw)[1].sum().backward()
        grads.append(np.asarray(t.grad.tolist()))
    np.testing.assert_allclose(*grads)
