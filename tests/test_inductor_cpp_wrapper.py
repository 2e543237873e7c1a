"""ember._inductor's C wrapper (``config.cpp_wrapper``, ``mode="reduce-overhead"`` on the CPU):
every graph runs as one C call and gives exactly what the Python wrapper (mode="default") gives;
errors propagate as the eager ops' exceptions and no reference leaks, on success or on error."""
import gc
import logging
import os
import shutil
import sys
import warnings

import pytest

import ember
from ember._functorch.aot_autograd import aot_autograd, min_cut_rematerialization_partition
from ember._inductor import compile_fx, config
from ember._inductor.decomposition import select_decomp_table

pytestmark = pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None,
                                reason="Inductor needs a C compiler")

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory, monkeypatch, caplog):
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "ind"))
    ember._dynamo.reset()
    with caplog.at_level(logging.WARNING, logger="ember._inductor.codecache"):
        yield
    # every module built here (kernels and C wrapper) compiled without a -Wall warning
    assert not [r for r in caplog.get_records("call") if r.name == "ember._inductor.codecache"]


class Recorder:
    """An inductor backend compiling with the C wrapper and keeping its CompiledGraphs."""

    def __init__(self, cpp_wrapper=True):
        self.graphs = []
        self.cpp_wrapper = cpp_wrapper

    def inner(self, gm, inputs):
        with config.patch(cpp_wrapper=self.cpp_wrapper):
            out = compile_fx.compile_fx_inner(gm, inputs)
        self.graphs.append(out)
        return out

    def backend(self):
        return aot_autograd(fw_compiler=self.inner, bw_compiler=self.inner,
                            decompositions=select_decomp_table(),
                            partition_fn=min_cut_rematerialization_partition)


def live_tensors():
    gc.collect()
    return sum(isinstance(o, ember.Tensor) for o in gc.get_objects())


def assert_identical(outs, refs):
    """Same dtypes, shapes, strides and bits (NaN where NaN) as mode='default' gave."""
    outs = outs if isinstance(outs, (tuple, list)) else (outs,)
    refs = refs if isinstance(refs, (tuple, list)) else (refs,)
    assert len(outs) == len(refs)
    for o, r in zip(outs, refs):
        if not isinstance(r, ember.Tensor):
            assert o == r
            continue
        assert o.dtype == r.dtype and o.shape == r.shape and o.stride() == r.stride()
        assert ember.equal(o.isnan(), r.isnan())
        assert ember.equal(o.nan_to_num(0.0), r.nan_to_num(0.0)), (o, r)


def assert_close_to_eager(outs, refs):
    """Eager ember's values within the tolerances of tests/test_inductor.py (the kernels' libmvec
    math may differ from NumPy's in the last bit), with eager's dtypes and shapes."""
    for o, r in zip(outs, refs):
        assert o.dtype == r.dtype and o.shape == r.shape
        ember.testing.assert_close(o, r, rtol=2e-6, atol=1e-6, equal_nan=True)


def both_modes(f, *inputs, seed=None):
    """f compiled with mode='default' and with mode='reduce-overhead', each called on clones of
    ``inputs`` (a manual seed before each call when ``seed`` is given); the results must be
    identical. Returns the reduce-overhead results."""
    results = []
    for mode in ("default", "reduce-overhead"):
        ember._dynamo.reset()
        args = [x.clone() if isinstance(x, ember.Tensor) else x for x in inputs]
        if seed is not None:
            ember.manual_seed(seed)
        results.append((ember.compile(f, mode=mode)(*args), args))
    (ref, ref_args), (out, out_args) = results
    assert_identical(out, ref)
    assert_identical(out_args, ref_args)  # inputs mutated alike
    return out


def test_kernels_only_graph_is_one_c_call():
    rec = Recorder()
    f = lambda x, y: (ember.exp(ember.relu(ember.sin(x) * 2 + 1)) * y, (x * y).sum(0))  # noqa
    x, y = ember.randn(64, 33), ember.randn(64, 33)
    out = ember.compile(f, backend=rec.backend())(x, y)
    assert_identical(out, both_modes(f, x, y))
    (g,) = rec.graphs
    assert type(g.current_callable).__name__ == "builtin_function_or_method"
    assert g.current_callable.__name__ == "call"
    # both sources kept; each C block names the Python line it replaces
    assert "def call(args):" in g.source_code
    assert "static PyObject *call(PyObject *self" in g.c_source_code
    for line in g.source_code.split("def call(args):\n")[1].splitlines():
        line = line.strip()
        if line.startswith(("buf", "kernels.", "del ")):
            assert f"/* {line} */" in g.c_source_code, line
    # the kernels are called directly, not through their Python entry points
    assert "    cpp_fused_" in g.c_source_code.split("static PyObject *call(")[1]


def test_fallbacks_mm_and_random_op():
    def f(x, w):
        return (x @ w).relu() + ember.rand(4, 5), ember.randn(3).exp()
    both_modes(f, ember.randn(4, 3), ember.randn(3, 5), seed=7)


def test_multi_output_fallback_and_view_outputs():
    def f(x):
        v, i = x.sort(1)
        return v * 2, i, x.t(), (x * 2).t(), x[1:, ::2]
    rec = Recorder()
    x = ember.randn(4, 5)
    out = ember.compile(f, backend=rec.backend())(x)
    assert "ember_item(" in rec.graphs[0].c_source_code  # the sort's two results
    assert_identical(out, both_modes(f, x))
    assert_close_to_eager(out, f(x))


def test_aliased_inputs_and_outputs():
    def f(a, b):
        a.add_(1)  # a mutated input, b the same tensor viewed differently
        return a, b.sin(), a.view(-1)[:3]
    base = ember.randn(3, 4)
    both_modes(f, base, base)
    x = ember.randn(3, 4)
    out = ember.compile(f, mode="reduce-overhead")(x, x)
    assert out[0] is x or out[0].data_ptr() == x.data_ptr()
    assert ember.equal(out[2], x.view(-1)[:3])


def test_list_arguments_holding_buffers():
    # fallbacks taking lists of buffers: aten.index.Tensor(x, [i]), aten.index_put(x, [i], v)
    def f(x, i):
        j = i.abs() % 3
        return x.sin()[j], x.sin().index_put((j,), x[0] * 2), ember.block_diag(x, x.cos())
    rec = Recorder()
    x, i = ember.randn(3, 3), ember.tensor([2, -1, 0])
    out = ember.compile(f, backend=rec.backend())(x, i)
    call_src = rec.graphs[0].c_source_code.split("static PyObject *call(")[1]
    assert "ember_pack(1, 1, " in call_src
    assert_identical(out, both_modes(f, x, i))
    assert_close_to_eager(out, f(x, i))


def test_bounds_check_raises_as_eager_and_leaks_nothing():
    F = ember.nn.functional
    f = lambda w, i: F.embedding(i, w) * 2  # noqa: E731
    w, i = ember.randn(10, 4), ember.tensor([[1, 2, 9], [0, 0, 3]])
    compiled = ember.compile(f, mode="reduce-overhead")
    assert_close_to_eager((compiled(w, i),), (f(w, i),))
    bad = ember.tensor([[1, 12, 0], [0, 0, 0]])
    with pytest.raises(IndexError, match="index out of range in self"):
        f(w, bad)

    def fails():
        with pytest.raises(IndexError, match="index out of range in self"):
            compiled(w, bad)
    fails()
    before = live_tensors()  # after a collection: the tracebacks' cycles hold the inputs
    refs = sys.getrefcount(w), sys.getrefcount(bad)
    for _ in range(20):
        fails()
    assert live_tensors() == before
    assert (sys.getrefcount(w), sys.getrefcount(bad)) == refs


def test_bounds_check_of_a_computed_index_fails_mid_graph_without_leaks():
    def g(x, logits):
        y = x.cos() @ x.t()
        idx = (logits * 3).long()  # computed: stored, checked before the gather reads it
        return x.gather(1, idx).sum(1) + y.sum(1)
    rec = Recorder()
    x, logits = ember.randn(6, 9), ember.rand(6, 4)
    compiled = ember.compile(g, backend=rec.backend())
    assert_identical(compiled(x, logits), both_modes(g, x, logits))
    src = rec.graphs[0].source_code
    assert src.index("empty_strided_cpu(") < src.index("check_bounds(")  # buffers exist by then
    bad = logits.clone()
    bad[2, 1] = 5.0
    with pytest.raises(RuntimeError, match="index 15 is out of bounds for dimension 1 with size 9"):
        g(x, bad)

    def fails():
        with pytest.raises(RuntimeError, match="index 15 is out of bounds for dimension 1"):
            compiled(x, bad)
    fails()
    before = live_tensors()
    refs = sys.getrefcount(x), sys.getrefcount(bad)
    for _ in range(20):
        fails()
    assert live_tensors() == before
    assert (sys.getrefcount(x), sys.getrefcount(bad)) == refs


def test_no_leak_over_many_calls():
    f = lambda x, w: ((x @ w).relu() * 2, x.t(), (x + 1).sum(1))  # noqa: E731
    x, w = ember.randn(8, 6), ember.randn(6, 5)
    compiled = ember.compile(f, mode="reduce-overhead")
    compiled(x, w)
    before = live_tensors()
    refs = sys.getrefcount(x), sys.getrefcount(w)
    for _ in range(200):
        out = compiled(x, w)
    del out
    assert live_tensors() == before
    assert (sys.getrefcount(x), sys.getrefcount(w)) == refs


def test_call_checks_its_argument_list():
    rec = Recorder()
    ember.compile(lambda x: x.cos() + 1, backend=rec.backend())(ember.randn(8))
    call = rec.graphs[0].current_callable
    with pytest.raises(TypeError, match="list of the graph's inputs"):
        call((ember.randn(8),))
    with pytest.raises(ValueError, match="expected 1 inputs, got 2"):
        call([ember.randn(8), ember.randn(8)])
    args = [ember.randn(8)]
    x = args[0]
    (out,) = call(args)
    assert args == []  # boxed: the list is cleared, as the Python wrapper does
    assert_close_to_eager((out,), (x.cos() + 1,))


def test_placeholder_names_that_c_reserves():
    from ember.fx.experimental.proxy_tensor import make_fx
    f = lambda a, b, c: ((a.sin() + b) @ c,)  # noqa: E731
    x, y, z = ember.randn(3, 3), ember.randn(3, 3), ember.randn(3, 3)
    gm = make_fx(f)(x, y, z)
    for node, name in zip(gm.graph.find_nodes(op="placeholder"), ("args", "t0", "int")):
        node.name = name
    gm.recompile()
    with config.patch(cpp_wrapper=True):
        g = compile_fx.compile_fx_inner(gm, [x, y, z])
    assert "v_args = Py_NewRef(" in g.c_source_code and "v_t0" in g.c_source_code
    assert_close_to_eager(g([x, y, z]), f(x, y, z))


def _train(model, loss_fn, opt, steps):
    losses = []
    for _ in range(steps):
        loss = loss_fn(model)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.detach().clone())
    return losses, [p.detach().clone() for p in model.parameters()]


def test_mlp_training_equals_default_mode():
    nn = ember.nn
    x, y = ember.randn(32, 20), ember.randint(0, 5, (32,))
    runs = []
    for mode in ("default", "reduce-overhead"):
        ember._dynamo.reset()
        ember.manual_seed(0)
        model = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 32), nn.GELU(),
                              nn.Linear(32, 5))
        run = ember.compile(model, mode=mode)
        runs.append(_train(model, lambda m: nn.functional.cross_entropy(run(x), y),
                           ember.optim.SGD(model.parameters(), lr=0.05), 5))
    assert_identical(runs[1][0], runs[0][0])
    assert_identical(runs[1][1], runs[0][1])


def test_gpt_training_equals_default_mode():
    sys.path.insert(0, os.path.join(ROOT, "examples"))
    try:
        import train_gpt
    finally:
        sys.path.pop(0)
    gen = ember.Generator().manual_seed(1)
    x = ember.randint(0, 65, (2, 16), generator=gen)
    y = ember.randint(0, 65, (2, 16), generator=gen)
    runs = []
    for mode in ("default", "reduce-overhead"):
        ember._dynamo.reset()
        ember.manual_seed(0)
        model = train_gpt.GPT(65, context=16, width=32, n_layer=1, n_head=2)
        run = ember.compile(model, mode=mode)
        runs.append(_train(model, lambda m: run(x, y)[1],
                           ember.optim.AdamW(model.parameters(), lr=1e-3), 3))
    assert_identical(runs[1][0], runs[0][0])
    assert_identical(runs[1][1], runs[0][1])


def test_modes_and_options(monkeypatch):
    monkeypatch.setattr(compile_fx, "_warned_modes", set())
    seen = []
    real = compile_fx.compile_fx_inner

    def spy(gm, inputs, **kw):
        seen.append(config.cpp_wrapper)
        return real(gm, inputs, **kw)
    monkeypatch.setattr(compile_fx, "compile_fx_inner", spy)
    x = ember.randn(8)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # reduce-overhead is implemented: no warning
        ember.compile(lambda t: t.sin(), mode="reduce-overhead")(x)
        ember.compile(lambda t: t.sin() + 1, options={"cpp_wrapper": True})(x)
        ember.compile(lambda t: t.sin() + 2)(x)
    assert seen == [True, True, False]
    ember.compile(lambda t: t.cos(), mode="max-autotune")(x)
    assert seen[-1] is False
    with pytest.warns(UserWarning, match=r"mode='no-such-mode'\): ember's Inductor does not "
                                         r"implement this mode yet \(it implements 'default', "
                                         r"'reduce-overhead', 'max-autotune-no-cudagraphs', "
                                         r"'max-autotune'\)"):
        assert compile_fx._options("no-such-mode", {"threads": 1}) == {"threads": 1}


@pytest.mark.parametrize("size,stride,dtype", [((2, 3), (1, 2), ember.float32),
                                               ((4,), (1,), ember.int64),
                                               ((2, 0, 3), (3, 3, 1), ember.bfloat16),
                                               ((3, 2), (2, 1), ember.bool)])
def test_runtime_allocation_matches_empty_strided(size, stride, dtype):
    from ember._core.strides import storage_extent
    from ember._inductor.runtime import empty_strided_cpu
    nbytes = storage_extent(size, stride, 0) * dtype.itemsize
    for deterministic in (False, True):
        ember.use_deterministic_algorithms(deterministic)
        try:
            t, ref = empty_strided_cpu(size, stride, dtype, nbytes), ember.empty_strided(
                size, stride, dtype=dtype)
        finally:
            ember.use_deterministic_algorithms(False)
        assert (t.shape, t.stride(), t.dtype, t.device, t.requires_grad) == \
            (ref.shape, ref.stride(), ref.dtype, ref.device, ref.requires_grad)
        assert t.untyped_storage().nbytes() == ref.untyped_storage().nbytes()
        if deterministic:  # both filled (NaN, the dtype's largest value, True)
            assert_identical((t,), (ref,))
