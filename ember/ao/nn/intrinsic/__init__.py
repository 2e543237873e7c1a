"""``torch.ao.nn.intrinsic``: the sequences ``fuse_modules`` makes (conv, batch norm, ReLU;
linear, ReLU), plain ``nn.Sequential`` subclasses whose types tell quantization which fused
counterpart replaces them (``intrinsic.qat`` for training, ``intrinsic.quantized`` once
converted)."""
from .... import nn
from ....nn.utils.parametrize import type_before_parametrizations

__all__ = ["_FusedModule", "ConvReLU1d", "ConvReLU2d", "ConvReLU3d", "ConvBn1d", "ConvBn2d",
           "ConvBn3d", "ConvBnReLU1d", "ConvBnReLU2d", "ConvBnReLU3d", "LinearReLU",
           "BNReLU2d", "BNReLU3d", "LinearBn1d"]


class _FusedModule(nn.Sequential):
    pass


def _fused(class_name, *types, doc):
    """A fused sequence of exactly ``types`` (PyTorch checks each module's type before
    parametrizations)."""
    def __init__(self, *modules):
        got = [type_before_parametrizations(m) for m in modules]
        if got != list(types):
            names = [t.__name__ for t in got]
            listed = (" and ".join(names) if len(names) == 2
                      else ", ".join(names[:-1]) + ", and " + names[-1])
            raise AssertionError(f"Incorrect types for input modules: {listed}")
        _FusedModule.__init__(self, *modules)
    return type(class_name, (_FusedModule,), {"__init__": __init__, "__doc__": doc,
                                               "__module__": __name__,
                                               "__qualname__": class_name})


ConvReLU1d = _fused("ConvReLU1d", nn.Conv1d, nn.ReLU, doc="Conv1d then ReLU.")
ConvReLU2d = _fused("ConvReLU2d", nn.Conv2d, nn.ReLU, doc="Conv2d then ReLU.")
ConvReLU3d = _fused("ConvReLU3d", nn.Conv3d, nn.ReLU, doc="Conv3d then ReLU.")
ConvBn1d = _fused("ConvBn1d", nn.Conv1d, nn.BatchNorm1d, doc="Conv1d then BatchNorm1d.")
ConvBn2d = _fused("ConvBn2d", nn.Conv2d, nn.BatchNorm2d, doc="Conv2d then BatchNorm2d.")
ConvBn3d = _fused("ConvBn3d", nn.Conv3d, nn.BatchNorm3d, doc="Conv3d then BatchNorm3d.")
ConvBnReLU1d = _fused("ConvBnReLU1d", nn.Conv1d, nn.BatchNorm1d, nn.ReLU,
                      doc="Conv1d, BatchNorm1d, ReLU.")
ConvBnReLU2d = _fused("ConvBnReLU2d", nn.Conv2d, nn.BatchNorm2d, nn.ReLU,
                      doc="Conv2d, BatchNorm2d, ReLU.")
ConvBnReLU3d = _fused("ConvBnReLU3d", nn.Conv3d, nn.BatchNorm3d, nn.ReLU,
                      doc="Conv3d, BatchNorm3d, ReLU.")
LinearReLU = _fused("LinearReLU", nn.Linear, nn.ReLU, doc="Linear then ReLU.")
LinearBn1d = _fused("LinearBn1d", nn.Linear, nn.BatchNorm1d, doc="Linear then BatchNorm1d.")
BNReLU2d = _fused("BNReLU2d", nn.BatchNorm2d, nn.ReLU, doc="BatchNorm2d then ReLU.")
BNReLU3d = _fused("BNReLU3d", nn.BatchNorm3d, nn.ReLU, doc="BatchNorm3d then ReLU.")

from . import qat  # noqa: E402,F401
from . import quantized  # noqa: E402,F401
