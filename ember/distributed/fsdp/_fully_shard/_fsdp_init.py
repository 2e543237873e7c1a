"""What ``fully_shard`` does before it builds the parameter groups: validate the module and
the mesh, describe the mesh (1-D: FSDP, 2-D: HSDP) and the mesh to reshard to after forward,
find the managed modules, parameters and buffers (not descending into modules another
``fully_shard`` call manages), move them to the mesh's device, and swap each module's class
for its ``FSDP<Class>``."""
import itertools
import logging

import ember

from .... import nn
from ... import distributed_c10d as c10d
from ..._composable.contract import _get_root_modules
from ...device_mesh import init_device_mesh
from ...tensor import DTensor
from ._fsdp_common import FSDPMeshInfo, HSDPMeshInfo, _is_composable_with_fsdp
from ._fsdp_param_group import FSDPParamGroup
from ._fsdp_state import _get_module_fsdp_state

logger = logging.getLogger("ember.distributed.fsdp.fully_shard")
_warned = set()


def _validate_module(module, func_name):
    if isinstance(module, (nn.ModuleList, nn.ModuleDict)) and \
            module.__class__.forward is nn.Module.forward:
        raise ValueError(f"{func_name} does not support containers that do not implement "
                         f"forward: {module}")


def _validate_mesh(mesh):
    if mesh.ndim not in (1, 2):
        raise ValueError(f"fully_shard expects a 1D or 2D DeviceMesh but got {mesh}")
    if mesh.ndim == 2 and mesh.mesh_dim_names is None:
        raise AssertionError("Please init the 2D mesh for HSDP with mesh_dim_names specified")


def _get_mesh_info(mesh):
    if mesh.ndim == 1:
        return FSDPMeshInfo(mesh, shard_mesh_dim=0)
    return HSDPMeshInfo(mesh, shard_mesh_dim=1, replicate_mesh_dim=0)


def _get_post_forward_mesh_info(reshard_after_forward, mesh_info):
    """The mesh to reshard to after forward: ``mesh_info`` (True), none (False); an int is a
    world size, of which the trivial ones (1: False, the shard size: True) are accepted."""
    shard_mesh_size = mesh_info.shard_mesh_size
    if not isinstance(reshard_after_forward, (bool, int)):
        raise ValueError("reshard_after_forward should be a bool or an int representing the "
                         f"group size to reshard to, not {reshard_after_forward}")
    if not isinstance(reshard_after_forward, bool):
        if (reshard_after_forward < 1 or reshard_after_forward > shard_mesh_size
                or shard_mesh_size % reshard_after_forward != 0):
            raise ValueError("If passing reshard_after_forward as an int, it should be a factor "
                             f"of {shard_mesh_size}, not {reshard_after_forward}")
        if reshard_after_forward == 1:
            msg = ("reshard_after_forward=1 (int) means resharding parameters to world size 1, "
                   "instead of reshard_after_forward=True (bool)")
            if msg not in _warned:
                _warned.add(msg)
                logger.warning(msg, stacklevel=2)
            reshard_after_forward = False
        elif reshard_after_forward == shard_mesh_size:
            reshard_after_forward = True
        else:
            raise NotImplementedError(
                f"reshard_after_forward={reshard_after_forward}: resharding to a world size "
                f"between 1 and the shard world size ({shard_mesh_size}) after forward is not "
                "supported by ember yet; pass True or False")
    return mesh_info if reshard_after_forward else None


def _init_default_mesh():
    """The default group's ranks on the accelerator if there is one, else on the CPU."""
    if not c10d.is_initialized():
        c10d.init_process_group()
    accelerator = ember.accelerator.current_accelerator()
    return init_device_mesh(accelerator.type if accelerator is not None else "cpu",
                            mesh_shape=(c10d._get_default_group().size(),))


def _get_device_from_mesh(mesh):
    if mesh.device_type == "cpu":
        return ember.device("cpu")
    if mesh.device_type == "cuda":
        return ember.device("cuda", ember.cuda.current_device())
    raise ValueError(f"fully_shard: ember has no {mesh.device_type} device")


def _ignore_module(module, ignored_params, ignore_decision):
    """Whether every parameter of ``module`` and its submodules is ignored (and it has no
    buffer): such a module is not managed."""
    if module in ignore_decision:
        return ignore_decision[module]
    if len(list(module.buffers(recurse=False))) > 0:
        ignore_decision[module] = False
        return False
    for _, param in module.named_parameters(recurse=False):
        if param not in ignored_params:
            ignore_decision[module] = False
            return False
    for child in list(module.children()):
        if not _ignore_module(child, ignored_params, ignore_decision):
            ignore_decision[module] = False
            return False
    ignore_decision[module] = True
    return True


def _get_managed_modules(root_modules, ignored_params=None):
    """The modules under ``root_modules`` (post-order), not descending into modules managed by
    another ``fully_shard`` call or by an API FSDP does not compose with."""
    modules = []
    root_modules_set = set(root_modules)
    visited_modules = set()

    def dfs(module):
        if not _is_composable_with_fsdp(module):
            return
        if module not in root_modules_set and _get_module_fsdp_state(module) is not None:
            return  # a nested fully_shard module
        visited_modules.add(module)
        for submodule in module.children():
            if submodule not in visited_modules:
                dfs(submodule)
        modules.append(module)

    for root_module in root_modules:
        dfs(root_module)
    if ignored_params is None:
        return modules
    ignore_decision = {}
    return [m for m in modules if not _ignore_module(m, ignored_params, ignore_decision)]


def _verify_managed_param(name, param):
    if len(param.shape) == 0:
        raise ValueError("fully_shard doesn't support scalar parameters. "
                         f"Change {name} to a 1D tensor with numel equal to 1.")


def _get_managed_states(modules, ignored_params=None):
    params, buffers = [], []
    visited_params, visited_buffers = set(), set()
    ignored_params = ignored_params or set()
    for module in modules:
        for name, param in module.named_parameters(recurse=False):
            if param in ignored_params:
                continue
            if param not in visited_params:
                _verify_managed_param(name, param)
                params.append(param)
                visited_params.add(param)
        for buffer in module.buffers(recurse=False):
            if buffer not in visited_buffers:
                buffers.append(buffer)
                visited_buffers.add(buffer)
    return params, buffers


def _move_states_to_device(params, buffers, device):
    """Parameters and buffers on ``device`` (meta tensors stay, for deferred
    initialization)."""
    for tensor in itertools.chain(params, buffers):
        if tensor.device == device or tensor.device.type == "meta":
            continue
        if isinstance(tensor, DTensor):
            if (dtensor_mesh_type := tensor.device_mesh.device_type) != device.type:
                raise ValueError("Requires DTensor to have mesh of the same type as the FSDP "
                                 f"mesh but got {dtensor_mesh_type} for DTensor and "
                                 f"{device.type} for FSDP")
            raise AssertionError(f"Expects DTensor to be moved to {dtensor_mesh_type} but got "
                                 f"{tensor.device}")
        tensor.data = tensor.to(device)


def _apply_to_module(modules, cls_to_wrapper_cls, wrapper_module_cls, wrapper_cls_prefix,
                     unimplemented_deepcopy):
    """Make each module an instance of ``<prefix><Class>(wrapper_module_cls, Class)``."""
    for module in modules:
        cls = module.__class__
        new_cls = cls_to_wrapper_cls.get(cls)
        if not new_cls:
            new_cls = type(f"{wrapper_cls_prefix}{cls.__name__}", (wrapper_module_cls, cls),
                           {"__deepcopy__": unimplemented_deepcopy})
            cls_to_wrapper_cls[cls] = new_cls
        module.__class__ = new_cls


def _init_param_group(state, params, modules, mesh_info, post_forward_mesh_info, device,
                      shard_placement_fn, mp_policy, offload_policy):
    if not params:
        return
    state._fsdp_param_groups.append(FSDPParamGroup(
        params, modules, mesh_info, post_forward_mesh_info, device, shard_placement_fn,
        mp_policy, offload_policy))


def _get_modules_and_states(module, device, ignored_params):
    """(the argument, its root modules, the managed modules, parameters, buffers), the
    states moved to ``device``."""
    modules = (module,) if isinstance(module, nn.Module) else \
        tuple(_get_root_modules(list(module)))
    managed_modules = _get_managed_modules(modules, ignored_params)
    params, buffers = _get_managed_states(managed_modules, ignored_params)
    _move_states_to_device(params, buffers, device)
    return module, modules, managed_modules, params, buffers
