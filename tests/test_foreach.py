"""The foreach ops against PyTorch (values, dtypes, in-place semantics, version counters, Meta,
errors), and the optimizers' foreach steps against their single-tensor steps."""
import inspect

import numpy as np
import pytest

import ember
import ember.nn as nn
from helpers import assert_same, to_np, to_torch


def _t(torch, e):
    return torch.from_numpy(np.array(to_np(e)))  # keeps 0-dim shapes


RNG = np.random.default_rng(1)
SHAPES = [(3,), (2, 4), (), (0, 2)]


def lists(torch, dtype=np.float32, shapes=SHAPES, positive=False, transposed=False):
    arrays = [RNG.standard_normal(s).astype(dtype) for s in shapes]
    if positive:
        arrays = [np.abs(a) + 0.5 for a in arrays]
    es = [ember.tensor(a) for a in arrays]
    if transposed:  # a non-contiguous element
        es[1] = ember.tensor(arrays[1].T.copy()).t()
    return es, [_t(torch, e) for e in es]


def _inplace_cases(torch):
    return {
        "add_.Scalar": lambda lib, s, o, o2: lib._foreach_add_(s, 1.5),
        "add_.List": lambda lib, s, o, o2: lib._foreach_add_(s, o, alpha=-0.3),
        "mul_.Scalar": lambda lib, s, o, o2: lib._foreach_mul_(s, 0.7),
        "mul_.List": lambda lib, s, o, o2: lib._foreach_mul_(s, o),
        "div_.ScalarList": lambda lib, s, o, o2: lib._foreach_div_(s, [2.0, 3.0, 0.5, 4.0]),
        "lerp_.Scalar low": lambda lib, s, o, o2: lib._foreach_lerp_(s, o, 0.1),
        "lerp_.Scalar high": lambda lib, s, o, o2: lib._foreach_lerp_(s, o, 0.8),
        "addcmul_.Scalar": lambda lib, s, o, o2: lib._foreach_addcmul_(s, o, o2, 0.25),
        "addcdiv_.ScalarList": lambda lib, s, o, o2: lib._foreach_addcdiv_(
            s, o, o2, [0.5, -1.0, 2.0, 3.0]),
        "maximum_.List": lambda lib, s, o, o2: lib._foreach_maximum_(s, o),
        "mul_.Tensor": lambda lib, s, o, o2: lib._foreach_mul_(s, lib.tensor(0.7)),
        "mul_.Tensor int": lambda lib, s, o, o2: lib._foreach_mul_(s, lib.tensor(3)),
        "clamp_min_.Scalar": lambda lib, s, o, o2: lib._foreach_clamp_min_(s, -0.5),
        "clamp_max_.Scalar": lambda lib, s, o, o2: lib._foreach_clamp_max_(s, 0.25),
    }


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int64])
def test_inplace_ops_match_torch(torch, dtype):
    for name, f in _inplace_cases(torch).items():
        if dtype is np.int64 and name.split(" ")[0] in ("lerp_.Scalar", "addcdiv_.ScalarList",
                                                        "add_.Scalar",
                                                        "div_.ScalarList", "mul_.Scalar",
                                                        "add_.List", "addcmul_.Scalar",
                                                        "mul_.Tensor", "clamp_min_.Scalar",
                                                        "clamp_max_.Scalar"):
            continue  # float scalars or ops PyTorch rejects on integers; errors tested below
        (es, ts), (eo, to), (eo2, to2) = (lists(torch, dtype, transposed=True), lists(torch, dtype),
                                          lists(torch, dtype, positive=True))
        versions = [e._version for e in es]
        assert f(ember, es, eo, eo2) is None
        f(torch, ts, to, to2)
        # float16 takes the single-tensor ops (the slow path), whose float16 rounding may differ
        # from PyTorch's by an ulp
        tol = dict(rtol=2e-3, atol=1e-3) if dtype is np.float16 else {}
        for e, t in zip(es, ts):
            assert_same(e, t, **tol), name
        assert [e._version for e in es] == [v + 1 for v in versions], name


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_functional_ops_match_torch(torch, dtype):
    (es, ts), (eo, to) = lists(torch, dtype, positive=True), lists(torch, dtype)
    before = [to_np(e).copy() for e in es]
    for f in (lambda lib: lib._foreach_sqrt(es if lib is ember else ts),
              lambda lib: lib._foreach_neg(es if lib is ember else ts),
              lambda lib: lib._foreach_add(es if lib is ember else ts,
                                           eo if lib is ember else to, alpha=2)):
        er, tr = f(ember), f(torch)
        assert len(er) == len(tr)
        for e, t in zip(er, tr):
            assert_same(e, t)
    for e, b in zip(es, before):  # inputs untouched
        np.testing.assert_array_equal(to_np(e), b)


def test_mixed_dtypes_take_the_single_tensor_path(torch):
    es = [ember.ones(2), ember.ones(2, dtype=ember.float64), ember.ones(2, dtype=ember.int32)]
    ts = [to_torch(torch, e) for e in es]
    ember._foreach_add_(es, 2)
    torch._foreach_add_(ts, 2)
    for e, t in zip(es, ts):
        assert_same(e, t)
    eb, tb = [ember.ones(2, 3)], [torch.ones(2, 3)]  # broadcasting other
    ember._foreach_mul_(eb, [ember.tensor([2.0, 3.0, 4.0])])
    torch._foreach_mul_(tb, [torch.tensor([2.0, 3.0, 4.0])])
    assert_same(eb[0], tb[0])


def test_meta_matches_cpu():
    es = [ember.ones(3, device="meta"), ember.ones(2, 2, dtype=ember.int64, device="meta")]
    assert ember._foreach_mul_(es, 2) is None
    out = ember._foreach_sqrt(es)
    assert [(o.shape, o.dtype, o.device.type) for o in out] == \
        [((3,), ember.float32, "meta"), ((2, 2), ember.float32, "meta")]
    out = ember._foreach_add(es, es, alpha=2)
    assert [(o.shape, o.dtype) for o in out] == [((3,), ember.float32), ((2, 2), ember.int64)]
    with pytest.raises(RuntimeError, match="same number of tensors"):
        ember._foreach_add_(es, es[:1])


def test_errors_match_torch(torch):
    cases = [
        lambda lib: lib._foreach_add_([lib.ones(2)], [lib.ones(2)] * 2),
        lambda lib: lib._foreach_addcdiv_([lib.ones(2)], [lib.ones(2)], [lib.ones(2)], [1.0, 2.0]),
        lambda lib: lib._foreach_lerp_([lib.ones(2, dtype=lib.int64)],
                                       [lib.ones(2, dtype=lib.int64)], 0.5),
        lambda lib: lib._foreach_mul_([lib.ones(2, dtype=lib.int64)], 0.5),
        lambda lib: lib._foreach_add_([lib.ones(2)], [lib.ones(3)]),
        lambda lib: lib._foreach_div_([lib.ones(2)], [1.0, 2.0]),
        lambda lib: lib._foreach_mul_([lib.ones(2)], lib.ones(1)),
        lambda lib: lib._foreach_mul_([lib.ones(2, dtype=lib.int64)], lib.tensor(0.5)),
        lambda lib: lib._foreach_clamp_min_([lib.ones(2, dtype=lib.int64)], 0.5),
        lambda lib: lib._foreach_norm([]),
        lambda lib: lib._foreach_norm([lib.ones(2), lib.zeros(0)], float("inf")),
        lambda lib: lib._foreach_norm([lib.ones(2, dtype=lib.int64)]),
        lambda lib: lib._foreach_norm([lib.ones(2)], 2, dtype=lib.float16),
    ]
    for case in cases:
        with pytest.raises(Exception) as te:
            case(torch)
        with pytest.raises(Exception) as ee:
            case(ember)
        assert type(ee.value) is type(te.value), (ee.value, te.value)
        if "clamp_min" not in inspect.getsource(case):  # PyTorch words its dtype "long int" there
            assert str(ee.value) == str(te.value)


def test_float_tensors_unchanged_after_failed_call():
    es = [ember.ones(2), ember.ones(2)]
    with pytest.raises(RuntimeError):
        ember._foreach_add_(es, [ember.ones(2)])
    assert [to_np(e).tolist() for e in es] == [[1.0, 1.0], [1.0, 1.0]]


# ---- optimizers: the foreach step equals the single-tensor step -------------------------------
X = RNG.standard_normal((6, 4)).astype(np.float32)
Y = RNG.standard_normal((6, 3)).astype(np.float32)


def _model(seed):
    ember.manual_seed(seed)
    return nn.Sequential(nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, 3))


def _train(name, kwargs, foreach, steps=6):
    m = _model(0)
    opt = getattr(ember.optim, name)(m.parameters(), foreach=foreach, **kwargs)
    for _ in range(steps):
        opt.zero_grad()
        d = m(ember.tensor(X)) - ember.tensor(Y)
        (d * d).mean().backward()
        opt.step()
    return m, opt


OPT_CASES = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.01)),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, maximize=True, weight_decay=0.01)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.01, weight_decay=0.1, amsgrad=True)),
    ("Adam", dict(lr=0.01, maximize=True, weight_decay=0.1, betas=(0.8, 0.9))),
    ("AdamW", dict(lr=0.01)),
    ("AdamW", dict(lr=0.01, amsgrad=True, weight_decay=0.05, maximize=True)),
]


@pytest.mark.parametrize("name,kwargs", OPT_CASES,
                         ids=[f"{n}-{'-'.join(k)}" for n, k in OPT_CASES])
def test_foreach_step_equals_single_tensor_step(torch, name, kwargs):
    mf, of = _train(name, kwargs, foreach=True)
    ms, os_ = _train(name, kwargs, foreach=False)
    for pf, ps in zip(mf.parameters(), ms.parameters()):
        np.testing.assert_allclose(to_np(pf.detach()), to_np(ps.detach()), rtol=1e-6, atol=1e-7)
    sf, ss = of.state_dict()["state"], os_.state_dict()["state"]
    for k in ss:
        for key, v in ss[k].items():
            np.testing.assert_allclose(to_np(sf[k][key]), to_np(v), rtol=1e-6, atol=1e-7)
    # and PyTorch's own foreach step agrees
    tm = torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.Tanh(), torch.nn.Linear(5, 3))
    tm.load_state_dict({k: to_torch(torch, v) for k, v in _model(0).state_dict().items()})
    to = getattr(torch.optim, name)(tm.parameters(), foreach=True, **kwargs)
    for _ in range(6):
        to.zero_grad()
        d = tm(torch.tensor(X)) - torch.tensor(Y)
        (d * d).mean().backward()
        to.step()
    for pf, pt in zip(mf.parameters(), tm.parameters()):
        np.testing.assert_allclose(to_np(pf.detach()), pt.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_foreach_step_makes_one_call_per_update():
    """An Adam step over N parameters dispatches a fixed number of foreach ops, not ~12*N ops."""
    import ember.optim.adam as A
    m = nn.Sequential(*[nn.Linear(3, 3) for _ in range(5)])
    opt = ember.optim.AdamW(m.parameters(), lr=0.01)
    m(ember.ones(2, 3)).sum().backward()
    seen = []
    original = ember._foreach_addcdiv_
    A._foreach_addcdiv_ = lambda *a: (seen.append(len(a[0])), original(*a))[1]
    try:
        opt.step()
    finally:
        A._foreach_addcdiv_ = original
    assert seen == [10]  # one call for all 10 parameters
    assert all(opt.state[p]["step"].item() == 1.0 for p in m.parameters())


def test_foreach_false_and_version_counters():
    p = nn.Parameter(ember.ones(3))
    for foreach in (None, False):
        opt = ember.optim.Adam([p], lr=0.1, foreach=foreach)
        v = p._version
        (p * 2).sum().backward()
        opt.step()
        assert p._version > v and p.grad_fn is None
        p.grad = None


@pytest.mark.parametrize("ord", [2, 1, 3, 0.5, 0, float("inf"), float("-inf")])
def test_foreach_norm_matches_torch(torch, ord):
    shapes = [(3,), (2, 4), ()] if abs(ord) == float("inf") else SHAPES  # no empty tensor
    (es, ts) = lists(torch, np.float64, shapes=shapes, transposed=True)
    for e, t in zip(ember._foreach_norm(es, ord), torch._foreach_norm(ts, ord)):
        assert_same(e, t)
    mixed = [ember.tensor([3.0, 4.0], dtype=ember.float16), ember.tensor([1 + 1j, 2j])]
    for e, t in zip(ember._foreach_norm(mixed, ord), torch._foreach_norm(
            [to_torch(torch, m) for m in mixed], ord)):
        assert_same(e, t, rtol=1e-3)
    e, = ember._foreach_norm([ember.ones(3)], ord, dtype=ember.float64)
    assert e.dtype == ember.float64


def test_foreach_norm_gradients_match_torch(torch):
    arrays = [RNG.standard_normal(s) for s in [(3,), (2, 2)]]
    es = [ember.tensor(a, requires_grad=True) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    for lib, xs in ((ember, es), (torch, ts)):
        n = lib._foreach_norm(xs, 3)
        (n[0] * 2 + n[1]).backward()
    assert type(ember._foreach_norm(es)[0].grad_fn).__name__ == "ForeachNormBackward0"
    for e, t in zip(es, ts):
        assert_same(e.grad, t.grad)
    # forward mode: the tangent of each norm
    import ember.autograd.forward_ad as fwAD
    with fwAD.dual_level():
        d = fwAD.make_dual(ember.tensor([3.0, 4.0]), ember.tensor([1.0, 0.0]))
        tangent = fwAD.unpack_dual(ember._foreach_norm([d])[0]).tangent
    assert float(tangent) == pytest.approx(0.6)


def test_foreach_norm_on_meta_has_the_norms_dtypes():
    out = ember._foreach_norm([ember.ones(3, device="meta"),
                               ember.ones(2, dtype=ember.complex64, device="meta")])
    assert [(o.shape, o.dtype, o.device.type) for o in out] == \
        [((), ember.float32, "meta"), ((), ember.float32, "meta")]


@pytest.mark.parametrize("foreach", [None, True, False])
@pytest.mark.parametrize("norm_type", [2.0, float("inf"), 1.0])
def test_clip_grad_norm_matches_torch(torch, foreach, norm_type):
    grads = [RNG.standard_normal(s).astype(np.float32) * 3 for s in [(4,), (2, 3)]]
    grads.append(RNG.standard_normal(5))  # a second dtype group
    results = []
    for lib in (ember, torch):
        params = [lib.zeros(g.shape, dtype=lib.float64 if g.dtype == np.float64 else lib.float32,
                            requires_grad=True) for g in grads]
        for p, g in zip(params, grads):
            p.grad = lib.tensor(g)
        total = lib.nn.utils.clip_grad_norm_(params, 1.5, norm_type, foreach=foreach)
        results.append((total, [p.grad for p in params]))
    (et, eg), (tt, tg) = results
    assert_same(et, tt, rtol=1e-5)
    for e, t in zip(eg, tg):
        assert_same(e, t, rtol=1e-5)


def test_clip_grad_foreach_calls_the_foreach_ops(monkeypatch):
    calls = []
    for name in ("_foreach_norm", "_foreach_mul_", "_foreach_clamp_min_", "_foreach_clamp_max_"):
        real = getattr(ember, name)
        monkeypatch.setattr(ember, name, lambda *a, _real=real, _n=name, **k: (
            calls.append(_n), _real(*a, **k))[1])
    p = ember.zeros(3, requires_grad=True)
    p.grad = ember.tensor([3.0, -4.0, 12.0])
    ember.nn.utils.clip_grad_norm_([p], 1.0, foreach=False)
    ember.nn.utils.clip_grad_value_([p], 0.1, foreach=False)
    assert calls == []  # PyTorch's default on the CPU too: one op per tensor
    ember.nn.utils.clip_grad_norm_([p], 1.0, foreach=True)
    ember.nn.utils.clip_grad_value_([p], 0.01, foreach=True)
    assert calls == ["_foreach_norm", "_foreach_mul_", "_foreach_clamp_min_", "_foreach_clamp_max_"]
    np.testing.assert_allclose(to_np(p.grad), [0.01, -0.01, 0.01])
    with pytest.raises(RuntimeError, match="can't use the foreach API on meta tensors"):
        q = ember.zeros(2, device="meta", requires_grad=True)
        q.grad = ember.ones(2, device="meta")
        ember.nn.utils.clip_grad_norm_([q], 1.0, foreach=True)


@pytest.mark.parametrize("foreach", [None, True])
def test_clip_grad_value_matches_torch(torch, foreach):
    g = RNG.standard_normal((3, 4)).astype(np.float32)
    out = []
    for lib in (ember, torch):
        p = lib.zeros(3, 4, requires_grad=True)
        p.grad = lib.tensor(g)
        lib.nn.utils.clip_grad_value_([p], 0.5, foreach=foreach)
        out.append(p.grad)
    assert_same(out[0], out[1])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_large_lists_run_generated_kernels_with_pytorchs_bits(torch, dtype):
    # tensors of at least generated.MIN_NUMEL elements take the generated kernels (threads, and
    # add's alpha fused into one multiply-add as ATen's vectorised kernel does): the same bits
    # as PyTorch, where NumPy's multiply-then-add rounds twice
    from ember._kernels.cpu import generated
    if not generated.enabled() or generated._pointwise_module("add_alpha", np.dtype(dtype),
                                                              3) is None:
        pytest.skip("no C compiler: the NumPy kernels run")
    rng = np.random.default_rng(0)
    base = [rng.standard_normal(n).astype(dtype) for n in (1 << 16, 40000)]
    other = [rng.standard_normal(len(a)).astype(dtype) for a in base]
    for op in (lambda lib, xs, ys: lib._foreach_add_(xs, ys),
               lambda lib, xs, ys: lib._foreach_add_(xs, ys, alpha=-0.01),
               lambda lib, xs, ys: lib._foreach_mul_(xs, 0.9)):
        es, ts = [ember.tensor(a) for a in base], [torch.tensor(a) for a in base]
        op(ember, es, [ember.tensor(b) for b in other])
        op(torch, ts, [torch.tensor(b) for b in other])
        for e, t in zip(es, ts):
            np.testing.assert_array_equal(to_np(e), t.numpy())
