"""``ember.cuda.memory``: what PyTorch's ``torch.cuda.memory`` offers over the caching allocator:
statistics, the summary table, snapshots and allocation history, the memory fraction, raw
allocations, the allocator's settings and memory pools.

Names, signatures, keys and texts are PyTorch 2.13's. Beyond PyTorch, ``memory_stats()`` has two
more keys: ``"fragmentation_bytes"`` (free bytes inside segments that also hold blocks in use)
and ``"fragmentation"`` (those bytes over reserved bytes, 0.0 with nothing reserved).
"""
import collections
import contextlib
import inspect
import pickle
import sys
import threading
import warnings

from . import _alloc_config
from . import _caching_allocator as _ca
from . import _runtime
from ._caching_allocator import OutOfMemoryError  # noqa: F401  (torch.cuda.memory has it too)

__all__ = [
    "caching_allocator_alloc", "caching_allocator_delete", "set_per_process_memory_fraction",
    "get_per_process_memory_fraction", "empty_cache", "memory_stats",
    "memory_stats_as_nested_dict", "reset_accumulated_memory_stats", "reset_peak_memory_stats",
    "reset_max_memory_allocated", "reset_max_memory_cached", "memory_allocated",
    "max_memory_allocated", "memory_reserved", "max_memory_reserved", "memory_cached",
    "max_memory_cached", "memory_snapshot", "memory_summary", "mem_get_info",
    "get_allocator_backend", "MemPool", "use_mem_pool"]


# ---------------------------------------------------------------------------------------------
# Devices

def _current_device():
    """``ember.cuda.current_device()``, or 0 while ember.cuda cannot tell yet (its device
    runtime still being wired up: the call is then a placeholder that raises)."""
    from .. import cuda
    fn = getattr(cuda, "current_device", None)
    if fn is None:
        return 0
    try:
        d = fn()
    except (NotImplementedError, AssertionError):
        return 0
    return 0 if d is None else int(d)


def _device_index(device, optional=True):
    """PyTorch's ``_get_device_index`` for CUDA: an int, ``"cuda:1"``, ``ember.device``, or
    None (and ``"cuda"``) for the current device."""
    if device is None:
        return _current_device()
    if isinstance(device, bool):
        raise ValueError(f"Expected a cuda device, but got: {device}")
    if isinstance(device, int):
        return device
    from .. import device as _device
    if isinstance(device, str):
        device = _device(device)
    if isinstance(device, _device):
        if device.type != "cuda":
            raise ValueError(f"Expected a cuda device, but got: {device}")
        if device.index is None:
            if not optional:
                raise ValueError(f"Expected a torch.device with a specified index or an "
                                 f"integer, but got:{device}")
            return _current_device()
        return device.index
    raise ValueError(f"Expected a cuda device, but got: {device}")


def _initialized():
    return _runtime.get_runtime() is not None


def _allocator(device=None):
    return _ca.get_allocator(_device_index(device))


# ---------------------------------------------------------------------------------------------
# Raw allocations, fraction, cache

def caching_allocator_alloc(size, device=None, stream=None):
    r"""Allocate ``size`` bytes with the CUDA caching allocator (freed by
    :func:`caching_allocator_delete`); ``stream``: a Stream or a raw stream handle (int),
    default the device's current stream."""
    device = _device_index(device)
    if stream is None:
        from .. import cuda
        current_stream = getattr(cuda, "current_stream", None)
        stream = current_stream(device) if current_stream is not None else 0
    if hasattr(stream, "cuda_stream"):
        stream = stream.cuda_stream
    if not isinstance(stream, int):
        raise TypeError("Invalid type for stream argument, must be `torch.cuda.Stream` or `int` "
                        "representing a pointer to an existing stream")
    return _ca.raw_alloc(size, device, stream)


def caching_allocator_delete(mem_ptr):
    r"""Free memory allocated by :func:`caching_allocator_alloc`."""
    _ca.raw_delete(mem_ptr)


def set_per_process_memory_fraction(fraction, device=None) -> None:
    r"""Limit the caching allocator on ``device`` to ``fraction`` × total device memory:
    allocating more raises an out-of-memory error."""
    device = _device_index(device)
    if not isinstance(fraction, float):
        raise TypeError("Invalid type for fraction argument, must be `float`")
    if fraction < 0 or fraction > 1:
        raise ValueError(f"Invalid fraction value: {fraction}. Allowed range: 0~1")
    _ca.get_allocator(device).set_memory_fraction(fraction)


def get_per_process_memory_fraction(device=None) -> float:
    r"""The memory fraction of ``device`` (1.0 unless set)."""
    return _allocator(device).get_memory_fraction()


def empty_cache() -> None:
    r"""Release the cached memory no tensor uses (whole segments) back to the device."""
    if _initialized():
        for a in _ca._initialized_allocators().values():
            a.empty_cache()


def mem_get_info(device=None):
    r"""``(free, total)`` bytes of the device, as ``cudaMemGetInfo`` reports them."""
    rt = _runtime.get_runtime()
    if rt is None:
        raise RuntimeError("No CUDA GPUs are available")
    return tuple(rt.mem_get_info(_device_index(device)))


# ---------------------------------------------------------------------------------------------
# Statistics

def memory_stats(device=None):
    r"""The allocator's statistics as a flat dict with ``.``-joined, sorted keys (see PyTorch's
    documentation; the metric named ``allocation`` counts allocations), plus ember's
    ``fragmentation`` and ``fragmentation_bytes``."""
    result = []

    def _format_key(key):
        if isinstance(key, str):
            return key
        if isinstance(key, tuple):
            return "_".join(str(part) for part in key)
        return str(key)

    def _add(prefix, obj):
        if isinstance(obj, dict):
            if prefix:
                prefix += "."
            for k, v in obj.items():
                _add(prefix + _format_key(k), v)
        else:
            result.append((prefix, obj))

    _add("", memory_stats_as_nested_dict(device=device))
    result.sort()
    return collections.OrderedDict(result)


def memory_stats_as_nested_dict(device=None):
    r"""The result of :func:`memory_stats` as a nested dict."""
    if not _initialized():
        return {}
    return _allocator(device).memory_stats()


def reset_accumulated_memory_stats(device=None) -> None:
    r"""Zero the ``allocated``/``freed`` totals and the event counters."""
    _allocator(device).reset_accumulated_stats()


def reset_peak_memory_stats(device=None) -> None:
    r"""Set every ``peak`` to its ``current``."""
    _allocator(device).reset_peak_stats()


def reset_max_memory_allocated(device=None) -> None:
    r"""Reset the peak of allocated memory (now: every peak statistic)."""
    warnings.warn("torch.cuda.reset_max_memory_allocated now calls "
                  "torch.cuda.reset_peak_memory_stats, which resets /all/ peak memory stats.",
                  FutureWarning, stacklevel=2)
    return reset_peak_memory_stats(device=device)


def reset_max_memory_cached(device=None) -> None:
    r"""Reset the peak of reserved memory (now: every peak statistic)."""
    warnings.warn("torch.cuda.reset_max_memory_cached now calls "
                  "torch.cuda.reset_peak_memory_stats, which resets /all/ peak memory stats.",
                  FutureWarning, stacklevel=2)
    return reset_peak_memory_stats(device=device)


def memory_allocated(device=None) -> int:
    r"""Bytes currently handed out to tensors on ``device``."""
    return memory_stats(device=device).get("allocated_bytes.all.current", 0)


def max_memory_allocated(device=None) -> int:
    r"""The peak of :func:`memory_allocated` (since start or the last peak reset)."""
    return memory_stats(device=device).get("allocated_bytes.all.peak", 0)


def memory_reserved(device=None) -> int:
    r"""Bytes the caching allocator holds from the device (in use or cached)."""
    return memory_stats(device=device).get("reserved_bytes.all.current", 0)


def max_memory_reserved(device=None) -> int:
    r"""The peak of :func:`memory_reserved`."""
    return memory_stats(device=device).get("reserved_bytes.all.peak", 0)


def memory_cached(device=None) -> int:
    r"""Deprecated; see :func:`memory_reserved`."""
    warnings.warn("`torch.cuda.memory_cached` has been renamed to `torch.cuda.memory_reserved`",
                  FutureWarning, stacklevel=2)
    return memory_reserved(device=device)


def max_memory_cached(device=None) -> int:
    r"""Deprecated; see :func:`max_memory_reserved`."""
    warnings.warn("`torch.cuda.max_memory_cached` has been renamed to "
                  "`torch.cuda.max_memory_reserved`", FutureWarning, stacklevel=2)
    return max_memory_reserved(device=device)


def memory_summary(device=None, abbreviated=False) -> str:
    r"""PyTorch's memory summary table of ``device``'s statistics (75 characters wide)."""
    device = _device_index(device)
    stats = memory_stats(device=device)

    def _format_size(sz, pref_sz):
        prefixes = ["B  ", "KiB", "MiB", "GiB", "TiB", "PiB"]
        prefix = prefixes[0]
        for new_prefix in prefixes[1:]:
            if pref_sz < 768 * 1024:
                break
            prefix = new_prefix
            sz //= 1024
            pref_sz /= 1024
        return f"{sz:6d} {prefix}"

    def _format_count(cnt, pref_cnt):
        prefixes = [" ", "K", "M"]
        prefix = prefixes[0]
        for new_prefix in prefixes[1:]:
            if pref_cnt < 750 * 1000:
                break
            prefix = new_prefix
            cnt //= 1000
            pref_cnt /= 1000
        return f"{cnt:7d} {prefix} "

    grouped = [
        ("allocated_bytes", "Allocated memory", _format_size),
        ("active_bytes", "Active memory", _format_size),
        ("requested_bytes", "Requested memory", _format_size),
        ("reserved_bytes", "GPU reserved memory", _format_size),
        ("inactive_split_bytes", "Non-releasable memory", _format_size),
        ("allocation", "Allocations", _format_count),
        ("active", "Active allocs", _format_count),
        ("segment", "GPU reserved segments", _format_count),
        ("inactive_split", "Non-releasable allocs", _format_count),
    ]
    lines = ["=" * 75,
             " {_:16} PyTorch CUDA memory summary, device ID {device:<17d} ",
             "-" * 75,
             "  {_:9} CUDA OOMs: {num_ooms:<12d} | {_:6} cudaMalloc retries: "
             "{num_alloc_retries:<8d}  ",
             "=" * 75,
             "        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  "]
    for key, name, fmt in grouped:
        lines.append("-" * 75)
        rows = [("all", name)]
        if not abbreviated:
            rows += [("large_pool", "      from large pool"),
                     ("small_pool", "      from small pool")]
        pref = None  # the "all" row picks the unit of its whole group
        for sub, label in rows:
            prefix = f"{key}.{sub}."
            vals = [stats[prefix + m] for m in ("current", "peak", "allocated", "freed")]
            if pref is None:
                pref = vals
            cells = " | ".join(fmt(v, p) for v, p in zip(vals, pref))
            lines.append(f" {label:<21} | {cells} ")
    for key, name in (("oversize_allocations", "Oversize allocations"),
                      ("oversize_segments", "Oversize GPU segments")):
        lines.append("-" * 75)
        vals = [stats[f"{key}.{m}"] for m in ("current", "peak", "allocated", "freed")]
        cells = " | ".join(_format_count(v, v) for v in vals)
        lines.append(f" {name:<21} | {cells} ")
    lines.append("=" * 75)
    fmt_dict = {"_": "", "device": device}
    for k, v in stats.items():
        fmt_dict[k.replace(".", "-")] = v
    return "|" + "|\n|".join(lines).format(**fmt_dict) + "|\n"


def list_gpu_processes(device=None) -> str:
    r"""The processes using ``device`` and their memory (through ``pynvml``, as PyTorch); on the
    simulated device: this process and the memory in use."""
    rt = _runtime.get_runtime()
    idx = _device_index(device)
    if rt is not None and rt.simulated:
        import os
        free, total = rt.mem_get_info(idx)
        mem = (total - free) / (1024 * 1024)
        return "\n".join([f"GPU:{idx}", f"process {os.getpid():>10d} uses {mem:>12.3f} MB GPU "
                                        f"memory"])
    try:
        import pynvml
    except ModuleNotFoundError:
        return "pynvml module not found, please install nvidia-ml-py"
    from pynvml import NVMLError_DriverNotLoaded
    try:
        pynvml.nvmlInit()
    except NVMLError_DriverNotLoaded:
        return "cuda driver can't be loaded, is cuda enabled?"
    handle = pynvml.nvmlDeviceGetHandleByIndex(idx)
    procs = pynvml.nvmlDeviceGetComputeRunningProcesses(handle)
    lines = [f"GPU:{idx}"]
    if len(procs) == 0:
        lines.append("no processes are running")
    for p in procs:
        lines.append(f"process {p.pid:>10d} uses {p.usedGpuMemory / (1024 * 1024):>12.3f} MB "
                     f"GPU memory")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Snapshots and history

def memory_snapshot(mempool_id=None, include_traces=True):
    r"""The segments of every device's allocator (of pool ``mempool_id`` if given)."""
    segs = _snapshot()["segments"] if include_traces else _segments()
    if mempool_id is not None:
        segs = [s for s in segs if tuple(s["segment_pool_id"]) == tuple(mempool_id)]
    return segs


def _segments():
    out = []
    for _, a in sorted(_ca._initialized_allocators().items()):
        out += a.snapshot()
    return out


def _snapshot(device=None, augment_with_fx_traces=False):
    r"""The allocator state: ``{"segments", "device_traces", "allocator_settings"}``, as
    PyTorch's (segments and blocks with their ``frames`` when history records context; one
    trace list per device, oldest entry first)."""
    if augment_with_fx_traces:
        raise NotImplementedError("ember: augment_with_fx_traces needs FX-generated code "
                                  "stack traces, which ember does not record")
    allocs = _ca._initialized_allocators()
    rt = _runtime.get_runtime()
    n = rt.device_count() if rt is not None else 0
    traces = [allocs[d].trace() if d in allocs else [] for d in range(n)]
    segments = []
    for d in sorted(allocs):
        segments += allocs[d].snapshot()
    return {"segments": segments, "device_traces": traces,
            "allocator_settings": _alloc_config.config().metadata()}


def _dump_snapshot(filename="dump_snapshot.pickle", augment_with_fx_traces=False):
    r"""Pickle :func:`_snapshot` to ``filename`` (PyTorch's memory viewer opens it)."""
    s = _snapshot(augment_with_fx_traces=augment_with_fx_traces)
    with open(filename, "wb") as f:
        pickle.dump(s, f)


_RECORD_CONTEXT = {None: _ca.NEVER, "state": _ca.STATE, "alloc": _ca.ALLOC, "all": _ca.ALL}
_ACTIONS = ("alloc", "free_requested", "free_completed", "segment_alloc", "segment_free",
            "segment_map", "segment_unmap", "oom", "snapshot")


def _record_memory_history(enabled="all", *args, **kwargs):
    r"""Record the allocator's history: ``enabled="all"`` keeps a ring buffer of the last
    ``max_entries`` alloc/free/segment events (``"state"`` only the stacks of live blocks,
    ``None`` stops and clears); ``context`` says which events carry Python stacks (frames of
    ``filename``, ``line``, ``name``). A bool ``enabled`` takes the legacy arguments."""
    if isinstance(enabled, bool):
        return _record_memory_history_legacy(enabled, *args, **kwargs)
    return _record_memory_history_impl(enabled, *args, **kwargs)


def _record_memory_history_impl(enabled="all", context="all", stacks="all",
                                max_entries=sys.maxsize, device=None, clear_history=False,
                                compile_context=False, global_record_annotations=False,
                                skip_actions=None):
    if enabled is not None and enabled not in ("state", "all"):
        raise RuntimeError("expected state to be 'state', 'all', or None")
    if context not in _RECORD_CONTEXT:
        raise RuntimeError("expected context to be 'state', 'alloc', 'all', or None")
    if stacks not in ("python", "all"):
        raise RuntimeError("expected stack to be 'all' or 'python'")
    skip = list(skip_actions or [])
    for a in skip:
        if a not in _ACTIONS:
            raise ValueError(f"Invalid action type: {a}")
    # Only Python frames exist here: "all" (which adds C++ frames in PyTorch) records the same.
    when = _RECORD_CONTEXT[context] if enabled is not None else _ca.NEVER
    _ca.record_memory_history(enabled is not None,
                              _ca._gather_python_frames if when != _ca.NEVER else None,
                              max_entries, when, clear_history=clear_history,
                              skip_actions=skip, keep_trace=enabled == "all")


_record_memory_history.__signature__ = inspect.signature(_record_memory_history_impl)


def _record_memory_history_legacy(enabled, record_context=True, trace_alloc_max_entries=1,
                                  trace_alloc_record_context=False, device=None,
                                  record_context_cpp=False, clear_history=False,
                                  compile_context=False, global_record_annotations=False,
                                  skip_actions=None):
    when = (_ca.ALLOC if trace_alloc_record_context else
            _ca.STATE if record_context else _ca.NEVER)
    _ca.record_memory_history(enabled, _ca._gather_python_frames if when else None,
                              trace_alloc_max_entries, when, clear_history=clear_history,
                              skip_actions=list(skip_actions or []),
                              keep_trace=trace_alloc_max_entries > 1)


def _save_segment_usage(filename="output.svg", snapshot=None):
    r"""Write ember's SVG picture of the snapshot's segments to ``filename``."""
    from ._memory_viz import segment_plot
    if snapshot is None:
        snapshot = _snapshot()
    with open(filename, "w") as f:
        f.write(segment_plot(snapshot))


# ---------------------------------------------------------------------------------------------
# Settings

def _set_allocator_settings(env: str):
    r"""Apply allocator settings (``PYTORCH_CUDA_ALLOC_CONF`` syntax) at run time."""
    _alloc_config.set_allocator_settings(env)
    for a in _ca._initialized_allocators().values():
        a.stats.max_split_size = _alloc_config._as_int64(_alloc_config.config().max_split_size)


def get_allocator_backend() -> str:
    r"""The allocator backend: ``"native"`` (ember implements PyTorch's native allocator)."""
    return _alloc_config.config().backend


# ---------------------------------------------------------------------------------------------
# Memory pools

class MemPool:
    r"""A private pool of the caching allocator: allocations made inside
    :func:`use_mem_pool` come from it, and its memory stays with it until the pool is gone."""

    def __init__(self, allocator=None, use_on_oom=False, no_split=False):
        if allocator is not None:
            raise NotImplementedError("ember: MemPool with a pluggable allocator is not "
                                      "supported; ember has the native caching allocator only")
        if use_on_oom or no_split:
            raise NotImplementedError("ember: MemPool(use_on_oom=True) and no_split=True are "
                                      "not implemented")
        self._id = _ca.next_user_pool_id()
        self._device = _current_device()
        self._allocator = _ca.get_allocator(self._device)
        self._allocator.create_or_incref_pool(self._id)

    @property
    def id(self):
        r"""The pool's id, a tuple of two ints."""
        return self._id

    @property
    def allocator(self):
        return None

    def use_count(self):
        r"""How many holders the pool has (this object, plus each active use)."""
        return self._allocator.get_pool_use_count(self._id)

    def snapshot(self, include_traces=True):
        r"""The segments of this pool."""
        return memory_snapshot(self._id, include_traces=include_traces)

    def __del__(self):
        a = getattr(self, "_allocator", None)
        if a is not None and self._id in a.graph_pools and a.graph_pools[self._id].use_count:
            a.release_pool(self._id)


@contextlib.contextmanager
def use_mem_pool(pool, device=None):
    r"""Route the current thread's allocations on ``device`` to ``pool`` inside the block."""
    device_index = _current_device() if device is None else _device_index(device, optional=False)
    alloc = _ca.get_allocator(device_index)
    tid = threading.get_ident()
    alloc.begin_allocate_to_pool(pool.id, lambda stream: threading.get_ident() == tid)
    try:
        yield
    finally:
        alloc.end_allocate_to_pool(pool.id)
        alloc.release_pool(pool.id)
