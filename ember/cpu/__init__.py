"""``ember.cpu``: the CPU device module (PyTorch's ``torch.cpu``); here, its ``amp`` submodule."""
from . import amp  # noqa: F401


def is_available():
    """The CPU is always available."""
    return True
