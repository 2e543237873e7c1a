"""ember.func's Jacobian transforms (jvp, linearize, jacrev, jacfwd, hessian) and their nesting
with vmap and grad, each compared with torch.func on the same program (and jvp with finite
differences); ember.autograd.functional's forward-mode jacobian."""
import numpy as np
import pytest

import ember
import ember.func as ef

torch = pytest.importorskip("torch")
import torch.func as tf  # noqa: E402


def E(a):
    return ember.from_numpy(np.ascontiguousarray(a))


def T(a):
    return torch.from_numpy(np.ascontiguousarray(a))


def close(a, b, tol=1e-7):
    def arr(x):
        return x.detach().numpy() if hasattr(x, "detach") else np.asarray(x)
    if isinstance(a, (tuple, list)):
        assert isinstance(b, (tuple, list)) and len(a) == len(b)
        for x, y in zip(a, b):
            close(x, y, tol)
        return
    a, b = arr(a), arr(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


rng = np.random.default_rng(0)
X = rng.standard_normal((3, 4))
V = rng.standard_normal((3, 4))
W = rng.standard_normal((4, 2))


def f(lib, x, w):
    return (x.sin() @ w).tanh() * x.sum(1, keepdim=True) + x.softmax(-1)[:, :2]


def scalar(lib, x):
    return (x.exp() * x.cos()).sum() + x.norm() ** 3 + x.logsumexp(1).prod()


def test_jvp_matches_torch_and_finite_differences():
    oe, te = ef.jvp(lambda x: f(ember, x, E(W)), (E(X),), (E(V),))
    ot, tt = tf.jvp(lambda x: f(torch, x, T(W)), (T(X),), (T(V),))
    close(oe, ot)
    close(te, tt)
    eps = 1e-6
    fd = (f(ember, E(X + eps * V), E(W)) - f(ember, E(X - eps * V), E(W))) / (2 * eps)
    close(te, fd, 1e-6)


def test_jvp_has_aux_and_multiple_args():
    def g(lib):
        return lambda x, w: (f(lib, x, w), {"aux": x.mean()})
    oe, te, ae = ef.jvp(g(ember), (E(X), E(W)), (E(V), E(W * 0.5)), has_aux=True)
    ot, tt, at = tf.jvp(g(torch), (T(X), T(W)), (T(V), T(W * 0.5)), has_aux=True)
    close(te, tt)
    close(ae["aux"], at["aux"])


def test_jvp_errors_match_torch():
    for prims, tans in [([E(X)], (E(V),)), ((E(X),), (E(V[:2]),))]:
        tp = [T(p.numpy()) for p in prims]
        tp = tuple(tp) if isinstance(prims, tuple) else tp
        tt = tuple(T(t.numpy()) for t in tans)
        with pytest.raises(Exception) as ee:
            ef.jvp(lambda x: x, prims, tans)
        with pytest.raises(Exception) as et:
            tf.jvp(lambda x: x, tp, tt)
        assert type(ee.value) is type(et.value)


def test_linearize():
    out, jvp_fn = ef.linearize(lambda x: f(ember, x, E(W)), E(X))
    close(out, f(torch, T(X), T(W)))
    for v in (V, V * 2 - 1):
        close(jvp_fn(E(v)), tf.jvp(lambda x: f(torch, x, T(W)), (T(X),), (T(v),))[1])
    with pytest.raises(RuntimeError):
        jvp_fn(E(V[:2]))


@pytest.mark.parametrize("argnums", [0, 1, (0, 1)])
def test_jacrev_jacfwd_jacobian_agree_with_torch(argnums):
    je_r = ef.jacrev(lambda x, w: f(ember, x, w), argnums)(E(X), E(W))
    je_f = ef.jacfwd(lambda x, w: f(ember, x, w), argnums)(E(X), E(W))
    jt = tf.jacrev(lambda x, w: f(torch, x, w), argnums)(T(X), T(W))
    close(je_r, jt)
    close(je_f, jt)
    ins = (E(X), E(W))
    for strategy, vec in (("reverse-mode", False), ("forward-mode", True)):
        ja = ember.autograd.functional.jacobian(lambda x, w: f(ember, x, w), ins,
                                                vectorize=vec, strategy=strategy)
        want = ef.jacrev(lambda x, w: f(ember, x, w), (0, 1))(*ins)
        close(list(ja), list(want))


def test_jacrev_chunk_size_and_has_aux():
    full = ef.jacrev(lambda x: f(ember, x, E(W)))(E(X))
    for chunk in (1, 5):
        close(ef.jacrev(lambda x: f(ember, x, E(W)), chunk_size=chunk)(E(X)), full)
    j, aux = ef.jacrev(lambda x: (x.sin(), x.sum()), has_aux=True)(E(X))
    close(aux, X.sum())
    jf, auxf = ef.jacfwd(lambda x: (x.sin(), x.sum()), has_aux=True)(E(X))
    close(j, jf)
    close(auxf, X.sum())


def test_jacobian_of_pytrees():
    def g(lib):
        return lambda d: {"a": d["x"].exp() @ d["w"], "b": d["x"].sum()}
    de, dt = {"x": E(X), "w": E(W)}, {"x": T(X), "w": T(W)}
    je, jt = ef.jacfwd(g(ember))(de), tf.jacfwd(g(torch))(dt)
    for k in ("a", "b"):
        for m in ("x", "w"):
            close(je[k][m], jt[k][m])
            close(ef.jacrev(g(ember))(de)[k][m], jt[k][m])


def test_hessian_matches_torch():
    he = ef.hessian(lambda x: scalar(ember, x))(E(X))
    ht = tf.hessian(lambda x: scalar(torch, x))(T(X))
    close(he, ht, 1e-6)
    close(ef.jacrev(ef.jacrev(lambda x: scalar(ember, x)))(E(X)), ht, 1e-6)
    close(ef.jacrev(ef.jacfwd(lambda x: scalar(ember, x)))(E(X)), ht, 1e-6)
    close(ef.jacfwd(ef.jacfwd(lambda x: scalar(ember, x)))(E(X)), ht, 1e-6)
    close(ember.autograd.functional.hessian(lambda x: scalar(ember, x), E(X)), ht, 1e-6)


def _b(x):
    """A batch of two samples shaped like ``x``."""
    return x.unsqueeze(0) * x.new_tensor([1.0, 0.5]).reshape(2, 1, 1)


def test_nested_transforms_match_torch():
    se, st = (lambda x: scalar(ember, x)), (lambda x: scalar(torch, x))
    cases = [
        (lambda x, v: ef.jvp(lambda y: ef.jvp(se, (y,), (v,))[1], (x,), (v,))[1],
         lambda x, v: tf.jvp(lambda y: tf.jvp(st, (y,), (v,))[1], (x,), (v,))[1]),
        (lambda x, v: ef.grad(lambda y: ef.jvp(se, (y,), (v,))[1])(x),
         lambda x, v: tf.grad(lambda y: tf.jvp(st, (y,), (v,))[1])(x)),
        (lambda x, v: ef.jvp(ef.grad(se), (x,), (v,))[1],
         lambda x, v: tf.jvp(tf.grad(st), (x,), (v,))[1]),
        (lambda x, v: ef.vmap(lambda a, b: ef.jvp(se, (a,), (b,))[1])(_b(x), _b(v)),
         lambda x, v: tf.vmap(lambda a, b: tf.jvp(st, (a,), (b,))[1])(_b(x), _b(v))),
        (lambda x, v: ef.vmap(ef.jacrev(se))(_b(x)),
         lambda x, v: tf.vmap(tf.jacrev(st))(_b(x))),
        (lambda x, v: ef.vmap(ef.jacfwd(se))(_b(x)),
         lambda x, v: tf.vmap(tf.jacfwd(st))(_b(x))),
        (lambda x, v: ef.vmap(ef.hessian(se))(_b(x)),
         lambda x, v: tf.vmap(tf.hessian(st))(_b(x))),
        (lambda x, v: ef.jacfwd(ef.vmap(se))(_b(x)),
         lambda x, v: tf.jacfwd(tf.vmap(st))(_b(x))),
    ]
    for i, (ce, ct) in enumerate(cases):
        close(ce(E(X), E(V)), ct(T(X), T(V)), 1e-6)


def _pullback_program(lib, f):
    """What torchopt's implicit differentiation does with ``vjp``: a pullback called inside
    another ``vjp`` (its cotangent is that vjp's input: A^T A y), pullbacks under ``no_grad``
    (as in a custom Function's backward) and with ``create_graph``; and whether each result
    requires grad through the closed-over ``lam``."""
    a = lib.tensor(np.array([[2.0, 1.0], [0.0, 3.0]]))
    lam = lib.tensor(0.5, dtype=lib.float64, requires_grad=True)
    y = lib.tensor(np.array([1.0, -2.0]))
    _, pullback = f.vjp(lambda w: a @ w * lam, y)
    matvec = lambda u: pullback(u)[0]  # noqa: E731
    out, pullback2 = f.vjp(matvec, y)
    normal = pullback2(out)[0]
    ct_leaf = lib.ones(2, dtype=lib.float64, requires_grad=True)
    results = [normal, pullback(ct_leaf)[0], pullback(y, create_graph=False)[0]]
    with lib.no_grad():
        out, pullback3 = f.vjp(lambda w: a @ w * lam, y)
        results += [out, pullback3(y)[0], pullback(ct_leaf)[0],
                    f.grad(lambda w: (a @ w * lam).sum())(y), f.jacrev(lambda w: a @ w * lam)(y)]
    return results


def test_pullbacks_nest_and_obey_grad_mode_like_torch():
    """A pullback's cotangent can be another transform's input (it used to count as the
    pullback's own input, so the nested vjp saw no dependence and returned zeros); results
    keep a graph only under create_graph (default: the grad mode at the call), and vjp/grad/
    jacrev called under no_grad record nothing outside, as PyTorch's levels do."""
    mine, theirs = _pullback_program(ember, ef), _pullback_program(torch, tf)
    assert [m.requires_grad for m in mine] == [t.requires_grad for t in theirs]
    assert [t.requires_grad for t in theirs] == [True, True, False, False, False, False, False,
                                                 False]
    close(mine, theirs, 1e-12)


def test_hvp_forward_over_reverse():
    se, st = (lambda x: scalar(ember, x)), (lambda x: scalar(torch, x))
    he = ef.jvp(ef.grad(se), (E(X),), (E(V),))[1]
    close(he, ember.autograd.functional.hvp(se, E(X), E(V))[1], 1e-6)
    close(he, torch.autograd.functional.hvp(st, T(X), T(V))[1], 1e-6)


# -- per-sample gradients and ensembling on an MLP and a small CNN ------------------------------

def _mlp(lib):
    lib.manual_seed(0)
    return lib.nn.Sequential(lib.nn.Linear(12, 16), lib.nn.Tanh(), lib.nn.Linear(16, 4))


def _cnn(lib):
    lib.manual_seed(0)
    return lib.nn.Sequential(lib.nn.Conv2d(1, 3, 3, padding=1), lib.nn.ReLU(),
                             lib.nn.MaxPool2d(2), lib.nn.Flatten(), lib.nn.Linear(3 * 4 * 4, 4))


def _state(em, tm):
    tm.load_state_dict({k: T(v.detach().numpy()) for k, v in em.state_dict().items()})


@pytest.mark.parametrize("build,xshape", [(_mlp, (6, 12)), (_cnn, (5, 1, 8, 8))])
def test_per_sample_grads_and_jacobians(build, xshape):
    em, tm = build(ember), build(torch)
    _state(em, tm)
    x = rng.standard_normal(xshape).astype(np.float32)
    y = rng.integers(0, 4, xshape[0])

    def run(lib, model, xb, yb):
        params = {k: v.detach() for k, v in model.named_parameters()}

        def loss(p, xi, yi):
            out = lib.func.functional_call(model, p, (xi.unsqueeze(0),))
            return lib.nn.functional.cross_entropy(out, yi.unsqueeze(0))
        g = lib.func.vmap(lib.func.grad(loss), in_dims=(None, 0, 0))(params, xb, yb)
        # per-sample Jacobians of the logits wrt the input, both modes
        jr = lib.func.vmap(lib.func.jacrev(lambda xi: lib.func.functional_call(
            model, params, (xi.unsqueeze(0),))[0]))(xb)
        jf = lib.func.vmap(lib.func.jacfwd(lambda xi: lib.func.functional_call(
            model, params, (xi.unsqueeze(0),))[0]))(xb)
        return g, jr, jf
    ge, jre, jfe = run(ember, em, E(x), E(y))
    gt, jrt, jft = run(torch, tm, T(x), T(y))
    for k in gt:
        close(ge[k], gt[k], 1e-4)
    close(jre, jrt, 1e-4)
    close(jfe, jft, 1e-4)
    close(jre, jfe, 1e-4)


def test_ensemble_jvp_with_stack_module_state():
    models_e = [_mlp(ember) for _ in range(3)]
    for i, m in enumerate(models_e):
        for p in m.parameters():
            p.data.mul_(1 + 0.1 * i)
    models_t = [_mlp(torch) for _ in range(3)]
    for me, mt in zip(models_e, models_t):
        _state(me, mt)
    x, v = rng.standard_normal((5, 12)).astype(np.float32), rng.standard_normal((5, 12))
    v = v.astype(np.float32)

    def run(lib, models, xb, vb):
        params, bufs = lib.func.stack_module_state(models)
        base = models[0]

        def one(p, b):
            return lib.func.jvp(lambda xi: lib.func.functional_call(base, (p, b), (xi,)),
                                (xb,), (vb,))
        return lib.func.vmap(one)(params, bufs)
    oe, te = run(ember, models_e, E(x), E(v))
    ot, tt = run(torch, models_t, T(x), T(v))
    close(oe, ot, 1e-5)
    close(te, tt, 1e-5)


def test_errors_match_torch():
    def outcome(fn):
        try:
            fn()
        except Exception as e:  # noqa: BLE001
            return type(e).__name__, str(e).replace("torch.", "ember.")
        return None
    cases = [
        lambda lib, fn: fn.jvp(lambda x: x.new_ones(2), (lib.ones(2),), (lib.ones(2),),
                               strict=True),
        lambda lib, fn: fn.jvp(lambda x: 3, (lib.ones(2),), (lib.ones(2),)),
        lambda lib, fn: fn.linearize(lambda x: x.sin(), lib.ones(2))[1](lib.ones(3)),
        lambda lib, fn: fn.linearize(lambda x: x.sin(), lib.ones(2))[1](
            lib.ones(2, dtype=lib.float64)),
        lambda lib, fn: fn.jacrev(lambda x: x, chunk_size=0)(lib.ones(2)),
    ]
    for i, case in enumerate(cases):
        e = outcome(lambda: case(ember, ef))
        t = outcome(lambda: case(torch, tf))
        assert e is not None and e == t, (i, e, t)


def test_linearize_traces_once_and_functionalize_is_in_ember_func():
    calls = []

    def f(x):
        calls.append(1)
        return (x.sin() * 2).exp()
    x = ember.randn(4, dtype=ember.float64)
    out, jvp_fn = ember.func.linearize(f, x)
    traced = len(calls)
    for _ in range(3):
        t = ember.randn(4, dtype=ember.float64)
        want = ember.func.jvp(f, (x,), (t,))[1]
        assert ember.allclose(jvp_fn(t), want)
    assert len(calls) - traced == 3  # only the three reference jvps above called f again

    def mutate(a):
        a.add_(1)
        return a * 2
    y = ember.zeros(3)
    assert ember.func.functionalize(mutate)(y).tolist() == [2.0, 2.0, 2.0]
    assert y.tolist() == [1.0, 1.0, 1.0]  # the input mutation replayed, as eager
