"""Rules of sparse COO tensors, for every backend: the shapes a COO tensor's parts must have and
the invariants ``check_invariants=True`` checks, with PyTorch's messages. The constructors
(``composite/sparse.py``) and the sparse kernels (``sparse/coo.py``) call them; this module
imports no backend."""
from ..._core import dtype as D
from ..._core import strides as _st

_fmt = _st._fmt_list


def check_parts(indices, values, size):
    """``indices`` (sparse_dim, nnz) and ``values`` (nnz, *dense sizes) fit a COO tensor of
    ``size`` (PyTorch's SparseTensorImpl checks, always made)."""
    if indices._dtype is not D.int64:
        raise RuntimeError(f"indices must be an int64 tensor, but got {indices._dtype}")
    sparse_dim, dense_dim = (indices._size or (0,))[0], max(values.dim() - 1, 0)
    if len(size) != sparse_dim + dense_dim:  # (PyTorch checks this first)
        raise RuntimeError(f"'len(size) == sparse_dim + dense_dim' is not satisfied: len(size) = "
                           f"{len(size)}, sparse_dim = {sparse_dim}, dense_dim = {dense_dim}")
    if indices.dim() != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {_fmt(indices._size)}")
    if values.dim() < 1:
        raise RuntimeError(f"values must be at least 1-dimensional, but got: "
                           f"{_fmt(values._size)}")
    if indices._size[1] != values._size[0]:
        raise RuntimeError(f"indices and values must have same nnz, but got nnz from indices: "
                           f"{indices._size[1]}, nnz from values: {values._size[0]}")
    expected = (values._size[0],) + tuple(size[sparse_dim:])
    if tuple(values._size) != expected:
        raise RuntimeError(f"values has incorrect size, expected {_fmt(expected)}, got "
                           f"{_fmt(values._size)}")
    if indices._device != values._device:
        raise RuntimeError(f"device of indices ({indices._device}) must match device of values "
                           f"({values._device})")


def check_index_bounds(indices, size, min_index, max_index):
    """PyTorch's invariant checks of the indices, given their per-dim minima and maxima (lists
    of ints; the caller computes them with ops)."""
    for d, (lo, hi) in enumerate(zip(min_index, max_index)):
        if lo < 0:
            raise RuntimeError(f"found negative index {lo} for dim {d}")
        if hi >= size[d]:
            raise RuntimeError(f"size is inconsistent with indices: for dim {d}, size is "
                               f"{size[d]} but found index {hi}")


def check_same_size(name, self, other):
    if tuple(self._size) != tuple(other._size):
        raise RuntimeError(f"{name}: expected sizes of 'self' and 'other' to match, but "
                           f"{_fmt(self._size)} != {_fmt(other._size)}")


def check_to_sparse_dim(sparse_dim, ndim):
    if sparse_dim == 0 and ndim > 0:
        raise RuntimeError("dense_to_sparse: sparse_dim argument must be in >0 when self.dim()>0")
    if not 0 <= sparse_dim <= ndim:
        raise RuntimeError(f"dense_to_sparse: sparse_dim argument must be in [0,{ndim}] range, "
                           f"but {sparse_dim} is given")


def check_mm(name, mat1, mat2):
    """Sizes of a sparse-by-dense product (PyTorch's ``s_addmm_out_sparse_dense`` checks)."""
    if mat1.dim() != 2 or mat2.dim() != 2:
        raise RuntimeError(f"{name}: matrices expected, got {mat1.dim()}D, {mat2.dim()}D tensors")
    if mat1._size[1] != mat2._size[0]:
        raise RuntimeError(f"{name}: Argument #3 (dense): Expected dim 0 size {mat1._size[1]}, "
                           f"got {mat2._size[0]}")


def check_csr_parts(crow_indices, col_indices, values, size):
    """The shapes of a CSR matrix's parts (PyTorch's ``_validate_sparse_compressed_tensor_args``
    shape checks, for ember's 2-d CSR matrices)."""
    if len(size) != 2:
        raise NotImplementedError(f"sparse_csr_tensor: ember's sparse CSR tensors are 2-d "
                                  f"matrices, got size {_fmt(size)}")
    for name, t in (("crow_indices", crow_indices), ("col_indices", col_indices)):
        if t._dtype not in (D.int64, D.int32):
            raise RuntimeError(f"{name} must be an int64 or int32 tensor, but got {t._dtype}")
        if t.dim() != 1:
            raise RuntimeError(f"{name} must have dim=1 but got {name}.dim()={t.dim()}")
    if values.dim() != 1:
        raise NotImplementedError("sparse_csr_tensor: ember's sparse CSR tensors have no dense "
                                  "dims (values must be 1-d)")
    if crow_indices._size[0] != size[0] + 1:
        raise RuntimeError(f"crow_indices.shape[-1] must be equal to the number of rows + 1 "
                           f"(={size[0] + 1}), but got {crow_indices._size[0]}")
    if col_indices._size[0] != values._size[0]:
        raise RuntimeError(f"col_indices and values nnz must be equal, but got "
                           f"{col_indices._size[0]} != {values._size[0]}")


def check_csr_indices(crow, steps, col, size):
    """PyTorch's CSR invariants on the indices (Python lists): crow_indices starts at 0, ends
    at nnz and never decreases; columns lie in the matrix and, within a row, increase."""
    if crow[0] != 0:
        raise RuntimeError("`crow_indices[..., 0] == 0` is not satisfied.")
    if crow[-1] != len(col):
        raise RuntimeError("`crow_indices[..., -1] == nnz` is not satisfied.")
    if any(s < 0 for s in steps):
        raise RuntimeError("`0 <= crow_indices[..., 1:] - crow_indices[..., :-1] <= ncols` is "
                           "not satisfied.")
    if any(c < 0 or c >= size[1] for c in col):
        raise RuntimeError("`0 <= col_indices < ncols` is not satisfied.")
    for r in range(size[0]):
        row = col[crow[r]:crow[r + 1]]
        if any(b <= a for a, b in zip(row, row[1:])):
            raise RuntimeError("`col_indices[..., crow_indices[..., i - 1]:crow_indices[..., i]] "
                               "for all i = 1, ..., nrows are sorted and distinct along the last "
                               "dimension values` is not satisfied.")
