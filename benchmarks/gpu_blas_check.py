"""ember's CUDA matrix products (ember/_kernels/cuda/blas.py: direct cuBLAS calls) against
float64 products on the CPU, run where a GPU is lent: mm, bmm, addmm, baddbmm, matmul and linear
over row-major, column-major (transposed), sliced, broadcast-batch and one-row/one-column
operands, float32 (with and without TF32), float64, float16 and bfloat16, alpha and beta. Fresh
random inputs each case; the output is poisoned first by the allocator's reuse. Prints one line per
case and exits non-zero on any mismatch."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import ember  # noqa: E402

failures = []
TOL = {ember.float32: 1e-5, ember.float64: 1e-12, ember.float16: 2e-3, ember.bfloat16: 1e-2}


def check(name, got, want, dtype, tol=None):
    g = got.detach().cpu().double().numpy()
    w = want.detach().double().numpy()
    err = np.linalg.norm(g - w) / max(np.linalg.norm(w), 1e-30)
    ok = g.shape == w.shape and got.dtype is dtype and got.is_cuda and err <= (tol or TOL[dtype])
    print(f"{'ok  ' if ok else 'FAIL'} {name:60s} rel err {err:.2e}")
    if not ok:
        failures.append(name)


def layouts(rows, cols, dtype):
    """(label, cpu float64 tensor, device tensor of the same values in that layout)."""
    base = ember.randn(rows, cols, dtype=ember.float64)
    big = ember.randn(rows + 3, cols + 5, dtype=ember.float64)
    big[1:rows + 1, 2:cols + 2] = base
    yield "row-major", base, base.to(dtype).cuda()
    yield "transposed", base, base.t().contiguous().to(dtype).cuda().t()
    yield "sliced", base, big.to(dtype).cuda()[1:rows + 1, 2:cols + 2]


for dtype in (ember.float32, ember.float64, ember.float16, ember.bfloat16):
    for m, k, n in ((33, 17, 9), (1, 64, 5), (64, 1, 7), (128, 256, 64)):
        for la, a64, a in layouts(m, k, dtype):
            for lb, b64, b in layouts(k, n, dtype):
                # the reference sees the inputs rounded to dtype, as the GPU does
                ar, br = a64.to(dtype).double(), b64.to(dtype).double()
                check(f"mm {dtype} {m}x{k}x{n} {la} @ {lb}", ember.mm(a, b), ar @ br, dtype)
        c64 = ember.randn(n, dtype=ember.float64)
        a64, b64 = ember.randn(m, k, dtype=ember.float64), ember.randn(k, n, dtype=ember.float64)
        ar, br, cr = (t.to(dtype).double() for t in (a64, b64, c64))
        a, b, c = (t.to(dtype).cuda() for t in (a64, b64, c64))
        check(f"addmm {dtype} beta=0.5 alpha=2 bias broadcast", ember.addmm(c, a, b, beta=0.5,
              alpha=2), 0.5 * cr + 2 * (ar @ br), dtype)
        check(f"addmm {dtype} beta=0", ember.addmm(c, a, b, beta=0), ar @ br, dtype)
        w64 = ember.randn(n, k, dtype=ember.float64)
        check(f"linear {dtype}", ember.nn.functional.linear(a, w64.to(dtype).cuda(), c),
              ar @ w64.to(dtype).double().t() + cr, dtype)
    x64, y64 = ember.randn(4, 9, 6, dtype=ember.float64), ember.randn(4, 6, 5, dtype=ember.float64)
    xr, yr = x64.to(dtype).double(), y64.to(dtype).double()
    x, y = x64.to(dtype).cuda(), y64.to(dtype).cuda()
    check(f"bmm {dtype}", ember.bmm(x, y), xr @ yr, dtype)
    check(f"bmm {dtype} transposed", ember.bmm(y.transpose(1, 2), x.transpose(1, 2)),
          yr.transpose(1, 2) @ xr.transpose(1, 2), dtype)
    check(f"bmm {dtype} broadcast batch", ember.bmm(x, y[:1].expand(4, 6, 5)),
          xr @ yr[:1].expand(4, 6, 5), dtype)
    z64 = ember.randn(4, 9, 5, dtype=ember.float64)
    check(f"baddbmm {dtype}", ember.baddbmm(z64.to(dtype).cuda(), x, y, beta=2, alpha=0.5),
          2 * z64.to(dtype).double() + 0.5 * (xr @ yr), dtype)
    check(f"matmul 4-d {dtype}", ember.matmul(x.view(2, 2, 9, 6), y.view(2, 2, 6, 5)),
          (xr @ yr).view(2, 2, 9, 5), dtype)

ember.backends.cuda.matmul.allow_tf32 = True
a64, b64 = ember.randn(256, 512, dtype=ember.float64), ember.randn(512, 128, dtype=ember.float64)
check("mm float32 TF32", ember.mm(a64.float().cuda(), b64.float().cuda()), a64 @ b64,
      ember.float32, tol=3e-3)
ember.backends.cuda.matmul.allow_tf32 = False
# integers and complex keep CuPy's matmul
i = ember.randint(-5, 5, (7, 3))
j = ember.randint(-5, 5, (3, 4))
got = ember.mm(i.cuda(), j.cuda())
ok = ember.equal(got.cpu(), i @ j)
print(f"{'ok  ' if ok else 'FAIL'} mm int64")
if not ok:
    failures.append("mm int64")
# autograd through the products
w = ember.randn(8, 5, requires_grad=True)
wc = w.detach().cuda().requires_grad_()
x = ember.randn(3, 8)
(x @ w).tanh().sum().backward()
(x.cuda() @ wc).tanh().sum().backward()
check("mm backward", wc.grad, w.grad.double(), ember.float32)
# every floating-point product above ran on the device: none was staged through the host
from ember._kernels.cuda import arrays  # noqa: E402
staged = {op: n for op, n in arrays.stats["staged"].items()
          if any(p in op for p in ("mm", "addmm", "bmm", "baddbmm"))}
print(f"{'ok  ' if not staged else 'FAIL'} products staged through the host: {staged} "
      f"{arrays.stats['host']}")
if staged:
    failures.append("staged")
print(f"{len(failures)} failures")
sys.exit(1 if failures else 0)
