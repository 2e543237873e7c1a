"""``ember.distributed``: PyTorch's ``torch.distributed`` on MPI (mpi4py, an optional extra:
``pip install 'ember[distributed]'``). Process groups, the collectives, object collectives and
the stores; the launcher is ``python -m ember.distributed.run``.

The backends ``"gloo"`` and ``"mpi"`` both run on the MPI engine with CPU tensors. mpi4py is
imported on the first ``init_process_group``, so ``import ember`` works without it.
"""
from ._errors import (DistBackendError, DistError, DistNetworkError,  # noqa: F401
                      DistStoreError, QueueEmptyError)
from .distributed_c10d import *  # noqa: F401,F403
from .distributed_c10d import (_get_default_group, default_pg_timeout,  # noqa: F401
                               is_torchelastic_launched, set_debug_level, set_debug_level_from_env)
from .distributed_c10d import (_all_gather_base, _broadcast_coalesced,  # noqa: F401
                               _rank_not_in_group, _reduce_scatter_base,
                               _verify_params_across_processes)
from .device_mesh import DeviceMesh, init_device_mesh  # noqa: F401

set_debug_level_from_env()

# DDP's first gradient bucket closes at this size (PyTorch's dist._DEFAULT_FIRST_BUCKET_BYTES)
_DEFAULT_FIRST_BUCKET_BYTES = 1024 * 1024
