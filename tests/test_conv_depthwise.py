"""The depthwise convolution kernels in C (``ember._kernels.cpu.depthwise``) against PyTorch and
a direct NumPy sum over the kernel: forward, input and weight gradients over kernel sizes,
strides, paddings, dilations, channel multipliers and dtypes; NaN and infinity; thread counts;
and the calls the module declines."""
import numpy as np
import pytest

import ember
from ember._kernels.cpu import depthwise
from helpers import has_c_compiler


pytestmark = pytest.mark.skipif(not has_c_compiler(),
                                reason="no C compiler: depthwise convolutions take the column "
                                       "path (covered elsewhere)")
RNG = np.random.default_rng(0)


def _module():
    m = depthwise.module()
    assert m is not None
    return m


def _pair(v, k):
    return tuple(v) if isinstance(v, tuple) else (v,) * k


def _torch_reference(x, w, gy, stride, padding, dilation):
    """(y, gx, gw) from PyTorch in float64, and the same of |x|, |w|, |gy| (the sums' scale)."""
    torch = pytest.importorskip("torch")
    conv = torch.nn.functional.conv1d if x.ndim == 3 else torch.nn.functional.conv2d
    out = []
    for a, b, g in ((x, w, gy), (np.abs(x), np.abs(w), np.abs(gy))):
        xt, wt = (torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in (a, b))
        yt = conv(xt, wt, stride=stride, padding=padding, dilation=dilation, groups=x.shape[1])
        yt.backward(torch.tensor(g, dtype=torch.float64))
        out.append([t.detach().numpy() for t in (yt, xt.grad, wt.grad)])
    return out


def _output_shape(x_shape, w_shape, stride, padding, dilation):
    k = len(x_shape) - 2
    return (x_shape[0], w_shape[0], *[(s + 2 * p - d * (kk - 1) - 1) // st + 1 for s, kk, st, p, d
                                     in zip(x_shape[2:], w_shape[2:], _pair(stride, k),
                                            _pair(padding, k), _pair(dilation, k))])


# (x shape, channel multiplier, kernel, stride, padding, dilation)
CASES = [
    ((1, 3, 7, 9), 1, (1, 1), 1, 0, 1),
    ((3, 4, 11, 13), 1, (3, 3), 1, 1, 1),
    ((2, 5, 9, 11), 2, (3, 5), (2, 1), (1, 2), 2),
    ((1, 16, 17, 19), 1, (5, 5), 2, 2, 1),        # a whole block of float32 lanes
    ((3, 18, 8, 8), 1, (7, 7), 1, 3, 1),          # a block and two lanes
    ((2, 8, 13, 15), 2, (3, 3), 2, 0, 2),
    ((1, 33, 4, 4), 1, (5, 5), 1, 2, 1),          # EfficientNet's narrow planes
    ((2, 7, 10, 12), 3, (5, 5), (2, 1), (1, 2), 1),  # 21 channels: a channel's 3 split
    ((1, 2, 6, 7), 1, (3, 3), 1, 3, 1),           # padding past the kernel's extent
    ((2, 3, 7, 5), 1, (3, 3), 3, 0, 1),           # input columns and rows no window reaches
    ((2, 16, 40, 41), 1, (3, 3), 1, 1, 1),        # register blocks of 8 and 4 columns
    ((2, 9, 31, 33), 2, (3, 3), 2, 1, 1),
    ((2, 3, 1, 1), 1, (3, 3), 1, 1, 1),
    ((2, 6, 23), 2, (5,), 2, 1, 2),               # 1-D: a height of 1
    ((1, 3, 10), 1, (3,), 1, 1, 1),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("xs,mult,k,stride,padding,dilation", CASES)
def test_matches_torch(xs, mult, k, stride, padding, dilation, dtype):
    x = RNG.standard_normal(xs).astype(dtype)
    w = RNG.standard_normal((xs[1] * mult, 1, *k)).astype(dtype)
    gy = RNG.standard_normal(_output_shape(xs, w.shape, stride, padding, dilation)).astype(dtype)
    assert depthwise.takes(x, w, xs[1])
    got = (depthwise.forward(x, w, stride, padding, dilation),
           depthwise.grad_input(gy, w, xs, stride, padding, dilation),
           depthwise.grad_weight(x, gy, w.shape, stride, padding, dilation))
    want, scale = _torch_reference(x, w, gy, stride, padding, dilation)
    tol = 1e-5 if dtype == np.float32 else 1e-13
    for name, g, r, s in zip(("forward", "grad_input", "grad_weight"), got, want, scale):
        assert g.dtype == dtype and g.shape == r.shape, name
        np.testing.assert_allclose(g, r, rtol=tol, atol=tol * s.max(), err_msg=name)


def _direct(x, w, gy, stride, padding, dilation):
    """(y, gx, gw) as the definition says, in float64: sums over the kernel offsets in order of
    the products of the input inside the window (the padding contributes nothing)."""
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    (sh, sw), (ph, pw), (dh, dw) = _pair(stride, 2), _pair(padding, 2), _pair(dilation, 2)
    oh, ow = gy.shape[2:]
    mult = o // c
    x, w, gy = (a.astype(np.float64) for a in (x, w, gy))
    xo = np.repeat(x, mult, axis=1)  # output channel o reads input channel o // mult
    y, gxo, gw = np.zeros(gy.shape), np.zeros(xo.shape), np.zeros(w.shape)

    def inside(size, out, s, p, d, i):  # output positions whose offset-i input is inside
        lo = max(0, -(-(p - i * d) // s))
        hi = min(out, (size - 1 + p - i * d) // s + 1)
        return slice(lo, max(lo, hi)), slice(lo * s - p + i * d, max(lo, hi) * s - p + i * d, s)
    with np.errstate(invalid="ignore"):  # inf * 0 and inf - inf: NaN, as meant
        for i, j in np.ndindex(kh, kw):
            (yr, xr), (yc, xc) = inside(h, oh, sh, ph, dh, i), inside(wd, ow, sw, pw, dw, j)
            wij = w[None, :, 0, i, j, None, None]
            y[:, :, yr, yc] += xo[:, :, xr, xc] * wij
            gxo[:, :, xr, xc] += gy[:, :, yr, yc] * wij
            gw[:, 0, i, j] += (xo[:, :, xr, xc] * gy[:, :, yr, yc]).sum(axis=(0, 2, 3))
    return y, gxo.reshape(n, c, mult, h, wd).sum(2), gw


def _assert_same_values(got, want):
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.isposinf(got), np.isposinf(want))
    np.testing.assert_array_equal(np.isneginf(got), np.isneginf(want))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("stride,padding,mult", [(1, 1, 1), (2, 2, 2), (1, 2, 1), (3, 0, 1)])
def test_nan_and_inf_propagate_as_the_sums_say(dtype, stride, padding, mult):
    x = RNG.standard_normal((2, 3, 9, 8)).astype(dtype)
    w = RNG.standard_normal((3 * mult, 1, 3, 3)).astype(dtype)
    x[0, 0, 4, 4] = np.nan
    x[0, 1, 0, 0] = np.inf                  # met by a zero weight: NaN, not skipped
    w[1 * mult, 0, 1, 1] = 0
    w[2 * mult, 0, 0, 0] = np.inf           # its padding taps contribute nothing (not 0 * inf)
    x[1, 2, 0, :] = -np.inf
    gy = RNG.standard_normal(_output_shape(x.shape, w.shape, stride, padding, 1)).astype(dtype)
    gy[1, 0, 0, 0] = np.inf
    gy[0, -1, -1, -1] = np.nan
    want = _direct(x, w, gy, stride, padding, 1)
    got = (depthwise.forward(x, w, stride, padding, 1),
           depthwise.grad_input(gy, w, x.shape, stride, padding, 1),
           depthwise.grad_weight(x, gy, w.shape, stride, padding, 1))
    for g, r in zip(got, want):
        _assert_same_values(g, r)
    assert np.isnan(got[0]).any() and np.isinf(got[0]).any()


def test_positions_no_window_reaches_get_zero():
    x = RNG.standard_normal((1, 2, 7, 7)).astype(np.float32)
    w = np.full((2, 1, 1, 1), np.inf, np.float32)
    gy = np.full((1, 2, 3, 3), np.nan, np.float32)  # stride 3, kernel 1: rows/columns 0, 3, 6
    gx = depthwise.grad_input(gy, w, x.shape, 3, 0, 1)
    reached = np.zeros((7, 7), bool)
    reached[::3, ::3] = True
    assert np.isnan(gx[:, :, reached]).all()
    assert (gx[:, :, ~reached] == 0).all() and not np.signbit(gx[:, :, ~reached]).any()


def test_an_empty_batch():
    x = np.zeros((0, 4, 6, 6), np.float32)
    w = RNG.standard_normal((8, 1, 3, 3)).astype(np.float32)
    gy = np.zeros((0, 8, 3, 3), np.float32)
    assert depthwise.forward(x, w, 2, 1, 1).shape == (0, 8, 3, 3)
    assert depthwise.grad_input(gy, w, x.shape, 2, 1, 1).shape == x.shape
    gw = depthwise.grad_weight(x, gy, w.shape, 2, 1, 1)
    np.testing.assert_array_equal(gw, np.zeros(w.shape, np.float32))


def test_any_layout_and_alignment():
    base = RNG.standard_normal((2, 6, 12, 10)).astype(np.float32)
    w = RNG.standard_normal((6, 1, 3, 3)).astype(np.float32)
    want = depthwise.forward(np.ascontiguousarray(base[:, :, ::2]), w, 1, 1, 1)
    np.testing.assert_array_equal(depthwise.forward(base[:, :, ::2], w, 1, 1, 1), want)
    raw = np.zeros(base[:, :, ::2].nbytes + 1, np.uint8)  # contiguous, not 4-byte aligned
    unaligned = raw[1:].view(np.float32).reshape(2, 6, 6, 10)
    unaligned[...] = base[:, :, ::2]
    assert not unaligned.flags.aligned
    np.testing.assert_array_equal(depthwise.forward(unaligned, w, 1, 1, 1), want)
    # a plane's alignment does not change its sums (the copies' first elements go one by one)
    x = RNG.standard_normal((1, 16, 16, 16)).astype(np.float32)
    buf = np.zeros(x.size + 16, np.float32)
    for shift in (0, 1, 5):
        xs = buf[shift:shift + x.size].reshape(x.shape)
        xs[...] = x
        np.testing.assert_array_equal(depthwise.forward(xs, w[:1].repeat(16, 0), 1, 1, 1),
                                      depthwise.forward(x, w[:1].repeat(16, 0), 1, 1, 1))


@pytest.mark.parametrize("x,w,groups", [
    (np.zeros((1, 4, 5, 5), np.float32), np.zeros((4, 2, 3, 3), np.float32), 2),  # not depthwise
    (np.zeros((1, 4, 5, 5), np.float32), np.zeros((4, 1, 3, 3), np.float32), 2),
    (np.zeros((1, 4, 5, 5, 5), np.float32), np.zeros((4, 1, 3, 3, 3), np.float32), 4),  # 3-D
    (np.zeros((1, 4, 5, 5), np.int64), np.zeros((4, 1, 3, 3), np.int64), 4),
    (np.zeros((1, 4, 5, 5), np.float16), np.zeros((4, 1, 3, 3), np.float16), 4),
    (np.zeros((1, 4, 5, 5), np.float32), np.zeros((4, 1, 3, 3), np.float64), 4),
    (np.zeros((1, 4, 5, 5), np.float32), np.zeros((6, 1, 3, 3), np.float32), 4),  # 6 % 4
    (np.zeros((1, 4, 5, 5), ">f4"), np.zeros((4, 1, 3, 3), ">f4"), 4),  # byte-swapped
])
def test_declines(x, w, groups):
    assert not depthwise.takes(x, w, groups)
    if groups == x.shape[1]:
        assert depthwise.forward(x, w, 1, 1, 1) is None
    if groups == x.shape[1] and x.dtype == w.dtype:  # (the gradients see one of x and w)
        gy = np.zeros((1, w.shape[0], 5, 5), x.dtype)
        assert depthwise.grad_weight(x, gy, w.shape, 1, 1, 1) is None
        assert depthwise.grad_input(gy, w, x.shape, 1, 1, 1) is None


def test_an_empty_output_is_declined():
    x, w = np.zeros((1, 2, 2, 2), np.float32), np.zeros((2, 1, 3, 3), np.float32)
    assert depthwise.takes(x, w, 2) and depthwise.forward(x, w, 1, 0, 1) is None


def test_the_module_is_built_and_used(monkeypatch):
    assert depthwise.module() is not None
    calls = []
    real = _module()

    class Spy:
        def __getattr__(self, name):
            calls.append(name)
            return getattr(real, name)
    monkeypatch.setattr(depthwise, "module", lambda: Spy())
    x = RNG.standard_normal((1, 3, 5, 5)).astype(np.float32)
    w = RNG.standard_normal((3, 1, 3, 3)).astype(np.float32)
    depthwise.forward(x, w, 1, 1, 1)
    assert calls == ["forward"]


def test_codegen_off_declines(monkeypatch):
    x = RNG.standard_normal((1, 3, 5, 5)).astype(np.float32)
    w = RNG.standard_normal((3, 1, 3, 3)).astype(np.float32)
    monkeypatch.setenv("EMBER_EAGER_CODEGEN", "0")
    assert depthwise.module() is None
    assert not depthwise.takes(x, w, 3)
    assert depthwise.forward(x, w, 1, 1, 1) is None
    assert depthwise.grad_weight(x, np.zeros((1, 3, 5, 5), np.float32), w.shape, 1, 1, 1) is None
    monkeypatch.setenv("EMBER_EAGER_CODEGEN", "1")
    assert depthwise.forward(x, w, 1, 1, 1) is not None


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("stride,mult", [(1, 1), (2, 2)])
def test_any_thread_count_gives_the_same_bits(dtype, stride, mult):
    x = RNG.standard_normal((4, 40, 32, 32)).astype(dtype)  # above PARALLEL_WORK, 3+ blocks
    w = RNG.standard_normal((40 * mult, 1, 3, 3)).astype(dtype)
    gy = RNG.standard_normal(_output_shape(x.shape, w.shape, stride, 1, 1)).astype(dtype)
    before = ember.get_num_threads()
    results = []
    try:
        for threads in (1, 2, 3):
            ember.set_num_threads(threads)
            assert depthwise._threads(gy.size * 9) == threads
            results.append((depthwise.forward(x, w, stride, 1, 1),
                            depthwise.grad_input(gy, w, x.shape, stride, 1, 1),
                            depthwise.grad_weight(x, gy, w.shape, stride, 1, 1)))
    finally:
        ember.set_num_threads(before)
    for other in results[1:]:
        for a, b in zip(results[0], other):
            np.testing.assert_array_equal(a, b)
    # and through the module's own thread count
    m = _module()
    for threads in (1, 2, 5):
        gw = np.empty(w.shape, dtype)
        m.grad_weight(gw, x, gy, stride, stride, 1, 1, 1, 1, threads)
        np.testing.assert_array_equal(gw, results[0][2])


@pytest.mark.parametrize("call,match", [
    (lambda m: m.forward(np.empty((1, 2, 4, 4), np.float32), np.zeros((1, 2, 5, 5), np.float32),
                         np.zeros((2, 1, 3, 3), np.float32), 1, 1, 0, 0, 1, 1, 1),
     "spatial size"),
    (lambda m: m.forward(np.empty((1, 3, 3, 3), np.float32), np.zeros((1, 2, 5, 5), np.float32),
                         np.zeros((3, 1, 3, 3), np.float32), 1, 1, 0, 0, 1, 1, 1),
     "positive multiple of C"),
    (lambda m: m.grad_weight(np.empty((2, 1, 3, 3), np.float64),
                             np.zeros((1, 2, 5, 5), np.float32),
                             np.zeros((1, 2, 3, 3), np.float32), 1, 1, 0, 0, 1, 1, 1),
     "one dtype"),
    (lambda m: m.grad_input(np.empty((1, 2, 5, 5), np.int32), np.zeros((1, 2, 3, 3), np.int32),
                            np.zeros((2, 1, 3, 3), np.int32), 1, 1, 0, 0, 1, 1, 1),
     "float32 or float64"),
    (lambda m: m.forward(np.empty((1, 2, 3, 3), np.float32), np.zeros((1, 2, 5, 5), np.float32),
                         np.zeros((2, 1, 3, 3), np.float32), 0, 1, 0, 0, 1, 1, 1),
     "strides and dilations >= 1"),
])
def test_bad_arguments_are_value_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call(_module())


def test_source_compiles_without_warnings(tmp_path, monkeypatch, caplog):
    from ember._inductor import codecache
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path))
    with caplog.at_level("WARNING", logger="ember._inductor.codecache"):
        assert codecache.CppCodeCache.load(depthwise._source(), "ember_depthwise") is not None
    assert not [r for r in caplog.records if "compiler output" in r.getMessage()]
