"""Dynamo's settings (PyTorch's ``torch._dynamo.config``), read at capture time."""

# How many cache entries one code object may hold before it runs eagerly.
recompile_limit = 8
# Dynamic shapes (ember.compile(dynamic=None)): sizes are static first; with
# automatic_dynamic_shapes a dim seen with a second size is made symbolic on the recompile;
# assume_static_by_default=False makes dynamic=None symbolic from the start.
assume_static_by_default = True
automatic_dynamic_shapes = True
# True: an internal error of the interpreter runs the frame eagerly with a one-time warning;
# False: it is raised (debugging).
suppress_errors = True
# Raise ember._dynamo.exc.RecompileError instead of recompiling on a guard failure.
error_on_recompile = False
