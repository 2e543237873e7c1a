"""PyTorch's ``torch.autograd.profiler_util``: profiler results: events, their averages, the
summary table and the Chrome trace (``ember.profiler`` and ``ember.autograd.profiler`` hand
them out).

The names and formats are PyTorch's: ``FunctionEvent``
(one range), ``FunctionEventAvg`` (the events sharing a key, summed), ``EventList`` with
``key_averages``, ``table`` (columns ``Name | Self CPU % | Self CPU | CPU total % | CPU total |
CPU time avg | [Self CUDA | Self CUDA % | CUDA total | CUDA time avg] | [CPU Mem | Self CPU Mem] |
# of Calls | [Input Shapes] | [Source Location] | [Total FLOPs]``), ``export_chrome_trace`` (JSON
that chrome://tracing and Perfetto open: CPU rows, GPU rows per stream and the launch arrows
between them) and ``export_stacks`` (folded stacks for flame graphs). Times are in microseconds.

With ``ProfilerActivity.CUDA`` the device kernels are events too (``device_type`` "CUDA", one per
kernel launch, timed by CUDA events on its stream); the op that launched one lists it in
``kernels``, and device times add up as PyTorch's do: an op's ``device_time_total`` is its own
kernels' time plus its children's.
"""
import bisect
import json
import math
import os
import socket
from collections import OrderedDict

__all__ = ["FunctionEvent", "FunctionEventAvg", "EventList", "MemRecordsAcc"]


def _format_time(time_us):
    if time_us >= 1e6:
        return f"{time_us / 1e6:.3f}s"
    if time_us >= 1e3:
        return f"{time_us / 1e3:.3f}ms"
    return f"{time_us:.3f}us"


def _format_time_share(time_us, total_time_us):
    if total_time_us == 0:
        return "NaN"
    return f"{time_us * 100.0 / total_time_us:.2f}%"


def _format_memory(nbytes):
    KB, MB, GB = 1024, 1024 ** 2, 1024 ** 3
    if abs(nbytes) >= GB:
        return f"{nbytes * 1.0 / GB:.2f} GB"
    if abs(nbytes) >= MB:
        return f"{nbytes * 1.0 / MB:.2f} MB"
    if abs(nbytes) >= KB:
        return f"{nbytes * 1.0 / KB:.2f} KB"
    return str(nbytes) + " B"


class Interval:
    def __init__(self, start, end):
        self.start, self.end = start, end

    def elapsed_us(self):
        return self.end - self.start


class _TimeStrings:
    """The ``*_str`` properties PyTorch's events have."""

    @property
    def self_cpu_time_total_str(self):
        return _format_time(self.self_cpu_time_total)

    @property
    def cpu_time_total_str(self):
        return _format_time(self.cpu_time_total)

    @property
    def cpu_time_str(self):
        return _format_time(self.cpu_time)


class FunctionEvent(_TimeStrings):
    """One recorded range: an operator call, a user range, or a backward node."""

    def __init__(self, id, name, thread, start_us, end_us, category="cpu_op", input_shapes=None,
                 input_types=None, input_strides=None, concrete_inputs=None, stack=None,
                 cpu_memory_usage=0, self_cpu_memory_usage=0, flops=0, device_type="CPU",
                 device_index=0, use_device=None):
        self.id = id
        self.name = name
        self.key = name
        self.thread = thread
        self.time_range = Interval(start_us, end_us)
        self.category = category
        self.is_user_annotation = category == "user_annotation"
        self.input_shapes = input_shapes if input_shapes is not None else []
        self.input_types = input_types or []
        self.input_strides = input_strides or []
        self.concrete_inputs = concrete_inputs or []
        self.stack = stack if stack is not None else []
        self.cpu_memory_usage = cpu_memory_usage
        self.self_cpu_memory_usage = self_cpu_memory_usage
        self.flops = flops
        self.cpu_parent = None
        self.cpu_children = []
        self.count = 1
        self.node_id = -1
        self.sequence_nr = -1
        self.overload_name = ""
        self.device_type = device_type
        self.device_index = device_index
        self.use_device = use_device
        self.kernels = []  # the device kernels this op launched itself (FunctionEvents)
        self.is_async = False
        self.is_legacy = False
        self.device_memory_usage = self.self_device_memory_usage = 0

    @property
    def cpu_time_total(self):
        return self.time_range.elapsed_us() if self.device_type == "CPU" else 0

    @property
    def self_cpu_time_total(self):
        if self.device_type != "CPU":
            return 0
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    @property
    def device_time_total(self):
        if self.use_device is None:
            return 0
        if self.device_type == "CPU":
            return sum(k.time_range.elapsed_us() for k in self.kernels) + sum(
                c.device_time_total for c in self.cpu_children)
        return self.time_range.elapsed_us()

    @property
    def self_device_time_total(self):
        if self.use_device is None:
            return 0
        if self.device_type == "CPU":
            return self.device_time_total - sum(c.device_time_total for c in self.cpu_children)
        return self.device_time_total

    @property
    def device_time(self):
        return self.device_time_total

    @property
    def cpu_time(self):
        return self.cpu_time_total

    def __repr__(self):
        return (f"<FunctionEvent id={self.id} name={self.name} cpu_time={self.cpu_time_total_str} "
                f"start_us={self.time_range.start:.3f} end_us={self.time_range.end:.3f} "
                f"cpu_children={[c.id for c in self.cpu_children]} input_shapes={self.input_shapes} "
                f"cpu_memory_usage={self.cpu_memory_usage} thread={self.thread}>")


class FunctionEventAvg(_TimeStrings):
    """The events that share a key (name, and input shapes / stack when grouped by them)."""

    def __init__(self):
        self.key = None
        self.count = 0
        self.node_id = -1
        self.is_async = False
        self.is_legacy = False
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.device_time_total = self.self_device_time_total = 0.0
        self.input_shapes = None
        self.overload_name = ""
        self.stack = None
        self.scope = None
        self.cpu_memory_usage = 0
        self.self_cpu_memory_usage = 0
        self.device_memory_usage = self.self_device_memory_usage = 0
        self.cpu_parent = None
        self.device_type = "CPU"
        self.is_user_annotation = False
        self.use_device = None
        self.flops = 0

    def add(self, other):
        if self.key is None:
            self.key = other.key
            self.node_id = other.node_id
            self.input_shapes = other.input_shapes
            self.stack = other.stack
            self.cpu_parent = other.cpu_parent
            self.is_user_annotation = other.is_user_annotation
            self.device_type = other.device_type
            self.use_device = other.use_device
        self.cpu_time_total += other.cpu_time_total
        self.self_cpu_time_total += other.self_cpu_time_total
        self.device_time_total += other.device_time_total
        self.self_device_time_total += other.self_device_time_total
        self.cpu_memory_usage += other.cpu_memory_usage
        self.self_cpu_memory_usage += other.self_cpu_memory_usage
        self.count += other.count
        self.flops += other.flops
        return self

    def __iadd__(self, other):
        return self.add(other)

    @property
    def cpu_time(self):
        return 0.0 if self.count == 0 else self.cpu_time_total / self.count

    @property
    def device_time(self):
        return 0.0 if self.count == 0 else self.device_time_total / self.count

    def __repr__(self):
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total_str} "
                f"cpu_time={self.cpu_time_str} input_shapes={self.input_shapes} "
                f"cpu_memory_usage={self.cpu_memory_usage}>")


class EventList(list):
    """A list of events with PyTorch's summary methods."""

    def __init__(self, *args, profile_memory=False, with_flops=False, use_device=None,
                 trace_meta=None):
        super().__init__(*args)
        self._profile_memory = profile_memory
        self._with_flops = with_flops
        self._use_device = use_device
        self._trace_meta = trace_meta or {}

    @property
    def self_cpu_time_total(self):
        return sum(e.self_cpu_time_total for e in self)

    def key_averages(self, group_by_input_shapes=False, group_by_stack_n=0,
                     group_by_overload_name=False):
        stats = OrderedDict()
        for evt in self:
            key = [evt.key]
            if group_by_input_shapes:
                key.append(str(evt.input_shapes))
            if group_by_stack_n > 0:
                key += evt.stack[:group_by_stack_n]
            stats.setdefault(tuple(key), FunctionEventAvg()).add(evt)
        avg = EventList(stats.values(), profile_memory=self._profile_memory,
                        with_flops=self._with_flops, use_device=self._use_device)
        for evt in avg:
            if not group_by_input_shapes:
                evt.input_shapes = ""
            if not group_by_stack_n:
                evt.stack = []
        return avg

    def total_average(self):
        total = FunctionEventAvg()
        for evt in self:
            total.add(evt)
        total.key = "Total"
        return total

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75,
              max_name_column_width=55, max_shapes_column_width=80, header=None,
              top_level_events_only=False, time_unit=None):
        return _build_table(self, sort_by=sort_by, row_limit=row_limit, header=header,
                            max_src_column_width=max_src_column_width,
                            max_name_column_width=max_name_column_width,
                            max_shapes_column_width=max_shapes_column_width,
                            with_flops=self._with_flops, profile_memory=self._profile_memory,
                            top_level_events_only=top_level_events_only, time_unit=time_unit,
                            use_device=self._use_device)

    def __str__(self):
        return self.table()

    @staticmethod
    def supported_export_stacks_metrics():
        return ["self_cpu_time_total", "self_cuda_time_total", "self_xpu_time_total",
                "self_privateuse1_time_total"]

    def export_stacks(self, path, metric):
        if metric not in self.supported_export_stacks_metrics():
            raise ValueError("metric should be one of: "
                             + str(self.supported_export_stacks_metrics()))
        translate_table = str.maketrans(" ;\t\n", "____")
        attr = metric.replace("cuda", "device").replace("xpu", "device").replace(
            "privateuse1", "device")
        with open(path, "w") as f:
            for evt in self:
                if evt.stack:
                    value = getattr(evt, attr)
                    if int(value) > 0:
                        frames = ";".join(e.translate(translate_table) for e in reversed(evt.stack))
                        f.write(f"{frames} {int(value)}\n")

    def export_chrome_trace(self, path):
        with open(path, "w") as f:
            json.dump(self._chrome_trace(), f)

    def _chrome_trace(self):
        meta = self._trace_meta
        pid = os.getpid()
        base_ns = meta.get("baseTimeNanoseconds", 0)
        events = [
            {"ph": "M", "name": "process_name", "ts": 0, "pid": pid, "tid": 0,
             "args": {"name": "python"}},
            {"ph": "M", "name": "process_labels", "ts": 0, "pid": pid, "tid": 0,
             "args": {"labels": "CPU"}},
        ]
        host = [e for e in self if e.device_type == "CPU"]
        for tid in sorted({e.thread for e in host}):
            events.append({"ph": "M", "name": "thread_name", "ts": 0, "pid": pid, "tid": tid,
                           "args": {"name": f"thread {tid} (python)"}})
        for dev, stream in sorted({(e.device_index, e.thread) for e in self
                                   if e.device_type != "CPU"}):
            events += [{"ph": "M", "name": "process_name", "ts": 0, "pid": dev, "tid": 0,
                        "args": {"name": f"GPU {dev}"}},
                       {"ph": "M", "name": "thread_name", "ts": 0, "pid": dev, "tid": stream,
                        "args": {"name": f"stream {stream}"}}]
        flow = 0
        for e in host:
            for k in e.kernels:  # the launch arrow: from the op to its kernel (Kineto's ac2g)
                flow += 1
                common = {"id": flow, "cat": "ac2g", "name": "ac2g"}
                events += [{"ph": "s", "pid": pid, "tid": e.thread,
                            "ts": base_ns / 1e3 + e.time_range.start, **common},
                           {"ph": "f", "bp": "e", "pid": k.device_index, "tid": k.thread,
                            "ts": base_ns / 1e3 + k.time_range.start, **common}]
        for idx, e in enumerate(self):
            if e.device_type != "CPU":
                events.append({"ph": "X", "cat": "kernel", "name": e.name,
                               "pid": e.device_index, "tid": e.thread,
                               "ts": base_ns / 1e3 + e.time_range.start,
                               "dur": e.device_time_total,
                               "args": {"device": e.device_index, "stream": e.thread,
                                        "External id": e.id + 1}})
                continue
            args = {"External id": e.id + 1, "Record function id": 0, "Ev Idx": idx}
            if e.input_shapes:
                args.update({"Input Dims": e.input_shapes, "Input type": e.input_types,
                             "Input Strides": e.input_strides,
                             "Concrete Inputs": e.concrete_inputs})
            if e.flops:
                args["flops"] = e.flops
            events.append({"ph": "X", "cat": e.category, "name": e.name, "pid": pid,
                           "tid": e.thread, "ts": base_ns / 1e3 + e.time_range.start,
                           "dur": e.cpu_time_total, "args": args})
            if e.stack:
                # with_stack: the Python frames, one python_function event per frame
                for frame in e.stack:
                    events.append({"ph": "X", "cat": "python_function", "name": frame,
                                   "pid": pid, "tid": e.thread,
                                   "ts": base_ns / 1e3 + e.time_range.start, "dur": 0,
                                   "args": {}})
        for ts_us, nbytes, tid, total, addr in meta.get("memory", ()):
            events.append({"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]",
                           "pid": pid, "tid": tid, "ts": base_ns / 1e3 + ts_us,
                           "args": {"Total Reserved": total, "Total Allocated": total,
                                    "Bytes": nbytes, "Device Id": -1, "Device Type": 0,
                                    "Addr": addr}})
        trace = {"schemaVersion": 1, "deviceProperties": [],
                 "trace_id": meta.get("trace_id", "")}
        # PyTorch writes these two flags only when they are on.
        if self._profile_memory:
            trace["profile_memory"] = 1
        if meta.get("record_shapes"):
            trace["record_shapes"] = 1
        trace.update({"host_name": socket.gethostname(), "displayTimeUnit": "ms",
                      "baseTimeNanoseconds": base_ns, "traceEvents": events,
                      "traceName": meta.get("traceName", "")})
        return trace


def _build_table(events, sort_by=None, header=None, row_limit=100, max_src_column_width=75,
                 max_name_column_width=55, max_shapes_column_width=80, with_flops=False,
                 profile_memory=False, top_level_events_only=False, time_unit=None,
                 use_device=None):
    """PyTorch's summary table, column for column; the device columns appear when some event
    has device time."""
    if len(events) == 0:
        return ""
    events = _sorted_events(events, sort_by)
    device = (use_device or "cuda").upper() if any(
        e.self_device_time_total > 0 for e in events) else None
    table = _TableLayout(events, max_name_column_width, max_shapes_column_width,
                         max_src_column_width, with_flops, profile_memory, device)
    fmt_time = _time_formatter(time_unit)
    total_self = sum(e.self_cpu_time_total for e in events)
    # PyTorch's device total counts the device events (the kernels) only
    total_device = sum(e.self_device_time_total for e in events
                       if e.device_type != "CPU" and not e.is_user_annotation)

    lines = []
    if header is not None:
        lines += ["=" * table.line_length, header]
    if top_level_events_only:
        lines += ["=" * table.line_length, "This report only display top-level ops statistics"]
    lines += [table.sep, table.format(table.headers), table.sep]
    for e in _shown_events(events, row_limit, top_level_events_only):
        lines += table.event_lines(e, fmt_time, total_self, total_device)
    lines += [table.sep, f"Self CPU time total: {fmt_time(total_self)}"]
    if device is not None:
        lines.append(f"Self {device} time total: {fmt_time(total_device)}")
    return "".join(line + "\n" for line in lines)


def _sorted_events(events, sort_by):
    """``events`` ordered by ``sort_by``, largest first (PyTorch's device names all read
    ``device_*``)."""
    if sort_by is None:
        return events
    attr = sort_by.replace("cuda", "device").replace("xpu", "device").replace(
        "privateuse1", "device")
    return sorted(events, key=lambda e: getattr(e, attr), reverse=True)


def _shown_events(events, row_limit, top_level_events_only):
    """The events that get a row: the first ``row_limit``, top-level ones only if asked."""
    shown = 0
    for e in events:
        if shown == row_limit:
            return
        if top_level_events_only and e.cpu_parent is not None:
            continue
        shown += 1
        yield e


def _time_formatter(time_unit):
    """Microseconds as text: in ``time_unit`` ("s", "ms", "us"), else in the unit that fits."""
    if time_unit == "s":
        return lambda us: f"{us / 1e6:.3f}s"
    if time_unit == "ms":
        return lambda us: f"{us / 1e3:.3f}ms"
    if time_unit == "us":
        return lambda us: f"{us:.3f}us"
    return _format_time


def _trim_path(path, width):
    """The last ``width`` characters of a source location, "..." marking the cut."""
    if len(path) > width:
        path = path[len(path) - width:]
        if len(path) > 3:
            path = "..." + path[3:]
    return path


def _flops_unit(events):
    """The FLOPs column's header and scale (the unit of the smallest count), or None when no
    event counted any."""
    raw = [e.flops for e in events if e.flops > 0]
    if not raw:
        return None
    names = ["FLOPs", "KFLOPs", "MFLOPs", "GFLOPs", "TFLOPs", "PFLOPs"]
    log = max(0, min(math.log10(min(raw)) / 3, float(len(names) - 1)))
    return f"Total {names[int(log)]}", pow(10, math.floor(log) * -3.0)


class _TableLayout:
    """The table's columns (which ones, their headers and widths) and how one event fills them."""
    SPACING = 2

    def __init__(self, events, max_name_width, max_shapes_width, max_src_width, with_flops,
                 profile_memory, device=None):
        self.max_name_width = max_name_width
        self.profile_memory = profile_memory
        self.device = device
        self.has_input_shapes = any(e.input_shapes for e in events)
        stacks = [e.stack for e in events if e.stack]
        self.has_stack = bool(stacks)
        self.shapes_width = min(max(len(str(e.input_shapes)) for e in events) + 4,
                                max_shapes_width)
        self.src_width = None
        if self.has_stack:
            self.src_width = min(max(max(len(s) for s in st) for st in stacks) + 4,
                                 max_src_width)
        self.headers, self._fmt, self.sep, self.line_length = [], "", "", -self.SPACING

        self._add_column("Name", min(max(len(e.key) for e in events) + 4, max_name_width))
        for name in ("Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"):
            self._add_column(name, 12)
        if device is not None:
            for name in (f"Self {device}", f"Self {device} %", f"{device} total",
                         f"{device} time avg"):
                self._add_column(name, 12)
        if profile_memory:
            self._add_column("CPU Mem", 12)
            self._add_column("Self CPU Mem", 12)
        self._add_column("# of Calls", 12)
        if self.has_input_shapes:
            self._add_column("Input Shapes", self.shapes_width)
        if self.has_stack:
            self._add_column("Source Location", self.src_width, text_dir="<")
        flops = _flops_unit(events) if with_flops else None
        self.with_flops = flops is not None
        if self.with_flops:
            flops_header, self.flops_scale = flops
            self._add_column(flops_header, 12)

    def _add_column(self, header, width, text_dir=">"):
        self.headers.append(header)
        self._fmt += "{: " + text_dir + str(width) + "}" + " " * self.SPACING
        self.sep += "-" * width + " " * self.SPACING
        self.line_length += width + self.SPACING

    def format(self, cells):
        return self._fmt.format(*cells)

    def event_lines(self, e, fmt_time, total_self, total_device=0):
        """The row of event ``e``, then (with stacks) one line per further frame and a blank."""
        name = e.key
        if len(name) >= self.max_name_width - 3:
            name = name[: self.max_name_width - 3] + "..."
        row = [name, _format_time_share(e.self_cpu_time_total, total_self),
               fmt_time(e.self_cpu_time_total),
               _format_time_share(e.cpu_time_total, total_self),
               fmt_time(e.cpu_time_total), fmt_time(e.cpu_time)]
        if self.device is not None:
            row += [fmt_time(e.self_device_time_total),
                    _format_time_share(e.self_device_time_total, total_device),
                    fmt_time(e.device_time_total), fmt_time(e.device_time)]
        if self.profile_memory:
            row += [_format_memory(e.cpu_memory_usage), _format_memory(e.self_cpu_memory_usage)]
        row.append(e.count)
        if self.has_input_shapes:
            row.append(str(e.input_shapes)[:self.shapes_width])
        if self.has_stack:
            row.append(_trim_path(e.stack[0], self.src_width) if e.stack else "")
        if self.with_flops:
            row.append("--" if e.flops <= 0 else f"{e.flops * self.flops_scale:8.3f}")
        lines = [self.format(row)]
        if self.has_stack:
            blank = [""] * (len(self.headers) - 1)
            for entry in e.stack[1:]:
                lines.append(self.format(blank + [_trim_path(entry, self.src_width)]))
            lines.append(self.format(blank + [""]))
        return lines


class MemRecordsAcc:
    """The memory records whose start lies in a time interval, found by bisection over their
    sorted start times (``mem_records``: ``(record, ...)`` tuples, ``record.start_ns()``)."""

    def __init__(self, mem_records):
        self._mem_records = mem_records
        self._start_nses = []
        self._indices = []
        if len(mem_records) > 0:
            tmp = sorted([(r[0].start_ns(), i) for i, r in enumerate(mem_records)])
            self._start_nses, self._indices = zip(*tmp)

    def in_interval(self, start_ns, end_ns):
        """The records starting within ``[start_ns, end_ns]``, in start order."""
        start_idx = bisect.bisect_left(self._start_nses, start_ns)
        end_idx = bisect.bisect_right(self._start_nses, end_ns)
        for i in range(start_idx, end_idx):
            yield self._mem_records[self._indices[i]]
