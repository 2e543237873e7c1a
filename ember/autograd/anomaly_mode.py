"""Anomaly detection: ``detect_anomaly`` / ``set_detect_anomaly``.

While it is on, every recorded node keeps the forward stack trace of the op that created it; if
that node's backward fails, the trace is printed in a warning ("Error detected in XBackward0.
Traceback of forward call that caused the error: ..."); with ``check_nan`` a backward that
produces NaN raises PyTorch's error.
"""
import threading
import traceback
import warnings

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled", "is_anomaly_check_nan_enabled"]


class _AnomalyState(threading.local):
    def __init__(self):  # per-thread values: the C recorder reads them from the thread's dict
        self.enabled = False
        self.check_nan = True


_state = _AnomalyState()


def is_anomaly_enabled():
    return _state.enabled


def is_anomaly_check_nan_enabled():
    return _state.check_nan


def set_anomaly_enabled(enabled, check_nan=True):
    """Turn anomaly detection on or off for this thread (``torch.set_anomaly_enabled``)."""
    _state.enabled = bool(enabled)
    _state.check_nan = bool(check_nan)


class detect_anomaly:
    """Context manager (and decorator) that turns anomaly detection on."""

    def __init__(self, check_nan=True):
        self.prev = _state.enabled
        self.check_nan = check_nan
        self.prev_check_nan = _state.check_nan
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime "
                      "and should only be enabled for debugging.", stacklevel=2)

    def __enter__(self):
        _state.enabled = True
        _state.check_nan = self.check_nan

    def __exit__(self, *exc):
        _state.enabled = self.prev
        _state.check_nan = self.prev_check_nan
        return False

    def __call__(self, func):
        def wrapper(*args, **kwargs):
            with self.__class__(self.check_nan):
                return func(*args, **kwargs)
        return wrapper


class set_detect_anomaly:
    """Set anomaly detection on or off (immediately; restores on exit when used with ``with``)."""

    def __init__(self, mode, check_nan=True):
        self.prev = _state.enabled
        self.prev_check_nan = _state.check_nan
        _state.enabled = bool(mode)
        _state.check_nan = check_nan

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        _state.enabled = self.prev
        _state.check_nan = self.prev_check_nan
        return False


def record_trace(node):
    """Called when a node is created in anomaly mode: keep the forward stack."""
    node._anomaly_trace = "".join(traceback.format_stack()[:-3])


def run_with_anomaly(node, grads):
    try:
        return node.apply(grads)
    except Exception:
        if node._anomaly_trace:
            warnings.warn(f"Error detected in {node.name()}. Traceback of forward call that "
                          f"caused the error:\n{node._anomaly_trace}", stacklevel=2)
        raise


def check_nan(node, outputs):
    for i, g in enumerate(outputs):
        if g is None:
            continue
        if bool(g.isnan().any()):
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th output.")
