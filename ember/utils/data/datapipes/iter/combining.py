"""Datapipes over several streams: ``Concater`` (``concat``), ``Zipper`` (``zip``),
``Multiplexer`` (``mux``), and the two that split one stream into child datapipes,
``Forker`` (``fork``) and ``Demultiplexer`` (``demux``). A split's children read through a
container datapipe that buffers what the faster children have read ahead of the slower
ones, up to ``buffer_size``; a new iterator on any child resets them all."""
import copy as copymodule
import warnings
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Iterator, Sized
from typing import Literal, TypeVar

from .._decorator import functional_datapipe
from .._hook_iterator import _SnapshotState
from ..datapipe import IterDataPipe
from ..utils.common import StreamWrapper, _check_unpickable_fn

__all__ = ["ConcaterIterDataPipe", "DemultiplexerIterDataPipe", "ForkerIterDataPipe",
           "MultiplexerIterDataPipe", "ZipperIterDataPipe"]

_T_co = TypeVar("_T_co", covariant=True)


def _no_length(dp):
    return TypeError(f"{type(dp).__name__} instance doesn't have valid length")


@functional_datapipe("concat")
class ConcaterIterDataPipe(IterDataPipe):
    """All elements of the first datapipe, then of the next ... (functional name:
    ``concat``)."""

    datapipes: tuple[IterDataPipe]

    def __init__(self, *datapipes: IterDataPipe):
        if len(datapipes) == 0:
            raise ValueError("Expected at least one DataPipe, but got nothing")
        if not all(isinstance(dp, IterDataPipe) for dp in datapipes):
            raise TypeError("Expected all inputs to be `IterDataPipe`")
        self.datapipes = datapipes

    def __iter__(self) -> Iterator:
        for dp in self.datapipes:
            yield from dp

    def __len__(self) -> int:
        if all(isinstance(dp, Sized) for dp in self.datapipes):
            return sum(len(dp) for dp in self.datapipes)
        raise _no_length(self)


@functional_datapipe("fork")
class ForkerIterDataPipe(IterDataPipe):
    """``num_instances`` child datapipes, each yielding every element of ``datapipe``
    (functional name: ``fork``). ``buffer_size``: how far the leading child may run ahead of
    the slowest (``-1``: unlimited); ``copy``: ``None``, ``"shallow"`` or ``"deep"`` copies per
    branch. With ``num_instances == 1`` the datapipe itself is returned."""

    def __new__(cls, datapipe: IterDataPipe, num_instances: int, buffer_size: int = 1000,
                copy: Literal["shallow", "deep"] | None = None):
        if num_instances < 1:
            raise ValueError(f"Expected `num_instances` larger than 0, but {num_instances} is "
                             "found")
        if num_instances == 1:
            return datapipe
        container = _ForkerIterDataPipe(datapipe, num_instances, buffer_size, copy)
        return [_ChildDataPipe(container, i) for i in range(num_instances)]


class _ContainerTemplate(ABC):
    """What a split's container offers its children."""

    @abstractmethod
    def get_next_element_by_instance(self, instance_id: int): ...

    @abstractmethod
    def is_every_instance_exhausted(self) -> bool: ...

    @abstractmethod
    def reset(self) -> None: ...

    @abstractmethod
    def get_length_by_instance(self, instance_id: int):
        """Raise TypeError where there is no length (``list(child)`` then still works)."""


def _no_op(x):
    return x


class _ForkerIterDataPipe(IterDataPipe, _ContainerTemplate):
    """The fork's container: one iterator over the source, a buffer of the elements between
    the slowest and the leading child (``slowest_ptr`` .. ``leading_ptr``), and each child's
    position in ``child_pointers``."""

    def __init__(self, datapipe: IterDataPipe, num_instances: int, buffer_size: int = 1000,
                 copy: Literal["shallow", "deep"] | None = None):
        self.main_datapipe = datapipe
        self._datapipe_iterator = None
        self.num_instances = num_instances
        self.buffer: deque = deque()
        self.buffer_size = buffer_size
        if self.buffer_size < 0:
            warnings.warn("Unlimited buffer size is set for `fork`, please be aware of OOM at "
                          "random places", UserWarning, stacklevel=2)
        if copy is None:
            self.copy_fn = _no_op
        elif copy == "shallow":
            self.copy_fn = copymodule.copy
        elif copy == "deep":
            self.copy_fn = copymodule.deepcopy
        else:
            raise ValueError(f"Unknown copy method `{copy}` requested, choose one of None, "
                             "`shallow` or `deep`.")
        self._init_pointers()

    def _init_pointers(self):
        self.child_pointers = [0] * self.num_instances  # index of each child's next element
        self.slowest_ptr = 0
        self.leading_ptr = 0
        self.end_ptr = None  # the index at which children stop, once the source ended
        self._child_stop = [True] * self.num_instances

    def __len__(self):
        return len(self.main_datapipe)

    def get_next_element_by_instance(self, instance_id: int):
        if self._datapipe_iterator is None and self._child_stop[instance_id]:
            self._datapipe_iterator = iter(self.main_datapipe)
            self._snapshot_state = _SnapshotState.Iterating
            for i in range(self.num_instances):
                self._child_stop[i] = False
        try:
            while not self._child_stop[instance_id]:
                self.child_pointers[instance_id] += 1
                if self.end_ptr is not None and self.child_pointers[instance_id] == self.end_ptr:
                    self._child_stop[instance_id] = True
                    break
                if self.buffer and self.child_pointers[instance_id] <= self.leading_ptr:
                    idx = self.child_pointers[instance_id] - self.slowest_ptr - 1
                    return_val = self.buffer[idx]
                else:  # this child leads: read the source
                    self.leading_ptr = self.child_pointers[instance_id]
                    try:
                        return_val = next(self._datapipe_iterator)
                        self.buffer.append(return_val)
                    except StopIteration:
                        self._child_stop[instance_id] = True
                        self._datapipe_iterator = None
                        self.end_ptr = self.leading_ptr
                        continue
                if self.child_pointers[instance_id] == self.slowest_ptr + 1:
                    new_min = min(self.child_pointers)
                    if self.slowest_ptr < new_min:  # the slowest moved: drop what all read
                        self.slowest_ptr = new_min
                        self.buffer.popleft()
                if self.buffer_size >= 0 and self.leading_ptr > self.buffer_size + self.slowest_ptr:
                    raise BufferError("ForkerIterDataPipe buffer overflow,"
                                      f"buffer size {self.buffer_size} is insufficient.")
                yield self.copy_fn(return_val)
        finally:
            self._child_stop[instance_id] = True
            if all(self._child_stop):  # every child stopped (maybe early): release the source
                self._datapipe_iterator = None
                self._cleanup()

    def is_every_instance_exhausted(self) -> bool:
        return self.end_ptr is not None and all(self._child_stop)

    def get_length_by_instance(self, instance_id: int) -> int:
        return len(self.main_datapipe)

    def reset(self):
        self._datapipe_iterator = None
        self.buffer = deque()
        self._init_pointers()

    def __getstate__(self):
        state = (self.main_datapipe, self.num_instances, self.buffer_size, self.copy_fn,
                 self._valid_iterator_id, self._number_of_samples_yielded)
        if IterDataPipe.getstate_hook is not None:
            return IterDataPipe.getstate_hook(state)
        return state

    def __setstate__(self, state):
        (self.main_datapipe, self.num_instances, self.buffer_size, self.copy_fn,
         self._valid_iterator_id, self._number_of_samples_yielded) = state
        self._datapipe_iterator = None
        self.buffer = deque()
        self._init_pointers()

    def _cleanup(self):
        while self.buffer:
            StreamWrapper.close_streams(self.buffer.popleft())

    def __del__(self):
        self._cleanup()


class _ChildDataPipe(IterDataPipe):
    """One output of a fork or demux: reads from its container by ``instance_id``. A new
    iterator on a child that already has one in the current generation starts a new
    generation: all children's iterators are invalidated and the container resets (a
    child not yet iterated in this generation just joins it)."""

    _is_child_datapipe: bool = True

    def __init__(self, main_datapipe: IterDataPipe, instance_id: int):
        if not isinstance(main_datapipe, _ContainerTemplate):
            raise AssertionError("main_datapipe must implement _ContainerTemplate")
        self.main_datapipe = main_datapipe
        self.instance_id = instance_id

    def __iter__(self):
        # not a generator: hook_iterator resets before the first next()
        return self.main_datapipe.get_next_element_by_instance(self.instance_id)

    def __len__(self):
        return self.main_datapipe.get_length_by_instance(self.instance_id)

    def _set_main_datapipe_valid_iterator_id(self) -> int:
        main = self.main_datapipe
        if main._valid_iterator_id is None:
            main._valid_iterator_id = 0
        elif main._valid_iterator_id == self._valid_iterator_id:
            main._valid_iterator_id += 1
            if not main.is_every_instance_exhausted():
                warnings.warn("Some child DataPipes are not exhausted when __iter__ is called. "
                              "We are resetting the buffer and each child DataPipe will read "
                              "from the start again.", UserWarning, stacklevel=2)
            main.reset()
        self._valid_iterator_id = main._valid_iterator_id
        return self._valid_iterator_id

    def _check_valid_iterator_id(self, iterator_id) -> bool:
        return (iterator_id == self._valid_iterator_id
                and iterator_id == self.main_datapipe._valid_iterator_id)


@functional_datapipe("demux")
class DemultiplexerIterDataPipe(IterDataPipe):
    """``num_instances`` child datapipes; ``classifier_fn(element)`` says which child gets an
    element (functional name: ``demux``). ``drop_none``: skip elements classified ``None``;
    ``buffer_size``: how many elements may wait for the other children in all (``-1``:
    unlimited)."""

    def __new__(cls, datapipe: IterDataPipe, num_instances: int,
                classifier_fn: Callable, drop_none: bool = False, buffer_size: int = 1000):
        if num_instances < 1:
            raise ValueError(f"Expected `num_instances` larger than 0, but {num_instances} is "
                             "found")
        _check_unpickable_fn(classifier_fn)
        # one instance stays a demux (not a filter): classification errors still raise
        container = _DemultiplexerIterDataPipe(datapipe, num_instances, classifier_fn,
                                               drop_none, buffer_size)
        return [_ChildDataPipe(container, i) for i in range(num_instances)]


class _DemultiplexerIterDataPipe(IterDataPipe, _ContainerTemplate):
    """The demux's container: one iterator over the source and a queue per child of the
    elements classified to it while another child was reading."""

    def __init__(self, datapipe: IterDataPipe, num_instances: int, classifier_fn: Callable,
                 drop_none: bool, buffer_size: int):
        self.main_datapipe = datapipe
        self._datapipe_iterator = None
        self.num_instances = num_instances
        self.buffer_size = buffer_size
        if self.buffer_size < 0:
            warnings.warn("Unlimited buffer size is set for `demux`, please be aware of OOM at "
                          "random places", UserWarning, stacklevel=2)
        self.classifier_fn = classifier_fn
        self.drop_none = drop_none
        self._init_buffers()

    def _init_buffers(self):
        self.current_buffer_usage = 0
        self.child_buffers = [deque() for _ in range(self.num_instances)]
        self._child_stop = [True] * self.num_instances
        self.main_datapipe_exhausted = False

    def _find_next(self, instance_id: int):
        while True:
            if self.main_datapipe_exhausted or self._child_stop[instance_id]:
                raise StopIteration
            if self._datapipe_iterator is None:
                raise ValueError(
                    "_datapipe_iterator has not been set, likely because this private method "
                    "is called directly without invoking get_next_element_by_instance() first.")
            value = next(self._datapipe_iterator)
            classification = self.classifier_fn(value)
            if classification is None and self.drop_none:
                StreamWrapper.close_streams(value)
                continue
            if (classification is None or classification >= self.num_instances
                    or classification < 0):
                raise ValueError("Output of the classification fn should be between 0 and "
                                 f"{self.num_instances - 1}. {classification} is returned.")
            if classification == instance_id:
                return value
            self.child_buffers[classification].append(value)
            self.current_buffer_usage += 1
            if self.buffer_size >= 0 and self.current_buffer_usage > self.buffer_size:
                raise BufferError(f"DemultiplexerIterDataPipe buffer overflow, buffer size "
                                  f"{self.buffer_size} is insufficient.")

    def get_next_element_by_instance(self, instance_id: int):
        if self._datapipe_iterator is None and self._child_stop[instance_id]:
            self._datapipe_iterator = iter(self.main_datapipe)
            self._snapshot_state = _SnapshotState.Iterating  # so that reset() really resets
            self.main_datapipe_exhausted = False
            for i in range(self.num_instances):
                self._child_stop[i] = False
        try:
            while not self._child_stop[instance_id]:
                if self.child_buffers[instance_id]:
                    self.current_buffer_usage -= 1
                    yield self.child_buffers[instance_id].popleft()
                else:
                    try:
                        yield self._find_next(instance_id)
                    except StopIteration:
                        self._child_stop[instance_id] = True
                        self.main_datapipe_exhausted = True
                        self._datapipe_iterator = None
        finally:
            self._child_stop[instance_id] = True
            if all(self._child_stop):
                self._datapipe_iterator = None
            if self.child_buffers[instance_id]:
                self._cleanup(instance_id)

    def is_every_instance_exhausted(self) -> bool:
        return self.main_datapipe_exhausted and all(self._child_stop)

    def get_length_by_instance(self, instance_id: int) -> int:
        raise TypeError

    def reset(self):
        self._datapipe_iterator = None
        self._init_buffers()

    def __getstate__(self):
        state = (self.main_datapipe, self.num_instances, self.buffer_size, self.classifier_fn,
                 self.drop_none, self._valid_iterator_id, self._number_of_samples_yielded)
        if IterDataPipe.getstate_hook is not None:
            return IterDataPipe.getstate_hook(state)
        return state

    def __setstate__(self, state):
        (self.main_datapipe, self.num_instances, self.buffer_size, self.classifier_fn,
         self.drop_none, self._valid_iterator_id, self._number_of_samples_yielded) = state
        self._datapipe_iterator = None
        self._init_buffers()

    def _cleanup(self, instance_id: int | None = None):
        for i in range(self.num_instances) if instance_id is None else [instance_id]:
            q = self.child_buffers[i]
            while q:
                StreamWrapper.close_streams(q.popleft())

    def __del__(self):
        self._cleanup()


@functional_datapipe("mux")
class MultiplexerIterDataPipe(IterDataPipe):
    """One element from each datapipe in turn, until the shortest ends — a round cut short
    by it is dropped (functional name: ``mux``)."""

    def __init__(self, *datapipes):
        self.datapipes = datapipes
        self.buffer: list = []  # the current round, yielded once every datapipe gave one

    def __iter__(self):
        iterators = [iter(x) for x in self.datapipes]
        while iterators:
            for it in iterators:
                try:
                    self.buffer.append(next(it))
                except StopIteration:
                    self.buffer.clear()
                    return
            yield from self.buffer
            self.buffer.clear()

    def __len__(self):
        if all(isinstance(dp, Sized) for dp in self.datapipes):
            return min(len(dp) for dp in self.datapipes) * len(self.datapipes)
        raise _no_length(self)

    def reset(self):
        self.buffer = []

    def __getstate__(self):
        state = (self.datapipes, self._valid_iterator_id, self._number_of_samples_yielded)
        if IterDataPipe.getstate_hook is not None:
            return IterDataPipe.getstate_hook(state)
        return state

    def __setstate__(self, state):
        self.datapipes, self._valid_iterator_id, self._number_of_samples_yielded = state
        self.buffer = []

    def __del__(self):
        self.buffer.clear()


@functional_datapipe("zip")
class ZipperIterDataPipe(IterDataPipe[tuple[_T_co]]):
    """Tuples of one element from each datapipe, until the shortest ends (functional name:
    ``zip``)."""

    datapipes: tuple[IterDataPipe]

    def __init__(self, *datapipes: IterDataPipe):
        if not all(isinstance(dp, IterDataPipe) for dp in datapipes):
            raise TypeError("All inputs are required to be `IterDataPipe` for "
                            "`ZipIterDataPipe`.")
        super().__init__()
        self.datapipes = datapipes

    def __iter__(self) -> Iterator[tuple[_T_co]]:
        iterators = [iter(datapipe) for datapipe in self.datapipes]
        yield from zip(*iterators)

    def __len__(self) -> int:
        if all(isinstance(dp, Sized) for dp in self.datapipes):
            return min(len(dp) for dp in self.datapipes)
        raise _no_length(self)
