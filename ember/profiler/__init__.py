"""``ember.profiler``: PyTorch's profiler, as a dispatcher observer.

* :mod:`._recorder`: the observer that records operator calls, ``record_function`` ranges,
  backward nodes and allocations, per thread and nested;
* :mod:`.profiler`: ``profile``, ``schedule``, ``ProfilerActivity``, ``tensorboard_trace_handler``;
* :mod:`.events`: the results: ``key_averages().table()``, Chrome traces, folded stacks.
"""
from ._recorder import record_function  # noqa: F401
from .events import EventList, FunctionEvent, FunctionEventAvg  # noqa: F401
from .profiler import (ProfilerAction, ProfilerActivity, profile, schedule,  # noqa: F401
                       supported_activities, tensorboard_trace_handler)

__all__ = ["profile", "schedule", "supported_activities", "tensorboard_trace_handler",
           "ProfilerAction", "ProfilerActivity", "record_function", "kineto_available"]


def kineto_available():
    """True: what a Kineto build of PyTorch offers (``profile`` with activities, schedules and
    Chrome traces) is this package's profiler, so libraries that check take that path."""
    return True


# torch.autograd.profiler is importable as an attribute once torch is imported; same here.
from ..autograd import profiler as _autograd_profiler  # noqa: E402,F401
