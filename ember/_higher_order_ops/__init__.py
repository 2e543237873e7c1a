"""Higher-order operators (PyTorch's ``torch._higher_order_ops``): ops that take functions."""
from .cond import cond  # noqa: F401
from .while_loop import while_loop  # noqa: F401
