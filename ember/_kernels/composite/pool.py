"""CompositeImplicitAutograd pooling front ends (ATen's Pooling.cpp / AdaptiveAveragePooling.cpp):
max_pool1d/2d/3d and max_pool1d_with_indices, avg_pool1d, adaptive_avg_pool1d/2d/3d and
adaptive_max_pool1d, each expressed through the 2-D/3-D pooling ops (1-D ops pool a
``(..., 1, L)`` view)."""
from ..._core import strides as _st
from ..._core.device import channels_last_3d
from ..._dispatch import tls as _tls
from ..._ops.overload import ops
from ..rules.pool import check_max_pool1d

_aten = ops.aten  # ops resolve when called: the op table is built after the kernels load


def _one(name, arg, v, allow_empty=False):
    v = list(v)
    if len(v) == 1 or (allow_empty and not v):
        return v
    raise RuntimeError(f"{name}() {arg} must be an int, list of ints or tuple of ints of size 1 "
                       f"but got size {len(v)}")


def _check_1d_input(name, self):
    if len(self._size) not in (2, 3):
        raise RuntimeError(f"{name}() Expected 2D or 3D input tensor, but got "
                           f"[{', '.join(map(str, self._size))}]")


def max_pool1d_with_indices(self, kernel_size, stride=(), padding=(0,), dilation=(1,),
                            ceil_mode=False):
    aten = _aten
    _check_1d_input("max_pool1d", self)
    k = _one("max_pool1d", "kernel_size", kernel_size)
    s = _one("max_pool1d", "stride", stride, allow_empty=True) or k
    p = _one("max_pool1d", "padding", padding)
    d = _one("max_pool1d", "dilation", dilation)
    x = aten.unsqueeze.default._call(self, -2)
    out, idx = aten.max_pool2d_with_indices.default._call(x, [1, k[0]], [1, s[0]], [0, p[0]],
                                                          [1, d[0]], ceil_mode)
    return aten.squeeze.dim._call(out, -2), aten.squeeze.dim._call(idx, -2)


def max_pool1d(self, kernel_size, stride=(), padding=(0,), dilation=(1,), ceil_mode=False):
    if self.is_quantized:  # (ATen's max_pool1d sends quantized inputs to their own kernel)
        size = self._size
        if not ((len(size) == 2 and size[0] and size[1]) or (len(size) == 3 and size[1]
                                                              and size[2])):
            raise RuntimeError(f"max_pool1d: Expected 2D or 3D (batch mode) tensor with optional "
                               f"0 dim batch size for input, but got:[{', '.join(map(str, size))}]")
        return _aten.quantized_max_pool1d.default._call(self, kernel_size, stride, padding,
                                                        dilation, ceil_mode)
    # ATen's max_pool1d (without indices) is a kernel of its own, with its own words and order
    check_max_pool1d(self, kernel_size, stride, padding, dilation, ceil_mode)
    out = max_pool1d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode)[0]
    if (self.requires_grad and _tls.state.grad_enabled) or getattr(self, "_fw_grad", None) \
            or self._device.type != "cpu":
        return out  # ATen's path through max_pool1d_with_indices: a view of the pooled tensor
    # ATen's own CPU kernel when no gradient is needed: a new tensor, not a view
    return _aten._unsafe_view.default._call(out, out._size)


def max_pool2d(self, kernel_size, stride=(), padding=(0,), dilation=(1,), ceil_mode=False):
    if self.is_quantized:  # (ATen's max_pool2d sends quantized inputs to their own kernel)
        return _aten.quantized_max_pool2d.default._call(self, kernel_size, stride, padding,
                                                        dilation, ceil_mode)
    return _aten.max_pool2d_with_indices.default._call(self, kernel_size, stride, padding,
                                                         dilation, ceil_mode)[0]


def max_pool3d(self, kernel_size, stride=(), padding=(0,), dilation=(1,), ceil_mode=False):
    return _aten.max_pool3d_with_indices.default._call(self, kernel_size, stride, padding,
                                                         dilation, ceil_mode)[0]


def avg_pool1d(self, kernel_size, stride=(), padding=(0,), ceil_mode=False,
               count_include_pad=True):
    aten = _aten
    if len(self._size) not in (2, 3):  # (ATen's checkDimRange, before the arguments' lengths)
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {len(self._size)}-dimensional "
                           f"tensor for argument #1 'self' (while checking arguments for "
                           f"avg_pool1d)")
    for arg, v in (("kernel_size", kernel_size), ("stride", stride), ("padding", padding)):
        if len(v) != 1 and not (arg == "stride" and not v):
            raise RuntimeError(f"avg_pool1d() argument '{arg}' should contain one int (got "
                               f"{len(v)})")
    s = list(stride) or list(kernel_size)
    x = aten.unsqueeze.default._call(self, -2)
    out = aten.avg_pool2d.default._call(x, [1, kernel_size[0]], [1, s[0]], [0, padding[0]],
                                        ceil_mode, count_include_pad, None)
    return aten.squeeze.dim._call(out, -2)


def _check_1d_adaptive(name, self, output_size):
    if len(output_size) != 1:
        raise RuntimeError(f"{name}: output_size must be 1")
    if len(self._size) not in (2, 3):
        raise RuntimeError(f"{name}(): Expected 2D or 3D tensor, but got "
                           f"[{', '.join(map(str, self._size))}]")


def adaptive_avg_pool1d(self, output_size):
    aten = _aten
    _check_1d_adaptive("adaptive_avg_pool1d", self, output_size)
    x = aten.unsqueeze.default._call(self, -2)
    out = aten._adaptive_avg_pool2d.default._call(x, [1, output_size[0]])
    return aten.squeeze.dim._call(out, -2)


def adaptive_avg_pool2d(self, output_size):
    return _aten._adaptive_avg_pool2d.default._call(self, output_size)


def adaptive_avg_pool3d(self, output_size):
    if self.is_quantized and list(output_size) == [1, 1, 1]:
        # (ATen's global pooling is the mean over D, H and W, channels-last when the input is)
        out = _aten.mean.dim._call(self, [-1, -2, -3], True, None)
        if len(self._size) == 5 and _st.suggests_channels_last(self._size, self._stride):
            out = _aten.clone.default._call(out, channels_last_3d)
        return out
    return _aten._adaptive_avg_pool3d.default._call(self, output_size)


def adaptive_max_pool1d(self, output_size):
    aten = _aten
    _check_1d_adaptive("adaptive_max_pool1d", self, output_size)
    x = aten.unsqueeze.default._call(self, -2)
    out, idx = aten.adaptive_max_pool2d.default._call(x, [1, output_size[0]])
    return aten.squeeze.dim._call(out, -2), aten.squeeze.dim._call(idx, -2)
