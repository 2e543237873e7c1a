"""torchvision's detection operators on ember (ember/_torchvision_ops.py, which ember.as_torch
registers for torchvision): nms against a transcription of torchvision's CPU kernel, roi_align
against torchvision's own pure-Python roi_align run by PyTorch (and, for samples off the map,
where that one departs from the kernels, against a transcription), roi_pool / ps_roi_align /
ps_roi_pool and every backward op against loop transcriptions of the CPU kernels, their
errors; then, under ``python -m ember.as_torch`` (this file is also that program),
torchvision's own functions and a Faster R-CNN in eval and in training beside PyTorch's, with
its weights. The oracle's torchvision cannot load its compiled ops either:
tests/_torchvision_schemas.detection_ops gives it test-only nms and roi_align."""
import math
import os
import sys

import numpy as np
import pytest


# -- loop transcriptions of torchvision/csrc/ops/cpu/*.cpp (NumPy scalars of the input dtype) ---
def _nms_ref(boxes, scores, threshold):
    """nms_kernel_impl, both loops in Python."""
    b = np.asarray(boxes)
    areas = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    order = sorted(range(len(b)), key=lambda i: -float(scores[i]))  # (sorted is stable)
    suppressed = [False] * len(b)
    keep = []
    for _i, i in enumerate(order):
        if suppressed[i]:
            continue
        keep.append(i)
        for j in order[_i + 1:]:
            if suppressed[j]:
                continue
            w = max(b.dtype.type(0), min(b[i, 2], b[j, 2]) - max(b[i, 0], b[j, 0]))
            h = max(b.dtype.type(0), min(b[i, 3], b[j, 3]) - max(b[i, 1], b[j, 1]))
            inter = w * h
            with np.errstate(invalid="ignore"):  # (0 / 0 for two empty boxes: NaN)
                iou = inter / (areas[i] + areas[j] - inter)
            if float(iou) > threshold:
                suppressed[j] = True
    return np.array(keep, dtype=np.int64)


def _tap(y, x, height, width):
    """bilinear_interpolate(_gradient): [(pixel y, pixel x, weight)], [] off the map."""
    t = type(y)
    if not (-1.0 <= y <= height and -1.0 <= x <= width):
        return []
    y, x = max(y, t(0)), max(x, t(0))
    yl, xl = int(y), int(x)
    if yl >= height - 1:
        yh = yl = height - 1
        y = t(yl)
    else:
        yh = yl + 1
    if xl >= width - 1:
        xh = xl = width - 1
        x = t(xl)
    else:
        xh = xl + 1
    ly, lx = y - t(yl), x - t(xl)
    hy, hx = t(1) - ly, t(1) - lx
    return [(yl, xl, hy * hx), (yl, xh, hy * lx), (yh, xl, ly * hx), (yh, xh, ly * lx)]


def _align_bins(rois, scale, ph, pw, sr, aligned, height, width, ps=False):
    """(roi, batch, bin y, bin x, taps, count) of roi_align (ps: ps_roi_align) bins."""
    for n, r in enumerate(np.asarray(rois)):
        t = r.dtype.type
        off = t(0.5) if aligned or ps else t(0)
        x1, y1, x2, y2 = (v * t(scale) - off for v in r[1:])
        rw, rh = x2 - x1, y2 - y1
        if not aligned and not ps:
            rw, rh = max(rw, t(1)), max(rh, t(1))
        bh, bw = rh / t(ph), rw / t(pw)
        gh = sr if sr > 0 else int(np.ceil(rh / t(ph)))
        gw = sr if sr > 0 else int(np.ceil(rw / t(pw)))
        count = gh * gw if ps else max(gh * gw, 1)
        for i in range(ph):
            for j in range(pw):
                taps = []
                for iy in range(gh):
                    yy = y1 + t(i) * bh + t(iy + .5) * bh / t(gh)
                    for ix in range(gw):
                        xx = x1 + t(j) * bw + t(ix + .5) * bw / t(gw)
                        taps += _tap(yy, xx, height, width)
                yield n, int(r[0]), i, j, taps, t(count)


def _roi_align_ref(x, rois, scale, ph, pw, sr, aligned, grad=None):
    """roi_align forward, or with ``grad`` its backward."""
    _, c, h, w = x.shape
    out = np.zeros((len(rois), c, ph, pw), x.dtype) if grad is None else np.zeros_like(x)
    for n, b, i, j, taps, count in _align_bins(rois, scale, ph, pw, sr, aligned, h, w):
        for yy, xx, wt in taps:
            if grad is None:
                out[n, :, i, j] += wt * x[b, :, yy, xx]
            else:
                out[b, :, yy, xx] += grad[n, :, i, j] * wt / count
        if grad is None:
            out[n, :, i, j] /= count
    return out


def _ps_roi_align_ref(x, rois, scale, ph, pw, sr, grad=None):
    _, c, h, w = x.shape
    c_out = c // (ph * pw)
    out = np.zeros((len(rois), c_out, ph, pw), x.dtype) if grad is None else np.zeros_like(x)
    for n, b, i, j, taps, count in _align_bins(rois, scale, ph, pw, sr, True, h, w, ps=True):
        for co in range(c_out):
            ci = (co * ph + i) * pw + j
            if grad is None:
                out[n, co, i, j] = sum(wt * x[b, ci, yy, xx] for yy, xx, wt in taps) / count \
                    if count else np.nan
            else:
                for yy, xx, wt in taps:
                    out[b, ci, yy, xx] += grad[n, co, i, j] * wt / count
    return out


def _c_round(v, roundf):
    """C's round (roundf: of the value as a float): halves away from zero."""
    v = float(np.float32(v)) if roundf else float(v)
    return int(math.copysign(math.floor(abs(v) + 0.5), v))


def _pool_bins(rois, scale, ph, pw, height, width, extra, clip_h, clip_w, roundf=False):
    """(roi, batch, bin y, bin x, hstart, hend, wstart, wend) of roi_pool / ps_roi_pool."""
    for n, r in enumerate(np.asarray(rois)):
        t = r.dtype.type
        x1, y1, x2, y2 = (_c_round(v * t(scale), roundf) for v in r[1:])
        rw, rh = max(x2 - x1 + extra, 1), max(y2 - y1 + extra, 1)
        bh, bw = t(rh) / t(ph), t(rw) / t(pw)
        for i in range(ph):
            for j in range(pw):
                hs = min(max(int(np.floor(t(i) * bh)) + y1, 0), clip_h)
                he = min(max(int(np.ceil(t(i + 1) * bh)) + y1, 0), clip_h)
                ws = min(max(int(np.floor(t(j) * bw)) + x1, 0), clip_w)
                we = min(max(int(np.ceil(t(j + 1) * bw)) + x1, 0), clip_w)
                yield n, int(r[0]), i, j, hs, he, ws, we


def _roi_pool_ref(x, rois, scale, ph, pw):
    """roi_pool forward: (output, argmax)."""
    _, c, h, w = x.shape
    out = np.zeros((len(rois), c, ph, pw), x.dtype)
    arg = np.zeros((len(rois), c, ph, pw), np.int32)
    for n, b, i, j, hs, he, ws, we in _pool_bins(rois, scale, ph, pw, h, w, 1, h, w):
        for ch in range(c):
            best, at = (0 if he <= hs or we <= ws else -np.finfo(np.float32).max), -1
            for yy in range(hs, he):
                for xx in range(ws, we):
                    if x[b, ch, yy, xx] > best:
                        best, at = x[b, ch, yy, xx], yy * w + xx
            out[n, ch, i, j], arg[n, ch, i, j] = best, at
    return out, arg


def _roi_pool_backward_ref(grad, rois, argmax, shape):
    g = np.zeros(shape, grad.dtype)
    for n, r in enumerate(np.asarray(rois)):
        for ch, i, j in np.ndindex(*grad.shape[1:]):
            if argmax[n, ch, i, j] != -1:
                g[int(r[0]), ch].reshape(-1)[argmax[n, ch, i, j]] += grad[n, ch, i, j]
    return g


def _ps_roi_pool_ref(x, rois, scale, ph, pw, grad=None):
    """ps_roi_pool forward (bins clipped to H - 1) or backward (to H, corners in float)."""
    _, c, h, w = x.shape
    c_out = c // (ph * pw)
    fwd = grad is None
    out = np.zeros((len(rois), c_out, ph, pw), x.dtype) if fwd else np.zeros_like(x)
    clip = (h - 1, w - 1) if fwd else (h, w)
    for n, b, i, j, hs, he, ws, we in _pool_bins(rois, scale, ph, pw, h, w, 0, *clip,
                                                 roundf=not fwd):
        area = x.dtype.type((he - hs) * (we - ws))
        for co in range(c_out):
            ci = (co * ph + i) * pw + j
            if he <= hs or we <= ws:
                continue
            if fwd:
                out[n, co, i, j] = x[b, ci, hs:he, ws:we].sum() / area
            else:
                out[b, ci, hs:he, ws:we] += grad[n, co, i, j] / area
    return out


def _deform_bilinear(img, y, x):
    """deform_conv2d_kernel.cpp's bilinear_interpolate."""
    h, w = img.shape
    if y <= -1 or h <= y or x <= -1 or w <= x:
        return 0.0
    yl, xl = math.floor(y), math.floor(x)
    yh, xh = yl + 1, xl + 1
    ly, lx = y - yl, x - xl
    hy, hx = 1 - ly, 1 - lx
    v1 = img[yl, xl] if yl >= 0 and xl >= 0 else 0
    v2 = img[yl, xh] if yl >= 0 and xh <= w - 1 else 0
    v3 = img[yh, xl] if yh <= h - 1 and xl >= 0 else 0
    v4 = img[yh, xh] if yh <= h - 1 and xh <= w - 1 else 0
    return hy * hx * v1 + hy * lx * v2 + ly * hx * v3 + ly * lx * v4


def _deform_conv2d_ref(x, weight, offset, mask, bias, stride, pad, dil, groups):
    """deformable_im2col (mask None: not used), then the per-group product with the weights."""
    b, c, h, w = x.shape
    oc, cw, kh, kw = weight.shape
    oh, ow = offset.shape[2:]
    cg = c // (offset.shape[1] // (2 * kh * kw))  # channels per offset group
    cols = np.zeros((b, c, kh, kw, oh, ow))
    for bi, ci, i, j, oy, ox in np.ndindex(*cols.shape):
        g, m = ci // cg, i * kw + j
        y = (oy * stride[0] - pad[0]) + i * dil[0] + offset[bi, (g * kh * kw + m) * 2, oy, ox]
        xx = (ox * stride[1] - pad[1]) + j * dil[1] + offset[bi, (g * kh * kw + m) * 2 + 1, oy,
                                                              ox]
        mv = 1.0 if mask is None else mask[bi, g * kh * kw + m, oy, ox]
        cols[bi, ci, i, j, oy, ox] = mv * _deform_bilinear(x[bi, ci], y, xx)
    cols = cols.reshape(b, groups, cw * kh * kw, oh * ow)
    out = weight.reshape(groups, oc // groups, cw * kh * kw) @ cols
    return out.reshape(b, oc, oh, ow) + bias[:, None, None]


# -- the ops on ember, in this process ----------------------------------------------------------
@pytest.fixture(scope="module")
def ops():
    """ember.ops.torchvision with the kernels and torchvision's autograd formulas, for the
    module (then removed: other modules see no torchvision namespace)."""
    import ember
    from ember._torchvision_ops import register
    lib = register(autograd=True)
    yield ember.ops.torchvision
    lib._destroy()


def _rois(rs, k, n, h, w, dtype, spill=0.0):
    """k rois over n maps of h x w: corners inside the map, or up to ``spill`` of it out."""
    lo = -spill * np.array([w, h])
    hi = (1 + spill) * np.array([w, h])
    a, b = rs.uniform(lo, hi, (k, 2)), rs.uniform(lo, hi, (k, 2))
    return np.concatenate([rs.randint(0, n, (k, 1)), np.minimum(a, b), np.maximum(a, b)],
                          1).astype(dtype)


def _boxes(rs, n, dtype, span=60.0):
    xy = rs.uniform(0, span, (n, 2))
    return np.concatenate([xy, xy + rs.uniform(1, 30, (n, 2))], 1).astype(dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_nms_matches_the_kernel(ops, dtype):
    """Random overlapping boxes at thresholds from 0 to 1 (IoU > threshold suppresses: at 0
    only disjoint or touching boxes survive one another, at 1 nothing is suppressed), tied
    scores (the stable descending sort keeps index order), exact duplicates, two equal
    zero-area boxes (IoU 0/0: neither suppresses the other), a negative threshold, the empty
    input; int64 indices in score order."""
    import ember
    rs = np.random.RandomState(0)
    b = _boxes(rs, 120, dtype)
    b[10:20] = b[0]  # duplicates of box 0
    b[30, 2:] = b[30, :2]  # zero area, twice
    b[31] = b[30]
    s = rs.randint(0, 12, 120).astype(dtype) / 12  # many ties
    for thr in (0.0, 0.2, 0.5, 0.7, 1.0, -0.1):
        got = ops.nms(ember.tensor(b), ember.tensor(s), thr)
        assert got.dtype == ember.int64
        np.testing.assert_array_equal(got.numpy(), _nms_ref(b, s, thr), err_msg=str(thr))
    keep = ops.nms(ember.tensor(b), ember.tensor(s), 1.0).numpy()
    np.testing.assert_array_equal(keep, np.argsort(-s, kind="stable"))  # all, ties in order
    touching = np.array([[0, 0, 1, 1], [1, 0, 2, 1]], dtype)  # IoU 0: kept even at 0
    assert ops.nms(ember.tensor(touching), ember.tensor(np.ones(2, dtype)), 0.0).tolist() \
        == [0, 1]
    empty = ops.nms(ember.zeros(0, 4, dtype=getattr(ember, dtype)),
                    ember.zeros(0, dtype=getattr(ember, dtype)), 0.5)
    assert empty.shape == (0,) and empty.dtype == ember.int64


def test_nms_in_blocks_and_at_float32_rounding(ops, monkeypatch, torch):
    """Many boxes decided a block of rows at a time (the budget shrunk so 2000 boxes take
    dozens of blocks) equal the oracle's transcription; a threshold just below an IoU that
    float32 rounds up to it still suppresses (the kernel compares in double)."""
    import ember
    import _torchvision_schemas
    from ember import _torchvision_ops
    rs = np.random.RandomState(1)
    b = _boxes(rs, 2000, "float32", span=400.0)
    s = rs.rand(2000).astype(np.float32)
    want = _torchvision_schemas._nms_cpu(torch.from_numpy(b), torch.from_numpy(s), 0.4).numpy()
    monkeypatch.setattr(_torchvision_ops, "_BUDGET", 20000)
    np.testing.assert_array_equal(ops.nms(ember.tensor(b), ember.tensor(s), 0.4).numpy(), want)
    monkeypatch.undo()
    np.testing.assert_array_equal(ops.nms(ember.tensor(b), ember.tensor(s), 0.4).numpy(), want)
    # IoU 1/3 is 0.3333333432674408 in float32, above the double threshold 0.33333333
    pair = np.array([[0, 0, 2, 1], [1, 0, 3, 1]], np.float32)
    iou = np.float32(1) / (np.float32(2) + np.float32(2) - np.float32(1))
    assert float(iou) > 0.33333333 and np.float32(0.33333333) == iou
    got = ops.nms(ember.tensor(pair), ember.tensor([1.0, 0.5]), 0.33333333)
    assert got.tolist() == [0] == _nms_ref(pair, [1.0, 0.5], 0.33333333).tolist()


@pytest.mark.parametrize("dtype,tol", [("float32", 2e-5), ("float64", 1e-12)])
@pytest.mark.parametrize("aligned", [False, True])
@pytest.mark.parametrize("sampling_ratio", [-1, 2])
def test_roi_align_matches_torchvisions_python(ops, torch, dtype, tol, aligned, sampling_ratio):
    """roi_align and its gradient equal torchvision's pure-Python roi_align (the fallback it
    runs without ops, transcribed from the CUDA kernel) computed by PyTorch: rois of every
    size inside the map, spatial_scale 0.5, two images, malformed rois (a point, x2 < x1)."""
    import importlib
    import ember
    reference = importlib.import_module("torchvision.ops.roi_align")._roi_align.__wrapped__
    rs = np.random.RandomState(2)
    x = rs.randn(2, 5, 13, 11).astype(dtype)
    rois = _rois(rs, 24, 2, 26, 22, dtype)
    if not aligned or sampling_ratio > 0:
        # (aligned with an adaptive grid, torchvision's Python divides by their empty grid:
        # NaN gradients; test_roi_align_off_the_map_matches_the_kernel has them)
        rois[0, 3:] = rois[0, 1:3]  # a point
        rois[1, 3] = rois[1, 1] - 1  # x2 < x1
    g = rs.randn(24, 5, 3, 4).astype(dtype)
    tx = torch.from_numpy(x).requires_grad_()
    want = reference(tx, torch.from_numpy(rois), 0.5, 3, 4, sampling_ratio, aligned)
    want.backward(torch.from_numpy(g))
    ex = ember.tensor(x, requires_grad=True)
    got = ops.roi_align(ex, ember.tensor(rois), 0.5, 3, 4, sampling_ratio, aligned)
    got.backward(ember.tensor(g))
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=tol, atol=tol)
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("aligned,sampling_ratio", [(False, -1), (True, 2), (True, -1)])
def test_roi_align_off_the_map_matches_the_kernel(ops, aligned, sampling_ratio):
    """Rois reaching well past the map: samples beyond [-1, size] count as zero in the C++
    and CUDA kernels (torchvision's Python fallback clamps them onto the edge instead), both
    directions, malformed rois included; the backward is the forward's adjoint."""
    import ember
    rs = np.random.RandomState(3)
    x = rs.randn(2, 3, 7, 9)
    rois = _rois(rs, 10, 2, 7, 9, "float64", spill=0.8)
    rois[0, 3:] = rois[0, 1:3]  # a point
    rois[1, 3] = rois[1, 1] - 1  # x2 < x1
    g = rs.randn(10, 3, 2, 3)
    got = ops.roi_align(ember.tensor(x), ember.tensor(rois), 1.0, 2, 3, sampling_ratio, aligned)
    want = _roi_align_ref(x, rois, 1.0, 2, 3, sampling_ratio, aligned)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)
    back = ops._roi_align_backward(ember.tensor(g), ember.tensor(rois), 1.0, 2, 3, 2, 3, 7, 9,
                                   sampling_ratio, aligned)
    np.testing.assert_allclose(back.numpy(), _roi_align_ref(x, rois, 1.0, 2, 3, sampling_ratio,
                                                            aligned, grad=g), rtol=1e-12,
                               atol=1e-12)
    assert abs(float((got.numpy() * g).sum() - (x * back.numpy()).sum())) < 1e-10


def test_roi_pool_matches_the_kernel(ops):
    """Max over integer bins (corners rounded half away from zero, bins clipped to the map,
    empty ones 0 with argmax -1), the first maximum's flat index as argmax (int32), ties and
    -inf inputs included; the backward adds each bin's gradient at its argmax."""
    import ember
    rs = np.random.RandomState(4)
    x = rs.randint(-3, 4, (2, 4, 9, 8)).astype(np.float32)  # many ties
    x[0, 1, :3] = -np.inf
    rois = _rois(rs, 12, 2, 18, 16, "float32", spill=0.3)
    rois[0, 1:] = [5, 1, 7, 3]  # x 0.5: halves, which C's round takes away from zero
    out, arg = ops.roi_pool(ember.tensor(x), ember.tensor(rois), 0.5, 3, 2)
    want, want_arg = _roi_pool_ref(x, rois, 0.5, 3, 2)
    assert arg.dtype == ember.int32
    np.testing.assert_array_equal(out.numpy(), want)
    np.testing.assert_array_equal(arg.numpy(), want_arg)
    g = rs.randn(12, 4, 3, 2).astype(np.float32)
    back = ops._roi_pool_backward(ember.tensor(g), ember.tensor(rois), arg, 0.5, 3, 2, 2, 4, 9, 8)
    np.testing.assert_allclose(back.numpy(), _roi_pool_backward_ref(g, rois, want_arg, x.shape),
                               rtol=1e-6, atol=1e-6)
    ex = ember.tensor(x, requires_grad=True)
    ops.roi_pool(ex, ember.tensor(rois), 0.5, 3, 2)[0].backward(ember.tensor(g))
    np.testing.assert_allclose(ex.grad.numpy(), back.numpy())


@pytest.mark.parametrize("sampling_ratio", [-1, 2])
def test_ps_roi_align_matches_the_kernel(ops, sampling_ratio):
    """Position-sensitive: output channel c of bin (i, j) samples input channel
    (c * PH + i) * PW + j (the channel mapping returned), coordinates shifted by -0.5 with no
    1x1 floor; an empty adaptive grid divides 0 by 0 as the kernel does. Backward included."""
    import ember
    rs = np.random.RandomState(5)
    x = rs.randn(2, 12, 8, 9)
    rois = _rois(rs, 9, 2, 16, 18, "float64", spill=0.3)
    rois[0, 3:] = rois[0, 1:3]  # zero size: empty grid
    out, mapping = ops.ps_roi_align(ember.tensor(x), ember.tensor(rois), 0.5, 2, 3,
                                    sampling_ratio)
    want = _ps_roi_align_ref(x, rois, 0.5, 2, 3, sampling_ratio)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-12, atol=1e-12)
    assert mapping.dtype == ember.int32
    np.testing.assert_array_equal(mapping.numpy()[3], np.arange(12).reshape(2, 2, 3))
    g = rs.randn(*out.shape)
    ex = ember.tensor(x, requires_grad=True)
    ops.ps_roi_align(ex, ember.tensor(rois), 0.5, 2, 3, sampling_ratio)[0].backward(
        ember.tensor(g))
    np.testing.assert_allclose(ex.grad.numpy(), _ps_roi_align_ref(x, rois, 0.5, 2, 3,
                                                                  sampling_ratio, grad=g),
                               rtol=1e-12, atol=1e-12)


def test_ps_roi_pool_matches_the_kernel(ops):
    """Average over integer bins, position-sensitive channels; the forward clips bins to
    [0, H - 1] and the backward to [0, H] (with corners rounded in float), as torchvision's
    kernels do — so the backward is not the forward's adjoint on the map's last row."""
    import ember
    rs = np.random.RandomState(6)
    x = rs.randn(2, 8, 7, 9)
    rois = _rois(rs, 10, 2, 7, 9, "float64", spill=0.3)
    out, mapping = ops.ps_roi_pool(ember.tensor(x), ember.tensor(rois), 1.0, 2, 2)
    np.testing.assert_allclose(out.numpy(), _ps_roi_pool_ref(x, rois, 1.0, 2, 2), rtol=1e-12,
                               atol=1e-12)
    g = rs.randn(*out.shape)
    ex = ember.tensor(x, requires_grad=True)
    ops.ps_roi_pool(ex, ember.tensor(rois), 1.0, 2, 2)[0].backward(ember.tensor(g))
    np.testing.assert_allclose(ex.grad.numpy(), _ps_roi_pool_ref(x, rois, 1.0, 2, 2, grad=g),
                               rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("use_mask", [True, False])
def test_deform_conv2d_matches_the_kernel(ops, torch, use_mask):
    """Weight groups and offset groups, stride, padding and dilation differing per axis,
    offsets sending samples off the map; with zero offsets and a unit mask it is PyTorch's
    conv2d."""
    import ember
    rs = np.random.RandomState(11)
    x, wt, bias = rs.randn(2, 4, 6, 7), rs.randn(6, 2, 3, 2), rs.randn(6)
    offset = rs.randn(2, 2 * 2 * 6, 3, 7) * 2  # out 3 x 7
    mask = rs.rand(2, 2 * 6, 3, 7)
    args = (2, 1, 1, 1, 1, 2, 2, 2, use_mask)  # stride, pad, dilation (1, 2), groups 2, 2
    got = ops.deform_conv2d(*(ember.tensor(a) for a in (x, wt, offset, mask, bias)), *args)
    want = _deform_conv2d_ref(x, wt, offset, mask if use_mask else None, bias, (2, 1), (1, 1),
                              (1, 2), 2)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)
    plain = ops.deform_conv2d(*(ember.tensor(a) for a in (x, wt, np.zeros_like(offset),
                                                          np.ones_like(mask), bias)), *args)
    conv = torch.nn.functional.conv2d(*(torch.from_numpy(a) for a in (x, wt, bias)),
                                      stride=(2, 1), padding=1, dilation=(1, 2), groups=2)
    np.testing.assert_allclose(plain.numpy(), conv.numpy(), rtol=1e-12, atol=1e-12)


def test_deform_conv2d_gradients(ops):
    """The backward op (the forward's vector-Jacobian product) against finite differences,
    every input; without a mask its gradient is zeros."""
    import ember
    rs = np.random.RandomState(12)
    shapes = [(1, 2, 4, 5), (2, 1, 2, 2), (1, 2 * 4, 3, 4), (1, 4, 3, 4), (2,)]
    leaves = [ember.tensor(rs.randn(*sh) if i != 3 else rs.rand(*sh), requires_grad=True)
              for i, sh in enumerate(shapes)]
    with ember.no_grad():
        leaves[2] *= 1.7  # (samples off the map and between pixels)

    def f(*a):
        return ops.deform_conv2d(*a, 1, 1, 0, 0, 1, 1, 2, 1, True)
    assert ember.autograd.gradcheck(f, leaves, eps=1e-6, atol=1e-6)
    grads = ops._deform_conv2d_backward(ember.ones(1, 2, 3, 4, dtype=ember.float64),
                                        *(t.detach() for t in leaves), 1, 1, 0, 0, 1, 1, 2, 1,
                                        False)
    assert [tuple(g.shape) for g in grads] == shapes and not grads[3].any()


def test_errors_are_torchvisions(ops):
    import ember
    x, rois = ember.zeros(1, 4, 5, 5), ember.zeros(2, 5)
    cases = [
        (lambda: ops.nms(ember.zeros(3, 4, 1), ember.zeros(3), 0.5),
         "boxes should be a 2d tensor, got 3D"),
        (lambda: ops.nms(ember.zeros(3, 5), ember.zeros(3), 0.5),
         "boxes should have 4 elements in dimension 1, got 5"),
        (lambda: ops.nms(ember.zeros(3, 4), ember.zeros(3, 1), 0.5),
         "scores should be a 1d tensor, got 2D"),
        (lambda: ops.nms(ember.zeros(3, 4), ember.zeros(2), 0.5),
         "boxes and scores should have same number of elements in dimension 0, got 3 and 2"),
        (lambda: ops.nms(ember.zeros(3, 4), ember.zeros(3, dtype=ember.float64), 0.5),
         "dets should have the same type as scores"),
        (lambda: ops.nms(ember.zeros(3, 4, dtype=ember.int64),
                         ember.zeros(3, dtype=ember.int64), 0.5),
         "\"nms_kernel\" not implemented for 'Long'"),
        (lambda: ops.roi_align(x, ember.zeros(2, 4), 1.0, 2, 2, -1, False),
         "rois must have shape as Tensor[K, 5]"),
        (lambda: ops.roi_align(x, rois.double(), 1.0, 2, 2, -1, False),
         "Expected tensor for argument #1 'input' to have the same type as tensor for "
         "argument #2 'rois'; but type CPUFloatType does not equal CPUDoubleType (while "
         "checking arguments for roi_align_forward_kernel)"),
        (lambda: ops.roi_pool(x, ember.zeros(2, 4), 1.0, 2, 2),
         "rois must have shape as Tensor[K, 5]"),
        (lambda: ops.ps_roi_align(x, rois, 1.0, 3, 1, -1),
         "input channels must be a multiple of pooling height * pooling width"),
        (lambda: ops.ps_roi_pool(x, ember.zeros(2, 6), 1.0, 2, 2),
         "Tensor rois should have shape as Tensor[K, 5]"),
        (lambda: ops.deform_conv2d(x, ember.zeros(2, 4, 3, 3), ember.zeros(1, 16, 3, 3),
                                   ember.zeros(1, 1), ember.zeros(2), 1, 1, 0, 0, 1, 1, 1, 1,
                                   False),
         "offset.shape[1] is not valid: got: 16 expected: 18"),
        (lambda: ops.deform_conv2d(x, ember.zeros(2, 4, 3, 3), ember.zeros(1, 18, 2, 3),
                                   ember.zeros(1, 1), ember.zeros(2), 1, 1, 0, 0, 1, 1, 1, 1,
                                   False),
         "offset output dims: (2, 3) - computed output dims: (3, 3)"),
        (lambda: ops.deform_conv2d(x, ember.zeros(2, 3, 3, 3), ember.zeros(1, 18, 3, 3),
                                   ember.zeros(1, 1), ember.zeros(2), 1, 1, 0, 0, 1, 1, 1, 1,
                                   False),
         "Expected weight_c.size(1) * n_weight_grps == input_c.size(1) to be true, but got "
         "false.  (Could this error message be improved?  If so, please report an "
         "enhancement request to PyTorch.)"),
    ]
    for call, message in cases:
        with pytest.raises(RuntimeError) as info:
            call()
        assert str(info.value) == message


def test_double_backward_is_refused(ops):
    """As torchvision: the backward ops have no derivative of their own."""
    import ember
    x = ember.randn(1, 2, 6, 6, requires_grad=True)
    rois = ember.tensor([[0.0, 0.5, 1.0, 4.0, 5.5]])
    v = ember.randn(1, 2, 2, 2, requires_grad=True)
    (gx,) = ember.autograd.grad(ops.roi_align(x, rois, 1.0, 2, 2, 2, True), x, v,
                                create_graph=True)
    with pytest.raises(RuntimeError, match="double backwards on roi_align not supported"):
        gx.sum().backward()


def test_the_ops_run_on_the_cuda_device(ops, cuda_device):
    """The kernels are ember ops: on the (simulated or real) CUDA device they give the CPU's
    results, gradients included."""
    import ember
    rs = np.random.RandomState(7)
    x = rs.randn(2, 8, 9, 10).astype(np.float32)
    rois = ember.tensor(_rois(rs, 6, 2, 9, 10, "float32", spill=0.2))
    b, s = ember.tensor(_boxes(rs, 50, "float32")), ember.tensor(rs.rand(50).astype(np.float32))
    deform = [rs.randn(*sh).astype(np.float32) for sh in [(3, 8, 3, 3), (2, 18, 9, 10),
                                                           (2, 9, 9, 10), (3,)]]
    for device in ("cpu", "cuda"):
        ex = ember.tensor(x, device=device, requires_grad=True)
        r = rois.to(device)
        outs = [ops.roi_align(ex, r, 1.0, 2, 2, -1, True), ops.roi_pool(ex, r, 1.0, 2, 2)[0],
                ops.ps_roi_align(ex, r, 1.0, 2, 2, 2)[0], ops.ps_roi_pool(ex, r, 1.0, 2, 2)[0],
                ops.deform_conv2d(ex, *(ember.tensor(a, device=device) for a in deform), 1, 1,
                                  1, 1, 1, 1, 1, 1, True)]
        sum(o.sum() for o in outs).backward()
        keep = ops.nms(b.to(device), s.to(device), 0.3)
        assert keep.device.type == device and outs[0].device.type == device
        result = [o.detach().cpu().numpy() for o in outs] + [ex.grad.cpu().numpy(),
                                                             keep.cpu().numpy()]
        if device == "cpu":
            cpu = result
    for got, want in zip(result, cpu):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


# -- torchvision itself on ember, beside PyTorch ------------------------------------------------
MODEL = dict(num_classes=4, min_size=128, max_size=160, rpn_pre_nms_top_n_train=300,
             rpn_post_nms_top_n_train=100, rpn_batch_size_per_image=64,
             box_batch_size_per_image=32)


def _api(torch):
    """torchvision.ops' functions that the oracle can run (nms, batched_nms by both of its
    strategies, roi_align with boxes as a list, RoIAlign and MultiScaleRoIAlign), with the
    gradient of the features."""
    from torchvision import ops
    from torchvision.ops import boxes as box_ops
    rs = np.random.RandomState(8)
    out = {}
    b = torch.from_numpy(_boxes(rs, 300, "float32", span=100.0))
    s = torch.from_numpy(rs.rand(300).astype(np.float32))
    cls = torch.from_numpy(rs.randint(0, 5, 300))
    out["nms"] = ops.nms(b, s, 0.5).numpy()
    out["batched_nms"] = ops.batched_nms(b, s, cls, 0.5).numpy()
    out["batched_nms_vanilla"] = box_ops._batched_nms_vanilla(b, s, cls, 0.5).numpy()
    x = torch.from_numpy(rs.randn(2, 6, 20, 24).astype(np.float32)).requires_grad_()
    boxes = [torch.from_numpy(_rois(rs, 7, 1, 40, 48, "float32")[:, 1:]) for _ in range(2)]
    out["roi_align"] = ops.roi_align(x, boxes, (3, 2), 0.5, 2, True)
    out["RoIAlign"] = ops.RoIAlign(4, 0.5, -1)(x, boxes)
    pool = ops.MultiScaleRoIAlign(["a", "b"], 3, 2)
    feats = {"a": x, "b": x[:, :, ::2, ::2]}
    out["multiscale"] = pool(feats, boxes, [(80, 96), (80, 96)])
    sum((v * v).sum() for v in (out["roi_align"], out["RoIAlign"], out["multiscale"])).backward()
    out = {k: v.detach().numpy() if hasattr(v, "detach") else v for k, v in out.items()}
    out["grad"] = x.grad.numpy()
    return out


def _model(torch, weights=None):
    """Faster R-CNN (MobileNetV3 + FPN, 320 px flavour at 128 px): eval detections in float32,
    then a training step's losses and gradients in float64 (in float32 a ReLU whose input
    rounds to either side of 0 flips a few gradients; in float64 they agree to 1e-13).
    Returns (state dict, results)."""
    import torchvision
    torch.manual_seed(0)
    m = torchvision.models.detection.fasterrcnn_mobilenet_v3_large_320_fpn(
        weights=None, weights_backbone=None, **MODEL)
    if weights is not None:
        m.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in weights.items()})
    state = {k: v.detach().numpy().copy() for k, v in m.state_dict().items()}
    rs = np.random.RandomState(9)
    images = [torch.from_numpy(rs.rand(3, 120, 150).astype(np.float32)),
              torch.from_numpy(rs.rand(3, 100, 130).astype(np.float32))]
    out = {}
    m.eval()
    with torch.no_grad():
        for i, d in enumerate(m(images)):
            out.update({f"eval{i}.{k}": v.numpy() for k, v in d.items()})
    targets = [{"boxes": torch.tensor([[10.0, 20.0, 60.0, 80.0], [70.0, 30.0, 140.0, 110.0]]),
                "labels": torch.tensor([1, 3])},
               {"boxes": torch.tensor([[5.0, 5.0, 50.0, 40.0]]), "labels": torch.tensor([2])}]
    m.train().double()
    for t in targets:
        t["boxes"] = t["boxes"].double()
    torch.manual_seed(1)  # the samplers' draws
    losses = m([i.double() for i in images], targets)
    sum(losses.values()).backward()
    out.update({"loss." + k: v.detach().numpy() for k, v in losses.items()})
    # the heads, and FPN output convolutions reached through roi_align's backward
    out.update({"grad." + k: p.grad.numpy() for k, p in m.named_parameters()
                if k.startswith(("rpn.", "roi_heads.", "backbone.fpn.layer_blocks"))})
    return state, out


def _ember_only_inputs():
    rs = np.random.RandomState(10)
    x = rs.randn(2, 8, 9, 10)
    rois = _rois(rs, 6, 2, 9, 10, "float64", spill=0.2)
    deform = {"offset": rs.randn(2, 18, 9, 10), "weight": rs.randn(4, 8, 3, 3),
              "bias": rs.randn(4), "mask": rs.rand(2, 9, 9, 10)}
    return x, rois, deform


def _ember_only(torch):
    """What the oracle cannot compute: torchvision sees its ops; its other functions run,
    with its own autograd formulas; its meta kernels give shapes; its errors."""
    import torchvision
    from torchvision import ops
    out = {"has_ops": np.array(torchvision.extension._has_ops())}
    x, rois, deform = _ember_only_inputs()
    x, rois = torch.from_numpy(x).requires_grad_(), torch.from_numpy(rois)
    for name, f in [("roi_pool", lambda: ops.roi_pool(x, rois, (2, 2), 1.0)),
                    ("ps_roi_align", lambda: ops.ps_roi_align(x, rois, 2, 1.0, 2)),
                    ("ps_roi_pool", lambda: ops.ps_roi_pool(x, rois, 2, 1.0))]:
        x.grad = None
        y = f()
        y.backward(torch.ones_like(y))
        out[name], out[name + ".grad"] = y.detach().numpy(), x.grad.numpy()
    x.grad = None
    d = {k: torch.from_numpy(v).requires_grad_() for k, v in deform.items()}
    y = ops.deform_conv2d(x, d["offset"], d["weight"], d["bias"], padding=1, mask=d["mask"])
    y.backward(torch.ones_like(y))
    out["deform_conv2d"] = y.detach().numpy()
    out.update({"deform_conv2d.grad." + k: t.grad.numpy() for k, t in d.items()})
    out["deform_conv2d.grad.input"] = x.grad.numpy()
    meta = ops.roi_align(x.detach().to("meta"), rois.to("meta"), (3, 4), 1.0)
    out["meta_shape"] = np.array(meta.shape)
    for name, f in [("boxes_shape", lambda: ops.roi_align(x, rois[:, 1:], 2)),
                    ("offset_shape", lambda: ops.deform_conv2d(x, d["offset"][:, :2],
                                                                d["weight"]))]:
        try:
            f()
        except Exception as e:  # noqa: BLE001  (recorded: the test checks type and words)
            out["error." + name] = np.array(f"{type(e).__name__}: {e}")
    return out


@pytest.fixture(scope="module")
def beside_pytorch(torch, tmp_path_factory):
    """The cases above in PyTorch (with tests/_torchvision_schemas.detection_ops) and in one
    ``python -m ember.as_torch`` run of this file with PyTorch's weights:
    name -> (PyTorch's, ember's); "ember_only" -> ember's."""
    pytest.importorskip("torchvision")
    import _torchvision_schemas
    from helpers import run_as_torch
    directory = tmp_path_factory.mktemp("detection")
    with _torchvision_schemas.detection_ops():
        theirs = {"api": _api(torch)}
        state, theirs["model"] = _model(torch)
    np.savez(directory / "weights.npz", **state)
    run_as_torch(os.path.basename(__file__), directory)
    results = {n: (theirs[n], dict(np.load(directory / f"{n}_ember.npz"))) for n in theirs}
    results["ember_only"] = dict(np.load(directory / "ember_only_ember.npz"))
    return results


def test_torchvision_functions_match_pytorch(beside_pytorch):
    """The same kept indices from nms and batched_nms; roi_align (boxes as a list, as the
    module, across FPN levels) and the features' gradient to float32 rounding."""
    theirs, mine = beside_pytorch["api"]
    assert sorted(mine) == sorted(theirs)
    for key in ("nms", "batched_nms", "batched_nms_vanilla"):
        np.testing.assert_array_equal(mine[key], theirs[key], err_msg=key)
    for key in ("roi_align", "RoIAlign", "multiscale", "grad"):
        np.testing.assert_allclose(mine[key], theirs[key], rtol=1e-5, atol=1e-5, err_msg=key)


def test_faster_rcnn_matches_pytorch(beside_pytorch):
    """Eval: the same detections (labels exactly, boxes and scores to float32 rounding) in
    the same order; training: the four losses and the heads' and FPN's gradients."""
    theirs, mine = beside_pytorch["model"]
    assert sorted(mine) == sorted(theirs)
    for key, ref in theirs.items():
        if key.startswith("eval"):
            if ref.dtype.kind in "iu":
                np.testing.assert_array_equal(mine[key], ref, err_msg=key)
            else:
                np.testing.assert_allclose(mine[key], ref, rtol=1e-4, atol=1e-4, err_msg=key)
        else:
            assert np.isfinite(mine[key]).all(), key
            # (PyTorch's objectness loss is float32: its binary_cross_entropy_with_logits
            # returns the target's dtype, the RPN's float32 labels; ember's the input's)
            rtol = 1e-9 if ref.dtype == np.float64 else 1e-6
            scale = float(np.abs(ref).max())
            np.testing.assert_allclose(mine[key], ref, rtol=rtol, atol=1e-11 * scale,
                                       err_msg=key)
    assert len(theirs["eval0.boxes"]) > 10  # (random weights, 3 classes: plenty of boxes)


def test_torchvision_sees_its_ops_on_ember(beside_pytorch, ops):
    """torchvision's _has_ops() is True; roi_pool / ps_roi_align / ps_roi_pool /
    deform_conv2d through its functions (and torchvision's autograd formulas) equal the
    kernels' transcriptions (deform_conv2d's gradients: the ops' own, in this process); its
    meta kernels give shapes; its own Python checks raise."""
    import ember
    mine = beside_pytorch["ember_only"]
    assert mine["has_ops"]
    x, rois, deform = _ember_only_inputs()
    want, arg = _roi_pool_ref(x, rois, 1.0, 2, 2)
    np.testing.assert_allclose(mine["roi_pool"], want)
    np.testing.assert_allclose(mine["roi_pool.grad"],
                               _roi_pool_backward_ref(np.ones_like(want), rois, arg, x.shape))
    np.testing.assert_allclose(mine["ps_roi_align"], _ps_roi_align_ref(x, rois, 1.0, 2, 2, 2),
                               atol=1e-12)
    g = np.ones_like(mine["ps_roi_align"])
    np.testing.assert_allclose(mine["ps_roi_align.grad"],
                               _ps_roi_align_ref(x, rois, 1.0, 2, 2, 2, grad=g), atol=1e-12)
    np.testing.assert_allclose(mine["ps_roi_pool"], _ps_roi_pool_ref(x, rois, 1.0, 2, 2),
                               atol=1e-12)
    g = np.ones_like(mine["ps_roi_pool"])
    np.testing.assert_allclose(mine["ps_roi_pool.grad"],
                               _ps_roi_pool_ref(x, rois, 1.0, 2, 2, grad=g), atol=1e-12)
    d = deform
    np.testing.assert_allclose(mine["deform_conv2d"], _deform_conv2d_ref(
        x, d["weight"], d["offset"], d["mask"], d["bias"], (1, 1), (1, 1), (1, 1), 1),
        rtol=1e-12, atol=1e-12)
    leaves = {k: ember.tensor(v, requires_grad=True) for k, v in dict(input=x, **d).items()}
    y = ops.deform_conv2d(leaves["input"], leaves["weight"], leaves["offset"], leaves["mask"],
                          leaves["bias"], 1, 1, 1, 1, 1, 1, 1, 1, True)
    y.backward(ember.ones_like(y))
    for k, t in leaves.items():
        np.testing.assert_allclose(mine["deform_conv2d.grad." + k], t.grad.numpy(),
                                   rtol=1e-12, atol=1e-12, err_msg=k)
    assert mine["meta_shape"].tolist() == [6, 8, 3, 4]
    assert str(mine["error.boxes_shape"]) == \
        "AssertionError: The boxes tensor shape is not correct as Tensor[K, 5]"
    assert str(mine["error.offset_shape"]).startswith(
        "RuntimeError: the shape of the offset tensor at dimension 1 is not valid.")


if __name__ == "__main__":  # ember's side, under python -m ember.as_torch
    import torch
    directory = sys.argv[1]
    assert torch is sys.modules["ember"], torch
    weights = dict(np.load(os.path.join(directory, "weights.npz")))
    np.savez(os.path.join(directory, "api_ember.npz"), **_api(torch))
    np.savez(os.path.join(directory, "model_ember.npz"), **_model(torch, weights)[1])
    np.savez(os.path.join(directory, "ember_only_ember.npz"), **_ember_only(torch))
