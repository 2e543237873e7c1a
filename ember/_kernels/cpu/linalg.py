"""CPU matrix products (mm, bmm, addmm, mv, dot) on ``numpy.matmul``. The argument checks, with
PyTorch's messages, are shared with the Meta kernels; ``matmul`` is a composite of these ops
(``composite/math.py``)."""
import math

import numpy as np

from ..._core import complex32 as _complex32
from ..._core import dtype as D
from . import gemm as _gemm
from .gemm import matmul as _matmul
from ..rules.float8 import REFUSED as _REFUSED, refuse as _refuse
from ._util import array_module, array_of, nd, wrap

# mm, addmm, bmm, baddbmm, mv and dot test for the dtypes ATen has no kernel for themselves, before
# anything else (rules/float8.py's IN_KERNEL: cheaper than the gate's wrapper on these hot ops)


def _operand(t):
    """``t``'s array; a ComplexHalf one (the checks let only products with nothing to multiply
    through) as complex64, which NumPy can multiply and sum."""
    a = nd(t)
    return _complex32.to_complex64(a) if t._dtype is D.complex32 else a


def _as_result(r, dt):
    """``r`` in dtype ``dt`` (complex32: the float16 pair of each element)."""
    return _complex32.from_any(r) if dt is D.complex32 else r.astype(dt._np, copy=False)


def _product(a, b, dt):
    # NumPy returns float32 for bfloat16 products; PyTorch keeps the operand dtype
    return wrap(_as_result(array_of(_matmul(a, b)), dt))


def mm(self, mat2):
    if self._dtype in _REFUSED or mat2._dtype in _REFUSED:
        _refuse("mm", (self, mat2))
    check_mm(self, mat2)
    return _product(_operand(self), _operand(mat2), self._dtype)


def bmm(self, mat2):
    if self._dtype in _REFUSED or mat2._dtype in _REFUSED:
        _refuse("bmm", (self, mat2))
    check_bmm(self, mat2)
    return _product(_operand(self), _operand(mat2), self._dtype)


def mv(self, vec):
    if self._dtype in _REFUSED or vec._dtype in _REFUSED:
        _refuse("mv", (self, vec))
    check_mv(self, vec)
    return _product(_operand(self), _operand(vec), self._dtype)


def dot(self, tensor):
    if self._dtype in _REFUSED or tensor._dtype in _REFUSED:
        _refuse("dot", (self, tensor))
    check_dot(self, tensor)
    return _product(nd(self), nd(tensor), self._dtype)


def addmm(self, mat1, mat2, beta=1, alpha=1):
    if self._dtype in _REFUSED or mat1._dtype in _REFUSED or mat2._dtype in _REFUSED:
        _refuse("addmm", (self, mat1, mat2, beta, alpha))
    shape = check_addmm(self, mat1, mat2)
    if beta == 1 and alpha == 1:
        fused = _gemm.add_product(nd(self), nd(mat1), nd(mat2))
        if fused is not None:
            return wrap(fused)
    return _scaled_sum(_matmul(_operand(mat1), _operand(mat2)), _operand(self), beta, alpha,
                       shape, mat1._dtype)


def _scaled_sum(product, self_arr, beta, alpha, shape, dt):
    """alpha * product + beta * self, where beta == 0 ignores self (NaN in self does not
    propagate), as every BLAS-style op (addmm, addmv, baddbmm, addbmm) does. An integral
    result takes alpha and beta converted to its type first (0.6 -> 0), as ATen's scalar_t does."""
    if dt._category <= D.INTEGRAL:
        alpha, beta = int(alpha), int(beta)
    r = array_of(product if alpha == 1 else product * alpha)  # fresh: free to write into
    if beta != 0:
        s = self_arr if beta == 1 else self_arr * beta
        if r.shape == shape and np.result_type(r, s) == r.dtype:
            np.add(r, s, out=r)  # the same sum, without a second result-sized array
        else:
            r = r + s
    if r.shape != shape or r.dtype != dt._np:
        r = _as_result(np.broadcast_to(r, shape), dt)
        if r.shape != shape or not r.flags.writeable:  # (astype without a copy kept a view)
            r = r.copy()
    return wrap(r)


def baddbmm(self, batch1, batch2, beta=1, alpha=1):
    if (self._dtype in _REFUSED or batch1._dtype in _REFUSED or batch2._dtype in _REFUSED):
        _refuse("baddbmm", (self, batch1, batch2, beta, alpha))
    shape = check_baddbmm(self, batch1, batch2)
    return _scaled_sum(_matmul(_operand(batch1), _operand(batch2)), _operand(self), beta, alpha,
                       shape, batch1._dtype)


def addbmm(self, batch1, batch2, beta=1, alpha=1):
    shape = check_addbmm(self, batch1, batch2)
    b1, dt = _operand(batch1), batch1._dtype
    if dt.is_floating_point and dt.itemsize <= 2 and batch1._size[0] > 1:
        # ATen's addbmm is one addmm_ per batch into the result, so a 16- or 8-bit result is
        # rounded after each batch's product, accumulated in float32 (its opmath), is added
        # (float8 sums differ by whole steps)
        prods = _matmul(b1.astype(np.float32), _operand(batch2).astype(np.float32))
        r = _scaled_sum(prods[0], _operand(self), beta, alpha, shape, dt)
        for p in prods[1:]:
            r = _scaled_sum(p, nd(r), 1, alpha, shape, dt)
        return r
    prod = _matmul(b1, _operand(batch2)).sum(0) if batch1._size[0] else \
        array_module(b1).zeros(shape, b1.dtype)
    return _scaled_sum(prod, _operand(self), beta, alpha, shape, dt)


def addmv(self, mat, vec, beta=1, alpha=1):
    shape = check_addmv(self, mat, vec)
    return _scaled_sum(_matmul(_operand(mat), _operand(vec)), _operand(self), beta, alpha, shape,
                       mat._dtype)


def vdot(self, other):
    check_vdot(self, other)
    return _product(np.conj(nd(self)), nd(other), self._dtype)


# -- decompositions and solvers (ember.linalg) ----------------------------------------------------
# LAPACK through NumPy (batched) and SciPy (LU with pivots). Like PyTorch's *_ex ops, these
# return an ``info`` tensor instead of raising; the composite ops (linalg_inv, linalg_solve,
# linalg_cholesky) turn a non-zero info into LinAlgError.


def _sla():
    """scipy.linalg, imported on first use (it costs ~0.3 s at import time)."""
    import scipy.linalg
    return scipy.linalg

from ..._core import strides as _st  # noqa: E402
from ..rules.linalg import (_check_matrix, _x, check_addbmm, check_addmm, check_addmv,
                            check_baddbmm, check_bmm, check_cholesky_inverse,
                            check_cholesky_solve, check_dot, check_eig_dtype, check_eigh_dtype,
                            check_float, check_geqrf, check_householder_product,
                            check_lapack_dtype,
                            check_ldl_factor, check_ldl_solve, check_linalg_lu,
                            check_lstsq_matrix_rank_dtype, check_lu_factor, check_lu_solve,
                            check_lu_unpack, check_matrix_exp, check_mm, check_mv, check_ormqr,
                            check_solve_triangular, check_square, check_triangular_solve,
                            check_vdot, vector_norm_check, vector_norm_shape)


class LinAlgError(RuntimeError):
    """PyTorch's torch.linalg.LinAlgError (``torch._C._LinAlgError``): a RuntimeError raised
    when a decomposition or solve fails on the input's values (singular, not positive-definite)."""


LinAlgError.__module__ = "ember.linalg"


def _matrices(a):
    """The matrices of a (..., m, n) array, as one (batch, m, n) array."""
    return a.reshape((math.prod(a.shape[:-2]),) + a.shape[-2:])  # -1 is ambiguous for 0x0


def _lu(a):
    """LU with partial pivoting of every matrix in a: (LU, 1-based int32 pivots, info)."""
    m = _matrices(a)
    k = min(a.shape[-2:])
    lu = np.empty_like(m)
    piv = np.empty((m.shape[0], k), np.int32)
    info = np.zeros(m.shape[0], np.int32)
    for i in range(m.shape[0]):  # LAPACK's LU is per matrix
        # PyTorch's LU tensor holds LAPACK's column-major factors: those of A^T row-major
        lu[i], piv[i], info[i] = _getrf(m[i].T)
    return (lu.reshape(a.shape), piv.reshape(a.shape[:-2] + (k,)),
            info.reshape(a.shape[:-2]))


def linalg_inv_ex(A, check_errors=False):
    check_square("linalg.inv", A)
    check_float("linalg.inv", A)
    a = nd(A)
    _, _, info = _lu(a)
    try:
        inv = np.linalg.inv(a) if a.size else a.copy()
    except np.linalg.LinAlgError:  # a singular matrix in the batch: each matrix on its own
        inv = np.empty_like(a)
        flat, out = a.reshape((-1,) + a.shape[-2:]), inv.reshape((-1,) + a.shape[-2:])
        for i, m in enumerate(flat):
            out[i] = np.linalg.inv(m) if info.reshape(-1)[i] == 0 else \
                _singular_solve(m, np.eye(m.shape[0], dtype=m.dtype))
    if check_errors:
        raise_for_info("linalg.inv", info, A.dim() == 2)
    return wrap(np.ascontiguousarray(inv).astype(a.dtype)), wrap(info)


def _singular_solve(m, rhs, trans=0):
    """What PyTorch's solve (or inverse: ``rhs`` the identity) of a singular matrix holds:
    LAPACK's getrf of ``m``, then getrs (of ``m``'s transpose with ``trans`` 1), dividing by
    the zero pivot (inf and nan)."""
    getrf, getrs = _sla().lapack.get_lapack_funcs(("getrf", "getrs"), (m,))
    lu, piv, _ = getrf(m)
    with np.errstate(all="ignore"):
        x, _ = getrs(lu, piv, rhs, trans=trans)
    return x


def raise_for_info(name, info, single):
    """PyTorch's _linalg_check_errors for inverse/solve-like ops (info from an LU)."""
    info = np.asarray(nd(info) if hasattr(info, "_keyset") else info)
    bad = np.flatnonzero(info.reshape(-1) > 0)
    if bad.size:
        where = "" if single else f"(Batch element {bad[0]}): "
        raise LinAlgError(f"{name}: {where}The diagonal element {info.reshape(-1)[bad[0]]} is "
                          f"zero, the inversion could not be completed because the input matrix "
                          f"is singular.")


def _linalg_det(A):
    check_square("linalg.det", A)
    check_float("linalg.det", A, kernel="lu_cpu")
    a = nd(A)
    lu, piv, _ = _lu(a)
    det = np.linalg.det(a) if a.size else np.ones(a.shape[:-2], a.dtype)
    return wrap(np.asarray(det).astype(a.dtype)), wrap(lu), wrap(piv)


def _linalg_slogdet(A):
    check_square("linalg.slogdet", A)
    check_float("linalg.slogdet", A)
    a = nd(A)
    real = np.dtype(a.dtype).type(0).real.dtype  # (log|det| is real for complex inputs too)
    lu, piv, _ = _lu(a)
    sign, logabs = np.linalg.slogdet(a) if a.size else (np.ones(a.shape[:-2], a.dtype),
                                                        np.zeros(a.shape[:-2], real))
    return (wrap(np.asarray(sign).astype(a.dtype)), wrap(np.asarray(logabs).astype(real)),
            wrap(lu), wrap(piv))


def _linalg_solve_ex(A, B, left=True, check_errors=False):
    check_square("linalg.solve", A)
    check_float("linalg.solve", A, kernel="lu_cpu")
    if A._dtype is not B._dtype:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found "
                           f"A of type {A._dtype._short} and B of type {B._dtype._short} instead")
    a, b = nd(A), nd(B)
    vector = b.ndim == 1 or (b.ndim == a.ndim - 1 and b.shape == a.shape[:-1])
    b_ = b.shape + (1,) if vector else b.shape  # (a vector is a column, in either equation)
    if a.shape[-1] != (b_[-2] if left else b_[-1]):
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({_x(a.shape[-2:])} and "
                           f"{_x(b_[-2:])})")
    if vector and not left:
        raise RuntimeError("linalg.solve: Vector broadcasting of the left hand side is not "
                           "supported for left=False. In this case linalg.solve is equivalent "
                           "to B / A.squeeze(-1)")
    lu, piv, info = _lu(a)  # of A itself: its batch is not broadcast (as PyTorch's)
    a_given = a
    if not left:  # X A = B  <=>  A^T X^T = B^T
        a, b = np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2)
    bb = b[..., None] if vector else b
    batch = _st.broadcast_shapes(a.shape[:-2], bb.shape[:-2])
    a_given = np.broadcast_to(a_given, batch + a.shape[-2:])
    a = np.broadcast_to(a, batch + a.shape[-2:])
    bb = np.broadcast_to(bb, batch + bb.shape[-2:])
    try:
        x = np.linalg.solve(a, bb) if a.size and bb.size else np.zeros(bb.shape, a.dtype)
    except np.linalg.LinAlgError:  # a singular matrix in the batch: each system on its own
        x = np.empty(bb.shape, np.result_type(a, bb))
        for idx in np.ndindex(*batch):
            try:
                x[idx] = np.linalg.solve(a[idx], bb[idx])
            except np.linalg.LinAlgError:  # (PyTorch factors A, and solves with A^T)
                x[idx] = _singular_solve(a_given[idx], bb[idx], trans=0 if left else 1)
    if check_errors:
        raise_for_info("linalg.solve", info, A.dim() == 2)
    x = x[..., 0] if vector else x
    if not left:
        x = np.swapaxes(x, -1, -2)
    return (wrap(np.ascontiguousarray(x).astype(a.dtype)), wrap(lu), wrap(piv),
            wrap(info))


def linalg_cholesky_ex(self, upper=False, check_errors=False):
    check_square("linalg.cholesky", self)
    check_float("linalg.cholesky", self, kernel="cholesky_cpu")
    a = nd(self)
    m = _matrices(a)
    L = np.zeros_like(m)
    info = np.zeros(m.shape[0], np.int32)
    for i in range(m.shape[0]):  # info: the order of the leading minor that is not PD
        try:
            L[i] = np.linalg.cholesky(m[i]) if m[i].size else m[i]
        except np.linalg.LinAlgError:
            n = m.shape[-1]
            info[i] = next(k for k in range(1, n + 1)
                           if np.linalg.eigvalsh(m[i][:k, :k]).min() <= 0) if n else 0
    L = L.reshape(a.shape)
    if upper:
        L = np.conj(np.swapaxes(L, -1, -2))
    info = info.reshape(a.shape[:-2])
    if check_errors:
        raise_for_cholesky(info, self.dim() == 2)
    return wrap(np.ascontiguousarray(L)), wrap(info)


def raise_for_cholesky(info, single):
    info = np.asarray(nd(info) if hasattr(info, "_keyset") else info)
    bad = np.flatnonzero(info.reshape(-1) > 0)
    if bad.size:
        where = "" if single else f"(Batch element {bad[0]}): "
        raise LinAlgError(f"linalg.cholesky: {where}The factorization could not be completed "
                          f"because the input is not positive-definite (the leading minor of "
                          f"order {info.reshape(-1)[bad[0]]} is not positive-definite).")


def cholesky(self, upper=False):
    import warnings
    warnings.warn("torch.cholesky is deprecated in favor of torch.linalg.cholesky and will be "
                  "removed in a future PyTorch release.", UserWarning, stacklevel=2)
    check_lapack_dtype("cholesky_cpu", self)  # (no checkFloatingOrComplex first)
    L, info = linalg_cholesky_ex(self, upper, False)
    bad = np.flatnonzero(nd(info).reshape(-1) > 0)
    if bad.size:
        raise LinAlgError(f"cholesky: The factorization could not be completed because the input "
                          f"is not positive-definite (the leading minor of order "
                          f"{nd(info).reshape(-1)[bad[0]]} is not positive-definite).")
    return L


def linalg_qr(A, mode="reduced"):
    _check_matrix("linalg.qr", A, low_precision=True)
    check_lapack_dtype("geqrf_cpu", A)  # (run on empty inputs too)
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of "
                           f"'reduced' (default), 'r', or 'complete'")
    a = nd(A)
    if a.size == 0:
        m, n = a.shape[-2:]
        k = m if mode == "complete" else min(m, n)
        q = np.broadcast_to(np.eye(m, k, dtype=a.dtype), a.shape[:-2] + (m, k)).copy()
        r = np.zeros(a.shape[:-2] + (k, n), a.dtype)
    else:
        q, r = np.linalg.qr(a, mode="complete" if mode == "complete" else "reduced")
    if mode == "r":
        q = np.empty((0,), a.dtype)
    return wrap(np.ascontiguousarray(q)), wrap(np.ascontiguousarray(r))


def _linalg_svd(A, full_matrices=False, compute_uv=True, driver=None):
    _check_matrix("linalg.svd", A, "linalg_svd_cpu")
    a = nd(A)
    m, n = a.shape[-2:]
    k = min(m, n)
    real = np.dtype(a.dtype).type(0).real.dtype
    if a.size == 0:
        u = np.broadcast_to(np.eye(m, m if full_matrices else k, dtype=a.dtype),
                            a.shape[:-2] + (m, m if full_matrices else k)).copy()
        s = np.zeros(a.shape[:-2] + (k,), real)
        vh = np.broadcast_to(np.eye(n if full_matrices else k, n, dtype=a.dtype),
                             a.shape[:-2] + (n if full_matrices else k, n)).copy()
    elif compute_uv:
        u, s, vh = np.linalg.svd(a, full_matrices=full_matrices)
    else:
        s = np.linalg.svd(a, compute_uv=False)
    if not compute_uv:
        u = vh = np.empty((0,), a.dtype)
    return (wrap(np.ascontiguousarray(u)), wrap(np.ascontiguousarray(s).astype(real)),
            wrap(np.ascontiguousarray(vh)))


def _complex_of(dt):
    return np.complex64 if dt == np.float32 else np.complex128


def linalg_eig(self):
    check_square("linalg.eig", self, "input")
    check_eig_dtype(self)
    a = nd(self)
    w, v = np.linalg.eig(a) if a.size else (np.zeros(a.shape[:-1], a.dtype),
                                            np.zeros(a.shape, a.dtype))
    c = _complex_of(a.dtype) if a.dtype.kind == "f" else a.dtype
    return wrap(np.ascontiguousarray(w).astype(c)), wrap(np.ascontiguousarray(v).astype(c))


def _linalg_eigh(A, UPLO="L", compute_v=True):
    check_square("linalg.eigh", A)
    check_eigh_dtype(A)
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    a = nd(A)
    real = np.dtype(a.dtype).type(0).real.dtype
    if a.size == 0:
        w, v = np.zeros(a.shape[:-1], real), a.copy()
    else:
        w, v = np.linalg.eigh(a, UPLO=UPLO)
    if not compute_v:
        v = np.empty((0,), a.dtype)
    return wrap(np.ascontiguousarray(w).astype(real)), wrap(np.ascontiguousarray(v))


def linalg_lstsq(self, b, rcond=None, driver=None):
    if self.dim() < 2:
        raise RuntimeError("torch.linalg.lstsq: The input tensor A must have at least 2 "
                           "dimensions.")
    if self._dtype is not b._dtype:
        raise RuntimeError(f"torch.linalg.lstsq: Expected input and other to have the same dtype, "
                           f"but got input's dtype {self._dtype._short} and other's dtype "
                           f"{b._dtype._short}")
    check_lstsq_matrix_rank_dtype(self)
    driver = driver or "gelsy"
    if driver not in ("gels", "gelsy", "gelsd", "gelss"):
        raise RuntimeError("torch.linalg.lstsq: parameter `driver` should be one of (gels, "
                           "gelsy, gelsd, gelss)")
    a, bb = nd(self), nd(b)
    vector = bb.ndim == a.ndim - 1
    if vector:
        bb = bb[..., None]
    if bb.shape[-2] != a.shape[-2]:
        raise RuntimeError("torch.linalg.lstsq: input.size(-2) should match other.size(-2)")
    batch = _st.broadcast_shapes(a.shape[:-2], bb.shape[:-2])
    am = _matrices(np.broadcast_to(a, batch + a.shape[-2:]))
    bm = _matrices(np.broadcast_to(bb, batch + bb.shape[-2:]))
    m, n = a.shape[-2:]
    eps = np.finfo(a.dtype).eps
    rc = rcond if rcond is not None else eps * max(m, n)
    sols, res, ranks, svals = [], [], [], []
    for i in range(am.shape[0]):  # SciPy's lstsq is per matrix
        drv = "gelsy" if driver == "gels" else driver
        x, r, rank, sv = _sla().lstsq(am[i], bm[i], cond=rc, lapack_driver=drv,
                                    check_finite=False)
        sols.append(x)
        res.append(r)
        ranks.append(rank)
        svals.append(sv)
    sol = np.stack(sols).reshape(batch + (n, bm.shape[-1])).astype(a.dtype)
    if vector:
        sol = sol[..., 0]
    # residuals: only for full-rank tall problems with a driver other than gelsy (as PyTorch)
    full = m > n and driver != "gelsy" and all(int(r) == n for r in ranks)
    fit = np.matmul(am, np.stack(sols)) - bm
    real = np.dtype(a.dtype).type(0).real.dtype  # (residuals and singular values are real)
    residuals = ((fit * fit.conj()).real.sum(-2).reshape(batch + (bm.shape[-1],)).astype(real)
                 if full else np.empty((0,), real))
    if vector and full:
        residuals = residuals[..., 0]
    rank = (np.asarray(ranks, np.int64).reshape(batch) if driver != "gels"
            else np.empty((0,), np.int64))
    sv = (np.stack(svals).reshape(batch + (min(m, n),)).astype(real)
          if driver in ("gelsd", "gelss") else np.empty((0,), real))
    return wrap(np.ascontiguousarray(sol)), wrap(residuals), wrap(rank), wrap(sv)


def linalg_vector_norm(self, ord=2, dim=None, keepdim=False, dtype=None):
    dims, out = vector_norm_check(self, ord, dim, dtype)
    src, work = nd(self), dtype or self._dtype
    if self._dtype is D.complex32:  # (NumPy cannot compute on the float16 pair)
        src = _complex32.to_complex64(src)
        work = D.complex64 if work is D.complex32 else work
    xp = array_module(src)  # (the CUDA key runs this body on device arrays too)
    a = xp.abs(src.astype(np.float32 if work in (D.float16, D.bfloat16) else work._np,
                          copy=False))
    axis = None if dims is None else tuple(dims)
    ord = float(ord)
    with np.errstate(all="ignore"):
        if ord == float("inf"):
            r = np.max(a, axis=axis, keepdims=keepdim) if a.size else xp.zeros(())
        elif ord == float("-inf"):
            r = np.min(a, axis=axis, keepdims=keepdim)
        elif ord == 0:
            r = np.sum(a != 0, axis=axis, keepdims=keepdim).astype(a.dtype)
        elif ord == 1:
            r = np.sum(a, axis=axis, keepdims=keepdim)
        elif ord == 2:
            r = np.sqrt(np.sum(a * a, axis=axis, keepdims=keepdim))
        else:
            r = np.power(np.sum(np.power(a, ord), axis=axis, keepdims=keepdim), 1.0 / ord)
    shape = vector_norm_shape(self, dims, keepdim)
    return wrap(xp.asarray(r).reshape(shape).astype(out._np))


def _linalg_check_errors(info, api_name, is_matrix):
    """PyTorch's _linalg_check_errors: LinAlgError for a non-zero LAPACK info, worded by api."""
    if "cholesky" in api_name:
        return raise_for_cholesky(info, is_matrix)
    if "lu_factor" in api_name:
        return raise_for_lu(info, is_matrix, api_name)
    if "ldl_factor" in api_name:
        bad = np.flatnonzero(np.asarray(nd(info)).reshape(-1) > 0)
        if bad.size:  # ATen has no message for sytrf's info > 0 (its internal assert fires)
            raise RuntimeError(f"{api_name}: Unknown error code: "
                               f"{np.asarray(nd(info)).reshape(-1)[bad[0]]}.")
        return None
    if "solve" in api_name:
        if np.any(nd(info) > 0):
            raise LinAlgError(f"{api_name}: The solver failed because the input matrix is "
                              f"singular.")
        return None
    return raise_for_info(api_name, info, is_matrix)


# -- issue 18: LU, triangular and Cholesky solves, LDL, Householder products, matrix_exp ---------
# Each op's argument checks (PyTorch's messages) return its output shapes and dtypes; the Meta
# kernels (meta/linalg.py) share them. LAPACK through SciPy, one matrix at a time over the
# (broadcast) batch, as PyTorch's CPU kernels loop over theirs.


def _batched(fn, arrays, out_shapes, out_dtypes):
    """Apply ``fn`` to each matrix of ``arrays`` (batch dims broadcast); ``fn`` returns one value
    per output, whose full (batched) shapes are ``out_shapes``."""
    batch = _st.broadcast_shapes(*[a.shape[:-2] for a in arrays])
    arrays = [np.broadcast_to(a, batch + a.shape[-2:]) for a in arrays]
    outs = [np.empty(s, dt) for s, dt in zip(out_shapes, out_dtypes)]
    for idx in np.ndindex(*batch):
        for o, r in zip(outs, fn(*[a[idx] for a in arrays])):
            o[idx] = r
    return outs


def _getrf(a):
    """LAPACK getrf of one matrix: (LU, 1-based pivots, info)."""
    m, n = a.shape
    k = min(m, n)
    if a.size == 0:
        return a.copy(), np.arange(1, k + 1, dtype=np.int32), 0
    getrf, = _sla().lapack.get_lapack_funcs(("getrf",), (a,))
    lu, piv, info = getrf(a)
    return lu, piv[:k].astype(np.int32) + 1, max(int(info), 0)


def linalg_lu_factor_ex(A, pivot=True, check_errors=False):
    s_lu, s_piv, s_info = check_lu_factor(A, "torch.lu_factor", pivot)
    a = nd(A)
    lu, piv, info = _batched(lambda x: _getrf(x), [a], [s_lu, s_piv, s_info],
                             [a.dtype, np.int32, np.int32])
    if check_errors:
        raise_for_lu(info, A.dim() == 2)
    return wrap(lu), wrap(piv), wrap(info)


def raise_for_lu(info, single, api="torch.linalg.lu_factor"):
    info = np.asarray(nd(info) if hasattr(info, "_keyset") else info).reshape(-1)
    bad = np.flatnonzero(info > 0)
    if bad.size:
        where = "" if single else f"(Batch element {bad[0]}): "
        i = info[bad[0]]
        raise LinAlgError(f"{api}: {where}U[{i},{i}] is zero and using it on lu_solve would "
                          f"result in a division by zero. If you still want to perform the "
                          f"factorization, consider calling linalg.lu(A, pivot) or "
                          f"linalg.lu_factor_ex(A, pivot)")


def _permutation(piv, m):
    """LAPACK's row interchanges (1-based) as the permutation matrix P of A = P L U."""
    perm = np.arange(m)
    for i, p in enumerate(piv):
        perm[i], perm[p - 1] = perm[p - 1], perm[i]
    P = np.zeros((m, m))
    P[perm, np.arange(m)] = 1
    return P


def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True):
    sp, sl, su = check_lu_unpack(LU_data, LU_pivots, unpack_data, unpack_pivots)
    a = nd(LU_data)
    m, n = a.shape[-2:]
    k = min(m, n)
    dt = a.dtype
    if unpack_data:
        L = np.tril(a[..., :, :k], -1)
        L[..., np.arange(k), np.arange(k)] = 1
        U = np.triu(a[..., :k, :])
    else:
        L = U = np.empty((0,), dt)
    if unpack_pivots:
        piv = np.asarray(nd(LU_pivots))
        piv = piv.reshape((math.prod(piv.shape[:-1]), k))
        if piv.size and (piv.min() < 1 or piv.max() > m):
            raise RuntimeError("pivots passed to lu_unpack must be between 1 and LU.size(-2) "
                               "inclusive.Did you properly pass the result of lu_factor?")
        P = np.stack([_permutation(p, m) for p in piv]) if piv.shape[0] else \
            np.zeros((0, m, m))
        P = P.reshape(sp).astype(dt)
    else:
        P = np.empty((0,), dt)
    return (wrap(np.ascontiguousarray(P)), wrap(np.ascontiguousarray(L)),
            wrap(np.ascontiguousarray(U)))


def linalg_lu(A, pivot=True):
    check_linalg_lu(A, pivot)
    lu, piv, _ = linalg_lu_factor_ex(A, pivot, False)
    return lu_unpack(lu, piv, True, True)


def _lu_solve_one(lu, piv, b, left, adjoint):
    """X with op(A) X = B (left) or X op(A) = B, A = P L U given by getrf's (lu, piv)."""
    if lu.size == 0 or b.size == 0:
        return np.zeros(b.shape, lu.dtype)
    p = piv - 1
    conj = np.iscomplexobj(lu)
    if left:
        return _sla().lu_solve((lu, p), b, trans=(2 if conj else 1) if adjoint else 0,
                               check_finite=False)
    # X A = B  <=>  A^T X^T = B^T;  X A^H = B  <=>  A X^H = B^H
    if adjoint:
        return np.conj(_sla().lu_solve((lu, p), np.conj(b.T), trans=0, check_finite=False)).T
    if conj:  # A^T Y = B^T  <=>  A^H conj(Y) = conj(B^T)
        return np.conj(_sla().lu_solve((lu, p), np.conj(b.T), trans=2, check_finite=False)).T
    return _sla().lu_solve((lu, p), b.T, trans=1, check_finite=False).T


def linalg_lu_solve(LU, pivots, B, left=True, adjoint=False):
    shape = check_lu_solve(LU, pivots, B, left, adjoint)
    lu, piv, b = nd(LU), nd(pivots), nd(B)
    piv_m = piv[..., None]  # pivots ride along as a (k, 1) "matrix" to share the batch loop
    batch = shape[:-2]
    lu_b = np.broadcast_to(lu, batch + lu.shape[-2:])
    piv_b = np.broadcast_to(piv_m, batch + piv_m.shape[-2:])
    b_b = np.broadcast_to(b, shape)
    x = np.empty(shape, lu.dtype)
    for idx in np.ndindex(*batch):
        x[idx] = _lu_solve_one(lu_b[idx], piv_b[idx][:, 0], b_b[idx], left, adjoint)
    return wrap(x)


def _trsm(a, b, upper, left, unit, trans=0):
    """One triangular solve: op(A) X = B (left) or X op(A) = B; trans 0 / 1 (T) / 2 (H). BLAS
    trsm, as PyTorch's: a zero on the diagonal gives inf/nan, where LAPACK's trtrs (SciPy's
    solve_triangular) refuses the matrix."""
    if a.size == 0 or b.size == 0:
        return np.zeros(b.shape, a.dtype)
    trsm, = _sla().blas.get_blas_funcs(("trsm",), (a, b))
    return trsm(1, a, b, side=0 if left else 1, lower=not upper, trans_a=trans, diag=unit)


def _solve_triangular(a, b, shape, upper, left, unit, trans=0):
    batch = shape[:-2]
    a_b = np.broadcast_to(a, batch + a.shape[-2:])
    b_b = np.broadcast_to(b, shape)
    x = np.empty(shape, a.dtype)
    for idx in np.ndindex(*batch):
        x[idx] = _trsm(a_b[idx], b_b[idx], upper, left, unit, trans)
    return x


def linalg_solve_triangular(self, B, upper, left=True, unitriangular=False):
    shape = check_solve_triangular(self, B, upper, left, unitriangular)
    a, b = nd(self), nd(B)
    if b.dtype != a.dtype:
        b = (b.real if np.iscomplexobj(b) and not np.iscomplexobj(a) else b).astype(a.dtype)
    return wrap(_solve_triangular(a, b, shape, upper, left, unitriangular))


_warned = set()


def warn_once(key, msg):
    """PyTorch's TORCH_WARN_ONCE: a deprecation warning the first time per process, or every
    time while ``ember.set_warn_always(True)``."""
    from ... import _C
    if key not in _warned or _C._get_warnAlways():
        _warned.add(key)
        import warnings
        warnings.warn(msg, UserWarning, stacklevel=4)


def triangular_solve(self, A, upper=True, transpose=False, unitriangular=False):
    warn_once("triangular_solve",
              "torch.triangular_solve is deprecated in favor of torch.linalg.solve_triangular"
              "and will be removed in a future PyTorch release.\ntorch.linalg.solve_triangular "
              "has its arguments reversed and does not return a copy of one of the inputs.\n"
              "X = torch.triangular_solve(B, A).solution\nshould be replaced with\n"
              "X = torch.linalg.solve_triangular(A, B).")
    sx, sa = check_triangular_solve(self, A)
    a = nd(A)
    x = _solve_triangular(a, nd(self), sx, upper, True, unitriangular, 1 if transpose else 0)
    # (a copy even when A needs no broadcasting: cloned_coefficient never aliases A)
    return wrap(x), wrap(np.broadcast_to(a, sa).copy())


def cholesky_solve(self, input2, upper=False):
    shape = check_cholesky_solve(self, input2)
    u = nd(input2)
    # A = U^H U (upper) or L L^H: two triangular solves, reading only the given triangle
    tri = np.triu(u) if upper else np.tril(u)
    if upper:
        y = _solve_triangular(tri, nd(self), shape, True, True, False, 2)
        x = _solve_triangular(tri, y, shape, True, True, False, 0)
    else:
        y = _solve_triangular(tri, nd(self), shape, False, True, False, 0)
        x = _solve_triangular(tri, y, shape, False, True, False, 2)
    return wrap(x)


def cholesky_inverse(self, upper=False):
    shape = check_cholesky_inverse(self, upper)
    a = nd(self)
    eye = np.broadcast_to(np.eye(shape[-1], dtype=a.dtype), shape)
    tri = np.triu(a) if upper else np.tril(a)
    if upper:  # (U^H U)^{-1} = U^{-1} U^{-H}
        y = _solve_triangular(tri, eye, shape, True, True, False, 2)
        x = _solve_triangular(tri, y, shape, True, True, False, 0)
    else:
        y = _solve_triangular(tri, eye, shape, False, True, False, 0)
        x = _solve_triangular(tri, y, shape, False, True, False, 2)
    return wrap(np.ascontiguousarray(x))


def geqrf(self):
    sa, st = check_geqrf(self)
    a = nd(self)
    if a.size == 0:
        return wrap(a.copy()), wrap(np.zeros(st, a.dtype))
    h, tau = np.linalg.qr(a, mode="raw")  # h: LAPACK's column-major factors, transposed
    return (wrap(np.ascontiguousarray(np.swapaxes(h, -1, -2)).astype(a.dtype)),
            wrap(np.ascontiguousarray(tau).astype(a.dtype)))


def _householder_q(v, tau, m):
    """Q = H_1 ... H_k (m x m, batched), H_i = I - tau_i v_i v_i^H, v_i the i-th column of v
    below the diagonal with an implicit 1 on it (LAPACK's orgqr/ormqr representation)."""
    k = tau.shape[-1]
    batch = v.shape[:-2]
    dt = np.result_type(v.dtype, tau.dtype)
    q = np.broadcast_to(np.eye(m, dtype=dt), batch + (m, m)).copy()
    for i in reversed(range(k)):  # Q = H_1 (H_2 (... H_k))
        w = v[..., :, i].astype(dt)
        w[..., :i] = 0
        w[..., i] = 1
        # H q = q - tau w (w^H q)
        whq = np.einsum("...i,...ij->...j", np.conj(w), q)
        q = q - tau[..., i, None, None] * w[..., :, None] * whq[..., None, :]
    return q


def linalg_householder_product(input, tau):
    shape = check_householder_product(input, tau)
    v, t = nd(input), nd(tau)
    m, n = shape[-2:]
    q = _householder_q(v, t, m)
    return wrap(np.ascontiguousarray(q[..., :, :n]).astype(v.dtype))


def ormqr(self, input2, input3, left=True, transpose=False):
    check_ormqr(self, input2, input3, left, transpose)
    v, t, c = nd(self), nd(input2), nd(input3)
    q = _householder_q(v, t, v.shape[-2])
    if transpose:
        q = np.conj(np.swapaxes(q, -1, -2))
    r = np.matmul(q, c) if left else np.matmul(c, q)
    return wrap(np.ascontiguousarray(r).astype(c.dtype))


# matrix_exp: ATen's optimized Taylor polynomials (Bader, Blanes, Casas, "Computing the Matrix
# Exponential with an Optimized Taylor Polynomial Approximation", Mathematics 7, 1174, 2019):
# degree 1, 2, 4, 8, 12 or 18 by the 1-norm, degree 18 with scaling and squaring beyond. The
# same evaluation scheme as ATen gives the same rounding in float32, where the polynomials'
# cancellation makes a different algorithm (scipy's Pade) differ by more than float32 tolerances.

# largest 1-norm each degree is accurate for (float32/complex64, float64/complex128)
_MEXP_THETAS = {
    4: (1.192092800768788e-07, 5.978858893805233e-04, 5.116619363445086e-02,
        5.800524627688768e-01, 1.461661507209034e+00, 3.010066362817634e+00),
    8: (2.220446049250313e-16, 2.580956802971767e-08, 3.397168839976962e-04,
        4.991228871115323e-02, 2.996158913811580e-01, 1.090863719290036e+00),
}
# coefficients of the degree-12 and degree-18 evaluation schemes (rows: the B_i, columns: the
# powers I, A, A^2, A^3 [, A^6])
_MEXP_B12 = ((9.0198e-16, 0.46932117595418237389, -0.20099424927047284052,
              -0.04623946134063071740),
             (5.31597895759871264183, 1.19926790417132231573, 0.01179296240992997031,
              0.01108844528519167989),
             (0.18188869982170434744, 0.05502798439925399070, 0.09351590770535414968,
              0.00610700528898058230),
             (-2.0861320e-13, -0.13181061013830184015, -0.02027855540589259079,
              -0.00675951846863086359))
_MEXP_B18 = ((0., -1.00365581030144618291e-01, -8.02924648241156932449e-03,
              -8.92138498045729985177e-04, 0.),
             (0., 3.97849749499645077844e-01, 1.36783778460411720168e+00,
              4.98289622525382669416e-01, -6.37898194594723280150e-04),
             (-1.09676396052962061844e+01, 1.68015813878906206114e+00,
              5.71779846478865511061e-02, -6.98210122488052056106e-03,
              3.34975017086070470649e-05),
             (-9.04316832390810593223e-02, -6.76404519071381882256e-02,
              6.75961301770459654925e-02, 2.95552570429315521194e-02,
              -1.39180257516060693404e-05),
             (0., 0., -9.23364619367118555360e-02, -1.69364939002081722752e-02,
              -1.40086798182036094347e-05))


def _bmm(a, b):
    """a @ b for (B, k, k) batches as ATen's bmm computes small ones (k^3 < 400: a plain loop,
    each dot product accumulated in order in the dtype), larger ones by BLAS."""
    k = a.shape[-1]
    if k ** 3 >= 400:
        return a @ b
    out = a[..., :, 0, None] * b[..., None, 0, :]
    for j in range(1, k):
        out += a[..., :, j, None] * b[..., None, j, :]
    return out


def _mexp_powers(a, n):
    """The first n of I, A, A^2, A^3, A^6 for the (B, k, k) batch a."""
    eye = np.broadcast_to(np.eye(a.shape[-1], dtype=a.dtype), a.shape)
    p = [eye.copy(), a]
    if n > 2:
        p.append(_bmm(a, a))
    if n > 3:
        p.append(_bmm(a, p[2]))
    if n > 4:
        p.append(_bmm(p[3], p[3]))
    return p[:n]


def _lincomb(mats, coeffs, dt):
    """sum_j coeffs[j] * mats[j], accumulated in order in the matrices' dtype."""
    out = np.zeros_like(mats[0])
    for m, c in zip(mats, coeffs):
        out += dt(c) * m
    return out


def _mexp_taylor(a, deg):
    """ATen's compute_T<deg> on the (B, k, k) batch a."""
    dt = a.dtype.type if a.dtype.kind == "f" else np.dtype(a.real.dtype).type
    if deg == 1:
        p = _mexp_powers(a, 2)
        return p[0] + p[1]
    if deg == 2:
        p = _mexp_powers(a, 3)
        return p[0] + p[1] + p[2] / dt(2)
    if deg == 4:
        p = _mexp_powers(a, 3)
        p.append(_bmm(p[2], _lincomb(p[:3], (1 / 2.0, 1 / 6.0, 1 / 24.0), dt)))
        return _lincomb(p, (1.0, 1.0, 0.0, 1.0), dt)
    if deg == 8:
        # ATen's constants are scalar_t values computed in double from scalar_t inputs
        sqrt_177 = float(dt(0.1330413469565007072504e+2))
        x3 = float(dt(2. / 3.))
        x1 = dt(x3 * ((1. + sqrt_177) / 88.))
        x2 = dt(x3 * ((1. + sqrt_177) / 352.))
        x4 = dt((-271. + 29. * sqrt_177) / (315. * x3))
        x5 = dt((-11. + 11. * sqrt_177) / (1260. * x3))
        x6 = dt((-99. + 11. * sqrt_177) / (5040. * x3))
        x7 = dt((89. - sqrt_177) / (5040. * x3))
        y2 = dt((857. - 58. * sqrt_177) / 630.)
        p = _mexp_powers(a, 3)
        p.append(_bmm(p[2], _lincomb(p[1:3], (x1, x2), dt)))                     # A4
        p.append(_bmm(_lincomb(p[2:4], (x3, 1.0), dt),
                      _lincomb(p[:4], (x4, x5, x6, x7), dt)))            # A8
        return _lincomb(p, (1.0, 1.0, y2, 0.0, 1.0), dt)
    if deg == 12:
        p = _mexp_powers(a, 4)
        b = [_lincomb(p, row, dt) for row in _MEXP_B12]
        b[2] = b[2] + _bmm(b[3], b[3])
        return b[0] + _bmm(b[1] + b[2], b[2])
    p = _mexp_powers(a, 5)
    b = [_lincomb(p, row, dt) for row in _MEXP_B18]
    b[3] = b[3] + _bmm(b[0], b[4])
    return b[1] + _bmm(b[2] + b[3], b[3])


def _mexp_scale_square(a, norm, theta):
    """Degree 18 on A / 2^s, squared s times, s = max(0, ceil(log2(norm / theta)))."""
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.maximum(0, np.ceil(np.log2(norm / theta)))
    s = np.where(np.isfinite(s), s, 0).astype(np.int64)
    scaled = a / np.power(2.0, s).astype(a.real.dtype)[:, None, None]
    out = _mexp_taylor(scaled, 18)
    for i in range(out.shape[0]):
        m = out[i]
        for _ in range(int(s[i])):
            m = _bmm(m[None], m[None])[0]
        out[i] = m
    return out


def _mexp(a):
    """ATen's mexp on the (B, k, k) batch a (float32/64, complex64/128)."""
    thetas = _MEXP_THETAS[np.dtype(a.real.dtype).itemsize]
    norm = np.abs(a).sum(axis=-2).max(axis=-1)
    if a.shape[0] > 1:  # ATen takes degree 18 for every matrix of a batch
        return _mexp_scale_square(a, norm, thetas[-1])
    res = np.full_like(a, np.nan)  # a NaN norm falls in no interval and stays NaN
    lower = -1.0
    for deg, upper in zip((1, 2, 4, 8, 12), thetas):
        idx = np.flatnonzero((lower < norm) & (norm <= upper))
        if idx.size:
            res[idx] = _mexp_taylor(a[idx], deg)
        lower = upper
    idx = np.flatnonzero(norm >= thetas[-2])
    if idx.size:
        res[idx] = _mexp_scale_square(a[idx], norm[idx], thetas[-1])
    return res


def linalg_matrix_exp(self):
    shape = check_matrix_exp(self)
    a = nd(self)
    n = shape[-1]
    if a.size == 0:
        return wrap(a.copy())
    if n == 1:
        return wrap(np.exp(a))
    # half types compute in float32 (ATen's own half path returns NaN/inf)
    work = a.astype(np.float32) if self._dtype in (D.float16, D.bfloat16) else a
    res = _mexp(np.ascontiguousarray(work).reshape(-1, n, n))
    return wrap(res.astype(a.dtype, copy=False).reshape(shape))


def _sytrf(a, hermitian):
    n = a.shape[-1]
    if n == 0:
        return a.copy(), np.zeros(0, np.int32), 0
    kind = "hetrf" if hermitian and np.iscomplexobj(a) else "sytrf"
    f, = _sla().lapack.get_lapack_funcs((kind,), (a,))
    ld, ipiv, info = f(a, lower=1)
    return np.tril(ld), ipiv.astype(np.int32), max(int(info), 0)


def linalg_ldl_factor_ex(self, hermitian=False, check_errors=False):
    s_ld, s_piv, s_info = check_ldl_factor(self, hermitian)
    a = nd(self)
    batch = s_info
    ld = np.empty(s_ld, a.dtype)
    piv = np.empty(s_piv, np.int32)
    info = np.empty(s_info, np.int32)
    for idx in np.ndindex(*batch):
        ld[idx], piv[idx], info[idx] = _sytrf(a[idx], hermitian)
    if check_errors:
        bad = np.flatnonzero(info.reshape(-1) > 0)
        if bad.size:
            where = "" if self.dim() == 2 else f"(Batch element {bad[0]}): "
            raise LinAlgError(f"torch.linalg.ldl_factor_ex: {where}The factorization could not "
                              f"be completed because the input is not invertible.")
    return wrap(ld), wrap(piv), wrap(info)


def linalg_ldl_solve(LD, pivots, B, hermitian=False):
    shape = check_ldl_solve(LD, pivots, B, hermitian)
    ld, piv, b = nd(LD), nd(pivots), nd(B)
    batch = shape[:-2]
    ld_b = np.broadcast_to(ld, batch + ld.shape[-2:])
    piv_b = np.broadcast_to(piv, batch + piv.shape[-1:])
    b_b = np.broadcast_to(b, shape)
    x = np.empty(shape, ld.dtype)
    kind = "hetrs" if hermitian and np.iscomplexobj(ld) else "sytrs"
    for idx in np.ndindex(*batch):
        if ld.shape[-1] == 0 or b.shape[-1] == 0:
            x[idx] = 0
            continue
        f, = _sla().lapack.get_lapack_funcs((kind,), (ld_b[idx],))
        x[idx] = f(ld_b[idx], piv_b[idx], b_b[idx], lower=1)[0]
    return wrap(x)
