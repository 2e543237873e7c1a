"""``DataParallel``: PyTorch's single-process multi-device replication. ember runs one device per
process, where PyTorch's ``DataParallel`` with one (or no) device simply calls the module; with
several device ids it would need replicas on several devices, which is refused (use
``DistributedDataParallel``)."""
from ..modules.module import Module

__all__ = ["DataParallel", "data_parallel"]


class DataParallel(Module):
    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        if device_ids is not None and len(device_ids) > 1:
            raise RuntimeError("ember's DataParallel runs on one device; for several devices use "
                               "DistributedDataParallel with one process per device")
        self.module = module
        self.device_ids = list(device_ids) if device_ids is not None else []
        self.output_device = output_device
        self.dim = dim

    def forward(self, *inputs, **kwargs):
        # PyTorch: with one device (or none) DataParallel just runs the module
        return self.module(*inputs, **kwargs)


def data_parallel(module, inputs, device_ids=None, output_device=None, dim=0,
                  module_kwargs=None):
    if not isinstance(inputs, tuple):
        inputs = (inputs,) if inputs is not None else ()
    return DataParallel(module, device_ids, output_device, dim)(*inputs, **(module_kwargs or {}))
