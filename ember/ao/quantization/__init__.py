"""``torch.ao.quantization``, as far as ember quantizes: the stubs a float model places
(``QuantStub``, ``DeQuantStub``, ``QuantWrapper``: identities until ``convert`` swaps them), and
eager dynamic quantization (``quantize_dynamic`` with its observers and ``QConfig``). Static
quantization (``prepare``, calibration, quantized kernels for quantized activations) is not
provided."""
from ... import nn
from .observer import (MinMaxObserver, ObserverBase, PlaceholderObserver,  # noqa: F401
                       default_dynamic_quant_observer, default_weight_observer)
from .qconfig import QConfig, QConfigDynamic, default_dynamic_qconfig  # noqa: F401
from .quantize import (convert, get_default_dynamic_quant_module_mappings,  # noqa: F401
                       propagate_qconfig_, quantize_dynamic, swap_module)

# torch.ao.quantization.quantize is PyTorch's static-quantization function, which ember lacks,
# not the submodule of that name
globals().pop("quantize")

__all__ = ["QuantStub", "DeQuantStub", "QuantWrapper", "ObserverBase", "MinMaxObserver",
           "PlaceholderObserver", "default_weight_observer", "default_dynamic_quant_observer",
           "QConfig", "QConfigDynamic", "default_dynamic_qconfig", "quantize_dynamic",
           "propagate_qconfig_", "convert", "swap_module",
           "get_default_dynamic_quant_module_mappings"]


class QuantStub(nn.Module):
    """Where a tensor will be quantized; the identity in a float model."""

    def __init__(self, qconfig=None):
        super().__init__()
        if qconfig:
            self.qconfig = qconfig

    def forward(self, x):
        return x


class DeQuantStub(nn.Module):
    """Where a tensor will be dequantized; the identity in a float model."""

    def __init__(self, qconfig=None):
        super().__init__()
        if qconfig:
            self.qconfig = qconfig

    def forward(self, x):
        return x


class QuantWrapper(nn.Module):
    """``module`` between a QuantStub and a DeQuantStub (sharing its ``qconfig``)."""

    def __init__(self, module):
        super().__init__()
        qconfig = getattr(module, "qconfig", None)
        self.add_module("quant", QuantStub(qconfig))
        self.add_module("dequant", DeQuantStub(qconfig))
        self.add_module("module", module)
        self.train(module.training)

    def forward(self, X):
        return self.dequant(self.module(self.quant(X)))
