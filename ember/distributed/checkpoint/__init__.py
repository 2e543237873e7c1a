"""``ember.distributed.checkpoint``: PyTorch's distributed checkpoint (DCP) for plain tensors
and other values, in PyTorch's on-disk format, so each reads the other's checkpoints.

``save``/``load`` (``state_dict_saver``/``state_dict_loader``) run the planners
(``default_planner``: flattening nested dicts to dotted keys, deduplicating replicated values
across ranks) and the storage (``filesystem``: ``.metadata`` + ``__<rank>_<n>.distcp``;
``hf_storage``: HuggingFace safetensors files);
``state_dict`` turns models and optimizers into state dicts keyed by parameter FQNs and back.
DCP saves whole (replicated) tensors: ember's DTensor lacks the checkpoint hooks
(``__create_write_items__``, ``__create_chunk_list__``) that would save each rank's shard, so
a sharded model is saved through ``get_model_state_dict(..., full_state_dict=True)``; a
checkpoint that PyTorch saved from shards loads into whole tensors, chunk by chunk.
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
