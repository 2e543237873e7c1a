"""The column-free convolution path (``cpu/conv.py``: stride 1, one group, the GEMM reading
the padded input's shifted rows through row offsets) against the column path it replaces and
against PyTorch: forward, input gradient and weight gradient, 1-3 spatial dims, padding,
dilation, odd sizes, float32 and float64; and the pointwise path (1 x 1 kernels without
padding, any stride: one product per sample) and the small-output path (the columns of many
samples as one GEMM operand)."""
import numpy as np
import pytest

import ember
from ember._kernels.cpu import conv, gemm

pytestmark = pytest.mark.skipif(not gemm.usable(np.dtype(np.float32)),
                                reason="no AVX-512 GEMM kernel here: the column path runs")

CASES = [  # x shape, weight shape, padding, dilation
    ((2, 3, 17), (5, 3, 4), (2,), (1,)),
    ((2, 8, 13, 11), (6, 8, 3, 3), (1, 1), (1, 1)),
    ((1, 4, 9, 10), (3, 4, 2, 5), (0, 2), (2, 1)),  # uneven kernel, no padding on one dim
    ((2, 2, 5, 6, 7), (3, 2, 3, 2, 3), (1, 0, 1), (1, 2, 1)),
    ((3, 64, 12, 12), (16, 64, 3, 3), (1, 1), (1, 1)),
]


def _column_path(monkeypatch, fn, *args):
    with monkeypatch.context() as m:
        m.setattr(conv, "_gridded", lambda *a: False)
        m.setattr(conv, "SMALL_POSITIONS", 0)
        return fn(*args)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("xs,ws,padding,dilation", CASES)
def test_same_as_the_column_path(monkeypatch, dtype, xs, ws, padding, dilation):
    monkeypatch.setattr(conv, "SMALL_POSITIONS", 0)  # (these sizes would take the small path)
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal(xs).astype(dtype), rng.standard_normal(ws).astype(dtype)
    stride = (1,) * len(padding)
    assert conv._gridded(x, w, stride, 1)
    y = conv._conv_forward(x, w, stride, padding, dilation, 1)
    tol = dict(rtol=1e-5, atol=1e-4) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-11)
    np.testing.assert_allclose(
        y, _column_path(monkeypatch, conv._conv_forward, x, w, stride, padding, dilation, 1),
        **tol)
    gy = rng.standard_normal(y.shape).astype(dtype)
    for fn, args in ((conv._conv_grad_input, (gy, w, x.shape, stride, padding, dilation, 1)),
                     (conv._conv_grad_weight, (x, gy, w.shape, stride, padding, dilation, 1))):
        np.testing.assert_allclose(fn(*args), _column_path(monkeypatch, fn, *args), **tol)


def test_matches_torch_with_nan_and_inf():
    """Values and gradients against PyTorch; a NaN and an infinity in the input reach exactly
    the outputs whose windows hold them (the grid's extra positions are dropped, not read)."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 4, 10, 9)).astype(np.float32)
    x[0, 1, 3, 8], x[1, 0, 0, 0] = np.nan, np.inf
    w = rng.standard_normal((5, 4, 3, 3)).astype(np.float32)
    b = rng.standard_normal(5).astype(np.float32)
    xe, we, be = (ember.tensor(a, requires_grad=True) for a in (x, w, b))
    xt, wt, bt = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    ye = ember.nn.functional.conv2d(xe, we, be, padding=1)
    yt = torch.nn.functional.conv2d(xt, wt, bt, padding=1)
    np.testing.assert_array_equal(np.isnan(ye.detach().numpy()), np.isnan(yt.detach().numpy()))
    np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy(), rtol=1e-4, atol=1e-4)
    g = rng.standard_normal(yt.shape).astype(np.float32)
    ye.backward(ember.tensor(g))
    yt.backward(torch.tensor(g))
    np.testing.assert_allclose(we.grad.numpy(), wt.grad.numpy(), rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-3)


POINTWISE = [  # x shape, weight shape, stride, dilation
    ((2, 72, 1, 1), (24, 72, 1, 1), (1, 1), (1, 1)),
    ((2, 16, 9, 7), (8, 16, 1, 1), (2, 2), (1, 1)),
    ((3, 5, 8, 6), (4, 5, 1, 1), (2, 1), (3, 2)),  # a dilation does nothing to a 1 x 1 kernel
    ((2, 3, 11), (6, 3, 1), (3,), (1,)),
    ((1, 4, 5, 6, 7), (2, 4, 1, 1, 1), (1, 2, 2), (1, 1, 1)),
]


@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("xs,ws,stride,dilation", POINTWISE)
def test_pointwise_matches_torch(xs, ws, stride, dilation, transposed):
    """Values and both gradients against PyTorch, regular and transposed (whose forward is the
    input gradient's scatter into the strided positions); NaN and infinity reach exactly the
    outputs of their positions, and the skipped positions get a zero input gradient."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    x = rng.standard_normal(xs if not transposed else (xs[0], ws[0], *xs[2:])).astype(np.float32)
    x.reshape(-1)[[0, 7]] = np.nan, np.inf
    w = rng.standard_normal(ws if not transposed else (ws[0], ws[1], *ws[2:])).astype(np.float32)
    k = len(stride)
    name = ("conv_transpose" if transposed else "conv") + f"{k}d"
    kw = dict(stride=stride, dilation=dilation)
    xe, we = (ember.tensor(a, requires_grad=True) for a in (x, w))
    xt, wt = (torch.tensor(a, requires_grad=True) for a in (x, w))
    ye = getattr(ember.nn.functional, name)(xe, we, **kw)
    yt = getattr(torch.nn.functional, name)(xt, wt, **kw)
    assert ye.shape == yt.shape
    np.testing.assert_array_equal(np.isnan(ye.detach().numpy()), np.isnan(yt.detach().numpy()))
    np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy(), rtol=1e-5, atol=1e-5)
    g = rng.standard_normal(tuple(yt.shape)).astype(np.float32)
    ye.backward(ember.tensor(g))
    yt.backward(torch.tensor(g))
    for a, b in ((xe.grad, xt.grad), (we.grad, wt.grad)):
        np.testing.assert_array_equal(np.isnan(a.numpy()), np.isnan(b.numpy()))
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-4)


def test_pointwise_weight_gradient_without_the_gemm_kernel(monkeypatch):
    """Where the GEMM kernel is not there, the pointwise weight gradient is NumPy's batched
    product summed over the batch: the same values."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 6, 5, 4)).astype(np.float32)
    gy = rng.standard_normal((3, 7, 3, 2)).astype(np.float32)
    w_shape = (7, 6, 1, 1)
    want = conv._conv_grad_weight(x, gy, w_shape, (2, 2), (0, 0), (1, 1), 1)
    monkeypatch.setattr(gemm, "usable", lambda dtype: False)
    got = conv._conv_grad_weight(x, gy, w_shape, (2, 2), (0, 0), (1, 1), 1)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    ref = np.einsum("nohw,nchw->oc", gy, x[:, :, ::2, ::2]).reshape(w_shape)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


SMALL = [  # x shape, weight shape, stride, padding, dilation
    ((2, 8, 4, 4), (6, 8, 3, 3), (1, 1), (1, 1), (1, 1)),
    ((3, 5, 9, 8), (4, 5, 3, 2), (2, 2), (1, 0), (1, 1)),
    ((2, 4, 7, 7), (3, 4, 3, 3), (1, 2), (2, 1), (2, 1)),
    ((2, 3, 11), (5, 3, 3), (2,), (1,), (1,)),
    ((1, 2, 4, 5, 3), (3, 2, 2, 3, 2), (1, 1, 1), (1, 1, 0), (1, 1, 1)),
]


@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("xs,ws,stride,padding,dilation", SMALL)
def test_small_outputs_match_torch(xs, ws, stride, padding, dilation, transposed):
    """The small-output path (taken for these sizes) against PyTorch: values and both
    gradients, regular and transposed, with a NaN and an infinity in the input."""
    torch = pytest.importorskip("torch")
    assert conv._small(xs, ws, stride, padding, dilation, 1)
    rng = np.random.default_rng(6)
    k = len(stride)
    if transposed:  # (the input has the weight's first dim of channels)
        xs, ws = (xs[0], ws[0], *xs[2:]), ws
    x = rng.standard_normal(xs).astype(np.float32)
    if not transposed:
        # (a transposed convolution's weight gradient multiplies a non-finite input by the
        # padding's zeros where PyTorch skips those products: NaN in more entries than
        # PyTorch's, on every path, known)
        x.reshape(-1)[[1, 9]] = np.nan, np.inf
    w = rng.standard_normal(ws).astype(np.float32)
    name = ("conv_transpose" if transposed else "conv") + f"{k}d"
    kw = dict(stride=stride, padding=padding, dilation=dilation)
    xe, we = (ember.tensor(a, requires_grad=True) for a in (x, w))
    xt, wt = (torch.tensor(a, requires_grad=True) for a in (x, w))
    ye = getattr(ember.nn.functional, name)(xe, we, **kw)
    yt = getattr(torch.nn.functional, name)(xt, wt, **kw)
    assert ye.shape == yt.shape
    g = rng.standard_normal(tuple(yt.shape)).astype(np.float32)
    ye.backward(ember.tensor(g))
    yt.backward(torch.tensor(g))
    for a, b in ((ye.detach(), yt.detach()), (xe.grad, xt.grad), (we.grad, wt.grad)):
        np.testing.assert_array_equal(np.isnan(a.numpy()), np.isnan(b.numpy()))
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-4)


def test_small_outputs_chunk_the_batch(monkeypatch):
    """Columns above the size limit are made and multiplied a few samples at a time: the same
    values."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((5, 6, 6, 5))
    w = rng.standard_normal((4, 6, 3, 3))
    gy = rng.standard_normal((5, 4, 6, 5))
    args = ((1, 1), (1, 1), (1, 1))
    whole = (conv._conv_forward_small(x, w, *args),
             conv._conv_grad_weight_small(x, gy, w.shape, *args),
             conv._conv_grad_input_small(gy, w, x.shape, *args))
    monkeypatch.setattr(conv, "_BATCH_COLS_BYTES", 1)  # one sample per GEMM
    chunked = (conv._conv_forward_small(x, w, *args),
               conv._conv_grad_weight_small(x, gy, w.shape, *args),
               conv._conv_grad_input_small(gy, w, x.shape, *args))
    for a, b in zip(whole, chunked):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_depthwise_convolutions_take_the_depthwise_loops(monkeypatch):
    """One group per input channel goes to depthwise.py's loops (forward, both gradients, the
    transposed forward too), with PyTorch's values; without them the column path gives the
    same."""
    torch = pytest.importorskip("torch")
    from ember._kernels.cpu import depthwise
    if depthwise.module() is None:
        pytest.skip("no C compiler: the column path computes depthwise convolutions")
    calls = []
    for name in ("forward", "grad_input", "grad_weight"):
        real = getattr(depthwise, name)
        monkeypatch.setattr(depthwise, name,
                            lambda *a, _real=real, _name=name: calls.append(_name) or _real(*a))
    rng = np.random.default_rng(8)
    x = rng.standard_normal((2, 6, 9, 7)).astype(np.float32)
    w = rng.standard_normal((12, 1, 3, 3)).astype(np.float32)
    g = rng.standard_normal((2, 12, 5, 4)).astype(np.float32)
    results = []
    for lib in (torch, ember, ember):
        xl, wl = (lib.tensor(a, requires_grad=True) for a in (x, w))
        y = lib.nn.functional.conv2d(xl, wl, stride=2, padding=1, groups=6)
        y.backward(lib.tensor(g))
        results.append([t.detach().numpy() for t in (y, xl.grad, wl.grad)])
        if lib is ember and len(results) == 2:
            assert sorted(calls) == ["forward", "grad_input", "grad_weight"]
            monkeypatch.setattr(conv, "_depthwise", lambda *a: False)  # the column path next
    for got in results[1:]:
        for a, b in zip(got, results[0]):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    calls.clear()
    monkeypatch.undo()
    yt = ember.nn.functional.conv_transpose2d(ember.tensor(g[:, :6]), ember.tensor(w[:6]),
                                              groups=6)
    want = torch.nn.functional.conv_transpose2d(torch.tensor(g[:, :6]), torch.tensor(w[:6]),
                                                groups=6)
    np.testing.assert_allclose(yt.numpy(), want.numpy(), rtol=1e-5, atol=1e-5)
