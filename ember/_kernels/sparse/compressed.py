"""Sparse compressed kernels (PyTorch's SparseCsrCPU/SparseCsrCUDA kernels) for the four
compressed layouts of 2-d matrices: CSR, CSC, BSR and BSC, one implementation parameterized by
the layout.

A compressed matrix's entries (elements, or for BSR/BSC dense blocks) are grouped in runs: run i
is positions ``compressed_indices[i]:compressed_indices[i + 1]`` of ``plain_indices`` and
``values``, one run per row (CSR, BSR) or column (CSC, BSC) of elements or blocks. Ops that keep
the sparsity pattern (scaling, zero-preserving unary ops, transposing, which swaps the
orientation) map the values; the others run ``coo.py``'s kernel on the COO form (each entry's
row and column recovered from the compressed indices, in the layout's storage order, a block's
elements row by row) and compress a sparse result back into the input's layout. A block matrix
times a dense one is one batched product of the blocks with the dense rows they meet. ember's
compressed tensors have no batch or dense dims: those raise.
"""
from ..._core import dtype as D
from ..._core.device import sparse_bsc, sparse_bsr, sparse_coo, sparse_csc, sparse_csr, strided
from ..._core.tensor_impl import (_untracked, sparse_compressed_tensor_impl,
                                  sparse_coo_tensor_impl)
from ..._dispatch.keys import SPARSE_BITS, SPARSE_CSR_BITS
from ..._ops.overload import ops
from ..._core import strides as _st
from ..registration import register
from ..rules import sparse as _R
from . import coo, kernel_table

_aten = ops.aten
# "op.overload" -> kernel, registered for both keys of the layouts at the end of this module
_KERNELS, _kernel = kernel_table()
_LAYOUTS = {"sparse_csr": sparse_csr, "sparse_csc": sparse_csc, "sparse_bsr": sparse_bsr,
            "sparse_bsc": sparse_bsc}


def _is_compressed(t):
    return hasattr(t, "_keyset") and bool(t._keyset & SPARSE_CSR_BITS)


def _layout(t):
    return t._sparse.layout


def _parts(t):
    s = t._sparse
    return s.compressed_indices, s.plain_indices, s.values


def _new(compressed, plain, values, size, layout):
    return sparse_compressed_tensor_impl(compressed, plain, values, size, layout)


def _blocksize(t):
    return _R.blocksize_of(t._sparse.values, _layout(t))


def _same_pattern(self, values):
    compressed, plain, _ = _parts(self)
    return _new(compressed, plain, values, self._size, _layout(self))


def _block_coordinates(t):
    """(2, nnz) int64: each entry's (row, column), in blocks for BSR/BSC, in storage order."""
    compressed, plain, _ = _parts(t)
    return _aten._convert_indices_from_csr_to_coo.default._call(
        compressed, plain, False, not _R.is_row(_layout(t)))


def to_coo(t):
    """The COO matrix with ``t``'s entries in ``t``'s order (PyTorch's: a block's elements row
    by row, explicit zeros kept); coalesced for CSR only, whose order is row-major."""
    values = t._sparse.values
    indices = _block_coordinates(t)
    layout = _layout(t)
    if not _R.is_block(layout):
        return sparse_coo_tensor_impl(indices, values, t._size, layout is sparse_csr)
    bh, bw = values._size[1], values._size[2]
    dev = indices._device
    inner_rows = _aten.arange.start_step._call(0, bh, 1, D.int64, None, dev, None)
    inner_cols = _aten.arange.start_step._call(0, bw, 1, D.int64, None, dev, None)
    rows = (indices[0] * bh).view(-1, 1, 1) + inner_rows.view(1, bh, 1)
    cols = (indices[1] * bw).view(-1, 1, 1) + inner_cols.view(1, 1, bw)
    nnz = values._size[0] * bh * bw
    indices = _aten.stack.default._call([rows.expand(-1, bh, bw).reshape(nnz),
                                         cols.expand(-1, bh, bw).reshape(nnz)], 0)
    return sparse_coo_tensor_impl(indices, values.reshape(nnz), t._size, False)


def from_coo(c, layout, blocksize=None, index_dtype=D.int64):
    """The ``layout`` matrix with COO matrix ``c``'s elements (summed where an index repeats);
    a block holds every element of ``c`` it covers, zeros elsewhere."""
    if c.dim() != 2 or c._sparse.sparse_dim != 2:
        raise NotImplementedError(f"to_{layout._name}: ember's sparse compressed tensors are "
                                  f"2-d matrices (no batch or dense dims)")
    c = coo._coalesced(c)
    indices, values = coo._parts(c)
    nrows, ncols = c._size
    row = _R.is_row(layout)
    bh, bw = blocksize if _R.is_block(layout) else (1, 1)
    nbr, nbc = nrows // bh, ncols // bw
    if _R.is_block(layout):
        keys = (indices[0] // bh) * nbc + indices[1] // bw if row else \
            (indices[1] // bw) * nbr + indices[0] // bh
        blocks, inverse, _ = _aten._unique2.default._call(keys, True, True, False)
        block_values = values.new_zeros((blocks._size[0], bh, bw))
        block_values.index_put_([inverse, indices[0] % bh, indices[1] % bw], values,
                                accumulate=True)
        values = block_values
        nplain = nbc if row else nbr
        ckey, pkey = (blocks // nplain, blocks % nplain) if blocks._size[0] else (blocks, blocks)
    elif row:  # (coalesced COO is row-major already)
        ckey, pkey = indices[0], indices[1]
    else:
        order = _aten.argsort.stable._call(indices[1] * nrows + indices[0], True, 0, False)
        ckey, pkey = indices[1].index_select(0, order), indices[0].index_select(0, order)
        values = values.index_select(0, order)
    compressed = _aten._convert_indices_from_coo_to_csr.default._call(
        ckey, nbr if row else nbc, index_dtype is D.int32)
    return _new(compressed, pkey.to(index_dtype), values, c._size, layout)


def _convert(self, layout, blocksize=None):
    """``self`` (compressed) in another compressed layout, keeping its index dtype."""
    return from_coo(to_coo(self), layout, blocksize, _parts(self)[0]._dtype)


# -- metadata --------------------------------------------------------------------------------------

def _accessor(name, row, part):
    kind = "row" if row else "column"

    def kernel(self):
        if _R.is_row(_layout(self)) != row:
            raise RuntimeError(f"{name} expected sparse {kind} compressed tensor layout but got "
                               f"{_R.layout_name(_layout(self))}")
        return coo._shared(_parts(self)[part])
    kernel.__name__ = kernel.__qualname__ = f"{name}_sparse_compressed"
    return kernel


for _name, _row, _part in (("crow_indices", True, 0), ("col_indices", True, 1),
                           ("ccol_indices", False, 0), ("row_indices", False, 1)):
    _KERNELS[_name] = _accessor(_name, _row, _part)


def _coordinate_only(name):
    def kernel(self):
        raise RuntimeError(f"{name} expected sparse coordinate tensor layout but got "
                           f"{_R.layout_name(_layout(self))}")
    kernel.__name__ = kernel.__qualname__ = f"{name}_sparse_compressed"
    return kernel


for _name in ("indices", "is_coalesced"):
    _KERNELS[_name] = _coordinate_only(_name)


@_kernel("values", "_values")
def values_sparse_compressed(self):
    return coo._shared(self._sparse.values)


@_kernel("_nnz")
def _nnz_sparse_compressed(self):
    return self._sparse.values._size[0]


@_kernel("sparse_dim", "_dimI")
def sparse_dim_sparse_compressed(self):
    return 2


@_kernel("dense_dim", "_dimV")
def dense_dim_sparse_compressed(self):
    return self._sparse.values.dim() - 1 - (2 if _R.is_block(_layout(self)) else 0)


# -- conversions -----------------------------------------------------------------------------------

@_kernel("_to_dense")
def _to_dense_sparse_compressed(self, dtype=None, masked_grad=None):
    if dtype is not None:
        raise RuntimeError("dtype argument is not supported by sparse_csr_to_dense")
    return coo._to_dense_sparse(to_coo(self))


@_kernel("_to_sparse.sparse_dim")
def _to_sparse_sparse_dim_sparse_compressed(self, sparse_dim):
    if sparse_dim != 2:
        raise RuntimeError(f"sparse_compressed_to_sparse: conversion from "
                           f"{_R.layout_name(_layout(self))} to Sparse with sparse_dim argument "
                           f"!=2 is not supported")
    return coo.clone_sparse(to_coo(self))


@_kernel("_to_sparse")
def _to_sparse_sparse_compressed(self, layout=None, blocksize=None, dense_dim=None):
    _R.check_to_sparse_arguments("sparse_compressed_to_sparse", _layout(self), layout,
                                 blocksize)
    if layout is None or layout is sparse_coo:
        return coo.clone_sparse(to_coo(self))
    return _R.to_compressed_op(_aten, layout)(self, blocksize, dense_dim)


def _check_no_dense_dim(fname, layout, target, dense_dim):
    if dense_dim is not None:
        raise RuntimeError(f"{fname}: conversion from {_R.layout_name(layout)} to "
                           f"{_R.layout_name(target)} with dense_dim argument given is not "
                           f"supported")


def _to_plain(name):
    target = _LAYOUTS[name]

    def kernel(self, dense_dim=None):
        layout = _layout(self)
        _check_no_dense_dim(f"sparse_compressed_to_{name}", layout, target, dense_dim)
        if _R.is_block(layout):
            raise RuntimeError(f"sparse_compressed_to_{name}: expected SparseCsr or SparseCsc "
                               f"layout but got {_R.layout_name(layout)}")
        return clone_sparse_compressed(self) if layout is target else _convert(self, target)
    kernel.__name__ = kernel.__qualname__ = f"_to_{name}_sparse_compressed"
    return kernel


def _to_block(name):
    target = _LAYOUTS[name]

    def kernel(self, blocksize, dense_dim=None):
        fname = f"sparse_compressed_to_{name}"
        layout = _layout(self)
        blocksize = tuple(blocksize)
        _R.check_blocksize(fname, blocksize)
        _check_no_dense_dim(fname, layout, target, dense_dim)
        if _R.is_block(layout):
            if tuple(self._sparse.values._size[1:3]) != blocksize:
                raise RuntimeError(f"{fname}: conversion from {_R.layout_name(layout)} to "
                                   f"{_R.layout_name(target)} with blocksize changed from "
                                   f"{_R._fmt(self._sparse.values._size[1:3])} to "
                                   f"{_R._fmt(blocksize)} is not supported")
            if layout is target:
                return clone_sparse_compressed(self)
        else:
            _R.check_divisible_by_blocksize(fname, self._size, blocksize)
        return _convert(self, target, blocksize)
    kernel.__name__ = kernel.__qualname__ = f"_to_{name}_sparse_compressed"
    return kernel


for _name in ("sparse_csr", "sparse_csc"):
    _KERNELS[f"_to_{_name}"] = _to_plain(_name)
for _name in ("sparse_bsr", "sparse_bsc"):
    _KERNELS[f"_to_{_name}"] = _to_block(_name)


def _coo_to_compressed(name):
    """A COO matrix's conversion (registered for SparseCPU/SparseCUDA)."""
    target = _LAYOUTS[name]

    def kernel(self, *args):
        dense_dim = args[-1] if len(args) == (2 if _R.is_block(target) else 1) else None
        _check_no_dense_dim(f"coo_to_{name}", sparse_coo, target, dense_dim)
        if _R.is_block(target):
            blocksize = tuple(args[0])
            _R.check_blocksize(f"coo_to_{name}", blocksize)
            _R.check_divisible_by_blocksize(f"coo_to_{name}", self._size, blocksize)
            return from_coo(self, target, blocksize)
        return from_coo(self, target)
    kernel.__name__ = kernel.__qualname__ = f"_to_{name}_coo"
    return kernel


@_kernel("clone")
def clone_sparse_compressed(self, memory_format=None):
    compressed, plain, values = _parts(self)
    return _new(compressed.clone(), plain.clone(), values.clone(), self._size, _layout(self))


@_kernel("detach")
def detach_sparse_compressed(self):
    return _new(*_parts(self), self._size, _layout(self))


@_kernel("_to_copy")
def _to_copy_sparse_compressed(self, dtype=None, layout=None, device=None, pin_memory=None,
                               non_blocking=False, memory_format=None):
    compressed, plain, values = _parts(self)
    out = _new(compressed.to(device=device, copy=True), plain.to(device=device, copy=True),
               values.to(dtype=dtype, device=device, copy=True), self._size, _layout(self))
    if layout is None or layout is _layout(self):
        return out
    if layout is strided:
        return _to_dense_sparse_compressed(out)
    return _to_sparse_sparse_compressed(out, layout)


@_kernel("zeros_like")
def zeros_like_sparse_compressed(self, dtype=None, layout=None, device=None, pin_memory=None,
                                memory_format=None):
    """No entries, the same layout (and blocksize)."""
    _check_like_layout(self, layout)
    compressed, plain, values = _parts(self)
    return _new(compressed.new_zeros(compressed._size, device=device),
                plain.new_empty((0,), device=device),
                values.new_empty((0,) + values._size[1:], dtype=dtype, device=device),
                self._size, _layout(self))


@_kernel("empty_like")
def empty_like_sparse_compressed(self, dtype=None, layout=None, device=None, pin_memory=None,
                                 memory_format=None):
    """The same indices, uninitialized values (PyTorch's ``empty_like_sparse_csr``)."""
    _check_like_layout(self, layout)
    compressed, plain, values = _parts(self)
    return _new(compressed.to(device=device, copy=True), plain.to(device=device, copy=True),
                values.new_empty(values._size, dtype=dtype, device=device), self._size,
                _layout(self))


def _check_like_layout(self, layout):
    if layout is not None and layout is not _layout(self):
        raise RuntimeError(f"empty_like with different sparse layout is not supported (self is "
                           f"{_R.layout_name(_layout(self))} but you requested "
                           f"{_R.layout_name(layout)})")


@_kernel("copy_")
def copy_sparse_compressed_(self, src, non_blocking=False):
    """``src``'s parts copied into ``self``'s (PyTorch's ``copy_sparse_compressed_``: the same
    layout, nnz and blocksize)."""
    if not (_is_compressed(self) and _is_compressed(src)):
        raise RuntimeError(f"copy_() between dense and sparse Tensors is not implemented! Found "
                           f"self type = {self.type()} and src type = {src.type()}")
    if _layout(self) is not _layout(src):
        raise RuntimeError(f"torch.copy_: copy of sparse compressed tensors having different "
                           f"layouts is not supported. self layout is "
                           f"{_R.layout_name(_layout(self))} and src layout is "
                           f"{_R.layout_name(_layout(src))}")
    if _nnz_sparse_compressed(self) != _nnz_sparse_compressed(src):
        raise RuntimeError("torch.copy_: only sparse compressed tensors with the same number of "
                           "specified elements are supported.")
    for mine, theirs in zip(_parts(self), _parts(src)):
        mine.copy_(theirs, non_blocking)
    return self


@_kernel("sparse_mask")
def sparse_mask_sparse_compressed(self, mask):
    """``self``'s values at the compressed ``mask``'s entries (every element of its blocks), as
    a tensor of ``mask``'s layout and pattern."""
    m = to_coo(mask)
    src = to_coo(self) if _is_compressed(self) else self
    values = coo._parts(coo.sparse_mask_sparse(src, m))[1]
    return _same_pattern(mask, values.reshape(mask._sparse.values._size))


# -- factories (a compressed ``layout=``: BackendSelect picks the SparseCsr key) -----------------

def _empty(size, dtype, layout, device, fname):
    """An all-zero CSR or CSC matrix (no entries; block layouts need a blocksize)."""
    layout = layout or sparse_csr
    if _R.is_block(layout):
        raise RuntimeError(f"{fname} expected sparse compressed (non-block) tensor layout but "
                           f"got {_R.layout_name(layout)}")
    size = tuple(size)
    if len(size) != 2:
        raise NotImplementedError("ember's sparse compressed tensors are 2-d matrices (no batch "
                                  "or dense dims)")
    n = size[0] if _R.is_row(layout) else size[1]
    compressed = _aten.zeros.default._call((n + 1,), D.int64, None, device, None)
    plain = _aten.empty.memory_format._call((0,), D.int64, None, device, None, None)
    values = _aten.empty.memory_format._call((0,), dtype, None, device, None, None)
    return _new(compressed, plain, values, size, layout)


@_kernel("empty.memory_format")
def empty_sparse_compressed(size, dtype=None, layout=None, device=None, pin_memory=None,
                            memory_format=None):
    return _empty(size, dtype, layout, device, "empty_sparse_compressed")


@_kernel("empty_strided")
def empty_strided_sparse_compressed(size, stride, dtype=None, layout=None, device=None,
                                    pin_memory=None):
    return _empty(size, dtype, layout, device, "empty_sparse_compressed")


@_kernel("zeros")
def zeros_sparse_compressed(size, dtype=None, layout=None, device=None, pin_memory=None):
    return _empty(size, dtype, layout, device, "zeros_sparse_compressed")


_KERNELS["ones"] = _KERNELS["full"] = coo.full_sparse


# -- arithmetic --------------------------------------------------------------------------------------

def _back(out, like):
    """A sparse COO result of a COO kernel in ``like``'s layout (and blocksize)."""
    if not (hasattr(out, "_keyset") and out._keyset & SPARSE_BITS):
        return out
    layout = _layout(like)
    return from_coo(out, layout, _blocksize(like) if _R.is_block(layout) else None,
                    _parts(like)[0]._dtype)


def _via_coo(coo_kernel):
    """``coo_kernel`` on the COO forms of the compressed arguments; a sparse result back in the
    first compressed argument's layout."""
    def kernel(*args):
        like = next(a for a in args if _is_compressed(a))
        return _back(coo_kernel(*[to_coo(a) if _is_compressed(a) else a for a in args]), like)
    kernel.__name__ = kernel.__qualname__ = f"{coo_kernel.__name__}_compressed"
    return kernel


@_kernel("mul.Scalar")
def mul_scalar_sparse_compressed(self, other):
    return _same_pattern(self, self._sparse.values * other)


def _scalar_like(x):
    """A Python number or a dense 0-dim tensor: what scales a pattern without changing it."""
    return not hasattr(x, "_keyset") or (x._storage_ is not None and x.dim() == 0)


def _check_elementwise(s):
    """PyTorch's element-wise products of two operands produce CSR only."""
    layout = _layout(s)
    if _R.is_block(layout):
        raise RuntimeError(f"empty_sparse_compressed expected sparse compressed (non-block) "
                           f"tensor layout but got {_R.layout_name(layout)}")
    if layout is not sparse_csr:
        raise RuntimeError("Expected result Tensor to be of format CSR")


@_kernel("mul.Tensor")
def mul_sparse_compressed(self, other):
    s, o = (self, other) if _is_compressed(self) else (other, self)
    if _scalar_like(o):
        return _same_pattern(s, s._sparse.values * (
            _untracked(o) if hasattr(o, "_keyset") else o))
    _check_elementwise(s)
    return _via_coo(coo.mul_sparse)(self, other)


@_kernel("div.Tensor", "div.Scalar")
def div_sparse_compressed(self, other):
    if not _is_compressed(self):
        raise RuntimeError("Sparse division requires a scalar or zero-dim dense tensor divisor "
                           "(got a sparse divisor)")
    coo._check_divisor(other)
    return _same_pattern(self, self._sparse.values / (
        _untracked(other) if hasattr(other, "_keyset") else other))


@_kernel("neg")
def neg_sparse_compressed(self):
    return _same_pattern(self, self._sparse.values.neg())


@_kernel("_conj_physical")
def conj_physical_sparse_compressed(self):
    return _same_pattern(self, _aten.conj_physical.default._call(self._sparse.values))


@_kernel("conj_physical_")
def conj_physical_sparse_compressed_(self):
    _aten.conj_physical_.default._call(self._sparse.values)
    return self


def _unary(name):
    packet = getattr(_aten, name)

    def kernel(self, *args):
        return _same_pattern(self, packet.default._call(self._sparse.values, *args))
    kernel.__name__ = kernel.__qualname__ = f"{name}_sparse_compressed"
    return kernel


for _name in coo._UNARY:
    _KERNELS[_name] = _unary(_name)


@_kernel("pow.Tensor_Scalar")
def pow_sparse_compressed(self, exponent):
    if exponent == 0:
        raise RuntimeError("pow: cannot raise to zeroth power on sparse tensor; it would make "
                           "the result tensor dense")
    return _same_pattern(self, self._sparse.values.pow(exponent))


@_kernel("sum")
def sum_sparse_compressed(self, dtype=None):
    return self._sparse.values.sum(dtype=dtype)


@_kernel("add.Tensor")
def add_sparse_compressed(self, other, alpha=1):
    if _is_compressed(self) and not _is_compressed(other) and other._storage_ is not None:
        # compressed + dense is dense, as dense + compressed is
        scaled = other if alpha == 1 else _untracked(other) * alpha
        return coo.add_sparse(scaled, to_coo(self), 1)
    return _via_coo(coo.add_sparse)(self, other, alpha)


@_kernel("sub.Tensor")
def sub_sparse_compressed(self, other, alpha=1):
    return _via_coo(coo.sub_sparse)(self, other, alpha)


_KERNELS["add.Scalar"] = _KERNELS["sub.Scalar"] = coo.add_scalar_sparse


@_kernel("add_.Tensor")
def add_sparse_compressed_(self, other, alpha=1):
    if _is_compressed(self):
        raise RuntimeError("add_: in-place addition into a sparse compressed tensor is not "
                           "supported by ember (its pattern would change)")
    coo.add_sparse_(self, to_coo(other), alpha)
    return self


# -- products --------------------------------------------------------------------------------------

def _spmm(s, dense):
    """Compressed (CSR, CSC or BSR) ``s`` times dense ``dense`` (checked): a BSR matrix as one
    batched product of its blocks with the rows of ``dense`` they meet, the others as COO."""
    layout = _layout(s)
    if not _R.is_block(layout):
        return coo._spmm(to_coo(s), dense)
    _, _, values = _parts(s)
    bh, bw = values._size[1], values._size[2]
    n = dense._size[1]
    out = dense.new_zeros((s._size[0] // bh, bh, n))
    if values._size[0]:
        coords = _block_coordinates(s)
        rows = dense.reshape(s._size[1] // bw, bw, n).index_select(0, coords[1])
        out.index_add_(0, coords[0], _aten.bmm.default._call(values, rows))
    return out.view(s._size[0], n)


def _mm(mat1, mat2):
    if _is_compressed(mat1) and _is_compressed(mat2):
        for m in (mat1, mat2):
            if _R.is_block(_layout(m)):
                raise RuntimeError(f"zeros_sparse_compressed expected sparse compressed "
                                   f"(non-block) tensor layout but got "
                                   f"{_R.layout_name(_layout(m))}")
        raise NotImplementedError("mm: ember has no product of two sparse compressed tensors")
    if _is_compressed(mat1):
        _R.check_compressed_mm(mat1, mat2, _layout(mat1), strided)
        return _spmm(mat1, _untracked(mat2))
    # dense @ compressed = (compressed^T @ dense^T)^T
    _R.check_compressed_mm(mat1, mat2, strided, _layout(mat2))
    return _spmm(transpose_sparse_compressed(mat2, 0, 1), _untracked(mat1).t()).t().contiguous()


@_kernel("mm")
def mm_sparse_compressed(self, mat2):
    return _mm(self, mat2)


@_kernel("mv")
def mv_sparse_compressed(self, vec):
    if _R.is_block(_layout(self)) and _layout(self) is sparse_bsc:
        raise RuntimeError("torch.addmv: operation not supported for mat with SparseBsc layout")
    return _mm(self, _untracked(vec).unsqueeze(1)).squeeze(1)


@_kernel("addmm", "_sparse_addmm")
def addmm_sparse_compressed(self, mat1, mat2, beta=1, alpha=1):
    return coo.addmm_with(_mm, _is_compressed, self, mat1, mat2, beta, alpha)


# -- shape -----------------------------------------------------------------------------------------

@_kernel("transpose.int")
def transpose_sparse_compressed(self, dim0, dim1):
    """Swapping the two dims swaps the orientation: CSR <-> CSC, BSR <-> BSC (each block
    transposed), the indices shared."""
    d0, d1 = _st.wrap_dim(dim0, self.dim()), _st.wrap_dim(dim1, self.dim())
    compressed, plain, values = _parts(self)
    layout = _layout(self)
    if d0 == d1:
        return _new(compressed, plain, values, self._size, layout)
    if _R.is_block(layout):
        values = values.transpose(1, 2)
    return _new(compressed, plain, values, self._size[::-1],
                _LAYOUTS[_R.transposed_name(layout)])


@_kernel("t")
def t_sparse_compressed(self):
    return transpose_sparse_compressed(self, 0, 1)


for _name, _fn in _KERNELS.items():
    register(_name, "SparseCsrCPU", _fn)
    register(_name, "SparseCsrCUDA", _fn)
for _name in ("sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc"):
    register(f"_to_{_name}", "SparseCPU", _coo_to_compressed(_name))
    register(f"_to_{_name}", "SparseCUDA", _coo_to_compressed(_name))
