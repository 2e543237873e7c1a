"""``torch.ao.quantization.observer``, the observers dynamic quantization uses: ``MinMaxObserver``
(the running minimum and maximum of what it sees, and the per-tensor scale and zero point they
give, in PyTorch's float32 tensor arithmetic) and ``PlaceholderObserver`` (no statistics: a
dynamically quantized activation's parameters are chosen at each call), with ``with_args``
factories and the default observers PyTorch's default qconfigs name."""
import warnings
from functools import partial

from ... import nn
import ember

__all__ = ["ObserverBase", "MinMaxObserver", "PlaceholderObserver", "default_weight_observer",
           "default_dynamic_quant_observer"]


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


def _qmin_qmax(dtype, reduce_range):
    """PyTorch's ``calculate_qmin_qmax`` without a customized range."""
    if dtype is ember.qint8:
        return (-64, 63) if reduce_range else (-128, 127)
    if dtype is ember.quint8:
        return (0, 127) if reduce_range else (0, 255)
    if dtype is ember.qint32:
        return -2 ** 31, 2 ** 31 - 1
    raise NotImplementedError(f"ember's observers have no quantization range for {dtype}")


class MinMaxObserver(ObserverBase):
    """The running min and max of the observed tensors; per-tensor affine or symmetric
    parameters from them (``_calculate_qparams``)."""

    def __init__(self, dtype=ember.quint8, qscheme=ember.per_tensor_affine, reduce_range=False,
                 quant_min=None, quant_max=None, factory_kwargs=None,
                 eps=ember.finfo(ember.float32).eps, is_dynamic=False, **kwargs):
        if qscheme not in (ember.per_tensor_affine, ember.per_tensor_symmetric):
            raise NotImplementedError("MinMaxObserver's qscheme only support "
                                      "torch.per_tensor_symmetric                     and "
                                      "torch.per_tensor_affine.")
        super().__init__(dtype=dtype, is_dynamic=is_dynamic)
        self.qscheme = qscheme
        if reduce_range:
            warnings.warn("Please use quant_min and quant_max to specify the range for "
                          "observers.                     reduce_range will be deprecated in a "
                          "future release of PyTorch.", stacklevel=2)
        self.reduce_range = reduce_range
        self.register_buffer("eps", ember.tensor([eps]))
        self.has_customized_qrange = quant_min is not None and quant_max is not None
        if self.has_customized_qrange:
            if not quant_min <= 0 <= quant_max:
                raise AssertionError("Used-specified quantization range must include 0.")
            if quant_min >= quant_max:
                raise AssertionError("qmin must be strictly less than qmax for user-specified "
                                     "quantization range.")
            self.quant_min, self.quant_max = quant_min, quant_max
        else:
            self.quant_min, self.quant_max = _qmin_qmax(dtype, reduce_range)
        self.register_buffer("min_val", ember.tensor(float("inf")))
        self.register_buffer("max_val", ember.tensor(float("-inf")))
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

    def _calculate_qparams(self, min_val, max_val):
        if min_val.item() == float("inf") and max_val.item() == float("-inf"):
            warnings.warn("must run observer before calling calculate_qparams. Returning "
                          "default values.", stacklevel=2)
            return ember.tensor([1.0]), ember.tensor([0])
        if not min_val.item() <= max_val.item():
            raise AssertionError(f"min {min_val} should be less than max {max_val}")
        quant_min, quant_max = self.quant_min, self.quant_max
        min_neg = ember.min(min_val, ember.zeros_like(min_val))
        max_pos = ember.max(max_val, ember.zeros_like(max_val))
        zero_point = ember.zeros(min_neg.size(), dtype=ember.int64)
        if self.qscheme is ember.per_tensor_symmetric:
            max_pos = ember.max(-min_neg, max_pos)
            scale = ember.max(max_pos / (float(quant_max - quant_min) / 2), self.eps)
            if self.dtype is ember.quint8:
                middle = (quant_min + quant_max) // 2 if self.has_customized_qrange else 128
                zero_point = zero_point.new_full(zero_point.size(), middle)
        else:
            scale = ember.max((max_pos - min_neg) / float(quant_max - quant_min), self.eps)
            zero_point = quant_min - ember.round(min_neg / scale).to(ember.int)
            zero_point = ember.clamp(zero_point, quant_min, quant_max)
        if scale.dim() == 0:
            scale = ember.tensor([float(scale)], dtype=scale.dtype)
        if zero_point.dim() == 0:
            zero_point = ember.tensor([int(zero_point)], dtype=zero_point.dtype)
        return scale, zero_point

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}"

    def reset_min_max_vals(self):
        self.min_val.copy_(ember.tensor(float("inf")))
        self.max_val.copy_(ember.tensor(float("-inf")))


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


default_weight_observer = MinMaxObserver.with_args(dtype=ember.qint8,
                                                   qscheme=ember.per_tensor_symmetric)
default_dynamic_quant_observer = PlaceholderObserver.with_args(
    dtype=ember.quint8, quant_min=0, quant_max=255, is_dynamic=True)
