"""Higher-order operators (PyTorch's ``torch._higher_order_ops``): ops that take functions."""
__all__ = ["associative_scan", "cond", "map", "scan", "while_loop"]

from .associative_scan import associative_scan  # noqa: F401
from .cond import cond  # noqa: F401
from .map import map  # noqa: F401
from .scan import scan  # noqa: F401
from .while_loop import while_loop  # noqa: F401
