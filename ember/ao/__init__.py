"""``torch.ao``: PyTorch's architecture-optimization namespace. ember has no quantized tensors
(see tests/test_toplevel_names.py's list of what ember leaves out), so of it only the float
modules that model code builds before any quantization step exist: ``ao.quantization``'s stubs."""
from . import quantization  # noqa: F401
