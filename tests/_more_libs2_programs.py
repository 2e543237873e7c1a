"""Short programs of fastai, open_clip, nflows and pytorch-tabnet, run the same way in PyTorch
and in ember (through ``ember.as_torch``): tests/test_more_libs2.py runs
``python tests/_more_libs2_programs.py torch DIR NAMES`` and
``python -m ember.as_torch tests/_more_libs2_programs.py ember DIR NAMES`` side by side
(``helpers.pytorch_beside_ember``), and each writes what every case computed to
DIR/NAME_<library>.npz.

Every case seeds torch's generator (and Python's and NumPy's, which fastai's and tabnet's
batching draw from) itself: ember's CPU generator draws PyTorch's numbers, so initial weights,
shuffled batches, mixup's Beta draws and the flows' samples are the same on both sides. Inputs
are fixed NumPy arrays; nothing is downloaded."""
import os
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _torchvision_schemas  # noqa: E402
from _program_helpers import params as _params, seed as _seed, x as _x  # noqa: E402

# (fastai and open_clip import torchvision, whose wheel needs its schemas defined in PyTorch)
_torchvision_schemas.install()



def _grads(model, prefix):
    return {prefix + k: p.grad.numpy().copy() for k, p in model.named_parameters()
            if p.grad is not None}


# -- nflows ----------------------------------------------------------------------------------------

def _nflows(torch):
    """A masked autoregressive flow (MADE with residual blocks and batch norm, reverse
    permutations, data-initialised ActNorm) and a rational-quadratic spline coupling flow with
    LU-decomposed linear layers, trained by maximum likelihood on two moons: losses,
    log-densities, samples drawn through the inverse passes and gradients."""
    from nflows import distributions, flows, transforms
    from nflows.nn import nets
    rs = np.random.RandomState(0)
    angle = rs.uniform(0, np.pi, 256)
    moons = np.stack([np.cos(angle), np.sin(angle)], 1)
    moons[128:] = 1 - moons[128:] + [0, 0.5]
    data = torch.from_numpy((moons + 0.1 * rs.randn(256, 2)).astype(np.float32))
    probe = torch.from_numpy(_x(rs, 16, 2))

    def maf():
        layers = []
        for _ in range(3):
            layers.append(transforms.ReversePermutation(features=2))
            layers.append(transforms.MaskedAffineAutoregressiveTransform(
                features=2, hidden_features=16, num_blocks=2, use_batch_norm=True))
            layers.append(transforms.ActNorm(features=2))
        return transforms.CompositeTransform(layers)

    def spline():
        def net(in_features, out_features):
            return nets.ResidualNet(in_features, out_features, hidden_features=16,
                                    num_blocks=2, dropout_probability=0.1)
        layers = []
        for i in range(2):
            mask = torch.tensor([i % 2, (i + 1) % 2])
            layers.append(transforms.PiecewiseRationalQuadraticCouplingTransform(
                mask, net, num_bins=6, tails="linear", tail_bound=3.0))
            layers.append(transforms.LULinear(2))
        return transforms.CompositeTransform(layers)

    result = {}
    for name, make in [("maf", maf), ("spline", spline)]:
        _seed(torch)
        flow = flows.Flow(make(), distributions.StandardNormal(shape=[2]))
        # (SGD, not Adam: batch norm and the data-initialised ActNorm make some gradients
        # rounding noise around zero, which Adam's normalisation turns into full-size steps)
        optimizer = torch.optim.SGD(flow.parameters(), lr=0.02, momentum=0.9)
        losses = []
        for step in range(6):
            batch = data[torch.randperm(256)[:64]]
            optimizer.zero_grad()
            loss = -flow.log_prob(inputs=batch).mean()
            loss.backward()
            if step == 0:
                result.update(_grads(flow, f"{name}.grad."))
            optimizer.step()
            losses.append(loss.item())
        flow.eval()
        with torch.no_grad():
            result[f"{name}.log_prob"] = flow.log_prob(probe).numpy()
            result[f"{name}.sample"] = flow.sample(32).numpy()
            noise, logabsdet = flow._transform(probe)
            result[f"{name}.noise"], result[f"{name}.logabsdet"] = noise.numpy(), logabsdet.numpy()
        result[f"{name}.losses"] = np.array(losses)
        result.update(_params(flow, f"{name}.param."))
    return result


# -- pytorch-tabnet --------------------------------------------------------------------------------

def _tabnet(torch):
    """TabNetClassifier (sparsemax attention, ghost batch norm, a categorical embedding) fit for
    a few epochs with early-stopping evaluation, then its probabilities, feature importances and
    attention masks; and TabNetRegressor with entmax masks."""
    from pytorch_tabnet.tab_model import TabNetClassifier, TabNetRegressor
    rs = np.random.RandomState(0)
    x = rs.randn(400, 6).astype(np.float32)
    x[:, 5] = rs.randint(0, 4, 400)  # a categorical column
    y = ((x[:, 0] + x[:, 1] * x[:, 2] + (x[:, 5] == 2)) > 0.3).astype(np.int64)
    target = (x[:, 0] - 2 * x[:, 3] + 0.5 * x[:, 5])[:, None].astype(np.float32)
    result = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (its device choice and early-stopping notes)
        _seed(torch)
        clf = TabNetClassifier(n_d=8, n_a=8, n_steps=3, cat_idxs=[5], cat_dims=[4],
                               cat_emb_dim=2, seed=0, verbose=0, device_name="cpu",
                               optimizer_params={"lr": 1e-2})
        clf.fit(x[:320], y[:320], eval_set=[(x[320:], y[320:])], eval_metric=["auc", "accuracy"],
                max_epochs=2, patience=10, batch_size=64, virtual_batch_size=32,
                drop_last=False)
        result["clf.loss"] = np.array(clf.history["loss"])
        result["clf.val_auc"] = np.array(clf.history["val_0_auc"])
        result["clf.proba"] = clf.predict_proba(x[320:])
        result["clf.predict"] = clf.predict(x[320:])
        result["clf.importances"] = clf.feature_importances_
        explain, masks = clf.explain(x[320:340])
        result["clf.explain"] = explain
        result.update({f"clf.mask{k}": v for k, v in masks.items()})
        result.update(_params(clf.network, "clf.param."))
        _seed(torch)
        reg = TabNetRegressor(n_d=8, n_a=8, n_steps=2, mask_type="entmax", seed=0, verbose=0,
                              device_name="cpu", optimizer_params={"lr": 2e-2})
        reg.fit(x[:320], target[:320], eval_set=[(x[320:], target[320:])], max_epochs=3,
                batch_size=64, virtual_batch_size=32)
        result["reg.loss"] = np.array(reg.history["loss"])
        result["reg.predict"] = reg.predict(x[320:])
        result.update(_params(reg.network, "reg.param."))
    return result


# -- open_clip -------------------------------------------------------------------------------------

def _open_clip(torch):
    """A tiny randomly initialised CLIP (ViT image tower, causal text transformer) on open_clip's
    own BPE tokenizer: features, logits, the contrastive loss, its gradients and two AdamW steps;
    then a CustomTextCLIP with a logit bias under SigLIP's sigmoid loss."""
    import open_clip
    from open_clip.loss import SigLipLoss
    from open_clip.model import CLIPTextCfg, CLIPVisionCfg
    rs = np.random.RandomState(0)
    images = torch.from_numpy(_x(rs, 4, 3, 32, 32))
    texts = open_clip.tokenize(["a photo of a cat", "a diagram", "two dogs on grass",
                                "an empty street at night"], context_length=16)
    vision = CLIPVisionCfg(layers=2, width=32, head_width=16, patch_size=8, image_size=32)
    text = CLIPTextCfg(context_length=16, vocab_size=49408, width=32, heads=2, layers=2)
    result = {"tokens": texts.numpy()}
    for name, make, loss_fn in [
            ("clip", lambda: open_clip.CLIP(16, vision, text), open_clip.ClipLoss()),
            ("siglip", lambda: open_clip.CustomTextCLIP(16, vision, text, init_logit_bias=-10.0),
             SigLipLoss())]:
        _seed(torch)
        model = make()
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.1)
        losses = []
        for step in range(2):
            out = model(images, texts)
            image_features, text_features, logit_scale = out[:3]
            args = (image_features, text_features, logit_scale) + tuple(out[3:])
            loss = loss_fn(*args)
            optimizer.zero_grad()
            loss.backward()
            if step == 0:
                result[f"{name}.image_features"] = image_features.detach().numpy()
                result[f"{name}.text_features"] = text_features.detach().numpy()
                result.update(_grads(model, f"{name}.grad."))
            optimizer.step()
            losses.append(loss.item())
        result[f"{name}.losses"] = np.array(losses)
        model.eval()
        with torch.no_grad():
            result[f"{name}.encode_image"] = model.encode_image(images, normalize=True).numpy()
            result[f"{name}.encode_text"] = model.encode_text(texts, normalize=True).numpy()
        params = _params(model, f"{name}.param.")
        for key in [k for k in params if k.endswith("attn.in_proj_bias")]:
            # the keys' bias shifts every score of a query alike, which the softmax cancels: its
            # gradient is rounding noise around zero, which AdamW turns into full-size steps on
            # either side. The queries' and values' thirds are compared.
            q, _, v = np.split(params.pop(key), 3)
            params[key + ".q"], params[key + ".v"] = q, v
        result.update(params)
    return result


# -- fastai ----------------------------------------------------------------------------------------

def _fastai(torch):
    """fastai's tabular application (TabularPandas with Categorify/FillMissing/Normalize,
    tabular_learner) fit with fit_one_cycle, and a Learner on image tensors with MixUp and
    label smoothing fit with fit_flat_cos: the recorded losses and metrics, predictions through
    get_preds and the trained weights."""
    import pandas as pd
    from fastai.callback.mixup import MixUp
    from fastai.data.core import DataLoaders
    from fastai.learner import Learner
    from fastai.losses import LabelSmoothingCrossEntropy
    from fastai.metrics import accuracy
    from fastai.optimizer import Adam
    from fastai.tabular.all import (Categorify, FillMissing, Normalize, RandomSplitter,
                                    TabularPandas, tabular_learner)
    from fastai.torch_core import set_seed
    from fastai.data.load import DataLoader
    rs = np.random.RandomState(0)
    n = 256
    frame = pd.DataFrame({"a": rs.randn(n), "b": rs.randn(n) * 3 + 1,
                          "c": rs.choice(["x", "y", "z"], n), "d": rs.choice(["p", "q"], n)})
    frame.loc[rs.rand(n) < 0.1, "b"] = np.nan
    frame["y"] = ((frame["a"] + (frame["c"] == "y")) > 0.5).map({True: "yes", False: "no"})
    result = {}
    set_seed(0, reproducible=True)
    splits = RandomSplitter(valid_pct=0.25, seed=1)(range(n))
    tab = TabularPandas(frame, procs=[Categorify, FillMissing, Normalize], cat_names=["c", "d"],
                        cont_names=["a", "b"], y_names="y", splits=splits)
    dls = tab.dataloaders(bs=32)
    set_seed(0, reproducible=True)
    learn = tabular_learner(dls, layers=[16, 8], n_out=2, metrics=accuracy)
    with learn.no_bar(), learn.no_logging():
        learn.fit_one_cycle(2, lr_max=1e-2)
    result["tab.values"] = np.array(learn.recorder.values, dtype=np.float64)
    result["tab.losses"] = np.array([float(v) for v in learn.recorder.losses])
    result["tab.lrs"] = np.array(learn.recorder.lrs)
    preds, targets = learn.get_preds()
    result["tab.preds"], result["tab.targets"] = preds.numpy(), targets.numpy()
    result.update(_params(learn.model, "tab.param."))

    # images: a small convnet on synthetic tensors, through fastai's DataLoader and callbacks
    images = torch.from_numpy(_x(rs, 96, 3, 16, 16))
    labels = torch.from_numpy(rs.randint(0, 4, 96))
    train = list(zip(images[:64], labels[:64]))
    valid = list(zip(images[64:], labels[64:]))
    set_seed(0, reproducible=True)
    dls = DataLoaders(DataLoader(train, bs=16, shuffle=True, drop_last=True),
                      DataLoader(valid, bs=32))
    nn = torch.nn
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU(),
                          nn.MaxPool2d(2), nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 4))
    learn = Learner(dls, model, loss_func=LabelSmoothingCrossEntropy(), opt_func=Adam,
                    metrics=accuracy, cbs=MixUp(0.4))
    with learn.no_bar(), learn.no_logging():
        learn.fit_flat_cos(2, lr=3e-3)
    result["img.values"] = np.array(learn.recorder.values, dtype=np.float64)
    result["img.losses"] = np.array([float(v) for v in learn.recorder.losses])
    preds, _ = learn.get_preds()
    result["img.preds"] = preds.numpy()
    result.update(_params(learn.model, "img.param."))
    return result


CASES = {"nflows": _nflows, "tabnet": _tabnet, "open_clip": _open_clip, "fastai": _fastai}


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
