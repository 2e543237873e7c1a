"""PyTorch's ``torch._lobpcg``: ``lobpcg``, the Locally Optimal Block Preconditioned Conjugate
Gradient eigensolver for the k largest (or smallest) eigenpairs of a symmetric (generalized)
eigenproblem, written in ember ops, with its backward for the standard (``B is None``) case.

Methods: ``"basic"`` (Knyazev 2001) and ``"ortho"`` (Stathopoulos and Wu 2002; Duersch et al.
2018, arXiv:1704.07458). The random initial ``X`` comes from ``ember.randn``, so with ``X`` not
given the iterates differ from PyTorch's for the same seed; converged eigenpairs agree to the
tolerance (eigenvectors up to a sign)."""
import ember

from . import _linalg_utils as _utils
from .overrides import handle_torch_function, has_torch_function

__all__ = ["lobpcg"]


def _symeig_backward_complete_eigenspace(D_grad, U_grad, A, D, U):
    # F[i, j] = 1 / (d_j - d_i) off the diagonal, 0 on it
    F = D.unsqueeze(-2) - D.unsqueeze(-1)
    F.diagonal(dim1=-2, dim2=-1).fill_(float("inf"))
    F.pow_(-1)
    Ut = U.mT.contiguous()
    return ember.matmul(U, ember.matmul(ember.diag_embed(D_grad) + ember.matmul(Ut, U_grad) * F, Ut))


def _polynomial_coefficients_given_roots(roots):
    """Coefficients (a_0, ..., a_n == 1) of prod_i (x - r_i) for the (batched) ``roots``."""
    poly_order = roots.shape[-1]
    poly_coeffs_shape = list(roots.shape)
    # two extra slots: a leading 1 that shifting multiplies by x, and the trailing a_n == 1
    poly_coeffs_shape[-1] += 2
    poly_coeffs = roots.new_zeros(poly_coeffs_shape)
    poly_coeffs[..., 0] = 1
    poly_coeffs[..., -1] = 1
    for i in range(1, poly_order + 1):
        # in place would break autograd's version check when the roots require grad
        poly_coeffs_new = poly_coeffs.clone() if roots.requires_grad else poly_coeffs
        out = poly_coeffs_new.narrow(-1, poly_order - i, i + 1)
        out -= roots.narrow(-1, i - 1, 1) * poly_coeffs.narrow(-1, poly_order - i + 1, i + 1)
        poly_coeffs = poly_coeffs_new
    return poly_coeffs.narrow(-1, 1, poly_order + 1)


def _polynomial_value(poly, x, zero_power, transition):
    """poly(x) by Horner's rule; ``transition(acc, x, a_k)`` is one step ``x * acc + a_k * x^0``
    for whatever x^0 (``zero_power``) means for x."""
    res = zero_power.clone()
    for k in range(poly.size(-1) - 2, -1, -1):
        res = transition(res, x, poly[..., k])
    return res


def _matrix_polynomial_value(poly, x, zero_power=None):
    """poly(x) for the (batched) square matrix x."""
    def transition(curr_poly_val, x, poly_coeff):
        res = x.matmul(curr_poly_val)
        res.diagonal(dim1=-2, dim2=-1).add_(poly_coeff.unsqueeze(-1))
        return res

    if zero_power is None:
        zero_power = ember.eye(x.size(-1), x.size(-1), dtype=x.dtype, device=x.device).view(
            *([1] * len(list(x.shape[:-2]))), x.size(-1), x.size(-1))
    return _polynomial_value(poly, x, zero_power, transition)


def _vector_polynomial_value(poly, x, zero_power=None):
    """poly(x) elementwise for the (batched) vector x."""
    def transition(curr_poly_val, x, poly_coeff):
        return ember.addcmul(poly_coeff.unsqueeze(-1), x, curr_poly_val)

    if zero_power is None:
        zero_power = x.new_ones(1).expand(x.shape)
    return _polynomial_value(poly, x, zero_power, transition)


def _symeig_backward_partial_eigenspace(D_grad, U_grad, A, D, U, largest):
    # The k eigenpairs span only part of the space: the gradient's component in U's orthogonal
    # complement solves a Sylvester equation, which the characteristic polynomial of D evaluated
    # at A reduces to one Cholesky solve (a basis of the complement is drawn at random; the
    # result does not depend on which).
    Ut = U.mT.contiguous()
    proj_U_ortho = -U.matmul(Ut)
    proj_U_ortho.diagonal(dim1=-2, dim2=-1).add_(1)
    # a private generator, so that backward leaves the global random state alone
    gen = ember.Generator(A.device)
    U_ortho = proj_U_ortho.matmul(ember.randn((*A.shape[:-1], A.size(-1) - D.size(-1)),
                                              dtype=A.dtype, device=A.device, generator=gen))
    U_ortho_t = U_ortho.mT.contiguous()

    chr_poly_D = _polynomial_coefficients_given_roots(D)
    U_grad_projected = U_grad
    series_acc = U_grad_projected.new_zeros(U_grad_projected.shape)
    for k in range(1, chr_poly_D.size(-1)):
        poly_D = _vector_polynomial_value(chr_poly_D[..., k:], D)
        series_acc += U_grad_projected * poly_D.unsqueeze(-2)
        U_grad_projected = A.matmul(U_grad_projected)

    chr_poly_D_at_A = _matrix_polynomial_value(chr_poly_D, A)
    chr_poly_D_at_A_to_U_ortho = ember.matmul(U_ortho_t, ember.matmul(chr_poly_D_at_A, U_ortho))
    # p_D(A) restricted to the complement is definite; its sign is (-1)^k for the largest k
    chr_poly_D_at_A_to_U_ortho_sign = -1 if (largest and (k % 2 == 1)) else +1
    chr_poly_D_at_A_to_U_ortho_L = ember.linalg.cholesky(
        chr_poly_D_at_A_to_U_ortho_sign * chr_poly_D_at_A_to_U_ortho)

    res = _symeig_backward_complete_eigenspace(D_grad, U_grad, A, D, U)
    res -= U_ortho.matmul(chr_poly_D_at_A_to_U_ortho_sign * ember.cholesky_solve(
        U_ortho_t.matmul(series_acc), chr_poly_D_at_A_to_U_ortho_L)).matmul(Ut)
    return res


def _symeig_backward(D_grad, U_grad, A, D, U, largest):
    if U.size(-1) == U.size(-2):
        return _symeig_backward_complete_eigenspace(D_grad, U_grad, A, D, U)
    return _symeig_backward_partial_eigenspace(D_grad, U_grad, A, D, U, largest)


class LOBPCGAutogradFunction(ember.autograd.Function):
    @staticmethod
    def forward(ctx, A, k=None, B=None, X=None, n=None, iK=None, niter=None, tol=None,
                largest=None, method=None, tracker=None, ortho_iparams=None, ortho_fparams=None,
                ortho_bparams=None):
        # the backward's matrix products want dense contiguous A and B
        A = A.contiguous() if (not A.is_sparse) else A
        if B is not None:
            B = B.contiguous() if (not B.is_sparse) else B
        D, U = _lobpcg(A, k, B, X, n, iK, niter, tol, largest, method, tracker,
                       ortho_iparams, ortho_fparams, ortho_bparams)
        ctx.save_for_backward(A, B, D, U)
        ctx.largest = largest
        return D, U

    @staticmethod
    def backward(ctx, D_grad, U_grad):
        A_grad = B_grad = None
        grads = [None] * 14
        A, B, D, U = ctx.saved_tensors
        largest = ctx.largest
        if A.is_sparse or (B is not None and B.is_sparse and ctx.needs_input_grad[2]):
            raise ValueError("lobpcg.backward does not support sparse input yet. "
                             "Note that lobpcg.forward does though.")
        if (A.dtype in (ember.complex64, ember.complex128)
                or B is not None and B.dtype in (ember.complex64, ember.complex128)):
            raise ValueError("lobpcg.backward does not support complex input yet. "
                             "Note that lobpcg.forward does though.")
        if B is not None:
            raise ValueError("lobpcg.backward does not support backward with B != I yet.")
        if largest is None:
            largest = True
        if B is None:
            A_grad = _symeig_backward(D_grad, U_grad, A, D, U, largest)
        grads[0] = A_grad
        grads[2] = B_grad
        return tuple(grads)


def lobpcg(A, k=None, B=None, X=None, n=None, iK=None, niter=None, tol=None, largest=None,
           method=None, tracker=None, ortho_iparams=None, ortho_fparams=None, ortho_bparams=None):
    """The k largest (``largest=True``, the default) or smallest eigenvalues ``E`` (size
    ``(*, k)``) and eigenvectors ``X`` (size ``(*, m, k)``) of the symmetric positive definite
    generalized problem ``A X = B X diag(E)`` (``B`` the identity when not given), by LOBPCG.

    ``X`` (``(*, m, n)``, ``k <= n``) is the initial approximation (random ``(m, n)`` with ``n``
    defaulting to ``k`` when not given), ``iK`` a preconditioner, ``niter`` the iteration limit
    (1000; -1 for none), ``tol`` the residual tolerance (sqrt of the dtype's eps), ``method``
    ``"ortho"`` (default) or ``"basic"``, ``tracker(worker)`` called after each step (setting
    ``worker.bvars["force_stop"] = True`` stops), ``ortho_*params`` the ortho method's
    parameters. When A or B requires grad they are symmetrized, ``(A + A^T) / 2``, first; the
    backward supports dense real A with ``B=None``. Requires ``m >= 3 n``."""
    tensor_ops = (A, B, X, iK)
    if not set(map(type, tensor_ops)).issubset((ember.Tensor, type(None))) and has_torch_function(tensor_ops):
        return handle_torch_function(
            lobpcg, tensor_ops, A, k=k, B=B, X=X, n=n, iK=iK, niter=niter, tol=tol,
            largest=largest, method=method, tracker=tracker, ortho_iparams=ortho_iparams,
            ortho_fparams=ortho_fparams, ortho_bparams=ortho_bparams)

    if A.requires_grad or (B is not None and B.requires_grad):
        # A's gradient is only meaningful for symmetric A; symmetrizing first makes A.grad
        # symmetric too, so that A - t * A.grad stays symmetric in an optimizer step
        A_sym = (A + A.mT) / 2
        B_sym = (B + B.mT) / 2 if (B is not None) else None
        return LOBPCGAutogradFunction.apply(A_sym, k, B_sym, X, n, iK, niter, tol, largest,
                                            method, tracker, ortho_iparams, ortho_fparams,
                                            ortho_bparams)
    return _lobpcg(A, k, B, X, n, iK, niter, tol, largest, method, tracker,
                   ortho_iparams, ortho_fparams, ortho_bparams)


def _lobpcg(A, k=None, B=None, X=None, n=None, iK=None, niter=None, tol=None, largest=None,
            method=None, tracker=None, ortho_iparams=None, ortho_fparams=None, ortho_bparams=None):
    if A.shape[-2] != A.shape[-1]:
        raise AssertionError(f"A must be square, got shape {A.shape}")
    if B is not None and A.shape != B.shape:
        raise AssertionError(f"A and B must have same shape, got {A.shape} vs {B.shape}")

    dtype = _utils.get_floating_dtype(A)
    device = A.device
    if tol is None:
        feps = {ember.float32: 1.2e-07, ember.float64: 2.23e-16}[dtype]
        tol = feps**0.5

    m = A.shape[-1]
    k = (1 if X is None else X.shape[-1]) if k is None else k
    n = (k if n is None else n) if X is None else X.shape[-1]
    if m < 3 * n:
        raise ValueError(
            f"LOBPCG algorithm is not applicable when the number of A rows (={m})"
            f" is smaller than 3 x the number of requested eigenpairs (={n})")

    method = "ortho" if method is None else method
    iparams = {"m": m, "n": n, "k": k, "niter": 1000 if niter is None else niter}
    fparams = {"tol": tol}
    bparams = {"largest": True if largest is None else largest}
    if method == "ortho":
        if ortho_iparams is not None:
            iparams.update(ortho_iparams)
        if ortho_fparams is not None:
            fparams.update(ortho_fparams)
        if ortho_bparams is not None:
            bparams.update(ortho_bparams)
        iparams["ortho_i_max"] = iparams.get("ortho_i_max", 3)
        iparams["ortho_j_max"] = iparams.get("ortho_j_max", 3)
        fparams["ortho_tol"] = fparams.get("ortho_tol", tol)
        fparams["ortho_tol_drop"] = fparams.get("ortho_tol_drop", tol)
        fparams["ortho_tol_replace"] = fparams.get("ortho_tol_replace", tol)
        bparams["ortho_use_drop"] = bparams.get("ortho_use_drop", False)

    if len(A.shape) > 2:
        # a batch runs one worker per matrix
        N = 1
        for size in A.shape[:-2]:
            N *= size
        bA = A.reshape((N,) + A.shape[-2:])
        bB = B.reshape((N,) + A.shape[-2:]) if B is not None else None
        bX = X.reshape((N,) + X.shape[-2:]) if X is not None else None
        bE = ember.empty((N, k), dtype=dtype, device=device)
        bXret = ember.empty((N, m, k), dtype=dtype, device=device)
        for i in range(N):
            A_ = bA[i]
            B_ = bB[i] if bB is not None else None
            X_ = ember.randn((m, n), dtype=dtype, device=device) if bX is None else bX[i]
            if not (len(X_.shape) == 2 and X_.shape == (m, n)):
                raise AssertionError(f"X_ shape mismatch: got {X_.shape}, expected {(m, n)}")
            iparams["batch_index"] = i
            worker = LOBPCG(A_, B_, X_, iK, iparams, fparams, bparams, method, tracker)
            worker.run()
            bE[i] = worker.E[:k]
            bXret[i] = worker.X[:, :k]
        return bE.reshape(A.shape[:-2] + (k,)), bXret.reshape(A.shape[:-2] + (m, k))

    X = ember.randn((m, n), dtype=dtype, device=device) if X is None else X
    if not (len(X.shape) == 2 and X.shape == (m, n)):
        raise AssertionError(f"X shape mismatch: got {X.shape}, expected {(m, n)}")
    worker = LOBPCG(A, B, X, iK, iparams, fparams, bparams, method, tracker)
    worker.run()
    return worker.E[:k], worker.X[:, :k]


class LOBPCG:
    """Worker class of LOBPCG methods: the iteration state (``iparams``/``fparams``/``bparams``
    inputs, ``ivars``/``fvars``/``bvars``/``tvars`` iteration variables, ``E``, ``X``, ``S``,
    ``R``) that a ``tracker`` sees."""

    def __init__(self, A, B, X, iK, iparams, fparams, bparams, method, tracker):
        self.A = A
        self.B = B
        self.iK = iK
        self.iparams = iparams
        self.fparams = fparams
        self.bparams = bparams
        self.method = method
        self.tracker = tracker
        m = iparams["m"]
        n = iparams["n"]
        self.X = X
        self.E = ember.zeros((n,), dtype=X.dtype, device=X.device)
        self.R = ember.zeros((m, n), dtype=X.dtype, device=X.device)
        # the search subspace [X, P, W]
        self.S = ember.zeros((m, 3 * n), dtype=X.dtype, device=X.device)
        self.tvars = {}
        self.ivars = {"istep": 0}
        self.fvars = {"_": 0.0}
        self.bvars = {"_": False}

    def __str__(self):
        lines = ["LOBPCG:"]
        lines += [f"  iparams={self.iparams}"]
        lines += [f"  fparams={self.fparams}"]
        lines += [f"  bparams={self.bparams}"]
        lines += [f"  ivars={self.ivars}"]
        lines += [f"  fvars={self.fvars}"]
        lines += [f"  bvars={self.bvars}"]
        lines += [f"  tvars={self.tvars}"]
        lines += [f"  A={self.A}"]
        lines += [f"  B={self.B}"]
        lines += [f"  iK={self.iK}"]
        lines += [f"  X={self.X}"]
        lines += [f"  E={self.E}"]
        return "".join(line + "\n" for line in lines)

    def update(self):
        """Set and update iteration variables."""
        if self.ivars["istep"] == 0:
            X_norm = float(ember.norm(self.X))
            iX_norm = X_norm**-1
            A_norm = float(ember.norm(_utils.matmul(self.A, self.X))) * iX_norm
            B_norm = float(ember.norm(_utils.matmul(self.B, self.X))) * iX_norm
            self.fvars["X_norm"] = X_norm
            self.fvars["A_norm"] = A_norm
            self.fvars["B_norm"] = B_norm
            self.ivars["iterations_left"] = self.iparams["niter"]
            self.ivars["converged_count"] = 0
            self.ivars["converged_end"] = 0
        if self.method == "ortho":
            self._update_ortho()
        else:
            self._update_basic()
        self.ivars["iterations_left"] = self.ivars["iterations_left"] - 1
        self.ivars["istep"] = self.ivars["istep"] + 1

    def update_residual(self):
        """Update residual R from A, B, X, E."""
        mm = _utils.matmul
        self.R = mm(self.A, self.X) - mm(self.B, self.X) * self.E

    def update_converged_count(self):
        """The number of converged eigenpairs by the backward stable criterion of Sec 4.3 of
        [DuerschEtal2018]; users may redefine it for custom criteria."""
        prev_count = self.ivars["converged_count"]
        tol = self.fparams["tol"]
        A_norm = self.fvars["A_norm"]
        B_norm = self.fvars["B_norm"]
        E, X, R = self.E, self.X, self.R
        rerr = ember.norm(R, 2, (0,)) / (
            ember.norm(X, 2, (0,)) * (A_norm + ember.abs(E[: X.shape[-1]]) * B_norm))
        converged = rerr < tol
        count = 0
        for b in converged:
            if not b:
                # the count is of the leading converged pairs: later ones may converge early
                break
            count += 1
        if count < prev_count:
            raise AssertionError(
                f"the number of converged eigenpairs (was {prev_count}, got {count}) cannot decrease")
        self.ivars["converged_count"] = count
        self.tvars["rerr"] = rerr
        return count

    def stop_iteration(self):
        """True to stop iterating; a tracker can force it with ``bvars['force_stop'] = True``."""
        return (self.bvars.get("force_stop", False)
                or self.ivars["iterations_left"] == 0
                or self.ivars["converged_count"] >= self.iparams["k"])

    def run(self):
        """Run LOBPCG iterations."""
        self.update()
        if self.tracker is not None:
            self.call_tracker()
        while not self.stop_iteration():
            self.update()
            if self.tracker is not None:
                self.call_tracker()

    def call_tracker(self):
        """Hand the worker to the user's tracker."""
        self.tracker(self)

    def _update_basic(self):
        """Update or initialize iteration variables when ``method == "basic"``."""
        mm = ember.matmul
        ns = self.ivars["converged_end"]
        nc = self.ivars["converged_count"]
        n = self.iparams["n"]
        largest = self.bparams["largest"]

        if self.ivars["istep"] == 0:
            Ri = self._get_rayleigh_ritz_transform(self.X)
            M = _utils.qform(_utils.qform(self.A, self.X), Ri)
            E, Z = _utils.symeig(M, largest)
            self.X[:] = mm(self.X, mm(Ri, Z))
            self.E[:] = E
            np = 0
            self.update_residual()
            nc = self.update_converged_count()
            self.S[..., :n] = self.X
            W = _utils.matmul(self.iK, self.R)
            self.ivars["converged_end"] = ns = n + np + W.shape[-1]
            self.S[:, n + np: ns] = W
        else:
            S_ = self.S[:, nc:ns]
            Ri = self._get_rayleigh_ritz_transform(S_)
            M = _utils.qform(_utils.qform(self.A, S_), Ri)
            E_, Z = _utils.symeig(M, largest)
            self.X[:, nc:] = mm(S_, mm(Ri, Z[:, : n - nc]))
            self.E[nc:] = E_[: n - nc]
            P = mm(S_, mm(Ri, Z[:, n: 2 * n - nc]))
            np = P.shape[-1]
            self.update_residual()
            nc = self.update_converged_count()
            self.S[..., :n] = self.X
            self.S[:, n: n + np] = P
            W = _utils.matmul(self.iK, self.R[:, nc:])
            self.ivars["converged_end"] = ns = n + np + W.shape[-1]
            self.S[:, n + np: ns] = W

    def _update_ortho(self):
        """Update or initialize iteration variables when ``method == "ortho"``."""
        mm = ember.matmul
        ns = self.ivars["converged_end"]
        nc = self.ivars["converged_count"]
        n = self.iparams["n"]
        largest = self.bparams["largest"]

        if self.ivars["istep"] == 0:
            Ri = self._get_rayleigh_ritz_transform(self.X)
            M = _utils.qform(_utils.qform(self.A, self.X), Ri)
            # E stays zero until the first update, as in PyTorch (the residual uses it)
            _E, Z = _utils.symeig(M, largest)
            self.X = mm(self.X, mm(Ri, Z))
            self.update_residual()
            np = 0
            nc = self.update_converged_count()
            self.S[:, :n] = self.X
            W = self._get_ortho(self.R, self.X)
            ns = self.ivars["converged_end"] = n + np + W.shape[-1]
            self.S[:, n + np: ns] = W
        else:
            S_ = self.S[:, nc:ns]
            # S_ is B-orthonormal, so Rayleigh-Ritz needs no transform
            E_, Z = _utils.symeig(_utils.qform(self.A, S_), largest)
            self.X[:, nc:] = mm(S_, Z[:, : n - nc])
            self.E[nc:] = E_[: n - nc]
            P = mm(S_, mm(Z[:, n - nc:], _utils.basis(Z[: n - nc, n - nc:].mT)))
            np = P.shape[-1]
            self.update_residual()
            nc = self.update_converged_count()
            self.S[:, :n] = self.X
            self.S[:, n: n + np] = P
            W = self._get_ortho(self.R[:, nc:], self.S[:, : n + np])
            ns = self.ivars["converged_end"] = n + np + W.shape[-1]
            self.S[:, n + np: ns] = W

    def _get_rayleigh_ritz_transform(self, S):
        """The upper-triangular Ri that reduces (S^T A S) C = (S^T B S) C E to the standard
        problem (Ri^T S^T A S Ri) Z = Z E with C = Ri Z ([DuerschEtal2018]'s Rayleigh-Ritz,
        with the diagonal scalings as elementwise products)."""
        B = self.B
        SBS = _utils.qform(B, S)
        d_row = SBS.diagonal(0, -2, -1) ** -0.5
        d_col = d_row.reshape(d_row.shape[0], 1)
        R = ember.linalg.cholesky((SBS * d_row) * d_col, upper=True)
        return ember.linalg.solve_triangular(R, d_row.diag_embed(), upper=True, left=False)

    def _get_svqb(self, U, drop, tau):
        """B-orthonormal columns spanning U (Algorithm 4 of [DuerschPhD2015]); with ``drop``,
        columns whose contribution to the span is under ``tau`` are dropped."""
        if ember.numel(U) == 0:
            return U
        UBU = _utils.qform(self.B, U)
        d = UBU.diagonal(0, -2, -1)
        # zero columns of U would make the scaling below divide by zero: drop them first
        nz = ember.where(abs(d) != 0.0)
        if len(nz) != 1:
            raise AssertionError(f"expected nz to have length 1, got {nz}")
        if len(nz[0]) < len(d):
            U = U[:, nz[0]]
            if ember.numel(U) == 0:
                return U
            UBU = _utils.qform(self.B, U)
            d = UBU.diagonal(0, -2, -1)
            nz = ember.where(abs(d) != 0.0)
            if len(nz[0]) != len(d):
                raise AssertionError(f"expected nz[0] length {len(d)}, got {len(nz[0])}")
        d_col = (d**-0.5).reshape(d.shape[0], 1)
        DUBUD = (UBU * d_col) * d_col.mT
        E, Z = _utils.symeig(DUBUD)
        t = tau * abs(E).max()
        if drop:
            keep = ember.where(E > t)
            if len(keep) != 1:
                raise AssertionError(f"expected keep to have length 1, got {keep}")
            E = E[keep[0]]
            Z = Z[:, keep[0]]
            d_col = d_col[keep[0]]
        else:
            E[(ember.where(E < t))[0]] = t
        return ember.matmul(U * d_col.mT, Z * E**-0.5)

    def _get_ortho(self, U, V):
        """B-orthonormal columns spanning U and B-orthogonal to V (Algorithm 3 of
        [DuerschPhD2015], Algorithm 6 with ``ortho_use_drop``); empty when U lies in V's span."""
        mm = ember.matmul
        mm_B = _utils.matmul
        m = self.iparams["m"]
        tau_ortho = self.fparams["ortho_tol"]
        tau_drop = self.fparams["ortho_tol_drop"]
        tau_replace = self.fparams["ortho_tol_replace"]
        i_max = self.iparams["ortho_i_max"]
        j_max = self.iparams["ortho_j_max"]
        use_drop = self.bparams["ortho_use_drop"]

        # the previous call's diagnostics
        for vkey in list(self.fvars.keys()):
            if vkey.startswith("ortho_") and vkey.endswith("_rerr"):
                self.fvars.pop(vkey)
        self.ivars.pop("ortho_i", 0)
        self.ivars.pop("ortho_j", 0)

        BV_norm = ember.norm(mm_B(self.B, V))
        BU = mm_B(self.B, U)
        VBU = mm(V.mT, BU)
        i = j = 0
        for i in range(i_max):
            U = U - mm(V, VBU)
            drop = False
            tau_svqb = tau_drop
            for j in range(j_max):
                if use_drop:
                    U = self._get_svqb(U, drop, tau_svqb)
                    drop = True
                    tau_svqb = tau_replace
                else:
                    U = self._get_svqb(U, False, tau_replace)
                if ember.numel(U) == 0:
                    # all initial U columns are B-collinear to V
                    self.ivars["ortho_i"] = i
                    self.ivars["ortho_j"] = j
                    return U
                BU = mm_B(self.B, U)
                UBU = mm(U.mT, BU)
                U_norm = ember.norm(U)
                BU_norm = ember.norm(BU)
                R = UBU - ember.eye(UBU.shape[-1], device=UBU.device, dtype=UBU.dtype)
                R_norm = ember.norm(R)
                rerr = float(R_norm) * float(BU_norm * U_norm) ** -1
                self.fvars[f"ortho_UBUmI_rerr[{i}, {j}]"] = rerr
                if rerr < tau_ortho:
                    break
            VBU = mm(V.mT, BU)
            VBU_norm = ember.norm(VBU)
            U_norm = ember.norm(U)
            rerr = float(VBU_norm) * float(BV_norm * U_norm) ** -1
            self.fvars[f"ortho_VBU_rerr[{i}]"] = rerr
            if rerr < tau_ortho:
                break
            if m < U.shape[-1] + V.shape[-1]:
                B = self.B
                if B is None:
                    raise AssertionError("B must not be None")
                raise ValueError(
                    "Overdetermined shape of U:"
                    f" #B-cols(={B.shape[-1]}) >= #U-cols(={U.shape[-1]}) + #V-cols(={V.shape[-1]}) must hold")
        self.ivars["ortho_i"] = i
        self.ivars["ortho_j"] = j
        return U
