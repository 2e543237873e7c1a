"""``Batcher`` (``batch``) of a MapDataPipe: ``self[i]`` is the ``i``-th batch."""
from collections.abc import Sized
from typing import TypeVar

from .._decorator import functional_datapipe
from ..datapipe import DataChunk, MapDataPipe

__all__ = ["BatcherMapDataPipe"]

_T = TypeVar("_T")


@functional_datapipe("batch")
class BatcherMapDataPipe(MapDataPipe[DataChunk]):
    """``self[i]`` is ``wrapper_class([datapipe[j] for j in batch i])``; the last, shorter
    batch is an IndexError with ``drop_last`` (functional name: ``batch``)."""

    datapipe: MapDataPipe
    batch_size: int
    drop_last: bool

    def __init__(self, datapipe: MapDataPipe[_T], batch_size: int, drop_last: bool = False,
                 wrapper_class: type[DataChunk] = DataChunk):
        if batch_size <= 0:
            raise AssertionError("Batch size is required to be larger than 0!")
        super().__init__()
        self.datapipe = datapipe
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.wrapper_class = wrapper_class

    def __getitem__(self, index) -> DataChunk:
        batch: list = []
        indices = range(index * self.batch_size, (index + 1) * self.batch_size)
        try:
            batch.extend(self.datapipe[i] for i in indices)
            return self.wrapper_class(batch)
        except IndexError as e:
            if not self.drop_last and len(batch) > 0:
                return self.wrapper_class(batch)
            raise IndexError(f"Index {index} is out of bound.") from e

    def __len__(self) -> int:
        if isinstance(self.datapipe, Sized):
            if self.drop_last:
                return len(self.datapipe) // self.batch_size
            return (len(self.datapipe) + self.batch_size - 1) // self.batch_size
        raise TypeError(f"{type(self).__name__} instance doesn't have valid length")
