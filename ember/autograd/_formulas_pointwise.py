"""Backward helpers of the pointwise ops (PyTorch's FunctionsManual.cpp names), written in ember
ops so that backward passes are themselves differentiable. Star-imported by ``_formulas``."""
import math

import ember


__all__ = ["sgn_backward", "logit_backward", "angle_backward", "copysign_tensor_self_backward",
           "polar_backward", "fmax_fmin_self_mask", "clamp_backward_min_max",
           "foreach_maximum_scalar_backward"]


def sgn_backward(self, grad, result):
    """d sgn: zero for real inputs; for complex x, (g - sgn(x)^2 conj(g)) / (2|x|), 0 at x = 0."""
    if not self._dtype.is_complex:
        return ember.zeros_like(grad)
    a = self.abs()
    g = (grad - (result * result) * grad.conj()) / (2 * a)
    return g.masked_fill(a == 0, 0)


def logit_backward(grad, self, eps):
    """1 / (x (1 - x)); outside [eps, 1 - eps] the clamped input has no gradient (0), and
    without eps a point outside [0, 1] has none either (NaN)."""
    g = grad / (self * (1 - self))
    if eps is None:
        return ember.where((self < 0) | (self > 1), ember.full_like(g, math.nan), g)
    return ember.where((self < eps) | (self > 1 - eps), ember.zeros_like(g), g)


def angle_backward(grad, self):
    if not self._dtype.is_complex:
        return ember.zeros_like(self)
    g = (grad * self) / self.abs().pow(2) * 1j
    return ember.where(self == 0, ember.zeros_like(g), g)


def copysign_tensor_self_backward(grad, self, result):
    ratio = (result / self).masked_fill(self == 0, 0)
    return grad * ratio


def polar_backward(grad, result):
    """(d abs, d angle) of polar(abs, angle) = abs * e^(i angle)."""
    g = grad.conj()
    return ember.real(g * result.sgn()), ember.real(g * (result * 1j))


def fmax_fmin_self_mask(self, other, self_wins):
    """Where fmax/fmin took ``self``: it won the comparison or ``other`` is NaN."""
    return self_wins | other.isnan()


def clamp_backward_min_max(grad, self, min, max, grad_input_mask):  # noqa: A002  (schema names)
    """Gradients of clamp.Tensor's bounds: a bound gets the gradient where it was the result
    (with both bounds, max wins where min > max)."""
    zero = ember.zeros((), dtype=grad._dtype, device=grad._device)
    gmin = gmax = None
    if min is not None and max is not None:
        if grad_input_mask[0]:
            gmin = ember.where((self < min) & (min < max), grad, zero)
        if grad_input_mask[1]:
            gmax = ember.where((self > max) | (max < min), grad, zero)
    elif min is not None and grad_input_mask[0]:
        gmin = ember.where(self < min, grad, zero)
    elif max is not None and grad_input_mask[1]:
        gmax = ember.where(self > max, grad, zero)
    return gmin, gmax


def _per_tensor(scalars, n):
    return scalars if isinstance(scalars, (list, tuple)) else [scalars] * n


def foreach_maximum_scalar_backward(grads, self, scalars, maximum):
    """``_foreach_maximum``/``_foreach_minimum`` of a number or numbers: the gradient where self
    is kept, half of it at a tie (PyTorch's formula, not clamp_min/clamp_max's)."""
    out = []
    for g, t, s in zip(grads, self, _per_tensor(scalars, len(self))):
        if g is None:
            out.append(None)
            continue
        out.append(ember.where(t == s, g / 2, g).masked_fill_(t < s if maximum else t > s, 0))
    return out
