"""``ember.distributed.rpc``: PyTorch's ``torch.distributed.rpc`` as a build without the RPC
framework has it. ember has no RPC agent (TensorPipe), remote references or distributed
autograd, so, as in such a PyTorch build, the module holds only :func:`is_available`, which
says so; libraries that import it (PyTorch Geometric's distributed loaders) check it."""

__all__ = ["is_available"]


def is_available():
    """False: ember has no RPC framework (PyTorch's answer when built without it)."""
    return False
