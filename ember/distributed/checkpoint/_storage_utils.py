"""Choosing the storage for a ``checkpoint_id`` when none is given (PyTorch's
``_storage_utils``): a local path gets the file-system writer or reader."""
from .filesystem import FileSystemReader, FileSystemWriter


def _storage_setup(storage, checkpoint_id, reader=False):
    if storage:
        if checkpoint_id is not None:
            storage.reset(checkpoint_id)
        return storage
    if not checkpoint_id:
        raise RuntimeError("`checkpoint_id` must be specified if storage_reader/storage_writer "
                           "is None.")
    target = FileSystemReader if reader else FileSystemWriter
    if target.validate_checkpoint_id(checkpoint_id):
        storage = target(checkpoint_id)
        storage.reset(checkpoint_id)
        return storage
    raise RuntimeError("Cannot detect which StorageReader or StorageWriter to use. Please "
                       "specify the storage_reader/storage_writer.")
