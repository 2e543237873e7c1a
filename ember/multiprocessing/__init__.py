"""``ember.multiprocessing``: Python's ``multiprocessing`` under PyTorch's name, with PyTorch's
process launcher (``spawn``, ``start_processes``: :mod:`.spawn`), as ``torch.multiprocessing``.

CPU tensors reach other processes in shared memory. Across a fork, a tensor whose storage was
moved there (``Tensor.share_memory_``, ``Module.share_memory``: Hogwild training) is the same
memory in both processes. Pickled (a ``Queue``, a ``Pool``'s tasks, the arguments of a spawned
``Process``), a tensor is sent by the reducers of :mod:`.reductions` (registered on import, as
PyTorch's), which move its storage into shared memory and send the handle the receiver maps, so
the processes read and write one memory under any start method. The sharing strategy says
which handle, as PyTorch's: ``file_descriptor`` (Linux's default) keeps a descriptor of an
anonymous file per shared storage and sends it; ``file_system`` keeps no descriptor and sends the
name of a ``/dev/shm`` file, which is unlinked when its last user is gone. :mod:`.queue` and
:mod:`.pool` are PyTorch's ``Queue``/``SimpleQueue``/``Pool`` over ``ForkingPickler``."""
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
    """Set the strategy for sharing CPU tensors (one of :func:`get_all_sharing_strategies`):
    how storages moved into shared memory from now on are made and sent (see the module
    docstring)."""
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
