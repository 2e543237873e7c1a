"""CPU matrix products (mm, bmm, addmm, mv, dot) on ``numpy.matmul``. The argument checks, with
PyTorch's messages, are shared with the Meta kernels; ``matmul`` is a composite of these ops
(``composite/math.py``)."""
import math

import numpy as np

from ..._core import dtype as D
from ..._core.blas import matmul as _matmul
from ._util import nd, wrap

# C++ type names PyTorch prints in mm's dtype-mismatch message
_C_NAMES = {"Bool": "bool", "Byte": "unsigned char", "Char": "signed char", "Short": "short int",
            "Int": "int", "Long": "long int", "Half": "c10::Half", "BFloat16": "c10::BFloat16",
            "Float": "float", "Double": "double", "ComplexFloat": "c10::complex<float>",
            "ComplexDouble": "c10::complex<double>"}


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
                           f"{_C_NAMES[self._dtype._short]} != {_C_NAMES[mat2._dtype._short]}")
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


__all__ = ["mm", "bmm", "mv", "dot", "addmm", "baddbmm", "addbmm", "addmv", "vdot"]


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
    if "solve" in api_name:
        if np.any(nd(info) > 0):
            raise LinAlgError(f"{api_name}: The solver failed because the input matrix is "
                              f"singular.")
        return None
    return raise_for_info(api_name, info, is_matrix)


__all__ += ["_linalg_check_errors", "linalg_inv_ex", "_linalg_det", "_linalg_slogdet", "_linalg_solve_ex",
            "linalg_cholesky_ex", "cholesky", "linalg_qr", "_linalg_svd", "linalg_eig",
            "_linalg_eigh", "linalg_lstsq", "linalg_vector_norm"]
