"""Where ember's time goes on a GPU: cProfile of softmax and layer_norm on 8192×4096 and of the
GPT step of ``benchmarks/gpu.py --quick``, top functions by own time (run on a lent GPU)."""
import cProfile
import os
import pstats
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(_HERE, ".."))
sys.path.insert(0, _HERE)

import ember  # noqa: E402
import gpt  # noqa: E402


def profile(name, fn, reps):
    for _ in range(2):
        fn()
    ember.cuda.synchronize()
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(reps):
        fn()
    ember.cuda.synchronize()
    pr.disable()
    print(f"==== {name} x{reps}")
    pstats.Stats(pr).sort_stats("tottime").print_stats(18)


m = ember.randn(8192, 4096, device="cuda")
w, b = ember.ones(4096, device="cuda"), ember.zeros(4096, device="cuda")
profile("softmax", lambda: ember.softmax(m, -1), 3)
profile("layer_norm", lambda: ember.nn.functional.layer_norm(m, (4096,), w, b), 3)
step = gpt.train_step(ember, batch=16, context=256, device="cuda", width=256, n_layer=4, n_head=8)
profile("GPT step", step, 2)

# CuPy alone on the same data, for scale: the passes ember's softmax body makes
import time  # noqa: E402

import cupy as cp  # noqa: E402

x = cp.random.standard_normal((8192, 4096), dtype=cp.float32)
for label, f in (("cupy max", lambda: x.max(axis=1, keepdims=True)),
                 ("cupy exp", lambda: cp.exp(x)),
                 ("cupy softmax passes", lambda: (lambda e: e / e.sum(axis=1, keepdims=True))(
                     cp.exp(x - x.max(axis=1, keepdims=True))))):
    f()
    cp.cuda.runtime.deviceSynchronize()
    t = time.perf_counter()
    for _ in range(10):
        f()
    cp.cuda.runtime.deviceSynchronize()
    print(f"{label:24s} {(time.perf_counter() - t) / 10 * 1e3:8.3f} ms")
