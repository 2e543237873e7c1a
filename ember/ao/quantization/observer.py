"""``torch.ao.quantization.observer``: modules that watch the tensors passing through them and
turn what they saw into quantization parameters (per-tensor or per-channel scale and zero point,
in PyTorch's float32 tensor arithmetic): ``MinMaxObserver`` and ``PerChannelMinMaxObserver``
(running extremes), their moving-average variants (what quantization-aware training's fake
quantizers use), ``HistogramObserver`` (a running histogram, and the range of least L2
quantization error: post-training quantization's default), ``FixedQParamsObserver`` (fixed
parameters), ``PlaceholderObserver`` (no statistics: a dynamically quantized activation's
parameters are chosen at each call), ``RecordingObserver`` (keeps what passes, for debugging)
and ``ReuseInputObserver``, with ``with_args`` factories and the default observers PyTorch's
default qconfigs name."""
import warnings
from functools import partial

from ... import nn
import ember

__all__ = ["ObserverBase", "UniformQuantizationObserverBase", "MinMaxObserver",
           "MovingAverageMinMaxObserver", "PerChannelMinMaxObserver",
           "MovingAveragePerChannelMinMaxObserver", "HistogramObserver", "FixedQParamsObserver",
           "PlaceholderObserver", "RecordingObserver", "NoopObserver", "ReuseInputObserver",
           "default_observer", "default_weight_observer", "default_histogram_observer",
           "default_per_channel_weight_observer", "default_dynamic_quant_observer",
           "default_placeholder_observer", "default_debug_observer",
           "default_float_qparams_observer", "default_float_qparams_observer_4bit",
           "default_reuse_input_observer", "weight_observer_range_neg_127_to_127",
           "per_channel_weight_observer_range_neg_127_to_127",
           "default_fixed_qparams_range_neg1to1_observer",
           "default_fixed_qparams_range_0to1_observer", "default_symmetric_fixed_qparams_observer",
           "default_affine_fixed_qparams_observer", "get_observer_state_dict",
           "load_observer_state_dict"]


class _PartialWrapper:
    """An observer class with some arguments bound (``MinMaxObserver.with_args(...)``), and
    some computed anew for each observer (``with_callable_args``); calling it makes an
    observer."""

    def __init__(self, p):
        self.p = p
        self.callable_args = {}

    def __call__(self, *args, **keywords):
        # an argument given in the call overrides a callable one
        for arg_name in self.callable_args:
            if arg_name not in keywords:
                keywords = {**keywords, arg_name: self.callable_args[arg_name]()}
        return self.p(*args, **keywords)

    def __repr__(self):
        return self.p.__repr__() + self.callable_args.__repr__()

    def with_args(self, **kwargs):
        return _with_args(self, **kwargs)

    def with_callable_args(self, **kwargs):
        result = _PartialWrapper(p=self.p)
        result.callable_args = {**self.callable_args, **kwargs}
        return result


def _with_args(cls_or_self, **kwargs):
    return _PartialWrapper(partial(cls_or_self, **kwargs))


def _with_callable_args(cls_or_self, **kwargs):
    return _PartialWrapper(partial(cls_or_self)).with_callable_args(**kwargs)


class ObserverBase(nn.Module):
    """An observer: ``forward`` records statistics of what passes, ``calculate_qparams`` turns
    them into quantization parameters."""

    def __init__(self, dtype, is_dynamic=False):
        super().__init__()
        self.dtype = dtype
        self.is_dynamic = is_dynamic

    def forward(self, x):
        raise NotImplementedError

    def calculate_qparams(self, **kwargs):
        raise NotImplementedError

    with_args = classmethod(_with_args)
    with_callable_args = classmethod(_with_callable_args)


_PER_TENSOR = (ember.per_tensor_affine, ember.per_tensor_symmetric)
_PER_CHANNEL = (ember.per_channel_affine, ember.per_channel_symmetric,
                ember.per_channel_affine_float_qparams)


def _qmin_qmax(quant_min, quant_max, has_customized_qrange, dtype, reduce_range):
    """PyTorch's ``calculate_qmin_qmax``: a customized range (checked against the dtype's
    width, halved by ``reduce_range``) or the dtype's."""
    if has_customized_qrange:
        qrange_len = quant_max - quant_min + 1
        if dtype in (ember.qint8, ember.int8) and not 0 < qrange_len <= 256:
            raise AssertionError("quantization range should be positive and not exceed the "
                                 "maximum bit range (=256).")
        if dtype in (ember.qint32, ember.int32) and not 0 < qrange_len <= 2 ** 32:
            raise AssertionError("quantization range should be positive and not exceed the "
                                 "maximum bit range (=4294967296).")
        if reduce_range:
            quant_min, quant_max = quant_min // 2, quant_max // 2
        return quant_min, quant_max
    if dtype in (ember.qint8, ember.int8):
        return (-64, 63) if reduce_range else (-128, 127)
    if dtype in (ember.quint8, ember.uint8):
        return (0, 127) if reduce_range else (0, 255)
    if dtype in (ember.qint32, ember.int32):
        return -2 ** 31, 2 ** 31 - 1
    if dtype is ember.uint16:
        return 0, 2 ** 16 - 1
    if dtype is ember.int16:
        return -2 ** 15, 2 ** 15 - 1
    return 0, 15


def _min_max_valid(min_val, max_val):
    """PyTorch's ``check_min_max_valid``: False (with its warning) before any observation."""
    if min_val.numel() == 0 or max_val.numel() == 0:
        warnings.warn("must run observer before calling calculate_qparams. Returning default "
                      "values.", stacklevel=3)
        return False
    if min_val.dim() == 0 or max_val.dim() == 0:
        if min_val == float("inf") and max_val == float("-inf"):
            warnings.warn("must run observer before calling calculate_qparams. Returning "
                          "default values.", stacklevel=3)
            return False
        if min_val > max_val:
            raise AssertionError(f"min {min_val} should be less than max {max_val}")
    elif bool(ember.any(min_val > max_val)):
        raise AssertionError(f"min {min_val} should be less than max {max_val}")
    return True


class UniformQuantizationObserverBase(ObserverBase):
    """An observer whose parameters are a uniform (affine or symmetric) quantization's: the
    range checks and ``_calculate_qparams``, per tensor or per channel."""

    _version = 3

    def __init__(self, dtype=ember.quint8, qscheme=ember.per_tensor_affine, reduce_range=False,
                 quant_min=None, quant_max=None, factory_kwargs=None,
                 eps=ember.finfo(ember.float32).eps, is_dynamic=False, **kwargs):
        factory_kwargs = factory_kwargs or {}
        super().__init__(dtype=dtype, is_dynamic=is_dynamic, **kwargs)
        self.qscheme = qscheme
        if reduce_range:
            warnings.warn("Please use quant_min and quant_max to specify the range for "
                          "observers.                     reduce_range will be deprecated in a "
                          "future release of PyTorch.", stacklevel=2)
        self.reduce_range = reduce_range
        self.register_buffer("eps", ember.tensor([eps], **factory_kwargs))
        if qscheme not in _PER_TENSOR + _PER_CHANNEL:
            raise AssertionError("Default Observer only works for per_tensor_affine, "
                                 "per_tensor_symmetric, per_channel_affine, "
                                 "per_channel_symmetric and per_channel_float_qparams "
                                 "quantization scheme")
        self.has_customized_qrange = quant_min is not None and quant_max is not None
        if self.has_customized_qrange:
            self._validate_qmin_qmax(quant_min, quant_max)
        self.quant_min, self.quant_max = _qmin_qmax(quant_min, quant_max,
                                                    self.has_customized_qrange, dtype,
                                                    reduce_range)

    def _validate_qmin_qmax(self, quant_min, quant_max):
        if not quant_min <= 0 <= quant_max:
            raise AssertionError("Used-specified quantization range must include 0.")
        if quant_min >= quant_max:
            raise AssertionError("qmin must be strictly less than qmax for user-specified "
                                 "quantization range.")

    def _calculate_qparams(self, min_val, max_val):
        """Scales (float32) and zero points (int64) covering each [min, max] and 0."""
        if not _min_max_valid(min_val, max_val):
            return ember.tensor([1.0]), ember.tensor([0])
        quant_min, quant_max = self.quant_min, self.quant_max
        min_neg = ember.min(min_val, ember.zeros_like(min_val))
        max_pos = ember.max(max_val, ember.zeros_like(max_val))
        zero_point = ember.zeros(min_neg.size(), dtype=ember.int64)
        if self.qscheme in (ember.per_tensor_symmetric, ember.per_channel_symmetric):
            max_pos = ember.max(-min_neg, max_pos)
            scale = ember.max(max_pos / (float(quant_max - quant_min) / 2), self.eps)
            if self.dtype in (ember.quint8, ember.uint8):
                middle = (quant_min + quant_max) // 2 if self.has_customized_qrange else 128
                zero_point = zero_point.new_full(zero_point.size(), middle)
            elif self.dtype is ember.uint16:
                zero_point = zero_point.new_full(zero_point.size(), 2 ** 15)
        elif self.qscheme is ember.per_channel_affine_float_qparams:
            scale = (max_val - min_val) / float(quant_max - quant_min)
            scale = ember.where(scale > self.eps, scale, ember.ones_like(scale))
            zero_point = -1 * min_val / scale
        else:
            scale = ember.max((max_pos - min_neg) / float(quant_max - quant_min), self.eps)
            zero_point = quant_min - ember.round(min_neg / scale).to(ember.int)
            zero_point = ember.clamp(zero_point, quant_min, quant_max)
        if scale.dim() == 0:
            scale = ember.tensor([float(scale)], dtype=scale.dtype)
        if zero_point.dim() == 0:
            zero_point = ember.tensor([int(zero_point)], dtype=zero_point.dtype)
            if self.qscheme is ember.per_channel_affine_float_qparams:
                zero_point = ember.tensor([float(zero_point)], dtype=zero_point.dtype)
        return scale, zero_point

    def reset_min_max_vals(self):
        raise NotImplementedError("Cannot reset min/max values in the given observer.")


class MinMaxObserver(UniformQuantizationObserverBase):
    """The running min and max of the observed tensors; per-tensor affine or symmetric
    parameters from them."""

    def __init__(self, dtype=ember.quint8, qscheme=ember.per_tensor_affine, reduce_range=False,
                 quant_min=None, quant_max=None, factory_kwargs=None,
                 eps=ember.finfo(ember.float32).eps, is_dynamic=False, **kwargs):
        if qscheme not in _PER_TENSOR:
            raise NotImplementedError("MinMaxObserver's qscheme only support "
                                      "torch.per_tensor_symmetric                     and "
                                      "torch.per_tensor_affine.")
        super().__init__(dtype=dtype, qscheme=qscheme, reduce_range=reduce_range,
                         quant_min=quant_min, quant_max=quant_max,
                         factory_kwargs=factory_kwargs, eps=eps, is_dynamic=is_dynamic,
                         **kwargs)
        factory_kwargs = factory_kwargs or {}
        self.register_buffer("min_val", ember.tensor(float("inf"), **factory_kwargs))
        self.register_buffer("max_val", ember.tensor(float("-inf"), **factory_kwargs))
        if qscheme is ember.per_tensor_symmetric and reduce_range and dtype is ember.quint8:
            raise NotImplementedError("Cannot reduce range for symmetric                        "
                                      "                quantization for quint8")

    def forward(self, x_orig):
        if x_orig.numel() == 0:
            return x_orig
        x = x_orig.detach().to(self.min_val.dtype)
        min_cur, max_cur = ember.aminmax(x)
        self.min_val.copy_(ember.min(min_cur, self.min_val))
        self.max_val.copy_(ember.max(max_cur, self.max_val))
        return x_orig

    def calculate_qparams(self):
        return self._calculate_qparams(self.min_val, self.max_val)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}"

    def reset_min_max_vals(self):
        self.min_val.copy_(ember.tensor(float("inf")))
        self.max_val.copy_(ember.tensor(float("-inf")))


class MovingAverageMinMaxObserver(MinMaxObserver):
    """The min and max move ``averaging_constant`` of the way to each batch's (the first batch's
    taken as they are)."""

    def __init__(self, averaging_constant=0.01, dtype=ember.quint8,
                 qscheme=ember.per_tensor_affine, reduce_range=False, quant_min=None,
                 quant_max=None, eps=ember.finfo(ember.float32).eps, is_dynamic=False,
                 **kwargs):
        if qscheme not in _PER_TENSOR:
            raise NotImplementedError(
                f"MovingAverageMinMaxObserver's qscheme only support                 "
                f"torch.per_tensor_symmetric and torch.per_tensor_affine.                 "
                f"but got: {qscheme}")
        self.averaging_constant = averaging_constant
        if is_dynamic and averaging_constant != 1:
            raise NotImplementedError(
                "MovingAverageMinMaxObserver doesn't support dynamic quantization for "
                f"averaging constant of {averaging_constant}")
        super().__init__(dtype=dtype, qscheme=qscheme, reduce_range=reduce_range,
                         quant_min=quant_min, quant_max=quant_max, eps=eps,
                         is_dynamic=is_dynamic, **kwargs)

    def forward(self, x_orig):
        if x_orig.numel() == 0:
            return x_orig
        x = x_orig.detach().to(self.min_val.dtype)
        min_val, max_val = self.min_val, self.max_val
        if min_val == float("inf") and max_val == float("-inf"):
            min_val, max_val = ember.aminmax(x)
        else:
            min_cur, max_cur = ember.aminmax(x)
            min_val = min_val + self.averaging_constant * (min_cur - min_val)
            max_val = max_val + self.averaging_constant * (max_cur - max_val)
        self.min_val.copy_(min_val)
        self.max_val.copy_(max_val)
        return x_orig


def _channel_rows(x, ch_axis, dtype):
    """``x`` with its channel axis first and the rest flattened, as ``dtype``."""
    order = list(range(x.dim()))
    order[ch_axis], order[0] = 0, ch_axis
    return ember.flatten(x.permute(order).to(dtype), start_dim=1)


class PerChannelMinMaxObserver(UniformQuantizationObserverBase):
    """The running min and max of each channel along ``ch_axis``; per-channel parameters."""

    def __init__(self, ch_axis=0, dtype=ember.quint8, qscheme=ember.per_channel_affine,
                 reduce_range=False, quant_min=None, quant_max=None, factory_kwargs=None,
                 eps=ember.finfo(ember.float32).eps, is_dynamic=False, **kwargs):
        if qscheme not in _PER_CHANNEL:
            raise NotImplementedError(
                "PerChannelMinMaxObserver's qscheme only support                     "
                "torch.per_channel_symmetric, torch.per_channel_affine and "
                "torch.per_channel_affine_float_qparams.")
        if is_dynamic:
            raise NotImplementedError("PerChannelMinMaxObserver doesn't support dynamic "
                                      "quantization")
        super().__init__(dtype=dtype, qscheme=qscheme, reduce_range=reduce_range,
                         quant_min=quant_min, quant_max=quant_max,
                         factory_kwargs=factory_kwargs, eps=eps, is_dynamic=is_dynamic,
                         **kwargs)
        factory_kwargs = factory_kwargs or {}
        self.ch_axis = ch_axis
        self.register_buffer("min_val", ember.tensor([], **factory_kwargs))
        self.register_buffer("max_val", ember.tensor([], **factory_kwargs))
        if qscheme is ember.per_channel_symmetric and reduce_range and dtype is ember.quint8:
            raise NotImplementedError("Cannot reduce range for symmetric quantization for "
                                      "quint8")

    def forward(self, x_orig):
        return self._forward(x_orig)

    def _update(self, min_val, max_val, min_cur, max_cur):
        return ember.min(min_cur, min_val), ember.max(max_cur, max_val)

    def _forward(self, x_orig):
        if x_orig.numel() == 0:
            return x_orig
        y = _channel_rows(x_orig.detach(), self.ch_axis, self.min_val.dtype)
        min_val, max_val = self.min_val, self.max_val
        if min_val.numel() == 0 or max_val.numel() == 0:
            min_val, max_val = ember.aminmax(y, dim=1)
        else:
            min_cur, max_cur = ember.aminmax(y, dim=1)
            min_val, max_val = self._update(min_val, max_val, min_cur, max_cur)
        self.min_val.resize_(min_val.shape)
        self.max_val.resize_(max_val.shape)
        self.min_val.copy_(min_val)
        self.max_val.copy_(max_val)
        return x_orig

    def calculate_qparams(self):
        return self._calculate_qparams(self.min_val, self.max_val)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}"

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        # (the buffers take the saved per-channel sizes before the copy)
        for name in ("min_val", "max_val"):
            key = prefix + name
            if key in state_dict:
                getattr(self, name).resize_(state_dict[key].shape)
            elif strict:
                missing_keys.append(key)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, False, missing_keys,
                                      unexpected_keys, error_msgs)

    def reset_min_max_vals(self):
        self.min_val = ember.rand(0)
        self.max_val = ember.rand(0)


class MovingAveragePerChannelMinMaxObserver(PerChannelMinMaxObserver):
    """Each channel's min and max move ``averaging_constant`` of the way to each batch's."""

    def __init__(self, averaging_constant=0.01, ch_axis=0, dtype=ember.quint8,
                 qscheme=ember.per_channel_affine, reduce_range=False, quant_min=None,
                 quant_max=None, eps=ember.finfo(ember.float32).eps, is_dynamic=False,
                 **kwargs):
        if qscheme not in _PER_CHANNEL:
            raise NotImplementedError(
                "MovingAveragePerChannelMinMaxObserver's qscheme only support                 "
                "    torch.per_channel_symmetric, torch.per_channel_affine and "
                "torch.per_channel_affine_float_qparams.")
        if is_dynamic:
            raise NotImplementedError("MovingAveragePerChannelMinMaxObserver doesn't support "
                                      "dynamic quantization")
        super().__init__(ch_axis=ch_axis, dtype=dtype, qscheme=qscheme,
                         reduce_range=reduce_range, quant_min=quant_min, quant_max=quant_max,
                         eps=eps, is_dynamic=is_dynamic, **kwargs)
        self.averaging_constant = averaging_constant

    def forward(self, x_orig):
        return self._forward(x_orig)

    def _update(self, min_val, max_val, min_cur, max_cur):
        c = self.averaging_constant
        return min_val + c * (min_cur - min_val), max_val + c * (max_cur - max_val)


class HistogramObserver(UniformQuantizationObserverBase):
    """A running histogram (``bins`` bins over the running [min, max]) of the observed tensors;
    per-tensor parameters from the range whose quantization has the least L2 error
    (``_non_linear_param_search``, caffe2's norm minimization), which drops outliers."""

    def __init__(self, bins=2048, dtype=ember.quint8, qscheme=ember.per_tensor_affine,
                 reduce_range=False, quant_min=None, quant_max=None, factory_kwargs=None,
                 eps=ember.finfo(ember.float32).eps, is_dynamic=False, **kwargs):
        if qscheme not in _PER_TENSOR:
            raise NotImplementedError("HistogramObserver's qscheme only support "
                                      "torch.per_tensor_symmetric                     and "
                                      "torch.per_tensor_affine.")
        if is_dynamic:
            raise NotImplementedError("HistogramObserver doesn't support dynamic quantization")
        super().__init__(dtype=dtype, qscheme=qscheme, reduce_range=reduce_range,
                         quant_min=quant_min, quant_max=quant_max,
                         factory_kwargs=factory_kwargs, eps=eps, is_dynamic=is_dynamic,
                         **kwargs)
        factory_kwargs = factory_kwargs or {}
        self.bins = bins
        self.register_buffer("histogram", ember.zeros(self.bins, **factory_kwargs))
        self.register_buffer("min_val", ember.tensor(float("inf"), **factory_kwargs))
        self.register_buffer("max_val", ember.tensor(float("-inf"), **factory_kwargs))
        self.dst_nbins = 2 ** ember.iinfo(self.dtype).bits
        # each old bin is spread over this many sub-bins when a wider range rebins it
        self.upsample_rate = 16

    def _get_norm(self, delta_begin, delta_end, density):
        """``density`` times the integral of x**2 from ``delta_begin`` to ``delta_end`` (the
        L2 error of values spread uniformly there)."""
        norm = (delta_end * delta_end * delta_end - delta_begin * delta_begin * delta_begin) / 3
        return density * norm

    def _compute_quantization_error(self, next_start_bin, next_end_bin):
        """The L2 error of quantizing the histogram with the bins ``next_start_bin`` to
        ``next_end_bin`` as the range."""
        bin_width = (self.max_val.item() - self.min_val.item()) / self.bins
        dst_bin_width = bin_width * (next_end_bin - next_start_bin + 1) / self.dst_nbins
        if dst_bin_width == 0.0:
            return 0.0
        device = self.histogram.device
        src_bin = ember.arange(self.bins, device=device)
        # distances from the first destination bin's start to each source bin's ends
        src_bin_begin = (src_bin - next_start_bin) * bin_width
        src_bin_end = src_bin_begin + bin_width
        dst_bin_of_begin = ember.clamp(
            ember.div(src_bin_begin, dst_bin_width, rounding_mode="floor"), 0,
            self.dst_nbins - 1)
        dst_bin_of_begin_center = (dst_bin_of_begin + 0.5) * dst_bin_width
        dst_bin_of_end = ember.clamp(
            ember.div(src_bin_end, dst_bin_width, rounding_mode="floor"), 0,
            self.dst_nbins - 1)
        density = self.histogram / bin_width

        norm = ember.zeros(self.bins, device=device)
        delta_begin = src_bin_begin - dst_bin_of_begin_center
        delta_end = dst_bin_width / 2
        norm += self._get_norm(delta_begin, ember.ones(self.bins, device=device) * delta_end,
                               density)
        norm += (dst_bin_of_end - dst_bin_of_begin - 1) * self._get_norm(
            ember.tensor(-dst_bin_width / 2), ember.tensor(dst_bin_width / 2), density)
        dst_bin_of_end_center = dst_bin_of_end * dst_bin_width + dst_bin_width / 2
        delta_begin = -dst_bin_width / 2
        delta_end = src_bin_end - dst_bin_of_end_center
        norm += self._get_norm(ember.tensor(delta_begin), delta_end, density)
        return norm.sum().item()

    def _non_linear_param_search(self):
        """Narrow [min, max] from whichever end holds less of the histogram's mass, a quantile
        step (1e-5) at a time, while the quantization error keeps falling."""
        if self.histogram.size()[0] != self.bins:
            raise AssertionError("bins mismatch")
        bin_width = (self.max_val - self.min_val) / self.bins
        total = ember.sum(self.histogram).item()
        cSum = ember.cumsum(self.histogram, dim=0)

        stepsize = 1e-5
        alpha, beta = 0.0, 1.0  # the quantile bounds
        start_bin, end_bin = 0, self.bins - 1
        norm_min = float("inf")
        while alpha < beta:
            next_alpha = alpha + stepsize
            next_beta = beta - stepsize
            # the bins just inside the next quantile bounds
            l, r = start_bin, end_bin
            while l < end_bin and cSum[l] < next_alpha * total:
                l = l + 1
            while r > start_bin and cSum[r] > next_beta * total:
                r = r - 1
            next_start_bin, next_end_bin = start_bin, end_bin
            if (l - start_bin) > (end_bin - r):
                next_start_bin = l
                alpha = next_alpha
            else:
                next_end_bin = r
                beta = next_beta
            if next_start_bin == start_bin and next_end_bin == end_bin:
                continue
            norm = self._compute_quantization_error(next_start_bin, next_end_bin)
            if norm > norm_min:
                break
            norm_min = norm
            start_bin, end_bin = next_start_bin, next_end_bin

        new_min = self.min_val + bin_width * start_bin
        new_max = self.min_val + bin_width * (end_bin + 1)
        return new_min, new_max

    def _upscale_histogram(self, histogram, orig_min, orig_max, update_min, update_max):
        """``histogram`` (over [orig_min, orig_max]) rebinned over [update_min, update_max]:
        each bin split into ``upsample_rate`` equal parts, each part counted in the new bin
        holding its midpoint (finer parts, smaller rebinning error)."""
        histogram = histogram.repeat_interleave(self.upsample_rate) / self.upsample_rate
        bin_size = (orig_max - orig_min) / (self.bins * self.upsample_rate)
        mid_points_histogram = (
            ember.linspace(orig_min, orig_max, self.bins * self.upsample_rate + 1,
                           device=orig_min.device)[:-1].to(histogram.device)
            + 0.5 * bin_size)
        boundaries_new_histogram = ember.linspace(
            update_min, update_max, self.bins + 1, device=update_min.device).to(histogram.device)
        bucket_assignments = ember.bucketize(mid_points_histogram, boundaries_new_histogram,
                                             right=True) - 1
        # rounding can put a midpoint just outside the new range
        bucket_assignments[bucket_assignments >= self.bins] = self.bins - 1
        bucket_assignments[bucket_assignments < 0] = 0
        return ember.bincount(bucket_assignments, weights=histogram, minlength=self.bins)

    def _combine_histograms(self, orig_hist, orig_min, orig_max, update_hist, update_min,
                            update_max):
        """The old histogram moved onto the new (wider) range, plus the new one."""
        if update_min == orig_min and update_max == orig_max:
            return orig_hist + update_hist
        if orig_min == orig_max:
            # everything seen so far was one value: it falls in one bin of the new range
            bin_value = ember.sum(orig_hist)
            transformed_orig_hist = ember.histc(orig_min, bins=self.bins, min=update_min,
                                                max=update_max) * bin_value
            return transformed_orig_hist + update_hist
        if update_min > orig_min:
            raise AssertionError("update_min must be <= orig_min")
        if update_max < orig_max:
            raise AssertionError("update_max must be >= orig_max")
        transformed_orig_hist = self._upscale_histogram(orig_hist, orig_min, orig_max,
                                                        update_min, update_max)
        return update_hist + transformed_orig_hist

    def reset_histogram(self, x, min_val, max_val):
        self.min_val.resize_(min_val.shape)
        self.min_val.copy_(min_val)
        self.max_val.resize_(max_val.shape)
        self.max_val.copy_(max_val)
        if min_val.numel() != 1 or max_val.numel() != 1:
            raise AssertionError("histogram min/max values must be scalar.")
        new_histogram = ember.histc(x, self.bins, min=min_val, max=max_val)
        self.histogram.detach_().resize_(new_histogram.shape)
        self.histogram.copy_(new_histogram)

    def forward(self, x_orig):
        if x_orig.numel() == 0:
            return x_orig
        x = x_orig.detach()
        x_min, x_max = ember.aminmax(x)
        # infinities would make the range infinite: they are left out (quantization clamps them)
        if x_min == -ember.inf or x_max == ember.inf:
            warnings.warn("torch.inf detected in input tensor, ignoring input", stacklevel=2)
            x = x[x.abs() != ember.inf]
            if x.numel() == 0:
                return x_orig
            x_min, x_max = ember.aminmax(x)

        current_min, current_max = self.min_val, self.max_val
        is_uninitialized = self.min_val == float("inf") or self.max_val == float("-inf")
        if is_uninitialized:
            self.reset_histogram(x, x_min, x_max)
            return x_orig
        new_min = ember.min(current_min, x_min).detach()
        new_max = ember.max(current_max, x_max).detach()
        update_histogram = ember.histc(x, self.bins, min=new_min, max=new_max).to(
            self.histogram.device)
        if new_min == current_min and new_max == current_max:
            combined_histogram = self.histogram + update_histogram
            self.histogram.detach_().resize_(combined_histogram.shape)
            self.histogram.copy_(combined_histogram)
        else:
            combined_histogram = self._combine_histograms(self.histogram, current_min,
                                                          current_max, update_histogram,
                                                          new_min, new_max)
            self.histogram.detach_().resize_(combined_histogram.shape)
            self.histogram.copy_(combined_histogram)
            self.min_val.detach_().resize_(new_min.shape)
            self.min_val.copy_(new_min)
            self.max_val.detach_().resize_(new_max.shape)
            self.max_val.copy_(new_max)
        return x_orig

    def calculate_qparams(self):
        if self.min_val == float("inf") and self.max_val == float("-inf"):
            warnings.warn("must run observer before calling calculate_qparams."
                          "                                    Returning default scale and "
                          "zero point ", stacklevel=2)
            device = self.min_val.device.type
            return ember.tensor([1.0], device=device), ember.tensor([0], device=device)
        if self.bins != len(self.histogram):
            raise AssertionError("The number of bins in histogram should be equal to the "
                                 "number of bins supplied while making this observer")
        new_min, new_max = self._non_linear_param_search()
        return self._calculate_qparams(new_min, new_max)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        version = local_metadata.get("version", None)
        if version is None or version < 3:
            # before version 3 an unobserved min/max was saved empty, not as +-inf
            for name, empty in (("min_val", float("inf")), ("max_val", float("-inf"))):
                key = prefix + name
                if key in state_dict and state_dict[key].shape == ember.Size([0]):
                    state_dict[key] = ember.tensor(empty)
        for name in ("min_val", "max_val"):
            key = prefix + name
            if key in state_dict:
                setattr(self, name, state_dict[key])
            elif strict:
                missing_keys.append(key)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}"


class FixedQParamsObserver(ObserverBase):
    """Fixed per-tensor parameters (``scale``, ``zero_point``) whatever passes."""

    def __init__(self, scale, zero_point, dtype=ember.quint8, qscheme=ember.per_tensor_affine,
                 quant_min=0, quant_max=255, is_dynamic=False, **kwargs):
        if is_dynamic:
            raise NotImplementedError("FixedQParamsObserver doesn't support dynamic "
                                      "quantization")
        super().__init__(dtype=dtype, is_dynamic=is_dynamic, **kwargs)
        self.quant_min, self.quant_max = quant_min, quant_max
        self.register_buffer("scale", ember.tensor([scale], dtype=ember.float))
        self.register_buffer("zero_point", ember.tensor([zero_point], dtype=ember.int))
        self.dtype, self.qscheme = dtype, qscheme

    def forward(self, X):
        return X

    def calculate_qparams(self):
        return self.scale, self.zero_point


class PlaceholderObserver(ObserverBase):
    """Records nothing: it carries the dtype (and range) a later step quantizes with."""

    def __init__(self, dtype=ember.float32, custom_op_name="", compute_dtype=None,
                 quant_min=None, quant_max=None, qscheme=None, eps=None, is_dynamic=False):
        super().__init__(dtype=dtype, is_dynamic=is_dynamic)
        if qscheme is None:
            qscheme = ember.per_tensor_affine
        if eps is None:
            eps = ember.finfo(ember.float32).eps
        self.quant_min, self.quant_max = quant_min, quant_max
        self.qscheme, self.eps, self.custom_op = qscheme, eps, custom_op_name
        if compute_dtype:
            gap = " " * 20  # (PyTorch's message keeps its source's indentation)
            warnings.warn(f"Please use `is_dynamic` instead of `compute_dtype`. {gap}"
                          f"`compute_dtype` will be deprecated in a future release {gap}"
                          "of PyTorch.", stacklevel=2)

    def forward(self, x):
        return x

    def extra_repr(self):
        return f"dtype={self.dtype}, is_dynamic={self.is_dynamic}"

    def calculate_qparams(self):
        raise Exception("calculate_qparams should not be called for PlaceholderObserver")


class RecordingObserver(ObserverBase):
    """Keeps a copy of every tensor that passes (``get_tensor_value``), for debugging."""

    def __init__(self, dtype=ember.quint8):
        super().__init__(dtype=dtype, is_dynamic=False)
        self.tensor_val = []

    def forward(self, x):
        self.tensor_val.append(x.clone())
        return x

    def calculate_qparams(self):
        raise Exception("calculate_qparams should not be called for RecordingObserver")

    def get_tensor_value(self):
        return self.tensor_val


class NoopObserver(ObserverBase):
    """Records nothing: the dtype (float16 by default) a later step casts to."""

    def __init__(self, dtype=ember.float16, custom_op_name=""):
        super().__init__(dtype=dtype)
        self.dtype, self.custom_op = dtype, custom_op_name

    def forward(self, x):
        return x

    def calculate_qparams(self):
        raise Exception("calculate_qparams should not be called for NoopObserver")


class ReuseInputObserver(ObserverBase):
    """Records nothing: it marks an op (a reshape) whose output reuses its input's observer
    (FX graph mode quantization)."""

    def __init__(self):
        super().__init__(ember.quint8, is_dynamic=False)

    def forward(self, x):
        return x

    def calculate_qparams(self):
        raise Exception("calculate_qparams should not be called for ReuseInputObserver")


def get_observer_state_dict(mod):
    """The observers' entries of ``mod``'s state dict (the keys holding "activation_post_process"
    or "observer")."""
    from collections import OrderedDict
    return OrderedDict((k, v) for k, v in mod.state_dict().items()
                       if "observer" in k or "activation_post_process" in k)


def load_observer_state_dict(mod, obs_dict):
    """Load ``obs_dict`` (``get_observer_state_dict``'s) into ``mod``'s observers and fake
    quantizers."""
    from .fake_quantize import FakeQuantizeBase
    missing_keys, unexpected_keys = [], []
    for name, module in mod.named_modules():
        if isinstance(module, (ObserverBase, FakeQuantizeBase)):
            module._load_from_state_dict(obs_dict, name + ".", {}, False, missing_keys,
                                         unexpected_keys, [])
    for k in missing_keys:
        if "observer" in k or "activation_post_process" in k:
            raise Exception(f"Missing keys for observer {k} in state_dict")
    for k in unexpected_keys:
        if "observer" in k or "activation_post_process" in k:
            raise Exception(f"Unexpected keys for observer {k} in state_dict")


default_observer = MinMaxObserver.with_args(quant_min=0, quant_max=127)
default_placeholder_observer = PlaceholderObserver
default_debug_observer = RecordingObserver
default_weight_observer = MinMaxObserver.with_args(dtype=ember.qint8,
                                                   qscheme=ember.per_tensor_symmetric)
weight_observer_range_neg_127_to_127 = MinMaxObserver.with_args(
    dtype=ember.qint8, qscheme=ember.per_tensor_symmetric, quant_min=-127, quant_max=127,
    eps=2 ** -12)
default_histogram_observer = HistogramObserver.with_args(quant_min=0, quant_max=127)
default_per_channel_weight_observer = PerChannelMinMaxObserver.with_args(
    dtype=ember.qint8, qscheme=ember.per_channel_symmetric)
per_channel_weight_observer_range_neg_127_to_127 = PerChannelMinMaxObserver.with_args(
    dtype=ember.qint8, qscheme=ember.per_channel_symmetric, quant_min=-127, quant_max=127,
    eps=2 ** -12)
default_fixed_qparams_range_neg1to1_observer = FixedQParamsObserver.with_args(
    scale=2.0 / 256.0, zero_point=128, dtype=ember.quint8, quant_min=0, quant_max=255)
default_fixed_qparams_range_0to1_observer = FixedQParamsObserver.with_args(
    scale=1.0 / 256.0, zero_point=0, dtype=ember.quint8, quant_min=0, quant_max=255)
default_symmetric_fixed_qparams_observer = default_fixed_qparams_range_neg1to1_observer
default_affine_fixed_qparams_observer = default_fixed_qparams_range_0to1_observer
default_dynamic_quant_observer = PlaceholderObserver.with_args(
    dtype=ember.quint8, quant_min=0, quant_max=255, is_dynamic=True)
default_float_qparams_observer = PerChannelMinMaxObserver.with_args(
    dtype=ember.quint8, qscheme=ember.per_channel_affine_float_qparams, ch_axis=0)
default_float_qparams_observer_4bit = PerChannelMinMaxObserver.with_args(
    dtype=ember.quint4x2, qscheme=ember.per_channel_affine_float_qparams, ch_axis=0)
default_reuse_input_observer = ReuseInputObserver
