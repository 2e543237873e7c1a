"""timm and torchvision run the same way in PyTorch and in ember (through ``ember.as_torch``):
tests/test_vision.py runs each case in PyTorch in its own process, and ``python -m
ember.as_torch tests/_vision_models.py DIR NAMES`` runs them in ember with PyTorch's weights
(DIR/NAME_weights.npz), writing what each computed to DIR/NAME_ember.npz.

torchvision's C++ operator library cannot load on either side (ember.as_torch defines its ops
with ember's, tests/conftest.py the schemas PyTorch's import needs); its detection ops are
tested in tests/test_vision_detection.py, not here."""
import os
import sys

import numpy as np

# name -> (library, constructor, keyword arguments, image side)
MODELS = {
    # residual convolutions, batch norm, max pooling
    "timm_resnet18": ("timm", "resnet18", {}, 64),
    # patch embedding, attention, layer norm, class token
    "timm_vit_tiny": ("timm", "vit_tiny_patch16_224", {"img_size": 64}, 64),
    # depthwise 7x7 convolutions, channels-last layer norm, layer scale
    "timm_convnext_atto": ("timm", "convnext_atto", {}, 64),
    # inverted residuals, squeeze-excitation, SiLU, stochastic depth (off in eval)
    "timm_efficientnet_b0": ("timm", "efficientnet_b0", {}, 64),
    # convolutions and transformer blocks over unfolded patches
    "timm_mobilevit_xxs": ("timm", "mobilevit_xxs", {}, 64),
    # hardswish, squeeze-excitation, torchvision's own blocks
    "tv_mobilenet_v3_small": ("torchvision", "mobilenet_v3_small", {}, 64),
    # channel shuffle (a view, a transpose and a flatten)
    "tv_shufflenet_v2": ("torchvision", "shufflenet_v2_x0_5", {}, 64),
}
# timm's own optimizers, each three steps on a small MLP (Kron's preconditioner einsums set
# ``torch.backends.opt_einsum.strategy = "auto-hq"``; Lamb, Lion, MADGRAD ... and
# create_optimizer_v2's parameter groups)
TIMM_OPTIMIZERS = ("lamb", "lion", "adamp", "sgdp", "adabelief", "radam", "nadamw",
                   "adafactorbv", "lars", "madgrad", "novograd", "adan", "laprop", "mars", "kron",
                   "muon", "adopt")


def build(torch, name, weights=None):
    library, ctor, kw, _ = MODELS[name]
    torch.manual_seed(0)
    if library == "timm":
        import timm
        model = timm.create_model(ctor, pretrained=False, num_classes=10, **kw)
    else:
        import torchvision
        model = getattr(torchvision.models, ctor)(weights=None, num_classes=10, **kw)
    if weights is not None:
        model.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in weights.items()})
    return model


def _transforms(torch):
    """torchvision.transforms.v2 on a uint8 image: resizing with and without antialiasing,
    crops, flips, dtype conversion and normalisation, and a seeded random pipeline."""
    from torchvision.transforms import v2
    rs = np.random.RandomState(0)
    img = torch.from_numpy(rs.randint(0, 256, (3, 40, 52)).astype(np.uint8))
    out = {}
    fixed = v2.Compose([v2.Resize(24, antialias=True), v2.CenterCrop(20),
                        v2.ToDtype(torch.float32, scale=True),
                        v2.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
    out["fixed"] = fixed(img).numpy()
    out["resize_no_antialias"] = v2.Resize((30, 17), antialias=False)(img).numpy()
    out["resize_bicubic"] = v2.Resize(33, interpolation=v2.InterpolationMode.BICUBIC)(
        img.float()).numpy()
    out["flip"] = v2.RandomHorizontalFlip(p=1.0)(img).numpy()
    out["gray"] = v2.Grayscale()(img).numpy()
    torch.manual_seed(0)
    seeded = v2.Compose([v2.RandomResizedCrop(16, antialias=True),
                         v2.RandomHorizontalFlip(), v2.ToDtype(torch.float32, scale=True)])
    out["seeded"] = np.stack([seeded(img).numpy() for _ in range(3)])
    return out


def _optimizers(torch):
    """Every optimizer of TIMM_OPTIMIZERS from the same seeded MLP: the last loss and the
    parameters after three steps."""
    from timm.optim import create_optimizer_v2
    rs = np.random.RandomState(0)
    x = torch.from_numpy(rs.randn(16, 4).astype(np.float32))
    out = {}
    for name in TIMM_OPTIMIZERS:
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(),
                                    torch.nn.Linear(8, 2))
        opt = create_optimizer_v2(model, name, lr=1e-2, weight_decay=0.01)
        for _ in range(3):
            opt.zero_grad()
            loss = model(x).square().mean()
            loss.backward()
            opt.step()
        out[f"{name}.loss"] = np.array(loss.item())
        out.update({f"{name}.{k}": p.detach().numpy() for k, p in model.named_parameters()})
    return out


def _features(torch):
    """torchvision's feature extractor (an fx trace of resnet18 in train and eval mode, the
    requested nodes returned), its deep copy, and get_graph_node_names."""
    import copy

    from torchvision.models import resnet18
    from torchvision.models.feature_extraction import (create_feature_extractor,
                                                       get_graph_node_names)
    torch.manual_seed(0)
    model = resnet18().eval()
    train_nodes, eval_nodes = get_graph_node_names(model)
    extractor = create_feature_extractor(
        model, return_nodes={"layer1": "l1", "layer4.1.relu_1": "l4", "avgpool": "pool"})
    x = torch.from_numpy(np.random.RandomState(0).randn(1, 3, 64, 64).astype(np.float32))
    out = {k: v.detach().numpy() for k, v in copy.deepcopy(extractor)(x).items()}
    out["nodes"] = np.array(train_nodes + ["|"] + eval_nodes)
    return out


# the cases other than MODELS: name -> function of torch computing them
OTHER = {"tv_transforms": _transforms, "timm_optimizers": _optimizers,
         "tv_features": _features}


def run(torch, name, weights=None):
    """Build ``name`` (with ``weights`` if given), then an eval forward and a training forward
    and backward on a fixed batch. Returns (state dict as arrays, what was computed)."""
    if name in OTHER:
        return {}, OTHER[name](torch)
    model = build(torch, name, weights)
    state = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
    side = MODELS[name][3]
    x = torch.from_numpy(np.random.RandomState(0).randn(2, 3, side, side).astype(np.float32))
    out = {}
    model.eval()
    with torch.no_grad():
        out["eval"] = model(x).numpy()
    model.train()  # batch statistics; dropout and stochastic depth are left at eval
    for m in model.modules():
        if isinstance(m, torch.nn.Dropout) or type(m).__name__ == "DropPath":
            m.eval()
    y = model(x)
    out["train"] = y.detach().numpy()
    y.pow(2).sum().backward()
    out.update({"grad." + k: p.grad.numpy() for k, p in model.named_parameters()
                if p.grad is not None})
    out.update({"buffer." + k: b.numpy() for k, b in model.named_buffers()
                if b.dtype.is_floating_point})
    return state, out


if __name__ == "__main__":  # the ember side, under python -m ember.as_torch
    import torch
    directory, names = sys.argv[1], sys.argv[2].split(",")
    assert torch is sys.modules["ember"], torch
    for name in names:
        path = os.path.join(directory, f"{name}_weights.npz")
        weights = dict(np.load(path)) if name in MODELS else None
        _, result = run(torch, name, weights)
        np.savez(os.path.join(directory, f"{name}_ember.npz"), **result)
