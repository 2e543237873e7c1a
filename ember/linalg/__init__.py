"""``ember.linalg``: PyTorch's ``torch.linalg`` functions. Each calls its ``linalg_*`` aten op
(declared in native_functions.yaml: CPU kernels on LAPACK through NumPy/SciPy, or composites of
them as in PyTorch) through the generated binding, so ``out=`` and argument checking behave as
in every other op. Failures that depend on the values (a singular matrix, a matrix that is not
positive-definite) raise :class:`LinAlgError`, a RuntimeError as in PyTorch."""
import builtins as _builtins

import ember

from .._C import _linalg as _bindings  # the generated bindings of the linalg_* aten ops
from .._kernels.cpu.linalg import LinAlgError

__all__ = ["LinAlgError", "inv", "inv_ex", "det", "slogdet", "solve", "solve_ex", "lstsq",
           "cholesky", "cholesky_ex", "qr", "svd", "svdvals", "eig", "eigvals", "eigh",
           "eigvalsh", "norm", "vector_norm", "matrix_norm", "pinv", "matrix_rank",
           "matrix_power", "cross", "multi_dot", "lu", "lu_factor", "lu_factor_ex", "lu_solve",
           "solve_triangular", "cond", "diagonal", "householder_product", "ldl_factor",
           "ldl_factor_ex", "ldl_solve", "tensorinv", "tensorsolve", "vander", "vecdot",
           "matrix_exp", "matmul"]


def _out(out):
    return {} if out is None else {"out": out}


def inv(A, *, out=None):
    return _bindings.linalg_inv(A, **_out(out))


def inv_ex(A, *, check_errors=False, out=None):
    return _bindings.linalg_inv_ex(A, check_errors=check_errors, **_out(out))


def det(A, *, out=None):
    return _bindings.linalg_det(A, **_out(out))


def slogdet(A, *, out=None):
    return _bindings.linalg_slogdet(A, **_out(out))


def solve(A, B, *, left=True, out=None):
    return _bindings.linalg_solve(A, B, left=left, **_out(out))


def solve_ex(A, B, *, left=True, check_errors=False, out=None):
    return _bindings.linalg_solve_ex(A, B, left=left, check_errors=check_errors, **_out(out))


def lstsq(A, B, rcond=None, *, driver=None, out=None):
    return _bindings.linalg_lstsq(A, B, rcond, driver=driver, **_out(out))


def cholesky(A, *, upper=False, out=None):
    return _bindings.linalg_cholesky(A, upper=upper, **_out(out))


def cholesky_ex(A, *, upper=False, check_errors=False, out=None):
    return _bindings.linalg_cholesky_ex(A, upper=upper, check_errors=check_errors, **_out(out))


def qr(A, mode="reduced", *, out=None):
    return _bindings.linalg_qr(A, mode, **_out(out))


def svd(A, full_matrices=True, *, driver=None, out=None):
    return _bindings.linalg_svd(A, full_matrices, driver=driver, **_out(out))


def svdvals(A, *, driver=None, out=None):
    return _bindings.linalg_svdvals(A, driver=driver, **_out(out))


def eig(A, *, out=None):
    return _bindings.linalg_eig(A, **_out(out))


def eigvals(A, *, out=None):
    return _bindings.linalg_eigvals(A, **_out(out))


def eigh(A, UPLO="L", *, out=None):
    return _bindings.linalg_eigh(A, UPLO, **_out(out))


def eigvalsh(A, UPLO="L", *, out=None):
    return _bindings.linalg_eigvalsh(A, UPLO, **_out(out))


def _dims(dim):
    return [dim] if isinstance(dim, int) else dim


def norm(A, ord=None, dim=None, keepdim=False, *, out=None, dtype=None):
    if isinstance(ord, str):
        return ember.ops.aten.linalg_norm.ord_str(A, ord, _dims(dim), keepdim, dtype=dtype,
                                              **_out(out))
    return ember.ops.aten.linalg_norm.default(A, ord, _dims(dim), keepdim, dtype=dtype, **_out(out))


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):
    return _bindings.linalg_vector_norm(x, ord, _dims(dim), keepdim, dtype=dtype, **_out(out))


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None):
    aten = ember.ops.aten
    op = aten.linalg_matrix_norm.str_ord if isinstance(ord, str) else \
        aten.linalg_matrix_norm.default
    if out is not None:
        op = aten.linalg_matrix_norm.str_ord_out if isinstance(ord, str) else \
            aten.linalg_matrix_norm.out
        return op(A, ord, list(dim), keepdim, dtype=dtype, out=out)
    return op(A, ord, list(dim), keepdim, dtype=dtype)


def pinv(A, rcond=None, hermitian=False, *, atol=None, rtol=None, out=None):
    aten = ember.ops.aten
    if rcond is not None:  # the legacy form: rtol given positionally
        if out is not None:
            return aten.linalg_pinv.out(A, _builtins.float(rcond), hermitian, out=out)
        return aten.linalg_pinv.default(A, _builtins.float(rcond), hermitian)
    if out is not None:
        return aten.linalg_pinv.atol_rtol_float_out(A, atol=atol, rtol=rtol, hermitian=hermitian,
                                                    out=out)
    return aten.linalg_pinv.atol_rtol_float(A, atol=atol, rtol=rtol, hermitian=hermitian)


def matrix_rank(A, tol=None, hermitian=False, *, atol=None, rtol=None, out=None):
    aten = ember.ops.aten
    if tol is not None:  # the legacy form: an absolute tolerance
        if out is not None:
            return aten.linalg_matrix_rank.out(A, _builtins.float(tol), hermitian, out=out)
        return aten.linalg_matrix_rank.default(A, _builtins.float(tol), hermitian)
    if out is not None:
        return aten.linalg_matrix_rank.atol_rtol_float_out(A, atol=atol, rtol=rtol,
                                                           hermitian=hermitian, out=out)
    return aten.linalg_matrix_rank.atol_rtol_float(A, atol=atol, rtol=rtol, hermitian=hermitian)


def matrix_power(A, n, *, out=None):
    return _bindings.linalg_matrix_power(A, n, **_out(out))


def cross(input, other, *, dim=-1, out=None):  # noqa: A002  (PyTorch's name)
    return _bindings.linalg_cross(input, other, dim=dim, **_out(out))


def multi_dot(tensors, *, out=None):
    return _bindings.linalg_multi_dot(list(tensors), **_out(out))


# -- issue 18: the generated bindings as they are (their signatures are PyTorch's) ---------------
lu, lu_factor, lu_factor_ex = (_bindings.linalg_lu, _bindings.linalg_lu_factor,
                               _bindings.linalg_lu_factor_ex)
lu_solve, solve_triangular = _bindings.linalg_lu_solve, _bindings.linalg_solve_triangular
cond, diagonal = _bindings.linalg_cond, _bindings.linalg_diagonal
matmul = _bindings.linalg_matmul
householder_product = _bindings.linalg_householder_product
ldl_factor, ldl_factor_ex, ldl_solve = (_bindings.linalg_ldl_factor, _bindings.linalg_ldl_factor_ex,
                                        _bindings.linalg_ldl_solve)
tensorinv, tensorsolve = _bindings.linalg_tensorinv, _bindings.linalg_tensorsolve
vander, vecdot, matrix_exp = _bindings.linalg_vander, _bindings.linalg_vecdot, \
    _bindings.linalg_matrix_exp
