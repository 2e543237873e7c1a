"""CPU matrix products (mm, bmm, addmm, mv, dot) on ``numpy.matmul``. The argument checks, with
PyTorch's messages, are shared with the Meta kernels; ``matmul`` is a composite of these ops
(``composite/math.py``)."""
import math

import numpy as np

from ..._core import dtype as D
from ..._core.blas import matmul as _matmul
from ._util import nd, wrap

# C++ type names PyTorch prints in mm's dtype-mismatch message

def _x(shape):
    return "x".join(map(str, shape))


def _no_bool(dt):
    if dt is D.bool_:
        raise NotImplementedError("\"addmm_impl_cpu_\" not implemented for 'Bool'")


def check_mm(self, mat2, first="self"):
    """mm's checks; returns the result shape."""
    if len(self._size) != 2:
        raise RuntimeError(f"{first} must be a matrix")
    if len(mat2._size) != 2:
        raise RuntimeError("mat2 must be a matrix")
    if self._size[1] != mat2._size[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({_x(self._size)} and "
                           f"{_x(mat2._size)})")
    if self._dtype is not mat2._dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                           f"{self._dtype._cpp} != {mat2._dtype._cpp}")
    _no_bool(self._dtype)
    return (self._size[0], mat2._size[1])


def check_bmm(self, mat2):
    if len(self._size) != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if len(mat2._size) != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    b, n, m = self._size
    if (mat2._size[0], mat2._size[1]) != (b, m):
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{b}, {m}] but got: [{mat2._size[0]}, {mat2._size[1]}].")
    if self._dtype is not mat2._dtype:
        raise RuntimeError(f"expected scalar type {self._dtype._short} but found "
                           f"{mat2._dtype._short}")
    _no_bool(self._dtype)
    return (b, n, mat2._size[2])


def check_addmm(self, mat1, mat2):
    shape = check_mm(mat1, mat2, "mat1")
    if self._dtype is not mat2._dtype:
        raise RuntimeError(f"self and mat2 must have the same dtype, but got {self._dtype._short} "
                           f"and {mat2._dtype._short}")
    _check_expandable(self._size, shape)
    return shape


def _check_expandable(size, target):
    """``self`` of addmm broadcasts to the product's shape (PyTorch's expand error)."""
    if len(size) > len(target):
        raise RuntimeError(f"The expanded size of the tensor ({target[-1]}) must match the "
                           f"existing size ({size[-1]}) at non-singleton dimension 1.")
    off = len(target) - len(size)
    for i, s in enumerate(size):
        if s != 1 and s != target[off + i]:
            raise RuntimeError(f"The expanded size of the tensor ({target[off + i]}) must match "
                               f"the existing size ({s}) at non-singleton dimension {off + i}.  "
                               f"Target sizes: [{', '.join(map(str, target))}].  Tensor sizes: "
                               f"[{', '.join(map(str, size))}]")


def check_mv(self, vec):
    if len(self._size) != 2 or len(vec._size) != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got 1, {len(self._size)}, "
                           f"{len(vec._size)}")
    if self._size[1] != vec._size[0]:
        raise RuntimeError(f"size mismatch, got input ({self._size[0]}), mat ({_x(self._size)}), "
                           f"vec ({vec._size[0]})")
    if self._dtype is not vec._dtype:
        v, m = vec._dtype._short, self._dtype._short
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got {v}, {m}, "
                           f"and {v}")
    _no_bool(self._dtype)
    return (self._size[0],)


def check_dot(self, tensor):
    if len(self._size) != 1 or len(tensor._size) != 1:
        raise RuntimeError(f"1D tensors expected, but got {len(self._size)}D and "
                           f"{len(tensor._size)}D tensors")
    n, m = self._size[0], tensor._size[0]
    if n != m:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{n}] and src [{m}] to have "
                           f"the same number of elements, but got {n} and {m} elements "
                           f"respectively")
    if self._dtype is not tensor._dtype:
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found "
                           f"{self._dtype._short} and {tensor._dtype._short}")
    _no_bool(self._dtype)
    return ()


def _product(a, b, dt):
    # NumPy returns float32 for bfloat16 products; PyTorch keeps the operand dtype
    return wrap(np.asarray(_matmul(a, b)).astype(dt._np, copy=False))


def mm(self, mat2):
    check_mm(self, mat2)
    return _product(nd(self), nd(mat2), self._dtype)


def bmm(self, mat2):
    check_bmm(self, mat2)
    return _product(nd(self), nd(mat2), self._dtype)


def mv(self, vec):
    check_mv(self, vec)
    return _product(nd(self), nd(vec), self._dtype)


def dot(self, tensor):
    check_dot(self, tensor)
    return _product(nd(self), nd(tensor), self._dtype)


def addmm(self, mat1, mat2, beta=1, alpha=1):
    shape = check_addmm(self, mat1, mat2)
    return _scaled_sum(_matmul(nd(mat1), nd(mat2)), nd(self), beta, alpha, shape, mat1._dtype)


def check_baddbmm(self, batch1, batch2):
    shape = check_bmm(batch1, batch2)
    if self._dtype is not batch1._dtype:
        raise RuntimeError(f"Input dtypes must be the same, got: input {self._dtype._short}, "
                           f"batch1: {batch1._dtype._short}, batch2: {batch2._dtype._short}")
    _check_expandable(self._size, shape)
    return shape


def check_addbmm(self, batch1, batch2):
    b, n, p = check_baddbmm_batches(batch1, batch2)
    if self._dtype is not batch1._dtype:
        raise RuntimeError(f"expected scalar type {batch1._dtype._short} but found "
                           f"{self._dtype._short}")
    _check_expandable(self._size, (n, p))
    return (n, p)


def check_baddbmm_batches(batch1, batch2):
    return check_bmm(batch1, batch2)


def check_addmv(self, mat, vec):
    shape = check_mv(mat, vec)
    if self._dtype is not mat._dtype:
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got "
                           f"{self._dtype._short}, {mat._dtype._short}, and {vec._dtype._short}")
    if len(self._size) > 1 or (self._size and self._size[0] not in (1, shape[0])):
        raise RuntimeError(f"size mismatch, got input ({self._size[0] if self._size else 1}), "
                           f"mat ({_x(mat._size)}), vec ({vec._size[0]})")
    return shape


def check_vdot(self, other):
    if len(self._size) != 1 or len(other._size) != 1:
        raise RuntimeError(f"1D tensors expected, but got {len(self._size)}D and "
                           f"{len(other._size)}D tensors")
    if self._dtype is not other._dtype:
        raise RuntimeError(f"vdot : expected both vectors to have same dtype, but found "
                           f"{self._dtype._short} and {other._dtype._short}")
    if self._size[0] != other._size[0]:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{self._size[0]}] and src "
                           f"[{other._size[0]}] to have the same number of elements, but got "
                           f"{self._size[0]} and {other._size[0]} elements respectively")
    _no_bool(self._dtype)
    return ()


def _scaled_sum(product, self_arr, beta, alpha, shape, dt):
    """alpha * product + beta * self, where beta == 0 ignores self (NaN in self does not
    propagate), as every BLAS-style op (addmm, addmv, baddbmm, addbmm) does. An integral
    result takes alpha and beta converted to its type first (0.6 -> 0), as ATen's scalar_t does."""
    if dt._category <= D.INTEGRAL:
        alpha, beta = int(alpha), int(beta)
    r = np.asarray(product if alpha == 1 else product * alpha)  # fresh: free to write into
    if beta != 0:
        s = self_arr if beta == 1 else self_arr * beta
        if r.shape == shape and np.result_type(r, s) == r.dtype:
            np.add(r, s, out=r)  # the same sum, without a second result-sized array
        else:
            r = r + s
    if r.shape != shape or r.dtype != dt._np:
        r = np.broadcast_to(r, shape).astype(dt._np)
    return wrap(r)


def baddbmm(self, batch1, batch2, beta=1, alpha=1):
    shape = check_baddbmm(self, batch1, batch2)
    return _scaled_sum(_matmul(nd(batch1), nd(batch2)), nd(self), beta, alpha, shape,
                       batch1._dtype)


def addbmm(self, batch1, batch2, beta=1, alpha=1):
    shape = check_addbmm(self, batch1, batch2)
    prod = _matmul(nd(batch1), nd(batch2)).sum(0) if batch1._size[0] else \
        np.zeros(shape, batch1._dtype._np)
    return _scaled_sum(prod, nd(self), beta, alpha, shape, batch1._dtype)


def addmv(self, mat, vec, beta=1, alpha=1):
    shape = check_addmv(self, mat, vec)
    return _scaled_sum(_matmul(nd(mat), nd(vec)), nd(self), beta, alpha, shape, mat._dtype)


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


class LinAlgError(RuntimeError):
    """PyTorch's torch.linalg.LinAlgError (``torch._C._LinAlgError``): a RuntimeError raised
    when a decomposition or solve fails on the input's values (singular, not positive-definite)."""


LinAlgError.__module__ = "ember.linalg"


def check_square(name, A, arg="A"):
    if A.dim() < 2:
        raise RuntimeError(f"{name}: The input tensor {arg} must have at least 2 dimensions.")
    if A._size[-1] != A._size[-2]:
        raise RuntimeError(f"{name}: {arg} must be batches of square matrices, but they are "
                           f"{A._size[-2]} by {A._size[-1]} matrices")


def check_float(name, A, arg="A"):
    if not (A._dtype in (D.float32, D.float64) or A._dtype.is_complex):
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got "
                           f"{A._dtype._short}")


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
    for i in range(m.shape[0]):  # SciPy's LU is per matrix
        if m[i].size == 0:
            lu[i] = m[i]
            continue
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # PyTorch's LU tensor holds LAPACK's column-major factors: those of A^T row-major
            f, p = _sla().lu_factor(m[i].T, check_finite=False)
        lu[i], piv[i] = f, p[:k] + 1
        zero = np.flatnonzero(np.diagonal(f) == 0)
        info[i] = zero[0] + 1 if zero.size else 0
    return (lu.reshape(a.shape), piv.reshape(a.shape[:-2] + (k,)),
            info.reshape(a.shape[:-2]))


def linalg_inv_ex(A, check_errors=False):
    check_square("linalg.inv", A)
    check_float("linalg.inv", A)
    a = nd(A)
    _, _, info = _lu(a)
    with np.errstate(all="ignore"):
        try:
            inv = np.linalg.inv(a) if a.size else a.copy()
        except np.linalg.LinAlgError:
            inv = np.linalg.pinv(a)  # values are unspecified where info > 0
    if check_errors:
        raise_for_info("linalg.inv", info, A.dim() == 2)
    return wrap(np.ascontiguousarray(inv).astype(a.dtype)), wrap(info)


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
    check_float("linalg.det", A)
    a = nd(A)
    lu, piv, _ = _lu(a)
    det = np.linalg.det(a) if a.size else np.ones(a.shape[:-2], a.dtype)
    return wrap(np.asarray(det).astype(a.dtype)), wrap(lu), wrap(piv)


def _linalg_slogdet(A):
    check_square("linalg.slogdet", A)
    check_float("linalg.slogdet", A)
    a = nd(A)
    lu, piv, _ = _lu(a)
    sign, logabs = np.linalg.slogdet(a) if a.size else (np.ones(a.shape[:-2], a.dtype),
                                                        np.zeros(a.shape[:-2], a.dtype))
    return (wrap(np.asarray(sign).astype(a.dtype)), wrap(np.asarray(logabs).astype(a.dtype)),
            wrap(lu), wrap(piv))


def _linalg_solve_ex(A, B, left=True, check_errors=False):
    check_square("linalg.solve", A)
    check_float("linalg.solve", A)
    if A._dtype is not B._dtype:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found "
                           f"A of type {A._dtype._short} and B of type {B._dtype._short} instead")
    a, b = nd(A), nd(B)
    vector = b.ndim == 1 or (b.ndim == a.ndim - 1 and b.shape == a.shape[:-1])
    if not left:  # X A = B  <=>  A^T X^T = B^T
        a = np.swapaxes(a, -1, -2)
        b = np.swapaxes(b, -1, -2) if not vector else b
    bb = b[..., None] if vector else b
    if bb.shape[-2] != a.shape[-1]:
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({_x(A._size)} and {_x(B._size)})")
    batch = _st.broadcast_shapes(a.shape[:-2], bb.shape[:-2])
    lu, piv, info = _lu(a)  # of A itself: its batch is not broadcast (as PyTorch's)
    a = np.broadcast_to(a, batch + a.shape[-2:])
    bb = np.broadcast_to(bb, batch + bb.shape[-2:])
    with np.errstate(all="ignore"):
        try:
            x = np.linalg.solve(a, bb) if a.size and bb.size else np.zeros(bb.shape, a.dtype)
        except np.linalg.LinAlgError:
            x = np.matmul(np.linalg.pinv(a), bb)
    if check_errors:
        raise_for_info("linalg.solve", info, A.dim() == 2)
    x = x[..., 0] if vector else x
    if not left and not vector:
        x = np.swapaxes(x, -1, -2)
    return (wrap(np.ascontiguousarray(x).astype(a.dtype)), wrap(lu), wrap(piv),
            wrap(info))


def linalg_cholesky_ex(self, upper=False, check_errors=False):
    check_square("linalg.cholesky", self)
    check_float("linalg.cholesky", self)
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
    L, info = linalg_cholesky_ex(self, upper, False)
    bad = np.flatnonzero(nd(info).reshape(-1) > 0)
    if bad.size:
        raise LinAlgError(f"cholesky: The factorization could not be completed because the input "
                          f"is not positive-definite (the leading minor of order "
                          f"{nd(info).reshape(-1)[bad[0]]} is not positive-definite).")
    return L


def _check_matrix(name, A):
    if A.dim() < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    check_float(name, A)


def linalg_qr(A, mode="reduced"):
    _check_matrix("linalg.qr", A)
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
    _check_matrix("linalg.svd", A)
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
    check_float("linalg.eig", self, "input")
    a = nd(self)
    w, v = np.linalg.eig(a) if a.size else (np.zeros(a.shape[:-1], a.dtype),
                                            np.zeros(a.shape, a.dtype))
    c = _complex_of(a.dtype) if a.dtype.kind == "f" else a.dtype
    return wrap(np.ascontiguousarray(w).astype(c)), wrap(np.ascontiguousarray(v).astype(c))


def _linalg_eigh(A, UPLO="L", compute_v=True):
    check_square("linalg.eigh", A)
    check_float("linalg.eigh", A)
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
    _check_matrix("torch.linalg.lstsq", self)
    if self._dtype is not b._dtype:
        raise RuntimeError(f"torch.linalg.lstsq: Expected input and other to have the same dtype, "
                           f"but got input's dtype {self._dtype._short} and other's dtype "
                           f"{b._dtype._short}")
    driver = driver or "gelsy"
    if driver not in ("gels", "gelsy", "gelsd", "gelss"):
        raise RuntimeError(f"torch.linalg.lstsq: parameter `driver` should be one of (gels, "
                           f"gelsy, gelsd, gelss)")
    a, bb = nd(self), nd(b)
    vector = bb.ndim == a.ndim - 1
    if vector:
        bb = bb[..., None]
    if bb.shape[-2] != a.shape[-2]:
        raise RuntimeError(f"torch.linalg.lstsq: input.size(-2) should match other.size(-2)")
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
    residuals = ((fit * fit).sum(-2).reshape(batch + (bm.shape[-1],)).astype(a.dtype)
                 if full else np.empty((0,), a.dtype))
    if vector and full:
        residuals = residuals[..., 0]
    rank = (np.asarray(ranks, np.int64).reshape(batch) if driver != "gels"
            else np.empty((0,), np.int64))
    sv = (np.stack(svals).reshape(batch + (min(m, n),)).astype(a.dtype)
          if driver in ("gelsd", "gelss") else np.empty((0,), a.dtype))
    return wrap(np.ascontiguousarray(sol)), wrap(residuals), wrap(rank), wrap(sv)


_NORM_DTYPES = (D.float32, D.float64, D.float16, D.bfloat16)


def vector_norm_check(self, ord, dim, dtype):
    if not (self._dtype in _NORM_DTYPES or self._dtype.is_complex):
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as "
                           f"input. Got {self._dtype._short}")
    if dtype is not None and not (dtype in _NORM_DTYPES or dtype.is_complex):
        raise RuntimeError(f"linalg.vector_norm: dtype should be floating point or complex. Got "
                           f"{dtype._short} instead.")
    nd_ = self.dim()
    dims = None if dim is None or (len(dim) == 0) else [_st.wrap_dim(d, nd_) for d in dim]
    if dims is not None and len(set(dims)) != len(dims):
        raise RuntimeError(f"dim {dims[0]} appears multiple times in the list of dims")
    if self.numel() == 0 and (ord < 0 or ord == float("inf")):
        red = range(nd_) if dims is None else dims
        if any(self._size[d] == 0 for d in red):
            raise RuntimeError(f"linalg.vector_norm cannot compute the {ord} norm on an empty "
                               f"tensor because the operation does not have an identity")
    out = (dtype or self._dtype)
    out = out.to_real() if out.is_complex else out
    return dims, out


def vector_norm_shape(self, dims, keepdim):
    nd_ = self.dim()
    red = set(range(nd_) if dims is None else dims)
    if keepdim:
        return tuple(1 if i in red else s for i, s in enumerate(self._size))
    return tuple(s for i, s in enumerate(self._size) if i not in red)


def linalg_vector_norm(self, ord=2, dim=None, keepdim=False, dtype=None):
    dims, out = vector_norm_check(self, ord, dim, dtype)
    a = np.abs(nd(self).astype(np.float32 if (dtype or self._dtype) in (D.float16, D.bfloat16)
                               else (dtype or self._dtype)._np, copy=False))
    axis = None if dims is None else tuple(dims)
    ord = float(ord)
    with np.errstate(all="ignore"):
        if ord == float("inf"):
            r = np.max(a, axis=axis, keepdims=keepdim) if a.size else np.zeros(())
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
    return wrap(np.asarray(r).reshape(shape).astype(out._np))


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

_LAPACK_DTYPES = (D.float32, D.float64, D.complex64, D.complex128)


def check_lapack_dtype(kernel, t):
    """PyTorch's AT_DISPATCH for the LAPACK kernels: float, double and the complex types."""
    if t._dtype not in _LAPACK_DTYPES:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{t._dtype._short}'")


def _fmt(shape):
    return "[" + ", ".join(map(str, shape)) + "]"


def _check_ge2(name, t):
    if t.dim() < 2:
        raise RuntimeError(f"{name}: Expected tensor with 2 or more dimensions. Got size: "
                           f"{_fmt(t._size)} instead")


def _square(name, A, arg="A"):
    if A._size[-1] != A._size[-2]:
        raise RuntimeError(f"{name}{': ' if name else ''}{arg} must be batches of square "
                           f"matrices, but they are {A._size[-2]} by {A._size[-1]} matrices")


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


def check_lu_factor(A, name="torch.lu_factor", pivot=True):
    _check_ge2(name, A)
    check_lapack_dtype("lu_cpu", A)
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")
    m, n = A._size[-2:]
    b = A._size[:-2]
    return (A._size, b + (min(m, n),), b)


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


def check_lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True):
    _check_ge2("torch.lu_unpack", LU_data)
    if LU_pivots._dtype is not D.int32:
        raise RuntimeError("torch.lu_unpack: LU_pivots is expected to be a contiguous tensor of "
                           "torch.int32 dtype.\nNote: this function is intended to be used with "
                           "the output produced by torch.linalg.lu_factor")
    m, n = LU_data._size[-2:]
    k = min(m, n)
    b = LU_data._size[:-2]
    if unpack_pivots and tuple(LU_pivots._size) != b + (k,):
        raise RuntimeError(f"torch.lu_unpack: Expected LU_pivots to have shape {_fmt(b + (k,))} "
                           f"but got {_fmt(LU_pivots._size)}")
    p = b + (m, m) if unpack_pivots else (0,)
    if unpack_data:
        return p, b + (m, k), b + (k, n)
    return p, (0,), (0,)


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


def check_linalg_lu(A, pivot=True):
    check_lu_factor(A, "linalg.lu", pivot)
    m, n = A._size[-2:]
    k = min(m, n)
    b = A._size[:-2]
    return b + (m, m), b + (m, k), b + (k, n)


def linalg_lu(A, pivot=True):
    check_linalg_lu(A, pivot)
    lu, piv, _ = linalg_lu_factor_ex(A, pivot, False)
    return lu_unpack(lu, piv, True, True)


def check_lu_solve(LU, pivots, B, left=True, adjoint=False):
    if LU.dim() < 2:
        raise RuntimeError("linalg.lu_solve: The input tensor LU must have at least 2 dimensions.")
    if B.dim() < 2:
        raise RuntimeError("linalg.lu_solve: The input tensor B must have at least 2 dimensions.")
    _square("torch.linalg.lu_solve", LU)
    n = LU._size[-1]
    if (B._size[-2] if left else B._size[-1]) != n:
        raise RuntimeError(f"linalg.lu_solve: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({_x(LU._size)} and "
                           f"{_x(B._size)})")
    if LU._dtype is not B._dtype:
        raise RuntimeError(f"linalg.lu_solve: Expected LU and B to have the same dtype, but found "
                           f"LU of type {LU._dtype._short} and B of type {B._dtype._short} "
                           f"instead")
    if pivots._dtype is not D.int32:
        raise RuntimeError("linalg.lu_solve: pivots should be a Tensor of scalar type torch.int32")
    if tuple(pivots._size[-1:]) != (n,) or pivots.dim() != LU.dim() - 1:
        raise RuntimeError("linalg.lu_solve: Number of pivots per batch should be same as the "
                           "dimension of the matrix")
    check_lapack_dtype("linalg_lu_solve_cpu", LU)
    batch = _st.broadcast_shapes(LU._size[:-2], B._size[:-2])
    return batch + tuple(B._size[-2:])


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


def check_solve_triangular(A, B, upper, left=True, unitriangular=False):
    name = "linalg.solve_triangular"
    if A.dim() < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    if B.dim() < 2:
        raise RuntimeError(f"{name}: The input tensor B must have at least 2 dimensions.")
    _square(name, A)
    if (B._size[-2] if left else B._size[-1]) != A._size[-1]:
        raise RuntimeError(f"{name}: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({_x(A._size)} and {_x(B._size)})")
    # no dtype check: ATen copies B into a result of A's dtype
    check_lapack_dtype("triangular_solve_cpu", A)
    return _st.broadcast_shapes(A._size[:-2], B._size[:-2]) + tuple(B._size[-2:])


def _trsm(a, b, upper, left, unit, trans=0):
    """One triangular solve: op(A) X = B (left) or X op(A) = B; trans 0 / 1 (T) / 2 (H)."""
    if a.size == 0 or b.size == 0:
        return np.zeros(b.shape, a.dtype)
    st = _sla().solve_triangular
    if left:
        return st(a, b, trans=trans, lower=not upper, unit_diagonal=unit, check_finite=False)
    # X op(A) = B  <=>  op(A)^T X^T = B^T
    if trans == 2:  # X A^H = B  <=>  A conj(X^T) = conj(B^T)
        return np.conj(st(a, np.conj(b.T), trans=0, lower=not upper, unit_diagonal=unit,
                          check_finite=False)).T
    if trans == 1:
        return st(a, b.T, trans=0, lower=not upper, unit_diagonal=unit, check_finite=False).T
    return st(a, b.T, trans=1, lower=not upper, unit_diagonal=unit, check_finite=False).T


def _solve_triangular(a, b, shape, upper, left, unit, trans=0):
    batch = shape[:-2]
    a_b = np.broadcast_to(a, batch + a.shape[-2:])
    b_b = np.broadcast_to(b, shape)
    x = np.empty(shape, a.dtype)
    with np.errstate(all="ignore"), __import__("warnings").catch_warnings():
        __import__("warnings").simplefilter("ignore")  # a zero on the diagonal gives inf/nan
        for idx in np.ndindex(*batch):
            x[idx] = _trsm(a_b[idx], b_b[idx], upper, left, unit, trans)
    return x


def linalg_solve_triangular(self, B, upper, left=True, unitriangular=False):
    shape = check_solve_triangular(self, B, upper, left, unitriangular)
    a, b = nd(self), nd(B)
    if b.dtype != a.dtype:
        b = (b.real if np.iscomplexobj(b) and not np.iscomplexobj(a) else b).astype(a.dtype)
    return wrap(_solve_triangular(a, b, shape, upper, left, unitriangular))


def check_linear_solve_args(self, A, name, kernel):
    """The checks PyTorch's linearSolveCheckInputs makes for triangular_solve/cholesky_solve."""
    if self._dtype is not A._dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type "
                           f"{self._dtype._short} and A of type {A._dtype._short} instead.")
    _square("", A)
    if A._size[-1] != self._size[-2]:
        raise RuntimeError(f"Incompatible matrix sizes for {name}: each A matrix is "
                           f"{A._size[-1]} by {A._size[-1]} but each b matrix is "
                           f"{self._size[-2]} by {self._size[-1]}")
    check_lapack_dtype(kernel, A)
    batch = _st.broadcast_shapes(self._size[:-2], A._size[:-2])
    return batch + tuple(self._size[-2:]), batch + tuple(A._size[-2:])


def check_triangular_solve(self, A):
    if self.dim() < 2:
        raise RuntimeError(f"torch.triangular_solve: Expected b to have at least 2 dimensions, "
                           f"but it has {self.dim()} dimensions instead")
    if A.dim() < 2:
        raise RuntimeError(f"torch.triangular_solve: Expected A to have at least 2 dimensions, "
                           f"but it has {A.dim()} dimensions instead")
    return check_linear_solve_args(self, A, "triangular_solve", "triangular_solve_cpu")


_warned = set()


def warn_once(key, msg):
    """PyTorch's TORCH_WARN_ONCE: a deprecation warning the first time per process."""
    if key not in _warned:
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
    return wrap(x), wrap(np.ascontiguousarray(np.broadcast_to(a, sa)))


def check_cholesky_solve(self, input2):
    if self.dim() < 2:
        raise RuntimeError(f"b should have at least 2 dimensions, but has {self.dim()} "
                           f"dimensions instead")
    if input2.dim() < 2:
        raise RuntimeError(f"u should have at least 2 dimensions, but has {input2.dim()} "
                           f"dimensions instead")
    return check_linear_solve_args(self, input2, "cholesky_solve", "cholesky_solve_cpu")[0]


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


def check_cholesky_inverse(self, upper=False):
    if self.dim() < 2:
        raise RuntimeError("cholesky_inverse: The input tensor A must have at least 2 dimensions.")
    _square("cholesky_inverse", self)
    check_lapack_dtype("cholesky_inverse_out_cpu", self)
    return tuple(self._size)


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


def check_geqrf(self):
    if self.dim() < 2:
        raise RuntimeError("torch.geqrf: input must have at least 2 dimensions.")
    check_lapack_dtype("geqrf_cpu", self)
    m, n = self._size[-2:]
    return tuple(self._size), tuple(self._size[:-2]) + (min(m, n),)


def geqrf(self):
    sa, st = check_geqrf(self)
    a = nd(self)
    if a.size == 0:
        return wrap(a.copy()), wrap(np.zeros(st, a.dtype))
    h, tau = np.linalg.qr(a, mode="raw")  # h: LAPACK's column-major factors, transposed
    return (wrap(np.ascontiguousarray(np.swapaxes(h, -1, -2)).astype(a.dtype)),
            wrap(np.ascontiguousarray(tau).astype(a.dtype)))


def check_householder_product(input, tau):
    name = "torch.linalg.householder_product"
    if input.dim() < 2:
        raise RuntimeError(f"{name}: input must have at least 2 dimensions.")
    if input._size[-2] < input._size[-1]:
        raise RuntimeError(f"{name}: input.shape[-2] must be greater than or equal to "
                           f"input.shape[-1]")
    if tau.dim() and input._size[-1] < tau._size[-1]:
        raise RuntimeError(f"{name}: input.shape[-1] must be greater than or equal to "
                           f"tau.shape[-1]")
    if input.dim() - tau.dim() != 1:
        raise RuntimeError(f"{name}: Expected tau to have one dimension less than input, but got "
                           f"tau.ndim equal to {tau.dim()} and input.ndim is equal to "
                           f"{input.dim()}")
    if input.dim() > 2 and tuple(tau._size[:-1]) != tuple(input._size[:-2]):
        raise RuntimeError(f"{name}: Expected batch dimensions of tau to be equal to "
                           f"input.shape[:-2], but got {_fmt(tau._size[:-1])}")
    if tau._dtype is not input._dtype:
        raise RuntimeError(f"{name}: tau dtype {tau._dtype._short} does not match input dtype "
                           f"{input._dtype._short}")
    check_lapack_dtype("orgqr_cpu", input)
    return tuple(input._size)


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


def check_ormqr(self, input2, input3, left=True, transpose=False):
    name = "torch.ormqr"
    if self.dim() < 2:
        raise RuntimeError(f"{name}: input must have at least 2 dimensions.")
    if input3.dim() < 2:
        raise RuntimeError(f"{name}: other must have at least 2 dimensions.")
    left_size = -2 if left else -1
    if input3._size[left_size] != self._size[-2]:
        which = "other.shape[-2]" if left else "other.shape[-1]"
        raise RuntimeError(f"{name}: {which} must be equal to input.shape[-2]")
    if input2._size[-1:] != (min(input3._size[left_size], self._size[-1]),):
        raise RuntimeError(f"{name}: tau.shape[-1] must be equal to min(other.shape[{left_size}], "
                           f"input.shape[-1])")
    if self.dim() - input2.dim() != 1:
        raise RuntimeError(f"{name}: Expected tau to have one dimension less than input, but got "
                           f"tau.ndim equal to {input2.dim()} and input.ndim is equal to "
                           f"{self.dim()}")
    if self.dim() != input3.dim():
        raise RuntimeError(f"{name}: Expected other to have the same number of dimensions as "
                           f"input, but got other.ndim equal to {input3.dim()} and input.ndim is "
                           f"equal to {self.dim()}")
    if self.dim() > 2:
        if tuple(input2._size[:-1]) != tuple(self._size[:-2]):
            raise RuntimeError(f"{name}: Expected batch dimensions of tau to be equal to "
                               f"input.shape[:-2], but got {_fmt(input2._size[:-1])}")
        if tuple(input3._size[:-2]) != tuple(self._size[:-2]):
            raise RuntimeError(f"{name}: Expected batch dimensions of other to be equal to "
                               f"input.shape[:-2], but got {_fmt(input3._size[:-2])}")
    if input2._dtype is not self._dtype:
        raise RuntimeError(f"{name}: Expected input and tau to have the same dtype, but input has "
                           f"dtype{self._dtype._short} and tau has dtype {input2._dtype._short}")
    if input3._dtype is not self._dtype:
        raise RuntimeError(f"{name}: Expected input and other to have the same dtype, but input "
                           f"has dtype{self._dtype._short} and other has dtype "
                           f"{input3._dtype._short}")
    check_lapack_dtype("ormqr_cpu", self)
    return tuple(input3._size)


def ormqr(self, input2, input3, left=True, transpose=False):
    check_ormqr(self, input2, input3, left, transpose)
    v, t, c = nd(self), nd(input2), nd(input3)
    q = _householder_q(v, t, v.shape[-2])
    if transpose:
        q = np.conj(np.swapaxes(q, -1, -2))
    r = np.matmul(q, c) if left else np.matmul(c, q)
    return wrap(np.ascontiguousarray(r).astype(c.dtype))


def check_matrix_exp(self):
    if self.dim() < 2:
        raise RuntimeError("linalg.matrix_exp: The input tensor A must have at least 2 "
                           "dimensions.")
    _square("linalg.matrix_exp", self)
    if not (self._dtype.is_floating_point or self._dtype.is_complex):
        raise RuntimeError(f"linalg.matrix_exp: Expected a floating point or complex tensor as "
                           f"input. Got {self._dtype._short}")
    return tuple(self._size)


def linalg_matrix_exp(self):
    shape = check_matrix_exp(self)
    a = nd(self)
    if a.size == 0:
        return wrap(a.copy())
    work = a.astype(np.float32) if self._dtype in (D.float16, D.bfloat16) else a
    return wrap(np.ascontiguousarray(_sla().expm(work)).astype(a.dtype).reshape(shape))


def check_ldl_factor(self, hermitian=False):
    name = "torch.linalg.ldl_factor_ex"
    if self.dim() < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    _square(name, self)
    if not (self._dtype in (D.float32, D.float64) or self._dtype.is_complex):
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got "
                           f"{self._dtype._short}")
    return tuple(self._size), tuple(self._size[:-1]), tuple(self._size[:-2])


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


def check_ldl_solve(LD, pivots, B, hermitian=False):
    name = "torch.linalg.ldl_solve"
    if LD.dim() < 2:
        raise RuntimeError(f"{name}: The input tensor LD must have at least 2 dimensions.")
    _square(name, LD, "LD")
    if B.dim() < 2:
        raise RuntimeError(f"{name}: The input tensor B must have at least 2 dimensions.")
    if tuple(LD._size[:-1]) != tuple(pivots._size):
        raise RuntimeError(f"{name}: Expected LD.shape[:-1] and pivots.shape to be the same, but "
                           f"got pivots with shape {_fmt(pivots._size)} instead")
    if pivots._dtype.is_floating_point or pivots._dtype.is_complex or pivots._dtype is D.bool_:
        raise RuntimeError(f"{name}: Expected pivots to be integers. Got {pivots._dtype._short}")
    return check_linear_solve_args(B, LD, "torch.linalg.ldl_solve", "ldl_solve_cpu")[0]


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
