"""Short programs of torch-optimizer, lion-pytorch, entmax, skorch, e3nn and torchcde, run the same
way in PyTorch and in ember (through ``ember.as_torch``): tests/test_more_libs.py runs
``python tests/_more_libs_programs.py torch DIR NAMES`` and
``python -m ember.as_torch tests/_more_libs_programs.py ember DIR NAMES`` side by side
(``helpers.pytorch_beside_ember``), and each writes what every case computed to
DIR/NAME_<library>.npz.

Every case seeds torch's generator itself: ember's CPU generator draws PyTorch's numbers, so
initial weights, Adahessian's Rademacher vectors and skorch's shuffled batches are the same on
both sides. Inputs are fixed NumPy arrays; nothing is downloaded."""
import os
import sys
import warnings

import numpy as np


def _x(rs, *shape):
    return rs.randn(*shape).astype(np.float32)


def _mlp(torch):
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.Tanh(), torch.nn.Linear(16, 8),
                               torch.nn.GELU(), torch.nn.Linear(8, 3))


def _params(model, prefix):
    return {prefix + k: v.detach().numpy().copy() for k, v in model.state_dict().items()}


def _train(torch, make_optimizer, steps=4, create_graph=False):
    """``steps`` steps of ``make_optimizer(params)`` on an MLP's cross-entropy: the losses and
    the parameters after them."""
    rs = np.random.RandomState(0)
    x, y = torch.from_numpy(_x(rs, 32, 6)), torch.from_numpy(rs.randint(0, 3, 32))
    model = _mlp(torch)
    optimizer = make_optimizer(model.parameters())
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward(create_graph=create_graph)
        optimizer.step()
        losses.append(loss.item())
    return np.array(losses), _params(model, "param.")


# -- torch-optimizer -------------------------------------------------------------------------------

def _torch_optimizer(torch, names):
    import torch_optimizer as optim
    makers = {
        "AccSGD": lambda p: optim.AccSGD(p, lr=0.05),
        "AdaBelief": lambda p: optim.AdaBelief(p, lr=0.01, weight_decay=1e-3, amsgrad=True),
        "AdaBound": lambda p: optim.AdaBound(p, lr=0.01, final_lr=0.1, amsbound=True),
        "AdaMod": lambda p: optim.AdaMod(p, lr=0.01, weight_decay=1e-3),
        "Adafactor": lambda p: optim.Adafactor(p, lr=0.01),
        "Adahessian": lambda p: optim.Adahessian(p, lr=0.1, seed=3),
        "AdamP": lambda p: optim.AdamP(p, lr=0.01, weight_decay=1e-3, nesterov=True),
        "AggMo": lambda p: optim.AggMo(p, lr=0.05),
        "Apollo": lambda p: optim.Apollo(p, lr=0.01, warmup=2),
        "DiffGrad": lambda p: optim.DiffGrad(p, lr=0.01),
        "Lamb": lambda p: optim.Lamb(p, lr=0.01, weight_decay=1e-3),
        "Lookahead_Yogi": lambda p: optim.Lookahead(optim.Yogi(p, lr=0.01), k=2, alpha=0.5),
        "MADGRAD": lambda p: optim.MADGRAD(p, lr=0.01, weight_decay=1e-3),
        "NovoGrad": lambda p: optim.NovoGrad(p, lr=0.01, grad_averaging=True),
        "PID": lambda p: optim.PID(p, lr=0.05, momentum=0.9, integral=2.0, derivative=5.0),
        "QHAdam": lambda p: optim.QHAdam(p, lr=0.01),
        "QHM": lambda p: optim.QHM(p, lr=0.05),
        "RAdam": lambda p: optim.RAdam(p, lr=0.01),
        "Ranger": lambda p: optim.Ranger(p, lr=0.01, k=2),
        "RangerQH": lambda p: optim.RangerQH(p, lr=0.01, k=2),
        "RangerVA": lambda p: optim.RangerVA(p, lr=0.01, k=2, n_sma_threshhold=2),
        "SGDP": lambda p: optim.SGDP(p, lr=0.05, momentum=0.9, nesterov=True),
        "SGDW": lambda p: optim.SGDW(p, lr=0.05, momentum=0.9, weight_decay=1e-3),
        "SWATS": lambda p: optim.SWATS(p, lr=0.01, nesterov=True),
        "Shampoo": lambda p: optim.Shampoo(p, lr=0.01, epsilon=0.1, update_freq=2),
        "A2GradExp": lambda p: optim.A2GradExp(p, lips=2.0),
        "Yogi": lambda p: optim.Yogi(p, lr=0.01),
    }
    result = {}
    for name in names:
        losses, params = _train(torch, makers[name], create_graph=name == "Adahessian")
        result[f"{name}.losses"] = losses
        result.update({f"{name}.{k}": v for k, v in params.items()})
    return result


def _torch_optimizer_adaptive(torch):
    """The Adam family and its corrections (bounds, belief, rectification, projection,
    look-ahead, Hessian diagonal from Rademacher probes through a double backward)."""
    return _torch_optimizer(torch, ["AdaBelief", "AdaBound", "AdaMod", "Adafactor",
                                    "Adahessian", "AdamP", "Apollo", "DiffGrad", "Lamb",
                                    "Lookahead_Yogi", "NovoGrad", "QHAdam", "RAdam", "Ranger",
                                    "RangerQH", "RangerVA", "SWATS", "Yogi"])


def _torch_optimizer_momentum(torch):
    """The SGD family (accelerated, aggregated, quasi-hyperbolic, PID, projected, decoupled
    decay), MADGRAD's dual averaging, A2Grad and Shampoo's matrix-root preconditioners."""
    return _torch_optimizer(torch, ["AccSGD", "AggMo", "MADGRAD", "PID", "QHM", "SGDP", "SGDW",
                                    "A2GradExp", "Shampoo"])


# -- lion-pytorch ----------------------------------------------------------------------------------

def _lion(torch):
    """Lion (the sign of an interpolated momentum), with coupled and decoupled weight decay and
    other betas."""
    from lion_pytorch import Lion
    result = {}
    for name, kwargs in [("plain", {}), ("decay", {"weight_decay": 0.1}),
                         ("decoupled", {"weight_decay": 0.1, "decoupled_weight_decay": True}),
                         ("betas", {"betas": (0.8, 0.95)})]:
        losses, params = _train(torch, lambda p: Lion(p, lr=3e-3, **kwargs), steps=5)
        result[f"{name}.losses"] = losses
        result.update({f"{name}.{k}": v for k, v in params.items()})
    return result


# -- entmax ----------------------------------------------------------------------------------------

def _entmax(torch):
    """The sort-based sparsemax and 1.5-entmax, their bisection forms (fixed and learned alpha,
    over a middle dim), normmax and budget bisection, and the Fenchel-Young losses: values and
    the gradients their custom autograd functions give."""
    import entmax
    rs = np.random.RandomState(0)
    z = torch.from_numpy(_x(rs, 5, 3, 7) * 2).requires_grad_()
    y = torch.from_numpy(rs.randint(0, 7, 5))
    alpha = torch.tensor([[1.2], [1.5], [1.9], [2.0], [1.33]], requires_grad=True)
    weight = torch.from_numpy(_x(rs, 5, 3, 7))
    maps = {"sparsemax": lambda t: entmax.sparsemax(t, dim=-1),
            "sparsemax_k": lambda t: entmax.sparsemax(t, dim=1, k=2),
            "entmax15": lambda t: entmax.entmax15(t, dim=-1),
            "entmax15_k": lambda t: entmax.entmax15(t, dim=-1, k=3),
            "sparsemax_bisect": lambda t: entmax.sparsemax_bisect(t, dim=1),
            "entmax_bisect": lambda t: entmax.entmax_bisect(t, alpha=1.7, dim=-1),
            "normmax_bisect": lambda t: entmax.normmax_bisect(t, alpha=2, dim=-1),
            "budget_bisect": lambda t: entmax.budget_bisect(t, budget=2, dim=-1),
            "entmax_bisect_alpha": lambda t: entmax.entmax_bisect(t[:, 0], alpha=alpha)}
    result = {}
    for name, fn in maps.items():
        p = fn(z)
        grads = torch.autograd.grad((p * (weight if p.dim() == 3 else weight[:, 0])).sum(),
                                    [z, alpha] if name.endswith("alpha") else [z])
        result[name] = p.detach().numpy()
        for i, g in enumerate(grads):
            result[f"{name}.grad{i}"] = g.numpy()
    flat = z[:, 0]
    losses = {"sparsemax_loss": entmax.SparsemaxLoss(),
              "entmax15_loss": entmax.Entmax15Loss(k=4, reduction="sum"),
              "sparsemax_bisect_loss": entmax.SparsemaxBisectLoss(n_iter=40),
              "entmax_bisect_loss": entmax.EntmaxBisectLoss(alpha=1.4, reduction="none"),
              "sparsemax_ignore": entmax.SparsemaxLoss(ignore_index=int(y[0]))}
    for name, loss_fn in losses.items():
        loss = loss_fn(flat, y)
        (g,) = torch.autograd.grad(loss.sum(), [z])
        result[name] = loss.detach().numpy()
        result[f"{name}.grad"] = g.numpy()
    return result


# -- skorch ----------------------------------------------------------------------------------------

def _skorch(torch):
    """skorch's NeuralNetClassifier with a validation split, shuffled batches, an LR scheduler
    and EpochScoring callbacks, in a scikit-learn Pipeline; predict_proba, score and the
    history it records; a NeuralNetRegressor fitted with partial_fit; and a GridSearchCV over
    the classifier's learning rate."""
    from sklearn.datasets import make_classification, make_regression
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler
    from skorch import NeuralNetClassifier, NeuralNetRegressor
    from skorch.callbacks import EpochScoring, LRScheduler

    class Net(torch.nn.Module):
        def __init__(self, hidden=16, out=2):
            super().__init__()
            self.body = torch.nn.Sequential(torch.nn.Linear(8, hidden), torch.nn.ReLU(),
                                            torch.nn.Dropout(0.2), torch.nn.Linear(hidden, out))

        def forward(self, X):
            return self.body(X)

    X, y = make_classification(200, 8, n_informative=5, random_state=0)
    X, y = X.astype(np.float32), y.astype(np.int64)
    torch.manual_seed(0)
    clf = NeuralNetClassifier(Net, criterion=torch.nn.CrossEntropyLoss, max_epochs=4, lr=0.1,
                              batch_size=32, iterator_train__shuffle=True,
                              optimizer=torch.optim.SGD, optimizer__momentum=0.9,
                              callbacks=[EpochScoring("roc_auc", lower_is_better=False),
                                         LRScheduler("StepLR", step_size=2, gamma=0.5)],
                              verbose=0)
    pipe = Pipeline([("scale", StandardScaler()), ("net", clf)]).fit(X, y)
    history = clf.history
    result = {"clf.train_loss": np.array(history[:, "train_loss"]),
              "clf.valid_loss": np.array(history[:, "valid_loss"]),
              "clf.valid_acc": np.array(history[:, "valid_acc"]),
              "clf.roc_auc": np.array(history[:, "roc_auc"]),
              "clf.proba": pipe.predict_proba(X), "clf.predict": pipe.predict(X),
              "clf.score": np.array(pipe.score(X, y))}
    result.update(_params(clf.module_, "clf.param."))

    Xr, yr = make_regression(120, 8, noise=0.1, random_state=1)
    Xr, yr = Xr.astype(np.float32), (yr / 100).astype(np.float32)[:, None]
    torch.manual_seed(0)
    reg = NeuralNetRegressor(Net, module__out=1, max_epochs=3, lr=0.01, batch_size=40,
                             optimizer=torch.optim.Adam, train_split=None, verbose=0)
    reg.partial_fit(Xr, yr).partial_fit(Xr, yr)
    result["reg.train_loss"] = np.array(reg.history[:, "train_loss"])
    result["reg.predict"] = reg.predict(Xr)

    torch.manual_seed(0)
    search = GridSearchCV(NeuralNetClassifier(Net, max_epochs=2, batch_size=50, train_split=None,
                                              criterion=torch.nn.CrossEntropyLoss, verbose=0),
                          {"lr": [0.05, 0.2], "module__hidden": [8, 16]}, cv=2,
                          scoring="accuracy", refit=False)
    search.fit(X, y)
    result["grid.mean_test_score"] = search.cv_results_["mean_test_score"]
    return result


# -- e3nn ------------------------------------------------------------------------------------------

def _e3nn(torch):
    """An equivariant point-cloud layer of e3nn: spherical harmonics of the edge vectors,
    radial embeddings, a weighted FullyConnectedTensorProduct whose weights an MLP makes,
    scatter-summed messages, a gated nonlinearity and an o3.Linear readout (e3nn compiles its
    tensor products and linears with torch.fx and scripts them with TorchScript); outputs,
    gradients and three Adam steps, the rotation equivariance of the output, and a tensor
    product compiled by e3nn.util.jit.compile (TorchScript in PyTorch)."""
    from e3nn import nn as enn, o3
    from e3nn.math import soft_one_hot_linspace
    rs = np.random.RandomState(0)
    pos = torch.from_numpy(_x(rs, 10, 3))
    feats = torch.from_numpy(_x(rs, 10, 4))
    src, dst = np.nonzero(np.ones((10, 10)) - np.eye(10))
    src, dst = torch.from_numpy(src), torch.from_numpy(dst)
    torch.manual_seed(0)
    irreps_in, irreps_sh = o3.Irreps("4x0e"), o3.Irreps.spherical_harmonics(2)
    gate = enn.Gate("8x0e", [torch.tanh], "6x0e", [torch.sigmoid], "4x1o + 2x2e")
    tp = o3.FullyConnectedTensorProduct(irreps_in, irreps_sh, gate.irreps_in,
                                        shared_weights=False)
    radial = enn.FullyConnectedNet([6, 16, tp.weight_numel], torch.nn.functional.silu)
    readout = o3.Linear(gate.irreps_out, "2x0e + 1x1o")
    modules = torch.nn.ModuleList([tp, radial, readout])

    def forward(pos, feats):
        vec = pos[dst] - pos[src]
        sh = o3.spherical_harmonics(irreps_sh, vec, normalize=True,
                                    normalization="component")
        emb = soft_one_hot_linspace(vec.norm(dim=1), 0.0, 4.0, 6, basis="smooth_finite",
                                    cutoff=True).mul(6 ** 0.5)
        msg = tp(feats[src], sh, radial(emb))
        node = torch.zeros(10, msg.shape[1]).index_add(0, dst, msg) / 3.0
        return readout(gate(node))

    optimizer = torch.optim.Adam(modules.parameters(), lr=0.01)
    result, losses = {}, []
    for step in range(3):
        optimizer.zero_grad()
        out = forward(pos, feats)
        loss = out.pow(2).mean()
        loss.backward()
        if step == 0:
            result["out"] = out.detach().numpy()
            result.update({"grad." + k: p.grad.numpy() for k, p in modules.named_parameters()})
        optimizer.step()
        losses.append(loss.item())
    result["losses"] = np.array(losses)
    result.update(_params(modules, "param."))
    with torch.no_grad():
        rot = o3.rand_matrix()
        out = forward(pos, feats)
        rotated = forward(pos @ rot.T, feats)
        D = readout.irreps_out.D_from_matrix(rot)
        result["equivariance_error"] = np.array((rotated - out @ D.T).abs().max().item() < 1e-4)
        result["wigner_D"] = D.numpy()
        result["sh_l3"] = o3.spherical_harmonics(3, pos, normalize=False).numpy()
    # e3nn.util.jit.compile scripts the module and the fx GraphModules inside it
    from e3nn.util.jit import compile as script
    torch.manual_seed(1)
    small = o3.FullyConnectedTensorProduct("2x0e + 1x1o", "1x0e + 1x1o", "3x0e + 2x1o")
    x1, x2 = torch.from_numpy(_x(rs, 5, 5)), torch.from_numpy(_x(rs, 5, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (ember says how it runs what TorchScript would)
        result["scripted_tp"] = script(small)(x1, x2).detach().numpy()
    return result


# -- torchcde --------------------------------------------------------------------------------------

def _torchcde(torch):
    """A neural controlled differential equation on irregular series with missing values:
    natural cubic, Hermite (backward differences) and rectilinear linear interpolation
    coefficients, the splines' values, derivatives and intervals, three Adam steps of a
    classifier on the final hidden state of cdeint with fixed-step rk4 and midpoint solvers
    (backpropagated through the solver, and by the adjoint method), and an adaptive dopri5
    solve in float64 (not backpropagated: through its ~500 steps that takes PyTorch 2 s)."""
    import torchcde
    rs = np.random.RandomState(0)
    t = torch.linspace(0, 1, 9)
    x = np.cumsum(_x(rs, 4, 9, 2) * 0.3, axis=1)
    x[0, 3, 1] = x[2, 5, 0] = x[3, 1:3, 1] = np.nan  # missing observations
    x = torch.cat([t.expand(4, 9)[..., None], torch.from_numpy(x)], dim=-1)
    y = torch.tensor([0.0, 1.0, 1.0, 0.0])
    result = {}
    coeffs = {"cubic": torchcde.natural_cubic_coeffs(x, t),
              "hermite": torchcde.hermite_cubic_coefficients_with_backward_differences(x, t),
              "linear": torchcde.linear_interpolation_coeffs(x, rectilinear=0)}
    for name, c in coeffs.items():
        result[f"coeffs.{name}"] = c.numpy()
    spline = torchcde.CubicSpline(coeffs["cubic"], t)
    probe = torch.tensor([0.0, 0.3, 0.55, 1.0])
    result["spline.evaluate"] = torch.stack([spline.evaluate(s) for s in probe]).numpy()
    result["spline.derivative"] = torch.stack([spline.derivative(s) for s in probe]).numpy()
    result["spline.interval"] = spline.interval.numpy()
    linear = torchcde.LinearInterpolation(coeffs["linear"])
    result["linear.evaluate"] = linear.evaluate(linear.interval[1] * 0.37).numpy()

    class Field(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear1 = torch.nn.Linear(8, 16)
            self.linear2 = torch.nn.Linear(16, 8 * 3)

        def forward(self, t, z):
            return self.linear2(self.linear1(z).relu()).tanh().view(*z.shape, 3)

    torch.manual_seed(0)
    field, initial, readout = Field(), torch.nn.Linear(3, 8), torch.nn.Linear(8, 1)
    modules = torch.nn.ModuleList([field, initial, readout])
    optimizer = torch.optim.Adam(modules.parameters(), lr=0.01)
    losses = []
    for step, (kind, kwargs) in enumerate([
            ("cubic", {"method": "rk4", "options": {"step_size": 0.125}}),
            ("hermite", {"method": "midpoint", "options": {"step_size": 0.0625}}),
            ("cubic", {"method": "rk4", "options": {"step_size": 0.125}, "adjoint": True})]):
        X = torchcde.CubicSpline(coeffs[kind], t)
        z0 = initial(X.evaluate(X.interval[0]))
        zt = torchcde.cdeint(X=X, z0=z0, func=field, t=X.interval, **kwargs)
        logits = readout(zt[:, -1]).squeeze(-1)
        loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, y)
        optimizer.zero_grad()
        loss.backward()
        result[f"step{step}.zt"] = zt.detach().numpy()
        result.update({f"step{step}.grad.{k}": p.grad.numpy().copy()
                       for k, p in modules.named_parameters()})
        optimizer.step()
        losses.append(loss.item())
    result["losses"] = np.array(losses)
    result.update(_params(modules, "param."))
    # the adaptive solver in float64 along the C2 natural spline, tightly: in float32, or along
    # the Hermite spline's kinks, its step-size control turns rounding into other steps
    # (PyTorch's own take 285 to 303 steps as z0 moves by 1e-7)
    import copy
    field64, initial64 = copy.deepcopy(field).double(), copy.deepcopy(initial).double()
    X = torchcde.CubicSpline(coeffs["cubic"].double(), t.double())
    with torch.no_grad():
        zt = torchcde.cdeint(X=X, z0=initial64(X.evaluate(X.interval[0])), func=field64,
                             t=X.interval, method="dopri5", rtol=1e-7, atol=1e-9)
    result["dopri5.zt"] = zt.detach().numpy()
    return result


CASES = {"torch_optimizer_adaptive": _torch_optimizer_adaptive,
         "torch_optimizer_momentum": _torch_optimizer_momentum, "lion": _lion,
         "entmax": _entmax, "skorch": _skorch, "e3nn": _e3nn, "torchcde": _torchcde}


def run(torch, name):
    """Case ``name``'s results, as arrays keyed by name."""
    return {k: np.asarray(v) for k, v in CASES[name](torch).items()}


if __name__ == "__main__":
    library, directory, names = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
    import torch
    # under ember.as_torch, torch *is* the ember module
    assert (sys.modules.get("ember") is torch) == (library == "ember"), library
    for name in names:
        np.savez(os.path.join(directory, f"{name}_{library}.npz"), **run(torch, name))
