"""Compile generated Python source so that it reads like any other code.

ember generates its bindings, operator methods, argument normalizers, dispatcher call paths and
autograd kernels as Python source. :func:`compile_source` compiles such source under a file name
that says what it is (``<ember binding ember.add>``) and registers the text in ``linecache``, so
tracebacks, ``inspect.getsource``, ``pdb`` and profilers show the generated lines instead of
``File "<...>", line 4`` with nothing under it.
"""
import linecache

__all__ = ["compile_source", "register_source"]


def register_source(filename, src):
    """Make ``src`` the text ``linecache`` (hence ``traceback``/``inspect``) finds for
    ``filename``. An entry without a modification time is never evicted by ``checkcache``."""
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)


def compile_source(src, filename, namespace, mode="exec"):
    """Compile ``src`` as ``filename`` with its text registered; ``exec`` mode runs it in
    ``namespace`` (and returns the namespace), ``eval`` mode returns the code object."""
    if not src.endswith("\n"):
        src += "\n"
    register_source(filename, src)
    code = compile(src, filename, mode)
    if mode == "eval":
        return code
    exec(code, namespace)
    return namespace
