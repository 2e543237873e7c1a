"""``torch._dynamo.utils``: of PyTorch's grab-bag of Dynamo helpers, the ones libraries and
``explain`` call: whether a device compiles, and the compile-time metrics (``dynamo_timed``
phases, reported by ``compile_times``)."""
import contextlib
import os
import sys
import time
import warnings

from .._core.device import device as _device

# phase name -> seconds of each run of it since the last reset (PyTorch's dict of this name)
compilation_time_metrics = {}


def is_compile_supported(device_type):
    """Whether ``ember.compile`` compiles graphs on ``device_type``: ember's Inductor generates
    kernels for the CPU and for CUDA devices (the simulated one included)."""
    return _device(device_type).type in ("cpu", "cuda")


@contextlib.contextmanager
def dynamo_timed(key):
    """Time the block as one run of phase ``key`` (phases listed in the order they start)."""
    runs = compilation_time_metrics.setdefault(key, [])
    start = time.perf_counter()
    try:
        yield
    finally:
        runs.append(time.perf_counter() - start)


def compile_times(repr="str", aggregate=False):  # noqa: A002  (PyTorch's name)
    """The phases' run times: a printable table (``repr="str"``) or ``(headers, values)``
    (``"csv"``); ``aggregate`` sums each phase's runs."""
    def fmt(values, item):
        return item(sum(values)) if aggregate else ", ".join(map(item, values))

    if repr == "str":
        from ..fx.graph import _tabulate
        rows = [(k, fmt(v, lambda x: f"{x:.4f}")) for k, v in compilation_time_metrics.items()]
        table = _tabulate(rows, ["Function", "Runtimes (s)"])
        return "TorchDynamo compilation metrics:\n" + "\n".join(
            line.rstrip() for line in table.splitlines())
    if repr == "csv":
        return (list(compilation_time_metrics),
                [fmt(v, lambda x: f"{x:.6f}") for v in compilation_time_metrics.values()])
    return None


_HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "")


def _machinery(frame):
    """A frame of the capture's own code (a residual, a dispatch, an entry wrapper)."""
    name = frame.f_code.co_filename
    return name.startswith(("<ember dynamo", _HERE))


def warn_from(filename, lineno, f_globals, message, category=None, stacklevel=1,
              source=None, **kwargs):
    """``warnings.warn`` called by residual code for the user's line ``filename:lineno``: the
    warning is attributed, filtered and registered as eager's call there would be; a
    ``stacklevel`` above 1 counts the user's frames above, not the capture's own."""
    if kwargs:  # (3.12's skip_file_prefixes): as called
        return warnings.warn(message, category, stacklevel + 1, source, **kwargs)
    if isinstance(message, Warning):
        category = message.__class__
    elif category is None:
        category = UserWarning
    if stacklevel > 1:
        frame, n = sys._getframe(1), stacklevel - 1
        while frame is not None:
            if not _machinery(frame):
                n -= 1
                if n == 0:
                    break
            frame = frame.f_back
        if frame is None:
            filename, lineno, f_globals = "sys", 1, sys.__dict__
        else:
            filename, lineno, f_globals = \
                frame.f_code.co_filename, frame.f_lineno, frame.f_globals
    registry = f_globals.setdefault("__warningregistry__", {})
    warnings.warn_explicit(message, category, filename, lineno,
                           f_globals.get("__name__", "<string>"), registry, f_globals, source)
