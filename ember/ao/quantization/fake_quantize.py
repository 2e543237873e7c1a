"""``torch.ao.quantization.fake_quantize``: the modules quantization-aware training inserts where
a tensor will be quantized. Each observes what passes (its ``activation_post_process``), keeps
the scale and zero point that gives, and returns the tensor rounded to the values the quantized
tensor would hold (the fake_quantize ops, whose gradient passes straight through inside the
range); ``FusedMovingAvgObsFakeQuantize`` does both in one op, ``FixedQParamsFakeQuantize``
keeps fixed parameters. With the default fake quantizers PyTorch's qconfigs name and the
``enable_*``/``disable_*`` switches for ``Module.apply``."""
import ember
from ... import nn
from .observer import (FixedQParamsObserver, HistogramObserver, MovingAverageMinMaxObserver,
                       MovingAveragePerChannelMinMaxObserver, _with_args,
                       default_fixed_qparams_range_0to1_observer,
                       default_fixed_qparams_range_neg1to1_observer)

__all__ = ["FakeQuantizeBase", "FakeQuantize", "FixedQParamsFakeQuantize",
           "FusedMovingAvgObsFakeQuantize", "disable_fake_quant", "disable_observer",
           "enable_fake_quant", "enable_observer", "default_fake_quant",
           "default_weight_fake_quant", "default_dynamic_fake_quant",
           "default_fixed_qparams_range_neg1to1_fake_quant",
           "default_fixed_qparams_range_0to1_fake_quant",
           "default_symmetric_fixed_qparams_fake_quant", "default_affine_fixed_qparams_fake_quant",
           "default_per_channel_weight_fake_quant", "default_embedding_fake_quant",
           "default_embedding_fake_quant_4bit", "default_histogram_fake_quant",
           "default_fused_act_fake_quant", "default_fused_wt_fake_quant",
           "default_fused_per_channel_wt_fake_quant", "fused_wt_fake_quant_range_neg_127_to_127",
           "fused_per_channel_wt_fake_quant_range_neg_127_to_127"]


def _is_per_channel(qscheme):
    return qscheme in (ember.per_channel_symmetric, ember.per_channel_affine,
                       ember.per_channel_affine_float_qparams)


def _is_per_tensor(qscheme):
    return qscheme in (ember.per_tensor_symmetric, ember.per_tensor_affine)


def _is_symmetric_quant(qscheme):
    return qscheme in (ember.per_tensor_symmetric, ember.per_channel_symmetric)


class FakeQuantizeBase(nn.Module):
    """A fake quantizer: switches for fake quantization and observation (uint8 buffers)."""

    def __init__(self):
        super().__init__()
        self.register_buffer("fake_quant_enabled", ember.tensor([1], dtype=ember.uint8))
        self.register_buffer("observer_enabled", ember.tensor([1], dtype=ember.uint8))

    def forward(self, x):
        raise NotImplementedError

    def calculate_qparams(self, **kwargs):
        raise NotImplementedError

    def enable_fake_quant(self, enabled=True):
        self.fake_quant_enabled[0] = 1 if enabled else 0

    def disable_fake_quant(self):
        self.enable_fake_quant(False)

    def enable_observer(self, enabled=True):
        self.observer_enabled[0] = 1 if enabled else 0

    def disable_observer(self):
        self.enable_observer(False)

    @classmethod
    def with_args(cls, **kwargs):
        fake_quant_constructor = _with_args(cls, **kwargs)
        fake_quant_constructor.__module__ = "torch.ao.quantization.fake_quantize"
        return fake_quant_constructor


class FakeQuantize(FakeQuantizeBase):
    """``x_out = (clamp(round(x / scale + zero_point), quant_min, quant_max) - zero_point) *
    scale``, with scale and zero point from ``observer`` (per tensor or per channel)."""

    def __init__(self, observer=MovingAverageMinMaxObserver, quant_min=None, quant_max=None,
                 is_dynamic=False, **observer_kwargs):
        super().__init__()
        if quant_min is not None and quant_max is not None:
            if quant_min > quant_max:
                raise AssertionError("quant_min must be less than or equal to quant_max")
            dtype = observer_kwargs.get("dtype", ember.quint8)
            if hasattr(observer, "p"):  # (a with_args partial may name the dtype)
                dtype = getattr(getattr(observer, "p", {}), "keywords", {}).get("dtype", dtype)
            if ember.iinfo(dtype).min > quant_min:
                raise AssertionError("quant_min out of bound")
            if quant_max > ember.iinfo(dtype).max:
                raise AssertionError("quant_max out of bound")
            observer_kwargs.update({"quant_min": quant_min, "quant_max": quant_max})
        observer_kwargs["is_dynamic"] = is_dynamic
        self.activation_post_process = observer(**observer_kwargs)
        self.quant_min = self.activation_post_process.quant_min
        self.quant_max = self.activation_post_process.quant_max
        self.is_dynamic = self.activation_post_process.is_dynamic
        zero_point_dtype = (ember.float if self.activation_post_process.qscheme
                            is ember.per_channel_affine_float_qparams else ember.int)
        self.register_buffer("scale", ember.tensor([1.0], dtype=ember.float))
        self.register_buffer("zero_point", ember.tensor([0], dtype=zero_point_dtype))
        self.dtype = self.activation_post_process.dtype
        self.qscheme = self.activation_post_process.qscheme
        self.ch_axis = getattr(self.activation_post_process, "ch_axis", -1)
        if not (_is_per_channel(self.qscheme) or _is_per_tensor(self.qscheme)):
            raise AssertionError("Only per channel and per tensor quantization are supported in "
                                 "fake quantize got qscheme: " + str(self.qscheme))
        self.is_per_channel = _is_per_channel(self.qscheme)

    def calculate_qparams(self):
        return self.activation_post_process.calculate_qparams()

    def forward(self, X):
        if self.observer_enabled[0] == 1:
            self.activation_post_process(X.detach())
            _scale, _zero_point = self.calculate_qparams()
            _scale = _scale.to(self.scale.device)
            _zero_point = _zero_point.to(self.zero_point.device)
            if self.scale.shape != _scale.shape:
                self.scale.resize_(_scale.shape)
                self.zero_point.resize_(_zero_point.shape)
            self.scale.copy_(_scale)
            self.zero_point.copy_(_zero_point)
        if self.fake_quant_enabled[0] == 1:
            post = self.activation_post_process
            if self.is_per_channel:
                X = ember.fake_quantize_per_channel_affine(X, self.scale, self.zero_point,
                                                           self.ch_axis, post.quant_min,
                                                           post.quant_max)
            else:
                X = ember.fake_quantize_per_tensor_affine(X, self.scale, self.zero_point,
                                                          post.quant_min, post.quant_max)
        return X

    def extra_repr(self):
        post = self.activation_post_process
        return (f"fake_quant_enabled={self.fake_quant_enabled}, "
                f"observer_enabled={self.observer_enabled}, quant_min={post.quant_min}, "
                f"quant_max={post.quant_max}, dtype={self.dtype}, qscheme={self.qscheme}, "
                f"ch_axis={self.ch_axis}, scale={self.scale}, zero_point={self.zero_point}")

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        super()._save_to_state_dict(destination, prefix, keep_vars)
        destination[prefix + "scale"] = self.scale
        destination[prefix + "zero_point"] = self.zero_point

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        # (per-channel parameters: the buffers take the saved sizes before the copy)
        for name in ("scale", "zero_point"):
            key = prefix + name
            if key in state_dict:
                getattr(self, name).resize_(state_dict[key].shape)
            elif strict:
                missing_keys.append(key)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)


class FixedQParamsFakeQuantize(FakeQuantize):
    """Fake quantization with the fixed per-tensor parameters of a ``FixedQParamsObserver``."""

    def __init__(self, observer):
        super().__init__(observer=observer)
        if type(self.activation_post_process) is not FixedQParamsObserver:
            raise AssertionError(f"{self.__class__.__name__}'s observer must be a "
                                 f"{FixedQParamsObserver.__name__}")
        self._observer_ctr = observer
        self.scale = self.activation_post_process.scale
        self.zero_point = self.activation_post_process.zero_point
        if not _is_per_tensor(self.qscheme):
            raise AssertionError("Only per tensor quantization is supported "
                                 "FixedQParamsFakeQuantize module, got qscheme:"
                                 + str(self.qscheme))

    def calculate_qparams(self):
        return self.scale, self.zero_point

    def extra_repr(self):
        post = self.activation_post_process
        return (f"fake_quant_enabled={self.fake_quant_enabled}, "
                f"observer_enabled={self.observer_enabled}, scale={self.scale}, "
                f"zero_point={self.zero_point}, dtype={self.dtype}, "
                f"quant_min={post.quant_min}, quant_max={post.quant_max}, "
                f"qscheme={self.qscheme}")


class FusedMovingAvgObsFakeQuantize(FakeQuantize):
    """A moving-average min/max observer and fake quantization in one op
    (``fused_moving_avg_obs_fake_quant``), its parameters chosen as FBGEMM chooses them."""

    def __init__(self, observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255,
                 **observer_kwargs):
        super().__init__(observer, quant_min, quant_max, **observer_kwargs)
        if not isinstance(self.activation_post_process,
                          (MovingAverageMinMaxObserver, MovingAveragePerChannelMinMaxObserver)):
            raise AssertionError("Fused observer+fake_quant module only works with "
                                 "MovingAverageMinMaxObserver")
        self.register_buffer("fake_quant_enabled", ember.tensor([1], dtype=ember.long))
        self.register_buffer("observer_enabled", ember.tensor([1], dtype=ember.long))
        self.is_symmetric_quant = _is_symmetric_quant(self.activation_post_process.qscheme)

    def calculate_qparams(self):
        return self.activation_post_process.calculate_qparams()

    def extra_repr(self):
        post = self.activation_post_process
        return (f"fake_quant_enabled={self.fake_quant_enabled}, "
                f"observer_enabled={self.observer_enabled}, scale={self.scale}, "
                f"zero_point={self.zero_point}, dtype={self.dtype}, "
                f"quant_min={post.quant_min}, quant_max={post.quant_max}, "
                f"qscheme={self.qscheme}, reduce_range={post.reduce_range}")

    def forward(self, X):
        post = self.activation_post_process
        return ember.fused_moving_avg_obs_fake_quant(
            X, self.observer_enabled, self.fake_quant_enabled, post.min_val, post.max_val,
            self.scale, self.zero_point, post.averaging_constant, post.quant_min,
            post.quant_max, self.ch_axis, self.is_per_channel, self.is_symmetric_quant)


default_fake_quant = FakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255, dtype=ember.quint8,
    qscheme=ember.per_tensor_affine, reduce_range=True)
default_weight_fake_quant = FakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=-128, quant_max=127, dtype=ember.qint8,
    qscheme=ember.per_tensor_symmetric, reduce_range=False)
default_dynamic_fake_quant = FakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255, is_dynamic=True,
    dtype=ember.quint8, averaging_constant=1)
default_fixed_qparams_range_neg1to1_fake_quant = FixedQParamsFakeQuantize.with_args(
    observer=default_fixed_qparams_range_neg1to1_observer)
default_fixed_qparams_range_0to1_fake_quant = FixedQParamsFakeQuantize.with_args(
    observer=default_fixed_qparams_range_0to1_observer)
default_symmetric_fixed_qparams_fake_quant = default_fixed_qparams_range_neg1to1_fake_quant
default_affine_fixed_qparams_fake_quant = default_fixed_qparams_range_0to1_fake_quant
default_per_channel_weight_fake_quant = FakeQuantize.with_args(
    observer=MovingAveragePerChannelMinMaxObserver, quant_min=-128, quant_max=127,
    dtype=ember.qint8, qscheme=ember.per_channel_symmetric, reduce_range=False, ch_axis=0)
default_embedding_fake_quant = FakeQuantize.with_args(
    observer=MovingAveragePerChannelMinMaxObserver,
    qscheme=ember.per_channel_affine_float_qparams, dtype=ember.quint8, quant_min=0,
    quant_max=255, ch_axis=0, averaging_constant=1)
default_embedding_fake_quant_4bit = FakeQuantize.with_args(
    observer=MovingAveragePerChannelMinMaxObserver,
    qscheme=ember.per_channel_affine_float_qparams, ch_axis=0, dtype=ember.quint4x2,
    averaging_constant=1)
default_histogram_fake_quant = FakeQuantize.with_args(
    observer=HistogramObserver, quant_min=0, quant_max=255, dtype=ember.quint8,
    qscheme=ember.per_tensor_affine, reduce_range=True)
default_fused_act_fake_quant = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255, dtype=ember.quint8)
default_fused_wt_fake_quant = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=-128, quant_max=127, dtype=ember.qint8,
    qscheme=ember.per_tensor_symmetric)
default_fused_per_channel_wt_fake_quant = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAveragePerChannelMinMaxObserver, quant_min=-128, quant_max=127,
    dtype=ember.qint8, qscheme=ember.per_channel_symmetric)
fused_wt_fake_quant_range_neg_127_to_127 = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=-127, quant_max=127, dtype=ember.qint8,
    qscheme=ember.per_tensor_symmetric, eps=2 ** -12)
fused_per_channel_wt_fake_quant_range_neg_127_to_127 = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAveragePerChannelMinMaxObserver, quant_min=-127, quant_max=127,
    dtype=ember.qint8, qscheme=ember.per_channel_symmetric, eps=2 ** -12)


def disable_fake_quant(mod):
    """``model.apply(disable_fake_quant)``: fake quantizers pass tensors through."""
    if isinstance(mod, FakeQuantizeBase):
        mod.disable_fake_quant()


def enable_fake_quant(mod):
    if isinstance(mod, FakeQuantizeBase):
        mod.enable_fake_quant()


def disable_observer(mod):
    """``model.apply(disable_observer)``: fake quantizers keep their parameters."""
    if isinstance(mod, FakeQuantizeBase):
        mod.disable_observer()


def enable_observer(mod):
    if isinstance(mod, FakeQuantizeBase):
        mod.enable_observer()
