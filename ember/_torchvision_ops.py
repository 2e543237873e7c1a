"""torchvision's operators (``torchvision::nms``, ``roi_align``, ``roi_pool``, ``ps_roi_align``,
``ps_roi_pool``, ``deform_conv2d`` and their backward ops) written with ember's tensor ops.

torchvision's compiled library (torchvision/_C.so) links libtorch and cannot load into ember.
:func:`register` defines what it defines — the operators with torchvision's schemas, a kernel
for each forward and backward op, ``_cuda_version`` — so torchvision's Python finds its ops;
``ember.as_torch`` calls it before torchvision imports. The kernels are CompositeExplicitAutograd:
ember ops, so they run on every ember device. Their arithmetic is that of torchvision's CPU
kernels (torchvision/csrc/ops/cpu/*.cpp): the same sampling points, bin edges, roundings and
edge cases (ps_roi_pool's backward clipping its bins differently from its forward included),
computed for all rois, bins and samples at once with gathers and scatter-adds, in chunks that
bound the rois x bins x samples x channels intermediate. nms sorts as torchvision's CPU kernel
(stable, descending) and decides greedily on host from IoU rows computed on the device.
deform_conv2d's backward is its forward's vector-Jacobian product through ember's autograd.

Meta kernels, autograd formulas (the backward ops, double backward refused) and autocast
wrappers come from torchvision's own Python (``_meta_registrations``, ``_autograd_registrations``)
once it sees its ops loaded; ``register(autograd=True)`` adds the autograd formulas here, for a
torchvision without them in Python and for calling ``ember.ops.torchvision`` without it.

Schemas only (no kernel: calling one raises ember's missing-kernel error): ``qnms`` and
``qroi_align``, for quantized tensors, which torchvision's import-time registrations name.
"""
import numpy as np

import ember

SCHEMAS = {
    "_cuda_version": "() -> int",
    "nms": "(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "qnms": "(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "roi_align": "(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, "
                 "SymInt pooled_width, int sampling_ratio, bool aligned) -> Tensor",
    "_roi_align_backward": "(Tensor grad, Tensor rois, float spatial_scale, SymInt pooled_height, "
                           "SymInt pooled_width, SymInt batch_size, SymInt channels, "
                           "SymInt height, SymInt width, int sampling_ratio, bool aligned) "
                           "-> Tensor",
    "qroi_align": "(Tensor input, Tensor rois, float input_scale, int input_zero_point, "
                  "float rois_scale, int rois_zero_point, float spatial_scale, "
                  "SymInt pooled_height, SymInt pooled_width, int sampling_ratio, bool aligned) "
                  "-> Tensor",
    "roi_pool": "(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, "
                "SymInt pooled_width) -> (Tensor, Tensor)",
    "_roi_pool_backward": "(Tensor grad, Tensor rois, Tensor argmax, float spatial_scale, "
                          "SymInt pooled_height, SymInt pooled_width, SymInt batch_size, "
                          "SymInt channels, SymInt height, SymInt width) -> Tensor",
    "ps_roi_align": "(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, "
                    "SymInt pooled_width, int sampling_ratio) -> (Tensor, Tensor)",
    "_ps_roi_align_backward": "(Tensor grad, Tensor rois, Tensor channel_mapping, "
                              "float spatial_scale, SymInt pooled_height, SymInt pooled_width, "
                              "int sampling_ratio, SymInt batch_size, SymInt channels, "
                              "SymInt height, SymInt width) -> Tensor",
    "ps_roi_pool": "(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, "
                   "SymInt pooled_width) -> (Tensor, Tensor)",
    "_ps_roi_pool_backward": "(Tensor grad, Tensor rois, Tensor channel_mapping, "
                             "float spatial_scale, SymInt pooled_height, SymInt pooled_width, "
                             "SymInt batch_size, SymInt channels, SymInt height, SymInt width) "
                             "-> Tensor",
    "deform_conv2d": "(Tensor input, Tensor weight, Tensor offset, Tensor mask, Tensor bias, "
                     "SymInt stride_h, SymInt stride_w, SymInt pad_h, SymInt pad_w, "
                     "SymInt dilation_h, SymInt dilation_w, SymInt groups, "
                     "SymInt offset_groups, bool use_mask) -> Tensor",
    "_deform_conv2d_backward": "(Tensor grad, Tensor input, Tensor weight, Tensor offset, "
                               "Tensor mask, Tensor bias, SymInt stride_h, SymInt stride_w, "
                               "SymInt pad_h, SymInt pad_w, SymInt dilation_h, "
                               "SymInt dilation_w, SymInt groups, SymInt offset_groups, "
                               "bool use_mask) -> (Tensor, Tensor, Tensor, Tensor, Tensor)",
}

# elements of the largest intermediate (rois x bins x samples x channels, or IoU rows x boxes)
# one chunk may make: 8M floats, 32 MiB
_BUDGET = 1 << 23
_FLT_MAX = float(np.finfo(np.float32).max)


# -- checks, worded as torchvision's kernels word them -------------------------------------------
def _check(cond, msg):
    if not cond:
        raise RuntimeError(msg)


def _type_name(t):
    # at::Tensor::toString(): dispatch key + scalar type + "Type", e.g. CPUFloatType
    scalar = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
              "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char",
              "uint8": "Byte", "bool": "Bool"}.get(t.dtype.name, t.dtype.name)
    return f"{t.device.type.upper()}{scalar}Type"


def _check_same_type(a, b, names, kernel):
    # at::checkAllSameType, as torchvision's kernels call it
    _check(a.dtype == b.dtype,
           f"Expected tensor for argument #1 '{names[0]}' to have the same type as tensor for "
           f"argument #2 '{names[1]}'; but type {_type_name(a)} does not equal {_type_name(b)} "
           f"(while checking arguments for {kernel})")


# the two wordings of the rois' shape check among torchvision's kernels
_ROIS_MUST = "rois must have shape as Tensor[K, 5]"
_ROIS_SHOULD = "Tensor rois should have shape as Tensor[K, 5]"


def _check_kernel(kernel, t, rois, rois_shape=None):
    """A roi kernel's checks of its tensor (``input``, or ``grad`` for a backward kernel) and
    rois, in torchvision's order and words: the rois' shape where the kernel checks it
    (``rois_shape``: its message), one dtype, a floating dtype."""
    if rois_shape is not None:
        _check(rois.size(1) == 5, rois_shape)
    _check_same_type(t, rois, ("grad" if "backward" in kernel else "input", "rois"), kernel)
    _check_floating(t, kernel)


def _check_floating(t, kernel, half=True):
    # AT_DISPATCH_FLOATING_TYPES(_AND_HALF)'s refusal
    ok = (ember.float32, ember.float64) + ((ember.float16,) if half else ())
    if t.dtype not in ok:
        scalar = _type_name(t)[len(t.device.type):-len("Type")]
        raise RuntimeError(f'"{kernel}" not implemented for \'{scalar}\'')


def _round(x):
    # C's round(): halves away from zero (ember.round, as torch.round, rounds them to even)
    r = x.trunc()
    return r + ((x - r).abs() >= 0.5).to(x.dtype) * x.sign()


def _chunks(n, per_item):
    """Ranges over ``n`` items so that one range's intermediate stays under the budget."""
    step = max(1, _BUDGET // max(1, per_item))
    return [(s, min(n, s + step)) for s in range(0, n, step)]


def _rows_channels_last(x):
    """(N, C, H, W) -> (N*H*W + 1, C): one row of channels per pixel, then a zero row that
    padded and out-of-map samples gather from without touching a pixel."""
    n, c, h, w = x.shape
    return ember.cat([x.permute(0, 2, 3, 1).reshape(n * h * w, c), x.new_zeros(1, c)])


# -- nms ------------------------------------------------------------------------------------------
def nms(dets, scores, iou_threshold):
    _check(dets.dim() == 2, f"boxes should be a 2d tensor, got {dets.dim()}D")
    _check(dets.size(1) == 4, f"boxes should have 4 elements in dimension 1, got {dets.size(1)}")
    _check(scores.dim() == 1, f"scores should be a 1d tensor, got {scores.dim()}D")
    _check(dets.size(0) == scores.size(0),
           f"boxes and scores should have same number of elements in dimension 0, got "
           f"{dets.size(0)} and {scores.size(0)}")
    _check(dets.dtype == scores.dtype, "dets should have the same type as scores")
    _check_floating(dets, "nms_kernel", half=dets.device.type != "cpu")
    if dets.numel() == 0:
        return ember.empty(0, dtype=ember.int64, device=dets.device)
    order = scores.sort(stable=True, dim=0, descending=True).indices
    x1, y1, x2, y2 = dets.index_select(0, order).unbind(1)
    areas = (x2 - x1) * (y2 - y1)
    n = order.numel()
    removed = np.zeros(n, dtype=bool)
    keep = []
    # boxes in score order, a block at a time: the IoU of the block's boxes not yet removed with
    # every later box not yet removed (one device computation), then torchvision's greedy loop
    # over those rows on host
    for start, stop in _chunks(n, n):
        alive = np.flatnonzero(~removed[start:]) + start
        rows = alive[alive < stop]
        if rows.size == 0:
            continue
        r, c = (ember.as_tensor(i, device=dets.device) for i in (rows, alive))
        over = _iou_above(x1[r, None], y1[r, None], x2[r, None], y2[r, None], areas[r, None],
                          x1[c], y1[c], x2[c], y2[c], areas[c], iou_threshold).cpu().numpy()
        for i, row in zip(rows.tolist(), over):
            if not removed[i]:
                keep.append(i)
                removed[alive[row]] = True
    return order[ember.as_tensor(keep, dtype=ember.int64, device=dets.device)]


def _iou_above(ax1, ay1, ax2, ay2, aarea, bx1, by1, bx2, by2, barea, threshold):
    """IoU > threshold as nms_kernel.cpp computes it (NaN coordinates aside): the union as
    (area_i + area_j) - inter, the IoU in the boxes' dtype, compared with the threshold in
    double — done in that dtype against the largest value of it not above the threshold,
    which selects the same IoUs without converting them."""
    w = (ember.minimum(ax2, bx2) - ember.maximum(ax1, bx1)).clamp(min=0)
    h = (ember.minimum(ay2, by2) - ember.maximum(ay1, by1)).clamp(min=0)
    inter = w * h
    iou = inter / (aarea + barea - inter)
    return iou > _not_above(threshold, iou.dtype)


def _not_above(value, dtype):
    """The largest number of ``dtype`` not above ``value``: for x of that dtype,
    x > result exactly when x > value."""
    dt = np.dtype(dtype.name)
    v = dt.type(value)
    if float(v) > value:  # (compared as Python floats: NumPy would round value to dtype)
        v = np.nextafter(v, dt.type(-np.inf))
    return float(v)


# -- bilinear sampling (roi_align, ps_roi_align) --------------------------------------------------
def _axis_taps(c, size):
    """One axis of torchvision's bilinear_interpolate for sample coordinates ``c``: the low
    and high pixel, their weights (1 - l, l) and whether the sample lies in [-1, size] (NaN
    does not). Coordinates below 0 are taken as 0; from size - 1 on, both taps are the last
    pixel with all weight on it."""
    valid = (c >= -1) & (c <= size)
    c = ember.where(valid & (c > 0), c, 0)
    low = c.long()
    edge = low >= size - 1
    low = ember.where(edge, size - 1, low)
    high = ember.where(edge, size - 1, low + 1)
    c = ember.where(edge, low.to(c.dtype), c)
    lw = c - low.to(c.dtype)
    return low, high, 1.0 - lw, lw, valid


def _bilinear(y, x, gh, gw, height, width):
    """Pixel indices (y * width + x) and weights of every tap of a grid of samples. ``y``:
    (K, A, GH) sample rows of bins along one axis; ``x``: (K, B, GW). Sample iy of roi k exists
    when iy < gh[k] (likewise ix); the others, and samples outside the map, get weight 0 and
    index -1. Returns (K, A, B, GH*GW*4) indices and weights, taps in torchvision's order."""
    ylo, yhi, yh, yl, yv = _axis_taps(y, height)
    xlo, xhi, xh, xl, xv = _axis_taps(x, width)
    yv = yv & (ember.arange(y.shape[-1], device=y.device) < gh[:, None, None])
    xv = xv & (ember.arange(x.shape[-1], device=x.device) < gw[:, None, None])
    # (K, A, 1, GH, 1, 2, 1) against (K, 1, B, 1, GW, 1, 2)
    yi = ember.stack([ylo, yhi], -1)[:, :, None, :, None, :, None]
    xi = ember.stack([xlo, xhi], -1)[:, None, :, None, :, None, :]
    yw = ember.stack([yh, yl], -1)[:, :, None, :, None, :, None]
    xw = ember.stack([xh, xl], -1)[:, None, :, None, :, None, :]
    ok = yv[:, :, None, :, None, None, None] & xv[:, None, :, None, :, None, None]
    k, a, b = y.shape[0], y.shape[1], x.shape[1]
    idx = ember.where(ok, yi * width + xi, -1).reshape(k, a, b, -1)
    w = ember.where(ok, yw * xw, 0).reshape(k, a, b, -1)
    return idx, w


def _align_grid(rois, spatial_scale, ph, pw, sampling_ratio, offset, min_size):
    """roi_align's (and ps_roi_align's) sampling grid: batch index, sample coordinates
    (K, PH, GH) and (K, PW, GW), grid sizes per roi, in the kernels' arithmetic and order."""
    batch = rois[:, 0].long()
    x1, y1, x2, y2 = (rois[:, i] * spatial_scale - offset for i in range(1, 5))
    rw, rh = x2 - x1, y2 - y1
    if min_size:  # legacy (not aligned) roi_align: malformed rois become 1x1
        rw, rh = rw.clamp(min=1.0), rh.clamp(min=1.0)
    bin_h, bin_w = rh / ph, rw / pw
    if sampling_ratio > 0:
        gh = gw = ember.full_like(batch, sampling_ratio)
    else:  # ceil(roi_height / pooled_height), an int in C: NaN and inf sample nothing
        gh = ember.nan_to_num(bin_h.ceil(), nan=0.0, posinf=0.0, neginf=0.0).long()
        gw = ember.nan_to_num(bin_w.ceil(), nan=0.0, posinf=0.0, neginf=0.0).long()

    def coords(start, size, bins, grid):
        n = max(int(grid.max()), 1) if grid.numel() else 1
        p = ember.arange(bins, dtype=rois.dtype, device=rois.device)
        i = ember.arange(n, dtype=rois.dtype, device=rois.device) + 0.5
        g = grid.to(rois.dtype)[:, None, None]
        return (start[:, None, None] + p[:, None] * size[:, None, None]) \
            + i * size[:, None, None] / g
    return batch, coords(y1, bin_h, ph, gh), coords(x1, bin_w, pw, gw), gh, gw


def roi_align(input, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio,
              aligned):
    _check_kernel("roi_align_forward_kernel", input, rois, _ROIS_MUST)
    k, (n, c, h, w) = rois.size(0), input.shape
    ph, pw = pooled_height, pooled_width
    out = input.new_zeros(k, c, ph, pw)
    if out.numel() == 0:
        return out
    rows = _rows_channels_last(input)
    for s, e in _chunks(k, ph * pw * c * 4 * _max_grid(rois, sampling_ratio, ph, pw)):
        batch, y, x, gh, gw = _align_grid(rois[s:e], spatial_scale, ph, pw, sampling_ratio,
                                          0.5 if aligned else 0.0, not aligned)
        idx, wts = _bilinear(y, x, gh, gw, h, w)
        idx = ember.where(idx >= 0, idx + (batch * h * w)[:, None, None, None], n * h * w)
        taps = rows.index_select(0, idx.reshape(-1)).reshape(*idx.shape, c)
        count = (gh * gw).clamp(min=1).to(input.dtype)[:, None, None, None]
        val = (wts[..., None, :] @ taps)[..., 0, :] / count  # (k, PH, PW, C)
        out[s:e] = val.permute(0, 3, 1, 2)
    return out


def _max_grid(rois, sampling_ratio, ph, pw):
    """The largest number of samples per bin over ``rois`` (sizes the chunks)."""
    if sampling_ratio > 0 or rois.numel() == 0:
        return max(sampling_ratio, 1) ** 2
    rh = (rois[:, 4] - rois[:, 2]).abs().max() / ph + 2
    rw = (rois[:, 3] - rois[:, 1]).abs().max() / pw + 2
    return max(1, int(ember.nan_to_num(rh * rw, posinf=1.0)))


def _roi_align_backward(grad, rois, spatial_scale, pooled_height, pooled_width, batch_size,
                        channels, height, width, sampling_ratio, aligned):
    _check_kernel("roi_align_backward_kernel", grad, rois)
    n, c, h, w = batch_size, channels, height, width
    ph, pw = pooled_height, pooled_width
    rows = grad.new_zeros(n * h * w, c)
    if grad.numel():
        g = grad.permute(0, 2, 3, 1)  # (K, PH, PW, C)
        for s, e in _chunks(rois.size(0), ph * pw * c * 4 *
                            _max_grid(rois, sampling_ratio, ph, pw)):
            batch, y, x, gh, gw = _align_grid(rois[s:e], spatial_scale, ph, pw,
                                              sampling_ratio, 0.5 if aligned else 0.0,
                                              not aligned)
            idx, wts = _bilinear(y, x, gh, gw, h, w)
            idx = ember.where(idx >= 0, idx + (batch * h * w)[:, None, None, None], -1)
            count = (gh * gw).clamp(min=1).to(grad.dtype)[:, None, None, None]
            # (k, PH, PW, S, C): each tap's share of its bin's gradient, an outer product
            contrib = (wts / count)[..., None] @ g[s:e, :, :, None, :]
            _add_rows(rows, idx.reshape(-1), contrib.reshape(-1, c))
    return rows.reshape(n, h, w, c).permute(0, 3, 1, 2).contiguous()


def _add_rows(dest, idx, src):
    """``dest.index_add_(0, idx, src)`` for the rows whose index is not -1 (taps outside the
    map or the roi's grid)."""
    keep = (idx >= 0).nonzero()[:, 0]
    if keep.numel():
        dest.index_add_(0, idx[keep], src[keep])


# -- ps_roi_align ---------------------------------------------------------------------------------
def _ps_channels(k, c_out, ph, pw, device):
    """Position-sensitive channel of each output element: c_in = (c_out * PH + ph) * PW + pw."""
    c_in = ember.arange(c_out * ph * pw, dtype=ember.int32, device=device)
    return c_in.reshape(1, c_out, ph, pw).expand(k, c_out, ph, pw).contiguous()


def _ps_forward_start(name, input, rois, ph, pw):
    """The position-sensitive forwards' checks, then (rois, input's shape, output channels,
    the zero output, the channel mapping)."""
    _check_kernel(f"{name}_forward_kernel", input, rois, _ROIS_SHOULD)
    k, c = rois.size(0), input.shape[1]
    _check(c % (ph * pw) == 0,
           "input channels must be a multiple of pooling height * pooling width")
    c_out = c // (ph * pw)
    return (k, input.shape, c_out, input.new_zeros(k, c_out, ph, pw),
            _ps_channels(k, c_out, ph, pw, input.device))


def ps_roi_align(input, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio):
    ph, pw = pooled_height, pooled_width
    k, (n, c, h, w), c_out, out, mapping = _ps_forward_start("ps_roi_align", input, rois, ph, pw)
    if out.numel() == 0:
        return out, mapping
    flat = ember.cat([input.reshape(-1), input.new_zeros(1)])
    for s, e in _chunks(k, c * 4 * _max_grid(rois, sampling_ratio, ph, pw)):
        batch, y, x, gh, gw = _align_grid(rois[s:e], spatial_scale, ph, pw, sampling_ratio,
                                          0.5, False)
        idx, wts = _bilinear(y, x, gh, gw, h, w)  # (k, PH, PW, S)
        base = ((batch[:, None] * c + mapping[s:e].reshape(e - s, -1)) * (h * w))
        base = base.reshape(e - s, c_out, ph, pw, 1)
        idx = ember.where(idx[:, None] >= 0, idx[:, None] + base, n * c * h * w)
        taps = flat[idx]  # (k, C_out, PH, PW, S)
        # count = grid_h * grid_w, not clamped: an empty grid gives 0 / 0 as in the kernel
        count = (gh * gw).to(input.dtype)[:, None, None, None]
        out[s:e] = (taps[..., None, :] @ wts[:, None, ..., None])[..., 0, 0] / count
    return out, mapping


def _ps_roi_align_backward(grad, rois, channel_mapping, spatial_scale, pooled_height,
                           pooled_width, sampling_ratio, batch_size, channels, height, width):
    _check_kernel("ps_roi_align_backward_kernel", grad, rois)
    n, c, h, w = batch_size, channels, height, width
    ph, pw = pooled_height, pooled_width
    flat = grad.new_zeros(n * c * h * w + 1)
    if grad.numel():
        k, c_out = grad.shape[:2]
        for s, e in _chunks(k, c * 4 * _max_grid(rois, sampling_ratio, ph, pw)):
            batch, y, x, gh, gw = _align_grid(rois[s:e], spatial_scale, ph, pw,
                                              sampling_ratio, 0.5, False)
            idx, wts = _bilinear(y, x, gh, gw, h, w)
            base = (batch[:, None, None, None] * c + channel_mapping[s:e].long()) * (h * w)
            idx = ember.where(idx[:, None] >= 0, idx[:, None] + base[..., None], n * c * h * w)
            # (no sample of an empty grid reaches the scatter: its count is never divided by)
            count = (gh * gw).clamp(min=1).to(grad.dtype)[:, None, None, None]
            contrib = grad[s:e, ..., None, None] @ (wts / count)[:, None, ..., None, :]
            flat.index_add_(0, idx.reshape(-1), contrib.reshape(-1))
    return flat[:-1].reshape(n, c, h, w)


# -- roi_pool, ps_roi_pool: integer bins ----------------------------------------------------------
def _pool_bins(rois, spatial_scale, ph, pw, height, width, extra, clip_h, clip_w,
               roundf=False):
    """The integer bins of roi_pool / ps_roi_pool: batch index, then per axis the first pixel
    and the end of each bin, clipped to [0, clip]. ``extra``: 1 for roi_pool, whose roi
    width is end - start + 1, 0 for ps_roi_pool; ``roundf``: the scaled corners are rounded
    as floats (ps_roi_pool's backward)."""
    batch = rois[:, 0].long()
    corners = [rois[:, i] * spatial_scale for i in range(1, 5)]
    x1, y1, x2, y2 = (_round(v.float() if roundf else v).long() for v in corners)

    def axis(start, end, bins, clip):
        size = (end - start + extra).clamp(min=1).to(rois.dtype)
        bin_size = size / bins
        p = ember.arange(bins, dtype=rois.dtype, device=rois.device)
        lo = (p * bin_size[:, None]).floor().long() + start[:, None]
        hi = ((p + 1) * bin_size[:, None]).ceil().long() + start[:, None]
        return lo.clamp(0, clip), hi.clamp(0, clip)
    ys, ye = axis(y1, y2, ph, clip_h)
    xs, xe = axis(x1, x2, pw, clip_w)
    return batch, ys, ye, xs, xe


def _bin_pixels(ys, ye, xs, xe, width):
    """Every pixel of every bin, padded to the largest bin: (K, PH, PW, BH*BW) indices
    y * width + x and whether the pixel is in its bin, in row-major order within a bin."""
    bh = max(int((ye - ys).max()), 1) if ys.numel() else 1
    bw = max(int((xe - xs).max()), 1) if xs.numel() else 1
    yy = ys[..., None] + ember.arange(bh, device=ys.device)  # (K, PH, BH)
    xx = xs[..., None] + ember.arange(bw, device=xs.device)  # (K, PW, BW)
    inside = (yy < ye[..., None])[:, :, None, :, None] & (xx < xe[..., None])[:, None, :, None, :]
    idx = yy[:, :, None, :, None] * width + xx[:, None, :, None, :]
    k, ph, pw = ys.shape[0], ys.shape[1], xs.shape[1]
    return idx.reshape(k, ph, pw, -1), inside.reshape(k, ph, pw, -1)


def roi_pool(input, rois, spatial_scale, pooled_height, pooled_width):
    _check_kernel("roi_pool_forward_kernel", input, rois, _ROIS_MUST)
    k, (n, c, h, w) = rois.size(0), input.shape
    ph, pw = pooled_height, pooled_width
    out = input.new_zeros(k, c, ph, pw)
    argmax = ember.zeros(k, c, ph, pw, dtype=ember.int32, device=input.device)
    if out.numel() == 0:
        return out, argmax
    rows = _rows_channels_last(input)
    batch, ys, ye, xs, xe = _pool_bins(rois, spatial_scale, ph, pw, h, w, 1, h, w)
    for s, e in _chunks(k, ph * pw * c * int(((ye - ys).max() + 1) * ((xe - xs).max() + 1))):
        idx, inside = _bin_pixels(ys[s:e], ye[s:e], xs[s:e], xe[s:e], w)
        at = ember.where(inside, idx + (batch[s:e] * h * w)[:, None, None, None], n * h * w)
        vals = rows.index_select(0, at.reshape(-1)).reshape(*at.shape, c)  # (k, PH, PW, P, C)
        # the kernel starts from -FLT_MAX (0 for an empty bin) and takes a pixel only when
        # strictly greater, so the first maximum wins and NaN, -inf and -FLT_MAX never do
        taken = inside[..., None] & (vals > -_FLT_MAX)
        best, pos = ember.where(taken, vals, float("-inf")).max(3)
        hit = taken.any(3)
        empty = ~inside.any(3)[..., None]
        best = ember.where(hit, best, ember.where(empty, 0.0, -_FLT_MAX).to(input.dtype))
        arg = ember.where(hit, idx.gather(3, pos), -1)  # (the bin's pixel -> the map's)
        out[s:e] = best.permute(0, 3, 1, 2)
        argmax[s:e] = arg.permute(0, 3, 1, 2).to(ember.int32)
    return out, argmax


def _roi_pool_backward(grad, rois, argmax, spatial_scale, pooled_height, pooled_width,
                       batch_size, channels, height, width):
    _check_kernel("roi_pool_backward_kernel", grad, rois, _ROIS_SHOULD)
    n, c, h, w = batch_size, channels, height, width
    flat = grad.new_zeros(n * c * h * w + 1)
    if grad.numel():
        plane = (rois[:, 0].long()[:, None] * c + ember.arange(c, device=grad.device)) * (h * w)
        am = argmax.long()
        at = ember.where(am >= 0, am + plane[:, :, None, None], n * c * h * w)
        flat.index_add_(0, at.reshape(-1), grad.reshape(-1))
    return flat[:-1].reshape(n, c, h, w)


def ps_roi_pool(input, rois, spatial_scale, pooled_height, pooled_width):
    ph, pw = pooled_height, pooled_width
    k, (n, c, h, w), c_out, out, mapping = _ps_forward_start("ps_roi_pool", input, rois, ph, pw)
    if out.numel() == 0:
        return out, mapping
    # the forward kernel clips bins to [0, H - 1] (its backward to [0, H]: kept as written)
    batch, ys, ye, xs, xe = _pool_bins(rois, spatial_scale, ph, pw, h, w, 0, h - 1, w - 1)
    flat = ember.cat([input.reshape(-1), input.new_zeros(1)])
    for s, e in _chunks(k, c * int(((ye - ys).max() + 1) * ((xe - xs).max() + 1))):
        idx, inside = _bin_pixels(ys[s:e], ye[s:e], xs[s:e], xe[s:e], w)  # (k, PH, PW, P)
        base = (batch[s:e, None, None, None] * c + mapping[s:e].long()) * (h * w)
        at = ember.where(inside[:, None], idx[:, None] + base[..., None], n * c * h * w)
        total = flat[at].sum(-1)  # (k, C_out, PH, PW)
        area = ((ye[s:e] - ys[s:e])[:, :, None] * (xe[s:e] - xs[s:e])[:, None, :])
        empty = (area <= 0)[:, None]
        area = area.to(input.dtype)[:, None]
        out[s:e] = ember.where(empty, 0.0, total / ember.where(empty, 1.0, area))
    return out, mapping


def _ps_roi_pool_backward(grad, rois, channel_mapping, spatial_scale, pooled_height,
                          pooled_width, batch_size, channels, height, width):
    _check_kernel("ps_roi_pool_backward_kernel", grad, rois)
    n, c, h, w = batch_size, channels, height, width
    ph, pw = pooled_height, pooled_width
    flat = grad.new_zeros(n * c * h * w + 1)
    if grad.numel():
        k = rois.size(0)
        batch, ys, ye, xs, xe = _pool_bins(rois, spatial_scale, ph, pw, h, w, 0, h, w, True)
        for s, e in _chunks(k, c * int(((ye - ys).max() + 1) * ((xe - xs).max() + 1))):
            idx, inside = _bin_pixels(ys[s:e], ye[s:e], xs[s:e], xe[s:e], w)
            base = (batch[s:e, None, None, None] * c + channel_mapping[s:e].long()) * (h * w)
            at = ember.where(inside[:, None], idx[:, None] + base[..., None], n * c * h * w)
            area = ((ye[s:e] - ys[s:e])[:, :, None] * (xe[s:e] - xs[s:e])[:, None, :])
            empty = (area <= 0)[:, None]
            area = area.to(grad.dtype)[:, None]
            diff = ember.where(empty, 0.0, grad[s:e] / ember.where(empty, 1.0, area))
            flat.index_add_(0, at.reshape(-1), diff[..., None].expand(at.shape).reshape(-1))
    return flat[:-1].reshape(n, c, h, w)


# -- deform_conv2d ---------------------------------------------------------------------------------
def _generic(cond, text):
    # TORCH_CHECK without a message
    _check(cond, f"Expected {text} to be true, but got false.  (Could this error message be "
                 f"improved?  If so, please report an enhancement request to PyTorch.)")


def _trunc_div(a, b):
    return -(-a // b) if a < 0 else a // b  # C's integer division


def deform_conv2d(input, weight, offset, mask, bias, stride_h, stride_w, pad_h, pad_w,
                  dilation_h, dilation_w, groups, offset_groups, use_mask):
    """Deformable convolution as deform_conv2d_kernel.cpp: each kernel tap of each output
    position samples the input at its place plus its learned offset (bilinear, corners off
    the map reading 0, samples beyond (-1, size) reading 0), times the tap's mask; the
    columns then meet the weights in one product per weight group."""
    _generic(input.dim() == 4, "input_c.ndimension() == 4")
    _generic(offset.dim() == 4, "offset_c.ndimension() == 4")
    _generic(not use_mask or mask.dim() == 4, "!use_mask || mask_c.ndimension() == 4")
    _generic(weight.dim() == 4, "weight_c.ndimension() == 4")
    _check_floating(input, "deform_conv2d")
    b, c, h, w = input.shape
    oc, cw, kh, kw = weight.shape
    out_h = _trunc_div(h + 2 * pad_h - (dilation_h * (kh - 1) + 1), stride_h) + 1
    out_w = _trunc_div(w + 2 * pad_w - (dilation_w * (kw - 1) + 1), stride_w) + 1
    _check(kh > 0 and kw > 0, f"weight_h: {kh} weight_w: {kw}")
    _check(stride_h > 0 and stride_w > 0, f"stride_h: {stride_h} stride_w: {stride_w}")
    _check(pad_h >= 0 and pad_w >= 0, f"pad_h: {pad_h} pad_w: {pad_w}")
    _check(dilation_h > 0 and dilation_w > 0,
           f"dilation_h: {dilation_h} dilation_w: {dilation_w}")
    _generic(cw * groups == c, "weight_c.size(1) * n_weight_grps == input_c.size(1)")
    _generic(oc % groups == 0, "weight_c.size(0) % n_weight_grps == 0")
    _check(offset.size(1) == offset_groups * 2 * kh * kw,
           f"offset.shape[1] is not valid: got: {offset.size(1)} expected: "
           f"{offset_groups * 2 * kh * kw}")
    if use_mask:
        _check(mask.size(1) == offset_groups * kh * kw,
               f"mask.shape[1] is not valid: got: {mask.size(1)} expected: "
               f"{offset_groups * kh * kw}")
    _generic(c % offset_groups == 0, "input_c.size(1) % n_offset_grps == 0")
    _check(offset.size(0) == b, "invalid batch size of offset")
    _check(offset.size(2) == out_h and offset.size(3) == out_w,
           f"offset output dims: ({offset.size(2)}, {offset.size(3)}) - computed output dims: "
           f"({out_h}, {out_w})")
    _check(mask.size(0) == b, "invalid batch size of mask")
    if use_mask:
        _check(mask.size(2) == out_h and mask.size(3) == out_w,
               f"mask output dims: ({mask.size(2)}, {mask.size(3)}) - computed output dims: "
               f"({out_h}, {out_w})")
    _check(out_h > 0 and out_w > 0,
           f"Calculated output size too small - out_h: {out_h} out_w: {out_w}")
    k, p, g = kh * kw, out_h * out_w, offset_groups
    dev = input.device
    # tap (i, j) of output (oy, ox) sits at (oy * stride - pad + i * dilation) + offset
    oy = ember.arange(out_h, device=dev) * stride_h - pad_h
    ox = ember.arange(out_w, device=dev) * stride_w - pad_w
    iy = ember.arange(kh, device=dev) * dilation_h
    ix = ember.arange(kw, device=dev) * dilation_w
    base_y = (iy[:, None, None, None] + oy[None, None, :, None]).expand(kh, kw, out_h, out_w)
    base_x = (ix[None, :, None, None] + ox[None, None, None, :]).expand(kh, kw, out_h, out_w)
    off = offset.reshape(b, g, k, 2, p)
    y = base_y.reshape(k, p).to(input.dtype) + off[:, :, :, 0]  # (B, G, K, P)
    x = base_x.reshape(k, p).to(input.dtype) + off[:, :, :, 1]
    rows = ember.cat([input.reshape(b, g, c // g, h * w), input.new_zeros(b, g, c // g, 1)], -1)
    weights = weight.reshape(groups, oc // groups, cw * k)
    out = []
    for s, e in _chunks(p, c * k * 4):
        idx, wts = _deform_taps(y[..., s:e], x[..., s:e], h, w)  # (B, G, K, Pc, 4)
        taps = rows.gather(3, idx.reshape(b, g, 1, -1).expand(b, g, c // g, idx[0, 0].numel()))
        taps = taps.reshape(b, g, c // g, k, e - s, 1, 4)
        cols = (taps @ wts[:, :, None, ..., None])[..., 0, 0]  # (B, G, C/G, K, Pc)
        if use_mask:
            cols = cols * mask.reshape(b, g, 1, k, p)[..., s:e]
        out.append(weights @ cols.reshape(b, groups, cw * k, e - s))
    out = ember.cat(out, -1).reshape(b, oc, out_h, out_w)
    return out + bias.reshape(1, oc, 1, 1)


def _deform_taps(y, x, height, width):
    """deform_conv2d's bilinear_interpolate at (y, x): the four corners' pixel indices and
    weights, a corner off the map (or any, for a sample outside (-1, size)) reading the zero
    column at index height * width. Differentiable in y and x."""
    inside = (y > -1) & (y < height) & (x > -1) & (x < width)  # (NaN: outside)
    y, x = ember.where(inside, y, 0), ember.where(inside, x, 0)
    y0, x0 = y.detach().floor(), x.detach().floor()
    ly, lx = y - y0, x - x0
    inside = inside.to(y.dtype)
    hy, hx = 1 - ly, 1 - lx
    y0, x0 = y0.long(), x0.long()
    idx, wts = [], []
    for yc, xc, wt in ((y0, x0, hy * hx), (y0, x0 + 1, hy * lx), (y0 + 1, x0, ly * hx),
                       (y0 + 1, x0 + 1, ly * lx)):
        ok = (yc >= 0) & (yc < height) & (xc >= 0) & (xc < width)
        idx.append(ember.where(ok, yc * width + xc, height * width))
        wts.append(wt * inside)
    return ember.stack(idx, -1), ember.stack(wts, -1)


def _deform_conv2d_backward(grad, input, weight, offset, mask, bias, *args):
    """The forward's vector-Jacobian product through ember's autograd: the gradients of
    deform_conv2d_kernel.cpp's backward (col2im, coordinate weights, mask, weight, bias)
    are those of the sampling above, boundaries aside (a sample exactly at -1 reads 0 here
    and in the forward, while the kernel's offset gradient there uses the corner inside)."""
    leaves = [t.detach().requires_grad_() for t in (input, weight, offset, mask, bias)]
    with ember.enable_grad():
        out = deform_conv2d(*leaves, *args)
    grads = ember.autograd.grad(out, leaves, grad, allow_unused=True)
    return tuple(ember.zeros_like(t) if gr is None else gr for gr, t in zip(grads, leaves))


def _cuda_version():
    return -1  # no CUDA build: torchvision's CUDA version check is skipped, as on CPU wheels


# -- autograd, as torchvision/_autograd_registrations.py gives it ---------------------------------
def _saving(*names):
    def setup(ctx, inputs, output):
        args = dict(zip(("input", "rois") + names, inputs))
        ctx.input_shape = tuple(args["input"].shape)
        ctx.args = {k: args[k] for k in names}
        saved = [inputs[1]]
        if isinstance(output, (tuple, list)):
            saved.append(output[1])  # argmax / channel_mapping
        ctx.save_for_backward(*saved)
    return setup


def _backward_of(op, order):
    def backward(ctx, grad, *_):
        saved = ctx.saved_tensors
        b, c, h, w = ctx.input_shape
        shape = dict(batch_size=b, channels=c, height=h, width=w)
        values = {**ctx.args, **shape}
        g = getattr(ember.ops.torchvision, op)(grad, *saved, *(values[k] for k in order))
        return (g,) + (None,) * (len(ctx.args) + 1)
    return backward


def _deform_setup(ctx, inputs, output):
    ctx.save_for_backward(*inputs[:5])
    ctx.args = inputs[5:]


def _deform_backward(ctx, grad):
    grads = ember.ops.torchvision._deform_conv2d_backward(grad, *ctx.saved_tensors, *ctx.args)
    return tuple(grads) + (None,) * len(ctx.args)


def _no_double_backward(name):
    def backward(ctx, *grads):
        raise RuntimeError(f"double backwards on {name} not supported")
    return backward


_AUTOGRAD = {
    "roi_align": (("spatial_scale", "pooled_height", "pooled_width", "sampling_ratio",
                   "aligned"),
                  "_roi_align_backward",
                  ("spatial_scale", "pooled_height", "pooled_width", "batch_size", "channels",
                   "height", "width", "sampling_ratio", "aligned")),
    "roi_pool": (("spatial_scale", "pooled_height", "pooled_width"), "_roi_pool_backward",
                 ("spatial_scale", "pooled_height", "pooled_width", "batch_size", "channels",
                  "height", "width")),
    "ps_roi_align": (("spatial_scale", "pooled_height", "pooled_width", "sampling_ratio"),
                     "_ps_roi_align_backward",
                     ("spatial_scale", "pooled_height", "pooled_width", "sampling_ratio",
                      "batch_size", "channels", "height", "width")),
    "ps_roi_pool": (("spatial_scale", "pooled_height", "pooled_width"), "_ps_roi_pool_backward",
                    ("spatial_scale", "pooled_height", "pooled_width", "batch_size", "channels",
                     "height", "width")),
}

KERNELS = {
    "_cuda_version": _cuda_version, "nms": nms,
    "roi_align": roi_align, "_roi_align_backward": _roi_align_backward,
    "roi_pool": roi_pool, "_roi_pool_backward": _roi_pool_backward,
    "ps_roi_align": ps_roi_align, "_ps_roi_align_backward": _ps_roi_align_backward,
    "ps_roi_pool": ps_roi_pool, "_ps_roi_pool_backward": _ps_roi_pool_backward,
    "deform_conv2d": deform_conv2d, "_deform_conv2d_backward": _deform_conv2d_backward,
}


def register(autograd=False):
    """Define torchvision's operators in ember with the kernels above; ``autograd=True`` also
    gives the forward ops torchvision's autograd formulas. Returns the Library holding every
    registration (``_destroy()`` removes them)."""
    from .library import Library, register_autograd
    lib = Library("torchvision", "FRAGMENT")
    for name, schema in SCHEMAS.items():
        lib.define(name + schema)
        if name in KERNELS:
            lib.impl(name, KERNELS[name], "CompositeExplicitAutograd")
    if autograd:
        for op, (args, backward_op, order) in _AUTOGRAD.items():
            register_autograd(f"torchvision::{op}", _backward_of(backward_op, order),
                              setup_context=_saving(*args), lib=lib)
            register_autograd(f"torchvision::{backward_op}", _no_double_backward(op), lib=lib)
        register_autograd("torchvision::deform_conv2d", _deform_backward,
                          setup_context=_deform_setup, lib=lib)
        register_autograd("torchvision::_deform_conv2d_backward",
                          _no_double_backward("deform_conv2d"), lib=lib)
    return lib
