"""Image classifiers of torchvision and timm, forward (inference) and a training step (forward,
backward), in ember (through ``ember.as_torch``: the libraries' own code runs unchanged) beside
PyTorch, one run, each library in its own process with the same thread count:

    python benchmarks/vision.py [--threads 1] [--calls 5] [--size 128]

Prints each model's median times and the ratio. The models are built from the same seed, so
both libraries hold PyTorch's weights (ember's CPU random streams are PyTorch's).
"""
import argparse
import os
import subprocess
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
MODELS = [("torchvision", "resnet50"), ("torchvision", "mobilenet_v3_large"),
          ("torchvision", "convnext_tiny"), ("torchvision", "swin_t"),
          ("torchvision", "maxvit_t"), ("timm", "vit_small_patch16_224"),
          ("timm", "efficientnet_b0")]

_PROGRAM = r"""
import statistics, sys, time
sys.path.insert(0, sys.argv[4])
import _torchvision_schemas  # (beside PyTorch: its torchvision wheel's ops cannot load)
_torchvision_schemas.install()
import torch, torchvision, timm
threads, calls, size = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
torch.set_num_threads(threads)

def median_ms(f):
    f()
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3

for lib, name in %r:
    torch.manual_seed(0)
    kw = {"img_size": size} if name.startswith("vit") else {}
    model = (timm.create_model(name, pretrained=False, **kw) if lib == "timm"
             else getattr(torchvision.models, name)(weights=None))
    side = 224 if name in ("swin_t", "maxvit_t") else size
    x = torch.randn(2, 3, side, side)
    model.eval()
    with torch.no_grad():
        fwd = median_ms(lambda: model(x))
    model.train()
    def step():
        model.zero_grad(set_to_none=True)
        model(x).square().mean().backward()
    print(name, fwd, median_ms(step), flush=True)
"""


def run(lib, threads, calls, size):
    """{model: (forward ms, training step ms)} of ``lib`` ("ember" or "torch")."""
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(_PROGRAM % (MODELS,))
    try:
        runner = ["-m", "ember.as_torch"] if lib == "ember" else []
        p = subprocess.run([sys.executable, *runner, f.name, str(threads), str(calls),
                            str(size), os.path.join(ROOT, "tests")],
                           capture_output=True, text=True, cwd=ROOT)
    finally:
        os.unlink(f.name)
    if p.returncode != 0:
        raise SystemExit(f"{lib} failed:\n{p.stderr[-3000:]}")
    names = {name for _, name in MODELS}
    out = {}
    for line in p.stdout.splitlines():  # (what else the libraries print is passed over)
        fields = line.split()
        if len(fields) == 3 and fields[0] in names:
            out[fields[0]] = (float(fields[1]), float(fields[2]))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--calls", type=int, default=5)
    ap.add_argument("--size", type=int, default=128)
    a = ap.parse_args()
    mine, theirs = run("ember", a.threads, a.calls, a.size), run("torch", a.threads, a.calls,
                                                                   a.size)
    print(f"batch 2 at {a.size}x{a.size} (swin_t, maxvit_t at 224), {a.threads} thread(s), "
          f"median of {a.calls} calls, ms")
    print(f"{'':22}{'forward':>10}{'PyTorch':>10}{'ratio':>7}{'train':>10}{'PyTorch':>10}"
          f"{'ratio':>7}")
    for _, name in MODELS:
        m, t = mine[name], theirs[name]
        print(f"{name:22}{m[0]:10.1f}{t[0]:10.1f}{m[0] / t[0]:6.2f}x"
              f"{m[1]:10.1f}{t[1]:10.1f}{m[1] / t[1]:6.2f}x")


if __name__ == "__main__":
    main()
