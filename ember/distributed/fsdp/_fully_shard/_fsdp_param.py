"""``FSDPParam``: one parameter under FSDP. It keeps the sharded parameter (a ``Shard(0)``
DTensor, or ``Shard(dim)`` from ``shard_placement_fn``, over the data-parallel mesh; its local
tensor is a view into dim-0 padded data so that every rank all-gathers the same number of
elements) and the unsharded parameter (a plain parameter over the all-gather output, built
once and refilled in place, so that what autograd saved in forward stays valid), and swaps
which of the two the module holds.

A parameter that is already a DTensor (tensor parallelism: ``parallelize_module`` ran first)
is sharded on its local tensor. Its sharded parameter lives on the data-parallel mesh and the
TP mesh concatenated, placed ``(<FSDP shard>, <TP placements>)`` (HSDP: ``Replicate()``
first), the FSDP shard a ``_StridedShard`` where TP shards the same tensor dim (the TP shards
are contiguous, FSDP's are pieces of each); its unsharded parameter is the TP DTensor that
the TP layers compute with, and its gradient is redistributed to the TP placements (a
``Partial`` one all-reduced over the TP mesh) before the reduce-scatter over the
data-parallel mesh.

The tensors, as PyTorch names them: the *original* parameter (on the module when
``fully_shard`` ran), the *sharded* parameter (the DTensor the optimizer steps), the
*all-gather input* (the padded local shard, cast to ``param_dtype``), the *all-gather output*
(its place in the parameter group's unsharded buffer) and the *unsharded* parameter (the
all-gather output viewed with the original shape: the autograd leaf of forward/backward).
"""
import itertools
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import Enum, auto

import ember

from .... import nn
from ...device_mesh import DeviceMesh
from ...tensor import DTensor, Replicate, Shard
from ...tensor._dtensor_spec import DTensorSpec, TensorMeta
from ...tensor.placement_types import _StridedShard
from ._fsdp_api import CPUOffloadPolicy
from ._fsdp_common import (HSDPMeshInfo, _chunk_with_empty, _contiguous_strides,
                           _from_local_no_grad, _get_dim_chunked_size, _to_dtype_if_needed)

_orig_param_uid_counter = itertools.count()


def _get_orig_param_uid(param):
    if not hasattr(param, "_fsdp_orig_uid"):
        param._fsdp_orig_uid = next(_orig_param_uid_counter)
    return param._fsdp_orig_uid


class ShardedState(Enum):
    """``SHARDED``: the module holds the sharded parameter (the only parameter memory).
    ``UNSHARDED``: the module holds the unsharded parameter (both hold memory)."""

    SHARDED = auto()
    UNSHARDED = auto()


@dataclass
class ParamModuleInfo:
    """Where a parameter lives (``setattr(module, param_name, ...)`` swaps it), and the other
    modules and names sharing it. Names are unprefixed ("weight")."""

    module: nn.Module
    param_name: str
    shared_modules: list = field(default_factory=list)
    shared_param_names: list = field(default_factory=list)


class FSDPParam:
    """A parameter with FSDP applied: dim-0 (or ``shard_placement_fn``'s dim) per-parameter
    sharding."""

    def __init__(self, param, module_info, mesh_info, device, shard_placement_fn, offload_policy):
        self._module_info = module_info
        self.mesh_info = mesh_info
        self.device = device
        self.offload_to_cpu = isinstance(offload_policy, CPUOffloadPolicy)
        self.pin_memory = self.offload_to_cpu and offload_policy.pin_memory
        self._init_sharded_param(param, device, shard_placement_fn)
        self.all_gather_output = None  # its part of the group's unsharded buffer, once made
        self.unsharded_accumulated_grad = None
        self._param_fqn = None  # prefixed from the root module, set at lazy init
        # load_state_dict may replace the local tensor: pad it again
        self._post_load_hook_handle = module_info.module.register_load_state_dict_post_hook(
            lambda *args, **kwargs: self.reset_sharded_param())

    @ember.no_grad()
    def _init_sharded_param(self, param, device, shard_placement_fn):
        fsdp_placement = shard_placement_fn(param) if callable(shard_placement_fn) else None
        if fsdp_placement is None:
            fsdp_placement = Shard(0)
        elif not isinstance(fsdp_placement, Shard):
            raise ValueError(f"Invalid shard_placement_fn result: {fsdp_placement}")
        elif fsdp_placement.dim < 0:
            fsdp_placement = Shard(fsdp_placement.dim + param.ndim)
        if param.device != device and param.device.type != "meta":
            raise AssertionError(f"Expects the parameter to already be moved to device {device} "
                                 f"but got {param.device}")
        if not param.is_contiguous():
            raise NotImplementedError(f"FSDP does not support non-contiguous parameters yet: "
                                      f"{param.shape=} {param.stride()=}")
        self.is_dtensor = isinstance(param, DTensor)
        inner_tensor = param._local_tensor if self.is_dtensor else param
        if hasattr(inner_tensor, "fsdp_pre_all_gather") or \
                hasattr(inner_tensor, "fsdp_post_all_gather"):
            raise NotImplementedError("FSDP all-gather extensions (fsdp_pre_all_gather / "
                                      "fsdp_post_all_gather) are not supported by ember yet")
        self.fsdp_placement = fsdp_placement
        self._orig_param_uid = _get_orig_param_uid(param)
        param_data = self._init_sharding_spec(param, fsdp_placement)
        if not param_data.is_contiguous():
            raise AssertionError(f"Expected contiguous tensor, got {param_data.shape=} "
                                 f"{param_data.stride()=}")
        shard_dim = fsdp_placement.dim
        if shard_dim >= param_data.ndim:
            raise AssertionError(f"Shard dim {shard_dim} is invalid for {param_data.ndim}D "
                                 f"tensor: {param.shape}")
        self._orig_size = param_data.size()
        self._contiguous_orig_stride = _contiguous_strides(self._orig_size)
        shard_rank = self.mesh_info.shard_mesh_rank
        shard_world_size = self.mesh_info.shard_mesh_size
        if shard_dim > 0 and param_data.size(shard_dim) % shard_world_size != 0:
            # uneven sharding on another dim would need copies around both collectives
            raise NotImplementedError(f"FSDP does not support uneven sharding on dim "
                                      f"{shard_dim}: {param_data.size()} (world size: "
                                      f"{shard_world_size})")
        chunks = _chunk_with_empty(param_data, shard_world_size, dim=shard_dim)
        sharded_param = chunks[shard_rank]
        self.sharded_size = _get_dim_chunked_size(sharded_param, param_data.size(),
                                                  dim=shard_dim)
        self.contiguous_sharded_stride = _contiguous_strides(self.sharded_size)
        self.padded_sharded_param_size = chunks[0].size()  # the first chunk is the largest
        # padded now, so that the all-gather input needs no padding
        padded_sharded_param = param_data.new_zeros(self.padded_sharded_param_size)
        if sharded_param.numel() > 0:
            padded_sharded_param.narrow(dim=shard_dim, start=0,
                                        length=sharded_param.size(shard_dim)).copy_(sharded_param)
        if self.offload_to_cpu and not padded_sharded_param.is_meta:
            padded_sharded_param = padded_sharded_param.cpu()
            if self.pin_memory:
                padded_sharded_param = padded_sharded_param.pin_memory()
        self._sharded_param_data = padded_sharded_param.view(-1)
        length = sharded_param.size(shard_dim) if sharded_param.numel() > 0 else 0
        sharded_param = padded_sharded_param.narrow(dim=shard_dim, start=0, length=length)
        self.sharded_param = nn.Parameter(self.to_sharded_dtensor(sharded_param),
                                          requires_grad=param.requires_grad)
        self._setattr_on_modules(self.sharded_param)
        self.sharded_state = ShardedState.SHARDED

    def _init_sharding_spec(self, param, fsdp_placement):
        """Build ``_sharding_spec`` and return the tensor to shard: the parameter, or a
        DTensor's local tensor."""
        hsdp = isinstance(self.mesh_info, HSDPMeshInfo)
        if not self.is_dtensor:
            self._unsharded_dtensor_spec = None
            self._sharding_spec = DTensorSpec(
                self.mesh_info.mesh, ((Replicate(),) if hsdp else ()) + (fsdp_placement,),
                tensor_meta=TensorMeta(param.size(), param.stride(), param.dtype))
            return param
        # TP/EP: the data-parallel mesh and the DTensor's, concatenated
        tp_spec = self._unsharded_dtensor_spec = param._spec
        dp_mesh, tp_mesh = self.mesh_info.mesh, tp_spec.mesh
        if dp_mesh is None or tp_mesh is None:
            raise AssertionError(
                "FSDP requires the DP and model parallel TP/EP mesh to be not None but got: \n"
                f"DP's mesh: {dp_mesh}\nTP/EP's mesh: {tp_mesh}")
        spmd_mesh = DeviceMesh._concatenate([dp_mesh, tp_mesh])
        if len(tp_spec.placements) > 2:
            raise NotImplementedError(
                f"FSDP only supports 1D TP/EP or 2D EP+TP, not {tp_spec.placements}")
        if not 2 <= spmd_mesh.ndim <= 4:
            raise AssertionError(
                "_spmd_mesh.ndim can only be 2 (FSDP+TP/EP), 3 (FSDP+EP+TP, HSDP+TP/EP), "
                f"or 4 (HSDP+EP+TP) but got {spmd_mesh.ndim}.")
        # FSDP shards each TP shard: across the TP shards of the dim, a strided sharding
        split_factor = tp_spec.num_shards_map[fsdp_placement.dim]
        dp_shard = _StridedShard(fsdp_placement.dim, split_factor=split_factor) \
            if split_factor > 1 else fsdp_placement
        self._sharding_spec = DTensorSpec(
            spmd_mesh, ((Replicate(),) if hsdp else ()) + (dp_shard,) + tp_spec.placements,
            tensor_meta=tp_spec.tensor_meta)
        return param._local_tensor

    def init_dtype_attrs(self, mp_policy):
        param_dtype, reduce_dtype = mp_policy.param_dtype, mp_policy.reduce_dtype
        self.orig_dtype = self.sharded_param.dtype
        # gradients are computed in param_dtype: reducing in it needs no cast
        if reduce_dtype == param_dtype:
            reduce_dtype = None
        # mixed precision is for floating-point parameters only
        if param_dtype == self.orig_dtype or not self.orig_dtype.is_floating_point:
            param_dtype = None
        self.param_dtype = param_dtype
        self.reduce_dtype = reduce_dtype

    def init_unsharded_param(self):
        """The unsharded parameter over the all-gather output (made once: later all-gathers
        refill the same memory)."""
        if hasattr(self, "_unsharded_param"):
            return
        out = self.all_gather_output
        unsharded = ember.as_strided(out, self._orig_size, self._contiguous_orig_stride,
                                     storage_offset=out.storage_offset())
        if self._unsharded_dtensor_spec is not None:
            unsharded = _from_local_no_grad(unsharded,
                                            self._get_unsharded_dtensor_spec(unsharded))
        self._unsharded_param = nn.Parameter(unsharded,
                                             requires_grad=self.sharded_param.requires_grad)

    def _get_unsharded_dtensor_spec(self, unsharded_param):
        """The TP spec, with the all-gather's dtype under mixed precision."""
        tensor_meta = self._unsharded_dtensor_spec.tensor_meta
        if tensor_meta is None or tensor_meta.dtype == unsharded_param.dtype:
            return self._unsharded_dtensor_spec
        return DTensorSpec(self._unsharded_dtensor_spec.mesh,
                           self._unsharded_dtensor_spec.placements,
                           tensor_meta=TensorMeta(tensor_meta.shape, tensor_meta.stride,
                                                  unsharded_param.dtype))

    def to_sharded(self):
        self._setattr_on_modules(self.sharded_param)
        self.sharded_state = ShardedState.SHARDED

    def to_unsharded(self):
        # the all-gather has filled the data
        if self.sharded_param.requires_grad != self._unsharded_param.requires_grad:
            self._unsharded_param.requires_grad_(self.sharded_param.requires_grad)
        self._setattr_on_modules(self._unsharded_param)
        self.sharded_state = ShardedState.UNSHARDED

    def _setattr_on_modules(self, param):
        unsafe_setattr_param(self._module_info.module, self._module_info.param_name, param)
        for module, name in zip(self._module_info.shared_modules,
                                self._module_info.shared_param_names):
            unsafe_setattr_param(module, name, param)

    def to_sharded_dtensor(self, tensor):
        """The sharded parameter or gradient as a DTensor over ``tensor``."""
        if tensor.shape != self.sharded_size:
            raise AssertionError(f"Expects size {self.sharded_size} but got {tensor.shape}")
        return _from_local_no_grad(tensor, self._sharding_spec)

    def to_accumulated_grad_if_needed(self):
        """Keep an unsynchronized gradient in ``reduce_dtype`` (after the reshard, to save
        memory)."""
        grad = self._unsharded_param.grad
        if self.reduce_dtype is None or grad is None or grad.dtype == self.reduce_dtype:
            return
        self._unsharded_param.grad = None
        self.unsharded_accumulated_grad = grad.to(self.reduce_dtype)

    def accumulate_unsharded_grad_if_needed(self):
        if self.unsharded_accumulated_grad is not None and self.unsharded_param.grad is not None:
            self.unsharded_accumulated_grad += self.unsharded_param.grad
            self.unsharded_param.grad = None

    @property
    def all_gather_inputs(self):  # 1-D
        self._assert_in_states(ShardedState.SHARDED)
        data = self._sharded_param_data
        if self.offload_to_cpu:
            data = data.to(self.device)
        return [_to_dtype_if_needed(data, self.param_dtype)]

    @property
    def unsharded_param(self):
        return self._unsharded_param

    @property
    def unsharded_grad_data(self):
        grad = self.unsharded_param.grad
        if grad is None:
            raise AssertionError("Expects unsharded_param.grad to not be None")
        return self._get_grad_inner_tensor(grad)

    @property
    def unsharded_accumulated_grad_data(self):
        grad = self.unsharded_accumulated_grad
        if grad is None:
            raise AssertionError("Expects unsharded_accumulated_grad to not be None")
        return self._get_grad_inner_tensor(grad)

    @property
    def unsharded_zero_grad_data(self):
        return self._get_grad_inner_tensor(ember.zeros_like(self.unsharded_param))

    def _get_grad_inner_tensor(self, grad):
        """The local gradient to reduce over the data-parallel mesh: a DTensor parameter's
        gradient in the TP placements first (a ``Partial`` one is reduced over the TP mesh)."""
        if not self.is_dtensor:
            return grad
        if not isinstance(grad, DTensor):
            raise AssertionError(f"Expected DTensor, got {type(grad)}")
        placements = self._unsharded_dtensor_spec.placements
        if placements != grad.placements:
            if len(placements) != len(grad.placements):
                raise AssertionError(f"Expected same placement length: {placements=} "
                                     f"{grad.placements=}")
            grad = grad.redistribute(placements=placements)
        return grad._local_tensor

    def _assert_in_states(self, *states):
        if self.sharded_state not in states:
            raise AssertionError(f"Expects to be in one of {states}, not {self.sharded_state}")

    def reset_sharded_param(self):
        """After ``nn.Module._apply`` or ``load_state_dict(assign=True)`` replaced the sharded
        parameter or its local tensor: pad the local tensor again and keep the references."""
        module_info = self._module_info
        new_param = getattr(module_info.module, module_info.param_name)
        if new_param is not self.sharded_param:
            self.sharded_param = new_param
        local_tensor = new_param._local_tensor
        if local_tensor.is_meta:
            return
        updated_local_tensor = False
        # the same data when the parameters did not change since the last padding
        same_local_tensor = (
            type(self._sharded_param_data) is ember.Tensor
            and self._sharded_param_data.untyped_storage().data_ptr() > 0
            and self._sharded_param_data.untyped_storage().data_ptr()
            == local_tensor.untyped_storage().data_ptr())
        padded_sharded_size = self.padded_sharded_param_size
        shard_dim = self.fsdp_placement.dim
        length = local_tensor.size(shard_dim) if local_tensor.numel() > 0 else 0
        if local_tensor.size() != padded_sharded_size and not same_local_tensor:
            if shard_dim != 0:
                raise AssertionError(f"Shard({shard_dim}) requires even sharding: "
                                     f"{local_tensor.size()=}")
            padded_local_tensor = local_tensor.new_zeros(padded_sharded_size)
            padded_local_tensor.narrow(dim=shard_dim, start=0, length=length).copy_(local_tensor)
            local_tensor = padded_local_tensor
            updated_local_tensor = True
        if self.pin_memory and not local_tensor.is_pinned():
            local_tensor = local_tensor.cpu().pin_memory()
            updated_local_tensor = True
        if not same_local_tensor:
            self._sharded_param_data = local_tensor.view(-1)
        if not isinstance(self.sharded_param, DTensor):
            raise AssertionError(f"Expected DTensor, got {type(self.sharded_param)}")
        if updated_local_tensor:
            self.sharded_param._local_tensor = local_tensor.narrow(dim=shard_dim, start=0,
                                                                   length=length)
        self._sharding_spec = self.sharded_param._spec

    def __repr__(self):
        return f"FSDPParam(fqn={self._param_fqn}, orig_size={self._orig_size})"


def alloc_storage(tensor):
    """Give the freed storage of ``tensor`` its memory back. ``resize_`` would look for the
    tensors caching an array over the old memory (a walk of the heap: tens of milliseconds);
    a freed storage has none (``free_storage``'s ``resize_`` dropped them, and no array with
    elements can view zero bytes), so the buffer is replaced without the walk."""
    size = tensor.numel() * tensor.element_size()
    storage = tensor.untyped_storage()
    if storage.size() != size:
        if storage.size() != 0:
            raise AssertionError(f"Expects a freed storage, not one of {storage.size()} bytes")
        storage._resize_buffer(size)


def free_storage(tensor):
    storage = tensor.untyped_storage()
    if storage.size() != 0:
        storage.resize_(0)


@contextmanager
def _unsafe_preserve_version_counter(tensors):
    """Writes into the unsharded parameters that autograd must not count: the all-gather
    refills the memory a saved tensor points to with the same values (PyTorch's
    ``torch.autograd._unsafe_preserve_version_counter``)."""
    counters = {id(t._vc): (t._vc, t._vc[0]) for t in tensors}
    try:
        yield
    finally:
        for vc, version in counters.values():
            vc[0] = version


def unsafe_setattr_param(module, param_name, param):
    """Register ``param`` without ``nn.Module.__setattr__``'s checks when the module does not
    override ``__setattr__`` (they cost time on every swap)."""
    if getattr(module.__setattr__, "__func__", None) is nn.Module.__setattr__:
        module._parameters[param_name] = param
    else:
        setattr(module, param_name, param)
