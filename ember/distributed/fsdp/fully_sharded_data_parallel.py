"""``FullyShardedDataParallel`` (FSDP1): PyTorch's module wrapper
(``torch/distributed/fsdp/fully_sharded_data_parallel.py`` and its ``_init_utils``,
``_runtime_utils``, ``_state_dict_utils``, ``_optim_utils``) on ember's collectives.

Each FSDP instance is one unit: the parameters of its module tree, minus those of nested FSDP
instances (made by ``auto_wrap_policy`` bottom up) and ignored ones, live in one
``FlatParameter`` sharded over the process group (``_flat_param.py`` says how). At run time:

* **forward**: the first forward makes the outermost instance the root (lazy init: buffers cast
  to ``buffer_dtype``, root inputs to ``param_dtype``); each unit all-gathers its parameters,
  runs its module on views of them, and frees them again after forward under ``FULL_SHARD`` /
  ``HYBRID_SHARD`` (except the root, whose parameters backward needs first), and whenever
  gradients are disabled;
* **backward**: a hook on the unit's outputs re-gathers freed parameters before the unit's
  backward; once the unit's gradients are all in, they are reduce-scattered (``NO_SHARD``:
  all-reduced) into the flat parameter's ``.grad``, averaged over the ranks, and the
  parameters are freed; a callback at the end of backward frees what is left;
* ``no_sync()`` accumulates full gradients locally until the next synchronised backward;
* state dicts: ``FULL_STATE_DICT`` (the original names and full tensors, ``rank0_only`` and
  ``offload_to_cpu``), ``SHARDED_STATE_DICT`` (per parameter, a ``DTensor`` sharded on dim 0
  with ``torch.chunk``'s rule), ``LOCAL_STATE_DICT`` (each unit's ``_flat_param`` as a 1-D
  ``DTensor`` whose local piece is the rank's unpadded shard); the keys carry no
  ``_fsdp_wrapped_module.`` prefix;
* optimizer state: ``optim_state_dict`` / ``full_optim_state_dict`` gather the flat states into
  the original parameters' (keyed by their names), ``optim_state_dict_to_load`` shards them
  back for ``optim.load_state_dict``.

Where ember differs: communication is not overlapped with computation (ember's MPI
collectives complete in the issuing thread), so ``backward_prefetch``, ``forward_prefetch``
and ``limit_all_gathers`` are recorded but change no schedule; without ``device_id`` and with
parameters on the CPU, FSDP computes on the CPU (PyTorch demands an accelerator);
``SHARDED_STATE_DICT``/``LOCAL_STATE_DICT`` values are ``DTensor``s, never ``ShardedTensor``s
(ember has none); ``HYBRID_SHARD`` without a process-group pair or 2-D mesh treats all ranks
as one node (ember does not count devices per node).
"""
import contextlib
import functools
import math
import traceback
import warnings
from enum import Enum, auto

import ember
import ember.distributed as dist

from ... import nn
from ..algorithms._checkpoint.checkpoint_wrapper import (_CHECKPOINT_PREFIX,
                                                         _CHECKPOINT_WRAPPED_MODULE,
                                                         ActivationWrapper)
from ..utils import _apply_to_tensors, _replace_by_prefix, _sync_params_and_buffers
from ._flat_param import FLAT_PARAM, FlatParamHandle, _named_modules_of_unit
from .api import (BackwardPrefetch, CPUOffload, FullOptimStateDictConfig, FullStateDictConfig,
                  LocalOptimStateDictConfig, LocalStateDictConfig, MixedPrecision,
                  OptimStateDictConfig, ShardedOptimStateDictConfig, ShardedStateDictConfig,
                  ShardingStrategy, StateDictConfig, StateDictSettings, StateDictType)
from .wrap import (_construct_wrap_fn, _or_policy, _Policy, _post_order_apply, _recursive_wrap,
                   _run_mixed_precision_override_policy, _wrap_module_cls_individually)

__all__ = [
    "FullyShardedDataParallel",
    "OptimStateKeyType",
    "BackwardPrefetch",
    "CPUOffload",
    "FullOptimStateDictConfig",
    "FullStateDictConfig",
    "LocalOptimStateDictConfig",
    "LocalStateDictConfig",
    "MixedPrecision",
    "OptimStateDictConfig",
    "ShardedOptimStateDictConfig",
    "ShardedStateDictConfig",
    "ShardingStrategy",
    "StateDictConfig",
    "StateDictSettings",
    "StateDictType",
]

# module states reach every rank in broadcasts of this size (PyTorch's _init_utils)
PARAM_BROADCAST_BUCKET_SIZE = 250 * 1024 * 1024
FSDP_WRAPPED_MODULE = "_fsdp_wrapped_module"
FSDP_PREFIX = FSDP_WRAPPED_MODULE + "."

HYBRID_SHARDING_STRATEGIES = (ShardingStrategy.HYBRID_SHARD, ShardingStrategy._HYBRID_SHARD_ZERO2)
_RESHARD_AFTER_FORWARD = (ShardingStrategy.FULL_SHARD, ShardingStrategy.HYBRID_SHARD)


class OptimStateKeyType(Enum):
    PARAM_NAME = auto()
    PARAM_ID = auto()


class TrainingState(Enum):
    IDLE = auto()
    FORWARD_BACKWARD = auto()
    SUMMON_FULL_PARAMS = auto()


def clean_tensor_name(tensor_name):
    """A name without FSDP's and the checkpoint wrapper's prefixes."""
    return tensor_name.replace(FSDP_PREFIX, "").replace(_CHECKPOINT_PREFIX, "")


def _cast_floating(dtype, obj):
    return _apply_to_tensors(
        lambda t: t.to(dtype) if t.is_floating_point() and t.dtype != dtype else t, obj)


_MODULE_TO_INP_DTYPE = {}


def _override_module_mixed_precision(root, module_classes_to_override,
                                     wrap_override_dict={"mixed_precision": None}):  # noqa: B006
    """Modules of the given classes (batch norms by default) get their own FSDP instance
    without mixed precision; their inputs are cast to float32 and outputs back."""
    module_classes_to_override = tuple(set(module_classes_to_override))
    overridden_module_classes = set()
    for mod in root.modules():
        if isinstance(mod, module_classes_to_override):
            overridden_module_classes.add(type(mod))
            mod._wrap_overrides = wrap_override_dict

            def cast_fn(dtype, module, x):
                if not ember.is_floating_point(x) or x.dtype == dtype:
                    return x
                _MODULE_TO_INP_DTYPE[module] = x.dtype
                return x.to(dtype)

            def forward_pre_hook(module, args):
                return _apply_to_tensors(functools.partial(cast_fn, ember.float32, module), args)

            def forward_post_hook(module, args, output):
                if module in _MODULE_TO_INP_DTYPE:
                    old_dtype = _MODULE_TO_INP_DTYPE[module]
                    return _apply_to_tensors(functools.partial(cast_fn, old_dtype, module),
                                             output)

            mod.register_forward_pre_hook(forward_pre_hook, prepend=False)
            mod.register_forward_hook(forward_post_hook, prepend=False)
    return overridden_module_classes


def _auto_wrap(root_module, policy, ignored_modules, ignored_params, root_kwargs, fsdp_fn):
    """Wrap ``root_module``'s submodules as ``policy`` says (PyTorch's ``_auto_wrap``)."""
    mixed_precision = root_kwargs["mixed_precision"]
    for module_name, module in root_module.named_modules():
        if isinstance(module, FullyShardedDataParallel):
            raise ValueError("FSDP auto wrapping requires modules to not already have FSDP "
                             f"applied but found {module_name} in\n{root_module}")
    if isinstance(policy, _Policy):
        root_kwargs["auto_wrap_policy"] = None
        target_module_to_kwargs = policy._run_policy(root_module, ignored_modules, root_kwargs)
        if mixed_precision is not None:
            target_module_to_kwargs = _run_mixed_precision_override_policy(
                root_module, mixed_precision._module_classes_to_ignore, ignored_modules,
                root_kwargs, target_module_to_kwargs)
            overridden = _override_module_mixed_precision(
                root_module, mixed_precision._module_classes_to_ignore)
            _warn_on_overridden_mixed_precision(overridden)
        _post_order_apply(root_module,
                          _construct_wrap_fn(root_module, target_module_to_kwargs, fsdp_fn))
        return
    recursive_wrap_kwargs = {"module": root_module, "auto_wrap_policy": policy,
                             "wrapper_cls": fsdp_fn, "ignored_modules": ignored_modules,
                             "ignored_params": ignored_params, "only_wrap_children": True}
    if mixed_precision is not None:
        overridden = _override_module_mixed_precision(
            root_module, mixed_precision._module_classes_to_ignore)
        recursive_wrap_kwargs["auto_wrap_policy"] = functools.partial(
            _or_policy, policies=[policy, functools.partial(
                _wrap_module_cls_individually,
                module_classes=mixed_precision._module_classes_to_ignore)])
        _warn_on_overridden_mixed_precision(overridden)
    _recursive_wrap(**recursive_wrap_kwargs, **root_kwargs)


def _warn_on_overridden_mixed_precision(overridden_module_classes):
    if not overridden_module_classes:
        return
    warnings.warn("Both mixed precision and an auto_wrap_policy were specified to FSDP, where "
                  f"the wrapped module has submodules of type:\n{overridden_module_classes}\n"
                  "These modules will be wrapped as separate FSDP instacnes with mixed "
                  "precision disabled.", stacklevel=3)


def _tensors_in(obj):
    if isinstance(obj, ember.Tensor):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            yield from _tensors_in(o)
    elif isinstance(obj, dict):
        for o in obj.values():
            yield from _tensors_in(o)


class FullyShardedDataParallel(nn.Module):
    """Shard a module's parameters, gradients and optimizer states over data-parallel ranks."""

    def __init__(self, module, process_group=None, sharding_strategy=None, cpu_offload=None,
                 auto_wrap_policy=None, backward_prefetch=BackwardPrefetch.BACKWARD_PRE,
                 mixed_precision=None, ignored_modules=None, param_init_fn=None,
                 device_id=None, sync_module_states=False, forward_prefetch=False,
                 limit_all_gathers=True, use_orig_params=False, ignored_states=None,
                 device_mesh=None):
        super().__init__()
        if isinstance(module, (nn.ModuleList, nn.ModuleDict)):
            warnings.warn("FSDP will not all-gather parameters for containers that do not "
                          f"implement forward: {module}", stacklevel=2)
        self._init_ignored(module, ignored_modules, ignored_states)
        self._init_process_groups(process_group, sharding_strategy, device_mesh)
        if auto_wrap_policy is not None:
            root_kwargs = {
                "process_group": process_group, "sharding_strategy": sharding_strategy,
                "cpu_offload": cpu_offload, "backward_prefetch": backward_prefetch,
                "mixed_precision": mixed_precision, "param_init_fn": param_init_fn,
                "device_id": device_id, "sync_module_states": sync_module_states,
                "forward_prefetch": forward_prefetch, "limit_all_gathers": limit_all_gathers,
                "use_orig_params": use_orig_params, "ignored_states": self._ignored_params,
                "device_mesh": device_mesh,
            }
            if sharding_strategy in HYBRID_SHARDING_STRATEGIES and device_mesh is None:
                # the children share the root's groups
                root_kwargs["process_group"] = (self.process_group, self._inter_node_pg)
            _auto_wrap(module, auto_wrap_policy, self._ignored_modules, self._ignored_params,
                       root_kwargs, FullyShardedDataParallel)
        if self.world_size == 1 and (sharding_strategy or ShardingStrategy.FULL_SHARD) \
                != ShardingStrategy.NO_SHARD and (self._inter_node_pg is None
                                                  or self._inter_node_pg.size() == 1):
            warnings.warn("FSDP is switching to use `NO_SHARD` instead of "
                          f"{sharding_strategy or ShardingStrategy.FULL_SHARD} since the world "
                          "size is 1.", stacklevel=2)
            sharding_strategy = ShardingStrategy.NO_SHARD
        self.sharding_strategy = sharding_strategy or ShardingStrategy.FULL_SHARD
        self.mixed_precision = mixed_precision or MixedPrecision()
        self.cpu_offload = cpu_offload or CPUOffload()
        self.backward_prefetch = backward_prefetch
        self.forward_prefetch = forward_prefetch
        self.limit_all_gathers = limit_all_gathers
        self._use_orig_params = use_orig_params
        self.training_state = TrainingState.IDLE
        self._is_root = None
        self._sync_gradients = True
        self._post_backward_callback_queued = False
        self._unshard_params_ctx = {}
        self._init_device(module, device_id)
        self._materialize_meta(module, param_init_fn)
        managed = [p for _, m in _named_modules_of_unit(module) if m not in self._ignored_modules
                   for p in m._parameters.values()
                   if p is not None and p not in self._ignored_params]
        if sync_module_states:
            self._sync_module_states(module, managed)
        self._init_buffer_state(module)
        self._handle = None
        if managed:
            self._handle = FlatParamHandle(
                {id(p) for p in managed}, module, self.compute_device,
                self.sharding_strategy.name, self.cpu_offload.offload_params,
                self.mixed_precision.param_dtype, self.mixed_precision.reduce_dtype,
                self.mixed_precision.keep_low_precision_grads, self.process_group,
                use_orig_params, self._inter_node_pg)
            self._handle._fsdp_state = self
        self._fsdp_wrapped_module = module
        if self._handle is not None and not use_orig_params:
            fp = self._handle.flat_param
            for name, m, _ in fp._param_infos:
                delattr(m, name)
            for name, m, _, _, _, _ in fp._shared_param_infos:
                delattr(m, name)
            module.register_parameter(FLAT_PARAM, fp)
            self._handle.unshard()
            self._handle.use_unsharded_views(as_params=False, detached=True)
            self._handle.reshard()
        self._state_dict_type = StateDictType.FULL_STATE_DICT
        self._state_dict_config = FullStateDictConfig()
        self._optim_state_dict_config = FullOptimStateDictConfig()
        self.register_state_dict_pre_hook(FullyShardedDataParallel._pre_state_dict_hook)
        self._register_state_dict_hook(FullyShardedDataParallel._post_state_dict_hook)
        self._register_load_state_dict_pre_hook(
            FullyShardedDataParallel._pre_load_state_dict_hook, with_module=True)
        self.register_load_state_dict_post_hook(
            FullyShardedDataParallel._post_load_state_dict_hook)

    # --- construction

    def _init_ignored(self, module, ignored_modules, ignored_states):
        if ignored_modules is not None and ignored_states is not None:
            raise ValueError("Cannot pass both ignored_modules and ignored_states at the same "
                             "time. Please just pass ignored_states.")
        given = list(ignored_states if ignored_states is not None else ignored_modules or [])
        mods = [m for m in given if isinstance(m, nn.Module)]
        params = {p for p in given if isinstance(p, nn.Parameter)}
        if ignored_modules is not None and len(mods) != len(given):
            raise TypeError("`ignored_modules` should be an iterable of `torch.nn.Module`s ")
        self._ignored_modules = set()
        for m in mods:
            if isinstance(m, FullyShardedDataParallel):
                raise ValueError("`ignored_modules` should not include FSDP modules")
            self._ignored_modules.update(m.modules())
        for m in self._ignored_modules:
            params.update(m.parameters())
        self._ignored_params = params
        self._ignored_buffer_names = {
            clean_tensor_name(n) for n, b in module.named_buffers()
            if any(b is mb for m in self._ignored_modules for mb in m.buffers())}

    def _init_process_groups(self, process_group, sharding_strategy, device_mesh):
        self._device_mesh = device_mesh
        self._inter_node_pg = None
        if sharding_strategy in HYBRID_SHARDING_STRATEGIES:
            if device_mesh is not None:
                if device_mesh.ndim != 2:
                    raise ValueError(
                        f"Expected device_mesh to have ndim=2 but got {device_mesh.ndim}")
                self._inter_node_pg = device_mesh.get_group(mesh_dim=0)
                self.process_group = device_mesh.get_group(mesh_dim=1)
            elif process_group is None:
                # all ranks on one node: shard over the world, a replica group per rank
                world = dist.distributed_c10d._get_default_group()
                singles = [dist.new_group([r]) for r in range(world.size())]
                self.process_group = world
                self._inter_node_pg = singles[world.rank()]
            elif (isinstance(process_group, tuple) and len(process_group) == 2
                  and all(isinstance(g, dist.ProcessGroup) for g in process_group)):
                self.process_group, self._inter_node_pg = process_group
            else:
                raise ValueError("Expected process_group to be passed in as either None or "
                                 "Tuple[dist.ProcessGroup, dist.ProcessGroup] but got "
                                 f"{type(process_group)}")
        elif process_group is not None and device_mesh is not None:
            raise ValueError("Cannot pass both process_group and device_mesh at the same time. "
                             "Please just pass only one of them.")
        elif device_mesh is not None:
            self.process_group = device_mesh.get_group(mesh_dim=0)
        else:
            self.process_group = (process_group if process_group is not None
                                  else dist.distributed_c10d._get_default_group())
        self.rank = self.process_group.rank()
        self.world_size = self.process_group.size()

    def _init_device(self, module, device_id):
        if device_id is not None:
            device = device_id if isinstance(device_id, ember.device) else (
                ember.device("cuda", device_id) if isinstance(device_id, int)
                else ember.device(device_id))
        else:
            devs = {p.device for p in module.parameters()
                    if p.device.type not in ("cpu", "meta") and p not in self._ignored_params}
            if len(devs) > 1:
                a, b = sorted(devs, key=str)[:2]
                raise RuntimeError("FSDP does not support modules with different device types "
                                   f"but got params on {a.type} and {b.type}")
            device = devs.pop() if devs else ember.device("cpu")
        self.compute_device = device
        if device_id is not None:
            with ember.no_grad():
                for _, m in _named_modules_of_unit(module):
                    if m in self._ignored_modules:
                        continue
                    for n, p in m._parameters.items():
                        if p is not None and p.device != device and p.device.type != "meta":
                            p.data = p.detach().to(device)
                    for n, b in m._buffers.items():
                        if b is not None and b.device != device and b.device.type != "meta":
                            m._buffers[n] = b.to(device)

    def _materialize_meta(self, module, param_init_fn):
        mods = [m for _, m in _named_modules_of_unit(module) if m not in self._ignored_modules]
        if not any(t.device.type == "meta" for m in mods
                   for t in list(m._parameters.values()) + list(m._buffers.values())
                   if t is not None):
            return
        if param_init_fn is not None:
            if not callable(param_init_fn):
                raise ValueError(f"Expected {param_init_fn} to be callable but got "
                                 f"{type(param_init_fn)}")
            param_init_fn(module)
            return
        for m in mods:
            m.to_empty(device=self.compute_device, recurse=False)
            if callable(getattr(m, "reset_parameters", None)):
                m.reset_parameters()

    def _sync_module_states(self, module, params):
        """Rank 0's parameters and buffers on every rank, in coalesced broadcasts."""
        bufs = [b for _, m in _named_modules_of_unit(module) if m not in self._ignored_modules
                for b in m._buffers.values() if b is not None]
        _sync_params_and_buffers(self.process_group, [t.detach() for t in params + bufs],
                                 PARAM_BROADCAST_BUCKET_SIZE, 0)

    def _init_buffer_state(self, module):
        self._buffer_names = []
        self._buffer_name_to_orig_dtype = {}
        for mname, m in _named_modules_of_unit(module):
            if m in self._ignored_modules:
                continue
            for bname, b in m._buffers.items():
                if b is None:
                    continue
                name = clean_tensor_name(f"{mname}.{bname}" if mname else bname)
                self._buffer_names.append(name)
                self._buffer_name_to_orig_dtype[name] = b.dtype

    # --- module plumbing

    @property
    def module(self):
        """The wrapped module (inside a checkpoint wrapper, the module it wraps)."""
        if isinstance(self._fsdp_wrapped_module, ActivationWrapper):
            return getattr(self._fsdp_wrapped_module, _CHECKPOINT_WRAPPED_MODULE)
        return self._fsdp_wrapped_module

    @property
    def _has_params(self):
        return self._handle is not None

    @property
    def _flat_param(self):
        return self._handle.flat_param if self._handle else None

    def __getattr__(self, name):
        """Attributes FSDP lacks come from the wrapped module."""
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self._fsdp_wrapped_module, name)

    def __getitem__(self, key):
        """Indexing goes to the wrapped module (an ``nn.Sequential``, say)."""
        if FSDP_WRAPPED_MODULE in self._modules:
            return self._fsdp_wrapped_module.__getitem__(key)
        return super().__getitem__(key)

    def check_is_root(self):
        self._lazy_init()
        return self._is_root

    @staticmethod
    def fsdp_modules(module, root_only=False):
        """The FSDP instances in ``module``'s tree (only the outermost with ``root_only``)."""
        mods = [m for m in module.modules() if isinstance(m, FullyShardedDataParallel)]
        if root_only:
            nested = {id(c) for m in mods for c in m.modules() if c is not m}
            mods = [m for m in mods if id(m) not in nested]
        return mods

    def apply(self, fn):
        """``nn.Module.apply`` with the full parameters gathered (and written back)."""
        uninitialized = self._is_root is None
        self._assert_state(TrainingState.IDLE)
        with self._unshard_params(self, writeback=True, rank0_only=False, offload_to_cpu=False,
                                  with_grads=False):
            ret = super().apply(fn)
        if uninitialized and self._is_root:
            for m in self.fsdp_modules(self):
                m._is_root = None
        return ret

    def named_parameters(self, *args, **kwargs):
        """Inside ``summon_full_params`` the names carry no ``_fsdp_wrapped_module.``."""
        clean = self.training_state == TrainingState.SUMMON_FULL_PARAMS
        for name, param in super().named_parameters(*args, **kwargs):
            yield (name.replace(FSDP_PREFIX, "") if clean else name), param

    def named_buffers(self, *args, **kwargs):
        clean = self.training_state == TrainingState.SUMMON_FULL_PARAMS
        for name, buf in super().named_buffers(*args, **kwargs):
            yield (name.replace(FSDP_PREFIX, "") if clean else name), buf

    def _assert_state(self, state):
        if isinstance(state, TrainingState):
            state = [state]
        if self.training_state not in state:
            msg = (f"expected to be in states {state} but current state is "
                   f"{self.training_state}")
            if self.rank == 0:
                print(f"Asserting FSDP instance is: {self}")
                print(f"ERROR: {msg}")
                traceback.print_stack()
            raise ValueError(msg)

    # --- lazy init

    def _lazy_init(self):
        if self._is_root is not None:
            return
        self._is_root = True
        self._all_fsdp_states = self.fsdp_modules(self)
        self._all_handles = [s._handle for s in self._all_fsdp_states if s._handle is not None]
        for attr_name in ("_use_orig_params", "limit_all_gathers"):
            values = {getattr(s, attr_name) for s in self._all_fsdp_states}
            if len(values) != 1:
                self._is_root = None
                raise ValueError(
                    f"Expects one homogeneous value for {attr_name} but got {values}")
        for s in self._all_fsdp_states:
            if s is not self:
                s._is_root = False
            object.__setattr__(s, "_root", self)  # not a submodule
            if s.mixed_precision.buffer_dtype is not None:
                module = s._fsdp_wrapped_module
                with ember.no_grad():
                    for _, m in _named_modules_of_unit(module):
                        if m in s._ignored_modules:
                            continue
                        for n, b in m._buffers.items():
                            if b is not None and b.is_floating_point():
                                m._buffers[n] = b.to(s.mixed_precision.buffer_dtype)

    # --- forward / backward

    def forward(self, *args, **kwargs):
        """Gather this unit's parameters, run the wrapped module, reshard per strategy."""
        self._lazy_init()
        mp = self.mixed_precision
        if mp.param_dtype is not None and (mp.cast_root_forward_inputs if self._is_root
                                           else mp.cast_forward_inputs):
            args, kwargs = _cast_floating(mp.param_dtype, (args, kwargs))
        handle = self._handle
        self.training_state = TrainingState.FORWARD_BACKWARD
        if handle is not None:
            handle.unshard()
            handle.use_unsharded_views()
        output = self._fsdp_wrapped_module(*args, **kwargs)
        grad_on = ember.is_grad_enabled()
        if handle is not None:
            if not grad_on:
                handle.reshard()
            elif not self._is_root and self.sharding_strategy in _RESHARD_AFTER_FORWARD:
                handle.reshard()
        if grad_on:
            for t in _tensors_in(output):
                if t.requires_grad:
                    t.register_hook(self._pre_backward_hook)
        self.training_state = TrainingState.IDLE
        return output

    def _pre_backward_hook(self, grad):
        root = self._root
        if not root._post_backward_callback_queued:
            root._post_backward_callback_queued = True
            from ...autograd.variable import Variable
            Variable._execution_engine.queue_callback(root._post_backward_final_callback)
        self.training_state = TrainingState.FORWARD_BACKWARD
        if self._handle is not None and self._handle.needs_unshard():
            self._handle.unshard()
        return None

    def _post_backward_final_callback(self):
        for s in self._all_fsdp_states:
            h = s._handle
            if h is not None and ((h.uses_sharded_strategy and not h.needs_unshard())
                                  or h._views_unsharded):
                h.reshard()
            s.training_state = TrainingState.IDLE
        self._post_backward_callback_queued = False

    @contextlib.contextmanager
    def no_sync(self):
        """Backward passes inside accumulate full gradients locally; the first backward
        outside reduces the sum. Only on the root."""
        self._lazy_init()
        if not self._is_root:
            raise RuntimeError("`no_sync()` on inner FSDP instances is not supported. Please "
                               "call `no_sync()` on root FSDP module.")
        self._assert_state(TrainingState.IDLE)
        old_flags = []
        for m in self.modules():
            if isinstance(m, FullyShardedDataParallel):
                old_flags.append((m, m._sync_gradients))
                m._sync_gradients = False
        try:
            yield
        finally:
            for m, old_flag in old_flags:
                if m._sync_gradients:
                    raise AssertionError("`_sync_gradients` was incorrectly set to `True` "
                                         "while in the `no_sync()` context manager")
                m._sync_gradients = old_flag

    @ember.no_grad()
    def clip_grad_norm_(self, max_norm, norm_type=2.0):
        """Clip the gradients to a total norm computed over all ranks' shards; returns that
        norm (in the widest gradient dtype)."""
        self._lazy_init()
        if not self._is_root:
            raise RuntimeError("`clip_grad_norm_()` should only be called on the root FSDP "
                               "instance")
        self._assert_state(TrainingState.IDLE)
        if all(not h.uses_sharded_strategy for h in self._all_handles):
            return nn.utils.clip_grad_norm_(self.parameters(), max_norm, norm_type)
        max_norm, norm_type = float(max_norm), float(norm_type)
        sharded, nonsharded, seen, grads = [], [], set(), []
        for h in self._all_handles:
            target = sharded if h.uses_sharded_strategy else nonsharded
            for p in (h.flat_param._params if h._use_orig_params else [h.flat_param]):
                if id(p) not in seen:
                    seen.add(id(p))
                    target.append(p)
                    if p.grad is not None:
                        grads.append(p.grad)
        for p in self.parameters():
            if id(p) not in seen:
                seen.add(id(p))
                nonsharded.append(p)
                if p.grad is not None:
                    grads.append(p.grad)
        zero = ember.tensor(0.0, device=self.compute_device)
        local_sharded = _get_grad_norm(sharded, norm_type, zero, self.compute_device)
        local_nonsharded = (_get_grad_norm(nonsharded, norm_type, zero, self.compute_device)
                            if nonsharded else None)
        if norm_type == math.inf:
            total_norm = (ember.maximum(local_sharded, local_nonsharded)
                          if local_nonsharded is not None else local_sharded)
            dist.all_reduce(total_norm, op=dist.ReduceOp.MAX, group=self.process_group)
        else:
            total_norm = local_sharded ** norm_type
            dist.all_reduce(total_norm, group=self.process_group)
            # the non-sharded norm is the same on every rank: added once
            if local_nonsharded is not None:
                total_norm += local_nonsharded ** norm_type
            total_norm = total_norm ** (1.0 / norm_type)
        if self.cpu_offload.offload_params:
            total_norm = total_norm.cpu()
        clip_coef = max_norm / (total_norm + 1e-6)
        clip_coef_clamped = ember.clamp(clip_coef, max=1.0)
        for g in grads:
            g.mul_(clip_coef_clamped.to(g.device, g.dtype))
        if not grads:
            warnings.warn(f"Called FSDP.clip_grad_norm_() on rank {self.rank} with no gradients "
                          f"-- returning the total norm in the default dtype {total_norm.dtype}",
                          stacklevel=2)
            return total_norm
        return total_norm.to(functools.reduce(ember.promote_types, [g.dtype for g in grads]))

    # --- full parameters

    @staticmethod
    @contextlib.contextmanager
    def summon_full_params(module, recurse=True, writeback=True, rank0_only=False,
                           offload_to_cpu=False, with_grads=False):
        """Inside, the FSDP units of ``module`` (all of them, or only ``module`` without
        ``recurse``) expose their full parameters, in full precision, under their original
        names; on exit the rank's part of any change is kept (``writeback``)."""
        states = (FullyShardedDataParallel.fsdp_modules(module) if recurse
                  else [module] if isinstance(module, FullyShardedDataParallel) else [])
        for s in states:
            if s._is_root is None and s in FullyShardedDataParallel.fsdp_modules(
                    module, root_only=True):
                s._lazy_init()
        with contextlib.ExitStack() as stack:
            for s in states:
                stack.enter_context(s._unshard_params(s, writeback, rank0_only, offload_to_cpu,
                                                      with_grads))
            yield

    @contextlib.contextmanager
    def _unshard_params(self, _module, writeback, rank0_only, offload_to_cpu, with_grads):
        """This unit's full parameters, as ``nn.Parameter`` s under the original names."""
        if self.training_state == TrainingState.FORWARD_BACKWARD:
            raise AssertionError("Cannot manually unshard parameters during forward/backward")
        if self.training_state == TrainingState.SUMMON_FULL_PARAMS:
            raise AssertionError("Cannot manually unshard parameters when already unsharding "
                                 "parameters")
        if with_grads and (offload_to_cpu or not self._use_orig_params):
            raise NotImplementedError(f"with_grads={with_grads}, use_orig_params="
                                      f"{self._use_orig_params}, offload_to_cpu="
                                      f"{offload_to_cpu} is not supported yet")
        h = self._handle
        if offload_to_cpu and h is not None and not h.uses_sharded_strategy:
            raise NotImplementedError("offload_to_cpu=True and NO_SHARD is not supported yet")
        if writeback and rank0_only:
            raise NotImplementedError("writeback=True and rank0_only=True is not supported yet")
        if offload_to_cpu and not rank0_only:
            warnings.warn("offload_to_cpu=True and rank0_only=False may result in the"
                          "unsharded parameters being redundantly copied to CPU memory for GPUs "
                          "sharing the same CPU memory, which risks CPU OOM. We recommend using "
                          "offload_to_cpu=True with rank0_only=True.", stacklevel=3)
        self.training_state = TrainingState.SUMMON_FULL_PARAMS
        if h is None or (not h.uses_sharded_strategy and self._use_orig_params):
            try:
                yield
            finally:
                self.training_state = TrainingState.IDLE
            return
        h.unshard(full_precision=True)
        if with_grads:
            h.gather_full_grad()
        if rank0_only and self.rank != 0:
            h.reshard()
            try:
                yield
            finally:
                self.training_state = TrainingState.IDLE
            return
        if offload_to_cpu:
            h.offload_full_to_cpu()
        wrapped = self._fsdp_wrapped_module
        if not self._use_orig_params:
            del wrapped._parameters[FLAT_PARAM]
        h.use_unsharded_views(as_params=True, with_grads=with_grads)
        try:
            yield
        finally:
            if writeback:
                h.writeback()
            h.reshard()
            if not self._use_orig_params:
                h.use_unsharded_views(as_params=False, detached=True)
                wrapped.register_parameter(FLAT_PARAM, h.flat_param)
            self.training_state = TrainingState.IDLE

    # --- state dicts

    @staticmethod
    def set_state_dict_type(module, state_dict_type, state_dict_config=None,
                            optim_state_dict_config=None):
        """Set the state-dict type and configurations of every FSDP instance in ``module``;
        returns the previous settings."""
        warnings.warn(
            "FSDP.state_dict_type() and FSDP.set_state_dict_type() are being deprecated. Please "
            "use APIs, get_state_dict() and set_state_dict(), which can support different "
            "parallelisms, FSDP1, FSDP2, DDP. API doc: https://pytorch.org/docs/stable/"
            "distributed.checkpoint.html#torch.distributed.checkpoint.state_dict.get_state_dict "
            ".Tutorial: https://pytorch.org/tutorials/recipes/distributed_checkpoint_recipe.html .",
            FutureWarning, stacklevel=2)
        config_type = {StateDictType.FULL_STATE_DICT: FullStateDictConfig,
                       StateDictType.LOCAL_STATE_DICT: LocalStateDictConfig,
                       StateDictType.SHARDED_STATE_DICT: ShardedStateDictConfig}[state_dict_type]
        optim_config_type = {
            StateDictType.FULL_STATE_DICT: FullOptimStateDictConfig,
            StateDictType.LOCAL_STATE_DICT: LocalOptimStateDictConfig,
            StateDictType.SHARDED_STATE_DICT: ShardedOptimStateDictConfig}[state_dict_type]
        if state_dict_config is None:
            state_dict_config = config_type()
        if optim_state_dict_config is None:
            optim_state_dict_config = optim_config_type()
        if config_type is not type(state_dict_config):
            raise RuntimeError(f"Expected state_dict_config of type {config_type} but got "
                               f"{type(state_dict_config)}")
        if optim_config_type is not type(optim_state_dict_config):
            raise RuntimeError(f"Expected optim_state_dict_config of type {optim_config_type} "
                               f"but got {type(optim_state_dict_config)}")
        prev_type = prev_config = prev_optim_config = None
        for submodule in FullyShardedDataParallel.fsdp_modules(module):
            if prev_type is None:
                prev_type = submodule._state_dict_type
            elif prev_type != submodule._state_dict_type:
                raise AssertionError("All FSDP modules should have the same state_dict_type.")
            if prev_config is None:
                prev_config = submodule._state_dict_config
            elif not isinstance(submodule._state_dict_config, type(prev_config)):
                raise AssertionError("All FSDP modules must have the same type of "
                                     "state_dict_config.")
            if prev_optim_config is None:
                prev_optim_config = submodule._optim_state_dict_config
            elif not isinstance(submodule._optim_state_dict_config, type(prev_optim_config)):
                raise AssertionError("All FSDP modules must have the same type of "
                                     "optim_state_dict_config.")
            submodule._state_dict_type = state_dict_type
            submodule._state_dict_config = state_dict_config
            submodule._optim_state_dict_config = optim_state_dict_config
        return StateDictSettings(prev_type, prev_config, prev_optim_config)

    @staticmethod
    def get_state_dict_type(module):
        settings = None
        for submodule in FullyShardedDataParallel.fsdp_modules(module):
            s = StateDictSettings(submodule._state_dict_type, submodule._state_dict_config,
                                  submodule._optim_state_dict_config)
            if settings is None:
                settings = s
            elif settings != s:
                raise AssertionError("All FSDP modules must have the same state dict settings."
                                     f"Got {s} and {settings}.")
        return settings

    @staticmethod
    @contextlib.contextmanager
    def state_dict_type(module, state_dict_type, state_dict_config=None,
                        optim_state_dict_config=None):
        """``set_state_dict_type`` for the ``with`` block, then the previous settings."""
        prev = FullyShardedDataParallel.set_state_dict_type(
            module, state_dict_type, state_dict_config, optim_state_dict_config)
        yield
        FullyShardedDataParallel.set_state_dict_type(
            module, prev.state_dict_type, prev.state_dict_config, prev.optim_state_dict_config)

    def _should_unshard(self):
        return self._handle is not None and not (
            self.sharding_strategy == ShardingStrategy.NO_SHARD and self._use_orig_params)

    def _enter_unshard(self, **kwargs):
        ctx = self._unshard_params(self, with_grads=False, **kwargs)
        ctx.__enter__()
        self._unshard_params_ctx[self] = ctx

    def _exit_unshard(self):
        self._unshard_params_ctx.pop(self).__exit__(None, None, None)

    @staticmethod
    def _pre_state_dict_hook(module, prefix, keep_vars):
        self = module
        self._lazy_init()
        t = self._state_dict_type
        if t == StateDictType.LOCAL_STATE_DICT:
            if self._handle is not None and not self._handle.uses_sharded_strategy:
                raise RuntimeError("``local_state_dict`` can only be used when parameters are "
                                   "flatten and sharded.")
            if self._handle is not None and self._use_orig_params:
                raise NotImplementedError("ember's LOCAL_STATE_DICT needs use_orig_params=False")
            return
        if self._should_unshard():
            rank0_only = (t == StateDictType.FULL_STATE_DICT
                          and self._state_dict_config.rank0_only)
            offload = (t == StateDictType.FULL_STATE_DICT
                       and self._state_dict_config.offload_to_cpu
                       and self._handle.uses_sharded_strategy)
            self._enter_unshard(writeback=False, rank0_only=rank0_only, offload_to_cpu=offload)

    @staticmethod
    def _post_state_dict_hook(module, state_dict, prefix, *args):
        self = module
        _replace_by_prefix(state_dict, prefix + FSDP_PREFIX, prefix)
        t = self._state_dict_type
        h = self._handle
        if t == StateDictType.LOCAL_STATE_DICT:
            if h is not None:
                key = prefix + FLAT_PARAM
                state_dict[key] = self._local_flat_dtensor()
            return state_dict
        fqns = [prefix + clean_tensor_name(f) for f in (h.flat_param._fqns if h else [])]
        rank0_only = (t == StateDictType.FULL_STATE_DICT and self._state_dict_config.rank0_only
                      and self.rank != 0)
        if h is not None:
            if rank0_only:
                for k in fqns:
                    state_dict.pop(k, None)
            elif t == StateDictType.FULL_STATE_DICT:
                for k in fqns:
                    v = state_dict[k].detach().clone()
                    if self._state_dict_config.offload_to_cpu:
                        v = v.cpu()
                    state_dict[k] = v
            else:
                for k in fqns:
                    state_dict[k] = self._chunk_dtensor(state_dict[k].detach())
            if self._should_unshard():
                self._exit_unshard()
        for name in self._buffer_names:
            key = prefix + name
            if key not in state_dict or name in self._ignored_buffer_names:
                continue
            if rank0_only:
                state_dict.pop(key)
                continue
            buf = state_dict[key]
            if self._state_dict_config.offload_to_cpu:
                buf = buf.cpu()
            if (self.mixed_precision.buffer_dtype is not None
                    and t != StateDictType.LOCAL_STATE_DICT):
                buf = buf.to(self._buffer_name_to_orig_dtype[name]).clone()
            state_dict[key] = buf
        return state_dict

    def _mesh(self):
        if getattr(self, "_pg_mesh", None) is None:
            from ..device_mesh import DeviceMesh
            self._pg_mesh = DeviceMesh.from_group(self.process_group, self.compute_device.type)
        return self._pg_mesh

    def _chunk_dtensor(self, full):
        """``full`` as a DTensor sharded on dim 0 over the process group (torch.chunk)."""
        from ..tensor import DTensor, Shard
        chunks = ember.chunk(full, self.world_size, dim=0) if full.dim() else [full]
        if full.dim() == 0:
            local = full.clone()
            from ..tensor import Replicate
            return DTensor.from_local(local, self._mesh(), [Replicate()], run_check=False)
        if self.rank < len(chunks):
            local = chunks[self.rank].clone()
        else:
            local = full.new_zeros((0,) + tuple(full.shape[1:]))
        return DTensor.from_local(local, self._mesh(), [Shard(0)], run_check=False,
                                  shape=full.shape, stride=full.stride())

    def _local_flat_dtensor(self):
        from ..tensor import DTensor, Shard
        fp = self._handle.flat_param
        n = fp._sharded_size[0] - fp._shard_numel_padded
        local = fp.detach()[:n].clone()
        total = fp._unpadded_unsharded_size[0]
        return DTensor.from_local(local, self._mesh(), [Shard(0)], run_check=False,
                                  shape=(total,), stride=(1,))

    @staticmethod
    def _pre_load_state_dict_hook(module, state_dict, prefix, *args):
        self = module
        self._lazy_init()
        t = self._state_dict_type
        h = self._handle
        if t == StateDictType.LOCAL_STATE_DICT:
            key = prefix + FLAT_PARAM
            if h is not None and key in state_dict:
                v = state_dict[key]
                local = v.to_local() if hasattr(v, "to_local") else v
                fp = h.flat_param
                padded = ember.zeros(fp._sharded_size, dtype=fp.dtype, device=fp.device)
                padded[:local.numel()].copy_(local.reshape(-1))
                state_dict[key] = padded
            _replace_by_prefix(state_dict, prefix, prefix + FSDP_PREFIX)
            return
        if t == StateDictType.SHARDED_STATE_DICT and h is not None:
            for f in h.flat_param._fqns:
                key = prefix + clean_tensor_name(f)
                v = state_dict.get(key)
                if v is not None and hasattr(v, "full_tensor"):
                    state_dict[key] = v.full_tensor()
        if self._should_unshard():
            self._enter_unshard(writeback=True, rank0_only=False, offload_to_cpu=False)
        _replace_by_prefix(state_dict, prefix, prefix + FSDP_PREFIX)

    @staticmethod
    def _post_load_state_dict_hook(module, incompatible_keys):
        self = module
        if self._state_dict_type != StateDictType.LOCAL_STATE_DICT and self._should_unshard():
            self._exit_unshard()

    # --- optimizer state dicts

    @staticmethod
    def full_optim_state_dict(model, optim, optim_input=None, rank0_only=True, group=None):
        """The optimizer's state for the original (unflattened, full) parameters, keyed by
        their names; on rank 0 only unless ``rank0_only=False``. Every rank must call it."""
        if optim_input is not None:
            raise NotImplementedError("ember's full_optim_state_dict takes the optimizer's "
                                      "own parameters (optim_input is deprecated)")
        return _full_optim_state_dict(model, optim, optim.state_dict(), rank0_only,
                                      cpu_offload=True)

    @staticmethod
    def optim_state_dict(model, optim, optim_state_dict=None, group=None):
        """``optim``'s state for ``model``'s original parameters per the model's state-dict
        type (``FULL_STATE_DICT`` only in ember)."""
        settings = FullyShardedDataParallel.get_state_dict_type(model)
        if settings.state_dict_type != StateDictType.FULL_STATE_DICT:
            raise NotImplementedError("ember's FSDP.optim_state_dict supports "
                                      "StateDictType.FULL_STATE_DICT only")
        config = settings.optim_state_dict_config
        if optim_state_dict is None:
            optim_state_dict = optim.state_dict()
        return _full_optim_state_dict(model, optim, optim_state_dict,
                                      getattr(config, "rank0_only", False),
                                      cpu_offload=config.offload_to_cpu)

    @staticmethod
    def optim_state_dict_to_load(model, optim, optim_state_dict, is_named_optimizer=False,
                                 load_directly=False, group=None):
        """Turn a full optimizer state dict (from ``optim_state_dict``) into one
        ``optim.load_state_dict`` takes: each rank's shards of the flat states."""
        if is_named_optimizer:
            raise NotImplementedError("ember's FSDP.optim_state_dict_to_load does not support "
                                      "named optimizers")
        result = _optim_state_dict_to_load(model, optim, optim_state_dict)
        if load_directly:
            optim.load_state_dict(result)
        return result


def _get_grad_norm(params, norm_type, zero, device):
    """The norm of ``params``' gradients as one vector, in float32."""
    grads = [p.grad for p in params if p.grad is not None]
    if not grads:
        return zero
    norm = ember.linalg.vector_norm(
        ember.stack([ember.linalg.vector_norm(g.detach(), norm_type, dtype=ember.float32)
                     for g in grads]), norm_type, dtype=ember.float32)
    return norm.to(device=device)


def _handle_fqns(model):
    """``(fsdp state, handle, [clean fqn of each original parameter])`` for every unit."""
    names = {id(m): n for n, m in model.named_modules()}
    out = []
    for s in FullyShardedDataParallel.fsdp_modules(model):
        if s._handle is None:
            continue
        base = clean_tensor_name(names[id(s)] + ".") if names[id(s)] else ""
        out.append((s, s._handle,
                    [clean_tensor_name(base + f) for f in s._handle.flat_param._fqns]))
    return out


def _optim_params(optim):
    return [p for g in optim.param_groups for p in g["params"]]


def _param_keys(model, optim):
    """For each optimizer parameter (in index order): ``("flat", handle, fqns)``,
    ``("orig", handle, i, fqn)`` or ``("plain", fqn)``."""
    by_id = {}
    for s, h, fqns in _handle_fqns(model):
        if h._use_orig_params:
            for i, p in enumerate(h.flat_param._params):
                by_id[id(p)] = ("orig", h, i, fqns[i])
        else:
            by_id[id(h.flat_param)] = ("flat", h, fqns)
    for n, p in model.named_parameters():
        by_id.setdefault(id(p), ("plain", clean_tensor_name(n)))
    keys = []
    for p in _optim_params(optim):
        if id(p) not in by_id:
            raise KeyError("The optimizer holds a parameter that is not in the model")
        keys.append(by_id[id(p)])
    return keys


def _order_state(state):
    """PyTorch's order: tensor states, then 0-dim tensors, then other values, each sorted."""
    tensors = sorted((k, v) for k, v in state.items()
                     if isinstance(v, ember.Tensor) and v.dim() > 0)
    scalars = sorted((k, v) for k, v in state.items()
                     if isinstance(v, ember.Tensor) and v.dim() == 0)
    rest = sorted(((k, v) for k, v in state.items() if not isinstance(v, ember.Tensor)),
                  key=lambda kv: kv[0])
    return dict(tensors + scalars + rest)


def _full_optim_state_dict(model, optim, osd, rank0_only, cpu_offload):
    keys = _param_keys(model, optim)
    state = osd["state"]
    out_state = {}
    orig_handles_done = set()
    for idx, key in enumerate(keys):
        if key[0] == "plain":
            if idx in state:
                out_state[key[1]] = dict(state[idx])
            continue
        h = key[1]
        if key[0] == "flat":
            if idx not in state:
                continue
            flat_state = state[idx]
            fqns = key[2]
            per = [{} for _ in fqns]
            for name, v in flat_state.items():
                if isinstance(v, ember.Tensor) and v.dim() > 0:
                    full = h.gather_full_flat(v.detach())
                    for d, view in zip(per, h.unflatten(full)):
                        d[name] = view.clone()
                else:
                    for d in per:
                        d[name] = v.clone() if isinstance(v, ember.Tensor) else v
            for fqn, d in zip(fqns, per):
                out_state[fqn] = _order_state(d)
            continue
        # use_orig_params: the whole unit at its first parameter
        if id(h) in orig_handles_done:
            continue
        orig_handles_done.add(id(h))
        unit = [(j, k) for j, k in enumerate(keys) if k[0] == "orig" and k[1] is h]
        states = {k[2]: state.get(j) for j, k in unit}
        names = sorted({n for s in states.values() if s for n in s})
        fp = h.flat_param
        per = {k[3]: {} for _, k in unit if states[k[2]]}
        for name in names:
            sample = next(s[name] for s in states.values() if s and name in s)
            if isinstance(sample, ember.Tensor) and sample.dim() > 0:
                local = ember.zeros(fp._sharded_size, dtype=sample.dtype, device=sample.device)
                for _, k in unit:
                    s = states[k[2]]
                    off, n, _ = fp._shard_param_infos[k[2]]
                    if s and name in s and n:
                        local[off:off + n].copy_(s[name].reshape(-1))
                views = h.unflatten(h.gather_full_flat(local))
                for _, k in unit:
                    if k[3] in per:
                        per[k[3]][name] = views[k[2]].clone()
            else:
                for _, k in unit:
                    if k[3] in per:
                        v = states[k[2]].get(name, sample)
                        per[k[3]][name] = v.clone() if isinstance(v, ember.Tensor) else v
        for fqn, d in per.items():
            out_state[fqn] = _order_state(d)
    if any(k[0] == "orig" for k in keys):
        out_state = dict(sorted(out_state.items()))
    if cpu_offload:
        out_state = {f: {n: (v.cpu() if isinstance(v, ember.Tensor) else v)
                         for n, v in d.items()} for f, d in out_state.items()}
    groups = []
    it = iter(keys)
    for g in osd["param_groups"]:
        names = []
        for _ in g["params"]:
            k = next(it)
            names.extend(k[2] if k[0] == "flat" else [k[3] if k[0] == "orig" else k[1]])
        groups.append({**{n: v for n, v in g.items() if n != "params"}, "params": names})
    rank = dist.get_rank()
    if rank0_only and rank != 0:
        return {}
    return {"state": out_state, "param_groups": groups}


def _optim_state_dict_to_load(model, optim, osd):
    keys = _param_keys(model, optim)
    state = osd["state"]
    out_state = {}
    for idx, key in enumerate(keys):
        if key[0] == "plain":
            if key[1] in state:
                out_state[idx] = dict(state[key[1]])
            continue
        h = key[1]
        fp = h.flat_param
        if key[0] == "flat":
            fqns = key[2]
            present = [state.get(f) for f in fqns]
            if not any(present):
                continue
            names = sorted({n for s in present if s for n in s})
            d = {}
            for name in names:
                sample = next(s[name] for s in present if s and name in s)
                if isinstance(sample, ember.Tensor) and sample.dim() > 0:
                    full = ember.cat([
                        (s[name].reshape(-1).to(fp.device) if s and name in s
                         else ember.zeros(n, dtype=sample.dtype, device=fp.device))
                        for s, n in zip(present, fp._numels)])
                    d[name] = h.shard_of_full(full)
                else:
                    d[name] = sample.clone() if isinstance(sample, ember.Tensor) else sample
            out_state[idx] = d
            continue
        s = state.get(key[3])
        if not s:
            continue
        off, n, intra = fp._shard_param_infos[key[2]]
        d = {}
        for name, v in s.items():
            if isinstance(v, ember.Tensor) and v.dim() > 0:
                flat = v.reshape(-1).to(fp.device)
                piece = flat[intra:intra + n].clone()
                d[name] = piece if h.uses_sharded_strategy else piece.view(fp._shapes[key[2]])
            else:
                d[name] = v.clone() if isinstance(v, ember.Tensor) else v
        out_state[idx] = d
    groups, start = [], 0
    for g_new, g in zip(osd["param_groups"], optim.param_groups):
        n = len(g["params"])
        groups.append({**{k: v for k, v in g_new.items() if k != "params"},
                       "params": list(range(start, start + n))})
        start += n
    return {"state": out_state, "param_groups": groups}
