"""``torch._dynamo.utils``: of PyTorch's grab-bag of Dynamo helpers, the ones libraries and
``explain`` call: whether a device compiles, and the compile-time metrics (``dynamo_timed``
phases, reported by ``compile_times``)."""
import contextlib
import time

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
