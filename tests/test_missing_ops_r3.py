"""Ops issue 18 still missed (round 3), against PyTorch as the oracle: fractional max pooling,
svd/pca_lowrank, _segment_reduce, the batch-norm variants, matrix_exp, lu_unpack's gradient and
hash_tensor."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def E(t, requires_grad=False):
    """An ember copy of a torch tensor."""
    t = t.detach()
    if t.dtype == torch.bfloat16:
        e = ember.from_numpy(t.float().numpy().copy()).to(ember.bfloat16)
    else:
        e = ember.from_numpy(t.resolve_conj().numpy().copy())
    return e.requires_grad_(True) if requires_grad else e


def N(x):
    """NumPy values of a torch or ember tensor."""
    if isinstance(x, torch.Tensor):
        x = x.detach().resolve_conj()
        return (x.float() if x.dtype == torch.bfloat16 else x).numpy()
    x = x.detach().resolve_conj()
    return (x.float() if x.dtype == ember.bfloat16 else x).numpy()


def same_error(t_fn, e_fn):
    """Both raise, with the same exception type and message."""
    with pytest.raises(Exception) as te:
        t_fn()
    with pytest.raises(type(te.value)) as ee:
        e_fn()
    assert str(ee.value) == str(te.value)


# ---------------------------------------------------------------------------------------------
# fractional_max_pool2d / 3d

FRACTIONAL = [
    (2, (2, 3, 9, 9), (3, 3), (2, 3)),
    (2, (1, 3, 9, 9), (4, 4), (5, 5)),
    (2, (3, 13, 11), (2, 3), (7, 4)),
    (2, (2, 2, 50, 37), (2, 2), (24, 17)),
    (3, (2, 3, 7, 6, 5), (2, 3, 2), (3, 2, 3)),
    (3, (2, 8, 7, 6), (2, 1, 2), (6, 5, 3)),
    (3, (1, 2, 30, 20, 25), (2, 2, 2), (14, 9, 12)),
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("k,shape,kernel,out", FRACTIONAL)
def test_fractional_max_pool_matches_with_same_samples(k, shape, kernel, out, dtype):
    # the interval arithmetic runs in the input's dtype, so half types exercise its rounding
    torch.manual_seed(0)
    x = torch.randn(*shape).to(dtype)
    n = 1 if len(shape) == k + 1 else shape[0]
    rs = torch.rand(n, shape[-k - 1], k).to(dtype)
    o, i = getattr(torch.ops.aten, f"fractional_max_pool{k}d")(x, list(kernel), list(out), rs)
    eo, ei = getattr(ember.ops.aten, f"fractional_max_pool{k}d")(E(x), list(kernel), list(out),
                                                                  E(rs))
    assert eo.dtype == getattr(ember, str(dtype).split(".")[1]) and ei.dtype == ember.int64
    np.testing.assert_array_equal(N(ei), N(i))
    np.testing.assert_array_equal(N(eo), N(o))


@pytest.mark.parametrize("k", [2, 3])
def test_fractional_max_pool_functional_gradient_and_module(k):
    torch.manual_seed(1)
    shape = (2, 3, 8, 7, 9)[: k + 2]
    x = torch.randn(*shape, dtype=torch.float64, requires_grad=True)
    rs = torch.rand(2, 3, k, dtype=torch.float64)
    tf = getattr(torch.nn.functional, f"fractional_max_pool{k}d")
    ef = getattr(ember.nn.functional, f"fractional_max_pool{k}d")
    t_out, t_idx = tf(x, 2, output_ratio=(0.5,) * k, return_indices=True, _random_samples=rs)
    ex = E(x, True)
    e_out, e_idx = ef(ex, 2, output_ratio=(0.5,) * k, return_indices=True, _random_samples=E(rs))
    np.testing.assert_array_equal(N(e_idx), N(t_idx))
    np.testing.assert_array_equal(N(e_out), N(t_out))
    g = torch.randn(t_out.shape, dtype=torch.float64, requires_grad=True)
    eg_in = E(g, True)
    (tg,) = torch.autograd.grad(t_out, x, g, create_graph=True)
    (eg,) = ember.autograd.grad(e_out, ex, eg_in, create_graph=True)
    np.testing.assert_allclose(N(eg), N(tg))
    # double backward through the cotangent (max_pool_double_backward gathers at the indices)
    gg = torch.randn(shape, dtype=torch.float64)
    (t_gg,) = torch.autograd.grad(tg, g, gg)
    (e_gg,) = ember.autograd.grad(eg, eg_in, E(gg))
    np.testing.assert_allclose(N(e_gg), N(t_gg))
    # module with a fixed sample buffer, and without batch dim
    tm = getattr(torch.nn, f"FractionalMaxPool{k}d")(2, output_size=3, _random_samples=rs[:1])
    em = getattr(ember.nn, f"FractionalMaxPool{k}d")(2, output_size=3, _random_samples=E(rs[:1]))
    np.testing.assert_array_equal(N(em(E(x[0]))), N(tm(x[0])))
    # samples drawn by ember itself: shapes, and the maxima are input values at the indices
    out, idx = ef(E(x), (2,) * k, output_size=3, return_indices=True)
    assert tuple(out.shape) == (*shape[:2], *(3,) * k)
    np.testing.assert_array_equal(
        np.take_along_axis(N(x).reshape(*shape[:2], -1), N(idx).reshape(*shape[:2], -1), 2),
        N(out).reshape(*shape[:2], -1))


def test_fractional_max_pool_nan_and_forward_ad():
    x = torch.randn(1, 2, 6, 6, dtype=torch.float64)
    x[0, 0, 1, 1] = float("nan")
    x[0, 0, 2, 2] = float("nan")
    rs = torch.rand(1, 2, 2, dtype=torch.float64)
    o, i = torch.ops.aten.fractional_max_pool2d(x, [3, 3], [3, 3], rs)
    eo, ei = ember.ops.aten.fractional_max_pool2d(E(x), [3, 3], [3, 3], E(rs))
    np.testing.assert_array_equal(N(ei), N(i))  # ATen keeps the last NaN of a window
    np.testing.assert_array_equal(N(eo), N(o))
    import ember.autograd.forward_ad as efwd
    t = torch.randn(x.shape, dtype=torch.float64)
    with torch.autograd.forward_ad.dual_level():
        tt = torch.autograd.forward_ad.unpack_dual(torch.nn.functional.fractional_max_pool2d(
            torch.autograd.forward_ad.make_dual(x, t), 3, 3, _random_samples=rs)).tangent
    with efwd.dual_level():
        et = efwd.unpack_dual(ember.nn.functional.fractional_max_pool2d(
            efwd.make_dual(E(x), E(t)), 3, 3, _random_samples=E(rs))).tangent
    np.testing.assert_array_equal(N(et), N(tt))


def _fmp_error_cases():
    x2, x3 = torch.randn(2, 3, 9, 9), torch.randn(1, 2, 6, 6, 6)
    r2, r3 = torch.rand(2, 3, 2), torch.rand(1, 2, 3)
    f2, f3 = "fractional_max_pool2d", "fractional_max_pool3d"
    return [
        (f2, (x2, [3], [2, 2], r2)), (f2, (x2, [3, 3], [2], r2)),
        (f2, (torch.randn(9, 9), [3, 3], [2, 2], r2)),
        (f2, (torch.randn(1, 0, 9, 9), [3, 3], [2, 2], r2)),
        (f2, (x2, [3, 3], [8, 2], r2)), (f2, (x2, [3, 3], [2, 8], r2)),
        (f2, (x2, [3, 3], [2, 2], torch.rand(2, 3))),
        (f2, (x2, [3, 3], [2, 2], torch.rand(1, 3, 2))),
        (f2, (x2, [3, 3], [2, 2], torch.rand(2, 2, 2))),
        (f2, (x2, [3, 3], [2, 2], torch.rand(2, 3, 3))),
        (f2, (x2, [3, 3], [2, 2], r2.double())),
        (f2, (x2.int(), [3, 3], [2, 2], r2.int())),
        (f3, (x3, [2, 2], [2, 2, 2], r3)), (f3, (x3, [2, 2, 2], [2, 2], r3)),
        (f3, (x3, [2, 2, 2], [6, 2, 2], r3)), (f3, (x3, [2, 2, 2], [2, 6, 2], r3)),
        (f3, (x3, [2, 2, 2], [2, 2, 6], r3)),
        (f3, (torch.randn(6, 6, 6), [2, 2, 2], [2, 2, 2], r3)),
        (f3, (torch.randn(1, 0, 6, 6, 6), [2, 2, 2], [2, 2, 2], r3)),
        (f3, (x3, [2, 2, 2], [2, 2, 2], torch.rand(1, 2, 2))),
        (f3, (x3, [2, 2, 2], [2, 2, 2], torch.rand(1, 1, 3))),
    ]


@pytest.mark.parametrize("case", range(len(_fmp_error_cases())))
def test_fractional_max_pool_errors(case):
    name, args = _fmp_error_cases()[case]
    same_error(lambda: getattr(torch.ops.aten, name)(*args),
               lambda: getattr(ember.ops.aten, name)(*[E(a) if isinstance(a, torch.Tensor)
                                                       else a for a in args]))


def test_fractional_max_pool_backward_errors_and_python_errors():
    x = torch.randn(2, 3, 9, 9)
    o, i = torch.ops.aten.fractional_max_pool2d(x, [3, 3], [2, 2], torch.rand(2, 3, 2))
    b = "fractional_max_pool2d_backward"
    for args in [(torch.randn(2, 3, 2, 3), x, [3, 3], [2, 2], i),
                 (torch.randn(2, 3, 2, 2), x, [3, 3], [2, 3], i),
                 (torch.randn(2, 3, 2, 2).double(), x, [3, 3], [2, 2], i),
                 (torch.randn(2, 3, 2, 2), x, [3, 3], [2, 2], i.int())]:
        same_error(lambda: getattr(torch.ops.aten, b)(*args),
                   lambda: getattr(ember.ops.aten, b)(*[E(a) if isinstance(a, torch.Tensor)
                                                        else a for a in args]))
    x3 = torch.randn(2, 2, 6, 6, 6)
    o, i = torch.ops.aten.fractional_max_pool3d(x3, [2, 2, 2], [2, 2, 2], torch.rand(2, 2, 3))
    b = "fractional_max_pool3d_backward"
    for args in [(torch.randn(2, 2, 2, 2, 3), x3, [2, 2, 2], [2, 2, 2], i),
                 (torch.randn(2, 2, 3, 2, 2), x3, [2, 2, 2], [2, 2, 2], i),
                 (torch.randn(2, 2, 2, 2, 2).double(), x3, [2, 2, 2], [2, 2, 2], i)]:
        same_error(lambda: getattr(torch.ops.aten, b)(*args),
                   lambda: getattr(ember.ops.aten, b)(*[E(a) if isinstance(a, torch.Tensor)
                                                        else a for a in args]))
    ex = E(x)
    for t_call, e_call in [
        (lambda: torch.nn.functional.fractional_max_pool2d(x, 3),
         lambda: ember.nn.functional.fractional_max_pool2d(ex, 3)),
        (lambda: torch.nn.functional.fractional_max_pool2d(x, 3, output_ratio=(.5, .5, .5)),
         lambda: ember.nn.functional.fractional_max_pool2d(ex, 3, output_ratio=(.5, .5, .5))),
        (lambda: torch.nn.functional.fractional_max_pool3d(x3, 2),
         lambda: ember.nn.functional.fractional_max_pool3d(E(x3), 2)),
        (lambda: torch.nn.FractionalMaxPool3d(0, output_size=2),
         lambda: ember.nn.FractionalMaxPool3d(0, output_size=2)),
        (lambda: torch.nn.FractionalMaxPool2d(2, output_size=2, output_ratio=0.5),
         lambda: ember.nn.FractionalMaxPool2d(2, output_size=2, output_ratio=0.5)),
        (lambda: torch.nn.FractionalMaxPool2d(2, output_ratio=1.5),
         lambda: ember.nn.FractionalMaxPool2d(2, output_ratio=1.5)),
        (lambda: torch.nn.FractionalMaxPool2d(2), lambda: ember.nn.FractionalMaxPool2d(2)),
    ]:
        same_error(t_call, e_call)


def test_fractional_max_pool_meta():
    x = ember.empty(2, 3, 9, 9, device="meta")
    o, i = ember.ops.aten.fractional_max_pool2d(x, [3, 3], [4, 5],
                                                ember.empty(2, 3, 2, device="meta"))
    assert o.device.type == "meta" and tuple(o.shape) == (2, 3, 4, 5) and i.dtype == ember.int64
    with pytest.raises(RuntimeError, match="too large"):
        ember.ops.aten.fractional_max_pool2d(x, [3, 3], [8, 5],
                                             ember.empty(2, 3, 2, device="meta"))


# ---------------------------------------------------------------------------------------------
# svd_lowrank / pca_lowrank (torch._lowrank)

def _same_test_matrices(monkeypatch):
    """ember.randn handing out PyTorch's draws: the Gaussian test matrix is the algorithms'
    only randomness, so with PyTorch's draws the results must match PyTorch's."""
    def randn(*size, dtype=None, device=None):
        return E(torch.randn(*size, dtype=getattr(torch, str(dtype).split(".")[1])))
    monkeypatch.setattr(ember, "randn", randn)


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128])
@pytest.mark.parametrize("fn,kwargs", [
    ("svd_lowrank", {"q": 2}), ("svd_lowrank", {"q": 3, "M": True}),
    ("svd_lowrank", {"q": 2, "niter": 0}), ("pca_lowrank", {"q": 2, "center": False}),
    ("pca_lowrank", {"q": 2}), ("pca_lowrank", {"q": 2, "niter": 4})])
@pytest.mark.parametrize("shape", [(5, 4), (2, 3, 6)])
def test_lowrank_matches_pytorch_with_same_test_matrix(monkeypatch, fn, kwargs, dtype, shape):
    _same_test_matrices(monkeypatch)
    torch.manual_seed(0)
    a = torch.randn(*shape[:-1], 2, dtype=dtype)
    b = torch.randn(*shape[:-2], shape[-1], 2, dtype=dtype)
    A = (a @ b.mT).requires_grad_(True)
    t_kw = dict(kwargs)
    if t_kw.get("M"):
        t_kw["M"] = torch.randn(shape[-1], dtype=dtype, requires_grad=True)  # broadcast
    e_kw = {k: (E(v, True) if isinstance(v, torch.Tensor) else v) for k, v in t_kw.items()}
    eA = E(A, True)
    torch.manual_seed(1)
    t_res = getattr(torch, fn)(A, **t_kw)
    torch.manual_seed(1)
    e_res = getattr(ember, fn)(eA, **e_kw)
    # singular vectors are unique up to a sign/phase per column, which LAPACK builds choose
    # differently (PyTorch's MKL, NumPy's OpenBLAS): compare what does not depend on it, as
    # PyTorch's OpInfo does (U V^H and S, and their gradients)
    def invariant(res):
        U, S, V = res
        return U @ V.mH, S
    t_inv, e_inv = invariant(t_res), invariant(e_res)
    for e, t in zip(e_inv, t_inv):
        np.testing.assert_allclose(N(e), N(t), rtol=1e-9, atol=1e-10)
    U, S, V = e_res
    np.testing.assert_allclose(N((U * S.unsqueeze(-2).to(U.dtype)) @ V.mH),
                               N((t_res[0] * t_res[1].unsqueeze(-2).to(t_res[0].dtype))
                                 @ t_res[2].mH), rtol=1e-9, atol=1e-10)
    cots = [torch.randn(t.shape, dtype=t.dtype) for t in t_inv]
    t_in = [A] + [v for v in t_kw.values() if isinstance(v, torch.Tensor)]
    e_in = [eA] + [v for v in e_kw.values() if isinstance(v, ember.Tensor)]
    t_g = torch.autograd.grad(t_inv, t_in, cots)
    e_g = ember.autograd.grad(e_inv, e_in, [E(c) for c in cots])
    for e, t in zip(e_g, t_g):
        np.testing.assert_allclose(N(e), N(t), rtol=1e-7, atol=1e-8)


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128])
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4), (2, 5, 3)])
def test_qr_and_svd_gradients_real_and_complex(dtype, shape):
    # the formulas svd_lowrank differentiates through; complex needs Re diag in qr's syminvadj
    # and the phase term in svd's
    torch.manual_seed(1)
    A = torch.randn(*shape, dtype=dtype, requires_grad=True)
    eA = E(A, True)
    U, S, Vh = torch.linalg.svd(A, full_matrices=False)
    eU, eS, eVh = ember.linalg.svd(eA, full_matrices=False)
    outs, e_outs = (U @ Vh, S), (eU @ eVh, eS)
    cots = [torch.randn(o.shape, dtype=o.dtype) for o in outs]
    t_g = torch.autograd.grad(outs, A, cots)[0]
    e_g = ember.autograd.grad(e_outs, eA, [E(c) for c in cots])[0]
    np.testing.assert_allclose(N(e_g), N(t_g), rtol=1e-9, atol=1e-12)
    if shape[-2] >= shape[-1]:
        Q, R = torch.linalg.qr(A)
        eQ, eR = ember.linalg.qr(eA)
        cots = [torch.randn(Q.shape, dtype=dtype), torch.randn(R.shape, dtype=dtype)]
        t_g = torch.autograd.grad((Q, R), A, cots)[0]
        e_g = ember.autograd.grad((eQ, eR), eA, [E(c) for c in cots])[0]
        np.testing.assert_allclose(N(e_g), N(t_g), rtol=1e-9, atol=1e-12)
    if dtype.is_complex:  # a loss that depends on the singular vectors' phase
        with pytest.raises(RuntimeError, match="e\\^\\{i phi\\}"):
            eU2 = ember.linalg.svd(eA, full_matrices=False)[0]
            ember.autograd.grad(eU2.real.sum(), eA)


def test_lowrank_own_draws_sign_invariant_results_and_errors():
    torch.manual_seed(0)
    A = torch.randn(2, 6, 2, dtype=torch.float64) @ torch.randn(2, 2, 4, dtype=torch.float64)
    U, S, V = torch.svd_lowrank(A, q=2)
    eU, eS, eV = ember.svd_lowrank(E(A), q=2)
    np.testing.assert_allclose(N(eS), N(S), rtol=1e-10)
    np.testing.assert_allclose(N(eU @ eV.mH), N(U @ V.mH), rtol=1e-9, atol=1e-10)
    for t_call, e_call in [(lambda: torch.pca_lowrank(A, q=5), lambda: ember.pca_lowrank(E(A), q=5)),
                           (lambda: torch.pca_lowrank(A, niter=-1),
                            lambda: ember.pca_lowrank(E(A), niter=-1))]:
        same_error(t_call, e_call)
    # q defaults to min(6, m, n)
    assert [tuple(r.shape) for r in ember.pca_lowrank(E(A))] == \
        [tuple(r.shape) for r in torch.pca_lowrank(A)] == [(2, 6, 4), (2, 4), (2, 4, 4)]
    # integer and bfloat16 inputs work in float32, as get_floating_dtype says
    import ember._linalg_utils as eu
    assert eu.get_floating_dtype(ember.ones(2, dtype=ember.bfloat16)) == ember.float32
    assert eu.get_floating_dtype(ember.ones(2, dtype=ember.float16)) == ember.float16
    assert not eu.is_sparse(E(A))


# ---------------------------------------------------------------------------------------------
# segment_reduce / _segment_reduce_backward

SEGMENT_CASES = [  # data shape, axis, lengths, unsafe
    ((5,), 0, [0, 1, 2, 2], False),
    ((5,), 0, [2, 0, 3, 0], False),
    ((10, 5, 5), 0, [1, 2, 0, 6, 0], True),  # lengths cover only part of the axis
    ((5, 5), 1, [[2, 0, 3, 0], [0, 1, 2, 2], [3, 0, 2, 0], [1, 1, 1, 2], [0, 1, 2, 2]], False),
    ((5, 5, 3), -2, [[2, 0, 3, 0], [0, 1, 2, 2], [3, 0, 2, 0], [1, 1, 1, 2], [0, 1, 2, 2]],
     False),
]


def _segment_kwargs(lengths, axis, mode, unsafe, initial):
    lengths_t = torch.tensor(lengths, dtype=torch.long)
    kw = {"axis": axis, "unsafe": unsafe, "initial": initial}
    if mode == "lengths":
        kw["lengths"] = lengths_t
    else:
        zeros = list(lengths_t.shape)
        zeros[-1] = 1
        kw["offsets"] = torch.cat((lengths_t.new_zeros(zeros), lengths_t), -1).cumsum(-1)
    return kw


@pytest.mark.parametrize("initial", [None, 2, -1.5])
@pytest.mark.parametrize("reduce", ["max", "amin", "mean", "sum", "prod"])
@pytest.mark.parametrize("mode", ["lengths", "offsets"])
@pytest.mark.parametrize("case", range(len(SEGMENT_CASES)))
def test_segment_reduce_matches_pytorch(case, mode, reduce, initial):
    shape, axis, lengths, unsafe = SEGMENT_CASES[case]
    torch.manual_seed(case)
    x = torch.randn(*shape, dtype=torch.float64)
    # ties, zeros and NaNs exercise the max/min sharing and prod's explicit products
    x.view(-1)[1] = x.view(-1)[0]
    x.view(-1)[3] = 0.0
    if case == 3:
        x.view(-1)[7] = float("nan")
    x.requires_grad_(True)
    kw = _segment_kwargs(lengths, axis, mode, unsafe, initial)
    t_out = torch._segment_reduce(x, reduce, **kw)
    ex = E(x, True)
    e_out = ember._segment_reduce(ex, reduce, **{k: E(v) if isinstance(v, torch.Tensor) else v
                                                 for k, v in kw.items()})
    assert e_out.dtype == ember.float64 and tuple(e_out.shape) == tuple(t_out.shape)
    np.testing.assert_allclose(N(e_out), N(t_out), rtol=1e-12, atol=1e-12)
    g = torch.randn(t_out.shape, dtype=torch.float64)
    (tg,) = torch.autograd.grad(t_out, x, g)
    (eg,) = ember.autograd.grad(e_out, ex, E(g))
    np.testing.assert_allclose(N(eg), N(tg), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_segment_reduce_low_precision_and_int32_lengths(dtype):
    x = torch.randn(4, 7).to(dtype)
    lengths = torch.tensor([[3, 0, 4]] * 4, dtype=torch.int32)
    for reduce in ("sum", "mean", "max"):
        t = torch._segment_reduce(x, reduce, lengths=lengths, axis=1)
        e = ember._segment_reduce(E(x), reduce, lengths=E(lengths), axis=1)
        assert e.dtype == getattr(ember, str(dtype).split(".")[1])
        np.testing.assert_allclose(N(e), N(t), rtol=1e-2, atol=1e-2)


def test_segment_reduce_errors_and_meta():
    x = torch.randn(5)
    L = torch.tensor([2, 3])
    f = torch._segment_reduce
    cases = [((x, "foo"), {"lengths": L}), ((x, "sum"), {}),
             ((x, "sum"), {"lengths": L, "indices": L}),
             ((x, "sum"), {"lengths": torch.tensor([2, 2])}),
             ((x, "sum"), {"lengths": torch.tensor([-1, 6])}),
             ((x, "sum"), {"lengths": L, "axis": 1}),
             ((torch.randn(2, 5), "sum"), {"lengths": L, "axis": 1}),
             ((x.long(), "sum"), {"lengths": L}),
             ((x, "sum"), {"lengths": L.float()}),
             ((x, "sum"), {"lengths": torch.tensor([[2, 3]])}),
             ((x, "sum"), {"offsets": torch.tensor([3, 2, 5])})]
    for args, kw in cases:
        same_error(lambda: f(*args, **kw),
                   lambda: ember._segment_reduce(*[E(a) if isinstance(a, torch.Tensor) else a
                                                   for a in args],
                                                 **{k: E(v) if isinstance(v, torch.Tensor) else v
                                                    for k, v in kw.items()}))
    out = f(x, "sum", lengths=L)
    same_error(lambda: torch.ops.aten._segment_reduce_backward(out.double(), out, x, "sum",
                                                               lengths=L),
               lambda: ember.ops.aten._segment_reduce_backward(E(out.double()), E(out), E(x),
                                                               "sum", lengths=E(L)))
    m = ember.segment_reduce(ember.empty(3, 6, device="meta"), "sum",
                             offsets=ember.empty(3, 4, dtype=ember.int64, device="meta"), axis=1)
    assert m.device.type == "meta" and tuple(m.shape) == (3, 3)


# ---------------------------------------------------------------------------------------------
# The batch-norm entry points around native_batch_norm

def _bn_inputs():
    torch.manual_seed(3)
    x = torch.randn(4, 3, 5, dtype=torch.float64, requires_grad=True)
    w = torch.randn(3, dtype=torch.float64, requires_grad=True)
    b = torch.randn(3, dtype=torch.float64, requires_grad=True)
    rm = torch.randn(3, dtype=torch.float64)
    rv = torch.rand(3, dtype=torch.float64) + 0.5
    return x, w, b, rm, rv


@pytest.mark.parametrize("name,extra", [
    ("_native_batch_norm_legit", (True, 0.3, 1e-5)),
    ("_native_batch_norm_legit", (False, 0.3, 1e-5)),
    ("_native_batch_norm_legit_no_training", (0.3, 1e-5)),
    ("_native_batch_norm_legit_functional", (True, 0.3, 1e-5)),
    ("_batch_norm_with_update", (0.3, 1e-5)),
    ("_batch_norm_with_update_functional", (0.3, 1e-5)),
    ("_batch_norm_no_update", (0.3, 1e-5)),
])
def test_batch_norm_variants_match_pytorch(name, extra):
    x, w, b, rm, rv = _bn_inputs()
    ex, ew, eb, erm, erv = E(x, True), E(w, True), E(b, True), E(rm), E(rv)
    t_res = getattr(torch.ops.aten, name)(x, w, b, rm, rv, *extra)
    e_res = getattr(ember.ops.aten, name)(ex, ew, eb, erm, erv, *extra)
    assert len(e_res) == len(t_res)
    for e, t in zip(e_res, t_res):
        assert str(e.dtype).split(".")[1] == str(t.dtype).split(".")[1]
        assert tuple(e.shape) == tuple(t.shape)
        np.testing.assert_allclose(N(e), N(t), rtol=1e-12, atol=1e-12)
        assert (e.grad_fn is None) == (t.grad_fn is None)
    # the running statistics: updated in place, or untouched by the functional forms
    np.testing.assert_allclose(N(erm), N(rm), rtol=1e-12)
    np.testing.assert_allclose(N(erv), N(rv), rtol=1e-12)
    assert type(e_res[0].grad_fn).__name__ == type(t_res[0].grad_fn).__name__
    g = torch.randn(x.shape, dtype=torch.float64)
    t_g = torch.autograd.grad(t_res[0], (x, w, b), g)
    e_g = ember.autograd.grad(e_res[0], (ex, ew, eb), E(g))
    for e, t in zip(e_g, t_g):
        np.testing.assert_allclose(N(e), N(t), rtol=1e-10, atol=1e-12)


def test_batch_norm_no_stats_backward_op_and_top_level_names():
    x, w, b, _, _ = _bn_inputs()
    t_res = torch._native_batch_norm_legit(x, w, b, True, 0.1, 1e-5)
    e_res = ember._native_batch_norm_legit(E(x), E(w), E(b), True, 0.1, 1e-5)
    for e, t in zip(e_res, t_res):
        np.testing.assert_allclose(N(e), N(t), rtol=1e-12, atol=1e-12)
    assert hasattr(ember, "_native_batch_norm_legit_no_training")
    assert not hasattr(ember, "_batch_norm_with_update")  # ops.aten only, as in PyTorch
    g = torch.randn(x.shape, dtype=torch.float64)
    mask = [True, True, True]
    t_b = torch.ops.aten.batch_norm_backward(g, x, w, None, None, t_res[1], t_res[2], True, 1e-5,
                                             mask, torch.empty(0, dtype=torch.uint8))
    e_b = ember.ops.aten.batch_norm_backward(E(g), E(x), E(w), None, None, e_res[1], e_res[2],
                                             True, 1e-5, mask, ember.empty(0, dtype=ember.uint8))
    for e, t in zip(e_b, t_b):
        np.testing.assert_allclose(N(e), N(t), rtol=1e-10, atol=1e-12)
    with pytest.raises(RuntimeError, match="running_mean and running_var must be defined"):
        ember._native_batch_norm_legit(E(x), E(w), E(b), False, 0.1, 1e-5)
    m = ember.ops.aten._batch_norm_with_update(
        ember.empty(4, 3, 5, device="meta"), None, None, ember.empty(3, device="meta"),
        ember.empty(3, device="meta"), 0.1, 1e-5)
    assert [tuple(t.shape) for t in m] == [(4, 3, 5), (3,), (3,), (0,)]
    assert m[3].dtype == ember.uint8 and m[0].device.type == "meta"


# ---------------------------------------------------------------------------------------------
# matrix_exp (ATen's Taylor scheme, bit for bit in float32/64) and lu_unpack's gradient

@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("scale", [1e-9, 1e-5, 3e-3, 0.05, 0.3, 1.0, 3.0, 8.0])
@pytest.mark.parametrize("shape", [(4, 4), (1, 3, 3), (3, 5, 5), (9, 9)])
def test_matrix_exp_matches_pytorch_exactly(shape, scale, dtype):
    # every degree (1, 2, 4, 8, 12, 18 + squaring), single matrices and batches (degree 18)
    torch.manual_seed(int(scale * 1000) % 97)
    a = torch.randn(*shape, dtype=dtype) * scale
    t = torch.matrix_exp(a)
    e = ember.matrix_exp(E(a))
    if shape[-1] ** 3 < 400:  # ATen's small products are plain loops, reproduced exactly
        np.testing.assert_array_equal(N(e), N(t))
    else:  # BLAS (MKL there, OpenBLAS here) rounds differently
        tol = 1e-5 if dtype == torch.float32 else 1e-12
        np.testing.assert_allclose(N(e), N(t), rtol=tol, atol=tol * np.abs(N(t)).max())
    np.testing.assert_array_equal(N(E(a).matrix_exp()), N(e))
    np.testing.assert_array_equal(N(ember.linalg.matrix_exp(E(a))), N(e))


def test_matrix_exp_special_cases():
    a = torch.randn(2, 4, 4, dtype=torch.complex128)
    np.testing.assert_allclose(N(ember.matrix_exp(E(a))), N(torch.matrix_exp(a)), rtol=1e-10)
    one = torch.randn(3, 1, 1)
    np.testing.assert_allclose(N(ember.matrix_exp(E(one))), N(torch.matrix_exp(one)), rtol=1e-6)
    nan = torch.full((3, 3), float("nan"))
    assert np.isnan(N(ember.matrix_exp(E(nan)))).all()
    assert ember.matrix_exp(ember.empty(0, 2, 2)).shape == (0, 2, 2)
    x = torch.randn(3, 3, dtype=torch.float64, requires_grad=True)
    ex = E(x, True)
    g = torch.randn(3, 3, dtype=torch.float64)
    np.testing.assert_allclose(N(ember.autograd.grad(ember.matrix_exp(ex), ex, E(g))[0]),
                               N(torch.autograd.grad(torch.matrix_exp(x), x, g)[0]), rtol=1e-10)


def test_lu_unpack_gradient_and_differentiability():
    torch.manual_seed(0)
    A = torch.randn(2, 4, 3, dtype=torch.float64, requires_grad=True)
    LU, piv = torch.linalg.lu_factor(A)
    P, L, U = torch.lu_unpack(LU, piv)
    eA = E(A, True)
    eLU, epiv = ember.linalg.lu_factor(eA)
    eP, eL, eU = ember.lu_unpack(eLU, epiv)
    assert not eP.requires_grad and eL.requires_grad and eU.requires_grad
    gL, gU = torch.randn(L.shape, dtype=torch.float64), torch.randn(U.shape, dtype=torch.float64)
    t_g = torch.autograd.grad((L, U), A, (gL, gU))[0]
    e_g = ember.autograd.grad((eL, eU), eA, (E(gL), E(gU)))[0]
    np.testing.assert_allclose(N(e_g), N(t_g), rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------------------------------------
# hash_tensor, and the uint16/32/64 dtypes its result needs

@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16,
                                   torch.int8, torch.uint8, torch.int32, torch.int64,
                                   torch.bool])
@pytest.mark.parametrize("dim,keepdim", [((), False), ((), True), (1, False), ([0, 2], True),
                                         (-1, False)])
def test_hash_tensor_matches_pytorch(dtype, dim, keepdim):
    torch.manual_seed(0)
    x = (torch.randn(3, 4, 5) * 100).to(dtype)
    if dtype.is_floating_point:
        x.view(-1)[0] = float("nan")
        x.view(-1)[1] = -0.0
    t = torch.hash_tensor(x, dim, keepdim=keepdim)
    e = ember.hash_tensor(E(x), dim, keepdim=keepdim)
    assert e.dtype == ember.uint64 and tuple(e.shape) == tuple(t.shape)
    np.testing.assert_array_equal(e.numpy(), t.numpy())
    np.testing.assert_array_equal(E(x).hash_tensor(dim, keepdim=keepdim).numpy(), t.numpy())


def test_hash_tensor_errors_meta_and_no_grad():
    cases = [((torch.empty(0),), {}), ((torch.empty(0, 3), 0), {}), ((torch.ones(2, 3), 5), {}),
             ((torch.ones(2, 3), [0, 0]), {}), ((torch.ones(2),), {"mode": 1}),
             ((torch.ones(2, dtype=torch.complex64),), {}),
             ((torch.ones(2, dtype=torch.complex64),), {"mode": 1}),
             ((torch.ones(2, dtype=torch.uint64),), {})]
    for args, kw in cases:
        same_error(lambda: torch.hash_tensor(*args, **kw),
                   lambda: ember.hash_tensor(*[E(a) if isinstance(a, torch.Tensor) else a
                                               for a in args], **kw))
    np.testing.assert_array_equal(ember.hash_tensor(ember.ones(0, 3), 1).numpy(),
                                  torch.hash_tensor(torch.ones(0, 3), 1).numpy())
    x = ember.randn(3, 4, requires_grad=True)
    assert not ember.hash_tensor(x).requires_grad
    m = ember.hash_tensor(ember.empty(3, 4, device="meta"), 0, keepdim=True)
    assert m.dtype == ember.uint64 and tuple(m.shape) == (1, 4) and m.device.type == "meta"


def test_barebones_unsigned_dtypes():
    for name in ("uint16", "uint32", "uint64"):
        e_dt, t_dt = getattr(ember, name), getattr(torch, name)
        assert str(e_dt) == f"ember.{name}" and not e_dt.is_signed
        assert ember.iinfo(e_dt).max == torch.iinfo(t_dt).max
        big = torch.iinfo(t_dt).max
        e = ember.tensor([big, 3], dtype=e_dt)
        assert e.tolist() == torch.tensor([big, 3], dtype=t_dt).tolist()
        assert (e == 3).tolist() == [False, True]
        assert e.to(ember.float64).tolist() == [float(big), 3.0]
        # c10 promotes them only with floating types
        assert ember.promote_types(e_dt, ember.float16) is ember.float16
        same_error(lambda: torch.promote_types(t_dt, torch.int64),
                   lambda: ember.promote_types(e_dt, ember.int64))
    a = np.array([1, 2], dtype=np.uint32)
    assert ember.from_numpy(a).dtype == ember.uint32
    same_error(lambda: torch.from_numpy(np.array(["a"], dtype=object)),
               lambda: ember.from_numpy(np.array(["a"], dtype=object)))


def test_unsigned_dtypes_save_and_load_like_pytorch():
    import io
    x = ember.tensor([[2 ** 64 - 1, 3], [7, 8]], dtype=ember.uint64)[:, 1]
    buf = io.BytesIO()
    ember.save({"a": x, "b": ember.ones(2)}, buf)
    buf.seek(0)
    back = ember.load(buf)
    assert back["a"].dtype == ember.uint64 and back["a"].tolist() == [3, 8]
    buf.seek(0)
    assert torch.load(buf)["a"].tolist() == [3, 8]  # PyTorch reads it (_rebuild_tensor_v3)
    for t in (torch.tensor([2 ** 63, 1], dtype=torch.uint64),
              torch.tensor([2, 1], dtype=torch.uint32), torch.tensor([5], dtype=torch.uint16)):
        tb = io.BytesIO()
        torch.save(t, tb)
        tb.seek(0)
        e = ember.load(tb)
        assert str(e.dtype) == str(t.dtype).replace("torch", "ember") and e.tolist() == t.tolist()


def test_batch_norm_out_variants():
    x, w, b, rm, rv = _bn_inputs()
    x = x.detach()
    for name, overload, args in [
            ("_native_batch_norm_legit", "out", (x, w, b, rm.clone(), rv.clone(), True, 0.1, 1e-5)),
            ("_native_batch_norm_legit", "no_stats_out", (x, w, b, True, 0.1, 1e-5)),
            ("_native_batch_norm_legit_no_training", "out", (x, w, b, rm, rv, 0.1, 1e-5)),
            ("_batch_norm_with_update", "out", (x, w, b, rm.clone(), rv.clone(), 0.1, 1e-5)),
            ("_batch_norm_no_update", "out", (x, w, b, rm, rv, 0.1, 1e-5))]:
        t_op = getattr(getattr(torch.ops.aten, name), overload)
        e_op = getattr(getattr(ember.ops.aten, name), overload)
        assert str(e_op._schema) == str(t_op._schema)
        names = [a.name for a in t_op._schema.arguments if a.kwarg_only]
        t_outs = {n: torch.empty(0, dtype=torch.uint8 if n in ("reserve", "out3") else x.dtype)
                  for n in names}
        e_outs = {n: ember.empty(0, dtype=ember.uint8 if n in ("reserve", "out3") else
                                 ember.float64) for n in names}
        t_op(*[a.detach() if isinstance(a, torch.Tensor) else a for a in args], **t_outs)
        e_op(*[E(a) if isinstance(a, torch.Tensor) else a for a in args], **e_outs)
        for n in names:
            np.testing.assert_allclose(N(e_outs[n]), N(t_outs[n]), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128])
def test_matrix_exp_backward_op(dtype):
    torch.manual_seed(2)
    a, g = torch.randn(2, 4, 4, dtype=dtype), torch.randn(2, 4, 4, dtype=dtype)
    t = torch.ops.aten.matrix_exp_backward(a, g)
    e = ember.ops.aten.matrix_exp_backward(E(a), E(g))
    np.testing.assert_allclose(N(e), N(t), rtol=1e-10, atol=1e-12)
    assert str(ember.ops.aten.matrix_exp_backward.default._schema) == \
        str(torch.ops.aten.matrix_exp_backward.default._schema)
