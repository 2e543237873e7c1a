"""``ember.cuda.comm``: the copies between devices of ``ember.nn.parallel.comm`` (PyTorch's
``torch.cuda.comm`` is the same module)."""
from ..nn.parallel.comm import (broadcast, broadcast_coalesced, gather, reduce_add,  # noqa: F401
                                reduce_add_coalesced, scatter)

__all__ = ["broadcast", "broadcast_coalesced", "reduce_add", "reduce_add_coalesced", "scatter",
           "gather"]
