"""The legacy sparse products ``torch.hspmm``, ``torch.sspaddmm`` (and ``smm``, its zero-``self``
form) and ``torch.native_norm``: kernels of the sparse keys, as ATen registers them
(``SparseTensorMath.cpp``), written in ember ops on a COO matrix's parts. ``hspmm`` returns a
hybrid tensor (one sparse dim, dense rows) holding the rows of ``mat1 @ mat2`` that ``mat1``
touches; ``sspaddmm`` keeps its result sparse too: ``beta * self``'s entries, then one entry for
every column of each row ``mat1`` touches. Neither is marked coalesced, as in ATen. A dense
``sspaddmm`` gets ATen's dense kernel, which refuses."""
from ..._ops.overload import ops
from ..registration import register

_aten = ops.aten
_SPARSE_KEYS = ("SparseCPU", "SparseCUDA")


def _check_dtype(a, b):
    if a._dtype is not b._dtype:
        raise RuntimeError(f"expected scalar type {a._dtype._short} but found {b._dtype._short}")


def _check_matrix(t, fname, argnum, dims):
    if dims != 2:
        raise RuntimeError(f"{fname}: Argument #{argnum}: matrices expected, got {dims}D tensor")


def _check_size(fname, argnum, dim, expected, got):
    if expected != got:
        raise RuntimeError(f"{fname}: Argument #{argnum}: Expected dim {dim} size {expected}, "
                           f"got {got}")


def _touched_rows(mat1, mat2):
    """(rows mat1 has entries in, sorted; those rows of mat1 @ mat2)."""
    c = _aten._coalesce.default._call(mat1)  # (the sparse kernel: coalesce is composite)
    indices, values = _aten._indices.default._call(c), _aten._values.default._call(c)
    rows, inverse, _ = _aten._unique2.default._call(indices[0], True, True, False)
    contrib = values.unsqueeze(1) * mat2[indices[1]]
    zeros = _aten.zeros.default._call((rows._size[0], mat2._size[1]), contrib._dtype, None,
                                      contrib.device, None)
    return rows, zeros.index_add(0, inverse, contrib)


def hspmm(mat1, mat2):
    _check_matrix(mat1, "hspmm", 2, mat1.sparse_dim())
    _check_matrix(mat2, "hspmm", 3, mat2.dim())
    _check_size("hspmm", 3, 0, mat1._size[1], mat2._size[0])
    _check_dtype(mat1, mat2)
    rows, values = _touched_rows(mat1, mat2)
    return _aten._sparse_coo_tensor_unsafe.default._call(
        rows.unsqueeze(0), values, (mat1._size[0], mat2._size[1]), None, None, None, None, False)


def sspaddmm_sparse(self, mat1, mat2, beta=1, alpha=1):
    _check_matrix(mat1, "sspaddmm", 2, mat1.sparse_dim())
    _check_matrix(mat2, "sspaddmm", 3, mat2.dim())
    _check_size("sspaddmm", 3, 0, mat1._size[1], mat2._size[0])
    _check_size("sspaddmm", 1, 0, mat1._size[0], self._size[0])
    _check_size("sspaddmm", 1, 1, mat2._size[1], self._size[1])
    _check_dtype(mat1, mat2)
    rows, values = _touched_rows(mat1, mat2)
    n = mat2._size[1]
    cols = _aten.arange.default._call(n, rows._dtype, None, rows.device, None)
    product = _aten.stack.default._call(
        [rows.repeat_interleave(n), cols.repeat(rows._size[0])], 0)
    indices = _aten.cat.default._call([_aten._indices.default._call(self), product], 1)
    values = _aten.cat.default._call([_aten._values.default._call(self) * beta,
                                      values.reshape(-1) * alpha], 0)
    return _aten._sparse_coo_tensor_unsafe.default._call(
        indices, values, tuple(self._size), None, None, None, None, False)


def sspaddmm(self, mat1, mat2, beta=1, alpha=1):
    """ATen's dense kernel (_sspaddmm_out_only_sparse)."""
    raise RuntimeError("tensor.sspaddmm(...) can only be called on sparse tensors")


def smm(self, mat2):
    zero = _aten.zeros.default._call((self._size[0], mat2._size[-1]), self._dtype,
                                     self.layout, self.device, None)
    return _aten.sspaddmm.default._call(zero, self, mat2, 0.0, 1.0)


def native_norm(self, p=2):
    return _aten.norm.Scalar._call(
        _aten._values.default._call(_aten._coalesce.default._call(self)), p)


def native_norm_ScalarOpt_dim_dtype(self, p, dim, keepdim, dtype):
    """ATen's norm_sparse: full reductions only."""
    if dim:
        ndim = self.dim()
        wrapped = {d % ndim if -ndim <= d < ndim else None for d in dim}
        if len(dim) != ndim or len(wrapped) != ndim or None in wrapped:
            raise RuntimeError("norm_sparse currently only supports full reductions, so 'dim' "
                               "must either be empty or contain all dimensions of the input")
    if keepdim:
        raise RuntimeError("norm_sparse currently does not support keepdim=True")
    if dtype is not None:
        raise RuntimeError("norm_sparse currently does not support 'dtype' argument")
    return native_norm(self, 2.0 if p is None else p)


for _key in _SPARSE_KEYS:
    register("hspmm", _key, hspmm)
    register("sspaddmm", _key, sspaddmm_sparse)
    register("native_norm", _key, native_norm)
    register("native_norm.ScalarOpt_dim_dtype", _key, native_norm_ScalarOpt_dim_dtype)
