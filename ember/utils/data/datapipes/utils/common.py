"""Helpers the datapipes share: checking a user function against ``input_col`` and for
picklability, listing and opening files, ``StreamWrapper`` (a file handle that closes itself),
and the deprecation-warning text of renamed datapipes."""
import fnmatch
import functools
import importlib.util
import inspect
import os
import warnings
from collections.abc import Callable, Iterable
from io import IOBase
from typing import Any

__all__ = ["validate_input_col", "StreamWrapper", "get_file_binaries_from_pathnames",
           "get_file_pathnames_from_root", "match_masks", "validate_pathname_binary_tuple"]


@functools.lru_cache
def dill_available():
    """Whether ``dill`` can be imported (``torch.utils._import_utils.dill_available``): with it,
    lambdas and local functions pickle, so the datapipes do not warn about them."""
    try:
        return importlib.util.find_spec("dill") is not None
    except ImportError:
        return False


@functools.lru_cache
def import_dill():
    """``dill``, with its change to the standard pickler's dispatch table undone (importing
    dill would otherwise change how every ``pickle.dumps`` in the program behaves)."""
    if not dill_available():
        return None
    import dill
    dill.extend(use_dill=False)
    return dill


# torchdata reads this name
DILL_AVAILABLE = dill_available()


def validate_input_col(fn: Callable, input_col):
    """Raise ``ValueError`` unless ``fn`` takes as many positional arguments as ``input_col``
    names columns (one for a single index, ``len`` of a list/tuple), and no keyword-only
    argument without a default."""
    try:
        sig = inspect.signature(fn)
    except ValueError:  # a builtin or C function: nothing to check
        return
    input_col_size = len(input_col) if isinstance(input_col, (list, tuple)) else 1
    pos, var_positional, non_default_kw_only = [], False, []
    for p in sig.parameters.values():
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            pos.append(p)
        elif p.kind is p.VAR_POSITIONAL:
            var_positional = True
        elif p.kind is p.KEYWORD_ONLY and p.default is p.empty:
            non_default_kw_only.append(p)
    func = fn.func if isinstance(fn, functools.partial) else fn
    fn_name = getattr(func, "__name__", repr(func))
    if non_default_kw_only:
        raise ValueError(f"The function {fn_name} takes {len(non_default_kw_only)} "
                         f"non-default keyword-only parameters, which is not allowed.")
    if len(sig.parameters) < input_col_size:
        if not var_positional:
            raise ValueError(f"The function {fn_name} takes {len(sig.parameters)} "
                             f"parameters, but {input_col_size} are required.")
    elif len(pos) > input_col_size:
        if any(p.default is p.empty for p in pos[input_col_size:]):
            raise ValueError(f"The function {fn_name} takes {len(pos)} "
                             f"positional parameters, but {input_col_size} are required.")
    elif len(pos) < input_col_size and not var_positional:
        raise ValueError(f"The function {fn_name} takes {len(pos)} "
                         f"positional parameters, but {input_col_size} are required.")


def _is_local_fn(fn):
    if hasattr(fn, "__code__"):  # functions and methods
        return fn.__code__.co_flags & inspect.CO_NESTED
    if hasattr(fn, "__qualname__"):
        return "<locals>" in fn.__qualname__
    fn_type = type(fn)
    if hasattr(fn_type, "__qualname__"):
        return "<locals>" in fn_type.__qualname__
    return False


def _check_unpickable_fn(fn: Callable):
    """``TypeError`` for a non-callable; a ``UserWarning`` for a lambda or local function
    when ``dill`` is not there to pickle it (the DataLoader pickles datapipes for workers)."""
    if not callable(fn):
        raise TypeError(f"A callable function is expected, but {type(fn)} is provided.")
    if isinstance(fn, functools.partial):
        fn = fn.func
    if _is_local_fn(fn) and not dill_available():
        warnings.warn("Local function is not supported by pickle, please use "
                      "regular python function or functools.partial instead.", stacklevel=2)
        return
    if hasattr(fn, "__name__") and fn.__name__ == "<lambda>" and not dill_available():
        warnings.warn("Lambda function is not supported by pickle, please use "
                      "regular python function or functools.partial instead.", stacklevel=2)


def match_masks(name: str, masks) -> bool:
    """Whether ``name`` matches the Unix-style mask or any of the masks (an empty mask matches
    everything)."""
    if not masks:
        return True
    if isinstance(masks, str):
        return fnmatch.fnmatch(name, masks)
    return any(fnmatch.fnmatch(name, mask) for mask in masks)


def get_file_pathnames_from_root(root: str, masks, recursive: bool = False,
                                 abspath: bool = False,
                                 non_deterministic: bool = False) -> Iterable[str]:
    """The files under ``root`` (or ``root`` itself when it is a file) whose names match
    ``masks``; each directory's files and subdirectories sorted unless
    ``non_deterministic``."""
    def onerror(err: OSError):
        warnings.warn(err.filename + " : " + err.strerror, stacklevel=2)
        raise err

    if os.path.isfile(root):
        path = os.path.abspath(root) if abspath else root
        if match_masks(os.path.basename(path), masks):
            yield path
        return
    for path, dirs, files in os.walk(root, onerror=onerror):
        if abspath:
            path = os.path.abspath(path)
        if not non_deterministic:
            files.sort()
        for f in files:
            if match_masks(f, masks):
                yield os.path.join(path, f)
        if not recursive:
            break
        if not non_deterministic:
            dirs.sort()  # in place: os.walk descends in this list's order


def get_file_binaries_from_pathnames(pathnames: Iterable, mode: str, encoding=None):
    """``(pathname, StreamWrapper(open(pathname)))`` for each pathname."""
    if not isinstance(pathnames, Iterable):
        pathnames = [pathnames]
    if mode in ("b", "t"):
        mode = "r" + mode
    for pathname in pathnames:
        if not isinstance(pathname, str):
            raise TypeError(f"Expected string type for pathname, but got {type(pathname)}")
        yield pathname, StreamWrapper(open(pathname, mode, encoding=encoding))


def validate_pathname_binary_tuple(data):
    if not isinstance(data, tuple):
        raise TypeError(f"pathname binary data should be tuple type, but it is type {type(data)}")
    if len(data) != 2:
        raise TypeError(f"pathname binary stream tuple length should be 2, but got {len(data)}")
    if not isinstance(data[0], str):
        raise TypeError("pathname within the tuple should have string type pathname, but it is "
                        f"type {type(data[0])}")
    if not isinstance(data[1], IOBase) and not isinstance(data[1], StreamWrapper):
        raise TypeError("binary stream within the tuple should have IOBase or"
                        f"its subclasses as type, but it is type {type(data[1])}")


# Renamed functional forms: name -> keyword arguments of _deprecation_warning (none now)
_iter_deprecated_functional_names: dict[str, dict] = {}
_map_deprecated_functional_names: dict[str, dict] = {}


def _deprecation_warning(old_class_name: str, *, deprecation_version: str, removal_version: str,
                         old_functional_name: str = "", old_argument_name: str = "",
                         new_class_name: str = "", new_functional_name: str = "",
                         new_argument_name: str = "",
                         deprecate_functional_name_only: bool = False):
    if new_functional_name and not old_functional_name:
        raise ValueError("Old functional API needs to be specified for the deprecation warning.")
    if new_argument_name and not old_argument_name:
        raise ValueError("Old argument name needs to be specified for the deprecation warning.")
    if old_functional_name and old_argument_name:
        raise ValueError("Deprecating warning for functional API and argument should be "
                         "separated.")
    msg = f"`{old_class_name}()`"
    if deprecate_functional_name_only and old_functional_name:
        msg = f"{msg}'s functional API `.{old_functional_name}()` is"
    elif old_functional_name:
        msg = f"{msg} and its functional API `.{old_functional_name}()` are"
    elif old_argument_name:
        msg = f"The argument `{old_argument_name}` of {msg} is"
    else:
        msg = f"{msg} is"
    msg = (f"{msg} deprecated since {deprecation_version} and will be removed in "
           f"{removal_version}.\nSee https://github.com/pytorch/data/issues/163 for details.")
    if new_class_name or new_functional_name:
        msg = f"{msg}\nPlease use"
        if new_class_name:
            msg = f"{msg} `{new_class_name}()`"
        if new_class_name and new_functional_name:
            msg = f"{msg} or"
        if new_functional_name:
            msg = f"{msg} `.{new_functional_name}()`"
        msg = f"{msg} instead."
    if new_argument_name:
        msg = f"{msg}\nPlease use `{old_class_name}({new_argument_name}=)` instead."
    warnings.warn(msg, FutureWarning, stacklevel=2)


class StreamWrapper:
    """A file handle that is closed when the wrapper goes away; children opened from it (an
    archive's members) can keep it open until the last of them closes (``autoclose``)."""

    session_streams: dict[Any, int] = {}
    debug_unclosed_streams: bool = False

    def __init__(self, file_obj, parent_stream=None, name=None):
        self.file_obj = file_obj
        self.child_counter = 0
        self.parent_stream = parent_stream
        self.close_on_last_child = False
        self.name = name
        self.closed = False
        if parent_stream is not None:
            if not isinstance(parent_stream, StreamWrapper):
                raise RuntimeError("Parent stream should be StreamWrapper, "
                                   f"{type(parent_stream)} was given")
            parent_stream.child_counter += 1
        if StreamWrapper.debug_unclosed_streams:
            StreamWrapper.session_streams[self] = 1

    @classmethod
    def close_streams(cls, v, depth=0):
        """Close every StreamWrapper found in ``v`` (dicts, lists and tuples, 10 levels deep)."""
        if depth > 10:
            return
        if isinstance(v, StreamWrapper):
            v.close()
        elif isinstance(v, dict):
            for vv in v.values():
                cls.close_streams(vv, depth=depth + 1)
        elif isinstance(v, (list, tuple)):
            for vv in v:
                cls.close_streams(vv, depth=depth + 1)

    def __getattr__(self, name):
        return getattr(self.__dict__["file_obj"], name)

    def close(self, *args, **kwargs):
        if self.closed:
            return
        if StreamWrapper.debug_unclosed_streams:
            del StreamWrapper.session_streams[self]
        if getattr(self, "parent_stream", None) is not None:
            self.parent_stream.child_counter -= 1
            if not self.parent_stream.child_counter and self.parent_stream.close_on_last_child:
                self.parent_stream.close()
        try:
            self.file_obj.close(*args, **kwargs)
        except AttributeError:
            pass
        self.closed = True

    def autoclose(self):
        """Close when all child streams are closed, now if there are none."""
        self.close_on_last_child = True
        if self.child_counter == 0:
            self.close()

    def __dir__(self):
        attrs = list(self.__dict__.keys()) + list(StreamWrapper.__dict__.keys())
        attrs += dir(self.file_obj)
        return list(set(attrs))

    def __del__(self):
        if not self.closed:
            self.close()

    def __iter__(self):
        yield from self.file_obj

    def __next__(self):
        return next(self.file_obj)

    def __repr__(self):
        if self.name is None:
            return f"StreamWrapper<{self.file_obj!r}>"
        return f"StreamWrapper<{self.name},{self.file_obj!r}>"

    def __getstate__(self):
        return self.file_obj

    def __setstate__(self, obj):
        self.file_obj = obj
