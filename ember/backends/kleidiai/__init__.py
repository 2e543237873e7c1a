"""``ember.backends.kleidiai``: Arm's KleidiAI micro-kernels; ember does not call them."""


def is_available():
    r"""Return whether ember is built with KleidiAI support (it is not)."""
    return False
