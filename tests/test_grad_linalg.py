"""Linear algebra: gradients against PyTorch's (float64) and gradcheck; the outputs the OpInfo
table cannot compare element-wise (singular vectors, eigenvectors, Q: unique only up to sign;
complex eigenpairs) checked by reconstruction; LinAlgError; einsum's opt_einsum switch; matmul's
aten ops."""
import numpy as np
import pytest

import ember
from helpers import assert_same, to_np

_rng = np.random.default_rng(11)


def _arr(*shape):
    return _rng.standard_normal(shape)


def _well(n, batch=()):
    return _rng.standard_normal(batch + (n, n)) + n * np.eye(n)


def _spd(n):
    a = _rng.standard_normal((n, n))
    return a @ a.T + n * np.eye(n)


def _grads(lib, fn, arrays):
    ins = [lib.tensor(a, dtype=lib.float64, requires_grad=True) for a in arrays]
    out = fn(lib, *ins)
    outs = out if isinstance(out, (tuple, list)) else [out]
    total = 0
    for i, o in enumerate(outs):
        w = np.random.default_rng(i).standard_normal(tuple(o.shape))
        total = total + (o * lib.tensor(w, dtype=lib.float64)).sum()
    total.backward()
    return [t.grad for t in ins]


def _sym(lib, a):
    return (a + a.transpose(-2, -1)) / 2


CASES = {
    "baddbmm": (lambda L, s, a, b: L.baddbmm(s, a, b, beta=0.5, alpha=2),
                [_arr(3, 5), _arr(2, 3, 4), _arr(2, 4, 5)]),
    "addbmm": (lambda L, s, a, b: L.addbmm(s, a, b, alpha=2), [_arr(5), _arr(2, 3, 4), _arr(2, 4, 5)]),
    "addmv": (lambda L, s, m, v: L.addmv(s, m, v, beta=2), [_arr(3), _arr(3, 4), _arr(4)]),
    "vdot": (lambda L, a, b: L.vdot(a, b), [_arr(4), _arr(4)]),
    "inner": (lambda L, a, b: L.inner(a, b), [_arr(2, 3), _arr(4, 3)]),
    "outer": (lambda L, a, b: L.outer(a, b), [_arr(2), _arr(3)]),
    "tensordot": (lambda L, a, b: L.tensordot(a, b, ([1, 2], [1, 0])), [_arr(2, 3, 4), _arr(4, 3, 5)]),
    "kron": (lambda L, a, b: L.kron(a, b), [_arr(2, 3), _arr(2, 2)]),
    "multi_dot": (lambda L, a, b, c: L.linalg.multi_dot([a, b, c]), [_arr(3), _arr(3, 4), _arr(4, 2)]),
    "einsum": (lambda L, a, b, c: L.einsum("ij,jk,kl->il", a, b, c),
               [_arr(2, 3), _arr(3, 8), _arr(8, 2)]),
    "einsum_diag": (lambda L, a, b: L.einsum("bii,bj->bj", a, b), [_arr(2, 3, 3), _arr(2, 4)]),
    "matmul_batched": (lambda L, a, b: L.matmul(a, b), [_arr(4, 1, 2, 3), _arr(5, 3, 2)]),
    "matmul_vec": (lambda L, a, b: L.matmul(a, b), [_arr(3), _arr(5, 3, 4)]),
    "inv": (lambda L, a: L.linalg.inv(a), [_well(3, (2,))]),
    "det": (lambda L, a: L.linalg.det(a), [_well(3, (2,))]),
    "slogdet": (lambda L, a: L.linalg.slogdet(a)[1], [_well(3)]),
    "logdet": (lambda L, a: L.logdet(a), [_spd(3)]),
    "solve": (lambda L, a, b: L.linalg.solve(a, b), [_well(3), _arr(3, 2)]),
    "solve_right": (lambda L, a, b: L.linalg.solve(a, b, left=False), [_well(3), _arr(2, 3)]),
    "cholesky": (lambda L, a: L.linalg.cholesky(_sym(L, a)), [_spd(3)]),
    "cholesky_upper": (lambda L, a: L.linalg.cholesky(_sym(L, a), upper=True), [_spd(3)]),
    "svdvals": (lambda L, a: L.linalg.svdvals(a), [_arr(4, 3)]),
    "eigvalsh": (lambda L, a: L.linalg.eigvalsh(_sym(L, a)), [_spd(3)]),
    "vector_norm_2": (lambda L, a: L.linalg.vector_norm(a), [_arr(3, 4)]),
    "vector_norm_3_dim": (lambda L, a: L.linalg.vector_norm(a, 3, dim=1), [_arr(3, 4)]),
    "vector_norm_inf": (lambda L, a: L.linalg.vector_norm(a, float("inf"), dim=0), [_arr(3, 4)]),
    "vector_norm_1": (lambda L, a: L.linalg.vector_norm(a, 1, dim=(0, 1), keepdim=True),
                      [_arr(3, 4)]),
    "matrix_norm_fro": (lambda L, a: L.linalg.matrix_norm(a), [_arr(3, 4)]),
    "matrix_norm_nuc": (lambda L, a: L.linalg.matrix_norm(a, "nuc"), [_arr(3, 4)]),
    "matrix_norm_1": (lambda L, a: L.linalg.matrix_norm(a, 1), [_arr(3, 4)]),
    "pinv": (lambda L, a: L.linalg.pinv(a), [_arr(4, 3)]),
    "matrix_power": (lambda L, a: L.linalg.matrix_power(a, -2), [_well(3)]),
    "lstsq": (lambda L, a, b: L.linalg.lstsq(a, b).solution, [_arr(5, 3), _arr(5, 2)]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradient_matches_pytorch(torch, name):
    fn, arrays = CASES[name]
    for e, t in zip(_grads(ember, fn, arrays), _grads(torch, fn, arrays)):
        assert_same(e, t, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("ord", [0.5, 1.5, 2.0, 3.0, float("inf")])
def test_vector_norm_gradient_is_pytorchs_norm_backward(torch, ord):
    """norm_backward operation for operation: zero elements (p < 1: |x|^(p-1) masked to 0, not
    inf * 0) and zero or NaN vectors as PyTorch's, and in bfloat16 the same roundings
    (``grad * (self / norm)`` for p=2, grad / norm^(p-1) before the product)."""
    x = np.array([[0.0, 0.0, 0.0, 0.0], [1.5, 0.0, -2.0, 0.25], [3.0, -3.0, 0.5, np.nan]])
    x = np.concatenate([x, _rng.standard_normal((21, 4)) * 3])
    g = _rng.standard_normal(24)
    dtypes = {"float64": lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-12)}
    if ord != 0.5:  # (ATen's bfloat16 x ** -0.5 rounds differently in its vector and scalar loops)
        dtypes["bfloat16"] = np.testing.assert_array_equal
    for dtype, check in dtypes.items():
        grads = []
        for lib in (torch, ember):
            t = lib.tensor(x).to(getattr(lib, dtype)).requires_grad_()
            n = lib.linalg.vector_norm(t, ord, dim=1)
            n.backward(lib.tensor(g).to(n.dtype))
            grads.append(t.grad.float().numpy())
        check(grads[1], grads[0])


@pytest.mark.parametrize("name", ["baddbmm", "einsum", "inv", "det", "solve", "cholesky",
                                  "vector_norm_3_dim"])
def test_gradcheck(name):
    fn, arrays = CASES[name]
    ins = tuple(ember.tensor(a, dtype=ember.float64, requires_grad=True) for a in arrays)
    assert ember.autograd.gradcheck(lambda *xs: fn(ember, *xs), ins)


def test_svd_qr_eigh_gradients_of_sign_invariant_losses(torch):
    """Losses that do not depend on the vectors' signs have the same gradients as PyTorch's."""
    a, s = _arr(4, 3), _spd(3)
    losses = [
        lambda L, x: (lambda U, S, Vh: (U @ L.diag_embed(S) @ Vh).pow(2).sum() +
                      (U[:, 0:1] * Vh[0:1, :]).pow(2).sum())(*L.linalg.svd(x, False)),
        lambda L, x: (lambda Q, R: (Q @ R).sum() + (Q * Q).sum())(*L.linalg.qr(x)),
        lambda L, x: (lambda w, V: (V * V * w).sum())(*L.linalg.eigh(_sym(L, x))),
    ]
    for loss, x in zip(losses, (a, a, s)):
        g = []
        for lib in (ember, torch):
            t = lib.tensor(x, dtype=lib.float64, requires_grad=True)
            loss(lib, t).backward()
            g.append(t.grad)
        assert_same(g[0], g[1], rtol=1e-6, atol=1e-8)


def test_decompositions_reconstruct(torch):
    a, s = ember.tensor(_arr(2, 4, 3)), ember.tensor(_spd(4))
    U, S, Vh = ember.linalg.svd(a, full_matrices=False)
    np.testing.assert_allclose(to_np(U @ ember.diag_embed(S) @ Vh), to_np(a), atol=1e-5)
    U, S, Vh = ember.linalg.svd(a)
    assert (tuple(U.shape), tuple(Vh.shape)) == ((2, 4, 4), (2, 3, 3))
    Q, R = ember.linalg.qr(a, mode="complete")
    np.testing.assert_allclose(to_np(Q @ R), to_np(a), atol=1e-5)
    assert np.allclose(to_np(R.tril(-1)), 0)
    w, V = ember.linalg.eigh(s)
    np.testing.assert_allclose(to_np(V @ ember.diag_embed(w) @ V.mT), to_np(s), atol=1e-4)
    w, V = ember.linalg.eig(s)
    assert (w.dtype, V.dtype) == (ember.complex128, ember.complex128)  # s is float64
    tw = torch.linalg.eigvals(torch.tensor(to_np(s)))
    np.testing.assert_allclose(np.sort(to_np(ember.linalg.eigvals(s)).real),
                               np.sort(tw.numpy().real), rtol=1e-5)
    U, S, V = ember.svd(a)
    np.testing.assert_allclose(to_np(U @ ember.diag_embed(S) @ V.mT), to_np(a), atol=1e-5)


def test_linalg_errors_are_linalgerror(torch):
    assert issubclass(ember.linalg.LinAlgError, RuntimeError)
    sing = ember.ones(3, 3)
    for fn, msg in ((lambda L, x: L.linalg.inv(x), "singular"),
                    (lambda L, x: L.linalg.solve(x, L.ones(3)), "singular"),
                    (lambda L, x: L.linalg.cholesky(-x), "positive-definite")):
        with pytest.raises(torch.linalg.LinAlgError, match=msg) as t_err:
            fn(torch, torch.ones(3, 3))
        with pytest.raises(ember.linalg.LinAlgError, match=msg) as e_err:
            fn(ember, sing)
        assert str(e_err.value) == str(t_err.value)
    _, info = ember.linalg.inv_ex(sing)
    assert info.item() > 0


def test_einsum_honours_opt_einsum_backend(monkeypatch):
    import ember.backends.opt_einsum as oe
    from ember._kernels.composite import linalg as C
    assert oe.is_available() and oe.enabled and oe.strategy == "auto"
    assert oe.get_opt_einsum().__name__ == "opt_einsum"
    shapes = [(2, 30), (30, 30), (30, 1)]
    ts = [ember.ones(s) for s in shapes]
    subs, out = ["ab", "bc", "cd"], "ad"
    path = C._einsum_path(subs, out, ts)
    assert path == [(1, 2), (0, 1)]  # the cheap product first
    monkeypatch.setattr(oe, "enabled", False)
    assert C._einsum_path(subs, out, ts) == [(0, 1), (0, 1)]  # left to right
    monkeypatch.setattr(oe, "enabled", True)
    monkeypatch.setattr(oe, "strategy", "greedy")
    greedy = oe.get_opt_einsum().contract_path("ab,bc,cd->ad", *shapes, shapes=True,
                                               optimize="greedy")[0]
    assert C._einsum_path(subs, out, ts) == [tuple(p) for p in greedy]
    r = ember.einsum("ab,bc,cd->ad", *ts)
    assert np.allclose(to_np(r), 900.0)


def test_matmul_runs_pytorchs_aten_ops(torch):
    """matmul decomposes into the same aten ops as PyTorch's (expand, reshape, _unsafe_view)."""
    from torch.utils._python_dispatch import TorchDispatchMode
    from ember._dispatch import dispatcher as Dd

    class Rec(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops.append(str(func.overloadpacket.__name__))
            return func(*args, **(kwargs or {}))

    for sa, sb in [((5, 2, 3), (3, 4)), ((2, 3), (5, 3, 4)), ((5, 2, 3), (5, 3, 4))]:
        with Rec() as r:
            torch.matmul(torch.randn(sa), torch.randn(sb))
        a, b = ember.randn(sa), ember.randn(sb)
        obs = _Recorder()
        Dd.add_observer(obs)
        try:
            ember.matmul(a, b)
        finally:
            Dd.remove_observer(obs)
        e_ops = [q.split("::")[1].split(".")[0] for q in obs.ops]
        for op in ("mm", "bmm", "_unsafe_view", "expand"):
            assert (op in r.ops) == (op in e_ops), (sa, sb, op, r.ops, e_ops)


class _Recorder:
    """A dispatcher observer listing the qualified names of the ops called."""

    def __init__(self):
        self.ops = []

    def enter(self, entry, key, label, args):
        self.ops.append(entry.qualname)

    def exit(self, token):
        pass


# Only the values of a decomposition used: PyTorch hands the backward formula undefined
# gradients for the vectors and it leaves their term out; zeros there would still multiply
# 1 / (s_j^2 - s_i^2), infinite at repeated values (0 * inf = NaN).
_REPEATED = [[2., 0., 0.], [0., 2., 0.], [0., 0., 1.]]


@pytest.mark.parametrize("name,fn,a", [
    ("svdvals", lambda m, a: m.linalg.svdvals(a), _REPEATED),
    ("svd_S", lambda m, a: m.linalg.svd(a)[1], _REPEATED),
    ("svd_S_wide_full", lambda m, a: m.linalg.svd(a, full_matrices=True)[1],
     [[1., 0., 0.], [0., 0., 0.]]),
    ("svd_S_tall_reduced", lambda m, a: m.linalg.svd(a, full_matrices=False)[1],
     [[1., 0.], [0., 1.], [0., 0.]]),
    ("svd_U_S", lambda m, a: m.linalg.svd(a)[1] + m.linalg.svd(a)[0].abs().sum(0), _REPEATED),
    ("eigvalsh", lambda m, a: m.linalg.eigvalsh(a), _REPEATED),
    ("eigh_L", lambda m, a: m.linalg.eigh(a)[0], _REPEATED),
    ("eigvals", lambda m, a: m.linalg.eigvals(a).real, _REPEATED),
    ("eig_L", lambda m, a: m.linalg.eig(a)[0].real, _REPEATED),
])
def test_values_only_gradient_skips_unused_vectors(torch, name, fn, a):
    e, t = (lib.tensor(a, dtype=lib.float64, requires_grad=True) for lib in (ember, torch))
    fn(ember, e).sum().backward()
    fn(torch, t).sum().backward()
    np.testing.assert_allclose(to_np(e.grad), t.grad.numpy(), atol=1e-12)


def test_autograd_function_sees_undefined_grads_without_materializing(torch):
    """ctx.set_materialize_grads(False): backward gets None for the unused output."""
    seen = {}
    for lib in (ember, torch):
        class F(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.set_materialize_grads(False)
                return x * 2, x * 3

            @staticmethod
            def backward(ctx, g1, g2):
                seen.setdefault(lib.__name__, []).append((g1 is None, g2 is None))
                return g1 * 2
        x = lib.ones(2, requires_grad=True)
        F.apply(x)[0].sum().backward()
    assert seen["ember"] == seen["torch"] == [(False, True)]
