"""``load``: a checkpoint into a state dict, in place, in SPMD style (PyTorch's
``state_dict_loader``). Tensors are filled where they are (they must already have their shapes
and devices); other values are replaced; ``Stateful`` values get ``load_state_dict``."""
import inspect
import logging
import warnings

from ._storage_utils import _storage_setup
from .default_planner import DefaultLoadPlanner
from .stateful import Stateful
from .state_dict_saver import _no_dist
from .utils import _api_bc_check, _DistWrapper

__all__ = ["load_state_dict", "load"]

logger = logging.getLogger()


def load_state_dict(state_dict, storage_reader, process_group=None, coordinator_rank=0,
                    no_dist=False, planner=None):
    """This method is deprecated. Please switch to 'load'."""
    warnings.warn("`load_state_dict` is deprecated and will be removed in future versions. "
                  "Please use `load` instead.", FutureWarning, stacklevel=2)
    storage_reader.reset()
    return _load_state_dict(state_dict, storage_reader, process_group, coordinator_rank,
                            no_dist, planner)


@_api_bc_check
def load(state_dict, *, checkpoint_id=None, storage_reader=None, planner=None,
         process_group=None, no_dist=False):
    """Load the checkpoint into ``state_dict`` in place."""
    no_dist = _no_dist(no_dist)
    if no_dist:
        warnings.warn("torch.distributed is disabled, unavailable or uninitialized, assuming "
                      "the intent is to load in a single process.", stacklevel=2)
    storage_reader = _storage_setup(storage_reader, checkpoint_id, reader=True)
    keys = sorted(state_dict.keys())
    stateful_sd = {}
    for key in keys:
        elem = state_dict[key]
        stateful_sd[key] = elem.state_dict() if isinstance(elem, Stateful) else elem
    _load_state_dict(stateful_sd, storage_reader, process_group, no_dist=no_dist,
                     planner=planner)
    for key in keys:
        elem = state_dict[key]
        if isinstance(elem, Stateful):
            elem.load_state_dict(stateful_sd[key])
        else:
            state_dict[key] = stateful_sd[key]


def _load_state_dict(state_dict, storage_reader, process_group=None, coordinator_rank=0,
                     no_dist=False, planner=None):
    distW = _DistWrapper(process_group, not no_dist, coordinator_rank)
    if planner is None:
        planner = DefaultLoadPlanner()
    use_collectives = True

    def local_step():
        # the global .metadata, else this rank's own (a save without collectives)
        nonlocal use_collectives
        metadata = global_exc = rank_exc = None
        try:
            metadata = storage_reader.read_metadata()
        except Exception as e:
            global_exc = e
            logger.warning("Global metadata is not found. Falling back to rank local metadata.",
                           exc_info=True)
        if not metadata and "kwargs" in inspect.signature(storage_reader.read_metadata).parameters:
            try:
                metadata = storage_reader.read_metadata(rank=distW.rank)
                use_collectives = False
            except Exception as e:
                rank_exc = e
                logger.warning("Rank local metadata is not found.", exc_info=True)
        if metadata is None:
            parts = ["metadata is None"]
            if global_exc is not None:
                parts.append(f"global metadata read failed: {global_exc}")
            if rank_exc is not None:
                parts.append(f"rank local metadata read failed: {rank_exc}")
            raise AssertionError("; ".join(parts))
        planner.set_up_planner(state_dict, metadata, distW.is_coordinator)
        if "kwargs" in inspect.signature(storage_reader.set_up_storage_reader).parameters:
            storage_reader.set_up_storage_reader(metadata, distW.is_coordinator, rank=distW.rank,
                                                 use_collectives=use_collectives)
        else:
            storage_reader.set_up_storage_reader(metadata, distW.is_coordinator)
        return storage_reader.prepare_local_plan(planner.create_local_plan())

    def global_step(all_local_plans):
        return storage_reader.prepare_global_plan(planner.create_global_plan(all_local_plans))

    if use_collectives:
        central_plan = distW.reduce_scatter("plan", local_step, global_step)
    else:
        central_plan = global_step([local_step()])[0]

    def read_data():
        all_reads = storage_reader.read_data(planner.finish_plan(central_plan), planner)
        all_reads.wait()

    if use_collectives:
        distW.all_gather("read", read_data)
    else:
        read_data()
        distW.barrier()
