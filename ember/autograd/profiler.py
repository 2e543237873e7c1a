"""``ember.autograd.profiler``: the legacy profiler API (PyTorch's ``torch.autograd.profiler``).

``profile(use_cuda=..., record_shapes=..., profile_memory=..., with_stack=...)`` is the
``ember.profiler.profile`` recorder under its older constructor; ``record_function`` and the
event classes (``ember.autograd.profiler_util``) are the same objects as in :mod:`ember.profiler`.
"""
from ..profiler import profiler as _profiler
from ..profiler._recorder import record_function  # noqa: F401
from .profiler_util import EventList, FunctionEvent, FunctionEventAvg, MemRecordsAcc  # noqa: F401

__all__ = ["profile", "record_function", "emit_nvtx", "EventList", "FunctionEvent",
           "FunctionEventAvg", "MemRecordsAcc"]


class profile(_profiler.profile):
    """``torch.autograd.profiler.profile``: records between ``__enter__`` and ``__exit__``;
    ``enabled=False`` records nothing. Results: ``function_events``, ``key_averages()``,
    ``table()``, ``export_chrome_trace()``, ``self_cpu_time_total``."""

    def __init__(self, enabled=True, *, use_cuda=False, use_device=None, record_shapes=False,
                 with_flops=False, profile_memory=False, with_stack=False, with_modules=False,
                 use_kineto=False, use_cpu=True, experimental_config=None, acc_events=False,
                 custom_trace_id_callback=None):
        self.enabled = enabled
        super().__init__(activities=[_profiler.ProfilerActivity.CPU], use_cuda=use_cuda,
                         record_shapes=record_shapes, with_flops=with_flops,
                         profile_memory=profile_memory, with_stack=with_stack,
                         with_modules=with_modules, acc_events=acc_events,
                         custom_trace_id_callback=custom_trace_id_callback)

    def __enter__(self):
        if self.enabled:
            self.start()
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        if self.enabled:
            self.stop()
        return False

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75,
              max_name_column_width=55, max_shapes_column_width=80, header=None,
              top_level_events_only=False):
        return self._events.table(sort_by=sort_by, row_limit=row_limit,
                                  max_src_column_width=max_src_column_width,
                                  max_name_column_width=max_name_column_width,
                                  max_shapes_column_width=max_shapes_column_width, header=header,
                                  top_level_events_only=top_level_events_only)

    def total_average(self):
        return self._events.total_average()

    @property
    def self_cpu_time_total(self):
        return self._events.self_cpu_time_total

    def __str__(self):
        return self.table()


class emit_nvtx:
    """``torch.autograd.profiler.emit_nvtx``: an NVTX range around every autograd operation,
    for Nsight. ember has no NVTX library (``ember.cuda.nvtx`` ranges are profiler annotations,
    and ``ember.profiler.profile`` already records every operator), so entering an enabled one
    raises; ``enabled=False`` does nothing, as in PyTorch."""

    def __init__(self, enabled=True, record_shapes=False):
        self.enabled = enabled
        self.record_shapes = record_shapes

    def __enter__(self):
        if not self.enabled:
            return
        raise RuntimeError("emit_nvtx: ember has no NVTX library to emit ranges to; "
                           "ember.profiler.profile records every operator instead")

    def __exit__(self, exc_type, exc_val, exc_tb):
        return False
