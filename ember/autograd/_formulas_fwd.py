"""Helpers that the forward formulas (``result:`` entries of ``derivatives.yaml``) call, with
PyTorch's FunctionsManual names (``logsumexp_jvp``, ``cat_jvp``, ``layer_norm_jvp`` ...), written
in ember ops so that tangents are themselves differentiable (nested ``jvp``, ``grad`` of a
``jvp``).

A reduction whose backward is ``grad * D(self)`` with ``D`` elementwise has the forward
derivative ``sum(conj(D(self)) * self_t)`` over the reduced dims: :func:`_reduce_jvp` is that
contraction, and the norm helpers use the backward formulas with a ones ``grad`` for ``D``.
"""
__all__ = ["dim_or_all", "clamp_jvp", "gather_with_keepdimed_indices", "evenly_read_jvp",
           "amaxamin_jvp", "aminmax_jvp", "logsumexp_jvp", "cat_jvp", "stack_jvp", "to_copy_jvp",
           "layer_norm_jvp", "batch_norm_jvp", "nll_loss_forward_jvp", "norm_jvp",
           "linalg_vector_norm_jvp", "cumprod_jvp", "logcumsumexp_jvp", "convolution_jvp",
           "group_norm_jvp", "linalg_det_jvp", "linalg_solve_jvp", "cholesky_jvp",
           "apply_loss_reduction", "glu_jvp", "linalg_solve_triangular_forward_AD",
           "cholesky_solve_jvp", "cholesky_inverse_jvp", "slogdet_jvp",
           "linalg_svd_jvp", "linalg_eigh_jvp", "pinv_jvp", "scatter_reduce_jvp",
           "linalg_lu_jvp", "lu_factor_ex_jvp", "linalg_lu_solve_jvp", "lu_unpack_jvp",
           "linalg_lstsq_solution_jvp", "linalg_lstsq_residuals_jvp", "householder_product_jvp",
           "foreach_norm_jvp", "foreach_maximum_scalar_jvp"]

import ember  # noqa: E402  (resolved when a formula runs: ember imports this package)

from ._formulas_pointwise import _per_tensor  # noqa: E402


def _dims(dim, ndim):
    if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
        return list(range(ndim))
    if isinstance(dim, int):
        dim = [dim]
    return [d % ndim if ndim else 0 for d in dim]


def dim_or_all(dim):
    """``dim.value_or(IntArrayRef({}))``: an empty list reduces every dim."""
    return [] if dim is None else dim


def _reduce_jvp(d, t, dim, keepdim, result):
    prod = d.conj() * t if d._dtype.is_complex else d * t
    out = prod.sum(_dims(dim, t.dim()), keepdim) if t.dim() else prod
    if not result._dtype.is_complex and out._dtype.is_complex:
        out = out.real
    return out


def clamp_jvp(self_p, self_t, min_p, min_t, max_p, max_t):
    if min_p is not None and max_p is not None:
        return ember.where(min_p > max_p, max_t,
                       ember.where(self_p < min_p, min_t, ember.where(self_p > max_p, max_t, self_t)))
    if min_p is not None:
        return ember.where(self_p > min_p, self_t, min_t)
    if max_p is not None:
        return ember.where(self_p < max_p, self_t, max_t)
    return self_t


def gather_with_keepdimed_indices(t, dim, indices, keepdim):
    if t.dim() == 0:
        return t.clone()
    if not keepdim:
        indices = indices.unsqueeze(dim)
    out = t.gather(dim, indices)
    return out if keepdim else out.squeeze(dim)


def evenly_read_jvp(fw_grad, input, value):
    mask = (input == value)
    count = mask.sum()
    return (fw_grad * mask).sum() / count


def amaxamin_jvp(x, dx, result, dim, keepdim):
    dims = _dims(dim, x.dim())
    r = result
    if not keepdim and x.dim():
        for d in sorted(dims):
            r = r.unsqueeze(d)
    mask = (x == r)
    if not x.dim():
        return dx.clone()
    return (dx * mask).sum(dims, keepdim) / mask.sum(dims, keepdim)


def aminmax_jvp(x, dx, result, dim, keepdim):
    return amaxamin_jvp(x, dx, result, [] if dim is None else [dim], keepdim)


def logsumexp_jvp(self_p, self_t, dim, keepdim):
    if self_p.dim() == 0:
        return self_t.clone()
    dims = _dims(dim, self_p.dim())
    m = self_p.amax(dims, keepdim=True).detach()
    m = ember.where(m.isinf(), ember.zeros_like(m), m)
    e = (self_p - m).exp()
    return (e * self_t).sum(dims, keepdim) / e.sum(dims, keepdim)


def cat_jvp(tensors, tangents, dim):
    return ember.cat([t if t is not None else ember.zeros_like(p) for p, t in zip(tensors, tangents)],
                 dim)


def stack_jvp(tensors, tangents, dim):
    return ember.stack([t if t is not None else ember.zeros_like(p) for p, t in zip(tensors, tangents)],
                   dim)


def to_copy_jvp(self_t, dtype, layout, device, pin_memory, non_blocking, memory_format):
    from .._ops.overload import ops
    return ops.aten._to_copy.default(self_t, dtype=dtype, layout=layout, device=device,
                                     pin_memory=pin_memory, non_blocking=non_blocking,
                                     memory_format=memory_format)


def layer_norm_jvp(input_p, input_t, weight_p, weight_t, bias_p, bias_t, saved_mean,
                   saved_invstd, normalized_shape):
    n = len(normalized_shape)
    dims = list(range(input_p.dim() - n, input_p.dim()))
    mean_t = input_t.mean(dims, keepdim=True)
    xc = input_p - saved_mean
    xhat = xc * saved_invstd
    # d invstd = -invstd^3 * mean(xc * dx)
    dvar = (xc * (input_t - mean_t)).mean(dims, keepdim=True)
    xhat_t = (input_t - mean_t) * saved_invstd - xc * saved_invstd.pow(3) * dvar
    out = xhat_t
    if weight_p is not None:
        out = out * weight_p
        if weight_t is not None:
            out = out + xhat * weight_t
    if bias_t is not None:
        out = out + bias_t
    return out


def batch_norm_jvp(input_p, input_t, weight_p, weight_t, bias_p, bias_t, running_mean,
                   running_var, saved_mean, saved_invstd, train, eps):
    ndim = input_p.dim()
    view = [1] * ndim
    if ndim > 1:
        view[1] = input_p.shape[1]
    dims = [d for d in range(ndim) if d != 1]
    if train:
        mean = saved_mean.reshape(view)
        invstd = saved_invstd.reshape(view)
        mean_t = input_t.mean(dims, keepdim=True)
        xc = input_p - mean
        dvar = (xc * (input_t - mean_t)).mean(dims, keepdim=True)
        xhat = xc * invstd
        xhat_t = (input_t - mean_t) * invstd - xc * invstd.pow(3) * dvar
    else:
        invstd = (running_var.reshape(view) + eps).rsqrt()
        xhat = (input_p - running_mean.reshape(view)) * invstd
        xhat_t = input_t * invstd
    out = xhat_t
    if weight_p is not None:
        out = out * weight_p.reshape(view)
        if weight_t is not None:
            out = out + xhat * weight_t.reshape(view)
    if bias_t is not None:
        out = out + bias_t.reshape(view)
    return out


def nll_loss_forward_jvp(self_t, target, weight, reduction, ignore_index):
    from .._ops.overload import ops
    return ops.aten.nll_loss_forward.default(self_t, target, weight, reduction, ignore_index)[0]


def linalg_vector_norm_jvp(self_p, self_t, ord, result, dim, keepdim):
    from ._formulas_shape import linalg_vector_norm_backward
    d = linalg_vector_norm_backward(ember.ones_like(result), self_p, ord, result, dim, keepdim)
    return _reduce_jvp(d, self_t, dim, keepdim, result)


def foreach_norm_jvp(self_p, self_t, ord, result):
    return [linalg_vector_norm_jvp(p, t, ord, r, None, False)
            for p, t, r in zip(self_p, self_t, result)]


def norm_jvp(self_p, self_t, p, result, dim=None, keepdim=False):
    if dim is not None and len(dim) == 0:
        dim = None
    return linalg_vector_norm_jvp(self_p, self_t, 2 if p is None else p, result, dim, keepdim)


def cumprod_jvp(self_t, self_p, result, dim):
    # d cumprod = cumsum(dx / x) * cumprod where x has no zeros; the general case goes through
    # the backward formula's Jacobian-vector product (exact, zeros included)
    if bool((self_p == 0).any()):
        from ._formulas_reduction import cumprod_backward
        n = self_p.shape[dim] if self_p.dim() else 1
        cols = []
        for k in range(n):
            e = ember.zeros_like(result)
            e.select(dim, k).fill_(1) if self_p.dim() else e.fill_(1)
            g = cumprod_backward(e, self_p, dim, result)
            cols.append((g * self_t).sum(dim, keepdim=True) if self_p.dim() else g * self_t)
        return ember.cat(cols, dim) if self_p.dim() else cols[0]
    return (self_t / self_p).cumsum(dim) * result


def logcumsumexp_jvp(self_p, self_t, dim):
    if self_p.dim() == 0:
        return self_t.clone()
    m = self_p.amax(dim, keepdim=True).detach()
    m = ember.where(m.isinf(), ember.zeros_like(m), m)
    e = (self_p - m).exp()
    return (e * self_t).cumsum(dim) / e.cumsum(dim)


def convolution_jvp(input_p, input_t, weight_p, weight_t, bias_p, bias_t, stride, padding,
                    dilation, transposed, output_padding, groups):
    out = None
    if input_t is not None:
        out = ember.convolution(input_t, weight_p, None, stride, padding, dilation, transposed,
                            output_padding, groups)
    if weight_t is not None:
        w = ember.convolution(input_p, weight_t, bias_t, stride, padding, dilation, transposed,
                          output_padding, groups)
        out = w if out is None else out + w
    elif bias_t is not None:
        view = [1] * out.dim()
        view[1] = bias_t.shape[0]
        out = out + bias_t.reshape(view)
    return out



def group_norm_jvp(input_p, input_t, weight_p, weight_t, bias_p, bias_t, mean, rstd, group):
    """Tangents of native_group_norm's (output, mean, rstd): layer norm over each group."""
    n = input_p.shape[0]
    x = input_p.reshape(n, group, -1)
    dx = input_t.reshape(n, group, -1)
    m, r = mean.reshape(n, group, 1), rstd.reshape(n, group, 1)
    mean_t = dx.mean(-1, keepdim=True)
    xc = x - m
    var_t = (xc * (dx - mean_t)).mean(-1, keepdim=True)  # half of d var
    rstd_t = -r.pow(3) * var_t
    xhat = (xc * r).reshape(input_p.shape)
    out = ((dx - mean_t) * r + xc * rstd_t).reshape(input_p.shape)
    view = [1] * input_p.dim()
    if input_p.dim() > 1:
        view[1] = input_p.shape[1]
    if weight_p is not None:
        out = out * weight_p.reshape(view)
        if weight_t is not None:
            out = out + xhat * weight_t.reshape(view)
    if bias_t is not None:
        out = out + bias_t.reshape(view)
    return out, mean_t.reshape(mean.shape), rstd_t.reshape(rstd.shape)


def linalg_det_jvp(A_p, A_t, det):
    """d det(A) = det(A) tr(A^-1 dA)."""
    return det * ember.linalg.solve(A_p, A_t).diagonal(0, -2, -1).sum(-1)


def linalg_solve_jvp(A_p, A_t, B_t, X, left):
    """A X = B: dX = A^-1 (dB - dA X) (left), X A = B: dX = (dB - X dA) A^-1."""
    vector = X.dim() == 1 or (left and X.dim() == A_p.dim() - 1)
    if left:
        if vector:
            r = B_t - (A_t @ X.unsqueeze(-1)).squeeze(-1)
        else:
            r = B_t - A_t @ X
        return ember.linalg.solve(A_p, r, left=True)
    return ember.linalg.solve(A_p, B_t - X @ A_t, left=False)


def cholesky_jvp(dA, L, upper):
    """A = L L^H: dL = L phi(L^-1 dA L^-H), phi the lower triangle with the diagonal halved."""
    if upper:
        L = L.mH
        dA = dA.mH
    Linv_dA = ember.linalg.solve_triangular(L, dA, upper=False)
    inner = ember.linalg.solve_triangular(L.mH, Linv_dA, upper=True, left=False)
    phi = inner.tril(-1) + 0.5 * inner.diagonal(0, -2, -1).diag_embed()
    dL = L @ phi
    return dL.mH if upper else dL


def apply_loss_reduction(t, reduction):
    """Reduction.None (0), Mean (1), Sum (2)."""
    return t.mean() if reduction == 1 else (t.sum() if reduction == 2 else t)


def glu_jvp(glu, x, dx, dim):
    a, b = x.chunk(2, dim)
    da, db = dx.chunk(2, dim)
    s = b.sigmoid()
    return da * s + glu * (1 - s) * db


def linalg_solve_triangular_forward_AD(A_t, B_t, A, X, upper, left, unitriangular):
    dA = A_t.triu(int(unitriangular)) if upper else A_t.tril(-int(unitriangular))
    r = B_t - (dA @ X if left else X @ dA)
    return ember.linalg.solve_triangular(A, r, upper=upper, left=left, unitriangular=unitriangular)


def _chol_dA(L, dL, upper):
    return dL.mH @ L + L.mH @ dL if upper else dL @ L.mH + L @ dL.mH


def cholesky_solve_jvp(X, U, dU, dB, upper):
    """X = (L L^H)^-1 B: dX = A^-1 (dB - dA X)."""
    return ember.cholesky_solve(dB - _chol_dA(U, dU, upper) @ X, U, upper=upper)


def cholesky_inverse_jvp(F, dF, X, upper):
    """X = (L L^H)^-1: dX = -X dA X."""
    dF = dF.triu() if upper else dF.tril()  # only the factor's triangle is read
    return -X @ _chol_dA(F, dF, upper) @ X


def slogdet_jvp(A, dA, sign):
    """d log|det A| = Re tr(A^-1 dA); d sign = sign * i Im tr(A^-1 dA) (zero for real A)."""
    tr = ember.linalg.solve(A, dA).diagonal(0, -2, -1).sum(-1)
    if A.is_complex():
        return sign * (1j * tr.imag), tr.real
    return ember.zeros_like(sign), tr


def linalg_svd_jvp(dA, A, U, S, Vh, full_matrices, compute_uv):
    """PyTorch's linalg_svd_jvp: with dP = U^H dA V, dS = Re diag(dP); dU and dVh from the
    symmetric parts of dP S and S dP over E_ij = S_j^2 - S_i^2, plus the components outside the
    span of U (tall) or V (wide)."""
    from .._ops.overload import ops
    if not compute_uv:  # svdvals: the vectors are needed for the derivative
        U, S, Vh = ops.aten._linalg_svd.default(A, False, True)
    m, n = A.shape[-2], A.shape[-1]
    k = S.shape[-1]
    if full_matrices:
        U, Vh = U[..., :k], Vh[..., :k, :]
    V = Vh.mH
    dP = U.mH @ (dA @ V)
    is_complex = dA.is_complex()
    dS = dP.diagonal(0, -2, -1)
    dS = dS.real if is_complex else dS
    if not compute_uv:
        return None, dS, None
    dP = dP - dS.diag_embed().to(dP.dtype)
    S2 = S * S
    E = S2.unsqueeze(-2) - S2.unsqueeze(-1)
    E = E + ember.eye(k, dtype=E.dtype)  # ones on the diagonal: no division by zero there

    def sym(X):
        return X + X.mH
    dUaux = sym(dP * S.unsqueeze(-2)) / E
    if is_complex:
        diagdP2S = dP.diagonal(0, -2, -1) / (2 * S)
        dUaux = dUaux + diagdP2S.diag_embed()
    dU = U @ dUaux
    if m > n:
        dAVSinv = dA @ (V / S.unsqueeze(-2))
        dU = dU + dAVSinv - U @ (U.mH @ dAVSinv)
        if full_matrices:
            shape = list(dU.shape)
            shape[-1] = m - n
            dU = ember.cat([dU, dU.new_zeros(shape)], -1)
    dVh = -sym(dP * S.unsqueeze(-1)) / E
    if is_complex:
        dVh = dVh + diagdP2S.diag_embed()
    dVh = dVh @ Vh
    if m < n:
        UHdASinv = (U.mH / S.unsqueeze(-1)) @ dA
        dVh = dVh + UHdASinv - (UHdASinv @ V) @ Vh
        if full_matrices:
            shape = list(dVh.shape)
            shape[-2] = n - m
            dVh = ember.cat([dVh, dVh.new_zeros(shape)], -2)
    return dU, dS, dVh


def linalg_eigh_jvp(dA, A, L, V, UPLO, compute_v):
    """A = V diag(L) V^H: dL = Re diag(V^H dA V), dV = V ((V^H dA V) / E) with E_ij = L_j - L_i
    (zero on the diagonal)."""
    from .._ops.overload import ops
    if not compute_v:  # eigvalsh: the vectors are needed for the derivative
        L, V = ops.aten._linalg_eigh.default(A, UPLO, True)
    dP = V.mH @ (dA @ V)
    dL = dP.diagonal(0, -2, -1)
    dL = dL.real if dL.is_complex() else dL
    if not compute_v:
        return dL, None
    n = L.shape[-1]
    E = L.unsqueeze(-2) - L.unsqueeze(-1)
    eye = ember.eye(n, dtype=E.dtype)
    ratio = (dP / (E + eye).to(dP.dtype)) * (1 - eye).to(dP.dtype)
    return dL, V @ ratio


def pinv_jvp(A, pinvA, dA):
    """PyTorch's pinv_jvp (the product arranged by the smaller dimension)."""
    m, n = A.shape[-2], A.shape[-1]
    dAh, pinvAh = dA.mH, pinvA.mH
    if m <= n:
        K = pinvAh @ dAh
        return pinvA @ (K - K.mH - K @ (A @ pinvA)) + (dAh - pinvA @ (A @ dAh)) @ (pinvAh @ pinvA)
    K = pinvA @ dA
    Kh = K.mH
    return (Kh - K - (pinvA @ A) @ Kh) @ pinvA + (pinvA @ pinvAh) @ (dAh - (dAh @ A) @ pinvA)


def scatter_reduce_jvp(self_p, self_t, dim, index, src_p, src_t, reduce, include_self, result):
    """sum/mean are linear; amax/amin average the tangents of the elements equal to the result
    (PyTorch's even distribution); prod is result * sum(dx / x) (inputs without zeros)."""
    if reduce in ("sum", "mean"):
        return self_t.scatter_reduce(dim, index, src_t, reduce, include_self=include_self)
    zeros = ember.zeros_like(self_t)
    touched = ember.zeros_like(self_p).scatter_add(dim, index, ember.ones_like(src_p)) > 0
    if reduce in ("amax", "amin"):
        src_mask = (src_p == result.gather(dim, index)).to(self_t.dtype)
        self_mask = (self_p == result).to(self_t.dtype)
        if not include_self:
            self_mask = self_mask * (~touched).to(self_t.dtype)  # untouched: self is the result
        num = self_t * self_mask + zeros.scatter_add(dim, index, src_t * src_mask)
        return num / (self_mask + zeros.scatter_add(dim, index, src_mask))
    if reduce == "prod":
        if bool((src_p == 0).any()) or bool((self_p == 0).any()):
            from ._forward import NOT_SUPPORTED
            raise NotImplementedError(NOT_SUPPORTED.format("scatter_reduce") +
                                      " (ember: prod with zero inputs)")
        self_part = self_t / self_p
        if not include_self:
            self_part = ember.where(touched, ember.zeros_like(self_part), self_part)
        return result * (self_part + zeros.scatter_add(dim, index, src_t / src_p))
    raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got "
                       f"{reduce}")


def _lu_dx(dA, P, L, U):
    """A = P L U (square): L^-1 P^T dA U^-1, whose strict lower part is L^-1 dL and upper part
    dU U^-1."""
    if A_shape_square(L, U) is False:
        from ._forward import NOT_SUPPORTED
        raise NotImplementedError(NOT_SUPPORTED.format("linalg_lu") +
                                  " (ember: rectangular LU)")
    PtdA = P.mT.to(dA.dtype) @ dA
    left = ember.linalg.solve_triangular(L, PtdA, upper=False, unitriangular=True)
    return ember.linalg.solve_triangular(U, left, upper=True, left=False)


def A_shape_square(L, U):
    return L.shape[-1] == L.shape[-2] and U.shape[-1] == U.shape[-2]


def linalg_lu_jvp(dA, P, L, U, pivot):
    dX = _lu_dx(dA, P, L, U)
    return L @ dX.tril(-1), dX.triu() @ U


def lu_factor_ex_jvp(dA, LU, pivots, pivot):
    P, L, U = ember.lu_unpack(LU, pivots)
    dL, dU = linalg_lu_jvp(dA, P, L, U, pivot)
    return dL + dU


def lu_unpack_jvp(LU_t, which):
    m, n = LU_t.shape[-2], LU_t.shape[-1]
    k = min(m, n)
    if which == "L":
        return LU_t[..., :, :k].tril(-1)
    return LU_t[..., :k, :].triu()


def linalg_lu_solve_jvp(X, LU, pivots, dLU, dB, left, adjoint):
    """A = P L U from the factorization: dA = P (dL U + L dU), then the solve's derivative."""
    P, L, U = ember.lu_unpack(LU, pivots)
    dA = P.to(dLU.dtype) @ (dLU.tril(-1) @ U + L @ dLU.triu())
    if adjoint:
        dA = dA.mH
    r = dB - dA @ X if left else dB - X @ dA
    return ember.linalg.lu_solve(LU, pivots, r, left=left, adjoint=adjoint)


def linalg_lstsq_solution_jvp(A, B, dA, dB):
    pinvA = ember.linalg.pinv(A)
    vector = B.dim() == A.dim() - 1
    if vector:
        B, dB = B.unsqueeze(-1), dB.unsqueeze(-1)
    dX = pinv_jvp(A, pinvA, dA) @ B + pinvA @ dB
    return dX.squeeze(-1) if vector else dX


def linalg_lstsq_residuals_jvp(A, B, dA, dB, X, residuals):
    if residuals.numel() == 0:
        return residuals.new_zeros(residuals.shape)
    dX = linalg_lstsq_solution_jvp(A, B, dA, dB)
    r = A @ X - B
    dr = dA @ X + A @ dX - dB
    out = 2 * (r * dr).sum(-2)
    return out.real if out.is_complex() else out


def householder_product_jvp(dV, dtau, prod, V, tau):
    """Q = (H_1 H_2 ... H_k)[:, :n], H_i = I - tau_i v_i v_i^H, with v_i the i-th column of the
    unit lower-triangular part of ``V`` (the strict lower triangle as stored, ones on the
    diagonal, as LAPACK's orgqr reads it; the upper triangle is ignored, so its tangent is too).

    dQ = sum_i (H_1 .. H_{i-1}) dH_i (H_{i+1} .. H_k)[:, :n] with
    dH_i = -(dtau_i v_i v_i^H + tau_i (dv_i v_i^H + v_i dv_i^H)): the suffix products are built
    right to left, then one pass left to right accumulates the prefix and the sum. Batch dims
    broadcast through ``@``."""
    m, n = V.shape[-2], V.shape[-1]
    k = tau.shape[-1]
    if k == 0:
        return ember.zeros_like(prod)
    dtype, device = prod.dtype, prod.device
    Vu = V.tril(-1) + ember.eye(m, n, dtype=V.dtype, device=device)
    dVu = dV.tril(-1)
    eye_m = ember.eye(m, dtype=dtype, device=device)

    def col(x, i):
        return x.narrow(-1, i, 1)  # (..., m, 1)

    def coef(t, i):
        return t.narrow(-1, i, 1).unsqueeze(-1)  # (..., 1, 1)

    def reflector(i):
        v = col(Vu, i)
        return eye_m - coef(tau, i) * (v @ v.mH)

    suffix = [None] * k  # suffix[i] = (H_{i+1} .. H_k)[:, :n]
    acc = ember.eye(m, n, dtype=dtype, device=device)
    for i in reversed(range(k)):
        suffix[i] = acc
        acc = reflector(i) @ acc
    out = None
    prefix = None  # H_1 .. H_{i-1}; None for the identity
    for i in range(k):
        v, dv = col(Vu, i), col(dVu, i)
        dH = -(coef(dtau, i) * (v @ v.mH) + coef(tau, i) * (dv @ v.mH + v @ dv.mH))
        term = dH @ suffix[i]
        if prefix is not None:
            term = prefix @ term
        out = term if out is None else out + term
        prefix = reflector(i) if prefix is None else prefix @ reflector(i)
    return out.expand(prod.shape) if out.shape != prod.shape else out


def foreach_maximum_scalar_jvp(self_p, self_t, scalars, result, maximum):
    """PyTorch's forward formula of ``_foreach_maximum``/``_foreach_minimum`` of numbers."""
    out = []
    for p, t, s, r in zip(self_p, self_t, _per_tensor(scalars, len(self_p)), result):
        kept = (p > s) if maximum else (p < s)
        half = ember.full((), 0.5, dtype=r.dtype, device=r.device)
        out.append(s + ember.where(p == s, half, kept.to(r.dtype)) * (t - s))
    return out
