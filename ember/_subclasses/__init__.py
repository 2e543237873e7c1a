"""``ember._subclasses``: Tensor subclasses built on ``__torch_dispatch__`` (FakeTensor; and
FunctionalTensor in ``ember._subclasses.functional_tensor``)."""
from .fake_tensor import (DataDependentOutputException, DynamicOutputShapeException,  # noqa: F401
                          FakeTensor, FakeTensorMode, UnsupportedFakeTensorException)
