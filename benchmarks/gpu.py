"""ember on a GPU beside PyTorch, from one run (issue 16's figures). Run where a GPU is lent:

    python benchmarks/gpu.py [--quick] [--json FILE]

(Not ``benchmarks/cuda.py``: a script's folder comes first on ``sys.path``, and a ``cuda.py``
there would shadow the ``cuda`` package that CuPy and cuda-bindings import, for every script in
the folder.)

Each case is timed the same way for both libraries: warm-up calls, then the median of timed
repetitions, each ended by a device synchronize. Cases: ``mm`` 4096³ in fp32, tf32 and bf16;
``add`` on 256M float32 against the device-to-device copy bandwidth measured in the same run;
softmax and layer_norm on 8192×4096 float32; a GPT training step at a GPU-sized configuration,
eager and with its forward and backward as CUDA graphs (``make_graphed_callables``).
ember computes on the device through CuPy (ember/_kernels/cuda); the ops a run still staged
through the host, and why, are printed after the table.
"""
import argparse
import json
import os
import statistics
import sys
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(_HERE, ".."))


def timeit(fn, sync, reps=10, warmup=3):
    for _ in range(warmup):
        fn()
    sync()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def cases(lib, quick):
    dev = "cuda"
    sync = lib.cuda.synchronize
    n = 2048 if quick else 4096
    out = {}
    for name, dtype, tf32 in (("mm fp32", lib.float32, False), ("mm tf32", lib.float32, True),
                              ("mm bf16", lib.bfloat16, False)):
        lib.backends.cuda.matmul.allow_tf32 = tf32
        a = lib.randn(n, n, device=dev).to(dtype)
        b = lib.randn(n, n, device=dev).to(dtype)
        try:
            t = timeit(lambda: lib.mm(a, b), sync)
            out[name] = {"s": t, "TFLOP/s": 2 * n ** 3 / t / 1e12}
        except Exception as e:  # noqa: BLE001  (reported, not hidden)
            out[name] = {"error": f"{type(e).__name__}: {e}"[:200]}
    lib.backends.cuda.matmul.allow_tf32 = False
    numel = (1 << 26) if quick else (1 << 28)
    x = lib.ones(numel, device=dev)
    y = lib.ones(numel, device=dev)
    t_add = timeit(lambda: lib.add(x, y), sync)
    dst = lib.empty(numel, device=dev)
    t_copy = timeit(lambda: dst.copy_(x), sync)
    # add reads two arrays and writes one; a copy reads one and writes one
    out["add 256M"] = {"s": t_add, "GB/s": 3 * 4 * numel / t_add / 1e9,
                       "copy GB/s": 2 * 4 * numel / t_copy / 1e9}
    out["add 256M"]["fraction of copy bandwidth"] = out["add 256M"]["GB/s"] / \
        out["add 256M"]["copy GB/s"]
    del x, y, dst
    m = lib.randn(8192, 4096, device=dev)
    out["softmax 8192x4096"] = {"s": timeit(lambda: lib.softmax(m, -1), sync)}
    w, bias = lib.ones(4096, device=dev), lib.zeros(4096, device=dev)
    out["layer_norm 8192x4096"] = {"s": timeit(
        lambda: lib.nn.functional.layer_norm(m, (4096,), w, bias), sync)}
    del m
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "gpt", os.path.join(_HERE, "gpt.py"))
    gpt = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gpt)
    sizes = dict(width=256, n_layer=4, n_head=8) if quick else dict(width=512, n_layer=6,
                                                                    n_head=8)
    step = gpt.train_step(lib, batch=16, context=256, device=dev, **sizes)
    out["GPT step"] = {"s": timeit(step, sync, reps=5, warmup=2), **sizes,
                       "batch": 16, "context": 256}
    del step
    try:  # forward and backward as CUDA graphs (make_graphed_callables), in both libraries
        step = gpt.graphed_train_step(lib, batch=16, context=256, device=dev, **sizes)
        out["GPT step, graphed"] = {"s": timeit(step, sync, reps=5, warmup=2)}
    except Exception as e:  # noqa: BLE001  (reported, not hidden: an op that cannot be captured)
        out["GPT step, graphed"] = {"error": f"{type(e).__name__}: {e}"[:200]}
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    import torch
    import ember
    results = {"device": torch.cuda.get_device_name(), "torch": torch.__version__}
    results["torch_cases"] = cases(torch, args.quick)
    results["ember_cases"] = cases(ember, args.quick)
    print(f"{'case':24s} {'ember':>12s} {'torch':>12s} {'ember/torch':>12s}")
    for k, theirs in results["torch_cases"].items():
        mine = results["ember_cases"][k]
        if "s" in mine and "s" in theirs:
            print(f"{k:24s} {mine['s'] * 1e3:10.3f}ms {theirs['s'] * 1e3:10.3f}ms "
                  f"{mine['s'] / theirs['s']:11.2f}x")
        else:
            print(f"{k:24s} {mine.get('error', '')[:60]} | {theirs.get('error', '')[:40]}")
    add = results["ember_cases"]["add 256M"]
    print(f"ember add: {add['fraction of copy bandwidth']:.0%} of copy bandwidth; torch add: "
          f"{results['torch_cases']['add 256M']['fraction of copy bandwidth']:.0%}")
    from ember._kernels.cuda import arrays
    results["ember_device_calls"] = arrays.stats["device"]
    results["ember_left_the_device"] = arrays.stats["host"]
    results["ember_staged"] = arrays.stats["staged"]
    print(f"ember: {arrays.stats['device']} kernel calls on the device; staged through the host:")
    for op, n in sorted(arrays.stats["staged"].items(), key=lambda kv: -kv[1]):
        print(f"  {n:6d} {op:40s} {arrays.stats['host'].get(op, '')[:90]}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return results


if __name__ == "__main__":
    main()
