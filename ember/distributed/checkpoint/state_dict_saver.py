"""``save``: a state dict to a checkpoint in SPMD style (PyTorch's ``state_dict_saver``).

Every rank of the process group calls it with its state dict; the planner and storage steps
run as ``planner``'s docstring says, coordinated by rank 0. Without an initialized process
group (or with ``no_dist``) this process saves alone, as rank 0.
"""
import inspect
import warnings
from concurrent.futures import ThreadPoolExecutor
from enum import Enum

from ._storage_utils import _storage_setup
from .default_planner import DefaultSavePlanner
from .stateful import Stateful
from .utils import _api_bc_check, _DistWrapper

__all__ = ["save_state_dict", "save", "async_save", "AsyncCheckpointerType"]


class AsyncCheckpointerType(Enum):
    """Enum for async checkpointer type."""

    THREAD = "thread"
    PROCESS = "process"


def _no_dist(no_dist):
    from ... import distributed as dist
    return no_dist or not dist.is_available() or not dist.is_initialized()


def save_state_dict(state_dict, storage_writer, process_group=None, coordinator_rank=0,
                    no_dist=False, planner=None):
    """This method is deprecated. Please switch to 'save'."""
    warnings.warn("`save_state_dict` is deprecated and will be removed in future versions."
                  "Please use `save` instead.", FutureWarning, stacklevel=2)
    storage_writer.reset()
    return _save_state_dict(state_dict, storage_writer, process_group, coordinator_rank,
                            no_dist, planner)


@_api_bc_check
def save(state_dict, *, checkpoint_id=None, storage_writer=None, planner=None,
         process_group=None, no_dist=False, use_collectives=True):
    """Save ``state_dict`` (``Stateful`` values through their ``state_dict()``); returns the
    checkpoint's Metadata."""
    no_dist = _no_dist(no_dist)
    if no_dist:
        warnings.warn("torch.distributed is disabled, unavailable or uninitialized, assuming "
                      "the intent is to save in a single process.", stacklevel=2)
    storage_writer = _storage_setup(storage_writer, checkpoint_id, reader=False)
    return _save_state_dict(_stateful_to_state_dict(state_dict), storage_writer, process_group,
                            no_dist=no_dist, planner=planner, use_collectives=use_collectives)


def _stateful_to_state_dict(state_dict):
    """A shallow copy of ``state_dict`` with each Stateful value replaced by its state_dict."""
    return {k: v.state_dict() if isinstance(v, Stateful) else v for k, v in state_dict.items()}


def async_save(state_dict, *, checkpoint_id=None, storage_writer=None, planner=None,
               process_group=None, async_checkpointer_type=AsyncCheckpointerType.THREAD,
               async_stager=None, no_dist=False, use_collectives=True):
    """``save`` in a background thread, after the tensors are copied (staged) so training may
    change them meanwhile; returns a ``concurrent.futures.Future`` of the Metadata.

    Single-process only: with a process group the background save would run collectives on
    ember's MPI communicator while the training thread runs its own on it.
    """
    if not _no_dist(no_dist):
        raise NotImplementedError("async_save with a process group: ember's MPI communicator "
                                  "cannot run the checkpoint's collectives from a background "
                                  "thread; use save, or async_save(..., no_dist=True)")
    if async_checkpointer_type != AsyncCheckpointerType.THREAD:
        raise NotImplementedError(f"async_save: ember has the thread checkpointer only, not "
                                  f"{async_checkpointer_type}")
    if async_stager is not None:
        raise NotImplementedError("async_save: ember stages by copying the state dict's "
                                  "tensors; a custom async_stager is not supported")
    staged = _stage(_stateful_to_state_dict(state_dict))
    executor = ThreadPoolExecutor(max_workers=1)
    fut = executor.submit(save, staged, checkpoint_id=checkpoint_id,
                                  storage_writer=storage_writer, planner=planner,
                                  no_dist=True, use_collectives=use_collectives)
    executor.shutdown(wait=False)
    return fut


def _stage(obj):
    """A copy of the state dict whose tensors are detached CPU copies."""
    from ..._tensor import Tensor
    if isinstance(obj, Tensor):
        return obj.detach().to("cpu", copy=True)
    if isinstance(obj, dict):
        return {k: _stage(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_stage(v) for v in obj]
    if isinstance(obj, tuple) and not hasattr(obj, "_fields"):
        return tuple(_stage(v) for v in obj)
    return obj


def _save_state_dict(state_dict, storage_writer, process_group=None, coordinator_rank=0,
                     no_dist=False, planner=None, use_collectives=True):
    distW = _DistWrapper(process_group, not no_dist, coordinator_rank)
    if planner is None:
        planner = DefaultSavePlanner()
    global_metadata = None

    def local_step():
        planner.set_up_planner(state_dict=state_dict,
                               storage_meta=storage_writer.storage_meta(),
                               is_coordinator=distW.is_coordinator)
        if "kwargs" in inspect.signature(storage_writer.set_up_storage_writer).parameters:
            storage_writer.set_up_storage_writer(distW.is_coordinator, rank=distW.rank,
                                                 use_collectives=use_collectives)
        else:
            storage_writer.set_up_storage_writer(distW.is_coordinator)
        local_plan = planner.create_local_plan()
        return storage_writer.prepare_local_plan(local_plan)

    def global_step(all_local_plans):
        nonlocal global_metadata
        all_local_plans, global_metadata = planner.create_global_plan(all_local_plans)
        return storage_writer.prepare_global_plan(all_local_plans)

    if use_collectives:
        central_plan = distW.reduce_scatter("plan", local_step, global_step)
    else:
        central_plan = global_step([local_step()])[0]

    def write_data():
        final_local_plan = planner.finish_plan(central_plan)
        all_writes = storage_writer.write_data(final_local_plan, planner)
        all_writes.wait()
        return all_writes.value()

    def finish_checkpoint(all_results):
        storage_writer.finish(metadata=global_metadata, results=all_results)
        return global_metadata

    if use_collectives:
        return distW.all_reduce("write", write_data, finish_checkpoint)
    metadata = finish_checkpoint([write_data()])
    distW.barrier()
    return metadata
