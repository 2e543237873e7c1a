"""Host time per CUDA op: what a small op costs the CPU before the device has anything to do.

    python benchmarks/cuda_host.py [--ember-only]

Tensors of 16 elements (8×8 for ``mm``), so the device work is negligible and each figure is the
host's: ember's dispatch, rules, caching allocator and launch, and on a GPU CuPy's launch too.
Each case is the best of several runs of back-to-back calls, without synchronizing, as a model's
eager loop issues them; the last row is a small GPT training step (``benchmarks/gpt.py``: width
32, 2 layers, batch 2×16), ended by a synchronize.

After the table, a cProfile of ember's ``a + b`` and ``a * 2.0`` (functions by own time, C
calls such as CuPy's kernel launches included): where the host time of an op goes.

Where a GPU is here, ember runs on it beside ``torch.cuda`` (PyTorch when installed). Elsewhere
ember runs on its simulated device (``EMBER_CUDA_SIMULATE=1``, set here), whose kernels are
NumPy calls on host memory: the figures then hold ember's own host path plus the simulation's
array views, and there is no PyTorch column (PyTorch has no simulated device).
"""
import argparse
import importlib.util
import os
import sys
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(_HERE, ".."))


def _gpu_here():
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # noqa: BLE001  (no CuPy, no driver, no device: no GPU)
        return False


def best_us(fn, calls=2000, runs=7):
    for _ in range(200):
        fn()
    best = float("inf")
    for _ in range(runs):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - t0) / calls)
    return best * 1e6


def cases(lib):
    dev = "cuda"
    a, b = lib.randn(16, device=dev), lib.randn(16, device=dev)
    g = lib.randn(16, device=dev, requires_grad=True)
    m = lib.randn(8, 8, device=dev)
    out = {
        "empty": best_us(lambda: lib.empty(16, device=dev)),
        "add": best_us(lambda: a + b),
        "mul by a number": best_us(lambda: a * 2.0),
        "add, requires_grad": best_us(lambda: g + b),
        "add_ (in place)": best_us(lambda: a.add_(b)),
        "sum": best_us(lambda: a.sum()),
        "softmax": best_us(lambda: a.softmax(0)),
        "mm 8x8": best_us(lambda: m @ m),
        "view": best_us(lambda: a.view(4, 4)),
    }
    spec = importlib.util.spec_from_file_location("gpt", os.path.join(_HERE, "gpt.py"))
    gpt = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gpt)
    step = gpt.train_step(lib, batch=2, context=16, device=dev, width=32, n_layer=2, n_head=2)

    def synced():
        step()
        lib.cuda.synchronize()
    out["GPT step (small), ms"] = best_us(synced, calls=5, runs=5) / 1e3
    return out


def profile_ops(lib, calls=3000, top=14):
    """Print where ember's host time goes in two small ops (own time per call, in µs)."""
    import cProfile
    import pstats
    a, b = lib.randn(16, device="cuda"), lib.randn(16, device="cuda")
    for name, fn in (("a + b", lambda: a + b), ("a * 2.0", lambda: a * 2.0)):
        for _ in range(200):
            fn()
        pr = cProfile.Profile()
        pr.enable()
        for _ in range(calls):
            fn()
        pr.disable()
        stats = pstats.Stats(pr).stats  # (file, line, function) -> (cc, nc, own, cumulative, _)
        rows = sorted(stats.items(), key=lambda kv: -kv[1][2])[:top]
        print(f"\n==== profile of {name}: µs per op under cProfile (its own cost inflates "
              f"them), by own time")
        for (file, line, func), (_, ncalls, own, cum, _) in rows:
            where = f"{os.path.basename(file)}:{line}" if line else "(C)"
            print(f"{own / calls * 1e6:8.2f} own {cum / calls * 1e6:8.2f} cum "
                  f"{ncalls / calls:5.1f}x  {where} {func}"[:150])


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ember-only", action="store_true")
    args = p.parse_args(argv)
    gpu = _gpu_here()
    if not gpu:
        os.environ["EMBER_CUDA_SIMULATE"] = "1"
    import ember
    columns = {"ember": cases(ember)}
    device = ember.cuda.get_device_name()
    if gpu and not args.ember_only:
        try:
            import torch
            columns["torch"] = cases(torch)
        except ImportError:
            pass
    print(f"device: {device}")
    print(f"{'case (us; GPT step ms)':26s}" + "".join(f"{k:>10s}" for k in columns)
          + ("  ember/torch" if "torch" in columns else ""))
    for case, mine in columns["ember"].items():
        row = f"{case:26s}{mine:10.2f}"
        if "torch" in columns:
            theirs = columns["torch"][case]
            row += f"{theirs:10.2f}{mine / theirs:12.2f}"
        print(row)
    profile_ops(ember)


if __name__ == "__main__":
    main()
