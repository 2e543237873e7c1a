"""ember beside PyTorch, case by case, in one process run.

Each case is timed in ember and (when installed) in PyTorch, interleaved round by round so that
machine noise hits both alike; the table shows medians and the ember/PyTorch ratio (time ratio:
lower is better for ember; for throughput cases the rate is shown too).

    python benchmarks/run.py              # every case
    python benchmarks/run.py add          # cases whose name contains "add"
"""
import gc
import statistics
import sys
import time

import os

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import ember  # noqa: E402

try:
    import torch  # noqa: E402
except ImportError:  # the table then shows ember alone
    torch = None

CASES = []
_open_profilers = []  # profilers a case left running; stopped when its timing is done


def case(name, unit=None, work=None):
    """Register a benchmark: ``setup(lib)`` returns the zero-argument callable to time.
    ``work`` (e.g. bytes or flops per call) turns times into a rate shown in ``unit``."""
    def deco(setup):
        CASES.append((name, setup, unit, work))
        return setup
    return deco


def _ones(lib, *shape, requires_grad=False):
    return lib.ones(*shape, requires_grad=requires_grad)


@case("add 1-element")
def _(lib):
    a, b = _ones(lib, 1), _ones(lib, 1)
    return lambda: a + b


@case("add 1-element, profiler active")
def _(lib):
    # The profiler's own cost per op: one event per dispatcher call, recorded and then discarded
    # (a fresh profile per timed batch would time the table building too).
    a, b = _ones(lib, 1), _ones(lib, 1)
    prof = lib.profiler.profile(activities=[lib.profiler.ProfilerActivity.CPU])
    prof.__enter__()
    _open_profilers.append(prof)
    return lambda: a + b


@case("add 1000-element")
def _(lib):
    a, b = _ones(lib, 1000), _ones(lib, 1000)
    return lambda: a + b


@case("add 1-element, inference_mode")
def _(lib):
    with lib.inference_mode():
        a, b = _ones(lib, 1), _ones(lib, 1)

    def run():
        with lib.inference_mode():
            return a + b
    return run


@case("mul 1-element, requires_grad")
def _(lib):
    a, b = _ones(lib, 1, requires_grad=True), _ones(lib, 1)
    return lambda: a * b


@case("add 16M float32", unit="GB/s", work=3 * 4 * (1 << 24))
def _(lib):
    a, b = lib.rand(1 << 24), lib.rand(1 << 24)
    return lambda: a + b


@case("mm 1024x1024 float32", unit="GFLOP/s", work=2 * 1024 ** 3)
def _(lib):
    a, b = lib.rand(1024, 1024), lib.rand(1024, 1024)
    return lambda: lib.mm(a, b)


@case("MLP 784-256-256-10 SGD step, batch 128")
def _(lib):
    nn = lib.nn
    model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                          nn.Linear(256, 10))
    opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x, y = lib.randn(128, 784), lib.randint(10, (128,))

    def step():
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return step


def _gpt(lib, vocab=65, context=64, width=128, n_layer=2, n_head=4):
    """examples/train_gpt.py's model, built from ``lib`` (ember or torch) so both run the same."""
    nn, F = lib.nn, lib.nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
            self.qkv, self.proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
            self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(),
                                     nn.Linear(4 * width, width))

        def forward(self, x):
            B, T, C = x.shape
            q, k, v = (t.view(B, T, n_head, C // n_head).transpose(1, 2)
                       for t in self.qkv(self.ln1(x)).split(C, dim=2))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).contiguous().view(B, T, C))
            return x + self.mlp(self.ln2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok, self.pos = nn.Embedding(vocab, width), nn.Embedding(context, width)
            self.blocks = nn.ModuleList(Block() for _ in range(n_layer))
            self.ln_f, self.head = nn.LayerNorm(width), nn.Linear(width, vocab, bias=False)
            self.head.weight = self.tok.weight

        def forward(self, idx, targets):
            x = self.tok(idx) + self.pos(lib.arange(idx.shape[1]))
            for block in self.blocks:
                x = block(x)
            return F.cross_entropy(self.head(self.ln_f(x)).view(-1, vocab), targets.view(-1))

    lib.manual_seed(0)
    return GPT()


def _gpt_step(lib, batch=16, context=64, vocab=65):
    """One training step of the GPT: forward, backward, clip, AdamW."""
    model = _gpt(lib, vocab=vocab, context=context)
    opt = lib.optim.AdamW(model.parameters(), lr=1e-3)
    x, y = lib.randint(vocab, (batch, context)), lib.randint(vocab, (batch, context))

    def step():
        loss = model(x, y)
        opt.zero_grad()
        loss.backward()
        lib.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    return step


case("GPT step (AdamW), 2 layers, 4 heads, width 128, ctx 64, batch 16, vocab 65")(_gpt_step)

GPT_RSS = "GPT peak RSS over 20 steps"


def _peak_rss_child(lname):
    """Run in a fresh process: 20 GPT steps, then print the peak resident set size in MiB."""
    import resource
    lib = ember if lname == "ember" else __import__("torch")
    step = _gpt_step(lib)
    for _ in range(20):
        step()
    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)  # KiB on Linux


def _peak_rss(w):
    import subprocess
    names = ["ember"] + (["torch"] if torch is not None else [])
    rss = {n: float(subprocess.run([sys.executable, __file__, "--peak-rss-child", n],
                                   capture_output=True, text=True, check=True).stdout)
           for n in names}
    e, t = rss["ember"], rss.get("torch")
    ratio = f"{e / t:6.2f}x" if t else "     -"
    print(f"{GPT_RSS:{w}} {e:>8.0f} MiB {f'{t:.0f} MiB' if t else '-':>12} {ratio:>7}")


def _time_once(fn, inner):
    t0 = time.perf_counter()
    for _ in range(inner):
        fn()
    return (time.perf_counter() - t0) / inner


def _calibrate(fn):
    inner = 1
    while _time_once(fn, inner) * inner < 0.02 and inner < 1 << 20:
        inner *= 2
    return inner


def run(filter_=None, rounds=7):
    libs = [("ember", ember)] + ([("torch", torch)] if torch is not None else [])
    w = max(len(name) for name, *_ in CASES)  # the case column fits the longest name
    print(f"{'case':{w}} {'ember':>12} {'pytorch':>12} {'ratio':>7}  rate (ember / pytorch)")
    for name, setup, unit, work in CASES:
        if filter_ and filter_ not in name:
            continue
        fns = {}
        for lname, lib in libs:
            try:
                fns[lname] = setup(lib)
                fns[lname]()
            except Exception as e:  # an op ember does not have yet: say so, keep going
                fns.pop(lname, None)
                print(f"{name:{w}} {lname} cannot run it: {type(e).__name__}: {e}"[:140])
        if "ember" not in fns:
            continue
        inner = {k: _calibrate(f) for k, f in fns.items()}
        samples = {k: [] for k in fns}
        gc.collect()
        for _ in range(rounds):
            for k, f in fns.items():
                samples[k].append(_time_once(f, inner[k]))
        med = {k: statistics.median(v) for k, v in samples.items()}
        e = med["ember"]
        t = med.get("torch")
        ratio = f"{e / t:6.2f}x" if t else "     -"
        rate = ""
        if work:
            rate = f"{work / e / 1e9:.1f}" + (f" / {work / t / 1e9:.1f}" if t else "") + f" {unit}"
        print(f"{name:{w}} {_fmt(e):>12} {_fmt(t) if t else '-':>12} {ratio:>7}  {rate}")
        while _open_profilers:
            _open_profilers.pop().__exit__(None, None, None)
    if not filter_ or filter_ in GPT_RSS:  # memory, not time: one fresh process per library
        _peak_rss(w)


def _fmt(s):
    if s < 1e-3:
        return f"{s * 1e6:.2f} us"
    return f"{s * 1e3:.2f} ms"


if __name__ == "__main__":
    if sys.argv[1:2] == ["--peak-rss-child"]:
        _peak_rss_child(sys.argv[2])
    else:
        run(sys.argv[1] if len(sys.argv) > 1 else None)
