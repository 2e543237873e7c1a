"""Parametrizations built on ``parametrize``: ``orthogonal``, ``weight_norm`` and
``spectral_norm`` (PyTorch's current API, state-dict compatible with it)."""
from enum import Enum, auto

import ember  # resolved when a parametrization runs: ember imports this package
from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad
from ..modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from ..modules.module import Module
from . import parametrize

__all__ = ["orthogonal", "weight_norm", "spectral_norm"]


def _is_orthogonal(Q):
    n, k = Q.size(-2), Q.size(-1)
    Id = ember.eye(k, dtype=Q.dtype, device=Q.device)
    # a tolerance that grows with the size, not too large
    eps = 10.0 * n * ember.finfo(Q.dtype).eps
    return ember.allclose(Q.mH @ Q, Id, atol=eps)


def _make_orthogonal(A):
    """The Q of A = QR (A tall, maybe complex) with diag(R) real and non-negative."""
    X, tau = ember.geqrf(A)
    Q = ember.linalg.householder_product(X, tau)
    # the diagonal of X is that of R (real): normalise by its signs
    Q *= X.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)
    return Q


class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


class _Orthogonal(Module):
    """Maps an unconstrained matrix (or batch) to one with orthonormal columns (rows when it is
    wide): the exponential or the Cayley transform of a skew-symmetric (skew-Hermitian) matrix
    built from its lower triangle, or a product of Householder reflectors. With
    ``use_trivialization`` the result is multiplied by the buffer ``base``, which
    ``right_inverse`` sets to the assigned value (the dynamic trivialization)."""

    def __init__(self, weight, orthogonal_map, *, use_trivialization=True):
        super().__init__()
        # A complex matrix's reflectors do not determine the tau that householder_product
        # needs, and tau cannot be trained freely without leaving the unitary matrices.
        if weight.is_complex() and orthogonal_map == _OrthMaps.householder:
            raise ValueError("The householder parametrization does not support complex tensors.")
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X):
        n, k = X.size(-2), X.size(-1)
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        # X is tall here
        if self.orthogonal_map == _OrthMaps.matrix_exp or self.orthogonal_map == _OrthMaps.cayley:
            # n*k - k(k-1)/2 parameters: the lower triangle, embedded in a square matrix
            X = X.tril()
            if n != k:
                X = ember.cat([X, X.new_zeros(n, n - k).expand(*X.shape[:-2], -1, -1)], dim=-1)
            A = X - X.mH
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                Q = ember.matrix_exp(A)
            else:
                # the Cayley retraction (I + A/2)(I - A/2)^{-1}
                Id = ember.eye(n, dtype=A.dtype, device=A.device)
                Q = ember.linalg.solve(ember.add(Id, A, alpha=-0.5), ember.add(Id, A, alpha=0.5))
            if n != k:
                Q = Q[..., :k]
        else:
            # real here: householder refuses complex tensors
            A = X.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = ember.linalg.householder_product(A, tau)
            # X's diagonal holds the signs (1 or -1); the cast keeps them out of the gradient
            Q = Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)

        if hasattr(self, "base"):
            Q = self.base @ Q
        if transposed:
            Q = Q.mT
        return Q

    @no_grad()
    def right_inverse(self, Q):
        if Q.shape != self.shape:
            raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. "
                             f"Got a tensor of shape {Q.shape}.")
        Q_init = Q
        n, k = Q.size(-2), Q.size(-1)
        transpose = n < k
        if transpose:
            Q = Q.mT
            n, k = k, n

        # every path copies Q
        if not hasattr(self, "base"):
            # Without the trivialization only householder has an inverse: no closed form
            # recovers the X whose exponential or Cayley transform is a given Q.
            if self.orthogonal_map == _OrthMaps.cayley or \
                    self.orthogonal_map == _OrthMaps.matrix_exp:
                raise NotImplementedError(
                    "It is not possible to assign to the matrix exponential or the Cayley "
                    "parametrizations when use_trivialization=False.")
            # the reflectors of Q's QR with diag(R) > 0 (else Q = (-Q)(-Id) would be one too)
            A, tau = ember.geqrf(Q)
            A.diagonal(dim1=-2, dim2=-1).sign_()
            # LAPACK returns exactly tau == 0 where it skips a reflection
            A.diagonal(dim1=-2, dim2=-1)[tau == 0.0] *= -1
            return A.mT if transpose else A
        if n == k:
            Q = Q.clone() if _is_orthogonal(Q) else _make_orthogonal(Q)
        else:
            # complete Q to an n x n orthogonal matrix
            N = ember.randn(*(Q.size()[:-2] + (n, n - k)), dtype=Q.dtype, device=Q.device)
            Q = _make_orthogonal(ember.cat([Q, N], dim=-1))
        self.base = Q
        # -Id, as the householder map reads the diagonal: householder(zeros) == eye
        neg_Id = ember.zeros_like(Q_init)
        neg_Id.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
        return neg_Id


def orthogonal(module, name="weight", orthogonal_map=None, *, use_trivialization=True):
    """Constrain ``module.<name>`` (a matrix or batch of matrices) to orthonormal columns, or
    rows when it is wide; ``orthogonal_map`` is "matrix_exp" (default for square or complex
    matrices), "cayley" or "householder" (default otherwise)."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    # vectors (the sphere) are refused, as in PyTorch
    if weight.ndim < 2:
        raise ValueError("Expected a matrix or batch of matrices. "
                         f"Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = ("matrix_exp" if weight.size(-2) == weight.size(-1) or weight.is_complex()
                          else "householder")
    orth_enum = getattr(_OrthMaps, orthogonal_map, None)
    if orth_enum is None:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
                         f"Got: {orthogonal_map}")
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module


def _norm_except_dim(v, dim):
    """The 2-norm of ``v`` over every dimension but ``dim`` (kept as size-1 dims); ``dim=-1``
    means the norm of the whole tensor."""
    if dim == -1:
        return (v * v).sum().sqrt()
    dims = [d for d in range(v.dim()) if d != dim]
    return (v * v).sum(dims, keepdim=True).sqrt()


def _normalize(x, eps):
    """``F.normalize(x, dim=0)`` for a vector: x / max(||x||, eps)."""
    from ... import maximum, tensor
    return x / maximum((x * x).sum().sqrt(), tensor(eps, dtype=x.dtype))


class _WeightNorm(Module):
    def __init__(self, dim=0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return weight_v * (weight_g / _norm_except_dim(weight_v, self.dim))

    def right_inverse(self, weight):
        return _norm_except_dim(weight, self.dim), weight


def weight_norm(module, name="weight", dim=0):
    """``weight = g * v / ||v||``: stored as ``parametrizations.<name>.original0`` (g) and
    ``original1`` (v)."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def _weight_norm_compat_hook(state_dict, prefix, local_metadata, strict, missing_keys,
                                 unexpected_keys, error_msgs):
        # Checkpoints from the legacy hook-based weight_norm use <name>_g / <name>_v.
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g_key)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v_key)

    module._register_load_state_dict_pre_hook(_weight_norm_compat_hook)
    return module


class _SpectralNorm(Module):
    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError("Dimension out of range (expected to be in range of "
                             f"[-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = weight_mat.size()
            u = weight_mat.new_empty(h).normal_(0, 1)
            v = weight_mat.new_empty(w).normal_(0, 1)
            self.register_buffer("_u", _normalize(u, self.eps))
            self.register_buffer("_v", _normalize(v, self.eps))
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight):
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        return weight.flatten(1)

    @no_grad()
    def _power_method(self, weight_mat, n_power_iterations):
        for _ in range(n_power_iterations):
            self._u.copy_(_normalize(weight_mat.mv(self._v), self.eps))
            self._v.copy_(_normalize(weight_mat.t().mv(self._u), self.eps))

    def forward(self, weight):
        if weight.ndim == 1:
            return _normalize(weight, self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        u = self._u.clone()
        v = self._v.clone()
        sigma = u.dot(weight_mat.mv(v))
        return weight / sigma

    def right_inverse(self, value):
        return value


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Divide ``name`` by its spectral norm, estimated by power iteration each training call."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0
    parametrize.register_parametrization(module, name,
                                         _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
