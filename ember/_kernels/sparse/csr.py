"""Sparse CSR kernels (PyTorch's SparseCsrCPU/SparseCsrCUDA kernels) for 2-d CSR matrices.

A CSR matrix's entries are a coalesced COO matrix's, rows compressed: row i's entries are
positions ``crow_indices[i]:crow_indices[i + 1]`` of ``col_indices`` and ``values``. Ops that
keep the sparsity pattern (scaling, zero-preserving unary ops) map the values; the others run
``coo.py``'s kernel on the COO form (each entry's row recovered from ``crow_indices``) and
compress its sparse result back. ember's CSR tensors have no batch or dense dims, and there is no
CSC layout (a transpose of a CSR matrix is one): those raise.
"""
from ..._core import dtype as D
from ..._core.device import sparse_coo, sparse_csr
from ..._core.tensor_impl import _untracked, sparse_coo_tensor_impl, sparse_csr_tensor_impl
from ..._dispatch.keys import SPARSE_BITS, SPARSE_CSR_BITS
from ..._ops.overload import ops
from ..registration import register
from . import coo, kernel_table

_aten = ops.aten
# "op.overload" -> kernel, registered for both keys of the layout at the end of this module
_KERNELS, _kernel = kernel_table()


def _is_csr(t):
    return hasattr(t, "_keyset") and bool(t._keyset & SPARSE_CSR_BITS)


def _parts(t):
    s = t._sparse
    return s.crow_indices, s.col_indices, s.values


def _check_matrix(name, t):
    if t.dim() != 2 or t._sparse.values.dim() != 1:
        raise NotImplementedError(f"{name}: ember's sparse CSR tensors are 2-d matrices "
                                  f"(no batch or dense dims)")


def to_coo(t):
    """The coalesced COO matrix with ``t``'s entries."""
    crow, col, values = _parts(t)
    indices = _aten._convert_indices_from_csr_to_coo.default._call(crow, col, False, False)
    return sparse_coo_tensor_impl(indices, values, t._size, True)


def from_coo(c):
    """The CSR matrix with COO matrix ``c``'s elements (summed where an index repeats)."""
    if c.dim() != 2 or c._sparse.sparse_dim != 2:
        raise NotImplementedError("to_sparse_csr: ember's sparse CSR tensors are 2-d matrices "
                                  "(no batch or dense dims)")
    c = coo._coalesced(c)
    indices, values = coo._parts(c)
    crow = _aten._convert_indices_from_coo_to_csr.default._call(indices[0], c._size[0], False)
    return sparse_csr_tensor_impl(crow, indices[1].clone(), values, c._size)


def _csc_error(*args):
    raise NotImplementedError("transpose: the transpose of a sparse CSR matrix is a sparse CSC "
                              "one, and ember has no sparse CSC layout (convert with "
                              "to_sparse() or to_dense() first)")


for _name in ("transpose.int", "t"):
    _KERNELS[_name] = _csc_error


# -- metadata and conversions --------------------------------------------------------------------

@_kernel("crow_indices")
def crow_indices_csr(self):
    return coo._shared(self._sparse.crow_indices)


@_kernel("col_indices")
def col_indices_csr(self):
    return coo._shared(self._sparse.col_indices)


@_kernel("values", "_values")
def values_csr(self):
    return coo._shared(self._sparse.values)


@_kernel("_nnz")
def _nnz_csr(self):
    return self._sparse.values._size[0]


@_kernel("sparse_dim", "_dimI")
def sparse_dim_csr(self):
    return 2


@_kernel("dense_dim", "_dimV")
def dense_dim_csr(self):
    return self._sparse.values.dim() - 1


@_kernel("_to_dense")
def _to_dense_csr(self, dtype=None, masked_grad=None):
    return coo._to_dense_sparse(to_coo(self), dtype)


@_kernel("_to_sparse.sparse_dim")
def _to_sparse_sparse_dim_csr(self, sparse_dim):
    if sparse_dim != 2:
        raise RuntimeError("sparse_csr_to_sparse: conversion from Csr to Sparse with "
                           "sparse_dim argument !=2 is not supported")
    return to_coo(self).clone()


@_kernel("_to_sparse")
def _to_sparse_any_csr(self, layout=None, blocksize=None, dense_dim=None):
    if layout is sparse_csr:
        return clone_csr(self)
    if layout not in (None, sparse_coo):
        raise NotImplementedError(f"to_sparse: ember has sparse COO and CSR tensors only, not "
                                  f"{layout}")
    return to_coo(self).clone()


@_kernel("_to_sparse_csr")
def _to_sparse_csr_csr(self, dense_dim=None):
    return clone_csr(self)


def _to_sparse_csr_coo(self, dense_dim=None):
    return from_coo(self)


@_kernel("clone")
def clone_csr(self, memory_format=None):
    crow, col, values = _parts(self)
    return sparse_csr_tensor_impl(crow.clone(), col.clone(), values.clone(), self._size)


@_kernel("detach")
def detach_csr(self):
    return sparse_csr_tensor_impl(*_parts(self), self._size)


@_kernel("_to_copy")
def _to_copy_csr(self, dtype=None, layout=None, device=None, pin_memory=None,
                 non_blocking=False, memory_format=None):
    crow, col, values = _parts(self)
    out = sparse_csr_tensor_impl(crow.to(device=device, copy=True),
                                 col.to(device=device, copy=True),
                                 values.to(dtype=dtype, device=device, copy=True), self._size)
    return out if layout in (None, sparse_csr) else _to_dense_csr(out)


@_kernel("sparse_mask")
def sparse_mask_csr(self, mask):
    """``self``'s values at the CSR ``mask``'s entries, as a CSR matrix of its pattern."""
    m = to_coo(mask)
    values = coo._parts(coo.sparse_mask_sparse(to_coo(self) if _is_csr(self) else self, m))[1]
    crow, col, _ = _parts(mask)
    return sparse_csr_tensor_impl(crow, col, values, mask._size)


# -- factories ------------------------------------------------------------------------------------

def _empty(size, dtype, device):
    """An all-zero CSR matrix (no entries)."""
    size = tuple(size)
    if len(size) != 2:
        raise NotImplementedError("ember's sparse CSR tensors are 2-d matrices (no batch or "
                                  "dense dims)")
    crow = _aten.zeros.default._call((size[0] + 1,), D.int64, None, device, None)
    col = _aten.empty.memory_format._call((0,), D.int64, None, device, None, None)
    values = _aten.empty.memory_format._call((0,), dtype, None, device, None, None)
    return sparse_csr_tensor_impl(crow, col, values, size)


@_kernel("empty.memory_format")
def empty_csr(size, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    return _empty(size, dtype, device)


@_kernel("empty_strided")
def empty_strided_csr(size, stride, dtype=None, layout=None, device=None, pin_memory=None):
    return _empty(size, dtype, device)


@_kernel("zeros")
def zeros_csr(size, dtype=None, layout=None, device=None, pin_memory=None):
    return _empty(size, dtype, device)


_KERNELS["ones"] = _KERNELS["full"] = coo.full_sparse


# -- arithmetic and products ------------------------------------------------------------------------

def _same_pattern(self, values):
    crow, col, _ = _parts(self)
    return sparse_csr_tensor_impl(crow, col, values, self._size)


def _via_coo(coo_kernel):
    """``coo_kernel`` on the COO forms of the CSR arguments; a sparse result back in CSR."""
    def kernel(*args):
        out = coo_kernel(*[to_coo(a) if _is_csr(a) else a for a in args])
        return from_coo(out) if hasattr(out, "_keyset") and out._keyset & SPARSE_BITS else out
    kernel.__name__ = kernel.__qualname__ = f"{coo_kernel.__name__}_csr"
    return kernel


@_kernel("mul.Scalar")
def mul_scalar_csr(self, other):
    return _same_pattern(self, self._sparse.values * other)


def _scalar_like(x):
    """A Python number or a dense 0-dim tensor: what scales a pattern without changing it."""
    return not hasattr(x, "_keyset") or (x._storage_ is not None and x.dim() == 0)


@_kernel("mul.Tensor")
def mul_csr(self, other):
    s, o = (self, other) if _is_csr(self) else (other, self)
    if _scalar_like(o):
        return _same_pattern(s, s._sparse.values * (
            _untracked(o) if hasattr(o, "_keyset") else o))
    return _via_coo(coo.mul_sparse)(self, other)


@_kernel("div.Tensor", "div.Scalar")
def div_csr(self, other):
    if not _is_csr(self):
        raise RuntimeError("Sparse division requires a scalar or zero-dim dense tensor divisor "
                           "(got a sparse divisor)")
    coo._check_divisor(other)
    return _same_pattern(self, self._sparse.values / (
        _untracked(other) if hasattr(other, "_keyset") else other))


@_kernel("neg")
def neg_csr(self):
    return _same_pattern(self, self._sparse.values.neg())


def _unary(name):
    packet = getattr(_aten, name)

    def kernel(self, *args):
        return _same_pattern(self, packet.default._call(self._sparse.values, *args))
    kernel.__name__ = kernel.__qualname__ = f"{name}_csr"
    return kernel


for _name in coo._UNARY:
    _KERNELS[_name] = _unary(_name)


@_kernel("pow.Tensor_Scalar")
def pow_csr(self, exponent):
    if exponent == 0:
        raise RuntimeError("pow: cannot raise to zeroth power on sparse tensor; it would make "
                           "the result tensor dense")
    return _same_pattern(self, self._sparse.values.pow(exponent))


@_kernel("sum")
def sum_csr(self, dtype=None):
    return self._sparse.values.sum(dtype=dtype)


_KERNELS["add.Tensor"] = _via_coo(coo.add_sparse)
_KERNELS["sub.Tensor"] = _via_coo(coo.sub_sparse)
_KERNELS["add.Scalar"] = _KERNELS["sub.Scalar"] = coo.add_scalar_sparse
_KERNELS["mm"] = _via_coo(coo.mm_sparse)
_KERNELS["addmm"] = _KERNELS["_sparse_addmm"] = _via_coo(coo.addmm_sparse)


@_kernel("add_.Tensor")
def add_csr_(self, other, alpha=1):
    if _is_csr(self):
        raise RuntimeError("add_: in-place addition into a sparse CSR tensor is not supported "
                           "by ember (its pattern would change)")
    coo.add_sparse_(self, to_coo(other), alpha)
    return self


for _name, _fn in _KERNELS.items():
    register(_name, "SparseCsrCPU", _fn)
    register(_name, "SparseCsrCUDA", _fn)
register("_to_sparse_csr", "SparseCPU", _to_sparse_csr_coo)
register("_to_sparse_csr", "SparseCUDA", _to_sparse_csr_coo)
