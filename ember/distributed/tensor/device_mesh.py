"""``torch.distributed.tensor.device_mesh``: the DeviceMesh API under DTensor's package."""
from ..device_mesh import DeviceMesh, init_device_mesh

__all__ = ["DeviceMesh", "init_device_mesh"]
