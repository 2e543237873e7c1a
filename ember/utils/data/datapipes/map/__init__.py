"""``torch.utils.data.datapipes.map``: the map-style datapipes under their short names.
Importing the modules registers their functional forms on ``MapDataPipe``."""
from .callable import MapperMapDataPipe as Mapper
from .combinatorics import ShufflerIterDataPipe as Shuffler
from .combining import ConcaterMapDataPipe as Concater
from .combining import ZipperMapDataPipe as Zipper
from .grouping import BatcherMapDataPipe as Batcher
from .utils import SequenceWrapperMapDataPipe as SequenceWrapper

__all__ = ["Batcher", "Concater", "Mapper", "SequenceWrapper", "Shuffler", "Zipper"]
