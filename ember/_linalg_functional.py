"""Linear-algebra functions PyTorch defines in Python rather than as one aten op: ``torch.lu``
and ``Tensor.lu`` (torch/functional.py, torch/_tensor.py, over aten ``_lu_with_info``) and the
randomized ``svd_lowrank`` / ``pca_lowrank`` (torch/_lowrank.py, Halko et al. 2009, over
``linalg.qr`` and ``linalg.svd``). Exported from ``ember``."""
from ._ops.overload import ops as _ops
from ._tensor import Tensor as _Tensor

__all__ = ["lu", "svd_lowrank", "pca_lowrank"]


def _check_list_size(out_len, get_infos, out):
    if out_len - (1 if get_infos else 0) != 2:
        raise TypeError(f"expected tuple of {2 + int(get_infos)} elements but got {out_len}")
    if not isinstance(out, (tuple, list)):
        raise TypeError(f"argument 'out' must be tuple of Tensors, not {type(out).__name__}")


def lu(A, pivot=True, get_infos=False, out=None):
    """LU factorization with pivots (and the LAPACK infos when ``get_infos``); deprecated in
    PyTorch in favour of ``linalg.lu_factor``, whose warning ``_lu_with_info`` raises once."""
    # with get_infos the caller checks the infos, so no error is raised (and vice versa)
    result = _ops.aten._lu_with_info.default(A, pivot, not get_infos)
    if out is not None:
        _check_list_size(len(out), get_infos, out)
        for dst, src in zip(out, result):
            dst.resize_(src.shape).copy_(src)
        return out
    return result if get_infos else (result[0], result[1])


def _tensor_lu(self, pivot=True, get_infos=False):
    LU, pivots, infos = _ops.aten._lu_with_info.default(self, pivot, not get_infos)
    return (LU, pivots, infos) if get_infos else (LU, pivots)


_Tensor.lu = _tensor_lu


def _mH(t):
    return t.transpose(-2, -1).conj() if t.is_complex() else t.transpose(-2, -1)


def _floating_dtype(A):
    import ember
    return A.dtype if A.dtype.is_floating_point else ember.float32


def get_approximate_basis(A, q, niter=2, M=None):
    """Q with q orthonormal columns such that Q Q^H A approximates A (A - M when M is given):
    Algorithm 4.4 of Halko et al. 2009, a randomized range finder with ``niter`` subspace
    iterations."""
    import ember
    niter = 2 if niter is None else niter
    dtype = _floating_dtype(A) if not A.is_complex() else A.dtype
    R = ember.randn(A.shape[-1], q, dtype=dtype, device=A.device)
    X = ember.matmul(A, R)
    if M is not None:
        X = X - ember.matmul(M, R)
    Q = ember.linalg.qr(X).Q
    for _ in range(niter):
        X = ember.matmul(_mH(A), Q)
        if M is not None:
            X = X - ember.matmul(_mH(M), Q)
        Q = ember.linalg.qr(X).Q
        X = ember.matmul(A, Q)
        if M is not None:
            X = X - ember.matmul(M, Q)
        Q = ember.linalg.qr(X).Q
    return Q


def svd_lowrank(A, q=6, niter=2, M=None):
    """(U, S, V) with A - M ≈ U diag(S) V^H of rank q: Algorithm 5.1 of Halko et al. 2009."""
    import ember
    q = 6 if q is None else q
    m, n = A.shape[-2:]
    if M is not None:
        M = M.broadcast_to(A.size())
    if m < n:  # work on the tall matrix
        A = _mH(A)
        if M is not None:
            M = _mH(M)
    Q = get_approximate_basis(A, q, niter=niter, M=M)
    B = ember.matmul(_mH(Q), A)
    if M is not None:
        B = B - ember.matmul(_mH(Q), M)
    U, S, Vh = ember.linalg.svd(B, full_matrices=False)
    V = _mH(Vh)
    U = Q.matmul(U)
    if m < n:
        U, V = V, U
    return U, S, V


def pca_lowrank(A, q=None, center=True, niter=2):
    """PCA of a (batch of) low-rank matrices: the svd_lowrank of A less its column means."""
    m, n = A.shape[-2:]
    if q is None:
        q = min(6, m, n)
    elif not (q >= 0 and q <= min(m, n)):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than min(m, n)="
                         f"{min(m, n)}")
    if not (niter >= 0):
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if not center:
        return svd_lowrank(A, q, niter=niter, M=None)
    C = A.mean(dim=(-2,), keepdim=True)
    return svd_lowrank(A - C, q, niter=niter, M=None)
