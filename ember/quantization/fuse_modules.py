"""``torch.quantization.fuse_modules``: ``ember.ao.quantization.fuse_modules`` under its legacy
path."""
from ..ao.quantization.fuse_modules import (fuse_conv_bn, fuse_conv_bn_relu,  # noqa: F401
                                            fuse_known_modules, fuse_modules, get_fuser_method)
