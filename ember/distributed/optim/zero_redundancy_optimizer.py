"""``ZeroRedundancyOptimizer`` (PyTorch's ``torch/distributed/optim/zero_redundancy_optimizer.py``):
an optimizer whose state is sharded over the ranks (ZeRO stage 1).

The parameters are partitioned once, per parameter group, by PyTorch's sorted-greedy rule:
largest first, each to the rank with the fewest elements so far. Each rank builds the wrapped
optimizer class (any ``ember.optim`` optimizer) on its own part only, so it keeps the state of
about ``1 / world_size`` of the parameters; ``step`` runs that local optimizer and then every
rank broadcasts its updated parameters to the others (parameter by parameter, or one flat
bucket per rank and device with ``parameters_as_bucket_view``). ``consolidate_state_dict(to)``
collects every rank's local optimizer state on rank ``to``, whose ``state_dict`` is then the
global state in the indexing of an ordinary optimizer over all the parameters;
``load_state_dict`` gives each rank its part of such a state.

``overlap_with_ddp=True`` (the optimizer step run inside DDP's communication hook, with
PyTorch's functional optimizers) is not available: ember has neither those hooks
(``ddp_zero_hook``) nor the functional optimizers, and the constructor says so.
"""
import collections
import copy
import io
import logging
from itertools import chain

import ember
import ember.distributed as dist
from ember.distributed.algorithms.join import Join, Joinable, JoinHook
from ember.optim import Optimizer

__all__ = ["ZeroRedundancyOptimizer"]

logger = logging.getLogger(__name__)


def _recursive_copy_to_device(value, non_blocking, device):
    """``value`` with every tensor in its lists, tuples and mappings copied to ``device``."""
    if isinstance(value, ember.Tensor):
        return value.to(device, non_blocking=non_blocking)
    if isinstance(value, (list, tuple)):
        values = [_recursive_copy_to_device(val, non_blocking=non_blocking, device=device)
                  for val in value]
        return values if isinstance(value, list) else tuple(values)
    if isinstance(value, collections.abc.Mapping):
        return {key: _recursive_copy_to_device(val, non_blocking=non_blocking, device=device)
                for key, val in value.items()}
    return value


def _is_trainable(param):
    return param.requires_grad


def _broadcast_object(obj, src_rank, group=None, device=ember.device("cpu")):
    """``obj`` of global rank ``src_rank`` on every rank of ``group``: its serialized length,
    then its bytes, in two broadcasts on ``device``."""
    if dist.get_rank() == src_rank:
        buffer = io.BytesIO()
        ember.save(obj, buffer)
        data = bytearray(buffer.getbuffer())
        length_tensor = ember.LongTensor([len(data)]).to(device)
        data_send_tensor = ember.ByteTensor(data).to(device)
        dist.broadcast(length_tensor, src=src_rank, group=group, async_op=False)
        dist.broadcast(data_send_tensor, src=src_rank, group=group, async_op=False)
    else:
        length_tensor = ember.LongTensor([0]).to(device)
        dist.broadcast(length_tensor, src=src_rank, group=group, async_op=False)
        data_recv_tensor = ember.empty([int(length_tensor.item())], dtype=ember.uint8,
                                       device=device)
        dist.broadcast(data_recv_tensor, src=src_rank, group=group, async_op=False)
        buffer = io.BytesIO(data_recv_tensor.cpu().numpy().tobytes())
        obj = ember.load(buffer, map_location=device, weights_only=False)
    return obj


class _ZeROJoinHook(JoinHook):
    def __init__(self, zero):
        if not isinstance(zero, ZeroRedundancyOptimizer):
            raise AssertionError("ZeRO join hook requires passing in a ZeroRedundancyOptimizer "
                                 "instance as the state")
        self.zero = zero
        super().__init__()

    def main_hook(self):
        """Shadow a step of the ranks still running: update this rank's shard (its gradients
        are what they are) and take part in the parameter broadcasts."""
        self.zero.step()


class ZeroRedundancyOptimizer(Optimizer, Joinable):
    """Wrap an optimizer class and shard its state over the ranks of ``process_group``; every
    rank passes all the parameters, updates its own part and broadcasts it."""

    def __init__(self, params, optimizer_class, process_group=None,
                 parameters_as_bucket_view=False, overlap_with_ddp=False, **defaults):
        params = self._verify_and_init_params(params)
        self._verify_same_dense_param_type()
        if overlap_with_ddp:
            raise NotImplementedError(
                "ZeroRedundancyOptimizer with `overlap_with_ddp=True` is not supported on "
                "ember: it runs the step inside DistributedDataParallel's ZeRO communication "
                "hooks (ddp_zero_hook) with a functional optimizer, neither of which ember "
                "has; use `overlap_with_ddp=False` and call `step()` after backward")

        # the parent constructor calls add_param_group, which must not repartition yet
        self.initialized = False
        Optimizer.__init__(self, params, defaults)
        Joinable.__init__(self)

        self._param_to_rank_cache = {}
        self._param_to_index_cache = {}
        self._partition_parameters_cache = []
        self._index_to_param_cache = []
        self._device_to_params_per_rank_cache = {}
        self._is_trainable_mask = self._get_is_trainable_mask()
        self._default_device = self._all_params[0].device

        self.process_group = process_group if process_group is not None else dist.group.WORLD
        self.world_size = dist.get_world_size(self.process_group)
        self.rank = dist.get_rank(self.process_group)
        self.global_rank = dist.distributed_c10d.get_global_rank(self.process_group, self.rank)

        self._overlap_with_ddp = False
        self._optim_defaults = defaults
        self._optim_constructor = optimizer_class
        self._init_local_optimizer()

        self.parameters_as_bucket_view = parameters_as_bucket_view
        self._buckets = []
        self._build_param_buckets()

        # every rank's local state dict, on the rank consolidate_state_dict() targeted
        self._all_state_dicts = []
        self._join_works = []
        self.initialized = True

    def _clear_cache(self):
        self._partition_parameters_cache.clear()
        self._param_to_rank_cache.clear()
        self._index_to_param_cache.clear()
        self._param_to_index_cache.clear()
        self._device_to_params_per_rank_cache.clear()

    def add_param_group(self, param_group):
        """Add a parameter group on every rank (all ranks must call it): the new group is
        partitioned after the others, which keep their ranks, and this rank's part of it joins
        the local optimizer."""
        super().add_param_group(param_group)
        if self.initialized:
            self._clear_cache()
            param_groups = self._partition_parameters()[self.rank]
            if len(param_groups) == len(self.optim.param_groups) + 1:
                self.optim.add_param_group(param_groups[-1])
            if self.parameters_as_bucket_view:
                self._build_param_buckets()

    def consolidate_state_dict(self, to=0):
        """Collect every rank's local optimizer state on rank ``to`` (of the group), on the
        CPU; every rank must call it. Then ``state_dict()`` on ``to`` is the global state."""
        self._sync_param_groups(self.param_groups, self.optim.param_groups)
        empty_messenger = ember.tensor([0], dtype=ember.uint8, device=self._default_device)
        # broadcasts rather than a gather: every rank takes part in each rank's turn
        self._all_state_dicts = []
        for rank in range(self.world_size):
            global_rank = dist.distributed_c10d.get_global_rank(self.process_group, rank)
            if self.rank == to:
                if rank == self.rank:
                    self._all_state_dicts.append(_recursive_copy_to_device(
                        self.optim.state_dict(), non_blocking=True, device=ember.device("cpu")))
                else:
                    local_state_dict = _broadcast_object(
                        empty_messenger, src_rank=global_rank, group=self.process_group,
                        device=self._default_device)
                    self._all_state_dicts.append(_recursive_copy_to_device(
                        local_state_dict, non_blocking=True, device=ember.device("cpu")))
            elif rank == self.rank:
                _broadcast_object(self.optim.state_dict(), src_rank=self.global_rank,
                                  group=self.process_group, device=self._default_device)
            elif rank != to:
                _broadcast_object(empty_messenger, src_rank=global_rank,
                                  group=self.process_group, device=self._default_device)

    def _verify_params_per_rank(self, params_per_rank):
        if len(params_per_rank) != self.world_size:
            raise ValueError("`params_per_rank` must have length equal to the world size")
        all_params_set = set(self._all_params)
        for params in params_per_rank:
            for param in params:
                if param not in all_params_set:
                    raise ValueError("Passing a new parameter in `params_per_rank` that was not "
                                     "passed into the ZeroRedundancyOptimizer constructor")

    def _partition_param_group(self, param_group, params_per_rank):
        for rank, params in enumerate(params_per_rank):
            rank_param_group = copy.copy(param_group)
            rank_param_group["params"] = params
            self._partition_parameters_cache[rank].append(rank_param_group)

    def _partition_parameters(self, params_per_rank=None):
        """Per rank, its parameter groups: each group's parameters, largest first, go to the
        rank with the fewest elements so far (counted over all groups), or as
        ``params_per_rank`` says (one group only)."""
        if params_per_rank is None:
            if len(self._partition_parameters_cache) == 0:
                self._partition_parameters_cache = [[] for _ in range(self.world_size)]
                sizes = [0] * self.world_size
                for param_group in self.param_groups:
                    param_group_params_per_rank = [[] for _ in range(self.world_size)]
                    params_sorted = sorted(param_group["params"], key=lambda t: t.numel(),
                                           reverse=True)
                    for param in params_sorted:
                        rank = self._get_min_index(sizes)
                        param_group_params_per_rank[rank].append(param)
                        sizes[rank] += param.numel()
                    self._partition_param_group(param_group, param_group_params_per_rank)
            return self._partition_parameters_cache

        if len(self._partition_parameters_cache) != 0:
            raise AssertionError("Specifying `params_per_rank` should only be done when the "
                                 "parameters have not been partitioned yet")
        if len(self.param_groups) != 1:
            raise RuntimeError("Specifying `params_per_rank` only supports a single parameter "
                               "group")
        self._verify_params_per_rank(params_per_rank)
        self._partition_parameters_cache = [[] for _ in range(self.world_size)]
        self._partition_param_group(self.param_groups[0], params_per_rank)
        return self._partition_parameters_cache

    @property
    def _param_to_rank(self):
        if len(self._param_to_rank_cache) == 0:
            for rank, param_groups in enumerate(self._partition_parameters()):
                for param_group in param_groups:
                    for param in param_group["params"]:
                        self._param_to_rank_cache[param] = rank
        return self._param_to_rank_cache

    @property
    def _param_to_index(self):
        """Each parameter's index in the global state dict (the parameters in group order)."""
        if len(self._param_to_index_cache) == 0:
            self._param_to_index_cache = {
                p: i for i, p in enumerate(chain.from_iterable(g["params"]
                                                               for g in self.param_groups))}
        return self._param_to_index_cache

    @property
    def _index_to_param(self):
        if len(self._index_to_param_cache) == 0:
            self._index_to_param_cache = list(chain.from_iterable(g["params"]
                                                                  for g in self.param_groups))
        return self._index_to_param_cache

    def _broadcast_params_from_rank(self, rank):
        """The async broadcasts of ``rank``'s part of the parameters (its buckets with
        ``parameters_as_bucket_view``)."""
        handles = []
        global_rank = dist.distributed_c10d.get_global_rank(self.process_group, rank)
        if self.parameters_as_bucket_view:
            for dev_i_buckets in self._buckets:
                handles.append(dist.broadcast(tensor=dev_i_buckets[rank], src=global_rank,
                                              group=self.process_group, async_op=True))
        else:
            for param_group in self._partition_parameters()[rank]:
                handles.extend(dist.broadcast(tensor=param.data, src=global_rank,
                                              group=self.process_group, async_op=True)
                               for param in param_group["params"])
        return handles

    def _sync_params(self):
        """Every rank's updated part of the parameters on every rank."""
        handles = []
        for rank in range(self.world_size):
            handles.extend(self._broadcast_params_from_rank(rank))
        for handle in handles:
            handle.wait()

    @property
    def _device_to_params_per_rank(self):
        """Per device, per rank, the parameters of that rank's part stored on that device."""
        if not self.parameters_as_bucket_view:
            raise AssertionError("`_device_to_params_per_rank` should only be used if "
                                 "`parameters_as_bucket_view=True`")
        if len(self._device_to_params_per_rank_cache) == 0:
            for rank, param_groups in enumerate(self._partition_parameters()):
                for param_group in param_groups:
                    for param in param_group["params"]:
                        per_rank = self._device_to_params_per_rank_cache.setdefault(
                            param.device, [[] for _ in range(self.world_size)])
                        per_rank[rank].append(param)
        return self._device_to_params_per_rank_cache

    def _get_min_index(self, values, disallowed_indices=None):
        """``values.index(min(values))`` skipping ``disallowed_indices``."""
        min_index = -1
        min_value = float("inf")
        for i, value in enumerate(values):
            if disallowed_indices and i in disallowed_indices:
                continue
            if value < min_value:
                min_value = value
                min_index = i
        if min_index < 0:
            raise AssertionError("All indices are disallowed")
        return min_index

    def _local_step(self, gradients=None, closure=None, **kwargs):
        """One step of the local optimizer on this rank's part, without the broadcasts."""
        work = Join.notify_join_context(self)
        if work is not None:
            self._join_works.append(work)
        is_trainable_mask = self._get_is_trainable_mask()
        if is_trainable_mask != self._is_trainable_mask:
            logger.warning("ZeroRedundancyOptimizer detected that the trainable parameters "
                           "changed; rebuilding the parameter buckets if enabled")
            self._build_param_buckets()
            self._is_trainable_mask = is_trainable_mask

        # learning-rate schedulers and users change the exposed groups: the local ones follow
        self._sync_param_groups(self.param_groups, self.optim.param_groups)
        if gradients is not None:
            raise AssertionError("Specifying `gradients` should not be used when "
                                 "`overlap_with_ddp=False`")
        loss = (self.optim.step(**kwargs) if closure is None
                else self.optim.step(closure=closure, **kwargs))
        self._sync_param_groups(self.optim.param_groups, self.param_groups)
        # the join notification's all-reduce owns its buffer until it completes
        for work in self._join_works:
            work.wait()
        self._join_works.clear()
        return loss

    def step(self, closure=None, **kwargs):
        """Update this rank's part of the parameters and broadcast every rank's part; returns
        the local optimizer's loss (``closure``'s, if given)."""
        loss = self._local_step(closure=closure, **kwargs)
        self._sync_params()
        return loss

    def join_hook(self, **kwargs):
        """The hook that shadows ``step`` on a rank that ran out of inputs under ``Join``."""
        return _ZeROJoinHook(self)

    @property
    def join_device(self):
        return self._default_device

    @property
    def join_process_group(self):
        return self.process_group

    def load_state_dict(self, state_dict):
        """Load a global state (``state_dict()``'s form): this rank's local optimizer takes the
        state of its own parameters; the others' entries are set to None in ``state_dict``."""
        for index, value in state_dict["state"].items():
            param = self._index_to_param[index]
            if self._param_to_rank[param] != self.rank:
                state_dict["state"][index] = None
            else:
                self.optim.state[param] = _recursive_copy_to_device(
                    value, non_blocking=True, device=param.device)
                # zero-dimensional state (Adam's "step") stays on the CPU
                for state_name, state_value in self.optim.state[param].items():
                    if ember.is_tensor(state_value) and state_value.dim() == 0:
                        self.optim.state[param][state_name] = state_value.cpu()
        super().load_state_dict(state_dict)
        self._sync_param_groups(state_dict["param_groups"], self.param_groups)
        self._sync_param_groups(self.param_groups, self.optim.param_groups)

    def state_dict(self):
        """The global optimizer state, as last consolidated on this rank by
        ``consolidate_state_dict``, indexed as an ordinary optimizer over all the parameters."""
        if len(self._all_state_dicts) == 0:
            raise RuntimeError(f"Optimizer state has not been consolidated on this rank. Please "
                               f"call `consolidate_state_dict(to={self.rank})` on all ranks "
                               f"beforehand if you meant to save the global state.")
        state_dict = super().state_dict()
        # translate each rank's local indices into the global ones
        for rank, local_state_dict in enumerate(self._all_state_dicts):
            local_param_groups = local_state_dict["param_groups"]
            global_param_groups = self._partition_parameters()[rank]
            if len(local_param_groups) != len(global_param_groups):
                raise AssertionError("Mismatch between number of local and global parameter "
                                     "groups")
            for local_param_group, global_param_group in zip(local_param_groups,
                                                             global_param_groups):
                local_param_indices = local_param_group["params"]
                global_params = global_param_group["params"]
                if len(local_param_indices) != len(global_params):
                    raise AssertionError("Mismatch between number of local and global "
                                         "parameters in parameter group")
                for local_param_index, global_param in zip(local_param_indices, global_params):
                    if local_param_index in local_state_dict["state"]:
                        global_param_index = self._param_to_index[global_param]
                        state_dict["state"][global_param_index] = \
                            local_state_dict["state"][local_param_index]
        state_dict["state"] = dict(sorted(state_dict["state"].items()))
        return state_dict

    @staticmethod
    def _sync_param_groups(src_param_groups, dst_param_groups):
        """Copy every setting but ``params`` from each source group to its destination."""
        if len(src_param_groups) != len(dst_param_groups):
            raise AssertionError("Mismatch between number of source and destination parameter "
                                 "groups")
        for src_param_group, dst_param_group in zip(src_param_groups, dst_param_groups):
            for attr in filter(lambda x: x != "params", src_param_group.keys()):
                dst_param_group[attr] = src_param_group[attr]

    def _build_param_buckets(self):
        """With ``parameters_as_bucket_view``: per device and rank, one flat tensor holding the
        trainable parameters of that rank's part, whose ``.data`` become views of it."""
        if not self.parameters_as_bucket_view:
            return
        num_devices = len(self._device_to_params_per_rank)
        self._buckets = [[] for _ in range(num_devices)]
        for dev_i, (device, params_per_rank) in enumerate(
                self._device_to_params_per_rank.items()):
            for params in params_per_rank:
                bucket_size = 0
                dtype = None
                trainable_params = []
                for param in params:
                    if not _is_trainable(param):
                        # it may have been in a bucket: keep its data out of the next one
                        param.data = param.data.detach().clone()
                    else:
                        bucket_size += param.numel()
                        trainable_params.append(param)
                    dtype = param.dtype
                if bucket_size == 0:
                    bucket = ember.zeros(1, device=device)
                else:
                    bucket = ember.empty(bucket_size, dtype=dtype, device=device)
                    offset = 0
                    for param in trainable_params:
                        offset_next = offset + param.numel()
                        bucket[offset:offset_next].copy_(param.data.flatten())
                        param.data = bucket[offset:offset_next].view_as(param.data)
                        offset = offset_next
                self._buckets[dev_i].append(bucket)

    def _verify_and_init_params(self, params):
        """``params`` as a list (tensors or parameter groups); ``self._all_params`` every
        parameter."""
        if isinstance(params, ember.Tensor):
            raise TypeError(f"`params` argument should be an iterable of Tensors, but got "
                            f"{ember.typename(params)}")
        try:
            all_params = list(params)
        except TypeError as e:
            raise TypeError(f"`params` argument should be an iterable of Tensors or dicts, but "
                            f"got {ember.typename(params)}") from e
        if len(all_params) == 0:
            raise ValueError("ZeroRedundancyOptimizer got an empty parameter list")
        all_tensors = all(isinstance(param, ember.Tensor) for param in all_params)
        all_dicts = all(isinstance(param, dict) for param in all_params)
        if not all_tensors and not all_dicts:
            raise TypeError("`params` argument should be an iterable of Tensors or dicts")
        if all_tensors:
            self._all_params = all_params
        else:
            self._all_params = []
            for param_group in all_params:
                if "params" not in param_group:
                    raise ValueError("Each parameter group passed-in via `params` must have a "
                                     "'params' key mapping to the parameters in the group")
                self._all_params.extend(param_group["params"])
        return all_params

    def _verify_same_dense_param_type(self):
        """Every parameter of one dense tensor type (dtype and device type alike)."""
        typename = ember.typename(self._all_params[0])
        if self._all_params[0].is_sparse:
            raise ValueError(f"ZeroRedundancyOptimizer only supports using the same dense type "
                             f"for all parameters but got {typename}")
        for param in self._all_params[1:]:
            other_typename = ember.typename(param)
            if other_typename != typename:
                raise ValueError(f"ZeroRedundancyOptimizer only supports using the same dense "
                                 f"type for all parameters but got both {typename} and "
                                 f"{other_typename}")

    def _get_is_trainable_mask(self):
        return list(map(_is_trainable, self._all_params))

    def _init_local_optimizer(self):
        """``self.optim``: the wrapped class over this rank's part (its parameter groups are
        passed as such, so an empty part is allowed)."""
        if self._optim_constructor is None:
            raise AssertionError("The local optimizer class has not been set")
        param_groups = self._partition_parameters()[self.rank]
        self.optim = self._optim_constructor(param_groups, **self._optim_defaults)
        self._sync_param_groups(self.optim.param_groups, self.param_groups)
