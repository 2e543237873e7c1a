"""The coordination every save and load runs through (PyTorch's ``_DistWrapper``): each step
computes on every rank, gathers to the coordinator, reduces there and scatters or broadcasts
the result, with a failure on any rank raised on every rank as a ``CheckpointException``.
Without a process group (``no_dist``) each collective is the identity."""
import functools
import inspect
import warnings

from .api import CheckpointException, _is_wrapped_exception, _wrap_exception
from ..._tensor import Tensor

__all__ = ["find_tensor_shard", "find_state_dict_object"]


def _dist():
    from ... import distributed
    return distributed


def _get_failure_dict(results):
    return {i: err for i, err in enumerate(results) if _is_wrapped_exception(err)}


class _DistWrapper:
    """Object collectives over ``group`` that also work without distributed (``use_dist``
    False: this process is rank 0 of a world of one)."""

    def __init__(self, group, use_dist, coordinator_rank):
        self.group = group
        self.use_dist = use_dist
        self.coordinator_rank = coordinator_rank
        if use_dist:
            dist = _dist()
            self.global_coordinator_rank = (dist.get_global_rank(group, coordinator_rank)
                                            if group is not None else coordinator_rank)
            self.rank = dist.get_rank(group)
            self.is_coordinator = self.rank == coordinator_rank
        else:
            self.global_coordinator_rank = 0
            self.rank = 0
            self.is_coordinator = True

    def get_rank(self):
        return self.rank

    def get_world_size(self):
        return _dist().get_world_size(self.group) if self.use_dist else 1

    def broadcast_object(self, obj):
        object_list = [obj]
        if self.use_dist:
            _dist().broadcast_object_list(object_list, group=self.group,
                                          src=self.global_coordinator_rank)
        return object_list[0]

    def gather_object(self, obj):
        if not self.use_dist:
            return [obj]
        gathered = [None] * self.get_world_size() if self.is_coordinator else None
        _dist().gather_object(obj, gathered, dst=self.global_coordinator_rank, group=self.group)
        return gathered

    def all_gather_object(self, obj):
        if not self.use_dist:
            return [obj]
        gathered = [None] * self.get_world_size()
        _dist().all_gather_object(gathered, obj, group=self.group)
        return gathered

    def scatter_object(self, object_list):
        if not self.use_dist:
            return object_list[0]
        out = [None]
        _dist().scatter_object_list(out, object_list if self.is_coordinator else None,
                                    src=self.global_coordinator_rank, group=self.group)
        return out[0]

    def reduce_scatter(self, step, map_fun, reduce_fun):
        """``map_fun`` on every rank, ``reduce_fun`` over all results on the coordinator, each
        rank gets its element of the reduced list."""
        try:
            local_data = map_fun()
        except BaseException as e:
            local_data = _wrap_exception(e)
        all_data = self.gather_object(local_data)
        all_results = None
        if self.is_coordinator:
            node_failures = _get_failure_dict(all_data)
            if not node_failures:
                try:
                    all_results = reduce_fun(all_data)
                except BaseException as e:
                    node_failures[self.rank] = _wrap_exception(e)
            if node_failures:
                all_results = [CheckpointException(step, node_failures)] * self.get_world_size()
        result = self.scatter_object(all_results)
        if isinstance(result, CheckpointException):
            raise result
        return result

    def all_reduce(self, step, map_fun, reduce_fun):
        """``map_fun`` on every rank, ``reduce_fun`` over all results on the coordinator, its
        result broadcast to every rank."""
        try:
            local_data = map_fun()
        except BaseException as e:
            local_data = _wrap_exception(e)
        all_data = self.gather_object(local_data)
        result = None
        if self.is_coordinator:
            node_failures = _get_failure_dict(all_data)
            if not node_failures:
                try:
                    result = reduce_fun(all_data)
                except BaseException as e:
                    node_failures[self.rank] = _wrap_exception(e)
            if node_failures:
                result = CheckpointException(step, node_failures)
        final_result = self.broadcast_object(result)
        if isinstance(final_result, CheckpointException):
            raise final_result
        return final_result

    def all_gather(self, step, map_fun):
        """``map_fun`` on every rank, every result on every rank."""
        try:
            result = map_fun()
        except BaseException as e:
            result = _wrap_exception(e)
        all_results = self.all_gather_object(result)
        node_failures = _get_failure_dict(all_results)
        if node_failures:
            raise CheckpointException(step, node_failures)
        return all_results

    def barrier(self):
        if self.use_dist:
            _dist().barrier(group=self.group)


def find_tensor_shard(tensor, index):
    """The chunk of ``tensor`` that ``index`` names: a DTensor's is its shard (its checkpoint
    hook), a plain tensor is its only chunk, at offset zero."""
    if hasattr(tensor, "__get_tensor_shard__"):
        return tensor.__get_tensor_shard__(index)
    if index.offset is not None:
        if tuple(index.offset) == (0,) * tensor.dim():
            return tensor
        raise ValueError(f"FQN: '{index.fqn}' is not a ShardedTensor, can't find by offset: "
                         f"'{index.offset}'")
    return tensor


def find_state_dict_object(state_dict, index):
    if index.fqn not in state_dict:
        raise ValueError(f"Could not find FQN: '{index.fqn}'")
    obj = state_dict[index.fqn]
    if isinstance(obj, Tensor):
        return find_tensor_shard(obj, index)
    if index.offset is not None:
        raise ValueError(f"FQN: '{index.fqn}' is not a ShardedTensor, can't find by offset: "
                         f"'{index.offset}'")
    return obj


def _api_bc_check(func):
    """PyTorch's old calling convention ``save(state_dict, storage_writer)`` (``load(state_dict,
    storage_reader)``) still works, with a warning."""
    @functools.wraps(func)
    def inner_func(*args, **kwargs):
        if len(args) == 2:
            warnings.warn(f"The argument order of {func.__name__} has been changed. Please check "
                          "the document to avoid future breakages.", stacklevel=2)
            kwonlyargs = [p.name for p in inspect.signature(func).parameters.values()
                          if p.kind == p.KEYWORD_ONLY]
            name = "storage_writer" if "storage_writer" in kwonlyargs else "storage_reader"
            if name in kwargs:
                raise AssertionError(f"{name} in kwargs: {(args, kwargs)}")
            kwargs[name] = args[1]
            return func(args[0], **kwargs)
        return func(*args, **kwargs)

    return inner_func
