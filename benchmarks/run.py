"""ember beside PyTorch, case by case, in one process run.

Each case is timed in ember and (when installed) in PyTorch, interleaved round by round so that
machine noise hits both alike; the table shows medians and the ember/PyTorch ratio (time ratio:
lower is better for ember; for throughput cases the rate is shown too).

    python benchmarks/run.py              # every case
    python benchmarks/run.py add          # cases whose name contains "add"
    python benchmarks/run.py --threads 1  # both libraries on N threads (ember: its BLAS pool)

On a machine whose cores are busy with other work, a pool of threads waits for the slowest one
(a BLAS call or a PyTorch kernel then takes a scheduler time slice); ``--threads 1`` compares the
libraries without that noise.
"""
import gc
import statistics
import sys
import time

import os

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import ember  # noqa: E402
import gpt  # noqa: E402  (benchmarks/gpt.py: the GPT model, built from either library)

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


@case("mul 1-element")
def _(lib):
    a, b = _ones(lib, 1), _ones(lib, 1)
    return lambda: a * b


@case("mul 1-element, requires_grad")
def _(lib):
    a, b = _ones(lib, 1, requires_grad=True), _ones(lib, 1)
    return lambda: a * b


@case("mul 1-element, both require grad")
def _(lib):
    a, b = _ones(lib, 1, requires_grad=True), _ones(lib, 1, requires_grad=True)
    return lambda: a * b


# Recording a graph node costs the time of the op with grad less the op without: issue 22 asks
# for less than the op itself (the result is dropped, so the leaves' AccumulateGrad nodes are
# made anew each call, as in PyTorch).
RECORDING = [("recording a node, one leaf (mul rg - mul)", "mul 1-element, requires_grad"),
             ("recording a node, two leaves", "mul 1-element, both require grad")]


@case("add 16M float32", unit="GB/s", work=3 * 4 * (1 << 24))
def _(lib):
    a, b = lib.rand(1 << 24), lib.rand(1 << 24)
    return lambda: a + b


def _forward_backward(lib, x, fn):
    g = lib.ones_like(fn(x))

    def run():
        x.grad = None
        fn(x).backward(g)
    return run


@case("GELU forward+backward, 1M float32")
def _(lib):
    return _forward_backward(lib, lib.randn(1 << 20, requires_grad=True), lib.nn.functional.gelu)


@case("softmax forward+backward, 4096x1024 float32")
def _(lib):
    return _forward_backward(lib, lib.randn(4096, 1024, requires_grad=True),
                             lambda x: x.softmax(-1))


@case("layer_norm forward+backward, 4096x1024 float32")
def _(lib):
    ln = lib.nn.LayerNorm(1024)
    return _forward_backward(lib, lib.randn(4096, 1024, requires_grad=True), ln)


@case("mm 1024x1024 float32", unit="GFLOP/s", work=2 * 1024 ** 3)
def _(lib):
    a, b = lib.rand(1024, 1024), lib.rand(1024, 1024)
    return lambda: lib.mm(a, b)


@case("mm 1024x1024 float16", unit="GFLOP/s", work=2 * 1024 ** 3)
def _(lib):
    a, b = lib.rand(1024, 1024).half(), lib.rand(1024, 1024).half()
    return lambda: lib.mm(a, b)


# conv2d: 8x64x56x56 input, 64 3x3 filters, padding 1. One forward is 2*N*Cout*H*W*Cin*9 flops;
# the backward computes the input gradient and the weight gradient, twice the forward's work.
_CONV_FLOPS = 2 * 8 * 64 * 56 * 56 * 64 * 9


def _conv_inputs(lib, requires_grad=False):
    lib.manual_seed(0)
    x = lib.randn(8, 64, 56, 56, requires_grad=requires_grad)
    w = lib.randn(64, 64, 3, 3, requires_grad=requires_grad)
    b = lib.randn(64, requires_grad=requires_grad)
    return x, w, b


@case("conv2d forward 8x64x56x56, 64 3x3 filters, pad 1", unit="GFLOP/s", work=_CONV_FLOPS)
def _(lib):
    x, w, b = _conv_inputs(lib)
    return lambda: lib.nn.functional.conv2d(x, w, b, padding=1)


@case("conv2d backward 8x64x56x56, 64 3x3 filters, pad 1", unit="GFLOP/s", work=2 * _CONV_FLOPS)
def _(lib):
    # Times the backward alone: the graph is built once and kept (retain_graph) across calls.
    x, w, b = _conv_inputs(lib, requires_grad=True)
    out = lib.nn.functional.conv2d(x, w, b, padding=1)
    g = lib.ones_like(out)

    def run():
        x.grad = w.grad = b.grad = None
        out.backward(g, retain_graph=True)
    return run


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


@case("sparse Embedding 100000x64 + SparseAdam step, 64x64 indices")
def _(lib):
    # a recommender's lookup table trained lazily: the gradient is a sparse COO tensor, the
    # optimizer touches only the rows the batch used
    lib.manual_seed(0)
    emb = lib.nn.Embedding(100_000, 64, sparse=True)
    opt = lib.optim.SparseAdam(emb.parameters(), lr=1e-3)
    x = lib.randint(100_000, (64, 64))

    def step():
        opt.zero_grad()
        emb(x).pow(2).sum().backward()
        opt.step()
    return step


# RNN layers at the word-language-model size (examples' word_language_model: seq 8, batch 20,
# emsize = hidden 16, 2 layers): forward and backward of the whole layer stack.
def _rnn_case(mode):
    def setup(lib):
        lib.manual_seed(0)
        cls = {"LSTM": lib.nn.LSTM, "GRU": lib.nn.GRU, "RNN_TANH": lib.nn.RNN}[mode]
        model = cls(16, 16, num_layers=2)
        x = lib.randn(8, 20, 16, requires_grad=True)

        def step():
            model.zero_grad()
            out, _ = model(x)
            out.sum().backward()
        return step
    return setup


for _mode in ("LSTM", "GRU", "RNN_TANH"):
    case(f"{_mode} 2 layers, seq 8, batch 20, in 16, hidden 16, forward+backward")(
        _rnn_case(_mode))


case("GPT step (AdamW), 2 layers, 4 heads, width 128, ctx 64, batch 16, vocab 65")(gpt.train_step)

GPT_RSS = "GPT peak RSS over 20 steps"


def _peak_rss(w):
    """Peak memory, not time: 20 GPT steps in a fresh process per library (benchmarks/gpt.py)."""
    import subprocess
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gpt.py")
    names = ["ember"] + (["torch"] if torch is not None else [])
    rss = {n: float(subprocess.run([sys.executable, script, n], capture_output=True, text=True,
                                   check=True).stdout) for n in names}
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
    medians = {}  # case name -> {library: median}
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
                # a pause in which the other library's OpenMP threads stop spinning on the
                # cores, then an untimed call that wakes this one's (see inductor.interleaved)
                time.sleep(0.02)
                f()
                samples[k].append(_time_once(f, inner[k]))
        med = medians[name] = {k: statistics.median(v) for k, v in samples.items()}
        e = med["ember"]
        t = med.get("torch")
        ratio = f"{e / t:6.2f}x" if t else "     -"
        rate = ""
        if work:
            rate = f"{work / e / 1e9:.1f}" + (f" / {work / t / 1e9:.1f}" if t else "") + f" {unit}"
        print(f"{name:{w}} {_fmt(e):>12} {_fmt(t) if t else '-':>12} {ratio:>7}  {rate}")
        while _open_profilers:
            _open_profilers.pop().__exit__(None, None, None)
    base = medians.get("mul 1-element")
    for label, with_grad in RECORDING:
        if base is not None and with_grad in medians:
            cost = {k: medians[with_grad][k] - base[k] for k in base}
            e, t = cost["ember"], cost.get("torch")
            ratio = f"{e / t:6.2f}x" if t else "     -"
            print(f"{label:{w}} {_fmt(e):>12} {_fmt(t) if t else '-':>12} {ratio:>7}  "
                  f"ember's op without grad: {_fmt(base['ember'])}")
    if not filter_ or filter_ in GPT_RSS:  # memory, not time: one fresh process per library
        _peak_rss(w)


def _fmt(s):
    if s < 1e-3:
        return f"{s * 1e6:.2f} us"
    return f"{s * 1e3:.2f} ms"


def main(argv=None):
    import argparse
    parser = argparse.ArgumentParser(
        description="ember beside PyTorch, case by case, in one process run.")
    parser.add_argument("filter", nargs="?", default=None,
                        help="run only the cases whose name contains this text")
    parser.add_argument("--threads", type=int, default=None,
                        help="run both libraries on N threads (ember: its BLAS pool)")
    parser.add_argument("--rounds", type=int, default=7, help="timed rounds per case (median)")
    parser.add_argument("--list", action="store_true", help="print the case names and exit")
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(name for name, *_ in CASES))
        return
    if args.filter and not any(args.filter in name for name, *_ in CASES):
        parser.error(f"no case name contains {args.filter!r} (--list shows them)")
    if args.threads is not None:
        ember.set_num_threads(args.threads)
        if torch is not None:
            torch.set_num_threads(args.threads)
    run(args.filter, args.rounds)


if __name__ == "__main__":
    main()
