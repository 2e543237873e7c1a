"""mode="max-autotune": matrix products choose between the eager BLAS call and the C GEMM
template (with fused epilogues) by timing; every choice against eager ember and PyTorch, the
decision cache in memory, on disk and across processes, the MLP's losses, bad input."""
import os
import shutil
import subprocess
import sys
import warnings

import numpy as np
import pytest

import ember
from ember._inductor import compile_fx, config, select_algorithm
from ember._inductor.codegen import cpp_gemm_template
from ember._inductor.kernel import mm as mm_lowering

from test_inductor import Recorder

pytestmark = pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None,
                                reason="Inductor needs a C compiler")

F = ember.nn.functional
torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory, monkeypatch):
    # one cache per test session; decisions of earlier tests are forgotten in memory
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "ind"))
    ember._dynamo.reset()
    select_algorithm.autotune_select_algorithm.cache_clear()


def _compiled(fn, *args, backends="ATEN,CPP", **settings):
    """``fn(*args)`` through Inductor under max_autotune, and the Recorder that kept its
    graphs."""
    rec = Recorder()
    with config.patch(max_autotune=True, max_autotune_gemm_backends=backends, **settings):
        out = ember.compile(fn, backend=rec.backend())(*args)
    return out, rec


def _torch(x):
    return torch.from_numpy(x.detach().numpy().copy())


def _check(out, ref, tref=None, rtol=1e-4, atol=1e-4):
    assert out.dtype == ref.dtype and out.shape == ref.shape
    ember.testing.assert_close(out, ref, rtol=rtol, atol=atol, equal_nan=True)
    if tref is not None:
        np.testing.assert_allclose(out.numpy(), tref.numpy(), rtol=rtol, atol=atol)


# (name, ember fn, torch fn, input shapes, how each input is laid out)
def _t(x):
    return x.t()


CASES = {
    "mm": (lambda a, b: a @ b, [(37, 70), (70, 29)], [None, None]),
    "mm_a_transposed": (lambda a, b: a.t() @ b, [(70, 37), (70, 29)], [None, None]),
    "mm_b_transposed": (lambda a, b: a @ b.t(), [(37, 70), (29, 70)], [None, None]),
    "mm_both_transposed": (lambda a, b: a.t() @ b.t(), [(70, 37), (29, 70)], [None, None]),
    "mm_strided": (lambda a, b: a[::2, 1::3] @ b[:, ::2], [(74, 210), (70, 58)], [None, None]),
    "mm_k_blocks": (lambda a, b: a @ b, [(9, 1500), (1500, 40)], [None, None]),
    "linear_relu": (lambda x, w, b: F.linear(x, w, b).relu(), [(50, 64), (33, 64), (33,)],
                    [None, None, None]),
    "linear_gelu_residual": (lambda x, w, b, r: F.gelu(F.linear(x, w, b)) + r,
                             [(50, 64), (33, 64), (33,), (50, 33)], [None] * 4),
    "addmm_alpha_beta": (lambda c, a, b: ember.addmm(c, a, b, beta=0.5, alpha=2.0),
                         [(20, 30), (20, 40), (40, 30)], [None] * 3),
    "addmm_beta0": (lambda c, a, b: ember.addmm(c, a, b, beta=0), [(20, 30), (20, 40), (40, 30)],
                    [None] * 3),
    "bmm": (lambda a, b: ember.bmm(a, b), [(3, 17, 40), (3, 40, 21)], [None, None]),
    "bmm_transposed_tanh": (lambda a, b: ember.bmm(a, b.transpose(1, 2)).tanh() * 2,
                            [(3, 17, 40), (3, 21, 40)], [None, None]),
    "matmul_used_twice": (lambda a, b: ((a @ b).relu(), (a @ b) * 3),
                          [(16, 24), (24, 40)], [None, None]),
}


def _args(shapes, dtype, seed=0):
    g = ember.Generator().manual_seed(seed)
    return [ember.randn(*s, generator=g, dtype=dtype) for s in shapes]


def _torch_fn(fn, args):
    """The same function on PyTorch tensors (ember's API is PyTorch's)."""
    tmod = {"F": torch.nn.functional, "ember": torch}
    g = dict(fn.__globals__, **tmod)
    tfn = type(fn)(fn.__code__, g, fn.__name__, fn.__defaults__, fn.__closure__)
    return tfn(*[_torch(a) for a in args])


@pytest.mark.parametrize("backends", ["ATEN", "CPP"])
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
@pytest.mark.parametrize("case", sorted(CASES))
def test_every_choice_matches_eager(case, dtype, backends):
    fn, shapes, _ = CASES[case]
    args = _args(shapes, dtype)
    out, rec = _compiled(fn, *args, backends=backends)
    ref, tref = fn(*args), _torch_fn(fn, args)
    outs, refs, trefs = ((out, ref, tref) if isinstance(ref, tuple)
                         else ((out,), (ref,), (tref,)))
    tol = 1e-4 if dtype == ember.float32 else 1e-10
    for o, r, t in zip(outs, refs, trefs):
        _check(o, r, t, rtol=tol, atol=tol)
    src = rec.graphs[0].c_source_code
    if backends == "CPP":
        assert "GEMM template cpp_gemm_" in src
        assert rec.graphs[0].fallbacks.get("aten.mm.default", 0) == 0
    else:
        assert "GEMM template" not in src


def test_epilogue_is_fused_into_the_template():
    x, w, b = _args([(64, 96), (48, 96), (48,)], ember.float32)
    out, rec = _compiled(lambda x, w, b: F.linear(x, w, b).relu(), x, w, b, backends="CPP")
    g = rec.graphs[0]
    # one kernel in all: the GEMM with the bias add and relu as its epilogue
    assert rec.kernels() == 1 and "\nstatic void cpp_fused_addmm_relu_0(" in g.c_source_code
    assert "aten.addmm.default(addmm); aten.relu.default(relu)" in g.c_source_code
    # the product never reaches memory: one buffer, the result
    assert g.source_code.count("empty_strided_cpu(") == 1
    _check(out, F.linear(x, w, b).relu())


@pytest.mark.parametrize("cfg", cpp_gemm_template.gemm_configs(ember.float32, 37, 29, 1300, 2),
                         ids=lambda c: c.name)
def test_every_template_config(cfg, monkeypatch):
    """Each configuration autotuning may pick, forced alone: sizes that leave remainders in
    every block and several K blocks, a transposed B, an epilogue."""
    monkeypatch.setattr(mm_lowering, "gemm_configs", lambda *a: [cfg])
    a, w, r = _args([(37, 1300), (29, 1300), (37, 29)], ember.float32)
    fn = lambda a, w, r: (a @ w.t()).sigmoid() * r  # noqa: E731
    out, rec = _compiled(fn, a, w, r, backends="CPP", threads=cfg.threads)
    assert f"GEMM template {cfg.name}" in rec.graphs[0].c_source_code
    _check(out, fn(a, w, r), _torch_fn(fn, [a, w, r]), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("backends", ["ATEN", "CPP"])
def test_nan_and_inf_propagate_as_eager(backends):
    a, b, c = _args([(12, 20), (20, 16), (16,)], ember.float32)
    a[0, 0], a[1, 3], a[2, 5] = float("nan"), float("inf"), -float("inf")
    b[4, 1], b[7, 2] = float("inf"), float("nan")
    c[9] = float("nan")
    fn = lambda a, b, c: (F.linear(a, b.t(), c)).relu()  # noqa: E731
    out, _ = _compiled(fn, a, b, c, backends=backends)
    ref = fn(a, b, c)
    assert ember.equal(out.isnan(), ref.isnan()) and ember.equal(out.isinf(), ref.isinf())
    _check(out, ref)


def test_generated_template_compiles_without_warnings(tmp_path):
    from ember._inductor import codecache
    x, w, b, r = _args([(50, 64), (33, 64), (33,), (50, 33)], ember.float64)
    fn = lambda x, w, b, r: F.gelu(F.linear(x, w, b)) + r  # noqa: E731
    _, rec = _compiled(fn, x, w, b, r, backends="CPP")
    src = tmp_path / "k.c"
    src.write_text(rec.graphs[0].c_source_code)
    cmd = codecache.compile_command(str(src), str(tmp_path / "k.so"))
    res = subprocess.run(cmd, capture_output=True, text=True)
    assert res.returncode == 0 and "warning" not in res.stderr, res.stderr


def test_decisions_are_cached_in_memory_and_on_disk(caplog):
    import logging
    counters = select_algorithm.counters
    a, b = _args([(40, 50), (50, 60)], ember.float32)
    fn = lambda a, b: (a @ b).relu()  # noqa: E731
    before = counters["benchmark"]
    with caplog.at_level(logging.INFO, logger="ember._inductor.select_algorithm"):
        _compiled(fn, a, b)
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "AUTOTUNE mm(40x50, 50x60)" in text and "aten_mm" in text and "chose" in text
    assert "cpp_gemm_mr4_nr16" in text
    assert counters["benchmark"] == before + 1
    hits = counters["memory_hit"]
    ember._dynamo.reset()
    _compiled(fn, a, b)  # the same product again: decided already
    assert counters["benchmark"] == before + 1 and counters["memory_hit"] == hits + 1
    select_algorithm.autotune_select_algorithm.cache_clear()
    disk = counters["disk_hit"]
    ember._dynamo.reset()
    out, _ = _compiled(fn, a, b)
    assert counters["benchmark"] == before + 1 and counters["disk_hit"] == disk + 1
    _check(out, fn(a, b))
    # another layout is another decision
    ember._dynamo.reset()
    _compiled(lambda a, b: (a @ b.t()).relu(), a, b.t().contiguous())
    assert counters["benchmark"] == before + 2


_CHILD = """
import ember
from ember._inductor import select_algorithm
a = ember.randn(40, 50); b = ember.randn(50, 60)
out = ember.compile(lambda a, b: (a @ b).relu(), mode="max-autotune")(a, b)
ember.testing.assert_close(out, (a @ b).relu(), rtol=1e-4, atol=1e-4)
print(dict(select_algorithm.counters))
"""


def test_second_process_reads_the_disk_cache(tmp_path):
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "cache"))
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    runs = [subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True,
                           text=True, timeout=600) for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr
    first, second = (eval(r.stdout.strip().splitlines()[-1]) for r in runs)
    assert first.get("benchmark") == 1 and not first.get("disk_hit")
    assert not second.get("benchmark") and second.get("disk_hit") == 1


def test_modes_and_options():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert compile_fx._options("max-autotune", {}) == {"max_autotune": True,
                                                             "triton.cudagraphs": True}
        assert compile_fx._options("max-autotune-no-cudagraphs", {}) == {"max_autotune": True}
    assert compile_fx._options(None, {"max_autotune_gemm": True}) == {"max_autotune_gemm": True}
    assert compile_fx._options("default", {}) == {}
    a, b = _args([(8, 8), (8, 8)], ember.float32)
    with pytest.raises(RuntimeError, match="max_autotune_gemm_backends"):
        _compiled(lambda a, b: a @ b, a, b, backends="TRITON")


def test_default_mode_keeps_blas_calls():
    a, b = _args([(8, 9), (9, 10)], ember.float32)
    rec = Recorder()
    out = ember.compile(lambda a, b: (a @ b).relu(), backend=rec.backend())(a, b)
    assert rec.graphs[0].fallbacks["aten.mm.default"] == 1
    _check(out, (a @ b).relu())


def test_mlp_losses_equal_eager():
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "benchmarks"))
    from inductor import _mlp, _same_losses, _steps
    gen = np.random.default_rng(0)
    xn = gen.standard_normal((128, 784), dtype=np.float32)
    yn = gen.integers(0, 10, 128)

    def make(compiled):
        x, y = ember.tensor(xn), ember.tensor(yn)
        model = _mlp(ember)
        run = ember.compile(model, mode="max-autotune") if compiled else model
        return _steps(ember, model, lambda m: F.cross_entropy(run(x), y))
    assert _same_losses(make(True), make(False), n=5) < 1e-4


@pytest.mark.parametrize("backends", ["ATEN", "CPP"])
def test_mismatched_shapes_raise_as_eager(backends):
    a, b = _args([(4, 5), (6, 7)], ember.float32)
    with pytest.raises(RuntimeError) as eager:
        a @ b
    with pytest.raises(RuntimeError) as compiled:
        _compiled(lambda a, b: (a @ b).relu(), a, b, backends=backends)
    assert "4x5" in str(compiled.value) or str(eager.value) in str(compiled.value)
