"""``torch.ao``: PyTorch's architecture-optimization namespace. ember has eager-mode
quantization: ``ao.quantization`` (observers, fake quantizers, qconfigs, fusion, ``prepare_qat``,
``quantize_dynamic``) and the modules of ``ao.nn`` (fused, QAT and dynamic quantized)."""
from . import quantization  # noqa: F401
from . import nn  # noqa: F401
