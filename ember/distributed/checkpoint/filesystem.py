"""Checkpoints in a directory, in PyTorch's layout (PyTorch's ``filesystem``).

Each rank writes its items to ``__<rank>_<n>.distcp`` (``n`` counts the rank's files: one per
rank, or one per writer thread's bucket, or one per item without ``single_file_per_rank``): the
byte objects first, then the tensors, each as a complete ``ember.save`` zip appended to the
file; the coordinator then writes ``.metadata``, a pickle of :class:`Metadata` whose
``storage_data`` maps each item's ``MetadataIndex`` to its file, offset and length. The pickle
names PyTorch's classes (``torch.distributed.checkpoint.metadata.Metadata``...) so that PyTorch
reads ember's checkpoints; reading maps those names back to ember's classes.
"""
import dataclasses
import io
import operator
import os
import pickle
import uuid
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from ..._core.api_name import as_ember
from .metadata import StorageMeta
from .planner import LoadItemType, WriteItemType
from .storage import StorageReader, StorageWriter, WriteResult

__all__ = ["FileSystemWriter", "FileSystemReader", "FileSystem", "SerializationFormat"]

_metadata_fn = ".metadata"
CURRENT_DCP_VERSION = "1.0.0"
DEFAULT_SUFFIX = ".distcp"


@dataclass
class _StorageInfo:
    """Where one item lives: its file (relative to the checkpoint), offset and length."""

    relative_path: str
    offset: int
    length: int
    transform_descriptors: list | None = None

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if v is not None}


@dataclass
class _StoragePrefix:
    prefix: str


class SerializationFormat(Enum):
    TORCH_SAVE = "torch_save"
    SAFETENSORS = "safetensors"


def _generate_uuid():
    return str(uuid.uuid4())


def _metadata_pickler(f):
    """A pickler that writes ember's checkpoint classes under PyTorch's module paths."""
    from ...serialization import _Global, _Pickler

    class _MetadataPickler(_Pickler):
        def save_global(self, obj, name=None):
            module = as_ember(getattr(obj, "__module__", None)) or ""
            if module.startswith("ember.distributed.checkpoint"):
                return self._save_global_ref(_Global("torch" + module[len("ember"):],
                                                     name or obj.__qualname__))
            return super().save_global(obj, name)

    return _MetadataPickler(f, pickle.DEFAULT_PROTOCOL)


def _load_metadata(f):
    """Unpickle a ``.metadata`` file; PyTorch's names resolve to ember's twins."""
    from ...serialization import _Unpickler, _no_storage
    return _Unpickler(f, False, _no_storage).load()


class FileSystem:
    """Local paths (PyTorch's ``FileSystem``)."""

    @contextmanager
    def create_stream(self, path, mode):
        with Path(path).open(mode) as stream:
            yield stream

    def concat_path(self, path, suffix):
        return Path(path) / suffix

    def init_path(self, path):
        return Path(path)

    def rename(self, path, new_path):
        Path(path).rename(new_path)

    def mkdir(self, path):
        Path(path).mkdir(parents=True, exist_ok=True)

    @classmethod
    def validate_checkpoint_id(cls, checkpoint_id):
        if isinstance(checkpoint_id, Path):
            return True
        if "://" in str(checkpoint_id):
            return False
        return any(p.exists() and os.access(str(p), os.W_OK) for p in Path(checkpoint_id).parents)

    def exists(self, path):
        return Path(path).exists()

    def rm_file(self, path):
        Path(path).unlink()

    def ls(self, path):
        return [str(p) for p in Path(path).iterdir()]


def _item_size(item):
    size = 1
    for s in item.tensor_data.size:
        size *= s
    return size * item.tensor_data.properties.dtype.itemsize


def _split_by_size_and_type(bins, items):
    """PyTorch's buckets for ``thread_count`` files: byte items dealt round-robin, tensors
    (largest first) each to the bucket with the fewest bytes."""
    if bins == 1:
        return [items]
    bytes_w = [wi for wi in items if wi.type == WriteItemType.BYTE_IO]
    tensor_w = sorted((wi for wi in items if wi.type != WriteItemType.BYTE_IO), key=_item_size,
                      reverse=True)
    buckets = [[] for _ in range(bins)]
    bucket_sizes = [0] * bins
    for i, wi in enumerate(bytes_w):
        buckets[i % bins].append(wi)
    for wi in tensor_w:
        idx = min(enumerate(bucket_sizes), key=operator.itemgetter(1))[0]
        buckets[idx].append(wi)
        bucket_sizes[idx] += _item_size(wi)
    return buckets


def _host_tensor(tensor):
    """A tensor to write: detached, on the CPU, its storage no larger than itself (a view is
    written as its own bytes only)."""
    tensor = tensor.detach().cpu()
    if tensor.untyped_storage().size() != tensor.nbytes:
        tensor = tensor.clone()
    return tensor


def _write_file(stream, storage_key, items, planner, sync):
    from ...serialization import save
    results = []

    def write(data, item):
        offset = stream.tell()
        stream.write(data)
        length = stream.tell() - offset
        results.append(WriteResult(index=item.index, size_in_bytes=length,
                                   storage_data=_StorageInfo(storage_key, offset, length)))

    for item in items:
        if item.type == WriteItemType.BYTE_IO:
            write(planner.resolve_data(item).getbuffer(), item)
    for item in items:
        if item.type != WriteItemType.BYTE_IO:
            buf = io.BytesIO()
            save(_host_tensor(planner.resolve_data(item)), buf)
            write(buf.getbuffer(), item)
    if sync:
        stream.flush()
        os.fsync(stream.fileno())
    return results


class FileSystemWriter(StorageWriter):
    """Writes a checkpoint directory (see the module docstring). ``thread_count`` sets how many
    files each rank's items are split into, as PyTorch's writer threads split them; ember
    writes them one after another. ``per_thread_copy_ahead`` (PyTorch's GPU copy-ahead window)
    and ``cache_staged_state_dict`` are accepted; ember copies each tensor to the host just
    before writing it and does not stage."""

    def __init__(self, path, single_file_per_rank=True, sync_files=True, thread_count=1,
                 per_thread_copy_ahead=10_000_000, cache_staged_state_dict=False,
                 overwrite=True, _extensions=None,
                 serialization_format=SerializationFormat.TORCH_SAVE):
        super().__init__()
        if serialization_format != SerializationFormat.TORCH_SAVE:
            raise NotImplementedError(f"FileSystemWriter: ember writes "
                                      f"{SerializationFormat.TORCH_SAVE} only, not "
                                      f"{serialization_format}")
        if _extensions:
            raise NotImplementedError("FileSystemWriter: ember has no stream transform "
                                      "extensions")
        self.fs = FileSystem()
        self.path = self.fs.init_path(path)
        self.single_file_per_rank = single_file_per_rank
        self.sync_files = sync_files
        self.thread_count = thread_count
        self.per_thread_copy_ahead = per_thread_copy_ahead
        self.cache_staged_state_dict = cache_staged_state_dict
        self.save_id = _generate_uuid()
        self.overwrite = overwrite
        self.serialization_format = serialization_format
        self.rank = None
        self.use_collectives = True

    def reset(self, checkpoint_id=None):
        if checkpoint_id:
            self.path = self.fs.init_path(checkpoint_id)
        self.save_id = _generate_uuid()

    def set_up_storage_writer(self, is_coordinator, *args, **kwargs):
        self.rank = kwargs.get("rank")
        self.use_collectives = kwargs.get("use_collectives", True)

    def _metadata_exists(self):
        rank = None if self.use_collectives else 0
        return self.fs.exists(self._get_metadata_path(rank))

    def prepare_local_plan(self, plan):
        self.fs.mkdir(self.path)
        if self._metadata_exists():
            if self.overwrite:
                warnings.warn(
                    f"Detected an existing checkpoint in {self.path}, overwriting since "
                    f"{self.overwrite=}. Past version 2.5 of PyTorch, `overwrite` will default "
                    "to False. Set this variable to True to maintain this functionality or "
                    "False to raise when an existing checkpoint is found.", stacklevel=2)
            else:
                raise RuntimeError(f"Checkpoint already exists and {self.overwrite=}.")
        if self.rank is not None and not self.use_collectives:
            plan = dataclasses.replace(plan, storage_data=_StoragePrefix(f"__{self.rank}_"))
        return plan

    def prepare_global_plan(self, plans):
        return [dataclasses.replace(plan, storage_data=_StoragePrefix(f"__{i}_"))
                if plan.storage_data is None else plan for i, plan in enumerate(plans)]

    def write_data(self, plan, planner):
        from ...futures import Future
        prefix = plan.storage_data.prefix
        if self.single_file_per_rank:
            buckets = _split_by_size_and_type(self.thread_count, plan.items)
        else:
            buckets = [[item] for item in plan.items]
        results = []
        for n, bucket in enumerate(buckets):
            file_name = f"{prefix}{n}{DEFAULT_SUFFIX}"
            with self.fs.create_stream(self.fs.concat_path(self.path, file_name), "wb") as f:
                results += _write_file(f, file_name, bucket, planner, self.sync_files)
        fut = Future()
        fut.set_result(results)
        return fut

    def finish(self, metadata, results):
        metadata.version = CURRENT_DCP_VERSION
        storage_md = {}
        for wr_list in results:
            storage_md.update({wr.index: wr.storage_data for wr in wr_list})
        metadata.storage_data = storage_md
        metadata.storage_meta = self.storage_meta()
        per_rank = not self.use_collectives and self.rank is not None
        tmp_path = self.fs.concat_path(
            self.path, f"__{self.rank}{_metadata_fn}.tmp" if per_rank else f"{_metadata_fn}.tmp")
        with self.fs.create_stream(tmp_path, "wb") as f:
            _metadata_pickler(f).dump(metadata)
            if self.sync_files:
                f.flush()
                os.fsync(f.fileno())
        metadata_path = self._get_metadata_path(self.rank if per_rank else None)
        if self.fs.exists(metadata_path):
            self.fs.rm_file(metadata_path)
        self.fs.rename(tmp_path, metadata_path)

    def storage_meta(self):
        return StorageMeta(checkpoint_id=self.checkpoint_id, save_id=self.save_id)

    def _get_metadata_path(self, rank=None):
        return self.fs.concat_path(self.path,
                                   _metadata_fn if rank is None else f"__{rank}{_metadata_fn}")

    @property
    def checkpoint_id(self):
        """The checkpoint_id that will be used to save the checkpoint."""
        return self.path

    @classmethod
    def validate_checkpoint_id(cls, checkpoint_id):
        return FileSystem.validate_checkpoint_id(checkpoint_id)


class FileSystemReader(StorageReader):
    """Reads a checkpoint directory written by ``FileSystemWriter`` (ember's or PyTorch's)."""

    def __init__(self, path, _extension_registry=None):
        super().__init__()
        if _extension_registry is not None:
            raise NotImplementedError("FileSystemReader: ember has no stream transform "
                                      "extensions")
        self.fs = FileSystem()
        self.path = self.fs.init_path(path)
        self.storage_data = {}
        self.load_id = _generate_uuid()
        self.rank = None
        self.use_collectives = True

    def reset(self, checkpoint_id=None):
        self.storage_data = {}
        if checkpoint_id:
            self.path = self.fs.init_path(checkpoint_id)
        self.load_id = _generate_uuid()

    def read_data(self, plan, planner):
        from ...futures import Future
        from ...serialization import load
        per_file = {}
        for read_item in plan.items:
            per_file.setdefault(self.storage_data[read_item.storage_index].relative_path,
                                []).append(read_item)
        for relative_path, reqs in per_file.items():
            with self.fs.create_stream(self.fs.concat_path(self.path, relative_path), "rb") as f:
                for req in reqs:
                    info = self.storage_data[req.storage_index]
                    if info.transform_descriptors:
                        raise NotImplementedError(
                            f"{req.storage_index.fqn} was written through stream transforms "
                            f"{info.transform_descriptors}, which ember cannot read")
                    f.seek(info.offset)
                    data = io.BytesIO(f.read(info.length))
                    if req.type == LoadItemType.BYTE_IO:
                        planner.load_bytes(req, data)
                        continue
                    from .default_planner import narrow_tensor_by_index
                    tensor = narrow_tensor_by_index(
                        load(data, map_location="cpu", weights_only=True), req.storage_offsets,
                        req.lengths)
                    target = planner.resolve_tensor(req).detach()
                    if target.size() != tensor.size():
                        raise AssertionError(f"req {req.storage_index} mismatch sizes "
                                             f"{target.size()} vs {tensor.size()}")
                    target.copy_(tensor)
                    planner.commit_tensor(req, target)
        fut = Future()
        fut.set_result(None)
        return fut

    def _get_metadata_path(self, rank=None):
        return self.fs.concat_path(self.path,
                                   _metadata_fn if rank is None else f"__{rank}{_metadata_fn}")

    def read_metadata(self, *args, **kwargs):
        with self.fs.create_stream(self._get_metadata_path(kwargs.get("rank")), "rb") as f:
            metadata = _load_metadata(f)
        if getattr(metadata, "storage_meta", None) is None:
            metadata.storage_meta = StorageMeta()
        metadata.storage_meta.load_id = self.load_id
        return metadata

    def set_up_storage_reader(self, metadata, is_coordinator, *args, **kwargs):
        self.storage_data = metadata.storage_data
        self.rank = kwargs.get("rank")
        self.use_collectives = kwargs.get("use_collectives", True)
        if self.storage_data is None:
            raise AssertionError("storage_data must not be None in metadata")

    def prepare_local_plan(self, plan):
        return plan

    def prepare_global_plan(self, plans):
        return plans

    @property
    def checkpoint_id(self):
        """The checkpoint_id that will be used to load the checkpoint."""
        return self.path

    @classmethod
    def validate_checkpoint_id(cls, checkpoint_id):
        return FileSystem.validate_checkpoint_id(checkpoint_id)

