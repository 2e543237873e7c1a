"""ember.distributed (MPI) against PyTorch's gloo, 2 ranks on this machine, both started by
``python -m ember.distributed.run``: all-reduce bandwidth, and a DistributedDataParallel training
step of the GPT of ``benchmarks/gpt.py`` (each rank: batch 8, context 64; AdamW; median of 10
steps after 3 warm-up steps).

    python benchmarks/distributed.py            # runs both and prints the tables
"""
import os
import subprocess
import sys
import time

SIZES = [4 * 1024, 4 * 1024 ** 2, 40 * 1024 ** 2]
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def rank_main(engine):
    if engine == "torch":
        import torch
        import torch.distributed as dist
    else:
        sys.path.insert(0, ROOT)
        import ember as torch
        import ember.distributed as dist
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    for nbytes in SIZES:
        t = torch.ones(nbytes // 4)
        iters = 200 if nbytes < 1e5 else (20 if nbytes < 1e7 else 5)
        for _ in range(3):
            dist.all_reduce(t)
        dist.barrier()
        best = float("inf")
        for _ in range(3):  # best of 3 rounds of `iters`
            start = time.perf_counter()
            for _ in range(iters):
                dist.all_reduce(t)
            best = min(best, (time.perf_counter() - start) / iters)
        if rank == 0:
            print(f"RESULT {engine} {nbytes} {best * 1e3:.4f}", flush=True)
    step_ms = ddp_gpt_step(torch, dist)
    if rank == 0:
        print(f"RESULT {engine} gpt {step_ms:.4f}", flush=True)
    dist.destroy_process_group()


def ddp_gpt_step(torch, dist):
    """Median milliseconds of one DDP training step of the benchmark GPT."""
    import importlib.util
    import statistics
    spec = importlib.util.spec_from_file_location("gpt", os.path.join(ROOT, "benchmarks",
                                                                      "gpt.py"))
    gpt = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gpt)
    model = torch.nn.parallel.DistributedDataParallel(gpt.build(torch))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    torch.manual_seed(dist.get_rank())
    x, y = torch.randint(65, (8, 64)), torch.randint(65, (8, 64))
    times = []
    for i in range(13):
        dist.barrier()
        start = time.perf_counter()
        loss = model(x, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if i >= 3:
            times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def main():
    rows = {}
    for engine in ("ember", "torch"):
        p = subprocess.run([sys.executable, "-m", "ember.distributed.run", "--standalone",
                            "--nproc-per-node", "2", os.path.abspath(__file__), engine],
                           cwd=ROOT, capture_output=True, text=True)
        for line in p.stdout.splitlines():
            if line.startswith("RESULT"):
                _, e, n, ms = line.split()
                rows[(e, n if n == "gpt" else int(n))] = float(ms)
        if p.returncode:
            print(p.stdout, p.stderr)
    print("all_reduce, 2 ranks, float32 (ms per call; bandwidth = bytes / time)")
    print(f"{'size':>8} {'ember/MPI ms':>13} {'torch gloo ms':>14} {'ember GB/s':>11} "
          f"{'gloo GB/s':>10}")
    for n in SIZES:
        e, t = rows.get(("ember", n)), rows.get(("torch", n))
        label = f"{n // 1024} KB" if n < 1024 ** 2 else f"{n // 1024 ** 2} MB"
        print(f"{label:>8} {e:13.3f} {t:14.3f} {n / e / 1e6:11.3f} {n / t / 1e6:10.3f}")
    e, t = rows.get(("ember", "gpt")), rows.get(("torch", "gpt"))
    print(f"DDP GPT training step, 2 ranks: ember {e:.1f} ms, torch gloo {t:.1f} ms, "
          f"ember/torch {e / t:.2f}x")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        rank_main(sys.argv[1])
    else:
        main()

