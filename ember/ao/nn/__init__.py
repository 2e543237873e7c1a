"""``torch.ao.nn``: the modules of quantization: ``intrinsic`` (fused sequences and their QAT
modules), ``qat`` (QAT Linear and convolutions) and ``quantized`` (the static and dynamic quantized
Linear, the stubs' Quantize and DeQuantize)."""
from . import intrinsic  # noqa: F401
from . import qat  # noqa: F401
from . import quantized  # noqa: F401
