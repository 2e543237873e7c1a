"""Batching: ``Batcher`` (``batch``: consecutive elements into ``DataChunk``s),
``UnBatcher`` (``unbatch``: flatten batches, to a depth) and ``Grouper`` (``groupby``: batches
of elements sharing a key, from a bounded buffer)."""
from collections import defaultdict
from collections.abc import Callable, Iterator, Sized
from typing import Any, TypeVar

from .._decorator import functional_datapipe
from ..datapipe import DataChunk, IterDataPipe
from ..utils.common import _check_unpickable_fn

__all__ = ["BatcherIterDataPipe", "GrouperIterDataPipe", "UnBatcherIterDataPipe"]

_T_co = TypeVar("_T_co", covariant=True)


def __getattr__(name: str):
    raise AttributeError(f"module {__name__} has no attribute {name}")


@functional_datapipe("batch")
class BatcherIterDataPipe(IterDataPipe[DataChunk]):
    """Batches of ``batch_size`` consecutive elements, each wrapped in ``wrapper_class``; the
    last, shorter one is dropped with ``drop_last`` (functional name: ``batch``)."""

    datapipe: IterDataPipe
    batch_size: int
    drop_last: bool

    def __init__(self, datapipe: IterDataPipe, batch_size: int, drop_last: bool = False,
                 wrapper_class: type[DataChunk] = DataChunk):
        if batch_size <= 0:
            raise AssertionError("Batch size is required to be larger than 0!")
        super().__init__()
        self.datapipe = datapipe
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.wrapper_class = wrapper_class

    def __iter__(self) -> Iterator[DataChunk]:
        batch: list = []
        for x in self.datapipe:
            batch.append(x)
            if len(batch) == self.batch_size:
                yield self.wrapper_class(batch)
                batch = []
        if len(batch) > 0 and not self.drop_last:
            yield self.wrapper_class(batch)

    def __len__(self) -> int:
        if isinstance(self.datapipe, Sized):
            if self.drop_last:
                return len(self.datapipe) // self.batch_size
            return (len(self.datapipe) + self.batch_size - 1) // self.batch_size
        raise TypeError(f"{type(self).__name__} instance doesn't have valid length")


@functional_datapipe("unbatch")
class UnBatcherIterDataPipe(IterDataPipe):
    """Flattens ``unbatch_level`` levels of lists/DataChunks (``-1``: all) (functional name:
    ``unbatch``)."""

    def __init__(self, datapipe: IterDataPipe, unbatch_level: int = 1):
        self.datapipe = datapipe
        self.unbatch_level = unbatch_level

    def __iter__(self):
        for element in self.datapipe:
            yield from self._dive(element, unbatch_level=self.unbatch_level)

    def _dive(self, element, unbatch_level):
        if unbatch_level < -1:
            raise ValueError("unbatch_level must be -1 or >= 0")
        if unbatch_level == -1:
            if isinstance(element, (list, DataChunk)):
                for item in element:
                    yield from self._dive(item, unbatch_level=-1)
            else:
                yield element
        elif unbatch_level == 0:
            yield element
        elif isinstance(element, (list, DataChunk)):
            for item in element:
                yield from self._dive(item, unbatch_level=unbatch_level - 1)
        else:
            raise IndexError(f"unbatch_level {self.unbatch_level} exceeds the depth of the "
                             "DataPipe")


@functional_datapipe("groupby")
class GrouperIterDataPipe(IterDataPipe[DataChunk]):
    """Groups elements by ``group_key_fn`` (functional name: ``groupby``). A group is yielded
    when it reaches ``group_size``; when ``buffer_size`` elements are buffered the largest
    group is yielded if it has ``guaranteed_group_size`` (else dropped with
    ``drop_remaining``, else ``RuntimeError``); at the end every group left is yielded, in
    first-seen order. ``keep_key``: yield ``(key, group)``."""

    def __init__(self, datapipe: IterDataPipe[_T_co], group_key_fn: Callable[[_T_co], Any], *,
                 keep_key: bool = False, buffer_size: int = 10000,
                 group_size: int | None = None, guaranteed_group_size: int | None = None,
                 drop_remaining: bool = False):
        _check_unpickable_fn(group_key_fn)
        self.datapipe = datapipe
        self.group_key_fn = group_key_fn
        self.keep_key = keep_key
        self.max_buffer_size = buffer_size
        self.buffer_elements: defaultdict[Any, list] = defaultdict(list)
        self.curr_buffer_size = 0
        self.group_size = group_size
        self.guaranteed_group_size = None
        if group_size is not None and buffer_size is not None:
            if not (0 < group_size <= buffer_size):
                raise AssertionError("group_size must be > 0 and <= buffer_size")
            self.guaranteed_group_size = group_size
        if guaranteed_group_size is not None:
            if group_size is None or not (0 < guaranteed_group_size <= group_size):
                raise AssertionError("guaranteed_group_size must be > 0 and <= group_size and "
                                     "group_size must be set")
            self.guaranteed_group_size = guaranteed_group_size
        self.drop_remaining = drop_remaining
        self.wrapper_class = DataChunk

    def _remove_biggest_key(self):
        biggest_key, biggest_size, result_to_yield = None, 0, None
        for findkey in self.buffer_elements:
            if len(self.buffer_elements[findkey]) > biggest_size:
                biggest_size = len(self.buffer_elements[findkey])
                biggest_key = findkey
        if (self.guaranteed_group_size is not None and biggest_size < self.guaranteed_group_size
                and not self.drop_remaining):
            raise RuntimeError("Failed to group items", str(self.buffer_elements[biggest_key]))
        if self.guaranteed_group_size is None or biggest_size >= self.guaranteed_group_size:
            result_to_yield = self.buffer_elements[biggest_key]
        self.curr_buffer_size -= biggest_size
        del self.buffer_elements[biggest_key]
        return result_to_yield

    def __iter__(self):
        for x in self.datapipe:
            key = self.group_key_fn(x)
            self.buffer_elements[key].append(x)
            self.curr_buffer_size += 1
            if self.group_size is not None and self.group_size == len(self.buffer_elements[key]):
                result = self.wrapper_class(self.buffer_elements[key])
                yield (key, result) if self.keep_key else result
                self.curr_buffer_size -= len(self.buffer_elements[key])
                del self.buffer_elements[key]
            if self.curr_buffer_size == self.max_buffer_size:
                result_to_yield = self._remove_biggest_key()
                if result_to_yield is not None:
                    # (paired with the current element's key, as PyTorch does)
                    result = self.wrapper_class(result_to_yield)
                    yield (key, result) if self.keep_key else result
        for key in tuple(self.buffer_elements.keys()):
            result = self.wrapper_class(self.buffer_elements.pop(key))
            self.curr_buffer_size -= len(result)
            yield (key, result) if self.keep_key else result

    def reset(self):
        self.curr_buffer_size = 0
        self.buffer_elements = defaultdict(list)

    def __getstate__(self):
        state = (self.datapipe, self.group_key_fn, self.keep_key, self.max_buffer_size,
                 self.group_size, self.guaranteed_group_size, self.drop_remaining,
                 self.wrapper_class, self._valid_iterator_id, self._number_of_samples_yielded)
        if IterDataPipe.getstate_hook is not None:
            return IterDataPipe.getstate_hook(state)
        return state

    def __setstate__(self, state):
        (self.datapipe, self.group_key_fn, self.keep_key, self.max_buffer_size,
         self.group_size, self.guaranteed_group_size, self.drop_remaining, self.wrapper_class,
         self._valid_iterator_id, self._number_of_samples_yielded) = state
        self.curr_buffer_size = 0
        self.buffer_elements = defaultdict(list)

    def __del__(self):
        self.buffer_elements.clear()
