"""``ember.monitor``, as ``torch.monitor``: events (:class:`Event`, :func:`log_event`) sent to
registered handlers, and :class:`Stat`, a windowed statistic that logs its aggregations as a
``torch.monitor.Stat`` event when each window closes. PyTorch implements these in C++
(``c10/monitor``); this is the same logic in Python."""
import datetime
import enum
import threading
import time

__all__ = ["Aggregation", "Event", "EventHandlerHandle", "Stat", "TensorboardEventHandler",
           "data_value_t", "log_event", "register_event_handler", "unregister_event_handler"]

STAT_EVENT = "torch.monitor.Stat"


class Aggregation(enum.Enum):
    """The statistics a :class:`Stat` computes over a window. ``VALUE`` is PyTorch's
    ``Aggregation::NONE`` under that name: it adds no statistic."""

    VALUE = 0
    MEAN = 2
    COUNT = 3
    SUM = 4
    MAX = 5
    MIN = 6

    def __int__(self):
        return self.value

    def __index__(self):
        return self.value


_AGGREGATION_NAMES = {Aggregation.MEAN: "mean", Aggregation.COUNT: "count",
                      Aggregation.SUM: "sum", Aggregation.MAX: "max", Aggregation.MIN: "min"}


class _DataValueMeta(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, (str, float, int, bool))


class data_value_t(metaclass=_DataValueMeta):  # noqa: N801  (PyTorch's name)
    """data_value_t is one of ``str``, ``float``, ``int``, ``bool``."""

    def __init__(self):
        raise TypeError("torch._C._monitor.data_value_t: No constructor defined!")


def _incompatible(function, signature, *args):
    return TypeError(f"{function}: incompatible function arguments. The following argument "
                     f"types are supported:\n    1. {signature}\n\nInvoked with: "
                     + ", ".join(map(repr, args)))


_EVENT_SIGNATURE = ("torch._C._monitor.Event(name: str, timestamp: datetime.datetime, data: "
                    "collections.abc.Mapping[str, data_value_t])")


def _data_value(value):
    # as PyTorch's variant<string, double, int64_t, bool> takes Python values: a bool is
    # read as a double (True -> 1.0)
    if isinstance(value, str):
        return value
    if isinstance(value, (bool, float)):
        return float(value)
    if isinstance(value, int):
        return value
    raise TypeError


class Event:
    """A named, timestamped set of values (``data``: str keys, :data:`data_value_t`
    values) logged to the event handlers. Events of one kind share a name."""

    def __init__(self, name, timestamp, data):
        try:
            if not isinstance(name, str) or not isinstance(timestamp, datetime.datetime):
                raise TypeError
            converted = {}
            for key, value in dict(data).items():
                if not isinstance(key, str):
                    raise TypeError
                converted[key] = _data_value(value)
        except (TypeError, ValueError):
            raise TypeError(
                "__init__(): incompatible constructor arguments. The following argument types "
                f"are supported:\n    1. {_EVENT_SIGNATURE}\n\nInvoked with: "
                + ", ".join(map(repr, (name, timestamp, data)))) from None
        self.name = name
        self.timestamp = timestamp
        self.data = converted

    @property
    def timestamp(self):
        """When the event happened (naive local time, as the system clock PyTorch reads)."""
        return self._timestamp

    @timestamp.setter
    def timestamp(self, value):
        # (an aware datetime is converted to local time: PyTorch keeps a time_point)
        self._timestamp = value.astimezone().replace(tzinfo=None) if value.tzinfo else value


class EventHandlerHandle:
    """What :func:`register_event_handler` returns, for :func:`unregister_event_handler`."""

    def __init__(self, callback):
        self._callback = callback


_handlers = []
_handlers_lock = threading.Lock()


def log_event(event):
    """Log ``event`` to every registered event handler (nothing happens when none is
    registered)."""
    if not isinstance(event, Event):
        raise _incompatible("log_event()", "(event: torch._C._monitor.Event) -> None", event)
    with _handlers_lock:
        handlers = list(_handlers)
    for handle in handlers:
        handle._callback(event)


def register_event_handler(callback):
    """Call ``callback(event)`` for every event logged from now on; returns the handle that
    unregisters it. Handlers run inside ``log_event`` and should not block."""
    if not callable(callback):
        raise _incompatible(
            "register_event_handler()",
            "(callback: collections.abc.Callable[[torch._C._monitor.Event], None]) -> "
            "torch._C._monitor.EventHandlerHandle", callback)
    handle = EventHandlerHandle(callback)
    with _handlers_lock:
        _handlers.append(handle)
    return handle


def unregister_event_handler(handler):
    """Stop sending events to the handler ``handler`` was returned for."""
    if not isinstance(handler, EventHandlerHandle):
        raise _incompatible("unregister_event_handler()",
                            "(handler: torch._C._monitor.EventHandlerHandle) -> None", handler)
    with _handlers_lock:
        if handler in _handlers:
            _handlers.remove(handler)


class _Values:
    __slots__ = ("sum", "min", "max", "count")

    def __init__(self):
        self.sum = self.min = self.max = 0.0
        self.count = 0


_INT64_MAX = 2 ** 63 - 1


class Stat:
    """A statistic over fixed windows of ``window_size`` (millisecond precision): values
    given to :meth:`add` are aggregated, and when a window closes (at the first ``add`` after
    it, or once ``max_samples`` values arrived: later ones in that window are dropped) the
    aggregations are logged as a ``torch.monitor.Stat`` event with keys ``<name>.<agg>``.
    :meth:`get` returns the last logged window's values; a Stat that goes away logs what it
    holds."""

    def __init__(self, name, aggregations, window_size, max_samples=_INT64_MAX):
        if not isinstance(name, str) or not isinstance(window_size, datetime.timedelta) or \
                isinstance(max_samples, bool) or not isinstance(max_samples, int) or \
                not all(isinstance(a, Aggregation) for a in aggregations):
            raise TypeError(
                "__init__(): incompatible constructor arguments. The following argument types "
                "are supported:\n    1. torch._C._monitor.Stat(name: str, aggregations: "
                "collections.abc.Sequence[torch._C._monitor.Aggregation], window_size: "
                "datetime.timedelta, max_samples: typing.SupportsInt | typing.SupportsIndex = "
                "9223372036854775807)\n\nInvoked with: "
                + ", ".join(map(repr, (name, aggregations, window_size, max_samples))))
        self._name = name
        self._aggregations = frozenset(aggregations)
        self._window_ms = window_size // datetime.timedelta(milliseconds=1)
        self._max_samples = max_samples
        self._lock = threading.Lock()
        self._current = _Values()
        self._prev = _Values()
        self._window_id = 0
        self._last_logged_window_id = 0

    @property
    def name(self):
        """The name the stat was created with."""
        return self._name

    @property
    def count(self):
        """The number of values in the open window (0 again once it is logged)."""
        with self._lock:
            return self._current.count

    def add(self, v):
        """Add a value to the open window's aggregations."""
        if isinstance(v, (str, bytes)) or (not hasattr(v, "__float__")
                                            and not hasattr(v, "__index__")):
            raise _incompatible(
                "add()", "(self: torch._C._monitor.Stat, v: typing.SupportsFloat | "
                "typing.SupportsIndex) -> None", self, v)
        v = float(v)
        with self._lock:
            self._maybe_log()
            if self._last_logged_window_id == self._current_window_id():
                return  # this window reached max_samples and was logged
            cur, aggs = self._current, self._aggregations
            if Aggregation.MEAN in aggs or Aggregation.SUM in aggs:
                cur.sum += v
            if Aggregation.MAX in aggs and (cur.max < v or cur.count == 0):
                cur.max = v
            if Aggregation.MIN in aggs and (cur.min > v or cur.count == 0):
                cur.min = v
            cur.count += 1
            self._maybe_log()

    def get(self):
        """The last logged window's aggregations (zeros before the first)."""
        with self._lock:
            return self._get()

    def _current_window_id(self):
        # at least 1, so that window 0 is never current (as PyTorch's steady clock windows)
        now_ms = time.monotonic_ns() // 1_000_000
        return now_ms // max(self._window_ms, 1) + 1

    def _maybe_log(self):
        window_id = self._current_window_id()
        should_log = self._window_id != window_id or self._current.count >= self._max_samples
        if should_log and self._last_logged_window_id != window_id:
            self._log()
            self._last_logged_window_id = self._window_id
            self._window_id = window_id

    def _log(self):
        self._prev, self._current = self._current, _Values()
        if self._prev.count == 0:
            return  # no event for an empty window
        data = {f"{self._name}.{_AGGREGATION_NAMES[agg]}": value
                for agg, value in self._get().items()}
        log_event(Event(STAT_EVENT, datetime.datetime.now(), data))

    def _get(self):
        prev, aggs, out = self._prev, self._aggregations, {}
        if Aggregation.MEAN in aggs:
            out[Aggregation.MEAN] = prev.sum / prev.count if prev.count else 0.0
        if Aggregation.COUNT in aggs:
            out[Aggregation.COUNT] = float(prev.count)
        if Aggregation.SUM in aggs:
            out[Aggregation.SUM] = prev.sum
        if Aggregation.MAX in aggs:
            out[Aggregation.MAX] = prev.max
        if Aggregation.MIN in aggs:
            out[Aggregation.MIN] = prev.min
        return out

    def __del__(self):
        # what the last window holds is logged when the stat goes away
        lock = getattr(self, "_lock", None)
        if lock is not None:
            with lock:
                self._log()


class _WaitCounterTracker:
    """The context a ``_WaitCounter.guard()`` times (no wait-counter backend is registered
    in ember, as in a PyTorch build without one: nothing is recorded)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None


class _WaitCounter:
    """A named duration counter."""

    def __init__(self, key):
        self.key = key

    def guard(self):
        return _WaitCounterTracker()


class TensorboardEventHandler:
    """An event handler that writes ``torch.monitor.Stat`` events to a tensorboard
    ``SummaryWriter`` as scalars (other events are ignored)."""

    def __init__(self, writer):
        self._writer = writer

    def __call__(self, event):
        if event.name == STAT_EVENT:
            for k, v in event.data.items():
                self._writer.add_scalar(k, v, walltime=event.timestamp.timestamp())
