"""``ember.distributed.optim``: PyTorch's ``torch.distributed.optim`` without the RPC parts.
``ZeroRedundancyOptimizer`` shards an optimizer's state over the ranks,
``PostLocalSGDOptimizer`` averages the model after each local step (post-local SGD), and
``_apply_optimizer_in_backward`` steps per-parameter optimizers during backward.

Not here: ``DistributedOptimizer`` (PyTorch builds it only with its RPC framework, which
ember lacks), and the functional optimizers (``_FunctionalAdam`` ..., ``as_functional_optim``,
``_NamedOptimizer``) that PyTorch uses inside DDP communication hooks and TorchScript."""
from .apply_optimizer_in_backward import (_apply_optimizer_in_backward,  # noqa: F401
                                          _get_in_backward_optimizers)
from .post_localSGD_optimizer import PostLocalSGDOptimizer
from .zero_redundancy_optimizer import ZeroRedundancyOptimizer

__all__ = ["PostLocalSGDOptimizer", "ZeroRedundancyOptimizer"]
