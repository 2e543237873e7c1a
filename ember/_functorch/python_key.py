"""``torch._functorch.python_key``: where functorch's ``make_fx`` was (``ember.fx.experimental
.proxy_tensor``'s)."""
from ..fx.experimental.proxy_tensor import PythonKeyTracer, make_fx

__all__ = ["make_fx", "PythonKeyTracer"]
