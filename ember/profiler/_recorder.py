"""The recorder: what turns operator calls, user ranges and allocations into profiler events.

One :class:`Recorder` exists per running profile. While it is active it is

* a dispatcher observer (``ember._dispatch.dispatcher.add_observer``): every operator call that
  enters the dispatcher ("call", as PyTorch's RecordFunction fires once per op at dispatcher
  entry; redispatches inside one op are not separate events) opens an event, closed when the
  call returns;
* the target of :class:`record_function` ranges (``user_annotation`` events);
* with ``profile_memory``, an allocation observer of ``ember._core.storage``: each new storage's
  bytes are charged to the innermost open event of the allocating thread, and its free (a
  ``weakref.finalize``) to the innermost open event when it happens;
* the wrapper of the autograd engine's per-node function, so each backward node shows up as an
  ``autograd::engine::evaluate_function: <Node>`` range.

With ``ProfilerActivity.CUDA`` it is also the CUDA kernels' timer (:class:`KernelTimer`, set as
``ember._kernels.cuda.arrays.kernel_timer``): every kernel launch — a device kernel, a host-staged
op, a memcpy — is bracketed by two timing events on its stream and charged to the op open on the
launching thread.

Events nest per thread: each thread keeps a stack of open events; an event's parent is the one
below it. Times are ``time.perf_counter_ns`` readings, converted to microseconds at the end.
With no profile running none of this is installed: the dispatcher's cached kernels are the plain
kernels, so an idle profiler costs nothing per op.
"""
import itertools
import threading
import time
import traceback
import weakref

from .._core import storage as _storage
from .._dispatch import dispatcher as _d

# The recorder that record_function and the engine wrapper report to (None when idle).
_active = [None]
_lock = threading.Lock()

# Scalar type names as PyTorch's profiler prints them ("Input type").
_TYPE_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half",
               "bfloat16": "c10::BFloat16", "int64": "long int", "int32": "int",
               "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
               "bool": "bool", "complex64": "c10::complex<float>",
               "complex128": "c10::complex<double>"}


class RawEvent:
    """One recorded range, before aggregation."""

    __slots__ = ("name", "cat", "tid", "start", "end", "parent", "children", "shapes", "types",
                 "strides", "concrete", "stack", "mem", "self_mem", "flops", "id", "fwd_seq")

    def __init__(self, name, cat, tid, parent):
        self.name, self.cat, self.tid, self.parent = name, cat, tid, parent
        self.start = self.end = 0
        self.children = []
        self.shapes = self.types = self.strides = self.concrete = None
        self.stack = None
        self.mem = self.self_mem = 0
        self.flops = 0
        self.id = 0


def _describe_inputs(args):
    """PyTorch's Input Dims / Input type / Input Strides / Concrete Inputs for one call."""
    shapes, types, strides, concrete = [], [], [], []
    for a in args:
        if hasattr(a, "_keyset"):
            shapes.append(list(a._size))
            types.append(_TYPE_NAMES.get(str(a._dtype).rpartition(".")[2], str(a._dtype)))
            strides.append(list(a._stride))
            concrete.append("")
        elif isinstance(a, (list, tuple)) and a and all(hasattr(t, "_keyset") for t in a):
            shapes.append([list(t._size) for t in a])
            types.append("TensorList")
            strides.append([list(t._stride) for t in a])
            concrete.append("")
        elif isinstance(a, (list, tuple)):
            shapes.append([])
            types.append("ScalarList")
            strides.append([])
            concrete.append(str(list(a)))
        elif a is None:
            shapes.append([])
            types.append("")
            strides.append([])
            concrete.append("")
        else:
            shapes.append([])
            types.append("Scalar")
            strides.append([])
            concrete.append(str(a))
    return shapes, types, strides, concrete


def _prod(xs):
    r = 1
    for x in xs:
        r *= x
    return r


# FLOP formulas by op name, from input shapes (PyTorch's computeFlops covers the same ops).
_FLOPS = {
    "aten::mm": lambda s: 2 * s[0][0] * s[0][1] * s[1][1],
    "aten::addmm": lambda s: 2 * s[1][0] * s[1][1] * s[2][1],
    "aten::bmm": lambda s: 2 * s[0][0] * s[0][1] * s[0][2] * s[1][2],
    "aten::baddbmm": lambda s: 2 * s[1][0] * s[1][1] * s[1][2] * s[2][2],
    "aten::mul": lambda s: _prod(s[0]),
    "aten::add": lambda s: _prod(s[0]),
}


def _user_stack():
    """The Python stack of the caller, innermost first, without ember's own frames."""
    frames = [f for f in traceback.extract_stack()[:-3]
              if "/ember/" not in f.filename.replace("\\", "/")]
    return [f"{f.filename}({f.lineno}): {f.name}" for f in reversed(frames)]


class Recorder:
    """Collects events for one profile (while :meth:`start` … :meth:`stop`)."""

    def __init__(self, record_shapes=False, profile_memory=False, with_stack=False,
                 with_flops=False, with_cuda=False):
        self.kernel_timer = KernelTimer(self) if with_cuda else None
        self.record_shapes = record_shapes or with_flops
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_flops = with_flops
        self.events = []  # in start order
        self.memory_events = []  # (ns, bytes, tid, total_allocated, addr)
        self._tls = threading.local()
        self._total_allocated = 0
        self._ids = itertools.count()
        self._names = {}  # OperatorEntry -> event name ("aten::add")
        self.start_ns = self.stop_ns = 0
        self.start_wall_ns = 0

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self):
        with _lock:
            if _active[0] is not None:
                raise RuntimeError("Profiler is already enabled on this thread")
            _active[0] = self
        self.start_wall_ns = time.time_ns()
        self.start_ns = time.perf_counter_ns()
        _d.add_observer(self)
        if self.profile_memory:
            _storage._alloc_observers.append(self._on_alloc)
        if self.kernel_timer is not None:
            from .._kernels.cuda import arrays
            arrays.kernel_timer[0] = self.kernel_timer
        _install_engine_wrapper()

    def stop(self):
        self.stop_ns = time.perf_counter_ns()
        if self.kernel_timer is not None:
            from .._kernels.cuda import arrays
            if arrays.kernel_timer[0] is self.kernel_timer:
                arrays.kernel_timer[0] = None
            self.kernel_timer.finish()
        _uninstall_engine_wrapper()
        if self.profile_memory and self._on_alloc in _storage._alloc_observers:
            _storage._alloc_observers.remove(self._on_alloc)
        _d.remove_observer(self)
        with _lock:
            if _active[0] is self:
                _active[0] = None

    # -- ranges ---------------------------------------------------------------------------------
    def _stack(self):
        tls = self._tls
        st = getattr(tls, "stack", None)
        if st is None:
            st = tls.stack = []
            tls.tid = threading.get_native_id()
        return st

    def open(self, name, cat, args=None):
        st = self._stack()
        parent = st[-1] if st else None
        ev = RawEvent(name, cat, self._tls.tid, parent)
        if parent is not None:
            parent.children.append(ev)
        if args is not None and self.record_shapes:
            ev.shapes, ev.types, ev.strides, ev.concrete = _describe_inputs(args)
            if self.with_flops:
                f = _FLOPS.get(name)
                if f is not None:
                    try:
                        ev.flops = f(ev.shapes)
                    except (IndexError, TypeError):  # an overload with other arguments
                        ev.flops = 0
        if self.with_stack:
            ev.stack = _user_stack()
        ev.id = next(self._ids)  # count() and list.append are atomic under the GIL
        self.events.append(ev)
        st.append(ev)
        ev.start = time.perf_counter_ns()
        return ev

    def close(self, ev):
        ev.end = time.perf_counter_ns()
        st = self._tls.stack
        # Ranges close innermost first; a range left open by an exception is closed with it.
        while st:
            top = st.pop()
            if top is ev:
                break
            top.end = ev.end

    # -- dispatcher observer protocol -----------------------------------------------------------
    calls_only = True  # operator calls, not a kernel's redispatches below itself

    def enter(self, entry, key, label, args):
        name = self._names.get(entry)
        if name is None:
            name = self._names[entry] = f"{entry.namespace}::{entry.schema.base_name}"
        return self.open(name, "cpu_op", args)

    def exit(self, token):
        if token is not None:
            self.close(token)

    # -- memory ---------------------------------------------------------------------------------
    def _on_alloc(self, storage):
        if storage.device.type == "meta":
            return
        nbytes = storage._nbytes
        self._charge(nbytes, storage.data_ptr())
        weakref.finalize(storage, self._on_free, nbytes, storage.data_ptr())

    def _on_free(self, nbytes, addr):
        if _active[0] is self:
            self._charge(-nbytes, addr)

    def _charge(self, nbytes, addr):
        st = self._stack()
        with _lock:
            self._total_allocated += nbytes
            total = self._total_allocated
        self.memory_events.append((time.perf_counter_ns(), nbytes, threading.get_native_id(),
                                   total, addr))
        if st:
            st[-1].self_mem += nbytes
            for ev in st:
                ev.mem += nbytes


# ---------------------------------------------------------------------------------------------
# CUDA kernels.

class KernelTimer:
    """Times the CUDA kernels launched while a profile records CUDA activity.

    Each kernel gets a timing event recorded on its stream before and after it; the first kernel
    on a device also records a reference event, read against the host clock at that moment, which
    puts device times on the profile's timeline. :meth:`finish` waits for the devices and turns
    the events into ``kernels``: ``(name, device, stream, start_ns, end_ns, launching event)``.
    """

    def __init__(self, recorder):
        self.recorder = recorder
        self.pending = []
        self.refs = {}  # device -> (runtime, reference event, host perf_counter_ns at it)
        self.kernels = []

    def begin(self, rt, device, stream, name=None):
        if device not in self.refs:
            ref = rt.event_create(device, enable_timing=True)
            rt.event_record(ref, stream)
            self.refs[device] = (rt, ref, time.perf_counter_ns())
        start = rt.event_create(device, enable_timing=True)
        rt.event_record(start, stream)
        st = self.recorder._stack()
        return (rt, device, stream, name, start, st[-1] if st else None)

    def end(self, token):
        rt, device, stream, name, start, parent = token
        end = rt.event_create(device, enable_timing=True)
        rt.event_record(end, stream)
        if name is None:  # a device kernel: named after the op that launched it
            name = "ember::cuda::" + (parent.name.rpartition("::")[2] if parent else "kernel")
        self.pending.append((name, device, stream, start, end, parent))

    def finish(self):
        for rt, _, _ in self.refs.values():
            for device in self.refs:
                rt.device_synchronize(device)
            break
        for name, device, stream, start, end, parent in self.pending:
            rt, ref, host_ns = self.refs[device]
            t0 = host_ns + int(rt.event_elapsed_time(ref, start) * 1e6)
            t1 = t0 + int(rt.event_elapsed_time(start, end) * 1e6)
            self.kernels.append((name, device, stream, t0, t1, parent))
            rt.event_destroy(start)
            rt.event_destroy(end)
        for rt, ref, _ in self.refs.values():
            rt.event_destroy(ref)
        self.pending, self.refs = [], {}


# ---------------------------------------------------------------------------------------------
# record_function: user ranges.

class record_function:
    """A named range in the profile (``user_annotation``); a context manager or a decorator.
    Costs one check when no profiler is running."""

    def __init__(self, name, args=None):
        self.name = name
        self.args = args
        self._ev = None
        self._rec = None

    def __enter__(self):
        rec = _active[0]
        if rec is not None:
            self._rec = rec
            self._ev = rec.open(self.name, "user_annotation")
        return self

    def __exit__(self, *exc):
        if self._ev is not None:
            self._rec.close(self._ev)
            self._ev = self._rec = None
        return False

    def __call__(self, func):
        import functools

        @functools.wraps(func)
        def wrapped(*args, **kwargs):
            with record_function(self.name, self.args):
                return func(*args, **kwargs)
        return wrapped


# ---------------------------------------------------------------------------------------------
# Backward nodes: while a profile runs, an observer on the autograd engine opens PyTorch's
# ``autograd::engine::evaluate_function: <node name>`` range around each node it runs.

class _EngineObserver:
    def enter(self, node):
        rec = _active[0]
        return None if rec is None else (rec, rec.open(
            f"autograd::engine::evaluate_function: {node.name()}", "cpu_op"))

    def exit(self, token):
        if token is not None:
            token[0].close(token[1])


_engine_observer = _EngineObserver()


def _install_engine_wrapper():
    from ..autograd import engine
    if _engine_observer not in engine.node_observers:
        engine.node_observers.append(_engine_observer)


def _uninstall_engine_wrapper():
    from ..autograd import engine
    if _engine_observer in engine.node_observers:
        engine.node_observers.remove(_engine_observer)
