"""ember's memory-efficient attention (ember/_kernels/cuda/attention.py) on a lent GPU, against
PyTorch — the fused Triton kernels (flash_attention.py, the default on a GPU) and the blocked
products (``attention.use_triton = False``), each:

* values: the output and the gradients of q, k, v against PyTorch's attention in float64 on the
  same random inputs, ‖ember − ref‖ / ‖ref‖ (float32 lands far under 1e-5 here), for several
  head dimensions, queries longer and shorter than the keys, causal or not, blocks of query rows
  smaller than the sequence (a small scores budget), and q, k, v as a GPT block makes them
  (strided views of one projection); a NaN in a query stays in its row;
* time: causal forward + backward at the GPT benchmark's shapes, ember against PyTorch.

Prints one line per case; exits non-zero on any mismatch.   run: python benchmarks/gpu_attention_check.py
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np  # noqa: E402
import torch  # noqa: E402

import ember  # noqa: E402
from ember._kernels.cuda import attention  # noqa: E402

failures = []
rng = np.random.default_rng(0)


def _ember(a):
    return ember.tensor(a, device="cuda", requires_grad=True)


def check(B, H, L, S, Dq, Dv, causal, gpt_layout=False, dtype="float32"):
    path = "blocked" if attention.use_triton is False else "fused"
    name = (f"{path} {dtype} B{B} H{H} L{L} S{S} D{Dq}/{Dv} causal={causal}"
            f"{' gpt-layout' if gpt_layout else ''}")
    q, k, v = (rng.standard_normal(s).astype(np.float32)
               for s in ((B, H, L, Dq), (B, H, S, Dq), (B, H, S, Dv)))
    g = rng.standard_normal((B, H, L, Dv)).astype(np.float32)
    if dtype != "float32":  # the inputs as the low precision holds them, for both libraries
        q, k, v, g = (ember.tensor(t).to(getattr(ember, dtype)).float().numpy()
                      for t in (q, k, v, g))
    if gpt_layout:  # one (B, T, 3·H·E) projection, split and viewed as the heads
        qkv = ember.tensor(np.concatenate([t.transpose(0, 2, 1, 3).reshape(B, L, H * Dq)
                                           for t in (q, k, v)], axis=2), device="cuda",
                           requires_grad=True)
        eq, ek, ev = (t.view(B, L, H, Dq).transpose(1, 2) for t in qkv.split(H * Dq, dim=2))
        leaves = [qkv]
    else:
        eq, ek, ev = leaves = [_ember(t).to(getattr(ember, dtype)).detach().requires_grad_()
                               for t in (q, k, v)]
    y = ember.nn.functional.scaled_dot_product_attention(eq, ek, ev, is_causal=causal)
    assert type(y.grad_fn).__name__ == "ScaledDotProductEfficientAttentionBackward0", y.grad_fn
    y.backward(ember.tensor(g, device="cuda").to(y.dtype))
    if gpt_layout:
        gq, gk, gv = (t.view(B, L, H, Dq).transpose(1, 2) for t in leaves[0].grad.split(H * Dq, 2))
    else:
        gq, gk, gv = (t.grad for t in leaves)
    tq, tk, tv = (torch.tensor(t, dtype=torch.float64, device="cuda", requires_grad=True)
                  for t in (q, k, v))
    with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.MATH):
        ty = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, is_causal=causal)
    ty.backward(torch.tensor(g, dtype=torch.float64, device="cuda"))
    worst = 0.0
    for mine, ref in ((y, ty), (gq, tq.grad), (gk, tk.grad), (gv, tv.grad)):
        m = mine.detach().cpu().double().numpy()  # (NumPy has no bfloat16)
        r = ref.detach().cpu().numpy()
        err = np.linalg.norm(m - r) / max(np.linalg.norm(r), 1e-30)
        worst = max(worst, err if np.isfinite(err) else np.inf)
    ok = worst < (1e-5 if dtype == "float32" else 2e-2)
    print(f"{'ok  ' if ok else 'FAIL'} {name:72s} worst rel. error {worst:.2e}")
    if not ok:
        failures.append(name)


def check_nan():
    q = rng.standard_normal((2, 3, 40, 64)).astype(np.float32)
    q[1, 2, 7, 5] = np.nan
    k, v = (rng.standard_normal((2, 3, 40, 64)).astype(np.float32) for _ in range(2))
    out = ember.nn.functional.scaled_dot_product_attention(
        *(ember.tensor(t, device="cuda") for t in (q, k, v))).cpu().numpy()
    ok = np.isnan(out[1, 2, 7]).all() and not np.isnan(np.delete(out[1, 2], 7, 0)).any() \
        and not np.isnan(out[0]).any()
    print(f"{'ok  ' if ok else 'FAIL'} a NaN in a query stays in its row")
    if not ok:
        failures.append("nan")


def timed(fn, sync, n=20):
    for _ in range(3):
        fn()
    sync()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    sync()
    return (time.perf_counter() - t) / n * 1e3


def bench(B, H, T, E=64):
    def step(lib):
        q, k, v = (lib.randn(B, H, T, E, device="cuda", requires_grad=True) for _ in range(3))
        g = lib.randn(B, H, T, E, device="cuda")
        return lambda: lib.nn.functional.scaled_dot_product_attention(
            q, k, v, is_causal=True).backward(g)
    fused = timed(step(ember), ember.cuda.synchronize)
    attention.use_triton = False
    blocked = timed(step(ember), ember.cuda.synchronize)
    attention.use_triton = None
    theirs = timed(step(torch), torch.cuda.synchronize)
    print(f"time {B}x{H}x{T}x{E} causal fwd+bwd: ember fused {fused:.3f} ms "
          f"({fused / theirs:.2f}x), blocked {blocked:.3f} ms ({blocked / theirs:.2f}x), "
          f"PyTorch {theirs:.3f} ms")


for shape in ((2, 3, 5, 7, 8, 11), (2, 4, 33, 17, 64, 64), (1, 2, 70, 70, 40, 96),
              (2, 2, 64, 64, 128, 128), (1, 2, 31, 45, 160, 72), (1, 1, 1, 1, 4, 4)):
    for causal in (False, True):
        check(*shape, causal)
check(2, 4, 48, 48, 32, 32, True, gpt_layout=True)
for dtype in ("float16", "bfloat16"):
    check(2, 4, 33, 17, 64, 64, True, dtype=dtype)
    check(1, 2, 70, 70, 40, 96, False, dtype=dtype)
check_nan()
attention.use_triton = False  # the blocked products
for shape in ((2, 3, 5, 7, 8, 11), (1, 2, 70, 70, 40, 96)):
    check(*shape, True)
saved, attention._SCORES_BUDGET = attention._SCORES_BUDGET, 4 * 40 * 3 * 7  # blocks of 7 rows
try:
    check(3, 3, 50, 40, 16, 24, True)
    check(3, 3, 50, 40, 16, 24, False)
finally:
    attention._SCORES_BUDGET = saved
check_nan()
attention.use_triton = None
if attention._triton_failed:
    print(f"FAIL the fused kernels did not launch: {attention._triton_failed[0][:300]}")
    failures.append("fused launch")
for B, H, T in ((16, 8, 256), (8, 12, 512)):
    bench(B, H, T)
print(f"{len(failures)} failures" + (f": {failures}" if failures else ""))
sys.exit(1 if failures else 0)
