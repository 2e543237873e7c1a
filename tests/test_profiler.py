"""The profiler: seed 002 section 13.1's script, the table's columns, the Chrome trace, nesting,
shapes, memory, FLOPs, stacks, schedules, threads, and that an idle profiler leaves the
dispatcher untouched. PyTorch's profiler is the oracle for formats and recorded values."""
import json
import os
import threading

import numpy as np
import pytest

import ember
from ember._core import storage as _storage
from ember._dispatch import dispatcher as _d
from ember.profiler import ProfilerActivity, profile, record_function


def _seed_script(lib, prof_kw=None, square=None):
    """Seed 002 section 13.1 with a one-layer model (addmm) on ``lib``."""
    rng = np.random.default_rng(0)
    w = lib.tensor(rng.standard_normal((4, 3)).astype(np.float32).tolist(), requires_grad=True)
    b = lib.tensor(rng.standard_normal(3).astype(np.float32).tolist(), requires_grad=True)
    x = lib.tensor(rng.standard_normal((2, 4)).astype(np.float32).tolist())
    target = lib.tensor(rng.standard_normal((2, 3)).astype(np.float32).tolist())

    def model(x):
        return lib.addmm(b, x, w)
    kw = dict(activities=[lib.profiler.ProfilerActivity.CPU], record_shapes=True,
              with_stack=False)
    kw.update(prof_kw or {})
    with lib.profiler.profile(**kw) as prof:
        with lib.profiler.record_function("forward"):
            y = model(x)
        with lib.profiler.record_function("loss"):
            d = y - target
            # The seed squares with .pow(2); square with mul so that this test does not depend
            # on pow's derivative (tested with autograd).
            loss = (d * d).mean()
        with lib.profiler.record_function("backward"):
            loss.backward()
    return prof


def test_seed_13_1_table_and_trace(tmp_path):
    prof = _seed_script(ember)
    table = prof.key_averages().table(sort_by="cuda_time_total", row_limit=20)
    lines = table.splitlines()
    header = lines[1]
    for col in ("Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg",
                "# of Calls"):
        assert col in header
    assert header.index("Self CPU %") < header.index("CPU total %") < header.index("# of Calls")
    names = {line.split()[0] for line in lines[3:-2]}
    for name in ("aten::addmm", "forward", "loss", "backward"):
        assert name in names, table
    assert lines[-1].startswith("Self CPU time total: ")
    assert lines[0] == lines[2] == lines[-2] and set(lines[0]) <= {"-", " "}

    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())
    x_events = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert {"aten::addmm", "forward", "loss", "backward"} <= {e["name"] for e in x_events}
    for e in x_events:
        assert {"cat", "name", "pid", "tid", "ts", "dur", "args"} <= set(e)
        assert e["dur"] >= 0
    cats = {e["name"]: e["cat"] for e in x_events}
    assert cats["forward"] == "user_annotation" and cats["aten::addmm"] == "cpu_op"
    addmm = next(e for e in x_events if e["name"] == "aten::addmm")
    assert addmm["args"]["Input Dims"] == [[3], [2, 4], [4, 3], [], []]


def test_trace_top_level_keys_match_pytorch(torch, tmp_path):
    keys = []
    for lib in (ember, torch):
        prof = _seed_script(lib)
        path = tmp_path / f"{lib.__name__}.json"
        prof.export_chrome_trace(str(path))
        keys.append(set(json.loads(path.read_text())))
    assert keys[0] == keys[1]


def test_same_table_columns_and_op_rows_as_pytorch(torch):
    tables, counts = [], []
    for lib in (ember, torch):
        prof = _seed_script(lib, {"profile_memory": True})
        t = prof.key_averages().table(row_limit=-1)
        tables.append(t.splitlines()[1].split())
        counts.append({e.key: e.count for e in prof.key_averages()
                       if e.key in ("aten::addmm", "aten::mul", "forward", "loss", "backward",
                                    "aten::mean")})
    assert tables[0] == tables[1]
    assert counts[0] == counts[1]


def test_events_nest_with_thread_ids_and_timestamps():
    prof = _seed_script(ember)
    events = prof.events()
    by_name = {}
    for e in events:
        by_name.setdefault(e.name, e)
    addmm, forward = by_name["aten::addmm"], by_name["forward"]
    assert addmm.cpu_parent is forward and addmm in forward.cpu_children
    assert forward.time_range.start <= addmm.time_range.start
    assert addmm.time_range.end <= forward.time_range.end
    assert addmm.thread == threading.get_native_id()
    assert forward.self_cpu_time_total <= forward.cpu_time_total
    # backward nodes are ranges inside the user's "backward" range
    node = by_name["autograd::engine::evaluate_function: AddmmBackward0"]
    parent = node.cpu_parent
    while parent.cpu_parent is not None:
        parent = parent.cpu_parent
    assert parent.name == "backward"


def test_input_shapes_and_memory_match_pytorch(torch):
    rows = []
    for lib in (ember, torch):
        prof = _seed_script(lib, {"profile_memory": True})
        avg = {(e.key, str(e.input_shapes)): e
               for e in prof.key_averages(group_by_input_shape=True)}
        addmm = avg[("aten::addmm", "[[3], [2, 4], [4, 3], [], []]")]
        mean = [e for (k, _), e in avg.items() if k == "aten::mean"][0]
        rows.append((addmm.count, addmm.self_cpu_memory_usage, mean.cpu_memory_usage))
    assert rows[0] == rows[1] == (1, 24, 4)
    table = _seed_script(ember, {"profile_memory": True}).key_averages(
        group_by_input_shape=True).table()
    for col in ("CPU Mem", "Self CPU Mem", "Input Shapes"):
        assert col in table.splitlines()[1]


def test_record_function_decorator_and_threads():
    @record_function("my_range")
    def work(a):
        return a + a

    out = {}

    def other():
        out["tid"] = threading.get_native_id()
        ember.ones(2) * 2
    a = ember.ones(2)
    with profile() as prof:
        work(a)
        t = threading.Thread(target=other)
        t.start()
        t.join()
    events = prof.events()
    rng = next(e for e in events if e.name == "my_range")
    assert rng.is_user_annotation and [c.name for c in rng.cpu_children] == ["aten::add"]
    mul = next(e for e in events if e.name == "aten::mul")
    assert mul.thread == out["tid"] != rng.thread
    assert mul.cpu_parent is None


def test_with_flops_matches_pytorch(torch):
    flops = []
    for lib in (ember, torch):
        a, b = lib.ones(8, 16), lib.ones(16, 4)
        with lib.profiler.profile(with_flops=True) as prof:
            lib.mm(a, b)
        flops.append([e.flops for e in prof.key_averages() if e.key == "aten::mm"][0])
    assert flops[0] == flops[1] == 2 * 8 * 16 * 4
    with profile(with_flops=True) as prof:
        ember.mm(ember.ones(8, 16), ember.ones(16, 4))
    ember_table = prof.key_averages().table()
    assert "Total KFLOPs" in ember_table.splitlines()[1]


def test_with_stack_and_export_stacks(tmp_path):
    def user_code():
        return ember.mm(ember.ones(50, 50), ember.ones(50, 50))
    with profile(with_stack=True) as prof:
        user_code()
    mm = next(e for e in prof.events() if e.name == "aten::mm")
    assert any("user_code" in frame and "test_profiler.py" in frame for frame in mm.stack)
    assert not any("/ember/" in frame for frame in mm.stack)
    path = tmp_path / "stacks.txt"
    prof.export_stacks(str(path), "self_cpu_time_total")
    lines = path.read_text().splitlines()
    assert lines and all(line.rsplit(" ", 1)[1].isdigit() for line in lines)
    assert any("user_code" in line for line in lines)
    with pytest.raises(ValueError, match="metric should be one of"):
        prof.events().export_stacks(str(path), "bogus")
    with profile() as plain:
        pass
    with pytest.raises(AssertionError, match="export_stacks\\(\\) requires with_stack=True"):
        plain.export_stacks(str(path))


def test_schedule_matches_pytorch(torch):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for kw in (dict(wait=1, warmup=1, active=2, repeat=2),
                   dict(wait=0, warmup=0, active=1), dict(wait=2, warmup=1, active=3,
                                                          skip_first=2, repeat=1)):
            e, t = ember.profiler.schedule(**kw), torch.profiler.schedule(**kw)
            assert [e(i).name for i in range(20)] == [t(i).name for i in range(20)]
    with pytest.warns(UserWarning, match="Profiler won't be using warmup"):
        ember.profiler.schedule(wait=1, warmup=0, active=1)
    with pytest.raises(AssertionError, match="Invalid profiler schedule arguments"):
        ember.profiler.schedule(wait=1, warmup=1, active=0)


def test_profile_with_schedule_and_trace_handler(tmp_path):
    ready = []
    sched = ember.profiler.schedule(wait=1, warmup=1, active=2, repeat=2)
    a = ember.ones(2)
    with profile(schedule=sched, on_trace_ready=lambda p: ready.append(
            sorted({e.name for e in p.events() if e.name.startswith("ProfilerStep")}))) as prof:
        for _ in range(10):
            a + a
            prof.step()
    # steps 2-3 and 6-7 are recorded; each window is handed over once
    assert ready == [["ProfilerStep#2", "ProfilerStep#3"], ["ProfilerStep#6", "ProfilerStep#7"]]
    step = next(e for e in prof.events() if e.name == "ProfilerStep#6")
    assert [c.name for c in step.cpu_children] == ["aten::add"]

    handler = ember.profiler.tensorboard_trace_handler(str(tmp_path / "tb"), worker_name="w0")
    with profile(on_trace_ready=handler):
        a * a
    (f,) = os.listdir(tmp_path / "tb")
    assert f.startswith("w0.") and f.endswith(".pt.trace.json")
    assert json.loads((tmp_path / "tb" / f).read_text())["traceEvents"]


def test_legacy_autograd_profiler():
    with ember.autograd.profiler.profile(record_shapes=True) as prof:
        with ember.autograd.profiler.record_function("legacy"):
            ember.ones(3) + 1
    names = [e.name for e in prof.function_events]
    assert "legacy" in names and "aten::add" in names
    assert "aten::add" in prof.table()
    assert prof.self_cpu_time_total > 0
    with ember.autograd.profiler.profile(enabled=False) as off:
        ember.ones(3) + 1
    assert list(off.function_events) == []


def test_idle_profiler_leaves_the_hot_path_untouched():
    entry = _d.get_entry("aten::add.Tensor")
    a = ember.ones(1)

    def observed(cache):
        return [k for k, fn in cache.items() if "_observed" in getattr(fn, "__qualname__", "")]
    with profile(profile_memory=True):
        a + a
        assert _d._observers and _storage._alloc_observers
        assert observed(entry.cache)  # while profiling, calls go through the observer wrapper
    assert not _d._observers and not _storage._alloc_observers
    a + a
    assert entry.cache and not observed(entry.cache)  # after it, the plain kernels again
    with record_function("nobody listening"):  # a no-op without a profiler
        a + a
    with pytest.raises(RuntimeError, match="already enabled"):
        with profile():
            with profile():
                pass
    assert not _d._observers


def test_activities():
    assert ProfilerActivity.CPU in ember.profiler.supported_activities()
    assert [a.name for a in ProfilerActivity] == ["CPU", "XPU", "MTIA", "CUDA", "HPU",
                                                  "PrivateUse1"]
    with pytest.warns(UserWarning, match="Unsupported profiler activities"):
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            ember.ones(2) + 1
    assert any(e.name == "aten::add" for e in prof.events())
