"""The examples in examples/ run, in their short (--quick) versions, and learn.

Each example's ``main(argv)`` is called in this process (one ember import for all) and returns
what it measured; the seed models and the benchmark GPT are also checked against PyTorch
running the same weights.
"""
import math
import os
import subprocess
import sys

import numpy as np
import pytest

import ember
from helpers import to_np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(ROOT, "examples"))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import gpt as bench_gpt  # noqa: E402
import seed_models  # noqa: E402
import train_digits  # noqa: E402
import train_gpt  # noqa: E402


def test_digits_data_is_the_uci_set():
    train, test = train_digits.load_digits()
    assert (len(train), len(test)) == (1438, 359)
    images, labels = train[:]
    assert images.shape == (1438, 1, 8, 8) and images.dtype == ember.float32
    assert float(images.min()) == 0.0 and float(images.max()) == 1.0
    assert sorted(set(labels.tolist())) == list(range(10))


def test_train_digits_quick_learns():
    result = train_digits.main(["--quick"])
    assert result["losses"][-1] < 0.6 * result["losses"][0]
    assert result["accuracy"] > 0.8  # the full run reaches > 95%; two epochs reach ~90%


def test_train_gpt_quick_learns_and_samples():
    result = train_gpt.main(["--quick"])
    assert result["val"] < result["first_val"] - 0.7  # from ~4.2 (uniform over 68) to ~3.0
    with open(train_gpt.DATA, encoding="utf-8") as f:
        vocabulary = set(f.read())
    assert len(result["sample"]) == 61  # the "\n" prompt and 60 sampled characters
    assert set(result["sample"]) <= vocabulary


def test_gpt_generate_respects_top_k():
    ember.manual_seed(0)
    model = train_gpt.GPT(vocab_size=5, context=8, width=16, n_layer=1, n_head=2)
    out = model.generate(ember.zeros(2, 3, dtype=ember.long), max_new_tokens=10, top_k=1)
    assert out.shape == (2, 13) and out.dtype == ember.long
    # top_k=1 is greedy decoding: each new token is the argmax given its (cropped) context
    for t in range(3, 13):
        logits, _ = model(out[:, max(0, t - 8):t])
        assert out[:, t].tolist() == logits[:, -1].argmax(-1).tolist()


def test_seed_models_script_runs():
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "seed_models.py")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "input (32, 1024) ember.bfloat16 -> output (32, 1024) ember.bfloat16" in proc.stdout
    assert "input (16, 256) ember.float32 -> output (16, 10) ember.float32" in proc.stdout


def _copy_to_torch(torch, ember_module, torch_module):
    state = {k: torch.from_numpy(to_np(v).copy()).to(getattr(torch, v.dtype.name))
             for k, v in ember_module.state_dict().items()}
    torch_module.load_state_dict(state)


@pytest.mark.parametrize("dtype,tol", [("float32", 1e-5), ("bfloat16", 2e-2)])
def test_seed_002_net_matches_pytorch(torch, dtype, tol):
    ember.manual_seed(0)
    net = seed_models.Net().to(getattr(ember, dtype))
    x = ember.randn(32, 1024).to(getattr(ember, dtype))

    class TorchNet(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.l1 = torch.nn.Linear(1024, 4096)
            self.l2 = torch.nn.Linear(4096, 1024)

        def forward(self, x):
            return self.l2(torch.relu(self.l1(x)))

    tnet = TorchNet().to(getattr(torch, dtype))
    _copy_to_torch(torch, net, tnet)
    y, norms = seed_models.forward_backward(net, x)
    tx = torch.from_numpy(to_np(x)).to(getattr(torch, dtype))
    ty = tnet(tx)
    ty.float().pow(2).mean().backward()
    assert y.dtype == getattr(ember, dtype) and tuple(y.shape) == tuple(ty.shape)
    np.testing.assert_allclose(to_np(y), to_np(ty), rtol=tol, atol=tol)
    grads = dict(net.named_parameters())
    for name, p in tnet.named_parameters():
        np.testing.assert_allclose(to_np(grads[name].grad), to_np(p.grad), rtol=tol, atol=1e-6)
        # against the exact norm: PyTorch's float32 norm of the 4M-element l1.weight gradient
        # is itself off by 1e-4 relative
        exact = np.linalg.norm(to_np(p.grad).astype(np.float64))
        assert norms[name] == pytest.approx(exact, rel=max(tol, 1e-6))


def test_seed_003_mlp_ops_match_pytorch(torch):
    from torch.utils._python_dispatch import TorchDispatchMode

    results = seed_models.main()
    ops = {k.replace("ember.", "torch.", 1): v for k, v in results["MLP ops"].items()}

    class OpCounter(TorchDispatchMode):  # the seed's exercise, on PyTorch
        def __init__(self):
            super().__init__()
            self.ops = {}

        def __torch_dispatch__(self, func, types, args, kwargs=None):
            name = f"{func.__module__}.{func.__name__}"
            self.ops[name] = self.ops.get(name, 0) + 1
            return func(*args, **(kwargs or {}))

    tmlp = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(),
                               torch.nn.Linear(512, 10))
    x = torch.randn(16, 256)
    counter = OpCounter()
    with counter:
        tmlp(x)
    assert ops == counter.ops  # {aten.addmm.default: 2, aten.relu.default: 1, aten.t.default: 2}


def test_benchmark_gpt_is_the_same_model_in_both_libraries(torch):
    model = bench_gpt.build(ember)
    tmodel = bench_gpt.build(torch)
    _copy_to_torch(torch, model, tmodel)
    assert model.head.weight is model.tok.weight  # the tied head survives the copy
    ember.manual_seed(1)
    x, y = ember.randint(65, (2, 64)), ember.randint(65, (2, 64))
    loss = model(x, y)
    loss.backward()
    tloss = tmodel(torch.from_numpy(to_np(x)), torch.from_numpy(to_np(y)))
    tloss.backward()
    assert loss.item() == pytest.approx(tloss.item(), rel=1e-5)
    grads = dict(tmodel.named_parameters())
    for name, p in model.named_parameters():
        np.testing.assert_allclose(to_np(p.grad), to_np(grads[name].grad), rtol=1e-3, atol=1e-5)


def test_benchmark_gpt_initial_loss_is_its_init_in_both_libraries(torch):
    """The benchmark GPT starts near 85, not ln(65) = 4.17, in PyTorch as in ember: its head is
    tied to nn.Embedding's N(0, 1) weights, so the logits of layer-normed features have a
    standard deviation near sqrt(width) = 11. Each library's own init, same scale."""
    rng = np.random.default_rng(0)
    x, y = rng.integers(0, 65, (16, 64)), rng.integers(0, 65, (16, 64))
    losses = []
    for lib in (ember, torch):
        model = bench_gpt.build(lib)
        with lib.no_grad():
            losses.append(model(lib.tensor(x), lib.tensor(y)).item())
    assert losses[0] == pytest.approx(losses[1], rel=0.1)
    assert min(losses) > 10 * math.log(65)
