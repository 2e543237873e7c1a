"""Functionalization (ember._functorch.functionalize): values and input state equal eager's,
and the traced graphs mutate nothing but the inputs, in a copy_ epilogue (as torch.func's)."""
import pytest

import ember
from ember._functorch.functionalize import functionalize
from ember.fx.experimental.proxy_tensor import make_fx


def _ops(gm):
    return [str(n.target) for n in gm.graph.nodes if n.op == "call_function"]


def _mutating(gm):
    return [n for n in gm.graph.nodes if n.op == "call_function"
            and hasattr(n.target, "_schema") and n.target._schema.is_mutable]


def _check(f, *shapes, seed=0):
    ember.manual_seed(seed)
    xs = [ember.randn(*s) for s in shapes]
    ys = [x.clone() for x in xs]
    want = f(*xs)
    got = functionalize(f)(*ys)
    want = want if isinstance(want, tuple) else (want,)
    got = got if isinstance(got, tuple) else (got,)
    for w, g in zip(want, got):
        assert ember.allclose(w, g)
    for x, y in zip(xs, ys):  # the caller sees eager's input state
        assert ember.allclose(x, y)
    gm = make_fx(functionalize(f))(*[x.clone() for x in xs])
    muts = _mutating(gm)
    # only the epilogue writes, and only into placeholders
    assert all(str(n.target) == "aten.copy_.default" and n.args[0].op == "placeholder"
               for n in muts)
    return gm


def test_inplace_on_view_of_input():
    def f(x):
        y = x[0]
        y.add_(1)
        z = x.view(-1)
        x.mul_(2)
        return z + 1, y
    gm = _check(f, (3, 4))
    assert "aten.select_scatter.default" in _ops(gm)
    assert _ops(gm)[-1] == "aten.copy_.default"


def test_add_on_input():
    def f(x, y):
        x.add_(y)
        return x * 2
    gm = _check(f, (4,), (4,))
    assert _ops(gm) == ["aten.add.Tensor", "aten.mul.Tensor", "aten.copy_.default"]


def test_no_mutation_no_epilogue():
    def f(x):
        y = x.clone()
        y.sin_()
        y[1:].zero_()
        return y
    gm = _check(f, (5,))
    assert not _mutating(gm)


def test_out_variant_and_split_views():
    def f(x):
        buf = ember.empty(4)
        ember.add(x[:4], 1, out=buf)
        a, b = x.split(4)
        a.mul_(3)
        b.copy_(buf)
        return buf, x.sum()
    _check(f, (8,))


def test_transpose_view_chain():
    def f(x):
        t = x.t()[1]
        t.fill_(7.0)
        return x.sum(0)
    _check(f, (3, 4))


def test_batchnorm_running_stats():
    bn_eager = ember.nn.BatchNorm1d(3)
    bn_func = ember.nn.BatchNorm1d(3)
    x = ember.randn(6, 3)
    out_e = bn_eager(x)
    out_f = functionalize(bn_func)(x)
    assert ember.allclose(out_e, out_f, atol=1e-6)
    assert ember.allclose(bn_eager.running_mean, bn_func.running_mean, atol=1e-6)
    assert ember.allclose(bn_eager.running_var, bn_func.running_var, atol=1e-6)
    assert int(bn_func.num_batches_tracked) == 1


def test_remove_views():
    def f(x):
        y = x.view(2, 2)
        y.add_(1)
        return y
    x = ember.randn(4)
    out = functionalize(f, remove="mutations_and_views")(x)
    assert out._base is None  # the view became a copy
    x2 = ember.randn(4)
    gm = make_fx(functionalize(f, remove="mutations_and_views"))(x2)
    assert not [n for n in _mutating(gm) if n.args[0].op != "placeholder"]


def test_gradients_flow():
    def f(x):
        y = x * 1
        y[0].mul_(2)
        return y.sum()
    x = ember.randn(3, 2, requires_grad=True)
    functionalize(f)(x).backward()
    assert ember.allclose(x.grad, ember.tensor([[2., 2.], [1., 1.], [1., 1.]]))


def test_bad_remove():
    with pytest.raises(RuntimeError, match="invalid value for the remove argument"):
        functionalize(lambda x: x, remove="views")


def test_matches_torch_functionalize_graph():
    torch = pytest.importorskip("torch")
    from torch.fx.experimental.proxy_tensor import make_fx as tmake_fx

    def body(lib):
        def f(x):
            y = x[1]
            y.add_(1)
            x.mul_(2)
            return x.view(-1) + 1
        return f
    tg = tmake_fx(torch.func.functionalize(body(torch)))(torch.randn(3, 4))
    # ember functionalizes at run time as PyTorch does, so even the views it regenerates
    # eagerly (dead code) are the same
    eg = make_fx(functionalize(body(ember)))(ember.randn(3, 4))
    t_ops = [str(n.target) for n in tg.graph.nodes if n.op == "call_function"]
    assert _ops(eg) == t_ops
