"""Dynamo's settings (PyTorch's ``torch._dynamo.config``), read at capture time."""
import os

# How many cache entries one code object may hold before it runs eagerly.
recompile_limit = 8
# Dynamic shapes (ember.compile(dynamic=None)): sizes are static first; with
# automatic_dynamic_shapes a dim seen with a second size is made symbolic on the recompile;
# assume_static_by_default=False makes dynamic=None symbolic from the start.
assume_static_by_default = True
automatic_dynamic_shapes = True
# False (PyTorch's default): an internal error of the interpreter is raised; True: the frame
# runs eagerly with a one-time warning (PyTorch's TORCHDYNAMO_SUPPRESS_ERRORS=1).
suppress_errors = os.environ.get("TORCHDYNAMO_SUPPRESS_ERRORS", "0") == "1"
# Raise ember._dynamo.exc.RecompileError instead of recompiling on a guard failure.
error_on_recompile = False
