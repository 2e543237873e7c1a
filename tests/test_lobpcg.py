"""ember.lobpcg against torch.lobpcg: eigenpairs of the same seeded symmetric inputs (basic and
ortho methods, largest and smallest, generalized B, batches, a given X, a tracker), its backward
for B=None (complete and partial eigenspace), and PyTorch's errors."""
import numpy as np
import pytest
import torch

import ember
from helpers import to_np

from ember._lobpcg import _polynomial_coefficients_given_roots


def _spd(seed, m, batch=()):
    """A well-separated symmetric positive definite matrix (NumPy), the same for both sides."""
    rng = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(rng.standard_normal((*batch, m, m)))
    d = np.linspace(1.0, 10.0 * m, m)
    return (Q * d[..., None, :]) @ np.swapaxes(Q, -1, -2)


def _both(a):
    return ember.tensor(a), torch.tensor(a)


def _check_pairs(A, E, X, B=None, atol=1e-6):
    """X's columns are B-normalized eigenvectors of A with eigenvalues E (A X = B X diag(E))."""
    A, E, X = to_np(A), to_np(E), to_np(X)
    BX = X if B is None else B @ X
    np.testing.assert_allclose(A @ X, BX * E[..., None, :], atol=atol * np.abs(E).max())


def _same_vectors(Xe, Xt, atol):
    """Equal eigenvectors up to each column's sign."""
    a, b = to_np(Xe), to_np(Xt)
    sign = np.sign((a * b).sum(-2, keepdims=True))
    np.testing.assert_allclose(a * sign, b, atol=atol)


@pytest.mark.parametrize("method", ["ortho", "basic"])
@pytest.mark.parametrize("largest", [True, False])
def test_eigenpairs_match_pytorch(method, largest):
    a = _spd(0, 30)
    x0 = np.random.default_rng(1).standard_normal((30, 3))
    (Ae, At), (Xe0, Xt0) = _both(a), _both(x0)
    Ee, Xe = ember.lobpcg(Ae, k=2, X=Xe0, largest=largest, method=method, niter=-1, tol=1e-10)
    Et, Xt = torch.lobpcg(At, k=2, X=Xt0, largest=largest, method=method, niter=-1, tol=1e-10)
    assert Ee.dtype == ember.float64 and tuple(Ee.shape) == (2,) and tuple(Xe.shape) == (30, 2)
    np.testing.assert_allclose(to_np(Ee), Et.numpy(), rtol=1e-8)
    _same_vectors(Xe, Xt, 1e-5)
    want = np.linalg.eigvalsh(a)
    np.testing.assert_allclose(to_np(Ee), want[::-1][:2] if largest else want[:2], rtol=1e-8)


def test_generalized_and_preconditioned():
    a, b = _spd(2, 24), _spd(3, 24) / 50 + np.eye(24)
    x0 = np.random.default_rng(4).standard_normal((24, 2))
    ik = np.linalg.inv(a)
    (Ae, At), (Be, Bt), (Xe0, Xt0), (Ke, Kt) = _both(a), _both(b), _both(x0), _both(ik)
    for kw_e, kw_t in [({"B": Be}, {"B": Bt}), ({"iK": Ke}, {"iK": Kt})]:
        Ee, Xe = ember.lobpcg(Ae, X=Xe0, niter=-1, tol=1e-9, **kw_e)
        Et, Xt = torch.lobpcg(At, X=Xt0, niter=-1, tol=1e-9, **kw_t)
        np.testing.assert_allclose(to_np(Ee), Et.numpy(), rtol=1e-7)
        _check_pairs(Ae, Ee, Xe, b if "B" in kw_e else None)


def test_batched_float32_random_start():
    a = _spd(5, 18, batch=(2,)).astype(np.float32)
    Ae, At = _both(a)
    ember.manual_seed(0)
    Ee, Xe = ember.lobpcg(Ae, k=1)
    Et, _ = torch.lobpcg(At, k=1)
    assert Ee.dtype == ember.float32 and tuple(Ee.shape) == (2, 1) and tuple(Xe.shape) == (2, 18, 1)
    # different random starts: the converged eigenvalues agree to the tolerance
    np.testing.assert_allclose(to_np(Ee), Et.numpy(), rtol=1e-3)
    _check_pairs(Ae, Ee, Xe, atol=1e-2)


def test_tracker_and_force_stop():
    a = _spd(6, 21)
    x0 = np.random.default_rng(7).standard_normal((21, 2))
    steps = {}

    def tracker(name):
        def track(worker):
            steps.setdefault(name, []).append((worker.ivars["istep"], worker.ivars["converged_count"],
                                               float(worker.tvars["rerr"].max())))
            if worker.ivars["istep"] == 3:
                worker.bvars["force_stop"] = True
        return track

    (Ae, At), (Xe0, Xt0) = _both(a), _both(x0)
    ember.lobpcg(Ae, X=Xe0, tracker=tracker("ember"))
    torch.lobpcg(At, X=Xt0, tracker=tracker("torch"))
    assert [s[:2] for s in steps["ember"]] == [s[:2] for s in steps["torch"]]
    np.testing.assert_allclose([s[2] for s in steps["ember"]], [s[2] for s in steps["torch"]],
                               rtol=1e-6)


# k eigenpairs of 30: the partial eigenspace's formula (the characteristic polynomial of E at A
# grows as |E|^k, so k stays small for float64 to keep its digits)
@pytest.mark.parametrize("k", [1, 3])
def test_backward_matches_pytorch(k):
    m = 30
    a = _spd(8, m)
    x0 = np.random.default_rng(9).standard_normal((m, k))
    w = np.random.default_rng(10).standard_normal((m, k))
    Ae, At = ember.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    (Xe0, Xt0), (We, Wt) = _both(x0), _both(w)
    Ee, Ve = ember.lobpcg(Ae, X=Xe0, niter=-1, tol=1e-12)
    Et, Vt = torch.lobpcg(At, X=Xt0, niter=-1, tol=1e-12)
    # a loss invariant to the eigenvectors' signs
    (Ee.sum() + ((Ve.mT @ We) ** 2).sum()).backward()
    (Et.sum() + ((Vt.mT @ Wt) ** 2).sum()).backward()
    np.testing.assert_allclose(to_np(Ae.grad), At.grad.numpy(), atol=1e-6)


def test_backward_complete_eigenspace():
    # n == m is refused (m >= 3n), so the complete formula is reached through its helper
    from ember._lobpcg import _symeig_backward
    from torch._lobpcg import _symeig_backward as torch_symeig_backward
    a = _spd(11, 5)
    d, u = np.linalg.eigh(a)
    dg, ug = np.random.default_rng(12).standard_normal(5), np.random.default_rng(13).standard_normal((5, 5))
    args = [_both(v) for v in (dg, ug, a, d, u)]
    got = _symeig_backward(*[e for e, _ in args], largest=True)
    want = torch_symeig_backward(*[t for _, t in args], largest=True)
    np.testing.assert_allclose(to_np(got), want.numpy(), atol=1e-10)


def test_polynomial_coefficients():
    r = np.array([[1.0, -2.0, 3.0], [0.5, 0.0, 2.0]])
    np.testing.assert_allclose(to_np(_polynomial_coefficients_given_roots(ember.tensor(r))),
                               torch._lobpcg._polynomial_coefficients_given_roots(torch.tensor(r)).numpy())


def _raises_like(fe, ft):
    with pytest.raises(Exception) as te:
        ft()
    with pytest.raises(type(te.value)) as ee:
        fe()
    # ember prints its Size as ember.Size
    assert str(ee.value) == str(te.value).replace("torch.Size", "ember.Size")


def test_errors():
    a = _spd(14, 8)
    (Ae, At) = _both(a)
    _raises_like(lambda: ember.lobpcg(Ae, k=3), lambda: torch.lobpcg(At, k=3))
    _raises_like(lambda: ember.lobpcg(Ae[:, :7]), lambda: torch.lobpcg(At[:, :7]))
    _raises_like(lambda: ember.lobpcg(Ae, B=Ae[:4, :4]), lambda: torch.lobpcg(At, B=At[:4, :4]))
    Ag_e, Ag_t = ember.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    for lib, Ag in ((ember, Ag_e), (torch, Ag_t)):
        E, _ = lib.lobpcg(Ag, B=Ag.detach() + 0, k=1, niter=2)
        with pytest.raises(ValueError, match=r"lobpcg.backward does not support backward with B != I yet."):
            E.sum().backward()
