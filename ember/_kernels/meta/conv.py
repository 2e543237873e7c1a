"""Meta kernels of the convolutions and im2col/col2im: the CPU kernels' checks, then shapes."""
from ..._core.device import META
from ..._core.tensor_impl import empty_tensor
from ..rules import conv as _c


def meta_convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
                     groups):
    shape = _c.check_convolution(input, weight, bias, stride, padding, dilation, transposed,
                                 output_padding, groups)[0]
    return empty_tensor(shape, input._dtype, META)


def meta_convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation,
                              transposed, output_padding, groups, output_mask):
    _c.check_convolution(input, weight, None, stride, padding, dilation, transposed,
                         output_padding, groups)
    dt = input._dtype
    return (empty_tensor(input._size, dt, META) if output_mask[0] else None,
            empty_tensor(weight._size, dt, META) if output_mask[1] else None,
            empty_tensor(tuple(bias_sizes or (grad_output._size[1],)), dt, META)
            if output_mask[2] else None)


def meta_im2col(self, kernel_size, dilation, padding, stride):
    shape = _c.check_im2col(self, kernel_size, dilation, padding, stride)[0]
    return empty_tensor(shape, self._dtype, META)


def meta_col2im(self, output_size, kernel_size, dilation, padding, stride):
    shape = _c.check_col2im(self, output_size, kernel_size, dilation, padding, stride)[0]
    return empty_tensor(shape, self._dtype, META)
