"""Decorators for DataPipe classes: ``functional_datapipe`` (register a class as ``dp.<name>``),
``non_deterministic`` / ``guaranteed_datapipes_determinism`` (refuse non-deterministic
datapipes while determinism is asked for), and the type validators ``argument_validation``
and ``runtime_validation`` (with ``runtime_validation_disabled``)."""
import inspect
from collections.abc import Callable
from functools import wraps
from typing import Any, get_type_hints

from ._typing import _DataPipeMeta
from .datapipe import IterDataPipe, MapDataPipe


class functional_datapipe:
    """``@functional_datapipe("name")`` on a DataPipe class makes ``dp.name(*args)`` construct
    it on ``dp``. ``enable_df_api_tracing``: its results accept the DataFrames API."""

    name: str

    def __init__(self, name: str, enable_df_api_tracing=False):
        self.name = name
        self.enable_df_api_tracing = enable_df_api_tracing

    def __call__(self, cls):
        if issubclass(cls, IterDataPipe):
            if isinstance(cls, type):
                if not isinstance(cls, _DataPipeMeta):
                    raise TypeError("`functional_datapipe` can only decorate IterDataPipe")
            # a class wrapped by non_deterministic
            elif not isinstance(cls, non_deterministic) and not (
                    hasattr(cls, "__self__") and isinstance(cls.__self__, non_deterministic)):
                raise TypeError("`functional_datapipe` can only decorate IterDataPipe")
            IterDataPipe.register_datapipe_as_function(
                self.name, cls, enable_df_api_tracing=self.enable_df_api_tracing)
        elif issubclass(cls, MapDataPipe):
            MapDataPipe.register_datapipe_as_function(self.name, cls)
        return cls


_determinism: bool = False


class guaranteed_datapipes_determinism:
    """While alive (or inside ``with``), constructing a ``non_deterministic`` datapipe raises."""

    prev: bool

    def __init__(self):
        global _determinism
        self.prev = _determinism
        _determinism = True

    def __enter__(self):
        pass

    def __exit__(self, exc_type: Any, exc_value: Any, traceback: Any):
        global _determinism
        _determinism = self.prev


class non_deterministic:
    """Marks an IterDataPipe class as non-deterministic (``@non_deterministic``), or as
    non-deterministic for the inputs on which a function returns True
    (``@non_deterministic(fn)``)."""

    cls: type[IterDataPipe] | None = None
    deterministic_fn: Callable[..., bool]

    def __init__(self, arg):
        if isinstance(arg, type):
            if not issubclass(arg, IterDataPipe):
                raise TypeError("Only `IterDataPipe` can be decorated with `non_deterministic`"
                                f", but {arg.__name__} is found")
            self.cls = arg
        elif isinstance(arg, Callable):
            self.deterministic_fn = arg
        else:
            raise TypeError(f"{arg} can not be decorated by non_deterministic")

    def __call__(self, *args, **kwargs):
        if self.cls is not None:
            if _determinism:
                raise TypeError(
                    f"{self.cls.__name__} is non-deterministic, but you set "
                    "'guaranteed_datapipes_determinism'. You can turn off determinism for this "
                    "DataPipe if that is acceptable for your application")
            return self.cls(*args, **kwargs)
        if not (isinstance(args[0], type) and issubclass(args[0], IterDataPipe)):
            raise TypeError(f"Only `IterDataPipe` can be decorated, but {args[0].__name__} is "
                            "found")
        self.cls = args[0]
        return self.deterministic_wrapper_fn

    def deterministic_wrapper_fn(self, *args, **kwargs) -> IterDataPipe:
        res = self.deterministic_fn(*args, **kwargs)
        if not isinstance(res, bool):
            raise TypeError("deterministic_fn of `non_deterministic` decorator is required "
                            f"to return a boolean value, but {type(res)} is found")
        if _determinism and res:
            raise TypeError(
                f"{self.cls.__name__} is non-deterministic with the inputs, but you set "
                "'guaranteed_datapipes_determinism'. You can turn off determinism "
                "for this DataPipe if that is acceptable for your application")
        return self.cls(*args, **kwargs)


def argument_validation(f):
    """Check, on each call of ``f``, that every argument annotated with a DataPipe class is an
    IterDataPipe whose ``type`` is a subtype of the annotation's."""
    signature = inspect.signature(f)
    hints = get_type_hints(f)

    @wraps(f)
    def wrapper(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        for argument_name, value in bound.arguments.items():
            if argument_name in hints and isinstance(hints[argument_name], _DataPipeMeta):
                hint = hints[argument_name]
                if not isinstance(value, IterDataPipe):
                    raise TypeError(f"Expected argument '{argument_name}' as a IterDataPipe, "
                                    f"but found {type(value)}")
                if not value.type.issubtype(hint.type):
                    raise TypeError(f"Expected type of argument '{argument_name}' as a subtype "
                                    f"of hint {hint.type}, but found {value.type}")
        return f(*args, **kwargs)

    return wrapper


_runtime_validation_enabled: bool = True


class runtime_validation_disabled:
    """While alive (or inside ``with``), ``runtime_validation`` checks nothing."""

    prev: bool

    def __init__(self):
        global _runtime_validation_enabled
        self.prev = _runtime_validation_enabled
        _runtime_validation_enabled = False

    def __enter__(self):
        pass

    def __exit__(self, exc_type: Any, exc_value: Any, traceback: Any):
        global _runtime_validation_enabled
        _runtime_validation_enabled = self.prev


def runtime_validation(f):
    """Decorate an ``__iter__``: each yielded value must be an instance of the datapipe's
    ``type``."""
    if f.__name__ != "__iter__":
        raise TypeError(f"Can not decorate function {f.__name__} with 'runtime_validation'")

    @wraps(f)
    def wrapper(self):
        if not _runtime_validation_enabled:
            yield from f(self)
        else:
            for d in f(self):
                if not self.type.issubtype_of_instance(d):
                    raise RuntimeError(f"Expected an instance as subtype of {self.type}, but "
                                       f"found {d}({type(d)})")
                yield d

    return wrapper
