"""PyTorch's ``torch.distributed._composable``: ``contract``, which makes a function a
composable distributed API, and ``_get_registry``; FSDP2's names are re-exported from
``_composable.fsdp``."""
from .contract import _get_registry, contract

__all__ = ["contract", "_get_registry"]
