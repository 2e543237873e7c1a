"""``ErrorHandler``: writes an exception (message, traceback, timestamp) as JSON to the file
``TORCHELASTIC_ERROR_FILE`` names, and copies a child's error file into this process's."""
import faulthandler
import json
import logging
import os
import time
import traceback
import warnings

__all__ = ["ErrorHandler"]

logger = logging.getLogger(__name__)


class ErrorHandler:
    """Records errors in the error file (PyTorch's JSON layout:
    ``{"message": {"message": ..., "extraInfo": {"py_callstack": ..., "timestamp": ...}}}``);
    without ``TORCHELASTIC_ERROR_FILE`` nothing is written. Subclass it to record elsewhere."""

    def _get_error_file_path(self):
        return os.environ.get("TORCHELASTIC_ERROR_FILE", None)

    def initialize(self):
        """Before the recorded code runs: dump every thread's traceback on a fatal signal."""
        try:
            faulthandler.enable(all_threads=True)
        except Exception as e:
            warnings.warn(f"Unable to enable fault handler. {type(e).__name__}: {e}",
                          stacklevel=2)

    def _write_error_file(self, file_path, error_msg):
        try:
            with open(file_path, "w") as fp:
                fp.write(error_msg)
        except Exception as e:
            warnings.warn(f"Unable to write error to file. {type(e).__name__}: {e}",
                          stacklevel=2)

    def record_exception(self, e):
        """Write ``e`` (with the traceback being handled) to the error file."""
        file = self._get_error_file_path()
        if file:
            data = {"message": {"message": f"{type(e).__name__}: {e}",
                                "extraInfo": {"py_callstack": traceback.format_exc(),
                                              "timestamp": str(int(time.time()))}}}
            with open(file, "w") as fp:
                json.dump(data, fp)

    def override_error_code_in_rootcause_data(self, rootcause_error_file, rootcause_error,
                                              error_code=0):
        """Set the exit code in a child's error data (a child killed by a signal cannot)."""
        if "message" not in rootcause_error:
            logger.warning("child error file (%s) does not have field `message`. \n"
                           "cannot override error code: %s", rootcause_error_file, error_code)
        elif isinstance(rootcause_error["message"], str):
            logger.warning("child error file (%s) has a new message format. \n"
                           "skipping error code override", rootcause_error_file)
        else:
            rootcause_error["message"]["errorCode"] = error_code

    def dump_error_file(self, rootcause_error_file, error_code=0):
        """Copy the child's error file (with its exit code) into this process's error file."""
        with open(rootcause_error_file) as fp:
            rootcause_error = json.load(fp)
            if error_code:
                self.override_error_code_in_rootcause_data(rootcause_error_file,
                                                           rootcause_error, error_code)
        my_error_file = self._get_error_file_path()
        if my_error_file:
            # the child may have inherited our variable and written our file: replace it
            self._rm(my_error_file)
            self._write_error_file(my_error_file, json.dumps(rootcause_error))
            logger.info("dumped error file to parent's %s", my_error_file)
        else:
            logger.error("no error file defined for parent, to copy child error file (%s)",
                         rootcause_error_file)

    def _rm(self, my_error_file):
        if os.path.isfile(my_error_file):
            with open(my_error_file) as fp:
                try:
                    original = json.dumps(json.load(fp), indent=2)
                    logger.warning("%s already exists and will be overwritten. Original "
                                   "contents:\n%s", my_error_file, original)
                except json.decoder.JSONDecodeError:
                    logger.warning("%s already exists and will be overwritten. Unable to load "
                                   "original contents:\n", my_error_file)
            os.remove(my_error_file)
