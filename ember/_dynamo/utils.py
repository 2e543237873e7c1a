"""``torch._dynamo.utils``: of PyTorch's grab-bag of Dynamo helpers, the one libraries call
(torchvision's ops ask it before they compile themselves)."""
from .._core.device import device as _device


def is_compile_supported(device_type):
    """Whether ``ember.compile`` compiles graphs on ``device_type``: ember's Inductor generates
    kernels for the CPU and for CUDA devices (the simulated one included)."""
    return _device(device_type).type in ("cpu", "cuda")
