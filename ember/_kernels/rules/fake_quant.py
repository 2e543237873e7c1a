"""Rules of the fake-quantization ops (ATen's ``FakeQuantPerTensorAffine.cpp``,
``FakeQuantPerChannelAffine.cpp`` and ``fused_obs_fake_quant.cpp``), for every backend: the
argument checks that need no tensor values, with PyTorch's errors, and the dtypes the kernels
take. The CPU kernels (``quantized/fake_quant.py``) and the Meta kernels (``meta/fake_quant.py``)
call them; this module imports no backend."""
from ..._core import dtype as D

# the input dtypes the kernels dispatch on (AT_DISPATCH_FLOATING_TYPES_AND_HALF and the reduced
# floating types)
FLOATS = (D.float32, D.float64, D.float16, D.bfloat16)

_IMPROVE = ("  (Could this error message be improved?  If so, please report an enhancement "
            "request to PyTorch.)")


def check_input_dtype(self, kernel_name):
    if self._dtype not in FLOATS:
        raise NotImplementedError(f'"{kernel_name}" not implemented for \'{self._dtype._short}\'')


def check_qrange(quant_min, quant_max):
    # (the message keeps the spaces of PyTorch's line continuation)
    if not quant_min <= quant_max:
        raise RuntimeError("`quant_min` should be less than or         equal to `quant_max`.")


def check_zero_point_in_range(zp_min, zp_max, quant_min, quant_max):
    if not (zp_min >= quant_min and zp_max <= quant_max):
        raise RuntimeError("`zero_point` must be between `quant_min` and `quant_max`.")


def check_per_tensor(self, zero_point, quant_min, quant_max):
    """``fake_quantize_per_tensor_affine_cachemask``'s checks."""
    check_qrange(quant_min, quant_max)
    check_zero_point_in_range(zero_point, zero_point, quant_min, quant_max)
    check_input_dtype(self, "fake_quantize_tensor_cachemask_kernel_type_handling")


def check_per_channel(self, scale, zero_point, axis, quant_min, quant_max):
    """``fake_quantize_per_channel_affine_cachemask``'s checks before the zero points' range
    (which needs their values): dtypes, shapes, the range and the axis."""
    if scale._dtype not in (D.float32, D.bfloat16):
        raise RuntimeError(f"Scale must be Float or BFloat16, found {scale._dtype._short}")
    if zero_point._dtype not in (D.int32, D.float32, D.float16):
        raise RuntimeError(f"Zero-point must be Int32, Float or Half, found "
                           f"{zero_point._dtype._short}")
    if scale.dim() != 1:
        raise RuntimeError("scale should be a 1-D tensor")
    if zero_point.dim() != 1:
        raise RuntimeError("zero point should be a 1-D tensor")
    if scale.numel() != zero_point.numel():
        raise RuntimeError("scale and zero-point need to have the same dimensions")
    if scale.numel() != self.size(axis):  # (size() raises IndexError for an axis out of range)
        raise RuntimeError("dimensions of scale and zero-point are not consistent with input "
                           "tensor")
    check_qrange(quant_min, quant_max)


def check_axis(self, axis, inclusive=True):
    """The forward accepts ``axis == self.dim()`` (its check is ``axis <= self.dim()``), the
    learnable backward does not."""
    if not (axis >= 0 and (axis <= self.dim() if inclusive else axis < self.dim())):
        raise RuntimeError("`axis` must be between 0 and number of dimensions of input")


def check_per_channel_kernel(self, scale):
    """The per-channel kernel's lambdas take a float scale and no dynamic casting: a bfloat16
    scale trips its internal assert."""
    check_input_dtype(self, "fake_quantize_channel_cachemask_cpu_type_handling")
    if scale._dtype is not D.float32:
        raise RuntimeError("!needs_dynamic_casting<func_t>::check(iter) INTERNAL ASSERT FAILED "
                           "at \"/__w/pytorch/pytorch/aten/src/ATen/native/cpu/Loops.h\":311, "
                           "please report a bug to PyTorch. ")


def expect(cond, text):
    """A TORCH_CHECK without a message: PyTorch's text names the condition."""
    if not cond:
        raise RuntimeError(f"Expected {text} to be true, but got false." + _IMPROVE)


def check_learnable_dtypes(dY, X, scale, zero_point, suffix=""):
    """The float32 checks of ``_fake_quantize_learnable_per_*_affine_backward`` (which name
    their bfloat16-converted copies, ``dY_`` ...)."""
    for t, name in ((dY, "dY"), (X, "X"), (scale, "scale"), (zero_point, "zero_point")):
        expect(t._dtype is D.float32, f"{name}{suffix}.scalar_type() == ScalarType::Float")
