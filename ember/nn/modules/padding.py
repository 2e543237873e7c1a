"""Padding modules: constant/zero, reflection, replication and circular padding via ``F.pad``."""
from .. import functional as F
from .module import Module
from .utils import _ntuple, _pair, _quadruple

__all__ = ["CircularPad1d", "CircularPad2d", "CircularPad3d", "ConstantPad1d", "ConstantPad2d",
           "ConstantPad3d", "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d",
           "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d", "ZeroPad1d", "ZeroPad2d",
           "ZeroPad3d"]

_PADDING_TUPLE = {1: _pair, 2: _quadruple, 3: _ntuple(6)}


class _PadNd(Module):
    """A pad over the last ``_dims`` dimensions with ``F.pad`` mode ``_mode``."""

    __constants__ = ["padding"]
    _dims = 0
    _mode = None

    def __init__(self, padding):
        super().__init__()
        self.padding = _PADDING_TUPLE[self._dims](padding)

    def forward(self, input):
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self):
        return f"{self.padding}"


class _CircularPadNd(_PadNd):
    _mode = "circular"

    def _check_input_dim(self, input):
        lo = self._dims + 1
        if input.dim() not in (lo, lo + 1):
            raise ValueError(f"expected {lo}D or {lo + 1}D input (got {input.dim()}D input)")

    def forward(self, input):
        self._check_input_dim(input)
        return F.pad(input, self.padding, "circular")


class CircularPad1d(_CircularPadNd):
    _dims = 1


class CircularPad2d(_CircularPadNd):
    _dims = 2


class CircularPad3d(_CircularPadNd):
    _dims = 3


class _ConstantPadNd(Module):
    __constants__ = ["padding", "value"]
    _dims = 0

    def __init__(self, padding, value):
        super().__init__()
        self.padding = _PADDING_TUPLE[self._dims](padding)
        self.value = value

    def forward(self, input):
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    _dims = 1


class ConstantPad2d(_ConstantPadNd):
    _dims = 2


class ConstantPad3d(_ConstantPadNd):
    _dims = 3


class ReflectionPad1d(_PadNd):
    _dims, _mode = 1, "reflect"


class ReflectionPad2d(_PadNd):
    _dims, _mode = 2, "reflect"


class ReflectionPad3d(_PadNd):
    _dims, _mode = 3, "reflect"


class ReplicationPad1d(_PadNd):
    _dims, _mode = 1, "replicate"


class ReplicationPad2d(_PadNd):
    _dims, _mode = 2, "replicate"


class ReplicationPad3d(_PadNd):
    _dims, _mode = 3, "replicate"


class _ZeroPad:
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ZeroPad1d(_ZeroPad, ConstantPad1d):
    pass


class ZeroPad2d(_ZeroPad, ConstantPad2d):
    pass


class ZeroPad3d(_ZeroPad, ConstantPad3d):
    pass
