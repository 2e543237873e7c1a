"""``SequenceWrapper``: a sequence or mapping as a MapDataPipe."""
import copy
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from ..datapipe import MapDataPipe

_T = TypeVar("_T")

__all__ = ["SequenceWrapperMapDataPipe"]


class SequenceWrapperMapDataPipe(MapDataPipe[_T]):
    """Wraps ``sequence`` (deep-copied once, by default; a warning and the original if it
    cannot be)."""

    sequence: Sequence[_T] | Mapping[Any, _T]

    def __init__(self, sequence: Sequence[_T] | Mapping[Any, _T], deepcopy: bool = True):
        if deepcopy:
            try:
                self.sequence = copy.deepcopy(sequence)
            except TypeError:
                warnings.warn("The input sequence can not be deepcopied, please be aware of "
                              "in-place modification would affect source data", stacklevel=2)
                self.sequence = sequence
        else:
            self.sequence = sequence

    def __getitem__(self, index: int) -> _T:
        return self.sequence[index]

    def __len__(self) -> int:
        return len(self.sequence)
