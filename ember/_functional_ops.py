"""Python-level functions whose behaviour PyTorch defines in Python rather than in one aten
schema (``torch/functional.py``, ``torch/_tensor.py``): they pick an aten overload from their
arguments and shape the result. Exported from ``ember`` (and the matching ``Tensor`` methods)."""
from ._ops.overload import ops as _ops
from ._tensor import Tensor as _Tensor

__all__ = ["unique", "unique_consecutive", "norm"]


def _unique_result(output, inverse, counts, return_inverse, return_counts):
    """torch.unique's return: the values alone, or a tuple with the inverse and/or counts."""
    if return_inverse and return_counts:
        return output, inverse, counts
    if return_inverse:
        return output, inverse
    if return_counts:
        return output, counts
    return output


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    """torch.unique: aten ``_unique2`` over all elements, ``unique_dim`` over slices."""
    if dim is None:
        out = _ops.aten._unique2.default(input, sorted, return_inverse, return_counts)
    else:
        out = _ops.aten.unique_dim.default(input, dim, sorted, return_inverse, return_counts)
    return _unique_result(*out, return_inverse, return_counts)


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    out = _ops.aten.unique_consecutive.default(input, return_inverse, return_counts, dim)
    return _unique_result(*out, return_inverse, return_counts)


def norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):  # noqa: A002
    """torch.norm: 'fro' (over at most two dims) and numeric p are vector norms over ``dim``
    (every dim when None); 'nuc' and 'fro' over other dims are matrix norms."""
    dims = [dim] if isinstance(dim, int) else dim
    if isinstance(p, str):
        if p != "fro" or (dims is not None and len(dims) > 2):
            from . import linalg
            mdims = list(range(input.dim())) if dims is None else dims
            kw = {} if out is None else {"out": out}
            return linalg.matrix_norm(input, p, mdims, keepdim, dtype=dtype, **kw)
        p = 2
    p = 2.0 if p is None else p
    dims = [] if dims is None else list(dims)  # [] reduces every dim
    aten = _ops.aten
    if dtype is None:
        args, op = (input, p, dims, keepdim), aten.norm.ScalarOpt_dim
        out_op = aten.norm.out
    else:
        args, op = (input, p, dims, keepdim), aten.norm.ScalarOpt_dim_dtype
        out_op = aten.norm.dtype_out
    kwargs = {} if dtype is None else {"dtype": dtype}
    if out is not None:
        return out_op(*args, out=out, **kwargs)
    return op(*args, **kwargs)


def _tensor_unique(self, sorted=True, return_inverse=False, return_counts=False,  # noqa: A002
                   dim=None):
    return unique(self, sorted, return_inverse, return_counts, dim)


def _tensor_unique_consecutive(self, return_inverse=False, return_counts=False, dim=None):
    return unique_consecutive(self, return_inverse, return_counts, dim)


def _tensor_norm(self, p="fro", dim=None, keepdim=False, dtype=None):
    return norm(self, p, dim, keepdim, dtype=dtype)


_Tensor.unique = _tensor_unique
_Tensor.unique_consecutive = _tensor_unique_consecutive
_Tensor.norm = _tensor_norm


# -- shape and linear-algebra wrappers of torch/functional.py (issue 3) ----------------------------

__all__ += ["meshgrid", "einsum", "block_diag", "cartesian_prod", "chain_matmul", "tensordot",
            "nonzero"]


def _tensors(args):
    """PyTorch's functions taking ``*tensors`` also accept one list/tuple of tensors."""
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        return list(args[0])
    return list(args)


def meshgrid(*tensors, indexing=None):
    """torch.meshgrid: ``indexing`` 'ij' (the default, with PyTorch's warning) or 'xy'."""
    ts = _tensors(tensors)
    if indexing is None:
        return tuple(_ops.aten.meshgrid.default(ts))
    return tuple(_ops.aten.meshgrid.indexing(ts, indexing=indexing))


def _sublist_letters(sublist):
    import string
    letters = string.ascii_letters
    out = []
    for s in sublist:
        if s is Ellipsis:
            out.append("...")
        elif isinstance(s, int) and 0 <= s < len(letters):
            out.append(letters[s])
        else:
            raise ValueError(f"einsum(): subscript in subscript list is not within the valid range "
                             f"[0, 52)")
    return "".join(out)


def einsum(*args):
    """torch.einsum(equation, *operands), (equation, [operands]) or the sublist form
    (op1, sublist1, op2, sublist2, ..., [sublist_out])."""
    if len(args) < 2:
        raise ValueError("einsum(): must specify the equation string and at least one operand, "
                         "or at least one operand and its subscripts list")
    if isinstance(args[0], str):
        equation, operands = args[0], _tensors(args[1:])
    else:  # sublist format
        operands = list(args[0::2][:len(args) // 2])
        subs = [_sublist_letters(s) for s in args[1::2][:len(operands)]]
        equation = ",".join(subs)
        if len(args) % 2 == 1:
            equation += "->" + _sublist_letters(args[-1])
    return _ops.aten.einsum.default(equation, operands)


def block_diag(*tensors):
    return _ops.aten.block_diag.default(list(tensors))


def cartesian_prod(*tensors):
    return _ops.aten.cartesian_prod.default(list(tensors))


def chain_matmul(*matrices, out=None):
    if out is not None:
        return _ops.aten.chain_matmul.out(list(matrices), out=out)
    return _ops.aten.chain_matmul.default(list(matrices))


def tensordot(a, b, dims=2, out=None):
    """torch.tensordot: ``dims`` an int (the last dims of a with the first of b), a pair of lists,
    or a 2-element tensor/list of ints."""
    if hasattr(dims, "_keyset"):
        dims = dims.tolist()
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > min(a.dim(), b.dim()):
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        ds, do = list(range(a.dim() - dims, a.dim())), list(range(dims))
    elif isinstance(dims, (list, tuple)) and len(dims) == 2:
        ds, do = dims
        ds = [ds] if isinstance(ds, int) else list(ds)
        do = [do] if isinstance(do, int) else list(do)
    else:
        raise RuntimeError(f"tensordot expects dims to be a list or tuple of length 2, or an int, "
                           f"but got {dims}")
    if out is not None:
        return _ops.aten.tensordot.out(a, b, ds, do, out=out)
    return _ops.aten.tensordot.default(a, b, ds, do)


def nonzero(input, *, out=None, as_tuple=False):  # noqa: A002
    """torch.nonzero: an (n, ndim) index tensor, or with ``as_tuple`` one index tensor per dim."""
    if as_tuple:
        return tuple(_ops.aten.nonzero_numpy.default(input))
    if out is not None:
        return _ops.aten.nonzero.out(input, out=out)
    return _ops.aten.nonzero.default(input)


def _tensor_nonzero(self, *, as_tuple=False):
    return nonzero(self, as_tuple=as_tuple)


_Tensor.nonzero = _tensor_nonzero
