"""Backward helpers for the shape, indexing and linear-algebra ops (PyTorch's FunctionsManual
names), in ember ops so that backward passes are differentiable. ``_formulas`` re-exports them
into the namespace derivatives.yaml formulas are evaluated in."""
import math

import ember

from .._core.strides import broadcast_shapes
# Loaded by _formulas' last lines (its star-imports), once its own helpers are defined.
from . import _formulas

__all__ = ["repeat_backward", "gather_backward", "index_select_backward",
           "index_source_backward", "masked_scatter_backward", "masked_select_backward", "take_backward",
           "block_diag_backward", "trace_backward", "scatter_reduce_backward",
           "linalg_det_backward", "slogdet_backward", "cholesky_backward", "svd_backward",
           "linalg_eigh_backward", "linalg_qr_backward", "linalg_vector_norm_backward",
           "linalg_solve_backward", "inv_backward", "mH"]


def repeat_backward(grad, repeats, input_shape):
    """Sum the copies: view each repeated dim r*s as (r, s) and sum over the r axis."""
    repeats = list(repeats)
    lead = len(repeats) - len(input_shape)
    for _ in range(lead):  # the leading dims repeat a size-1 prefix
        grad = grad.sum(0)
    split = []
    for r, s in zip(repeats[lead:], input_shape):
        split += [r, s]
    g = grad.reshape(split) if split else grad
    if split:
        g = g.sum(list(range(0, len(split), 2)))
    return g.reshape(input_shape)


def gather_backward(grad, self, dim, index, sparse_grad=False):
    if sparse_grad:  # PyTorch's _gather_sparse_backward: one entry per gathered element
        return _gather_sparse_backward(self, dim, index, grad)
    return ember.zeros_like(self).scatter_add(dim, index, grad)


def _gather_sparse_backward(self, dim, index, grad):
    """A COO gradient with an entry for each element of ``index``: its own coordinates, ``dim``
    replaced by the index there, holding the gradient of that gathered element."""
    if index.dim() == 0:
        return ember.sparse_coo_tensor(index.reshape(1, 1), grad.reshape(1), self.shape)
    dim = dim % index.dim()
    coords = [ember.arange(n, device=index.device).view(
        [-1 if d == i else 1 for d in range(index.dim())]).expand(index.shape).reshape(-1)
        for i, n in enumerate(index.shape)]
    coords[dim] = index.reshape(-1)
    return ember.sparse_coo_tensor(ember.stack(coords), grad.reshape(-1), self.shape)


def index_select_backward(grad, sizes, dim, index):
    return ember.zeros(sizes, dtype=grad.dtype, device=grad.device).index_add(dim, index, grad)


def index_source_backward(grad, dim, index, source):
    """Gradient reaching ``source`` of index_add/index_copy: grad's selected slices."""
    g = grad.index_select(dim, index) if grad.dim() else grad.reshape(1)[index.reshape(-1)]
    return g.reshape(source.shape)


def masked_scatter_backward(grad, mask, sizes):
    """source's gradient: the masked elements of grad, in order, padded with zeros."""
    n = math.prod(sizes)
    g = grad.masked_select(mask)
    diff = n - g.numel()
    if diff > 0:
        g = ember.cat([g, ember.zeros(diff, dtype=g.dtype, device=g.device)])
    return g[:n].reshape(sizes)


def masked_select_backward(grad, self, mask):
    shape = broadcast_shapes(self._size, mask._size)
    return ember.zeros(shape, dtype=grad.dtype, device=grad.device).masked_scatter(mask, grad)


def take_backward(grad, self, index):
    return ember.zeros_like(self).put_(index, grad, True)


def block_diag_backward(grad, sizes):
    out, i, j = [], 0, 0
    for s in sizes:
        h, w = (1, 1) if len(s) == 0 else ((1, s[0]) if len(s) == 1 else s)
        out.append(grad[i:i + h, j:j + w].reshape(s))
        i, j = i + h, j + w
    return out


def trace_backward(grad, sizes):
    return grad * ember.eye(sizes[0], sizes[1], dtype=grad.dtype, device=grad.device)


def scatter_reduce_backward(grad, self, dim, index, src, reduce, include_self, result):
    """PyTorch's scatter_reduce_backward (sum, mean, prod, amax, amin)."""
    if reduce == "sum":
        g_self = grad if include_self else grad.masked_fill(_scattered(self, dim, index), 0)
        return g_self, grad.gather(dim, index)
    if reduce == "mean":
        n = ember.ones_like(self) if include_self else ember.zeros_like(self)
        n = n.scatter_add(dim, index, ember.ones_like(src))
        n = n.masked_fill(n == 0, 1)
        g_self = grad / n
        return (g_self if include_self else g_self.masked_fill(_scattered(self, dim, index), 0),
                g_self.gather(dim, index))
    if reduce == "prod":
        # d result / d x = result / x where x != 0; at zeros, the product of the others
        masked_self = self.masked_fill(self == 0, 1)
        masked_src = src.masked_fill(src == 0, 1)
        zeros_self = (self == 0).to(grad.dtype)
        zeros_src = ember.zeros_like(self).scatter_add(dim, index, (src == 0).to(grad.dtype))
        if include_self:
            zeros_src = zeros_src + zeros_self
        prod_nonzero = (masked_self if include_self else ember.ones_like(self)).scatter_reduce(
            dim, index, masked_src, "prod", include_self=True)
        g_self = ember.where(self == 0, ember.where(zeros_src == 1, grad * prod_nonzero, 0.0),
                         grad * result / masked_self)
        res_g = result.gather(dim, index)
        cnt = zeros_src.gather(dim, index)
        pn = prod_nonzero.gather(dim, index)
        gg = grad.gather(dim, index)
        g_src = ember.where(src == 0, ember.where(cnt == 1, gg * pn, 0.0), gg * res_g / masked_src)
        if not include_self:
            g_self = g_self.masked_fill(_scattered(self, dim, index), 0)
        return g_self, g_src
    # amax / amin: the gradient is shared evenly between the elements equal to the result
    value = result.gather(dim, index)
    self_is = (self == result).to(grad.dtype)
    src_is = (src == value).to(grad.dtype)
    n = (self_is if include_self else ember.zeros_like(self_is)).scatter_add(dim, index, src_is)
    g = grad / n.masked_fill(n == 0, 1)
    g_self = self_is * g if include_self else \
        (self_is * g).masked_fill(_scattered(self, dim, index), 0)
    return g_self, src_is * g.gather(dim, index)


def _scattered(self, dim, index):
    """Positions of self that receive at least one scattered value."""
    return ember.zeros_like(self, dtype=ember.bool).scatter(dim, index, True)


# -- linear algebra ----------------------------------------------------------------------------

def mH(t):
    return t.transpose(-2, -1).conj() if t.is_complex() else t.transpose(-2, -1)


def inv_backward(grad, inverse):
    ih = mH(inverse)
    return -(ih @ grad @ ih)


def linalg_det_backward(grad, det, A, LU, pivots):
    """d det(A) = det(A) A^{-H}; computed through a solve so singular A gives finite values when
    it can (PyTorch falls back to an SVD-based formula there; ember uses the pseudo-inverse)."""
    g = (grad * det.conj()).unsqueeze(-1).unsqueeze(-1)
    return g * mH(ember.linalg.pinv(A))


def slogdet_backward(grad_sign, grad_logabsdet, A, sign, LU, pivots):
    g = grad_logabsdet.unsqueeze(-1).unsqueeze(-1)
    return g * mH(ember.linalg.inv(A))


def cholesky_backward(grad, upper, L):
    """PyTorch's cholesky_backward: gA = L^{-H} Φ(L^H gL) L^{-1}, symmetrized."""
    if upper:
        L = mH(L)
        grad = mH(grad)
    phi = mH(L) @ grad
    phi = phi.tril()
    phi = phi - 0.5 * ember.diag_embed(phi.diagonal(0, -2, -1))
    eye = ember.eye(L.shape[-1], dtype=L.dtype, device=L.device)
    L_inv = ember.linalg.solve_triangular(L, eye, upper=False) if hasattr(ember.linalg, "solve_triangular") \
        else ember.linalg.inv(L)
    gA = mH(L_inv) @ phi @ L_inv
    return 0.5 * (gA + mH(gA))


@_formulas.takes_undefined_grads
def linalg_eigh_backward(gL, gV, L, V):
    """Real symmetric case: gA = V (diag(gL) + F ∘ (V^T gV)) V^T, F_ij = 1 / (λ_j - λ_i)."""
    out = None
    if gV is not None:
        diff = L.unsqueeze(-2) - L.unsqueeze(-1)
        n = L.shape[-1]
        eye = ember.eye(n, dtype=ember.bool, device=L.device)
        F = ember.where(eye, ember.zeros((), dtype=L.dtype), 1.0 / ember.where(eye, ember.ones((), dtype=L.dtype),
                                                                   diff))
        VhgV = mH(V) @ gV
        inner = F * (VhgV - mH(VhgV)) * 0.5
        out = inner
    if gL is not None:
        d = ember.diag_embed(gL)
        out = d if out is None else out + d
    if out is None:
        return None
    return V @ out @ mH(V)


@_formulas.takes_undefined_grads
def svd_backward(gU, gS, gVh, U, S, Vh, full_matrices):
    """PyTorch's svd_backward (reduced SVD; real and complex). In the complex case singular
    vectors are defined up to a phase e^{i phi} per pair, so the loss must not depend on it."""
    if full_matrices:  # as PyTorch's formula: the first k columns of U and rows of Vh
        k = S.shape[-1]
        U = U[..., :k]
        Vh = Vh[..., :k, :]
        gU = gU[..., :k] if gU is not None else None
        gVh = gVh[..., :k, :] if gVh is not None else None
    if gU is None and gVh is None:
        if gS is None:
            return None
        m, n = U.shape[-2], Vh.shape[-1]
        gS = gS.to(U.dtype)
        return U @ (gS.unsqueeze(-1) * Vh) if m >= n else (U * gS.unsqueeze(-2)) @ Vh
    m, n = U.shape[-2], Vh.shape[-1]
    is_complex = U.is_complex()
    UhgU = VhgV = None
    if gU is not None:
        UhgU = mH(U) @ gU
        UhgU = UhgU - mH(UhgU)
    if gVh is not None:
        VhgV = Vh @ mH(gVh)
        VhgV = VhgV - mH(VhgV)
    if is_complex:
        im_u = UhgU.diagonal(0, -2, -1).imag if UhgU is not None else ember.zeros_like(S)
        im_v = VhgV.diagonal(0, -2, -1).imag if VhgV is not None else ember.zeros_like(S)
        if not ember.allclose(im_u, -im_v, rtol=1e-2, atol=1e-2):
            raise RuntimeError("svd_backward: The singular vectors in the complex case are "
                               "specified up to multiplication by e^{i phi}. The specified loss "
                               "function depends on this phase term, making it ill-defined.")
    S2 = S * S
    k = S.shape[-1]
    eye = ember.eye(k, dtype=ember.bool, device=S.device)
    E = ember.where(eye, ember.ones((), dtype=S.dtype), S2.unsqueeze(-2) - S2.unsqueeze(-1))
    if gU is not None and gVh is not None:
        gA = (UhgU * S.unsqueeze(-2) + S.unsqueeze(-1) * VhgV) / E
    elif gU is not None:
        gA = (UhgU / E) * S.unsqueeze(-2)
    else:
        gA = S.unsqueeze(-1) * (VhgV / E)
    if gS is not None:
        gA = gA + ember.diag_embed(gS).to(gA.dtype)
    if is_complex and gU is not None:
        # the phase term: I o S^{-1} Im(diag(U^H gU)), i.e. half the skew part's diagonal / S
        gA = gA + ember.diag_embed(UhgU.diagonal(0, -2, -1) / (2 * S))
    if m > k and gU is not None:
        gA = U @ gA
        gUSinv = gU / S.unsqueeze(-2)
        gA = gA + gUSinv - U @ (mH(U) @ gUSinv)
        return gA @ Vh
    if n > k and gVh is not None:
        gA = gA @ Vh
        SinvgVh = gVh / S.unsqueeze(-1)
        gA = gA + SinvgVh - (SinvgVh @ mH(Vh)) @ Vh
        return U @ gA
    return U @ gA @ Vh


def linalg_qr_backward(gQ, gR, Q, R, mode):
    """PyTorch's linalg_qr_backward for m >= n (reduced, or complete when square):
    gA = (gQ + Q syminvadj(triu(gR R^H - Q^H gQ))) R^{-H}."""
    if mode == "r":
        raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when "
                           "mode='r'. Please use linalg.qr(A, mode='reduced') if you are going to "
                           "differentiate through linalg.qr.")
    m, n = Q.shape[-2], R.shape[-1]
    if m < n or (mode == "complete" and m > n):
        raise NotImplementedError("The derivative of linalg.qr is not implemented when "
                                  "mode='complete' and nrows > ncols, or when nrows < ncols.")
    M = (gR @ mH(R) - mH(Q) @ gQ).triu()
    # syminvadj: X + X^H less Re diag(X) (the real part only: complex Q R leaves the phase
    # of R's diagonal fixed)
    d = M.diagonal(0, -2, -1)
    M = M + mH(M) - ember.diag_embed(d.real.to(d.dtype) if d.is_complex() else d)
    gA = Q @ M + gQ
    # X R^H = gA  <=>  R X^H = gA^H
    return mH(ember.linalg.solve(R, mH(gA)))


def linalg_vector_norm_backward(grad, self, ord, result, dim, keepdim):
    if dim is not None and not keepdim and self.dim():
        dims = sorted(d % self.dim() for d in (dim if isinstance(dim, (list, tuple)) else [dim]))
        for d in dims:
            grad = grad.unsqueeze(d)
            result = result.unsqueeze(d)
    elif dim is None and not keepdim and self.dim():
        grad = grad.reshape([1] * self.dim())
        result = result.reshape([1] * self.dim())
    ord = float(ord)
    # PyTorch's norm_backward, operation for operation (the order of the products is what a
    # half or bfloat16 gradient rounds)
    if ord == 0.0:
        return ember.zeros_like(self)
    if ord == 1.0:
        return self.sgn() * grad
    if ord == 2.0:
        return grad * (self / result).masked_fill(result == 0, 0)
    if math.isinf(ord):
        # amax(abs(self))'s: the maxima (and NaNs) share the gradient
        self_abs = self.abs()
        mask = self_abs.eq(result).logical_or(self_abs.isnan())
        n = mask.sum(dim if dim is not None else list(range(self.dim())), keepdim=True) \
            if self.dim() else mask
        return self.sgn() * ((grad / n) * mask)
    if ord < 1.0:
        self_scaled = self.sgn() * self.abs().pow(ord - 1).masked_fill(self == 0, 0)
        return self_scaled * grad * result.pow(1 - ord)
    if ord < 2.0:
        self_scaled = self.sgn() * self.abs().pow(ord - 1)
    else:
        self_scaled = self * self.abs().pow(ord - 2)
    return self_scaled * (grad / result.pow(ord - 1)).masked_fill(result == 0, 0)


def linalg_solve_backward(grad, result, A, left):
    gB = ember.linalg.solve(mH(A), grad, left=left)
    if result.dim() == A.dim() - 1:  # a vector right-hand side (left=True only)
        return -(gB.unsqueeze(-1) @ mH(result.unsqueeze(-1))), gB
    gA = -(gB @ mH(result)) if left else -(mH(result) @ gB)
    return gA, gB


@_formulas.takes_undefined_grads
def linalg_eig_backward(gL, gV, L, V, self):
    """PyTorch's linalg_eig_backward (general case): with E_ij = conj(L_j - L_i),
    gA = V^{-H} (diag(gL) + (V^H gV - V^H V re(diag(V^H gV))) / E) V^H, real part for a real A."""
    if gL is None and gV is None:
        return None
    n = L.shape[-1]
    eye = ember.eye(n, dtype=ember.bool, device=L.device)
    if gV is not None:
        VhgV = mH(V) @ gV
        diag = VhgV.diagonal(0, -2, -1)
        if (diag.imag.abs() > 1e-4 * (1 + diag.abs())).any():
            raise RuntimeError("linalg_eig_backward: The eigenvectors in the complex case are "
                               "specified up to multiplication by e^{i phi}. The specified loss "
                               "function depends on this quantity, so it is ill-defined.")
        Lc = L.conj()
        Econj = ember.where(eye, ember.ones((), dtype=L.dtype), Lc.unsqueeze(-2) - Lc.unsqueeze(-1))
        gA = (VhgV - mH(V) @ (V * diag.real.to(V.dtype).unsqueeze(-2))) / Econj
        gA = ember.where(eye, ember.diag_embed(gL) if gL is not None else ember.zeros((), dtype=L.dtype), gA)
    else:
        gA = ember.diag_embed(gL)
    gA = ember.linalg.solve(mH(V), gA @ mH(V))
    return gA if self.is_complex() else gA.real


def linalg_lstsq_backward(grad_solution, grad_residuals, self, b, residuals):
    """The solution is pinv(A) B and the residuals |A X - B|^2 summed over rows: differentiate
    both through the pseudo-inverse."""
    with ember.enable_grad():
        a = self.detach().requires_grad_(True)
        bb = b.detach().requires_grad_(True)
        vector = bb.dim() != a.dim()
        B = bb.unsqueeze(-1) if vector else bb
        X = ember.linalg.pinv(a) @ B
        outs, grads = [X.squeeze(-1) if vector else X], [grad_solution]
        if residuals.numel():
            fit = a @ X - B
            r = (fit * fit).sum(-2)
            outs.append(r.squeeze(-1) if vector else r)
            grads.append(grad_residuals)
        ga, gb = ember.autograd.grad(outs, (a, bb), grads, allow_unused=True)
    return ga, gb



def pinv_backward(grad, pinvA, A):
    """PyTorch's pinv_backward, grouped to multiply the smallest matrices."""
    m, n = A.shape[-2], A.shape[-1]
    pinvAh, gradh = mH(pinvA), mH(grad)
    if m <= n:
        K = gradh @ pinvA
        KpinvAh = K @ pinvAh
        return (-mH(pinvA @ K) + KpinvAh - (A @ pinvA) @ KpinvAh
                + (pinvAh @ pinvA) @ (gradh - K @ A))
    K = pinvA @ gradh
    pinvAhK = pinvAh @ K
    return -mH(K @ pinvA) + (gradh - A @ K) @ pinvA @ pinvAh + pinvAhK - pinvAhK @ pinvA @ A


__all__ += ["linalg_eig_backward", "linalg_lstsq_backward", "pinv_backward"]


# -- issue 18: LU, triangular/Cholesky solves, Householder products, matrix_exp -------------------
# PyTorch's FunctionsManual formulas; householder_product, ormqr and lu_solve (for LU) differentiate
# a composite of differentiable ember ops instead of PyTorch's hand-derived expressions.

def _pad_to(t, rows, cols):
    """t zero-padded at the bottom/right to (..., rows, cols)."""
    r, c = t.shape[-2], t.shape[-1]
    if c < cols:
        t = ember.cat([t, t.new_zeros(tuple(t.shape[:-1]) + (cols - c,))], -1)
    if r < rows:
        t = ember.cat([t, t.new_zeros(tuple(t.shape[:-2]) + (rows - r, cols))], -2)
    return t


def _solve_tri(A, B, upper, left=True, unitriangular=False):
    return ember.linalg.solve_triangular(A, B, upper=upper, left=left, unitriangular=unitriangular)


def linalg_lu_backward(gL, gU, P, L, U, pivot):
    """PyTorch's linalg_lu_backward (square, wide and tall cases)."""
    if gL is None and gU is None:
        return None
    m, n = L.shape[-2], U.shape[-1]
    k = min(m, n)
    if m == n:
        # gA = P L^{-H} [L^H gL o 1_L + gU U^H o 1_U] U^{-H}
        gA = (mH(L) @ gL).tril(-1) if gL is not None else None
        if gU is not None:
            t = (gU @ mH(U)).triu()
            gA = t if gA is None else gA + t
        gA = _solve_tri(mH(U), gA, upper=False, left=False)
        gA = _solve_tri(mH(L), gA, upper=True, left=True, unitriangular=True)
        return P @ gA if pivot else gA
    if m < n:
        U1 = U[..., :, :k]
        gA = mH(L) @ gL if gL is not None else None
        if gU is not None:
            t = gU.triu() @ mH(U)
            gA = -t if gA is None else gA - t
        gA = _solve_tri(mH(U1), gA.tril(-1), upper=False, left=False)
        if gU is not None:
            gA = ember.cat([gA + gU[..., :, :k].triu(), gU[..., :, k:]], -1)
        gA = _solve_tri(mH(L), gA, upper=True, left=True, unitriangular=True)
        if gU is None:
            gA = ember.cat([gA, ember.zeros_like(U[..., :, k:])], -1)
        return P @ gA if pivot else gA
    L1 = L[..., :k, :]
    gA = gU @ mH(U) if gU is not None else None
    if gL is not None:
        t = mH(L) @ gL.tril(-1)
        gA = -t if gA is None else gA - t
    gA = _solve_tri(mH(L1), gA.triu(), upper=True, left=True, unitriangular=True)
    if gL is not None:
        gA = ember.cat([gA + gL[..., :k, :].tril(-1), gL[..., k:, :]], -2)
    gA = _solve_tri(mH(U), gA, upper=False, left=False)
    if gL is None:
        gA = ember.cat([gA, ember.zeros_like(L[..., k:, :])], -2)
    return P @ gA if pivot else gA


def lu_factor_ex_backward(grad, LU, pivots, pivot):
    P, L, U = ember.lu_unpack(LU, pivots, True, pivot)
    k = min(LU.shape[-2], LU.shape[-1])
    return linalg_lu_backward(grad[..., :, :k].tril(-1), grad[..., :k, :].triu(), P, L, U, pivot)


def lu_unpack_backward(gL, gU, sizes):
    """LU_data's gradient: L's strict lower and U's upper triangle, placed where they came from."""
    if gL is None and gU is None:
        return None
    m, n = sizes[-2], sizes[-1]
    out = None
    if gL is not None:
        out = _pad_to(gL.tril(-1), m, n)
    if gU is not None:
        t = _pad_to(gU.triu(), m, n)
        out = t if out is None else out + t
    return out


def linalg_solve_triangular_backward(grad, A, X, upper, left, unitriangular, grad_input_mask):
    gB = _solve_tri(mH(A), grad, upper=not upper, left=left, unitriangular=unitriangular)
    gA = None
    if grad_input_mask[0]:
        gA = -(gB @ mH(X)) if left else -(mH(X) @ gB)
        gA = gA.triu(int(unitriangular)) if upper else gA.tril(-int(unitriangular))
    return gA, (gB if grad_input_mask[1] else None)


def triangular_solve_backward(grad_x, grad_m, b, a, x, upper, transpose, unitriangular,
                              grad_input_mask):
    gb = ga = None
    if grad_x is not None:
        # op(A)^H Y = grad_x, op(A) = A^T when transpose
        gb = _solve_tri(a.conj() if transpose else mH(a), grad_x,
                        upper=upper if transpose else not upper, unitriangular=unitriangular)
        if grad_input_mask[1]:
            ga = -(x.conj() @ gb.transpose(-2, -1)) if transpose else -(gb @ mH(x))
            ga = ga.triu(int(unitriangular)) if upper else ga.tril(-int(unitriangular))
    if grad_m is not None and grad_input_mask[1]:
        ga = grad_m if ga is None else ga + grad_m
    if gb is None and grad_input_mask[0]:
        gb = ember.zeros_like(b)
    return gb, ga


def cholesky_solve_backward(grad, self, input2, result, upper, grad_input_mask):
    g_self = ember.cholesky_solve(grad, input2, upper)
    g_in = None
    if grad_input_mask[1]:
        common = g_self @ mH(result)
        common = common + mH(common)
        g_in = -(input2 @ common) if upper else -(common @ input2)
    return (g_self if grad_input_mask[0] else None), g_in


def cholesky_inverse_backward(grad, L, upper, inverse):
    common = grad + mH(grad)
    common = inverse @ (common @ inverse)
    return -(L @ common) if upper else -(common @ L)


def linalg_matrix_exp_differential(self, grad, adjoint):
    """exp([[A^H, G], [0, A^H]]) holds the adjoint differential in its top-right block."""
    n = self.shape[-1]
    a = mH(self) if adjoint else self
    top = ember.cat([a, grad], -1)
    bottom = ember.cat([ember.zeros_like(a), a], -1)
    big = ember.linalg.matrix_exp(ember.cat([top, bottom], -2))
    return big[..., :n, n:]


def _householder_q(v, tau):
    """Q = H_1 ... H_k (m x m) in differentiable ember ops, H_i = I - tau_i w_i w_i^H."""
    m, k = v.shape[-2], tau.shape[-1]
    eye = ember.eye(m, dtype=v.dtype, device=v.device)
    W = v[..., :, :k].tril(-1) + eye[:, :k]
    q = eye.expand(tuple(v.shape[:-2]) + (m, m))
    for i in reversed(range(k)):
        w = W[..., :, i:i + 1]
        q = q - tau[..., i:i + 1].unsqueeze(-1) * (w @ (mH(w) @ q))
    return q


def _vjp(fn, inputs, grad):
    """The gradients of fn(*inputs) for ``grad``, by differentiating fn's ember ops."""
    with ember.enable_grad():
        xs = [x.detach().requires_grad_(True) for x in inputs]
        out = fn(*xs)
        return ember.autograd.grad([out], xs, [grad], allow_unused=True)


def householder_product_backward(grad, result, input, tau):
    n = input.shape[-1]
    return _vjp(lambda v, t: _householder_q(v, t)[..., :, :n], (input, tau), grad)


def ormqr_backward(grad, result, self, input2, input3, left, transpose, grad_input_mask):
    def f(v, t, c):
        q = _householder_q(v, t)
        if transpose:
            q = mH(q)
        return q @ c if left else c @ q
    return _vjp(f, (self, input2, input3), grad)


def linalg_lu_solve_LU(grad, LU, pivots, X, left, adjoint):
    """LU's gradient: X = op(A)^{-1} B (or B op(A)^{-1}) with A = P L U written in lu_unpack and
    triangular solves, differentiated with B held fixed (B rebuilt from the solution X)."""
    with ember.no_grad():
        P, L, U = ember.lu_unpack(LU, pivots)
        A = P @ L @ U
        B = (mH(A) @ X if adjoint else A @ X) if left else (X @ mH(A) if adjoint else X @ A)

    def f(lu):
        P, L, U = ember.lu_unpack(lu, pivots)
        if left and not adjoint:  # X = U^{-1} L^{-1} P^T B
            Y = _solve_tri(L, P.mT @ B, upper=False, unitriangular=True)
            return _solve_tri(U, Y, upper=True)
        if left:  # A^H X = B:  X = P L^{-H} U^{-H} B
            Y = _solve_tri(mH(U), B, upper=False)
            return P @ _solve_tri(mH(L), Y, upper=True, unitriangular=True)
        if not adjoint:  # X A = B:  X = B U^{-1} L^{-1} P^T
            Y = _solve_tri(U, B, upper=True, left=False)
            return _solve_tri(L, Y, upper=False, left=False, unitriangular=True) @ P.mT
        # X A^H = B:  X = B P L^{-H} U^{-H}
        Y = _solve_tri(mH(L), B @ P, upper=True, left=False, unitriangular=True)
        return _solve_tri(mH(U), Y, upper=False, left=False)
    return _vjp(f, (LU,), grad)[0]


__all__ += ["linalg_lu_backward", "lu_factor_ex_backward", "lu_unpack_backward",
            "linalg_solve_triangular_backward", "triangular_solve_backward",
            "cholesky_solve_backward", "cholesky_inverse_backward",
            "linalg_matrix_exp_differential", "householder_product_backward", "ormqr_backward",
            "linalg_lu_solve_LU"]
