"""ember.nn.functional's convolution, pooling, resampling, padding and folding functions against
PyTorch: values (float32 and float64) and gradients (through the fused backward ops:
convolution_backward, max_pool*_with_indices_backward, avg_pool*_backward, upsample_*_backward,
the padding backwards...), gradcheck on a few, double backward of convolution, and the
Python-level argument errors."""
import numpy as np
import pytest

import ember
import ember.nn.functional as EF
from helpers import to_np

_rng = np.random.default_rng(0)
_X = _rng.standard_normal((2, 4, 9, 8))
_X5 = np.repeat(_X[:, :, None], 3, axis=2)


def _w(*shape):
    return _rng.standard_normal(shape)


# name -> (function of (F, *tensors), input arrays)
CASES = {
    "conv2d groups stride": (lambda F, x, w, b: F.conv2d(x, w, b, stride=2, padding=1, groups=2),
                             (_X, _w(6, 2, 3, 3), _w(6))),
    "conv2d same dilated": (lambda F, x, w: F.conv2d(x, w, padding="same", dilation=2, groups=2),
                            (_X, _w(6, 2, 2, 3))),
    "conv2d valid": (lambda F, x, w: F.conv2d(x, w, padding="valid"), (_X, _w(3, 4, 2, 2))),
    "conv2d unbatched": (lambda F, x, w: F.conv2d(x, w, padding=(1, 0)), (_X[0], _w(3, 4, 3, 3))),
    "conv1d": (lambda F, x, w: F.conv1d(x, w, padding=2, dilation=2), (_X[0], _w(5, 9, 3))),
    "conv3d": (lambda F, x, w: F.conv3d(x, w, stride=(1, 2, 1), padding=1), (_X5, _w(3, 4, 2, 2, 2))),
    "conv_transpose2d": (lambda F, x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1,
                                                               output_padding=1),
                         (_X, _w(4, 3, 3, 3), _w(3))),
    "conv_transpose2d groups dilation": (lambda F, x, w: F.conv_transpose2d(
        x, w, stride=(1, 2), groups=2, dilation=(2, 1)), (_X, _w(4, 3, 2, 3))),
    "conv_transpose1d": (lambda F, x, w: F.conv_transpose1d(x, w, stride=3), (_X[0], _w(9, 2, 3))),
    "conv_transpose3d": (lambda F, x, w: F.conv_transpose3d(x, w, stride=2, padding=1), (_X5, _w(4, 2, 3, 3, 3))),
    "max_pool2d": (lambda F, x: F.max_pool2d(x, 3, 2, 1, ceil_mode=True), (_X,)),
    "max_pool2d dilation": (lambda F, x: F.max_pool2d(x, 2, 1, 1, dilation=2), (_X,)),
    "max_pool1d": (lambda F, x: F.max_pool1d(x, 3, 2, 1, dilation=2), (_X[0],)),
    "max_pool3d": (lambda F, x: F.max_pool3d(x, 2, ceil_mode=True), (_X5,)),
    "avg_pool2d": (lambda F, x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False), (_X,)),
    "avg_pool2d divisor": (lambda F, x: F.avg_pool2d(x, 3, 2, 1, divisor_override=5), (_X,)),
    "avg_pool1d": (lambda F, x: F.avg_pool1d(x, 3, 2, 1), (_X[0],)),
    "avg_pool3d": (lambda F, x: F.avg_pool3d(x, 2, 1, 1), (_X5,)),
    "adaptive_avg_pool2d": (lambda F, x: F.adaptive_avg_pool2d(x, (4, 3)), (_X,)),
    "adaptive_avg_pool2d up": (lambda F, x: F.adaptive_avg_pool2d(x, (11, None)), (_X,)),
    "adaptive_avg_pool1d": (lambda F, x: F.adaptive_avg_pool1d(x, 5), (_X[0],)),
    "adaptive_avg_pool3d": (lambda F, x: F.adaptive_avg_pool3d(x, (2, None, 3)), (_X5,)),
    "adaptive_max_pool2d": (lambda F, x: F.adaptive_max_pool2d(x, (4, 3)), (_X,)),
    "adaptive_max_pool1d": (lambda F, x: F.adaptive_max_pool1d(x, 5), (_X[0],)),
    "adaptive_max_pool3d": (lambda F, x: F.adaptive_max_pool3d(x, (2, 3, 5)), (_X5,)),
    "lp_pool2d": (lambda F, x: F.lp_pool2d(x, 2, 3, 2), (np.abs(_X) + 0.1,)),
    "lp_pool1d": (lambda F, x: F.lp_pool1d(x, 3, 2), (np.abs(_X[0]) + 0.1,)),
    "interpolate linear": (lambda F, x: F.interpolate(x, scale_factor=2.5, mode="linear"), (_X[0],)),
    "interpolate trilinear": (lambda F, x: F.interpolate(x, size=(3, 4, 5), mode="trilinear",
                                                         align_corners=True), (_X5,)),
    "interpolate nearest3d": (lambda F, x: F.interpolate(x, scale_factor=(2, 0.5, 1.5)), (_X5,)),
    "interpolate nearest-exact1d": (lambda F, x: F.interpolate(x, size=13, mode="nearest-exact"), (_X[0],)),
    "interpolate area": (lambda F, x: F.interpolate(x, size=(4, 3), mode="area"), (_X,)),
    "interpolate recompute": (lambda F, x: F.interpolate(x, scale_factor=1.3, mode="bilinear",
                                                         recompute_scale_factor=True), (_X,)),
    "pad 1d reflect": (lambda F, x: F.pad(x, (3, 2), mode="reflect"), (_X[0],)),
    "pad 3d replicate": (lambda F, x: F.pad(x, (1, 2, 0, 1, 1, 1), mode="replicate"), (_X5,)),
    "pad 3d reflect": (lambda F, x: F.pad(x, (1, 2, 0, 1, 1, 1), mode="reflect"), (_X5,)),
    "pad constant value": (lambda F, x: F.pad(x, (1, 1, -1, 0), value=2.5), (_X,)),
    "unfold": (lambda F, x: F.unfold(x, (2, 3), dilation=(1, 2), padding=1, stride=2), (_X,)),
    "fold": (lambda F, c: F.fold(c, (9, 8), (2, 3), dilation=(1, 2), padding=1, stride=2),
             (_rng.standard_normal((2, 24, 15)),)),
    "pixel_shuffle": (lambda F, x: F.pixel_shuffle(x, 2), (_X,)),
    "pixel_unshuffle": (lambda F, x: F.pixel_unshuffle(x, 2), (_X[:, :, :8],)),
}
for _mode, _ac in [("nearest", None), ("nearest-exact", None), ("bilinear", False),
                   ("bilinear", True), ("bicubic", False), ("bicubic", True)]:
    CASES[f"interpolate {_mode} {_ac} size"] = (
        lambda F, x, m=_mode, a=_ac: F.interpolate(x, size=(13, 5), mode=m, align_corners=a), (_X,))
    CASES[f"interpolate {_mode} {_ac} scale"] = (
        lambda F, x, m=_mode, a=_ac: F.interpolate(x, scale_factor=1.7, mode=m, align_corners=a),
        (_X,))
for _mode in ("constant", "reflect", "replicate", "circular"):
    CASES[f"pad {_mode}"] = (lambda F, x, m=_mode: F.pad(x, (1, 2, 2, 1), mode=m), (_X,))
    CASES[f"pad {_mode} negative"] = (lambda F, x, m=_mode: F.pad(x, (-1, 2, 2, -3), mode=m), (_X,))


def _unpool_case(k):
    def f(F, x):
        pool = {1: F.max_pool1d, 2: F.max_pool2d}[k]
        unpool = {1: F.max_unpool1d, 2: F.max_unpool2d}[k]
        out, idx = pool(x, 2, return_indices=True)
        return unpool(out, idx, 2, output_size=x.shape[-k:])
    return f


CASES["max_unpool2d"] = (_unpool_case(2), (_X,))
CASES["max_unpool1d"] = (_unpool_case(1), (_X[0],))


def _run(lib, F, fn, arrays, dtype, grad):
    ts = [lib.tensor(a, dtype=dtype, requires_grad=grad) for a in arrays]
    out = fn(F, *ts)
    out = out[0] if isinstance(out, tuple) else out
    return ts, out


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", list(CASES))
def test_values_and_gradients(torch, name, dtype):
    fn, arrays = CASES[name]
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == "float32" else dict(rtol=1e-7, atol=1e-9)
    ts, tout = _run(torch, torch.nn.functional, fn, arrays, getattr(torch, dtype), True)
    es, eout = _run(ember, EF, fn, arrays, getattr(ember, dtype), True)
    assert eout.dtype.name == dtype and tuple(eout.shape) == tuple(tout.shape)
    np.testing.assert_allclose(to_np(eout), to_np(tout), **tol)
    g = _rng.standard_normal(tuple(tout.shape))
    tg = torch.autograd.grad(tout, ts, torch.tensor(g, dtype=tout.dtype))
    eg = ember.autograd.grad(eout, es, ember.tensor(g, dtype=eout.dtype))
    for a, b in zip(eg, tg):
        np.testing.assert_allclose(to_np(a), to_np(b), **tol)


def test_max_pool_indices_and_int_values(torch):
    x = _rng.integers(-5, 5, (2, 3, 7, 6))
    e, ei = EF.max_pool2d(ember.tensor(x), 3, 2, 1, return_indices=True)
    t, ti = torch.nn.functional.max_pool2d(torch.tensor(x), 3, 2, 1, return_indices=True)
    np.testing.assert_array_equal(to_np(e), to_np(t))
    np.testing.assert_array_equal(to_np(ei), to_np(ti))
    assert e.dtype is ember.int64 and ei.dtype is ember.int64


def test_gradcheck():
    x = ember.tensor(_rng.standard_normal((1, 2, 5, 4)), requires_grad=True)
    w = ember.tensor(_rng.standard_normal((3, 2, 2, 2)), requires_grad=True)
    b = ember.tensor(_rng.standard_normal(3), requires_grad=True)
    assert ember.autograd.gradcheck(lambda x, w, b: EF.conv2d(x, w, b, stride=(2, 1), padding=1),
                                    (x, w, b))
    assert ember.autograd.gradcheck(lambda x, w: EF.conv_transpose2d(x, w[:, :2], stride=2),
                                    (x, w.detach()[:2].clone().requires_grad_()))
    assert ember.autograd.gradcheck(lambda x: EF.avg_pool2d(x, 2, 1, 1, ceil_mode=True), (x,))
    assert ember.autograd.gradcheck(
        lambda x: EF.interpolate(x, scale_factor=1.5, mode="bicubic"), (x,))
    assert ember.autograd.gradcheck(lambda x: EF.pad(x, (1, 2, 1, 0), mode="reflect"), (x,))


def test_conv_double_backward(torch):
    """Gradient of a gradient (WGAN-GP style) through convolution_backward's formula."""
    x, w = _rng.standard_normal((2, 3, 6, 5)), _rng.standard_normal((4, 3, 3, 3))
    res = []
    for lib, F in ((ember, EF), (torch, torch.nn.functional)):
        tx = lib.tensor(x, requires_grad=True)
        tw = lib.tensor(w, requires_grad=True)
        y = F.conv2d(tx, tw, stride=2, padding=1)
        gx, = lib.autograd.grad(y.pow(2).sum(), [tx], create_graph=True)
        res.append([to_np(g) for g in lib.autograd.grad(gx.pow(2).sum(), [tx, tw])])
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-8)


ERRORS = [
    lambda F, x: F.conv2d(x, x[:2, :, :3, :3], padding="full"),
    lambda F, x: F.conv2d(x, x[:2, :, :3, :3], padding="same", stride=2),
    lambda F, x: F.conv2d(x[0, 0], x[:2, :, :3, :3]),
    lambda F, x: F.conv_transpose2d(x, x[:, :2, :3, :3], padding="same"),
    lambda F, x: F.max_pool2d(x, 3, padding=2),
    lambda F, x: F.avg_pool2d(x, 2, divisor_override=0),
    lambda F, x: F.interpolate(x, size=(3, 3), mode="nearest", align_corners=True),
    lambda F, x: F.interpolate(x, size=(3, 3), scale_factor=2.0),
    lambda F, x: F.interpolate(x),
    lambda F, x: F.interpolate(x, size=(3, 3, 3)),
    lambda F, x: F.interpolate(x, size=(3, 3), mode="trilinear"),
    lambda F, x: F.pad(x, (1, 1), mode="reflect", value=1.0),
    lambda F, x: F.pad(x, (9, 9), mode="reflect"),
    lambda F, x: F.pad(x, (1, 1, 1), mode="constant"),
    lambda F, x: F.max_unpool2d(x, x.long(), 2, output_size=(40, 40)),
    lambda F, x: F.pixel_shuffle(x, 3),
    lambda F, x: F.fold(x, (4, 4), 2),
    lambda F, x: F.unfold(x, 9),
    lambda F, x: F.adaptive_avg_pool2d(x, (1, 2, 3)),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors(torch, i):
    x = _rng.standard_normal((2, 4, 6, 5)).astype(np.float32)
    with pytest.raises(Exception) as t_exc:
        ERRORS[i](torch.nn.functional, torch.tensor(x))
    with pytest.raises(Exception) as e_exc:
        ERRORS[i](EF, ember.tensor(x))
    assert e_exc.type is t_exc.type, (e_exc.value, t_exc.value)


@pytest.mark.parametrize("x_cl,w_cl,dims,transposed,groups", [
    (True, False, 2, False, 1), (False, True, 2, False, 1), (True, True, 2, False, 1),
    (False, False, 2, False, 1), (True, False, 3, False, 1), (True, False, 2, True, 1),
    (True, False, 2, False, 2)])
def test_channels_last_results_as_pytorch(torch, x_cl, w_cl, dims, transposed, groups):
    """PyTorch's CPU convolutions return the output and both gradients channels-last when the
    input or the weight suggests channels_last (issue 22: channels_last kept through a CNN)."""
    xs = _rng.standard_normal((2, 8) + (6,) * dims)
    ws = _rng.standard_normal(((8, 4 // groups) if transposed else (4, 8 // groups)) + (3,) * dims)

    def run(lib):
        fmt = lib.channels_last if dims == 2 else lib.channels_last_3d
        x, w = lib.tensor(xs, dtype=lib.float32), lib.tensor(ws, dtype=lib.float32)
        x = x.to(memory_format=fmt) if x_cl else x
        w = w.to(memory_format=fmt) if w_cl else w
        f = getattr(lib.nn.functional, f"conv{'_transpose' if transposed else ''}{dims}d")
        y = f(x, w, padding=1, groups=groups)
        grads = lib.ops.aten.convolution_backward(
            lib.ones(y.shape), x, w, None, [1] * dims, [1] * dims, [1] * dims, transposed,
            [0] * dims, groups, [True, True, False])[:2]
        return (y, *grads)
    for got, want in zip(run(ember), run(torch)):
        assert tuple(got.stride()) == tuple(want.stride())
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-4)
