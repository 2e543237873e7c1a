"""``torch.ao.quantization.stubs``: the markers a float model places where tensors will be
quantized and dequantized (``QuantStub``, ``DeQuantStub``, ``QuantWrapper``): identities until
``convert`` swaps them; ``prepare`` observes a QuantStub's output."""
from ... import nn


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
