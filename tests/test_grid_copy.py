"""The convolutions' grid copies in C (``ember._kernels.cpu.grid_copy``) against NumPy: zero
padding of 1-3 spatial dims, strided copies, the tiled transpose of picked rows, thread counts,
and the cases left to NumPy."""
import numpy as np
import pytest

import ember
from ember._kernels.cpu import generated, grid_copy
from helpers import has_c_compiler


pytestmark = pytest.mark.skipif(not has_c_compiler(),
                                reason="no C compiler: NumPy makes the copies (covered elsewhere)")
RNG = np.random.default_rng(0)


def _module():
    m = grid_copy._BUILT.get()
    assert m is not None
    return m


def _reference_pad(x, before, after):
    return np.pad(x, [(0, 0), (0, 0), *zip(before, after)])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,before,after", [
    ((2, 3, 7), (2,), (2,)),
    ((2, 3, 5, 6), (1, 1), (1, 1)),
    ((1, 2, 4, 5), (0, 0), (2, 3)),         # the weight gradient's extension behind
    ((2, 2, 3, 4, 5), (1, 2, 0), (2, 0, 1)),
    ((2, 3, 0, 4), (1, 1), (1, 1)),          # an empty spatial dim: all padding
])
@pytest.mark.parametrize("threads", [1, 2])
def test_pad_matches_numpy(dtype, shape, before, after, threads):
    x = RNG.standard_normal(shape).astype(dtype)
    x.flat[::7] = np.nan  # copied, not computed on
    want = _reference_pad(x, before, after)
    got = np.full(want.shape, 99, dtype)
    _module().pad(got, x, np.asarray(before, np.int64), threads)
    np.testing.assert_array_equal(got, want)


def test_padded_uses_the_module_and_numpy_alike(monkeypatch):
    x = RNG.standard_normal((4, 8, 40, 40)).astype(np.float32)  # over PARALLEL_BYTES padded
    want = _reference_pad(x, (1, 2), (1, 2))
    np.testing.assert_array_equal(grid_copy.padded(x, (1, 2)), want)
    monkeypatch.setenv("EMBER_EAGER_CODEGEN", "0")
    np.testing.assert_array_equal(grid_copy.padded(x, (1, 2)), want)
    # a non-contiguous source or an integer dtype: NumPy's copies
    np.testing.assert_array_equal(grid_copy.padded(x[:, ::2], (1, 1)),
                                  _reference_pad(x[:, ::2], (1, 1), (1, 1)))
    xi = np.arange(24, dtype=np.int64).reshape(1, 2, 3, 4)
    np.testing.assert_array_equal(grid_copy.padded(xi, (1, 0)),
                                  _reference_pad(xi, (1, 0), (1, 0)))


@pytest.mark.parametrize("threads", [1, 2])
def test_copy_takes_any_strides_with_contiguous_rows(threads):
    buf = RNG.standard_normal((3, 5, 70)).astype(np.float64)
    # a grid's output positions: rows of 8 every 10 elements, planes of 6 rows
    src = np.lib.stride_tricks.as_strided(buf, (3, 4, 6, 8), (buf.strides[0], 80 * 8, 10 * 8, 8))
    dst = np.empty(src.shape, src.dtype)
    _module().copy(dst, src, threads)
    np.testing.assert_array_equal(dst, src)
    rev = buf[::-1, 1:4, :9]
    out = np.zeros((3, 3, 20), np.float64)[:, :, 5:14]  # a strided destination
    _module().copy(out, rev, threads)
    np.testing.assert_array_equal(out, rev)


def test_copy_falls_back_for_other_layouts():
    src = RNG.standard_normal((4, 6)).astype(np.float32)
    dst = np.empty((6, 4), np.float32)
    grid_copy.copy(dst, src.T)  # a transposed source: strided rows (the C loop reads them)
    np.testing.assert_array_equal(dst, src.T)
    raw = np.arange(4 * 6 + 1, dtype=np.uint8)[1:].view(np.float32).reshape(2, 3)  # unaligned
    dst = np.empty((2, 3), np.float32)
    grid_copy.copy(dst, raw)
    np.testing.assert_array_equal(dst, raw)


@pytest.mark.parametrize("call,match", [
    (lambda m: m.copy(np.empty((3, 2), np.float32).T, np.empty((2, 3), np.float32), 1),
     "a contiguous last dim in dst"),
    (lambda m: m.copy(np.empty((2, 3), np.float32), np.empty((2, 4), np.float32), 1),
     "one shape"),
    (lambda m: m.copy(np.empty(3, np.int32), np.empty(3, np.int32), 1), "float32/float64"),
    (lambda m: m.pad(np.empty((1, 1, 3), np.float32), np.empty((1, 1, 4), np.float32),
                     np.zeros(1, np.int64), 1), "inside the padded array"),
    (lambda m: m.pad(np.empty((1, 1, 6), np.float32), np.empty((1, 1, 4), np.float32),
                     np.full(1, 3, np.int64), 1), "inside the padded array"),
    (lambda m: m.pad(np.empty((1, 1, 6), np.float32), np.empty((1, 1, 4), np.float64),
                     np.zeros(1, np.int64), 1), "one dtype"),
])
def test_bad_layouts_are_value_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call(_module())


def test_grid_convolution_on_any_thread_count_is_the_same():
    x = ember.randn(4, 16, 30, 30)
    w = ember.randn(8, 16, 3, 3)
    before = ember.get_num_threads()
    try:
        ember.set_num_threads(1)
        one = ember.nn.functional.conv2d(x, w, padding=1)
        ember.set_num_threads(2)
        two = ember.nn.functional.conv2d(x, w, padding=1)
    finally:
        ember.set_num_threads(before)
    assert ember.equal(one, two)
    assert generated.enabled()


def test_source_compiles_without_warnings(tmp_path, monkeypatch, caplog):
    from ember._inductor import codecache
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path))
    with caplog.at_level("WARNING", logger="ember._inductor.codecache"):
        assert codecache.CppCodeCache.load(grid_copy._SOURCE, "ember_grid_copy") is not None
    assert not [r for r in caplog.records if "compiler output" in r.getMessage()]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("r,o,order", [
    (9 * 5, 7, "ck"), (64, 70, "all"), (3, 1, "all"), (100, 33, "reversed"), (4, 0, "all")])
@pytest.mark.parametrize("threads", [1, 2])
def test_transpose_rows_matches_numpy(dtype, r, o, order, threads):
    src = RNG.standard_normal((r, o)).astype(dtype)
    src.flat[::5] = np.nan
    rows = {"all": np.arange(r), "reversed": np.arange(r)[::-1].copy(),
            "ck": (np.arange(9)[None, :] * 5 + np.arange(5)[:, None]).reshape(-1)}[order]
    got = np.full((o, len(rows)), 99, dtype)
    _module().transpose_rows(got, src, rows.astype(np.int64), threads)
    np.testing.assert_array_equal(got, src[rows].T)
    np.testing.assert_array_equal(grid_copy.transpose_rows(src, rows), src[rows].T)


def test_transpose_rows_refuses_rows_outside():
    with pytest.raises(ValueError, match="rows inside src"):
        _module().transpose_rows(np.empty((2, 1), np.float32), np.zeros((3, 2), np.float32),
                                 np.array([3], np.int64), 1)
