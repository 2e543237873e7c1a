"""Rules of the convolution ops (convolution, im2col, col2im), for every backend: argument checks
and result shapes and dtypes, with PyTorch's errors. The CPU kernels (``cpu/conv.py``) and the
Meta kernels (``meta/conv.py``) call them; this module imports no backend."""
from ..._core import dtype as D


def _shape(s):
    return "[" + ", ".join(map(str, s)) + "]"


def expand_param(name, value, k):
    """PyTorch's expand_param_if_needed: a one-element list stands for every spatial dim."""
    value = list(value)
    if len(value) == 1:
        return value * k
    if len(value) != k:
        raise RuntimeError(f"expected {name} to be a single integer value or a list of {k} values "
                           f"to match the convolution dimensions, but got {name}={_shape(value)}")
    return value


def check_convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
                      groups):
    """convolution's checks, in ATen's order; returns (output shape, stride, padding, dilation,
    output_padding) with the parameters expanded to one value per spatial dim."""
    wd = len(weight._size)
    if wd < 3:
        raise RuntimeError("weight should have at least three dimensions")
    k = wd - 2
    stride = expand_param("stride", stride, k)
    padding = expand_param("padding", padding, k)
    dilation = expand_param("dilation", dilation, k)
    output_padding = expand_param("output_padding", output_padding, k)
    if any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")
    if any(p < 0 for p in output_padding):
        raise RuntimeError("negative output_padding is not supported")
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError("non-positive dilation is not supported")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if len(input._size) != wd:
        raise RuntimeError(f"Expected {wd}-dimensional input for {wd}-dimensional weight "
                           f"{_shape(weight._size)}, but got {len(input._size)}-dimensional input "
                           f"of size {_shape(input._size)} instead")
    if input._dtype is not weight._dtype:
        raise RuntimeError(f"expected scalar type {input._dtype._short} but found "
                           f"{weight._dtype._short}")
    if bias is not None and bias._dtype is not input._dtype:
        raise RuntimeError(f"Input type (torch.{input._dtype._short}Tensor) and bias type "
                           f"(torch.{bias._dtype._short}Tensor) should be the same or input "
                           f"should be a MKLDNN tensor and bias is a dense tensor")
    n, c = input._size[:2]
    spatial = input._size[2:]
    ksize = weight._size[2:]
    if not transposed:
        if weight._size[0] % groups:
            raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by "
                               f"{groups} at dimension 0, but got weight of size "
                               f"{_shape(weight._size)} instead")
        if c != weight._size[1] * groups:
            raise RuntimeError(f"Given groups={groups}, weight of size {_shape(weight._size)}, "
                               f"expected input{_shape(input._size)} to have "
                               f"{weight._size[1] * groups} channels, but got {c} channels "
                               f"instead")
        out_c = weight._size[0]
        padded = [s + 2 * p for s, p in zip(spatial, padding)]
        eff = [d * (kk - 1) + 1 for d, kk in zip(dilation, ksize)]
        if any(p < e for p, e in zip(padded, eff)):
            raise RuntimeError(f"Calculated padded input size per channel: "
                               f"({' x '.join(map(str, padded))}). Kernel size: "
                               f"({' x '.join(map(str, eff))}). Kernel size can't be greater "
                               f"than actual input size")
        out = [(p - e) // s + 1 for p, e, s in zip(padded, eff, stride)]
    else:
        if c != weight._size[0]:
            raise RuntimeError(f"Given transposed=1, weight of size {_shape(weight._size)}, "
                               f"expected input{_shape(input._size)} to have {weight._size[0]} "
                               f"channels, but got {c} channels instead")
        if any(op >= s and op >= d for op, s, d in zip(output_padding, stride, dilation)):
            raise RuntimeError("output padding must be smaller than either stride or dilation, "
                               f"but got output_padding={_shape(output_padding)} "
                               f"stride={_shape(stride)} dilation={_shape(dilation)}")
        out_c = weight._size[1] * groups
        out = [(s - 1) * st - 2 * p + d * (kk - 1) + op + 1 for s, st, p, d, kk, op in
               zip(spatial, stride, padding, dilation, ksize, output_padding)]
        if any(o <= 0 for o in out):
            raise RuntimeError(f"Given input size per channel: ({' x '.join(map(str, spatial))})"
                               f". Calculated output size per channel: "
                               f"({' x '.join(map(str, out))}). Output size is too small")
    if bias is not None and (len(bias._size) != 1 or bias._size[0] != out_c):
        raise RuntimeError(f"Given weight of size {_shape(weight._size)}, expected bias to be "
                           f"1-dimensional with {out_c} elements, but got bias of size "
                           f"{_shape(bias._size)} instead")
    _check_conv_dtype(input._dtype, transposed, k)
    return (n, out_c, *out), stride, padding, dilation, output_padding


def _check_conv_dtype(dt, transposed, k):
    """The dtypes of ATen's CPU convolution kernels (complex convolutions are three real ones):
    the slow transposed kernels have no bool, nor integers but long; the others no bool."""
    if transposed:
        if dt is D.bool_ or (dt._category == D.INTEGRAL and dt is not D.int64):
            kernel = "slow_conv_transpose3d_out_cpu" if k == 3 else \
                "slow_conv_transpose2d_out_cpu"
            raise NotImplementedError(f"\"{kernel}\" not implemented for '{dt._short}'")
    elif dt is D.bool_:
        kernel = "slow_conv3d_cpu" if k == 3 else "slow_conv2d_cpu"
        raise NotImplementedError(f"\"{kernel}\" not implemented for 'Bool'")


def _pair_checks(name, kernel_size, dilation, padding, stride):
    for arg, v, what in (("kernel_size", kernel_size, "kernel size"), ("dilation", dilation,
                         "dilation"), ("padding", padding, "padding"), ("stride", stride,
                                                                         "stride")):
        if len(v) != 2:
            raise RuntimeError(f"It is expected {arg} equals to 2, but got size {len(v)}")
    if any(k <= 0 for k in kernel_size):
        raise RuntimeError(f"kernel size should be greater than zero, but got kernel_height: "
                           f"{kernel_size[0]} kernel_width: {kernel_size[1]}")
    if any(d <= 0 for d in dilation):
        raise RuntimeError(f"dilation should be greater than zero, but got dilation_height: "
                           f"{dilation[0]} dilation_width: {dilation[1]}")
    if any(p < 0 for p in padding):
        raise RuntimeError(f"padding should be non-negative, but got pad_height: {padding[0]} "
                           f"pad_width: {padding[1]}")
    if any(s <= 0 for s in stride):
        raise RuntimeError(f"stride should be greater than zero, but got stride_height: "
                           f"{stride[0]} stride_width: {stride[1]}")


def _floating_only(name, dtype):
    """im2col/col2im's CPU dtypes: floating, complex and Bool (ATen dispatches ..._AND3(kBool))."""
    if not (dtype.is_floating_point or dtype.is_complex or dtype is D.bool_):
        raise NotImplementedError(f"\"{name}\" not implemented for '{dtype._short}'")


def check_im2col(self, kernel_size, dilation, padding, stride):
    _pair_checks("im2col", kernel_size, dilation, padding, stride)
    nd_ = len(self._size)
    if nd_ not in (3, 4) or 0 in self._size[-3:]:
        raise RuntimeError(f"Expected 3D or 4D (batch mode) tensor with possibly 0 batch size "
                           f"and other non-zero dimensions for input, but got: "
                           f"{_shape(self._size)}")
    h, w = self._size[-2:]
    oh = (h + 2 * padding[0] - (dilation[0] * (kernel_size[0] - 1) + 1)) // stride[0] + 1
    ow = (w + 2 * padding[1] - (dilation[1] * (kernel_size[1] - 1) + 1)) // stride[1] + 1
    if oh < 1 or ow < 1:
        raise RuntimeError(f"Given input with spatial size ({h}, {w}), kernel_size="
                           f"({kernel_size[0]}, {kernel_size[1]}), dilation=({dilation[0]}, "
                           f"{dilation[1]}), padding=({padding[0]}, {padding[1]}), calculated "
                           f"shape of the array of sliding blocks as ({oh}, {ow}), but its "
                           f"components must be at least one.")
    _floating_only("im2col_out_cpu", self._dtype)
    c = self._size[-3]
    shape = (c * kernel_size[0] * kernel_size[1], oh * ow)
    return (shape if nd_ == 3 else (self._size[0], *shape)), (oh, ow)


def check_col2im(self, output_size, kernel_size, dilation, padding, stride):
    _pair_checks("col2im", kernel_size, dilation, padding, stride)
    if len(output_size) != 2:
        raise RuntimeError(f"It is expected output_size equals to 2, but got size "
                           f"{len(output_size)}")
    nd_ = len(self._size)
    if nd_ not in (2, 3) or 0 in self._size[-2:]:
        raise RuntimeError(f"Expected 2D or 3D (batch mode) tensor for input with possibly 0 "
                           f"batch size and non-zero dimensions for input, but got: "
                           f"{_shape(self._size)}")
    kk = kernel_size[0] * kernel_size[1]
    if self._size[-2] % kk:
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product "
                           f"of kernel_size, but got input.size(1)={self._size[-2]} and "
                           f"kernel_size=({kernel_size[0]}, {kernel_size[1]})")
    oh = (output_size[0] + 2 * padding[0] - (dilation[0] * (kernel_size[0] - 1) + 1)) \
        // stride[0] + 1
    ow = (output_size[1] + 2 * padding[1] - (dilation[1] * (kernel_size[1] - 1) + 1)) \
        // stride[1] + 1
    if oh * ow != self._size[-1]:
        raise RuntimeError(f"Given output_size=({output_size[0]}, {output_size[1]}), "
                           f"kernel_size=({kernel_size[0]}, {kernel_size[1]}), dilation="
                           f"({dilation[0]}, {dilation[1]}), padding=({padding[0]}, "
                           f"{padding[1]}), stride=({stride[0]}, {stride[1]}), expected size of "
                           f"input's dimension 2 to match the calculated number of sliding "
                           f"blocks {oh} * {ow} = {oh * ow}, but got input.size(2)="
                           f"{self._size[-1]}.")
    _floating_only("col2im_out_cpu", self._dtype)
    c = self._size[-2] // kk
    shape = (c, *output_size)
    return (shape if nd_ == 2 else (self._size[0], *shape)), (oh, ow)
