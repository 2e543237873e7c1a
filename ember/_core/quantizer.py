"""Quantization schemes and quantizers: what a quantized tensor holds besides its integers
(c10's ``QScheme`` and ATen's ``Quantizer``).

A quantized tensor's element is ``scale * (q - zero_point)`` for its integer ``q``. Its
quantizer says where ``scale`` and ``zero_point`` come from: one pair for the whole tensor
(:class:`PerTensorAffineQuantizer`) or one pair per index along ``axis``
(:class:`PerChannelAffineQuantizer`, whose scales are a float64 tensor and zero points an int64
tensor, as ATen keeps them). Quantizers are immutable: views share their base's, and a view that
drops or moves the channel axis gets a new one (``ember/_kernels/quantized/``).
"""
from . import api_name
from . import dtype as _dt

__all__ = ["qscheme", "per_tensor_affine", "per_channel_affine", "per_tensor_symmetric",
           "per_channel_symmetric", "per_channel_affine_float_qparams"]


class qscheme:
    """A quantization scheme (``torch.qscheme``): one object per scheme, compared by identity,
    pickled by name (a global of this module; ``torch.<name>`` in files ``torch.save``
    writes)."""
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return api_name.name + "." + self.name

    def __reduce__(self):
        return self.name


per_tensor_affine = qscheme("per_tensor_affine")
per_channel_affine = qscheme("per_channel_affine")
per_tensor_symmetric = qscheme("per_tensor_symmetric")
per_channel_symmetric = qscheme("per_channel_symmetric")
per_channel_affine_float_qparams = qscheme("per_channel_affine_float_qparams")

# the quantized dtypes ember computes with -> the NumPy type of their integers (c10's
# ``underlying`` type) and its range
UNDERLYING = {_dt.ALIASES["quint8"]: _dt.uint8, _dt.ALIASES["qint8"]: _dt.int8,
              _dt.ALIASES["qint32"]: _dt.int32}
QUANTIZED_OF = {v: k for k, v in UNDERLYING.items()}  # PyTorch's toQIntType


def qrange(dtype):
    """(qmin, qmax) of a quantized dtype's integers."""
    return {"quint8": (0, 255), "qint8": (-128, 127),
            "qint32": (-2 ** 31, 2 ** 31 - 1)}[dtype.name]


class PerTensorAffineQuantizer:
    """One ``scale`` (a Python float: ATen's double) and ``zero_point`` for every element."""
    __slots__ = ("dtype", "scale", "zero_point")
    qscheme = per_tensor_affine

    def __init__(self, dtype, scale, zero_point):
        self.dtype, self.scale, self.zero_point = dtype, float(scale), int(zero_point)

    def equal_to(self, other):
        return (type(other) is PerTensorAffineQuantizer and other.dtype is self.dtype
                and other.scale == self.scale and other.zero_point == self.zero_point)


class PerChannelAffineQuantizer:
    """``scales[i]`` (float64) and ``zero_points[i]`` (int64) for the elements at index ``i``
    of dim ``axis``."""
    __slots__ = ("dtype", "scales", "zero_points", "axis")
    qscheme = per_channel_affine

    def __init__(self, dtype, scales, zero_points, axis):
        self.dtype, self.scales, self.zero_points, self.axis = dtype, scales, zero_points, axis

    def equal_to(self, other):
        return (type(other) is PerChannelAffineQuantizer and other.dtype is self.dtype
                and other.axis == self.axis and self.scales.equal(other.scales)
                and self.zero_points.equal(other.zero_points))
