"""``ember.cuda.nvtx``: NVTX ranges and marks, as PyTorch's ``torch.cuda.nvtx``.

There is no NVTX library under ember (Nsight would read it from the driver's tools interface), so
the annotations go where ember's own tools can see them: each range is a ``user_annotation`` range
of ``ember.profiler`` while a profile runs, and a mark an instant one; without a profiler they
cost one check. ``range_push`` returns the nesting depth of the new range, ``range_pop`` the depth
it leaves, as NVTX does.
"""
import contextlib
import itertools

from ..profiler._recorder import record_function

__all__ = ["range_push", "range_pop", "range_start", "range_end", "mark", "range"]

_stack = []  # the pushed ranges, innermost last
_started = {}  # range_start id -> open range
_ids = itertools.count(1)


def range_push(msg):
    """Open a nested range named ``msg``; returns its zero-based depth."""
    r = record_function(msg)
    r.__enter__()
    _stack.append(r)
    return len(_stack) - 1


def range_pop():
    """Close the innermost pushed range; returns its depth, or -1 when none is open."""
    if not _stack:
        return -1
    _stack.pop().__exit__(None, None, None)
    return len(_stack)


def range_start(msg):
    """Open a range that may end out of order (or on another thread); returns its id."""
    r = record_function(msg)
    r.__enter__()
    rid = next(_ids)
    _started[rid] = r
    return rid


def range_end(range_id):
    r = _started.pop(range_id, None)
    if r is not None:
        r.__exit__(None, None, None)


def mark(msg):
    """An instant event named ``msg``."""
    with record_function(msg):
        pass


@contextlib.contextmanager
def range(msg, *args, **kwargs):
    """``with ember.cuda.nvtx.range("step {}", i):`` — a range named ``msg.format(...)``."""
    range_push(msg.format(*args, **kwargs))
    try:
        yield
    finally:
        range_pop()
