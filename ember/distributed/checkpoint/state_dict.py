"""Model and optimizer state dicts keyed by canonical FQNs (PyTorch's
``torch.distributed.checkpoint.state_dict``), for plain modules and modules whose parameters
are DTensors (``fully_shard``'s).

A canonical FQN is a parameter's name in the unwrapped module: DDP's ``module.`` and
``torch.compile``'s ``_orig_mod.`` prefixes are dropped. Optimizer states are keyed by those
FQNs instead of parameter ids (``{"state": {fqn: {...}}, "param_groups": [{..., "params":
[fqn, ...]}]}``), so a checkpoint does not depend on the order the optimizers were built in.
An optimizer without state is first stepped once with zero gradients and a zero learning rate,
so that its state tensors exist for ``dcp.load`` to fill in place.

Loading a full state dict into a sharded model or optimizer gives each rank its shard of every
full tensor: every rank holds the full state dict, or (``broadcast_from_rank0``) only rank 0
does, and its tensors are broadcast one at a time.
"""
import contextlib
import gc
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from itertools import chain
from typing import NamedTuple

from ... import nn, no_grad, optim
from ..._core.device import device as _device
from ..._core.dtype import dtype as _dtype
from ..._core.size import Size
from ..._tensor import Tensor
from ._traverse import set_element

__all__ = ["FQNS_T", "PrimitiveType", "ValueType", "DictValueType", "ListDictValueType",
           "OptimizerStateType", "StateDictOptions", "get_model_state_dict",
           "get_optimizer_state_dict", "get_state_dict", "set_model_state_dict",
           "set_optimizer_state_dict", "set_state_dict"]

_CHECKPOINT_PREFIX = "_checkpoint_wrapped_module."
_STATE = "state"
_PG = "param_groups"
_PARAMS = "params"

FQNS_T = set
PrimitiveType = Tensor | int | float | str
ValueType = PrimitiveType | list | tuple | dict
DictValueType = dict
ListDictValueType = list
OptimizerStateType = dict


@contextlib.contextmanager
def _gc_context():
    is_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if is_enabled:
            gc.enable()


@dataclass
class StateDictOptions:
    """How get_state_dict/set_state_dict work.

    - ``full_state_dict``: gather sharded tensors (DTensors, e.g. ``fully_shard``'s, become
      whole tensors on every rank; a plain module's tensors are whole already), and load whole
      tensors into sharded ones.
    - ``cpu_offload``: tensors are copied to the CPU; with ``full_state_dict`` and an
      initialized process group only rank 0 gets the state dict (the others get ``{}``).
    - ``ignore_frozen_params``: leave out parameters that do not require grad.
    - ``keep_submodule_prefixes`` (deprecated): with ``submodules``, whether keys keep the
      submodules' prefixes.
    - ``strict``: the ``strict`` of ``model.load_state_dict()``, and whether a parameter
      without saved optimizer state is an error.
    - ``broadcast_from_rank0``: loading, only rank 0 needs the full state dict (the others
      pass ``{}``): its values are broadcast, and each rank keeps its shard of every tensor
      (requires ``full_state_dict``).
    - ``flatten_optimizer_state_dict``: the optimizer state dict as one flat dict
      (``"state.<fqn>.<key>"``, ``"param_groups.<fqn>.<key>"``).
    - ``dsd_fqn_modifiers``: the name of a module method mapping child names that are left out
      of FQNs.
    """

    full_state_dict: bool = False
    cpu_offload: bool = False
    ignore_frozen_params: bool = False
    keep_submodule_prefixes: bool = True
    strict: bool = True
    broadcast_from_rank0: bool = False
    flatten_optimizer_state_dict: bool = False
    dsd_fqn_modifiers: str = "_fqn_modifiers"


@dataclass
class _StateDictInfo(StateDictOptions):
    fqn_param_mapping: dict = field(default_factory=dict)
    shared_params_mapping: dict = field(default_factory=dict)
    submodule_prefixes: set = field(default_factory=set)
    handle_model: bool = True
    handle_optim: bool = True


def _ddp_type():
    from ...nn.parallel import DistributedDataParallel
    return DistributedDataParallel


def _compiled_type():
    from ..._dynamo.eval_frame import OptimizedModule
    return OptimizedModule


def _get_fqns(model, name, dsd_fqn_modifiers="_fqn_modifiers", skip_ddp_prefix=True,
              skip_compiler_prefix=True):
    """The canonical FQNs of ``name`` (a state-dict key of ``model``)."""
    name = name.replace(_CHECKPOINT_PREFIX, "")
    if "." not in name:
        return {name}
    ddp, compiled = _ddp_type(), _compiled_type()
    obj_names = name.split(".")
    fqn_obj_names = []
    curr_obj = model
    for i, curr_obj_name in enumerate(obj_names):
        if isinstance(curr_obj, ddp):
            if curr_obj_name != "module":
                raise AssertionError(f"Expected 'module', got '{curr_obj_name}'")
            curr_obj = curr_obj.module
            if not skip_ddp_prefix:
                fqn_obj_names.append(curr_obj_name)
        elif isinstance(curr_obj, compiled):
            if curr_obj_name != "_orig_mod":
                raise AssertionError(f"Expected '_orig_mod', got '{curr_obj_name}'")
            curr_obj = curr_obj._orig_mod
            if not skip_compiler_prefix:
                fqn_obj_names.append(curr_obj_name)
        else:
            if hasattr(curr_obj, dsd_fqn_modifiers):
                removed_fqn = getattr(curr_obj, dsd_fqn_modifiers)().get(curr_obj_name)
                if removed_fqn and hasattr(curr_obj, removed_fqn):
                    curr_obj = getattr(curr_obj, removed_fqn)
            fqn_obj_names.append(curr_obj_name)
            if curr_obj_name == nn.modules.module._EXTRA_STATE_KEY_SUFFIX:
                if i != len(obj_names) - 1:
                    raise RuntimeError("Expect `_extra_state` to be the last obj name")
            else:
                curr_obj = getattr(curr_obj, curr_obj_name)
    return {".".join(fqn_obj_names).replace(_CHECKPOINT_PREFIX, "")}


class _EXTRA_STATE:
    pass


def _iterate_valid_model_state(model, dsd_fqn_modifiers="_fqn_modifiers"):
    """``(name, tensor)`` for each persistent buffer and parameter (and a marker for each
    module's extra state), each module visited once."""
    visited = set()

    def recurse(module, curr_fqn):
        visited.add(module)
        curr_fqn = f"{curr_fqn}." if curr_fqn else ""
        for name, submodule in module.named_children():
            if submodule in visited:
                continue
            if (hasattr(module, dsd_fqn_modifiers)
                    and name in getattr(module, dsd_fqn_modifiers)().values()):
                new_fqn = curr_fqn[:-1]
            else:
                new_fqn = f"{curr_fqn}{name}"
            yield from recurse(submodule, new_fqn)
        for name, obj in chain(module.named_buffers(recurse=False),
                               module.named_parameters(recurse=False)):
            if name in module._non_persistent_buffers_set:
                continue
            yield f"{curr_fqn}{name}", obj
        if getattr(module.__class__, "get_extra_state",
                   nn.Module.get_extra_state) != nn.Module.get_extra_state:
            yield f"{curr_fqn}{nn.modules.module._EXTRA_STATE_KEY_SUFFIX}", _EXTRA_STATE()

    yield from recurse(model, "")


def _verify_options(model, optims, optim_only, *, submodules=None, options=None):
    if submodules:
        import warnings
        warnings.warn("Getting submodules only model/optim state_dict is deprecated and will be "
                      "removed in 2.5. This feature can be achieved by manually filtering out "
                      "the state_dict returned from get_state_dict.", FutureWarning, stacklevel=3)
    if optim_only and not optims:
        raise RuntimeError("Optimizers are not passed in but optim_only is set to True.")
    options = options or StateDictOptions()
    fqn_param_mapping, shared_params_mapping = {}, {}
    for name, param in _iterate_valid_model_state(model):
        if isinstance(param, _EXTRA_STATE):
            continue
        fqns = _get_fqns(model, name)
        fqn = fqn_param_mapping.get(param)
        if fqn is not None:
            fqn_param_mapping[param].update(fqns)
            shared_params_mapping[param] = fqn_param_mapping[param]
        else:
            fqn_param_mapping[param] = fqns.copy()
        for fqn in fqns:
            fqn_param_mapping[fqn] = param
    for param_, fqns_ in list(shared_params_mapping.items()):
        for fqn in fqns_:
            shared_params_mapping[fqn] = param_
    submodule_prefixes = set()
    if submodules:
        submodules = set(submodules)
        for name, module in model.named_modules():
            if module not in submodules:
                continue
            fqns = _get_fqns(model, name)
            if len(fqns) != 1:
                raise AssertionError("Submodule FQN should only have 1 instance")
            submodule_prefixes.update(f"{fqn}." for fqn in fqns)
    if options.broadcast_from_rank0 and not options.full_state_dict:
        raise ValueError("full_state_dict must be True when broadcast_from_rank0 is True.")
    return _StateDictInfo(**asdict(options), fqn_param_mapping=fqn_param_mapping,
                          shared_params_mapping=shared_params_mapping,
                          submodule_prefixes=submodule_prefixes, handle_model=not optim_only,
                          handle_optim=len(optims) > 0)


def _verify_state_dict(model_state_dict, optim_state_dict, info):
    if (info.handle_model and not model_state_dict and not info.submodule_prefixes
            and not info.ignore_frozen_params and not (info.cpu_offload and info.full_state_dict)
            and info.strict and not info.broadcast_from_rank0):
        raise RuntimeError("The option indicates that model state_dict is required to save or "
                           f"load, but model state_dict is empty.rank = {_rank()=}.")
    if info.handle_optim and not optim_state_dict and not (
            info.cpu_offload and info.full_state_dict) and not info.broadcast_from_rank0:
        raise RuntimeError("The option indicates that model state_dict is required to save, or "
                           f"load but optim state_dict is empty. {optim_state_dict}")


def _rank():
    from ... import distributed as dist
    return dist.get_rank()


def _copy_to_cpu(obj, ranks_only):
    """``obj`` with its tensors on the CPU; on a rank outside ``ranks_only`` (when given),
    dicts become ``{}`` and everything else None."""
    from ... import distributed as dist
    keep = not ranks_only or dist.get_rank() in ranks_only
    if isinstance(obj, dict):
        out = {k: _copy_to_cpu(v, ranks_only) for k, v in obj.items()}
        return out if keep else {}
    if isinstance(obj, (list, tuple)):
        out = [_copy_to_cpu(v, ranks_only) for v in obj]
        out = tuple(out) if isinstance(obj, tuple) else out
        return out if keep else None
    if not keep:
        return None
    return obj.to("cpu") if isinstance(obj, Tensor) else obj


def _gather_sharded(obj):
    """``obj`` with each DTensor replaced by its whole tensor (a collective per DTensor)."""
    from ..tensor import DTensor
    if isinstance(obj, DTensor):
        return obj.full_tensor()
    if isinstance(obj, dict):
        return {k: _gather_sharded(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        out = [_gather_sharded(v) for v in obj]
        return tuple(out) if isinstance(obj, tuple) else out
    return obj


def _maybe_full_or_cpu_state_dict(state_dict, info):
    if info.full_state_dict:
        state_dict = _gather_sharded(state_dict)
    # a plain module's tensors are whole: "gathering" them is offloading them, if asked
    if info.cpu_offload:
        from ... import distributed as dist
        ranks_only = (0,) if info.full_state_dict and dist.is_initialized() else ()
        return _copy_to_cpu(state_dict, ranks_only)
    return state_dict


class _TensorInfo(NamedTuple):
    """What rank 0 announces of a tensor it is about to broadcast."""

    size: Size
    dtype: _dtype


def _shard_of_full(local_state, full_tensor):
    """``local_state`` (a DTensor) holding its shard of ``full_tensor``: filled in place, or a
    new DTensor where it is a meta one; a plain local state becomes the full tensor."""
    from ..tensor import DTensor
    from ..tensor._api import _shard_of_full as shard_of
    if not isinstance(local_state, DTensor):
        return full_tensor
    local = shard_of(full_tensor, local_state._spec)
    if local_state.is_meta:
        return DTensor.from_local(local.clone(), local_state.device_mesh,
                                  local_state.placements, shape=local_state.shape,
                                  stride=local_state.stride())
    local_state.to_local().copy_(local)
    return local_state


def _broadcast_state_dict(full_state_dict, local_state_dict, device, strict=False,
                          cpu_offload=False):
    """Rank 0's ``full_state_dict`` into every rank's ``local_state_dict``: its non-tensor
    values and 0-dim tensors as one object, then each tensor broadcast alone (one full tensor
    in memory at a time), of which a DTensor entry keeps its shard. ``strict``: the local keys
    rank 0 lacks are dropped."""
    from ... import distributed as dist
    from ... import empty
    ret = {}
    if dist.get_rank() == 0:
        for key, value in full_state_dict.items():
            if not isinstance(value, Tensor):
                ret[key] = value
            elif value.dim() == 0:
                ret[key] = value.cpu()
            else:
                ret[key] = _TensorInfo(value.size(), value.dtype)
    broadcast_list = [ret]
    dist.broadcast_object_list(broadcast_list, src=0)
    ret = broadcast_list[0]
    local_keys = set(local_state_dict)
    for key, value in ret.items():
        if not isinstance(value, _TensorInfo):
            if key in local_state_dict:
                local_state_dict[key] = value
            continue
        if dist.get_rank() == 0:
            full_tensor = full_state_dict[key].detach().to(device)
        else:
            full_tensor = empty(value.size, dtype=value.dtype, device=device)
        dist.broadcast(full_tensor, src=0)
        if key in local_state_dict:
            local_state_dict[key] = _shard_of_full(local_state_dict[key], full_tensor)
            if cpu_offload:
                local_state_dict[key] = local_state_dict[key].cpu()
    if strict:
        for key in local_keys - set(ret):
            local_state_dict.pop(key)


def _distribute_state_dict(full_state_dict, local_state_dict, device):
    """Every rank's ``full_state_dict`` into its ``local_state_dict``: a DTensor entry gets its
    shard (``distribute_tensor`` from rank 0's copy), any other the full value."""
    from ..tensor import DTensor, distribute_tensor
    for key, value in full_state_dict.items():
        if not isinstance(value, Tensor):
            local_state_dict[key] = value
        elif value.dim() == 0:
            local_state_dict[key] = value.cpu()
        elif key in local_state_dict:
            local_state = local_state_dict[key]
            if isinstance(local_state, DTensor):
                local_state_dict[key] = distribute_tensor(value.detach().to(device),
                                                          local_state.device_mesh,
                                                          local_state.placements)
            else:
                local_state_dict[key] = value.detach().to(device)


def _flatten_state_dict(state_dict):
    """``(flat dict, {flat key: path})``: every mapping, list and tuple walked to its leaves,
    keys joined with dots (``param_groups.0.params.1``)."""
    flattened, mappings = {}, {}

    def walk(path, value):
        if isinstance(value, Mapping):
            for k, v in value.items():
                walk(path + (str(k),), v)
        elif isinstance(value, (list, tuple)):
            for i, v in enumerate(value):
                walk(path + (i,), v)
        else:
            new_fqn = ".".join(map(str, path))
            if new_fqn in flattened:
                raise ValueError(f"duplicated flatten key {new_fqn}")
            flattened[new_fqn] = value
            mappings[new_fqn] = path

    for key, value in state_dict.items():
        walk((str(key),), value)
    return flattened, mappings


def _unflatten_state_dict(state_dict, mapping):
    """The nested dict of ``_flatten_state_dict``'s output (its tuples come back as lists)."""
    nested = {}
    for key, value in state_dict.items():
        set_element(nested, mapping[key], value)
    return nested


def _verify_key(key, fqn):
    """Whether the state-dict key ``key`` is ``fqn`` with only wrapper names added."""
    if len(fqn) >= len(key):
        return False
    fqn_split, key_split = fqn.split("."), key.split(".")
    fqn_idx = 0
    for key_idx, key_name in enumerate(key_split):
        if key_name == fqn_split[fqn_idx]:
            fqn_idx += 1
            if fqn_idx == len(fqn_split):
                return key_idx == len(key_split) - 1
        elif key_name not in ("module", "_orig_mod"):
            return False
    return True


@no_grad()
def _get_model_state_dict(model, info):
    if not info.handle_model:
        return {}
    state_dict = model.state_dict()
    for key in list(state_dict.keys()):
        fqns = _get_fqns(model, key)
        if len(fqns) != 1:
            raise AssertionError(f"Expected 1 FQN for key '{key}', got {len(fqns)}: {fqns}")
        fqn = next(iter(fqns))
        if fqn != key:
            if not _verify_key(key, fqn):
                raise RuntimeError(f"An unexpected key, {key}, exists. FQN is {fqn}")
            state_dict[fqn] = state_dict.pop(key)
    if info.submodule_prefixes:
        new_state_dict = {}
        for fqn in state_dict:
            for prefix in info.submodule_prefixes:
                if fqn.startswith(prefix):
                    new_fqn = fqn if info.keep_submodule_prefixes else fqn[len(prefix):]
                    new_state_dict[new_fqn] = state_dict[fqn]
        state_dict = new_state_dict
    if info.ignore_frozen_params:
        for key, param in model.named_parameters():
            if not param.requires_grad:
                for fqn in _get_fqns(model, key):
                    state_dict.pop(fqn)
    return _maybe_full_or_cpu_state_dict(state_dict, info)


@no_grad()
def _load_model_state_dict(model, state_dict, info):
    if not info.handle_model or (not state_dict and not info.broadcast_from_rank0):
        return nn.modules.module._IncompatibleKeys([], [])
    local_state_dict = {}
    for key, value in _iterate_valid_model_state(model, info.dsd_fqn_modifiers):
        fqns = _get_fqns(model, key, info.dsd_fqn_modifiers)
        fqns_with_prefix = _get_fqns(model, key, info.dsd_fqn_modifiers, skip_ddp_prefix=False,
                                     skip_compiler_prefix=False)
        for fqn, fqn_with_prefix in zip(fqns, fqns_with_prefix):
            if (not info.broadcast_from_rank0 or _rank() == 0) and fqn != fqn_with_prefix:
                load_value = state_dict.pop(fqn, None)
                if load_value is None:
                    if info.strict:
                        raise RuntimeError(f"Missing key: {fqn}.")
                else:
                    state_dict[fqn_with_prefix] = load_value
            local_state_dict[fqn_with_prefix] = value
    assign = False
    if info.broadcast_from_rank0 or info.full_state_dict:
        devices = {v.device for v in local_state_dict.values()
                   if isinstance(v, Tensor) and v.dim() > 0}
        meta = [d for d in devices if d.type == "meta"]
        if meta:
            devices -= set(meta)
            assign = True
        if len(devices) > 1:
            raise ValueError("Multiple devices found")
        device = devices.pop() if devices else _device("cpu")
        # the full values become this rank's tensors (a DTensor: its shard), on its device
        if info.broadcast_from_rank0:
            _broadcast_state_dict(state_dict, local_state_dict, device=device,
                                  strict=info.strict, cpu_offload=info.cpu_offload)
        else:
            _distribute_state_dict(state_dict, local_state_dict, device=device)
        state_dict.update(local_state_dict)
    return model.load_state_dict(state_dict, strict=info.strict, assign=assign)


def _init_optim_state(optim_):
    """Create the optimizer's state with one zero-gradient step at a zero learning rate (a
    no-op on the parameters), unless it has state or gradients already."""
    if optim_.state:
        return
    for param_group in optim_.param_groups:
        for param in param_group[_PARAMS]:
            if param.grad is not None:
                return
    from ... import tensor, zeros_like
    for param_group in optim_.param_groups:
        for param in param_group[_PARAMS]:
            if param.requires_grad:
                param.grad = zeros_like(param)
    lrs = []
    for param_group in optim_.param_groups:
        if "lr" in param_group:
            lrs.append(param_group["lr"])
            param_group["lr"] = (tensor(0.0) if isinstance(param_group["lr"], Tensor) else 0.0)
    optim_.step(closure=None)
    for param_group in optim_.param_groups:
        if "lr" in param_group:
            param_group["lr"] = lrs.pop(0)
    optim_.zero_grad(set_to_none=True)


def _flatten_optim_state_dict(state_dict):
    """``{"state.<fqn>.<key>[.<subkey>...]": value, "param_groups.<fqn>.<key>": value}``:
    nested states are flattened with dots; each group's options repeat per parameter."""

    def raise_if_type_not_supported(v):
        if not isinstance(v, (Tensor, int, float, dict)):
            raise NotImplementedError("Flattening optimizer state_dict only supports tensor, "
                                      f"int, float, dict states now. Type is {type(v)}.")

    def flatten_nested(nested, prefix):
        flattened = {}
        for key, value in nested.items():
            full_key = f"{prefix}.{key}" if prefix else str(key)
            if isinstance(value, dict):
                flattened.update(flatten_nested(value, full_key))
            else:
                raise_if_type_not_supported(value)
                flattened[full_key] = value
        return flattened

    ret = {}
    for fqn, state in state_dict[_STATE].items():
        ret.update(flatten_nested(state, f"{_STATE}.{fqn}"))
    for param_group in state_dict[_PG]:
        fqns = param_group.pop(_PARAMS)
        for fqn in fqns:
            for k, v in param_group.items():
                ret[f"{_PG}.{fqn}.{k}"] = v
    return ret


def _unflatten_optim_state_dict(optim_, state_dict, info):
    """The inverse of ``_flatten_optim_state_dict`` for ``optim_``'s parameters."""

    def reconstruct_nested(flattened_key):
        prefix = f"{flattened_key}."
        nested = {}
        for key, value in state_dict.items():
            if not key.startswith(prefix):
                continue
            parts = key[len(prefix):].split(".")
            current = nested
            for part in parts[:-1]:
                current = current.setdefault(part, {})
            current[parts[-1]] = value
        return nested

    state, pg_state = {}, []
    return_osd = {_STATE: state, _PG: pg_state}
    for param_group in optim_.param_groups:
        pg_state.append({_PARAMS: []})
        for param in param_group[_PARAMS]:
            for fqn in info.fqn_param_mapping[param]:
                if fqn in info.shared_params_mapping:
                    # PyTorch looks at the group's first option only
                    first = next((k for k in param_group if k != _PARAMS), None)
                    if first is None or f"{_PG}.{fqn}.{first}" not in state_dict:
                        continue
                pg_state[-1][_PARAMS].append(fqn)
                if not param.requires_grad:
                    continue
                state[fqn] = {}
                for state_name in optim_.state[param]:
                    key = f"{_STATE}.{fqn}.{state_name}"
                    state[fqn][state_name] = (state_dict[key] if key in state_dict
                                              else reconstruct_nested(key))
        first_param_fqn = pg_state[-1][_PARAMS][0]
        for k in param_group:
            if k == _PARAMS:
                continue
            value = state_dict[f"{_PG}.{first_param_fqn}.{k}"]
            if k not in pg_state[-1]:
                pg_state[-1][k] = value
            elif pg_state[-1][k] != value:
                raise RuntimeError(
                    "All the parameters in the same parameter group should have the same saved "
                    f"param_group value. But {first_param_fqn}.{k} is {value} while other(s) is "
                    f"{pg_state[-1][k]}.")
    return return_osd


def _get_optim_state_dict(model, optimizers, info):
    if not info.handle_optim:
        return {}
    optim_state_dict = {_STATE: {}, _PG: []}
    for optim_ in optimizers:
        _init_optim_state(optim_)
        osd = optim_.state_dict()
        params = list(chain.from_iterable(g[_PARAMS] for g in optim_.param_groups))
        param_pid_mapping = {id(p): i for i, p in enumerate(params)}
        fqn_pid_mapping = {}
        for key, param in model.named_parameters():
            fqns = _get_fqns(model, key)
            if len(fqns) != 1:
                raise AssertionError(f"Expected 1 FQN for key '{key}', got {len(fqns)}")
            fqn = next(iter(fqns))
            if id(param) not in param_pid_mapping:
                continue
            pid = param_pid_mapping[id(param)]
            fqn_pid_mapping[fqn] = pid
            fqn_pid_mapping[pid] = fqn
        for key in list(osd[_STATE].keys()):
            osd[_STATE][fqn_pid_mapping[key]] = osd[_STATE].pop(key)
        for group in osd[_PG]:
            group[_PARAMS] = [fqn_pid_mapping[pid] for pid in group[_PARAMS]]
        if not osd:
            continue
        optim_state_dict[_STATE].update(osd[_STATE])
        optim_state_dict[_PG].extend(osd[_PG])
    if info.flatten_optimizer_state_dict:
        optim_state_dict = _flatten_optim_state_dict(optim_state_dict)
    return _maybe_full_or_cpu_state_dict(optim_state_dict, info)


def _split_optim_state_dict(model, optim_, optim_state_dict, info):
    """The part of ``optim_state_dict`` (keyed by FQNs, possibly for several optimizers) that
    belongs to ``optim_``."""
    state, pg_state = {}, []
    return_osd = {_STATE: state, _PG: pg_state}
    pg_mapping = {}
    if all(isinstance(k, int) for k in optim_state_dict[_STATE]):
        return optim_state_dict
    for param_group in optim_.param_groups:
        pg_state.append({_PARAMS: []})
        for param in param_group[_PARAMS]:
            for fqn in info.fqn_param_mapping[param]:
                if fqn in info.shared_params_mapping:
                    in_params = any(fqn in g[_PARAMS] for g in optim_state_dict[_PG])
                else:
                    in_params = True
                if not in_params:
                    continue
                pg_state[-1][_PARAMS].append(fqn)
                if param.requires_grad:
                    if fqn in optim_state_dict[_STATE]:
                        state[fqn] = optim_state_dict[_STATE][fqn]
                    elif info.strict:
                        raise RuntimeError(
                            f"Missing optimizer state for parameter '{fqn}' in checkpoint. The "
                            "parameter requires gradients but has no saved optimizer state. To "
                            "load anyway, use StateDictOptions(strict=False).")
                for loaded_param_group in optim_state_dict[_PG]:
                    if fqn in loaded_param_group[_PARAMS]:
                        pg_mapping[id(loaded_param_group)] = len(return_osd[_PG]) - 1
        if len(param_group[_PARAMS]) == 0:
            ret = [g for g in optim_state_dict[_PG] if len(g[_PARAMS]) == 0]
            if len(ret) != 1:
                raise ValueError(
                    "There are param groups that have zero parameters. In such a case, DSD "
                    "only support exactly one param group with zero parameters.But the loaded "
                    "state_dict has zero or more than one param groups that have zero "
                    "parameters.")
            if len(optim_state_dict[_PG]) != len(optim_.param_groups):
                raise ValueError("When there is a parameter group that has zero parameters, "
                                 "multiple optimizers are not supported.")
            pg_mapping[id(ret[0])] = len(return_osd[_PG]) - 1
    for param_group in optim_state_dict[_PG]:
        pg_idx = pg_mapping.get(id(param_group), -1)
        if pg_idx == -1:
            continue
        for key, value in param_group.items():
            if key != _PARAMS:
                pg_state[pg_idx][key] = value
    return return_osd


@no_grad()
def _load_optim_state_dict(model, optimizers, state_dict, info):
    if not info.handle_optim:
        return
    for optim_ in optimizers:
        _init_optim_state(optim_)
        if state_dict:
            if _STATE in state_dict:
                osd = _split_optim_state_dict(model, optim_, state_dict, info)
            else:
                osd = _unflatten_optim_state_dict(optim_, state_dict, info)
        else:
            osd = {}
        if info.full_state_dict:
            osd = _full_to_local_optim_state_dict(model, optim_, osd, info)
        # the optimizer maps the saved "params" (FQNs here) to its own by position
        optim_.load_state_dict(osd)


def _full_to_local_optim_state_dict(model, optim_, osd, info):
    """The full optimizer state dict ``osd`` (on rank 0 only, with ``broadcast_from_rank0``)
    as ``optim_``'s own: each state tensor of a sharded parameter becomes this rank's shard,
    the rest the full values."""
    info.full_state_dict = False
    local_state_dict = _get_optim_state_dict(model, (optim_,), info)
    info.full_state_dict = True
    devices = []
    for value in _flatten_state_dict(local_state_dict)[0].values():
        if isinstance(value, Tensor) and value.dim() > 0:
            if devices and value.device != devices[0]:
                raise ValueError("Device mismatch")
            devices.append(value.device)
    if not devices:
        raise AssertionError("Expected device to be set")
    flatten_osd, osd_mapping = _flatten_state_dict(osd)
    flatten_local_osd, local_osd_mapping = _flatten_state_dict(local_state_dict)
    if info.broadcast_from_rank0:
        _broadcast_state_dict(flatten_osd, flatten_local_osd, device=devices[0])
    else:
        _distribute_state_dict(flatten_osd, flatten_local_osd, device=devices[0])
    # entries of the saved state this optimizer lacks are kept, as PyTorch keeps them
    for optim_key in flatten_osd:
        if optim_key not in flatten_local_osd:
            if optim_key not in osd_mapping:
                raise AssertionError(f"Expected key '{optim_key}' in osd_mapping")
            flatten_local_osd[optim_key] = flatten_osd[optim_key]
            local_osd_mapping[optim_key] = osd_mapping[optim_key]
    osd = _unflatten_state_dict(flatten_local_osd, local_osd_mapping)
    for pg in osd[_PG]:
        if _PARAMS not in pg:
            pg[_PARAMS] = []
    return osd


def _optimizers(optimizers):
    return (optimizers,) if isinstance(optimizers, optim.Optimizer) else tuple(optimizers)


def get_model_state_dict(model, *, submodules=None, options=None):
    """The model's state dict keyed by canonical FQNs."""
    with _gc_context():
        info = _verify_options(model, (), optim_only=False, submodules=submodules,
                               options=options)
        model_state_dict = _get_model_state_dict(model, info)
        _verify_state_dict(model_state_dict, {}, info)
        return model_state_dict


def get_optimizer_state_dict(model, optimizers, *, submodules=None, options=None):
    """The optimizers' combined state dict, keyed by parameter FQNs."""
    with _gc_context():
        optimizers = _optimizers(optimizers)
        info = _verify_options(model, optimizers, optim_only=True, submodules=submodules,
                               options=options)
        optim_state_dict = _get_optim_state_dict(model, optimizers, info)
        _verify_state_dict({}, optim_state_dict, info)
        return optim_state_dict


def get_state_dict(model, optimizers, *, submodules=None, options=None):
    """``(model state dict, optimizer state dict)``, both keyed by canonical FQNs."""
    with _gc_context():
        optimizers = _optimizers(optimizers)
        info = _verify_options(model, optimizers, optim_only=False, submodules=submodules,
                               options=options)
        model_state_dict = _get_model_state_dict(model, info)
        optim_state_dict = _get_optim_state_dict(model, optimizers, info)
        _verify_state_dict(model_state_dict, optim_state_dict, info)
        return model_state_dict, optim_state_dict


def _unflatten_model_state_dict(model, state_dict):
    if not state_dict:
        return {}
    if isinstance(next(iter(state_dict.keys())), nn.Module):
        import warnings
        warnings.warn("Passing model_state_dict as a ``Dict[nn.Module, Dict[str, Any]]``is "
                      "deprecated and will be removed in 2.5. If you need this feature, please "
                      "preprocess the model_state_dict to achieve the same functionality.",
                      FutureWarning, stacklevel=3)
        new_state_dict = {}
        for submodule, sub_state_dict in state_dict.items():
            for name, m in model.named_modules():
                if m != submodule:
                    continue
                fqns = _get_fqns(model, name)
                if len(fqns) != 1:
                    raise AssertionError("FQNs for a submodule should only have 1 element")
                prefix = f"{next(iter(fqns))}."
                new_state_dict.update({prefix + k: v for k, v in sub_state_dict.items()})
        return new_state_dict
    return state_dict


def set_model_state_dict(model, model_state_dict, *, options=None):
    """Load a state dict keyed by canonical FQNs into the model; returns the missing and
    unexpected keys."""
    model_state_dict = _unflatten_model_state_dict(model, model_state_dict)
    with _gc_context():
        info = _verify_options(model, (), optim_only=False, options=options)
        _verify_state_dict(model_state_dict, {}, info)
        return _load_model_state_dict(model, model_state_dict, info)


def set_optimizer_state_dict(model, optimizers, optim_state_dict, *, options=None):
    """Load an FQN-keyed optimizer state dict into the optimizers."""
    with _gc_context():
        optimizers = _optimizers(optimizers)
        info = _verify_options(model, optimizers, optim_only=True, options=options)
        _verify_state_dict({}, optim_state_dict, info)
        _load_optim_state_dict(model, optimizers, optim_state_dict, info)


def set_state_dict(model, optimizers, *, model_state_dict, optim_state_dict, options=None):
    """Load the model and optimizer state dicts; returns the model's missing and unexpected
    keys."""
    model_state_dict = _unflatten_model_state_dict(model, model_state_dict)
    with _gc_context():
        optimizers = _optimizers(optimizers)
        info = _verify_options(model, optimizers, optim_only=not model_state_dict,
                               options=options)
        _verify_state_dict(model_state_dict, optim_state_dict, info)
        _load_optim_state_dict(model, optimizers, optim_state_dict, info)
        return _load_model_state_dict(model, model_state_dict, info)

