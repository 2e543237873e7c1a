"""Sparse COO constructors and conversions that work the same on every backend (PyTorch's
CompositeImplicitAutograd and CompositeExplicitAutograd kernels of ``SparseTensor.cpp``): a
sparse tensor from indices and values, dense to sparse, and the conversions that return their
input when it already has the asked layout. The kernels of sparse inputs are
``ember/_kernels/sparse/coo.py``; the checks are ``rules/sparse.py``."""
from ..._core import dtype as D
from ..._core.device import sparse_coo, sparse_csr, strided
from ..._core.tensor_impl import sparse_coo_tensor_impl, sparse_csr_tensor_impl
from ..._dispatch.keys import SPARSE_BITS, SPARSE_CSR_BITS
from ..._ops.overload import ops
from ..rules import sparse as _R

_aten = ops.aten


def _check_layout(layout, fname):
    if layout is not None and layout is not sparse_coo:
        raise RuntimeError(f"{fname}: expected layout=torch.sparse_coo, got {layout}")


# -- constructors -------------------------------------------------------------------------------

def _sparse_coo_tensor_with_dims_and_tensors(sparse_dim, dense_dim, size, indices, values,
                                             dtype=None, layout=None, device=None,
                                             pin_memory=False, is_coalesced=None):
    _check_layout(layout, "_sparse_coo_tensor_with_dims_and_tensors")
    size = tuple(int(s) for s in size)
    _R.check_parts(indices, values, size)
    if indices._size[0] != sparse_dim or values.dim() - 1 != dense_dim:
        raise RuntimeError(f"'len(size) == sparse_dim + dense_dim' is not satisfied: len(size) = "
                           f"{len(size)}, sparse_dim = {sparse_dim}, dense_dim = {dense_dim}")
    if dtype is not None and dtype is not values._dtype:
        values = values.to(dtype)
    if device is not None and device != values._device:
        indices, values = indices.to(device), values.to(device)
    return sparse_coo_tensor_impl(indices, values, size, bool(is_coalesced))


def _sparse_coo_tensor_with_dims(sparse_dim, dense_dim, size, dtype=None, layout=None,
                                 device=None, pin_memory=False):
    """An empty (nnz = 0) sparse tensor."""
    _check_layout(layout, "_sparse_coo_tensor_with_dims")
    size = tuple(int(s) for s in size)
    if len(size) != sparse_dim + dense_dim:
        raise RuntimeError(f"'len(size) == sparse_dim + dense_dim' is not satisfied: len(size) = "
                           f"{len(size)}, sparse_dim = {sparse_dim}, dense_dim = {dense_dim}")
    indices = _aten.empty.memory_format._call((sparse_dim, 0), D.int64, None, device, None,
                                              None)
    values = _aten.empty.memory_format._call((0,) + size[sparse_dim:], dtype, None, device,
                                             None, None)
    return sparse_coo_tensor_impl(indices, values, size, True)


def _sparse_coo_tensor_unsafe(indices, values, size, dtype=None, layout=None, device=None,
                              pin_memory=None, is_coalesced=None):
    return _aten._sparse_coo_tensor_with_dims_and_tensors.default._call(
        indices._size[0], values.dim() - 1, size, indices, values, dtype, layout, device,
        pin_memory, is_coalesced)


def sparse_coo_tensor_indices_size(indices, values, size, dtype=None, layout=None, device=None,
                                   pin_memory=None, is_coalesced=None):
    return _sparse_coo_tensor_unsafe(indices, values, size, dtype, layout, device, pin_memory,
                                     is_coalesced)


def sparse_coo_tensor_indices(indices, values, dtype=None, layout=None, device=None,
                              pin_memory=None, is_coalesced=None):
    """The size is inferred: one more than the largest index of each sparse dim, then the
    values' dense sizes."""
    if indices.dim() != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: "
                           f"{_R._fmt(indices._size)}")
    sparse_dim = indices._size[0]
    if indices._size[1]:
        sizes = [int(m) + 1 for m in indices.amax(1).tolist()]
    else:
        sizes = [0] * sparse_dim
    return _sparse_coo_tensor_unsafe(indices, values, sizes + list(values._size[1:]), dtype,
                                     layout, device, pin_memory, is_coalesced)


def sparse_coo_tensor_size(size, dtype=None, layout=None, device=None, pin_memory=False):
    return _sparse_coo_tensor_with_dims(len(size), 0, size, dtype, layout, device, pin_memory)


def _validate_sparse_coo_tensor_args(indices, values, size, is_coalesced=None,
                                     check_pinning=None):
    """PyTorch's invariant checks (``check_invariants=True``): the parts' shapes, indices within
    the sizes, and, when ``is_coalesced``, indices sorted and unique."""
    size = tuple(size)
    _R.check_parts(indices, values, size)
    if indices._size[1]:
        _R.check_index_bounds(indices, size, indices.amin(1).tolist(), indices.amax(1).tolist())
        if is_coalesced:
            c = _aten._sparse_coo_tensor_unsafe.default._call(indices, values, size).coalesce()
            if c._nnz() != indices._size[1] or not bool((c._indices() == indices).all()):
                raise RuntimeError("cannot set is_coalesced to true if indices correspond to "
                                   "uncoalesced COO tensor")


# -- conversions ---------------------------------------------------------------------------------

def _is_sparse(t):
    return t._keyset & SPARSE_BITS


def _is_csr(t):
    return t._keyset & SPARSE_CSR_BITS


def _to_sparse_sparse_dim(self, sparse_dim):
    """A dense tensor as a coalesced sparse one: an entry for each index of the first
    ``sparse_dim`` dims whose dense slice holds a nonzero."""
    ndim = self.dim()
    _R.check_to_sparse_dim(sparse_dim, ndim)
    if sparse_dim == 0:
        indices = _aten.zeros.default._call((0, 1), D.int64, None, self._device, None)
        return sparse_coo_tensor_impl(indices, self.unsqueeze(0).clone(), self._size, True)
    nonzero = self != 0
    if sparse_dim < ndim:
        nonzero = nonzero.flatten(sparse_dim).any(-1)
    indices = nonzero.nonzero().t().contiguous()
    values = _aten.index.Tensor._call(self, list(indices.unbind(0)))
    return sparse_coo_tensor_impl(indices, values, self._size, True)


def _to_sparse(self, layout=None, blocksize=None, dense_dim=None):
    if layout is sparse_csr:
        return _aten._to_sparse_csr.default._call(self, dense_dim)
    if layout is not None and layout is not sparse_coo:
        raise NotImplementedError(f"to_sparse: ember has sparse COO and CSR tensors only, not "
                                  f"{layout}")
    if blocksize is not None:
        raise RuntimeError("to_sparse for Strided to SparseCoo conversion does not use specified "
                           "blocksize")
    return _to_sparse_sparse_dim(self, self.dim() - (dense_dim or 0))


def to_sparse_sparse_dim(self, sparse_dim):
    if _is_sparse(self):
        if sparse_dim != self.sparse_dim():
            raise RuntimeError("to_sparse: conversion from Sparse to Sparse with sparse_dim "
                               "argument !=self.sparse_dim() is not supported")
        return self
    return _aten._to_sparse.sparse_dim._call(self, sparse_dim)


def to_sparse(self, layout=None, blocksize=None, dense_dim=None):
    if (_is_sparse(self) and layout in (None, sparse_coo)) or (_is_csr(self) and
                                                                layout is sparse_csr):
        return self
    return _aten._to_sparse.default._call(self, layout, blocksize, dense_dim)


def to_dense(self, dtype=None, masked_grad=None):
    if self._storage_ is not None:
        return self if dtype is None or dtype is self._dtype else self.to(dtype)
    return _aten._to_dense.default._call(self, dtype, masked_grad)


def to_dense_backward(grad, input, masked_grad=None):
    """The gradient of ``to_dense`` in ``input``'s layout: a sparse input gets the gradient at
    its own (coalesced) entries, or, with ``masked_grad=False``, every nonzero of it."""
    if _is_csr(input):
        return grad.sparse_mask(input)
    if not _is_sparse(input):
        return grad if input.layout is strided else grad.to_dense()
    if masked_grad is None or masked_grad:
        return grad.sparse_mask(input.coalesce())
    return grad.to_sparse(input.sparse_dim())


def coalesce(self):
    return self if self.is_coalesced() else _aten._coalesce.default._call(self)


def _sparse_sum(self):
    return self.coalesce().values().sum()


def _sparse_sum_dtype(self, dtype):
    return _sparse_sum(self.to(dtype))


def _sparse_sum_dim_dtype(self, dim, dtype):
    return _aten._sparse_sum.dim._call(self.to(dtype), dim)


def _sparse_mm(sparse, dense):
    zero = dense.new_zeros(()).expand(sparse._size[0], dense._size[-1])
    return _aten._sparse_addmm.default._call(zero, sparse, dense, 0, 1)


def embedding_sparse_backward(grad, indices, num_weights, padding_idx, scale_grad_by_freq):
    """The gradient of ``embedding(sparse=True)``'s weight: one row of ``grad`` per looked-up
    index, as an uncoalesced sparse tensor (repeated indices stay repeated, as PyTorch's)."""
    if scale_grad_by_freq:
        raise RuntimeError("embedding_backward: scale_grad_by_freq not supported with sparse "
                           "gradients")
    indices = indices.reshape(-1)
    grad = grad.reshape(-1, grad._size[-1])
    if padding_idx != -1:
        keep = indices != padding_idx
        indices, grad = indices[keep], grad[keep]
    return _sparse_coo_tensor_unsafe(indices.to(D.int64).unsqueeze(0), grad,
                                     (num_weights, grad._size[-1]))


def _sparse_softmax_int(self, dim, dtype=None):
    return _aten._sparse_softmax.default._call(self if dtype is None else self.to(dtype), dim,
                                               False)


def _sparse_log_softmax_int(self, dim, dtype=None):
    return _aten._sparse_log_softmax.default._call(self if dtype is None else self.to(dtype),
                                                   dim, False)


# -- sparse CSR matrices -------------------------------------------------------------------------

def _sparse_csr_tensor_unsafe(crow_indices, col_indices, values, size, dtype=None, layout=None,
                              device=None, pin_memory=None):
    if layout is not None and layout is not sparse_csr:
        raise RuntimeError(f"_sparse_csr_tensor_unsafe: expected layout=torch.sparse_csr, got "
                           f"{layout}")
    size = tuple(int(s) for s in size)
    _R.check_csr_parts(crow_indices, col_indices, values, size)
    if dtype is not None and dtype is not values._dtype:
        values = values.to(dtype)
    if device is not None and device != values._device:
        crow_indices, col_indices = crow_indices.to(device), col_indices.to(device)
        values = values.to(device)
    return sparse_csr_tensor_impl(crow_indices, col_indices, values, size)


def sparse_csr_tensor_crow_col_value_size(crow_indices, col_indices, values, size, dtype=None,
                                          layout=None, device=None, pin_memory=False):
    return _aten._sparse_csr_tensor_unsafe.default._call(
        crow_indices, col_indices, values, size, dtype, layout, device, pin_memory)


def sparse_csr_tensor_crow_col_value(crow_indices, col_indices, values, dtype=None, layout=None,
                                     device=None, pin_memory=False):
    """The size is inferred: one row per crow_indices step, one more column than the largest
    column index."""
    ncols = int(col_indices.max()) + 1 if col_indices.numel() else 0
    return sparse_csr_tensor_crow_col_value_size(
        crow_indices, col_indices, values, (crow_indices.numel() - 1, ncols), dtype, layout,
        device, pin_memory)


def _validate_sparse_csr_tensor_args(crow_indices, col_indices, values, size,
                                     check_pinning=None):
    """PyTorch's CSR invariants (``check_invariants=True``)."""
    size = tuple(size)
    _R.check_csr_parts(crow_indices, col_indices, values, size)
    steps = (crow_indices[1:] - crow_indices[:-1]).tolist()
    _R.check_csr_indices(crow_indices.tolist(), steps, col_indices.tolist(), size)


def _convert_indices_from_coo_to_csr(self, size, out_int32=False):
    """The compressed row pointers of sorted row indices ``self``: entry ``i`` counts the
    indices below ``i``."""
    rows = _aten.arange.start_step._call(0, size + 1, 1, self._dtype, None, self._device, None)
    return _aten.searchsorted.Tensor._call(self, rows, out_int32, False, None, None)


def _convert_indices_from_csr_to_coo(crow_indices, col_indices, out_int32=False,
                                     transpose=False):
    """The (row, column) index pairs of a CSR matrix's entries, as a ``(2, nnz)`` tensor
    (``(column, row)`` with ``transpose``)."""
    dtype = D.int32 if out_int32 else D.int64
    nrows = crow_indices.numel() - 1
    rows = _aten.arange.start_step._call(0, nrows, 1, dtype, None, crow_indices._device, None)
    rows = rows.repeat_interleave(crow_indices[1:] - crow_indices[:-1],
                                  output_size=col_indices.numel())
    cols = col_indices.to(dtype)
    return _aten.stack.default._call([cols, rows] if transpose else [rows, cols], 0)


def _to_sparse_csr(self, dense_dim=None):
    """A dense matrix as a CSR one (through its COO form)."""
    if dense_dim:
        raise NotImplementedError("to_sparse_csr: ember's sparse CSR tensors have no dense dims")
    if self.dim() != 2:
        raise NotImplementedError("to_sparse_csr: ember's sparse CSR tensors are 2-d matrices "
                                  "(no batch or dense dims)")
    return _aten._to_sparse_csr.default._call(_to_sparse_sparse_dim(self, 2), None)


def to_sparse_csr(self, dense_dim=None):
    if _is_csr(self):
        return self
    return _aten._to_sparse_csr.default._call(self, dense_dim)
