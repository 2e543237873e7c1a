"""What the prepacked weights of ``quantized::linear`` and the quantized convolutions share
(PyTorch's ``LinearPackedParamsBase`` and ``ConvPackedParamsBase`` script objects): the int8
weight as prepacking keeps it, its scales as the kernels read them (float), its zero points
(int64, one per output channel), and the float bias; pickled as what ``unpack()`` returns."""
import numpy as np

from ..._core import dtype as _dt
from ..._core.quantizer import per_channel_affine, per_tensor_affine
from ..._ops.overload import ops
from .affine import int_alias

_aten = ops.aten
_qint8 = _dt.ALIASES["qint8"]


class PackedParams:
    """A prepacked int8 weight (output channels first) and float bias; subclasses add their
    geometry (``_state`` is the rest of the pickled state) and their kernels' forms of the
    weight (``_pack``)."""

    def __init__(self, weight, bias, *geometry):
        self._set(weight, bias, *geometry)

    def _set(self, weight, bias, *geometry):
        self._weight, self._bias = weight, bias
        quantizer = weight._quantizer
        oc = weight.shape[0]
        if quantizer.qscheme is per_tensor_affine:
            self._w_scale = np.full(1, quantizer.scale, np.float32)
            self._w_zp = np.full(oc, quantizer.zero_point, np.int64)
        else:
            self._w_scale = quantizer.scales._nd().astype(np.float32)
            self._w_zp = quantizer.zero_points._nd().astype(np.int64)
        self._per_channel = quantizer.qscheme is per_channel_affine
        self._bias_f32 = None if bias is None else bias.detach()._nd().astype(np.float32)
        self._pack(np.asarray(int_alias(weight)._nd(), np.int64), *geometry)

    def _pack(self, ints, *geometry):
        raise NotImplementedError

    def _state(self):
        return ()

    def unpack(self):
        return self._weight, self._bias

    def weight(self):
        return self._weight

    def bias(self):
        return self._bias

    def __getstate__(self):
        return (self._weight, self._bias) + self._state()

    def __setstate__(self, state):
        self._set(*state)


def check_weight_dtype(weight):
    if weight.dtype is not _qint8:
        raise RuntimeError(f"expected scalar type QInt8 but found {weight.dtype._short}")


def check_bias(bias, n, what):
    """Prepacking's bias checks (``what`` names the output channels: K or N); the bias
    contiguous."""
    if bias is None:
        return None
    if bias.dim() != 1:
        raise RuntimeError("bias should be a vector (1D Tensor)")
    if bias.shape[0] != n:
        raise RuntimeError(f"bias should have {what} elements: {n}")
    return bias.contiguous()


def packed_weight(weight, memory_format, fbgemm):
    """The weight as prepacking keeps it: a copy in ``memory_format``; FBGEMM's with its
    scales rounded to float (as ``unpack()`` hands them back), oneDNN's as given."""
    quantizer = weight._quantizer
    ints = int_alias(_aten.clone(weight, memory_format=memory_format))
    if quantizer.qscheme is per_tensor_affine:
        scale = float(np.float32(quantizer.scale)) if fbgemm else quantizer.scale
        return _aten._make_per_tensor_quantized_tensor(ints, scale, quantizer.zero_point)
    scales = (quantizer.scales.to(_dt.float32).to(_dt.float64) if fbgemm
              else quantizer.scales)
    return _aten._make_per_channel_quantized_tensor(ints, scales, quantizer.zero_points,
                                                    quantizer.axis)
