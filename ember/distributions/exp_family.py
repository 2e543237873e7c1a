"""``ExponentialFamily``: densities p(x) = h(x) exp(<t(x), theta> - F(theta)). A family that
gives its natural parameters and log-normaliser F gets its entropy, and KL divergence to another
member of the same family (kl.py), from F and its gradient (a Bregman divergence)."""
import ember

from .distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """Base class of exponential families, densities
    ``exp(<t(x), theta> - F(theta) + k(x))``: subclasses give the natural parameters theta
    (``_natural_params``), the log normaliser F (``_log_normalizer``) and the carrier measure's
    mean; entropy and Bregman KL divergences follow from them."""
    @property
    def _natural_params(self):
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        raise NotImplementedError

    def _natural_grad(self):
        """(theta, F(theta), dF/dtheta), the last being E[t(x)]."""
        theta = [p.detach().requires_grad_() for p in self._natural_params]
        with ember.enable_grad():
            lg = self._log_normalizer(*theta)
            grads = ember.autograd.grad(lg.sum(), theta, create_graph=True)
        return theta, lg, grads

    def entropy(self):
        # H = F(theta) - <theta, E[t(x)]> - E[log h(x)]
        theta, lg, grads = self._natural_grad()
        result = lg - self._mean_carrier_measure
        for t, g in zip(theta, grads):
            result = result - (t * g).reshape(self._batch_shape + (-1,)).sum(-1)
        return result
