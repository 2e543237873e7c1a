"""ember._inductor's Scan nodes (cumsum, cumprod, logcumsumexp, cummax, cummin), accumulating
stores (embedding_dense_backward, index_put with accumulate, index_add, scatter_add) and Welford
reductions: compiled against eager ember and PyTorch (values within tolerances, NaN/inf in the
same places, dtypes equal), the errors eager raises, and the kernels they fuse into."""
import logging
import math
import re
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import ember
from ember._inductor import config
from test_inductor import Recorder

pytestmark = pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None,
                                reason="Inductor needs a C compiler")

aten = ember.ops.aten


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "ind"))
    ember._dynamo.reset()


def _flat(r):
    if isinstance(r, (tuple, list)):
        return [y for v in r for y in _flat(v)]
    return [r]


def _torch(x):
    return torch.from_numpy(np.array(x.numpy())) if isinstance(x, ember.Tensor) else x


def compiled(fn, *args, torch_fn=None, rtol=1e-5, atol=1e-6, recorder=None, eager_fn=None):
    """``fn(*args)`` compiled, checked against eager ember (``eager_fn`` where that differs
    from ``fn``) and (with ``torch_fn``) PyTorch."""
    ember._dynamo.reset()
    ref = (eager_fn or fn)(*args)
    backend = recorder.backend() if recorder is not None else "inductor"
    out = ember.compile(fn, backend=backend)(*args)
    refs, outs = _flat(ref), _flat(out)
    tref = _flat(torch_fn(*[_torch(a) for a in args])) if torch_fn is not None else None
    for k, (r, o) in enumerate(zip(refs, outs)):
        assert (o.dtype, o.shape) == (r.dtype, r.shape)
        ember.testing.assert_close(o, r, rtol=rtol, atol=atol, equal_nan=True)
        if tref is not None:
            t = tref[k]
            assert str(t.dtype).split(".")[-1] == str(o.dtype).split(".")[-1]
            np.testing.assert_allclose(o.numpy(), t.numpy(), rtol=rtol, atol=atol)
    return out


def _fallbacks(caplog):
    """aten op -> eager calls, from the ``fallback calls`` lines of TORCH_LOGS=inductor."""
    out = {}
    for rec in caplog.records:
        m = re.search(r"fallback calls to eager ops: (.*)", rec.getMessage())
        if m:
            for part in m.group(1).split(", "):
                op, _, n = part.rpartition(" x")
                out[op] = out.get(op, 0) + int(n)
    return out


def _specials(shape, dtype=ember.float32, seed=0):
    g = ember.Generator().manual_seed(seed)
    x = ember.randn(*shape, generator=g, dtype=dtype)
    flat = x.view(-1)
    vals = [math.nan, math.inf, -math.inf, -0.0, 0.0, 2.0]
    for k, v in enumerate(vals):
        flat[(7 * k + 3) % flat.numel()] = v
    return x


# -- scans ----------------------------------------------------------------------------------------
SCANS = {
    "cumsum": (lambda x, d: ember.cumsum(x, d), lambda x, d: torch.cumsum(x, d)),
    "cumprod": (lambda x, d: ember.cumprod(x, d), lambda x, d: torch.cumprod(x, d)),
    "logcumsumexp": (lambda x, d: ember.logcumsumexp(x, d), lambda x, d: torch.logcumsumexp(x, d)),
    "cummax": (lambda x, d: ember.cummax(x, d), lambda x, d: torch.cummax(x, d)),
    "cummin": (lambda x, d: ember.cummin(x, d), lambda x, d: torch.cummin(x, d)),
}


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
@pytest.mark.parametrize("name", sorted(SCANS))
def test_float_scans_every_dim_with_nan_inf(name, dtype):
    ours, theirs = SCANS[name]
    x = _specials((5, 6, 7), dtype) * (0.5 if name == "cumprod" else 1)
    for d in (0, 1, 2, -1):
        compiled(lambda t: ours(t, d), x, torch_fn=lambda t: theirs(t, d), rtol=1e-5,
                 atol=1e-5)


def test_logcumsumexp_of_infinite_rows():
    inf = math.inf
    x = ember.tensor([[-inf, -inf, -inf], [-inf, 1.0, -inf], [inf, inf, 1.0],
                      [inf, -inf, 2.0], [math.nan, 0.0, inf], [-inf, -inf, 3.0]])
    out = compiled(lambda t: ember.logcumsumexp(t, 1), x,
                   torch_fn=lambda t: torch.logcumsumexp(t, 1))
    assert out[0].tolist() == [-inf, -inf, -inf]


def test_cummax_nan_propagates_and_ties_take_the_later_index():
    x = ember.tensor([1.0, 3.0, 3.0, math.nan, 5.0, math.nan, 2.0])
    v, i = compiled(lambda t: ember.cummax(t, 0), x, torch_fn=lambda t: torch.cummax(t, 0))
    assert i.tolist() == [0, 1, 2, 3, 3, 5, 5]
    assert math.isnan(v[4].item())


@pytest.mark.parametrize("dtype", [ember.int32, ember.int64, ember.uint8, ember.bool])
@pytest.mark.parametrize("name", ["cumsum", "cumprod", "cummax", "cummin"])
def test_integer_and_bool_scans_promote_as_eager(name, dtype):
    ours, theirs = SCANS[name]
    g = ember.Generator().manual_seed(1)
    x = ember.randint(0 if dtype in (ember.uint8, ember.bool) else -3, 4, (4, 9), generator=g)
    x = x.bool() if dtype == ember.bool else x.to(dtype)
    for d in (0, 1):
        compiled(lambda t: ours(t, d), x, torch_fn=lambda t: theirs(t, d))


def test_scan_dtype_argument_and_half_inputs():
    x = _specials((6, 10))
    compiled(lambda t: ember.cumsum(t, 1, dtype=ember.float64), x,
             torch_fn=lambda t: torch.cumsum(t, 1, dtype=torch.float64))
    i = ember.arange(12).view(3, 4)
    compiled(lambda t: ember.cumprod(t, 0, dtype=ember.float32), i,
             torch_fn=lambda t: torch.cumprod(t, 0, dtype=torch.float32))
    h = ember.randn(4, 33).to(ember.bfloat16)
    compiled(lambda t: ember.cumsum(t, 1), h, rtol=2e-2, atol=2e-2)


def test_scans_of_empty_single_and_zero_dim_inputs():
    for shape, d in [((0, 4), 0), ((3, 0), 1), ((3, 0), 0), ((4, 1), 1), ((1, 5), 0), ((), 0)]:
        x = ember.randn(*shape)
        for name in SCANS:
            ours, theirs = SCANS[name]
            compiled(lambda t: ours(t, d), x, torch_fn=lambda t: theirs(t, d))


def test_negative_zero_is_kept():
    x = ember.tensor([-0.0, -0.0, 1.0])
    out = compiled(lambda t: ember.cumsum(t, 0), x, torch_fn=lambda t: torch.cumsum(t, 0))
    assert math.copysign(1, out[1].item()) == -1


def test_scan_fuses_pointwise_prologue_and_epilogue():
    rec = Recorder()
    x = ember.randn(16, 50)
    compiled(lambda t: ember.cumsum(t.exp(), 1).sqrt() * 2, x, recorder=rec)
    assert rec.kernels() == 1
    src = rec.graphs[0].c_source_code
    assert "aten.exp.default" in src and "aten.cumsum.default" in src and "aten.sqrt" in src
    # the scan carries its value down the row in order: no simd on its loop
    body = src[src.index("static void cpp_fused"):]
    body = body[:body.index("\n}\n")]
    assert "omp simd" not in body and "scan0_0" in body


def test_cummax_values_and_indices_share_one_scan():
    rec = Recorder()
    x = _specials((8, 20))
    compiled(lambda t: ember.cummax(t, 1), x, recorder=rec,
             torch_fn=lambda t: torch.cummax(t, 1))
    src = rec.graphs[0].c_source_code
    assert rec.kernels() == 1 and "scan1_0" not in src


def test_large_scan_runs_rows_on_threads():
    rec = Recorder()
    x = ember.randn(2048, 256)
    compiled(lambda t: ember.cumsum(t, 1), x, recorder=rec, rtol=1e-4, atol=1e-4,
             torch_fn=lambda t: torch.cumsum(t, 1))
    if ember.get_num_threads() > 1:
        assert "omp parallel for" in rec.graphs[0].c_source_code


def test_scan_backward_compiles():
    def f(t):
        return (ember.cumsum(t, 1) * ember.logcumsumexp(t, 0)).sum()
    x = ember.randn(5, 7, requires_grad=True)
    f(x).backward()
    ref = x.grad.clone()
    x.grad = None
    ember._dynamo.reset()
    ember.compile(f, backend="inductor")(x).backward()
    ember.testing.assert_close(x.grad, ref, rtol=1e-5, atol=1e-5)


# -- accumulating stores --------------------------------------------------------------------------
def test_embedding_dense_backward_repeated_and_out_of_range_indices():
    # as eager and ATen's CPU kernel: -1 (no wrapping) and 9 add nothing, 8 is the last row
    g = ember.randn(4, 6, 16)
    idx = ember.tensor([[0, 1, 1, -1, 8, 9]] * 4)
    out = compiled(lambda a, i: aten.embedding_dense_backward(a, i, 9, -1, False), g, idx,
                   torch_fn=lambda a, i: torch.ops.aten.embedding_dense_backward(a, i, 9, -1,
                                                                                 False))
    ember.testing.assert_close(out[8], g[:, 4].sum(0))
    ember.testing.assert_close(out[0], g[:, 0].sum(0))


@pytest.mark.parametrize("padding_idx,scale", [(3, False), (0, True), (-1, True)])
def test_embedding_dense_backward_padding_and_frequency_scale(padding_idx, scale):
    gen = ember.Generator().manual_seed(2)
    g = ember.randn(3, 11, 8, generator=gen)
    idx = ember.randint(0, 6, (3, 11), generator=gen)
    compiled(lambda a, i: aten.embedding_dense_backward(a * 2, i, 6, padding_idx, scale), g, idx,
             torch_fn=lambda a, i: torch.ops.aten.embedding_dense_backward(a * 2, i, 6,
                                                                          padding_idx, scale))


@pytest.mark.parametrize("padding_idx", [-1, 2])
def test_embedding_dense_backward_out_of_range_frequency_scale(padding_idx):
    # indices out of range add nothing and are not counted (ATen's CPU kernel writes their
    # counts out of bounds here, so PyTorch is no oracle for this case): compiled as eager
    g, idx = ember.randn(6, 4), ember.tensor([1, 9, -2, 1, 2, -1])
    out = compiled(lambda a, i: aten.embedding_dense_backward(a, i, 5, padding_idx, True), g, idx)
    ember.testing.assert_close(out[1], (g[0] + g[3]) / 2)


def test_large_embedding_backward_runs_column_chunks_on_threads():
    rec = Recorder()
    gen = ember.Generator().manual_seed(3)
    g = ember.randn(640, 1024, generator=gen)
    idx = ember.randint(0, 50, (640,), generator=gen)
    compiled(lambda a, i: aten.embedding_dense_backward(a, i, 50, -1, False), g, idx,
             recorder=rec, rtol=1e-4, atol=1e-4,
             torch_fn=lambda a, i: torch.ops.aten.embedding_dense_backward(a, i, 50, -1, False))
    src = rec.graphs[0].c_source_code
    assert "+=" in src and "atomic" not in src
    if ember.get_num_threads() > 1:
        assert "omp parallel for" in src


def test_index_put_accumulate():
    gen = ember.Generator().manual_seed(4)
    x = ember.randn(7, 5, generator=gen)
    rows = ember.tensor([0, -1, 3, 0, 6, -7])
    v = ember.randn(6, 5, generator=gen)
    compiled(lambda a, i, b: aten.index_put(a, [i], b.exp(), True), x, rows, v,
             torch_fn=lambda a, i, b: torch.ops.aten.index_put(a, [i], b.exp(), True))
    # two index tensors broadcast together; a value broadcast over them
    r, c = ember.tensor([[0], [2], [0]]), ember.tensor([1, 1, -1])
    compiled(lambda a, i, j, b: aten.index_put(a, [i, j], b, True), x, r, c, ember.tensor(2.0),
             torch_fn=lambda a, i, j, b: torch.ops.aten.index_put(a, [i, j], b, True))
    # a leading full slice (None)
    x3 = ember.randn(2, 7, 3, generator=gen)
    compiled(lambda a, i, b: aten.index_put(a, [None, i], b, True), x3, rows,
             ember.randn(2, 6, 3, generator=gen),
             torch_fn=lambda a, i, b: torch.ops.aten.index_put(a, [None, i], b, True))


def test_index_put_accumulate_out_of_range_is_an_index_error():
    f = ember.compile(lambda a, i, b: aten.index_put(a, [i], b, True), backend="inductor")
    x = ember.zeros(5, 3)
    for bad in (5, -6):
        with pytest.raises(IndexError, match=f"index {bad} is out of bounds for dimension 0 "
                                             "with size 5"):
            f(x, ember.tensor([1, bad]), ember.ones(2, 3))
    assert x.sum().item() == 0


def test_index_add_and_scatter_add():
    gen = ember.Generator().manual_seed(5)
    x = ember.randn(9, 16, generator=gen)
    i = ember.tensor([3, 0, 3, 15, 3])
    s = ember.randn(9, 5, generator=gen)
    compiled(lambda a, j, b: ember.index_add(a, 1, j, b, alpha=2), x, i, s,
             torch_fn=lambda a, j, b: torch.index_add(a, 1, j, b, alpha=2))
    idx = ember.randint(0, 9, (12, 10), generator=gen)
    src = ember.randn(13, 16, generator=gen)
    compiled(lambda a, j, b: ember.scatter_add(a, 0, j, b), x, idx, src,
             torch_fn=lambda a, j, b: torch.scatter_add(a, 0, j, b))
    compiled(lambda a, j, b: ember.scatter_reduce(a.relu(), 1, j, b, "sum"), x,
             ember.randint(0, 16, (9, 30), generator=gen), ember.randn(9, 30, generator=gen),
             torch_fn=lambda a, j, b: torch.scatter_reduce(a.relu(), 1, j, b, "sum"))
    ints = ember.randint(-5, 5, (6,), generator=gen)
    compiled(lambda a, j, b: ember.scatter_add(a, 0, j, b), ints, ember.tensor([0, 0, 5, 2]),
             ember.tensor([1, 2, 3, 4]),
             torch_fn=lambda a, j, b: torch.scatter_add(a, 0, j, b))


def test_large_scatters_initialise_and_accumulate_on_threads():
    rec = Recorder()
    gen = ember.Generator().manual_seed(7)
    x = ember.randn(600000, generator=gen)
    i = ember.randint(0, 600000, (5000,), generator=gen)
    i[:100] = 7  # repeated: one element sums many
    v = ember.randn(5000, generator=gen)
    with config.patch(threads=2):
        compiled(lambda a, j, b: ember.index_add(a, 0, j, b), x, i, v, recorder=rec,
                 rtol=1e-5, atol=1e-5, torch_fn=lambda a, j, b: torch.index_add(a, 0, j, b))
    assert "#pragma omp parallel for simd num_threads(2)" in rec.graphs[0].c_source_code


@pytest.mark.parametrize("op", ["index_add", "scatter_add"])
def test_index_add_scatter_add_bad_indices_raise_as_eager(op):
    x = ember.zeros(5, 3)
    if op == "index_add":
        f = ember.compile(lambda a, i: ember.index_add(a, 0, i, ember.ones(2, 3)),
                          backend="inductor")
    else:
        f = ember.compile(lambda a, i: ember.scatter_add(a, 0, i.view(2, 1), ember.ones(2, 1)),
                          backend="inductor")
    for bad in (5, -1):
        with pytest.raises(RuntimeError, match=f"index {bad} is out of bounds for dimension 0 "
                                               "with size 5"):
            f(x, ember.tensor([1, bad]))


def test_scatter_sum_without_self_and_other_reductions_run_eagerly(caplog):
    x, i, s = ember.randn(4, 3), ember.tensor([[0, 1, 0]]), ember.randn(1, 3)
    with caplog.at_level(logging.INFO, logger="ember._inductor"):
        compiled(lambda a, j, b: (ember.scatter_reduce(a, 0, j, b, "sum", include_self=False),
                                  ember.scatter_reduce(a, 0, j, b, "amax")), x, i, s)
    assert _fallbacks(caplog) == {"aten.scatter_reduce.two": 2}


def test_embedding_gradient_in_a_compiled_training_step():
    ember.manual_seed(0)
    emb = ember.nn.Embedding(20, 8, padding_idx=2)
    idx = ember.tensor([[1, 2, 2, 19], [0, 1, 1, 5]])

    def step(m):
        return (m(idx) ** 2).sum()
    step(emb).backward()
    ref = emb.weight.grad.clone()
    emb.weight.grad = None
    ember._dynamo.reset()
    ember.compile(step, backend="inductor")(emb).backward()
    ember.testing.assert_close(emb.weight.grad, ref)
    assert emb.weight.grad[2].abs().sum().item() == 0


def test_gpt_training_step_only_falls_back_to_matmuls_and_attention(caplog):
    """The GPT of benchmarks/gpt.py, compiled, trains as eager does (losses within 1e-4) and
    runs everything but the matmuls and the attention as generated kernels."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    import gpt

    def losses(compile_model, steps=3):
        ember.manual_seed(0)
        model = gpt.build(ember)
        opt = ember.optim.AdamW(model.parameters(), lr=1e-3)
        gen = np.random.default_rng(0)
        x = ember.tensor(gen.integers(0, 65, (4, 64)))
        y = ember.tensor(gen.integers(0, 65, (4, 64)))
        run = ember.compile(model) if compile_model else model
        out = []
        for _ in range(steps):
            opt.zero_grad()
            loss = run(x, y)
            loss.backward()
            opt.step()
            out.append(loss.item())
        return out
    eager = losses(False)
    ember._dynamo.reset()
    with caplog.at_level(logging.INFO, logger="ember._inductor"):
        got = losses(True)
    np.testing.assert_allclose(got, eager, atol=1e-4, rtol=0)
    assert set(_fallbacks(caplog)) <= {
        "aten.addmm.default", "aten.mm.default", "aten.bmm.default",
        "aten._scaled_dot_product_flash_attention_for_cpu.default",
        "aten._scaled_dot_product_flash_attention_for_cpu_backward.default"}


# -- Welford ----------------------------------------------------------------------------------------
def test_welford_var_of_large_offset_data_is_as_accurate_as_eager():
    gen = ember.Generator().manual_seed(6)
    x = (ember.randn(600, 70, generator=gen, dtype=ember.float64) * 1e-2 + 1e4).float()
    for dims in (0, (0,), 1):
        exact_v, exact_m = ember.var_mean(x.double(), dims)
        ember._dynamo.reset()
        v, m = ember.compile(lambda t: ember.var_mean(t, dims), backend="inductor")(x)
        ev, em = ember.var_mean(x, dims)
        err = lambda a, b: float(((a.double() - b) / b).abs().max())  # noqa: E731
        assert err(v, exact_v) <= max(2 * err(ev, exact_v), 1e-6)
        assert err(m, exact_m) <= max(2 * err(em, exact_m), 1e-7)


# Compiled var_mean decomposes into var and mean, as PyTorch's decomposition does: its mean is
# sum / n, torch.compile's, while eager's is ATen's Welford mean (NaN where a slice holds an
# infinity before its last element). They differ only there: the means are compared with mean().
def _var_and_sum_mean(t, dim):
    return ember.var(t, dim), ember.mean(t, dim)


def _var_mean_source(shape, dim):
    """var_mean over ``dim`` of special values of ``shape``, compiled and checked against eager
    and PyTorch: (the generated C, the number of kernels)."""
    rec = Recorder()
    compiled(lambda t: ember.var_mean(t, dim), _specials(shape), recorder=rec,
             torch_fn=lambda t: (torch.var(t, dim), torch.mean(t, dim)),
             eager_fn=lambda t: _var_and_sum_mean(t, dim))
    return rec.graphs[0].c_source_code, rec.kernels()


def test_column_var_mean_is_one_welford_pass():
    src, kernels = _var_mean_source((300, 70), 0)
    assert kernels == 1
    assert src.count("for (int64_t r0 = 0;") == 1 and "_m2" in src and "delta" in src


def test_welford_ieee_cases():
    inf, nan = math.inf, math.nan
    x = ember.tensor([[inf, 1.0, nan, -inf, inf, 1.0], [1.0, 1.0, 1.0, 2.0, inf, 2.0]])
    v, m = compiled(lambda t: ember.var_mean(t, 0), x,
                    torch_fn=lambda t: (torch.var(t, 0), torch.mean(t, 0)),
                    eager_fn=lambda t: _var_and_sum_mean(t, 0))
    assert m[0].item() == inf and math.isnan(v[0].item())
    assert math.isnan(ember.var_mean(x, 0)[1][0].item())  # eager: Welford's, as ATen's
    compiled(lambda t: ember.std(t, 0, correction=0), x,
             torch_fn=lambda t: torch.std(t, 0, correction=0))
    one = ember.randn(1, 6)  # a single element per column: var is NaN with correction 1
    compiled(lambda t: ember.var_mean(t, 0), one, torch_fn=lambda t: torch.var_mean(t, 0))
    empty = ember.randn(0, 6)
    compiled(lambda t: ember.var_mean(t, 0), empty, torch_fn=lambda t: torch.var_mean(t, 0))


def test_row_var_mean_is_one_pass_of_shifted_sums():
    src, kernels = _var_mean_source((70, 300), 1)
    assert kernels == 1 and src.count("for (int64_t r0 = 0;") == 1
    assert "EMBER_MAX" in src  # the clamp of s2 - s1**2 / n at 0


def test_row_var_ieee_cases():
    inf, nan = math.inf, math.nan
    x = ember.tensor([[inf, 1.0, nan, -inf, inf, 1.0], [1.0, 1.0, 1.0, 2.0, inf, 2.0],
                      [inf, 1.0, 1.0, 1.0, 1.0, 1.0], [-1e18, 1e18, 1e18, 0.0, 0.0, 3.0],
                      [7.5] * 6])
    v, m = compiled(lambda t: ember.var_mean(t, 1), x,
                    torch_fn=lambda t: (torch.var(t, 1), torch.mean(t, 1)),
                    eager_fn=lambda t: _var_and_sum_mean(t, 1))
    assert [math.isnan(a) for a in v.tolist()[:3]] == [True] * 3
    assert m[1].item() == inf == m[2].item() and v[4].item() == 0.0  # equal elements: exactly 0
    compiled(lambda t: ember.std(t, 1, correction=0), x,
             torch_fn=lambda t: torch.std(t, 1, correction=0))
    # no first element to shift by: the two-pass form
    compiled(lambda t: ember.var_mean(t, 1), ember.randn(6, 0),
             torch_fn=lambda t: torch.var_mean(t, 1))
    compiled(lambda t: ember.var_mean(t, 1), ember.randn(6, 1),
             torch_fn=lambda t: torch.var_mean(t, 1))


def test_batch_norm_training_statistics_use_welford():
    ember.manual_seed(0)
    bn = ember.nn.BatchNorm1d(70)
    bn2 = ember.nn.BatchNorm1d(70)
    x = ember.randn(256, 70) * 3 + 5
    rec = Recorder()
    ref = bn(x)
    ember._dynamo.reset()
    out = ember.compile(bn2, backend=rec.backend())(x)
    ember.testing.assert_close(out, ref, rtol=1e-4, atol=1e-4)
    ember.testing.assert_close(bn2.running_var, bn.running_var, rtol=1e-5, atol=1e-6)
    ember.testing.assert_close(bn2.running_mean, bn.running_mean, rtol=1e-5, atol=1e-6)
    assert "_m2" in rec.graphs[0].c_source_code


def test_layer_norm_rows_keep_the_two_pass_vectorised_reduction():
    rec = Recorder()
    x = ember.randn(64, 256)
    compiled(lambda t: ember.nn.functional.layer_norm(t, (256,)), x, recorder=rec,
             rtol=1e-4, atol=1e-5,
             torch_fn=lambda t: torch.nn.functional.layer_norm(t, (256,)))
    src = rec.graphs[0].c_source_code
    assert "_m2" not in src and "omp simd reduction" in src


def test_generated_code_compiles_without_warnings(tmp_path):
    import subprocess
    from ember._inductor import codecache
    rec = Recorder()
    x = ember.randn(40, 30)
    i = ember.randint(0, 40, (25,))
    compiled(lambda t, j: (ember.var(t, 0), ember.cummax(t, 1)[1], ember.logcumsumexp(t, 0),
                           ember.index_add(t, 0, j, t[:25].exp()),
                           aten.embedding_dense_backward(t[:25], j, 41, 0, True)),
             x, i, recorder=rec, rtol=1e-4, atol=1e-5)
    src = tmp_path / "k.c"
    src.write_text(rec.graphs[0].c_source_code)
    cmd = codecache.compile_command(str(src), str(tmp_path / "k.so"))
    res = subprocess.run(cmd, capture_output=True, text=True)
    assert res.returncode == 0 and "warning" not in res.stderr, res.stderr
