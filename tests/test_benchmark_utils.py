"""ember.utils.benchmark against PyTorch: Measurement statistics and printed summaries, the
tables of Compare (plain, trimmed, colored, with warnings and envs) for Measurements built from
fixed times, the unit and significant-figure helpers; and Timer's behaviour (thread count set
and restored, globals, labels, errors) without asserting on measured times."""
import re

import pytest

import ember
from ember.utils import benchmark
from ember.utils.benchmark.utils import common


def _strip_address(text):
    return re.sub(r"<\S+ object at 0x[0-9a-f]+>", "<Measurement>", text)


def _measurements(lib_benchmark):
    M, T = lib_benchmark.Measurement, lib_benchmark.TaskSpec
    spec = T("x + y", "x = torch.ones(3)\ny = torch.ones(3)", label="add", sub_label="float",
             description="n=3", num_threads=2)
    return [
        M(100, [1.2e-4, 1.3e-4, 1.25e-4, 1.9e-4, 1.21e-4, 1.22e-4], spec),
        M(10, [5e-6], T("relu(x)", "pass")),
        M(1000, [2.1e-3, 2.2e-3, 2.15e-3], T("a\nb", "pass", sub_label="s", description="desc")),
        M(1, [3.0, 3.1, 2.9, 3.05, 3.0], T("sleep", "setup_one_line", env="e1")),
        M(7, [7e-9 * 7, 9e-9 * 7, 8e-9 * 7, 8.5e-9 * 7], T("tiny", "pass")),
        M(1, [1e-5, 3e-5, 1.1e-5, 1.2e-5, 5e-5], T("noisy", "pass")),
    ]


def test_measurement_matches_pytorch(torch):
    import torch.utils.benchmark as tb
    ours, theirs = _measurements(benchmark), _measurements(tb)
    for e, t in zip(ours, theirs):
        assert _strip_address(repr(e)) == _strip_address(repr(t))
        assert (e.median, e.iqr, e.significant_figures, e.has_warnings, e.times, e.env,
                e.title, e.as_row_name, e.meets_confidence(0.2)) == \
               (t.median, t.iqr, t.significant_figures, t.has_warnings, t.times, t.env,
                t.title, t.as_row_name, t.meets_confidence(0.2))
        assert e.mean == pytest.approx(t.mean, rel=1e-12)
    assert repr(ours[0]).startswith("<ember.utils.benchmark.utils.common.Measurement object at")
    assert _strip_address(repr(ours[0])) == """\
<Measurement>
add: float
n=3
setup:
  x = torch.ones(3)
  y = torch.ones(3)

  Median: 1.24 us
  IQR:    0.07 us (1.21 to 1.29)
  6 measurements, 100 runs per measurement, 2 threads"""
    assert _strip_address(repr(ours[1])) == ("<Measurement>\nrelu(x)\n  500.00 ns\n"
                                             "  1 measurement, 10 runs , 1 thread")
    assert "This suggests significant environmental influence." in repr(ours[5])


def test_merge_matches_pytorch(torch):
    import torch.utils.benchmark as tb
    results = []
    for lib in (benchmark, tb):
        ms = _measurements(lib)
        extra = lib.Measurement(50, [6e-5, 6.2e-5], ms[0].task_spec, metadata={"k": 1})
        merged = lib.Measurement.merge([ms[0], ms[1], extra])
        results.append([(m.number_per_run, m.raw_times, m.metadata, _strip_address(repr(m)))
                        for m in merged])
    assert results[0] == results[1]
    assert results[0][0][1][-2:] == [6e-5 / 50, 6.2e-5 / 50]


def test_helpers_match_pytorch(torch):
    from torch.utils.benchmark.utils import common as tcommon
    for v in (1e-10, 3.2e-9, 4.5e-7, 9.99e-4, 0.02, 5.0, 1234.5):
        assert common.select_unit(v) == tcommon.select_unit(v)
    for x, n in ((3.14159, 2), (123456.0, 3), (0.000123456, 2), (9.99, 1), (1.0, 4)):
        assert common.trim_sigfig(x, n) == tcommon.trim_sigfig(x, n)
    assert common.trim_sigfig(3.14159, 2) == 3.1000001430511475  # rounded in float32
    with pytest.raises(AssertionError, match="must be an integer"):
        common.trim_sigfig(1.0, 1.5)
    assert [common.unit_to_english(u) for u in ("ns", "us", "ms", "s")] == \
           ["nanosecond", "microsecond", "millisecond", "second"]
    assert common.ordered_unique([3, 1, 3, 2, 1]) == [3, 1, 2]


def _compare_results(lib_benchmark):
    M, T = lib_benchmark.Measurement, lib_benchmark.TaskSpec
    res = []
    for threads in (1, 4):
        for label in ("add", "mul"):
            for i, n in enumerate((1, 64, 1024)):
                for sub in ("float", "int"):
                    base = ((1 + i) * (2 if sub == "int" else 1) / threads
                            * (1.5 if label == "mul" else 1) * 1e-6)
                    times = [base * (1 + 0.01 * k * (1 if sub == "float" else 5))
                             for k in range(8)]
                    res.append(M(10, [t * 10 for t in times],
                                 T("x+y", "pass", label=label, sub_label=sub,
                                   description=f"n={n}", num_threads=threads)))
    res.append(M(10, [1e-5, 2e-5, 5e-5, 1e-5], T("x+y", "pass", label="add", sub_label="noisy",
                                                  description="n=1")))
    res.append(M(10, [1e-5, 1.1e-5], T("x+y", "pass", label="add", sub_label="noisy",
                                       description="n=64")))
    return res


def _renders(lib_benchmark):
    c = lib_benchmark.Compare(_compare_results(lib_benchmark))
    out = [str(c)]
    c.trim_significant_figures()
    out.append(str(c))
    c.colorize()
    out.append(str(c))
    c.colorize(rowwise=True)
    c.highlight_warnings()
    out.append(str(c))
    M, T = lib_benchmark.Measurement, lib_benchmark.TaskSpec
    envs = [M(1, [t * 1e-6 for t in (1, 1.1, 1.05, 0.98)],
              T("f(x)", "pass", label="envs", sub_label=s, env=e, description=d))
            for e in ("base", "patched_long") for s in ("a", "b") for d in ("small", "large")]
    out.append(str(lib_benchmark.Compare(envs)))
    return out


def test_compare_matches_pytorch(torch, capsys):
    import torch.utils.benchmark as tb
    ours = _renders(benchmark)
    assert ours == _renders(tb)
    assert ours[0].startswith(
        "[------------------ add -------------------]\n"
        "             |   n=1    |   n=64   |  n=1024\n"
        "1 threads: ---------------------------------\n"
        "      float  |  1035.0  |  2070.0  |  3105.0\n"
        "      int    |  2350.0  |  4700.0  |  7050.0\n"
        "      noisy  |  1500.0  |  1050.0  |        \n"  # the empty cell is padded
        "4 threads: ---------------------------------\n"
        "      float  |   258.7  |   517.5  |   776.2\n"
        "      int    |   587.5  |  1175.0  |  1762.5\n"
        "\n"
        "Times are in nanoseconds (ns).\n")
    assert "\033[92m\033[1m" in ours[2] and "(! 117%)" in ours[3]
    assert "  (patched_long)  a  |" in ours[4]
    benchmark.Compare(_compare_results(benchmark)).print()
    assert capsys.readouterr().out == ours[0] + "\n"
    with pytest.raises(ValueError, match="Expected an instance of `Measurement`"):
        benchmark.Compare([1.0])


def test_timer_threads_globals_and_labels():
    seen = []
    glob = {"seen": seen}
    before = ember.get_num_threads()
    timer = benchmark.Timer(
        """
        seen.append(torch.get_num_threads())
        y = x + 1
        """, setup="x = torch.ones(4)", globals=glob, label="L", sub_label="S",
        description="D", env="E", num_threads=1)
    assert "__builtins__" not in glob  # a copy runs the code
    m = timer.timeit(20)
    assert isinstance(m, common.Measurement) and m.number_per_run == 20 and len(m.raw_times) == 1
    assert seen and set(seen) == {1} and ember.get_num_threads() == before
    assert (m.stmt, m.setup, m.label, m.sub_label, m.description, m.env, m.num_threads) == \
           ("seen.append(torch.get_num_threads())\ny = x + 1", "x = torch.ones(4)", "L", "S",
            "D", "E", 1)
    lines = _strip_address(repr(m)).splitlines()
    assert lines[:4] == ["<Measurement>", "L: S", "D", "setup: x = torch.ones(4)"]
    assert re.fullmatch(r"  \d+\.\d\d (ns|us|ms|s)", lines[4])
    assert lines[5:] == ["  1 measurement, 20 runs , 1 thread"]

    calls = []
    m = benchmark.Timer("torch", num_threads=2).blocked_autorange(
        callback=lambda number, t: calls.append(number), min_run_time=0.01)
    assert calls and set(calls) == {m.number_per_run} and len(m.raw_times) == len(calls)
    assert sum(m.raw_times) >= 0.01 and ember.get_num_threads() == before
    m = benchmark.Timer("torch").adaptive_autorange(min_run_time=0.001, max_run_time=0.02)
    assert m.raw_times and m.median > 0


def test_timer_errors_match_pytorch(torch):
    import torch.utils.benchmark as tb

    def errors(lib):
        t = lib.Timer("pass")
        out = []
        for call in (t.repeat, t.autorange, lambda: lib.Timer("x", global_setup="y"),
                     lambda: lib.Timer(lambda: 1), lambda: lib.Timer("x", language="rust")):
            with pytest.raises(Exception) as info:
                call()
            out.append((type(info.value), str(info.value)))
        return out
    assert errors(benchmark) == errors(tb)
    with pytest.raises(NotImplementedError, match="C\\+\\+ timing"):
        benchmark.Timer("x", language="c++")
    with pytest.raises(NotImplementedError, match="collect_callgrind"):
        benchmark.Timer("pass").collect_callgrind()
