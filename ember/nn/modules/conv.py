"""Convolutions: ``Conv1d/2d/3d``, ``ConvTranspose1d/2d/3d`` and their Lazy forms.

The classes hold the weights and PyTorch's argument handling (string padding, padding modes,
``output_size`` for transposed convolutions); the arithmetic is ``F.conv*``."""
import math

from ... import empty, empty_like
from ..._core.device import contiguous_format
from ...autograd.grad_mode import no_grad
from .. import functional as F
from .. import init
from ..parameter import Parameter, UninitializedParameter
from .lazy import LazyModuleMixin
from .module import Module
from .utils import _pair, _reverse_repeat_tuple, _single, _triple

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",
           "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d",
           "LazyConvTranspose2d", "LazyConvTranspose3d"]

_NTUPLE = {1: _single, 2: _pair, 3: _triple}


class _ConvNd(Module):
    __constants__ = ["stride", "padding", "dilation", "groups", "padding_mode", "output_padding",
                     "in_channels", "out_channels", "kernel_size"]

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation,
                 transposed, output_padding, groups, bias, padding_mode, device=None,
                 dtype=None):
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__()
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        valid_padding_strings = {"same", "valid"}
        if isinstance(padding, str):
            if padding not in valid_padding_strings:
                raise ValueError(f"Invalid padding string {padding!r}, should be one of "
                                 f"{valid_padding_strings}")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        valid_padding_modes = {"zeros", "reflect", "replicate", "circular"}
        if padding_mode not in valid_padding_modes:
            raise ValueError(f"padding_mode must be one of {valid_padding_modes}, but got "
                             f"padding_mode='{padding_mode}'")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.dilation = dilation
        self.transposed = transposed
        self.output_padding = output_padding
        self.groups = groups
        self.padding_mode = padding_mode
        # F.pad's order (last dim first, left/right pairs) for the non-zero padding modes.
        if isinstance(self.padding, str):
            self._reversed_padding_repeated_twice = [0, 0] * len(kernel_size)
            if padding == "same":
                for d, k, i in zip(dilation, kernel_size, range(len(kernel_size) - 1, -1, -1)):
                    total_padding = d * (k - 1)
                    left_pad = total_padding // 2
                    self._reversed_padding_repeated_twice[2 * i] = left_pad
                    self._reversed_padding_repeated_twice[2 * i + 1] = total_padding - left_pad
        else:
            self._reversed_padding_repeated_twice = _reverse_repeat_tuple(self.padding, 2)
        if transposed:
            shape = (in_channels, out_channels // groups, *kernel_size)
        else:
            shape = (out_channels, in_channels // groups, *kernel_size)
        self.weight = Parameter(empty(shape, **factory_kwargs))
        if bias:
            self.bias = Parameter(empty(out_channels, **factory_kwargs))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        with no_grad():
            if not self.weight.is_contiguous():
                temp_weight = empty_like(self.weight, memory_format=contiguous_format)
                init.kaiming_uniform_(temp_weight, a=math.sqrt(5))
                self.weight.copy_(temp_weight)
            else:
                init.kaiming_uniform_(self.weight, a=math.sqrt(5))
            if self.bias is not None:
                fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
                bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self):
        s = "{in_channels}, {out_channels}, kernel_size={kernel_size}, stride={stride}"
        if self.padding != (0,) * len(self.padding):
            s += ", padding={padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += ", dilation={dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += ", output_padding={output_padding}"
        if self.groups != 1:
            s += ", groups={groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += ", padding_mode={padding_mode}"
        return s.format(**self.__dict__)

    def __setstate__(self, state):
        super().__setstate__(state)
        if not hasattr(self, "padding_mode"):
            self.padding_mode = "zeros"


class _ConvForward(_ConvNd):
    """Conv1d/2d/3d: ``_n`` spatial dims, ``_fn`` the functional form."""

    _n = 0
    _fn = None

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", device=None, dtype=None):
        nt = _NTUPLE[self._n]
        super().__init__(in_channels, out_channels, nt(kernel_size), nt(stride),
                         padding if isinstance(padding, str) else nt(padding), nt(dilation),
                         False, nt(0), groups, bias, padding_mode, device=device, dtype=dtype)

    def _conv_forward(self, input, weight, bias):
        conv = getattr(F, self._fn)
        if self.padding_mode != "zeros":
            return conv(F.pad(input, self._reversed_padding_repeated_twice,
                              mode=self.padding_mode),
                        weight, bias, self.stride, _NTUPLE[self._n](0), self.dilation,
                        self.groups)
        return conv(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input):
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_ConvForward):
    _n, _fn = 1, "conv1d"


class Conv2d(_ConvForward):
    _n, _fn = 2, "conv2d"


class Conv3d(_ConvForward):
    _n, _fn = 3, "conv3d"


class _ConvTransposeNd(_ConvNd):
    _n = 0
    _fn = None

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros",
                 device=None, dtype=None):
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for '
                             f"{self.__class__.__name__}")
        nt = _NTUPLE[self._n]
        super().__init__(in_channels, out_channels, nt(kernel_size), nt(stride), nt(padding),
                         nt(dilation), True, nt(output_padding), groups, bias, padding_mode,
                         device=device, dtype=dtype)

    def _output_padding(self, input, output_size, stride, padding, kernel_size,
                        num_spatial_dims, dilation=None):
        """The output padding that makes the result ``output_size`` (checked to be reachable)."""
        if output_size is None:
            return _single(self.output_padding)
        has_batch_dim = input.dim() == num_spatial_dims + 2
        num_non_spatial_dims = 2 if has_batch_dim else 1
        if len(output_size) == num_non_spatial_dims + num_spatial_dims:
            output_size = output_size[num_non_spatial_dims:]
        if len(output_size) != num_spatial_dims:
            raise ValueError(
                f"ConvTranspose{num_spatial_dims}D: for {input.dim()}D input, output_size must "
                f"have {num_spatial_dims} or {num_non_spatial_dims + num_spatial_dims} elements "
                f"(got {len(output_size)})")
        min_sizes, max_sizes = [], []
        for d in range(num_spatial_dims):
            dim_size = ((input.size(d + num_non_spatial_dims) - 1) * stride[d] - 2 * padding[d]
                        + (dilation[d] if dilation is not None else 1) * (kernel_size[d] - 1)
                        + 1)
            min_sizes.append(dim_size)
            max_sizes.append(min_sizes[d] + stride[d] - 1)
        for size, min_size, max_size in zip(output_size, min_sizes, max_sizes):
            if size < min_size or size > max_size:
                raise ValueError(f"requested an output size of {output_size}, but valid sizes "
                                 f"range from {min_sizes} to {max_sizes} (for an input of "
                                 f"{input.size()[2:]})")
        return [output_size[d] - min_sizes[d] for d in range(num_spatial_dims)]

    def forward(self, input, output_size=None):
        if self.padding_mode != "zeros":
            raise ValueError(f"Only `zeros` padding mode is supported for "
                             f"{self.__class__.__name__}")
        output_padding = self._output_padding(input, output_size, self.stride, self.padding,
                                              self.kernel_size, self._n, self.dilation)
        return getattr(F, self._fn)(input, self.weight, self.bias, self.stride, self.padding,
                                    output_padding, self.groups, self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    _n, _fn = 1, "conv_transpose1d"


class ConvTranspose2d(_ConvTransposeNd):
    _n, _fn = 2, "conv_transpose2d"


class ConvTranspose3d(_ConvTransposeNd):
    _n, _fn = 3, "conv_transpose3d"


class _LazyConvXdMixin(LazyModuleMixin):
    """Infers ``in_channels`` from the first input's channel dimension."""

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def initialize_parameters(self, input, *args, **kwargs):
        if self.has_uninitialized_params():
            self.in_channels = self._get_in_channels(input)
            if self.in_channels % self.groups != 0:
                raise ValueError("in_channels must be divisible by groups")
            if self.transposed:
                shape = (self.in_channels, self.out_channels // self.groups, *self.kernel_size)
            else:
                shape = (self.out_channels, self.in_channels // self.groups, *self.kernel_size)
            self.weight.materialize(shape)
            if self.bias is not None:
                self.bias.materialize((self.out_channels,))
            self.reset_parameters()

    def _get_in_channels(self, input):
        num_spatial_dims = self._n
        num_dims_no_batch = num_spatial_dims + 1
        num_dims_batch = num_dims_no_batch + 1
        if input.dim() not in (num_dims_no_batch, num_dims_batch):
            raise RuntimeError(f"Expected {num_dims_no_batch}D (unbatched) or {num_dims_batch}D "
                               f"(batched) input to {self.__class__.__name__}, but got input of "
                               f"size: {input.shape}")
        return input.shape[1] if input.dim() == num_dims_batch else input.shape[0]


def _make_lazy(base, name):
    def __init__(self, out_channels, kernel_size, *args, device=None, dtype=None, **kwargs):
        factory_kwargs = {"device": device, "dtype": dtype}
        # Built with in_channels=0 and no bias, then given uninitialized parameters.
        bias = kwargs.pop("bias", True)
        LazyModuleMixin.__init__(self, 0, 0, kernel_size, *args, bias=False, **kwargs)
        self.weight = UninitializedParameter(**factory_kwargs)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(**factory_kwargs)

    return type(name, (_LazyConvXdMixin, base), {"__init__": __init__, "cls_to_become": base,
                                                 "__module__": __name__})


LazyConv1d = _make_lazy(Conv1d, "LazyConv1d")
LazyConv2d = _make_lazy(Conv2d, "LazyConv2d")
LazyConv3d = _make_lazy(Conv3d, "LazyConv3d")
LazyConvTranspose1d = _make_lazy(ConvTranspose1d, "LazyConvTranspose1d")
LazyConvTranspose2d = _make_lazy(ConvTranspose2d, "LazyConvTranspose2d")
LazyConvTranspose3d = _make_lazy(ConvTranspose3d, "LazyConvTranspose3d")
