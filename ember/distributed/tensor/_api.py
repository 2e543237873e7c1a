"""``DTensor``: a tensor subclass holding this rank's local tensor, a ``DeviceMesh`` and one
placement per mesh dimension; its shape, stride and dtype are the global tensor's. Operators on
DTensors run through ``__torch_dispatch__`` (sharding propagation, then the op on the local
tensors: ``_dispatch.py``). ``from_local``, ``to_local``, ``redistribute`` and ``full_tensor``
are differentiable, as in PyTorch; ``distribute_tensor``, ``distribute_module`` and the
factories create DTensors from global tensors and shapes. The distributed checkpoint hooks
(``__create_write_items__``, ``__create_chunk_list__``, ``__get_tensor_shard__``) let DCP save
and load each rank's shard in place.
"""
import inspect
import math
import warnings

import ember
import ember.nn as nn

from ..device_mesh import _mesh_resources
from . import _dispatch as op_dispatch
from ._collective_utils import check_tensor_meta, mesh_broadcast
from ._dtensor_spec import DTensorSpec, TensorMeta
from ._redistribute import Redistribute, redistribute_local_tensor
from ._utils import (assert_no_mixed_partial_types, compute_global_tensor_info,
                     compute_local_shape_and_global_offset, normalize_to_torch_size)
from .placement_types import Partial, Replicate, Shard, _StridedShard
from ...overrides import _disabled_torch_function_impl

__all__ = ["DTensor", "distribute_tensor", "distribute_module", "ones", "empty", "full", "rand",
           "randn", "zeros"]


def _normalize_placements_for_grad(placements):
    """A Partial forward placement has a Replicate gradient (PyTorch's guarantee)."""
    return tuple(Replicate() if p.is_partial() else p for p in placements)


class _ToTorchTensor(ember.autograd.Function):
    @staticmethod
    def forward(ctx, input, grad_placements):
        ctx.dtensor_spec = input._spec
        ctx.grad_placements = grad_placements
        ctx.set_materialize_grads(False)
        # a fresh tensor object: autograd metadata is written into it
        local = input._local_tensor
        return local.view_as(local)

    @staticmethod
    def backward(ctx, grad_output):
        if grad_output is None:
            return None, None
        spec = ctx.dtensor_spec
        _, stride = compute_global_tensor_info(grad_output, spec.mesh, spec.placements)
        placements = ctx.grad_placements
        if placements is None:
            placements = _normalize_placements_for_grad(spec.placements)
        return (DTensor.from_local(grad_output, spec.mesh, placements, shape=spec.shape,
                                   stride=tuple(stride)), None)


class _FromTorchTensor(ember.autograd.Function):
    @staticmethod
    def forward(ctx, input, device_mesh, placements, run_check, shape=None, stride=None,
                grad_placements=None):
        ctx.forward_input_placements = placements
        ctx.forward_input_device_mesh = device_mesh
        ctx.grad_placements = grad_placements
        ctx.set_materialize_grads(False)
        if shape and stride:
            tensor_shape, tensor_stride = shape, stride
        elif not shape and not stride:
            global_shape, global_stride = compute_global_tensor_info(input, device_mesh,
                                                                     placements)
            tensor_shape, tensor_stride = ember.Size(global_shape), tuple(global_stride)
        else:
            raise RuntimeError(f"Found shape:{shape}, stride:{stride}.",
                               "Please pass both shape and stride at the same time.")
        if not device_mesh._is_current_rank_part_of_mesh():
            input = input.new_empty(0, requires_grad=input.requires_grad)
        elif run_check:
            check_tensor_meta(input, check_shape_stride=not shape and not stride)
            for idx, placement in enumerate(placements):
                if placement.is_replicate():
                    # every rank takes the replica of the mesh dim's first rank
                    input = input.contiguous()
                    mesh_broadcast(input, device_mesh, mesh_dim=idx)
        spec = DTensorSpec(device_mesh, placements,
                           tensor_meta=TensorMeta(ember.Size(tensor_shape), tuple(tensor_stride),
                                                  input.dtype))
        return DTensor(input.view_as(input), spec, requires_grad=input.requires_grad)

    @staticmethod
    def backward(ctx, grad_output):
        none = (None,) * 6
        if grad_output is None:
            return (None,) + none
        placements = ctx.grad_placements
        if placements is None:
            placements = _normalize_placements_for_grad(ctx.forward_input_placements)
        if grad_output.placements != tuple(placements):
            target = DTensorSpec(ctx.forward_input_device_mesh, tuple(placements),
                                 tensor_meta=grad_output._spec.tensor_meta)
            return (redistribute_local_tensor(grad_output._local_tensor, grad_output._spec,
                                              target),) + none
        return (grad_output.to_local(),) + none


class DTensor(ember.Tensor):
    """A distributed tensor: this rank's ``_local_tensor`` of a global tensor laid out by
    ``_spec`` (a ``DeviceMesh`` and one placement per mesh dimension). Create one with
    ``DTensor.from_local`` or ``distribute_tensor``; the constructor is internal."""

    __torch_function__ = _disabled_torch_function_impl
    _op_dispatcher = op_dispatch.OpDispatcher()

    @staticmethod
    def __new__(cls, local_tensor, spec, *, requires_grad):
        if local_tensor.requires_grad and not requires_grad:
            warnings.warn("To construct DTensor from torch.Tensor, it's recommended to use "
                          "local_tensor.detach() and make requires_grad consistent.",
                          stacklevel=2)
        meta = spec.tensor_meta
        r = ember.Tensor._make_wrapper_subclass(cls, meta.shape, strides=meta.stride,
                                                dtype=local_tensor.dtype,
                                                device=local_tensor.device,
                                                requires_grad=requires_grad)
        r._spec = spec
        r._local_tensor = local_tensor
        return r

    def __init__(self, *args, **kwargs):
        super().__init__()

    def __repr__(self):
        return (f"DTensor(local_tensor={self._local_tensor}, device_mesh={self._spec.mesh}, "
                f"placements={self._spec.placements})")

    def __tensor_flatten__(self):
        return ["_local_tensor"], (self._spec, self.requires_grad)

    @staticmethod
    def __tensor_unflatten__(inner_tensors, flatten_spec, outer_size, outer_stride):
        spec, requires_grad = flatten_spec
        meta = TensorMeta(ember.Size(outer_size), tuple(outer_stride), spec.tensor_meta.dtype)
        return DTensor(inner_tensors["_local_tensor"],
                       DTensorSpec(spec.mesh, spec.placements, tensor_meta=meta),
                       requires_grad=requires_grad)

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        return DTensor._op_dispatcher.dispatch(func, args, kwargs or {})

    @staticmethod
    def from_local(local_tensor, device_mesh=None, placements=None, *, run_check=False,
                   shape=None, stride=None, grad_placements=None):
        """A DTensor from each rank's ``local_tensor`` laid out by ``placements`` (default:
        replicated). Differentiable; without ``shape``/``stride`` the global shape assumes even
        shards; ``run_check`` compares metadata across ranks and broadcasts replicas."""
        if isinstance(local_tensor, DTensor):
            raise RuntimeError(f"the local_tensor argument only accepts torch.Tensor but got "
                               f"{type(local_tensor)} value.")
        device_mesh = device_mesh or _mesh_resources.get_current_mesh()
        if device_mesh.device_type != local_tensor.device.type and not local_tensor.is_meta:
            local_tensor = local_tensor.to(device_mesh.device_type)
        if placements is None:
            placements = [Replicate() for _ in range(device_mesh.ndim)]
        else:
            placements = [_normalize_dim(p, local_tensor.ndim) for p in placements]
        assert_no_mixed_partial_types(placements)
        return _FromTorchTensor.apply(local_tensor, device_mesh, tuple(placements), run_check,
                                      shape, stride,
                                      tuple(grad_placements) if grad_placements is not None
                                      else None)

    def to_local(self, *, grad_placements=None):
        """This rank's local tensor (differentiable: its gradient is laid out as this DTensor,
        or by ``grad_placements``)."""
        if not ember.is_grad_enabled():
            result = self._local_tensor
        else:
            if grad_placements is not None and not isinstance(grad_placements, tuple):
                grad_placements = tuple(grad_placements)
            result = _ToTorchTensor.apply(self, grad_placements)
        if getattr(self, "_is_param", False) and not getattr(result, "_is_param", False):
            if result is self._local_tensor:
                result = result.view_as(result)
            result._is_param = True
        return result

    def redistribute(self, device_mesh=None, placements=None, *, async_op=False,
                     forward_dtype=None, backward_dtype=None):
        """This DTensor laid out by ``placements`` (the collectives it takes: all-gather,
        all-to-all, all-reduce, reduce-scatter, or a local chunk). Differentiable."""
        device_mesh = device_mesh or self.device_mesh
        if placements is None:
            raise RuntimeError("placements is needed for redistribute!")
        placements = list(placements)
        for i, p in enumerate(placements):
            if p.is_partial() and self.placements[i] != p:
                raise RuntimeError(f"Can not redistribute from {self.placements[i]} to {p}, "
                                   f"redistributing to Partial is for internal use only!")
            placements[i] = _normalize_dim(p, self.ndim)
        input_dtype = self._local_tensor.dtype
        forward_dtype = forward_dtype or input_dtype
        return Redistribute.apply(self, device_mesh, tuple(placements), async_op, {
            "op_dtype": forward_dtype, "out_dtype": forward_dtype,
            "backward_options": {"op_dtype": backward_dtype or input_dtype,
                                 "out_dtype": input_dtype}})

    def full_tensor(self, *, grad_placements=None):
        """The whole global tensor on every rank (differentiable)."""
        replicated = self.redistribute(placements=[Replicate()] * self.device_mesh.ndim,
                                       async_op=False)
        return _ToTorchTensor.apply(replicated, grad_placements)

    # PyTorch refuses these for every tensor subclass dispatching in Python (use full_tensor())
    def tolist(self):
        raise RuntimeError(f".tolist() is not supported for tensor subclasses, got "
                           f"{type(self).__name__}")

    def numpy(self, *, force=False):
        raise RuntimeError(".numpy() is not supported for tensor subclasses.")

    # --- distributed checkpoint (DCP) hooks: each rank saves and loads its own shard

    def _raise_if_contains_partial_placements(self):
        for placement in self._spec.placements:
            if isinstance(placement, Partial):
                raise ValueError("Any checkpointing related operations are not supported for "
                                 "DTensor with partial placements!")

    def __create_write_items__(self, fqn, object):
        """One ``WriteItem`` (type SHARD) for this rank's shard: where it sits in the global
        tensor and its size. Replicas are the same item on every rank, which the save plan's
        deduplication keeps on one rank only."""
        self._raise_if_contains_partial_placements()
        from ..checkpoint.planner_helpers import _create_write_items_for_dtensor
        return [_create_write_items_for_dtensor(fqn, object)]

    def __create_chunk_list__(self):
        """The ``ChunkStorageMetadata`` (global offsets and sizes) of this rank's shard, the
        region a load fills."""
        self._raise_if_contains_partial_placements()
        from ..checkpoint.planner_helpers import _create_chunk_from_dtensor
        return [_create_chunk_from_dtensor(self)]

    def __get_tensor_shard__(self, index):
        """The local tensor: the one shard a rank holds, whatever ``index`` names."""
        self._raise_if_contains_partial_placements()
        return self.to_local()

    @property
    def device_mesh(self):
        return self._spec.mesh

    @property
    def placements(self):
        return self._spec.placements


def _normalize_dim(placement, ndim):
    if isinstance(placement, _StridedShard) and placement.dim < 0:
        return _StridedShard(placement.dim + ndim, split_factor=placement.split_factor)
    if isinstance(placement, Shard) and placement.dim < 0:
        return Shard(placement.dim + ndim)
    return placement


def distribute_tensor(tensor, device_mesh=None, placements=None, *, src_data_rank=0):
    """Distribute a leaf tensor (the global tensor; the copy on group rank ``src_data_rank`` of
    each mesh dimension is the source of truth, ``None``: each rank's own) by ``placements``."""
    device_mesh = device_mesh or _mesh_resources.get_current_mesh()
    if not tensor.is_leaf:
        raise RuntimeError("`distribute_tensor` should be used to distribute leaf tensors! but "
                           "found non-leaf tensor!")
    if device_mesh.device_type != tensor.device.type and not tensor.is_meta:
        tensor = tensor.to(device_mesh.device_type)
    if placements is None:
        placements = [Replicate() for _ in range(device_mesh.ndim)]
    if len(placements) != device_mesh.ndim:
        raise ValueError(f"`placements` must have the same length as `device_mesh.ndim`! Found "
                         f"placements length: {len(placements)}, and device_mesh.ndim: "
                         f"{device_mesh.ndim}.")
    assert_no_mixed_partial_types(placements)
    if isinstance(tensor, DTensor):
        if tensor.device_mesh != device_mesh:
            raise ValueError(f"Cannot distribute a DTensor with device mesh {tensor.device_mesh} "
                             f"to a different device mesh {device_mesh}.")
        if tensor.placements != tuple(placements):
            raise ValueError(f"Cannot distribute a DTensor with placements {tensor.placements} "
                             f"to a different placements {placements}. do you want to call "
                             f"`redistribute` instead?")
        return tensor
    local = tensor.detach()
    placements = [_normalize_dim(p, tensor.ndim) for p in placements]
    for idx, p in enumerate(placements):
        if isinstance(p, _StridedShard):
            local = _StridedShard._make_shard_tensor(p.dim, local, device_mesh, idx,
                                                     src_data_rank, split_factor=p.split_factor)
        elif isinstance(p, Shard):
            local = Shard._make_shard_tensor(p.dim, local, device_mesh, idx, src_data_rank)
        elif isinstance(p, Replicate):
            local = Replicate._make_replicate_tensor(local, device_mesh, idx, src_data_rank)
        elif isinstance(p, Partial):
            local = Replicate._make_replicate_tensor(local, device_mesh, idx, src_data_rank)
            local = p._partition_value(local, device_mesh, idx)
        else:
            raise RuntimeError(f"Trying to distribute tensor with unsupported placements {p} on "
                               f"device mesh dimension {idx}!")
    spec = DTensorSpec(device_mesh, tuple(placements),
                       tensor_meta=TensorMeta(tensor.size(), tensor.stride(), tensor.dtype))
    return DTensor(local.requires_grad_(tensor.requires_grad), spec,
                   requires_grad=tensor.requires_grad)


def distribute_module(module, device_mesh=None, partition_fn=None, input_fn=None,
                      output_fn=None):
    """Make ``module``'s parameters and buffers DTensors: ``partition_fn(name, submodule,
    mesh)`` shards what it wants, the rest is replicated; ``input_fn``/``output_fn`` become a
    forward pre-hook and a forward hook."""
    if getattr(module, "_distribute_module_applied", False):
        raise RuntimeError("distribute_module should only be called once on a module, but it has "
                           "already been called on this module!")
    device_mesh = device_mesh or _mesh_resources.get_current_mesh()

    def replicate_module_params_buffers(m, mesh):
        full_replicate = [Replicate()] * mesh.ndim
        for key, param in m._parameters.items():
            if param is not None and not isinstance(param, DTensor):
                m.register_parameter(key, nn.Parameter(
                    distribute_tensor(param.data, mesh, full_replicate),
                    requires_grad=param.requires_grad))
        for key, buffer in m._buffers.items():
            if buffer is not None and not isinstance(buffer, DTensor):
                m._buffers[key] = distribute_tensor(buffer, mesh, full_replicate)

    if partition_fn is None:
        for submod in module.modules():
            replicate_module_params_buffers(submod, device_mesh)
    else:
        for name, submod in module.named_modules():
            partition_fn(name, submod, device_mesh)
            replicate_module_params_buffers(submod, device_mesh)

    for fn, kind in ((input_fn, "input"), (output_fn, "output")):
        if fn is None:
            continue
        nargs = len(inspect.signature(fn).parameters)
        if nargs == 2:
            warnings.warn(f"Deprecating {kind}_fn that takes two arguments (inputs, "
                          f"device_mesh), please use {kind}_fn that takes in (module, inputs, "
                          f"device_mesh) instead!", FutureWarning, stacklevel=2)
        elif nargs != 3:
            raise ValueError(f"{kind}_fn should take in 3 arguments, but got {nargs} arguments!")
        if kind == "input":
            module.register_forward_pre_hook(
                (lambda _, inputs, f=fn: f(inputs, device_mesh)) if nargs == 2 else
                (lambda mod, inputs, f=fn: f(mod, inputs, device_mesh)))
        else:
            module.register_forward_hook(
                (lambda mod, inputs, outputs, f=fn: f(outputs, device_mesh)) if nargs == 2 else
                (lambda mod, inputs, outputs, f=fn: f(mod, outputs, device_mesh)))
    module._distribute_module_applied = True
    return module


# --- factories: each rank creates only its local shard

def _dtensor_init_helper(init_op, size, device_mesh=None, placements=None, **kwargs):
    device_mesh = device_mesh or _mesh_resources.get_current_mesh()
    kwargs["device"] = device_mesh.device_type
    placements = tuple(placements or (Replicate() for _ in range(device_mesh.ndim)))
    if device_mesh.ndim != len(placements):
        raise AssertionError("mesh dimension does not match the length of placements")
    if kwargs.pop("layout") is not ember.strided:
        raise AssertionError("layout value not supported!")
    requires_grad = kwargs.pop("requires_grad")
    if init_op in (ember.rand, ember.randn):
        # the global tensor's values, as one device draws them; this rank keeps its part
        local = _shard_of_full(init_op(size, **kwargs), DTensorSpec(device_mesh, placements))
    else:
        local_shape, _ = compute_local_shape_and_global_offset(size, device_mesh, placements,
                                                               skip_offset=True)
        if init_op is ember.full:
            local = init_op(local_shape, kwargs.pop("fill_value", 0), **kwargs)
        else:
            local = init_op(local_shape, **kwargs)
    stride = tuple(math.prod(size[i + 1:]) for i in range(len(size)))
    spec = DTensorSpec(device_mesh, placements,
                       tensor_meta=TensorMeta(size, stride, local.dtype))
    return DTensor(local.requires_grad_(requires_grad), spec, requires_grad=requires_grad)


def _shard_of_full(full, spec):
    """This rank's local tensor of ``spec`` cut from the global tensor ``full`` present on
    every rank (Replicate and Partial keep it whole, as a factory's local tensor)."""
    local = full
    coord = spec.mesh.get_coordinate()
    for i, p in enumerate(spec.placements):
        if isinstance(p, (Shard, _StridedShard)):
            local = p._select_split_tensor(local, spec.mesh.size(i), coord[i],
                                           with_padding=False, clone=False)
    return local.contiguous()


def _factory(init_op, doc):
    def factory(*size, dtype=None, layout=ember.strided, requires_grad=False, device_mesh=None,
                placements=None):
        return _dtensor_init_helper(init_op, normalize_to_torch_size(size), dtype=dtype,
                                    layout=layout, requires_grad=requires_grad,
                                    device_mesh=device_mesh, placements=placements)
    factory.__doc__ = doc
    return factory


ones = _factory(ember.ones, "A DTensor of ones of the global ``size``.")
empty = _factory(ember.empty, "An uninitialized DTensor of the global ``size``.")
zeros = _factory(ember.zeros, "A DTensor of zeros of the global ``size``.")
rand = _factory(ember.rand, "A DTensor of uniform [0, 1) values of the global ``size``: the "
                            "values one device would draw (ember draws the global tensor on "
                            "every rank and keeps the local shard).")
randn = _factory(ember.randn, "A DTensor of standard normal values of the global ``size`` (as "
                              "``rand``).")
for _f, _n in ((ones, "ones"), (empty, "empty"), (zeros, "zeros"), (rand, "rand"),
               (randn, "randn")):
    _f.__name__ = _f.__qualname__ = _n


def full(size, fill_value, *, dtype=None, layout=ember.strided, requires_grad=False,
         device_mesh=None, placements=None):
    """A DTensor filled with ``fill_value`` of the global ``size``."""
    return _dtensor_init_helper(ember.full, normalize_to_torch_size(size), fill_value=fill_value,
                                dtype=dtype, layout=layout, requires_grad=requires_grad,
                                device_mesh=device_mesh, placements=placements)


from_local = DTensor.from_local
