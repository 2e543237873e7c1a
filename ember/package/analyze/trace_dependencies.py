"""``trace_dependencies``: the modules whose functions a callable runs, by running it."""
import sys

__all__ = ["trace_dependencies"]


def trace_dependencies(callable, inputs):
    """The names of the modules of the functions called while ``callable(*inp)`` runs for
    each ``inp`` of ``inputs`` (a profile hook sees each call)."""
    modules_used = set()

    def record_used_modules(frame, event, arg):
        if event != "call":
            return
        name = frame.f_code.co_name
        module = None
        # the called function's module: found among the frame's globals, its locals, or (a
        # method) on the frame's self
        if name in frame.f_globals:
            module = frame.f_globals[name].__module__
        elif name in frame.f_locals:
            module = frame.f_locals[name].__module__
        elif "self" in frame.f_locals:
            method = getattr(frame.f_locals["self"], name, None)
            module = method.__module__ if method else None
        if module:
            modules_used.add(module)

    try:
        sys.setprofile(record_used_modules)
        for inp in inputs:
            callable(*inp)
    finally:
        sys.setprofile(None)
    return list(modules_used)
