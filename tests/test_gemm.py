"""ember's own GEMM (``ember._kernels.cpu.gemm``): values against float64 products, every
blocking edge (register block, K block, column and row groups), any strides, batches and
broadcasts, ``out=``, IEEE NaN/inf, thread-count invariance, and which products it takes."""
import numpy as np
import pytest

import ember
from ember._kernels.cpu import gemm
from helpers import has_c_compiler



def _can_build():
    """An AVX-512 CPU and a C compiler: there the module must build (a build error fails
    every test here instead of skipping them)."""
    from ember._inductor import cpu_vec_isa
    return has_c_compiler() and cpu_vec_isa.pick_vec_isa() is cpu_vec_isa.VecAVX512


pytestmark = pytest.mark.skipif(
    not _can_build(),
    reason="no AVX-512 CPU or no C compiler: products stay on NumPy's BLAS (covered elsewhere)")


def test_module_builds():
    assert gemm.module() is not None

RNG = np.random.default_rng(0)


def _rand(shape, dtype):
    return RNG.standard_normal(shape).astype(dtype)


def _check(a, b, out=None):
    assert gemm._takes(a, b)
    got = gemm.matmul(a, b, out=out)
    ref = np.matmul(a.astype(np.float64), b.astype(np.float64))
    assert got.shape == ref.shape and got.dtype == a.dtype
    tol = (2e-6 if a.dtype == np.float32 else 1e-14) * max(1, a.shape[-1]) ** 0.5
    np.testing.assert_allclose(got, ref, rtol=tol, atol=tol * np.abs(ref).max())
    return got


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m,k,n", [
    (64, 64, 64),        # the smallest it takes
    (100, 300, 17),      # partial register blocks in rows and columns (13 + 1 of 32 columns)
    (169, 257, 33),      # one past a row block (168), two K blocks, one past a column panel
    (1030, 40, 70),      # two row groups (1024 + 6)
    (70, 30, 4200),      # two column groups (4096 + 104)
    (15, 1100, 40),      # five K blocks of 220
])
def test_values_and_layouts(dtype, m, k, n):
    a, b = _rand((m, k), dtype), _rand((k, n), dtype)
    _check(a, b)
    _check(np.asfortranarray(a), np.asfortranarray(b))  # transposed storage
    _check(a[::-1], b[:, ::-1])  # negative strides
    _check(_rand((m, 2 * k), dtype)[:, ::2], _rand((k, 3 * n), dtype)[:, 1::3])  # gaps


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_batches_broadcasts_and_out(dtype):
    a, b = _rand((5, 60, 70), dtype), _rand((5, 70, 80), dtype)
    _check(a, b)
    _check(a, b[0])  # a stack times one matrix: one taller product
    _check(a[0], b)  # one matrix times a stack: a zero-stride batch
    _check(a[:, None], b[None])  # (5, 1) x (1, 5) batch dims broadcast
    ref = np.matmul(a, b)
    for out in (np.empty((5, 60, 80), dtype),  # written in place
                np.empty((5, 80, 60), dtype).transpose(0, 2, 1),  # columns apart: a copy back
                np.empty((2, 5, 60, 80), dtype)[1]):
        assert gemm.matmul(a, b, out=out) is out
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-4)


def test_exact_on_integers():
    """Sums of small integers are exact in any order: the values equal NumPy's bit for bit."""
    a = RNG.integers(-8, 8, (200, 300)).astype(np.float32)
    b = RNG.integers(-8, 8, (300, 150)).astype(np.float32)
    np.testing.assert_array_equal(gemm.matmul(a, b), a @ b)


def test_nan_and_inf_propagate_as_ieee_says():
    """NaN and inf reach exactly the elements NumPy's product gives them, and the zero-padded
    edges of the blocks (here 70 = 5 * 14 rows, 40 = 32 + 8 columns) add none."""
    a = np.ones((70, 100), np.float64)
    b = np.ones((100, 40), np.float64)
    a[3, 5], a[69, 0], b[7, 39] = np.nan, np.inf, -np.inf
    assert gemm._takes(a, b)
    with np.errstate(invalid="ignore"):
        got, ref = gemm.matmul(a, b), a @ b
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    np.testing.assert_array_equal(np.isposinf(got), np.isposinf(ref))
    np.testing.assert_array_equal(np.isneginf(got), np.isneginf(ref))
    assert np.isnan(got).any() and np.isposinf(got).any() and np.isneginf(got).any()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_same_bits_on_any_thread_count(dtype):
    a, b = _rand((1, 300, 700), dtype), _rand((1, 700, 500), dtype)
    results = []
    for threads in (1, 2, 3):
        c = np.empty((1, 300, 500), dtype)
        gemm.module().gemm(a, b, c, False, threads, None, None)
        results.append(c)
    for c in results[1:]:
        np.testing.assert_array_equal(c, results[0])


def test_accumulate_adds_into_c():
    a, b = _rand((1, 64, 64), np.float64), _rand((1, 64, 64), np.float64)
    c = np.full((1, 64, 64), 2.0)
    gemm.module().gemm(a, b, c, True, 1, None, None)
    np.testing.assert_allclose(c, a @ b + 2, rtol=1e-13)


def test_layouts_it_cannot_take_are_errors():
    gemm_ = gemm.module().gemm
    a, c = np.ones((1, 64, 64), np.float32), np.empty((1, 64, 64), np.float32)
    flat, rows = np.ones((1, 100), np.float32), np.arange(64, dtype=np.int64)
    for args, message in [
            ((a, a.astype(np.float64), c), "one float type"),
            ((a, np.ones((1, 63, 64), np.float32), c), "A of"),
            ((a, a, np.empty((1, 64, 128), np.float32)[:, :, ::2]), "contiguous columns"),
            ((a, np.ones((3, 64, 64), np.float32), np.empty((2, 64, 64), np.float32)), "batches"),
            ((a, flat, c, None, rows), "inside the array"),  # row 63 ends at 63 + 63 > 99
            ((a, flat, c, None, rows.astype(np.int32)), "int64"),
            ((flat, a, c, rows[:10], None), "one offset per row")]:
        a_rows, b_rows = (args[3:] + (None, None))[:2]
        with pytest.raises(ValueError, match=message):
            gemm_(args[0], args[1], args[2], False, 1, a_rows, b_rows)


def test_which_products_it_takes():
    f32 = np.ones((64, 64), np.float32)
    assert gemm._takes(f32, f32)
    assert not gemm._takes(f32[:32, :32], f32[:32, :32])  # too small: NumPy is as fast
    assert not gemm._takes(f32, f32[:, :10])  # too narrow for a 32-column block
    assert not gemm._takes(f32, f32.astype(np.float64))  # mixed dtypes
    assert not gemm._takes(f32.astype(np.int64), f32.astype(np.int64))
    assert not gemm._takes(f32, f32[0])  # matrix-vector


def test_ember_ops_use_it_and_match_torch(monkeypatch):
    torch = pytest.importorskip("torch")
    calls = []
    module = gemm.module()

    class Counting:
        def gemm(self, *args):
            calls.append(args[2].shape)
            return module.gemm(*args)
    monkeypatch.setattr(gemm, "module", Counting)
    x, w = _rand((128, 300), np.float32), _rand((200, 300), np.float32)
    bias = _rand(200, np.float32)
    got = ember.nn.functional.linear(ember.tensor(x), ember.tensor(w), ember.tensor(bias))
    ref = torch.nn.functional.linear(torch.tensor(x), torch.tensor(w), torch.tensor(bias))
    np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=1e-5, atol=1e-4)
    assert calls == [(1, 128, 200)]


def test_generated_kernels_off_keeps_numpy(monkeypatch):
    monkeypatch.setenv("EMBER_EAGER_CODEGEN", "0")
    assert not gemm._takes(np.ones((64, 64), np.float32), np.ones((64, 64), np.float32))


def test_source_compiles_without_warnings(tmp_path, monkeypatch, caplog):
    """-Wall is on for generated code; a warning here is a bug waiting (one caught: a pack
    reading past an array the compiler could size)."""
    from ember._inductor import codecache
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path))
    with caplog.at_level("WARNING", logger="ember._inductor.codecache"):
        assert codecache.CppCodeCache.load(gemm._source(), "ember_gemm") is not None
    assert not [r for r in caplog.records if "compiler output" in r.getMessage()]


def test_a_forked_child_multiplies_on_one_thread():
    """libgomp's pool does not survive fork: the child's products run on one thread (as the
    generated kernels'), and do not hang on the parent's threads."""
    import subprocess
    import sys
    import textwrap
    code = textwrap.dedent("""
        import os, signal
        import numpy as np
        from ember._kernels.cpu import gemm
        a = np.arange(512 * 512, dtype=np.float32).reshape(512, 512) % 7
        ref = gemm.matmul(a, a)  # the parent's pool now has threads
        pid = os.fork()
        if pid == 0:
            signal.alarm(100)  # a hung child must not outlive the test
            ok = gemm._threads(1 << 30) == 1 and (gemm.matmul(a, a) == ref).all()
            os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status))
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "0", proc.stderr


def test_a_layout_the_kernel_refuses_falls_back_to_numpy():
    """Strides of part elements (a field of a packed record array) are refused by the C code;
    matmul then gives NumPy's product, mismatched shapes NumPy's error."""
    rec = np.zeros((64, 64), dtype=[("x", np.float32), ("pad", np.int16)])
    rec["x"] = _rand((64, 64), np.float32)
    a = rec["x"]
    assert a.strides[1] % a.itemsize and gemm._takes(a, a)
    np.testing.assert_allclose(gemm.matmul(a, a), np.asarray(a) @ np.asarray(a), rtol=1e-5,
                               atol=1e-4)
    with pytest.raises(ValueError):
        gemm.matmul(np.ones((64, 65), np.float32), np.ones((64, 64), np.float32))
