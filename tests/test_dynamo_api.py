"""The public controls of ember.compile in ``ember.compiler`` and ``ember._dynamo`` (PyTorch
2.13's torch.compiler / torch._dynamo): the stance, graph_break, disallow/forbid_in_graph,
skip_frame, run, optimize_assert, mark_static, substitute_in_graph, nested_compile_region,
wrap_numpy, the default backend, compiler.config, guard filters and error_on_graph_break.
Each asserts what capture really does (graphs and ops captured, results, recompiles, the
exceptions raised), with PyTorch's messages where a cheap comparison is possible."""
import operator

import numpy as np
import pytest

import ember
from ember._dynamo import eval_frame
from ember._dynamo.exc import UncapturedHigherOrderOpError, Unsupported
from ember._dynamo.testing import CompileCounter, EagerAndRecordGraphs, same


@pytest.fixture(autouse=True)
def _reset():
    ember._dynamo.reset()
    yield
    ember._dynamo.reset()
    ember.compiler.set_stance("default")


def _raised(fn):
    with pytest.raises(Exception) as info:
        fn()
    return info.value


def h(x):
    return x + 1


def f_break(x, mod):
    x = x + 1
    mod._dynamo.graph_break()
    return x * 2


def f_skip(x, mod):
    x = x + 1
    mod._dynamo.skip_frame()
    return x * 2


# -- graph_break, skip_frame ----------------------------------------------------------------------
def test_graph_break_splits_the_graph():
    cnt = CompileCounter()
    x = ember.ones(2)
    assert same(ember.compile(f_break, backend=cnt)(x, ember), f_break(x, ember))
    assert (cnt.frame_count, cnt.op_count) == (2, 2)
    e = ember._dynamo.explain(f_break)(x, ember)
    assert e.graph_count == 2 and e.graph_break_count == 1
    assert e.break_reasons[0].reason.startswith("Call to `torch._dynamo.graph_break()`")


def test_graph_break_in_a_called_function():
    def helper(x):
        x = x.sin()
        ember._dynamo.graph_break()
        return x.cos()

    def f(x):
        return helper(x + 1) * 2
    cnt = CompileCounter()
    x = ember.randn(3)
    assert same(ember.compile(f, backend=cnt)(x), f(x))
    assert cnt.op_count == 4 and cnt.frame_count >= 2


def test_graph_break_and_skip_frame_match_pytorch(torch):
    x, tx = ember.ones(2), torch.ones(2)
    got = _raised(lambda: ember.compile(f_break, backend="eager", fullgraph=True)(x, ember))
    want = _raised(lambda: torch.compile(f_break, backend="eager", fullgraph=True)(tx, torch))
    assert type(got) is Unsupported and type(want).__name__ == "Unsupported"
    assert str(got).splitlines()[:3] == str(want).splitlines()[:3]
    # skip_frame: the frame runs eagerly, no graph; under fullgraph an Unsupported
    got = _raised(lambda: ember.compile(f_skip, backend="eager", fullgraph=True)(x, ember))
    want = _raised(lambda: torch.compile(f_skip, backend="eager", fullgraph=True)(tx, torch))
    assert type(got) is Unsupported and type(want).__name__ == "Unsupported"
    assert str(got).splitlines()[:3] == str(want).splitlines()[:3]
    cnt = CompileCounter()
    assert same(ember.compile(f_skip, backend=cnt)(x, ember), f_skip(x, ember))
    assert cnt.frame_count == 0
    # (explain reports the reasons of graphs compiled at a break: here none, as PyTorch's)
    e = ember._dynamo.explain(f_skip)(x, ember)
    want = torch._dynamo.explain(f_skip)(tx, torch)
    assert e.graph_count == want.graph_count == 0
    assert e.break_reasons == [] and want.break_reasons == []


# -- disallow_in_graph, forbid_in_graph -----------------------------------------------------------
def f_add_sub(a):
    x = ember.add(a, 1)
    x = ember.sub(x, 1)
    return ember.add(x, 1)


def test_disallow_in_graph_breaks_at_the_op():
    x = ember.ones(2)
    ember._dynamo.disallow_in_graph(ember.sub)
    try:
        cnt = CompileCounter()
        assert same(ember.compile(f_add_sub, backend=cnt)(x), f_add_sub(x))
        assert (cnt.frame_count, cnt.op_count) == (2, 2)
        with pytest.raises(Unsupported, match="disallow_in_graph"):
            ember.compile(f_add_sub, backend="eager", fullgraph=True)(x)
    finally:
        ember._dynamo.allow_in_graph(ember.sub)
    ember._dynamo.reset()
    cnt = CompileCounter()
    ember.compile(f_add_sub, backend=cnt)(x)
    assert (cnt.frame_count, cnt.op_count) == (1, 3)


def test_disallow_and_forbid_errors_match_pytorch(torch):
    def user(x):
        return x

    def errors(mod):
        return [_raised(lambda: mod._dynamo.disallow_in_graph(user)),
                _raised(lambda: mod._dynamo.disallow_in_graph(3)),
                _raised(lambda: mod._dynamo.forbid_in_graph(3))]
    for got, want in zip(errors(ember), errors(torch)):
        assert type(got) is type(want) and str(got) == str(want)


def test_forbid_in_graph_raises_when_traced():
    @ember._dynamo.forbid_in_graph
    def bad(x):
        return x + 1

    def f(x):
        return bad(x) * 2

    def g(x):
        ember.compiler.set_stance("force_eager")
        return x + 1
    with pytest.raises(AssertionError, match="Attempt to trace forbidden callable <function"):
        ember.compile(f, backend="eager")(ember.ones(2))
    with pytest.raises(AssertionError, match="forbidden callable <function set_stance"):
        ember.compile(g, backend="eager")(ember.ones(2))
    assert eval_frame._stance.stance == "default"


# -- set_stance -----------------------------------------------------------------------------------
def test_stance_force_eager_as_context_decorator_and_call():
    cnt = CompileCounter()
    opt = ember.compile(h, backend=cnt)
    with ember.compiler.set_stance("force_eager"):
        assert same(opt(ember.ones(2)), h(ember.ones(2)))
    assert cnt.frame_count == 0

    @ember.compiler.set_stance("force_eager")
    def bar(x):
        return opt(x)
    assert eval_frame._stance.stance == "default"  # a decorator sets it only inside
    bar(ember.ones(2))
    assert cnt.frame_count == 0
    ember.compiler.set_stance("force_eager")
    opt(ember.ones(2))
    ember.compiler.set_stance("default")
    assert cnt.frame_count == 0
    opt(ember.ones(2))
    assert cnt.frame_count == 1
    with ember.compiler.set_stance("force_eager"):  # cached code is not run either
        opt(ember.ones(2))
    assert cnt.frame_count == 1


def test_stance_eager_on_recompile():
    cnt = CompileCounter()
    opt = ember.compile(h, backend=cnt)
    with ember.compiler.set_stance("eager_on_recompile"):
        opt(ember.ones(2))
        assert cnt.frame_count == 0  # nothing cached: runs eagerly
    opt(ember.ones(2))
    with ember.compiler.set_stance("eager_on_recompile"):
        assert same(opt(ember.ones(2)), h(ember.ones(2)))
        assert same(opt(ember.ones(2, 3)), h(ember.ones(2, 3)))
    assert cnt.frame_count == 1


def test_stance_fail_on_recompile_matches_pytorch(torch):
    opt, topt = ember.compile(h, backend="eager"), torch.compile(h, backend="eager")
    errors = []
    for o, mod in ((opt, ember), (topt, torch)):
        with mod.compiler.set_stance("fail_on_recompile"):
            first = _raised(lambda: o(mod.ones(2)))  # a first capture is a recompile too
        o(mod.ones(2))
        with mod.compiler.set_stance("fail_on_recompile"):
            assert o(mod.ones(2)).tolist() == [2.0, 2.0]  # a hit is fine
            again = _raised(lambda: o(mod.ones(3)))
        errors.append((first, again))
    (first, again), (tfirst, tagain) = errors
    assert type(first) is type(tfirst) is RuntimeError and str(first) == str(tfirst)
    assert type(again) is RuntimeError
    lines, tlines = str(again).splitlines(), str(tagain).splitlines()
    assert lines[:2] == tlines[:2]
    assert lines[1] == "    triggered by the following guard failure(s):"
    assert lines[2].startswith("    - 0/0: tensor ") and \
        lines[2].endswith("size mismatch at index 0. expected 2, actual 3")


def test_stance_errors_match_pytorch(torch):
    def errors(mod):
        compiled = mod.compile(h, backend="eager")
        out = [_raised(lambda: mod.compiler.set_stance("force_eager", force_backend="eager"))]
        mod.compiler.set_stance("not_a_stance")  # accepted, refused at the next call
        try:
            out.append(_raised(lambda: compiled(mod.ones(2))))
        finally:
            mod.compiler.set_stance("default")
        return out
    for got, want in zip(errors(ember), errors(torch)):
        assert type(got) is type(want) is RuntimeError and str(got) == str(want)


def test_stance_force_backend():
    cnt, forced = CompileCounter(), CompileCounter()
    opt = ember.compile(h, backend=cnt)
    with ember.compiler.set_stance(force_backend=forced):
        opt(ember.ones(2))
        opt(ember.ones(2))
    opt(ember.ones(2))
    assert (forced.frame_count, cnt.frame_count) == (1, 1)


def test_stance_eager_then_compile_learns_dynamic_dims():
    cnt = CompileCounter()
    opt = ember.compile(h, backend=cnt)
    with ember.compiler.set_stance("eager_then_compile"):
        opt(ember.ones(2))
        assert cnt.frame_count == 0
        opt(ember.ones(3))  # the size changed since the eager call: captured dynamic
        assert same(opt(ember.ones(5)), h(ember.ones(5)))
    assert cnt.frame_count == 1


def test_stance_aot_eager_then_compile():
    def loss(x):
        return (x * 2).sum()
    cnt = CompileCounter()
    opt = ember.compile(loss, backend=cnt)
    with ember.compiler.set_stance("aot_eager_then_compile"):
        x = ember.ones(2, requires_grad=True)
        opt(x).backward()  # the first call through aot_eager: differentiable
        assert same(x.grad, ember.full((2,), 2.0)) and cnt.frame_count == 0
        opt(ember.ones(3))
        opt(ember.ones(4))
    assert cnt.frame_count == 1


K = 1


def k_global(x):
    return x + K


def test_stance_skip_guard_eval_unsafe():
    global K
    cnt = CompileCounter()
    opt = ember.compile(k_global, backend=cnt)
    x = ember.ones(2)
    opt(x)
    try:
        K = 2  # the global's guard has never failed: not checked in the unsafe stance
        with ember.compiler.set_stance(skip_guard_eval_unsafe=True):
            assert same(opt(x), x + 1)
        assert same(opt(x), x + 2)  # all guards checked: recompiles on K
        assert cnt.frame_count == 2
        K = 3
        with ember.compiler.set_stance(skip_guard_eval_unsafe=True):
            # K's guard failed on a recompile: it tells the entries apart now
            assert same(opt(x), x + 3)
            assert cnt.frame_count == 3
            opt(ember.ones(3))  # tensor guards are always checked
            assert cnt.frame_count == 4
    finally:
        K = 1


# -- run, optimize_assert --------------------------------------------------------------------------
def test_run_uses_only_cached_code(torch):
    cnt = CompileCounter()
    opt = ember.compile(h, backend=cnt)
    opt(ember.ones(2))
    run = ember._dynamo.run(opt)
    assert same(run(ember.ones(2)), h(ember.ones(2)))
    assert same(run(ember.ones(3)), h(ember.ones(3)))  # a miss runs eagerly
    assert cnt.frame_count == 1
    opt(ember.ones(3))
    assert cnt.frame_count == 2
    got = _raised(lambda: ember._dynamo.run().__enter__())
    want = _raised(lambda: torch._dynamo.run().__enter__())
    assert type(got) is type(want) is RuntimeError and str(got) == str(want)


def test_optimize_assert_is_one_graph():
    x = ember.ones(2)
    with pytest.raises(Unsupported, match="graph_break"):
        ember._dynamo.optimize_assert("eager")(f_break)(x, ember)
    cnt = CompileCounter()
    assert same(ember._dynamo.optimize_assert(cnt)(h)(x), h(x))
    assert cnt.frame_count == 1


# -- mark_static ----------------------------------------------------------------------------------
def double(x):
    return x * 2


def test_mark_static_keeps_dims_static(torch):
    cnt = CompileCounter()
    opt = ember.compile(double, backend=cnt, dynamic=True)
    for shape, frames in (((3, 4), 1), ((5, 6), 2), ((3, 7), 2)):
        x = ember.ones(*shape)
        ember._dynamo.mark_static(x, 0)
        assert same(opt(x), x * 2)
        assert cnt.frame_count == frames
    assert x._dynamo_static_indices == {0}

    class M(ember.nn.Module):
        pass
    assert ember._dynamo.mark_static(M) is M and M._dynamo_marked_static
    got, want = _raised(lambda: ember._dynamo.mark_static(3)), \
        _raised(lambda: torch._dynamo.mark_static(3))
    assert type(got) is type(want) and str(got) == str(want)


def test_mark_static_inside_a_capture_specialises():
    def f(x):
        ember._dynamo.mark_static(x, 0)
        return x.sum()
    cnt = CompileCounter()
    opt = ember.compile(f, backend=cnt, dynamic=True)
    opt(ember.ones(3))
    opt(ember.ones(4))
    assert cnt.frame_count == 2


# -- backends -------------------------------------------------------------------------------------
def test_list_and_default_backend(torch):
    assert ember.compiler.list_backends() == ["inductor"]
    assert {"eager", "aot_eager", "inductor"} <= set(ember.compiler.list_backends(None))
    assert ember.compiler.get_default_backend() == "inductor"
    cnt = CompileCounter()
    ember.compiler.set_default_backend(cnt)
    try:
        assert ember.compiler.get_default_backend() is cnt
        ember.compile(h)(ember.ones(2))
        assert cnt.frame_count == 1
    finally:
        ember.compiler.set_default_backend(None)
    assert ember.compiler.get_default_backend() == "inductor"
    got = _raised(lambda: ember.compiler.set_default_backend(3))
    want = _raised(lambda: torch.compiler.set_default_backend(3))
    assert type(got) is type(want) is TypeError and str(got) == str(want)


# -- substitute_in_graph --------------------------------------------------------------------------
def use_count_of(x, items):
    return x * operator.countOf(items, 3)


def test_substitute_in_graph():
    x = ember.ones(2)
    with pytest.raises(Unsupported):
        ember.compile(use_count_of, backend="eager", fullgraph=True)(x, [1, 3, 3])

    @ember.compiler.substitute_in_graph(operator.countOf)
    def count_of(a, b, /):
        return sum(1 for item in a if item is b or item == b)
    try:
        assert count_of([1, 3, 3], 3) == 2  # eagerly: the original
        assert count_of.__torch_dynamo_original__ is operator.countOf
        assert count_of.__torch_dynamo_polyfill__.__name__ == "count_of"
        ember._dynamo.reset()
        cnt = CompileCounter()
        opt = ember.compile(use_count_of, backend=cnt, fullgraph=True)  # traced: the polyfill
        assert same(opt(x, [1, 3, 3]), x * 2)
        assert same(opt(x, [3, 3, 3]), x * 3) and cnt.frame_count == 2
        with pytest.raises(ValueError, match="Duplicate polyfill handlers for"):
            ember.compiler.substitute_in_graph(operator.countOf)(count_of)
    finally:
        eval_frame._polyfills.pop(operator.countOf)
        eval_frame._polyfills.pop(count_of)
    with pytest.raises(TypeError, match="Signature mismatch between"):
        ember.compiler.substitute_in_graph(operator.countOf)(lambda x: 0)
    with pytest.raises(TypeError, match="substitute_in_graph expects a function but got"):
        ember.compiler.substitute_in_graph(3)


def test_substitute_in_graph_constant_folds():
    def clamp_int(v, lo, hi):
        return max(lo, min(v, hi))

    def f(x):
        return x * clamp_int(7, 0, 5)

    @ember.compiler.substitute_in_graph(clamp_int, can_constant_fold_through=True)
    def clamp_poly(v, lo, hi):
        raise AssertionError("folded: not traced")
    try:
        assert same(ember.compile(f, backend="eager", fullgraph=True)(ember.ones(2)),
                    ember.full((2,), 5.0))
    finally:
        eval_frame._polyfills.pop(clamp_int)
        eval_frame._polyfills.pop(clamp_poly)


# -- nested_compile_region ------------------------------------------------------------------------
@ember.compiler.nested_compile_region
def region(x, y):
    return ember.mul(x, y).sin()


def f_regions(x, y):
    a = region(x, y)
    b = region(a, y)
    c = region(x, ember.ones(2, 4))
    return a + b + c


def test_nested_compile_region_reuses_its_subgraph():
    from ember._higher_order_ops.invoke_subgraph import invoke_subgraph
    x, y = ember.randn(4), ember.randn(4)
    rec = EagerAndRecordGraphs()
    assert ember.allclose(ember.compile(f_regions, backend=rec, fullgraph=True)(x, y),
                          f_regions(x, y))
    gm, = rec.graphs
    calls = [n for n in gm.graph.nodes if n.target is invoke_subgraph]
    # the first two calls share one subgraph; other shapes get their own
    assert [n.args[1] for n in calls] == ["subgraph_0", "subgraph_0", "subgraph_1"]
    sub_ops = [n.target for n in gm.subgraph_0.graph.nodes if n.op == "call_function"]
    assert sub_ops == [ember.mul] and \
        [n.target for n in gm.subgraph_0.graph.nodes if n.op == "call_method"] == ["sin"]
    ember._dynamo.reset()
    assert ember.allclose(ember.compile(f_regions, backend="aot_eager")(x, y), f_regions(x, y))


def test_nested_compile_region_errors():
    @ember.compiler.nested_compile_region
    def broken(x):
        x = x + 1
        ember._dynamo.graph_break()
        return x

    with pytest.raises(UncapturedHigherOrderOpError, match="Got graph break/error:\n\nCall to "
                                                           "`torch._dynamo.graph_break"):
        ember.compile(lambda x: broken(x) * 2, backend="eager")(ember.ones(2))
    with pytest.raises(RuntimeError, match="experimental feature for testing only"):
        ember.compiler.nested_compile_region(h, options={})

    @ember.compiler.nested_compile_region(max_reuse_entries=1)
    def once(x):
        return x + 1
    with pytest.raises(RuntimeError, match=r"exceeded maximum reuse entries \(1\)"):
        ember.compile(lambda x: once(x) + once(x.sum()), backend="eager")(ember.ones(2))


# -- wrap_numpy -----------------------------------------------------------------------------------
@ember.compiler.wrap_numpy
def np_fn(a, b):
    return np.sin(a) * b, np.asarray(a.shape)


def test_wrap_numpy():
    x, y = ember.arange(6.0), ember.full((6,), 2.0)
    out, shape = np_fn(x, y)
    assert isinstance(out, ember.Tensor) and same(out, ember.sin(x) * 2)
    assert same(shape, ember.tensor([6]))
    got = ember.compile(np_fn, backend="eager")(x, y)  # NumPy runs eagerly: a graph break
    assert same(got[0], out) and same(got[1], shape)


# -- compiler.config ------------------------------------------------------------------------------
def test_compiler_config(torch):
    cfg = ember.compiler.config
    assert cfg.recompile_limit == ember._dynamo.config.recompile_limit == 8
    with cfg.patch(recompile_limit=1):
        assert ember._dynamo.config.recompile_limit == 1
        cnt = CompileCounter()
        opt = ember.compile(h, backend=cnt, dynamic=False)
        opt(ember.ones(2))
        opt(ember.ones(3))  # over the limit: eager
        assert cnt.frame_count == 1
    assert ember._dynamo.config.recompile_limit == 8
    cfg.automatic_dynamic_shapes = False
    try:
        assert ember._dynamo.config.automatic_dynamic_shapes is False
    finally:
        cfg.automatic_dynamic_shapes = True
    def errors(mod):
        return [_raised(lambda: mod.compiler.config.no_such_setting),
                _raised(lambda: mod.compiler.config.patch(no_such_setting=1).__enter__())]
    for got, want in zip(errors(ember), errors(torch)):
        assert type(got) is type(want) is AttributeError
        assert str(got).replace("ember.", "torch.", 1) == str(want)


# -- guard filters --------------------------------------------------------------------------------
W = ember.ones(3)


class Net(ember.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = ember.nn.Linear(3, 3)
        self.k = 2

    def forward(self, x):
        return self.lin(x) * self.k + W


def _kept(filter_fn):
    """The guards ``filter_fn`` keeps of Net's capture, by entry name (or type)."""
    seen = []

    def rec(entries):
        keep = filter_fn(entries)
        seen.append({e.name or e.guard_type: k for e, k in zip(entries, keep)})
        return keep
    ember.compile(Net(), backend="eager", options={"guard_filter_fn": rec})(ember.ones(3))
    ember._dynamo.reset()
    return seen[0]


def test_guard_filters_select_guards():
    c = ember.compiler
    lin_w = "self._modules['lin']._parameters['weight']"
    kept = _kept(c.skip_guard_on_all_nn_modules_unsafe)
    assert not kept["self"] and not kept["self.k"] and not kept[lin_w] and kept["args[0]"]
    kept = _kept(c.skip_guard_on_inbuilt_nn_modules_unsafe)
    assert kept["self"] and kept["self.k"] and not kept[lin_w]
    kept = _kept(c.keep_tensor_guards_unsafe)
    assert kept["args[0]"] and not kept[lin_w] and not kept["self.k"]
    assert _kept(lambda e: c.keep_tensor_guards_unsafe(e, keep_parameters=True))[lin_w]
    kept = _kept(c.keep_portable_guards_unsafe)
    assert kept["GLOBAL_STATE"] and kept["args[0]"] and not kept["self"]
    kept = _kept(c.skip_guard_on_globals_unsafe)
    assert not any(v for k, v in kept.items() if k.startswith("G[")) and kept["self"]
    assert not any(_kept(c.skip_all_guards_unsafe).values())


def add_n(x, n):
    return x + n


def test_guard_filters_drop_the_checks():
    cnt = CompileCounter()
    opt = ember.compile(add_n, backend=cnt,
                        options={"guard_filter_fn": ember.compiler.skip_all_guards_unsafe})
    x = ember.ones(2)
    assert same(opt(x, 1), x + 1)
    assert same(opt(x, 5), x + 1)  # unsafe: n is not checked, the first entry runs
    assert cnt.frame_count == 1
    bad = ember.compile(add_n, backend="eager", options={"guard_filter_fn": lambda e: [True]})
    with pytest.raises(AssertionError, match="filter_results length"):
        bad(x, 1)


# -- error_on_graph_break -------------------------------------------------------------------------
def f_print(x):
    x = x + 1
    print("side effect")
    return x * 2


def test_error_on_graph_break(capsys):
    cnt = CompileCounter()
    opt = ember.compile(f_print, backend=cnt)
    with ember._dynamo.error_on_graph_break(True):
        with pytest.raises(Unsupported, match="print"):
            opt(ember.ones(2))
    assert same(opt(ember.ones(2)), f_print(ember.ones(2)))  # breaks again outside
    assert cnt.frame_count == 2

    @ember._dynamo.error_on_graph_break(False)
    def helper(x):
        print("helper")
        return x + 1

    def g(x):
        return helper(x * 2) * 3

    def g_block(x):
        with ember._dynamo.error_on_graph_break(True):
            x = x + 1
            print("inside")
        return x
    with ember._dynamo.error_on_graph_break(True):
        assert same(ember.compile(g, backend="eager")(ember.ones(2)), g(ember.ones(2)))
    with pytest.raises(Unsupported, match="print"):
        ember.compile(g_block, backend="eager")(ember.ones(2))


def test_is_dynamo_disable_recursive():
    def a(x):
        return x

    def b(x):
        return x
    ember._dynamo.disable(a)
    ember._dynamo.disable(b, recursive=False)
    assert ember._dynamo.is_dynamo_disable_recursive(a) is True
    assert ember._dynamo.is_dynamo_disable_recursive(b) is False
    assert ember._dynamo.is_dynamo_disable_recursive(h) is None
