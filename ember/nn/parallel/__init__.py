"""``ember.nn.parallel``: ``DistributedDataParallel`` (one process per device, gradients
averaged over processes) and ``DataParallel`` (one process driving several devices: replicas of
the module on each, inputs scattered and outputs gathered), with the copies between devices they
are built from (``comm``, ``replicate``, ``scatter``/``gather``, ``parallel_apply``)."""
from . import comm  # noqa: F401
from .data_parallel import DataParallel, data_parallel  # noqa: F401
from .distributed import DistributedDataParallel  # noqa: F401
from .parallel_apply import parallel_apply  # noqa: F401
from .replicate import replicate  # noqa: F401
from .scatter_gather import gather, scatter  # noqa: F401

__all__ = ["DataParallel", "DistributedDataParallel", "data_parallel", "gather",
           "parallel_apply", "replicate", "scatter"]
