"""Linear-algebra functions PyTorch defines in Python rather than as one aten op: ``torch.lu``
and ``Tensor.lu`` (torch/functional.py, torch/_tensor.py, over aten ``_lu_with_info``) and the
randomized ``svd_lowrank`` / ``pca_lowrank`` (re-exported from ``ember._lowrank``, PyTorch's
``torch/_lowrank.py``) and ``lobpcg`` (from ``ember._lobpcg``). Exported from ``ember``."""
from ._ops.overload import ops as _ops
from ._tensor import Tensor as _Tensor

__all__ = ["lu", "svd_lowrank", "pca_lowrank", "lobpcg"]


def _check_list_size(out_len, get_infos, out):
    if out_len - (1 if get_infos else 0) != 2:
        raise TypeError(f"expected tuple of {2 + int(get_infos)} elements but got {out_len}")
    if not isinstance(out, (tuple, list)):
        raise TypeError(f"argument 'out' must be tuple of Tensors, not {type(out).__name__}")


def lu(A, pivot=True, get_infos=False, out=None):
    """LU factorization with pivots (and the LAPACK infos when ``get_infos``); deprecated in
    PyTorch in favour of ``linalg.lu_factor``, whose warning ``_lu_with_info`` raises once."""
    # with get_infos the caller checks the infos, so no error is raised (and vice versa)
    result = _ops.aten._lu_with_info.default(A, pivot, not get_infos)
    if out is not None:
        _check_list_size(len(out), get_infos, out)
        for dst, src in zip(out, result):
            dst.resize_(src.shape).copy_(src)
        return out
    return result if get_infos else (result[0], result[1])


def _tensor_lu(self, pivot=True, get_infos=False):
    LU, pivots, infos = _ops.aten._lu_with_info.default(self, pivot, not get_infos)
    return (LU, pivots, infos) if get_infos else (LU, pivots)


_Tensor.lu = _tensor_lu


from ._lowrank import pca_lowrank, svd_lowrank  # noqa: E402  (torch._lowrank's home)
from ._lobpcg import lobpcg  # noqa: E402  (torch._lobpcg's home)
