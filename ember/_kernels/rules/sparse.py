"""Rules of sparse tensors, for every backend: the shapes the parts of a COO tensor and of a
compressed (CSR, CSC, BSR, BSC) tensor must have, the invariants ``check_invariants=True``
checks, and the argument checks of their conversions and products, with PyTorch's messages.
The constructors (``composite/sparse.py``) and the sparse kernels (``sparse/coo.py``,
``sparse/compressed.py``) call them; this module imports no backend."""
from ..._core import dtype as D
from ..._core import strides as _st
from ..._core.device import sparse_coo as _COO

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


# -- sparse compressed layouts -----------------------------------------------------------------

_LAYOUT_NAMES = {"strided": "Strided", "sparse_coo": "Sparse", "sparse_csr": "SparseCsr",
                 "sparse_csc": "SparseCsc", "sparse_bsr": "SparseBsr", "sparse_bsc": "SparseBsc",
                 "jagged": "Jagged"}
COMPRESSED = ("sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc")


def layout_name(layout):
    """c10's name of a layout, as PyTorch's messages print it ("SparseCsc")."""
    return _LAYOUT_NAMES[layout._name]


def is_compressed(layout):
    return layout is not None and layout._name in COMPRESSED


def is_row(layout):
    """Rows (of elements or blocks) are compressed: CSR and BSR."""
    return layout._name in ("sparse_csr", "sparse_bsr")


def is_block(layout):
    return layout._name in ("sparse_bsr", "sparse_bsc")


def transposed_name(layout):
    """The layout a transpose gives: the other orientation (CSR <-> CSC, BSR <-> BSC)."""
    return {"sparse_csr": "sparse_csc", "sparse_csc": "sparse_csr", "sparse_bsr": "sparse_bsc",
            "sparse_bsc": "sparse_bsr"}[layout._name]


def index_names(layout):
    """(compressed, plain) indices' names: crow/col_indices or ccol/row_indices."""
    return ("crow_indices", "col_indices") if is_row(layout) else ("ccol_indices", "row_indices")


def check_compressed_layout(fname, layout):
    if not is_compressed(layout):
        got = "none" if layout is None else layout_name(layout)
        raise RuntimeError(f"{fname} expected sparse compressed tensor layout but got {got}")


def compressed_dims(compressed, plain, values, layout):
    """(batch, block, dense) dimensionalities of the parts (PyTorch's invariants 3.2-3.4)."""
    cname, pname = index_names(layout)
    batch_ndim = compressed.dim() - 1
    block_ndim = 2 if is_block(layout) else 0
    if batch_ndim < 0:
        raise RuntimeError(f"{cname} must have dimensionality >= 1 but got {compressed.dim()}")
    if compressed.dim() != plain.dim():
        raise RuntimeError(f"{cname} and {pname} dimensionalities must be equal but got "
                           f"{compressed.dim()} and {plain.dim()}, respectively")
    dense_ndim = values.dim() - batch_ndim - block_ndim - 1
    if dense_ndim < 0:
        raise RuntimeError(f"values must have dimensionality > sum of batch and block "
                           f"dimensionalities (={batch_ndim} + {block_ndim}) but got "
                           f"{values.dim()}")
    return batch_ndim, block_ndim, dense_ndim


def blocksize_of(values, layout):
    """(block rows, block cols): the values' block sizes, (1, 1) for CSR and CSC."""
    if not is_block(layout):
        return (1, 1)
    return (max(1, values._size[1]), max(1, values._size[2]))


def inferred_compressed_size(compressed, plain, values, layout, plain_max):
    """The size PyTorch infers when none is given: one compressed run per row (or column) of
    blocks, one more plain index than the largest (``plain_max``, None without entries)."""
    compressed_dims(compressed, plain, values, layout)
    bh, bw = blocksize_of(values, layout)
    ncompressed = compressed._size[-1] - 1 if compressed._size[-1] > 0 else 0
    nplain = 0 if plain_max is None else plain_max + 1
    return (ncompressed * bh, nplain * bw) if is_row(layout) else (nplain * bh, ncompressed * bw)


def check_compressed_parts(compressed, plain, values, size, layout):
    """PyTorch's shape and dtype invariants of a compressed tensor's parts, in its order;
    returns (compressed dim size, plain dim size), in blocks for BSR/BSC."""
    cname, pname = index_names(layout)
    batch_ndim, block_ndim, dense_ndim = compressed_dims(compressed, plain, values, layout)
    if len(size) != batch_ndim + 2 + dense_ndim:
        raise RuntimeError(f"tensor dimensionality must be sum of batch, base, and dense "
                           f"dimensionalities (={batch_ndim} + 2 + {dense_ndim}) but got "
                           f"{len(size)}")
    blocksize = blocksize_of(values, layout)
    batch = list(size[:batch_ndim])
    parts = [list(compressed._size[:batch_ndim]), list(plain._size[:batch_ndim]),
             list(values._size[:batch_ndim])]
    if any(p != batch for p in parts):
        raise RuntimeError(f"all batch dimensions of {cname} (={_fmt(parts[0])}), {pname} "
                           f"(={_fmt(parts[1])}), and values (={_fmt(parts[2])}) must be equal "
                           f"to tensor batch dimensions (={_fmt(batch)})")
    for i in range(block_ndim):
        if size[batch_ndim + i] % blocksize[i]:
            raise RuntimeError(f"tensor shape[{batch_ndim + i}] (={size[batch_ndim + i]}) must "
                               f"be divisible with blocksize[{i}] (={blocksize[i]}) as defined "
                               f"by values shape")
    nrows, ncols = size[batch_ndim] // blocksize[0], size[batch_ndim + 1] // blocksize[1]
    ncompressed, nplain = (nrows, ncols) if is_row(layout) else (ncols, nrows)
    dim_name = ("row" if is_row(layout) else "column") + (" block" if block_ndim else "")
    if compressed._size[-1] != ncompressed + 1:
        raise RuntimeError(f"{cname}.shape[-1] must be equal to the number of {dim_name}s + 1 "
                           f"(={ncompressed + 1}), but got {compressed._size[-1]}")
    nnz = values._size[batch_ndim]
    if plain._size[-1] != nnz:
        raise RuntimeError(f"{pname}.shape[-1] must be equal to nnz (={nnz}) as defined by "
                           f"values.shape[{batch_ndim}], but got {plain._size[-1]}")
    if compressed._dtype is not plain._dtype:
        raise RuntimeError(f"{cname} and {pname} must have the same dtype, bot got "
                           f"{compressed._dtype._short} and {plain._dtype._short}, respectively")
    if compressed._dtype not in (D.int32, D.int64):
        raise RuntimeError(f"{cname} and {pname} dtype must be Int or Long, but got "
                           f"{compressed._dtype._short}")
    return ncompressed, nplain


def check_compressed_devices(compressed, plain, values, layout):
    cname, pname = index_names(layout)
    if compressed._device != values._device:
        raise RuntimeError(f"device of {cname} (={compressed._device}) must match device of "
                           f"values (={values._device})")
    if compressed._device != plain._device:
        raise RuntimeError(f"device of {cname} (={compressed._device}) must match device of "
                           f"{pname} (={plain._device})")


def check_compressed_indices(layout, compressed, plain, ncompressed, nplain):
    """PyTorch's index invariants (``_validate_compressed_sparse_indices``) on Python lists of
    a 2-d tensor's indices, checked in its order: the first and last compressed index, the
    range of the plain indices, then run by run the step and the order within the run."""
    cname, pname = index_names(layout)
    plain_dim, compressed_dim = ("ncols", "nrows") if is_row(layout) else ("nrows", "ncols")
    if compressed[0] != 0:
        raise RuntimeError(f"`{cname}[..., 0] == 0` is not satisfied.")
    if compressed[-1] != len(plain):
        raise RuntimeError(f"`{cname}[..., -1] == nnz` is not satisfied.")
    if any(p < 0 or p >= nplain for p in plain):
        raise RuntimeError(f"`0 <= {pname} < {plain_dim}` is not satisfied.")
    for i in range(1, ncompressed + 1):
        lo, hi = compressed[i - 1], compressed[i]
        if not 0 <= hi - lo <= nplain:
            raise RuntimeError(f"`0 <= {cname}[..., 1:] - {cname}[..., :-1] <= {plain_dim}` is "
                               f"not satisfied.")
        run = plain[lo:hi]
        if any(b <= a for a, b in zip(run, run[1:])):
            raise RuntimeError(f"`{pname}[..., {cname}[..., i - 1]:{cname}[..., i]] for all i = "
                               f"1, ..., {compressed_dim} are sorted and distinct along the last "
                               f"dimension values` is not satisfied.")


def check_supported_compressed(fname, compressed, values, layout):
    """ember's compressed tensors are 2-d matrices: no batch dims, no dense (hybrid) dims."""
    block_ndim = 2 if is_block(layout) else 0
    if compressed.dim() != 1 or values.dim() != 1 + block_ndim:
        raise NotImplementedError(f"{fname}: ember's sparse compressed tensors are 2-d "
                                  f"matrices (no batch or dense dims)")


def check_blocksize(fname, blocksize):
    """A conversion's ``blocksize``: two positive ints."""
    if len(blocksize) != 2:
        raise RuntimeError(f"{fname}: blocksize needs to be a tuple of size 2, but got "
                           f"{len(blocksize)}")
    if blocksize[0] <= 0 or blocksize[1] <= 0:
        raise RuntimeError(f"{fname}: blocksize needs to be positive, but got "
                           f"{_fmt(blocksize)}")


def check_divisible_by_blocksize(fname, size, blocksize):
    if size[-2] % blocksize[0] or size[-1] % blocksize[1]:
        raise RuntimeError(f"{fname}: tensor sparse size ({size[-2]},{size[-1]}) must be "
                           f"divisible by given blocksize ({blocksize[0]},{blocksize[1]})")


def check_to_compressed_dense_dim(fname, dense_dim, ndim):
    """A dense tensor's conversion takes ``dense_dim`` in [0, ndim - 2]; ember's compressed
    tensors have none, so a positive one is not supported."""
    if dense_dim is not None and not 0 <= dense_dim <= ndim - 2:
        raise RuntimeError(f"{fname}: dense_dim argument must be in [0,{ndim - 2}] range, but "
                           f"{dense_dim} is given")


def check_compressed_mm(mat1, mat2, mat1_layout, mat2_layout):
    """A product of a compressed and a dense matrix (either side): 2-d operands whose sizes
    multiply, of one dtype (PyTorch's sparse-compressed addmm checks), on a layout its CPU
    kernels take."""
    if mat1.dim() != 2 or mat2.dim() != 2:
        raise RuntimeError(f"mm: matrices expected, got {mat1.dim()}D, {mat2.dim()}D tensors")
    if mat1._size[1] != mat2._size[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({mat1._size[0]}x"
                           f"{mat1._size[1]} and {mat2._size[0]}x{mat2._size[1]})")
    if mat1_layout._name == "sparse_bsc" or mat2_layout._name == "sparse_bsr":
        raise RuntimeError(f"addmm: computation on CPU is not implemented for Strided + "
                           f"{layout_name(mat1_layout)} @ {layout_name(mat2_layout)}")
    if mat1._dtype is not mat2._dtype:
        raise RuntimeError(f"expected scalar type {mat1._dtype._short} but found "
                           f"{mat2._dtype._short}")


def check_to_sparse_arguments(fname, layout_from, layout, blocksize):
    """PyTorch's ``_to_sparse_check_arguments``: a blocksize for the block layouts only."""
    layout_to = layout or _COO
    if is_block(layout_to):
        if blocksize is None:
            raise RuntimeError(f"{fname}: conversion from {layout_name(layout_from)} to "
                               f"{layout_name(layout_to)} without blocksize argument given is "
                               f"not supported")
        check_blocksize(fname, blocksize)
    elif blocksize is not None:
        raise RuntimeError(f"{fname}: conversion from {layout_name(layout_from)} to "
                           f"{layout_name(layout_to)} with blocksize argument given is not "
                           f"supported")


def to_compressed_op(aten, layout):
    """The conversion op to compressed ``layout`` (``aten._to_sparse_bsr`` ...), called as
    ``f(self, blocksize, dense_dim)`` whatever the layout (the plain ones take no blocksize)."""
    op = getattr(aten, f"_to_{layout._name}").default
    if is_block(layout):
        return lambda self, blocksize, dense_dim: op._call(self, blocksize, dense_dim)
    return lambda self, blocksize, dense_dim: op._call(self, dense_dim)
