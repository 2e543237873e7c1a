"""Helpers of the quantized modules (``torch.ao.nn.quantized.modules.utils``): quantizing a float
weight with its observer's parameters (clamped to the observer's range), the base class of
modules made from reference modules, the argument parser of the quantized ``conv1d``
(``_pair_from_first``) and the repr that hides packed parameters."""
import abc
import collections.abc
import itertools

from ..... import nn
from .....nn.modules.module import _addindent
from ....._core import quantizer as _q
import ember

__all__ = ["WeightedQuantizedModule"]


class WeightedQuantizedModule(nn.Module, metaclass=abc.ABCMeta):
    """Wrapper for quantized modules than can be lowered from reference modules."""

    @classmethod
    @abc.abstractmethod
    def from_reference(cls, ref_module, output_scale, output_zero_point):
        raise NotImplementedError


def _get_weight_observer(observer):
    # (a FakeQuantize holds its observer)
    if hasattr(observer, "activation_post_process"):
        observer = observer.activation_post_process
    return observer


def _needs_weight_clamping(observer, dtype):
    observer = _get_weight_observer(observer)
    if dtype in (ember.qint8, ember.quint8, ember.qint32):
        info = ember.iinfo(dtype)
        return observer.quant_min > info.min or observer.quant_max < info.max
    return False


def _clamp_weights(qweight, observer, scale, zp):
    """``qweight``'s integers clamped to the observer's ``[quant_min, quant_max]`` when that is
    narrower than the dtype's range (as a restricted-range observer promises)."""
    if not _needs_weight_clamping(observer, qweight.dtype):
        return qweight
    observer = _get_weight_observer(observer)
    min_, max_ = observer.quant_min, observer.quant_max
    qw_int_max = ember.clone(qweight.int_repr()).fill_(max_)
    qw_int_min = ember.clone(qweight.int_repr()).fill_(min_)
    qw_int = ember.minimum(ember.maximum(qweight.int_repr(), qw_int_min), qw_int_max)
    if observer.qscheme in (_q.per_tensor_symmetric, _q.per_tensor_affine):
        return ember._make_per_tensor_quantized_tensor(qw_int, scale.item(), zp.item())
    if observer.qscheme in (_q.per_channel_symmetric, _q.per_channel_affine,
                            _q.per_channel_affine_float_qparams):
        return ember._make_per_channel_quantized_tensor(qw_int, scale, zp,
                                                        axis=observer.ch_axis)
    raise ValueError("Unexpected qscheme " + observer.qscheme)


def _quantize_weight(float_wt, observer):
    """``float_wt`` quantized to int8 with ``observer``'s parameters (per tensor or per
    channel), clamped to its range."""
    wt_scale, wt_zp = observer.calculate_qparams()
    if observer.qscheme in (_q.per_tensor_symmetric, _q.per_tensor_affine):
        qweight = ember.quantize_per_tensor(float_wt, float(wt_scale), int(wt_zp), ember.qint8)
    elif observer.qscheme in (_q.per_channel_symmetric, _q.per_channel_affine):
        qweight = ember.quantize_per_channel(float_wt, wt_scale.to(ember.double),
                                             wt_zp.to(ember.int64), observer.ch_axis,
                                             ember.qint8)
    elif observer.qscheme is _q.per_channel_affine_float_qparams:
        qweight = ember.quantize_per_channel(float_wt, wt_scale.to(ember.float),
                                             wt_zp.to(ember.float), observer.ch_axis,
                                             observer.dtype)
    else:
        raise ValueError("Unexpected qscheme " + observer.qscheme)
    return _clamp_weights(qweight, observer, wt_scale, wt_zp)


def _ntuple_from_first(n):
    """A parser making an ``n``-tuple of the first element of (nested sequences of) ``x``."""
    def parse(x):
        while isinstance(x, collections.abc.Sequence):
            if len(x) == n:
                break
            x = x[0]
        return tuple(itertools.repeat(x, n))
    return parse


_pair_from_first = _ntuple_from_first(2)


def _hide_packed_params_repr(self, params):
    """``self``'s repr without its ``params`` children (packed weights are no module to
    show)."""
    extra_lines = []
    extra_repr = self.extra_repr()
    if extra_repr:
        extra_lines = extra_repr.split("\n")
    child_lines = []
    for key, module in self._modules.items():
        if isinstance(module, params):
            continue
        child_lines.append("(" + key + "): " + _addindent(repr(module), 2))
    lines = extra_lines + child_lines
    main_str = self._get_name() + "("
    if lines:
        if len(extra_lines) == 1 and not child_lines:
            main_str += extra_lines[0]
        else:
            main_str += "\n  " + "\n  ".join(lines) + "\n"
    return main_str + ")"
