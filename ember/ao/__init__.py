"""``torch.ao``: PyTorch's architecture-optimization namespace. ember has eager-mode dynamic
quantization: ``ao.quantization``'s stubs, observers, ``QConfig`` and ``quantize_dynamic``, and
the dynamic quantized Linear of ``ao.nn.quantized.dynamic``."""
from . import quantization  # noqa: F401
from . import nn  # noqa: F401
