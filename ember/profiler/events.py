"""The profiler's event classes, which live in ``ember.autograd.profiler_util`` as PyTorch's
live in ``torch.autograd.profiler_util``: re-exported here for ember's profiler modules."""
from ..autograd.profiler_util import (EventList, FunctionEvent, FunctionEventAvg,  # noqa: F401
                                      MemRecordsAcc)

__all__ = ["FunctionEvent", "FunctionEventAvg", "EventList", "MemRecordsAcc"]
