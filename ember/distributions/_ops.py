"""Tensor operations the distribution modules need that ember's operator set spells differently
or does not have yet. Each one is written with ember ops (so it goes through the dispatcher), or
raises ``NotImplementedError`` naming what is missing, rather than computing something else."""
import ember as torch


def new(like, *size, **kwargs):
    """``like.new(*size)``: an uninitialized tensor with ``like``'s dtype and device."""
    if len(size) == 1 and isinstance(size[0], (tuple, list, torch.Size)):
        size = tuple(size[0])
    kwargs.setdefault("dtype", like.dtype)
    kwargs.setdefault("device", like.device)
    return torch.empty(size, **kwargs)


def solve_triangular(A, B, *, upper, left=True):
    """``torch.linalg.solve_triangular``: ember's LU solve on the triangle of ``A`` (the other
    triangle is masked out, so, as in PyTorch, it is never read and gets no gradient)."""
    native = getattr(torch.linalg, "solve_triangular", None)
    if native is not None:
        return native(A, B, upper=upper, left=left)
    A = A.triu() if upper else A.tril()
    return torch.linalg.solve(A, B, left=left)


def xlogy(x, y):
    """``x * log(y)``, 0 where ``x == 0`` (``torch.special.xlogy``)."""
    return torch.where(x == 0, torch.zeros_like(x), x * torch.log(y))


def _missing(what, op):
    raise NotImplementedError(f"{what} needs {op}, which ember's operator set does not have yet")


def standard_gamma(concentration):
    _missing("Sampling from Gamma (and Beta, Dirichlet, Chi2, StudentT, FisherSnedecor, "
             "NegativeBinomial)", "torch._standard_gamma (with its reparameterized gradient)")


def sample_dirichlet(concentration):
    _missing("Sampling from Dirichlet and Beta", "torch._sample_dirichlet")


def binomial(count, prob):
    _missing("Sampling from Binomial", "torch.binomial")


def gammainc(a, x):
    _missing("Gamma.cdf", "torch.special.gammainc")
