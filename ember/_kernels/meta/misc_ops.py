"""Meta kernel of isin (cpu/misc_ops.py): a bool tensor of the elements' shape."""
from ..._core import dtype as D
from ..._core.device import META
from ..._tensor import empty_tensor


def meta_isin_Tensor_Tensor(elements, test_elements, assume_unique=False, invert=False):
    from ..cpu.misc_ops import check_isin
    check_isin(elements, test_elements)
    return empty_tensor(getattr(elements, "_size", ()), D.bool_, META)


meta_isin_Tensor_Scalar = meta_isin_Tensor_Tensor
meta_isin_Scalar_Tensor = meta_isin_Tensor_Tensor
__all__ = ["meta_isin_Tensor_Tensor", "meta_isin_Tensor_Scalar", "meta_isin_Scalar_Tensor"]
