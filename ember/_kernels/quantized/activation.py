"""ReLU of quantized tensors (ATen's ``qrelu.cpp``): the integers raised to the zero point, the
quantizer kept (per tensor only, as ATen reads ``q_zero_point()``)."""
import numpy as np

from ..registration import register
from .affine import _suggest_channels_last, int_alias, new_qtensor


def relu(self):
    zero_point = self.q_zero_point()
    q, view = new_qtensor(self._size, self._quantizer, _suggest_channels_last(self))
    view[...] = np.maximum(int_alias(self)._nd(), zero_point)
    return q


def relu_(self):
    zero_point = self.q_zero_point()
    ints = int_alias(self)._nd()
    np.maximum(ints, zero_point, out=ints)
    return self


register("relu", "QuantizedCPU", relu)
register("relu_", "QuantizedCPU", relu_)
