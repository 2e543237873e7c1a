"""The parts of importlib's name resolution a package importer needs (its ``__import__``
resolves relative imports itself)."""
import os.path
import warnings


def _normalize_line_endings(source):
    return source.replace(b"\r\n", b"\n").replace(b"\r", b"\n")


def _resolve_name(name, package, level):
    """The absolute name of a relative import (importlib._bootstrap's)."""
    bits = package.rsplit(".", level - 1)
    if len(bits) < level:
        raise ValueError("attempted relative import beyond top-level package")
    base = bits[0]
    return f"{base}.{name}" if name else base


def _sanity_check(name, package, level):
    if not isinstance(name, str):
        raise TypeError(f"module name must be str, not {type(name)}")
    if level < 0:
        raise ValueError("level must be >= 0")
    if level > 0:
        if not isinstance(package, str):
            raise TypeError("__package__ not set to a string")
        if not package:
            raise ImportError("attempted relative import with no known parent package")
    if not name and level == 0:
        raise ValueError("Empty module name")


def _calc___package__(globals):
    """The package a module's relative imports are relative to (importlib._bootstrap's)."""
    package = globals.get("__package__")
    spec = globals.get("__spec__")
    if package is not None:
        if spec is not None and package != spec.parent:
            warnings.warn(f"__package__ != __spec__.parent ({package!r} != {spec.parent!r})",
                          ImportWarning, stacklevel=3)
        return package
    if spec is not None:
        return spec.parent
    warnings.warn("can't resolve package from __spec__ or __package__, falling back on "
                  "__name__ and __path__", ImportWarning, stacklevel=3)
    package = globals["__name__"]
    if "__path__" not in globals:
        package = package.rpartition(".")[0]
    return package


def _normalize_path(path):
    """A resource name, which must be a bare file name."""
    parent, file_name = os.path.split(path)
    if parent:
        raise ValueError(f"{path!r} must be only a file name")
    return file_name
