"""ember.special and the top-level special functions against PyTorch: the module's public names,
float64 gradients (first order, through the derivatives.yaml formulas), the ops PyTorch declares
non-differentiable, and error messages. Values, dtypes, out= and in-place forms are compared
sample by sample in tests/opinfo_special.py (driven by tests/test_ops.py)."""
import math

import numpy as np
import pytest

import ember
from helpers import to_np

torch = pytest.importorskip("torch")


def _pair(values, requires_grad=True):
    e = ember.tensor(values, dtype=ember.float64, requires_grad=requires_grad)
    t = torch.tensor(values, dtype=torch.float64, requires_grad=requires_grad)
    return e, t


def test_module_names_match_torch_special():
    assert sorted(ember.special.__all__) == sorted(torch.special.__all__)
    for name in ember.special.__all__:
        assert callable(getattr(ember.special, name)), name


_GRAD_CASES = {  # name -> (ember fn, torch fn, input values)
    "entr": (ember.special.entr, torch.special.entr, [0.25, 1.0, 3.0, 0.0]),
    "erfcx": (ember.special.erfcx, torch.special.erfcx, [-2.0, -0.5, 0.0, 0.75, 4.0]),
    "ndtri": (ember.special.ndtri, torch.special.ndtri, [0.05, 0.3, 0.5, 0.9]),
    "log_ndtr": (ember.special.log_ndtr, torch.special.log_ndtr, [-4.0, -1.0, 0.0, 2.5]),
    "ndtr": (ember.special.ndtr, torch.special.ndtr, [-2.0, 0.0, 1.5]),
    "i0": (ember.i0, torch.i0, [-3.0, -0.5, 0.0, 2.0, 9.0]),
    "i0e": (ember.special.i0e, torch.special.i0e, [-3.0, -0.5, 0.0, 2.0, 9.0]),
    "i1": (ember.special.i1, torch.special.i1, [-3.0, -0.5, 0.0, 2.0, 9.0]),
    "i1e": (ember.special.i1e, torch.special.i1e, [-3.0, -0.5, 0.0, 2.0, 9.0]),
    "sinc": (ember.sinc, torch.sinc, [-1.5, -0.25, 0.0, 0.5, 2.0]),
    "expit": (ember.special.expit, torch.special.expit, [-2.0, 0.0, 3.0]),
    "gammaln": (ember.special.gammaln, torch.special.gammaln, [0.5, 2.0, 7.5]),
}


@pytest.mark.parametrize("name", sorted(_GRAD_CASES))
def test_unary_gradients(name):
    fe, ft, vals = _GRAD_CASES[name]
    e, t = _pair(vals)
    fe(e).sum().backward()
    ft(t).sum().backward()
    np.testing.assert_allclose(to_np(e.grad), t.grad.numpy(), rtol=1e-7, atol=1e-10)


def test_unary_gradients_are_differentiable_twice():
    e, t = _pair([0.3, 1.5, 2.0])
    (ge,) = ember.autograd.grad(ember.special.i1(e).sum(), e, create_graph=True)
    (gt,) = torch.autograd.grad(torch.special.i1(t).sum(), t, create_graph=True)
    ge.sum().backward()
    gt.sum().backward()
    np.testing.assert_allclose(to_np(e.grad), t.grad.numpy(), rtol=1e-7)


def test_mvlgamma_gradient():
    e, t = _pair([[1.5, 2.0], [3.25, 7.0]])
    for p in (1, 3):
        e.grad = None
        t.grad = None
        ember.special.multigammaln(e, p).sum().backward()
        torch.special.multigammaln(t, p).sum().backward()
        np.testing.assert_allclose(to_np(e.grad), t.grad.numpy(), rtol=1e-7)


@pytest.mark.parametrize("which", ["tensor", "self_scalar", "other_scalar"])
def test_xlog1py_gradients(which):
    x, tx = _pair([0.0, 0.0, 2.0, -1.5])
    y, ty = _pair([-1.0, 3.0, 0.5, 2.0])
    if which == "tensor":
        ember.special.xlog1py(x, y).sum().backward()
        torch.special.xlog1py(tx, ty).sum().backward()
        pairs = [(x, tx), (y, ty)]
    elif which == "self_scalar":
        ember.special.xlog1py(2.5, y).sum().backward()
        torch.special.xlog1py(2.5, ty).sum().backward()
        pairs = [(y, ty)]
    else:
        ember.special.xlog1py(x, -1.0).sum().backward()
        torch.special.xlog1py(tx, -1.0).sum().backward()
        pairs = [(x, tx)]
    for e, t in pairs:
        np.testing.assert_allclose(to_np(e.grad), t.grad.numpy(), rtol=1e-7)


@pytest.mark.parametrize("op", ["igamma", "igammac", "zeta"])
def test_second_argument_gradient_and_first_not_implemented(op):
    fe = {"igamma": ember.igamma, "igammac": ember.igammac, "zeta": ember.special.zeta}[op]
    ft = {"igamma": torch.igamma, "igammac": torch.igammac, "zeta": torch.special.zeta}[op]
    a, ta = _pair([1.5, 2.0, 3.5], requires_grad=False)
    x, tx = _pair([0.5, 1.0, 2.5])
    fe(a, x).sum().backward()
    ft(ta, tx).sum().backward()
    np.testing.assert_allclose(to_np(x.grad), tx.grad.numpy(), rtol=1e-7)
    a.requires_grad_()
    ta.requires_grad_()
    with pytest.raises(NotImplementedError) as te:
        ft(ta, tx).sum().backward()
    with pytest.raises(NotImplementedError) as ee:
        fe(a, x).sum().backward()
    assert str(ee.value) == str(te.value)


@pytest.mark.parametrize("name", ["airy_ai", "bessel_j0", "bessel_y1", "modified_bessel_k0",
                                  "scaled_modified_bessel_k1", "spherical_bessel_j0"])
def test_non_differentiable_outputs(name):
    e, t = _pair([0.5, 2.0])
    re, rt = getattr(ember.special, name)(e), getattr(torch.special, name)(t)
    assert re.requires_grad == rt.requires_grad
    np.testing.assert_allclose(to_np(re), rt.detach().numpy(), rtol=1e-7)


def test_polynomial_outputs_non_differentiable():
    x, tx = _pair([0.25, -0.5])
    re = ember.special.chebyshev_polynomial_t(x, 3)
    rt = torch.special.chebyshev_polynomial_t(tx, 3)
    assert re.requires_grad == rt.requires_grad
    np.testing.assert_allclose(to_np(re), rt.detach().numpy(), rtol=1e-7)


@pytest.mark.parametrize("call", [
    lambda m: m.special.ndtri(m.tensor([0.5], dtype=m.float16)),
    lambda m: m.special.bessel_j0(m.tensor([1 + 1j])),
    lambda m: m.igamma(m.tensor([1, 2]), m.tensor([1, 2])),
    lambda m: m.special.zeta(m.tensor([2.0], dtype=m.float16), m.tensor([1.0], dtype=m.float16)),
    lambda m: m.mvlgamma(m.tensor([2.0]), 0),
    lambda m: m.mvlgamma(m.tensor([True]), 1),
    lambda m: m.special.polygamma(-1, m.tensor([1.0])),
    lambda m: m.special.xlog1py(m.ones(2, 3), m.ones(4)),
])
def test_errors_match(call):
    with pytest.raises(Exception) as te:
        call(torch)
    with pytest.raises(Exception) as ee:
        call(ember)
    assert type(ee.value) is type(te.value)
    assert str(ee.value) == str(te.value)


def test_method_and_inplace_forms():
    e = ember.tensor([0.5, 1.0, 2.0])
    t = torch.tensor([0.5, 1.0, 2.0])
    np.testing.assert_allclose(to_np(e.i0()), t.i0().numpy(), rtol=1e-6)
    np.testing.assert_allclose(to_np(e.sinc()), t.sinc().numpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(to_np(e.igamma(e)), t.igamma(t).numpy(), rtol=1e-6)
    np.testing.assert_allclose(to_np(e.mvlgamma(1)), t.mvlgamma(1).numpy(), rtol=1e-6)
    e2, t2 = e.clone(), t.clone()
    e2.igammac_(e)
    t2.igammac_(t)
    np.testing.assert_allclose(to_np(e2), t2.numpy(), rtol=1e-6)
    assert math.isclose(ember.special.logsumexp(e, 0).item(), torch.special.logsumexp(t, 0).item(),
                        rel_tol=1e-6)
