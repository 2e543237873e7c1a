"""``ember.distributed.constants``: the default process-group timeouts, as PyTorch's
``torch.distributed.constants``."""
from datetime import timedelta

from .distributed_c10d import default_pg_timeout, is_nccl_available

__all__ = ["default_pg_timeout", "default_pg_nccl_timeout"]

# PyTorch's C++ NCCL default where NCCL is there, None in a build without it
default_pg_nccl_timeout = timedelta(minutes=10) if is_nccl_available() else None
