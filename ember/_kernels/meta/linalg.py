"""Meta kernels of the matrix products: the CPU kernels' checks, then shape and dtype."""
from ..._core.device import META
from ..._core.tensor_impl import empty_tensor
from ..rules import linalg as _la


def meta_mm(self, mat2):
    return empty_tensor(_la.check_mm(self, mat2), self._dtype, META)


def meta_bmm(self, mat2):
    return empty_tensor(_la.check_bmm(self, mat2), self._dtype, META)


def meta_grouped_mm(self, mat2, offs=None, bias=None, out_dtype=None):
    size, stride, dtype = _la.check_grouped_mm(self, mat2, offs, bias, out_dtype)
    return empty_tensor(size, dtype, META, stride)


def meta_mv(self, vec):
    return empty_tensor(_la.check_mv(self, vec), self._dtype, META)


def meta_dot(self, tensor):
    return empty_tensor(_la.check_dot(self, tensor), self._dtype, META)


def meta_addmm(self, mat1, mat2, beta=1, alpha=1):
    return empty_tensor(_la.check_addmm(self, mat1, mat2), mat1._dtype, META)


def meta_baddbmm(self, batch1, batch2, beta=1, alpha=1):
    return empty_tensor(_la.check_baddbmm(self, batch1, batch2), batch1._dtype, META)


def meta_addbmm(self, batch1, batch2, beta=1, alpha=1):
    return empty_tensor(_la.check_addbmm(self, batch1, batch2), batch1._dtype, META)


def meta_addmv(self, mat, vec, beta=1, alpha=1):
    return empty_tensor(_la.check_addmv(self, mat, vec), mat._dtype, META)


def meta_vdot(self, other):
    return empty_tensor(_la.check_vdot(self, other), self._dtype, META)


# -- decompositions and solvers: the CPU kernels' checks, then LAPACK's output shapes -----------

def _e(shape, dtype):
    return empty_tensor(tuple(shape), dtype, META)


def _real(dt):
    return dt.to_real() if dt.is_complex else dt


def meta_linalg_inv_ex(A, check_errors=False):
    _la.check_square("linalg.inv", A)
    _la.check_float("linalg.inv", A)
    return _e(A._size, A._dtype), _e(A._size[:-2], _la.D.int32)


def meta__linalg_det(A):
    _la.check_square("linalg.det", A)
    _la.check_float("linalg.det", A, kernel="lu_cpu")
    return _e(A._size[:-2], A._dtype), _e(A._size, A._dtype), _e(A._size[:-1], _la.D.int32)


def meta__linalg_slogdet(A):
    _la.check_square("linalg.slogdet", A)
    _la.check_float("linalg.slogdet", A)
    b = A._size[:-2]
    return (_e(b, A._dtype), _e(b, _real(A._dtype)), _e(A._size, A._dtype),
            _e(A._size[:-1], _la.D.int32))


def meta__linalg_solve_ex(A, B, left=True, check_errors=False):
    _la.check_square("linalg.solve", A)
    _la.check_float("linalg.solve", A, kernel="lu_cpu")
    if A._dtype is not B._dtype:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found "
                           f"A of type {A._dtype._short} and B of type {B._dtype._short} instead")
    vector = B.dim() == 1 or (B.dim() == A.dim() - 1 and B._size == A._size[:-1])
    bb = B._size + (1,) if vector else B._size
    k = bb[-2] if left else bb[-1]
    if k != A._size[-1]:
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({_la._x(A._size)} and "
                           f"{_la._x(B._size)})")
    batch = _la._st.broadcast_shapes(A._size[:-2], bb[:-2])
    x = batch + (bb[-2:-1] if vector else bb[-2:])
    return (_e(x, A._dtype), _e(A._size, A._dtype), _e(A._size[:-1], _la.D.int32),
            _e(A._size[:-2], _la.D.int32))


def meta_linalg_cholesky_ex(self, upper=False, check_errors=False):
    _la.check_square("linalg.cholesky", self)
    _la.check_float("linalg.cholesky", self, kernel="cholesky_cpu")
    return _e(self._size, self._dtype), _e(self._size[:-2], _la.D.int32)


def meta_cholesky(self, upper=False):
    return meta_linalg_cholesky_ex(self, upper)[0]


def meta_linalg_qr(A, mode="reduced"):
    _la._check_matrix("linalg.qr", A, low_precision=True)
    _la.check_lapack_dtype("geqrf_cpu", A)  # (run on empty inputs too)
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of "
                           f"'reduced' (default), 'r', or 'complete'")
    m, n = A._size[-2:]
    k = m if mode == "complete" else min(m, n)
    q = (0,) if mode == "r" else A._size[:-2] + (m, k)
    return _e(q, A._dtype), _e(A._size[:-2] + (k, n), A._dtype)


def meta__linalg_svd(A, full_matrices=False, compute_uv=True, driver=None):
    _la._check_matrix("linalg.svd", A, "linalg_svd_cpu")
    m, n = A._size[-2:]
    k = min(m, n)
    b = A._size[:-2]
    u = b + (m, m if full_matrices else k) if compute_uv else (0,)
    vh = b + (n if full_matrices else k, n) if compute_uv else (0,)
    return _e(u, A._dtype), _e(b + (k,), _real(A._dtype)), _e(vh, A._dtype)


def meta_linalg_eig(self):
    _la.check_square("linalg.eig", self, "input")
    _la.check_eig_dtype(self)
    c = self._dtype if self._dtype.is_complex else self._dtype.to_complex()
    return _e(self._size[:-1], c), _e(self._size, c)


def meta__linalg_eigh(A, UPLO="L", compute_v=True):
    _la.check_square("linalg.eigh", A)
    _la.check_eigh_dtype(A)
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return _e(A._size[:-1], _real(A._dtype)), _e(A._size if compute_v else (0,), A._dtype)


def meta_linalg_vector_norm(self, ord=2, dim=None, keepdim=False, dtype=None):
    dims, out = _la.vector_norm_check(self, ord, dim, dtype)
    return _e(_la.vector_norm_shape(self, dims, keepdim), out)


def meta__linalg_check_errors(info, api_name, is_matrix):
    return None  # info's values are unknown: PyTorch's meta kernel checks nothing either


# -- issue 18: LU, triangular and Cholesky solves, LDL, Householder products, matrix_exp ---------

_I32 = _la.D.int32


def meta_linalg_lu_factor_ex(A, pivot=True, check_errors=False):
    s_lu, s_piv, s_info = _la.check_lu_factor(A, "torch.lu_factor", pivot)
    return _e(s_lu, A._dtype), _e(s_piv, _I32), _e(s_info, _I32)


def meta_linalg_lu(A, pivot=True):
    return tuple(_e(s, A._dtype) for s in _la.check_linalg_lu(A, pivot))


def meta_lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True):
    shapes = _la.check_lu_unpack(LU_data, LU_pivots, unpack_data, unpack_pivots)
    return tuple(_e(s, LU_data._dtype) for s in shapes)


def meta_linalg_lu_solve(LU, pivots, B, left=True, adjoint=False):
    return _e(_la.check_lu_solve(LU, pivots, B, left, adjoint), LU._dtype)


def meta_linalg_solve_triangular(self, B, upper, left=True, unitriangular=False):
    return _e(_la.check_solve_triangular(self, B, upper, left, unitriangular), self._dtype)


def meta_triangular_solve(self, A, upper=True, transpose=False, unitriangular=False):
    sx, sa = _la.check_triangular_solve(self, A)
    return _e(sx, self._dtype), _e(sa, A._dtype)


def meta_cholesky_solve(self, input2, upper=False):
    return _e(_la.check_cholesky_solve(self, input2), self._dtype)


def meta_cholesky_inverse(self, upper=False):
    return _e(_la.check_cholesky_inverse(self, upper), self._dtype)


def meta_geqrf(self):
    sa, st = _la.check_geqrf(self)
    return _e(sa, self._dtype), _e(st, self._dtype)


def meta_linalg_householder_product(input, tau):
    return _e(_la.check_householder_product(input, tau), input._dtype)


def meta_ormqr(self, input2, input3, left=True, transpose=False):
    return _e(_la.check_ormqr(self, input2, input3, left, transpose), self._dtype)


def meta_linalg_matrix_exp(self):
    return _e(_la.check_matrix_exp(self), self._dtype)


def meta_linalg_ldl_factor_ex(self, hermitian=False, check_errors=False):
    s_ld, s_piv, s_info = _la.check_ldl_factor(self, hermitian)
    return _e(s_ld, self._dtype), _e(s_piv, _I32), _e(s_info, _I32)


def meta_linalg_ldl_solve(LD, pivots, B, hermitian=False):
    return _e(_la.check_ldl_solve(LD, pivots, B, hermitian), LD._dtype)
