"""``ember.distributed.autograd``: PyTorch's ``torch.distributed.autograd`` as a build without
the RPC framework has it. Distributed autograd records gradients across RPC calls; ember has no
RPC agent (see :mod:`ember.distributed.rpc`), so :func:`is_available` says False, and
:class:`context` refuses to open. Libraries import the module and check ``is_available()``
(torchopt's distributed helpers)."""

__all__ = ["context", "is_available"]


def is_available():
    """False: ember has no RPC framework (PyTorch's answer when built without it)."""
    return False


class context:
    """A distributed autograd pass's context (``with context() as context_id``): it needs
    PyTorch's RPC framework, which ember does not have."""

    def __enter__(self):
        raise RuntimeError("torch.distributed.autograd is not available: ember has no RPC "
                           "framework (torch.distributed.rpc.is_available() is False)")

    def __exit__(self, exc_type, exc_value, traceback):
        return None
