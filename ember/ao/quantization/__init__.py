"""``torch.ao.quantization``, as far as a float model uses it: ``QuantStub``, ``DeQuantStub`` and
``QuantWrapper``. Model definitions (torchvision's quantizable models) place these modules
where quantization will later happen; until ``convert`` swaps them they are identities, which is
all they do here. ``prepare``/``convert``, observers and ``QConfig`` are not provided: ember has
no quantized tensors or kernels."""
from ... import nn

__all__ = ["QuantStub", "DeQuantStub", "QuantWrapper"]


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
