"""Opacus (differentially private training: per-sample gradients, clipping, calibrated noise,
a privacy accountant) runs the same way in PyTorch and in ember (through ``ember.as_torch``):
tests/test_opacus.py runs each case in PyTorch in its own process, and ``python -m
ember.as_torch tests/_opacus_ops.py DIR NAMES`` runs them in ember, writing what each computed
to DIR/NAME_ember.npz. The noise comes from a seeded generator, so both libraries add the same
noise (ember's CPU streams are PyTorch's)."""
import os
import sys
import warnings

import numpy as np

CASES = {
    # per-sample gradients from module hooks (GradSampleModule)
    "hooks": "opacus.GradSampleModule with hooks",
    # per-sample gradients from torch.func (vmap of grad over the batch)
    "functorch": "opacus.GradSampleModule with torch.func",
    # per-sample gradients from ExpandedWeights (torch.nn.utils._per_sample_grad)
    "ew": "opacus.GradSampleModule with ExpandedWeights",
}


def run(torch, name):
    warnings.simplefilter("ignore")
    from opacus import PrivacyEngine
    from torch.utils.data import DataLoader, TensorDataset
    rs = np.random.RandomState(0)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3), torch.nn.GroupNorm(2, 4),
                                torch.nn.ReLU(), torch.nn.Flatten(),
                                torch.nn.Linear(4 * 6 * 6, 3))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = TensorDataset(torch.tensor(rs.randn(32, 1, 8, 8).astype(np.float32)),
                         torch.tensor(rs.randint(0, 3, 32)))
    engine = PrivacyEngine()
    model, opt, loader = engine.make_private(
        module=model, optimizer=opt, data_loader=DataLoader(data, batch_size=8),
        noise_multiplier=1.0, max_grad_norm=1.0, grad_sample_mode=name,
        noise_generator=torch.Generator().manual_seed(3))
    torch.manual_seed(1)  # (the Poisson sampling of the batches)
    losses = []
    for x, y in loader:
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    result = {"losses": np.array(losses), "epsilon": np.array(engine.get_epsilon(1e-5))}
    for i, p in enumerate(model.parameters()):
        result[f"param{i}"] = p.detach().numpy()
    return result


if __name__ == "__main__":  # the ember side, under python -m ember.as_torch
    import torch
    directory, names = sys.argv[1], sys.argv[2].split(",")
    assert torch is sys.modules["ember"], torch
    for name in names:
        np.savez(os.path.join(directory, f"{name}_ember.npz"), **run(torch, name))
