"""``ember.nn.parallel``: ``DistributedDataParallel`` (one process per device, gradients
averaged over processes) and ``DataParallel`` (one device: a pass-through, as in PyTorch)."""
from .data_parallel import DataParallel, data_parallel  # noqa: F401
from .distributed import DistributedDataParallel  # noqa: F401

__all__ = ["DataParallel", "DistributedDataParallel", "data_parallel"]
