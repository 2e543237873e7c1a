"""AOTAutograd (ember._functorch.aot_autograd): joint graphs partitioned into forward and
backward, run as an autograd.Function, equal eager's values, gradients and state."""
import copy
import itertools
import os
import sys

import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember import library
from ember._decomp import core_aten_decompositions, is_core
from ember._functorch.aot_autograd import (aot_autograd, aot_function, aot_module,
                                           aot_module_simplified, default_partition,
                                           min_cut_rematerialization_partition, nop,
                                           saved_tensor_bytes)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "examples"))
from train_digits import DigitsCNN  # noqa: E402
from train_gpt import GPT, Block  # noqa: E402

PARTITIONERS = [default_partition, min_cut_rematerialization_partition]
_ids = itertools.count()


class Capture:
    """A compiler that keeps the graphs it is given and runs them as they are."""

    def __init__(self):
        self.graphs = []

    def __call__(self, gm, example_inputs):
        self.graphs.append(gm)
        return gm


def _bad_ops(gm):
    """Ops outside core ATen or that mutate (extern ops: other namespaces)."""
    bad = []
    for n in gm.graph.nodes:
        if n.op == "call_function" and hasattr(n.target, "_schema"):
            if n.target._schema.is_mutable or (n.target.namespace == "aten"
                                               and not is_core(n.target)):
                bad.append(str(n.target))
    return bad


@pytest.mark.parametrize("partition", PARTITIONERS, ids=lambda p: p.__name__)
def test_function_values_and_grads(partition):
    def f(x, w, b):
        return ((x @ w + b).relu().sin() * 2).sum(0), (x * 3).detach()
    ember.manual_seed(0)
    x, w, b = (ember.randn(4, 3, requires_grad=True), ember.randn(3, 5, requires_grad=True),
               ember.randn(5, requires_grad=True))
    cap = Capture()
    cf = aot_function(f, cap, partition_fn=partition,
                      decompositions=core_aten_decompositions())
    out, aux = cf(x, w, b)
    got = ember.autograd.grad(out.sum(), (x, w, b))
    eout, eaux = f(x, w, b)
    want = ember.autograd.grad(eout.sum(), (x, w, b))
    assert ember.allclose(out, eout) and ember.allclose(aux, eaux) and not aux.requires_grad
    for g, e in zip(got, want):
        assert ember.allclose(g, e, atol=1e-6)
    assert len(cap.graphs) == 2  # forward and backward
    for gm in cap.graphs:
        assert not _bad_ops(gm)
    cf(x, w, b)  # a second call reuses the compiled graphs
    assert len(cap.graphs) == 2


def test_inference_graph_and_input_mutation():
    def f(x, buf):
        buf.add_(x)
        return buf * 2, x.view(-1)
    cap = Capture()
    cf = aot_function(f, cap)
    x, buf = ember.randn(2, 3), ember.zeros(2, 3)
    x2, buf2 = x.clone(), buf.clone()
    with ember.no_grad():
        out, alias = cf(x, buf)
    want, _ = f(x2, buf2)
    assert ember.allclose(out, want) and ember.allclose(buf, buf2)  # the caller sees the add_
    assert alias._base is x  # an output aliasing an input is a view of it again
    assert len(cap.graphs) == 1  # inference: no backward graph
    assert not [n for n in cap.graphs[0].graph.nodes if n.op == "call_function"
                and n.target._schema.is_mutable]


def test_mutating_leaf_that_requires_grad_raises():
    cf = aot_function(lambda x: x.mul_(2), nop)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        cf(ember.randn(3, requires_grad=True))


def test_double_backward_raises():
    cf = aot_function(lambda x: (x * x).sum(), nop)
    x = ember.randn(3, requires_grad=True)
    out = cf(x)
    with pytest.raises(RuntimeError, match="double backward"):
        ember.autograd.grad(out, x, create_graph=True)


def test_gpt_block_graphs_are_core_and_functional():
    ember.manual_seed(0)
    block = Block(32, 4, 0.1)
    x = ember.randn(2, 8, 32, requires_grad=True)
    saved = {}
    for partition in PARTITIONERS:
        cap = Capture()
        m = aot_module(block, cap, partition_fn=partition,
                       decompositions=core_aten_decompositions())
        m(x).sum().backward()
        fw, bw = cap.graphs
        assert not _bad_ops(fw) and not _bad_ops(bw), (_bad_ops(fw), _bad_ops(bw))
        saved[partition.__name__] = saved_tensor_bytes(fw)
        ops = {str(n.target) for n in fw.graph.nodes if n.op == "call_function"}
        assert "aten.native_dropout.default" in ops
    # recomputing pointwise chains saves less than saving everything backward reads
    assert 0 < saved["min_cut_rematerialization_partition"] < saved["default_partition"]


def _train(model, make_batch, steps, compiled, seed=1, opt=None):
    ember.manual_seed(seed)
    run = aot_module(model, nop, partition_fn=min_cut_rematerialization_partition,
                     decompositions=core_aten_decompositions()) if compiled else model
    opt = (opt or ember.optim.AdamW)(model.parameters(), lr=1e-2)
    losses = []
    for step in range(steps):
        inputs, loss_fn = make_batch(step)
        loss = loss_fn(run(*inputs))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    return losses


def test_gpt_training_matches_eager_with_dropout():
    ember.manual_seed(0)
    model = GPT(20, context=8, width=32, n_layer=2, n_head=4, dropout=0.1)
    twin, sgd_model, sgd_twin = (copy.deepcopy(model) for _ in range(3))
    data = ember.randint(0, 20, (64,), generator=ember.Generator().manual_seed(3))

    def batch(step):
        idx = ember.stack([data[i:i + 8] for i in range(step, step + 4)])
        tgt = ember.stack([data[i + 1:i + 9] for i in range(step, step + 4)])
        return (idx, tgt), lambda out: out[1]
    eager = _train(model, batch, 5, False)
    compiled = _train(twin, batch, 5, True)
    assert max(abs(a - b) for a, b in zip(eager, compiled)) < 1e-5, (eager, compiled)
    # parameters are compared after SGD: AdamW turns rounding noise in near-zero gradients
    # (the key bias, which softmax ignores) into full-size steps
    sgd_e = _train(sgd_model, batch, 3, False, opt=ember.optim.SGD)
    sgd_c = _train(sgd_twin, batch, 3, True, opt=ember.optim.SGD)
    assert max(abs(a - b) for a, b in zip(sgd_e, sgd_c)) < 1e-5
    for p, q in zip(sgd_model.parameters(), sgd_twin.parameters()):
        assert ember.allclose(p, q, atol=1e-5)


def test_digits_training_matches_eager():
    ember.manual_seed(0)
    model = DigitsCNN(8)
    twin = copy.deepcopy(model)
    g = ember.Generator().manual_seed(5)
    xs, ys = ember.randn(16, 1, 8, 8, generator=g), ember.randint(0, 10, (16,), generator=g)

    def batch(step):
        return (xs,), lambda out: F.cross_entropy(out, ys)
    eager = _train(model, batch, 4, False)
    compiled = _train(twin, batch, 4, True)
    assert max(abs(a - b) for a, b in zip(eager, compiled)) < 1e-5, (eager, compiled)


def test_batchnorm_buffers_updated():
    ember.manual_seed(0)
    net = nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6), nn.ReLU())
    twin = copy.deepcopy(net)
    x = ember.randn(8, 4)
    cap = Capture()
    m = aot_module(twin, cap, decompositions=core_aten_decompositions())
    for _ in range(2):
        net(x).sum().backward()
        m(x).sum().backward()
    bn, bn2 = net[1], twin[1]
    assert ember.allclose(bn.running_mean, bn2.running_mean, atol=1e-6)
    assert ember.allclose(bn.running_var, bn2.running_var, atol=1e-6)
    assert int(bn2.num_batches_tracked) == 2
    for p, q in zip(net.parameters(), twin.parameters()):
        assert ember.allclose(p.grad, q.grad, atol=1e-5)
    assert not _bad_ops(cap.graphs[0]) and not _bad_ops(cap.graphs[1])


def test_custom_op_myadd_survives():
    ns = f"aotlib{next(_ids)}"

    @library.custom_op(f"{ns}::myadd", mutates_args=())
    def myadd(x: ember.Tensor, y: ember.Tensor) -> ember.Tensor:
        return x + y

    @myadd.register_fake
    def _(x, y):
        return ember.empty_like(x)

    def setup_context(ctx, inputs, output):
        pass

    def backward(ctx, grad):
        return grad, grad
    myadd.register_autograd(backward, setup_context=setup_context)

    def f(x, y):
        return (getattr(ember.ops, ns).myadd(x, y) * x).sum()
    x, y = ember.randn(3, requires_grad=True), ember.randn(3, requires_grad=True)
    cap = Capture()
    got = ember.autograd.grad(aot_function(f, cap)(x, y), (x, y))
    want = ember.autograd.grad(f(x, y), (x, y))
    for g, e in zip(got, want):
        assert ember.allclose(g, e)
    assert f"{ns}.myadd.default" in {str(n.target) for n in cap.graphs[0].graph.nodes}
    ember._dynamo.reset()
    explained = ember._dynamo.explain(f)(x, y)
    assert (explained.graph_count, explained.graph_break_count) == (1, 0)
    got = ember.autograd.grad(ember.compile(f, backend="aot_eager")(x, y), (x, y))
    for g, e in zip(got, want):
        assert ember.allclose(g, e)
    # Inductor calls it from its wrappers (the Python one, and the C one of reduce-overhead)
    # in its own namespace, not aten's
    for mode in (None, "reduce-overhead"):
        ember._dynamo.reset()
        got = ember.autograd.grad(ember.compile(f, mode=mode)(x, y), (x, y))
        for g, e in zip(got, want):
            assert ember.allclose(g, e)


def test_custom_op_clip_norm_survives():
    ns = f"aotlib{next(_ids)}"

    @library.custom_op(f"{ns}::clip_norm", mutates_args=())
    def clip_norm(x: ember.Tensor, max_norm: float) -> ember.Tensor:
        n = x.norm()
        scale = (max_norm / (n + 1e-12)).clamp(max=1.0)
        return x * scale

    @clip_norm.register_fake
    def _(x, max_norm):
        return ember.empty_like(x)

    def _bwd(ctx, g):
        x, scale = ctx.saved
        return g * scale, None

    def _setup(ctx, inputs, output):
        x, max_norm = inputs
        n = x.norm()
        scale = (max_norm / (n + 1e-12)).clamp(max=1.0)
        ctx.saved = (x, scale)
    clip_norm.register_autograd(_bwd, setup_context=_setup)

    def f(x):
        return (clip_norm(x * 2, 1.0) ** 2).sum()
    x = ember.randn(5, requires_grad=True)
    got = ember.autograd.grad(aot_function(f, nop,
                                           decompositions=core_aten_decompositions())(x), x)
    want = ember.autograd.grad(f(x), x)
    assert ember.allclose(got[0], want[0], atol=1e-6)
    ember._dynamo.reset()
    explained = ember._dynamo.explain(f)(x)
    assert (explained.graph_count, explained.graph_break_count) == (1, 0)
    got = ember.autograd.grad(ember.compile(f, backend="aot_eager_decomp_partition")(x), x)
    assert ember.allclose(got[0], want[0], atol=1e-6)


def test_autograd_function_survives():
    class Square(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * g * x  # deliberately not 2x: the traced backward must be this one

    def f(x):
        return Square.apply(x).sum()
    x = ember.randn(4, requires_grad=True)
    (got,) = ember.autograd.grad(aot_function(f, nop)(x), x)
    assert ember.allclose(got, 3 * x)


def test_hooks_compose():
    x = ember.randn(3, requires_grad=True)
    seen = []
    cf = aot_function(lambda x: x.exp(), nop)
    y = cf(x)
    y.register_hook(lambda g: seen.append(g) or g * 2)
    y.sum().backward()
    assert seen and ember.allclose(x.grad, 2 * x.exp())


def test_backend_and_simplified():
    ember.manual_seed(0)
    net = nn.Sequential(nn.Linear(3, 4), nn.Tanh())
    gm = ember.fx.symbolic_trace(net)
    x = ember.randn(2, 3)
    fwd_graphs = Capture()
    backend = aot_autograd(fw_compiler=fwd_graphs, partition_fn=min_cut_rematerialization_partition,
                           decompositions=core_aten_decompositions())
    compiled = backend(gm, [x])
    out = compiled(x)
    out.sum().backward()
    ref = copy.deepcopy(net)
    ref(x).sum().backward()
    assert ember.allclose(out, net(x))
    for p, q in zip(net.parameters(), ref.parameters()):
        assert ember.allclose(p.grad, q.grad)
    assert len(fwd_graphs.graphs) == 2  # bw_compiler defaults to fw_compiler
    assert callable(aot_module_simplified)


def test_logs_print_graphs(monkeypatch, capsys):
    monkeypatch.setenv("TORCH_LOGS", "aot_graphs,aot_joint_graph")
    aot_function(lambda x: x.sin(), nop)(ember.randn(2, requires_grad=True))
    err = capsys.readouterr().err
    assert "Joint graph" in err and "Forward graph" in err and "Backward graph" in err
    assert "aten.sin" in err


def test_autocast_region_and_retrace():
    a = ember.randn(4, 4, requires_grad=True)
    cf = aot_function(lambda a: (a @ a).sum(), nop)
    with ember.autocast("cpu", dtype=ember.bfloat16):
        inside = cf(a)
        want = (a @ a).sum()
    assert inside.dtype == want.dtype == ember.bfloat16
    assert ember.allclose(inside.float(), want.float())
    outside = cf(a)  # not the autocast graph
    assert outside.dtype == ember.float32 and len(cf._aot_cache) == 2
    (g,) = ember.autograd.grad(inside, a)
    (ge,) = ember.autograd.grad(want, a)
    assert ember.allclose(g, ge)


def test_saved_tensor_hooks_see_compiled_saves():
    packed = []
    x = ember.randn(3, requires_grad=True)
    cf = aot_function(lambda x: (x.sin() * x).sum(), nop)
    cf(x)  # traced outside the hooks
    with ember.autograd.graph.saved_tensors_hooks(lambda t: packed.append(t) or t, lambda t: t):
        y = cf(x)
    assert packed  # the compiled Function's saved values went through the hooks
    y.backward()
    assert ember.allclose(x.grad, x.cos() * x + x.sin())


def test_bad_input_names_the_op():
    ns = f"aotnometa{next(_ids)}"
    lib = library.Library(ns, "DEF")
    lib.define("foo(Tensor x) -> Tensor")
    impl = library.Library(ns, "IMPL", "CPU")
    impl.impl("foo", lambda x: x * 2)
    with pytest.raises(NotImplementedError, match=f"{ns}::foo"):
        aot_function(lambda x: getattr(ember.ops, ns).foo(x), nop)(ember.randn(3))
    from ember._subclasses.fake_tensor import DynamicOutputShapeException
    with pytest.raises(DynamicOutputShapeException, match="nonzero"):
        aot_function(lambda x: x.nonzero(), nop)(ember.randn(3))
    del lib, impl


def test_ready_made_backends():
    from ember._functorch.aot_autograd import aot_eager, aot_eager_decomp_partition
    ember.manual_seed(0)
    net = nn.Sequential(nn.Linear(3, 4), nn.GELU(), nn.Dropout(0.2))
    gm = ember.fx.symbolic_trace(net)
    x = ember.randn(5, 3)
    for backend in (aot_eager, aot_eager_decomp_partition):
        ember.manual_seed(7)
        out = backend(gm, [x])(x)
        ember.manual_seed(7)
        assert ember.allclose(out, net(x))  # the same dropout mask as eager for the seed


@pytest.mark.parametrize("partition", PARTITIONERS, ids=lambda p: p.__name__)
def test_gpt_gradients_match_eager_tied_weights(partition):
    """GPT ties head.weight to tok_emb.weight: the tensor is one graph input whose gradient
    sums both uses."""
    ember.manual_seed(0)
    model = GPT(30, context=8, width=32, n_layer=1, n_head=4, dropout=0.1)
    twin = copy.deepcopy(model)
    idx, tgt = ember.randint(0, 30, (3, 8)), ember.randint(0, 30, (3, 8))
    ember.manual_seed(11)
    model(idx, tgt)[1].backward()
    compiled = aot_module(twin, nop, partition_fn=partition,
                          decompositions=core_aten_decompositions())
    ember.manual_seed(11)
    compiled(idx, tgt)[1].backward()
    for (name, p), q in zip(model.named_parameters(), twin.parameters()):
        assert ember.allclose(p.grad, q.grad, atol=1e-6), name


def test_output_structures_and_identity():
    x = ember.randn(3, 2, requires_grad=True)
    out = aot_function(lambda x, scale=2: {"a": x * scale, "n": [x.t(), 3]}, nop)(x, scale=3)
    assert type(out) is dict and type(out["n"]) is list and out["n"][1] == 3
    (out["a"].sum() + out["n"][0].sum()).backward()
    assert ember.allclose(x.grad, ember.full((3, 2), 4.0))
    y = aot_function(lambda x: x, nop)(x)
    assert ember.allclose(y, x)
    from ember._subclasses.fake_tensor import DataDependentOutputException
    with pytest.raises(DataDependentOutputException, match="_local_scalar_dense"):
        aot_function(lambda x: x * x.sum().item(), nop)(x)


def test_per_call_key_of_the_params_first_form():
    # aot_module_simplified calls aot_function(params, *args): that form skips tree_flatten, and
    # must still retrace on a changed scalar, dtype or requires_grad, and merge a repeated tensor
    from ember._functorch.aot_autograd import aot_function
    fw_inputs = []

    def fw(gm, inputs):
        fw_inputs.append(len(inputs))
        return gm
    f = aot_function(lambda params, x, s: (params[0] * x + params[1] * s).sum(), fw,
                     lambda gm, inputs: gm)
    w = ember.ones(3, requires_grad=True)
    x = ember.arange(3.0)
    f([w, w], x, 2.0).backward()             # the tied weight is one graph input
    assert fw_inputs == [2] and w.grad.tolist() == [2.0, 3.0, 4.0]
    f([w, w], x, 2.0)
    assert len(f._aot_cache) == 1             # same key: no retrace
    f([w, w], x, 3.0)                         # another scalar
    f([w, w], x.double(), 3.0)                # another dtype
    f([w.detach(), w], x, 3.0)                # not the same tensor twice any more
    assert len(f._aot_cache) == 4 and fw_inputs[-1] == 3
