"""The sharding strategies of the ops DTensor supports, registered on import (one module per
area, as PyTorch's ``torch.distributed.tensor._ops``)."""
from . import (_embedding_ops, _math_ops, _matrix_ops, _pointwise_ops, _random_ops,  # noqa: F401
               _tensor_ops, _view_ops)
