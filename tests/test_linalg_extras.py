"""Issue 18's linear-algebra additions against PyTorch: LU (factor, unpack, solve), triangular and
Cholesky solves, LDL, geqrf / householder_product / ormqr, matrix_exp, cond, tensorinv /
tensorsolve, vander, vecdot, the legacy names (qr, pinverse, lu, lu_solve, triangular_solve) and
svd_lowrank / pca_lowrank: values, batching, out=, error types and float64 gradients."""
import warnings

import numpy as np
import pytest

import ember
from helpers import to_np

torch = pytest.importorskip("torch")

_rng = np.random.default_rng(18)


def arr(*shape):
    return _rng.standard_normal(shape)


def well(*shape):
    return _rng.standard_normal(shape) + shape[-1] * np.eye(shape[-1])


def tri(*shape, upper=False):
    a = well(*shape)
    return np.triu(a) if upper else np.tril(a)


def spd(*shape):
    a = _rng.standard_normal(shape)
    return a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])


def _mk(lib, a, dtype="float64", grad=False):
    if isinstance(a, np.ndarray):
        return lib.tensor(a, dtype=getattr(lib, dtype), requires_grad=grad)
    return a


def _flat(r):
    return list(r) if isinstance(r, (tuple, list)) else [r]


def same(fn, *arrays, dtype="float64", rtol=1e-7, atol=1e-9, grad=False):
    """fn(lib, *tensors) agrees between ember and PyTorch (every output), and so do the float64
    gradients of a random projection of the differentiable outputs when ``grad``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        es = [_mk(ember, a, dtype, grad) for a in arrays]
        ts = [_mk(torch, a, dtype, grad) for a in arrays]
        er, tr = _flat(fn(ember, *es)), _flat(fn(torch, *ts))
    assert len(er) == len(tr)
    for e, t in zip(er, tr):
        assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], (e.dtype, t.dtype)
        assert tuple(e.shape) == tuple(t.shape), (e.shape, t.shape)
        np.testing.assert_allclose(to_np(e), to_np(t), rtol=rtol, atol=atol)
    if grad:
        le, lt = 0, 0
        for i, (e, t) in enumerate(zip(er, tr)):
            if t.requires_grad:
                assert e.requires_grad
                w = np.random.default_rng(i).standard_normal(tuple(t.shape))
                le = le + (e * ember.tensor(w)).sum()
                lt = lt + (t * torch.tensor(w)).sum()
        le.backward()
        lt.backward()
        for e, t in zip(es, ts):
            if isinstance(t, torch.Tensor) and t.requires_grad:
                np.testing.assert_allclose(to_np(e.grad), to_np(t.grad), rtol=1e-6, atol=1e-8)
    return er


def raises_like(fn, *arrays, dtype="float64", msg=True):
    """ember raises the exception type PyTorch raises (and PyTorch does raise), with the same
    first line of message when ``msg``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(Exception) as te:
            fn(torch, *[_mk(torch, a, dtype) for a in arrays])
        expected = type(te.value)
        if isinstance(te.value, torch.linalg.LinAlgError):
            expected = ember.linalg.LinAlgError
        with pytest.raises(expected) as ee:
            fn(ember, *[_mk(ember, a, dtype) for a in arrays])
    if msg:
        assert str(ee.value).split("\n")[0] == str(te.value).split("\n")[0]


# -- LU ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 3), (5, 3), (3, 5), (2, 0, 3)])
def test_lu_factor_and_unpack(shape):
    a = arr(*shape)
    same(lambda L, x: L.linalg.lu_factor(x), a, dtype="float32", rtol=1e-5, atol=1e-6)
    same(lambda L, x: L.linalg.lu_factor_ex(x), a)
    same(lambda L, x: L.linalg.lu(x), a, grad=True)
    same(lambda L, x: L.lu_unpack(*L.linalg.lu_factor(x)), a, grad=True)
    same(lambda L, x: L.linalg.lu_factor(x)[0], a, grad=True)


def test_lu_unpack_flags_and_errors():
    a = arr(4, 4)
    for flags in ((True, False), (False, True), (False, False)):
        same(lambda L, x: L.lu_unpack(*L.linalg.lu_factor(x), *flags), a)
    raises_like(lambda L, x: L.lu_unpack(x, L.ones(4, dtype=L.int64)), a)
    raises_like(lambda L, x: L.lu_unpack(x, L.full((4,), 9, dtype=L.int32)), a)
    raises_like(lambda L, x: L.lu_unpack(x[0], L.ones(4, dtype=L.int32)), a)


def test_lu_errors_and_singular():
    raises_like(lambda L, x: L.linalg.lu_factor(x), arr(3))
    raises_like(lambda L, x: L.linalg.lu(x), arr(3))
    raises_like(lambda L, x: L.linalg.lu_factor(x), arr(3, 3), dtype="int32")
    raises_like(lambda L, x: L.linalg.lu_factor(x, pivot=False), arr(3, 3))
    raises_like(lambda L, x: L.linalg.lu(x, pivot=False), arr(3, 3))
    raises_like(lambda L, x: L.linalg.lu_factor(x), np.zeros((3, 3)))
    raises_like(lambda L, x: L.linalg.lu_factor(x), np.zeros((2, 3, 3)))
    same(lambda L, x: L.linalg.lu_factor_ex(x), np.zeros((2, 3, 3)))
    with pytest.raises(ember.linalg.LinAlgError):
        ember.linalg.lu_factor_ex(ember.zeros(3, 3), check_errors=True)


@pytest.mark.parametrize("left,adjoint", [(True, False), (True, True), (False, False),
                                          (False, True)])
def test_lu_solve(left, adjoint):
    a = well(2, 3, 3)
    b = arr(4, 2, 3, 2) if left else arr(2, 2, 3)
    same(lambda L, x, y: L.linalg.lu_solve(*L.linalg.lu_factor(x), y, left=left,
                                           adjoint=adjoint), a, b, grad=True)


def test_lu_solve_errors_and_legacy():
    a, b = well(3, 3), arr(3, 2)
    same(lambda L, x, y: L.lu_solve(y, *L.linalg.lu_factor(x)), a, b, grad=True)
    same(lambda L, x, y: y.lu_solve(*L.linalg.lu_factor(x)), a, b)
    fac = (lambda L, x: L.linalg.lu_factor(x))
    raises_like(lambda L, x, y: L.linalg.lu_solve(*fac(L, x), y[:2]), a, b)
    raises_like(lambda L, x, y: L.linalg.lu_solve(*fac(L, x), y, left=False), a, arr(3, 4))
    raises_like(lambda L, x, y: L.linalg.lu_solve(fac(L, x)[0], fac(L, x)[1].long(), y), a, b)
    raises_like(lambda L, x, y: L.linalg.lu_solve(*fac(L, x), y.float()), a, b)
    raises_like(lambda L, x, y: L.linalg.lu_solve(*fac(L, x), y[:, 0]), a, b)
    raises_like(lambda L, x, y: L.linalg.lu_solve(fac(L, x)[0], fac(L, x)[1][:2], y), a, b)


def test_torch_lu():
    a = well(2, 3, 3)
    same(lambda L, x: L.lu(x), a)
    same(lambda L, x: L.lu(x, get_infos=True), a)
    same(lambda L, x: x.lu(get_infos=True), a)
    for lib in (ember, torch):
        x = lib.tensor(a)
        out = (lib.empty(0, dtype=lib.float64), lib.empty(0, dtype=lib.int32))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = lib.lu(x, out=out)
        assert r is out and tuple(out[0].shape) == (2, 3, 3)
    with pytest.raises(TypeError):
        ember.lu(ember.tensor(a), out=(ember.empty(0),))


def test_lu_out():
    a = ember.tensor(well(3, 3))
    P, L, U = (ember.empty(0, dtype=ember.float64) for _ in range(3))
    r = ember.linalg.lu(a, out=(P, L, U))
    assert r[0] is P and ember.allclose(P @ L @ U, a)
    LU, piv = ember.empty(0, dtype=ember.float64), ember.empty(0, dtype=ember.int32)
    ember.linalg.lu_factor(a, out=(LU, piv))
    assert piv.dtype == ember.int32 and tuple(LU.shape) == (3, 3)


# -- triangular and Cholesky solves --------------------------------------------------------------

@pytest.mark.parametrize("upper,left,unit", [(True, True, False), (False, True, True),
                                             (True, False, False), (False, False, True)])
def test_solve_triangular(upper, left, unit):
    a = tri(2, 1, 3, 3, upper=upper)
    b = arr(4, 3, 2) if left else arr(4, 2, 3)
    same(lambda L, x, y: L.linalg.solve_triangular(x, y, upper=upper, left=left,
                                                   unitriangular=unit), a, b, grad=True)
    same(lambda L, x, y: L.linalg.solve_triangular(x, y, upper=upper, left=left),
         a, b, dtype="float32", rtol=1e-4, atol=1e-5)


def test_solve_triangular_errors_out():
    a, b = tri(3, 3), arr(3, 2)
    # the missing keyword-only argument: the binding's TypeError (its wording is the binder's)
    raises_like(lambda L, x, y: L.linalg.solve_triangular(x, y), a, b, msg=False)
    raises_like(lambda L, x, y: L.linalg.solve_triangular(x, y[0], upper=True), a, b)
    raises_like(lambda L, x, y: L.linalg.solve_triangular(x, y[:2], upper=True), a, b)
    raises_like(lambda L, x, y: L.linalg.solve_triangular(x[:2], y, upper=True), a, b)
    same(lambda L, x, y: L.linalg.solve_triangular(x, y.float(), upper=True), a, b, rtol=1e-6)
    same(lambda L, x, y: L.linalg.solve_triangular(x.float(), y, upper=True), a, b, rtol=1e-5)
    raises_like(lambda L, x, y: L.linalg.solve_triangular(x.int(), y.int(), upper=True), a, b)
    out = ember.empty(0, dtype=ember.float64)
    ember.linalg.solve_triangular(ember.tensor(a), ember.tensor(b), upper=False, out=out)
    np.testing.assert_allclose(to_np(out), np.linalg.solve(a, b), rtol=1e-10)


@pytest.mark.parametrize("left", [True, False])
def test_solve_triangular_zero_diagonal_gives_infinities(left):
    # BLAS trsm's division by the zero, as PyTorch's (LAPACK's trtrs refuses the matrix)
    a = np.array([[[1.0, 0, 0], [2, 0, 0], [1, 3, 2]], [[0, 0, 0], [1, 1, 0], [0, 0, 1]]])
    b = arr(2, 3, 2) if left else arr(2, 2, 3)
    for dtype in ("float64", "float32"):
        e, t = [L.linalg.solve_triangular(_mk(L, a, dtype), _mk(L, b, dtype), upper=False,
                                          left=left) for L in (ember, torch)]
        assert np.isinf(to_np(t)).any()
        np.testing.assert_allclose(to_np(e), to_np(t), rtol=1e-5)


def _unrelated_warning():
    warnings.warn("an unrelated warning", UserWarning)


def test_linalg_kernels_leave_the_warnings_registry_alone():
    """A warning shown "once" (or once per place, "default") is not shown again after a linalg
    kernel ran: the kernels change no warning filter, which would reset the registries."""
    singular = ember.tensor([[1.0, 2.0], [2.0, 4.0]])
    ops = [lambda: ember.linalg.inv_ex(singular),
           lambda: ember.linalg.solve_ex(singular, ember.ones(2, 1)),
           lambda: ember.linalg.solve_triangular(singular.tril() - ember.eye(2),
                                                 ember.ones(2, 1), upper=False),
           lambda: ember.cholesky_solve(ember.ones(2, 1), singular.tril()),
           lambda: ember.linalg.det(singular)]
    for action in ("once", "default"):
        with warnings.catch_warnings(record=True) as shown:
            warnings.simplefilter(action)
            _unrelated_warning()
            for op in ops:
                op()
                _unrelated_warning()
        assert [str(w.message) for w in shown] == ["an unrelated warning"], action


@pytest.mark.parametrize("upper,transpose,unit", [(True, False, False), (False, True, False),
                                                  (True, True, True)])
def test_triangular_solve(upper, transpose, unit):
    a = tri(2, 3, 3, upper=upper)
    same(lambda L, b, x: L.triangular_solve(b, x, upper, transpose, unit), arr(3, 2), a,
         grad=True)
    same(lambda L, b, x: b.triangular_solve(x, upper=upper), arr(2, 3, 2), a)


def test_triangular_solve_errors_warning():
    a, b = tri(3, 3, upper=True), arr(3, 2)
    for f in (lambda L, y, x: L.triangular_solve(y[0], x), lambda L, y, x: L.triangular_solve(y, x[:2]),
              lambda L, y, x: L.triangular_solve(y[:2], x),
              lambda L, y, x: L.triangular_solve(y.float(), x),
              lambda L, y, x: L.triangular_solve(y.int(), x.int())):
        raises_like(f, b, a)
    from ember._kernels.cpu import linalg as k
    k._warned.discard("triangular_solve")
    with pytest.warns(UserWarning, match="torch.triangular_solve is deprecated"):
        ember.triangular_solve(ember.tensor(b), ember.tensor(a))


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_solve_inverse(upper):
    A = spd(2, 3, 3)
    c = np.linalg.cholesky(A)
    c = np.swapaxes(c, -1, -2) if upper else c
    same(lambda L, b, u: L.cholesky_solve(b, u, upper), arr(4, 1, 3, 2), c, grad=True)
    same(lambda L, b, u: b.cholesky_solve(u, upper=upper), arr(3, 2), c[0], grad=True)
    same(lambda L, u: L.cholesky_inverse(u, upper), c, grad=True)
    same(lambda L, u: u.cholesky_inverse(upper), c[0], dtype="float32", rtol=1e-4, atol=1e-5)


def test_cholesky_solve_inverse_errors():
    u, b = np.linalg.cholesky(spd(3, 3)), arr(3, 2)
    for f in (lambda L, y, x: L.cholesky_solve(y[0], x), lambda L, y, x: L.cholesky_solve(y, x[:2]),
              lambda L, y, x: L.cholesky_solve(y[:2], x),
              lambda L, y, x: L.cholesky_solve(y.float(), x),
              lambda L, y, x: L.cholesky_solve(y.int(), x.int()),
              lambda L, y, x: L.cholesky_inverse(x[0]), lambda L, y, x: L.cholesky_inverse(x[:2]),
              lambda L, y, x: L.cholesky_inverse(x.int())):
        raises_like(f, b, u)
    same(lambda L, x: L.cholesky_inverse(x), np.zeros((0, 0)))


# -- QR pieces: geqrf, householder_product, ormqr, qr ----------------------------------------------

@pytest.mark.parametrize("shape", [(4, 3), (3, 3), (2, 5, 3), (3, 5)])
def test_geqrf_householder_ormqr(shape):
    a = arr(*shape)
    same(lambda L, x: L.geqrf(x), a, rtol=1e-10)
    same(lambda L, x: x.geqrf(), a, dtype="float32", rtol=1e-4, atol=1e-5)
    m, n = shape[-2:]
    if m >= n:
        same(lambda L, x: L.linalg.householder_product(*L.geqrf(x)), a)
        same(lambda L, x: L.orgqr(*L.geqrf(x)), a)
        # gradients with respect to the reflectors and tau themselves
        h, tau = np.linalg.qr(a, mode="raw")
        same(lambda L, v, t: L.linalg.householder_product(v, t), np.swapaxes(h, -1, -2), tau,
             grad=True)
    h, tau = np.linalg.qr(a, mode="raw")
    v = np.swapaxes(h, -1, -2)
    for left in (True, False):
        for tr in (False, True):
            c = arr(*shape[:-2], m, 2) if left else arr(*shape[:-2], 2, m)
            same(lambda L, x, t, y: L.ormqr(x, t, y, left, tr), v, tau, c, grad=True)


def test_qr_pieces_errors():
    raises_like(lambda L, x: L.geqrf(x), arr(3))
    raises_like(lambda L, x: L.geqrf(x), arr(3, 3), dtype="int32")
    hp = (lambda L, x, t: L.linalg.householder_product(x, t))
    raises_like(hp, arr(3), arr(2))
    raises_like(hp, arr(2, 3), arr(2))
    raises_like(hp, arr(3, 2), arr(3))
    raises_like(lambda L, x, t: L.linalg.householder_product(x, t.double()), arr(3, 2), arr(2),
                dtype="float32")
    raises_like(hp, arr(2, 3, 2), arr(3, 2))
    om = (lambda L, x, t, c: L.ormqr(x, t, c))
    raises_like(om, arr(3), arr(2), arr(3, 3))
    raises_like(om, arr(3, 2), arr(2), arr(3))
    raises_like(om, arr(3, 2), arr(3), arr(3, 3))
    raises_like(om, arr(3, 2), arr(2), arr(4, 3))
    raises_like(lambda L, x, t, c: L.ormqr(x, t, c, left=False), arr(3, 2), arr(2), arr(3, 4))
    raises_like(om, arr(2, 3, 2), arr(3, 2), arr(2, 3, 3))
    with pytest.raises(RuntimeError, match="geqrf"):
        ember.geqrf(ember.tensor(arr(3, 3), requires_grad=True))[0].sum().backward()


def test_qr_legacy():
    a = arr(5, 3)
    for some in (True, False):
        q, r = (to_np(t) for t in ember.qr(ember.tensor(a), some))
        np.testing.assert_allclose(q @ r, a, atol=1e-12)
        assert q.shape == ((5, 3) if some else (5, 5))
    raises_like(lambda L, x: L.qr(x), arr(3))


# -- LDL -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("hermitian", [False, True])
def test_ldl(hermitian):
    a = arr(2, 4, 4)
    a = a + np.swapaxes(a, -1, -2)
    same(lambda L, x: L.linalg.ldl_factor(x, hermitian=hermitian), a)
    same(lambda L, x: L.linalg.ldl_factor_ex(x), a[0], dtype="float32", rtol=1e-5, atol=1e-6)
    same(lambda L, x, b: L.linalg.ldl_solve(*L.linalg.ldl_factor(x), b, hermitian=hermitian),
         a, arr(4, 3))
    same(lambda L, x: L.linalg.ldl_factor_ex(x), np.zeros((3, 3)))


def test_ldl_errors():
    s = arr(3, 3) + arr(3, 3).T
    raises_like(lambda L, x: L.linalg.ldl_factor(x), arr(3))
    raises_like(lambda L, x: L.linalg.ldl_factor(x), arr(2, 3))
    raises_like(lambda L, x: L.linalg.ldl_factor(x), s, dtype="int32")
    # PyTorch reports sytrf's info > 0 through an internal assert: same type, no "INTERNAL ASSERT"
    raises_like(lambda L, x: L.linalg.ldl_factor(x), np.zeros((3, 3)), msg=False)
    fac = (lambda L, x: L.linalg.ldl_factor(x))
    raises_like(lambda L, x, b: L.linalg.ldl_solve(*fac(L, x), b[:2]), s, arr(3, 2))
    raises_like(lambda L, x, b: L.linalg.ldl_solve(*fac(L, x), b.float()), s, arr(3, 2))
    raises_like(lambda L, x, b: L.linalg.ldl_solve(fac(L, x)[0], fac(L, x)[1][:2], b), s,
                arr(3, 2))


# -- matrix_exp, cond, vander, vecdot, tensorinv/tensorsolve, diagonal, pinverse ------------------

def test_matrix_exp():
    a = arr(2, 3, 3) / 2
    same(lambda L, x: L.linalg.matrix_exp(x), a, rtol=1e-10, grad=True)
    same(lambda L, x: L.matrix_exp(x), a, dtype="float32", rtol=1e-5, atol=1e-6)
    same(lambda L, x: x.matrix_exp(), a[0], grad=True)
    same(lambda L, x: L.linalg.matrix_exp(x), np.zeros((0, 0)))
    raises_like(lambda L, x: L.linalg.matrix_exp(x), arr(3))
    raises_like(lambda L, x: L.linalg.matrix_exp(x), arr(2, 3))
    raises_like(lambda L, x: L.linalg.matrix_exp(x), arr(3, 3), dtype="int32")


@pytest.mark.parametrize("p", [None, 2, -2, 1, -1, float("inf"), float("-inf"), "fro", "nuc"])
def test_cond(p):
    a = well(2, 3, 3)
    # PyTorch's own backward fails for the orders computed through the inverse (it fills the
    # inverse in place, then needs it): those gradients are checked numerically
    numeric = p in (1, -1, float("inf"), float("-inf"), "fro")
    same(lambda L, x: L.linalg.cond(x, p), a, grad=not numeric)
    if numeric:
        x = ember.tensor(a, requires_grad=True)
        assert ember.autograd.gradcheck(lambda t: ember.linalg.cond(t, p), (x,))
    same(lambda L, x: L.linalg.cond(x, p), np.zeros((3, 3)))
    same(lambda L, x: L.linalg.cond(x, p), np.zeros((2, 0, 0)))


def test_cond_errors():
    same(lambda L, x: L.linalg.cond(x), arr(2, 3))
    for p in (1, 1.0, float("inf"), "nuc", "fro", "abc", 3):
        raises_like(lambda L, x: L.linalg.cond(x, p), arr(2, 3))
    raises_like(lambda L, x: L.linalg.cond(x), arr(3))
    raises_like(lambda L, x: L.linalg.cond(x), arr(3, 3), dtype="int32")
    out = ember.empty(0)
    assert ember.linalg.cond(ember.tensor(well(3, 3), dtype=ember.float32), out=out) is out


def test_vander_vecdot():
    same(lambda L, x: L.linalg.vander(x), arr(2, 4), grad=True)
    same(lambda L, x: L.linalg.vander(x, N=6), arr(3), grad=True)
    same(lambda L, x: L.linalg.vander(x), np.array([1, 2, 3]), dtype="int64")
    same(lambda L, x: L.linalg.vander(x, N=3), np.array(2.0))
    for f in (lambda L, x: L.linalg.vander(x, N=1), lambda L, x: L.linalg.vander(x.bool())):
        raises_like(f, arr(3))
    same(lambda L, x, y: L.linalg.vecdot(x, y), arr(2, 3), arr(3), grad=True)
    same(lambda L, x, y: L.linalg.vecdot(x, y, dim=0), arr(3, 1), arr(3, 4), grad=True)
    ex, ey = ember.tensor(arr(3) + 1j * arr(3)), ember.tensor(arr(3) + 1j * arr(3))
    tx, ty = torch.tensor(to_np(ex)), torch.tensor(to_np(ey))
    np.testing.assert_allclose(to_np(ember.linalg.vecdot(ex, ey)),
                               torch.linalg.vecdot(tx, ty).numpy(), rtol=1e-12)
    raises_like(lambda L, x, y: L.linalg.vecdot(x, y), arr(3), arr(4))
    raises_like(lambda L, x, y: L.linalg.vecdot(x, y.float()), arr(3), arr(3))
    raises_like(lambda L, x, y: L.linalg.vecdot(x.int(), y.int()), arr(3), arr(3))


def test_tensorinv_tensorsolve_diagonal_pinverse():
    a = well(24, 24).reshape(4, 6, 8, 3)
    same(lambda L, x: L.linalg.tensorinv(x, ind=2), a, grad=True)
    raises_like(lambda L, x: L.linalg.tensorinv(x, ind=0), a)
    raises_like(lambda L, x: L.linalg.tensorinv(x, ind=1), a)
    raises_like(lambda L, x: L.linalg.tensorinv(x), np.zeros((2, 2, 2, 2)))
    s = well(6, 6).reshape(2, 3, 6)
    same(lambda L, x, b: L.linalg.tensorsolve(x, b), s, arr(2, 3), grad=True)
    same(lambda L, x, b: L.linalg.tensorsolve(x, b, dims=(0,)), well(6, 6).reshape(6, 2, 3),
         arr(2, 3), rtol=1e-6)
    raises_like(lambda L, x, b: L.linalg.tensorsolve(x, b), s, arr(6))
    d = same(lambda L, x: L.linalg.diagonal(x, offset=1, dim1=0, dim2=2), arr(3, 2, 4),
             grad=True)[0]
    assert d._base is not None  # a view, as in PyTorch
    same(lambda L, x: L.pinverse(x), arr(3, 4), grad=True)
    same(lambda L, x: x.pinverse(rcond=0.5), arr(2, 4, 3))


# -- low-rank ------------------------------------------------------------------------------------

def test_svd_pca_lowrank():
    a = arr(2, 20, 3) @ arr(2, 3, 12)  # exactly rank 3
    ea = ember.tensor(a)
    for x in (ea, ea.mT):
        U, S, V = ember.svd_lowrank(x, q=5)
        np.testing.assert_allclose(to_np(U @ ember.diag_embed(S) @ V.mT), to_np(x), atol=1e-8)
        np.testing.assert_allclose(to_np(S)[..., :3],
                                   np.linalg.svd(to_np(x), compute_uv=False)[..., :3], rtol=1e-8)
    m = ember.tensor(arr(1, 12))
    U, S, V = ember.svd_lowrank(ea + m, q=4, M=m)
    np.testing.assert_allclose(to_np(U @ ember.diag_embed(S) @ V.mT), a, atol=1e-8)
    U, S, V = ember.pca_lowrank(ea)
    c = a - a.mean(-2, keepdims=True)
    np.testing.assert_allclose(to_np(S)[..., :3], np.linalg.svd(c, compute_uv=False)[..., :3],
                               rtol=1e-8)
    assert tuple(U.shape) == (2, 20, 6) and tuple(V.shape) == (2, 12, 6)
    for kw in ({"q": 13}, {"niter": -1}):
        with pytest.raises(ValueError):
            ember.pca_lowrank(ea, **kw)
        with pytest.raises(ValueError):
            torch.pca_lowrank(torch.tensor(a), **kw)


def test_meta():
    """The Meta kernels give the CPU kernels' shapes and dtypes."""
    a = ember.empty(2, 4, 3, device="meta")
    LU, piv, info = ember.linalg.lu_factor_ex(a)
    assert (tuple(LU.shape), tuple(piv.shape), piv.dtype) == ((2, 4, 3), (2, 3), ember.int32)
    P, L, U = ember.linalg.lu(a)
    assert [tuple(t.shape) for t in (P, L, U)] == [(2, 4, 4), (2, 4, 3), (2, 3, 3)]
    b = ember.empty(3, 3, device="meta")
    assert tuple(ember.linalg.solve_triangular(b, ember.empty(5, 3, 2, device="meta"),
                                               upper=True).shape) == (5, 3, 2)
    assert tuple(ember.linalg.matrix_exp(b).shape) == (3, 3)
    assert tuple(ember.geqrf(a)[1].shape) == (2, 3)


def test_singular_systems_hold_pytorchs_inf_and_nan(torch):
    """A singular matrix in a batch: its inverse / solution is LU's division by the zero pivot
    (inf, nan) as PyTorch's, and the other matrices' are exact (the whole batch used to fall
    back to a pseudo-inverse); solve's shape checks word PyTorch's messages."""
    A = np.stack([[[1.0, 2.0], [2.0, 4.0]], [[2.0, 1.0], [1.0, 3.0]], np.zeros((2, 2))])
    B = np.array([[1.0, 1.0], [2.0, 3.0], [0.5, 1.0]])
    out = {}
    for lib in (ember, torch):
        a, b = lib.tensor(A), lib.tensor(B)
        inv, info = lib.linalg.inv_ex(a)
        x = lib.linalg.solve_ex(a, b).result
        xr = lib.linalg.solve_ex(a, b[:, None, :], left=False).result
        errors = []
        for sa, sb, left in (((2, 2, 2), (2, 2), False), ((3, 3), (2, 3), True),
                             ((1, 1), (1,), False)):
            with pytest.raises(RuntimeError) as e:
                lib.linalg.solve(lib.ones(sa, dtype=lib.float64), lib.ones(sb, dtype=lib.float64),
                                 left=left)
            errors.append(str(e.value))
        out[lib] = [inv.numpy(), info.numpy(), x.numpy(), xr.numpy()], errors
    for mine, theirs in zip(out[ember][0], out[torch][0]):
        np.testing.assert_array_equal(mine, theirs)
    assert out[ember][1] == out[torch][1]
