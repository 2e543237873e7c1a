"""Per-sample gradients with vmap, ember beside PyTorch in one run: an MLP 784-256-10 with
cross-entropy, 64 samples, float32 on the CPU, best of N. Three ways:

* ember ``vmap(grad(loss), in_dims=(None, 0, 0))`` over ``functional_call``;
* ember, a Python loop of 64 forward + backward passes (one sample each);
* ``torch.func`` with the same program.

The gradients of the three agree (checked before timing); the ratios are printed.

    python benchmarks/vmap.py [--repeat N] [--threads T]
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import numpy as np  # noqa: E402

import ember  # noqa: E402


def _model(lib):
    lib.manual_seed(0)
    return lib.nn.Sequential(lib.nn.Linear(784, 256), lib.nn.ReLU(), lib.nn.Linear(256, 10))


def _data(n):
    rng = np.random.default_rng(0)
    return rng.standard_normal((n, 784)).astype(np.float32), rng.integers(0, 10, n)


def _vmap_fn(lib, func, model):
    params = {k: v.detach() for k, v in model.named_parameters()}

    def loss(p, xb, yb):
        out = func.functional_call(model, p, (xb.unsqueeze(0),))
        return lib.nn.functional.cross_entropy(out, yb.unsqueeze(0))
    per_sample = func.vmap(func.grad(loss), in_dims=(None, 0, 0))
    return lambda x, y: per_sample(params, x, y)


def _loop_fn(lib, model):
    params = list(model.parameters())

    def run(x, y):
        grads = [[] for _ in params]
        for i in range(x.shape[0]):
            for p in params:
                p.grad = None
            out = model(x[i:i + 1])
            lib.nn.functional.cross_entropy(out, y[i:i + 1]).backward()
            for g, p in zip(grads, params):
                g.append(p.grad)
        return {k: lib.stack(g) for k, g in zip(dict(model.named_parameters()), grads)}
    return run


def _best(fn, args, repeat):
    fn(*args)  # warm-up
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn(*args)
        best = min(best, time.perf_counter() - t0)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--samples", type=int, default=64)
    a = ap.parse_args()
    if a.threads:
        os.environ.setdefault("OMP_NUM_THREADS", str(a.threads))
    xn, yn = _data(a.samples)
    model = _model(ember)
    x, y = ember.from_numpy(xn), ember.from_numpy(yn)
    ember_vmap = _vmap_fn(ember, ember.func, model)
    ember_loop = _loop_fn(ember, model)
    g_vmap, g_loop = ember_vmap(x, y), ember_loop(x, y)
    for k in g_vmap:
        np.testing.assert_allclose(g_vmap[k].numpy(), g_loop[k].numpy(), rtol=1e-4, atol=1e-5)
    results = {"ember vmap": _best(ember_vmap, (x, y), a.repeat),
               "ember loop": _best(ember_loop, (x, y), a.repeat)}
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        if a.threads:
            torch.set_num_threads(a.threads)
        tmodel = _model(torch)
        tmodel.load_state_dict({k: torch.from_numpy(v.detach().numpy().copy())
                                for k, v in model.state_dict().items()})
        tx, ty = torch.from_numpy(xn), torch.from_numpy(yn)
        torch_vmap = _vmap_fn(torch, torch.func, tmodel)
        g_torch = torch_vmap(tx, ty)
        for k in g_vmap:
            np.testing.assert_allclose(g_vmap[k].numpy(), g_torch[k].detach().numpy(), rtol=1e-4,
                                       atol=1e-5)
        results["torch.func vmap"] = _best(torch_vmap, (tx, ty), a.repeat)
    print(f"per-sample gradients, MLP 784-256-10, {a.samples} samples, best of {a.repeat}")
    for name, t in results.items():
        print(f"  {name:16s} {t * 1e3:8.2f} ms")
    print(f"  ember loop / ember vmap:      {results['ember loop'] / results['ember vmap']:.2f}x")
    if "torch.func vmap" in results:
        print(f"  ember vmap / torch.func vmap: "
              f"{results['ember vmap'] / results['torch.func vmap']:.2f}x")


if __name__ == "__main__":
    main()
