"""Autograd: grad modes, engine, derivatives.yaml formulas, hooks, errors, custom Function,
gradcheck — compared with PyTorch wherever PyTorch defines the behaviour."""
import gc
import warnings

import numpy as np
import pytest

import ember
from ember.autograd import derivatives as D
from helpers import assert_same, from_np, to_torch

RNG = np.random.default_rng(0)


def _pair(torch, *shape, dtype=np.float64, requires_grad=True, positive=False):
    a = RNG.standard_normal(shape).astype(dtype)
    if positive:
        a = np.abs(a) + 0.5
    e = from_np(a).requires_grad_(requires_grad)
    t = torch.from_numpy(a.copy()).requires_grad_(requires_grad)
    return e, t


# ---------------------------------------------------------------------------------------------
# Seeds

def test_seed_002_trace():
    a = ember.tensor(2.0, requires_grad=True)
    b = ember.tensor(3.0, requires_grad=True)
    c = a * b
    d = c + a
    d.backward()
    assert a.grad.item() == 4.0 and b.grad.item() == 2.0
    assert d.grad_fn.name() == "AddBackward0"
    assert c.grad_fn.name() == "MulBackward0"
    (n0, _), (n1, _) = d.grad_fn.next_functions
    assert n0 is c.grad_fn and type(n1).__name__ == "AccumulateGrad"


def test_seed_003_graph_walk():
    x = ember.randn(4, 4, requires_grad=True)
    w = ember.randn(4, 4, requires_grad=True)
    b = ember.randn(4, requires_grad=True)
    z = ember.addmm(b, x, w).sum()
    names = []
    node = z.grad_fn
    while node:
        names.append(type(node).__name__)
        node = node.next_functions[0][0] if node.next_functions else None
    assert names == ["SumBackward0", "AddmmBackward0", "AccumulateGrad"]


def test_seed_002_fused_scale_clamp(torch):
    def make(lib):
        class FusedScaleClamp(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, scale, lo, hi):
                ctx.save_for_backward(x)
                ctx.scale = scale
                ctx.lo, ctx.hi = lo, hi
                return lib.clamp(x * scale, min=lo, max=hi)

            @staticmethod
            def backward(ctx, grad_y):
                (x,) = ctx.saved_tensors
                s, lo, hi = ctx.scale, ctx.lo, ctx.hi
                scaled = x * s
                mask = (scaled > lo) & (scaled < hi)
                return grad_y * s * mask.to(grad_y.dtype), None, None, None
        return FusedScaleClamp

    if not hasattr(ember, "clamp"):
        pytest.skip("clamp not defined yet")
    xe, xt = _pair(torch, 8, dtype=np.float32)
    ye = make(ember).apply(xe, 2.0, -1.0, 1.0)
    yt = make(torch).apply(xt, 2.0, -1.0, 1.0)
    assert type(ye.grad_fn).__name__ == type(yt.grad_fn).__name__ == "FusedScaleClampBackward"
    ye.sum().backward()
    yt.sum().backward()
    assert_same(xe.grad, xt.grad)


# ---------------------------------------------------------------------------------------------
# Gradients vs PyTorch

def _binary_cases():
    return [
        ("add", lambda L, a, b: L.add(a, b, alpha=2)),
        ("sub", lambda L, a, b: a - b),
        ("mul", lambda L, a, b: a * b),
        ("div", lambda L, a, b: a / b),
        ("pow", lambda L, a, b: L.pow(a, b)),
        ("maximum", lambda L, a, b: L.maximum(a, b)),
        ("where", lambda L, a, b: L.where(a > 0, a, b)),
    ]


@pytest.mark.parametrize("name,fn", _binary_cases(), ids=[c[0] for c in _binary_cases()])
def test_binary_grads_broadcast(torch, name, fn):
    if not all(hasattr(ember, n) for n in ("pow", "maximum", "where")) and name in (
            "pow", "maximum", "where"):
        pytest.skip(f"{name} not defined yet")
    ae, at = _pair(torch, 3, 4, positive=True)
    be, bt = _pair(torch, 4, positive=True)
    ye, yt = fn(ember, ae, be), fn(torch, at, bt)
    assert ye.grad_fn.name() == yt.grad_fn.name()
    ge, gt = _pair(torch, 3, 4, requires_grad=False)
    ye.backward(ge)
    yt.backward(gt)
    assert_same(ae.grad, at.grad)
    assert_same(be.grad, bt.grad)


UNARY = ["neg", "exp", "log", "sin", "cos", "tanh", "sigmoid", "sqrt", "relu", "abs", "reciprocal"]


@pytest.mark.parametrize("name", UNARY)
def test_unary_grads(torch, name):
    if not hasattr(ember, name):
        pytest.skip(f"{name} not defined yet")
    ae, at = _pair(torch, 5, positive=name in ("log", "sqrt"))
    ye, yt = getattr(ember, name)(ae), getattr(torch, name)(at)
    assert ye.grad_fn.name() == yt.grad_fn.name()
    ye.sum().backward()
    yt.sum().backward()
    assert_same(ae.grad, at.grad)


REDUCTIONS = [
    ("sum", lambda x: x.sum()),
    ("sum_dim", lambda x: x.sum(1)),
    ("sum_keepdim", lambda x: x.sum((0, 2), keepdim=True)),
    ("mean", lambda x: x.mean()),
    ("mean_dim", lambda x: x.mean(-1)),
    ("max", lambda x: x.max()),
    ("min_dim", lambda x: x.min(1)[0]),
    ("max_dim_keep", lambda x: x.max(2, keepdim=True)[0]),
]


@pytest.mark.parametrize("name,fn", REDUCTIONS, ids=[r[0] for r in REDUCTIONS])
def test_reduction_grads(torch, name, fn):
    ae, at = _pair(torch, 2, 3, 4)
    ye, yt = fn(ae), fn(at)
    assert ye.grad_fn.name() == yt.grad_fn.name()
    ge, gt = _pair(torch, *yt.shape, requires_grad=False)
    ye.backward(ge)
    yt.backward(gt)
    assert_same(ae.grad, at.grad)


MATMUL = [
    ("mm", lambda L, a, b, c: L.mm(a, b)),
    ("addmm", lambda L, a, b, c: L.addmm(c, a, b, beta=0.5, alpha=2.0)),
    ("mv", lambda L, a, b, c: L.mv(a, c)),
    ("dot", lambda L, a, b, c: L.dot(c, c * 2)),
    ("bmm", lambda L, a, b, c: L.bmm(a.unsqueeze(0), b.unsqueeze(0))),
]


@pytest.mark.parametrize("name,fn", MATMUL, ids=[m[0] for m in MATMUL])
def test_matmul_grads(torch, name, fn):
    ae, at = _pair(torch, 3, 3)
    be, bt = _pair(torch, 3, 3)
    ce, ct = _pair(torch, 3)
    ye, yt = fn(ember, ae, be, ce), fn(torch, at, bt, ct)
    assert ye.grad_fn.name() == yt.grad_fn.name()
    ye.sum().backward()
    yt.sum().backward()
    for e, t in ((ae, at), (be, bt), (ce, ct)):
        if t.grad is None:
            assert e.grad is None
        else:
            assert_same(e.grad, t.grad)


VIEWS = [
    ("view", lambda x: x.view(4, 6)),
    ("transpose", lambda x: x.transpose(0, 2)),
    ("permute", lambda x: x.permute(2, 0, 1)),
    ("select", lambda x: x.select(1, 2)),
    ("slice", lambda x: x[:, 1:3]),
    ("unsqueeze", lambda x: x.unsqueeze(1)),
    ("squeeze", lambda x: x[:, :1].squeeze(1)),
    ("expand", lambda x: x[:1].expand(5, 3, 4)),
    ("t", lambda x: x[0].t()),
    ("diagonal", lambda x: x.diagonal(0, 1, 2)),
    ("as_strided", lambda x: x.as_strided((2, 2), (4, 1), 1)),
    ("unfold", lambda x: x.unfold(2, 2, 1)),
    ("split", lambda x: x.split(2, 2)[1]),
    ("unbind", lambda x: x.unbind(0)[1]),
    ("clone", lambda x: x.clone()),
    ("to_double", lambda x: x.to(ember.float32 if hasattr(x, "_keyset") else __import__("torch").float32)),
]


@pytest.mark.parametrize("name,fn", VIEWS, ids=[v[0] for v in VIEWS])
def test_view_grads(torch, name, fn):
    ae, at = _pair(torch, 2, 3, 4)
    ye, yt = fn(ae), fn(at)
    assert ye.grad_fn.name() == yt.grad_fn.name()
    ge, gt = _pair(torch, *yt.shape, dtype=np.float32 if name == "to_double" else np.float64,
                   requires_grad=False)
    ye.backward(ge)
    yt.backward(gt)
    assert_same(ae.grad, at.grad)


def test_saved_attributes(torch):
    x = ember.randn(3, requires_grad=True)
    y = x * 2
    # as PyTorch: self is saved only for other's gradient (gen_variable_type's guard_for)
    assert y.grad_fn._saved_self is None
    assert torch.randn(3, requires_grad=True).mul(2).grad_fn._saved_self is None
    assert y.grad_fn._saved_other == 2
    assert (x * ember.randn(3, requires_grad=True)).grad_fn._saved_self is x
    s = x.sum()
    assert s.grad_fn._saved_self_sym_sizes == (3,)
    assert (x + x).grad_fn._saved_alpha == 1


# ---------------------------------------------------------------------------------------------
# Double backward, gradcheck

def test_double_backward(torch):
    xe, xt = _pair(torch, 4)
    for L, x in ((ember, xe), (torch, xt)):
        y = (x * x * x).sum()
        (g,) = L.autograd.grad(y, x, create_graph=True)
        g.sum().backward()
    assert_same(xe.grad, xt.grad)  # d/dx sum(3x^2) = 6x


_ACTIVATIONS = {
    "elu": lambda L, a: L.nn.functional.elu(a, alpha=1.3),
    "elu_result": lambda L, a: L.nn.functional.elu_(a * 1.0, alpha=0.7),  # (is_result)
    "selu": lambda L, a: L.nn.functional.selu(a),
    "celu": lambda L, a: L.nn.functional.celu(a, alpha=0.5),
    "gelu": lambda L, a: L.nn.functional.gelu(a),
    "gelu_tanh": lambda L, a: L.nn.functional.gelu(a, approximate="tanh"),
    "silu": lambda L, a: L.nn.functional.silu(a),
    "mish": lambda L, a: L.nn.functional.mish(a),
    "softplus": lambda L, a: L.nn.functional.softplus(a, beta=2.0, threshold=5.0),
    "logsigmoid": lambda L, a: L.nn.functional.logsigmoid(a),
    "hardswish": lambda L, a: L.nn.functional.hardswish(a),
}


@pytest.mark.parametrize("name", list(_ACTIVATIONS))
def test_activation_double_backward(torch, name):
    """Second derivatives of the activations whose backward is its own op (elu_backward,
    softplus_backward ...): a neural ODE's divergence or a gradient penalty differentiates the
    backward again (zuko's CNF with ELU needs it). Both the input's and the incoming gradient's
    second-order gradients equal PyTorch's, at kinks, zero and the softplus threshold too."""
    x = np.array([-25.0, -3.5, -3.0, -0.7, -1e-3, 0.0, 0.4, 2.5, 2.9, 3.0, 25.0])
    gy = np.linspace(0.3, 1.7, x.size)
    outs = {}
    for L in (ember, torch):
        a = L.tensor(x, requires_grad=True)
        g = L.tensor(gy, requires_grad=True)
        (d,) = L.autograd.grad(_ACTIVATIONS[name](L, a), a, g, create_graph=True)
        outs[L] = (d, *L.autograd.grad((d * d).sum(), [a, g]))
    for mine, theirs in zip(outs[ember], outs[torch]):
        assert_same(mine, theirs, rtol=1e-12, atol=1e-14)


def test_gradcheck_and_gradgradcheck():
    x = ember.randn(3, dtype=ember.float64, requires_grad=True)
    w = ember.randn(3, 3, dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(lambda a, b: ember.mv(b, a.exp()) / (a * a + 1), (x, w))
    assert ember.autograd.gradgradcheck(lambda a, b: (ember.mv(b, a) * a).sum(), (x, w))
    with pytest.raises(RuntimeError, match="Jacobian mismatch"):
        class Bad(ember.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                return a * 2

            @staticmethod
            def backward(ctx, g):
                return g * 3
        ember.autograd.gradcheck(Bad.apply, (x,))


# ---------------------------------------------------------------------------------------------
# Engine semantics

def test_autograd_grad_api(torch):
    xe, xt = _pair(torch, 3)
    ue, ut = _pair(torch, 2)
    for L, x, u in ((ember, xe, ue), (torch, xt, ut)):
        y = (x * 3).sum()
        with pytest.raises(RuntimeError) as ei:
            L.autograd.grad(y, [x, u], retain_graph=True)
        g = L.autograd.grad(y, [x, u], allow_unused=True, retain_graph=True)
        assert g[1] is None
        g = L.autograd.grad(y, [x, u], materialize_grads=True)
        assert float(g[1].sum()) == 0.0
        assert x.grad is None  # autograd.grad never writes .grad
    assert "appears to not have been used in the graph" in str(ei.value)


def test_autograd_grad_dict_inputs_batched_grads_and_errors(torch):
    """PyTorch 2.13's autograd.grad: a dict of inputs gives a dict of gradients (torchopt's
    FuncOptimizer passes its parameter dict); is_grads_batched runs one backward per row of
    the grad_outputs; materialize_grads' zeros require grad under create_graph; an empty or
    non-dict Mapping of inputs is refused with PyTorch's messages."""
    from collections import OrderedDict
    xe, xt = _pair(torch, 3)
    ue, ut = _pair(torch, 2)
    eye = np.eye(3)
    out = {}
    for L, x, u in ((ember, xe, ue), (torch, xt, ut)):
        y = x * x.detach().exp()
        g = L.autograd.grad(y.sum(), {"x": x, "u": u}, allow_unused=True, retain_graph=True)
        assert list(g) == ["x", "u"] and g["u"] is None
        batched = L.autograd.grad(y, x, L.tensor(eye), is_grads_batched=True,
                                  retain_graph=True)
        zeros = L.autograd.grad(y.sum(), [x, u], materialize_grads=True, create_graph=True)
        assert zeros[1].requires_grad and not zeros[0].requires_grad
        errors = []
        for bad in ([], {}, OrderedDict(x=x)):
            with pytest.raises((RuntimeError, TypeError)) as ei:
                L.autograd.grad(y.sum(), bad, retain_graph=True)
            errors.append((ei.type, str(ei.value)))
        with pytest.warns(FutureWarning, match="only_inputs argument is deprecated"):
            L.autograd.grad(y.sum(), x, only_inputs=False)
        out[L] = g["x"], batched[0], errors
    assert_same(out[ember][0], out[torch][0])
    assert_same(out[ember][1], out[torch][1])
    assert [(t.__name__, m) for t, m in out[ember][2]] == \
        [(t.__name__, m) for t, m in out[torch][2]]


def test_backward_inputs_and_non_leaf():
    a = ember.randn(3, requires_grad=True)
    b = ember.randn(3, requires_grad=True)
    h = a * 2
    y = (h * b).sum()
    y.backward(inputs=[a, h])
    assert b.grad is None
    np.testing.assert_allclose(a.grad._nd(), 2 * b._nd())
    np.testing.assert_allclose(h._grad._nd(), b._nd())


def test_backward_twice_error_and_retain_graph(torch):
    x = ember.randn(3, requires_grad=True)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(x.grad._nd(), 4 * x._nd())
    with pytest.raises(RuntimeError) as ei:
        y.backward()
    xt = torch.randn(3, requires_grad=True)
    yt = (xt * xt).sum()
    yt.backward()
    with pytest.raises(RuntimeError) as et:
        yt.backward()
    assert str(ei.value) == str(et.value)


def test_list_ops_save_sizes_not_tensors(torch):
    """cat, stack and block_diag save their inputs' sizes or dtypes, not the inputs (PyTorch's
    to_arg_sizes_symint / to_args_scalartypes): a second backward through their node after the
    first freed the graph works, as GradCache (sentence-transformers'
    CachedMultipleNegativesRankingLoss) does once per mini-batch. Inputs changed in place
    afterwards are no error either."""
    grads = []
    for L in (ember, torch):
        a = L.arange(2.0).requires_grad_()
        b = L.arange(3.0, 6.0).requires_grad_()
        c = L.cat([a, b])
        (c * 2).sum().backward()
        (c * 3).sum().backward()
        s = L.stack([a, b[:2]])
        (s * 2).sum().backward()
        (s * 4).sum().backward()
        d = L.block_diag(a.view(1, 2), b.view(3, 1))
        d.sum().backward()
        (d * 2).sum().backward()
        x, y = a + 0, b + 0  # (add saves no tensor)
        e = L.cat([x, y])
        x.mul_(2)
        e.sum().backward()
        grads.append((a.grad.tolist(), b.grad.tolist()))
    assert grads[0] == grads[1] == ([15.0, 15.0], [15.0, 15.0, 9.0])


def test_root_errors(torch):
    for L in (ember, torch):
        with pytest.raises(RuntimeError) as e1:
            L.ones(2).backward()
        x = L.ones(2, requires_grad=True)
        with pytest.raises(RuntimeError) as e2:
            (x * 2).backward()
        with pytest.raises(RuntimeError) as e3:
            (x * 2).sum().backward(L.ones(2))
        if L is ember:
            msgs = [str(e.value) for e in (e1, e2, e3)]
    assert msgs == [str(e.value) for e in (e1, e2, e3)]


def test_version_counter_errors(torch):
    msgs = []
    for L in (ember, torch):
        x = L.ones(3, requires_grad=True)
        y = x.sigmoid() if hasattr(L, "sigmoid") else x.exp()
        z = y * 2
        y.mul_(2)
        with pytest.raises(RuntimeError) as e:
            z.sum().backward()
        msgs.append(str(e.value))
        w = L.ones(3)
        y2 = x * w
        w.add_(1)
        with pytest.raises(RuntimeError) as e:
            y2.sum().backward()
        msgs.append(str(e.value))
    assert msgs[:2] == msgs[2:]


def test_unsaved_inputs_may_change(torch):
    """A tensor saved only for another input's gradient is not saved when that input needs none
    (PyTorch's guard_for): changing it in place afterwards is no error. Others still are."""
    grads = []
    for L in (ember, torch):
        x = L.ones(3, requires_grad=True)
        h = x * 2
        c = L.full((3,), 3.0)
        z = h * c  # saves c (for h's gradient), not h
        h.add_(1)
        z.sum().backward()
        grads.append(x.grad.tolist())
        w = L.ones(3, requires_grad=True)
        m = L.ones(2, 3)
        y = L.mm(m, w.view(3, 1))  # saves m (for w's gradient)
        m.mul_(2)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()
    assert grads[0] == grads[1] == [6.0, 6.0, 6.0]


def test_inplace_leaf_errors(torch):
    for L in (ember, torch):
        x = L.ones(3, requires_grad=True)
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used "
                                               "in an in-place operation."):
            x.add_(1)
        with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
            x[0:2].add_(1)
        with L.no_grad():
            x.add_(1)  # allowed without grad mode
        assert float(x.sum()) == 6.0


def test_inplace_recorded_and_views(torch):
    res = []
    for L in (ember, torch):
        x = L.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
        y = x * 1
        y.mul_(x)  # y = x^2 via an in-place op: rebase history
        assert y.grad_fn.name() == "MulBackward0"
        z = x * 2
        v = z[1:3]
        v.mul_(3)  # in-place through a view: CopySlices on the base
        assert z.grad_fn.name() == "torch::autograd::CopySlices"
        (y.sum() + z.sum()).backward()
        res.append(x.grad)
    assert_same(res[0], res[1])


def test_accumulate_grad_semantics():
    x = ember.ones(3, requires_grad=True)
    (x * 2).sum().backward()
    g = x.grad
    (x * 3).sum().backward()
    assert x.grad is g  # accumulated in place without create_graph
    np.testing.assert_allclose(g._nd(), [5, 5, 5])
    (x * x).sum().backward(create_graph=True)
    assert x.grad is not g and x.grad.grad_fn is not None  # new tensor, with a graph
    y = ember.ones(2, requires_grad=True)
    seed = ember.ones(2)
    y.backward(seed)
    assert y.grad is not seed  # a user-held gradient is copied, never stolen


def test_non_leaf_grad_warning_and_retain_grad(torch):
    x = ember.ones(2, requires_grad=True)
    y = x * 2
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert y.grad is None
    assert "is not a leaf Tensor is being accessed" in str(w[0].message)
    y.retain_grad()
    assert y.retains_grad
    (y * y).sum().backward()
    np.testing.assert_allclose(y.grad._nd(), [4, 4])


def _retained_after_inplace(L):
    """The .grad of tensors that retain grad and are then written in place (directly, by
    in-place dropout's mask, through a view, as the base of a view), and a hook registered
    before the write."""
    out, log = [], []
    a = L.ones(3, requires_grad=True)
    x = a * 1
    x.retain_grad()
    x.register_hook(lambda g: log.append(g.tolist()))
    x.mul_(2)
    (x * L.tensor([1.0, 2.0, 3.0])).sum().backward()
    out += [x.grad, a.grad]
    L.manual_seed(0)
    a = L.ones(1, 4, 2, 2, requires_grad=True)
    x = a * 1
    x.retain_grad()
    (L.nn.Dropout2d(p=0.5, inplace=True)(x) * L.arange(16.0).view(1, 4, 2, 2)).sum().backward()
    out += [x.grad, a.grad]
    a = L.arange(6.0).requires_grad_()
    b = a * 1
    b.retain_grad()
    v = b[2:4]
    v.mul_(3)
    (b * L.arange(6.0)).sum().backward()
    out += [b.grad, a.grad]
    a = L.arange(6.0).requires_grad_()
    b = a * 1
    v = b[2:4]
    v.retain_grad()
    b.mul_(2)
    (v * L.tensor([5.0, 7.0])).sum().backward()
    out += [v.grad, a.grad]
    return out, log


def test_retain_grad_follows_inplace_writes(torch):
    """PyTorch moves a tensor's retains_grad hook to the grad_fn an in-place op gives it:
    .grad is the gradient of the value after the write (it was the value's before)."""
    mine, log = _retained_after_inplace(ember)
    theirs, their_log = _retained_after_inplace(torch)
    assert log == their_log
    for e, t in zip(mine, theirs):
        assert_same(e, t)


def test_hooks_order(torch):
    logs = []
    for L in (ember, torch):
        log = []
        a = L.ones(2, requires_grad=True)
        b = a * 2
        c = b.sin() if hasattr(L, "sin") else b.exp()
        b.register_hook(lambda g: log.append("hook on b"))
        b.grad_fn.register_prehook(lambda go: log.append("MulBackward0 pre-hook"))
        b.grad_fn.register_hook(lambda gi, go: log.append("MulBackward0 post-hook"))
        a.register_hook(lambda g: log.append("hook on leaf a"))
        a.register_post_accumulate_grad_hook(lambda t: log.append("post-accumulate hook"))
        h = b.register_hook(lambda g: log.append("removed"))
        h.remove()
        c.sum().backward()
        logs.append(log)
    assert logs[0] == logs[1]


def test_hook_replaces_grad():
    x = ember.ones(3, requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: g * 10)
    y.sum().backward()
    np.testing.assert_allclose(x.grad._nd(), [20, 20, 20])


def test_not_implemented_fallback():
    lib = ember.library.Library("ag_test", "DEF")
    lib.define("twice(Tensor x) -> Tensor")
    lib.impl("twice", lambda x: ember.ops.aten.mul.Tensor._call(x, 2) if False else x.clone(),
             "CPU")
    try:
        x = ember.ones(2, requires_grad=True)
        y = ember.ops.ag_test.twice(x)
        assert y.requires_grad and y.grad_fn.name() == "torch::autograd::NotImplemented"
        with pytest.raises(RuntimeError, match="the derivative for 'ag_test::twice' is not "
                                               "implemented."):
            y.sum().backward()
        z = ember.ops.ag_test.twice(ember.ones(2))  # nothing requires grad: plain redispatch
        assert not z.requires_grad and z.grad_fn is None
    finally:
        lib._destroy()


def test_out_variant_error(torch):
    msgs = []
    for L in (ember, torch):
        x = L.ones(2, requires_grad=True)
        with pytest.raises(RuntimeError) as e:
            L.add(x, x, out=L.empty(2))
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1]


# ---------------------------------------------------------------------------------------------
# Grad modes

def test_no_grad_modes():
    x = ember.ones(2, requires_grad=True)
    with ember.no_grad():
        assert not ember.is_grad_enabled()
        y = x * 2
        with ember.enable_grad():
            assert (x * 2).requires_grad
    assert not y.requires_grad and y.grad_fn is None

    @ember.no_grad()
    def f(t):
        return t * 2
    assert not f(x).requires_grad
    with ember.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert ember.is_grad_enabled()
    ember.set_grad_enabled(False)
    assert not ember.is_grad_enabled()
    ember.set_grad_enabled(True)


def test_inference_mode_keysets(torch):
    x = ember.ones(2, requires_grad=True)
    with ember.inference_mode():
        assert ember.is_inference_mode_enabled()
        i = ember.ones(2)
        j = x * 2
    assert i.is_inference() and j.is_inference() and not j.requires_grad
    assert i._dispatch_key_set() == ember._C.DispatchKeySet(["CPU", "AutocastCPU"])
    assert str(torch._C._dispatch_keys(torch.ones(1))) == \
        "DispatchKeySet(CPU, ADInplaceOrView, AutogradCPU, AutocastCPU)"
    with pytest.raises(RuntimeError, match="Inference tensors cannot be saved for backward"):
        (x * i).sum().backward()
    with pytest.raises(RuntimeError, match="Inplace update to inference tensor outside "
                                           "InferenceMode is not allowed"):
        i.add_(1)
    with pytest.raises(RuntimeError, match="Inference tensors do not track version counter."):
        i._version
    with pytest.raises(RuntimeError, match="Setting requires_grad=True on inference tensor"):
        i.requires_grad_()


# ---------------------------------------------------------------------------------------------
# custom Function

def test_function_setup_context_and_flags(torch):
    class Sq(ember.autograd.Function):
        @staticmethod
        def forward(x, k):
            return x * x * k, (x > 0)

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, k = inputs
            ctx.save_for_backward(x)
            ctx.k = k
            ctx.mark_non_differentiable(output[1])
            assert ctx.needs_input_grad == (True, False)

        @staticmethod
        def backward(ctx, g, _g2):
            (x,) = ctx.saved_tensors
            return g * 2 * x * ctx.k, None

    x = ember.tensor([1.0, -2.0], requires_grad=True)
    y, m = Sq.apply(x, 3.0)
    assert not m.requires_grad and y.grad_fn.name() == "SqBackward"
    y.sum().backward()
    np.testing.assert_allclose(x.grad._nd(), [6.0, -12.0])


def test_function_wrong_number_of_grads(torch):
    msgs = []
    for L in (ember, torch):
        class Two(L.autograd.Function):
            @staticmethod
            def forward(ctx, a, b):
                return a * b

            @staticmethod
            def backward(ctx, g):
                return g
        x = L.ones(2, requires_grad=True)
        with pytest.raises(RuntimeError) as e:
            Two.apply(x, x).sum().backward()
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1]


def test_function_mark_dirty_and_once_differentiable():
    class AddOne(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        @ember.autograd.once_differentiable
        def backward(ctx, g):
            assert not ember.is_grad_enabled()
            return g

    a = ember.ones(2, requires_grad=True)
    b = a * 1
    c = AddOne.apply(b)
    assert c is b and b.grad_fn.name() == "AddOneBackward"
    c.sum().backward()
    np.testing.assert_allclose(a.grad._nd(), [1, 1])


# ---------------------------------------------------------------------------------------------
# Coverage and memory

# Ops with tensor inputs and outputs that legitimately have no formula, and why. They fall to
# the autograd fallback (a NotImplemented node if an input requires grad).
EXEMPT_PREFIXES = {
    # integral/boolean only: no floating-point inputs can reach them (PyTorch has no formula)
    "aten::bitwise_and": "integral/bool only", "aten::bitwise_or": "integral/bool only",
    "aten::bitwise_xor": "integral/bool only", "aten::bitwise_not": "integral/bool only",
    "aten::bitwise_and_": "integral/bool only", "aten::bitwise_or_": "integral/bool only",
    "aten::bitwise_xor_": "integral/bool only", "aten::bitwise_not_": "integral/bool only",
    "aten::bitwise_left_shift": "integral only", "aten::bitwise_left_shift_": "integral only",
    "aten::bitwise_right_shift": "integral only", "aten::bitwise_right_shift_": "integral only",
    "aten::logical_and_": "bool result", "aten::logical_or_": "bool result",
    "aten::logical_xor_": "bool result", "aten::logical_not_": "bool result",
    # quantized tensors: integer or quantized inputs and outputs, nothing to differentiate
    # (PyTorch has no formula; dequantize of a float that requires grad records a node whose
    # backward raises, as here)
    "aten::_empty_per_channel_affine_quantized": "quantized", "aten::empty_quantized": "quantized",
    "aten::_make_per_channel_quantized_tensor": "quantized", "aten::int_repr": "quantized",
    "aten::_make_per_tensor_quantized_tensor": "quantized", "aten::dequantize": "quantized",
    "aten::q_per_channel_scales": "quantized", "aten::q_per_channel_zero_points": "quantized",
    "aten::quantize_per_tensor_dynamic": "quantized",
    # PyTorch has no formula either: backward raises "the derivative for ... is not implemented"
    "aten::floor_divide": "no formula in PyTorch", "aten::floor_divide_": "no formula in PyTorch",
    "aten::remainder.Scalar_Tensor": "no formula in PyTorch",
    "aten::_scaled_mm": "no formula in PyTorch", "aten::_scaled_mm_v2": "no formula in PyTorch",
    "aten::heaviside": "no formula in PyTorch", "aten::heaviside_": "no formula in PyTorch",
    "aten::scatter.reduce": "no formula in PyTorch", "aten::scatter_.reduce": "no formula in PyTorch",
    "aten::scatter.value_reduce": "no formula in PyTorch",
    "aten::scatter_.value_reduce": "no formula in PyTorch",
    "aten::_masked_softmax_backward": "no formula in PyTorch",
    "aten::set_.source_Storage": "not_implemented in PyTorch (grad_fn NotImplemented)",
    "aten::set_.source_Storage_storage_offset": "not_implemented in PyTorch",
    "aten::set_.source_Tensor": "not_implemented in PyTorch (grad_fn NotImplemented)",
    "aten::set_.source_Tensor_storage_offset": "not_implemented in PyTorch",
    "aten::set_": "not_implemented in PyTorch (grad_fn NotImplemented)",
    "aten::_native_multi_head_attention": "no formula in PyTorch (inference fast path)",
    "aten::_transform_bias_rescale_qkv": "no formula in PyTorch (inference fast path)",
    "aten::_transformer_encoder_layer_fwd": "no formula in PyTorch (inference fast path)",
    "aten::copy": "no formula in PyTorch (functionalization's form of copy_)",
    "aten::normal_functional": "no formula in PyTorch (functionalization's form of normal_)",
    "aten::detach_copy": "no formula in PyTorch (grad_fn NotImplemented)",
    "aten::_addmm_activation": "no formula in PyTorch (grad_fn NotImplemented)",
    "aten::quantized_max_pool1d": "no formula in PyTorch (quantized inputs only)",
    "aten::quantized_max_pool2d": "no formula in PyTorch (quantized inputs only)",
    "aten::_fake_quantize_learnable_per_tensor_affine_backward": "no formula in PyTorch",
    "aten::_fake_quantize_learnable_per_channel_affine_backward": "no formula in PyTorch",
    # hand-written in PyTorch: resizing a tensor that requires grad is an error there
    "aten::resize_": "manual in PyTorch (errors when requires_grad)",
    # SyncBatchNorm's primitives (its autograd.Function differentiates them) and sparse ops
    # without derivatives.yaml entries: grad_fn NotImplemented in PyTorch too
    **{f"aten::{n}": "no formula in PyTorch" for n in (
        "batch_norm_backward_elemt", "batch_norm_backward_reduce", "batch_norm_elemt",
        "batch_norm_gather_stats", "batch_norm_gather_stats_with_counts", "batch_norm_stats",
        "batch_norm_update_stats", "hspmm", "native_norm", "native_norm.ScalarOpt_dim_dtype",
        "sspaddmm", "_foreach_addcdiv.Tensor", "_foreach_addcmul.Tensor", "_foreach_copy",
        "_foreach_powsum.Scalar", "_foreach_zero")},
    # index conversions: integer outputs only
    "aten::_convert_indices_from_coo_to_csr": "integer result",
    "aten::_convert_indices_from_csr_to_coo": "integer result",
}


def _needs_formula(entry):
    from ember._dispatch.keys import K
    s = entry.schema
    if s.kind_is_out:
        return False  # out= variants are never differentiable
    if not any(a.base == "Tensor" for a in s.arguments) or \
            not any(r.base == "Tensor" for r in s.returns):
        return False  # factories and scalar-returning ops have nothing to differentiate
    return not entry.has_kernel(K.CompositeImplicitAutograd)  # CIA: decomposition is recorded


def test_every_differentiable_op_has_a_formula():
    from ember._dispatch.dispatcher import _operators
    missing = [q for q, e in sorted(_operators.items())
               if q.startswith("aten::") and q not in D.derivatives and q not in D.never_recorded
               and _needs_formula(e) and q not in EXEMPT_PREFIXES
               and q.split(".")[0] not in EXEMPT_PREFIXES]
    assert not missing, missing


def test_schema_mismatches_are_reported():
    bad = {k: v for k, v in D.skipped.items() if v.startswith("schema mismatch")}
    assert not bad, bad


def test_training_loop_memory_does_not_grow():
    w = ember.randn(8, 8, requires_grad=True)
    x = ember.randn(4, 8)
    gc.collect()
    gc.disable()
    try:
        import ember.autograd.graph as G
        counts = []
        for step in range(1000):
            loss = ember.mm(x, w).sum()
            loss.backward()
            with ember.no_grad():
                w.sub_(w.grad * 0.001)
            w.grad = None
            if step in (10, 999):
                counts.append(sum(1 for o in gc.get_objects() if isinstance(o, G.Node)))
    finally:
        gc.enable()
    assert counts[1] <= counts[0]


@pytest.mark.parametrize("fn", [lambda t: t.exp(), lambda t: t.sigmoid(), lambda t: t.tanh(),
                                lambda t: t.sqrt(), lambda t: t.reciprocal()],
                         ids=["exp", "sigmoid", "tanh", "sqrt", "reciprocal"])
def test_double_backward_through_saved_results(torch, fn):
    """Formulas that use ``result``: the saved output is unpacked with its grad_fn, so the
    second derivative flows through it."""
    x = ember.tensor([0.5, 1.0, 2.0], dtype=ember.float64, requires_grad=True)
    tx = torch.tensor([0.5, 1.0, 2.0], dtype=torch.float64, requires_grad=True)
    outs = []
    for lib, inp in ((ember, x), (torch, tx)):
        (g,) = lib.autograd.grad(fn(inp).sum(), inp, create_graph=True)
        (gg,) = lib.autograd.grad(g.sum(), inp)
        outs.append(gg)
    assert_same(outs[0], outs[1], rtol=1e-10, atol=1e-12)


def test_saved_tensors_in_formula_order(torch):
    """Tensors are saved in the order the formulas name them (what pack hooks observe)."""
    order = {}
    for lib in (ember, torch):
        seen = []
        x = lib.ones(2, requires_grad=True)
        y = lib.full((2,), 3.0, requires_grad=True)
        with lib.autograd.graph.saved_tensors_hooks(lambda t: seen.append(t.tolist()) or t,
                                                    lambda t: t):
            x * y
        order[lib.__name__] = seen
    assert order["ember"] == order["torch"]


def test_resize_of_a_tensor_that_requires_grad_is_refused():
    """PyTorch's manual autograd kernel of resize_ (and resize_as_, which decomposes to it)."""
    for t in (ember.ones(3, requires_grad=True), ember.ones(3, requires_grad=True) * 2):
        with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
            t.resize_(2)
        with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
            t.resize_as_(ember.ones(2))
    y = ember.ones(2)
    y.resize_as_(ember.ones(2, 3))
    assert y.shape == (2, 3)


def test_sequence_nr_counts_recorded_nodes_and_accumulators_take_none():
    # PyTorch: grad_fn._sequence_nr() numbers nodes in recording order per thread, and
    # AccumulateGrad is Node(UINT64_MAX) without taking a number
    a = ember.ones(1, requires_grad=True)
    b = a * 2          # creates a's AccumulateGrad, then MulBackward0
    c = b.exp()
    d = ember.ones(1, requires_grad=True) + c
    acc = b.grad_fn.next_functions[0][0]
    assert acc.name() == "torch::autograd::AccumulateGrad"
    assert acc._sequence_nr() == 2 ** 64 - 1
    first = b.grad_fn._sequence_nr()
    assert c.grad_fn._sequence_nr() == first + 1
    assert d.grad_fn._sequence_nr() == first + 2
