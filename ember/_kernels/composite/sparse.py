"""Sparse constructors and conversions that work the same on every backend (PyTorch's
CompositeImplicitAutograd and CompositeExplicitAutograd kernels of ``SparseTensor.cpp`` and
``SparseCsrTensor.cpp``): a COO or compressed (CSR, CSC, BSR, BSC) tensor from its parts, the
invariant checks, dense to sparse, and the conversions that return their input when it already
has the asked layout. The kernels of sparse inputs are ``ember/_kernels/sparse/``; the checks
are ``rules/sparse.py``."""
from ..._core import dtype as D
from ..._core.device import sparse_bsc, sparse_bsr, sparse_coo, sparse_csc, sparse_csr, strided
from ..._core.tensor_impl import sparse_compressed_tensor_impl, sparse_coo_tensor_impl
from ..._dispatch.keys import SPARSE_BITS, SPARSE_CSR_BITS
from ..._ops.overload import ops
from ..registration import register
from ..rules import sparse as _R

_aten = ops.aten
_LAYOUTS = {"csr": sparse_csr, "csc": sparse_csc, "bsr": sparse_bsr, "bsc": sparse_bsc}


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
    _R.check_to_sparse_arguments("dense_to_sparse", strided, layout, blocksize)
    if layout is not None and layout is not sparse_coo:
        return _R.to_compressed_op(_aten, layout)(self, blocksize, dense_dim)
    return _to_sparse_sparse_dim(self, self.dim() - (dense_dim or 0))


def to_sparse_sparse_dim(self, sparse_dim):
    if _is_sparse(self):
        if sparse_dim != self.sparse_dim():
            raise RuntimeError("to_sparse: conversion from Sparse to Sparse with sparse_dim "
                               "argument !=self.sparse_dim() is not supported")
        return self
    return _aten._to_sparse.sparse_dim._call(self, sparse_dim)


def to_sparse(self, layout=None, blocksize=None, dense_dim=None):
    if self.layout is (layout or sparse_coo) and self.layout is not strided:
        _R.check_to_sparse_arguments("to_sparse", self.layout, layout, blocksize)
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


# -- sparse compressed matrices (CSR, CSC, BSR, BSC) -----------------------------------------------

def _make_compressed(compressed, plain, values, size, dtype, layout, device):
    """A compressed tensor over the parts, their shapes and dtypes checked (PyTorch checks them
    only with ``check_invariants``; ember's kernels rely on them), converted to ``dtype`` and
    ``device`` when given."""
    size = tuple(int(s) for s in size)
    _R.compressed_dims(compressed, plain, values, layout)
    _R.check_supported_compressed(f"sparse_{layout._name[7:]}_tensor", compressed, values, layout)
    _R.check_compressed_parts(compressed, plain, values, size, layout)
    if dtype is not None and dtype is not values._dtype:
        values = values.to(dtype)
    if device is not None and device != values._device:
        compressed, plain, values = compressed.to(device), plain.to(device), values.to(device)
    return sparse_compressed_tensor_impl(compressed, plain, values, size, layout)


def _sparse_compressed_tensor_unsafe(compressed_indices, plain_indices, values, size, dtype=None,
                                     layout=None, device=None, pin_memory=None):
    _R.check_compressed_layout("sparse_compressed_tensor_unsafe", layout)
    return _make_compressed(compressed_indices, plain_indices, values, size, dtype, layout,
                            device)


def _unsafe_of(name):
    """``_sparse_<name>_tensor_unsafe``: the compressed constructor of one layout."""
    required = _LAYOUTS[name]

    def unsafe(compressed_indices, plain_indices, values, size, dtype=None, layout=None,
               device=None, pin_memory=None):
        if layout is not None and layout is not required:
            raise RuntimeError(f"sparse compressed layout must be {_R.layout_name(required)} "
                               f"but got {_R.layout_name(layout)}")
        return _make_compressed(compressed_indices, plain_indices, values, size, dtype,
                                required, device)
    unsafe.__name__ = unsafe.__qualname__ = f"_sparse_{name}_tensor_unsafe"
    return unsafe


_sparse_csr_tensor_unsafe = _unsafe_of("csr")
_sparse_csc_tensor_unsafe = _unsafe_of("csc")
_sparse_bsr_tensor_unsafe = _unsafe_of("bsr")
_sparse_bsc_tensor_unsafe = _unsafe_of("bsc")


def _inferred_size(compressed, plain, values, layout):
    plain_max = int(plain.max()) if plain.numel() else None
    return _R.inferred_compressed_size(compressed, plain, values, layout, plain_max)


def sparse_compressed_tensor_comp_plain_value_size(compressed_indices, plain_indices, values,
                                                   size, dtype=None, layout=None, device=None,
                                                   pin_memory=False):
    _R.check_compressed_layout("sparse_compressed_tensor", layout)
    return _aten._sparse_compressed_tensor_unsafe.default._call(
        compressed_indices, plain_indices, values, size, dtype, layout, device, pin_memory)


def sparse_compressed_tensor_comp_plain_value(compressed_indices, plain_indices, values,
                                              dtype=None, layout=None, device=None,
                                              pin_memory=False):
    """The size is inferred: one compressed run per row (column) of elements or blocks, one
    more plain index than the largest."""
    _R.check_compressed_layout("sparse_compressed_tensor", layout)
    size = _inferred_size(compressed_indices, plain_indices, values, layout)
    return sparse_compressed_tensor_comp_plain_value_size(
        compressed_indices, plain_indices, values, size, dtype, layout, device, pin_memory)


def _check_factory_layout(name, layout):
    required = _LAYOUTS[name]
    if layout is not None and layout is not required:
        raise RuntimeError(f"sparse {name} layout must be {_R.layout_name(required)} but got "
                           f"{_R.layout_name(layout)}")
    return required


def _with_size(name):
    """``sparse_<name>_tensor``'s overload with a size."""
    def factory(compressed_indices, plain_indices, values, size, dtype=None, layout=None,
                device=None, pin_memory=False):
        return sparse_compressed_tensor_comp_plain_value_size(
            compressed_indices, plain_indices, values, size, dtype,
            _check_factory_layout(name, layout), device, pin_memory)
    return factory


def _inferred(name):
    """``sparse_<name>_tensor``'s overload without a size (inferred)."""
    def factory(compressed_indices, plain_indices, values, dtype=None, layout=None,
                device=None, pin_memory=False):
        return sparse_compressed_tensor_comp_plain_value(
            compressed_indices, plain_indices, values, dtype,
            _check_factory_layout(name, layout), device, pin_memory)
    return factory


sparse_csr_tensor_crow_col_value_size = _with_size("csr")
sparse_csr_tensor_crow_col_value = _inferred("csr")
sparse_csc_tensor_ccol_row_value_size = _with_size("csc")
sparse_csc_tensor_ccol_row_value = _inferred("csc")
sparse_bsr_tensor_crow_col_value_size = _with_size("bsr")
sparse_bsr_tensor_crow_col_value = _inferred("bsr")
sparse_bsc_tensor_ccol_row_value_size = _with_size("bsc")
sparse_bsc_tensor_ccol_row_value = _inferred("bsc")


def _validate_sparse_compressed_tensor_args(compressed_indices, plain_indices, values, size,
                                            layout, check_pinning=None):
    """PyTorch's compressed invariants (``check_invariants=True``): the parts' shapes and
    dtypes, then the indices, then the devices."""
    _R.check_compressed_layout("validate_sparse_compressed_tensor_args", layout)
    size = tuple(size)
    ncompressed, nplain = _R.check_compressed_parts(compressed_indices, plain_indices, values,
                                                    size, layout)
    _R.check_supported_compressed("validate_sparse_compressed_tensor_args", compressed_indices,
                                  values, layout)
    _R.check_compressed_indices(layout, compressed_indices.tolist(), plain_indices.tolist(),
                                ncompressed, nplain)
    _R.check_compressed_devices(compressed_indices, plain_indices, values, layout)


def _validator_of(name):
    layout = _LAYOUTS[name]

    def validate(compressed_indices, plain_indices, values, size, check_pinning=None):
        _validate_sparse_compressed_tensor_args(compressed_indices, plain_indices, values, size,
                                                layout, check_pinning)
    validate.__name__ = validate.__qualname__ = f"_validate_sparse_{name}_tensor_args"
    return validate


_validate_sparse_csr_tensor_args = _validator_of("csr")
_validate_sparse_csc_tensor_args = _validator_of("csc")
_validate_sparse_bsr_tensor_args = _validator_of("bsr")
_validate_sparse_bsc_tensor_args = _validator_of("bsc")


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


def _dense_to_compressed(self, layout, blocksize, dense_dim):
    """A dense matrix in a compressed layout, through its COO form (PyTorch's
    ``dense_to_sparse_<layout>``: blocks wherever an element is nonzero)."""
    fname = f"dense_to_{layout._name}"
    if blocksize is not None:
        blocksize = tuple(blocksize)
        _R.check_blocksize(fname, blocksize)
    if self.dim() < 2:
        raise IndexError(f"Dimension out of range (expected to be in range of [-1, 0], but got "
                         f"{-2 if blocksize else 1})")
    _R.check_to_compressed_dense_dim(fname, dense_dim, self.dim())
    if blocksize is not None:
        _R.check_divisible_by_blocksize(fname, self._size, blocksize)
    if self.dim() != 2 or dense_dim:
        raise NotImplementedError(f"{fname}: ember's sparse compressed tensors are 2-d "
                                  f"matrices (no batch or dense dims)")
    return _R.to_compressed_op(_aten, layout)(_to_sparse_sparse_dim(self, 2), blocksize, None)


def _to_sparse_csr(self, dense_dim=None):
    return _dense_to_compressed(self, sparse_csr, None, dense_dim)


def _to_sparse_csc(self, dense_dim=None):
    return _dense_to_compressed(self, sparse_csc, None, dense_dim)


def _to_sparse_bsr(self, blocksize, dense_dim=None):
    return _dense_to_compressed(self, sparse_bsr, blocksize, dense_dim)


def _to_sparse_bsc(self, blocksize, dense_dim=None):
    return _dense_to_compressed(self, sparse_bsc, blocksize, dense_dim)


# -- the accessors on other layouts: PyTorch's messages (the compressed kernels are
# sparse/compressed.py's) ---------------------------------------------------------------------

def _accessor_default(name, kind):
    def default(self):
        raise RuntimeError(f"{name} expected {kind} tensor layout but got "
                           f"{_R.layout_name(self.layout)}")
    default.__name__ = default.__qualname__ = f"{name}_default"
    return default


crow_indices_default = _accessor_default("crow_indices", "sparse row compressed")
col_indices_default = _accessor_default("col_indices", "sparse row compressed")
ccol_indices_default = _accessor_default("ccol_indices", "sparse column compressed")
row_indices_default = _accessor_default("row_indices", "sparse column compressed")
values_default = _accessor_default("values", "sparse")
indices_default = _accessor_default("indices", "sparse coordinate")
for _fn in (crow_indices_default, col_indices_default, ccol_indices_default,
            row_indices_default):
    register(_fn.__name__[:-8], "SparseCPU", _fn)
    register(_fn.__name__[:-8], "SparseCUDA", _fn)


def _check_no_dense_dim(fname, layout, dense_dim):
    if dense_dim is not None:
        raise RuntimeError(f"{fname}: conversion from {_R.layout_name(layout)} to "
                           f"{_R.layout_name(layout)} with dense_dim argument given is not "
                           f"supported")


def to_sparse_csr(self, dense_dim=None):
    if self.layout is sparse_csr:
        _check_no_dense_dim("to_sparse_csr", sparse_csr, dense_dim)
        return self
    return _aten._to_sparse_csr.default._call(self, dense_dim)


def to_sparse_csc(self, dense_dim=None):
    if self.layout is sparse_csc:
        _check_no_dense_dim("to_sparse_csc", sparse_csc, dense_dim)
        return self
    return _aten._to_sparse_csc.default._call(self, dense_dim)


def _to_block_layout(layout, self, blocksize, dense_dim):
    """``to_sparse_bsr``/``to_sparse_bsc``: ``self`` when it has the layout and blocksize."""
    if self.layout is layout:
        _R.check_blocksize(f"to_{layout._name}", tuple(blocksize))
        _check_no_dense_dim(f"to_{layout._name}", layout, dense_dim)
        have = tuple(self.values()._size[1:3])
        if have != tuple(blocksize):
            raise RuntimeError(f"to_{layout._name}: conversion from {_R.layout_name(layout)} to "
                               f"{_R.layout_name(layout)} with blocksize changed from "
                               f"{_R._fmt(have)} to {_R._fmt(blocksize)} is not supported")
        return self
    return _R.to_compressed_op(_aten, layout)(self, blocksize, dense_dim)


def to_sparse_bsr(self, blocksize, dense_dim=None):
    return _to_block_layout(sparse_bsr, self, blocksize, dense_dim)


def to_sparse_bsc(self, blocksize, dense_dim=None):
    return _to_block_layout(sparse_bsc, self, blocksize, dense_dim)
