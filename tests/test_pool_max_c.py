"""Max pooling in C (``ember._kernels.cpu.max_pool``) against PyTorch, bit for bit: values and
indices of 2-D and 3-D pooling over kernel sizes, strides, paddings, dilations and ceil_mode,
float32 and float64, NaN (the last NaN of a window wins) and infinities (an all ``-inf`` window
keeps its first position inside the input); the backward's sums in PyTorch's order; one and
two threads; the NumPy fallback (integers, no compiler) with the same semantics; and the
strided column copies of ``grid_copy.copy`` the strided convolutions now make."""
import itertools

import numpy as np
import pytest

import ember
from ember._kernels.cpu import grid_copy, max_pool
from helpers import has_c_compiler

torch = pytest.importorskip("torch")
RNG = np.random.default_rng(0)
needs_c = pytest.mark.skipif(not has_c_compiler(), reason="no C compiler: NumPy max pooling")


@pytest.fixture(params=[1, 2], ids=["1thread", "2threads"])
def threads(request):
    before = ember.get_num_threads()
    ember.set_num_threads(request.param)
    yield request.param
    ember.set_num_threads(before)


def _values(shape, dtype, special):
    a = RNG.standard_normal(shape) * 3
    if special:
        r = RNG.random(shape)
        a[r < 0.06] = np.nan
        a[(r >= 0.06) & (r < 0.12)] = -np.inf
        a[(r >= 0.12) & (r < 0.15)] = np.inf
    return a.astype(dtype)


def _cases(k):
    """(input shape, kernel, stride, padding, dilation, ceil_mode) of k spatial dims."""
    sizes = [(1, 1, *[7] * k), (2, 3, *[5, 8, 6][:k]), (1, 2, *[9, 4, 11][3 - k:])]
    for shape, kern, stride, dil, ceil in itertools.product(sizes, (2, 3), (1, 2, 3), (1, 2),
                                                           (False, True)):
        pad = min(kern // 2, ((kern - 1) * dil + 1) // 2)
        for p in sorted({0, pad}):
            yield shape, [kern] * k, [stride] * k, [p] * k, [dil] * k, ceil
    yield (2, 2, *[6, 5, 7][:k]), [3, 1, 2][:k], [2, 1, 3][:k], [1, 0, 1][:k], [1, 2, 1][:k], True


def _op(k, backward=False):
    return f"max_pool{k}d_with_indices" + ("_backward" if backward else "")


def _check(k, a, args, backward=True):
    try:
        ty, ti = getattr(torch.ops.aten, _op(k))(torch.from_numpy(a), *args)
    except RuntimeError:  # an output of no positions: ember refuses it too
        with pytest.raises(RuntimeError):
            getattr(ember.ops.aten, _op(k))(ember.from_numpy(a), *args)
        return
    ey, ei = getattr(ember.ops.aten, _op(k))(ember.from_numpy(a), *args)
    np.testing.assert_array_equal(ey.numpy(), ty.numpy())
    np.testing.assert_array_equal(ei.numpy(), ti.numpy())
    plane = int(np.prod(a.shape[2:]))
    if not backward or ti.numel() == 0 or ti.min() < 0 or ti.max() >= plane:
        return  # (ATen writes out of bounds for an index outside its plane)
    g = RNG.standard_normal(ty.shape).astype(a.dtype)
    tg = getattr(torch.ops.aten, _op(k, True))(torch.from_numpy(g), torch.from_numpy(a), *args,
                                              ti)
    eg = getattr(ember.ops.aten, _op(k, True))(ember.from_numpy(g), ember.from_numpy(a), *args,
                                              ember.from_numpy(ti.numpy()))
    np.testing.assert_array_equal(eg.numpy(), tg.numpy())


@needs_c
@pytest.mark.parametrize("k", [2, 3])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matches_pytorch_bitwise(k, dtype, threads):
    assert max_pool._BUILT.get() is not None
    for shape, *args in _cases(k):
        _check(k, _values(shape, dtype, False), args)


@needs_c
@pytest.mark.parametrize("k", [2, 3])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nan_and_infinities(k, dtype, threads):
    for shape, *args in _cases(k):
        _check(k, _values(shape, dtype, True), args)
    # several NaNs in one window: the last one's index; a window of -inf: its first position
    # inside the input, not the padding
    a = np.array([1, np.nan, 2, np.nan, -np.inf, -np.inf, -np.inf, 5], dtype)
    a = a.reshape((1, 1) + (1,) * (k - 1) + (8,))
    _check(k, a, [[1] * (k - 1) + [4], [1] * (k - 1) + [4], [0] * k, [1] * k, False])
    _check(k, np.full((1, 1) + (3,) * k, -np.inf, dtype), [[2] * k, [2] * k, [1] * k, [1] * k,
                                                          True])


@needs_c
def test_large_input_on_threads(threads):
    """A ResNet stem's pooling, large enough to run on the OpenMP threads."""
    a = _values((2, 64, 64, 64), np.float32, True)
    _check(2, a, [[3, 3], [2, 2], [1, 1], [1, 1], False])


@needs_c
def test_results_do_not_depend_on_threads():
    a = _values((2, 64, 33, 35), np.float64, True)
    out = []
    for n in (1, 2):
        before = ember.get_num_threads()
        ember.set_num_threads(n)
        try:
            y, i = max_pool.forward(a.reshape(-1, 33, 35), [3, 3], [2, 2], [1, 1], [1, 1],
                                    [17, 18])
            g = max_pool.backward(np.ones_like(y), i, 128, 33 * 35)
        finally:
            ember.set_num_threads(before)
        out.append((y, i, g))
    for p, q in zip(*out):
        np.testing.assert_array_equal(p, q)


@needs_c
def test_declines_other_dtypes():
    a = np.zeros((2, 4, 4), np.int32)
    assert max_pool.forward(a, [2, 2], [2, 2], [0, 0], [1, 1], [2, 2]) is None
    assert max_pool.backward(np.zeros((2, 4), np.float16), np.zeros((2, 4), np.int64), 2,
                             16) is None


@needs_c
def test_backward_passes_over_indices_outside_the_plane():
    g = np.arange(1, 5, dtype=np.float32).reshape(1, 4)
    idx = np.array([[0, -1, 7, 2]], np.int64)
    np.testing.assert_array_equal(max_pool.backward(g, idx, 1, 4), [[1, 0, 4, 0]])


@pytest.mark.parametrize("k", [2, 3])
@pytest.mark.parametrize("dtype", [np.int32, np.int8, np.float16])
def test_numpy_path_semantics(k, dtype):
    """Integers and halves take the NumPy code: the same values and indices as ATen, an
    all-lowest window included."""
    for shape, *args in list(_cases(k))[::3]:
        a = np.round(RNG.standard_normal(shape) * 3).astype(dtype)
        _check(k, a, args, backward=False)
    low = np.iinfo(dtype).min if dtype != np.float16 else -np.inf
    _check(k, np.full((1, 1) + (3,) * k, low, dtype), [[2] * k, [2] * k, [1] * k, [1] * k, True],
           backward=False)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_numpy_fallback_without_compiler(monkeypatch, dtype):
    """Without the C module the NumPy code gives ATen's values and indices (NaN: the last)."""
    monkeypatch.setenv("EMBER_EAGER_CODEGEN", "0")
    for shape, *args in list(_cases(2))[::2]:
        _check(2, _values(shape, dtype, True), args, backward=False)


@needs_c
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("step", [1, 2, 3])
def test_strided_copy(dtype, step, threads):
    """grid_copy.copy from a source whose last dim is strided (a strided convolution's columns),
    small and large (on the threads)."""
    for rows, cols in ((3, 5), (700, 400)):
        src = RNG.standard_normal((2, rows, cols * step)).astype(dtype)[:, :, ::step]
        view = np.moveaxis(src, 0, 1)
        dst = np.empty(view.shape, dtype)
        grid_copy.copy(dst, view)
        np.testing.assert_array_equal(dst, view)
