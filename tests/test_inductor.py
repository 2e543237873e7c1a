"""ember._inductor: lowered ops against eager (values within tolerances, NaN/inf kept, dtypes
equal), fusion structure, generated code, training, and the no-compiler fallback."""
import logging
import math
import os
import shutil

import pytest

import ember
from ember._functorch.aot_autograd import aot_autograd
from ember._inductor import compile_fx, config
from ember._inductor.decomposition import select_decomp_table
from ember._inductor.lowering import BINARY, UNARY

pytestmark = pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None,
                                reason="Inductor needs a C compiler")

SPECIALS = [math.nan, math.inf, -math.inf, 0.0, -0.0, 1.0, -1.0, 0.5, 3.0, -2.5]


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory, monkeypatch):
    # one cache per test session: identical kernels across tests build once
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "ind"))
    ember._dynamo.reset()


class Recorder:
    """An inductor backend that keeps the CompiledGraphs it makes."""

    def __init__(self):
        self.graphs = []

    def inner(self, gm, inputs):
        out = compile_fx.compile_fx_inner(gm, inputs)
        self.graphs.append(out)
        return out

    def backend(self):
        from ember._functorch.aot_autograd import min_cut_rematerialization_partition
        return aot_autograd(fw_compiler=self.inner, decompositions=select_decomp_table(),
                            partition_fn=min_cut_rematerialization_partition)

    def kernels(self, i=0):
        return self.graphs[i].c_source_code.count("\nstatic void cpp_fused_")


def _inputs(dtype, n=40, seed=0):
    g = ember.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        x = ember.randn(n, generator=g, dtype=dtype) * 3
        x[:len(SPECIALS)] = ember.tensor(SPECIALS, dtype=dtype)
        return x
    if dtype == ember.bool:
        return ember.randint(0, 2, (n,), generator=g).bool()
    return ember.randint(-20, 20, (n,), generator=g, dtype=dtype)


def assert_same(out, ref, rtol=1e-5, atol=1e-6):
    assert out.dtype == ref.dtype and out.shape == ref.shape
    if ref.dtype.is_floating_point:
        ember.testing.assert_close(out, ref, rtol=rtol, atol=atol, equal_nan=True)
    else:
        assert ember.equal(out, ref), (out, ref)


UNARY_OK_INT = {"abs", "neg", "relu", "sign", "sgn", "square", "floor", "ceil", "trunc",
                "round", "bitwise_not", "isnan", "isinf", "isfinite", "signbit",
                "logical_not", "exp", "sin", "sqrt", "sigmoid"}


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.int64])
def test_unary(name, dtype):
    if dtype == ember.int64 and name not in UNARY_OK_INT:
        pytest.skip("float-only op")
    if name == "bitwise_not" and dtype.is_floating_point:
        pytest.skip("bitwise_not takes integers")
    fn = getattr(ember.ops.aten, name).default
    x = _inputs(dtype)
    try:
        ref = fn(x)
    except RuntimeError:
        pytest.skip("eager rejects this dtype")
    out = ember.compile(lambda t: fn(t), backend="inductor")(x)
    # libmvec's vector math is within a few ulp of glibc's scalar functions
    assert_same(out, ref, rtol=2e-6 if ref.dtype == ember.float32 else 1e-12, atol=1e-6)


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("dtype", [ember.float32, ember.int64, ember.bool])
def test_binary(name, dtype):
    packet = getattr(ember.ops.aten, name)
    ov = next(o for o in ("Tensor", "Tensor_Tensor", "default") if o in packet.overloads())
    fn = getattr(packet, ov)
    x, y = _inputs(dtype, seed=1), _inputs(dtype, seed=2).flip(0)
    if dtype != ember.bool and name in ("div", "remainder", "fmod", "floor_divide"):
        y = ember.where(y == 0, ember.ones_like(y), y)
    try:
        ref = fn(x, y)
    except (RuntimeError, TypeError):
        pytest.skip("eager rejects this dtype")
    out = ember.compile(lambda a, b: fn(a, b), backend="inductor")(x, y)
    assert_same(out, ref, rtol=2e-6)


def test_broadcast_scalar_and_promotion():
    def f(a, b, c):
        return (a * 2 + b) / c - (a > b).float() + ember.where(a < 0, a, 0.5)
    a = ember.randn(4, 1, 5)
    b = ember.randn(3, 1, dtype=ember.float64)
    c = ember.arange(1, 6)
    assert_same(ember.compile(f)(a, b, c), f(a, b, c), rtol=1e-6)


def test_views_strides_and_offsets():
    def f(x, y):
        a = x.t() * 2                       # transposed input
        b = y[1:, ::2].unsqueeze(0) + 1     # offset and step
        return a.sum(0) + b.expand(3, -1, -1).sum(0).sum(0)[:1], a.permute(1, 0).contiguous()
    x = ember.randn(5, 4)
    y = ember.randn(6, 8)
    for o, r in zip(ember.compile(f)(x, y), f(x, y)):
        assert_same(o, r)
        assert o.stride() == r.stride()


@pytest.mark.parametrize("op", ["sum", "amax", "amin", "prod", "mean", "var", "any"])
@pytest.mark.parametrize("dims,keepdim", [((1,), False), ((0, 2), True), (None, False)])
def test_reductions(op, dims, keepdim):
    x = ember.randn(6, 7, 5)
    x[2, 3, 1] = math.nan
    x[4, 0, 0] = -math.inf
    if op == "any":
        x = x > 1
    if op == "prod":
        if dims is not None and len(dims) > 1:
            pytest.skip("prod reduces one dim")
        x = x.clamp(-1.5, 1.5).nan_to_num(0.3)
        dims = dims[0] if dims else None

    def f(t, dims=dims):
        if dims is None:
            return getattr(t, op)()
        return getattr(t, op)(dims, keepdim=keepdim) if op != "var" else \
            t.var(dims, keepdim=keepdim)
    assert_same(ember.compile(f)(x), f(x), rtol=1e-5, atol=1e-5)


def test_nan_rows_in_max_and_softmax():
    x = ember.randn(4, 9)
    x[1, 3] = math.nan
    x[2] = -math.inf
    x[3, 0] = math.inf
    f = lambda t: (t.amax(1), t.softmax(1), t.amin(1))  # noqa: E731
    for o, r in zip(ember.compile(f)(x), f(x)):
        assert_same(o, r)


def test_softmax_and_layer_norm_fuse_into_one_kernel_each():
    rec = Recorder()
    F = ember.nn.functional
    x = ember.randn(32, 64)
    w, b = ember.randn(64), ember.randn(64)
    out = ember.compile(lambda t: t.softmax(-1), backend=rec.backend())(x)
    assert_same(out, x.softmax(-1))
    assert rec.kernels(0) == 1
    ln = lambda t: F.layer_norm(t, (64,), w, b)  # noqa: E731
    out = ember.compile(ln, backend=rec.backend())(x)
    assert_same(out, ln(x), atol=1e-5)
    assert rec.kernels(1) == 1
    src = rec.graphs[1].c_source_code
    assert "#pragma omp simd reduction(+:acc0)" in src and "rsqrt" in src


def test_pointwise_chain_is_one_named_kernel_and_intermediates_stay_in_registers():
    rec = Recorder()
    f = lambda x: ember.exp(ember.relu(ember.sin(x) * 2 + 1))  # noqa: E731
    x = ember.randn(config.parallel_threshold)
    assert_same(ember.compile(f, backend=rec.backend())(x), f(x), rtol=2e-6)
    g = rec.graphs[0]
    assert "static void cpp_fused_add_exp_mul_relu_sin_0(" in g.c_source_code
    assert "aten.sin.default(sin); aten.mul.Tensor(mul)" in g.c_source_code  # graph order
    # one output buffer, no intermediates allocated
    assert g.source_code.count("empty_strided_cpu(") == 1
    assert "#pragma omp parallel for simd" in g.c_source_code or ember.get_num_threads() == 1


def test_mlp_training_matches_eager():
    nn = ember.nn
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 32), nn.GELU(),
                          nn.Linear(32, 5))
    ref = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 32), nn.GELU(),
                        nn.Linear(32, 5))
    ref.load_state_dict(model.state_dict())
    opt = ember.optim.SGD(model.parameters(), lr=0.05)
    opt_ref = ember.optim.SGD(ref.parameters(), lr=0.05)
    cmodel = ember.compile(model)
    x, y = ember.randn(16, 20), ember.randint(0, 5, (16,))
    for _ in range(20):
        losses = []
        for m, o in ((cmodel, opt), (ref, opt_ref)):
            loss = nn.functional.cross_entropy(m(x), y)
            o.zero_grad()
            loss.backward()
            o.step()
            losses.append(loss.item())
        assert abs(losses[0] - losses[1]) < 1e-4
    for p, q in zip(model.parameters(), ref.parameters()):
        ember.testing.assert_close(p, q, rtol=1e-4, atol=1e-5)


def test_fallbacks_are_counted_and_run_eagerly():
    rec = Recorder()
    f = lambda x, w: ember.sort(x @ w, 0)[0].relu()  # noqa: E731
    x, w = ember.randn(4, 3), ember.randn(3, 5)
    assert_same(ember.compile(f, backend=rec.backend())(x, w), f(x, w))
    fb = rec.graphs[0].fallbacks
    assert fb["aten.mm.default"] == 1 and fb["aten.sort.default"] == 1


def test_output_code_log(caplog):
    ember._logging.set_logs(output_code=True)
    try:
        with caplog.at_level(logging.DEBUG, logger="ember._inductor.__output_code"):
            ember.compile(lambda x: x.cos() + 1)(ember.randn(8))
    finally:
        ember._logging.set_logs()
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "def call(args):" in text and "static void cpp_fused_add_cos_0(" in text


def test_generated_code_compiles_without_warnings(tmp_path):
    import subprocess
    from ember._inductor import codecache
    rec = Recorder()
    F = ember.nn.functional
    f = lambda x, w: F.layer_norm(x, (8,), w).softmax(-1).amax(0) > 0.1  # noqa: E731
    ember.compile(f, backend=rec.backend())(ember.randn(4, 8), ember.randn(8))
    src = tmp_path / "k.c"
    src.write_text(rec.graphs[0].c_source_code)
    cmd = codecache.compile_command(str(src), str(tmp_path / "k.so"))
    res = subprocess.run(cmd, capture_output=True, text=True)
    assert res.returncode == 0 and "warning" not in res.stderr, res.stderr


def test_no_compiler_warns_and_runs_eagerly(monkeypatch):
    from ember._inductor import codecache
    monkeypatch.setenv("CC", "/nonexistent/cc")
    monkeypatch.setattr(compile_fx, "_warned_no_compiler", False)
    codecache.CppCodeCache.cache_clear()
    f = lambda x: x.tanh() * 3  # noqa: E731
    x = ember.randn(5)
    with pytest.warns(UserWarning, match="CC"):
        out = ember.compile(f)(x)
    assert_same(out, f(x))


@pytest.mark.parametrize("dtype", [ember.float16, ember.bfloat16])
def test_half_precision_computes_in_float32(dtype):
    F = ember.nn.functional
    x = ember.randn(64, 33).to(dtype)
    x[0, 0], x[1, 1] = math.nan, math.inf
    w = ember.randn(33).to(dtype)

    def f(t, w):
        return (F.gelu(t * w + 1).softmax(-1), t.sum(1), t.amax(0), (t.float() * 2).to(dtype),
                F.layer_norm(t, (33,), w))
    rec = Recorder()
    outs = ember.compile(f, backend=rec.backend())(x, w)
    for o, r in zip(outs, f(x, w)):
        assert_same(o, r, rtol=2e-2, atol=2e-2)
    assert not rec.graphs[0].fallbacks  # all of it compiled
    ctype = "_Float16" if dtype == ember.float16 else "uint16_t"
    assert f"const {ctype}* restrict" in rec.graphs[0].c_source_code


def test_row_local_intermediates_skip_memory():
    rec = Recorder()
    x = ember.randn(256, 64, requires_grad=True)
    g = ember.randn(256, 64)
    def f(t):
        # too many ops to recompute in each consumer: it is stored, once per row
        y = ((t * 2 + 1).sin() * 3 - 1).exp().tanh() * 0.5 + t
        return y.softmax(-1)
    out = ember.compile(f, backend=rec.backend())(x)
    out.backward(g)
    ref_x = x.detach().requires_grad_()
    f(ref_x).backward(g)
    assert_same(x.grad, ref_x.grad)
    fwd = rec.graphs[0]
    # y lives in a per-row stack array: of the full-size buffers only the result is allocated
    # (the row max and sum are saved for backward)
    assert "_row[64];" in fwd.c_source_code
    assert fwd.source_code.count("empty_strided_cpu((256, 64)") == 1


def test_debug_writes_the_scheduled_ir(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path))
    rec = Recorder()
    f = lambda x, w: (x @ w).relu().softmax(-1)  # noqa: E731
    with config.patch(debug=True):
        ember.compile(f, backend=rec.backend())(ember.randn(4, 5), ember.randn(5, 6))
    (ir_file,) = tmp_path.glob("*/*/ir_*.txt")
    text = ir_file.read_text()
    assert "aten.mm.default" in text and "kernel: outer [4] x inner [6]" in text
    assert "max over [6]" in text and "sum over [6]" in text


def test_embedding_and_gather_load_through_indices_and_check_them():
    rec = Recorder()
    F = ember.nn.functional
    w = ember.randn(10, 4)
    i = ember.tensor([[1, 2, 9], [0, 0, 3]])
    x = ember.randn(5, 7)
    idx = ember.randint(0, 7, (5, 3))

    def f(w, i, x, idx):
        return F.embedding(i, w) * 2, x.gather(1, idx).exp()
    compiled = ember.compile(f, backend=rec.backend())
    for o, r in zip(compiled(w, i, x, idx), f(w, i, x, idx)):
        assert_same(o, r, rtol=2e-6)
    assert not rec.graphs[0].fallbacks
    # out-of-range indices raise as the eager ops do, before any kernel reads through them
    with pytest.raises(IndexError, match="index out of range in self"):
        compiled(w, ember.tensor([[1, 12, 0], [0, 0, 0]]), x, idx)
    with pytest.raises(RuntimeError, match="index 7 is out of bounds for dimension 1 with size 7"):
        compiled(w, i, x, ember.full((5, 3), 7))
    with pytest.raises(RuntimeError, match="index -1 is out of bounds"):
        compiled(w, i, x, ember.full((5, 3), -1))


def test_computed_indices_are_stored_and_checked_before_their_reader():
    rec = Recorder()
    x = ember.randn(6, 9)
    logits = ember.randn(6, 9)

    def f(x, logits):
        # indices computed in the graph: a buffer the wrapper checks before the gather runs
        idx = (logits.abs() * 3).long().clamp(max=8)
        return x.gather(1, idx).sum(1)
    out = ember.compile(f, backend=rec.backend())(x, logits)
    assert_same(out, f(x, logits), rtol=2e-6)
    src = rec.graphs[0].source_code
    assert src.index("check_bounds(") < src.rindex("kernels.")


def test_options_reach_the_config_and_unknown_ones_raise(caplog, monkeypatch):
    monkeypatch.setattr(compile_fx, "_warned_modes", set())  # the mode warning comes once
    f = lambda x: (x.sin(), x.cos(), x.exp())  # noqa: E731  (one kernel by default)
    x = ember.randn(16)
    ember._logging.set_logs(output_code=True)
    try:
        with caplog.at_level(logging.DEBUG, logger="ember._inductor.__output_code"):
            out = ember.compile(f, options={"max_fusion_size": 1})(x)
    finally:
        ember._logging.set_logs()
    for o, r in zip(out, f(x)):
        assert_same(o, r, rtol=2e-6)
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert text.count("\nstatic void cpp_fused_") == 3  # one node per kernel
    with pytest.raises(RuntimeError, match="Unexpected optimization option no_such_option"):
        ember.compile(f, options={"no_such_option": 1})(x)
    # every mode ember.compile accepts is implemented; one only compile_fx sees still warns
    with pytest.warns(UserWarning, match="does not implement this mode yet"):
        compile_fx._options("no-such-mode", {})


F_PAD = ember.nn.functional.pad
PIECEWISE = {
    "pad": lambda x, y: F_PAD(x.sin(), (1, 2, 0, 3), value=-1.5) * 2,
    "pad_crop": lambda x, y: F_PAD(x.exp(), (-1, 2)) + 1,
    "pad_nan": lambda x, y: F_PAD(x.log(), (2, 2), value=math.nan),
    "cat": lambda x, y: ember.cat([x.sin(), y * 2, x], 1).relu(),
    "cat_dim0": lambda x, y: ember.cat([x, x.cos()], 0) - 1,
    "cat_promotes": lambda x, y: ember.cat([(x > 0).long(), y.double()], 1) * 2,
    "cat_empty_inputs": lambda x, y: ember.cat([x, ember.zeros(4, 0), ember.zeros(0), y], 1),
    "slice_scatter": lambda x, y: ember.slice_scatter(x.sin(), y[:, :2] * 3, 1, 1, 3).exp(),
    "slice_scatter_negative_start": lambda x, y: ember.slice_scatter(x, y[:, :2], 1, -2),
    "slice_scatter_whole": lambda x, y: ember.slice_scatter(x.sin(), x * 3, 1),
    "select_scatter": lambda x, y: ember.select_scatter(x + 1, y[:, 0].cos(), 1, -1) * 2,
}


@pytest.mark.parametrize("name", sorted(PIECEWISE))
def test_piecewise_ops_lower_to_one_kernel_with_guarded_loads(name):
    """pad, cat, slice_scatter and select_scatter: each output element picks its input by
    position; loads outside an input's range are guarded (``ops.masked``), never made."""
    rec = Recorder()
    f = PIECEWISE[name]
    x, y = ember.randn(4, 5), ember.randn(4, 3)
    x[0, 0] = math.nan
    assert_same(ember.compile(f, backend=rec.backend())(x, y), f(x, y))
    g = rec.graphs[0]
    assert not g.fallbacks, g.fallbacks
    assert rec.kernels() == 1
    if name not in ("slice_scatter_whole", "select_scatter"):
        assert ") ? ptr_" in g.c_source_code  # a guarded load


def test_slice_scatter_with_a_step_runs_eagerly():
    rec = Recorder()
    f = lambda x, y: ember.slice_scatter(x, y, 1, 0, 5, 2)  # noqa: E731
    x, y = ember.randn(4, 5), ember.randn(4, 3)
    assert_same(ember.compile(f, backend=rec.backend())(x, y), f(x, y))
    assert rec.graphs[0].fallbacks["aten.slice_scatter.default"] == 1


def test_one_hot_scatter_lowers_and_checks_its_indices():
    rec = Recorder()
    f = lambda x, i, s: ember.zeros_like(x).scatter(1, i, s) + x.scatter(1, i, -1.5)  # noqa: E731
    x, s = ember.randn(5, 7), ember.randn(5, 2)
    i = ember.tensor([[3], [0], [6], [3], [1]])
    c = ember.compile(f, backend=rec.backend())
    assert_same(c(x, i, s), f(x, i, s))
    assert not rec.graphs[0].fallbacks
    with pytest.raises(RuntimeError, match="index 7 is out of bounds for dimension 1 with size 7"):
        c(x, ember.tensor([[3], [0], [7], [3], [1]]), s)
    g = lambda x, i: x.scatter(1, i, 2.0)  # noqa: E731  (rows pick two positions: eager)
    i2 = ember.tensor([[3, 1], [0, 2], [6, 6], [3, 3], [1, 0]])
    assert_same(ember.compile(g, backend=rec.backend())(x, i2), g(x, i2))
    assert rec.graphs[-1].fallbacks["aten.scatter.value"] == 1


def test_unused_pure_nodes_are_not_run():
    """A node nobody reads (the ``empty`` a decomposed clone leaves) is dropped, not run as a
    fallback; a random op nobody reads still runs (it advances the generator)."""
    from ember.fx.experimental.proxy_tensor import make_fx

    def f(x):
        ember.empty(3)
        ember.rand(2)
        return (x.sin(),)
    x = ember.randn(3)
    gm = make_fx(f)(x)
    assert "aten.empty.memory_format" in [str(n.target) for n in gm.graph.nodes]
    out = compile_fx.compile_fx_inner(gm, [x])
    assert [str(n.target) for n in gm.graph.nodes if n.op == "call_function"] == \
        ["aten.rand.default", "aten.sin.default"]
    assert out.fallbacks == {"aten.rand.default": 1}
    assert_same(out([x])[0], x.sin())


POOLS = [dict(kernel_size=2), dict(kernel_size=3, stride=1),
         dict(kernel_size=3, stride=2, padding=1), dict(kernel_size=2, ceil_mode=True),
         dict(kernel_size=(2, 3), stride=(1, 2), dilation=(2, 1), padding=(1, 1))]


@pytest.mark.parametrize("cfg", POOLS, ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()))
@pytest.mark.parametrize("shape", [(2, 3, 7, 9), (3, 6, 5)])
def test_max_pool2d_forward_and_backward_lower(cfg, shape):
    """Values, indices (first maximum, NaN wins, padding skipped) and the gradient that
    follows the indices, against eager, without fallbacks."""
    rec = Recorder()
    g = ember.Generator().manual_seed(1)
    x = ember.randn(*shape, generator=g)
    x.view(-1)[5], x.view(-1)[17] = math.nan, -math.inf
    grad = None

    def f(t):
        v, i = ember.nn.functional.max_pool2d(t, return_indices=True, **cfg)
        return v * 2, i
    xe, xc = x.clone().requires_grad_(), x.clone().requires_grad_()
    ve, ie = f(xe)
    grad = ember.randn(ve.shape, generator=g)
    ve.backward(grad)
    vc, ic = ember.compile(f, backend=rec.backend())(xc)
    vc.backward(grad)
    assert_same(vc, ve)
    assert ember.equal(ic, ie)
    assert_same(xc.grad, xe.grad)
    assert all(not r.fallbacks for r in rec.graphs), [r.fallbacks for r in rec.graphs]


COLUMN_REDUCTIONS = {
    "sum": lambda x: x.sum(0),
    "amax_amin": lambda x: (x.amax(0), x.amin(0)),
    "prod_any": lambda x: ((x * 0.01 + 1).prod(0), (x > 2).any(0)),
    "middle_dim": lambda x: x.view(4, 150, 100).sum(1),
    "epilogue": lambda x: ((x * 2).sum(0).relu(), x.mean(0)),
    "var": lambda x: x.var(0),
}


@pytest.mark.parametrize("name", sorted(COLUMN_REDUCTIONS))
def test_reductions_over_a_strided_dim_swap_their_loops(name):
    """Reducing over rows (the bias gradient's ``sum(x, 0)``): each reduction step adds a
    contiguous row into a chunk of accumulators, vectorised over the kept elements; NaN and
    inf propagate as eagerly."""
    rec = Recorder()
    f = COLUMN_REDUCTIONS[name]
    x = ember.randn(600, 100)
    x[5, 7], x[9, 8], x[11, 70] = math.nan, -math.inf, math.inf
    out = ember.compile(f, backend=rec.backend())(x)
    ref = f(x)
    for o, r in zip(out if isinstance(out, tuple) else (out,),
                    ref if isinstance(ref, tuple) else (ref,)):
        assert_same(o, r, rtol=1e-4, atol=1e-4)
    src = rec.graphs[0].c_source_code
    assert "x0c += 64" in src or "x1c += 64" in src, src


def _layer_norm_step(rec, x, w, b, g, **settings):
    F = ember.nn.functional
    with config.patch(**settings):
        x = x.detach().requires_grad_()
        y = ember.compile(lambda t: F.layer_norm(t, (x.shape[-1],), w, b),
                          backend=rec.backend())(x)
        y.backward(g)
    return y, x.grad


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="streaming stores are x86-64's")
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.bfloat16])
@pytest.mark.parametrize("parallel", [False, True])
def test_streaming_stores_write_the_same_values(dtype, parallel):
    """A kernel moving at least the last-level cache's bytes writes its rows with streaming
    stores; forced here on a small tensor whose rows of 1000 elements start and end inside
    cache lines (the partial lines take ordinary stores), on one thread and on two."""
    x = ember.randn(67, 1000).to(dtype)
    x[3, 5], x[4, 7], x[5] = math.nan, math.inf, -math.inf
    w, b = ember.randn(1000).to(dtype), ember.randn(1000).to(dtype)
    g = ember.randn(67, 1000).to(dtype)
    runs = {}
    for stream in (True, False):
        rec = Recorder()
        settings = dict(streaming_stores=stream, streaming_store_min_bytes=0,
                        threads=2, parallel_threshold=0 if parallel else 1 << 62)
        runs[stream] = _layer_norm_step(rec, x, w, b, g, **settings)
        for graph in rec.graphs:  # the forward's result, the backward's gradient
            src = graph.c_source_code
            assert (src.count("ember_stream_row(&") == 1) == stream, src
            assert ("ember_stream_fence();" in src) == stream
            assert ("#pragma omp for" in src) == (stream and parallel)
    for got, want in zip(runs[True], runs[False]):
        assert ember.equal(got.isnan(), want.isnan())
        assert ember.equal(got.nan_to_num(), want.nan_to_num())  # bit for bit
    F = ember.nn.functional
    xr = x.detach().requires_grad_()
    ref = F.layer_norm(xr, (1000,), w, b)
    ref.backward(g)
    tol = 5e-2 if dtype == ember.bfloat16 else 1e-4
    assert_same(runs[True][0], ref, rtol=tol, atol=tol)
    assert_same(runs[True][1], xr.grad, rtol=tol, atol=tol)


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="streaming stores are x86-64's")
def test_streaming_stores_leave_values_read_again_in_the_cache(tmp_path):
    """Only results no later kernel reads stream: softmax's output is saved for its backward,
    and a product reads it here; by default only kernels moving the last-level cache's size."""
    import subprocess
    from ember._inductor import codecache
    x = ember.randn(64, 256, requires_grad=True)
    w = ember.randn(256, 8)
    rec = Recorder()
    with config.patch(streaming_store_min_bytes=0):
        out = ember.compile(lambda t: t.softmax(-1), backend=rec.backend())(x)
        out.backward(ember.randn(64, 256))
        ember.compile(lambda t: t.softmax(-1) @ w, backend=rec.backend())(x.detach())
    fwd, bwd, product = (g.c_source_code for g in rec.graphs)
    assert "ember_stream_row(&" not in fwd and "ember_stream_row(&" not in product
    assert "ember_stream_row(&" in bwd
    rec = Recorder()
    ember.compile(lambda t: t.softmax(-1) * 2, backend=rec.backend())(x.detach())
    assert "ember_stream" not in rec.graphs[0].c_source_code
    src = tmp_path / "k.c"
    src.write_text(bwd)
    res = subprocess.run(codecache.compile_command(str(src), str(tmp_path / "k.so")),
                         capture_output=True, text=True)
    assert res.returncode == 0 and "warning" not in res.stderr, res.stderr


def test_layer_norm_weight_gradient_reduces_rows_side_by_side():
    """``native_layer_norm_backward``'s weight and bias gradients sum over the rows (loads of
    the per-row mean and rstd do not vary across the kept elements)."""
    rec = Recorder()
    F = ember.nn.functional
    x = ember.randn(8, 16, 32, requires_grad=True)
    w, b = ember.randn(32, requires_grad=True), ember.randn(32, requires_grad=True)
    g = ember.randn(8, 16, 32)
    ember.compile(lambda x, w, b: F.layer_norm(x, (32,), w, b), backend=rec.backend())(
        x, w, b).backward(g)
    grads = [t.grad for t in (x, w, b)]
    for t in (x, w, b):
        t.grad = None
    F.layer_norm(x, (32,), w, b).backward(g)
    for got, t in zip(grads, (x, w, b)):
        assert_same(got, t.grad, rtol=1e-4, atol=1e-5)
    assert "x0c += 32" in rec.graphs[1].c_source_code


def test_tensor_constants_made_by_the_program_are_bound_in_the_wrapper():
    # a tensor created inside the compiled function is a get_attr node of the graph
    def f(x):
        c = ember.tensor([2.0, 3.0])
        return x * c + 1, c

    x = ember.ones(2, requires_grad=True)
    out, c = ember.compile(f)(x)
    assert out.tolist() == [3.0, 4.0] and c.tolist() == [2.0, 3.0]
    out.sum().backward()
    assert x.grad.tolist() == [2.0, 3.0]
    again, _ = ember.compile(f)(ember.full((2,), 2.0))  # a second call reads the constant again
    assert again.tolist() == [5.0, 7.0]


def test_float_exp_is_sleefs_expf_within_one_ulp():
    """float exp in generated C (compiled graphs, and eager kernels above their size threshold)
    is SLEEF's expf_u10, PyTorch's vectorised exp (torch.compile's too: bit for bit on 2M
    inputs, benchmarks/NOTES.md): within 1 ulp of the exact value over the whole range,
    subnormal results included; inf past log(FLT_MAX), 0 below -104, NaN kept."""
    import numpy as np
    x = np.linspace(-110, 110, 200_003).astype(np.float32)
    x[:8] = [math.nan, math.inf, -math.inf, 88.72, 88.73, -0.0, -103.9, -104.5]
    exact = np.exp(x.astype(np.float64))
    for got in (ember.compile(lambda t: t.exp())(ember.tensor(x)).numpy(),
                ember.tensor(x).exp().numpy()):
        assert np.isnan(got[0]) and got[1] == math.inf and got[2] == 0 and got[5] == 1
        assert math.isfinite(got[3]) and got[4] == math.inf and got[6] > 0 and got[7] == 0
        finite = np.isfinite(exact) & (exact < np.finfo(np.float32).max)
        ulp = np.spacing(np.maximum(np.abs(exact[finite]), np.finfo(np.float32).tiny)
                         .astype(np.float32)).astype(np.float64)
        ulp = np.where(exact[finite] < np.finfo(np.float32).tiny, 2.0 ** -149, ulp)
        assert np.max(np.abs(got[finite] - exact[finite]) / ulp) <= 1.0


def test_inline_exp_gives_way_to_libmvec_beside_other_vector_calls():
    """exp is inlined (ember_expf) in a loop with no other vector-math call, and libmvec's expf
    beside one (after a call that clobbers every vector register, the call is faster)."""
    from ember._inductor.codegen import cpp
    if not cpp._mvec_functions():
        pytest.skip("no libmvec on this machine: every math call is scalar")
    rec = Recorder()
    x = ember.randn(1000)
    ember.compile(lambda t: (t * 2).exp().sigmoid(), backend=rec.backend())(x)
    ember.compile(lambda t: t.sin().exp(), backend=rec.backend())(x)
    alone, beside = (g.c_source_code.split("static void cpp_fused", 1)[1] for g in rec.graphs)
    assert "ember_expf(" in alone and " expf(" not in alone
    assert "sinf(" in beside and "ember_expf(" not in beside and " expf(" in beside
