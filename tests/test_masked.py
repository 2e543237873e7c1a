"""ember.masked against torch.masked: values (float64, float32 and integer inputs), the mask
broadcast to the input, fully masked-out rows, dims/keepdim/dtype arguments, errors, and float64
gradients (masked-out elements get none)."""
import warnings

import numpy as np
import pytest

import ember
from helpers import to_np

torch = pytest.importorskip("torch")

_rng = np.random.default_rng(7)
X = _rng.standard_normal((3, 4, 5))
MASKS = {
    "full": _rng.random((3, 4, 5)) > 0.4,
    "broadcast": _rng.random((4, 1)) > 0.3,  # broadcast to (3, 4, 5)
    "row masked out": np.concatenate([np.zeros((3, 1, 5), bool), _rng.random((3, 3, 5)) > 0.4],
                                     1),
    "none": None,
}

REDUCTIONS = {
    "sum": [{}, {"dim": 1}, {"dim": (0, 2), "keepdim": True}],
    "prod": [{}, {"dim": 2}, {"dim": (0, 1), "keepdim": True}],
    "amax": [{"dim": 1}, {"dim": (1, 2), "keepdim": True}],
    "amin": [{"dim": 0}, {}],
    "mean": [{}, {"dim": 2, "keepdim": True}],
    "logsumexp": [{"dim": 1}, {"dim": (0, 2)}],
    "norm": [{"ord": 2.0, "dim": 1}, {"ord": 1.0}, {"ord": float("inf"), "dim": 2},
             {"ord": 3.0, "dim": (0, 1), "keepdim": True}],
    "var": [{"dim": 1}, {"dim": 2, "unbiased": False}, {"dim": (0, 2), "correction": 2,
                                                        "keepdim": True}],
    "std": [{"dim": 1}, {"dim": 0, "keepdim": True}],
    "median": [{"dim": 1}, {"dim": -1, "keepdim": True}],
    "cumsum": [{"dim": 1}],
    "cumprod": [{"dim": 2}],
    "softmax": [{"dim": 1}],
    "log_softmax": [{"dim": 2}],
    "softmin": [{"dim": 0}],
    "normalize": [{"ord": 2.0, "dim": 1}, {"ord": 1.0, "dim": 2}],
}
NO_GRAD = {"argmax", "argmin"}


def _run(lib, name, x, mask, kw):
    args = ()
    kw = dict(kw)
    if name in ("norm", "normalize"):
        args = (kw.pop("ord"),)
    m = None if mask is None else lib.tensor(mask)
    return getattr(lib.masked, name)(x, *args, mask=m, **kw)


def _close(e, t, **tol):
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], (e.dtype, t.dtype)
    assert tuple(e.shape) == tuple(t.shape)
    np.testing.assert_allclose(to_np(e), to_np(t), equal_nan=True, **tol)


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@pytest.mark.parametrize("mask", sorted(MASKS))
def test_values_and_grads(name, mask):
    m = MASKS[mask]
    for kw in REDUCTIONS[name]:
        ex = ember.tensor(X, requires_grad=True)
        tx = torch.tensor(X, requires_grad=True)
        e, t = _run(ember, name, ex, m, kw), _run(torch, name, tx, m, kw)
        _close(e, t, rtol=1e-10, atol=1e-12)
        w = _rng.standard_normal(tuple(t.shape))
        # masked-out results (inf, NaN) take no part: their gradients are NaN in both
        finite = np.isfinite(to_np(t.detach()))
        wt = np.where(finite, w, 0.0)
        (ember.where(ember.tensor(finite), e, 0.0) * ember.tensor(wt)).sum().backward()
        (torch.where(torch.tensor(finite), t, 0.0) * torch.tensor(wt)).sum().backward()
        _close(ex.grad, tx.grad, rtol=1e-8, atol=1e-10)
        if m is not None and name not in ("norm", "normalize", "var", "std", "mean"):
            # masked-out inputs get a zero gradient
            mm = np.broadcast_to(m, X.shape)
            assert np.all(to_np(ex.grad)[~mm] == 0) or name in ("cumsum", "cumprod")


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("mask", ["full", "broadcast", "none"])
def test_arg_reductions(name, mask):
    for kw in ({"dim": 1}, {"dim": 2, "keepdim": True}, {"dim": None}):
        e = _run(ember, name, ember.tensor(X), MASKS[mask], kw)
        t = _run(torch, name, torch.tensor(X), MASKS[mask], kw)
        _close(e, t)


@pytest.mark.parametrize("dtype", ["float32", "int32", "int64", "uint8", "bool"])
def test_dtypes(dtype):
    x = (_rng.standard_normal((3, 4)) * 4).round()
    if dtype == "uint8":
        x = np.abs(x)
    m = _rng.random((3, 4)) > 0.3
    m[:, 0] = True  # no fully masked columns: integer median refuses them
    ex, tx = ember.tensor(x).to(getattr(ember, dtype)), torch.tensor(x).to(getattr(torch, dtype))
    names = ["sum", "prod", "amax", "amin", "argmax", "argmin", "cumsum", "median", "logsumexp"]
    if dtype == "bool":
        names = ["sum", "prod", "argmax"]
    for name in names:
        kw = {"dim": 0}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                t = _run(torch, name, tx, m, kw)
            except Exception as err:
                with pytest.raises(type(err)):
                    _run(ember, name, ex, m, kw)
                continue
        _close(_run(ember, name, ex, m, kw), t, rtol=1e-6)
    for name in ("mean", "var", "std", "softmax", "norm"):
        if dtype == "float32":
            kw = {"dim": 1} if name != "norm" else {"ord": 2.0, "dim": 1}
            _close(_run(ember, name, ex, m, kw), _run(torch, name, tx, m, kw), rtol=1e-5)
    assert ember.masked.sum(ex, mask=ember.tensor(m)).dtype == \
        getattr(ember, str(torch.masked.sum(tx, mask=torch.tensor(m)).dtype).split(".")[1])


def test_dtype_argument_and_logaddexp():
    x, y = _rng.standard_normal((3, 4)), _rng.standard_normal((3, 4))
    mx, my = _rng.random((3, 4)) > 0.5, _rng.random((4,)) > 0.5
    ex, ey = ember.tensor(x, requires_grad=True), ember.tensor(y, requires_grad=True)
    tx, ty = torch.tensor(x, requires_grad=True), torch.tensor(y, requires_grad=True)
    e = ember.masked.logaddexp(ex, ey, input_mask=ember.tensor(mx), other_mask=ember.tensor(my))
    t = torch.masked.logaddexp(tx, ty, input_mask=torch.tensor(mx), other_mask=torch.tensor(my))
    _close(e, t, rtol=1e-12)
    fin = np.isfinite(t.detach().numpy())
    ember.where(ember.tensor(fin), e, 0.0).sum().backward()
    torch.where(torch.tensor(fin), t, 0.0).sum().backward()
    _close(ex.grad, tx.grad, rtol=1e-10)
    _close(ey.grad, ty.grad, rtol=1e-10)
    for name in ("sum", "mean", "amax", "softmax", "cumsum"):
        kw = {"dim": 1, "dtype": "float32"}
        ek = dict(kw, dtype=ember.float32)
        tk = dict(kw, dtype=torch.float32)
        _close(getattr(ember.masked, name)(ember.tensor(x), mask=ember.tensor(mx), **ek),
               getattr(torch.masked, name)(torch.tensor(x), mask=torch.tensor(mx), **tk),
               rtol=1e-6)


def test_errors():
    x = ember.tensor(X)
    tx = torch.tensor(X)
    cases = [
        lambda L, t: L.masked.sum(t, dim=(1, 1)),
        lambda L, t: L.masked.sum(t, dim=3),
        lambda L, t: L.masked.sum(t, mask=L.ones(2, 3, 4, 5, dtype=L.bool)),
        lambda L, t: L.masked.mean(t.long()),
        lambda L, t: L.masked.median(t.long(), 1, mask=L.zeros(3, 4, 5, dtype=L.bool)),
        lambda L, t: L.masked.var(t, 1, True, correction=1),
    ]
    for f in cases:
        with pytest.raises(Exception) as te:
            f(torch, tx)
        with pytest.raises(type(te.value)) as ee:
            f(ember, x)
        assert str(ee.value) == str(te.value).replace("torch.", "ember.")
