"""The Python side of ember's C++ extension headers (ember/include/ember_ext/).

A compiled extension calls these functions while it is loaded (its TORCH_LIBRARY blocks are
static initializers) and while it runs (dtype lookups). ``load_library`` loads a shared library
whose only job is to register operators (PyTorch's ``torch.ops.load_library``) and raises what
its registrations raised: a static initializer cannot raise, so the headers record the exception
here (:func:`_record_load_error`) and the loader raises it once the library is in.
"""
import contextlib
import ctypes
import os
import threading
import warnings

from .._core import dtype as _dt

# Must equal EMBER_EXTENSION_HEADER_VERSION in ember/include/ember_ext/core.h: an extension
# built against other headers is refused when it loads.
HEADER_VERSION = 1

# ScalarType (c10's numbering) -> ember dtype; None where ember has no such dtype.
SCALAR_TYPES = [_dt.uint8, _dt.int8, _dt.int16, _dt.int32, _dt.int64, _dt.float16, _dt.float32,
                _dt.float64, None, _dt.complex64, _dt.complex128, _dt.bool_, None, None, None,
                _dt.bfloat16, None]

# Libraries made by TORCH_LIBRARY blocks: they live as long as the process, as in PyTorch.
_libraries = []
# qualname -> [(lib, name, kernel, key, debug)]: m.impl calls that came before their m.def
# (static initializers of different files run in no fixed order; PyTorch accepts either order).
_pending_impls = {}
_load_state = threading.local()


def _stale_message(built_version):
    return (f"This extension was built against ember's extension headers version "
            f"{built_version}, but this ember (ember/include) is version {HEADER_VERSION}. "
            f"Rebuild it (ember.utils.cpp_extension.load rebuilds when the headers change; "
            f"delete its build directory or rerun setup.py otherwise).")


def _make_library(ns, kind, key):
    from ..library import Library
    lib = Library(ns, kind, key)
    _libraries.append(lib)
    return lib


def _def(lib, schema, debug):
    name = lib.define(schema, _debug=debug)
    qualname = f"{lib.ns}::{name}"
    for args in _pending_impls.pop(qualname, ()):
        _impl(*args)


def _impl(lib, name, kernel, key, debug):
    from .._dispatch import dispatcher as _d
    qualname = name if "::" in name else f"{lib.ns}::{name}"
    if qualname.endswith(".default"):
        qualname = qualname[: -len(".default")]
    if _d.get_entry(qualname) is None:
        _pending_impls.setdefault(qualname, []).append((lib, name, kernel, key, debug))
        return
    lib.impl(name, kernel, key, _debug=debug)


def _record_load_error(exc):
    errors = getattr(_load_state, "errors", None)
    if errors is None:  # loaded by a plain import (a setup.py build): nobody to raise it to
        warnings.warn(f"while loading a C++ extension: {type(exc).__name__}: {exc}",
                      RuntimeWarning, stacklevel=2)
        return
    errors.append(exc)


@contextlib.contextmanager
def loading(path):
    """Collects what the extension's static initializers record while ``path`` loads, and
    raises the first of it."""
    outer = getattr(_load_state, "errors", None)
    _load_state.errors = errors = []
    try:
        yield
    finally:
        _load_state.errors = outer
    if errors:
        exc = errors[0]
        more = "".join(f"\n  then {type(e).__name__}: {e}" for e in errors[1:])
        raise type(exc)(f"{exc}\n  (while loading {path}){more}") from exc


def load_library(path):
    """Load a shared library into the process so that its TORCH_LIBRARY registrations run
    (``ember.ops.load_library``)."""
    path = os.path.realpath(path)
    with loading(path):
        ctypes.CDLL(path)
    return path
