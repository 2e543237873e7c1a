"""Copies of a module on several devices that share its parameters through autograd (PyTorch's
``torch/nn/parallel/replicate.py``): each replica's parameters are ``Broadcast`` outputs, so the
gradients the replicas receive are summed into the original parameters; buffers are copied
without autograd (the first device's replica holds the original buffers themselves, so a
BatchNorm there updates the module's running statistics, as in PyTorch)."""
from ._functions import Broadcast
from . import comm

__all__ = ["replicate"]


def _broadcast_coalesced_reshape(tensors, devices, detach=False):
    if detach:
        return comm.broadcast_coalesced(tensors, devices)
    if not tensors:
        return []
    copies = Broadcast.apply(devices, *tensors)
    return [copies[i:i + len(tensors)] for i in range(0, len(copies), len(tensors))]


def replicate(network, devices, detach=False):
    """One replica of ``network`` per device of ``devices`` (the first on the device the module
    is on); with ``detach`` the replicas' parameters are plain copies."""
    import ember
    if not devices:
        return []
    devices = [ember.cuda._get_device_index(x, optional=True) for x in devices]
    num_replicas = len(devices)

    params = list(network.parameters())
    param_indices = {p: i for i, p in enumerate(params)}
    param_copies = _broadcast_coalesced_reshape(params, devices, detach)

    buffers = list(network.buffers())
    buffers_rg = [b for b in buffers if b.requires_grad and not detach]
    buffers_not_rg = [b for b in buffers if not (b.requires_grad and not detach)]
    indices_rg = {b: i for i, b in enumerate(buffers_rg)}
    indices_not_rg = {b: i for i, b in enumerate(buffers_not_rg)}
    copies_rg = _broadcast_coalesced_reshape(buffers_rg, devices, detach=detach)
    copies_not_rg = _broadcast_coalesced_reshape(buffers_not_rg, devices, detach=True)

    modules = list(network.modules())
    module_copies = [[] for _ in devices]
    module_indices = {}
    for i, module in enumerate(modules):
        module_indices[module] = i
        for j in range(num_replicas):
            replica = module._replicate_for_data_parallel()
            replica._former_parameters = {}
            module_copies[j].append(replica)

    for i, module in enumerate(modules):
        for key, child in module._modules.items():
            for j in range(num_replicas):
                replica = module_copies[j][i]
                if child is None:
                    replica._modules[key] = None
                else:
                    setattr(replica, key, module_copies[j][module_indices[child]])
        for key, param in module._parameters.items():
            for j in range(num_replicas):
                replica = module_copies[j][i]
                if param is None:
                    replica._parameters[key] = None
                else:
                    # a replica's parameters are not leaves: plain attributes, not Parameters
                    copy = param_copies[j][param_indices[param]]
                    setattr(replica, key, copy)
                    replica._former_parameters[key] = copy
        for key, buf in module._buffers.items():
            for j in range(num_replicas):
                replica = module_copies[j][i]
                if buf is None:
                    replica._buffers[key] = None
                elif buf.requires_grad and not detach:
                    setattr(replica, key, copies_rg[j][indices_rg[buf]])
                else:
                    setattr(replica, key, copies_not_rg[j][indices_not_rg[buf]])
    return [module_copies[j][0] for j in range(num_replicas)]
