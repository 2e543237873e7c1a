"""The multi-tensor kernels (ember/_kernels/cuda/foreach.py, csrc/foreach.cu) against ember's CPU
foreach kernels, run where a GPU is lent: every op the optimizers and clip_grad_norm_ call, on
lists of float32 and float64 tensors of mixed sizes (one element to several chunks), fresh random
values with NaN, +inf and -inf planted; the in-place ops must match the CPU bit for bit (the
kernels round each step as NumPy does), the norms within float rounding (a sum's order differs). Then AdamW (foreach, the
CUDA default) and clip_grad_norm_ against the CPU for a few steps, and that every launch went
through the multi-tensor kernels. Prints one line per case; exits non-zero on any mismatch."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import ember  # noqa: E402
from ember._kernels.cuda import arrays, foreach  # noqa: E402

failures = []
launched = []
_real_kernel = foreach._kernel
foreach._kernel = lambda f, name: (launched.append(name), _real_kernel(f, name))[1]
SIZES = [(1,), (7, 3), (300,), (129, 257), (40000,), (5, 1)]


def report(name, ok, detail=""):
    print(f"{'ok  ' if ok else 'FAIL'} {name:56s} {detail}")
    if not ok:
        failures.append(name)


def lists(dtype, count=1, special=True):
    out = []
    for _ in range(count):
        ts = [ember.randn(*s, dtype=dtype) for s in SIZES]
        if special:
            ts[1][0, 0], ts[1][1, 1], ts[1][2, 2] = float("nan"), float("inf"), float("-inf")
        out.append(ts)
    return out


def same(name, dev_list, cpu_list, exact=True, tol=0.0, atol=0.0):
    for d, c in zip(dev_list, cpu_list):
        g, w = d.cpu().numpy(), c.numpy()
        if exact:
            ok = g.shape == w.shape and np.array_equal(g, w, equal_nan=True)
        else:
            ok = g.shape == w.shape and np.allclose(g, w, rtol=tol, atol=atol, equal_nan=True)
        if not ok:
            report(name, False, f"max|diff| {np.nanmax(np.abs(g - w)) if g.size else 0}")
            return
    report(name, True)


def run(name, fn, dtype, count=1, exact=True, tol=0.0, special=True, atol=0.0):
    cpu = lists(dtype, count, special)
    dev = [[t.cuda() for t in ts] for ts in cpu]
    cpu_out, dev_out = fn(*cpu), fn(*dev)
    if cpu_out is None:  # in place: compare the first list
        cpu_out, dev_out = cpu[0], dev[0]
    same(f"{name} {dtype}", dev_out, cpu_out, exact, tol, atol)


for dt in (ember.float32, ember.float64):
    run("_foreach_add_ scalar", lambda a: ember._foreach_add_(a, 0.3), dt)
    # alpha fused as one rounding (ATen's a + alpha * b on both devices); ember's CPU kernel
    # fuses it on its generated path, small tensors round twice: within an ulp of the operands
    # (not of the result, which cancellation can make small)
    eps = float(np.finfo(dt._np).eps)
    run("_foreach_add_ list alpha", lambda a, b: ember._foreach_add_(a, b, alpha=-0.7), dt, 2,
        exact=False, tol=2 * eps, atol=8 * eps)
    run("_foreach_mul_ scalar", lambda a: ember._foreach_mul_(a, 0.999), dt)
    run("_foreach_mul_ list", lambda a, b: ember._foreach_mul_(a, b), dt, 2)
    run("_foreach_mul_ 0-dim tensor", lambda a: ember._foreach_mul_(
        a, ember.tensor(0.37, dtype=dt, device=a[0].device)), dt)
    run("_foreach_div_ scalar list", lambda a: ember._foreach_div_(
        a, [1.5 + i for i in range(len(a))]), dt)
    for w in (0.1, 0.9):
        run(f"_foreach_lerp_ weight {w}", lambda a, b: ember._foreach_lerp_(a, b, w), dt, 2)
    run("_foreach_addcmul_", lambda a, b, c: ember._foreach_addcmul_(a, b, c, 0.001), dt, 3)
    run("_foreach_addcdiv_ scalar list", lambda a, b, c: ember._foreach_addcdiv_(
        a, b, c, [-0.01 * (i + 1) for i in range(len(a))]), dt, 3)
    run("_foreach_maximum_", lambda a, b: ember._foreach_maximum_(a, b), dt, 2)
    run("_foreach_clamp_min_", lambda a: ember._foreach_clamp_min_(a, -0.5), dt)
    run("_foreach_clamp_max_", lambda a: ember._foreach_clamp_max_(a, 0.5), dt)
    run("_foreach_sqrt", lambda a: ember._foreach_sqrt([t.abs() for t in a]), dt)
    run("_foreach_norm", lambda a: ember._foreach_norm(a), dt, exact=False,
        tol=1e-5 if dt is ember.float32 else 1e-12, special=False)
    run("_foreach_norm with inf and nan", lambda a: ember._foreach_norm(a), dt, exact=False,
        tol=1e-5 if dt is ember.float32 else 1e-12)

# an optimizer group and gradient clipping, several steps
ember.manual_seed(0)
cpu = [ember.randn(*s, requires_grad=True) for s in SIZES]
dev = [p.detach().cuda().requires_grad_() for p in cpu]
opts = [ember.optim.AdamW(cpu, lr=0.01, foreach=True), ember.optim.AdamW(dev, lr=0.01)]
for step in range(4):
    grads = [ember.randn(*p.shape) * 3 for p in cpu]
    for params, opt in zip((cpu, dev), opts):
        for p, g in zip(params, grads):
            p.grad = g.to(p.device)
        ember.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
same("AdamW (foreach) + clip_grad_norm_, 4 steps", [p.detach() for p in dev],
     [p.detach() for p in cpu], exact=False, tol=1e-5, atol=1e-6)
kinds = sorted(set(launched))
report("the multi-tensor kernels ran", bool(kinds) and not arrays.stats["staged"],
       f"{kinds} staged: {dict(arrays.stats['staged'])}")
print(f"{len(failures)} failures")
sys.exit(1 if failures else 0)
