"""Checkpoints as HuggingFace safetensors files (PyTorch's ``hf_storage``).

The writer puts each rank's tensor chunks into ``model-0000i-of-0000n.safetensors`` files
(``fqn_to_index_mapping`` picks the file of each FQN; with ``save_distributed`` every rank
writes its own ``shard-0000r-model-...`` files), each header's ``__metadata__`` recording where
every chunk starts in its full tensor. Finishing writes ``model.safetensors.index.json`` (rank-0
checkpoints), or merges the shards into full-tensor files (``enable_consolidation``), or writes
nothing (sharded checkpoints). No ``.metadata`` file is written: the reader rebuilds the DCP
metadata from the headers, so it also reads plain HuggingFace checkpoints, as full tensors.
Files are written and read with ``ember.safetensors``.
"""
import dataclasses
import json
import logging
import os

from ...safetensors import _DTYPES, load_file, save
from ..._core.size import Size
from ._consolidate_hf_safetensors import consolidate_safetensors_files
from ._hf_utils import (CUSTOM_METADATA_KEY, DCP_VERSION_KEY, DEFAULT_EXTRA_METADATA_KEY,
                        FORMAT_KEY, FORMAT_VALUE, HF_DCP_VERSION, SAVED_OFFSETS_KEY,
                        SHARDED_DIR_NAME, SUFFIX, _gen_file_name,
                        _get_safetensors_file_metadata, _HFStorageInfo, _metadata_fn)
from .default_planner import narrow_tensor_by_index
from .filesystem import (FileSystemReader, FileSystemWriter, SerializationFormat, _host_tensor,
                         _StorageInfo)
from .metadata import (ChunkStorageMetadata, Metadata, MetadataIndex, StorageMeta,
                       TensorProperties, TensorStorageMetadata)
from .planner import WriteItemType
from .storage import WriteResult

logger = logging.getLogger(__name__)

__all__ = ["HuggingFaceStorageWriter", "HuggingFaceStorageReader"]


def _done(value):
    from ...futures import Future
    fut = Future()
    fut.set_result(value)
    return fut


class HuggingFaceStorageWriter(FileSystemWriter):
    """
    A writer that writes to storage in the huggingface safetensors format.

    ``thread_count`` is accepted as in PyTorch, whose threads each write some of the files;
    ember writes them one after another.
    """

    def __init__(self, path, fqn_to_index_mapping=None, thread_count=1, save_distributed=False,
                 enable_consolidation=False, thread_count_consolidation=1):
        super().__init__(path=path, thread_count=thread_count)
        self.serialization_format = SerializationFormat.SAFETENSORS
        self.fqn_to_index_mapping = fqn_to_index_mapping
        self.save_distributed = save_distributed
        self.enable_consolidation = enable_consolidation
        self.consolidated_output_path = None
        if self.enable_consolidation:
            self.consolidated_output_path = str(self.path)
            self.path = self.fs.concat_path(self.path, SHARDED_DIR_NAME)
        self.thread_count_consolidation = thread_count_consolidation

    def prepare_global_plan(self, plans):
        new_plans = []
        for i, plan in enumerate(plans, start=1):
            storage_data = {}
            if self.fqn_to_index_mapping is not None:
                storage_data["fqn_to_index_mapping"] = self.fqn_to_index_mapping
            if self.save_distributed:
                storage_data["shard_index"] = i
            new_plans.append(dataclasses.replace(plan, storage_data=storage_data))
        return new_plans

    def write_data(self, plan, planner):
        if len(plan.items) == 0:
            return _done([])
        for item in plan.items:
            # PyTorch would write the pickled bytes in front of the safetensors header, leaving
            # a file nothing can read
            if item.type == WriteItemType.BYTE_IO:
                raise ValueError(f"HuggingFaceStorageWriter: safetensors files hold tensors "
                                 f"only, and {item.index.fqn!r} is not a tensor")
        storage_data = plan.storage_data
        storage_plan = storage_data.get("fqn_to_index_mapping")
        shard_index = storage_data.get("shard_index")
        buckets = self._split_by_storage_plan(storage_plan, plan.items)
        highest_index = max(storage_plan.values()) if storage_plan is not None else 1
        results = []
        for file_index, write_items in buckets.items():
            file_name = _gen_file_name(file_index, highest_index, shard_index)
            results += self._write_file(self.fs.concat_path(self.path, file_name), file_name,
                                        write_items, planner)
        return _done(results)

    def _write_file(self, path, file_name, write_items, planner):
        """One safetensors file of ``write_items``; each chunk's offsets go to the header."""
        results, tensor_dict, metadata_dict = [], {}, {}
        for item in write_items:
            tensor = _host_tensor(planner.resolve_data(item))
            length = tensor.numel() * tensor.element_size()
            results.append(WriteResult(index=item.index, size_in_bytes=length,
                                       storage_data=_StorageInfo(file_name, 0, length)))
            tensor_dict[item.index.fqn] = tensor
            metadata_dict[item.index.fqn] = {
                SAVED_OFFSETS_KEY: list(item.tensor_data.chunk.offsets)}
        data = save(tensor_dict, metadata={CUSTOM_METADATA_KEY: json.dumps(metadata_dict),
                                           DCP_VERSION_KEY: str(HF_DCP_VERSION),
                                           FORMAT_KEY: FORMAT_VALUE})
        with self.fs.create_stream(path, "wb") as stream:
            stream.write(data)
            if self.sync_files:
                stream.flush()
                os.fsync(stream.fileno())
        return results

    def finish(self, metadata, results):
        if self.save_distributed and not self.enable_consolidation:
            # the FQNs of a sharded checkpoint are spread over several files, so no index
            # file can map them to one
            logger.info("Not consolidating sharded checkpoint in finish step.")
            return
        if self.save_distributed:
            fqn_to_index_mapping = (self.fqn_to_index_mapping
                                    if self.fqn_to_index_mapping is not None
                                    else dict.fromkeys(metadata.state_dict_metadata.keys(), 1))
            return consolidate_safetensors_files(
                input_dir=str(self.path), output_dir=self.consolidated_output_path,
                num_threads=self.thread_count_consolidation,
                fqn_to_index_mapping=fqn_to_index_mapping)

        # the rank-0 checkpoint: model.safetensors.index.json maps each FQN to its file
        storage_md = {}
        total_size = 0
        for wr_list in results:
            storage_md.update({wr.index.fqn: wr.storage_data.relative_path for wr in wr_list})
            total_size += sum(wr.storage_data.length for wr in wr_list)
        metadata_to_write = {"metadata": {"total_size": total_size}, "weight_map": storage_md}
        metadata_path = self.fs.concat_path(self.path, _metadata_fn)
        with self.fs.create_stream(metadata_path, "w") as metadata_file:
            json.dump(metadata_to_write, metadata_file, indent=2)

    def _split_by_storage_plan(self, storage_plan, items):
        """The items per file index (all in file 1 without a plan)."""
        if storage_plan is None:
            return {1: items}
        buckets = {}
        for item in items:
            buckets.setdefault(storage_plan[item.index.fqn], []).append(item)
        return buckets

    @property
    def metadata_path(self):
        return _metadata_fn


class HuggingFaceStorageReader(FileSystemReader):
    """
    A reader that reads a checkpoint in the huggingface safetensors format.

    ``thread_count`` is accepted as in PyTorch, whose threads each read some of the files;
    ember reads them one after another.
    """

    def __init__(self, path, thread_count=1):
        super().__init__(path=path)
        self.thread_count = thread_count

    def _process_read_request(self, tensors, req, planner):
        """Copy the requested hypercube of a saved chunk into the planner's tensor."""
        tensor = narrow_tensor_by_index(tensors[req.storage_index.fqn], req.storage_offsets,
                                        req.lengths)
        target_tensor = planner.resolve_tensor(req).detach()
        if target_tensor.size() != tensor.size():
            raise AssertionError(f"req {req.storage_index} mismatch sizes "
                                 f"{target_tensor.size()} vs {tensor.size()}")
        target_tensor.copy_(tensor)
        planner.commit_tensor(req, target_tensor)

    def read_data(self, plan, planner):
        per_file = {}
        for read_item in plan.items:
            item_md = self.storage_data[read_item.storage_index]
            per_file.setdefault(item_md.relative_path, []).append(read_item)
        for file_name, reqs in per_file.items():
            tensors = load_file(file_name)
            for req in reqs:
                self._process_read_request(tensors, req, planner)
        return _done(None)

    def read_metadata(self):
        state_dict_metadata = {}
        storage_data = {}
        safetensors_files = [file for file in self.fs.ls(self.path) if file.endswith(SUFFIX)]
        for safetensor_file in safetensors_files:
            with self.fs.create_stream(safetensor_file, "rb") as f:
                header, _ = _get_safetensors_file_metadata(f)
            extra_metadata = header.pop(DEFAULT_EXTRA_METADATA_KEY, None)
            dcp_sharding_info = None
            if extra_metadata and extra_metadata.get(CUSTOM_METADATA_KEY):
                dcp_sharding_info = json.loads(extra_metadata.get(CUSTOM_METADATA_KEY))
            for key in sorted(header):
                shape = header[key]["shape"]
                dtype = _DTYPES[header[key]["dtype"]]
                if dcp_sharding_info is not None:
                    offset = dcp_sharding_info[key][SAVED_OFFSETS_KEY]
                else:
                    offset = [0] * len(shape)
                chunk = ChunkStorageMetadata(offsets=Size(offset), sizes=Size(shape))
                if key not in state_dict_metadata:
                    state_dict_metadata[key] = TensorStorageMetadata(
                        properties=TensorProperties(dtype=dtype),
                        size=Size([saved + off for saved, off in zip(shape, offset)]),
                        chunks=[chunk])
                else:
                    md = state_dict_metadata[key]
                    md.chunks.append(chunk)
                    md.size = Size([max(size, saved + off)
                                    for size, saved, off in zip(md.size, shape, offset)])
                storage_data[MetadataIndex(fqn=key, offset=offset)] = _HFStorageInfo(
                    relative_path=safetensor_file, shape=Size(shape), dtype=dtype)
        metadata = Metadata(state_dict_metadata=state_dict_metadata, storage_data=storage_data)
        metadata.storage_meta = StorageMeta()
        metadata.storage_meta.load_id = self.load_id
        return metadata
