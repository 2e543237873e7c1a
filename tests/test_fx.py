"""ember.fx (Graph, Node, GraphModule, symbolic_trace, Interpreter/Transformer, ShapeProp,
subgraph_rewriter) and make_fx, against torch.fx / torch's make_fx on the same programs."""
import copy
import inspect
import linecache
import math
import operator
import pickle
import traceback

import numpy as np
import pytest

import ember
import ember.fx as fx
from ember.fx.experimental.proxy_tensor import make_fx
from ember.fx.passes.shape_prop import ShapeProp, TensorMetadata

torch = pytest.importorskip("torch")
import torch.fx as tfx  # noqa: E402
from torch.fx.experimental.proxy_tensor import make_fx as torch_make_fx  # noqa: E402


def T(a):
    return torch.tensor(np.asarray(a))


def E(a):
    return ember.tensor(np.asarray(a))


def as_ember(text):
    """torch's printed code/graph with ember's module name."""
    return text.replace("torch.", "ember.")


def signature(graph):
    """(op, target name) for every node: ops as "aten.add.Tensor", functions qualified."""
    out = []
    for n in graph.nodes:
        t = n.target
        if not isinstance(t, str):
            t = n._pretty_print_target(t).replace("torch.ops.", "").replace("ember.ops.", "")
            t = t.replace("torch.", "").replace("ember.", "")
        out.append((n.op, n.name, t))
    return out


def wrapped_add(a, b):
    return a + b


fx.wrap("wrapped_add")
tfx.wrap("wrapped_add")


def _pair(lib):
    class M(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = lib.nn.Linear(3, 4)
            self.p = lib.nn.Parameter(lib.ones(4))

        def forward(self, x, y=2):
            z = self.lin(x) + self.p
            w = lib.relu(z).sum(dim=1, keepdim=True)
            return {"a": w * y, "b": (z.shape[0], z[:, 1:])}
    return M()


def _copy_params(em, tm):
    for (n, p), (n2, q) in zip(em.named_parameters(), tm.named_parameters()):
        assert n == n2
        with ember.no_grad():
            p.copy_(E(q.detach().numpy()))


# ---------------------------------------------------------------------------------------------
# symbolic_trace against torch.fx

def test_module_graph_and_code_match_torch():
    gm, tgm = fx.symbolic_trace(_pair(ember)), tfx.symbolic_trace(_pair(torch))
    assert str(gm.graph) == as_ember(str(tgm.graph))
    assert gm.code == as_ember(tgm.code)
    assert type(gm).__name__ == "M"


def test_module_numerics_match_eager():
    m = _pair(ember)
    gm = fx.symbolic_trace(m)
    x = ember.randn(2, 3)
    ref, got = m(x, 3), gm(x, 3)
    assert ember.equal(ref["a"], got["a"]) and got["b"][0] == 2
    assert ember.equal(ref["b"][1], got["b"][1])
    out = fx.Interpreter(gm).run(x, 3)
    assert ember.equal(out["a"], ref["a"])


FUNCS = {
    "arith": lambda lib: (lambda x, y: (x + y) * 2 - x / 3),
    "methods": lambda lib: (lambda x: x.relu().sum(0).neg()),
    "functions": lambda lib: (lambda x, y: lib.add(x, y, alpha=3) @ lib.transpose(y, 0, 1)),
    "getitem_size": lambda lib: (lambda x: x[0, 1:] * x.size(1) // 2),
    "compare": lambda lib: (lambda x, y: (x > y) & (x != 0)),
    "reflected": lambda lib: (lambda x: 1 - 2 ** x + 3 / x),
    "dtype_const": lambda lib: (lambda x: x.to(lib.float64) + (~(x > 0)).float()),
}


@pytest.mark.parametrize("name", sorted(FUNCS))
def test_function_code_matches_torch(name):
    gm = fx.symbolic_trace(FUNCS[name](ember))
    tgm = tfx.symbolic_trace(FUNCS[name](torch))
    assert signature(gm.graph) == signature(tgm.graph)
    assert gm.code == as_ember(tgm.code)


@pytest.mark.parametrize("name", sorted(FUNCS))
def test_function_numerics(name):
    fe, ft = FUNCS[name](ember), FUNCS[name](torch)
    xs = np.random.RandomState(0).rand(2, 2, 3).astype(np.float32) + 0.5
    n = len(inspect.signature(fe).parameters)
    gm = fx.symbolic_trace(fe)
    got = gm(*[E(a) for a in xs[:n]])
    ref = ft(*[T(a) for a in xs[:n]])
    np.testing.assert_allclose(got.numpy().astype(np.float64),
                               ref.numpy().astype(np.float64), rtol=1e-6)


def test_sequential_traced_through_and_leaves_are_call_module():
    def build(lib):
        return lib.nn.Sequential(lib.nn.Linear(3, 3), lib.nn.ReLU(),
                                 lib.nn.Sequential(lib.nn.Linear(3, 2)))
    gm, tgm = fx.symbolic_trace(build(ember)), tfx.symbolic_trace(build(torch))
    assert signature(gm.graph) == signature(tgm.graph)
    assert [n.target for n in gm.graph.nodes if n.op == "call_module"] == ["0", "1", "2.0"]
    assert gm.code == as_ember(tgm.code)  # getattr(self, "0") for non-identifier names


def test_custom_tracer_leaf_and_nn_module_stack():
    class Inner(ember.nn.Module):
        def forward(self, x):
            return x * 2

    class Outer(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = Inner()

        def forward(self, x):
            return self.inner(x) + 1

    g = fx.Tracer().trace(Outer())
    ops = [(n.op, n.target) for n in g.nodes]
    assert ("call_function", operator.mul) in ops  # traced through a user module
    mul = next(n for n in g.nodes if n.target is operator.mul)
    assert list(mul.meta["nn_module_stack"]) == ["inner"]

    class LeafAll(fx.Tracer):
        def is_leaf_module(self, m, qualname):
            return True
    g = LeafAll().trace(Outer())
    assert [n.op for n in g.nodes] == ["placeholder", "call_module", "call_function", "output"]


def test_wrap_records_call_and_code_registers_it():
    def f(x, y):
        return wrapped_add(x, y) * 2
    gm, tgm = fx.symbolic_trace(f), tfx.symbolic_trace(f)
    node = next(n for n in gm.graph.nodes if n.op == "call_function")
    assert node.target is wrapped_add and node.meta["is_wrapped"]
    assert gm.code == tgm.code.replace("torch.fx.", "ember.fx.")
    x = ember.randn(3)
    assert ember.equal(gm(x, x), (x + x) * 2)
    # re-tracing the GraphModule keeps the call (the generated code re-registered it)
    gm2 = fx.symbolic_trace(gm)
    assert any(n.target is wrapped_add for n in gm2.graph.nodes)


def test_math_autowrap_and_functional():
    def f(x):
        return ember.nn.functional.relu(x) * math.sqrt(x.size(0))
    gm = fx.symbolic_trace(f)
    targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert ember.nn.functional.relu in targets and math.sqrt in targets
    x = ember.randn(4)
    assert ember.allclose(gm(x), f(x))


def test_concrete_args_specialise():
    def f(x, flag):
        if flag:
            return x + 1
        return x - 1
    gm, tgm = fx.symbolic_trace(f, concrete_args={"flag": True}), \
        tfx.symbolic_trace(f, concrete_args={"flag": True})
    assert [n.op for n in gm.graph.nodes] == [n.op for n in tgm.graph.nodes]
    x = ember.randn(3)
    assert ember.equal(gm(x, True), x + 1)
    with pytest.raises(AssertionError, match="specialized to have value True"):
        gm(x, False)


def test_trace_errors_like_torch():
    def control(x):
        if x.sum() > 0:
            return x
        return -x

    def loop(x):
        return [y for y in x]

    for fn in (control, loop):
        with pytest.raises(fx.proxy.TraceError):
            fx.symbolic_trace(fn)
        with pytest.raises(tfx.proxy.TraceError):
            tfx.symbolic_trace(fn)
    with pytest.raises(RuntimeError, match="'len' is not supported"):
        fx.symbolic_trace(lambda x: len(x))
    assert issubclass(fx.proxy.TraceError, ValueError)


def test_unpack_proxy_and_varargs():
    def f(x):
        a, b = x.chunk(2)
        return a * b
    gm = fx.symbolic_trace(f)
    assert [n.target for n in gm.graph.nodes if n.op == "call_function"] == \
        [operator.getitem, operator.getitem, operator.mul]
    x = ember.randn(4)
    assert ember.equal(gm(x), x[:2] * x[2:])

    def g(x, *args, k=2):
        return x * k
    gm = fx.symbolic_trace(g)
    assert [n.target for n in gm.graph.nodes if n.op == "placeholder"] == ["x", "k", "*args"]
    assert gm.code == tfx.symbolic_trace(g).code


def test_tensor_constant_and_buffer_get_attr():
    c = ember.tensor([1.0, 2.0])

    class M(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("buf", ember.ones(2))

        def forward(self, x):
            return x + c + self.buf

    m = M()
    gm = fx.symbolic_trace(m)
    gets = [n.target for n in gm.graph.nodes if n.op == "get_attr"]
    assert gets == ["_tensor_constant0", "buf"]
    assert gm._tensor_constant0 is c and "buf" in dict(gm.named_buffers())
    assert ember.equal(gm(ember.zeros(2)), c + 1)


# ---------------------------------------------------------------------------------------------
# Graph and Node by hand

def _manual_graph():
    g = fx.Graph()
    x = g.placeholder("x")
    y = g.placeholder("y", default_value=2.0)
    a = g.call_function(ember.add, (x, y))
    b = g.call_method("relu", (a,))
    c = g.call_function(operator.mul, (b, 3))
    g.output(c)
    return g, (x, y, a, b, c)


def test_graph_building_and_code():
    g, (x, y, a, b, c) = _manual_graph()
    assert [n.name for n in g.nodes] == ["x", "y", "add", "relu", "mul", "output"]
    assert a.users == {b: None} and b.all_input_nodes == [a]
    assert a.args == (x, y) and c.args == (b, 3)
    src = g.python_code("self").src
    assert src == ("\n\n\ndef forward(self, x, y = 2.0):\n"
                   "    add = ember.add(x, y);  x = y = None\n"
                   "    relu = add.relu();  add = None\n"
                   "    mul = relu * 3;  relu = None\n"
                   "    return mul\n    ")
    gm = fx.GraphModule(ember.nn.Module(), g)
    t = ember.tensor([-5.0, 1.0])
    assert gm(t).tolist() == [0.0, 9.0]
    g.lint()


def test_linked_list_insert_prepend_append_copy():
    g, (x, y, a, b, c) = _manual_graph()
    with g.inserting_before(b):
        n1 = g.call_function(ember.neg, (a,))
    with g.inserting_after(a):
        n0 = g.call_function(ember.abs, (a,))
    assert [n.name for n in g.nodes][2:6] == ["add", "abs_1", "neg", "relu"]
    c.prepend(n1)  # move neg just before mul
    assert [n.name for n in g.nodes][2:7] == ["add", "abs_1", "relu", "neg", "mul"]
    a.append(n1)
    assert list(g.nodes)[3] is n1
    assert list(reversed(g.nodes))[0].op == "output"
    g2 = fx.Graph()
    env = {}
    out = g2.graph_copy(g, env)
    g2.output(out)
    assert [n.name for n in g2.nodes] == [n.name for n in g.nodes]
    assert env[a].graph is g2 and env[a].args == (env[x], env[y])
    g3 = copy.deepcopy(g)
    assert str(g3) == str(g)
    for n in (n0, n1):
        g.erase_node(n)
    g.lint()


def test_replace_uses_dce_and_erase():
    g, (x, y, a, b, c) = _manual_graph()
    with g.inserting_after(a):
        s = g.call_function(ember.sub, (x, y))
    changed = a.replace_all_uses_with(s)
    assert changed == [b] and b.args == (s,) and not a.users
    assert g.eliminate_dead_code()
    assert "add" not in [n.name for n in g.nodes]
    c.replace_input_with(b, s)
    assert c.args == (s, 3)
    with pytest.raises(RuntimeError, match="still had 2 users"):
        g.erase_node(s)
    assert g.eliminate_dead_code() and b not in list(g.nodes)
    assert not g.eliminate_dead_code()
    # in-place and random ops survive dead-code elimination
    g2 = fx.Graph()
    p = g2.placeholder("p")
    g2.call_function(ember.ops.aten.add_.Tensor, (p, p))
    g2.call_function(ember.ops.aten.rand.default, ([2],))
    g2.call_function(ember.ops.aten.add.Tensor, (p, p))
    g2.output(p)
    g2.eliminate_dead_code()
    assert [n.name for n in g2.nodes] == ["p", "add_", "rand", "output"]


def test_lint_rejects_bad_graphs():
    g, (x, y, a, b, c) = _manual_graph()
    b.args = (c,)  # uses a value defined after it
    with pytest.raises(RuntimeError, match="used before it has been defined"):
        g.lint()
    other, (ox, *_rest) = _manual_graph()
    g2, (x2, *_r) = _manual_graph()
    with pytest.raises(AssertionError):
        list(g2.nodes)[2].args = (ox,)


def test_node_format_and_meta():
    gm, tgm = fx.symbolic_trace(_pair(ember)), tfx.symbolic_trace(_pair(torch))
    mine = [n.format_node() for n in gm.graph.nodes]
    theirs = [as_ember(n.format_node()) for n in tgm.graph.nodes]
    assert mine == theirs
    node = list(gm.graph.nodes)[2]
    node.stack_trace = "File x"
    assert node.meta["stack_trace"] == "File x"
    assert repr(node) == "lin"


def test_map_arg_and_immutable_args():
    g, (x, y, a, b, c) = _manual_graph()
    out = fx.map_arg({"k": [x, (y, 1)], "s": slice(x, None)}, lambda n: n.name)
    assert out == {"k": ["x", ("y", 1)], "s": slice("x", None, None)}
    n = g.call_function(ember.cat, ([x, y],))
    with pytest.raises(NotImplementedError, match="does not support mutation"):
        n.args[0].append(x)
    with pytest.raises(NotImplementedError):
        n.kwargs["dim"] = 0


def test_print_tabular(capsys):
    gm = fx.symbolic_trace(lambda x: ember.relu(x) + 1)
    gm.graph.print_tabular()
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["opcode", "name", "target", "args", "kwargs"]
    assert set(lines[1].replace(" ", "")) == {"-"}
    assert lines[2].split()[:2] == ["placeholder", "x"]
    assert lines[3].split()[:3] == ["call_function", "relu", "<function"]
    assert lines[-1].split() == ["output", "output", "output", "(add,)", "{}"]
    widths = [len(c) for c in lines[1].split("  ")]
    assert widths[0] == len("call_function")


def test_print_readable_matches_torch(capsys):
    gm, tgm = fx.symbolic_trace(_pair(ember)), tfx.symbolic_trace(_pair(torch))
    mine = gm.print_readable(print_output=False)
    theirs = tgm.print_readable(print_output=False)
    assert mine == as_ember(theirs)
    gm.print_readable()
    assert capsys.readouterr().out.startswith("class M(ember.nn.Module):")


def test_generated_source_in_linecache_and_tracebacks():
    gm = fx.symbolic_trace(lambda x, y: ember.matmul(x, y) + 1)
    src = inspect.getsource(gm.forward)
    assert "matmul = ember.matmul(x, y)" in src
    filename = gm.forward.__code__.co_filename
    assert filename.startswith("<eval_with_key>") and linecache.getlines(filename)
    with pytest.raises(RuntimeError) as info:
        gm(ember.randn(2, 3), ember.randn(2, 3))
    frames = traceback.extract_tb(info.value.__traceback__)
    assert any(f.filename == filename and "ember.matmul" in (f.line or "") for f in frames)


def test_recompile_graph_setter_and_copy():
    gm = fx.symbolic_trace(lambda x: x + 1)
    for n in gm.graph.nodes:
        if n.target is operator.add:
            n.target = operator.mul
    gm.recompile()
    x = ember.tensor([3.0])
    assert gm(x).item() == 3.0 and "x * 1" in gm.code
    g, _ = _manual_graph()
    gm.graph = g
    assert "ember.add(x, y)" in gm.code and gm(x).item() == 15.0
    gm2 = copy.deepcopy(gm)
    assert gm2.code == gm.code and gm2(x).item() == 15.0 and gm2.graph is not gm.graph
    assert type(gm2) is not type(gm)  # each GraphModule has its own class


def test_pickle_roundtrip():
    m = _pair(ember)
    gm = fx.symbolic_trace(m)
    gm2 = pickle.loads(pickle.dumps(gm))
    x = ember.randn(2, 3)
    assert ember.equal(gm2(x)["a"], gm(x)["a"])
    assert gm2.code == gm.code


def test_graphmodule_from_dict_root_copies_attrs():
    lin = ember.nn.Linear(2, 2)
    g = fx.Graph()
    x = g.placeholder("x")
    w = g.get_attr("sub.weight")
    y = g.call_module("lin", (x,))
    g.output(g.call_function(operator.add, (y, w)))
    gm = fx.GraphModule({"lin": lin, "sub.weight": ember.ones(2, 2)}, g)
    assert gm.lin is lin and ember.equal(gm.sub.weight, ember.ones(2, 2))
    assert gm.code.count("self.lin(x)") == 1
    with pytest.raises(RuntimeError, match="was not provided in ``root``"):
        fx.GraphModule({}, g)


# ---------------------------------------------------------------------------------------------
# Interpreter, Transformer, ShapeProp, subgraph_rewriter

def test_interpreter_override_and_transformer():
    gm = fx.symbolic_trace(lambda x: ember.relu(x) + x.neg())

    class NegSigmoid(fx.Interpreter):
        def call_function(self, target, args, kwargs):
            if target is ember.relu:
                return ember.sigmoid(*args)
            return super().call_function(target, args, kwargs)
    x = ember.randn(5)
    assert ember.allclose(NegSigmoid(gm).run(x), ember.sigmoid(x) - x)

    class ToSigmoid(fx.Transformer):
        def call_function(self, target, args, kwargs):
            if target is ember.relu:
                target = ember.sigmoid
            return super().call_function(target, args, kwargs)
    new = ToSigmoid(gm).transform()
    assert isinstance(new, fx.GraphModule)
    assert [n.target for n in new.graph.nodes if n.op == "call_function"] == \
        [ember.sigmoid, operator.add]
    assert ember.allclose(new(x), ember.sigmoid(x) - x)


def test_interpreter_error_names_the_node():
    gm = fx.symbolic_trace(lambda x, y: ember.matmul(x, y))
    with pytest.raises(RuntimeError, match="While executing %matmul"):
        fx.Interpreter(gm).run(ember.randn(2, 3), ember.randn(2, 3))


def test_shape_prop_matches_torch():
    m, tm = _pair(ember), _pair(torch)
    gm, tgm = fx.symbolic_trace(m), tfx.symbolic_trace(tm)
    x = np.random.rand(5, 3).astype(np.float32)
    ShapeProp(gm).propagate(E(x))
    from torch.fx.passes.shape_prop import ShapeProp as TShapeProp
    TShapeProp(tgm).propagate(T(x))
    for n, tn in zip(gm.graph.nodes, tgm.graph.nodes):
        assert ("tensor_meta" in n.meta) == ("tensor_meta" in tn.meta), n.name
        if "tensor_meta" in n.meta and isinstance(n.meta["tensor_meta"], TensorMetadata):
            a, b = n.meta["tensor_meta"], tn.meta["tensor_meta"]
            assert tuple(a.shape) == tuple(b.shape) and tuple(a.stride) == tuple(b.stride)
            assert str(a.dtype).rpartition(".")[2] == str(b.dtype).rpartition(".")[2]
            assert a.requires_grad == b.requires_grad
            assert str(a.memory_format).rpartition(".")[2] == \
                str(b.memory_format).rpartition(".")[2]


def test_shape_prop_fake_mode():
    from ember._subclasses.fake_tensor import FakeTensorMode
    gm = fx.symbolic_trace(lambda x: (x @ x.t()).sum(1))
    ShapeProp(gm, fake_mode=FakeTensorMode()).propagate(ember.randn(4, 3))
    out = [n for n in gm.graph.nodes if n.name == "sum_1"][0]
    assert tuple(out.meta["tensor_meta"].shape) == (4,)


def test_replace_pattern_matches_torch():
    def build(lib):
        def forward(x, w1, w2):
            m1 = lib.cat([w1, w2]).sum()
            m2 = lib.cat([w1, w2]).sum()
            return x + lib.max(m1) + lib.max(m2)

        def pattern(w1, w2):
            return lib.cat([w1, w2]).sum()

        def replacement(w1, w2):
            return lib.stack([w1, w2])
        return forward, pattern, replacement
    f, p, r = build(ember)
    tf, tp, tr = build(torch)
    gm, tgm = fx.symbolic_trace(f), tfx.symbolic_trace(tf)
    matches = fx.replace_pattern(gm, p, r)
    tmatches = tfx.replace_pattern(tgm, tp, tr)
    assert len(matches) == len(tmatches) == 2
    assert [m.anchor.name for m in matches] == [m.anchor.name for m in tmatches]
    assert signature(gm.graph) == signature(tgm.graph)
    gm.graph.lint()


def test_replace_pattern_respects_outside_users():
    def f(x):
        a = x + 1
        b = a * 2
        return b, a  # `a` escapes: the pattern add+mul cannot be replaced

    def pattern(x):
        return (x + 1) * 2

    def replacement(x):
        return x * 2 + 2
    gm = fx.symbolic_trace(f)
    assert fx.replace_pattern(gm, pattern, replacement) == []
    gm2 = fx.symbolic_trace(lambda x: ((x + 1) * 2).relu())
    assert len(fx.replace_pattern(gm2, pattern, replacement)) == 1
    x = ember.randn(4)
    assert ember.allclose(gm2(x), (x * 2 + 2).relu())


# ---------------------------------------------------------------------------------------------
# make_fx against torch's make_fx

def aten_sequence(gm):
    return [(n.op, str(n.target) if n.op == "call_function" and not isinstance(n.target, str)
             and "aten" in str(n.target) else n.name) for n in gm.graph.nodes]


def _mlp(lib, seed=0):
    lib.manual_seed(seed)
    return lib.nn.Sequential(lib.nn.Linear(4, 8), lib.nn.ReLU(), lib.nn.Linear(8, 3))


MAKE_FX = {
    "mlp": (lambda lib, m: (lambda x: m(x)), [(5, 4)]),
    "softmax": (lambda lib, m: (lambda x: lib.softmax(x, -1)), [(3, 4)]),
    "log_softmax_dim0": (lambda lib, m: (lambda x: lib.nn.functional.log_softmax(x, 0)),
                         [(3, 4)]),
    "layer_norm": (lambda lib, m: (lambda x, w, b: lib.nn.functional.layer_norm(
        x, (4,), w, b)), [(3, 4), (4,), (4,)]),
    "inplace": (lambda lib, m: (lambda x, y: x.clone().add_(y).mul_(2).relu_()),
                [(3, 4), (3, 4)]),
    "views": (lambda lib, m: (lambda x: x.view(4, 3).t().unsqueeze(0).expand(2, 3, 4) * 2),
              [(3, 4)]),
    "reductions": (lambda lib, m: (lambda x: (x.mean(1), x.amax(0), x.var(1))), [(3, 4)]),
    "matmul_bias": (lambda lib, m: (lambda x, w: lib.tanh(x @ w + 1)), [(3, 4), (4, 2)]),
}


@pytest.mark.parametrize("name", sorted(MAKE_FX))
def test_make_fx_aten_sequence_matches_torch(name):
    build, shapes = MAKE_FX[name]
    rng = np.random.RandomState(0)
    data = [rng.rand(*s).astype(np.float32) for s in shapes]
    m, tm = _mlp(ember), _mlp(torch)
    _copy_params(m, tm)
    f, tf = build(ember, m), build(torch, tm)
    gm = make_fx(f)(*[E(d) for d in data])
    tgm = torch_make_fx(tf)(*[T(d) for d in data])
    assert aten_sequence(gm) == aten_sequence(tgm)
    got = gm(*[E(d) for d in data])
    ref = tf(*[T(d) for d in data])
    got, ref = (got, ref) if isinstance(got, tuple) else ((got,), (ref,))
    for g, r in zip(got, ref):
        np.testing.assert_allclose(g.detach().numpy(), r.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)


def test_make_fx_code_matches_torch():
    def f(x, y):
        a = x + y
        a.add_(1)
        return ember.softmax(a, -1) * 2

    def tf(x, y):
        a = x + y
        a.add_(1)
        return torch.softmax(a, -1) * 2
    x = np.random.rand(2, 3).astype(np.float32)
    gm, tgm = make_fx(f)(E(x), E(x)), torch_make_fx(tf)(T(x), T(x))
    assert gm.code == as_ember(tgm.code)
    assert str(gm.graph) == as_ember(str(tgm.graph))


def test_make_fx_placeholder_names_and_meta():
    gm = make_fx(lambda *a: a[0] * a[1])(ember.randn(2), ember.randn(2))
    assert [n.name for n in gm.graph.nodes if n.op == "placeholder"] == ["arg0_1", "arg1_1"]

    def f(x, d):
        return x + d["a"] + d["b"][0]
    gm = make_fx(f)(ember.randn(2), {"a": ember.randn(2), "b": [ember.randn(2)]})
    assert [n.name for n in gm.graph.nodes if n.op == "placeholder"] == ["x_1", "d_1", "d_2"]
    for n in gm.graph.nodes:
        if n.op != "output":
            assert tuple(n.meta["val"].shape) == (2,)
            assert tuple(n.meta["tensor_meta"].shape) == (2,)


def test_make_fx_fake_mode():
    from ember._subclasses.fake_tensor import FakeTensor

    def f(x, w):
        return ember.relu(x @ w).sum(0) * ember.tensor([1.0, 2.0])
    x, w = ember.randn(3, 4), ember.randn(4, 2)
    gm = make_fx(f, tracing_mode="fake")(x, w)
    vals = {n.name: n.meta.get("val") for n in gm.graph.nodes}
    assert all(isinstance(v, FakeTensor) for k, v in vals.items() if k != "output")
    assert tuple(vals["mm"].shape) == (3, 2)
    assert isinstance(gm._tensor_constant0, ember.Tensor) and \
        not isinstance(gm._tensor_constant0, FakeTensor)
    assert ember.allclose(gm(x, w), f(x, w))
    tgm = torch_make_fx(lambda x, w: torch.relu(x @ w).sum(0), tracing_mode="fake")(
        torch.randn(3, 4), torch.randn(4, 2))
    assert aten_sequence(tgm)[2:5] == aten_sequence(gm)[2:5]


def test_make_fx_decomposition_table():
    aten = ember.ops.aten
    decomp = {aten.relu.default: lambda x: aten.clamp_min.default(x, 0)}
    gm = make_fx(lambda x: ember.relu(x) * 2, decomposition_table=decomp)(ember.randn(3))
    taten = torch.ops.aten
    tgm = torch_make_fx(lambda x: torch.relu(x) * 2,
                        decomposition_table={taten.relu.default:
                                             lambda x: taten.clamp_min.default(x, 0)})(
        torch.randn(3))
    assert aten_sequence(gm) == aten_sequence(tgm)
    assert "aten.relu.default" not in [str(n.target) for n in gm.graph.nodes]
    x = ember.randn(6)
    assert ember.equal(gm(x), ember.relu(x) * 2)


def test_make_fx_module_params_are_constants_and_grad_graph():
    m = _mlp(ember)
    gm = make_fx(m)(ember.randn(2, 4))
    gets = [n.target for n in gm.graph.nodes if n.op == "get_attr"]
    assert gets == ["_param_constant0", "_param_constant1", "_param_constant2",
                    "_param_constant3"]
    assert gm._param_constant0 is m[0].weight

    def loss_grad(x, w):
        loss = (x @ w).tanh().sum()
        return ember.autograd.grad(loss, w)[0]
    x, w = ember.randn(3, 4), ember.randn(4, 2, requires_grad=True)
    gm = make_fx(loss_grad)(x, w)
    ops = [str(n.target) for n in gm.graph.nodes if n.op == "call_function"]
    assert "aten.tanh_backward.default" in ops or "aten.mul.Tensor" in ops
    assert ember.allclose(gm(x, w), loss_grad(x, w))


def test_make_fx_pre_dispatch_not_implemented():
    # tracing_mode="symbolic" is covered by tests/test_dynamic_shapes.py
    with pytest.raises(NotImplementedError, match="PreDispatch"):
        make_fx(lambda x: x + 1, pre_dispatch=True)(ember.randn(2))
    with pytest.raises(AssertionError):
        make_fx(lambda x: x, tracing_mode="bogus")


def test_make_fx_leaves_no_mode_behind():
    from ember.utils._python_dispatch import _get_current_dispatch_mode_stack
    with pytest.raises(RuntimeError):
        make_fx(lambda x: x @ x)(ember.randn(2, 3))
    assert _get_current_dispatch_mode_stack() == []
    assert ember.equal(ember.ones(2) + 1, ember.full((2,), 2.0))
