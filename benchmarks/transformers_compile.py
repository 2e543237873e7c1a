"""A HuggingFace transformers Llama (4 layers, width 256, batch 4 x 64 tokens; inference
forward) eager and through ``compile(model, fullgraph=True)`` (Inductor), in ember (through
``ember.as_torch``, so transformers' own code runs unchanged) beside PyTorch, one run, each
library in its own process with the same thread count:

    python benchmarks/transformers_compile.py [--threads 1] [--calls 20]

Prints the median forward time of each way and the first compiled call's time (capture and
code generation; both libraries' on-disk caches are left as they are).
"""
import argparse
import os
import subprocess
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")

_PROGRAM = r"""
import statistics, sys, time
import torch
from transformers import LlamaConfig, LlamaForCausalLM
threads, calls = int(sys.argv[1]), int(sys.argv[2])
torch.set_num_threads(threads)
torch.manual_seed(0)
model = LlamaForCausalLM(LlamaConfig(num_hidden_layers=4, hidden_size=256,
                                     intermediate_size=688, num_attention_heads=8,
                                     num_key_value_heads=4, vocab_size=1024)).eval()
ids = torch.randint(0, 1024, (4, 64))

def median_ms(f):
    for _ in range(3):
        f(ids)
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        f(ids)
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3

with torch.no_grad():
    eager = median_ms(model)
    compiled = torch.compile(model, fullgraph=True)
    t0 = time.perf_counter()
    out = compiled(ids)
    first = time.perf_counter() - t0
    assert (out.logits - model(ids).logits).abs().max().item() < 1e-3
    print(eager, median_ms(compiled), first)
"""


def run(lib, threads, calls):
    """[eager ms, compiled ms, first compiled call s] of ``lib`` ("ember" or "torch")."""
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(_PROGRAM)
    try:
        runner = ["-m", "ember.as_torch"] if lib == "ember" else []
        p = subprocess.run([sys.executable, *runner, f.name, str(threads), str(calls)],
                           capture_output=True, text=True, cwd=ROOT)
    finally:
        os.unlink(f.name)
    if p.returncode != 0:
        raise SystemExit(f"{lib} failed:\n{p.stderr[-3000:]}")
    return [float(v) for v in p.stdout.split()[-3:]]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--calls", type=int, default=20)
    a = ap.parse_args()
    mine, theirs = run("ember", a.threads, a.calls), run("torch", a.threads, a.calls)
    print(f"Llama 4x256, batch 4x64, {a.threads} thread(s), median of {a.calls} calls")
    print(f"{'':28}{'ember':>12}{'PyTorch':>12}{'ratio':>8}")
    for label, i, unit in (("eager forward", 0, "ms"), ("compiled forward", 1, "ms"),
                           ("first compiled call", 2, "s")):
        print(f"{label + f' ({unit})':28}{mine[i]:12.2f}{theirs[i]:12.2f}"
              f"{mine[i] / theirs[i]:8.2f}x")


if __name__ == "__main__":
    main()
