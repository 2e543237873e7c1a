"""What a checkpoint save or load plans (PyTorch's ``torch.distributed.checkpoint.planner``):
write and read items, the plans that carry them between ranks, and the planner interfaces whose
defaults are in ``default_planner``.

A save runs ``set_up_planner`` and ``create_local_plan`` on every rank, ``create_global_plan`` on
the coordinator (rank 0) over all local plans, ``finish_plan`` on every rank with its part of the
global plan, then ``resolve_data`` per item while the storage writer writes. A load is the same
with ``resolve_tensor``/``commit_tensor``/``load_bytes`` while the storage reader reads.
"""
import abc
import operator
from dataclasses import dataclass
from enum import Enum, auto
from functools import reduce
from typing import Any

from .metadata import ChunkStorageMetadata, MetadataIndex, TensorProperties
from ..._core.size import Size

__all__ = ["WriteItemType", "LoadItemType", "BytesIOWriteData", "TensorWriteData", "WriteItem",
           "ReadItem", "SavePlan", "LoadPlan", "SavePlanner", "LoadPlanner"]


class WriteItemType(Enum):
    TENSOR = auto()
    SHARD = auto()
    BYTE_IO = auto()


class LoadItemType(Enum):
    TENSOR = auto()
    BYTE_IO = auto()


@dataclass(frozen=True)
class BytesIOWriteData:
    nbytes: int


@dataclass(frozen=True)
class TensorWriteData:
    chunk: ChunkStorageMetadata
    properties: TensorProperties
    size: Size


@dataclass(frozen=True)
class WriteItem:
    """What needs to be written to storage: a tensor (chunk) or a byte object."""

    index: MetadataIndex
    type: WriteItemType
    bytes_io_data: BytesIOWriteData | None = None
    tensor_data: TensorWriteData | None = None

    def tensor_storage_size(self):
        """The bytes of the tensor written, or None if this is not a tensor write."""
        if self.tensor_data is None:
            return None
        numels = reduce(operator.mul, self.tensor_data.size, 1)
        return numels * self.tensor_data.properties.dtype.itemsize


@dataclass(frozen=True)
class ReadItem:
    """A hypercube to copy from a saved chunk (storage index and offsets) into a state-dict
    entry (destination index and offsets)."""

    type: LoadItemType
    dest_index: MetadataIndex
    dest_offsets: Size
    storage_index: MetadataIndex
    storage_offsets: Size
    lengths: Size


@dataclass(frozen=True)
class SavePlan:
    items: list
    storage_data: Any = None
    planner_data: Any = None
    usable: bool = True


@dataclass
class LoadPlan:
    items: list
    storage_data: Any = None
    planner_data: Any = None


class SavePlanner(abc.ABC):
    """Plans a save: see the module docstring for the order of the calls."""

    @abc.abstractmethod
    def set_up_planner(self, state_dict, storage_meta=None, is_coordinator=False):
        """Initialize this planner to save ``state_dict``."""

    @abc.abstractmethod
    def create_local_plan(self):
        """This rank's writes."""

    @abc.abstractmethod
    def create_global_plan(self, all_plans):
        """On the coordinator: every rank's final plan, and the checkpoint's Metadata."""

    @abc.abstractmethod
    def finish_plan(self, new_plan):
        """Adopt the coordinator's plan for this rank."""

    @abc.abstractmethod
    def resolve_data(self, write_item):
        """The tensor or ``io.BytesIO`` to write for ``write_item``."""


class LoadPlanner(abc.ABC):
    """Plans a load: see the module docstring for the order of the calls."""

    @abc.abstractmethod
    def set_up_planner(self, state_dict, metadata=None, is_coordinator=False):
        """Initialize this planner to load into ``state_dict``."""

    @abc.abstractmethod
    def create_local_plan(self):
        """This rank's reads."""

    @abc.abstractmethod
    def create_global_plan(self, global_plan):
        """On the coordinator: every rank's final plan."""

    @abc.abstractmethod
    def finish_plan(self, central_plan):
        """Adopt the coordinator's plan for this rank."""

    @abc.abstractmethod
    def load_bytes(self, read_item, value):
        """Deserialize a byte object read for ``read_item`` into the state dict."""

    def resolve_bytes(self, read_item):
        """The buffer a byte object is read into."""
        raise NotImplementedError("LoadPlanner.resolve_bytes is not implemented")

    @abc.abstractmethod
    def resolve_tensor(self, read_item):
        """The tensor (a view of the state dict's) that ``read_item``'s data is copied into."""

    @abc.abstractmethod
    def commit_tensor(self, read_item, tensor):
        """Called once ``tensor`` (from ``resolve_tensor``) holds the data read."""
