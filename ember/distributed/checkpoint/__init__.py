"""``ember.distributed.checkpoint``: PyTorch's distributed checkpoint (DCP), in PyTorch's
on-disk format, so each reads the other's checkpoints.

``save``/``load`` (``state_dict_saver``/``state_dict_loader``) run the planners
(``default_planner``, with the items of ``planner_helpers``: flattening nested dicts to dotted
keys, deduplicating replicated values across ranks) and the storage (``filesystem``:
``.metadata`` + ``__<rank>_<n>.distcp``; ``hf_storage``: HuggingFace safetensors files).
A DTensor (``fully_shard``'s or tensor parallelism's parameters and their optimizer states) is
saved as shards: each rank writes its own (a replica once), the metadata records each chunk's
global offsets, and a load reads into each rank's shard the overlapping pieces of the saved
chunks, so a checkpoint loads under another sharding or number of ranks, or whole.
``state_dict`` turns models and optimizers into state dicts keyed by parameter FQNs and back,
sharded or full (gathered, or loaded from rank 0's with ``broadcast_from_rank0``).
"""
from .api import CheckpointException
from .default_planner import DefaultLoadPlanner, DefaultSavePlanner
from .filesystem import FileSystemReader, FileSystemWriter
from .hf_storage import HuggingFaceStorageReader, HuggingFaceStorageWriter
from .metadata import BytesStorageMetadata, ChunkStorageMetadata, Metadata, TensorStorageMetadata
from .planner import LoadPlan, LoadPlanner, ReadItem, SavePlan, SavePlanner, WriteItem
from .state_dict_loader import load, load_state_dict
from .state_dict_saver import async_save, save, save_state_dict
from .storage import StorageReader, StorageWriter

__all__ = ["CheckpointException", "DefaultLoadPlanner", "DefaultSavePlanner",
           "FileSystemReader", "FileSystemWriter", "HuggingFaceStorageReader",
           "HuggingFaceStorageWriter", "BytesStorageMetadata",
           "ChunkStorageMetadata", "Metadata", "TensorStorageMetadata", "LoadPlan", "LoadPlanner",
           "ReadItem", "SavePlan", "SavePlanner", "WriteItem", "load", "load_state_dict", "save",
           "save_state_dict", "async_save",
           "StorageReader", "StorageWriter"]
