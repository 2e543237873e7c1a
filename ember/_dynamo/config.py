"""Dynamo's settings (PyTorch's ``torch._dynamo.config``), read at capture time."""

# How many cache entries one code object may hold before it runs eagerly.
recompile_limit = 8
# Dynamic shapes: specialise first (dynamic shapes are not implemented yet: see ember/_dynamo
# docstring); automatic_dynamic_shapes is read there and kept for PyTorch's spelling.
assume_static_by_default = True
automatic_dynamic_shapes = True
# True: an internal error of the interpreter runs the frame eagerly with a one-time warning;
# False: it is raised (debugging).
suppress_errors = True
# Raise ember._dynamo.exc.RecompileError instead of recompiling on a guard failure.
error_on_recompile = False
