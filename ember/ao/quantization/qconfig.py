"""``torch.ao.quantization.qconfig``: ``QConfig``, the pair of observer factories (activation,
weight) a module is quantized with, and the default dynamic one."""
from collections import namedtuple

from .observer import default_dynamic_quant_observer, default_weight_observer

__all__ = ["QConfig", "QConfigDynamic", "default_dynamic_qconfig"]


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

default_dynamic_qconfig = QConfig(activation=default_dynamic_quant_observer,
                                  weight=default_weight_observer)
