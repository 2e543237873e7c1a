"""scaled_dot_product_attention on the CPU, ember beside PyTorch in one run: forward + backward
at batch 8, heads 8, sequence 1024, head dim 64 (float32), best of N; plus ember's peak extra
memory (tracemalloc sees NumPy's allocations) for the fused kernel and the math path at two
sequence lengths, which shows the fused kernel's growth is linear in the sequence.

    python benchmarks/sdpa.py [--repeat N] [--threads T]
"""
import argparse
import os
import sys
import time
import tracemalloc

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import ember  # noqa: E402
import ember.nn.functional as F  # noqa: E402
from ember.nn.attention import SDPBackend, sdpa_kernel  # noqa: E402


def _inputs(lib, B, H, L, E):
    lib.manual_seed(0)
    return [lib.randn(B, H, L, E, requires_grad=True) for _ in range(3)]


def _step(lib, fn, qkv):
    for t in qkv:
        t.grad = None
    out = fn(*qkv)
    out.sum().backward()


def _best(lib, fn, qkv, repeat):
    _step(lib, fn, qkv)  # warm-up
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        _step(lib, fn, qkv)
        best = min(best, time.perf_counter() - t0)
    return best


def _peak(fn, qkv):
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    _step(ember, fn, qkv)
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    return peak


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=None)
    args = ap.parse_args()
    import torch
    if args.threads:
        torch.set_num_threads(args.threads)
        ember.set_num_threads(args.threads)
    B, H, L, E = 8, 8, 1024, 64
    t_torch = _best(torch, torch.nn.functional.scaled_dot_product_attention,
                    _inputs(torch, B, H, L, E), args.repeat)
    t_ember = _best(ember, F.scaled_dot_product_attention, _inputs(ember, B, H, L, E),
                    args.repeat)
    print(f"sdpa fwd+bwd B={B} H={H} L={L} E={E} float32, threads={torch.get_num_threads()}")
    print(f"  PyTorch (flash for cpu): {t_torch * 1e3:8.1f} ms")
    print(f"  ember   (flash for cpu): {t_ember * 1e3:8.1f} ms   ratio {t_ember / t_torch:.2f}x")

    def math_sdpa(*qkv):
        with sdpa_kernel([SDPBackend.MATH]):
            return F.scaled_dot_product_attention(*qkv)
    print("  ember peak extra memory during fwd+bwd (MiB), B=1 H=8:")
    for n in (1024, 2048):
        qkv = _inputs(ember, 1, 8, n, E)
        fused = _peak(F.scaled_dot_product_attention, qkv)
        math_ = _peak(math_sdpa, qkv)
        print(f"    L={n}: fused {fused / 2**20:7.1f}   math {math_ / 2**20:7.1f}")


if __name__ == "__main__":
    main()
