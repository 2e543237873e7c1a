"""The gradients of a convolution with respect to its input or its weight, computed alone
(``torch.nn.grad``: what a custom autograd Function or a per-sample-gradient library calls):
each is ``aten::convolution_backward`` asked for one gradient, the other operand given only by
its shape."""
from .._ops.overload import ops
from .modules.utils import _pair, _single, _triple

__all__ = ["conv1d_input", "conv1d_weight", "conv2d_input", "conv2d_weight", "conv3d_input",
           "conv3d_weight"]


def _grad(which, expand, input, weight, grad_output, stride, padding, dilation, groups):
    """``convolution_backward``'s gradient number ``which`` (0 input, 1 weight); the other
    operand is given by its shape only."""
    return ops.aten.convolution_backward.default(
        grad_output, input, weight, None, expand(stride), expand(padding), expand(dilation),
        False, [0], groups, (which == 0, which == 1, False))[which]


def _input_grad(expand, input_size, weight, grad_output, stride, padding, dilation, groups):
    input = grad_output.new_empty(1).expand(input_size)
    return _grad(0, expand, input, weight, grad_output, stride, padding, dilation, groups)


def _weight_grad(expand, input, weight_size, grad_output, stride, padding, dilation, groups):
    weight = grad_output.new_empty(1).expand(weight_size)
    return _grad(1, expand, input, weight, grad_output, stride, padding, dilation, groups)


def conv1d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of conv1d with respect to its input, of shape ``input_size``."""
    return _input_grad(_single, input_size, weight, grad_output, stride, padding, dilation,
                       groups)


def conv1d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of conv1d with respect to its weight, of shape ``weight_size``."""
    return _weight_grad(_single, input, weight_size, grad_output, stride, padding, dilation,
                        groups)


def conv2d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of conv2d with respect to its input, of shape ``input_size``."""
    return _input_grad(_pair, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv2d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of conv2d with respect to its weight, of shape ``weight_size``."""
    return _weight_grad(_pair, input, weight_size, grad_output, stride, padding, dilation,
                        groups)


def conv3d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of conv3d with respect to its input, of shape ``input_size``."""
    return _input_grad(_triple, input_size, weight, grad_output, stride, padding, dilation,
                       groups)


def conv3d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of conv3d with respect to its weight, of shape ``weight_size``."""
    return _weight_grad(_triple, input, weight_size, grad_output, stride, padding, dilation,
                        groups)
