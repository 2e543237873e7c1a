"""CPU kernels of the factories and lookups added for issue 18: logspace, triu_indices,
tril_indices and isin."""
import numpy as np

from ..._core import dtype as D
from ..._core.promotion import result_type_of
from ..rules.factory import check_range_kernel, linspace_dtype
from .factory import honour_pin_memory
from .ranges import linspace
from .pointwise import as_array
from ._util import nd, wrap
from ..rules.misc_ops import check_isin, check_tri_indices


@honour_pin_memory
def logspace(start, end, steps, base=10.0, dtype=None, layout=None, device=None,
             pin_memory=None):
    """base ** linspace(start, end, steps): the exponents laid out as linspace lays out its
    points (in double for integral dtypes), then raised and cast to the result dtype."""
    dtype = linspace_dtype(start, end, dtype)
    check_range_kernel("logspace_cpu", dtype, steps)
    work = dtype if (dtype.is_floating_point or dtype.is_complex) else D.float64
    exps = nd(linspace(start, end, steps, work))
    with np.errstate(all="ignore"):
        r = np.power(np.asarray(base, exps.dtype), exps)
    return wrap(np.asarray(r).astype(dtype._np))


@honour_pin_memory
def triu_indices(row, col, offset=0, dtype=D.int64, layout=None, device=None, pin_memory=None):
    dtype = D.int64 if dtype is None else dtype
    check_tri_indices("triu_indices", row, col, dtype)
    return wrap(np.stack(np.triu_indices(row, offset, col)).astype(dtype._np))


@honour_pin_memory
def tril_indices(row, col, offset=0, dtype=D.int64, layout=None, device=None, pin_memory=None):
    dtype = D.int64 if dtype is None else dtype
    check_tri_indices("tril_indices", row, col, dtype)
    return wrap(np.stack(np.tril_indices(row, offset, col)).astype(dtype._np))


def _isin(elements, test_elements, invert):
    check_isin(elements, test_elements)
    dt = result_type_of((elements, test_elements))
    a = np.asarray(as_array(elements, dt))
    b = np.asarray(as_array(test_elements, dt)).reshape(-1)
    return wrap(np.asarray(np.isin(a, b, invert=invert)))


def isin_Tensor_Tensor(elements, test_elements, assume_unique=False, invert=False):
    return _isin(elements, test_elements, invert)


isin_Tensor_Scalar = isin_Tensor_Tensor
isin_Scalar_Tensor = isin_Tensor_Tensor
