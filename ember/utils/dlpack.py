"""``ember.utils.dlpack``: DLPack exchange with other array libraries (PyTorch's
``torch.utils.dlpack``). The capsule machinery is ``ember._dlpack``."""
from .._dlpack import DLDeviceType, from_dlpack, to_capsule

__all__ = ["DLDeviceType", "from_dlpack", "to_dlpack"]


def to_dlpack(tensor):
    """A ``"dltensor"`` capsule sharing ``tensor``'s memory (the legacy interface: the capsule
    is for one ``from_dlpack`` call)."""
    return to_capsule(tensor)
