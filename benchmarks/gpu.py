"""ember on a GPU beside PyTorch, from one run (issue 16's figures). Run where a GPU is lent:

    python benchmarks/gpu.py [--quick] [--gpt-only] [--json FILE]

(Not ``benchmarks/cuda.py``: a script's folder comes first on ``sys.path``, and a ``cuda.py``
there would shadow the ``cuda`` package that CuPy and cuda-bindings import, for every script in
the folder.)

Each case is timed the same way for both libraries, twice: "synced", the median of single calls
each ended by a device synchronize (the call's host time counts in full), and "queued", the
best of runs of back-to-back calls ended by one synchronize, per call (as a training loop issues
them: host time hides behind the device's queue where it is shorter than the kernels). Warm-up
calls first. Random inputs throughout. Cases: ``mm`` 4096³ in fp32, tf32 and bf16; ``add`` on
256M float32 against the device-to-device copy bandwidth measured in the same run; softmax and
layer_norm on 8192×4096 float32; causal ``scaled_dot_product_attention`` forward and backward
at the GPT's shapes; GPT training steps at two GPU-sized configurations (width 512 × 6 layers,
batch 16 × 256; GPT-2 small's width 768 × 12 layers, batch 8 × 512), eager, with forward and
backward as CUDA graphs (``make_graphed_callables``), the whole step (clipping and AdamW with
``capturable=True`` included) in one CUDA graph, and for ember compiled with
``mode="reduce-overhead"`` (its graphs replayed as CUDA graphs), beside PyTorch's eager step.
ember computes on the device through CuPy (ember/_kernels/cuda); the ops a run still staged
through the host, and why, are printed after the table.
"""
import argparse
import json
import os
import statistics
import sys
import time
import traceback

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(_HERE, ".."))


def timeit(fn, sync, reps=10, warmup=3, queue=10):
    """{"s": synced seconds per call, "queued s": queued seconds per call} (module docstring)."""
    for _ in range(warmup):
        fn()
    sync()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t)
    queued = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        for _ in range(queue):
            fn()
        sync()
        queued = min(queued, (time.perf_counter() - t) / queue)
    return {"s": statistics.median(times), "queued s": queued}


def _timed(out, name, fn, sync, **kw):
    """out[name] = timeit(fn), or the error it raised (reported, not hidden); printed at once
    too, so that a run stopped by its time limit still shows what it measured."""
    try:
        out[name] = timeit(fn, sync, **kw)
        print(f"  [{sync.__module__.split('.')[0]}] {name}: {out[name]['s'] * 1e3:.3f} ms synced, "
              f"{out[name]['queued s'] * 1e3:.3f} ms queued", flush=True)
    except Exception as e:  # noqa: BLE001
        traceback.print_exc()
        out[name] = {"error": f"{type(e).__name__}: {e}"[:200]}
    return out[name]


def cases(lib, quick, gpt_only=False):
    dev = "cuda"
    sync = lib.cuda.synchronize
    out = {}
    if not gpt_only:
        _op_cases(lib, quick, dev, sync, out)
    _gpt_cases(lib, quick, dev, sync, out)
    return out


def _op_cases(lib, quick, dev, sync, out):
    n = 2048 if quick else 4096
    for name, dtype, tf32 in (("mm fp32", lib.float32, False), ("mm tf32", lib.float32, True),
                              ("mm bf16", lib.bfloat16, False)):
        lib.backends.cuda.matmul.allow_tf32 = tf32
        a = lib.randn(n, n, device=dev).to(dtype)
        b = lib.randn(n, n, device=dev).to(dtype)
        r = _timed(out, name, lambda: lib.mm(a, b), sync)
        if "s" in r:
            r["TFLOP/s"] = 2 * n ** 3 / r["queued s"] / 1e12
    lib.backends.cuda.matmul.allow_tf32 = False
    numel = (1 << 26) if quick else (1 << 28)
    x = lib.randn(numel, device=dev)
    y = lib.randn(numel, device=dev)
    add = _timed(out, "add 256M", lambda: lib.add(x, y), sync, queue=5)
    dst = lib.empty(numel, device=dev)
    copy = timeit(lambda: dst.copy_(x), sync, queue=5)
    # add reads two arrays and writes one; a copy reads one and writes one (queued: the kernels)
    add["GB/s"] = 3 * 4 * numel / add["queued s"] / 1e9
    add["copy GB/s"] = 2 * 4 * numel / copy["queued s"] / 1e9
    add["fraction of copy bandwidth"] = add["GB/s"] / add["copy GB/s"]
    del x, y, dst
    m = lib.randn(8192, 4096, device=dev)
    _timed(out, "softmax 8192x4096", lambda: lib.softmax(m, -1), sync)
    w, bias = lib.randn(4096, device=dev), lib.randn(4096, device=dev)
    _timed(out, "layer_norm 8192x4096",
           lambda: lib.nn.functional.layer_norm(m, (4096,), w, bias), sync)
    del m
    for B, H, T in ((16, 8, 256), (8, 12, 512)):
        q, k, v = (lib.randn(B, H, T, 64, device=dev, requires_grad=True) for _ in range(3))
        g = lib.randn(B, H, T, 64, device=dev)

        def attention():
            lib.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True).backward(g)
        _timed(out, f"sdpa fwd+bwd {B}x{H}x{T}x64", attention, sync, queue=5)
        del q, k, v, g


def _gpt_cases(lib, quick, dev, sync, out):
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "gpt", os.path.join(_HERE, "gpt.py"))
    gpt = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gpt)
    configs = [("GPT 512x6", dict(width=512, n_layer=6, n_head=8, batch=16, context=256))]
    if quick:
        configs = [("GPT 256x4", dict(width=256, n_layer=4, n_head=8, batch=16, context=256))]
    else:
        configs.append(("GPT-2s 768x12", dict(width=768, n_layer=12, n_head=12, batch=8,
                                              context=512)))
    for name, sizes in configs:
        ways = [("eager", gpt.train_step), ("graphed", gpt.graphed_train_step),
                ("captured", gpt.captured_train_step)]
        if lib is sys.modules.get("ember"):  # (PyTorch's Inductor would spend minutes compiling)
            ways.append(("compiled", gpt.compiled_train_step))
        for how, make in ways:
            try:  # graphed: an op that cannot be captured is reported, not hidden
                step = make(lib, device=dev, **sizes)
            except Exception as e:  # noqa: BLE001
                traceback.print_exc()
                out[f"{name} {how}"] = {"error": f"{type(e).__name__}: {e}"[:200]}
                continue
            _timed(out, f"{name} {how}", step, sync, reps=5, warmup=2, queue=3)
            out[f"{name} {how}"].update(sizes)
            del step
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--json", default=None)
    p.add_argument("--gpt-only", action="store_true", help="the GPT steps alone")
    args = p.parse_args(argv)
    import torch
    import ember
    results = {"device": torch.cuda.get_device_name(), "torch": torch.__version__}
    results["torch_cases"] = cases(torch, args.quick, args.gpt_only)
    results["ember_cases"] = cases(ember, args.quick, args.gpt_only)
    print(f"{'case (ms per call)':38s} {'synced: ember':>13s} {'torch':>9s} {'ratio':>6s} "
          f"{'queued: ember':>14s} {'torch':>9s} {'ratio':>6s}")
    rows = [(k, k) for k in results["torch_cases"]]
    # every way of ember's GPT steps beside PyTorch's eager step: issue 16's figure (≤ 1.5×)
    ways = (" graphed", " captured", " compiled")
    rows += [(k, k.rsplit(" ", 1)[0] + " eager") for k in results["ember_cases"]
             if k.startswith("GPT") and k.endswith(ways)]
    for k, theirs_key in rows:
        theirs = results["torch_cases"].get(theirs_key, {"error": "not run"})
        if k != theirs_key:
            k = f"{k} / torch eager"
        mine = results["ember_cases"].get(k.split(" / ")[0], {"error": "not run"})
        if "s" in mine and "s" in theirs:
            print(f"{k:38s} {mine['s'] * 1e3:13.3f} {theirs['s'] * 1e3:9.3f} "
                  f"{mine['s'] / theirs['s']:5.2f}x {mine['queued s'] * 1e3:14.3f} "
                  f"{theirs['queued s'] * 1e3:9.3f} {mine['queued s'] / theirs['queued s']:5.2f}x")
        else:
            print(f"{k:38s} {mine.get('error', '')[:70]} | {theirs.get('error', '')[:40]}")
    add = results["ember_cases"].get("add 256M", {})
    if "fraction of copy bandwidth" in add:
        print(f"ember add: {add['fraction of copy bandwidth']:.0%} of copy bandwidth; torch "
              f"add: {results['torch_cases']['add 256M']['fraction of copy bandwidth']:.0%}")
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
