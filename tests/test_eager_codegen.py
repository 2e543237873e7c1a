"""Eager CPU ops on generated C kernels (ember/_kernels/cpu/generated.py, built by
ember/_inductor/codegen/eager.py): each kernel against the NumPy kernel it replaces
(EMBER_EAGER_CODEGEN=0), on contiguous and broadcast-scalar operands, float32/float64, NaN and
inf; the cases that must stay NumPy's; the in-process and disk caches; the switch; no compiler;
fork."""
import math
import os
import shutil
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ember
from ember._inductor import codecache
from ember._kernels.cpu import generated as G

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
aten = ember.ops.aten

pytestmark = pytest.mark.skipif(
    not (os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")),
    reason="no C compiler on this machine (CC unset, no cc or gcc on PATH)")

N = G.MIN_NUMEL + 1237   # above the threshold, not a multiple of any chunk or vector width
SPECIALS = [math.nan, math.inf, -math.inf, 0.0, -0.0, 1.0, -1.0, 0.5, 3.0, -2.5, 1e-30, 88.0]


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory, monkeypatch):
    # one cache per session (identical kernels build once); generated kernels on
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "eager"))
    monkeypatch.setenv("EMBER_EAGER_CODEGEN", "1")


class Calls:
    """Counts the generated kernels run (pointwise and row kernels)."""

    def __init__(self, monkeypatch):
        self.n = 0
        for name in ("_run_pointwise", "_rows"):
            real = getattr(G, name)

            def spy(*args, _real=real):
                out = _real(*args)
                if out is not None:
                    self.n += 1
                return out
            monkeypatch.setattr(G, name, spy)


@pytest.fixture
def calls(monkeypatch):
    return Calls(monkeypatch)


def _data(n, dtype, seed, low=-4.0, high=4.0):
    """``n`` values of ``dtype``: uniform in [low, high) with the special values spread in."""
    rng = np.random.default_rng(seed)
    a = rng.uniform(low, high, n)
    spread = a[::97]
    spread[:len(SPECIALS)] = SPECIALS[:len(spread)]
    return ember.tensor(a.astype(dtype))


def _numpy(fn):
    os.environ["EMBER_EAGER_CODEGEN"] = "0"
    try:
        return fn()
    finally:
        os.environ["EMBER_EAGER_CODEGEN"] = "1"


def _same(got, want, dtype, atol32=1e-5):
    """Values within tolerances, NaN where NaN, inf of the same sign where inf, dtypes and
    shapes equal. float32: PyTorch's assert_close atol, an rtol of a few ulps (glibc's vector
    math is within 4 ulps, NumPy's within 1-3); float64 the same in ulps."""
    assert got.dtype == want.dtype and got.shape == want.shape
    rtol, atol = ((2e-6, atol32) if dtype == np.float32 else (1e-13, 1e-13))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=rtol, atol=atol, equal_nan=True)


UNARY = ["neg", "abs", "relu", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt",
         "rsqrt", "reciprocal", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh",
         "tanh", "asinh", "acosh", "atanh", "sigmoid", "erf", "erfc", "floor", "ceil", "trunc",
         "round"]
BINARY = ["add", "sub", "mul", "div", "maximum", "minimum", "fmax", "fmin", "pow", "atan2",
          "hypot", "copysign", "clamp_min", "clamp_max", "sigmoid_backward", "tanh_backward"]
# rows of three operands, the last one element (add_alpha: tested against PyTorch's foreach add
# in tests/test_foreach.py; lerp with a number weight: bit for bit against PyTorch in
# tests/test_rounding_parity.py)
TERNARY = ["add_alpha", "lerp"]
# the rows with an overload taking a Python number
SCALAR_FORMS = {"add", "sub", "mul", "div", "pow", "clamp_min", "clamp_max"}
# float64 runs a few of each kind (every float32 kernel is built and compared)
F64 = {"exp", "tanh", "log1p", "sigmoid", "relu", "add", "mul", "div", "pow", "tanh_backward"}


def test_rows_covered():
    """Every table row with a generated kernel is tested here, and has a C expression."""
    assert set(UNARY) | set(BINARY) | set(TERNARY) == G._POINTWISE_NAMES
    assert set(G._tables()[0]) == G._POINTWISE_NAMES


def _dtypes(names):
    """(name, dtype) pairs: every name in float32, those of F64 in float64 too."""
    return [(n, np.float32) for n in names] + [(n, np.float64) for n in names if n in F64]


@pytest.mark.parametrize("name,dtype", _dtypes(UNARY))
def test_unary(name, dtype, calls):
    x = _data(N, dtype, 0)
    op = getattr(aten, name)
    want = _numpy(lambda: op(x))
    got = op(x)
    assert calls.n == 1
    _same(got, want, dtype)


@pytest.mark.parametrize("name,dtype,layout", [
    (n, dt, lay) for n, dt in _dtypes(BINARY)
    for lay in ("vv", "vs", "sv") + (("v-number",) if n in SCALAR_FORMS else ())])
def test_binary(name, dtype, layout, calls):
    x = _data(N, dtype, 1)
    y = _data(N, dtype, 2, low=-3.0, high=3.0)
    s = ember.tensor(np.asarray(1.75, dtype))
    a, b = {"vv": (x, y), "vs": (x, s), "sv": (s, y), "v-number": (x, -1.75)}[layout]
    op = getattr(aten, name)
    want = _numpy(lambda: op(a, b))
    got = op(a, b)
    assert calls.n == 1
    _same(got, want, dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_alpha_and_inplace(dtype, calls):
    x, y = _data(N, dtype, 3), _data(N, dtype, 4)
    _same(ember.add(x, y, alpha=2.5), _numpy(lambda: ember.add(x, y, alpha=2.5)), dtype)
    _same(ember.sub(x, y, alpha=3), _numpy(lambda: ember.sub(x, y, alpha=3)), dtype)
    _same(1 - x, _numpy(lambda: 1 - x), dtype)  # rsub: the scalar on the left
    assert calls.n == 3
    # a number for other with an alpha: the fused multiply-add in NumPy (no kernel takes a
    # vector and two numbers)
    _same(ember.sub(x, 2, alpha=3), _numpy(lambda: ember.sub(x, 2, alpha=3)), dtype)
    assert calls.n == 3
    for op in ("add_", "mul_", "div_", "sub_"):
        want = _numpy(lambda: getattr(x.clone(), op)(y))
        got = x.clone()
        assert getattr(got, op)(y) is got
        _same(got, want, dtype)
    got = x.clone()
    got.add_(got)  # operand and result are the same memory
    _same(got, x * 2, dtype)
    out = ember.empty(N, dtype=x.dtype)
    assert ember.mul(x, y, out=out) is out
    _same(out, _numpy(lambda: x * y), dtype)


def test_numpy_kernels_where_generated_ones_do_not_apply(calls):
    x = _data(N, np.float32, 5)
    m = x[: (N // 64) * 64].reshape(64, -1)
    cases = [
        lambda: ember.exp(m.t()),                          # not contiguous
        lambda: m + m[0],                                  # a broadcast row, not a scalar
        lambda: ember.exp(x[:100]),                        # below the threshold
        lambda: ember.exp(x.to(ember.float16)),            # half precision stays NumPy's
        lambda: x > 0,                                     # bool result
        lambda: ember.remainder(x, 3),                     # no generated kernel
        lambda: ember.ops.aten._softmax(m, 0, False),      # softmax over a non-last dim
    ]
    for case in cases:
        got = case()
        assert calls.n == 0
        want = _numpy(case)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    # promotion gives float32 operands: the kernel runs on the converted arrays
    _same(x + x.to(ember.int32), _numpy(lambda: x + x.to(ember.int32)), np.float32)
    i = x.nan_to_num().to(ember.int32)
    _same(ember.exp(i), _numpy(lambda: ember.exp(i)), np.float32)
    d = x.to(ember.float64)
    _same(x + d, _numpy(lambda: x + d), np.float64)
    assert calls.n == 3


def test_switch(calls, monkeypatch):
    x = _data(N, np.float32, 6)
    monkeypatch.setenv("EMBER_EAGER_CODEGEN", "0")
    ember.exp(x), x + x, ember.nn.functional.gelu(x)
    assert calls.n == 0 and not G.enabled()
    monkeypatch.setenv("EMBER_EAGER_CODEGEN", "1")
    ember.exp(x)
    assert calls.n == 1 and G.enabled()


def _activation_inputs(dtype):
    return _data(N, dtype, 7), _data(N, dtype, 8)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_activations(dtype, calls):
    x, g = _activation_inputs(dtype)
    x64, g64 = x.double(), g.double()
    cases = [
        lambda x, g: ember.nn.functional.gelu(x),
        lambda x, g: ember.nn.functional.gelu(x, approximate="tanh"),
        lambda x, g: aten.gelu_backward(g, x),
        lambda x, g: aten.gelu_backward(g, x, approximate="tanh"),
        lambda x, g: aten.threshold_backward(g, x, 0.5),
        lambda x, g: aten.threshold_backward(g, x, 0),
        lambda x, g: ember.nn.functional.silu(x),
        lambda x, g: aten.silu_backward(g, x),
        lambda x, g: ember.nn.functional.hardswish(x),
        lambda x, g: aten.hardswish_backward(g, x),
        lambda x, g: ember.nn.functional.hardsigmoid(x),
        lambda x, g: aten.hardsigmoid_backward(g, x),
    ]
    for case in cases:
        got = case(x, g)
        # NumPy's float32 GELU uses a rational erf (|error| < 6e-7): compare float32 results
        # with the float64 NumPy kernel's, rounded
        want = _numpy(lambda: case(x, g) if dtype == np.float64 else case(x64, g64).float())
        _same(got, want, dtype)
    assert calls.n == len(cases)


def _rows_input(dtype, rows=48, cols=1000, seed=9):
    x = _data(rows * cols, dtype, seed).reshape(rows, cols)
    x[3] = math.inf          # a row of inf: NaN everywhere, as NumPy's
    x[5, 7] = -math.inf
    x[6] = -math.inf
    return x


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_rows(dtype, calls):
    x = _rows_input(dtype)
    g = _rows_input(dtype, seed=10)
    cases = [
        lambda x, g: aten._softmax(x, -1, False),
        lambda x, g: aten._log_softmax(x.reshape(4, 12, 1000), 2, False),
        lambda x, g: aten._softmax_backward_data(g, aten._softmax(x, 1, False), 1, x.dtype),
        lambda x, g: aten._log_softmax_backward_data(g, aten._log_softmax(x, 1, False), 1,
                                                     x.dtype),
    ]
    for case in cases:
        got = case(x, g)
        if dtype == np.float64:
            _same(got, _numpy(lambda: case(x, g)), dtype)
        else:
            # float32 sums of 1000 terms in another order than NumPy's pairwise sum: compared
            # with the float64 NumPy kernel's result, to the sum's float32 rounding error
            want = _numpy(lambda: case(x.double(), g.double())).float()
            _same(got, want, dtype, atol32=2e-5)
    assert calls.n == 6  # (the backward cases run their forward op too)


@pytest.mark.parametrize("affine", [(True, True), (True, False), (False, True), (False, False)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_layer_norm_forward(dtype, affine, calls):
    """One row kernel writing the output, the mean and rstd; NaN and inf rows as NumPy's."""
    x = _rows_input(dtype, rows=40, cols=1024).reshape(2, 20, 1024)
    w = _data(1024, dtype, 18) if affine[0] else None
    b = _data(1024, dtype, 19, low=-1, high=1) if affine[1] else None
    got = aten.native_layer_norm(x, [1024], w, b, 1e-5)
    if dtype == np.float64:
        want = _numpy(lambda: aten.native_layer_norm(x, [1024], w, b, 1e-5))
    else:
        # float32 row sums in another order than NumPy's: against the float64 kernel, rounded
        d = [t.double() if t is not None else None for t in (x, w, b)]
        want = [t.float() for t in _numpy(lambda: aten.native_layer_norm(d[0], [1024], d[1],
                                                                         d[2], 1e-5))]
    for g, wt in zip(got, want):
        _same(g, wt, dtype)
    assert calls.n == 1


def test_softmax_kernel_computes_each_exp_once():
    """The sum's pass keeps each exp in the output and the last pass divides it in place (a
    Reduce with ``store``), as PyTorch's vectorised softmax does."""
    from ember._inductor.codegen import eager
    aten_name, operands, passes = G._row_specs(eager)["softmax"]
    _, src = eager._row_source(eager.RowSpec("softmax", aten_name, operands, passes,
                                             ember.float32))
    body = src[:src.index("static void softmax_float32(")]
    assert body.count("expf(") == 1 and body.count("out[row * cols + j] = ") == 2


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_small_rows_take_the_row_kernels(dtype, calls):
    """Row kernels run at any size (NumPy's are several calls): a few short rows, one of them
    inf, match the NumPy kernels."""
    x = _data(3 * 5, dtype, 21).reshape(3, 5)
    x[1, 2] = math.inf
    w, b = _data(5, dtype, 22), _data(5, dtype, 23)
    cases = [lambda: aten._softmax(x, -1, False), lambda: aten._log_softmax(x, 1, False),
             lambda: aten.native_layer_norm(x, [5], w, b, 1e-5)[0]]
    for case in cases:
        _same(case(), _numpy(case), dtype)
    assert calls.n == len(cases)


@pytest.mark.parametrize("weighted", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_layer_norm_backward(dtype, weighted, calls):
    x = _data(40 * 1024, dtype, 11).reshape(2, 20, 1024)
    g = _data(40 * 1024, dtype, 12).reshape(2, 20, 1024)
    w = _data(1024, dtype, 13) if weighted else None
    b = _data(1024, dtype, 14) if weighted else None
    _, mean, rstd = _numpy(lambda: aten.native_layer_norm(x, [1024], w, b, 1e-5))
    mask = [True, weighted, weighted]

    def case():
        return aten.native_layer_norm_backward(g, x, [1024], mean, rstd, w, b, mask)
    for got, want in zip(case(), _numpy(case)):
        if want is None:
            assert got is None
        else:
            _same(got, want, dtype)
    assert calls.n == 1


def _on_one_and_two_threads(case):
    """``[case() on one thread, case() on two]``; the thread count is restored after."""
    prev = ember.get_num_threads()
    results = []
    try:
        for threads in (1, 2):
            ember.set_num_threads(threads)
            results.append(case())
    finally:
        ember.set_num_threads(prev)
    return results


def _check_layer_norm_backward(dtype, monkeypatch, kernel, rows, seed, specials, mask):
    """native_layer_norm_backward of ``rows`` x 1024 data (``seed``; NaN, inf in ``grad`` and
    -inf in ``x`` at ``specials``) for output ``mask``: the generated ``kernel`` runs, its
    results equal the NumPy kernels', bit for bit the same on one thread as on two."""
    x = _data(rows * 1024, dtype, seed).reshape(rows, 1024)
    g = _data(rows * 1024, dtype, seed + 1).reshape(rows, 1024)
    g[specials[0]], g[specials[1]], x[specials[2]] = math.nan, math.inf, -math.inf
    w, b = _data(1024, dtype, seed + 2), _data(1024, dtype, seed + 3)
    _, mean, rstd = _numpy(lambda: aten.native_layer_norm(x, [1024], w, b, 1e-5))
    ran = []
    real = getattr(G, kernel)
    monkeypatch.setattr(G, kernel, lambda *a: ran.append(1) or real(*a))

    def case():
        out = aten.native_layer_norm_backward(g, x, [1024], mean, rstd, w, b, mask)
        return [o for o, wanted in zip(out, mask) if wanted]
    results = _on_one_and_two_threads(case)
    assert len(ran) == 2
    for got, want in zip(results[0], _numpy(case)):
        _same(got, want, dtype, atol32=1e-4)
    for one, two in zip(*results):
        assert np.array_equal(one.numpy(), two.numpy(), equal_nan=True)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_layer_norm_weight_and_bias_gradients_by_column(dtype, monkeypatch):
    """The column kernel (one pass down the columns) against the NumPy sums, NaN and inf
    included, and the same bits on one thread as on two: each thread sums whole columns."""
    # 96 rows of 1024: three grains of work, so two threads split the columns
    _check_layer_norm_backward(dtype, monkeypatch, "layer_norm_backward_weight_bias", 96, 21,
                               ((3, 5), (7, 9), (11, 13)), [False, True, True])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_layer_norm_backward_in_one_pass(dtype, monkeypatch):
    """The row kernel that sums the weight and bias gradients beside the input gradient: against
    the NumPy kernels, NaN and inf included, and the same bits on one thread as on two (each
    fixed chunk of rows sums into its own partials, added in chunk order). 100 rows: chunks of
    32, the last one short."""
    _check_layer_norm_backward(dtype, monkeypatch, "layer_norm_backward", 100, 31,
                               ((3, 5), (70, 9), (99, 13)), [True] * 3)


def test_gradients_through_autograd():
    """A training-step shape: gelu, softmax and layer_norm forward and backward, compared with
    the NumPy kernels end to end."""
    def step():
        ember.manual_seed(0)
        x = ember.randn(64, 768, requires_grad=True)
        ln = ember.nn.LayerNorm(768)
        y = ember.nn.functional.gelu(ln(x)).softmax(-1).log().sum()
        y.backward()
        return x.grad, ln.weight.grad
    for got, want in zip(step(), _numpy(step)):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-6)


def test_cached_in_process_and_on_disk(tmp_path):
    x = _data(N, np.float32, 15)
    y = x + 1
    ember.sinh(x)
    before = codecache.counters["compile"]
    ember.sinh(y)
    assert codecache.counters["compile"] == before   # built once per op and dtype
    script = textwrap.dedent("""
        import sys
        import ember
        from ember._inductor import codecache
        x = ember.arange(40000, dtype=ember.float32)
        assert float(ember.cosh(x / 40000)[-1]) > 1.5
        print(codecache.counters["compile"], codecache.counters["disk_hit"])
    """)
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(tmp_path), EMBER_EAGER_CODEGEN="1",
               PYTHONPATH=REPO)
    runs = [subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                           text=True, timeout=300) for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr
    # the first process builds the tensor constructors and the autograd recorder at import
    # (ember/_core/tensor_impl.c, ember/autograd/recorder.c), div and cosh, and the OpenBLAS
    # thread callback that the first loaded kernel module brings (ember._inductor.blas_threads);
    # the second reads all five from disk
    assert runs[0].stdout.split() == ["5", "0"]
    assert runs[1].stdout.split() == ["0", "5"]


def test_no_compiler_falls_back_quietly(tmp_path):
    script = textwrap.dedent("""
        import warnings
        warnings.simplefilter("error")
        import numpy as np
        import ember
        from ember._kernels.cpu import generated as G
        x = ember.linspace(-3, 3, 50000)
        y = ember.exp(x)
        np.testing.assert_allclose(y.numpy(), np.exp(x.numpy()), rtol=1e-6)
        ember.exp(x), ember.nn.functional.gelu(x)
        assert not G.enabled() and not G._modules
        print("ok")
    """)
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(tmp_path), EMBER_EAGER_CODEGEN="1",
               CC="/nonexistent/cc", PYTHONPATH=REPO)
    r = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok" and r.stderr == ""


def test_small_activations_do_not_load_the_compiler():
    # the size gate comes before the kernels' expression tables, which import the compiler
    # layer (sympy): a small model's first backward must not pay that
    script = textwrap.dedent("""
        import sys
        import ember
        nn = ember.nn
        model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4), nn.GELU())
        model(ember.randn(4, 8)).sum().backward()
        ember.nn.functional.silu(ember.randn(4, 8, requires_grad=True)).sum().backward()
        print("sympy" in sys.modules)
    """)
    r = subprocess.run([sys.executable, "-c", script], env=dict(os.environ, PYTHONPATH=REPO),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "False"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_fork_after_parallel_kernel():
    """libgomp's thread pool does not survive fork: a child that enters OpenMP after its parent
    did can hang. The child runs the kernels serially instead."""
    threads = ember.get_num_threads()
    ember.set_num_threads(2)
    try:
        x = _data(4 * G.MIN_NUMEL, np.float32, 16)
        want = ember.exp(x)          # OpenMP threads started in this process
        pid = os.fork()
        if pid == 0:
            signal.alarm(60)         # a hang ends the child instead of the test run
            ok = False
            try:
                ok = G._threads() == 1 and np.array_equal(ember.exp(x).numpy(), want.numpy(),
                                                          equal_nan=True)
            finally:
                os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
        assert os.WIFEXITED(status), f"child killed by signal {os.WTERMSIG(status)}"
        assert os.WEXITSTATUS(status) == 0
    finally:
        ember.set_num_threads(threads)


def test_generated_source_reads_well():
    """The C of an eager kernel: a named function per layout with the aten op in a comment,
    the libmvec declarations, the grain-size rule, and no size baked in."""
    from ember._inductor.codegen import eager
    spec = eager.PointwiseSpec("gelu_backward", "aten::gelu_backward", G._tables()[2][
        ("gelu", "none")][2], (ember.float32,) * 3, ("vv",))
    name, src = eager.source(spec)
    assert name == "eager_gelu_backward_float32"
    assert "/* gelu_backward_float32_vv: aten::gelu_backward on in0 contiguous, in1 contiguous */" \
        in src
    assert "erff(" in src and "#pragma omp simd" in src
    assert f"/ {eager.GRAIN_SIZE};" in src and str(N) not in src


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
def test_sources_compile_without_warnings(tmp_path, dtype):
    """Every spec's C (each pointwise row in all its layouts, the activations, the row
    kernels) builds under -Wall with no compiler output."""
    from ember._inductor.codegen import eager
    pointwise, forward, backward = G._tables()
    arity = {**{n: 1 for n in UNARY}, **{n: 2 for n in BINARY}, **{n: 3 for n in TERNARY}}
    layouts = {1: ("v",), 2: ("vv", "vs", "sv"), 3: ("vvs",)}
    specs = [eager.PointwiseSpec(name, aten, fn, (dtype,) * (arity[name] + 1),
                                 layouts[arity[name]])
             for name, (aten, fn) in pointwise.items()]
    specs += [eager.PointwiseSpec(sn, aten, fn, (dtype,) * 2, ("v",))
              for sn, aten, fn in forward.values()]
    specs += [eager.PointwiseSpec(sn, aten, fn, (dtype,) * (4 if "threshold" in sn else 3),
                                  ("vvs",) if "threshold" in sn else ("vv",))
              for sn, aten, fn in backward.values()]
    specs += [eager.RowSpec(sn, aten, operands, passes, dtype,
                            G._ROW_OUTPUTS.get(sn, (("out", "v"),)))
              for sn, (aten, operands, passes) in G._row_specs(eager).items()]
    specs += [eager.ColumnSpec(sn, aten, operands, sums, dtype)
              for sn, (aten, operands, sums) in G._column_specs(eager).items()]
    units = []
    for spec in specs:
        name, src = eager.source(spec)
        path = tmp_path / f"{name}.c"
        path.write_text(src)
        units.append(str(path))
    cmd = [c for c in codecache.compile_command("SRC", "OUT") if c not in ("-shared", "-o")]
    cmd = [c for c in cmd if c not in ("SRC", "OUT") and not c.startswith("-l")]
    r = subprocess.run(cmd + ["-fsyntax-only", *units], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout == "" and r.stderr == "", r.stdout + r.stderr


def test_wrong_call_raises():
    """The entry points check their buffers against the sizes they are given."""
    x = _data(N, np.float32, 17)
    ember.exp(x)
    module = G._modules[("exp", np.dtype(np.float32))]
    a = np.ones(10, np.float32)
    with pytest.raises(ValueError, match="too small"):
        module.exp_float32_v(np.empty(10, np.float32), a, 1000, 1)
    with pytest.raises(TypeError):
        module.exp_float32_v(a, a, 10)
    with pytest.raises((ValueError, BufferError)):  # a read-only result
        a.flags.writeable = False
        module.exp_float32_v(a, a, 10, 1)


def test_switch_is_read_on_every_call(monkeypatch):
    """enabled() reads os.environ's own store (a dict lookup): every way of changing the
    variable at run time is seen at once."""
    from ember._kernels.cpu import generated
    monkeypatch.setenv("EMBER_EAGER_CODEGEN", "0")
    assert not generated.enabled()
    monkeypatch.setenv("EMBER_EAGER_CODEGEN", "1")
    assert generated.enabled()
    os.environ["EMBER_EAGER_CODEGEN"] = "0"
    assert not generated.enabled()
    monkeypatch.delenv("EMBER_EAGER_CODEGEN")
    assert generated.enabled() == (not generated._no_compiler)


def test_default_thread_count_is_read_once(monkeypatch):
    """As PyTorch sizes its pool once, OMP_NUM_THREADS set after the first use changes nothing
    (ember.set_num_threads does)."""
    from ember import _functional_ops
    before = _functional_ops._default_threads()
    monkeypatch.setenv("OMP_NUM_THREADS", str(before + 3))
    assert _functional_ops._default_threads() == before
