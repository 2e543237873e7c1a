"""``convert_conv2d_weight_memory_format`` / ``convert_conv3d_weight_memory_format``: give the
convolution weights of a model a memory format (channels-last kernels), leaving every other
parameter as it is."""
from ..modules.conv import Conv2d, Conv3d, ConvTranspose2d, ConvTranspose3d

__all__ = ["convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]


def _convert_weights(module, memory_format, conv_types):
    if isinstance(module, conv_types):
        weight_data = module.weight.detach().clone(memory_format=memory_format)
        # as PyTorch's: resize_ applies the format once more, refusing preserve_format
        module.weight.data = weight_data.resize_(weight_data.size(), memory_format=memory_format)
    for child in module.children():
        _convert_weights(child, memory_format, conv_types)
    return module


def convert_conv2d_weight_memory_format(module, memory_format):
    """Convert the weight of every ``Conv2d`` / ``ConvTranspose2d`` in ``module`` (itself
    included) to ``memory_format``, in place; returns ``module``."""
    return _convert_weights(module, memory_format, (Conv2d, ConvTranspose2d))


def convert_conv3d_weight_memory_format(module, memory_format):
    """Convert the weight of every ``Conv3d`` / ``ConvTranspose3d`` in ``module`` (itself
    included) to ``memory_format``, in place; returns ``module``."""
    return _convert_weights(module, memory_format, (Conv3d, ConvTranspose3d))
