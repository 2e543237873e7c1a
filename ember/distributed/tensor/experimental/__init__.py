"""``torch.distributed.tensor.experimental``: ``implicit_replication``."""
import contextlib

from .._api import DTensor

__all__ = ["implicit_replication"]


@contextlib.contextmanager
def implicit_replication():
    """Within the block, a plain tensor mixed with DTensors in an op counts as replicated
    (any size; outside it only one-element tensors do)."""
    try:
        DTensor._op_dispatcher._allow_implicit_replication = True
        yield
    finally:
        DTensor._op_dispatcher._allow_implicit_replication = False
