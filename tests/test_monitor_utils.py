"""ember.torch_version, ember.monitor and the small utility modules (multiprocessing's queue,
pool and reductions, utils.file_baton, backcompat, show_pickle, throughput_benchmark,
collect_env) against PyTorch's."""
import datetime
import gc
import os
import subprocess
import sys
import textwrap
import time
from importlib import import_module

import pytest

import ember
import ember.monitor
from ember.torch_version import InvalidVersion, TorchVersion, Version

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# -- torch_version ------------------------------------------------------------------------------

VERSION_OPERANDS = ["2.0", "2.13", "2.13.0", "2.13.0a0", "2.13.0.dev20250101", "2.13.1",
                    "10.0", "2.13.0+cpu", "2.13.0.post1", "1!1.0", "parrot", (2, 13), (2, 13, 0),
                    [2, 12, 9], (3,)]


@pytest.mark.parametrize("base", ["2.13.0", "2.13.0a0+git1234", "1.10.0a", "0.1.0", "2.1.0rc2"])
def test_torch_version_compares_as_pytorch(torch, base):
    ours, theirs = TorchVersion(base), torch.torch_version.TorchVersion(base)
    for other in VERSION_OPERANDS:
        for op in ("__lt__", "__le__", "__eq__", "__ge__", "__gt__"):
            assert getattr(ours, op)(other) == getattr(theirs, op)(other), (base, op, other)
        assert (ours != other) == (theirs != other)
    assert ours > Version("0.0.1") and isinstance(ours, str) and hash(ours) == hash(base)
    with pytest.raises(TypeError, match="'>' not supported between instances of "
                                        "'TorchVersion' and 'int'"):
        ours > 3
    for lib_version in (ours, theirs):
        with pytest.raises(TypeError, match="'TorchVersion' and 'NoneType'"):
            lib_version > None


def test_version_normalization_and_order_as_packaging(torch):
    from torch._vendor.packaging.version import Version as Theirs
    texts = ["1.0.dev0", "1.0a0", "1.0a1", "1.0b0", "1.0rc1", "1.0", "1.0.post0", "1.0.post1.dev2",
             "1.0+abc", "1.0+abc.5", "1.0+5", "1!0.1", "v1.0-ALPHA1", "1.0.0.0", "1.0-1",
             "1.0c1", "1.0_preview2", "1.0r3"]
    for t in texts:
        assert str(Version(t)) == str(Theirs(t))
        assert Version(t).public == Theirs(t).public and \
            Version(t).base_version == Theirs(t).base_version
        assert (Version(t).is_prerelease, Version(t).major, Version(t).minor,
                Version(t).micro) == (Theirs(t).is_prerelease, Theirs(t).major,
                                      Theirs(t).minor, Theirs(t).micro)
    assert sorted(texts, key=Version) == sorted(texts, key=Theirs)
    with pytest.raises(InvalidVersion, match="Invalid version: 'parrot'"):
        Version("parrot")
    assert issubclass(InvalidVersion, ValueError)


def test_ember_version_is_a_torch_version(tmp_path):
    assert type(ember.__version__) is TorchVersion and ember.__version__ >= (0, 1)
    assert ember.torch_version.__version__ == ember.__version__
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent("""
        import ember, ember.as_torch
        from ember.torch_version import TorchVersion
        ember.as_torch.install()
        import torch
        from torch.torch_version import TorchVersion as T
        assert T is TorchVersion and type(torch.__version__) is TorchVersion
        assert torch.__version__ >= "2.0" and torch.version.__version__ > (2, 12)
        assert torch.torch_version.__version__ == torch.__version__
        ember.as_torch.uninstall()
        assert type(ember.__version__) is TorchVersion and ember.__version__ < "2.0"
        print("ok")
    """))
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                       timeout=300, cwd=ROOT, env={**os.environ, "PYTHONPATH": ROOT})
    assert p.stdout.strip() == "ok", p.stderr[-3000:]


# -- monitor ------------------------------------------------------------------------------------

def _events(lib):
    got = []
    handle = lib.monitor.register_event_handler(got.append)
    return got, handle


@pytest.mark.parametrize("max_samples", [None, 3])
def test_stat_window_and_aggregations(torch, max_samples):
    """Within one window nothing is logged; max_samples closes it early (later adds in that
    window dropped); destroying the stat logs what it holds. VALUE adds nothing."""
    results = []
    for lib in (ember, torch):
        m = lib.monitor
        got, handle = _events(lib)
        kwargs = {} if max_samples is None else {"max_samples": max_samples}
        aggs = [m.Aggregation.SUM, m.Aggregation.COUNT, m.Aggregation.MEAN,
                m.Aggregation.MAX, m.Aggregation.MIN, m.Aggregation.VALUE]
        stat = m.Stat("loss", aggs, datetime.timedelta(hours=1), **kwargs)
        trace = [(stat.name, stat.count, sorted((a.name, v) for a, v in stat.get().items()))]
        for v in (1, 5.5, -2, 7, 3):
            stat.add(v)
            trace.append((stat.count, len(got)))
        trace.append(sorted((a.name, v) for a, v in stat.get().items()))
        del stat
        gc.collect()
        trace.append([(e.name, sorted(e.data.items())) for e in got])
        m.unregister_event_handler(handle)
        results.append(trace)
    assert results[0] == results[1]


def test_stat_logs_when_window_passes(torch):
    results = []
    for lib in (ember, torch):
        m = lib.monitor
        got, handle = _events(lib)
        stat = m.Stat("x", [m.Aggregation.MEAN, m.Aggregation.MAX],
                      datetime.timedelta(milliseconds=250))
        # (aligned to a window's start, so both adds land in one window)
        time.sleep(0.25 - time.monotonic() % 0.25 + 0.005)
        stat.add(2)
        stat.add(4)
        time.sleep(0.55)
        stat.add(10)
        results.append(([sorted(e.data.items()) for e in got], stat.count,
                         sorted((a.name, v) for a, v in stat.get().items())))
        stat2 = m.Stat("y", [m.Aggregation.COUNT], datetime.timedelta(seconds=60))
        del stat2  # empty: nothing logged
        gc.collect()
        results[-1] += (len(got),)
        m.unregister_event_handler(handle)
        del stat
        gc.collect()
    assert results[0] == results[1]
    assert results[0][0] == [[("x.max", 4.0), ("x.mean", 3.0)]]


def test_events_and_handlers(torch):
    results = []
    for lib in (ember, torch):
        m = lib.monitor
        when = datetime.datetime(2024, 5, 6, 7, 8, 9, 123000)
        event = m.Event(name="epoch", timestamp=when,
                        data={"i": 3, "f": 0.5, "s": "done", "b": True})
        got, handle = _events(lib)
        got2, handle2 = _events(lib)
        m.log_event(event)
        m.unregister_event_handler(handle)
        m.log_event(event)
        m.unregister_event_handler(handle2)
        m.log_event(event)
        event.name = "renamed"
        results.append((len(got), len(got2), got[0] is event, got[0].name,
                        got[0].timestamp, sorted(got[0].data.items()),
                        [type(v).__name__ for _, v in sorted(got[0].data.items())]))
        for bad in ((3, when, {}), ("n", 3, {}), ("n", when, {"a": [1]})):
            with pytest.raises(TypeError, match="incompatible constructor arguments"):
                m.Event(*bad)
        with pytest.raises(TypeError, match="log_event\\(\\): incompatible function arguments"):
            m.log_event(3)
        with pytest.raises(TypeError, match="add\\(\\): incompatible function arguments"):
            m.Stat("s", [], datetime.timedelta(seconds=1)).add("x")
        a = m.Aggregation
        results.append((list(a.__members__), [int(x) for x in a.__members__.values()],
                        str(a.SUM), repr(a.MEAN), a(2) == a.MEAN, m.STAT_EVENT))
    assert results[:2] == results[2:]


def test_tensorboard_event_handler():
    class Writer:
        def __init__(self):
            self.scalars = []

        def add_scalar(self, tag, value, walltime=None):
            self.scalars.append((tag, value, walltime))

    writer = Writer()
    m = ember.monitor
    handler = m.TensorboardEventHandler(writer)
    when = datetime.datetime(2024, 1, 2, 3, 4, 5)
    handler(m.Event(m.STAT_EVENT, when, {"loss.mean": 1.5}))
    handler(m.Event("other", when, {"ignored": 1}))
    assert writer.scalars == [("loss.mean", 1.5, when.timestamp())]
    with ember.monitor._WaitCounter("k").guard():
        pass


# -- multiprocessing: reductions, queue, pool ---------------------------------------------------

def _child_edits_view(queue, out):
    d = queue.get()
    d["view"][0] = 100.0  # the view's storage is the base's, as PyTorch's receiver has it
    out.put((d["base"].tolist(), type(d["param"]).__name__, d["param"].requires_grad,
             d["sparse"].to_dense().tolist(), tuple(d["empty"].shape), d["legacy"].tolist()))


def _square(t):
    return t * t


@pytest.mark.filterwarnings("ignore:TypedStorage is deprecated:UserWarning")
def test_queue_sends_views_of_one_storage_and_pool_maps():
    import multiprocessing
    from ember.multiprocessing.pool import Pool
    from ember.multiprocessing.queue import Queue, SimpleQueue
    methods = multiprocessing.get_all_start_methods()
    ctx = ember.multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    queue, out = Queue(ctx=ctx), Queue(ctx=ctx)
    base = ember.arange(6.0)
    proc = ctx.Process(target=_child_edits_view, args=(queue, out))
    proc.start()
    queue.put({"base": base, "view": base[2:], "param": ember.nn.Parameter(ember.ones(2)),
               "sparse": ember.tensor([0.0, 3.0]).to_sparse(), "empty": ember.ones(0, 3),
               "legacy": ember.FloatStorage([1.0, 2.0])})  # (deprecated, as PyTorch's)
    got = out.get(timeout=120)
    proc.join(timeout=120)
    assert got == ([0.0, 1.0, 100.0, 3.0, 4.0, 5.0], "Parameter", True, [0.0, 3.0], (0, 3),
                   [1.0, 2.0])
    assert base[2].item() == 100.0  # (one memory: the storage went by its handle, as PyTorch)
    simple = SimpleQueue(ctx=ctx)
    simple.put(ember.tensor([1, 2]))
    assert simple.get().tolist() == [1, 2]
    with Pool(2, context=ctx) as pool:
        assert [r.tolist() for r in pool.map(_square, [ember.tensor([1.0, 2.0]),
                                                       ember.tensor([3.0])])] == \
            [[1.0, 4.0], [9.0]]


def test_reduction_errors_as_pytorch(torch):
    from ember.multiprocessing import reductions
    for lib, red in ((ember, reductions), (torch, torch.multiprocessing.reductions)):
        with pytest.raises(RuntimeError, match="Cowardly refusing to serialize non-leaf tensor"):
            red.reduce_tensor(lib.ones(2, requires_grad=True) * 2)
        with pytest.raises(RuntimeError, match="Cannot pickle meta storage; try pickling a "
                                               "meta tensor instead"):
            red.reduce_storage(lib.ones(2, device="meta").untyped_storage())
        empty = lib.ones(0).untyped_storage()
        rebuild, args = red.reduce_storage(empty)
        assert rebuild is red.rebuild_storage_empty and rebuild(*args).nbytes() == 0
    t = ember.ones(3)
    ref = reductions.StorageWeakRef(t._typed_storage())
    assert ref == reductions.StorageWeakRef(t.untyped_storage()) and not ref.expired()
    cache = reductions.SharedCache()
    cache["k"] = ref
    assert cache.get("k") is ref


# -- utils: file_baton, backcompat, show_pickle, throughput_benchmark, collect_env -------------

def test_file_baton(tmp_path, torch):
    from ember.utils.file_baton import FileBaton
    for cls in (FileBaton, import_module("torch.utils.file_baton").FileBaton):
        path = str(tmp_path / "lock")
        first, second = cls(path), cls(path, wait_seconds=0.01, warn_after_seconds=0.02)
        assert first.try_acquire() is True and second.try_acquire() is False
        import threading
        timer = threading.Timer(0.1, first.release)
        timer.start()
        with pytest.warns(UserWarning, match=f'Waited on lock file "{path}" for 0.02 seconds'):
            second.wait()
        timer.join()
        assert second.try_acquire() is True
        second.release()
        with pytest.raises(FileNotFoundError):
            cls(path).release()


def test_backcompat_switches(torch):
    from ember.utils import backcompat
    for warning, setter in ((backcompat.broadcast_warning,
                             torch._C._set_backcompat_broadcast_warn),
                            (backcompat.keepdim_warning, torch._C._set_backcompat_keepdim_warn)):
        assert warning.enabled is False and warning.get_enabled() is False
        warning.enabled = True
        assert warning.get_enabled() is True
        warning.set_enabled(False)
        with pytest.raises(RuntimeError) as ours:
            warning.enabled = 3
        with pytest.raises(RuntimeError) as theirs:
            setter(3)
        assert str(ours.value) == str(theirs.value)


def test_show_pickle_prints_as_pytorch(tmp_path, torch):
    import io
    from ember.utils import show_pickle
    path = tmp_path / "ckpt.pt"
    ember.save({"w": ember.arange(3.0), "n": 3, "s": {"a": (1, "b")}}, path)
    outputs = []
    for module in (show_pickle, import_module("torch.utils.show_pickle")):
        buf = io.StringIO()
        module.main(["show_pickle", f"{path}@*/data.pkl"], output_stream=buf)
        with pytest.raises(Exception, match="Could not find member matching nothing"):
            module.main(["show_pickle", f"{path}@nothing*"], output_stream=buf)
        with pytest.raises(Exception, match="Pass argv of length 2."):
            module.main(["show_pickle"], output_stream=buf)
        outputs.append(buf.getvalue())
    assert outputs[0] == outputs[1] and "torch._utils._rebuild_tensor_v2" in outputs[0]


def test_throughput_benchmark(torch):
    import re
    from ember.utils.throughput_benchmark import ThroughputBenchmark, format_time
    import_module("torch.utils.throughput_benchmark")
    for kwargs in ({"time_us": 12.5}, {"time_ms": 3.25}, {"time_s": 2}, {"time_us": 2e6}):
        assert format_time(**kwargs) == torch.utils.throughput_benchmark.format_time(**kwargs)
    with pytest.raises(AssertionError, match="Expected only one of time_us, time_ms, time_s"):
        format_time(time_us=1, time_s=1)
    model = ember.nn.Linear(3, 2)
    bench = ThroughputBenchmark(model)
    ours = theirs = None
    try:
        bench.benchmark(num_iters=5)
    except RuntimeError as e:
        ours = str(e)
    try:
        torch.utils.throughput_benchmark.ThroughputBenchmark(torch.nn.Linear(3, 2)).benchmark(
            num_iters=5)
    except RuntimeError as e:
        theirs = str(e)
    assert ours == theirs
    x = ember.ones(1, 3)
    assert ember.equal(bench.run_once(x), model(x))
    assert ember.utils.ThroughputBenchmark is ThroughputBenchmark
    calls = []
    bench = ThroughputBenchmark(lambda x, scale=1: calls.append(scale) or x * scale)
    bench.add_input(x)
    bench.add_input(x, scale=2)
    stats = bench.benchmark(num_calling_threads=2, num_warmup_iters=3, num_iters=20)
    assert stats.num_iters == 20 and len(calls) == 2 * 3 + 20 and set(calls) <= {1, 2}
    assert stats.latency_avg_ms > 0 and stats.benchmark_config.num_calling_threads == 2
    assert re.fullmatch(r"Average latency per example: [0-9.]+(us|ms|s)\n"
                        r"Total number of iterations: 20\n"
                        r"Total number of iterations per second \(across all threads\): "
                        r"[0-9.]+\nTotal time: [0-9.]+(us|ms|s)", str(stats))


def test_collect_env_as_pytorch(torch):
    from ember.utils import collect_env as ours
    theirs = import_module("torch.utils.collect_env")
    assert ours.SystemEnv._fields == theirs.SystemEnv._fields
    assert ember.utils.collect_env is ours and ember.utils.backcompat.keepdim_warning
    env = ours.SystemEnv(
        torch_version="0.1.0", is_debug_build="False", cuda_compiled_version=None,
        gcc_version="(GCC) 12", clang_version=None, cmake_version="version 3.25",
        os="Linux (x86_64)", libc_version="glibc-2.36", python_version="3.11 (64-bit runtime)",
        python_platform="Linux", is_cuda_available="False", cuda_runtime_version=None,
        cuda_module_loading="N/A", nvidia_driver_version=None,
        nvidia_gpu_models="GPU 0: A\nGPU 1: B", cudnn_version=None, is_xpu_available="False",
        pip_version="pip3", pip_packages="numpy==2.0\nscipy==1.0", conda_packages=None,
        hip_compiled_version="N/A", hip_runtime_version="N/A", miopen_runtime_version="N/A",
        caching_allocator_config={}, is_xnnpack_available=True, cpu_info="cpu")
    assert ours.pretty_str(env) == theirs.pretty_str(env)
    assert ours.pretty_str(env._replace(nvidia_gpu_models=None, pip_packages="")) == \
        theirs.pretty_str(env._replace(nvidia_gpu_models=None, pip_packages=""))
    for probe in ("get_os", "get_gcc_version", "get_cmake_version", "get_cpu_info"):
        assert getattr(ours, probe)(ours.run) == getattr(theirs, probe)(theirs.run)
    assert ours.get_libc_version() == theirs.get_libc_version()
    assert ours.get_python_platform() == theirs.get_python_platform()
    info = ours.get_env_info()
    assert info.torch_version == ember.__version__ and info.is_cuda_available == "False"
    import numpy as np
    assert f"numpy=={np.__version__}" in info.pip_packages.split("\n")
    text = ours.pretty_str(info)
    assert text.startswith(f"PyTorch version: {ember.__version__}\nIs debug build: False\n")
    assert "\n[pip3] numpy==" in text
