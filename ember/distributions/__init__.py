"""ember.distributions: probability distributions with PyTorch's API (``torch.distributions``):
sampling (reparameterised where possible), densities, moments, constraints, transforms,
transformed distributions and KL divergences, all computed with ember's operators."""
from . import constraints, transforms
from .constraint_registry import biject_to, transform_to
from .continuous import (Beta, Cauchy, Chi2, ContinuousBernoulli, Exponential, FisherSnedecor,
                         Gamma, Gumbel, HalfCauchy, HalfNormal, Kumaraswamy, Laplace, LogNormal,
                         Normal, Pareto, StudentT, Uniform, VonMises, Weibull)
from .discrete import (Bernoulli, Binomial, Categorical, ExpRelaxedCategorical, Geometric,
                       LogitRelaxedBernoulli, Multinomial, NegativeBinomial, OneHotCategorical,
                       Poisson, RelaxedBernoulli, RelaxedOneHotCategorical)
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .independent import Independent
from .kl import kl_divergence, register_kl
from .mixture_same_family import MixtureSameFamily
from .multivariate import Dirichlet, LowRankMultivariateNormal, MultivariateNormal
from .transformed_distribution import TransformedDistribution
from .transforms import *  # noqa: F401,F403

__all__ = ["Bernoulli", "Beta", "Binomial", "Categorical", "Cauchy", "Chi2",
           "ContinuousBernoulli", "Dirichlet", "Distribution", "Exponential",
           "ExponentialFamily", "FisherSnedecor", "Gamma", "Geometric", "Gumbel", "HalfCauchy",
           "HalfNormal", "Independent", "Kumaraswamy", "Laplace", "LogNormal",
           "LowRankMultivariateNormal", "MixtureSameFamily", "Multinomial",
           "MultivariateNormal", "NegativeBinomial", "Normal", "OneHotCategorical", "Pareto",
           "Poisson", "RelaxedBernoulli", "RelaxedOneHotCategorical", "StudentT",
           "TransformedDistribution", "Uniform", "VonMises", "Weibull", "biject_to",
           "kl_divergence", "register_kl", "transform_to", "constraints", "transforms"]
__all__.extend(transforms.__all__)
