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
                       OneHotCategoricalStraightThrough, Poisson, RelaxedBernoulli,
                       RelaxedOneHotCategorical)
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .generalized_pareto import GeneralizedPareto
from .independent import Independent
from .inverse_gamma import InverseGamma
from .kl import kl_divergence, register_kl
from .lkj_cholesky import LKJCholesky
from .logistic_normal import LogisticNormal
from .mixture_same_family import MixtureSameFamily
from .multivariate import Dirichlet, LowRankMultivariateNormal, MultivariateNormal
from .transformed_distribution import TransformedDistribution
from .transforms import *  # noqa: F401,F403
from .wishart import Wishart
# PyTorch's per-family module paths (torch.distributions.normal, ...), importable and reachable
# as attributes of the package once it is imported, as in PyTorch
from . import (bernoulli, beta, binomial, categorical, cauchy, chi2,  # noqa: F401,E402
               continuous_bernoulli, dirichlet, exponential, fishersnedecor, gamma, geometric,
               gumbel, half_cauchy, half_normal, kumaraswamy, laplace, log_normal,
               lowrank_multivariate_normal, multinomial, multivariate_normal,
               negative_binomial, normal, one_hot_categorical, pareto, poisson,
               relaxed_bernoulli, relaxed_categorical, studentT, uniform, von_mises, weibull)

__all__ = ["Bernoulli", "Beta", "Binomial", "Categorical", "Cauchy", "Chi2",
           "ContinuousBernoulli", "Dirichlet", "Distribution", "Exponential",
           "ExponentialFamily", "FisherSnedecor", "Gamma", "GeneralizedPareto", "Geometric",
           "Gumbel", "HalfCauchy", "HalfNormal", "Independent", "InverseGamma", "Kumaraswamy",
           "LKJCholesky", "Laplace", "LogNormal", "LogisticNormal",
           "LowRankMultivariateNormal", "MixtureSameFamily", "Multinomial",
           "MultivariateNormal", "NegativeBinomial", "Normal", "OneHotCategorical",
           "OneHotCategoricalStraightThrough", "Pareto",
           "Poisson", "RelaxedBernoulli", "RelaxedOneHotCategorical", "StudentT",
           "TransformedDistribution", "Uniform", "VonMises", "Weibull", "Wishart", "biject_to",
           "kl_divergence", "register_kl", "transform_to", "constraints", "transforms"]
__all__.extend(transforms.__all__)
