"""The storage layer's interfaces (PyTorch's ``torch.distributed.checkpoint.storage``): where a
checkpoint's data and metadata go. ``filesystem`` implements them over a directory."""
import abc
from dataclasses import dataclass
from typing import Any

from .metadata import MetadataIndex

__all__ = ["WriteResult", "StorageWriter", "StorageReader"]


@dataclass(frozen=True)
class WriteResult:
    index: MetadataIndex
    size_in_bytes: int
    storage_data: Any


class StorageWriter(abc.ABC):
    """Writes a checkpoint. ``save`` calls, in order: ``reset``, ``set_up_storage_writer``,
    ``prepare_local_plan`` (every rank), ``prepare_global_plan`` (coordinator), ``write_data``
    (every rank), ``finish`` (coordinator)."""

    @abc.abstractmethod
    def reset(self, checkpoint_id=None):
        """Start a new checkpoint (at ``checkpoint_id`` when given)."""

    @abc.abstractmethod
    def set_up_storage_writer(self, is_coordinator, *args, **kwargs):
        """Initialize this writer."""

    @abc.abstractmethod
    def prepare_local_plan(self, plan):
        """Adapt this rank's plan to the storage."""

    @abc.abstractmethod
    def prepare_global_plan(self, plans):
        """Adapt every rank's plan to the storage (on the coordinator)."""

    @abc.abstractmethod
    def write_data(self, plan, planner):
        """Write the plan's items; a Future of their WriteResults."""

    @abc.abstractmethod
    def finish(self, metadata, results):
        """Write the metadata, with every rank's WriteResults, so the checkpoint is complete."""

    @classmethod
    @abc.abstractmethod
    def validate_checkpoint_id(cls, checkpoint_id):
        """Whether this storage can write ``checkpoint_id``."""

    def storage_meta(self):
        """The StorageMeta recorded in the checkpoint's metadata."""
        return None


class StorageReader(abc.ABC):
    """Reads a checkpoint. ``load`` calls, in order: ``reset``, ``read_metadata``,
    ``set_up_storage_reader``, ``prepare_local_plan``, ``prepare_global_plan`` (coordinator),
    ``read_data``."""

    @abc.abstractmethod
    def reset(self, checkpoint_id=None):
        """Start reading a checkpoint (``checkpoint_id`` when given)."""

    @abc.abstractmethod
    def read_metadata(self, *args, **kwargs):
        """The checkpoint's Metadata."""

    @abc.abstractmethod
    def set_up_storage_reader(self, metadata, is_coordinator, *args, **kwargs):
        """Initialize this reader with the checkpoint's metadata."""

    @abc.abstractmethod
    def prepare_local_plan(self, plan):
        """Adapt this rank's plan to the storage."""

    @abc.abstractmethod
    def prepare_global_plan(self, plans):
        """Adapt every rank's plan to the storage (on the coordinator)."""

    @abc.abstractmethod
    def read_data(self, plan, planner):
        """Read the plan's items through the planner; a Future that completes when done."""

    @classmethod
    @abc.abstractmethod
    def validate_checkpoint_id(cls, checkpoint_id):
        """Whether this storage can read ``checkpoint_id``."""
