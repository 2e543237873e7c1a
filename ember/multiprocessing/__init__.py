"""``ember.multiprocessing``: Python's ``multiprocessing`` under PyTorch's name, with PyTorch's
process launcher (``spawn``, ``start_processes``: :mod:`.spawn`), as ``torch.multiprocessing``.

Tensors reach other processes two ways. Across a fork, a tensor whose storage was moved into
shared memory (``Tensor.share_memory_``, ``Module.share_memory``: Hogwild training) is the same
memory in both processes. Pickled (a ``Queue``, a ``Pool``'s tasks, a ``spawn``'s arguments), a
tensor is sent by the reducers of :mod:`.reductions` (registered on import, as PyTorch's): its
storage once per message, so views sent together share memory on arrival, but as a copy of its
bytes: ember has no shared-memory handles to send, where PyTorch sends its shared storages by
file descriptor or file name. The sharing strategies name those two ways of PyTorch's; ember
records the choice and reports it, and copies either way. :mod:`.queue` and :mod:`.pool` are
PyTorch's ``Queue``/``SimpleQueue``/``Pool`` over ``ForkingPickler``."""
import multiprocessing
import sys
from multiprocessing import *  # noqa: F401,F403  (Python's, under this name)

from .reductions import init_reductions
from .spawn import (ProcessContext, ProcessException, ProcessExitedException,  # noqa: F401
                    ProcessRaisedException, SpawnContext, spawn, start_processes)

# (PyTorch's list: the launcher's names are attributes, not in it)
__all__ = ["set_sharing_strategy", "get_sharing_strategy", "get_all_sharing_strategies"]
__all__ += multiprocessing.__all__

# PyTorch's strategies on this platform, and its default
_all_sharing_strategies = ({"file_descriptor", "file_system"} if sys.platform != "darwin"
                           else {"file_system"})
_sharing_strategy = "file_descriptor" if sys.platform != "darwin" else "file_system"


def set_sharing_strategy(new_strategy):
    """Set PyTorch's strategy for sharing CPU tensors (one of
    :func:`get_all_sharing_strategies`). ember sends pickled tensors as copies under either (see
    the module docstring); the choice is kept for :func:`get_sharing_strategy`."""
    global _sharing_strategy
    if new_strategy not in _all_sharing_strategies:
        raise AssertionError(f"Invalid sharing strategy: {new_strategy}")
    _sharing_strategy = new_strategy


def get_sharing_strategy():
    """The current strategy for sharing CPU tensors."""
    return _sharing_strategy


def get_all_sharing_strategies():
    """The sharing strategies this platform has (PyTorch's)."""
    return _all_sharing_strategies


init_reductions()
