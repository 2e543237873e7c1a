"""``ember.profiler.profile``: PyTorch's profiler API over the recorder in :mod:`._recorder`.

``profile`` records while it is entered; with a ``schedule`` it records only the steps the
schedule marks (``prof.step()`` once per iteration), hands each finished window to
``on_trace_ready`` and labels every recorded step with a ``ProfilerStep#N`` range.
"""
import gzip
import os
import socket
import time
import uuid
from enum import Enum
from warnings import warn

from ._recorder import Recorder, record_function
from .events import EventList, FunctionEvent

__all__ = ["ProfilerActivity", "ProfilerAction", "profile", "schedule",
           "tensorboard_trace_handler", "supported_activities"]


class ProfilerActivity(Enum):
    CPU = 0
    XPU = 1
    MTIA = 2
    CUDA = 3
    HPU = 4
    PrivateUse1 = 5

    def __repr__(self):
        return f"<ProfilerActivity.{self.name}: {self.value}>"


def supported_activities():
    """The activities ember can record: the CPU (ops, user ranges, backward nodes) and, where
    ``ember.cuda`` has a device (a GPU or the simulated one), CUDA (kernels and copies)."""
    from .. import cuda
    if cuda.is_available():
        return {ProfilerActivity.CPU, ProfilerActivity.CUDA}
    return {ProfilerActivity.CPU}


class ProfilerAction(Enum):
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def schedule(*, wait, warmup, active, repeat=0, skip_first=0, skip_first_wait=0):
    """Step number -> ProfilerAction: skip ``skip_first`` steps, then cycles of ``wait`` idle,
    ``warmup`` and ``active`` recorded steps (the last one saves), ``repeat`` times (0: forever)."""
    def schedule_fn(step):
        if step < 0:
            raise AssertionError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait != 0:
            step += wait
        num_steps = wait + warmup + active
        if repeat > 0 and step / num_steps >= repeat:
            return ProfilerAction.NONE
        mod_step = step % num_steps
        if mod_step < wait:
            return ProfilerAction.NONE
        if mod_step < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if mod_step < num_steps - 1 else ProfilerAction.RECORD_AND_SAVE

    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError(
            f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), warmup={warmup} "
            f"(need >= 0), active={active} (need > 0), repeat={repeat} (need >= 0), "
            f"skip_first={skip_first} (need >= 0).")
    if warmup == 0:
        warn("Profiler won't be using warmup, this can skew profiler results", stacklevel=2)
    return schedule_fn


def _default_schedule_fn(_):
    return ProfilerAction.RECORD


def tensorboard_trace_handler(dir_name, worker_name=None, use_gzip=False):
    """An ``on_trace_ready`` that writes ``<dir>/<worker>.<ns>.pt.trace.json[.gz]``."""
    def handler_fn(prof):
        os.makedirs(dir_name, exist_ok=True)
        name = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        file_name = f"{name}.{time.time_ns()}.pt.trace.json" + (".gz" if use_gzip else "")
        path = os.path.join(dir_name, file_name)
        if use_gzip:
            import json
            with gzip.open(path, "wt") as f:
                json.dump(prof._events._chrome_trace(), f)
        else:
            prof.export_chrome_trace(path)
    return handler_fn


_RECORDING = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)


class profile:
    """Record operator calls, user ranges, backward nodes (and allocations) on the CPU."""

    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None,
                 record_shapes=False, profile_memory=False, with_stack=False, with_flops=False,
                 with_modules=False, experimental_config=None, execution_trace_observer=None,
                 acc_events=False, use_cuda=None, custom_trace_id_callback=None):
        self.activities = set(activities) if activities else supported_activities()
        if use_cuda:
            self.activities.add(ProfilerActivity.CUDA)
        unsupported = self.activities - supported_activities()
        if unsupported:
            # PyTorch's CPU-only builds warn the same way and record what they can.
            warn(f"Unsupported profiler activities (not recorded by ember): "
                 f"{sorted(a.name for a in unsupported)}", stacklevel=2)
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_flops = with_flops
        self.with_modules = with_modules
        self.on_trace_ready = on_trace_ready
        self.acc_events = acc_events
        self.custom_trace_id_callback = custom_trace_id_callback
        self.record_steps = schedule is not None
        self.schedule = schedule if schedule is not None else _default_schedule_fn
        self.step_num = 0
        self.current_action = self.schedule(self.step_num)
        self._recorder = None
        self._events = EventList(profile_memory=profile_memory, with_flops=with_flops)
        self._step_rec_fn = None

    # -- lifecycle ------------------------------------------------------------------------------
    def __enter__(self):
        self.start()
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.stop()
        return False

    def start(self):
        if self.current_action in _RECORDING:
            self._start_recording()
        self._enter_step()

    def stop(self):
        self._exit_step()
        if self._recorder is not None:
            self._finish_recording()
            if self.on_trace_ready:
                self.on_trace_ready(self)

    def step(self):
        """Mark the end of one training iteration (and the start of the next)."""
        self._exit_step()
        prev = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        if prev in _RECORDING and (prev is ProfilerAction.RECORD_AND_SAVE
                                   or self.current_action not in _RECORDING):
            self._finish_recording()
            if prev is ProfilerAction.RECORD_AND_SAVE and self.on_trace_ready:
                self.on_trace_ready(self)
        if self.current_action in _RECORDING and self._recorder is None:
            self._start_recording()
        self._enter_step()

    def _enter_step(self):
        if self.record_steps and self._recorder is not None:
            self._step_rec_fn = record_function(f"ProfilerStep#{self.step_num}")
            self._step_rec_fn.__enter__()

    def _exit_step(self):
        if self._step_rec_fn is not None:
            self._step_rec_fn.__exit__(None, None, None)
            self._step_rec_fn = None

    def _start_recording(self):
        self._recorder = Recorder(self.record_shapes, self.profile_memory, self.with_stack,
                                  self.with_flops,
                                  with_cuda=ProfilerActivity.CUDA in self.activities)
        self._recorder.start()

    def _finish_recording(self):
        rec, self._recorder = self._recorder, None
        rec.stop()
        self._events = _to_events(rec, self)

    # -- results --------------------------------------------------------------------------------
    def events(self):
        return self._events

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0,
                     group_by_overload_name=False):
        return self._events.key_averages(group_by_input_shape, group_by_stack_n,
                                         group_by_overload_name)

    def export_chrome_trace(self, path):
        if path.endswith(".gz"):
            import json
            with gzip.open(path, "wt") as f:
                json.dump(self._events._chrome_trace(), f)
        else:
            self._events.export_chrome_trace(path)

    def export_stacks(self, path, metric="self_cpu_time_total"):
        if not self.with_stack:
            raise AssertionError("export_stacks() requires with_stack=True")
        self._events.export_stacks(path, metric)

    @property
    def profiler(self):
        """The legacy (autograd.profiler) view of the results, as PyTorch exposes it."""
        return self

    @property
    def function_events(self):
        return self._events


def _to_events(rec, prof):
    """Raw recorder events -> FunctionEvents with parents, children and microsecond times."""
    t0 = rec.start_ns
    by_raw = {}
    out = []
    for raw in rec.events:
        end = raw.end if raw.end else rec.stop_ns  # still open at stop: close it there
        ev = FunctionEvent(raw.id, raw.name, raw.tid, (raw.start - t0) / 1e3, (end - t0) / 1e3,
                           category=raw.cat, input_shapes=raw.shapes, input_types=raw.types,
                           input_strides=raw.strides, concrete_inputs=raw.concrete,
                           stack=raw.stack, cpu_memory_usage=raw.mem,
                           self_cpu_memory_usage=raw.self_mem, flops=raw.flops)
        by_raw[id(raw)] = ev
        out.append(ev)
    for raw in rec.events:
        if raw.parent is not None:
            child, parent = by_raw[id(raw)], by_raw.get(id(raw.parent))
            if parent is not None:
                child.cpu_parent = parent
                parent.cpu_children.append(child)
    trace_id = (prof.custom_trace_id_callback() if prof.custom_trace_id_callback
                else uuid.uuid4().hex.upper())
    use_device = None
    if rec.kernel_timer is not None:
        use_device = "cuda"
        for ev in out:
            ev.use_device = use_device
        next_id = len(rec.events)
        for name, device, stream, start, end, parent in rec.kernel_timer.kernels:
            k = FunctionEvent(next_id, name, stream, (start - t0) / 1e3, (end - t0) / 1e3,
                              category="kernel", device_type="CUDA", device_index=device,
                              use_device=use_device)
            next_id += 1
            out.append(k)
            if parent is not None and id(parent) in by_raw:
                by_raw[id(parent)].kernels.append(k)
    memory = [((ns - t0) / 1e3, nbytes, tid, total, addr)
              for ns, nbytes, tid, total, addr in rec.memory_events]
    return EventList(out, profile_memory=prof.profile_memory, with_flops=prof.with_flops,
                     use_device=use_device,
                     trace_meta={"baseTimeNanoseconds": rec.start_wall_ns, "trace_id": trace_id,
                                 "record_shapes": prof.record_shapes, "memory": memory,
                                 "traceName": ""})
