"""The ATen op surface: ``native_functions.yaml`` loaded into the dispatcher, the ``ember.ops``
namespaces of ``OpOverload`` objects, and the Python bindings generated from the schemas."""
from .higher_order_operator import HigherOrderOperator  # noqa: E402,F401  (torch._ops)
