"""Dynamic shapes: SymInt/ShapeEnv, symbolic FakeTensors, make_fx(tracing_mode="symbolic") and
ember.compile(dynamic=None|True|False) / mark_dynamic with shape guards."""
import logging
import os
import sys

import pytest
import sympy

import ember
import ember._dynamo as dynamo
from ember._dynamo.source import LocalSource
from ember._subclasses.fake_tensor import FakeTensorMode
from ember.fx.experimental.proxy_tensor import make_fx
from ember.fx.experimental.symbolic_shapes import ShapeEnv, SymInt

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))


@pytest.fixture(autouse=True)
def _fresh():
    dynamo.reset()
    yield
    dynamo.reset()


class Counter:
    """A backend that counts compiles and runs the graph as captured."""

    def __init__(self):
        self.graphs = []

    def __call__(self, gm, example_inputs):
        self.graphs.append(gm)
        return gm.forward


def _fake(env, *shapes, names="xyzw"):
    mode = FakeTensorMode(shape_env=env)
    return mode, [mode.from_tensor(ember.randn(*s), source=LocalSource(n))
                  for s, n in zip(shapes, names)]


# -- SymInt and ShapeEnv ----------------------------------------------------------------------

def test_symint_arithmetic_and_names():
    env = ShapeEnv()
    _, (x, y) = _fake(env, (4, 6), (4, 5))
    s0, s1 = x.shape
    assert isinstance(s0, SymInt) and ember.SymInt is SymInt
    assert str(s0) == "s0" and str(s1) == "s1"
    assert y.shape[0] is not s0 and str(y.shape[0]) == "s0"  # duck sizing: equal sizes share s0
    assert str(y.shape[1]) == "s2"
    assert str(s0 * 2 + s1) == "2*s0 + s1"
    assert str(s1 // 2) == "floor(s1/2)" and str(s1 % 4) == "Mod(s1, 4)"
    assert str(-s0) == "-s0"
    assert (s0 - s0) == 0 and type(s0 - s0) is int  # a number comes back as an int
    assert s0.node.hint == 4 and (s0 * s1).node.hint == 24
    with pytest.raises(TypeError, match="unhashable"):
        hash(s0)


def test_zero_one_specialisation_and_static_ranges():
    env = ShapeEnv()
    _, (x,) = _fake(env, (1, 0, 3))
    assert x.shape[0] == 1 and type(x.shape[0]) is int
    assert x.shape[1] == 0 and type(x.shape[1]) is int
    s = x.shape[2]
    # sizes are >= 2: these are decided by the range, no guard taken
    assert bool(s > 1) and bool(s != 0) and not bool(s < 2) and bool(s * 3 >= 6)
    assert env.guards == [] and env.var_to_range[s.node.expr] == [2, sympy.oo]


def test_guard_on_evaluate_narrows_range_and_specialises():
    env = ShapeEnv()
    _, (x,) = _fake(env, (6, 7))
    s0, s1 = x.shape
    assert bool(s0 > 4) is True           # hint 6: guard s0 >= 5
    assert env.var_to_range[s0.node.expr][0] == 5
    assert bool(s0 > 3) is True and len(env.produce_guards()) == 2  # decided by the range
    assert bool(s0 * s1 == 42)            # a relation of two symbols: kept as a guard
    assert int(s1) == 7                   # int() specialises: s1 == 7
    guards = env.produce_guards(readable=True)
    assert "5 <= L['x'].size()[0]" in guards
    assert "L['x'].size()[1] == 7" in guards
    assert any("*" in g and "== 42" in g for g in guards)


def test_fake_rules_keep_symbolic_sizes():
    env = ShapeEnv()
    mode, (x, y) = _fake(env, (4, 8), (4, 8))
    w = mode.from_tensor(ember.randn(16, 8), static_shapes=True)
    with mode:
        assert [str(s) for s in ember.cat([x, y]).shape] == ["2*s0", "s1"]
        assert [str(s) for s in x.view(-1).shape] == ["s0*s1"]
        assert [str(s) for s in x.sum(1).shape] == ["s0"]
        assert [str(s) for s in ember.nn.functional.pad(x, (1, 2)).shape] == ["s0", "s1 + 3"]
        assert [str(s) for s in x.t().contiguous().stride()] == ["s0", "1"]
        assert [str(s) for s in ember.zeros(x.size(0), 3).shape] == ["s0", "3"]
        assert [str(s) for s in ember.softmax(x, -1).shape] == ["s0", "s1"]
        assert env.produce_guards(readable=True) == [  # nothing specialised so far
            "L['y'].size()[0] == L['x'].size()[0]", "L['y'].size()[1] == L['x'].size()[1]",
            "2 <= L['x'].size()[0]", "2 <= L['x'].size()[1]"]
        # a matmul with a static weight needs x's last size to be 8: s1 specialised
        assert [str(s) for s in (x @ w.t()).shape] == ["s0", "16"]
    assert env.produce_guards(readable=True)[-1] == "L['x'].size()[1] == 8"


# -- make_fx(tracing_mode="symbolic") -----------------------------------------------------------

def _f(x, y):
    n = x.size(0)
    return (x + y).view(n * 2, -1).relu(), ember.cat([x, y]).sum(0)


def test_make_fx_symbolic_graph():
    gm = make_fx(_f, tracing_mode="symbolic")(ember.randn(4, 6), ember.randn(4, 6))
    code = gm.code
    assert "sym_size_int = ember.ops.aten.sym_size.int(x_1, 0)" in code
    assert "mul = sym_size_int * 2" in code
    assert "view = ember.ops.aten.view.default(add, [mul, -1])" in code
    vals = {n.name: n.meta.get("val") for n in gm.graph.nodes}
    assert [str(s) for s in vals["x_1"].shape] == ["s0", "s1"]
    assert str(vals["mul"]) == "2*s0"
    assert [str(s) for s in vals["cat"].shape] == ["2*s0", "s1"]
    # the one graph runs for other sizes the guards allow
    for n in (2, 5, 10):
        a, b = ember.randn(n, 6), ember.randn(n, 6)
        got, want = gm(a, b), _f(a, b)
        assert all(ember.equal(p, q) for p, q in zip(got, want))
    assert "2 <= L['x_1'].size()[0]" in gm.shape_env.format_guards()


def test_make_fx_symbolic_matches_pytorch():
    torch = pytest.importorskip("torch")
    from torch.fx.experimental.proxy_tensor import make_fx as torch_make_fx

    def tf(x, y):
        n = x.size(0)
        return (x + y).view(n * 2, -1).relu(), torch.cat([x, y]).sum(0)
    theirs = torch_make_fx(tf, tracing_mode="symbolic")(torch.randn(4, 6), torch.randn(4, 6))
    ours = make_fx(_f, tracing_mode="symbolic")(ember.randn(4, 6), ember.randn(4, 6))
    assert ours.code.replace("ember.", "torch.") == theirs.code


def test_make_fx_real_and_fake_unchanged():
    gm = make_fx(_f, tracing_mode="fake")(ember.randn(4, 6), ember.randn(4, 6))
    assert "sym_size" not in gm.code and "view.default(add, [8, -1])" in gm.code


# -- ember.compile(dynamic=...) ------------------------------------------------------------------

def _g(x, y):
    return (x * 2 + y).sum(0) * x.size(0)


@pytest.mark.parametrize("dynamic,compiles", [(None, 2), (True, 1), (False, 4)])
def test_recompile_counts(dynamic, compiles):
    cnt = Counter()
    cf = ember.compile(_g, backend=cnt, dynamic=dynamic)
    for n in (2, 3, 4, 5):
        x, y = ember.randn(n, 3), ember.randn(n, 3)
        assert ember.allclose(cf(x, y), _g(x, y))
    assert len(cnt.graphs) == compiles
    if dynamic is not False:  # the last graph reads the size from its input
        assert "ember.ops.aten.sym_size.int(l_x_, 0)" in cnt.graphs[-1].code


def test_automatic_dynamic_marks_only_changed_dim():
    cnt = Counter()
    cf = ember.compile(lambda x: x.sum(0), backend=cnt)
    cf(ember.randn(2, 5))
    cf(ember.randn(3, 5))
    val = next(iter(cnt.graphs[1].graph.nodes)).meta["val"]
    assert str(val.shape[0]) == "s0" and val.shape[1] == 5
    cf(ember.randn(4, 5))
    assert len(cnt.graphs) == 2
    cf(ember.randn(4, 6))  # dim 1 is still static
    assert len(cnt.graphs) == 3


def test_mark_dynamic():
    cnt = Counter()
    cf = ember.compile(lambda x: x.sum(-1), backend=cnt)
    x = ember.randn(3, 5)
    dynamo.mark_dynamic(x, 1)
    for t in (x, ember.randn(3, 7), ember.randn(3, 9)):
        assert ember.allclose(cf(t), t.sum(-1))
    assert len(cnt.graphs) == 1
    cf(ember.randn(4, 9))  # dim 0 was not marked: specialised, a recompile
    assert len(cnt.graphs) == 2


def test_marks_are_pytorchs_attributes_of_the_tensor(torch):
    """mark_dynamic and mark_static_address record on the tensor what PyTorch records there
    (code that reads them finds them); a dim marked again takes its new range."""
    def marks(lib):
        x = lib.randn(3, 5)
        lib._dynamo.mark_dynamic(x, 1, min=2, max=9)
        lib._dynamo.mark_dynamic(x, 0)
        s = lib.zeros(2)
        lib._dynamo.mark_static_address(s)
        g = lib.zeros(2)
        lib._dynamo.mark_static_address(g, guard=True)
        return (x._dynamo_dynamic_indices,
                sorted((r.dim, r.min, r.max) for r in x._dynamo_dynamic_range),
                s._dynamo_static_input_type, g._dynamo_static_input_type)
    assert marks(ember) == marks(torch)
    x = ember.randn(3, 5)
    dynamo.mark_dynamic(x, 1, min=2, max=9)
    dynamo.mark_dynamic(x, 1, min=3)
    assert dynamo.eval_frame.marked_dynamic_dims(x) == {1: (3, None)}
    assert dynamo.eval_frame.marked_dynamic_dims(ember.randn(3)) == {}


def test_mark_dynamic_range_guards_and_violation():
    from ember.fx.experimental.symbolic_shapes import ConstraintViolationError
    cnt = Counter()
    cf = ember.compile(lambda x: x.sum(-1), backend=cnt)
    x = ember.randn(3, 5)
    dynamo.mark_dynamic(x, 1, min=3, max=8)
    cf(x)
    cf(ember.randn(3, 7))
    assert len(cnt.graphs) == 1  # inside [3, 8]: the same graph
    cf(ember.randn(3, 9))
    assert len(cnt.graphs) == 2  # the range guard failed (PyTorch: 1 then 2 compiles)
    dynamo.reset()
    y = ember.randn(3, 2)
    dynamo.mark_dynamic(y, 1, min=3, max=8)
    with pytest.raises(ConstraintViolationError, match=r"2 not in range \[3, 8\]"):
        ember.compile(lambda x: x.sum(-1), backend=cnt)(y)


def test_zero_one_specialisation_in_compile():
    cnt = Counter()
    cf = ember.compile(lambda x: x.sum(-1), backend=cnt, dynamic=True)
    for n in (1, 2, 3, 1, 4):
        t = ember.randn(n, 5)
        assert ember.allclose(cf(t), t.sum(-1))
    assert len(cnt.graphs) == 2
    assert next(iter(cnt.graphs[0].graph.nodes)).meta["val"].shape[0] == 1


def _branchy(x):
    if x.size(0) > 4:
        return x * 2
    return x - 1


def test_relation_guard_recompiles_when_branch_flips(caplog):
    cnt = Counter()
    cf = ember.compile(_branchy, backend=cnt, dynamic=True)
    logger = logging.getLogger("ember._dynamo.__recompiles")
    old = logger.level
    logger.setLevel(logging.DEBUG)
    try:
        with caplog.at_level(logging.DEBUG, logger="ember._dynamo.__recompiles"):
            for n in (2, 3, 4, 5, 6, 7, 3):
                t = ember.randn(n, 3)
                assert ember.equal(cf(t), _branchy(t))
    finally:
        logger.setLevel(old)
    assert len(cnt.graphs) == 2
    assert "2 <= L['x'].size()[0] <= 4" in caplog.text
    shape_guards = [g.code_list()[0] for g in cf._frame_state.entries[1][0].guards
                    if g.create_fn == "SHAPE_ENV"]
    assert "5 <= L['x'].size()[0]" in shape_guards
    assert "L['x'].stride()[0] == L['x'].size()[1]" in shape_guards


def test_duck_sized_inputs_guard_equality():
    cnt = Counter()
    cf = ember.compile(lambda x, y: x + y, backend=cnt, dynamic=True)
    cf(ember.randn(3), ember.randn(3))
    cf(ember.randn(5), ember.randn(5))
    assert len(cnt.graphs) == 1
    with pytest.raises(RuntimeError):  # the sizes differ: a new entry, which raises as eager
        cf(ember.randn(5), ember.randn(6))
    assert len(cnt.graphs) == 1


def test_size_values_returned_and_used():
    def f(x):
        n = x.shape[0]
        return x.new_zeros(n * 2, x.size(1)) + 1, n * 3 - 1, len(x)
    cnt = Counter()
    cf = ember.compile(f, backend=cnt, dynamic=True)
    for n in (2, 6):
        x = ember.randn(n, 4)
        got, want = cf(x), f(x)
        assert ember.equal(got[0], want[0]) and got[1:] == want[1:]
    assert len(cnt.graphs) == 1


def test_range_over_size_specialises():
    def f(x):
        out = x
        for i in range(x.size(0)):
            out = out + i
        return out
    cnt = Counter()
    cf = ember.compile(f, backend=cnt, dynamic=True)
    for n in (2, 3, 3):
        x = ember.randn(n)
        assert ember.allclose(cf(x), f(x))
    assert len(cnt.graphs) == 2  # range() needed an int: s0 == 2 guarded, then s0 == 3


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_mlp_dynamic_batch_equals_eager(backend):
    ember.manual_seed(0)
    mlp = ember.nn.Sequential(ember.nn.Linear(8, 16), ember.nn.GELU(), ember.nn.Linear(16, 4))
    cm = ember.compile(mlp, backend=backend, dynamic=True)
    for b in (2, 3, 7):
        x = ember.randn(b, 8)
        assert ember.allclose(cm(x), mlp(x), atol=1e-5)
    assert len(cm._compiled_call._frame_state.entries) == 1


def test_gpt_dynamic_batch_and_length_equals_eager():
    import train_gpt
    ember.manual_seed(0)
    model = train_gpt.GPT(40, context=16, width=32, n_layer=2, n_head=4).eval()
    cnt = Counter()
    cm = ember.compile(model, backend=cnt, dynamic=True)
    with ember.no_grad():
        for b, t in ((2, 8), (3, 8), (5, 12), (4, 16)):
            idx = ember.randint(0, 40, (b, t))
            (logits, loss), (el, eloss) = cm(idx, idx), model(idx, idx)
            assert ember.allclose(logits, el, atol=1e-5) and ember.allclose(loss, eloss, atol=1e-5)
    assert len(cnt.graphs) == 1


def test_dynamic_shapes_training_step_aot_eager():
    ember.manual_seed(0)
    mlp = ember.nn.Sequential(ember.nn.Linear(4, 8), ember.nn.ReLU(), ember.nn.Linear(8, 1))
    cm = ember.compile(mlp, backend="aot_eager", dynamic=True)
    for b in (3, 5):
        x = ember.randn(b, 4)
        cm(x).sum().backward()
        got = [p.grad.clone() for p in mlp.parameters()]
        mlp.zero_grad()
        mlp(x).sum().backward()
        assert all(ember.allclose(g, p.grad, atol=1e-6) for g, p in zip(got, mlp.parameters()))
        mlp.zero_grad()


def test_transposed_input_strides_are_symbolic():
    cnt = Counter()
    cf = ember.compile(lambda x: (x * 2).sum(0), backend=cnt, dynamic=True)
    for n in (3, 4, 5):
        x = ember.randn(6, n).t()
        assert ember.allclose(cf(x), (x * 2).sum(0))
    assert len(cnt.graphs) == 1
    val = next(iter(cnt.graphs[0].graph.nodes)).meta["val"]
    assert [str(s) for s in val.stride()] == ["1", "s0"]
    cf(ember.randn(4, 6))  # contiguous now: the stride guard fails, a new entry
    assert len(cnt.graphs) == 2


def _reshape(x):
    return x.reshape(x.shape[0], -1) * 2


def _zeros(x):
    return ember.zeros(x.shape[0], 3) + x.sum(1, keepdim=True)


def _numel(x):
    return x * x.shape.numel(), x.numel()


def _unpack(x):
    a, b = x.shape
    return x.view(a * b), a + b


def _new_zeros(x):
    return x.new_zeros(x.shape) + x


def _expand(x):
    return x[:, None].expand(-1, x.size(1), -1).sum()


@pytest.mark.parametrize("f", [_reshape, _zeros, _numel, _unpack, _new_zeros, _expand])
def test_size_patterns_stay_symbolic(f):
    cnt = Counter()
    cf = ember.compile(f, backend=cnt, dynamic=True)
    for shape in ((4, 6), (5, 6), (7, 8)):
        x = ember.randn(*shape)
        got, want = cf(x), f(x)
        for g, w in zip(got if isinstance(got, tuple) else (got,),
                        want if isinstance(want, tuple) else (want,)):
            assert ember.allclose(g, w) if isinstance(g, ember.Tensor) else g == w
    assert len(cnt.graphs) == 1
    assert dynamo.explain(f)(ember.randn(4, 6)).graph_break_count == 0


def test_failed_dynamic_capture_falls_back_to_static(monkeypatch):
    from ember._core.symint import SymInt as _SymInt
    from ember._dynamo import output_graph
    orig = output_graph.OutputGraph.wrap_int

    def failing(self, tx, v):  # something about symbolic sizes Dynamo cannot model
        if isinstance(v, _SymInt):
            raise KeyError("not modelled")
        return orig(self, tx, v)
    monkeypatch.setattr(output_graph.OutputGraph, "wrap_int", failing)
    cnt = Counter()
    cf = ember.compile(_g, backend=cnt, dynamic=True)
    for n in (3, 4):
        x, y = ember.randn(n, 2), ember.randn(n, 2)
        assert ember.allclose(cf(x, y), _g(x, y))
    # specialised per size instead of running eagerly
    assert len(cnt.graphs) == 2 and not cf._frame_state.eager_forever
    assert "sym_size" not in cnt.graphs[0].code


def test_static_knowledge_and_guard_or_helpers():
    """symbolic_shapes' helpers libraries call (transformers' masks): statically_known_* decide
    from the ranges without a guard; guard_or_* guard (every ember symbol has a hint)."""
    from ember.fx.experimental import symbolic_shapes as ss
    env = ShapeEnv()
    _, (x,) = _fake(env, (6,))
    s = x.shape[0]
    assert ss.statically_known_true(s >= 2) and ss.statically_known_false(s < 2)
    assert not ss.statically_known_true(s > 4) and not ss.statically_known_false(s > 4)
    assert env.guards == []
    assert ss.guard_or_false(s > 4) is True
    assert env.var_to_range[s.node.expr][0] == 5  # the guard narrowed the range
    assert ss.guard_or_true(s == 6) is True
    assert ss.statically_known_true(True) and ss.statically_known_false(False)
    assert ss.is_concrete_int(3) and not ss.is_concrete_int(s)
    assert ss.sym_eq([s, 2], [s, 2]) is not False and ss.sym_eq([1], [1, 2]) is False
    assert ss.free_unbacked_symbols(s) == set() and not ss.has_free_unbacked_symbols(s)
    assert ss.guard_scalar(s) == 6
    assert issubclass(ss.GuardOnDataDependentSymNode, RuntimeError)
