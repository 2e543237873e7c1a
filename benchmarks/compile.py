"""ember.compile beside torch.compile in one run (both with backend="eager", so the figures are
the front end's: capture, guards and dispatch, not code generation):

* first-call capture time of the GPT forward of benchmarks/gpt.py (2 layers, width 128,
  context 64, batch 16): the first compiled call minus one eager call;
* per-call overhead of a compiled 2-input function ``f(x, y) = x + y`` on 1-element tensors:
  compiled time minus eager time per call (guard function + residual + graph dispatch), best
  of N rounds.

    python benchmarks/compile.py [--calls 20000] [--rounds 5] [--threads 1]
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ember  # noqa: E402
import gpt  # noqa: E402


def capture_time(lib, compile_fn, reset):
    model = gpt.build(lib)
    x = lib.randint(65, (16, 64))
    y = lib.randint(65, (16, 64))
    model(x, y)  # warm the eager path (lazy imports, kernel caches)
    t0 = time.perf_counter()
    model(x, y)
    eager = time.perf_counter() - t0
    reset()
    opt = compile_fn(model)
    t0 = time.perf_counter()
    out = opt(x, y)
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    opt(x, y)
    second = time.perf_counter() - t0
    assert abs(float(out.detach()) - float(model(x, y).detach())) < 1e-5
    return first - eager, eager, second


def per_call(fn, args, calls, rounds):
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn(*args)
        best = min(best, (time.perf_counter() - t0) / calls)
    return best


def add(x, y):
    return x + y


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--calls", type=int, default=20000)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--threads", type=int, default=None,
                   help="run both libraries on N threads (ember: its BLAS pool)")
    args = p.parse_args(argv)
    try:
        import torch
    except ImportError:
        torch = None
    if args.threads is not None:
        ember.set_num_threads(args.threads)
        if torch is not None:
            torch.set_num_threads(args.threads)

    rows = []
    cap, eager, second = capture_time(ember, lambda m: ember.compile(m, backend="eager"),
                                      ember._dynamo.reset)
    rows.append(("ember", cap, eager, second))
    if torch is not None:
        cap_t, eager_t, second_t = capture_time(
            torch, lambda m: torch.compile(m, backend="eager"), torch._dynamo.reset)
        rows.append(("torch", cap_t, eager_t, second_t))
    print("GPT forward (batch 16, context 64): first compiled call minus one eager call")
    for name, c, e, s in rows:
        print(f"  {name:6s} capture {c * 1e3:8.1f} ms   eager call {e * 1e3:7.2f} ms   "
              f"second compiled call {s * 1e3:7.2f} ms")

    print(f"\nf(x, y) = x + y on 1-element tensors, per call (best of {args.rounds} x "
          f"{args.calls})")
    x, y = ember.ones(1), ember.ones(1)
    ce = ember.compile(add, backend="eager")
    ce(x, y)
    e_eager = per_call(add, (x, y), args.calls, args.rounds)
    e_comp = per_call(ce, (x, y), args.calls, args.rounds)
    print(f"  ember  eager {e_eager * 1e6:7.2f} us   compiled {e_comp * 1e6:7.2f} us   "
          f"overhead {(e_comp - e_eager) * 1e6:6.2f} us")
    if torch is not None:
        tx, ty = torch.ones(1), torch.ones(1)
        for backend in ("eager", "inductor"):
            torch._dynamo.reset()
            ct = torch.compile(add, backend=backend)
            ct(tx, ty)
            t_eager = per_call(add, (tx, ty), args.calls, args.rounds)
            t_comp = per_call(ct, (tx, ty), args.calls, args.rounds)
            print(f"  torch  eager {t_eager * 1e6:7.2f} us   compiled {t_comp * 1e6:7.2f} us   "
                  f"overhead {(t_comp - t_eager) * 1e6:6.2f} us  (backend={backend})")


if __name__ == "__main__":
    main()
