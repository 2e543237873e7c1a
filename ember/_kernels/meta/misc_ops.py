"""Meta kernels of isin (a bool tensor of the elements' shape) and triu/tril_indices (2 x the
number of positions on or above/below the diagonal ``offset``), after the CPU kernels' checks."""
from ..._core import dtype as D
from ..._core.device import META
from ..._core.tensor_impl import empty_tensor


def meta_isin_Tensor_Tensor(elements, test_elements, assume_unique=False, invert=False):
    from ..rules.misc_ops import check_isin
    check_isin(elements, test_elements)
    return empty_tensor(getattr(elements, "_size", ()), D.bool_, META)


meta_isin_Tensor_Scalar = meta_isin_Tensor_Tensor
meta_isin_Scalar_Tensor = meta_isin_Tensor_Tensor


def _tri_count(row, col, offset, upper):
    """Positions (i, j) of a row x col matrix with j - i >= offset (upper) or <= offset."""
    if upper:
        return sum(max(0, col - max(0, i + offset)) for i in range(row))
    return sum(max(0, min(col, i + offset + 1)) for i in range(row))


def meta_triu_indices(row, col, offset=0, dtype=D.int64, layout=None, device=None,
                      pin_memory=None):
    from ..rules.misc_ops import check_tri_indices
    dtype = D.int64 if dtype is None else dtype
    check_tri_indices("triu_indices", row, col, dtype)
    return empty_tensor((2, _tri_count(row, col, offset, True)), dtype, META)


def meta_tril_indices(row, col, offset=0, dtype=D.int64, layout=None, device=None,
                      pin_memory=None):
    from ..rules.misc_ops import check_tri_indices
    dtype = D.int64 if dtype is None else dtype
    check_tri_indices("tril_indices", row, col, dtype)
    return empty_tensor((2, _tri_count(row, col, offset, False)), dtype, META)
