"""vmap (ember.func.vmap): per-sample gradients, ensembling, nesting, pytrees, randomness,
errors and a sweep of op families, each compared with torch.func on the same program or with
the looped computation."""
import warnings

import numpy as np
import pytest

import ember
from ember.func import functional_call, grad, stack_module_state, vmap

torch = pytest.importorskip("torch")


def E(a):
    return ember.from_numpy(np.ascontiguousarray(a))


def T(a):
    return torch.from_numpy(np.ascontiguousarray(a))


def close(a, b, tol=1e-5):
    a = a.detach().numpy() if hasattr(a, "detach") else np.asarray(a)
    b = b.detach().numpy() if hasattr(b, "detach") else np.asarray(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


@pytest.fixture(autouse=True)
def no_fallback_warnings():
    """Every program here runs on batching rules: a fallback warning fails the test unless the
    test asks for it."""
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="There is a performance drop")
        yield


def _copy_state(em, tm):
    tm.load_state_dict({k: T(v.detach().numpy()) for k, v in em.state_dict().items()})


# -- per-sample gradients ------------------------------------------------------------------------

def _mlp(lib):
    lib.manual_seed(0)
    return lib.nn.Sequential(lib.nn.Linear(20, 16), lib.nn.Tanh(), lib.nn.Linear(16, 5))


def _cnn(lib):
    class CNN(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.c1 = lib.nn.Conv2d(1, 4, 3, padding=1)
            self.c2 = lib.nn.Conv2d(4, 6, 3)
            self.fc = lib.nn.Linear(6 * 3 * 3, 10)

        def forward(self, x):
            x = lib.nn.functional.max_pool2d(lib.relu(self.c1(x)), 2)
            return self.fc(lib.relu(self.c2(x)).flatten(1))
    return CNN()


def _per_sample(lib, model, x, y):
    params = {k: v.detach() for k, v in model.named_parameters()}

    def loss(p, xb, yb):
        out = lib.func.functional_call(model, p, (xb.unsqueeze(0),))
        return lib.nn.functional.cross_entropy(out, yb.unsqueeze(0))
    return lib.func.vmap(lib.func.grad(loss), in_dims=(None, 0, 0))(params, x, y)


@pytest.mark.parametrize("build,xshape", [(_mlp, (7, 20)), (_cnn, (5, 1, 10, 10))])
def test_per_sample_grads_match_torch_func(build, xshape):
    em, tm = build(ember), build(torch)
    _copy_state(em, tm)
    rng = np.random.default_rng(0)
    x = rng.standard_normal(xshape).astype(np.float32)
    y = rng.integers(0, 5, xshape[0])
    ge = _per_sample(ember, em, E(x), E(y))
    gt = _per_sample(torch, tm, T(x), T(y))
    assert set(ge) == set(gt)
    for k in ge:
        assert not ge[k].requires_grad
        close(ge[k], gt[k], 1e-4)


def test_per_sample_grads_match_loop_of_backward_passes():
    model = _mlp(ember)
    x, y = ember.randn(4, 20), ember.randint(0, 5, (4,))
    g = _per_sample(ember, model, x, y)
    for i in range(4):
        model.zero_grad()
        ember.nn.functional.cross_entropy(model(x[i:i + 1]), y[i:i + 1]).backward()
        for k, p in model.named_parameters():
            close(g[k][i], p.grad, 1e-5)


def test_grad_of_vmap_and_vmap_of_grad():
    xn = np.random.default_rng(1).standard_normal((3, 4))
    for lib, X in ((ember, E), (torch, T)):
        x = X(xn)
        a = lib.func.grad(lambda x: lib.func.vmap(lambda r: (r.sin() * r).sum())(x).sum())(x)
        b = lib.func.vmap(lib.func.grad(lambda r: (r.sin() * r).sum()))(x)
        if lib is ember:
            ea, eb = a, b
    close(ea, a)
    close(eb, b)
    close(ea, eb)


def test_vmap_grad_wrt_unbatched_closure_arg_is_per_sample():
    w = ember.randn(4)
    x = ember.randn(3, 4)
    g = vmap(grad(lambda w, x: (w * x).sum().square()), in_dims=(None, 0))(w, x)
    for i in range(3):
        close(g[i], 2 * (w * x[i]).sum() * x[i])


def test_grad_of_grad_under_vmap():
    x = ember.randn(5)
    out = vmap(grad(grad(lambda x: x.sin())))(x)
    close(out, -x.sin())


def test_vjp_under_vmap():
    x = ember.randn(3, 4)
    ct = ember.randn(3, 4)
    out = vmap(lambda x, c: ember.func.vjp(lambda x: x.exp(), x)[1](c)[0])(x, ct)
    close(out, x.exp() * ct)


# -- ensembling ----------------------------------------------------------------------------------

def test_model_ensembling_with_stack_module_state():
    ems = [_mlp(ember) for _ in range(3)]
    for i, m in enumerate(ems):  # distinct weights
        for p in m.parameters():
            p.data = p.data + i
    tms = [_mlp(torch) for _ in range(3)]
    for e, t in zip(ems, tms):
        _copy_state(e, t)
    xn = np.random.default_rng(2).standard_normal((6, 20)).astype(np.float32)
    outs = []
    for lib, models, X in ((ember, ems, E), (torch, tms, T)):
        params, buffers = lib.func.stack_module_state(models)
        assert all(v.requires_grad and v.is_leaf for v in params.values())

        def f(p, b, x, m=models[0], lib=lib):
            return lib.func.functional_call(m, (p, b), (x,))
        outs.append(lib.func.vmap(f, in_dims=(0, 0, None))(params, buffers, X(xn)))
    close(outs[0], outs[1], 1e-4)
    assert tuple(outs[0].shape) == (3, 6, 5)


def test_stack_module_state_errors():
    with pytest.raises(RuntimeError, match="Expected at least one model"):
        stack_module_state([])
    a, b = ember.nn.Linear(2, 2), ember.nn.Linear(2, 2).eval()
    with pytest.raises(RuntimeError, match="same training/eval mode"):
        stack_module_state([a, b])


def test_functional_call_restores_the_module():
    m = ember.nn.Linear(3, 2)
    w = m.weight
    out = functional_call(m, {"weight": ember.zeros(2, 3), "bias": ember.ones(2)},
                          (ember.randn(4, 3),))
    close(out, ember.ones(4, 2))
    assert m.weight is w


# -- nesting, pytrees, chunking -------------------------------------------------------------------

def test_nested_vmap_matches_torch():
    xn = np.random.default_rng(3).standard_normal((2, 3, 4))
    yn = np.random.default_rng(4).standard_normal((3, 4))
    res = []
    for lib, X in ((ember, E), (torch, T)):
        f = lib.func.vmap(lib.func.vmap(lambda a, b: (a * b).sum() + a.max()),
                          in_dims=(0, None))
        g = lib.func.vmap(lib.func.vmap(lambda a: a @ a, in_dims=1), in_dims=2)
        res.append((f(X(xn), X(yn)), g(X(xn))))
    close(res[0][0], res[1][0])
    close(res[0][1], res[1][1])


def test_in_dims_out_dims_pytrees():
    rng = np.random.default_rng(5)
    an, bn, cn = rng.standard_normal((4, 3)), rng.standard_normal((3, 4)), rng.standard_normal(3)
    res = []
    for lib, X in ((ember, E), (torch, T)):
        def f(d, c):
            return {"s": d["a"] + d["b"] * c, "t": (d["a"].sum(), c)}
        out = lib.func.vmap(f, in_dims=({"a": 0, "b": 1}, None),
                            out_dims={"s": 1, "t": (0, None)})({"a": X(an), "b": X(bn)}, X(cn))
        res.append(out)
    close(res[0]["s"], res[1]["s"])
    close(res[0]["t"][0], res[1]["t"][0])
    close(res[0]["t"][1], res[1]["t"][1])


def test_negative_in_dim_kwargs_and_unbatched_outputs():
    x = ember.randn(3, 5)
    out = vmap(lambda x, *, k: x * k, in_dims=-1)(x, k=2.0)
    close(out, x.t() * 2)
    out = vmap(lambda x: ember.ones(2))(x)
    assert tuple(out.shape) == (3, 2)


@pytest.mark.parametrize("chunk", [1, 2, 3, 10])
def test_chunk_size(chunk):
    x = ember.randn(7, 4)
    out = vmap(lambda x: (x.softmax(0), x.sum()), chunk_size=chunk, out_dims=(1, 0))(x)
    close(out[0], x.softmax(1).t())
    close(out[1], x.sum(1))


# -- randomness ------------------------------------------------------------------------------------

def test_randomness_error_mode():
    x = ember.randn(3, 4)
    for f in (lambda x: x + ember.randn(4), lambda x: ember.rand_like(x),
              lambda x: ember.nn.functional.dropout(x, 0.5), lambda x: x.clone().normal_()):
        with pytest.raises(RuntimeError, match="called random operation while in randomness "
                                               "error mode"):
            vmap(f)(x)
    close(vmap(lambda x: ember.nn.functional.dropout(x, 0.5, training=False))(x), x)


def test_randomness_same_and_different():
    x = ember.randn(3, 4)
    same = vmap(lambda x: ember.rand_like(x) + 0 * x, randomness="same")(x)
    assert (same[0] == same[1]).all() and (same[1] == same[2]).all()
    diff = vmap(lambda x: ember.randn(4) + 0 * x, randomness="different")(x)
    assert not (diff[0] == diff[1]).all()
    same = vmap(lambda x: x.clone().normal_(), randomness="same")(x)
    assert (same[0] == same[2]).all()
    diff = vmap(lambda x: ember.nn.functional.dropout(ember.ones(50) + x.sum() * 0, 0.5),
                randomness="different")(x)
    assert tuple(diff.shape) == (3, 50) and not (diff[0] == diff[1]).all()
    assert set(np.unique(diff.numpy())) <= {0.0, 2.0}
    bern = vmap(lambda x: ember.bernoulli(ember.full((64,), 0.5)), randomness="different")(x)
    assert tuple(bern.shape) == (3, 64) and not (bern[0] == bern[1]).all()


def test_nested_randomness_modes():
    x = ember.randn(2, 3, 4)
    out = vmap(vmap(lambda x: ember.rand(5) + 0 * x.sum(), randomness="same"),
               randomness="different")(x)
    assert tuple(out.shape) == (2, 3, 5)
    assert (out[0, 0] == out[0, 2]).all() and not (out[0, 0] == out[1, 0]).all()


def _messages(ef, tf, *shapes):
    """The exception type and message of ember's and torch's versions of the same program."""
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s) for s in shapes]
    got = []
    for lib, f, X in ((ember, ef, E), (torch, tf, T)):
        with pytest.raises(Exception) as info:
            f(lib, *[X(a) for a in arrays])
        got.append((type(info.value), str(info.value).split("\n")[0]))
    return got


@pytest.mark.parametrize("prog,shapes", [
    (lambda lib, x: lib.func.vmap(lambda x: x, randomness="foo")(x), [(3, 4)]),
    (lambda lib, x: lib.func.vmap(lambda x: x.sum().item())(x), [(3, 4)]),
    (lambda lib, x: lib.func.vmap(lambda x: 1 if x.sum() > 0 else 0)(x), [(3, 4)]),
    (lambda lib, x, y: lib.func.vmap(lambda x, y: x + y)(x, y), [(3, 4), (2, 4)]),
    (lambda lib, x: lib.func.vmap(lambda x, y: x, in_dims=(0, 0, 0))(x, x), [(3, 4)]),
    (lambda lib, x: lib.func.vmap(lambda x: x, in_dims=5)(x), [(3, 4)]),
    (lambda lib, x: lib.func.vmap(lambda x: x, in_dims="a")(x), [(3, 4)]),
    (lambda lib, x: lib.func.vmap(lambda x: x, in_dims=[0])(x), [(3, 4)]),
    (lambda lib, x: lib.func.vmap(lambda x: x, in_dims=(0.5,))(x), [(3, 4)]),
    (lambda lib, x: lib.func.vmap(lambda x: x)(3), [(3, 4)]),
    (lambda lib, x: lib.func.vmap(lambda: 1)(), [(3, 4)]),
    (lambda lib, x: lib.func.vmap(lambda x: 3)(x), [(3, 4)]),
    (lambda lib, x: lib.func.vmap(lambda x: x, out_dims=5)(x), [(3, 4)]),
    (lambda lib, x: lib.func.vmap(lambda x: (x, x), out_dims=(0, 0, 0))(x), [(3, 4)]),
    (lambda lib, x: lib.func.vmap(lambda x: x, out_dims=None)(x), [(3, 4)]),
    (lambda lib, x: lib.func.vmap(lambda d: d["a"], in_dims=({"b": 0},))({"a": x}), [(3, 4)]),
    (lambda lib, x: lib.func.vmap(lambda x: x, chunk_size=0)(x), [(3, 4)]),
    (lambda lib, x: lib.func.vmap(lambda x: x)(x.sum()), [(3, 4)]),
    (lambda lib, x: lib.func.vmap(lambda x: lib.zeros(4).copy_(x))(x), [(3, 4)]),
    (lambda lib, x: lib.func.vmap(lambda x: lib.zeros(4).add_(x))(x), [(3, 4)]),
    (lambda lib, x: lib.func.vmap(lambda x: lib.zeros(4).normal_(), randomness="different")(x),
     [(3, 4)]),
    (lambda lib, x: lib.func.vmap(lambda x: lib.bernoulli(x.sigmoid()), randomness="same")(x),
     [(3, 4)]),
])
def test_errors_match_torch(prog, shapes):
    (et, em), (tt, tm) = _messages(prog, prog, *shapes)
    assert et is tt, (em, tm)
    assert em == tm


def test_fallback_warning_switch_and_coverage():
    x = ember.randn(3, 8)
    cov = ember.func.batching_rule_coverage()
    assert "aten::histc" in cov["fallback"]
    assert cov["rule"]["aten::add.Tensor"] == "pointwise"
    assert cov["rule"]["aten::sum.dim_IntList"] == "reduction"
    assert "aten::linear" in cov["rule"] and "aten::randn" in cov["randomness"]
    assert "aten::cross_entropy_loss" in cov["decomposition"]
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out = vmap(lambda x: ember.histc(x, bins=4))(x)
    assert [str(m.message) for m in w] == [
        "There is a performance drop because we have not yet implemented the batching rule for "
        "aten::histc. Please file us an issue on GitHub so that we can prioritize its "
        "implementation."]
    for i in range(3):
        close(out[i], ember.histc(x[i], bins=4))
    ember._C._functorch._set_vmap_fallback_enabled(False)
    try:
        with pytest.raises(RuntimeError, match="^aten::histc hit the vmap fallback which is "
                                               "currently disabled$"):
            vmap(lambda x: ember.histc(x, bins=4))(x)
    finally:
        ember._C._functorch._set_vmap_fallback_enabled(True)


def test_batched_tensor_repr_and_vmap_export():
    seen = []
    vmap(vmap(lambda x: seen.append(repr(x)) or x))(ember.arange(6.).view(2, 3))
    assert seen[0].startswith("BatchedTensor(lvl=2, bdim=0, value=\n    BatchedTensor(lvl=1")
    assert ember.vmap is vmap


# -- a sweep of op families: vmap vs the looped computation ----------------------------------------

F = ember.nn.functional
_OPS = [
    ("add", lambda x, y: x + y), ("mul_scalar0d", lambda x, y: x.sum() * y),
    ("where", lambda x, y: ember.where(x > 0, x, y)), ("clamp", lambda x, y: x.clamp(-0.5, 0.5)),
    ("pow", lambda x, y: x.abs() ** y), ("atan2", lambda x, y: ember.atan2(x, y)),
    ("unary", lambda x, y: x.exp().log1p().tanh().sigmoid()), ("neg_inplace", lambda x, y: x.clone().mul_(y)),
    ("sum_dim", lambda x, y: x.sum(1, keepdim=True)), ("mean_all", lambda x, y: x.mean()),
    ("amax", lambda x, y: x.amax(-1)), ("max_dim", lambda x, y: x.max(0)[1]),
    ("argmax_none", lambda x, y: x.argmax()), ("std", lambda x, y: x.std(0)),
    ("var_all", lambda x, y: x.var()), ("norm", lambda x, y: x.norm()),
    ("logsumexp", lambda x, y: x.logsumexp(1)), ("prod", lambda x, y: x.prod()),
    ("cumsum", lambda x, y: x.cumsum(1)), ("softmax", lambda x, y: x.softmax(-1)),
    ("log_softmax", lambda x, y: F.log_softmax(x, 0)), ("view", lambda x, y: x.view(-1)),
    ("reshape_t", lambda x, y: x.t().reshape(2, -1)), ("permute", lambda x, y: x.permute(1, 0)),
    ("transpose", lambda x, y: x.transpose(0, 1).contiguous()),
    ("unsqueeze", lambda x, y: x.unsqueeze(-1).squeeze(-1).unsqueeze(0)),
    ("expand", lambda x, y: x[:1].expand(3, 4)), ("select_slice", lambda x, y: x[1, 1:3]),
    ("split", lambda x, y: ember.cat(x.split(2, 1)[::-1], 1)), ("chunk", lambda x, y: x.chunk(2, 1)[1]),
    ("unbind", lambda x, y: ember.stack(x.unbind(1), 0)), ("flip", lambda x, y: x.flip(0)),
    ("roll", lambda x, y: x.roll(1, 1)), ("flatten", lambda x, y: x.flatten()),
    ("repeat", lambda x, y: x.repeat(2, 1)), ("like", lambda x, y: ember.zeros_like(x) + ember.ones_like(y)),
    ("new_zeros", lambda x, y: x.new_zeros(2) + x[0, :2]), ("sort", lambda x, y: x.sort(1)[0]),
    ("topk", lambda x, y: x.topk(2)[1]), ("mm", lambda x, y: x @ y.t()),
    ("mv", lambda x, y: x @ y[0]), ("dot", lambda x, y: x[0] @ y[1]),
    ("matmul_vec", lambda x, y: y[0] @ x.t()), ("bmm", lambda x, y: ember.bmm(x[None], y.t()[None])),
    ("addmm", lambda x, y: ember.addmm(x[:, :3], x, y.t()[:, :3])),
    ("linear", lambda x, y: F.linear(x, y, y[:, 0])),
    ("gather", lambda x, y: x.gather(1, (y.abs() * 3).long().clamp(0, 3))),
    ("scatter", lambda x, y: ember.zeros(3, 4).scatter(1, (y.abs() * 3).long().clamp(0, 3), x)),
    ("index_select", lambda x, y: x.index_select(1, ember.tensor([3, 0]))),
    ("index_select_batched_idx", lambda x, y: x.index_select(1, (y[0].abs() * 3).long().clamp(0, 3))),
    ("index", lambda x, y: x[ember.tensor([2, 0])]), ("index_batched", lambda x, y: x[(y[:, 0].abs() * 2).long().clamp(0, 2)]),
    ("cat", lambda x, y: ember.cat([x, ember.ones(1, 4)])), ("stack", lambda x, y: ember.stack([x, y], -1)),
    ("layer_norm", lambda x, y: F.layer_norm(x, (4,), y[0], y[1])),
    ("layer_norm_plain", lambda x, y: F.layer_norm(x, (3, 4))),
    ("batch_norm_train", lambda x, y: F.batch_norm(x, None, None, training=True)),
    ("batch_norm_eval", lambda x, y: F.batch_norm(x, y[0, :4].abs() * 0 + 0.5, y[1, :4].abs() + 1, training=False)),
    ("embedding", lambda x, y: F.embedding((y.abs() * 2).long().clamp(0, 2), x)),
    ("cross_entropy", lambda x, y: F.cross_entropy(x, (y[:, 0].abs() * 3).long().clamp(0, 3))),
    ("nll_weighted", lambda x, y: F.nll_loss(x.log_softmax(1), (y[:, 0].abs() * 3).long().clamp(0, 3),
                                             weight=y[0].abs() + 0.1, reduction="sum")),
    ("mse", lambda x, y: F.mse_loss(x, y)),
    ("conv1d", lambda x, y: F.conv1d(x[None], y[:, :2].unsqueeze(1).expand(3, 3, 2))),
    ("conv1d_bias", lambda x, y: F.conv1d(x[None], x[:, None, :2].expand(3, 3, 2), y[0, :3])),
    ("l1_huber", lambda x, y: F.l1_loss(x, y) + F.huber_loss(x, y, reduction="sum")),
    ("bce", lambda x, y: F.binary_cross_entropy_with_logits(x, y.sigmoid())
     + F.binary_cross_entropy(x.sigmoid(), y.sigmoid(), reduction="none").sum(0).mean()),
    ("avg_pool", lambda x, y: F.avg_pool1d(x[None], 2)),
    ("tril", lambda x, y: x.tril()), ("masked_fill", lambda x, y: x.masked_fill(y > 0, 0.0)),
    ("softmax_backward", lambda x, y: ember.ops.aten._softmax_backward_data(
        y, x.softmax(1), 1, ember.float32)),
    ("mse_backward", lambda x, y: ember.ops.aten.mse_loss_backward(y.sum(), x, y, 1)),
    ("nll_backward", lambda x, y: ember.ops.aten.nll_loss_backward(
        y.sum(), x, (y[:, 0].abs() * 3).long().clamp(0, 3), None, 1, -100, x[0, 0] * 0 + 3)),
    ("detach_clone", lambda x, y: x.detach().clone()), ("to", lambda x, y: x.to(ember.float64)),
    # cdist's ops pair the samples through broadcast batch dims (either side of lower rank)
    ("cdist", lambda x, y: ember.cdist(x, y[:2], 1.0)),
    ("cdist_ranks", lambda x, y: ember.cdist(x[None].expand(2, 3, 4), y)
     + ember.cdist(x, y[None].expand(2, 3, 4))),
    ("cdist_mm", lambda x, y: ember.cdist(x, y, compute_mode="use_mm_for_euclid_dist")),
]


@pytest.mark.parametrize("name,f", _OPS, ids=[n for n, _ in _OPS])
def test_op_family_batched_matches_looped(name, f):
    rng = np.random.default_rng(7)
    xs = E(rng.standard_normal((5, 3, 4)).astype(np.float32))
    ys = E(rng.standard_normal((5, 3, 4)).astype(np.float32))
    looped = [f(xs[i], ys[i]) for i in range(5)]
    for in_dims in ((0, 0), (0, None), (2, 0)):
        xb = xs.movedim(0, 2) if in_dims[0] == 2 else xs
        yb = ys[0] if in_dims[1] is None else ys
        out = vmap(f, in_dims=in_dims)(xb, yb)
        ref = looped if in_dims[1] == 0 else [f(xs[i], ys[0]) for i in range(5)]
        close(out, ember.stack(ref), 1e-4)
