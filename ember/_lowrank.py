"""PyTorch's ``torch._lowrank``: the randomized low-rank SVD and PCA of Halko, Martinsson and
Tropp (arXiv:0909.4061), written in ember ops so that autograd differentiates them.

The Gaussian test matrix comes from ``ember.randn``, so results are reproducible under
``ember.manual_seed`` but differ from PyTorch's for the same seed (another generator): the
singular values agree, the singular vectors up to a sign (a phase for complex inputs).
A sparse COO ``A`` is multiplied with ``ember.sparse.mm`` and centred without densifying it (the
column means enter as the low-rank ``M``), as in PyTorch."""
import ember

from . import _linalg_utils as _utils

__all__ = ["svd_lowrank", "pca_lowrank"]


def get_approximate_basis(A, q, niter=2, M=None):
    """Q with q orthonormal columns such that Q Q^H A approximates A (A - M when M is given):
    Algorithm 4.4 of Halko et al. 2009, a randomized range finder with ``niter`` subspace
    iterations, without forming A - M."""
    niter = 2 if niter is None else niter
    dtype = _utils.get_floating_dtype(A) if not A.is_complex() else A.dtype
    matmul = _utils.matmul
    R = ember.randn(A.shape[-1], q, dtype=dtype, device=A.device)
    X = matmul(A, R)
    if M is not None:
        X = X - matmul(M, R)
    Q = ember.linalg.qr(X).Q
    for _ in range(niter):
        X = matmul(A.mH, Q)
        if M is not None:
            X = X - matmul(M.mH, Q)
        Q = ember.linalg.qr(X).Q
        X = matmul(A, Q)
        if M is not None:
            X = X - matmul(M, Q)
        Q = ember.linalg.qr(X).Q
    return Q


def svd_lowrank(A, q=6, niter=2, M=None):
    r"""``(U, S, V)`` with :math:`A - M \approx U \operatorname{diag}(S) V^H` of rank ``q``
    (Algorithm 5.1 of Halko et al. 2009); ``M`` broadcasts to A's size."""
    return _svd_lowrank(A, q=q, niter=niter, M=M)


def _svd_lowrank(A, q=6, niter=2, M=None):
    q = 6 if q is None else q
    m, n = A.shape[-2:]
    matmul = _utils.matmul
    if M is not None:
        M = M.broadcast_to(A.size())
    if m < n:  # work on the tall matrix
        A = A.mH
        if M is not None:
            M = M.mH
    Q = get_approximate_basis(A, q, niter=niter, M=M)
    B = matmul(Q.mH, A)
    if M is not None:
        B = B - matmul(Q.mH, M)
    U, S, Vh = ember.linalg.svd(B, full_matrices=False)
    V = Vh.mH
    U = Q.matmul(U)
    if m < n:
        U, V = V, U
    return U, S, V


def pca_lowrank(A, q=None, center=True, niter=2):
    """PCA of a (batch of) low-rank matrices: ``(U, S, V)``, the svd_lowrank of A less its
    column means (of A itself when ``center=False``); ``q`` defaults to min(6, m, n)."""
    m, n = A.shape[-2:]
    if q is None:
        q = min(6, m, n)
    elif not (q >= 0 and q <= min(m, n)):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than min(m, n)="
                         f"{min(m, n)}")
    if not (niter >= 0):
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if not center:
        return _svd_lowrank(A, q, niter=niter, M=None)
    if _utils.is_sparse(A):
        if A.dim() != 2:
            raise ValueError("pca_lowrank input is expected to be 2-dimensional tensor")
        dtype = _utils.get_floating_dtype(A)
        c = ember.sparse.sum(A, dim=(-2,)) / m
        column_indices = c.indices()[0]
        indices = ember.zeros(2, len(column_indices), dtype=column_indices.dtype,
                              device=column_indices.device)
        indices[0] = column_indices
        C_t = ember.sparse_coo_tensor(indices, c.values(), (n, 1), dtype=dtype, device=A.device)
        ones_m1_t = ember.ones((1, m), dtype=dtype, device=A.device)
        return _svd_lowrank(A, q, niter=niter, M=ember.sparse.mm(C_t, ones_m1_t).mT)
    C = A.mean(dim=(-2,), keepdim=True)
    return _svd_lowrank(A - C, q, niter=niter, M=None)
