"""The CUDA random kernels (ember/_kernels/cuda/csrc/random.cu) against their NumPy definition
(ember/_kernels/cuda/philox.py), run where a GPU is lent. Prints one line per case and exits
non-zero on any mismatch.

Uniform numbers and integers must match bit for bit (integer arithmetic and correctly rounded
multiply-adds on both sides); normal numbers within a float32 ulp (random.cu's double log, sqrt,
cos and sin against the C library's). Lengths leave a tail after the last counter; offsets and
seeds use both 32-bit halves; the integer ranges take one word and two. At the end it checks
that no random op went to the host.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import ember  # noqa: E402
from ember._kernels.cuda import arrays, philox  # noqa: E402

failures = []


def check(name, got, expect, exact=True):
    ok = np.array_equal(got, expect) if exact else np.allclose(got, expect, rtol=2e-7,
                                                                atol=1e-7)
    print(f"{'ok  ' if ok else 'FAIL'} {name}")
    if not ok:
        bad = np.flatnonzero(got != expect)[:5]
        print("     first differences at", bad, got.reshape(-1)[bad], expect.reshape(-1)[bad])
        failures.append(name)


gen = ember.Generator(device="cuda")
for seed in (0, 12345, (7 << 32) + 3):
    for n in (1, 5, 1000, 1 << 20):
        for dt in (ember.float32, ember.float64):
            npdt = dt._np.type
            gen.manual_seed(seed)
            gen._offset = (5 << 32) + 9
            u = ember.empty(n, device="cuda", dtype=dt).uniform_(-3.0, 5.0, generator=gen)
            check(f"uniform {dt} seed={seed} n={n}", u.cpu().numpy(),
                  philox.uniform(seed, (5 << 32) + 9, n, npdt, -3.0, 5.0))
            z = ember.empty(n, device="cuda", dtype=dt).normal_(0.5, 2.0, generator=gen)
            check(f"normal {dt} seed={seed} n={n}", z.cpu().numpy(),
                  philox.normal(seed, (5 << 32) + 10, n, npdt, 0.5, 2.0), exact=False)
        for low, high in ((0, 10), (-7, 1 << 20), (-(1 << 40), 1 << 40)):
            gen.manual_seed(seed)
            k = ember.empty(n, device="cuda", dtype=ember.int64).random_(low, high,
                                                                          generator=gen)
            check(f"integers [{low}, {high}) seed={seed} n={n}", k.cpu().numpy(),
                  philox.integers(seed, 0, n, low, high - low))

ember.cuda.manual_seed(1)
x = ember.randn(1 << 16, device="cuda")
before = x.cpu().numpy()
y = ember.nn.functional.dropout(x, 0.2)
kept = (y != 0).cpu().numpy()
print(f"{'ok  ' if abs(kept.mean() - 0.8) < 0.01 else 'FAIL'} dropout keeps {kept.mean():.4f}")
check("dropout leaves its input alone", x.cpu().numpy(), before)
check("dropout scales the kept elements", y.cpu().numpy()[kept], before[kept] / np.float32(0.8),
      exact=False)
random_on_host = {k: v for k, v in arrays.stats["host"].items()
                  if k in ("uniform_", "normal_", "random_.from", "random_.to", "native_dropout",
                           "bernoulli_.float")}
print(f"{'ok  ' if not random_on_host else 'FAIL'} random ops on the device: {random_on_host}")
if random_on_host:
    failures.append("host")
print(f"{len(failures)} failures")
sys.exit(1 if failures else 0)
