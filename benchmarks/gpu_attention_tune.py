"""The fused attention kernels' settings on a lent GPU: the time of one causal forward + backward
at the GPT benchmark's shapes for each dot precision and block size, with its error against
PyTorch's float64 attention, beside PyTorch's kernel in the same run. Session 24's H100 call
measured ember's float32 kernel (exact ``ieee`` dots, blocks of 64 x 32) at 4-6x PyTorch's;
this says which setting to make the default (``flash_attention._precision``/``_blocks``).

    python benchmarks/gpu_attention_tune.py [--tiny]

``--tiny``: small shapes, one repetition (runs anywhere ``tests/test_cuda_attention.py`` runs
the kernels, the simulated device under Triton's interpreter included: a check of the script,
not a measurement).
"""
import itertools
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np  # noqa: E402

import ember  # noqa: E402
from ember._kernels.cuda import attention, flash_attention  # noqa: E402

PRECISIONS = ("ieee", "tf32x3", "tf32")
BLOCKS = ((64, 32), (64, 64), (128, 64), (32, 64))


def _reference(q, k, v, g):
    """PyTorch's math attention in float64 (the output and the three gradients), or None
    where PyTorch is not installed (the errors then print as nan)."""
    try:
        import torch
    except ImportError:
        return None
    t = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in (q, k, v)]
    out = torch.nn.functional.scaled_dot_product_attention(*t, is_causal=True)
    out.backward(torch.tensor(g, dtype=torch.float64))
    return [x.detach().numpy() for x in (out, *(a.grad for a in t))]


def _error(mine, ref):
    if ref is None:
        return float("nan")
    return max(np.linalg.norm(m.detach().cpu().double().numpy() - r) / np.linalg.norm(r)
               for m, r in zip(mine, ref))


def _time(fn, reps, sync=None):
    sync = sync or ember.cuda.synchronize
    fn()
    sync()
    t = time.perf_counter()
    for _ in range(reps):
        fn()
    sync()
    return (time.perf_counter() - t) / reps * 1e3


def main(tiny=False):
    shapes = [(1, 2, 32, 16)] if tiny else [(16, 8, 256, 64), (8, 12, 512, 64)]
    reps = 1 if tiny else 20
    attention.use_triton = True
    rng = np.random.default_rng(0)
    saved = flash_attention._precision, flash_attention._blocks
    try:
        for B, H, T, E in shapes:
            q, k, v, g = (rng.standard_normal((B, H, T, E)).astype(np.float32) for _ in range(4))
            ref = _reference(q, k, v, g)
            leaves = [ember.tensor(a, device="cuda", requires_grad=True) for a in (q, k, v)]
            grad = ember.tensor(g, device="cuda")

            def step():
                for t in leaves:
                    t.grad = None
                out = ember.nn.functional.scaled_dot_product_attention(*leaves, is_causal=True)
                out.backward(grad)
                return out
            print(f"causal fwd+bwd {B}x{H}x{T}x{E} float32")
            for prec, (bm, bn) in itertools.product(PRECISIONS, BLOCKS):
                flash_attention._precision = lambda dtype, p=prec: p
                flash_attention._blocks = lambda dtype, dq, dv, b=(bm, bn): b
                try:
                    out = step()
                    err = _error([out] + [t.grad for t in leaves], ref)
                    ms = _time(step, reps)
                    print(f"  {prec:7s} blocks {bm:3d}x{bn:<3d} {ms:8.3f} ms  worst rel. error "
                          f"{err:.1e}")
                except Exception as e:  # noqa: BLE001  (a setting Triton refuses: said, next)
                    print(f"  {prec:7s} blocks {bm:3d}x{bn:<3d} failed: "
                          f"{type(e).__name__}: {str(e)[:120]}")
            try:
                import torch
                tq, tk, tv = (torch.tensor(a, device="cuda", requires_grad=True)
                              for a in (q, k, v))
                tg = torch.tensor(g, device="cuda")

                def theirs():
                    torch.nn.functional.scaled_dot_product_attention(
                        tq, tk, tv, is_causal=True).backward(tg)
                print(f"  PyTorch          {_time(theirs, reps, torch.cuda.synchronize):8.3f} ms")
            except (ImportError, RuntimeError, AssertionError) as e:
                print(f"  PyTorch: not timed ({type(e).__name__}: {str(e)[:80]})")
    finally:
        flash_attention._precision, flash_attention._blocks = saved
        attention.use_triton = None


if __name__ == "__main__":
    main(tiny="--tiny" in sys.argv[1:])
