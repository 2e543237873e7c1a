"""The two models of the seed notes, forward and backward on ember.

- seed 002, section 9.6: ``Net``, Linear(1024, 4096) -> relu -> Linear(4096, 1024), batch 32.
  The seed runs it in bfloat16 on CUDA under torch.compile; ember runs it eagerly on the CPU,
  in float32 and then in bfloat16.
- seed 003, exercise 1: the MLP Linear(256, 512) -> ReLU -> Linear(512, 10), batch 16, with the
  exercise's TorchDispatchMode operator counter around the forward pass.

    python examples/seed_models.py
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import ember as torch  # noqa: E402  (a PyTorch program runs on ember by changing this import)
import ember.nn as nn  # noqa: E402
from ember.utils._python_dispatch import TorchDispatchMode  # noqa: E402


class Net(nn.Module):  # seed 002, section 9.6
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(1024, 4096)
        self.l2 = nn.Linear(4096, 1024)

    def forward(self, x):
        return self.l2(torch.relu(self.l1(x)))


class OpCounter(TorchDispatchMode):  # seed 003, exercise 1
    def __init__(self):
        super().__init__()
        self.ops = {}

    def __torch_dispatch__(self, func, types, args, kwargs=None):
        name = f"{func.__module__}.{func.__name__}"
        self.ops[name] = self.ops.get(name, 0) + 1
        return func(*args, **(kwargs or {}))


def forward_backward(model, x):
    """One forward and backward pass; returns the output and each parameter's gradient norm."""
    model.zero_grad()
    y = model(x)
    y.float().pow(2).mean().backward()
    return y, {name: p.grad.float().norm().item() for name, p in model.named_parameters()}


def report(title, model, x):
    y, norms = forward_backward(model, x)
    print(f"== {title} ==")
    print(f"input {tuple(x.shape)} {x.dtype} -> output {tuple(y.shape)} {y.dtype}")
    for name, norm in norms.items():
        print(f"  grad norm {name:10} {norm:.6f}")
    return y, norms


def main():
    torch.manual_seed(0)
    results = {}

    net = Net()
    x = torch.randn(32, 1024)
    results["Net float32"] = report("seed 002 section 9.6: Net, float32", net, x)
    net_bf16 = Net().to(torch.bfloat16)
    net_bf16.load_state_dict(net.state_dict())  # copies, casting to bfloat16
    results["Net bfloat16"] = report("seed 002 section 9.6: Net, bfloat16", net_bf16,
                                     x.to(torch.bfloat16))

    mlp = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 10))
    x = torch.randn(16, 256)
    counter = OpCounter()
    with counter:
        mlp(x)
    print("== seed 003 exercise 1: operators of the MLP's forward pass ==")
    for op, count in sorted(counter.ops.items()):
        print(f"  {op}: {count}")
    results["MLP"] = report("seed 003: MLP", mlp, x)
    results["MLP ops"] = counter.ops
    return results


if __name__ == "__main__":
    main()
