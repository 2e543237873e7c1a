"""MONAI (medical imaging networks, losses and metrics) and Captum (model interpretability:
attributions from gradients and hooks) run the same way in PyTorch and in ember (through
``ember.as_torch``): tests/test_monai_captum.py runs each case in PyTorch in its own process,
and ``python -m ember.as_torch tests/_monai_captum_ops.py DIR NAMES`` runs them in ember,
writing what each computed to DIR/NAME_ember.npz. Inputs come from NumPy with a fixed seed;
weights from the seeded generator (ember's CPU streams are PyTorch's)."""
import os
import sys
import warnings

import numpy as np

CASES = {
    # UNet (residual units, strided convs, transposed convs, instance norm, PReLU) trained three
    # steps with DiceCELoss; DiceMetric; BasicUNet; FocalLoss
    "monai": "monai.networks, monai.losses, monai.metrics",
    # IntegratedGradients (with its convergence delta), Saliency, DeepLift (module hooks
    # rewriting gradients), LayerGradCam, NoiseTunnel over Saliency
    "captum": "captum.attr",
}


def run(torch, name):
    warnings.simplefilter("ignore")
    rs = np.random.RandomState(0)
    torch.manual_seed(0)
    result = {}
    x = torch.tensor(rs.randn(2, 1, 32, 32).astype(np.float32))
    if name == "monai":
        from monai.losses import DiceCELoss, FocalLoss
        from monai.metrics import DiceMetric
        from monai.networks.nets import BasicUNet, UNet
        F = torch.nn.functional
        net = UNet(spatial_dims=2, in_channels=1, out_channels=2, channels=(4, 8, 16),
                   strides=(2, 2), num_res_units=1)
        opt = torch.optim.Adam(net.parameters(), 1e-3)
        y = torch.tensor((rs.rand(2, 1, 32, 32) > 0.5).astype(np.int64))
        loss_fn = DiceCELoss(to_onehot_y=True, softmax=True)
        losses = []
        for _ in range(3):
            opt.zero_grad()
            loss = loss_fn(net(x), y)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        result["losses"] = np.array(losses)
        out = net(x)
        result["logits"] = out.detach().numpy()
        onehot_y = F.one_hot(y[:, 0], 2).permute(0, 3, 1, 2)
        metric = DiceMetric(include_background=False)
        metric(F.one_hot(out.argmax(1), 2).permute(0, 3, 1, 2), onehot_y)
        result["dice"] = np.array(metric.aggregate().item())
        result["focal"] = np.array(FocalLoss()(out, onehot_y.float()).item())
        basic = BasicUNet(spatial_dims=2, in_channels=1, out_channels=1,
                          features=(4, 4, 8, 8, 16, 4))
        result["basic_unet"] = basic(x).detach().numpy()
    elif name == "captum":
        from captum.attr import (DeepLift, IntegratedGradients, LayerGradCam, NoiseTunnel,
                                 Saliency)
        model = torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3), torch.nn.ReLU(),
                                    torch.nn.Flatten(), torch.nn.Linear(4 * 30 * 30, 3)).eval()
        inp = x.clone().requires_grad_(True)
        attr, delta = IntegratedGradients(model).attribute(
            inp, target=1, return_convergence_delta=True, n_steps=20)
        result["integrated_gradients"] = attr.detach().numpy()
        result["delta"] = delta.detach().numpy()
        result["saliency"] = Saliency(model).attribute(inp, target=0).detach().numpy()
        result["deeplift"] = DeepLift(model).attribute(inp, target=2).detach().numpy()
        result["grad_cam"] = LayerGradCam(model, model[0]).attribute(
            inp, target=1).detach().numpy()
        torch.manual_seed(1)
        result["smoothgrad"] = NoiseTunnel(Saliency(model)).attribute(
            inp, nt_type="smoothgrad", nt_samples=4, target=0).detach().numpy()
    return result


if __name__ == "__main__":  # the ember side, under python -m ember.as_torch
    import torch
    directory, names = sys.argv[1], sys.argv[2].split(",")
    assert torch is sys.modules["ember"], torch
    for name in names:
        np.savez(os.path.join(directory, f"{name}_ember.npz"), **run(torch, name))
