"""CUDA streams and events (``ember.cuda.Stream``, ``Event``, ``current_stream``, ``stream``).

A :class:`Stream` is a queue of device work; each thread has a current device and, per device,
a current stream (the default stream until ``ember.cuda.stream(s)`` or ``set_stream`` changes it),
as in PyTorch. Kernels and copies are launched on the current stream; the caching allocator pins
each block to the stream it was allocated on. An :class:`Event` marks a point in a stream's work:
``record`` it, then ``query``/``synchronize`` it, make another stream ``wait`` for it, or measure
``elapsed_time`` between two. The runtime (real or simulated) does the work; this module keeps
PyTorch's objects, defaults and errors.
"""
import threading

from .._core.device import device as _device

__all__ = ["Stream", "ExternalStream", "Event", "StreamContext", "current_stream",
           "default_stream", "set_stream", "stream"]


class _State(threading.local):
    """Per thread: the current device index and each device's current stream."""

    def __init__(self):
        self.device = 0
        self.streams = {}  # device index -> Stream


_state = _State()


def _rt():
    from . import _lazy_init  # the runtime starts on first use (a true cycle: cuda -> streams)
    return _lazy_init()


def _index(device, optional=True):
    """A device index from an int, a string, a device or None (the current device)."""
    from . import _get_device_index  # ember.cuda owns the device-index rules
    return _get_device_index(device, optional=optional)


class Stream:
    """A CUDA stream: ``Stream(device=None, priority=0)``; a lower priority number runs first."""

    def __new__(cls, device=None, priority=0, stream_id=None, device_index=None,
                device_type=None, stream_ptr=None):
        rt = _rt()
        self = object.__new__(cls)
        self.device_index = _index(device) if device_index is None else device_index
        if stream_ptr is not None:
            self.cuda_stream = stream_ptr
        else:
            self.cuda_stream = rt.stream_create(self.device_index, priority)
        return self

    def __init__(self, *args, **kwargs):
        pass

    @property
    def device(self):
        return _device("cuda", self.device_index)

    @property
    def device_type(self):
        return 1  # DeviceType::CUDA

    @property
    def stream_id(self):
        return self.cuda_stream

    @property
    def priority(self):
        return _rt().stream_priority(self.cuda_stream) if self.cuda_stream else 0

    @staticmethod
    def priority_range():
        return _rt().stream_priority_range()

    def query(self):
        """Whether all work submitted to the stream has completed."""
        return _rt().stream_query(self.cuda_stream)

    def synchronize(self):
        """Wait for all work submitted to the stream."""
        _rt().stream_synchronize(self.cuda_stream)

    def wait_event(self, event):
        """Make later work on this stream wait for ``event``."""
        event.wait(self)

    def wait_stream(self, stream):
        """Make later work on this stream wait for the work submitted to ``stream`` so far."""
        self.wait_event(stream.record_event())

    def record_event(self, event=None):
        if event is None:
            event = Event()
        event.record(self)
        return event

    def __cuda_stream__(self):
        """The CUDA stream protocol (version 0, raw handle): CuPy and others can wrap it."""
        return (0, self.cuda_stream)

    def __eq__(self, other):
        return isinstance(other, Stream) and self.cuda_stream == other.cuda_stream \
            and self.device_index == other.device_index

    def __hash__(self):
        return hash((self.cuda_stream, self.device_index))

    def __repr__(self):
        return (f"<torch.cuda.Stream device={self.device} "
                f"cuda_stream={self.cuda_stream:#x}>")

    def __enter__(self):
        self._ctx = StreamContext(self)
        return self._ctx.__enter__()

    def __exit__(self, *exc):
        self._ctx.__exit__(*exc)


class ExternalStream(Stream):
    """A stream created elsewhere (another library), wrapped by its raw handle."""

    def __new__(cls, stream_ptr, device=None, **kwargs):
        return super().__new__(cls, device=device, stream_ptr=stream_ptr)


def default_stream(device=None):
    """The device's default (legacy, handle 0) stream."""
    _rt()
    return Stream(device_index=_index(device), stream_ptr=0)


def current_stream(device=None):
    """This thread's current stream on ``device``."""
    _rt()
    idx = _index(device)
    s = _state.streams.get(idx)
    if s is None:
        s = _state.streams[idx] = default_stream(idx)
    return s


def current_stream_handle(device_index):
    """The runtime handle of the current stream (the hot path of kernels and the allocator)."""
    s = _state.streams.get(device_index)
    return 0 if s is None else s.cuda_stream


def set_stream(stream):
    """Make ``stream`` the current stream of its device (None does nothing)."""
    if stream is None:
        return
    _state.streams[stream.device_index] = stream


class StreamContext:
    """``with ember.cuda.stream(s):`` — ``s`` is current on its device for the block; when ``s``
    lives on another device, that device's current stream is switched and restored too."""

    def __init__(self, stream):
        self.stream = stream
        self.idx = None if stream is None else stream.device_index

    def __enter__(self):
        s = self.stream
        if s is None:
            return None
        self._saved_device = _state.device
        self._saved_src = current_stream(_state.device)
        self._saved_dst = current_stream(s.device_index)
        if s.device_index != _state.device:
            _state.device = s.device_index
        set_stream(s)
        return s

    def __exit__(self, *exc):
        if self.stream is None:
            return
        set_stream(self._saved_dst)
        set_stream(self._saved_src)
        _state.device = self._saved_device


def stream(stream):
    """The context manager that makes ``stream`` current (PyTorch's ``torch.cuda.stream``)."""
    return StreamContext(stream)


class Event:
    """A marker in a stream's work. The runtime event is created at the first ``record``."""

    def __init__(self, enable_timing=False, blocking=False, interprocess=False, external=False):
        if interprocess:
            raise NotImplementedError("ember.cuda.Event(interprocess=True): IPC event handles "
                                      "are not supported")
        self.enable_timing = enable_timing
        self.blocking = blocking
        self.interprocess = interprocess
        self._handle = None
        self._device = None

    @property
    def cuda_event(self):
        return self._handle or 0

    @property
    def device(self):
        return None if self._device is None else _device("cuda", self._device)

    def _ensure(self, device_index):
        if self._handle is None:
            self._handle = _rt().event_create(device_index, self.enable_timing, self.blocking)
            self._device = device_index
        elif device_index != self._device:
            raise RuntimeError(f"Event device {self._device} does not match recording stream's "
                               f"device {device_index}.")

    def record(self, stream=None):
        """Record the event in ``stream`` (the current stream by default)."""
        if stream is None:
            stream = current_stream()
        self._ensure(stream.device_index)
        _rt().event_record(self._handle, stream.cuda_stream)

    def wait(self, stream=None):
        """Make later work on ``stream`` (current by default) wait for this event."""
        if stream is None:
            stream = current_stream()
        if self._handle is not None:
            _rt().stream_wait_event(stream.cuda_stream, self._handle)

    def query(self):
        """Whether the work before the event has completed (True if never recorded)."""
        return self._handle is None or _rt().event_query(self._handle)

    def synchronize(self):
        if self._handle is not None:
            _rt().event_synchronize(self._handle)

    def elapsed_time(self, end_event):
        """Milliseconds between this event and ``end_event`` (both recorded, timing enabled)."""
        if self._handle is None or end_event._handle is None:
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("Both events must be created with argument 'enable_timing=True'.")
        return _rt().event_elapsed_time(self._handle, end_event._handle)

    def ipc_handle(self):
        raise NotImplementedError("ember.cuda.Event.ipc_handle: IPC events are not supported")

    def __del__(self):
        h = self._handle
        if h is not None:
            try:
                _rt().event_destroy(h)
            except Exception:  # interpreter shutdown: the runtime may be gone already
                pass

    def __repr__(self):
        return f"<torch.cuda.Event {self.cuda_event:#x}>" if self._handle else \
            "<torch.cuda.Event uninitialized>"
