"""``ember.nn``: modules, parameters, initializers and utilities for building networks."""
from . import functional, init, utils  # noqa: F401
from .modules import *  # noqa: F401,F403
from .parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter  # noqa: F401
from . import parallel  # noqa: F401,E402  (DistributedDataParallel; mpi4py loads lazily)
from .parallel import DataParallel  # noqa: F401,E402
from . import common_types, grad  # noqa: F401,E402  (torch.nn.common_types, torch.nn.grad)

functional.grad = grad  # (F.grad, as in PyTorch)


def __getattr__(name):
    # the legacy quantization packages (torch.nn.qat, .intrinsic, .quantized re-export
    # torch.ao.nn's), imported on first use: they import ember.ao, which imports ember.nn
    if name in ("qat", "intrinsic", "quantized"):
        import importlib
        return importlib.import_module("." + name, __name__)
    raise AttributeError(f"module 'ember.nn' has no attribute '{name}'")
