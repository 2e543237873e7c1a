"""The fused CUDA kernels (ember/_kernels/cuda/fused.py) against ember's CPU kernels, run where a
GPU is lent: softmax, log_softmax, layer_norm and gelu, forward and backward through autograd, in
float32 and float64, on fresh random rows of several lengths plus rows holding NaN, +inf and only
-inf. Prints one line per case and exits non-zero on any mismatch."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import ember  # noqa: E402
from ember._kernels.cuda import arrays  # noqa: E402

F = ember.nn.functional
failures = []


def close(name, got, want, tol):
    g, w = got.detach().cpu().numpy(), want.detach().numpy()
    same_nan = np.array_equal(np.isnan(g), np.isnan(w))
    ok = g.shape == w.shape and same_nan and np.allclose(g, w, rtol=tol, atol=tol, equal_nan=True)
    err = np.nanmax(np.abs(g - w)) if g.size and ok else float("nan")
    print(f"{'ok  ' if ok else 'FAIL'} {name:48s} max|diff| {err:.2e}")
    if not ok:
        failures.append(name)


def run(name, fn, *shapes, dtype, tol, special=False):
    ins = [ember.randn(*s, dtype=dtype) for s in shapes]
    if special:  # row 0: a NaN, row 1: +inf, row 2: all -inf
        ins[0][0, 1] = float("nan")
        ins[0][1, 2] = float("inf")
        ins[0][2, :] = float("-inf")
    cpu = [t.clone().requires_grad_() for t in ins]
    dev = [t.cuda().requires_grad_() for t in ins]
    out_c, out_d = fn(*cpu), fn(*dev)
    close(f"{name} {dtype} {shapes}", out_d, out_c, tol)
    if not special:
        g = ember.randn(*out_c.shape, dtype=dtype)
        out_c.backward(g)
        out_d.backward(g.cuda())
        for i, (c, d) in enumerate(zip(cpu, dev)):
            close(f"  grad {i}", d.grad, c.grad, tol * 10)


before = arrays.stats["device"]
for dt, tol in ((ember.float32, 2e-5), (ember.float64, 1e-12)):
    for shape in ((7, 33), (64, 4096), (5, 1), (3, 1000)):
        run("softmax", lambda x: F.softmax(x, -1), shape, dtype=dt, tol=tol)
        run("log_softmax", lambda x: F.log_softmax(x, -1), shape, dtype=dt, tol=tol)
    run("softmax", lambda x: F.softmax(x, -1), (4, 9), dtype=dt, tol=tol, special=True)
    run("log_softmax", lambda x: F.log_softmax(x, -1), (4, 9), dtype=dt, tol=tol, special=True)
    for n in (33, 256, 4096):
        run("layer_norm w b", lambda x, w, b: F.layer_norm(x, (n,), w, b), (9, n), (n,), (n,),
            dtype=dt, tol=tol * 10)
        run("layer_norm", lambda x: F.layer_norm(x, (n,)), (9, n), dtype=dt, tol=tol * 10)
    for approx in ("none", "tanh"):
        run(f"gelu {approx}", lambda x: F.gelu(x, approximate=approx), (1000, 37), dtype=dt,
            tol=tol)
print(f"{arrays.stats['device'] - before} device kernel calls; declined or left the device: "
      f"{ {k: v for k, v in arrays.stats['host'].items() if 'fused' in v or 'layout' in v} }")
print("FAILED: " + ", ".join(failures) if failures else "all fused kernels match the CPU")
sys.exit(1 if failures else 0)
