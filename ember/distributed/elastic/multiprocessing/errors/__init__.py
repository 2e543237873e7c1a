"""TorchElastic's inter-process error propagation. A rank's entry point decorated with
``@record`` writes its uncaught exception (message, traceback, timestamp) as JSON to the file
``TORCHELASTIC_ERROR_FILE`` names (``python -m ember.distributed.run`` gives each rank one); the
launcher reads the files of the ranks that failed into ``ProcessFailure``s and reports a
``ChildFailedError`` naming the first failure, with its traceback."""
import json
import logging
import os
import signal
import socket
import time
from dataclasses import dataclass, field
from datetime import datetime
from functools import wraps
from string import Template

from .error_handler import ErrorHandler
from .handlers import get_error_handler

__all__ = ["ProcessFailure", "ChildFailedError", "record", "ErrorHandler", "get_error_handler"]

logger = logging.getLogger(__name__)

_EMPTY_ERROR_DATA = {"message": "<NONE>"}
_NOT_AVAILABLE = "<N/A>"


@dataclass
class ProcessFailure:
    """A failed process: its exit code and what its error file says (message and timestamp;
    without a file, a message made from the exit code and the time now)."""

    local_rank: int
    pid: int
    exitcode: int
    error_file: str
    error_file_data: dict = field(init=False)
    message: str = field(init=False)
    timestamp: int = field(init=False)

    def __post_init__(self):
        self.error_file_data = _EMPTY_ERROR_DATA
        if os.path.isfile(self.error_file):
            try:
                with open(self.error_file) as fp:
                    self.error_file_data = json.load(fp)
                    self.message, self.timestamp = self._get_error_data(self.error_file_data)
            except Exception:
                logger.exception("Failed to parse reply file: %s", self.error_file)
                raise
        else:
            self._set_no_reply_file()
        if not self.message:
            if self.exitcode < 0:
                self.message = (f"Signal {-self.exitcode} ({self.signal_name()}) received by "
                                f"PID {self.pid}")
            else:
                self.error_file_data["errorTraits"] = {"category": "system_terminated_error",
                                                       "retryability": "False"}
                self.message = ("To enable traceback see: "
                                "https://pytorch.org/docs/stable/elastic/errors.html")

    def _get_error_data(self, error_file_data):
        message = error_file_data["message"]
        if isinstance(message, str):
            timestamp = int(error_file_data.get("timestamp", 0))
        else:
            timestamp = int(message["extraInfo"]["timestamp"])
        return message, timestamp

    def _set_no_reply_file(self):
        self.error_file = _NOT_AVAILABLE
        # a copy: the "errorTraits" written below must not land in the shared default
        self.error_file_data = dict(_EMPTY_ERROR_DATA)
        self.message = ""
        self.timestamp = int(time.time())

    def signal_name(self):
        if self.exitcode < 0:
            try:
                return signal.Signals(-self.exitcode).name
            except Exception:
                return _NOT_AVAILABLE
        return _NOT_AVAILABLE

    def timestamp_isoformat(self):
        """The timestamp as YYYY-MM-DD_HH:MM:SS."""
        return datetime.fromtimestamp(self.timestamp).isoformat(sep="_")


_FAILURE_FORMAT_TEMPLATE = """[${idx}]:
  time      : ${time}
  host      : ${hostname}
  rank      : ${rank} (local_rank: ${local_rank})
  exitcode  : ${exitcode} (pid: ${pid}) ${signal_name}
  error_file: ${error_file}
  traceback : ${message}"""

# the blank lines before and after are PyTorch's
_MSG_FORMAT_TEMPLATE = """
${boarder}
${title}
${section}
Failures:
${other_failures}
${section}
Root Cause (first observed failure):
${root_failure}
${boarder}"""


class ChildFailedError(Exception):
    """The failure of child processes (``failures``: global rank -> ``ProcessFailure``) of the
    job ``name``; its message names them, the earliest as the root cause with its traceback.
    Raised from a ``@record`` function, it copies the root cause's error file into this
    process's own."""

    def __init__(self, name, failures):
        self.name = name
        self.failures = failures
        if not self.failures:
            raise AssertionError
        super().__init__(self.format_msg())

    def get_first_failure(self):
        rank = min(self.failures.keys(), key=lambda r: self.failures[r].timestamp)
        return rank, self.failures[rank]

    def format_msg(self, boarder_delim="=", section_delim="-"):
        title = f"{self.name} FAILED"
        root_rank, _ = self.get_first_failure()
        root_failure_fmt = ""
        other_failures_fmt = []
        width = len(title)
        for idx, (rank, failure) in enumerate(self.failures.items()):
            fmt, w = self._format_failure(idx, rank, failure)
            width = max(width, w)
            if rank == root_rank:
                root_failure_fmt = fmt
            else:
                other_failures_fmt.append(fmt)
        width = min(width, 60)
        return Template(_MSG_FORMAT_TEMPLATE).substitute(
            boarder=boarder_delim * width, title=title, section=section_delim * width,
            root_failure=root_failure_fmt,
            other_failures="\n".join(other_failures_fmt or ["  <NO_OTHER_FAILURES>"]))

    def _format_failure(self, idx, rank, failure):
        msg = failure.message
        if isinstance(failure.message, dict):
            msg = (failure.message.get("extraInfo", {})
                   .get("py_callstack", failure.message.get("message", "<N/A>"))
                   .replace("\n", "\n  "))
        signal_name = failure.signal_name()
        signal_name_str = f" ({signal_name})" if signal_name != _NOT_AVAILABLE else ""
        fmt = Template(_FAILURE_FORMAT_TEMPLATE).substitute(
            idx=idx, time=failure.timestamp_isoformat(), hostname=socket.getfqdn(), rank=rank,
            local_rank=failure.local_rank, exitcode=failure.exitcode, pid=failure.pid,
            signal_name=signal_name_str, error_file=failure.error_file, message=msg)
        width = max(len(line) for line in fmt.split("\n"))
        return fmt, width


def record(fn, error_handler=None):
    """Decorate a process's entry point: an uncaught exception is written to the error file
    (``error_handler.record_exception``) and re-raised; a ``ChildFailedError`` copies its root
    cause's error file instead; ``SystemExit(0)`` returns None."""
    if not error_handler:
        error_handler = get_error_handler()

    def wrap(f):
        @wraps(f)
        def wrapper(*args, **kwargs):
            error_handler.initialize()
            try:
                return f(*args, **kwargs)
            except SystemExit as se:
                if se.code == 0:
                    return None
                raise
            except ChildFailedError as e:
                rank, failure = e.get_first_failure()
                if failure.error_file != _NOT_AVAILABLE:
                    error_handler.dump_error_file(failure.error_file, failure.exitcode)
                else:
                    logger.info("local_rank %s FAILED with no error file. Decorate your "
                                "entrypoint fn with @record for traceback info. See: "
                                "https://pytorch.org/docs/stable/elastic/errors.html", rank)
                raise
            except Exception as e:
                error_handler.record_exception(e)
                raise
        return wrapper
    return wrap(fn)
