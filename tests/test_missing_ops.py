"""Top-level ops and Tensor attributes added for issue 18, against PyTorch: the factories
(logspace, triu_indices, tril_indices) with their errors, float64 gradients of frexp, complex,
addr, nextafter, fill and sum_to_size, and Tensor.mH / Tensor.H / Tensor.__rdiv__. Values of the
other new ops are compared sample by sample in tests/opinfo_special.py."""
import warnings

import numpy as np
import pytest

import ember
from helpers import to_np

torch = pytest.importorskip("torch")


def _same(e, t, **kw):
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    np.testing.assert_allclose(to_np(e), t.detach().resolve_conj().numpy(), **kw)


@pytest.mark.parametrize("args,kw", [((0, 2, 3), {}), ((-1, 1, 4), {"dtype": "float64"}),
                                     ((0, 2, 3), {"base": 2, "dtype": "int64"}),
                                     ((0, 3, 1), {}), ((1, 2, 0), {}), ((0.5, 2.5, 5), {"base": 3.0})])
def test_logspace(args, kw):
    def call(m):
        k = {a: getattr(m, v) if a == "dtype" else v for a, v in kw.items()}
        return m.logspace(*args, **k)
    _same(call(ember), call(torch), rtol=1e-6)


def test_logspace_out_and_errors():
    out = ember.empty(0)
    ember.logspace(0, 1, 3, out=out)
    _same(out, torch.logspace(0, 1, 3), rtol=1e-6)
    with pytest.raises(RuntimeError, match="number of steps must be non-negative"):
        ember.logspace(0, 1, -1)


@pytest.mark.parametrize("fn", ["triu_indices", "tril_indices"])
@pytest.mark.parametrize("args", [(3, 3), (3, 4, 1), (4, 3, -2), (0, 3), (2, 5, 10),
                                  (3, 3, -5)])
def test_tri_indices(fn, args):
    for dt in ("int64", "int32"):
        e = getattr(ember, fn)(*args, dtype=getattr(ember, dt))
        t = getattr(torch, fn)(*args, dtype=getattr(torch, dt))
        assert tuple(e.shape) == tuple(t.shape)
        _same(e, t)


@pytest.mark.parametrize("call", [lambda m: m.triu_indices(-1, 3), lambda m: m.tril_indices(3, -1),
                                  lambda m: m.tril_indices(3, 3, dtype=m.float32)])
def test_tri_indices_errors(call):
    with pytest.raises(Exception) as te:
        call(torch)
    with pytest.raises(Exception) as ee:
        call(ember)
    assert type(ee.value) is type(te.value) and str(ee.value) == str(te.value)


def _pair(values):
    return (ember.tensor(values, dtype=ember.float64, requires_grad=True),
            torch.tensor(values, dtype=torch.float64, requires_grad=True))


def test_gradients():
    x, tx = _pair([0.3, -2.5, 8.0])
    y, ty = _pair([1.0, -2.5, 3.0])
    v, tv = _pair([1.5, 2.0])
    w, tw = _pair([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    cases = [
        (lambda m, x, y, v, w: m.frexp(x).mantissa),
        (lambda m, x, y, v, w: m.view_as_real(m.complex(x, y)) * m.tensor([1.0, 3.0],
                                                                           dtype=m.float64)),
        (lambda m, x, y, v, w: m.addr(w, v, x, beta=0.5, alpha=2.0)),
        (lambda m, x, y, v, w: m.nextafter(x, y) * 3),
        (lambda m, x, y, v, w: m.fill(w, 2.0) + w * 0),
        (lambda m, x, y, v, w: w.sum_to_size(1, 3) * m.tensor([1.0, 2.0, 3.0], dtype=m.float64)),
    ]
    for f in cases:
        for a in (x, y, v, w, tx, ty, tv, tw):
            a.grad = None
        f(ember, x, y, v, w).sum().backward()
        f(torch, tx, ty, tv, tw).sum().backward()
        for e, t in ((x, tx), (y, ty), (v, tv), (w, tw)):
            assert (e.grad is None) == (t.grad is None)
            if t.grad is not None:
                np.testing.assert_allclose(to_np(e.grad), t.grad.numpy(), rtol=1e-7)


@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (2, 2, 3)])
@pytest.mark.parametrize("attr", ["H", "mH"])
def test_conjugate_transposes(shape, attr):
    vals = np.arange(int(np.prod(shape))).reshape(shape) * (1 + 2j)
    e, t = ember.tensor(vals), torch.tensor(vals)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            tr = getattr(t, attr)
        except RuntimeError as te:
            with pytest.raises(RuntimeError) as ee:
                getattr(e, attr)
            assert str(ee.value) == str(te)
            return
        er = getattr(e, attr)
    _same(er, tr)


def test_rdiv():
    e, t = ember.tensor([2.0, 4.0]), torch.tensor([2.0, 4.0])
    _same(e.__rdiv__(3), t.__rdiv__(3))
    _same(e.__rdiv__(ember.tensor([1.0, 1.0])), t.__rdiv__(torch.tensor([1.0, 1.0])))
    _same(ember.tensor([2, 4]).__rdiv__(3), torch.tensor([2, 4]).__rdiv__(3))


def test_methods_exist_like_torch():
    for name in ("heaviside", "heaviside_", "gcd", "gcd_", "lcm", "lcm_", "nextafter",
                 "nextafter_", "frexp", "addr", "addr_", "resolve_neg", "sum_to_size", "i0",
                 "i0_", "sinc", "sinc_", "igamma", "igamma_", "igammac", "igammac_",
                 "mvlgamma", "mvlgamma_"):
        assert hasattr(ember.Tensor, name) == hasattr(torch.Tensor, name), name
    for name in ("complex", "isin", "logspace", "triu_indices", "tril_indices", "fill"):
        assert callable(getattr(ember, name)), name


def test_addr_inplace_gradient():
    grads = []
    for m in (ember, torch):
        s = m.ones(2, 3, dtype=m.float64, requires_grad=True)
        v = m.tensor([1.0, -2.0], dtype=m.float64, requires_grad=True)
        w = m.tensor([1.0, 2.0, 0.5], dtype=m.float64, requires_grad=True)
        r = s.clone()
        r.addr_(v, w, beta=2, alpha=3)
        (r * r).sum().backward()
        grads.append([np.asarray(g.grad.tolist()) for g in (s, v, w)])
    for e, t in zip(*grads):
        np.testing.assert_allclose(e, t, rtol=1e-7)
