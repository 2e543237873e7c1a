"""``ember.distributed.nn``: PyTorch's ``torch.distributed.nn``, the collectives as autograd
functions (:mod:`.functional`, re-exported here). PyTorch also exports ``RemoteModule`` here
when its RPC framework is built; ember has none (``ember.distributed.rpc.is_available()`` is
False), so, as in such a PyTorch build, it is absent."""
from .functional import *  # noqa: F401,F403
