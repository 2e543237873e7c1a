"""The raw CUDA kernels (ember/_kernels/cuda/fused.py, and pointwise.py's contiguous binary fast
path) against ember's CPU kernels, run where a GPU is lent. Prints one line per case and exits
non-zero on any mismatch.

* softmax, log_softmax, layer_norm (with and without weight and bias): forward and backward
  through autograd, float32 and float64, at row lengths that take each layout — one warp per row
  (several rows per block, a row count that leaves warps idle), one block per row, the register
  rows' largest K, the loop kernels for rows longer than registers hold — with lengths a multiple
  of the 16-byte pack and not, a misaligned contiguous view (a flat tensor's [1:] viewed as the
  rows), and rows holding a NaN, an +inf, or only -inf;
* gelu, forward and backward;
* add, sub, rsub, mul, div on contiguous tensors of every dtype the binary kernels take, at odd
  lengths (a tail after the last pack), with NaN/inf, alpha, a number, a 0-dim CPU tensor or a
  1-element CUDA tensor as an operand, in place, and misaligned (the CuPy path).

At the end it checks that the kernels meant to run did: the register-row and binary kernels
CuPy loaded."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import ember  # noqa: E402
from ember._kernels.cuda import arrays, fused  # noqa: E402

F = ember.nn.functional
failures = []


def _numpy(t):
    t = t.detach().cpu()
    return t.float().numpy() if t.dtype in (ember.float16, ember.bfloat16) else t.numpy()


def close(name, got, want, tol):
    g, w = _numpy(got), _numpy(want)
    same_nan = g.shape == w.shape and np.array_equal(np.isnan(g), np.isnan(w))
    if g.dtype.kind in "iu":
        ok = g.shape == w.shape and np.array_equal(g, w)
    else:
        ok = same_nan and np.allclose(g, w, rtol=tol, atol=tol, equal_nan=True)
    with np.errstate(invalid="ignore"):  # inf - inf where both are inf
        err = np.nanmax(np.abs(g.astype(np.float64) - w)) if g.size and ok else float("nan")
    print(f"{'ok  ' if ok else 'FAIL'} {name:60s} max|diff| {err:.2e}")
    if not ok:
        failures.append(name)


def misaligned(t):
    """A CUDA tensor holding ``t``'s values: a contiguous view at storage offset 1 (its first
    element 4 or 8 bytes past a 16-byte boundary)."""
    flat = ember.empty(t.numel() + 1, dtype=t.dtype, device="cuda")
    d = flat[1:].view(*t.shape)
    d.copy_(t)
    return d


def run(name, fn, *shapes, dtype, tol, special=False, offset=False):
    ins = [ember.randn(*s, dtype=dtype) for s in shapes]
    if special:  # row 0: a NaN, row 1: +inf, row 2: all -inf
        ins[0][0, 1] = float("nan")
        ins[0][1, 2] = float("inf")
        ins[0][2, :] = float("-inf")
    cpu = [t.clone().requires_grad_() for t in ins]
    dev = [(misaligned(t) if offset and i == 0 else t.cuda()).requires_grad_()
           for i, t in enumerate(ins)]
    out_c, out_d = fn(*cpu), fn(*dev)
    label = f"{name} {dtype} {shapes}{' misaligned' if offset else ''}"
    close(label, out_d, out_c, tol)
    if not special:
        g = ember.randn(*out_c.shape, dtype=dtype)
        out_c.backward(g)
        out_d.backward(misaligned(g) if offset else g.cuda())
        for i, (c, d) in enumerate(zip(cpu, dev)):
            close(f"  grad {i}", d.grad, c.grad, tol * 10)


def fused_cases():
    for dt, tol in ((ember.float32, 2e-5), (ember.float64, 1e-12)):
        # warp rows (33: odd; 1000, 1024: packs, 3 and 7 rows: idle warps), block rows
        # (1100, 4096), the largest K (9000 float32), loop rows (20000; 9000 for float64)
        for shape in ((7, 33), (5, 1), (3, 1000), (6, 1024), (4, 1100), (64, 4096),
                      (3, 4097), (3, 9000), (2, 20000)):
            run("softmax", lambda x: F.softmax(x, -1), shape, dtype=dt, tol=tol)
            run("log_softmax", lambda x: F.log_softmax(x, -1), shape, dtype=dt, tol=tol)
        for shape in ((5, 64), (4, 4096)):
            run("softmax", lambda x: F.softmax(x, -1), shape, dtype=dt, tol=tol, offset=True)
            run("log_softmax", lambda x: F.log_softmax(x, -1), shape, dtype=dt, tol=tol,
                offset=True)
        for shape in ((4, 9), (4, 64), (4, 4096), (4, 20000)):
            run("softmax", lambda x: F.softmax(x, -1), shape, dtype=dt, tol=tol, special=True)
            run("log_softmax", lambda x: F.log_softmax(x, -1), shape, dtype=dt, tol=tol,
                special=True)
        for n in (33, 256, 1100, 4096, 9000, 20000):
            run("layer_norm w b", lambda x, w, b: F.layer_norm(x, (n,), w, b), (9, n), (n,),
                (n,), dtype=dt, tol=tol * 10)
            run("layer_norm", lambda x: F.layer_norm(x, (n,)), (9, n), dtype=dt, tol=tol * 10)
        for n in (64, 4096):
            run("layer_norm w b", lambda x, w, b: F.layer_norm(x, (n,), w, b), (9, n), (n,),
                (n,), dtype=dt, tol=tol * 10, offset=True)
            run("layer_norm", lambda x: F.layer_norm(x, (n,)), (4, n), dtype=dt, tol=tol * 10,
                special=True)
        for approx in ("none", "tanh"):
            run(f"gelu {approx}", lambda x: F.gelu(x, approximate=approx), (1000, 37),
                dtype=dt, tol=tol)


def _values(dt, n):
    if dt in (ember.int32, ember.int64):
        x = ember.randint(-1000, 1000, (n,), dtype=dt)
        return x, ember.where(x == 0, ember.ones_like(x), x)
    x, y = ember.randn(n, dtype=dt), ember.randn(n, dtype=dt)
    if n > 8:
        x[3], x[5], y[7], y[8] = float("nan"), float("inf"), float("-inf"), 0.0
    return x, y


def binary_cases():
    tols = {ember.float32: 1e-6, ember.float64: 1e-15, ember.float16: 2e-3,
            ember.bfloat16: 1.6e-2, ember.int32: 0, ember.int64: 0}
    for dt, tol in tols.items():
        is_float = dt.is_floating_point
        alpha = 2.5 if is_float else 3
        number = 0.75 if is_float else 7
        for n in (1, 7, 67, 1000003):
            x, y = _values(dt, n)
            xd, yd = x.cuda(), y.cuda()
            cases = [("add", lambda a, b: a + b), ("sub", lambda a, b: a - b),
                     ("mul", lambda a, b: a * b),
                     ("add alpha", lambda a, b: ember.add(a, b, alpha=alpha)),
                     ("sub alpha", lambda a, b: ember.sub(a, b, alpha=alpha)),
                     ("rsub alpha", lambda a, b: ember.rsub(a, b, alpha=alpha)),
                     ("number * x", lambda a, b: number * a),
                     ("x + number", lambda a, b: a + number),
                     ("number - x", lambda a, b: number - a),
                     ("x - 0-dim", lambda a, b: a - b[0].clone())]
            if is_float:
                cases += [("div", lambda a, b: a / b), ("x / number", lambda a, b: a / number),
                          ("number / x", lambda a, b: number / a)]
            for name, fn in cases:
                close(f"{name} {dt} n={n}", fn(xd, yd), fn(x, y), tol)
            # the 0-dim operand on the CPU beside CUDA x, and a 1-element CUDA tensor
            s = ember.tensor(number, dtype=dt)
            close(f"x * cpu 0-dim {dt} n={n}", xd * s, x * s, tol)
            close(f"1-element cuda * x {dt} n={n}", s.cuda() * xd, s * x, tol)
            # in place (the result is an operand)
            a_c, a_d = x.clone(), xd.clone()
            a_c.add_(y, alpha=alpha)
            a_d.add_(yd, alpha=alpha)
            close(f"add_ alpha {dt} n={n}", a_d, a_c, tol)
        x, y = _values(dt, 1001)
        close(f"misaligned add {dt}", misaligned(x[1:]) + misaligned(y[1:]), x[1:] + y[1:],
              tol)


before = arrays.stats["device"]
fused_cases()
binary_cases()
loaded = set(fused._functions)
expected = {"softmax_forward_reg_f32_v4_k16", "softmax_forward_reg_f32_v1_k4",
            "softmax_backward_reg_f64_v2_k8", "softmax_forward_f32", "softmax_forward_f64",
            "layer_norm_forward_reg_f32_v4_k16", "layer_norm_backward_input_reg_f32_v1_k4",
            "layer_norm_forward_reg_f32_v4_k32", "layer_norm_forward_f64", "layer_norm_forward_f32",
            "binary_add_f32", "binary_div_bf16", "binary_mul_i64", "binary_sub_f16"}
missing = expected - loaded
print(f"{arrays.stats['device'] - before} device kernel calls; raw kernels loaded: "
      f"{len(loaded)}; declined or left the device: "
      f"{ {k: v for k, v in arrays.stats['host'].items() if 'fused' in v or 'layout' in v} }")
if missing:
    print(f"FAIL kernels that never ran: {sorted(missing)}")
    failures.append("kernels not run")
print("FAILED: " + ", ".join(failures) if failures else "all raw kernels match the CPU")
sys.exit(1 if failures else 0)
