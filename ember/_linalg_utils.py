"""PyTorch's ``torch._linalg_utils``: the small dense/sparse-agnostic linear-algebra helpers the
randomized algorithms (``ember._lowrank``, ``ember._lobpcg``) are written with, and the functions
removed in PyTorch 1.9 (``Tensor.eig``, ``lstsq``, ``solve``, ``symeig``), which raise saying
what replaced them."""
import ember


def is_sparse(A):
    """Whether A is a sparse COO tensor (other sparse layouts count as not sparse)."""
    if isinstance(A, ember.Tensor):
        return A.layout == ember.sparse_coo
    raise TypeError(f"expected Tensor but got {type(A)}")


def get_floating_dtype(A):
    """A's floating dtype: float16/32/64 as they are, everything else float32."""
    if A.dtype in (ember.float16, ember.float32, ember.float64):
        return A.dtype
    return ember.float32


def matmul(A, B):
    """A @ B, or B when A is None."""
    if A is None:
        return B
    if is_sparse(A):
        return ember.sparse.mm(A, B)
    return ember.matmul(A, B)


def bform(X, A, Y):
    """The bilinear form X^T A Y."""
    return matmul(X.mT, matmul(A, Y))


def qform(A, S):
    """The quadratic form S^T A S."""
    return bform(S, A, S)


def basis(A):
    """An orthonormal basis of A's columns."""
    return ember.linalg.qr(A).Q


def symeig(A, largest=False):
    """Eigenpairs of the symmetric A, ascending (descending with ``largest``)."""
    if largest is None:
        largest = False
    E, Z = ember.linalg.eigh(A, UPLO="U")
    if largest:
        E = ember.flip(E, dims=(-1,))
        Z = ember.flip(Z, dims=(-1,))
    return E, Z



# torch._linalg_utils' home of the functions removed in 1.9 (ember keeps them in _toplevel,
# which ember's namespace exports)
from ._toplevel import _symeig, eig, lstsq, matrix_rank, solve  # noqa: E402,F401
