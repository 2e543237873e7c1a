"""Conversions between a distributed checkpoint (a directory of ``.distcp`` files and its
``.metadata``) and a single ``torch.save`` file (PyTorch's ``format_utils``), and loading a
``torch.save`` file into a sharded state dict: the coordinator reads the file and broadcasts
each tensor, every rank keeps its part. Also a command line::

    python -m ember.distributed.checkpoint.format_utils dcp_to_torch CHECKPOINT_DIR model.pt
    python -m ember.distributed.checkpoint.format_utils torch_to_dcp model.pt CHECKPOINT_DIR
"""
import argparse
import os
from enum import Enum

from ... import empty_like, is_tensor, load, save
from .. import distributed_c10d as dist
from ._traverse import flatten_state_dict
from .default_planner import (_EmptyStateDictLoadPlanner, DefaultLoadPlanner,
                              narrow_tensor_by_index)
from .filesystem import FileSystemReader, FileSystemWriter
from .metadata import Metadata, TensorProperties, TensorStorageMetadata
from .planner import LoadItemType
from .planner_helpers import _create_chunk_list
from .state_dict_loader import _load_state_dict
from .state_dict_saver import _save_state_dict
from .storage import StorageReader
from ...futures import Future

__all__ = ["dcp_to_torch_save", "torch_save_to_dcp", "BroadcastingTorchSaveReader",
           "DynamicMetaLoadPlanner"]


class BroadcastingTorchSaveReader(StorageReader):
    """Reads a ``torch.save`` file on the coordinator rank and broadcasts each tensor to the
    other ranks, which keep the part their plan asks for (tensors only). Used with
    :class:`DynamicMetaLoadPlanner`, since the file has no metadata of its own. The broadcast
    runs on the device of each rank's destination tensor."""

    def __init__(self, checkpoint_id=None, coordinator_rank=0):
        self.checkpoint_id = checkpoint_id
        self.coordinator_rank = coordinator_rank

    def read_metadata(self):
        # the planner builds the metadata from the state dict (set_up_planner)
        return Metadata(state_dict_metadata={})

    def read_data(self, plan, planner):
        if self.is_coordinator:
            if self.checkpoint_id is None:
                raise AssertionError("checkpoint_id must be set before reading data")
            saved = load(self.checkpoint_id, map_location="cpu", weights_only=False)
            if planner.flatten_state_dict:
                saved, _ = flatten_state_dict(saved)
        for req in plan.items:
            if req.type == LoadItemType.BYTE_IO:
                raise RuntimeError(f"Non-tensor value identified at {req.storage_index.fqn}. "
                                   f"At this time {type(self).__name__} only supports loading "
                                   f"Tensors.")
            mine = planner.state_dict[req.storage_index.fqn]
            tensor = saved[req.storage_index.fqn].to(mine.device) if self.is_coordinator \
                else empty_like(mine)
            dist.broadcast(tensor, src=self.coordinator_rank, async_op=False)
            tensor = narrow_tensor_by_index(tensor, req.storage_offsets, req.lengths)
            target = planner.resolve_tensor(req).detach()
            if target.size() != tensor.size():
                raise AssertionError(f"req {req.storage_index} mismatch sizes, "
                                     f"{target.size()} vs {tensor.size()}")
            target.copy_(tensor)
            planner.commit_tensor(req, target)
        fut = Future()
        fut.set_result(None)
        return fut

    def set_up_storage_reader(self, metadata, is_coordinator):
        self.is_coordinator = is_coordinator
        if is_coordinator and dist.get_rank() != self.coordinator_rank:
            raise AssertionError(f"Coordinator rank mismatch: expected "
                                 f"{self.coordinator_rank}, got {dist.get_rank()}")
        if self.checkpoint_id is None:
            raise AssertionError("checkpoint_id must be set before setting up storage reader")

    def prepare_local_plan(self, plan):
        return plan

    def prepare_global_plan(self, global_plan):
        return global_plan

    def reset(self, checkpoint_id=None):
        self.checkpoint_id = checkpoint_id

    @classmethod
    def validate_checkpoint_id(cls, checkpoint_id):
        return os.path.isfile(checkpoint_id)


class DynamicMetaLoadPlanner(DefaultLoadPlanner):
    """A load planner that makes the checkpoint's metadata from the state dict it loads into
    (one chunk per tensor), for files that have none (:class:`BroadcastingTorchSaveReader`)."""

    def set_up_planner(self, state_dict, metadata=None, is_coordinator=False):
        super().set_up_planner(state_dict, metadata, is_coordinator)
        entries = {}
        for key, tensor in self.state_dict.items():
            if not is_tensor(tensor):
                raise RuntimeError(f"Non-tensor value identified at {key}. At this time "
                                   f"{type(self).__name__} only supports loading Tensors.")
            entries[key] = TensorStorageMetadata(TensorProperties(dtype=tensor.dtype),
                                                 tensor.size(), _create_chunk_list(tensor))
        self.metadata = Metadata(state_dict_metadata=entries)


def dcp_to_torch_save(dcp_checkpoint_dir, torch_save_path):
    """The distributed checkpoint in ``dcp_checkpoint_dir`` as one ``torch.save`` file (the
    whole state dict in this process's memory: run it on one rank)."""
    sd = {}
    _load_state_dict(sd, storage_reader=FileSystemReader(dcp_checkpoint_dir),
                     planner=_EmptyStateDictLoadPlanner(), no_dist=True)
    save(sd, torch_save_path)


def torch_save_to_dcp(torch_save_path, dcp_checkpoint_dir):
    """The ``torch.save`` file at ``torch_save_path`` as a distributed checkpoint in
    ``dcp_checkpoint_dir`` (one process)."""
    state_dict = load(torch_save_path, weights_only=False)
    _save_state_dict(state_dict, storage_writer=FileSystemWriter(dcp_checkpoint_dir),
                     no_dist=True)


class FormatMode(Enum):
    TORCH_TO_DCP = "torch_to_dcp"
    DCP_TO_TORCH = "dcp_to_torch"


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", type=str, help="Conversion mode",
                        choices=[m.value for m in FormatMode], default=FormatMode.TORCH_TO_DCP)
    parser.add_argument("src", type=str, help="Path to the source model")
    parser.add_argument("dst", type=str, help="Path to the destination model")
    args = parser.parse_args(argv)
    print(f"Converting checkpoint from {args.src} to {args.dst} using method: '{args.mode}'")
    missing = f"No checkpoint found at {args.src}. Skipping conversion."
    if args.mode == FormatMode.TORCH_TO_DCP.value:
        if os.path.isfile(args.src):
            torch_save_to_dcp(args.src, args.dst)
        else:
            print(missing)
    elif os.path.isdir(args.src):
        dcp_to_torch_save(args.src, args.dst)
    else:
        print(missing)


if __name__ == "__main__":
    main()
