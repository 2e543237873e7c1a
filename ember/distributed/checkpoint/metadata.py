"""The checkpoint's metadata classes (PyTorch's ``torch.distributed.checkpoint.metadata``).

The ``.metadata`` file is a pickle of :class:`Metadata`; ember writes these classes under
PyTorch's module path and reads PyTorch's names back as these classes (see ``filesystem``), so
the field names and pickled states here are PyTorch's exactly.
"""
import os
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from ..._core.device import channels_last, contiguous_format, layout, memory_format, \
    preserve_format, strided
from ..._core.dtype import dtype, get_default_dtype
from ..._core.size import Size

__all__ = ["ChunkStorageMetadata", "TensorStorageMetadata", "BytesStorageMetadata", "Metadata",
           "MetadataIndex", "TensorProperties", "StorageMeta"]

@dataclass
class ChunkStorageMetadata:
    """One saved chunk of a tensor: where it starts and its sizes."""

    offsets: Size
    sizes: Size


class _MEM_FORMAT_ENCODING(Enum):
    """A memory format as it is pickled (memory formats themselves are not picklable)."""

    TORCH_CONTIGUOUS_FORMAT = 0
    TORCH_CHANNELS_LAST = 1
    TORCH_PRESERVE_FORMAT = 2


_ENCODINGS = ((contiguous_format, _MEM_FORMAT_ENCODING.TORCH_CONTIGUOUS_FORMAT),
              (channels_last, _MEM_FORMAT_ENCODING.TORCH_CHANNELS_LAST),
              (preserve_format, _MEM_FORMAT_ENCODING.TORCH_PRESERVE_FORMAT))


@dataclass
class TensorProperties:
    """Properties used to create a :class:`Tensor`."""

    dtype: dtype = field(default_factory=get_default_dtype)
    layout: layout = field(default=strided)
    requires_grad: bool = False
    memory_format: memory_format = field(default=contiguous_format)
    pin_memory: bool = False

    def __getstate__(self):
        for fmt, encoding in _ENCODINGS:
            if self.memory_format == fmt:
                break
        else:
            raise RuntimeError(f"Invalid torch.memory_format: {self.memory_format}")
        return (self.dtype, self.layout, self.requires_grad, encoding, self.pin_memory)

    def __setstate__(self, state):
        self.dtype, self.layout, self.requires_grad, encoding, self.pin_memory = state
        for fmt, enc in _ENCODINGS:
            if encoding == enc:
                self.memory_format = fmt
                return
        raise RuntimeError(f"Invalid torch.memory_format encoding: {encoding}")

    @staticmethod
    def create_from_tensor(tensor):
        return TensorProperties(dtype=tensor.dtype, layout=tensor.layout,
                                requires_grad=tensor.requires_grad,
                                memory_format=contiguous_format, pin_memory=tensor.is_pinned())


@dataclass
class TensorStorageMetadata:
    properties: TensorProperties
    size: Size
    chunks: list


@dataclass
class BytesStorageMetadata:
    pass


@dataclass
class StorageMeta:
    checkpoint_id: str | os.PathLike | None = None
    save_id: str | None = None
    load_id: str | None = None
    modules: list = field(default_factory=list)


@dataclass
class Metadata:
    """The metadata of a checkpoint: per flattened key, a tensor's or a byte object's
    metadata; the planner's and the storage's own data."""

    state_dict_metadata: dict
    planner_data: Any = None
    storage_data: Any = None
    storage_meta: StorageMeta | None = None
    version: str | None = None


@dataclass(frozen=True)
class MetadataIndex:
    """A lookup key for items in a state dict or Metadata: the FQN, the chunk's offset in its
    tensor, and an index hint into the chunk list (not part of equality)."""

    fqn: str
    offset: Size | None = None
    index: int | None = field(hash=False, compare=False, default=None)

    def __init__(self, fqn, offset=None, index=None):
        object.__setattr__(self, "fqn", fqn)
        object.__setattr__(self, "index", index)
        if offset is not None:
            object.__setattr__(self, "offset", Size(offset))
