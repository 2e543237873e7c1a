"""``torch.quantization``: the legacy path of ``ember.ao.quantization`` (a thin re-export, as in
PyTorch), with its submodules under their legacy names."""
from ..ao.quantization import *  # noqa: F401,F403
from ..ao.quantization import __all__ as _ao_all
from . import (fake_quantize, fuse_modules, fuser_method_mappings, observer,  # noqa: F401
               qconfig, quantization_mappings, quantize, stubs)

__all__ = list(_ao_all)
