"""PyTorch's ``torch.masked.maskedtensor.creation``: the MaskedTensor constructors."""
from .core import MaskedTensor

__all__ = ["as_masked_tensor", "masked_tensor"]


def masked_tensor(data, mask, requires_grad=False):
    """A MaskedTensor of copies of ``data`` and ``mask`` (a leaf: no gradient flows to data)."""
    return MaskedTensor(data, mask, requires_grad)


def as_masked_tensor(data, mask):
    """A MaskedTensor of ``data`` and ``mask`` through which gradients flow back to ``data``."""
    return MaskedTensor._from_values(data, mask)
