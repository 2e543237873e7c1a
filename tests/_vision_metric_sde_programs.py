"""Short training programs of segmentation_models_pytorch, pytorch-metric-learning, torchsde,
torch-ema and normflows, run the same way in PyTorch and in ember (through ``ember.as_torch``):
tests/test_vision_metric_sde_libs.py runs each case in PyTorch in its own process, and
``python -m ember.as_torch tests/_vision_metric_sde_programs.py DIR NAMES`` runs them in ember
with PyTorch's weights (DIR/NAME_weights.npz), writing what each computed to DIR/NAME_ember.npz.

No pretrained weights are loaded (``encoder_weights=None``) and no data is downloaded: inputs
are fixed NumPy arrays. The libraries' own random draws (torchsde's Brownian motion, from
``torch.Generator(...).manual_seed(...)`` per interval; EfficientNet's drop-connect and the FPN
decoder's dropout; normflows' base samples and its TwoMoons target) come from the global or a
seeded generator: ember's CPU generator draws PyTorch's numbers, so those draws are compared
as they are (the Brownian increments and the flow's samples are results of their own), not
replaced by explicit increments."""
import os
import sys

import numpy as np


def _x(rs, *shape):
    return rs.randn(*shape).astype(np.float32)


# -- segmentation_models_pytorch -------------------------------------------------------------------

def _smp_unet(torch):
    import segmentation_models_pytorch as smp
    return smp.Unet("resnet18", encoder_weights=None, decoder_channels=(64, 32, 16, 16, 8),
                    classes=3)


def _smp_fpn(torch):
    import segmentation_models_pytorch as smp
    return smp.FPN("efficientnet-b0", encoder_weights=None, decoder_pyramid_channels=64,
                   decoder_segmentation_channels=32, classes=1)


def _run_smp(torch, model, rs, multiclass):
    """Three SGD steps (momentum, weight decay) of a Dice + Focal loss (and, for the binary
    mask, smp's Jaccard, Tversky and soft-BCE losses) in training mode: BatchNorm's batch
    statistics and running buffers, EfficientNet's drop-connect draws, the encoder's and
    decoder's convolutions, upsampling and skip concatenations. The learning rate is one at
    which float32 rounding does not steer the steps: from 0.003 on, PyTorch itself, started
    from the parameters of ember's first step (PyTorch's own to 1e-4 of each one's largest
    value), computes a second gradient 16% away in the FPN's decoder. The Lovasz losses, whose
    gradient follows the sort order of the errors, are compared on fixed logits."""
    import segmentation_models_pytorch as smp
    size = 64 if multiclass else 128  # (EfficientNet's last stage: 4 x 4, BatchNorm over 32)
    x = torch.from_numpy(_x(rs, 2, 3, size, size))
    mode = "multiclass" if multiclass else "binary"
    if multiclass:
        y = torch.from_numpy(rs.randint(0, 3, (2, size, size)))
        losses = [smp.losses.DiceLoss(mode), smp.losses.FocalLoss(mode)]
    else:
        y = torch.from_numpy((rs.rand(2, 1, size, size) > 0.6).astype(np.float32))
        losses = [smp.losses.DiceLoss(mode), smp.losses.FocalLoss(mode),
                  smp.losses.JaccardLoss(mode), smp.losses.TverskyLoss(mode),
                  smp.losses.SoftBCEWithLogitsLoss(smooth_factor=0.1)]
    optimizer = torch.optim.SGD(model.parameters(), lr=0.001, momentum=0.9, weight_decay=1e-4)
    result, history = {}, []
    model.train()
    for step in range(3):
        optimizer.zero_grad()
        out = model(x)
        parts = [loss(out, y) for loss in losses]
        sum(parts).backward()
        if step == 0:
            result["out"] = out.detach().numpy()
            result["loss_parts"] = np.array([p.item() for p in parts])
            result.update(_grads(model))
        optimizer.step()
        history.append(sum(p.item() for p in parts))
    result["losses"] = np.array(history)
    model.eval()
    with torch.no_grad():
        result["eval_out"] = model(x).numpy()
    result.update(_state(model, "after."))
    logits = torch.from_numpy(_x(rs, 2, 3 if multiclass else 1, 16, 16)).requires_grad_()
    target = y[..., :16, :16]
    lovasz = smp.losses.LovaszLoss(mode)(logits, target)
    lovasz.backward()
    result.update(lovasz=np.array(lovasz.item()), lovasz_grad=logits.grad.numpy())
    return result


# -- pytorch-metric-learning -----------------------------------------------------------------------

def _embedder(torch):
    return torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.ReLU(), torch.nn.Linear(32, 16))


def _pml_triplet(torch):
    return torch.nn.ModuleDict({"net": _embedder(torch)})


def _pml_arcface(torch):
    from pytorch_metric_learning import losses
    return torch.nn.ModuleDict({
        "net": _embedder(torch),
        "arcface": losses.ArcFaceLoss(num_classes=4, embedding_size=16),
        "subcenter": losses.SubCenterArcFaceLoss(num_classes=4, embedding_size=16),
        "cosface": losses.CosFaceLoss(num_classes=4, embedding_size=16)})


def _run_pml(torch, model, rs, name):
    """Three SGD steps of an embedding net: mined triplets (semihard TripletMarginMiner) and
    pairs (MultiSimilarityMiner) with Lp and cosine distances, or the classification-style
    losses whose class weights are trained with the net. 24 samples of 4 classes."""
    from pytorch_metric_learning import distances, losses, miners
    x = torch.from_numpy(_x(rs, 24, 8))
    y = torch.from_numpy(rs.randint(0, 4, 24))
    net = model["net"]
    if name == "pml_triplet":
        triplet_miner = miners.TripletMarginMiner(margin=0.2, type_of_triplets="semihard")
        pair_miner = miners.MultiSimilarityMiner(epsilon=0.1)
        fns = [lambda e, h: losses.TripletMarginLoss(margin=0.1)(e, y, h[0]),
               lambda e, h: losses.ContrastiveLoss(pos_margin=0, neg_margin=1,
                                                  distance=distances.LpDistance())(e, y, h[1]),
               lambda e, h: losses.NTXentLoss(temperature=0.07)(e, y),
               lambda e, h: losses.MultiSimilarityLoss()(e, y, h[1]),
               lambda e, h: losses.TripletMarginLoss(
                   distance=distances.CosineSimilarity())(e, y)]

        def mine(e):
            return triplet_miner(e, y), pair_miner(e, y)
    else:
        fns = [lambda e, h, k=k: model[k](e, y) for k in ("arcface", "subcenter", "cosface")]

        def mine(e):
            return None
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.5)
    result, history = {}, []
    for step in range(3):
        optimizer.zero_grad()
        e = net(x)
        mined = mine(e)
        parts = [fn(e, mined) for fn in fns]
        sum(parts).backward()
        if mined is not None:
            for i, tup in enumerate(mined):
                for j, t in enumerate(tup):
                    result[f"mined{step}.{i}.{j}"] = t.numpy()
        if step == 0:
            result["loss_parts"] = np.array([p.item() for p in parts])
            result.update(_grads(model))
        optimizer.step()
        history.append(sum(p.item() for p in parts))
    result["losses"] = np.array(history)
    result.update(_state(model, "after."))
    return result


# -- torchsde --------------------------------------------------------------------------------------

def _sde_class(torch):
    class SDE(torch.nn.Module):
        """A neural SDE: an MLP drift and a sigmoid diagonal diffusion, Ito."""
        noise_type, sde_type = "diagonal", "ito"

        def __init__(self):
            super().__init__()
            self.drift = torch.nn.Sequential(torch.nn.Linear(3, 16), torch.nn.Tanh(),
                                             torch.nn.Linear(16, 3))
            self.diffusion = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.Sigmoid())

        def f(self, t, y):
            return self.drift(y)

        def g(self, t, y):
            return self.diffusion(y)
    return SDE


def _sde(torch):
    return _sde_class(torch)()


def _run_sde(torch, sde, rs):
    """sdeint by Euler, Milstein and SRK (space-time Levy area) over seeded BrownianIntervals,
    and sdeint_adjoint (its backward integrates the adjoint SDE): paths, the gradients of a
    weighted sum of each path for y0 and the parameters, and the Brownian increments drawn."""
    import torchsde
    y0_np = _x(rs, 4, 3)
    ts = torch.linspace(0, 1, 5)
    w = torch.from_numpy(_x(rs, 5, 4, 3))
    result = {}
    for method in ("euler", "milstein", "srk", "adjoint"):
        y0 = torch.from_numpy(y0_np.copy()).requires_grad_()
        levy = "space-time" if method == "srk" else "none"
        bm = torchsde.BrownianInterval(t0=0.0, t1=1.0, size=(4, 3), entropy=42,
                                       levy_area_approximation=levy)
        sde.zero_grad()
        if method == "adjoint":
            ys = torchsde.sdeint_adjoint(sde, y0, ts, bm=bm, method="euler", dt=0.05,
                                         adjoint_params=tuple(sde.parameters()) + (y0,))
        else:
            ys = torchsde.sdeint(sde, y0, ts, bm=bm, method=method, dt=0.05)
        (ys * w).sum().backward()
        result[f"{method}.ys"] = ys.detach().numpy()
        result[f"{method}.grad_y0"] = y0.grad.numpy()
        result.update(_grads(sde, f"{method}.grad."))
        result[f"{method}.increment"] = bm(0.25, 0.7).numpy()
    tree = torchsde.BrownianTree(t0=0.0, t1=1.0, w0=torch.zeros(4, 3), entropy=7)
    result["tree"] = np.stack([tree(0.0, t).numpy() for t in (0.1, 0.5, 0.9)])
    return result


# -- torch-ema -------------------------------------------------------------------------------------

def _ema_model(torch):
    # (no bias before the batch norm: its gradient would be rounding noise, which Adam scales up)
    return torch.nn.Sequential(torch.nn.Linear(4, 8, bias=False), torch.nn.BatchNorm1d(8),
                               torch.nn.ReLU(), torch.nn.Linear(8, 1))


def _run_ema(torch, model, rs):
    """Four Adam steps, each followed by an EMA update (with num_updates warm-up); evaluation
    with the averaged weights (store, copy_to, restore under average_parameters), the shadow
    parameters through state_dict into a second EMA, and copy_to for good."""
    from torch_ema import ExponentialMovingAverage
    x, y = torch.from_numpy(_x(rs, 16, 4)), torch.from_numpy(_x(rs, 16, 1))
    ema = ExponentialMovingAverage(model.parameters(), decay=0.9)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
    result, history = {}, []
    for step in range(4):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        ema.update()
        history.append(loss.item())
    result["losses"] = np.array(history)
    model.eval()
    with torch.no_grad():
        with ema.average_parameters():
            result["averaged_out"] = model(x).numpy()
        result["restored_out"] = model(x).numpy()
    state = ema.state_dict()
    result["num_updates"] = np.array(state["num_updates"])
    for i, s in enumerate(state["shadow_params"]):
        result[f"shadow{i}"] = s.numpy()
    other = ExponentialMovingAverage(model.parameters(), decay=0.5)
    other.load_state_dict(state)
    other.copy_to()
    result.update(_state(model, "copied."))
    return result


# -- normflows -------------------------------------------------------------------------------------

def _flow(torch):
    import normflows as nf
    flows = []
    for _ in range(3):
        flows.append(nf.flows.AffineCouplingBlock(nf.nets.MLP([1, 16, 16, 2])))
        flows.append(nf.flows.Permute(2, mode="swap"))
    flows += [nf.flows.MaskedAffineAutoregressive(2, 16, num_blocks=2), nf.flows.ActNorm(2)]
    return nf.NormalizingFlow(nf.distributions.DiagGaussian(2), flows)


def _run_flow(torch, model, rs):
    """Three Adam steps of forward KL on NumPy data (RealNVP couplings, a MADE autoregressive
    flow, ActNorm's data-dependent initialisation), then log_prob and sampling with a seeded
    generator, and a reverse-KL loss against normflows' TwoMoons target."""
    import normflows as nf
    data = torch.from_numpy(_x(rs, 64, 2))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    result, history = {}, []
    for step in range(3):
        optimizer.zero_grad()
        loss = model.forward_kld(data)
        loss.backward()
        if step == 0:
            result.update(_grads(model))
        optimizer.step()
        history.append(loss.item())
    result["losses"] = np.array(history)
    result["log_prob"] = model.log_prob(torch.from_numpy(_x(rs, 8, 2))).detach().numpy()
    torch.manual_seed(3)
    z, log_q = model.sample(8)
    result.update(sample=z.detach().numpy(), sample_log_q=log_q.detach().numpy())
    model.p = nf.distributions.TwoMoons()
    torch.manual_seed(4)
    model.zero_grad()
    reverse = model.reverse_kld(16)
    reverse.backward()
    result["reverse_kld"] = np.array(reverse.item())
    result.update(_grads(model, "reverse_grad."))
    result.update(_state(model, "after."))
    return result


# name -> (build, run)
CASES = {
    "smp_unet_resnet": (_smp_unet, lambda torch, m, rs: _run_smp(torch, m, rs, True)),
    "smp_fpn_efficientnet": (_smp_fpn, lambda torch, m, rs: _run_smp(torch, m, rs, False)),
    "pml_triplet": (_pml_triplet, lambda torch, m, rs: _run_pml(torch, m, rs, "pml_triplet")),
    "pml_arcface": (_pml_arcface, lambda torch, m, rs: _run_pml(torch, m, rs, "pml_arcface")),
    "torchsde": (_sde, _run_sde),
    "torch_ema": (_ema_model, _run_ema),
    "normflows": (_flow, _run_flow),
}


def _grads(model, prefix="grad."):
    return {prefix + k: p.grad.numpy() for k, p in model.named_parameters()
            if p.grad is not None}


def _state(model, prefix):
    return {prefix + k: v.detach().numpy().copy() for k, v in model.state_dict().items()}


def build(torch, name, weights=None):
    """The module of ``name``: the library's initialisation (seed 0), or ``weights``."""
    torch.manual_seed(0)
    model = CASES[name][0](torch)
    if weights is not None:
        model.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in weights.items()})
    return model


def run(torch, name, weights=None):
    """Run case ``name`` (with ``weights``, a dict of arrays, if given); return the state dict
    (as arrays) and what was computed."""
    model = build(torch, name, weights)
    state = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
    torch.manual_seed(1)  # the libraries' own draws start from the same state on both sides
    return state, CASES[name][1](torch, model, np.random.RandomState(0))


if __name__ == "__main__":  # the ember side, under python -m ember.as_torch
    import torch
    directory, names = sys.argv[1], sys.argv[2].split(",")
    assert torch is sys.modules["ember"], torch
    for name in names:
        weights = dict(np.load(os.path.join(directory, f"{name}_weights.npz")))
        _, result = run(torch, name, weights)
        np.savez(os.path.join(directory, f"{name}_ember.npz"), **result)
