"""Averaging parameters over a process group (PyTorch's
``torch/distributed/algorithms/model_averaging/utils.py``): the parameters are flattened into
one buffer, divided by the group's size and all-reduced, and each parameter's ``.data`` becomes
its slice of the result."""
import itertools

import ember
import ember.distributed as dist
from ember.distributed import group

__all__ = ["average_parameters", "get_params_to_average",
           "average_parameters_or_parameter_groups"]


def average_parameters(params, process_group):
    """Average ``params`` over ``process_group`` (None: the default group); a rank outside the
    group leaves them as they are. Takes memory for one flat copy of the parameters."""
    group_to_use = process_group if process_group is not None else group.WORLD
    if dist._rank_not_in_group(group_to_use):
        return
    params_it1, params_it2 = itertools.tee(params)
    # parameters of several dtypes are promoted in the flat buffer and cast back below
    flat_params = ember.cat([p.data.reshape(-1) for p in params_it1])
    flat_params /= dist.get_world_size(group_to_use)
    # the all-reduce must not overlap device work still running on the parameters
    if ember.accelerator.is_available():
        ember.accelerator.synchronize()
    dist.all_reduce(flat_params, group=group_to_use)
    offset = 0
    for p in params_it2:
        p.data = flat_params[offset:offset + p.numel()].view_as(p).type_as(p)
        offset += p.numel()


def get_params_to_average(params):
    """The parameters that have a gradient, from a model's parameters or an optimizer's
    parameter groups."""
    filtered_params = []
    for param in params:
        if isinstance(param, ember.nn.Parameter):
            if param.grad is not None:
                filtered_params.append(param)
        elif isinstance(param, dict):
            for param_data in param["params"]:
                if param_data.grad is not None:
                    filtered_params.append(param_data)
        else:
            raise NotImplementedError(f"Parameter input of type {type(param)} is not supported")
    return filtered_params


def average_parameters_or_parameter_groups(params, process_group):
    """Average a model's parameters or an optimizer's parameter groups (those with a
    gradient)."""
    average_parameters(iter(get_params_to_average(params)), process_group)
