"""gpytorch programs run the same way in PyTorch and in ember (through ``ember.as_torch``):
tests/test_gpytorch.py runs ``python tests/_gpytorch_programs.py torch DIR NAMES`` and
``python -m ember.as_torch tests/_gpytorch_programs.py ember DIR NAMES`` side by side (in
subprocesses: gpytorch imports pyro, which patches the ``torch.distributions`` it imports),
and each writes what every case computed to DIR/NAME_<library>.npz.

The models are gpytorch's tutorials at small sizes: exact GP regression (Cholesky, and CG with
Lanczos variances above ``max_cholesky_size``), a multitask GP, a batch of independent GPs and
a variational GP; and BoTorch's Bayesian optimisation loop on them. Each case seeds torch's generator itself, so data and the random probe
vectors of CG/Lanczos are the same in both libraries."""
import math
import os
import sys
import warnings

import numpy as np


def _arrays(values):
    return {k: np.asarray(v.detach().numpy() if hasattr(v, "detach") else v)
            for k, v in values.items()}


def _exact_model(gpytorch, mean, covar, distribution=None):
    """An ExactGP class: ``mean`` and ``covar`` build its mean and covariance modules."""
    class Model(gpytorch.models.ExactGP):
        def __init__(self, x, y, likelihood):
            super().__init__(x, y, likelihood)
            self.mean_module, self.covar_module = mean(), covar()

        def forward(self, x):
            return (distribution or gpytorch.distributions.MultivariateNormal)(
                self.mean_module(x), self.covar_module(x))
    return Model


def _train(torch, model, mll, x, y, steps, lr=0.1, reduce=lambda loss: loss):
    """Adam on the negative marginal log likelihood; the losses and, after the last step's
    backward, every parameter's gradient."""
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    losses, grads = [], {}
    for _ in range(steps):
        optimizer.zero_grad()
        loss = reduce(-mll(model(x), y))
        loss.backward()
        losses.append(loss.item())
        grads = {f"grad:{n}": p.grad.clone() for n, p in model.named_parameters()}
        optimizer.step()
    return {"losses": losses, **grads}


def exact(torch, gpytorch):
    """Exact GP regression, gpytorch's first tutorial: RBF kernel, 20 Adam steps, predictive
    mean, variance and confidence region under fast_pred_var."""
    train_x = torch.linspace(0, 1, 50)
    train_y = torch.sin(train_x * (2 * math.pi)) + torch.randn(train_x.size()) * math.sqrt(0.04)
    likelihood = gpytorch.likelihoods.GaussianLikelihood()
    model = _exact_model(gpytorch, gpytorch.means.ConstantMean,
                         lambda: gpytorch.kernels.ScaleKernel(gpytorch.kernels.RBFKernel()))(
        train_x, train_y, likelihood)
    model.train()
    mll = gpytorch.mlls.ExactMarginalLogLikelihood(likelihood, model)
    result = _train(torch, model, mll, train_x, train_y, 20)
    model.eval()
    with torch.no_grad(), gpytorch.settings.fast_pred_var():
        pred = likelihood(model(torch.linspace(0, 1, 11)))
        lower, upper = pred.confidence_region()
    result.update(mean=pred.mean, variance=pred.variance, lower=lower, upper=upper,
                  lengthscale=model.covar_module.base_kernel.lengthscale)
    return result


def conjugate_gradients(torch, gpytorch):
    """Above max_cholesky_size: the marginal likelihood by preconditioned CG with stochastic
    Lanczos log-determinants (its value and gradients), predictions by CG and Lanczos
    variances (fast_pred_var). CG's tolerances are tightened so that both libraries' solves
    converge to rounding rather than stopping at the default 1% residual."""
    x = torch.rand(300, 2)
    y = torch.sin(x.sum(-1) * 3) + 0.05 * torch.randn(300)
    likelihood = gpytorch.likelihoods.GaussianLikelihood()
    model = _exact_model(gpytorch, gpytorch.means.ConstantMean,
                         lambda: gpytorch.kernels.ScaleKernel(gpytorch.kernels.RBFKernel()))(
        x, y, likelihood)
    model.train()
    mll = gpytorch.mlls.ExactMarginalLogLikelihood(likelihood, model)
    with gpytorch.settings.max_cholesky_size(100), gpytorch.settings.cg_tolerance(1e-4), \
            gpytorch.settings.eval_cg_tolerance(1e-6):
        result = _train(torch, model, mll, x, y, 3)
        model.eval()
        with torch.no_grad(), gpytorch.settings.fast_pred_var():
            pred = likelihood(model(torch.rand(6, 2)))
    result.update(mean=pred.mean, variance=pred.variance)
    return result


def multitask(torch, gpytorch):
    """A two-task GP: MultitaskMean, a rank-1 MultitaskKernel (Kronecker structure) and
    MultitaskGaussianLikelihood; MultitaskMultivariateNormal predictions."""
    x = torch.linspace(0, 1, 30)
    y = torch.stack([torch.sin(x * 2 * math.pi), torch.cos(x * 2 * math.pi)], -1) \
        + 0.1 * torch.randn(30, 2)
    likelihood = gpytorch.likelihoods.MultitaskGaussianLikelihood(num_tasks=2)
    model = _exact_model(
        gpytorch, lambda: gpytorch.means.MultitaskMean(gpytorch.means.ConstantMean(), 2),
        lambda: gpytorch.kernels.MultitaskKernel(gpytorch.kernels.RBFKernel(), 2, rank=1),
        gpytorch.distributions.MultitaskMultivariateNormal)(x, y, likelihood)
    model.train()
    mll = gpytorch.mlls.ExactMarginalLogLikelihood(likelihood, model)
    result = _train(torch, model, mll, x, y, 10)
    model.eval()
    with torch.no_grad(), gpytorch.settings.fast_pred_var():
        pred = likelihood(model(torch.linspace(0, 1, 5)))
    result.update(mean=pred.mean, variance=pred.variance)
    return result


def batch(torch, gpytorch):
    """Three independent GPs as one batch (batch_shape (3,)): Matern-5/2 kernels, one
    likelihood noise each, the summed marginal likelihood."""
    x = torch.linspace(0, 1, 25).unsqueeze(0).repeat(3, 1).unsqueeze(-1)
    y = torch.sin(x.squeeze(-1) * torch.tensor([[1.0], [2.0], [3.0]]) * math.pi) \
        + 0.05 * torch.randn(3, 25)
    shape = torch.Size([3])
    likelihood = gpytorch.likelihoods.GaussianLikelihood(batch_shape=shape)
    model = _exact_model(
        gpytorch, lambda: gpytorch.means.ConstantMean(batch_shape=shape),
        lambda: gpytorch.kernels.ScaleKernel(
            gpytorch.kernels.MaternKernel(nu=2.5, batch_shape=shape), batch_shape=shape))(
        x, y, likelihood)
    model.train()
    mll = gpytorch.mlls.ExactMarginalLogLikelihood(likelihood, model)
    result = _train(torch, model, mll, x, y, 10, reduce=lambda loss: loss.sum())
    model.eval()
    with torch.no_grad():
        pred = likelihood(model(torch.linspace(0, 1, 4).view(1, 4, 1).repeat(3, 1, 1)))
    result.update(mean=pred.mean, variance=pred.variance,
                  lengthscale=model.covar_module.base_kernel.lengthscale)
    return result


def variational(torch, gpytorch):
    """An approximate GP: CholeskyVariationalDistribution over 10 learned inducing points,
    VariationalStrategy (whitened), VariationalELBO with its KL term. In float64: the inducing
    points' kernel matrix is nearly singular, so in float32 its Cholesky factor, and every
    gradient through it, is only good to about 1e-3 in either library."""
    x = torch.rand(60, 1, dtype=torch.float64)
    y = torch.sin(x.squeeze() * 6) + 0.1 * torch.randn(60, dtype=torch.float64)

    class Model(gpytorch.models.ApproximateGP):
        def __init__(self, inducing):
            q = gpytorch.variational.CholeskyVariationalDistribution(inducing.size(0))
            super().__init__(gpytorch.variational.VariationalStrategy(
                self, inducing, q, learn_inducing_locations=True))
            self.mean_module = gpytorch.means.ConstantMean()
            self.covar_module = gpytorch.kernels.ScaleKernel(gpytorch.kernels.RBFKernel())

        def forward(self, x):
            return gpytorch.distributions.MultivariateNormal(self.mean_module(x),
                                                             self.covar_module(x))
    model = Model(torch.linspace(0, 1, 10, dtype=torch.float64).unsqueeze(-1)).double()
    likelihood = gpytorch.likelihoods.GaussianLikelihood().double()
    model.train()
    likelihood.train()
    mll = gpytorch.mlls.VariationalELBO(likelihood, model, num_data=60)
    optimizer = torch.optim.Adam([*model.parameters(), *likelihood.parameters()], lr=0.05)
    losses = []
    for _ in range(8):
        optimizer.zero_grad()
        loss = -mll(model(x), y)
        loss.backward()
        losses.append(loss.item())
        optimizer.step()
    model.eval()
    likelihood.eval()
    with torch.no_grad():
        pred = likelihood(model(torch.linspace(0, 1, 5, dtype=torch.float64).unsqueeze(-1)))
    return {"losses": losses, "mean": pred.mean, "variance": pred.variance,
            "inducing_points": model.variational_strategy.inducing_points,
            **{f"grad:{n}": p.grad for n, p in model.named_parameters()}}


def botorch(torch, gpytorch):
    """BoTorch on gpytorch: a SingleTaskGP (input and outcome transforms) fitted by
    fit_gpytorch_mll (scipy's L-BFGS-B over the flattened parameters), LogExpectedImprovement
    maximised by optimize_acqf from seeded raw samples, and qLogExpectedImprovement's Monte
    Carlo value on fixed Sobol base samples."""
    from botorch.acquisition import LogExpectedImprovement, qLogExpectedImprovement
    from botorch.fit import fit_gpytorch_mll
    from botorch.models import SingleTaskGP
    from botorch.optim import optimize_acqf
    from botorch.sampling import SobolQMCNormalSampler
    x = torch.rand(12, 2, dtype=torch.float64)
    y = torch.sin(6 * x[:, :1]) + x[:, 1:] ** 2
    gp = SingleTaskGP(x, y)
    fit_gpytorch_mll(gpytorch.mlls.ExactMarginalLogLikelihood(gp.likelihood, gp))
    bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=torch.float64)
    candidate, value = optimize_acqf(LogExpectedImprovement(gp, best_f=y.max()), bounds=bounds,
                                     q=1, num_restarts=4, raw_samples=32)
    qei = qLogExpectedImprovement(gp, best_f=y.max(),
                                  sampler=SobolQMCNormalSampler(torch.Size([64]), seed=1))
    return {"lengthscale": gp.covar_module.lengthscale, "noise": gp.likelihood.noise,
            "candidate": candidate, "value": value,
            "qlogei": qei(torch.rand(3, 2, 2, dtype=torch.float64))}


CASES = {f.__name__: f for f in (exact, conjugate_gradients, multitask, batch, variational,
                                  botorch)}


def run(torch, name):
    """Run case ``name`` from seed 0; return its results."""
    import gpytorch
    torch.manual_seed(0)
    return _arrays(CASES[name](torch, gpytorch))


if __name__ == "__main__":
    library, directory, names = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
    import torch
    # under ember.as_torch, torch *is* the ember module
    assert (sys.modules.get("ember") is torch) == (library == "ember"), library
    # linear_operator's notices (jitter added, CG not converged) are the same on both sides
    warnings.simplefilter("ignore")
    for name in names:
        np.savez(os.path.join(directory, f"{name}_{library}.npz"), **run(torch, name))
