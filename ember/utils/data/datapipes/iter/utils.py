"""``IterableWrapper``: any iterable as an IterDataPipe (deep-copied per iterator by
default, so in-place edits downstream do not change the next epoch)."""
import copy
import warnings
from collections.abc import Iterable, Iterator, Sized
from typing import TypeVar

from ..datapipe import IterDataPipe

_T = TypeVar("_T")

__all__ = ["IterableWrapperIterDataPipe"]


class IterableWrapperIterDataPipe(IterDataPipe[_T]):
    """Wraps ``iterable``; with ``deepcopy`` each iterator reads a deep copy made at its
    first element (a warning, and the original, if it cannot be deep-copied)."""

    def __init__(self, iterable: Iterable[_T], deepcopy: bool = True):
        self.iterable = iterable
        self.deepcopy = deepcopy

    def __iter__(self) -> Iterator[_T]:
        source_data = self.iterable
        if self.deepcopy:
            try:
                source_data = copy.deepcopy(self.iterable)
            except TypeError:
                warnings.warn("The input iterable can not be deepcopied, please be aware of "
                              "in-place modification would affect source data.", stacklevel=2)
        yield from source_data

    def __len__(self) -> int:
        if isinstance(self.iterable, Sized):
            return len(self.iterable)
        raise TypeError(f"{type(self).__name__} instance doesn't have valid length")
