"""``MixtureSameFamily``: a Categorical choosing among the components of one batched
distribution (the rightmost batch dim of ``component_distribution`` indexes components)."""
import ember

from . import constraints
from .discrete import Categorical
from .distribution import Distribution

__all__ = ["MixtureSameFamily"]


class MixtureSameFamily(Distribution):
    """Mixture of components of one family: ``mixture_distribution`` (a
    Categorical) picks among the rightmost batch dim of ``component_distribution``."""
    arg_constraints = {}
    has_rsample = False

    def __init__(self, mixture_distribution, component_distribution, validate_args=None):
        if not isinstance(mixture_distribution, Categorical):
            raise ValueError(" The Mixture distribution needs to be an  instance of "
                             "torch.distributions.Categorical")
        if not isinstance(component_distribution, Distribution):
            raise ValueError("The Component distribution need to be an instance of "
                             "torch.distributions.Distribution")
        self._mixture_distribution = mixture_distribution
        self._component_distribution = component_distribution
        mix_batch = mixture_distribution.batch_shape
        comp_batch = component_distribution.batch_shape[:-1]
        for size1, size2 in zip(reversed(mix_batch), reversed(comp_batch)):
            if size1 != 1 and size2 != 1 and size1 != size2:
                raise ValueError(f"`mixture_distribution.batch_shape` ({mix_batch}) is not "
                                 f"compatible with `component_distribution.batch_shape`"
                                 f"({comp_batch})")
        k = mixture_distribution.logits.shape[-1]
        kc = component_distribution.batch_shape[-1]
        if k != kc:
            raise ValueError(f"`mixture_distribution component` ({k}) does not equal "
                             f"`component_distribution.batch_shape[-1]` ({kc})")
        self._num_component = k
        self._event_ndims = len(component_distribution.event_shape)
        super().__init__(comp_batch, component_distribution.event_shape,
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        batch_shape = ember.Size(batch_shape)
        new = self._get_checked_instance(MixtureSameFamily, _instance)
        new._component_distribution = self._component_distribution.expand(
            batch_shape + (self._num_component,))
        new._mixture_distribution = self._mixture_distribution.expand(batch_shape)
        new._num_component, new._event_ndims = self._num_component, self._event_ndims
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    mixture_distribution = property(lambda self: self._mixture_distribution)
    component_distribution = property(lambda self: self._component_distribution)

    @constraints.dependent_property
    def support(self):
        return constraints.MixtureSameFamilyConstraint(self._component_distribution.support)

    def _weights(self):
        """Mixture probabilities shaped to broadcast against per-component statistics."""
        probs = self._mixture_distribution.probs
        return probs.reshape(probs.shape + (1,) * self._event_ndims)

    def _component_dim(self):
        return -1 - self._event_ndims

    @property
    def mean(self):
        return (self._weights() * self._component_distribution.mean).sum(self._component_dim())

    @property
    def variance(self):
        # law of total variance: E[Var(X | k)] + Var(E[X | k])
        w, d = self._weights(), self._component_dim()
        comp = self._component_distribution
        within = (w * comp.variance).sum(d)
        between = (w * (comp.mean - self._pad(self.mean)).pow(2)).sum(d)
        return within + between

    def _pad(self, x):
        return x.unsqueeze(self._component_dim())

    def _cdf(self, x):
        comp_cdf = self._component_distribution.cdf(self._pad(x))
        return (comp_cdf * self._mixture_distribution.probs).sum(-1)

    def log_prob(self, x):
        if self._validate_args:
            self._validate_sample(x)
        lp = self._component_distribution.log_prob(self._pad(x))
        log_w = ember.log_softmax(self._mixture_distribution.logits, dim=-1)
        return ember.logsumexp(lp + log_w, dim=-1)

    def sample(self, sample_shape=ember.Size()):
        with ember.no_grad():
            n_sample = len(sample_shape)
            n_batch = len(self.batch_shape)
            which = self._mixture_distribution.sample(sample_shape)
            comp = self._component_distribution.sample(sample_shape)
            # pick, for every place, the draw of the component that was chosen
            idx = which.reshape(which.shape + (1,) * (self._event_ndims + 1))
            idx = idx.expand(which.shape + (1,) + tuple(self.event_shape))
            return comp.gather(n_sample + n_batch, idx).squeeze(n_sample + n_batch)

    def __repr__(self):
        return (f"MixtureSameFamily(\n  {self._mixture_distribution},\n  "
                f"{self._component_distribution})")
