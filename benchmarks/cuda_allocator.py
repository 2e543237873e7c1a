"""ember's caching allocator against torch.cuda's on a real GPU (run it where one is lent).

1. malloc+free cost (µs per pair) for a few sizes, cached (the block is reused each time):
   ember's ``DeviceCachingAllocator`` on ``CupyRuntime`` (``ember.cuda._runtime.get_runtime()``)
   against ``torch.cuda.caching_allocator_alloc/delete``.
2. The same allocation workload (a transformer-like mix of sizes with frees, then a fragmenting
   phase) recorded by both allocators' histories: the reserved/allocated curves, their peaks,
   and whether the two allocators made the same segment decisions.

Usage: ``python benchmarks/cuda_allocator.py [--out DIR] [--expandable]`` (writes
``ember_trace.pickle``, ``torch_trace.pickle``, ``ember_curves.svg``, ``torch_curves.svg`` and
prints a JSON summary; ``--expandable`` runs part 2 with ``expandable_segments:True`` in both).
Needs CuPy (and cuda-bindings for ``--expandable``) and PyTorch with CUDA; ember's allocator and PyTorch's each get their own memory, so they run one after another
with ``empty_cache`` in between.
"""
import argparse
import json
import os
import pickle
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

MiB = 1 << 20
SIZES = [512, 4096, 1 * MiB, 3 * MiB, 12 * MiB, 100 * MiB]


def workload(alloc, free):
    """A deterministic mix: layers of activations (small and large), some freed, then the
    alternating-sizes phase of seed 002's exercise 5."""
    live = []
    for step in range(40):
        for size in (4096, 3 * MiB + 17, (step % 5 + 1) * 7 * MiB, 600 * 1024, 24 * MiB):
            live.append(alloc(size))
        for h in live[::3]:
            free(h)
        live = [h for i, h in enumerate(live) if i % 3]
    for h in live:
        free(h)
    pairs = [(alloc(12 * MiB), alloc(44 * MiB)) for _ in range(8)]
    for _, big in pairs:
        free(big)
    for small, _ in pairs:
        free(small)


def time_pairs(alloc, free, size, n, sync):
    h = alloc(size)  # warm: the block is cached afterwards
    free(h)
    sync()
    t = time.perf_counter()
    for _ in range(n):
        free(alloc(size))
    sync()
    return (time.perf_counter() - t) / n * 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="benchmarks/out")
    ap.add_argument("-n", type=int, default=20000)
    ap.add_argument("--expandable", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    import torch
    from ember.cuda import _caching_allocator as ca
    from ember.cuda import _runtime, memory as emem
    from ember.cuda._memory_viz import trace_plot

    rt = _runtime.get_runtime()
    assert rt is not None and not rt.simulated, "needs a GPU (CupyRuntime)"
    ours = ca.get_allocator(0)
    result = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
              "malloc_free_us": {}}

    # 1. cost of a cached malloc+free
    stream = torch.cuda.current_stream().cuda_stream
    for size in SIZES:
        e_us = time_pairs(lambda s: ours.malloc(s, 0), ours.free, size, args.n,
                          lambda: rt.device_synchronize(0))
        t_us = time_pairs(lambda s: torch.cuda.caching_allocator_alloc(s, 0, stream),
                          torch.cuda.caching_allocator_delete, size, args.n,
                          torch.cuda.synchronize)
        result["malloc_free_us"][size] = {"ember": round(e_us, 3), "torch": round(t_us, 3)}
    ours.empty_cache()
    torch.cuda.empty_cache()

    # 2. the same workload under both allocators, with history
    if args.expandable:
        emem._set_allocator_settings("expandable_segments:True")
        torch.cuda.memory._set_allocator_settings("expandable_segments:True")
        result["expandable_segments"] = True
    emem._record_memory_history(max_entries=100000)
    workload(lambda s: ours.malloc(s, 0), ours.free)
    e_snap = emem._snapshot()
    emem._record_memory_history(None)
    ours.empty_cache()

    torch.cuda.memory._record_memory_history(max_entries=100000)
    workload(lambda s: torch.cuda.caching_allocator_alloc(s, 0, 0),
             torch.cuda.caching_allocator_delete)
    t_snap = torch.cuda.memory._snapshot()
    torch.cuda.memory._record_memory_history(None)
    torch.cuda.empty_cache()

    for name, snap in (("ember", e_snap), ("torch", t_snap)):
        with open(os.path.join(args.out, f"{name}_trace.pickle"), "wb") as f:
            pickle.dump(snap, f)
    from ember.cuda._memory_viz import curves
    ec, tc = curves(e_snap["device_traces"][0]), curves(t_snap["device_traces"][0])
    result["events"] = {"ember": len(ec), "torch": len(tc)}
    result["peak_reserved_MiB"] = {"ember": max(r for _, r in ec) / MiB,
                                   "torch": max(r for _, r in tc) / MiB}
    result["peak_allocated_MiB"] = {"ember": max(a for a, _ in ec) / MiB,
                                    "torch": max(a for a, _ in tc) / MiB}
    result["final_reserved_MiB"] = {"ember": ec[-1][1] / MiB, "torch": tc[-1][1] / MiB}
    result["same_reserved_curve"] = [r for _, r in ec] == [r for _, r in tc]
    result["same_segment_actions"] = (
        [(e["action"], e["size"]) for e in e_snap["device_traces"][0] if "segment" in e["action"]]
        == [(e["action"], e["size"]) for e in t_snap["device_traces"][0]
            if "segment" in e["action"]])
    for name, snap in (("ember", e_snap), ("torch", t_snap)):
        with open(os.path.join(args.out, f"{name}_curves.svg"), "w") as f:
            f.write(trace_plot(snap))
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
