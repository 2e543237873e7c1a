"""``ember.distributed.algorithms``: the join context manager for uneven inputs and DDP
communication hooks."""
from .join import Join, Joinable, JoinHook

__all__ = ["Join", "Joinable", "JoinHook"]
