"""The convolution entry points of ATen's Convolution.cpp above ``aten::convolution``:
conv1d/2d/3d (with int or 'same'/'valid' padding) and conv_transpose1d/2d/3d, which add the
unbatched case and string padding, and ``_convolution``, its older signature with the backend
flags."""
from ..._ops.overload import ops

_aten = ops.aten  # ops resolve when called: the op table is built after the kernels load


def _batchify(input, k, name):
    """(input with a batch dim, whether one was added), PyTorch's batchify check."""
    d = len(input._size)
    if d not in (k + 1, k + 2):
        raise RuntimeError(f"Expected {k + 1}D (unbatched) or {k + 2}D (batched) input to {name}, "
                           f"but got input of size: [{', '.join(map(str, input._size))}]")
    if d == k + 1:
        return _aten.unsqueeze.default._call(input, 0), True
    return input, False


def _conv(k, name, input, weight, bias, stride, padding, dilation, groups, transposed=False,
          output_padding=(0,)):
    aten = _aten
    x, unbatched = _batchify(input, k, name)
    y = aten.convolution.default._call(x, weight, bias, list(stride), list(padding),
                                       list(dilation), transposed, list(output_padding), groups)
    return aten.squeeze.dim._call(y, 0) if unbatched else y


def _convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups,
                 benchmark, deterministic, cudnn_enabled, allow_tf32):
    # (the flags choose among cuDNN's algorithms in PyTorch: ember has one implementation)
    return _aten.convolution.default._call(input, weight, bias, stride, padding, dilation,
                                           transposed, output_padding, groups)


def _conv_padding_str(k, name, input, weight, bias, stride, padding, dilation, groups):
    """'valid' is padding 0; 'same' pads d*(k-1) in total, symmetric where it can and the odd
    remainder on the right (through an explicit constant_pad_nd), as ATen's _convolution_mode."""
    stride = list(stride) * (k if len(stride) == 1 else 1)
    dilation = list(dilation) * (k if len(dilation) == 1 else 1)
    if padding == "valid":
        return _conv(k, name, input, weight, bias, stride, [0] * k, dilation, groups)
    if padding != "same":
        raise RuntimeError(f"Invalid padding string: '{padding}'")
    if any(s != 1 for s in stride):
        raise RuntimeError("padding='same' is not supported for strided convolutions")
    x, unbatched = _batchify(input, k, name)
    ksize = weight._size[2:]
    total = [d * (kk - 1) for d, kk in zip(dilation, ksize)]
    sym = [t // 2 for t in total]
    if any(t % 2 for t in total):
        # constant_pad_nd's pad list runs from the last dim backwards: (left, right) pairs
        pad = []
        for t in reversed(total):
            pad += [0, t % 2]
        x = _aten.constant_pad_nd.default._call(x, pad, 0)
    y = _conv(k, name, x, weight, bias, stride, sym, dilation, groups)
    return _aten.squeeze.dim._call(y, 0) if unbatched else y


def conv1d(input, weight, bias=None, stride=(1,), padding=(0,), dilation=(1,), groups=1):
    return _conv(1, "conv1d", input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1):
    return _conv(2, "conv2d", input, weight, bias, stride, padding, dilation, groups)


def conv3d(input, weight, bias=None, stride=(1, 1, 1), padding=(0, 0, 0), dilation=(1, 1, 1),
           groups=1):
    return _conv(3, "conv3d", input, weight, bias, stride, padding, dilation, groups)


def conv1d_padding(input, weight, bias, stride, padding, dilation, groups):
    return _conv_padding_str(1, "conv1d", input, weight, bias, stride, padding, dilation, groups)


def conv2d_padding(input, weight, bias, stride, padding, dilation, groups):
    return _conv_padding_str(2, "conv2d", input, weight, bias, stride, padding, dilation, groups)


def conv3d_padding(input, weight, bias, stride, padding, dilation, groups):
    return _conv_padding_str(3, "conv3d", input, weight, bias, stride, padding, dilation, groups)


def conv_transpose1d(input, weight, bias, stride, padding, output_padding, groups, dilation):
    return _conv(1, "conv_transpose1d", input, weight, bias, stride, padding, dilation, groups,
                 True, output_padding)


def conv_transpose2d_input(input, weight, bias, stride, padding, output_padding, groups,
                           dilation):
    return _conv(2, "conv_transpose2d", input, weight, bias, stride, padding, dilation, groups,
                 True, output_padding)


def conv_transpose3d_input(input, weight, bias, stride, padding, output_padding, groups,
                           dilation):
    return _conv(3, "conv_transpose3d", input, weight, bias, stride, padding, dilation, groups,
                 True, output_padding)
