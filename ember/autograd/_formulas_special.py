"""Backward helpers of the special functions (PyTorch's FunctionsManual.cpp names: i1_backward,
i1e_backward, sinc_backward, mvlgamma_backward), written in ember ops so that they are
themselves differentiable. Star-imported by ``_formulas``."""
import math

import ember


__all__ = ["i1_backward", "i1e_backward", "sinc_backward", "mvlgamma_backward"]


def _safe(self):
    """(|x| > eps, x with its tiny entries replaced by eps): I1(x)/x is 0/0 at x = 0, and the
    masked-out branch of a where still gets a gradient, so it must stay finite."""
    eps = ember.finfo(self._dtype).eps
    not_tiny = self.abs() > eps
    return not_tiny, ember.where(not_tiny, self, ember.full((), eps, dtype=self._dtype))


def i1_backward(grad, self, result):
    """I1'(x) = I0(x) - I1(x)/x, and 1/2 at x = 0."""
    not_tiny, safe = _safe(self)
    gradx = safe.i0() - result * safe.reciprocal()
    return grad * ember.where(not_tiny, gradx, ember.full((), 0.5, dtype=self._dtype))


def i1e_backward(grad, self, result):
    """d/dx e^-|x| I1(x) = I0e(x) - I1e(x) (sgn(x) + 1/x), and 1/2 at x = 0."""
    not_tiny, safe = _safe(self)
    gradx = ember.special.i0e(safe) - result * (safe.sgn() + safe.reciprocal())
    return grad * ember.where(not_tiny, gradx, ember.full((), 0.5, dtype=self._dtype))


def sinc_backward(grad, self):
    """(pi x cos(pi x) - sin(pi x)) / (pi x^2), 0 at x = 0."""
    self_pi = self * math.pi
    self_squared_pi = self * self * math.pi
    out = grad * ((self_pi * self_pi.cos()) - self_pi.sin()) / self_squared_pi.conj()
    return ember.where(self_squared_pi == 0.0, ember.zeros((), dtype=out._dtype), out)


def mvlgamma_backward(grad, self, p):
    """d/dx log Gamma_p(x) = sum_j digamma(x - j/2), j = 0 .. p-1."""
    args = ember.arange(-p / 2. + 0.5, 0.5, 0.5, dtype=self._dtype)
    args = args + self.unsqueeze(-1)
    return grad * args.digamma().sum(-1)
