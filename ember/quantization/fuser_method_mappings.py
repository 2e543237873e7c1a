"""``torch.quantization.fuser_method_mappings``: the fusers (``ember.ao.quantization``'s
``fuse_modules`` holds them) under their legacy path."""
from ..ao.quantization.fuse_modules import (fuse_conv_bn, fuse_conv_bn_relu,  # noqa: F401
                                            fuse_convtranspose_bn, fuse_linear_bn,
                                            get_fuser_method)
