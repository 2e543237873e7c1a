"""``CheckpointException``: a save or load step failed on one or more ranks (PyTorch's
``torch.distributed.checkpoint.api``). Every rank raises it, naming each failed rank's error."""
import traceback as tb

__all__ = ["CheckpointException"]


def _wrap_exception(exc):
    """An exception with its traceback summary, picklable so it can travel to the coordinator."""
    return (exc, tb.extract_tb(exc.__traceback__))


def _is_wrapped_exception(obj):
    return (isinstance(obj, tuple) and len(obj) == 2 and isinstance(obj[0], BaseException)
            and isinstance(obj[1], tb.StackSummary))


class CheckpointException(BaseException):
    """Exception raised if failure was detected as part of a checkpoint load or save."""

    def __init__(self, msg, failures):
        super().__init__(msg, failures)
        self._failures = failures

    @property
    def failures(self):
        """Return a dictionary mapping node ranks to their associated exceptions in case of
        failure."""
        return self._failures

    def __str__(self):
        out = f"CheckpointException ranks:{self._failures.keys()}\n"
        for rank, (exc, trace) in self._failures.items():
            out += f"Traceback (most recent call last): (RANK {rank})\n"
            if trace is not None:
                out += "".join(tb.format_list(trace))
            out += "".join(tb.format_exception_only(type(exc), value=exc))
        return out
