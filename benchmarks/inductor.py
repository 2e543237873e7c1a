"""Inductor on the CPU, ember beside PyTorch in one run (issue 14's figures).

For each workload: ember compiled (``ember.compile``, backend inductor), PyTorch eager and
``torch.compile`` (its inductor), best of ``--rounds`` rounds taken in turn (the machine's
drift hits all three alike), at the default thread count unless ``--threads`` is given:

* ``pointwise``: ``exp(relu(sin(x) * 2 + 1))`` on 1M float32;
* ``softmax`` / ``layer_norm``: forward + backward on 4096 x 1024 float32;
* ``mlp``: a training step of 784-256-256-10 (batch 128, SGD), the model compiled; the losses
  of 20 steps against ember eager;
* ``mlp-autotune``: the mlp step with ``mode="max-autotune"`` beside the default mode, PyTorch
  eager and ``torch.compile(mode="max-autotune")``;
* ``linear-relu``: ``relu(x @ w.t() + b)`` forward on small matrices (64 x 128 @ 128 x 128),
  the same four ways (max-autotune fuses it into one GEMM kernel);
* ``gpt``: the training step of benchmarks/gpt.py with the model compiled, same loss check;
* ``compile-time``: the GPT step's first call in a fresh process, with an empty cache (cold) and
  again with the cache the first process left (warm), for both libraries;
* ``overhead``: per-call overhead of ``mode="reduce-overhead"`` (ember: the wrapper in C) against
  ``mode="default"``, beside torch eager and ``torch.compile(mode="reduce-overhead")``: ten
  pointwise ops on 16 elements, and the mlp step above (rounds interleaved).

    python benchmarks/inductor.py [--only pointwise,softmax,...] [--rounds 5] [--threads N]
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

import ember  # noqa: E402

torch = None


def three_ways(fns, calls, rounds):
    """Best seconds per call of (ember compiled, torch eager, torch.compile), their rounds
    taken in turn (``interleaved``): this machine's speed drifts over minutes, and timing one
    after the other put that drift between the libraries."""
    return interleaved(fns, calls, rounds)


def row(name, e, te, tc, extra=""):
    print(f"{name:<22} ember compiled {e * 1e3:8.3f} ms | torch eager {te * 1e3:8.3f} ms | "
          f"torch.compile {tc * 1e3:8.3f} ms | ember/eager {e / te:5.2f}x  "
          f"ember/compile {e / tc:5.2f}x {extra}")


def pointwise(args):
    def f(lib):
        return lambda x: lib.exp(lib.relu(lib.sin(x) * 2 + 1))
    xe = ember.randn(1 << 20)
    xt = torch.from_numpy(xe.numpy().copy())
    ce, ct = ember.compile(f(ember)), torch.compile(f(torch))
    assert np.allclose(ce(xe).numpy(), f(torch)(xt).numpy(), rtol=1e-5)
    row("pointwise 1M", *three_ways([lambda: ce(xe), lambda: f(torch)(xt), lambda: ct(xt)], 20,
                                    args.rounds))


def _fwd_bwd(lib, fn, x, g):
    def step():
        x.grad = None
        fn(x).backward(g)
    return step


def norm_ops(args, which):
    rows, cols = 4096, 1024
    xn = np.random.default_rng(0).standard_normal((rows, cols), dtype=np.float32)
    gn = np.random.default_rng(1).standard_normal((rows, cols), dtype=np.float32)

    def fn(lib):
        if which == "softmax":
            return lambda x: x.softmax(-1)
        w, b = lib.ones(cols), lib.zeros(cols)
        return lambda x: lib.nn.functional.layer_norm(x, (cols,), w, b)
    xe = ember.tensor(xn, requires_grad=True)
    xt = torch.tensor(xn, requires_grad=True)
    ge, gt = ember.tensor(gn), torch.tensor(gn)
    ce, ct = ember.compile(fn(ember)), torch.compile(fn(torch))
    row(f"{which} fwd+bwd", *three_ways([_fwd_bwd(ember, ce, xe, ge),
                                         _fwd_bwd(torch, fn(torch), xt, gt),
                                         _fwd_bwd(torch, ct, xt, gt)], 5, args.rounds))


def _mlp(lib):
    nn = lib.nn
    lib.manual_seed(0)
    return nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                         nn.Linear(256, 10))


def _steps(lib, model, make_loss, opt_cls=None, lr=0.01):
    opt = (opt_cls or lib.optim.SGD)(model.parameters(), lr=lr)

    def step():
        loss = make_loss(model)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss
    return step


def _same_losses(lib_step_a, lib_step_b, n=20):
    worst = 0.0
    for _ in range(n):
        worst = max(worst, abs(float(lib_step_a().detach()) - float(lib_step_b().detach())))
    return worst


def mlp(args):
    xn = np.random.default_rng(0).standard_normal((128, 784), dtype=np.float32)
    yn = np.random.default_rng(1).integers(0, 10, 128)

    def make(lib, compiled):
        x, y = lib.tensor(xn), lib.tensor(yn)
        model = _mlp(lib)
        run = (lib.compile(model) if compiled else model)
        return _steps(lib, model, lambda m: lib.nn.functional.cross_entropy(run(x), y))
    diff = _same_losses(make(ember, True), make(ember, False))
    row("mlp step", *three_ways([make(ember, True), make(torch, False), make(torch, True)], 10,
                                args.rounds),
        f"(20-step loss diff vs ember eager {diff:.1e})")


def interleaved(fns, calls, rounds):
    """Best seconds per call of each of ``fns``, their rounds taken in turn (a machine whose
    load changes during the run affects them alike). Both libraries' OpenMP pools spin for
    milliseconds after a parallel region (libgomp's default spin count), on the same cores: so
    each round of each case starts after a 20 ms pause, in which the other library's threads
    go to sleep, and one untimed call, which wakes its own."""
    for fn in fns:
        fn()
        fn()
    best = [float("inf")] * len(fns)
    for _ in range(rounds):
        for i, fn in enumerate(fns):
            time.sleep(0.02)
            fn()
            t0 = time.perf_counter()
            for _ in range(calls):
                fn()
            best[i] = min(best[i], (time.perf_counter() - t0) / calls)
    return best


def autotune_row(name, times, extra=""):
    ed, ea, te, tc = times
    print(f"{name:<22} ember default {ed * 1e3:8.3f} ms | ember max-autotune {ea * 1e3:8.3f} ms "
          f"| torch eager {te * 1e3:8.3f} ms | torch.compile max-autotune "
          + (f"{tc * 1e3:8.3f} ms" if tc == tc else "  failed") +
          f" | autotune/eager {ea / te:5.2f}x {extra}")


def _torch_max_autotune(make):
    """The workload under ``torch.compile(mode="max-autotune")``, run once (it compiles and
    autotunes), or None where that fails on this machine."""
    try:
        fn = make(torch, "max-autotune")
        fn()
        return fn
    except Exception as e:  # noqa: BLE001 - reported in the table, not fatal to the run
        print(f"  (torch.compile max-autotune failed: {type(e).__name__}: {str(e)[:200]})")
        return None


def _four_ways(make, calls, rounds):
    fns = [make(ember, None), make(ember, "max-autotune"), make(torch, False)]
    tc = _torch_max_autotune(make)
    times = interleaved(fns + ([tc] if tc else []), calls, rounds)
    return times + ([] if tc else [float("nan")])


def mlp_autotune(args):
    xn = np.random.default_rng(0).standard_normal((128, 784), dtype=np.float32)
    yn = np.random.default_rng(1).integers(0, 10, 128)

    def make(lib, mode):
        x, y = lib.tensor(xn), lib.tensor(yn)
        model = _mlp(lib)
        run = model if mode is False else lib.compile(model, mode=mode)
        return _steps(lib, model, lambda m: lib.nn.functional.cross_entropy(run(x), y))
    diff = _same_losses(make(ember, "max-autotune"), make(ember, False))
    autotune_row("mlp step", _four_ways(make, 10, args.rounds),
                 f"(20-step loss diff vs ember eager {diff:.1e})")


def linear_relu(args):
    gen = np.random.default_rng(0)
    xn, wn, bn = (gen.standard_normal(s, dtype=np.float32) for s in ((64, 128), (128, 128),
                                                                        (128,)))

    def make(lib, mode):
        x, w, b = lib.tensor(xn), lib.tensor(wn), lib.tensor(bn)
        f = lambda x, w, b: lib.relu(x @ w.t() + b)  # noqa: E731
        run = f if mode is False else lib.compile(f, mode=mode)
        return lambda: run(x, w, b)
    ref = make(ember, False)().numpy()
    assert np.allclose(make(ember, "max-autotune")().numpy(), ref, rtol=1e-4, atol=1e-4)
    autotune_row("linear+relu 64x128", _four_ways(make, 200, args.rounds))


def gpt_step(args):
    import gpt

    def make(lib, compiled):
        lib.manual_seed(0)
        model = gpt.build(lib)
        gen = np.random.default_rng(0)
        x = lib.tensor(gen.integers(0, 65, (16, 64)))
        y = lib.tensor(gen.integers(0, 65, (16, 64)))
        run = lib.compile(model) if compiled else model
        return _steps(lib, model, lambda m: run(x, y), lib.optim.AdamW, 1e-3)
    diff = _same_losses(make(ember, True), make(ember, False))
    row("gpt step", *three_ways([make(ember, True), make(torch, False), make(torch, True)], 5,
                                args.rounds),
        f"(20-step loss diff vs ember eager {diff:.1e})")


_CHILD = """
import sys, time
sys.path.insert(0, {here!r}); sys.path.insert(0, {root!r})
import {lib} as lib, gpt
lib.manual_seed(0)
model = gpt.build(lib)
x = lib.randint(65, (16, 64)); y = lib.randint(65, (16, 64))
run = lib.compile(model)
t0 = time.perf_counter()
run(x, y).backward()
print(time.perf_counter() - t0)
"""


def compile_time(args):
    for lib in ("ember", "torch"):
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=cache)
            code = _CHILD.format(here=HERE, root=os.path.join(HERE, ".."), lib=lib)
            times = [float(subprocess.run([sys.executable, "-c", code], env=env, check=True,
                                          capture_output=True, text=True).stdout.split()[-1])
                     for _ in range(2)]
        print(f"{'gpt compile ' + lib:<22} cold {times[0]:6.2f} s | warm (cache present) "
              f"{times[1]:6.2f} s")


def overhead(args):
    def tiny(lib):
        return lambda x: (((x.sin() * 2 + 1).exp().relu() - x).cos() * x + 3).tanh()
    xn = np.random.default_rng(0).standard_normal(16, dtype=np.float32)
    xe, xt = ember.tensor(xn), torch.tensor(xn)
    fns = {"ember default": ember.compile(tiny(ember)),
           "ember reduce-overhead": ember.compile(tiny(ember), mode="reduce-overhead"),
           "torch eager": tiny(torch),
           "torch.compile r-o": torch.compile(tiny(torch), mode="reduce-overhead")}
    for k, fn in fns.items():
        x = xe if k.startswith("ember") else xt
        assert np.allclose(fn(x).numpy(), tiny(torch)(xt).numpy(), rtol=1e-5, atol=1e-6), k
    _interleaved("10 ops x 16 (us)", {k: (lambda fn=fn, x=(xe if k.startswith("ember") else xt):
                                         fn(x)) for k, fn in fns.items()}, 2000, args.rounds, 1e6)
    xn = np.random.default_rng(0).standard_normal((128, 784), dtype=np.float32)
    yn = np.random.default_rng(1).integers(0, 10, 128)

    def make(lib, mode):
        x, y = lib.tensor(xn), lib.tensor(yn)
        model = _mlp(lib)
        run = model if mode == "eager" else lib.compile(model, mode=mode)
        return _steps(lib, model, lambda m: lib.nn.functional.cross_entropy(run(x), y))
    steps = {"ember default": make(ember, "default"),
             "ember reduce-overhead": make(ember, "reduce-overhead"),
             "torch eager": make(torch, "eager"),
             "torch.compile r-o": make(torch, "reduce-overhead")}
    _interleaved("mlp step (ms)", steps, 10, args.rounds, 1e3)


def _interleaved(name, fns, calls, rounds, scale):
    """Best of ``rounds`` for each function, the functions' rounds taken in turn."""
    for fn in fns.values():
        fn()
        fn()
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(rounds):
        for k, fn in fns.items():
            t0 = time.perf_counter()
            for _ in range(calls):
                fn()
            best[k] = min(best[k], (time.perf_counter() - t0) / calls)
    print(f"{name:<22} " + " | ".join(f"{k} {v * scale:8.2f}" for k, v in best.items()))


SECTIONS = {"pointwise": pointwise, "softmax": lambda a: norm_ops(a, "softmax"),
            "layer_norm": lambda a: norm_ops(a, "layer_norm"), "mlp": mlp,
            "mlp-autotune": mlp_autotune, "linear-relu": linear_relu, "gpt": gpt_step,
            "compile-time": compile_time, "overhead": overhead}


def main(argv=None):
    global torch
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", default=",".join(SECTIONS))
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--threads", type=int, default=None)
    args = p.parse_args(argv)
    import torch as _torch
    torch = _torch
    if args.threads:
        ember.set_num_threads(args.threads)
        torch.set_num_threads(args.threads)
    print(f"threads: ember {ember.get_num_threads()}, torch {torch.get_num_threads()} "
          f"(torch {torch.__version__})")
    for name in args.only.split(","):
        SECTIONS[name](args)


if __name__ == "__main__":
    main()
