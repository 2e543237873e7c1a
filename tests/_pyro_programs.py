"""Pyro programs run the same way in PyTorch and in ember (through ``ember.as_torch``):
tests/test_pyro.py runs ``python tests/_pyro_programs.py torch DIR NAMES`` and
``python -m ember.as_torch tests/_pyro_programs.py ember DIR NAMES`` side by side
(``helpers.pytorch_beside_ember``), and each writes what every case computed to
DIR/NAME_<library>.npz.

Both sides run in subprocesses because importing pyro (gpytorch imports it too) patches the
``torch.distributions`` it imports (``pyro.distributions.torch_patch``): done inside pytest,
that would change the PyTorch the other tests compare with. Every case seeds pyro's (that is,
torch's) generator itself, so its data, initial values and Monte Carlo draws are the same in
both libraries."""
import os
import sys

import numpy as np


def _arrays(values):
    """A case's results, as float64/int64 arrays keyed by name."""
    out = {}
    for key, value in values.items():
        if hasattr(value, "detach"):
            value = value.detach().numpy()
        out[key] = np.asarray(value)
    return out


def _grads(torch, pyro, model, guide, *args, loss=None):
    """Gradients of the ELBO (one more Monte Carlo estimate) at the guide's current
    parameters, by parameter name."""
    from pyro.infer import Trace_ELBO
    loss = (loss or Trace_ELBO()).differentiable_loss(model, guide, *args)
    store = pyro.get_param_store()
    names = sorted(store.keys())
    params = [store[n].unconstrained() for n in names]
    grads = torch.autograd.grad(loss, params)
    return {f"grad:{n}": g for n, g in zip(names, grads)}


def _regression(torch, pyro, dist):
    """Bayesian linear regression data (40 points, 3 features) and its model."""
    x = torch.randn(40, 3)
    y = x @ torch.tensor([1.0, -2.0, 0.5]) + 0.3 * torch.randn(40)

    def model(x, y=None):
        w = pyro.sample("w", dist.Normal(torch.zeros(3), torch.ones(3)).to_event(1))
        b = pyro.sample("b", dist.Normal(0.0, 5.0))
        s = pyro.sample("s", dist.HalfNormal(1.0))
        with pyro.plate("n", x.shape[0]):
            return pyro.sample("y", dist.Normal(x @ w + b, s), obs=y)
    return x, y, model


def autonormal(torch, pyro):
    """The typical first program: AutoNormal on a Normal/LogNormal model, Trace_ELBO, Adam."""
    import pyro.distributions as dist
    from pyro.infer import SVI, Trace_ELBO
    from pyro.infer.autoguide import AutoNormal
    from pyro.optim import Adam
    data = torch.randn(100) * 2 + 3

    def model(data):
        mu = pyro.sample("mu", dist.Normal(0.0, 10.0))
        sigma = pyro.sample("sigma", dist.LogNormal(0.0, 1.0))
        with pyro.plate("data", len(data)):
            pyro.sample("obs", dist.Normal(mu, sigma), obs=data)
    guide = AutoNormal(model)
    svi = SVI(model, guide, Adam({"lr": 0.05}), loss=Trace_ELBO())
    losses = [svi.step(data) for _ in range(30)]
    result = {"losses": losses, **_grads(torch, pyro, model, guide, data)}
    result.update({f"median:{k}": v for k, v in guide.median(data).items()})
    result.update({f"param:{k}": v for k, v in pyro.get_param_store().items()})
    return result


def gaussian_guides(torch, pyro):
    """AutoDiagonalNormal and AutoMultivariateNormal (a scale_tril MultivariateNormal guide
    through a biject_to'd lower Cholesky factor) with ClippedAdam, then Predictive."""
    import pyro.distributions as dist
    from pyro.infer import SVI, Predictive, Trace_ELBO
    from pyro.infer.autoguide import AutoDiagonalNormal, AutoMultivariateNormal
    from pyro.optim import ClippedAdam
    result = {}
    for kind, guide_class in [("diag", AutoDiagonalNormal), ("mvn", AutoMultivariateNormal)]:
        pyro.clear_param_store()
        pyro.set_rng_seed(1)
        x, y, model = _regression(torch, pyro, dist)
        guide = guide_class(model)
        svi = SVI(model, guide, ClippedAdam({"lr": 0.05}), loss=Trace_ELBO())
        result[f"{kind}:losses"] = [svi.step(x, y) for _ in range(40)]
        result.update({f"{kind}:{k}": v
                       for k, v in _grads(torch, pyro, model, guide, x, y).items()})
        result.update({f"{kind}:median:{k}": v for k, v in guide.median(x, y).items()})
        pred = Predictive(model, guide=guide, num_samples=20, return_sites=["y", "w"])(x[:3])
        result[f"{kind}:pred_y_mean"] = pred["y"].mean(0)
        result[f"{kind}:pred_w_std"] = pred["w"].std(0)
    return result


def meanfield(torch, pyro):
    """TraceMeanField_ELBO: the KL terms in closed form (kl_divergence of Normal, HalfNormal's
    transformed pair) instead of sampled."""
    import pyro.distributions as dist
    from pyro.infer import SVI, TraceMeanField_ELBO
    from pyro.infer.autoguide import AutoNormal
    from pyro.optim import Adam
    x, y, model = _regression(torch, pyro, dist)
    guide = AutoNormal(model)
    svi = SVI(model, guide, Adam({"lr": 0.05}), loss=TraceMeanField_ELBO())
    result = {"losses": [svi.step(x, y) for _ in range(40)]}
    result.update(_grads(torch, pyro, model, guide, x, y, loss=TraceMeanField_ELBO()))
    result.update({f"median:{k}": v for k, v in guide.median(x, y).items()})
    return result


def enumeration(torch, pyro):
    """A two-component Gaussian mixture with its assignments enumerated (TraceEnum_ELBO) and a
    MAP guide for the weights and locations."""
    import pyro.distributions as dist
    from pyro.infer import SVI, TraceEnum_ELBO, config_enumerate
    from pyro.infer.autoguide import AutoDelta
    from pyro.optim import Adam
    data = torch.cat([torch.randn(30) - 2, torch.randn(30) + 2])

    @config_enumerate
    def model(data):
        weights = pyro.sample("weights", dist.Dirichlet(torch.ones(2)))
        locs = pyro.sample("locs", dist.Normal(torch.zeros(2), 5.0).to_event(1))
        with pyro.plate("data", len(data)):
            z = pyro.sample("z", dist.Categorical(weights))
            pyro.sample("obs", dist.Normal(locs[z], 1.0), obs=data)

    def init(site):
        return torch.tensor([0.5, 0.5]) if site["name"] == "weights" else torch.tensor([-1., 1.])
    guide = AutoDelta(pyro.poutine.block(model, expose=["weights", "locs"]), init_loc_fn=init)
    elbo = TraceEnum_ELBO(max_plate_nesting=1)
    svi = SVI(model, guide, Adam({"lr": 0.1}), loss=elbo)
    result = {"losses": [svi.step(data) for _ in range(30)]}
    result.update({f"median:{k}": v for k, v in guide.median(data).items()})
    result.update(_grads(torch, pyro, model, guide, data,
                          loss=TraceEnum_ELBO(max_plate_nesting=1)))
    return result


def nuts(torch, pyro):
    """NUTS with step-size and mass-matrix adaptation: 30 warm-up steps, 30 samples. In
    float64: a trajectory's accept/reject decisions amplify round-off, so in float32 the two
    libraries' chains part after a few dozen steps even though each step agrees to rounding."""
    import pyro.distributions as dist
    from pyro.infer import MCMC, NUTS
    data = torch.randn(20, dtype=torch.float64) * 0.5 + 1.0

    def model(data):
        mu = pyro.sample("mu", dist.Normal(0.0, 3.0))
        sigma = pyro.sample("sigma", dist.LogNormal(0.0, 1.0))
        with pyro.plate("d", len(data)):
            pyro.sample("obs", dist.Normal(mu, sigma), obs=data)
    mcmc = MCMC(NUTS(model), num_samples=30, warmup_steps=30, disable_progbar=True)
    dtype = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)  # the priors' parameters, and so the latents
    try:
        mcmc.run(data)
    finally:
        torch.set_default_dtype(dtype)
    return {f"samples:{k}": v for k, v in mcmc.get_samples().items()}


def pyro_module(torch, pyro):
    """A PyroModule Bayesian linear regression (PyroSample priors on nn.Linear's weight and
    bias, a Uniform noise scale), AutoDiagonalNormal, quantiles and Predictive."""
    import pyro.distributions as dist
    from pyro.infer import SVI, Predictive, Trace_ELBO
    from pyro.infer.autoguide import AutoDiagonalNormal
    from pyro.nn import PyroModule, PyroSample
    from pyro.optim import Adam

    class BayesianRegression(PyroModule):
        def __init__(self):
            super().__init__()
            self.linear = PyroModule[torch.nn.Linear](2, 1)
            self.linear.weight = PyroSample(dist.Normal(0.0, 1.0).expand([1, 2]).to_event(2))
            self.linear.bias = PyroSample(dist.Normal(0.0, 10.0).expand([1]).to_event(1))

        def forward(self, x, y=None):
            sigma = pyro.sample("sigma", dist.Uniform(0.0, 10.0))
            mean = self.linear(x).squeeze(-1)
            with pyro.plate("data", x.shape[0]):
                pyro.sample("obs", dist.Normal(mean, sigma), obs=y)
            return mean
    x = torch.randn(50, 2)
    y = x @ torch.tensor([2.0, -1.0]) + 0.5 + 0.2 * torch.randn(50)
    model = BayesianRegression()
    guide = AutoDiagonalNormal(model)
    svi = SVI(model, guide, Adam({"lr": 0.03}), loss=Trace_ELBO())
    result = {"losses": [svi.step(x, y) for _ in range(40)]}
    result.update(_grads(torch, pyro, model, guide, x, y))
    result.update({f"quantiles:{k}": v for k, v in guide.quantiles([0.25, 0.5, 0.75]).items()})
    pred = Predictive(model, guide=guide, num_samples=30, return_sites=("obs", "_RETURN"))(x[:4])
    result.update(pred_obs_mean=pred["obs"].mean(0), pred_return_std=pred["_RETURN"].std(0))
    return result


def helpers(torch, pyro):
    """PyTorch's private distribution helpers that pyro and gpytorch import by name, on fixed
    inputs with broadcasting batch shapes, and the constraint registry's transforms."""
    from torch.distributions import biject_to, constraints, transform_to
    from torch.distributions.kl import _batch_trace_XXT, kl_divergence
    from torch.distributions.lowrank_multivariate_normal import (
        _batch_capacitance_tril, _batch_lowrank_logdet, _batch_lowrank_mahalanobis)
    from torch.distributions.multivariate_normal import (
        _batch_mahalanobis, _batch_mv, _precision_to_scale_tril)
    from torch.distributions.utils import _standard_normal, _sum_rightmost, euler_constant
    rs = np.random.RandomState(0)
    a = torch.from_numpy(rs.randn(2, 1, 3, 3))
    spd = a @ a.mT + torch.eye(3, dtype=a.dtype)
    tril = torch.linalg.cholesky(spd)
    x = torch.from_numpy(rs.randn(5, 2, 4, 3))
    w, d = torch.from_numpy(rs.randn(2, 1, 3, 2)), torch.from_numpy(rs.rand(2, 1, 3) + 0.5)
    cap = _batch_capacitance_tril(w, d)
    z = torch.from_numpy(rs.randn(3, 6))
    p = torch.distributions.MultivariateNormal(torch.zeros(3), precision_matrix=spd[0, 0])
    q = torch.distributions.LowRankMultivariateNormal(x[0, 0], w[0], d[0])
    torch.manual_seed(0)
    result = {"mahalanobis": _batch_mahalanobis(tril, x), "mv": _batch_mv(spd, x),
              "precision_to_scale_tril": _precision_to_scale_tril(spd), "capacitance": cap,
              "lowrank_logdet": _batch_lowrank_logdet(w, d, cap),
              "lowrank_mahalanobis": _batch_lowrank_mahalanobis(w, d, x, cap),
              "trace_xxt": _batch_trace_XXT(a), "sum_rightmost": _sum_rightmost(x, 2),
              "standard_normal": _standard_normal((2, 3), torch.float64, None),
              "euler_constant": euler_constant, "kl_mvn_lowrank": kl_divergence(p, q),
              "kl_lowrank_mvn": kl_divergence(q, p), "scale_tril": q.scale_tril,
              "precision": q.precision_matrix, "lowrank_log_prob": q.log_prob(x[:, :, :1])}
    for name, c in [("positive", constraints.positive), ("greater_than", constraints.greater_than(1.0)),
                    ("interval", constraints.interval(-1.0, 2.0)), ("simplex", constraints.simplex),
                    ("lower_cholesky", constraints.lower_cholesky),
                    ("corr_cholesky", constraints.corr_cholesky)]:
        registry = transform_to if name == "lower_cholesky" else biject_to
        t = registry(c)
        value = z[:, :3].reshape(3, 3) if name == "lower_cholesky" else z
        y = t(value)
        result[f"transform:{name}"] = y
        if name != "lower_cholesky":  # onto, not bijective: it has no Jacobian
            result[f"log_det:{name}"] = t.log_abs_det_jacobian(value, y)
        result[f"transform_kind:{name}"] = type(t).__name__ + "".join(
            type(p).__name__ for p in getattr(t, "parts", []))
    return result


CASES = {f.__name__: f for f in (autonormal, gaussian_guides, meanfield, enumeration, nuts,
                                 pyro_module, helpers)}


def run(torch, name):
    """Run case ``name`` with a fresh parameter store and seed; return its results."""
    import pyro
    pyro.clear_param_store()
    pyro.set_rng_seed(0)
    return _arrays(CASES[name](torch, pyro))


if __name__ == "__main__":
    library, directory, names = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
    import torch
    # under ember.as_torch, torch *is* the ember module
    assert (sys.modules.get("ember") is torch) == (library == "ember"), library
    for name in names:
        np.savez(os.path.join(directory, f"{name}_{library}.npz"), **run(torch, name))
