"""``fully_shard`` (FSDP2) and ``FSDPModule``, the class every module it is applied to
becomes part of: ``fully_shard(module)`` shards the parameters of ``module`` not managed by an
earlier call on a submodule into one parameter group (Shard(0) DTensors over the mesh, or
over the mesh and a tensor-parallel mesh for DTensor parameters, which
``module.parameters()`` yields, so an optimizer steps the shards), registers the hooks that
unshard and reshard them around forward and backward and reduce-scatter the gradients, and
swaps the module's class for ``FSDP<Class>`` (``FSDPModule`` first in the MRO).
``FSDPModule``'s methods control unsharding, resharding and gradient synchronization.
"""
import functools
import warnings
from contextlib import contextmanager

import ember

from ..._composable.contract import contract
from ._fsdp_api import MixedPrecisionPolicy, OffloadPolicy
from ._fsdp_init import (_apply_to_module, _get_device_from_mesh, _get_mesh_info,
                         _get_modules_and_states, _get_post_forward_mesh_info,
                         _init_default_mesh, _init_param_group, _validate_mesh,
                         _validate_module)
from ._fsdp_common import FSDPMeshInfo
from ._fsdp_state import FSDPState, _get_module_fsdp_state

__all__ = ["fully_shard", "FSDPModule", "UnshardHandle", "register_fsdp_forward_method",
           "get_cls_to_fsdp_cls", "disable_fsdp_module_new_init"]

cls_to_fsdp_cls = {}


def get_cls_to_fsdp_cls():
    return cls_to_fsdp_cls


@contract(state_cls=FSDPState)
def fully_shard(module, *, mesh=None, reshard_after_forward=None, shard_placement_fn=None,
                mp_policy=MixedPrecisionPolicy(), offload_policy=OffloadPolicy(),
                ignored_params=None):
    """Apply fully sharded data parallelism to ``module`` (or to a list of modules, grouped
    for communication), in place; returns it.

    - ``mesh``: the data-parallel ``DeviceMesh`` (default: every rank on the accelerator or
      the CPU). 1-D: parameters ``Shard(0)`` over it (FSDP); 2-D with names:
      ``(Replicate(), Shard(0))`` (HSDP). DTensor parameters (tensor parallelism applied
      first, on another dim of the same root mesh) are sharded on their local tensors and
      live on this mesh and theirs concatenated: ``(Shard(0), <TP placement>)``, FSDP's
      placement a ``_StridedShard`` where TP shards the same dim.
    - ``reshard_after_forward``: free the unsharded parameters after forward and all-gather
      them again in backward (True), keep them (False); None: True except for the root. An
      int is a world size to reshard to: 1 means False, the shard world size True (ember
      supports no size in between).
    - ``shard_placement_fn(param)``: a ``Shard(dim)`` for the parameter (even sharding when
      dim > 0), or None for ``Shard(0)``.
    - ``mp_policy``: ``MixedPrecisionPolicy``; ``offload_policy``: ``CPUOffloadPolicy`` keeps
      the sharded parameters and gradients on the CPU.
    - ``ignored_params``: parameters left alone (not sharded, moved or reduced).

    Call it bottom-up: on each block, then on the root.
    """
    _validate_module(module, "fully_shard")
    mesh = mesh or _init_default_mesh()
    _validate_mesh(mesh)
    mesh_info = _get_mesh_info(mesh)
    device = _get_device_from_mesh(mesh)
    auto_reshard_after_forward = reshard_after_forward is None
    # None: True until lazy init finds the root, which keeps its parameters (False)
    post_forward_mesh_info = _get_post_forward_mesh_info(
        True if auto_reshard_after_forward else reshard_after_forward, mesh_info)
    arg_module, modules, managed_modules, params, buffers = _get_modules_and_states(
        module, device, ignored_params)
    state = fully_shard.state(modules[0])
    state.init(modules, device, mp_policy, auto_reshard_after_forward)
    _init_param_group(state, params, modules, mesh_info, post_forward_mesh_info, device,
                      shard_placement_fn, mp_policy, offload_policy)
    for managed_module in managed_modules:
        managed_module._is_fsdp_managed_module = True
        managed_module._fsdp_use_orig_params = True
    # FSDPModule first in the MRO: its methods win
    _apply_to_module(modules, cls_to_fsdp_cls, FSDPModule, "FSDP", _unimplemented_deepcopy)
    return arg_module


def _unimplemented_deepcopy(*args, **kwargs):
    raise AssertionError("FSDP does not support deepcopy. Please use state dict for "
                         "serialization.")


_enable_fsdp_module_new_init = True


@contextmanager
def disable_fsdp_module_new_init():
    """Within it, ``FSDP<Class>(...)`` does not call ``__init__`` on the object it builds."""
    global _enable_fsdp_module_new_init
    prev, _enable_fsdp_module_new_init = _enable_fsdp_module_new_init, False
    try:
        yield
    finally:
        _enable_fsdp_module_new_init = prev


class FSDPModule:
    # where the original class sits in the MRO: [FSDP<Orig>, FSDPModule, Orig, ...]
    _orig_cls_mro_index = 2

    def __new__(cls, *args, **kwargs):
        """Build the original class (a container indexed with a slice builds a new one of its
        own class, which must not be an FSDP module)."""
        orig_cls = cls.__mro__[cls._orig_cls_mro_index]
        self = orig_cls.__new__(orig_cls, *args, **kwargs)
        if _enable_fsdp_module_new_init:
            self.__init__(*args, **kwargs)
        return self

    def reshard(self):
        """Reshard the module's parameters: register the sharded parameters and free the
        unsharded ones (not recursive)."""
        for fsdp_param_group in self._get_fsdp_state()._fsdp_param_groups:
            fsdp_param_group.reshard()

    def unshard(self, async_op=False):
        """All-gather the module's parameters (in ``param_dtype`` under mixed precision) and
        register the unsharded ones (not recursive). With ``async_op`` the all-gather is
        non-blocking and an ``UnshardHandle`` is returned, whose ``wait()`` (or the module's
        pre-forward) finishes it."""
        state = self._get_fsdp_state()
        for fsdp_param_group in state._fsdp_param_groups:
            fsdp_param_group.lazy_init()
            fsdp_param_group.unshard(async_op=async_op)
        handle = _UnshardHandleImpl(list(state._fsdp_param_groups)
                                    if state._fsdp_param_groups else None)
        if async_op:
            return handle
        handle.wait()
        return None

    def reset_iter_state(self):
        """After an exception aborted forward or backward: wait for issued collectives,
        reshard and forget the iteration (its gradients are lost). Call it on the root."""
        self._get_fsdp_state()._reset_iter_state()

    def set_is_last_backward(self, is_last_backward):
        """Whether the next backward is the last of the iteration (which finalizes it)."""
        self._get_fsdp_state()._state_ctx.is_last_backward = is_last_backward

    def set_requires_gradient_sync(self, requires_gradient_sync, *, recurse=True):
        """Whether backward reduces the gradients (False: they accumulate unsharded, without
        communication; for HSDP neither reduce-scatter nor all-reduce runs)."""
        for module in self._fsdp_modules(recurse):
            for fsdp_param_group in module._get_fsdp_state()._fsdp_param_groups:
                fsdp_param_group.reduce_grads = requires_gradient_sync
                fsdp_param_group.all_reduce_grads = requires_gradient_sync

    def set_requires_all_reduce(self, requires_all_reduce, *, recurse=True):
        """HSDP: whether backward all-reduces the reduce-scattered gradients (False: they
        accumulate sharded)."""
        for module in self._fsdp_modules(recurse):
            for fsdp_param_group in module._get_fsdp_state()._fsdp_param_groups:
                fsdp_param_group.all_reduce_grads = requires_all_reduce

    def set_reshard_after_forward(self, reshard_after_forward, recurse=True):
        """Change ``reshard_after_forward`` (a bool) at run time."""
        if not isinstance(reshard_after_forward, bool):
            raise ValueError(f"reshard_after_forward should be a bool, got "
                             f"{type(reshard_after_forward)}")
        for module in self._fsdp_modules(recurse):
            state = module._get_fsdp_state()
            state._auto_reshard_after_forward = False
            for fsdp_param_group in state._fsdp_param_groups:
                if not isinstance(fsdp_param_group.mesh_info, FSDPMeshInfo):
                    raise AssertionError
                fsdp_param_group.post_forward_mesh_info = _get_post_forward_mesh_info(
                    reshard_after_forward, fsdp_param_group.mesh_info)

    def set_reshard_after_backward(self, reshard_after_backward, *, recurse=True):
        """Whether backward reshards the parameters (False keeps them unsharded for the next
        forward, e.g. during gradient accumulation)."""
        for module in self._fsdp_modules(recurse):
            for fsdp_param_group in module._get_fsdp_state()._fsdp_param_groups:
                fsdp_param_group.reshard_after_backward = reshard_after_backward

    def set_modules_to_forward_prefetch(self, modules):
        """The FSDP modules whose all-gathers this module issues in its pre-forward, after its
        own (non-blocking in ember; each waits for its own)."""
        _assert_all_fsdp_modules(modules)
        self._get_fsdp_state()._states_to_forward_prefetch = [
            module._get_fsdp_state() for module in modules]

    def set_modules_to_backward_prefetch(self, modules):
        """The FSDP modules whose all-gathers this module issues in its pre-backward, instead
        of the default (the previous module in forward order)."""
        _assert_all_fsdp_modules(modules)
        self._get_fsdp_state()._states_to_backward_prefetch = [
            module._get_fsdp_state() for module in modules]

    def set_all_reduce_hook(self, hook, *, stream=None):
        """``hook(reduce_output)`` runs on the reduced gradients: after the reduce-scatter
        (FSDP) or the all-reduce (HSDP); ``stream`` (not with HSDP) is the CUDA stream it runs
        in."""
        state = self._get_fsdp_state()
        if len(state._fsdp_param_groups) > 1:
            raise ValueError("set_all_reduce_hook is not supported with multiple param groups "
                             "(from per-param mesh via shard_placement_fn). The hook would be "
                             "ambiguous across groups with different meshes.")
        for fsdp_param_group in state._fsdp_param_groups:
            fsdp_param_group._all_reduce_hook = hook
            if stream is not None:
                if fsdp_param_group._is_hsdp:
                    raise ValueError("stream cannot be set when using native HSDP")
                fsdp_param_group._all_reduce_hook_stream = stream

    def set_reduce_scatter_divide_factor(self, factor):
        """Deprecated: ``set_gradient_divide_factor``."""
        warnings.warn("Use `set_gradient_divide_factor` instead", DeprecationWarning,
                      stacklevel=2)
        self.set_gradient_divide_factor(factor)

    def set_gradient_divide_factor(self, factor):
        """Divide the reduced gradients by ``factor`` instead of the data-parallel size."""
        for fsdp_param_group in self._get_fsdp_state()._fsdp_param_groups:
            fsdp_param_group.gradient_divide_factor = factor

    def set_force_sum_reduction_for_comms(self, enable):
        """Reduce with sums only, dividing before and after."""
        for fsdp_param_group in self._get_fsdp_state()._fsdp_param_groups:
            fsdp_param_group.force_sum_reduction_for_comms = enable

    def set_reduce_scatter_unused_params(self, reduce_scatter_unused_params, *, recurse=True):
        """Whether parameters without a gradient take part in the reduction with zeros (when
        ranks use different parameters)."""
        for module in self._fsdp_modules(recurse):
            for fsdp_param_group in module._get_fsdp_state()._fsdp_param_groups:
                fsdp_param_group.reduce_scatter_unused_params = reduce_scatter_unused_params

    def set_unshard_in_backward(self, unshard_in_backward):
        """Whether backward needs the unsharded parameters (False when it does not use them,
        e.g. an embedding's)."""
        for fsdp_param_group in self._get_fsdp_state()._fsdp_param_groups:
            fsdp_param_group.unshard_in_backward = unshard_in_backward

    def _set_unshard_async_op(self, async_op):
        """Whether the pre-forward/pre-backward all-gathers are non-blocking."""
        for module in self.modules():
            if isinstance(module, FSDPModule):
                for fsdp_param_group in module._get_fsdp_state()._fsdp_param_groups:
                    fsdp_param_group.unshard_async_op = async_op

    def _fsdp_modules(self, recurse):
        modules = list(self.modules()) if recurse else [self]
        return [m for m in modules if isinstance(m, FSDPModule)]

    def _get_fsdp_state(self):
        if (state := _get_module_fsdp_state(self)) is None:
            raise AssertionError(f"No FSDP state found on {self}")
        return state

    def _apply(self, fn, *args, **kwargs):
        # the sharded parameters must be the registered ones
        self.reshard()
        ret = super()._apply(fn, *args, **kwargs)  # DTensors are swapped in (Module._apply)
        state = self._get_fsdp_state()
        if not state._fsdp_param_groups:
            return ret
        with ember.no_grad():
            for fsdp_param_group in state._fsdp_param_groups:
                for fsdp_param in fsdp_param_group.fsdp_params:
                    fsdp_param.reset_sharded_param()
        return ret


class UnshardHandle:
    """A handle to wait on a ``FSDPModule.unshard(async_op=True)``."""

    def wait(self):
        """Wait for the unshard: afterwards the unsharded parameters are registered."""
        return


class _UnshardHandleImpl(UnshardHandle):
    def __init__(self, fsdp_param_groups):
        self._fsdp_param_groups = fsdp_param_groups

    def wait(self):
        if self._fsdp_param_groups is not None:
            for fsdp_param_group in self._fsdp_param_groups:
                fsdp_param_group.wait_for_unshard()
            self._fsdp_param_groups = None


def register_fsdp_forward_method(module, method_name):
    """Run FSDP's pre-forward and post-forward around ``module.method_name`` too (e.g.
    ``generate``); a no-op on a module without FSDP."""
    if not isinstance(module, FSDPModule):
        return
    if not hasattr(module, method_name):
        raise ValueError(f"{type(module)} does not have a method {method_name}")
    orig_method = getattr(module, method_name)

    @functools.wraps(orig_method)
    def wrapped_method(self, *args, **kwargs):
        fsdp_state = self._get_fsdp_state()
        args, kwargs = fsdp_state._pre_forward(self, args, kwargs)
        out = orig_method(*args, **kwargs)
        return fsdp_state._post_forward(self, args, out)

    setattr(module, method_name, wrapped_method.__get__(module, type(module)))


def _assert_all_fsdp_modules(modules):
    for module in modules:
        if not isinstance(module, FSDPModule):
            raise ValueError(f"Expects FSDPModule but got {type(module)}: {module}")
