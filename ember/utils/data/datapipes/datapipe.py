"""The DataPipe base classes: ``IterDataPipe`` (a stream) and ``MapDataPipe`` (keyed), with
``DataChunk`` (a batch). Each keeps a registry of functional forms (``dp.map(f)`` finds
``map`` in ``functions`` and calls the registered class on ``dp``) and the class-wide pickling
hooks that ``graph.traverse_dps`` sets to read a graph out of the pickler. The serialization
wrappers are what the DataLoader puts around a datapipe, so that workers get it pickled with
dill when plain pickle cannot (lambdas)."""
import functools
import pickle
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

from ..dataset import Dataset, IterableDataset
from ._hook_iterator import _SnapshotState
from ._typing import _DataPipeMeta, _IterDataPipeMeta
from .utils.common import (_deprecation_warning, _iter_deprecated_functional_names,
                           _map_deprecated_functional_names, import_dill)

dill = import_dill()
HAS_DILL = dill is not None

__all__ = ["DataChunk", "DFIterDataPipe", "IterDataPipe", "MapDataPipe"]

_T = TypeVar("_T")
_T_co = TypeVar("_T_co", covariant=True)

# functional forms that return DataChunks or unpack frames, so a traced dataframe pipe is
# not re-traced through them
UNTRACABLE_DATAFRAME_PIPES = ["batch", "groupby", "_dataframes_as_tuples", "trace_as_dataframe"]


class DataChunk(list[_T]):
    """A batch: a list that also keeps its items in ``items`` (``raw_iterator``)."""

    def __init__(self, items: Iterable[_T]):
        items = list(items)
        super().__init__(items)
        self.items = items

    def as_str(self, indent: str = "") -> str:
        return indent + "[" + ", ".join(str(i) for i in iter(self)) + "]"

    def __iter__(self) -> Iterator[_T]:
        yield from super().__iter__()

    def raw_iterator(self) -> Iterator[_T]:
        yield from self.items


class _DataPipeAPI:
    """What IterDataPipe and MapDataPipe share. ``_root`` is the one of the two a class
    derives from: the registry and hooks are that class's, whichever subclass is asked."""

    def __getattr__(self, attribute_name):
        root = type(self)._root
        if attribute_name in root.functions:
            if attribute_name in root._deprecated_names:
                _deprecation_warning(**root._deprecated_names[attribute_name])
            f = root.functions[attribute_name]
            function = functools.partial(f, self)
            functools.update_wrapper(wrapper=function, wrapped=f, assigned=("__doc__",))
            return function
        # (PyTorch's message lacks the closing quote)
        raise AttributeError(f"'{self.__class__.__name__}' object has no attribute "
                             f"'{attribute_name}")

    @classmethod
    def register_function(cls, function_name, function):
        cls.functions[function_name] = function

    def __getstate__(self):
        """The instance dict, or what the getstate hook (set by ``traverse_dps``) makes of it.
        Datapipes whose state is more than their attributes define their own."""
        state = self.__dict__
        hook = type(self)._root.getstate_hook
        return hook(state) if hook is not None else state

    def __reduce_ex__(self, *args, **kwargs):
        hook = type(self)._root.reduce_ex_hook
        if hook is not None:
            try:
                return hook(self)
            except NotImplementedError:
                pass
        return super().__reduce_ex__(*args, **kwargs)

    @classmethod
    def set_getstate_hook(cls, hook_fn):
        if cls._root.getstate_hook is not None and hook_fn is not None:
            raise RuntimeError("Attempt to override existing getstate_hook")
        cls._root.getstate_hook = hook_fn

    @classmethod
    def set_reduce_ex_hook(cls, hook_fn):
        if cls._root.reduce_ex_hook is not None and hook_fn is not None:
            raise RuntimeError("Attempt to override existing reduce_ex_hook")
        cls._root.reduce_ex_hook = hook_fn

    # the class name instead of <... object at 0x...>
    def __repr__(self):
        if self.repr_hook is not None:
            return self.repr_hook(self)
        return str(self.__class__.__qualname__)

    def __str__(self):
        if self.str_hook is not None:
            return self.str_hook(self)
        return str(self.__class__.__qualname__)

    def __dir__(self):
        return list(super().__dir__()) + list(self.functions.keys())


class IterDataPipe(_DataPipeAPI, IterableDataset[_T_co], metaclass=_IterDataPipeMeta):
    """Iterable-style DataPipe: ``__iter__`` yields samples, computed lazily. Creating an
    iterator calls ``reset()`` and invalidates the datapipe's previous iterator (one valid
    iterator per IterDataPipe; use ``.fork()`` to read a stream twice). Chain them by class
    (``Mapper(dp, f)``) or functional form (``dp.map(f)``)."""

    functions: dict[str, Callable] = {}
    _deprecated_names = _iter_deprecated_functional_names
    reduce_ex_hook: Callable | None = None
    getstate_hook: Callable | None = None
    str_hook: Callable | None = None
    repr_hook: Callable | None = None
    _valid_iterator_id: int | None = None
    _number_of_samples_yielded: int = 0
    _snapshot_state: _SnapshotState = _SnapshotState.NotStarted
    _fast_forward_iterator: Iterator | None = None

    def __iter__(self) -> Iterator[_T_co]:
        return self

    @classmethod
    def register_datapipe_as_function(cls, function_name, cls_to_register,
                                      enable_df_api_tracing=False):
        if function_name in cls.functions:
            raise Exception(f"Unable to add DataPipe function name {function_name} as it is "
                            "already taken")

        def class_function(cls, enable_df_api_tracing, source_dp, *args, **kwargs):
            result_pipe = cls(source_dp, *args, **kwargs)
            if isinstance(result_pipe, IterDataPipe):
                if enable_df_api_tracing or isinstance(source_dp, DFIterDataPipe):
                    if function_name not in UNTRACABLE_DATAFRAME_PIPES:
                        result_pipe = result_pipe.trace_as_dataframe()
            return result_pipe

        function = functools.partial(class_function, cls_to_register, enable_df_api_tracing)
        functools.update_wrapper(wrapper=function, wrapped=cls_to_register,
                                 assigned=("__doc__",))
        cls.functions[function_name] = function

    def reset(self) -> None:
        """Return to the initial state (clear buffers); called by every new iterator. No-op
        by default."""


IterDataPipe._root = IterDataPipe


class DFIterDataPipe(IterDataPipe):
    def _is_dfpipe(self):
        return True


class MapDataPipe(_DataPipeAPI, Dataset[_T_co], metaclass=_DataPipeMeta):
    """Map-style DataPipe: ``__getitem__(key)`` and usually ``__len__``. The DataLoader's
    default samplers give integer keys; other keys need a custom sampler."""

    functions: dict[str, Callable] = {}
    _deprecated_names = _map_deprecated_functional_names
    reduce_ex_hook: Callable | None = None
    getstate_hook: Callable | None = None
    str_hook: Callable | None = None
    repr_hook: Callable | None = None

    @classmethod
    def register_datapipe_as_function(cls, function_name, cls_to_register):
        if function_name in cls.functions:
            raise Exception(f"Unable to add DataPipe function name {function_name} as it is "
                            "already taken")

        def class_function(cls, source_dp, *args, **kwargs):
            return cls(source_dp, *args, **kwargs)

        function = functools.partial(class_function, cls_to_register)
        functools.update_wrapper(wrapper=function, wrapped=cls_to_register,
                                 assigned=("__doc__",))
        cls.functions[function_name] = function


MapDataPipe._root = MapDataPipe


class _DataPipeSerializationWrapper:
    """Pickles the datapipe it holds with pickle, or with dill when pickle fails."""

    def __init__(self, datapipe):
        self._datapipe = datapipe

    def __getstate__(self):
        use_dill = False
        try:
            value = pickle.dumps(self._datapipe)
        except Exception:
            if not HAS_DILL:
                raise
            value = dill.dumps(self._datapipe)
            use_dill = True
        return (value, use_dill)

    def __setstate__(self, state):
        value, use_dill = state
        self._datapipe = dill.loads(value) if use_dill else pickle.loads(value)

    def __len__(self):
        try:
            return len(self._datapipe)
        except Exception as e:
            raise TypeError(f"{type(self).__name__} instance doesn't have valid length") from e


class _IterDataPipeSerializationWrapper(_DataPipeSerializationWrapper, IterDataPipe):
    def __init__(self, datapipe):
        super().__init__(datapipe)
        self._datapipe_iter = None

    def __iter__(self):
        self._datapipe_iter = iter(self._datapipe)
        return self

    def __next__(self):
        if self._datapipe_iter is None:
            raise AssertionError(
                "Iterator has not been initialized; call __iter__() before __next__()")
        return next(self._datapipe_iter)


class _MapDataPipeSerializationWrapper(_DataPipeSerializationWrapper, MapDataPipe):
    def __getitem__(self, idx):
        return self._datapipe[idx]
