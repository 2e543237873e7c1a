"""``torch.ao.quantization.qconfig``: ``QConfig``, the pair of observer or fake-quantizer
factories (activation, weight) a module is quantized with, the default ones (dynamic, static,
quantization-aware training) and ``get_default_qat_qconfig`` for a backend."""
from collections import namedtuple

from .fake_quantize import (FakeQuantize, FakeQuantizeBase, FusedMovingAvgObsFakeQuantize,
                            default_fake_quant, default_fused_act_fake_quant,
                            default_fused_per_channel_wt_fake_quant, default_fused_wt_fake_quant,
                            default_per_channel_weight_fake_quant, default_weight_fake_quant)
from .observer import (MovingAverageMinMaxObserver, default_dynamic_quant_observer,
                       default_observer, default_per_channel_weight_observer,
                       default_weight_observer)

__all__ = ["QConfig", "QConfigDynamic", "default_dynamic_qconfig", "default_qconfig",
           "default_per_channel_qconfig", "default_qat_qconfig", "default_qat_qconfig_v2",
           "default_weight_only_qconfig", "default_activation_only_qconfig",
           "get_default_qat_qconfig", "qconfig_equals"]


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


default_dynamic_qconfig = QConfig(activation=default_dynamic_quant_observer,
                                  weight=default_weight_observer)
default_qconfig = QConfig(activation=default_observer, weight=default_weight_observer)
default_per_channel_qconfig = QConfig(activation=default_observer,
                                      weight=default_per_channel_weight_observer)
default_qat_qconfig = QConfig(activation=default_fake_quant, weight=default_weight_fake_quant)
default_weight_only_qconfig = QConfig(activation=_identity(), weight=default_weight_fake_quant)
default_activation_only_qconfig = QConfig(activation=default_fake_quant, weight=_identity())
default_qat_qconfig_v2 = QConfig(activation=default_fused_act_fake_quant,
                                 weight=default_fused_wt_fake_quant)


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
