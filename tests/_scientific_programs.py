"""Programs of four scientific-computing libraries — torchdiffeq (ODE solvers, the adjoint,
events), torchopt (functional and differentiable optimizers, MAML, implicit differentiation),
zuko (normalizing flows) and schedulefree (schedule-free optimizers) — run the same way in
PyTorch and in ember (through ``ember.as_torch``): tests/test_scientific_libs.py runs each
library's cases in PyTorch in its own process, and ``python -m ember.as_torch
tests/_scientific_programs.py DIR NAMES`` runs them in ember, writing what each computed to
DIR/NAME_ember.npz. (None of the four patches the torch it imports.)

Every case seeds torch's generator itself, so weights, data and draws are the same in both
libraries (ember's CPU streams are PyTorch's). Most cases run in float64, so the two sides agree
to double rounding even through adaptive step-size control; the training cases run in float32,
as people train."""
import os
import sys
import warnings

import numpy as np


def _arrays(values):
    """A case's results, as arrays keyed by name."""
    out = {}
    for key, value in values.items():
        if hasattr(value, "detach"):
            value = value.detach().numpy()
        out[key] = np.asarray(value)
    return out


def _mlp(torch, sizes, act):
    layers = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        layers += [torch.nn.Linear(a, b), act()]
    return torch.nn.Sequential(*layers[:-1])


# -- torchdiffeq ---------------------------------------------------------------------------------

def _ode_func(torch):
    """A small neural ODE's vector field f(t, y) = net([y, sin t])."""
    class Field(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.net = _mlp(torch, [3, 16, 2], torch.nn.Tanh)

        def forward(self, t, y):
            return self.net(torch.cat([y, torch.sin(t).expand(*y.shape[:-1], 1)], -1))
    return Field()


def odeint_solvers(torch):
    """``odeint`` with every solver: the adaptive ones under rtol/atol, the fixed-grid ones with
    ``options={"step_size": ...}``; a tuple state; gradients backpropagated through dopri5's
    steps (step-size control included)."""
    from torchdiffeq import odeint
    torch.manual_seed(0)
    func = _ode_func(torch).double()
    y0 = torch.tensor([[1.0, 0.0], [0.5, -0.3], [-1.0, 2.0]], dtype=torch.float64)
    t = torch.linspace(0.0, 1.5, 6, dtype=torch.float64)
    result = {}
    result["dopri5"] = odeint(func, y0, t, method="dopri5", rtol=1e-7, atol=1e-9)
    for method in ("bosh3", "adaptive_heun", "fehlberg2"):  # (low orders: looser, fewer steps)
        result[method] = odeint(func, y0, t, method=method, rtol=1e-5, atol=1e-7)
    # (dopri8's error estimate of its small first step would be rounding noise, which steers
    # the next step's size; started larger, at tighter tolerances, its error is the method's)
    result["dopri8"] = odeint(func, y0, t, method="dopri8", rtol=1e-10, atol=1e-12,
                              options={"first_step": 0.2})
    for method in ("euler", "midpoint", "rk4", "explicit_adams", "implicit_adams"):
        result[method] = odeint(func, y0, t, method=method, options={"step_size": 0.05})
    result["rk4_perturb_grid"] = odeint(func, y0, t, method="rk4",
                                        options={"grid_constructor": lambda f, y, t: t})
    result["dopri5_first_step"] = odeint(func, y0, t, method="dopri5",
                                         options={"first_step": 0.01, "max_num_steps": 1000})
    a, b = odeint(lambda t, s: (s[1], -s[0] * (1 + 0.1 * s[1] ** 2)),
                  (torch.tensor([1.0], dtype=torch.float64),
                   torch.tensor([0.0], dtype=torch.float64)), t)
    result["tuple_state_a"], result["tuple_state_b"] = a, b
    y = odeint(func, y0.requires_grad_(), t, method="dopri5", rtol=1e-8, atol=1e-10)
    grads = torch.autograd.grad((y[-1] ** 2).sum(), [y0, *func.parameters()])
    for i, g in enumerate(grads):
        result[f"backprop_grad{i}"] = g
    return result


def odeint_adjoint_grads(torch):
    """``odeint_adjoint``: gradients of a loss on the whole trajectory with respect to the
    initial state and the parameters by the adjoint ODE, beside those by backpropagation."""
    from torchdiffeq import odeint, odeint_adjoint
    torch.manual_seed(1)
    func = _ode_func(torch).double()
    y0 = torch.tensor([[0.3, -0.2], [1.0, 1.0]], dtype=torch.float64, requires_grad=True)
    t = torch.linspace(0.0, 1.0, 5, dtype=torch.float64)
    target = torch.linspace(-1.0, 1.0, 20, dtype=torch.float64).reshape(5, 2, 2)
    result = {}
    for name, solve in (("adjoint", odeint_adjoint), ("backprop", odeint)):
        y = solve(func, y0, t, rtol=1e-9, atol=1e-11, method="dopri5")
        loss = ((y - target) ** 2).sum()
        grads = torch.autograd.grad(loss, [y0, *func.parameters()])
        result[f"{name}_y"] = y
        for i, g in enumerate(grads):
            result[f"{name}_grad{i}"] = g
    # the adjoint with its own solver and tolerances, on part of the parameters
    params = tuple(func.net[0].parameters())
    y = odeint_adjoint(func, y0, t, method="rk4", options={"step_size": 0.1},
                       adjoint_method="dopri5", adjoint_rtol=1e-8, adjoint_atol=1e-10,
                       adjoint_options={}, adjoint_params=params)
    for i, g in enumerate(torch.autograd.grad(y.sum(), [y0, *params])):
        result[f"partial_grad{i}"] = g
    return result


def odeint_events(torch):
    """``odeint_event``: the time a decaying state crosses a threshold, the state there, and the
    event time's gradient with respect to the initial state and a parameter."""
    from torchdiffeq import odeint_adjoint, odeint_event
    rate = torch.tensor(0.7, dtype=torch.float64, requires_grad=True)
    y0 = torch.tensor([2.0, 1.0], dtype=torch.float64, requires_grad=True)

    class Decay(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.rate = torch.nn.Parameter(rate)

        def forward(self, t, y):
            return -self.rate * y + torch.stack([torch.zeros_like(t), torch.sin(t)])

    func = Decay()
    event_t, ys = odeint_event(func, y0, torch.tensor(0.0, dtype=torch.float64),
                               event_fn=lambda t, y: y[0] - 0.5, reverse_time=False,
                               odeint_interface=odeint_adjoint, rtol=1e-10, atol=1e-12)
    grads = torch.autograd.grad(event_t, [y0, func.rate])
    return {"event_t": event_t, "event_y": ys[-1], "grad_y0": grads[0], "grad_rate": grads[1]}


def neural_ode_training(torch):
    """A neural ODE fit to a spiral in float32 with Adam: eight steps through rk4 (backprop)
    and four through dopri5 with the adjoint."""
    from torchdiffeq import odeint, odeint_adjoint
    torch.manual_seed(2)
    func = _ode_func(torch)
    t = torch.linspace(0.0, 2.0, 10)
    true = torch.stack([torch.cos(2 * t) * torch.exp(-0.3 * t),
                        torch.sin(2 * t) * torch.exp(-0.3 * t)], -1)
    y0 = true[:1]
    opt = torch.optim.Adam(func.parameters(), lr=0.02)
    losses = []
    for step in range(12):
        opt.zero_grad()
        if step < 8:
            y = odeint(func, y0, t, method="rk4", options={"step_size": 0.1})
        else:
            y = odeint_adjoint(func, y0, t, rtol=1e-5, atol=1e-6)
        loss = (y[:, 0] - true).abs().mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    result = {"losses": np.array(losses, dtype=np.float32)}
    for i, p in enumerate(func.parameters()):
        result[f"param{i}"] = p
    return result


# -- torchopt ------------------------------------------------------------------------------------

def torchopt_functional(torch):
    """torchopt's functional optimizers: ``adam`` with ``apply_updates``; a ``chain`` of
    gradient clipping and Nesterov SGD on a linear schedule; ``FuncOptimizer`` over a dict of
    parameters (``torch.autograd.grad`` with dict inputs) with seven optimizers; the
    ``torch.optim``-like ``Adam``."""
    import torchopt
    from torch.func import functional_call
    torch.manual_seed(3)
    net = _mlp(torch, [3, 8, 1], torch.nn.Tanh).double()
    x = torch.randn(16, 3, dtype=torch.float64)
    y = torch.randn(16, 1, dtype=torch.float64)
    names = [n for n, _ in net.named_parameters()]

    def loss_fn(params):
        return ((functional_call(net, dict(zip(names, params)), (x,)) - y) ** 2).mean()

    result = {}
    opt = torchopt.adam(lr=0.05)
    params = tuple(p.detach().clone().requires_grad_() for p in net.parameters())
    state = opt.init(params)
    losses = []
    for _ in range(5):
        loss = loss_fn(params)
        grads = torch.autograd.grad(loss, params)
        updates, state = opt.update(grads, state, params=params, inplace=False)
        params = torchopt.apply_updates(params, updates, inplace=False)
        losses.append(loss.item())
    result["adam_losses"] = np.array(losses)
    for i, p in enumerate(params):
        result[f"adam_param{i}"] = p
    result["adam_mu"] = state[0].mu[0]
    result["adam_nu"] = state[0].nu[0]

    chain = torchopt.chain(torchopt.clip.clip_grad_norm(max_norm=1.0),
                           torchopt.sgd(lr=torchopt.schedule.linear_schedule(0.1, 0.01, 3),
                                        momentum=0.9, nesterov=True))
    p = (torch.tensor([1.5, -0.5, 2.0], dtype=torch.float64, requires_grad=True),)
    state = chain.init(p)
    for _ in range(4):
        g = torch.autograd.grad((p[0] ** 4).sum(), p)
        updates, state = chain.update(g, state, inplace=False)
        p = torchopt.apply_updates(p, updates, inplace=False)
    result["chain"] = p[0]

    makers = {"adamw": lambda: torchopt.adamw(lr=0.1, weight_decay=0.1),
              "rmsprop": lambda: torchopt.rmsprop(lr=0.1, momentum=0.5, centered=True),
              "adagrad": lambda: torchopt.adagrad(lr=0.1),
              "adamax": lambda: torchopt.adamax(lr=0.1),
              "radam": lambda: torchopt.radam(lr=0.1),
              "adadelta": lambda: torchopt.adadelta(lr=0.5),
              "adam_moment_grad": lambda: torchopt.adam(lr=0.1, moment_requires_grad=True)}
    goal = torch.arange(3.0, dtype=torch.float64)
    for name, make in makers.items():
        fopt = torchopt.FuncOptimizer(make())
        q = {"a": torch.ones(3, dtype=torch.float64, requires_grad=True)}
        for _ in range(3):
            q = fopt.step(((q["a"] - goal) ** 2 * goal.exp()).sum(), q)
        result[f"func_{name}"] = q["a"]
        result[f"func_{name}_keeps_graph"] = np.array(q["a"].grad_fn is not None)

    torch.manual_seed(4)
    model = torch.nn.Linear(3, 1).double()
    opt = torchopt.Adam(model.parameters(), lr=0.1)
    for _ in range(3):
        loss = model(torch.ones(2, 3, dtype=torch.float64)).pow(2).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    result["Adam_weight"] = model.weight
    return result


def torchopt_maml(torch):
    """MAML with torchopt's differentiable optimizers: per task, two ``MetaSGD`` inner steps
    (the updates keep their graph), the query loss, then ``recover_state_dict`` back to the
    meta-parameters saved by ``extract_state_dict``; the outer Adam step differentiates through
    the inner loop. Then a ``MetaAdam`` step, and the module state dict it extracts."""
    import torchopt
    torch.manual_seed(5)
    meta = _mlp(torch, [2, 12, 1], torch.nn.Tanh).double()
    outer = torch.optim.Adam(meta.parameters(), lr=0.01)
    inner = torchopt.MetaSGD(meta, lr=0.3, momentum=0.5)
    xs = [torch.randn(10, 2, dtype=torch.float64) for _ in range(3)]
    losses = []
    for step in range(4):
        net_state = torchopt.extract_state_dict(meta, by="reference", detach_buffers=True)
        opt_state = torchopt.extract_state_dict(inner)
        total = 0.0
        for task, x in enumerate(xs):
            y = torch.sin(x.sum(1, keepdim=True) * (task + 1))
            for _ in range(2):
                inner.step(((meta(x[:5]) - y[:5]) ** 2).mean())
            total = total + ((meta(x[5:]) - y[5:]) ** 2).mean()
            torchopt.recover_state_dict(meta, net_state)
            torchopt.recover_state_dict(inner, opt_state)
        outer.zero_grad()
        total.backward()
        outer.step()
        losses.append(total.item())
    result = {"outer_losses": np.array(losses)}
    for i, p in enumerate(meta.parameters()):
        result[f"meta_param{i}"] = p
    madam = torchopt.MetaAdam(meta, lr=0.1, moment_requires_grad=True)
    x = xs[0]
    for _ in range(2):
        madam.step((meta(x).sum(1) ** 2).mean())
    after = (meta(x).sum(1) ** 2).mean()
    result["metaadam_loss"] = after
    result["metaadam_grad0"] = torch.autograd.grad(after, next(meta.parameters()))[0]
    state = torchopt.extract_state_dict(meta, by="deepcopy")
    result["extracted_param0"] = state.params[0]["weight"]
    result["extracted_keys"] = np.array([",".join(d) for d in state.params])
    return result


def torchopt_implicit(torch):
    """Implicit differentiation (``torchopt.diff.implicit.custom_root``) of ridge regression's
    solution with respect to the regularisation, with the normal-CG, CG and inverse linear
    solvers (functorch.vjp pullbacks nested in one another, in a custom Function's backward),
    beside the gradient by differentiating the closed form."""
    import torchopt
    torch.manual_seed(6)
    X = torch.randn(20, 4, dtype=torch.float64)
    y = torch.randn(20, dtype=torch.float64)
    eye = torch.eye(4, dtype=torch.float64)

    def stationary(params, meta_params, X, y):
        (w,), (lam,) = params, meta_params
        return (2 * X.T @ (X @ w - y) + 2 * lam * w,)

    def solve(params, meta_params, X, y):
        lam = meta_params[0]
        return (torch.linalg.solve(X.T @ X + lam * eye, X.T @ y).detach(),)

    lam = torch.tensor(0.5, dtype=torch.float64, requires_grad=True)
    w0 = torch.zeros(4, dtype=torch.float64)
    result = {}
    solvers = {"normal_cg": torchopt.linear_solve.solve_normal_cg(maxiter=50),
               "cg": torchopt.linear_solve.solve_cg(maxiter=50),
               "inv": torchopt.linear_solve.solve_inv()}
    for name, linear_solve in solvers.items():
        root = torchopt.diff.implicit.custom_root(stationary, argnums=1, solve=linear_solve)
        (w,) = root(solve)((w0,), (lam,), X, y)
        (g,) = torch.autograd.grad((w * torch.arange(1.0, 5.0, dtype=torch.float64)).sum(), lam)
        result[f"{name}_w"] = w
        result[f"{name}_grad"] = g
        result[f"{name}_grad_requires_grad"] = np.array(g.requires_grad)
    w = torch.linalg.solve(X.T @ X + lam * eye, X.T @ y)
    (result["closed_form_grad"],) = torch.autograd.grad(
        (w * torch.arange(1.0, 5.0, dtype=torch.float64)).sum(), lam)
    return result


# -- zuko ----------------------------------------------------------------------------------------

_FLOWS = {
    "nsf": lambda zuko: zuko.flows.NSF(3, 2, transforms=2, hidden_features=[16, 16]),
    "maf": lambda zuko: zuko.flows.MAF(3, 2, transforms=2, hidden_features=[16, 16]),
    "nice": lambda zuko: zuko.flows.NICE(3, 2, transforms=2, hidden_features=[16]),
    "gf": lambda zuko: zuko.flows.GF(3, 2, components=2),
    "sospf": lambda zuko: zuko.flows.SOSPF(3, 2, transforms=2, hidden_features=[16]),
    "naf": lambda zuko: zuko.flows.NAF(3, 2, transforms=1, hidden_features=[16]),
    "unaf": lambda zuko: zuko.flows.UNAF(3, 2, transforms=1, hidden_features=[16]),
    "bpf": lambda zuko: zuko.flows.BPF(3, 2, transforms=1, hidden_features=[16]),
    "cnf": lambda zuko: zuko.flows.CNF(3, 2, hidden_features=[16]),
}


def zuko_flows(torch):
    """Conditional flows of every kind zuko has (spline, affine autoregressive, coupling,
    Gaussianization, sum-of-squares polynomial, neural autoregressive, unconstrained monotonic,
    Bernstein polynomial, continuous) in float64: ``log_prob``, ``rsample`` and the gradient
    of the log-likelihood with respect to the data and the first parameter."""
    import zuko
    result = {}
    for i, (name, make) in enumerate(_FLOWS.items()):
        torch.manual_seed(10 + i)
        flow = make(zuko).double()
        x = torch.randn(6, 3, dtype=torch.float64, requires_grad=True)
        c = torch.randn(6, 2, dtype=torch.float64)
        dist = flow(c)
        log_p = dist.log_prob(x)
        grads = torch.autograd.grad(log_p.sum(), [x, next(flow.parameters())])
        result[f"{name}_log_prob"] = log_p
        result[f"{name}_grad_x"], result[f"{name}_grad_param"] = grads
        result[f"{name}_rsample"] = dist.rsample((2,))
    torch.manual_seed(30)
    gmm = zuko.flows.GMM(3, 2, components=3).double()
    c = torch.randn(4, 2, dtype=torch.float64)
    result["gmm_sample"] = gmm(c).sample((2,))
    result["gmm_log_prob"] = gmm(c).log_prob(result["gmm_sample"])
    return result


def zuko_training(torch):
    """Maximum-likelihood training, float32, Adam: an NSF and a MAF six steps each on
    conditional data, and a CNF (exact divergence through the ODE: the double backward of its
    ELU) three steps in float64."""
    import zuko
    result = {}
    for name, dtype, steps in (("nsf", torch.float32, 6), ("maf", torch.float32, 6),
                               ("cnf", torch.float64, 3)):
        torch.manual_seed(40)
        flow = _FLOWS[name](zuko).to(dtype)
        c = torch.randn(32, 2, dtype=dtype)
        x = torch.cat([c, c[:, :1] * c[:, 1:]], 1) + 0.1 * torch.randn(32, 3, dtype=dtype)
        opt = torch.optim.Adam(flow.parameters(), lr=1e-2)
        losses = []
        for _ in range(steps):
            loss = -flow(c).log_prob(x).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        result[f"{name}_losses"] = np.array(losses, dtype=np.float32 if dtype == torch.float32
                                            else np.float64)
        result[f"{name}_param0"] = next(flow.parameters())
    return result


# -- schedulefree --------------------------------------------------------------------------------

def schedulefree_modes(torch):
    """schedule-free optimizers with their train/eval switching (the parameters moved between
    the averaged x and the gradient point y): AdamW, SGD, RAdam, their reference versions, the
    closure variant and ``ScheduleFreeWrapper`` around ``torch.optim.SGD``, in float64, with
    warmup and weight decay, and a BatchNorm evaluated in eval mode after every step."""
    import schedulefree as sf
    makers = {
        "adamw": lambda p: sf.AdamWScheduleFree(p, lr=0.05, warmup_steps=2, weight_decay=0.01),
        "sgd": lambda p: sf.SGDScheduleFree(p, lr=0.05, warmup_steps=2, momentum=0.9,
                                            weight_decay=0.01),
        "radam": lambda p: sf.RAdamScheduleFree(p, lr=0.05, weight_decay=0.01),
        "adamw_reference": lambda p: sf.AdamWScheduleFreeReference(p, lr=0.05, warmup_steps=2),
        "sgd_reference": lambda p: sf.SGDScheduleFreeReference(p, lr=0.05, warmup_steps=2),
        "adamw_closure": lambda p: sf.AdamWScheduleFreeClosure(p, lr=0.05, warmup_steps=2),
        "wrapper": lambda p: sf.ScheduleFreeWrapper(torch.optim.SGD(p, lr=0.05), momentum=0.9,
                                                    weight_decay_at_y=0.01),
    }
    result = {}
    for name, make in makers.items():
        torch.manual_seed(50)
        # (no bias before the BatchNorm: its gradient is rounding noise, which Adam's
        # normalisation would turn into steps of full size)
        net = torch.nn.Sequential(torch.nn.Linear(4, 8, bias=False), torch.nn.BatchNorm1d(8),
                                  torch.nn.ReLU(), torch.nn.Linear(8, 1)).double()
        opt = make(net.parameters())
        x = torch.randn(16, 4, dtype=torch.float64)
        y = torch.randn(16, 1, dtype=torch.float64)
        train, evals = [], []
        for _ in range(5):
            net.train()
            if name != "adamw_closure":  # (the closure variant has no modes)
                opt.train()

            def closure():
                loss = ((net(x) - y) ** 2).mean()
                loss.backward()
                return loss
            opt.zero_grad()
            if name == "adamw_closure":
                loss = opt.step(closure)
            else:
                loss = closure()
                opt.step()
            train.append(loss.item())
            net.eval()
            if name != "adamw_closure":
                opt.eval()
            with torch.no_grad():
                evals.append(((net(x) - y) ** 2).mean().item())
        result[f"{name}_train"] = np.array(train)
        result[f"{name}_eval"] = np.array(evals)
        for i, p in enumerate(net.parameters()):
            result[f"{name}_param{i}"] = p
        state = opt.state_dict()["state"]
        result[f"{name}_state_keys"] = np.array(sorted(state[0]))
        result[f"{name}_z0"] = state[0]["z"]
    return result


# library -> its cases
LIBRARIES = {"torchdiffeq": (odeint_solvers, odeint_adjoint_grads, odeint_events,
                             neural_ode_training),
             "torchopt": (torchopt_functional, torchopt_maml, torchopt_implicit),
             "zuko": (zuko_flows, zuko_training),
             "schedulefree": (schedulefree_modes,)}
CASES = {f.__name__: f for cases in LIBRARIES.values() for f in cases}
LIBRARY = {f.__name__: lib for lib, cases in LIBRARIES.items() for f in cases}


def run(torch, name):
    """Run case ``name``; return its results as arrays."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (functorch's and the libraries' deprecation notices)
        return _arrays(CASES[name](torch))


if __name__ == "__main__":  # the ember side, under python -m ember.as_torch
    import torch
    directory, names = sys.argv[1], sys.argv[2].split(",")
    assert torch is sys.modules["ember"], torch
    for name in names:
        np.savez(os.path.join(directory, f"{name}_ember.npz"), **run(torch, name))
