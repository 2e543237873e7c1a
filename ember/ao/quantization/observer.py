"""``torch.ao.quantization.observer``: modules that watch the tensors passing through them and
turn what they saw into quantization parameters (per-tensor or per-channel scale and zero point,
in PyTorch's float32 tensor arithmetic): ``MinMaxObserver`` and ``PerChannelMinMaxObserver``
(running extremes), their moving-average variants (what quantization-aware training's fake
quantizers use), ``FixedQParamsObserver`` (fixed parameters) and ``PlaceholderObserver`` (no
statistics: a dynamically quantized activation's parameters are chosen at each call), with
``with_args`` factories and the default observers PyTorch's default qconfigs name."""
import warnings
from functools import partial

from ... import nn
import ember

__all__ = ["ObserverBase", "UniformQuantizationObserverBase", "MinMaxObserver",
           "MovingAverageMinMaxObserver", "PerChannelMinMaxObserver",
           "MovingAveragePerChannelMinMaxObserver", "FixedQParamsObserver",
           "PlaceholderObserver", "NoopObserver", "default_observer", "default_weight_observer",
           "default_per_channel_weight_observer", "default_dynamic_quant_observer",
           "default_placeholder_observer", "weight_observer_range_neg_127_to_127",
           "per_channel_weight_observer_range_neg_127_to_127",
           "default_fixed_qparams_range_neg1to1_observer",
           "default_fixed_qparams_range_0to1_observer", "default_symmetric_fixed_qparams_observer",
           "default_affine_fixed_qparams_observer", "get_observer_state_dict",
           "load_observer_state_dict"]


class _PartialWrapper:
    """An observer class with some arguments bound (``MinMaxObserver.with_args(...)``); calling it
    makes an observer."""

    def __init__(self, p):
        self.p = p

    def __call__(self, *args, **keywords):
        return self.p(*args, **keywords)

    def __repr__(self):
        return self.p.__repr__()

    def with_args(self, **kwargs):
        return _with_args(self, **kwargs)


def _with_args(cls_or_self, **kwargs):
    return _PartialWrapper(partial(cls_or_self, **kwargs))


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

    def forward(self, x):
        return x

    def extra_repr(self):
        return f"dtype={self.dtype}, is_dynamic={self.is_dynamic}"

    def calculate_qparams(self):
        raise Exception("calculate_qparams should not be called for PlaceholderObserver")


class NoopObserver(ObserverBase):
    """Records nothing: the dtype (float16 by default) a later step casts to."""

    def __init__(self, dtype=ember.float16, custom_op_name=""):
        super().__init__(dtype=dtype)
        self.dtype, self.custom_op = dtype, custom_op_name

    def forward(self, x):
        return x

    def calculate_qparams(self):
        raise Exception("calculate_qparams should not be called for NoopObserver")


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
default_weight_observer = MinMaxObserver.with_args(dtype=ember.qint8,
                                                   qscheme=ember.per_tensor_symmetric)
weight_observer_range_neg_127_to_127 = MinMaxObserver.with_args(
    dtype=ember.qint8, qscheme=ember.per_tensor_symmetric, quant_min=-127, quant_max=127,
    eps=2 ** -12)
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
