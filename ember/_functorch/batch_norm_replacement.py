"""``replace_all_batch_norm_modules_``: turn off running statistics in every BatchNorm of a model,
so that it can run under ``vmap`` (whose per-sample calls cannot all update one buffer)."""
from ..nn.modules.batchnorm import _BatchNorm

__all__ = ["batch_norm_without_running_stats", "replace_all_batch_norm_modules_"]


def batch_norm_without_running_stats(module):
    """Drop the running statistics of ``module`` if it is a BatchNorm that tracks them."""
    if isinstance(module, _BatchNorm) and module.track_running_stats:
        module.running_mean = None
        module.running_var = None
        module.num_batches_tracked = None
        module.track_running_stats = False


def replace_all_batch_norm_modules_(root):
    """In place: every BatchNorm in ``root`` (``root`` included) stops tracking running
    statistics (``running_mean`` / ``running_var`` / ``num_batches_tracked`` become None).
    Returns ``root``."""
    batch_norm_without_running_stats(root)
    for obj in root.modules():
        batch_norm_without_running_stats(obj)
    return root


replace_all_batch_norm_modules_.__module__ = "ember.func"  # where PyTorch exposes it
