"""``torch.ao.quantization.qconfig``: ``QConfig``, the pair of observer or fake-quantizer
factories (activation, weight) a module is quantized with, the default ones (dynamic, static,
quantization-aware training, float16, symmetric qnnpack, embeddings) and
``get_default_qconfig``/``get_default_qat_qconfig`` for a backend."""
import warnings
from collections import namedtuple

import ember
from .fake_quantize import (FakeQuantize, FakeQuantizeBase, FusedMovingAvgObsFakeQuantize,
                            default_dynamic_fake_quant, default_embedding_fake_quant,
                            default_embedding_fake_quant_4bit, default_fake_quant,
                            default_fused_act_fake_quant,
                            default_fused_per_channel_wt_fake_quant, default_fused_wt_fake_quant,
                            default_per_channel_weight_fake_quant, default_weight_fake_quant,
                            fused_per_channel_wt_fake_quant_range_neg_127_to_127,
                            fused_wt_fake_quant_range_neg_127_to_127)
from .observer import (HistogramObserver, MinMaxObserver, MovingAverageMinMaxObserver,
                       NoopObserver, PlaceholderObserver, default_debug_observer,
                       default_dynamic_quant_observer, default_float_qparams_observer,
                       default_float_qparams_observer_4bit, default_observer,
                       default_per_channel_weight_observer, default_placeholder_observer,
                       default_reuse_input_observer, default_weight_observer,
                       per_channel_weight_observer_range_neg_127_to_127,
                       weight_observer_range_neg_127_to_127)

__all__ = ["QConfig", "QConfigDynamic", "default_qconfig", "default_debug_qconfig",
           "default_per_channel_qconfig", "default_dynamic_qconfig", "float16_dynamic_qconfig",
           "float16_static_qconfig", "per_channel_dynamic_qconfig",
           "float_qparams_weight_only_qconfig", "float_qparams_weight_only_qconfig_4bit",
           "default_quint8_weight_qconfig", "default_qat_qconfig", "default_dynamic_qat_qconfig",
           "default_weight_only_qconfig", "default_activation_only_qconfig",
           "default_qat_qconfig_v2", "default_reuse_input_qconfig",
           "default_symmetric_qnnpack_qconfig", "default_per_channel_symmetric_qnnpack_qconfig",
           "default_symmetric_qnnpack_qat_qconfig",
           "default_per_channel_symmetric_qnnpack_qat_qconfig", "default_embedding_qat_qconfig",
           "default_embedding_qat_qconfig_4bit", "get_default_qconfig", "get_default_qat_qconfig",
           "get_default_qconfig_dict", "get_default_qat_qconfig_dict", "QConfigAny",
           "qconfig_equals"]


class QConfig(namedtuple("QConfig", ["activation", "weight"])):
    """How to quantize a module: observer factories (classes or ``with_args`` partials, not
    instances) for its activations and its weight."""
    __slots__ = ()

    def __new__(cls, activation, weight):
        from ... import nn
        if isinstance(activation, nn.Module) or isinstance(weight, nn.Module):
            raise ValueError("QConfig received observer instance, please pass observer class "
                             "instead. Use MyObserver.with_args(x=1) to override arguments to "
                             "constructor if needed")
        return super().__new__(cls, activation, weight)


QConfigDynamic = QConfig  # (PyTorch's deprecated name for the same tuple)


def _identity():
    from ... import nn
    return nn.Identity


# a module's qconfig, None where it stays in float (PyTorch's is a TypeAliasType of this union)
QConfigAny = QConfig | None

default_qconfig = QConfig(activation=default_observer, weight=default_weight_observer)
default_debug_qconfig = QConfig(weight=default_weight_observer, activation=default_debug_observer)
default_per_channel_qconfig = QConfig(activation=default_observer,
                                      weight=default_per_channel_weight_observer)
default_dynamic_qconfig = QConfig(activation=default_dynamic_quant_observer,
                                  weight=default_weight_observer)
float16_dynamic_qconfig = QConfig(
    activation=PlaceholderObserver.with_args(dtype=ember.float16, is_dynamic=True),
    weight=PlaceholderObserver.with_args(dtype=ember.float16))
float16_static_qconfig = QConfig(activation=PlaceholderObserver.with_args(dtype=ember.float16),
                                 weight=PlaceholderObserver.with_args(dtype=ember.float16))
per_channel_dynamic_qconfig = QConfig(activation=default_dynamic_quant_observer,
                                      weight=default_per_channel_weight_observer)
float_qparams_weight_only_qconfig = QConfig(activation=default_placeholder_observer,
                                            weight=default_float_qparams_observer)
float_qparams_weight_only_qconfig_4bit = QConfig(activation=default_placeholder_observer,
                                                 weight=default_float_qparams_observer_4bit)
default_qat_qconfig = QConfig(activation=default_fake_quant, weight=default_weight_fake_quant)
default_dynamic_qat_qconfig = QConfig(activation=default_dynamic_fake_quant,
                                      weight=default_weight_fake_quant)
default_weight_only_qconfig = QConfig(activation=_identity(), weight=default_weight_fake_quant)
default_activation_only_qconfig = QConfig(activation=default_fake_quant, weight=_identity())
default_qat_qconfig_v2 = QConfig(activation=default_fused_act_fake_quant,
                                 weight=default_fused_wt_fake_quant)
default_reuse_input_qconfig = QConfig(activation=default_reuse_input_observer,
                                      weight=NoopObserver)


def get_default_qconfig(backend="x86", version=0):
    """PyTorch's default post-training qconfig of ``backend``: histogram-observed activations
    (their range halved for fbgemm and x86), per-channel weights except for qnnpack."""
    supported_backends = ["fbgemm", "x86", "qnnpack", "onednn"]
    if backend not in supported_backends:
        raise AssertionError("backend: " + str(backend)
                             + f" not supported. backend must be one of {supported_backends}")
    if version != 0:
        raise AssertionError("Version number: " + str(version) + " in get_default_qconfig is "
                             "not supported. Version number must be 0")
    if backend == "onednn" and not ember.cpu._is_vnni_supported():
        warnings.warn("Default qconfig of oneDNN backend with reduce_range of false may have "
                      "accuracy issues on CPU without Vector Neural Network Instruction "
                      "support.", stacklevel=2)
    weight = (default_weight_observer if backend == "qnnpack"
              else default_per_channel_weight_observer)
    return QConfig(
        activation=HistogramObserver.with_args(reduce_range=backend in ("fbgemm", "x86")),
        weight=weight)


# Symmetric qnnpack qconfigs: signed 8-bit activations, weights restricted to [-127, 127], and an
# eps keeping XNNPACK's requantization scale (input scale * weight scale / output scale) at or
# above its 2**-32 floor
default_symmetric_qnnpack_qconfig = QConfig(
    activation=HistogramObserver.with_args(dtype=ember.qint8, reduce_range=False, eps=2 ** -12),
    weight=weight_observer_range_neg_127_to_127)
default_per_channel_symmetric_qnnpack_qconfig = QConfig(
    activation=HistogramObserver.with_args(dtype=ember.qint8, reduce_range=False, eps=2 ** -12),
    weight=per_channel_weight_observer_range_neg_127_to_127)
default_embedding_qat_qconfig = QConfig(activation=NoopObserver.with_args(dtype=ember.float32),
                                        weight=default_embedding_fake_quant)
default_embedding_qat_qconfig_4bit = QConfig(
    activation=NoopObserver.with_args(dtype=ember.float32),
    weight=default_embedding_fake_quant_4bit)
default_quint8_weight_qconfig = QConfig(activation=HistogramObserver, weight=MinMaxObserver)


def get_default_qat_qconfig(backend="x86", version=1):
    """PyTorch's default QAT qconfig of ``backend``: version 1 the fused observer+fake-quant
    modules, version 0 the separate ones; per-channel weights except for qnnpack, and the
    activations' range halved for fbgemm and x86."""
    supported_backends = ["fbgemm", "x86", "qnnpack", "onednn"]
    if backend not in supported_backends:
        raise AssertionError("backend: " + str(backend)
                             + f" not supported. backend must be one of {supported_backends}")
    if version not in (0, 1):
        raise AssertionError("Version number: " + str(version) + "in get_default_qat_qconfig "
                             "is not supported. Version number must be 0 or 1")
    fake_quant = FakeQuantize if version == 0 else FusedMovingAvgObsFakeQuantize
    act_args = {"observer": MovingAverageMinMaxObserver, "quant_min": 0, "quant_max": 255}
    if backend in ("fbgemm", "x86"):
        act_args["reduce_range"] = True
    elif backend == "qnnpack":
        act_args["reduce_range"] = False
    if version == 0:
        weight = (default_weight_fake_quant if backend == "qnnpack"
                  else default_per_channel_weight_fake_quant)
    else:
        weight = (default_fused_wt_fake_quant if backend == "qnnpack"
                  else default_fused_per_channel_wt_fake_quant)
    return QConfig(activation=fake_quant.with_args(**act_args), weight=weight)


default_symmetric_qnnpack_qat_qconfig = QConfig(
    activation=FusedMovingAvgObsFakeQuantize.with_args(
        observer=MovingAverageMinMaxObserver, quant_min=-128, quant_max=127, dtype=ember.qint8,
        reduce_range=False, eps=2 ** -12),
    weight=fused_wt_fake_quant_range_neg_127_to_127)
default_per_channel_symmetric_qnnpack_qat_qconfig = QConfig(
    activation=FusedMovingAvgObsFakeQuantize.with_args(
        observer=MovingAverageMinMaxObserver, quant_min=-128, quant_max=127, dtype=ember.qint8,
        reduce_range=False, eps=2 ** -12),
    weight=fused_per_channel_wt_fake_quant_range_neg_127_to_127)


def get_default_qconfig_dict(backend="x86", version=0):
    warnings.warn("`torch.ao.quantization.get_default_qconfig_dict` is deprecated and will be "
                  "removed in a future version. Please use "
                  "`torch.ao.quantization.get_default_qconfig_mapping` instead.",
                  FutureWarning, stacklevel=2)
    from .qconfig_mapping import get_default_qconfig_mapping
    return get_default_qconfig_mapping(backend, version).to_dict()


def get_default_qat_qconfig_dict(backend="x86", version=1):
    warnings.warn("`torch.ao.quantization.get_default_qat_qconfig_dict` is deprecated and will "
                  "be removed in a future version. Please use "
                  "`torch.ao.quantization.get_default_qat_qconfig_mapping` instead.",
                  FutureWarning, stacklevel=2)
    from .qconfig_mapping import get_default_qat_qconfig_mapping
    return get_default_qat_qconfig_mapping(backend, version).to_dict()


def _partial_wrapper_equals(a, b):
    ka, kb = dict(a.p.keywords), dict(b.p.keywords)
    same = True
    if "observer" in ka and "observer" in kb:
        same = _obs_or_fq_ctr_equals(ka.pop("observer"), kb.pop("observer"))
    return same and ka == kb and a.p.func == b.p.func


def _obs_or_fq_ctr_equals(a, b):
    from .observer import _PartialWrapper
    if isinstance(a, _PartialWrapper) and isinstance(b, _PartialWrapper):
        return _partial_wrapper_equals(a, b)
    return a == b


def qconfig_equals(q1, q2):
    """Whether two qconfigs build the same observers (``with_args`` partials compared by
    their arguments)."""
    if q1 is None or q2 is None:
        return q1 == q2
    try:
        return (_obs_or_fq_ctr_equals(q1.activation, q2.activation)
                and _obs_or_fq_ctr_equals(q1.weight, q2.weight))
    except AttributeError:
        return q1 == q2


def _activation_is_memoryless(qconfig):
    """Whether the activation observer keeps no history (a moving average with constant 1):
    then it observes the module's input (a forward pre-hook)."""
    def memoryless(observer):
        return getattr(observer, "averaging_constant", None) == 1
    act = qconfig.activation()
    if isinstance(act, FakeQuantizeBase) and hasattr(act, "activation_post_process"):
        return memoryless(act.activation_post_process)
    return memoryless(act)


def _assert_valid_qconfig(qconfig, mod):
    """A qconfig's check against its module: transposed convolutions take no per-channel
    weight observer."""
    if qconfig is None:
        return
    if isinstance(mod, (ember.nn.ConvTranspose1d, ember.nn.ConvTranspose2d,
                        ember.nn.ConvTranspose3d)):
        if qconfig.weight is None:
            return
        from .observer import MovingAveragePerChannelMinMaxObserver, PerChannelMinMaxObserver
        if isinstance(qconfig.weight(), (PerChannelMinMaxObserver,
                                         MovingAveragePerChannelMinMaxObserver)):
            raise AssertionError("Per channel weight observer is not supported yet for "
                                 "ConvTranspose{n}d.")
