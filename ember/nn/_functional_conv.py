"""``ember.nn.functional``'s convolution, pooling, resampling, padding and folding functions, with
PyTorch's signatures and argument handling (``torch/nn/functional.py``): where PyTorch's
function is a binding (``torch.conv2d``, ``torch._C._nn.avg_pool2d``...) ember's is the same
generated binding, and where it is Python ember's does what it does and calls the binding it
calls, so that a bad argument raises that binding's TypeError. Re-exported by
``ember.nn.functional``."""
import math
import warnings

import ember

from .._ops.overload import ops
from .modules.utils import _list_with_default, _pair, _single, _triple
# (ember.nn.functional imports this module once it has defined _is_integer)
from .functional import _is_integer

_aten = ops.aten

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d", "avg_pool1d", "avg_pool2d", "avg_pool3d", "max_pool1d",
           "max_pool2d", "max_pool3d", "max_pool1d_with_indices", "max_pool2d_with_indices",
           "max_pool3d_with_indices", "max_unpool1d", "max_unpool2d", "max_unpool3d",
           "lp_pool1d", "lp_pool2d", "lp_pool3d", "adaptive_avg_pool1d", "adaptive_avg_pool2d",
           "adaptive_avg_pool3d", "adaptive_max_pool1d", "adaptive_max_pool2d",
           "adaptive_max_pool3d", "adaptive_max_pool1d_with_indices",
           "adaptive_max_pool2d_with_indices", "adaptive_max_pool3d_with_indices",
           "fractional_max_pool2d", "fractional_max_pool3d",
           "fractional_max_pool2d_with_indices", "fractional_max_pool3d_with_indices", "interpolate",
           "upsample", "upsample_nearest", "upsample_bilinear", "pad", "unfold", "fold",
           "pixel_shuffle", "pixel_unshuffle", "grid_sample", "affine_grid",
           "GRID_SAMPLE_INTERPOLATION_MODES", "GRID_SAMPLE_PADDING_MODES"]


def _tuple(v, n):
    """An int (or a 1-element sequence) repeated n times; a sequence as a list."""
    if isinstance(v, (list, tuple)):
        return list(v)
    return [v] * n


# ---------------------------------------------------------------------------------------------
# Convolutions: PyTorch's F.conv*d and F.conv_transpose*d are the bindings torch.conv*d
# themselves (ints or tuples; padding may be 'same' / 'valid'), with their argument errors

conv1d, conv2d, conv3d = ember.conv1d, ember.conv2d, ember.conv3d
conv_transpose1d = ember.conv_transpose1d
conv_transpose2d = ember.conv_transpose2d
conv_transpose3d = ember.conv_transpose3d


# ---------------------------------------------------------------------------------------------
# Pooling

# avg_pool*d and adaptive_avg_pool1d are bindings in PyTorch too (torch.avg_pool1d,
# torch._C._nn.avg_pool2d); the max pools are Python there, calling the bindings with the
# arguments as given, so that a bad one gets the binding's TypeError

avg_pool1d = ember.avg_pool1d
avg_pool2d = ember._C._nn.avg_pool2d
avg_pool3d = ember._C._nn.avg_pool3d


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=False):
    return ember.max_pool1d_with_indices(input, kernel_size, stride, padding, dilation,
                                         ceil_mode)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=False):
    return ember._C._nn.max_pool2d_with_indices(input, kernel_size, stride, padding, dilation,
                                                ceil_mode)


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=False):
    return ember._C._nn.max_pool3d_with_indices(input, kernel_size, stride, padding, dilation,
                                                ceil_mode)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    if return_indices:
        return max_pool1d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    return ember.max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    if return_indices:
        return max_pool2d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    return ember.max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    if return_indices:
        return max_pool3d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    return ember.max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode)


# The forms without indices that PyTorch's boolean_dispatch picks when return_indices is False
# (code calls them by these names; return_indices is accepted and ignored, as there)

def _max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                return_indices=False):
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode)


def _max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                return_indices=False):
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode)


def _max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                return_indices=False):
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode)


def _unpool_output_size(input, kernel_size, stride, padding, output_size):
    """torch.nn.functional._unpool_output_size: the default size, or a checked explicit one."""
    k = len(kernel_size)
    input_size = input.shape
    default = [(input_size[-k + d] - 1) * stride[d] + kernel_size[d] - 2 * padding[d]
               for d in range(k)]
    if output_size is None:
        return default
    output_size = list(output_size)
    if len(output_size) == k + 2:
        output_size = output_size[2:]
    if len(output_size) != k:
        raise ValueError(f"output_size should be a sequence containing {k} or {k + 2} elements, "
                         f"but it has a length of '{len(output_size)}'")
    for d in range(k):
        lo, hi = default[d] - stride[d], default[d] + stride[d]
        if not lo < output_size[d] < hi:
            raise ValueError(f'invalid output_size "{output_size}" (dim {d} must be between '
                             f'{lo} and {hi})')
    return output_size


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    kernel_size = _tuple(kernel_size, 1)
    stride = _tuple(stride, 1) if stride is not None else kernel_size
    padding = _tuple(padding, 1)
    size = _unpool_output_size(input, kernel_size, stride, padding, output_size) + [1]
    out = _aten.max_unpool2d.default(input.unsqueeze(-1), indices.unsqueeze(-1), size)
    return out.squeeze(-1)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    kernel_size = _tuple(kernel_size, 2)
    stride = _tuple(stride, 2) if stride is not None else kernel_size
    padding = _tuple(padding, 2)
    size = _unpool_output_size(input, kernel_size, stride, padding, output_size)
    return _aten.max_unpool2d.default(input, indices, size)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    kernel_size = _tuple(kernel_size, 3)
    stride = _tuple(stride, 3) if stride is not None else kernel_size
    padding = _tuple(padding, 3)
    size = _unpool_output_size(input, kernel_size, stride, padding, output_size)
    return _aten.max_unpool3d.default(input, indices, size, stride, padding)


def _lp_pool(pool, input, norm_type, kernel_size, stride, ceil_mode, window):
    """PyTorch's lp_pool: (sum over the window of x^p)^(1/p), from an average pool."""
    out = pool(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    # relu, as PyTorch: its gradient at an all-zero window is 0 where clamp_min would pass NaN
    return (ember.sign(out) * ember.relu(ember.abs(out))).mul(window).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    return _lp_pool(avg_pool1d, input, norm_type, kernel_size, stride, ceil_mode,
                    math.prod(_single(kernel_size)))


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    kw, kh = _pair(kernel_size)  # (as PyTorch: a size that is no pair fails to unpack here)
    return _lp_pool(avg_pool2d, input, norm_type, kernel_size, stride, ceil_mode, kw * kh)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    kd, kw, kh = _triple(kernel_size)
    return _lp_pool(avg_pool3d, input, norm_type, kernel_size, stride, ceil_mode, kd * kw * kh)


# adaptive pools: None in a size means the input's size there (_list_with_default, as PyTorch)

adaptive_avg_pool1d = ember.adaptive_avg_pool1d


def adaptive_avg_pool2d(input, output_size):
    return ember._C._nn.adaptive_avg_pool2d(input, _list_with_default(output_size, input.size()))


def adaptive_avg_pool3d(input, output_size):
    return ember._C._nn.adaptive_avg_pool3d(input, _list_with_default(output_size, input.size()))


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):
    return ember.adaptive_max_pool1d(input, output_size)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    return ember._C._nn.adaptive_max_pool2d(input, _list_with_default(output_size, input.size()))


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=False):
    return ember._C._nn.adaptive_max_pool3d(input, _list_with_default(output_size, input.size()))


def adaptive_max_pool1d(input, output_size, return_indices=False):
    res = adaptive_max_pool1d_with_indices(input, output_size)
    return res if return_indices else res[0]


def adaptive_max_pool2d(input, output_size, return_indices=False):
    res = adaptive_max_pool2d_with_indices(input, output_size)
    return res if return_indices else res[0]


def adaptive_max_pool3d(input, output_size, return_indices=False):
    res = adaptive_max_pool3d_with_indices(input, output_size)
    return res if return_indices else res[0]


def _adaptive_max_pool1d(input, output_size, return_indices=False):
    return adaptive_max_pool1d(input, output_size)


def _adaptive_max_pool2d(input, output_size, return_indices=False):
    return adaptive_max_pool2d(input, output_size)


def _adaptive_max_pool3d(input, output_size, return_indices=False):
    return adaptive_max_pool3d(input, output_size)


# ---------------------------------------------------------------------------------------------
# Fractional max pooling (torch.nn.functional.fractional_max_pool{2,3}d[_with_indices])

def _fractional_max_pool(k, input, kernel_size, output_size, output_ratio, _random_samples):
    name = f"fractional_max_pool{k}d"
    if output_size is None and output_ratio is None:
        raise ValueError(f"{name} requires specifying either an output_size or an output_ratio")
    if output_size is None:
        if k == 2 and len(output_ratio) > 2:  # PyTorch's 2d form takes len() of the ratio
            raise ValueError(f"{name} requires output_ratio to either be a single Int or tuple "
                             f"of Ints.")
        ratio = _tuple(output_ratio, k)
        output_size = [int(input.size(-k + i) * ratio[i]) for i in range(k)]
    if _random_samples is None:
        n_batch = 1 if input.dim() == k + 1 else input.size(0)
        _random_samples = ember.rand(n_batch, input.size(-k - 1), k, dtype=input.dtype,
                                     device=input.device)
    return getattr(ember._C._nn, name)(input, kernel_size, output_size, _random_samples)


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    """2D fractional max pooling (Graham, arXiv:1412.6071): ``(output, indices)``."""
    return _fractional_max_pool(2, input, kernel_size, output_size, output_ratio,
                                _random_samples)


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    """3D fractional max pooling (Graham, arXiv:1412.6071): ``(output, indices)``."""
    return _fractional_max_pool(3, input, kernel_size, output_size, output_ratio,
                                _random_samples)


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None,
                          return_indices=False, _random_samples=None):
    res = fractional_max_pool2d_with_indices(input, kernel_size, output_size, output_ratio,
                                             return_indices, _random_samples)
    return res if return_indices else res[0]


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None,
                          return_indices=False, _random_samples=None):
    res = fractional_max_pool3d_with_indices(input, kernel_size, output_size, output_ratio,
                                             return_indices, _random_samples)
    return res if return_indices else res[0]


def _fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None,
                           return_indices=False, _random_samples=None):
    return fractional_max_pool2d(input, kernel_size, output_size, output_ratio, False,
                                 _random_samples)


def _fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None,
                           return_indices=False, _random_samples=None):
    return fractional_max_pool3d(input, kernel_size, output_size, output_ratio, False,
                                 _random_samples)


# ---------------------------------------------------------------------------------------------
# interpolate (torch.nn.functional.interpolate, argument logic ported as is)

_INTERP_OPS = {  # (mode, spatial dims) -> aten op taking (input, output_size[, align], scales)
    ("nearest", 1): "upsample_nearest1d", ("nearest", 2): "upsample_nearest2d",
    ("nearest", 3): "upsample_nearest3d", ("nearest-exact", 1): "_upsample_nearest_exact1d",
    ("nearest-exact", 2): "_upsample_nearest_exact2d",
    ("nearest-exact", 3): "_upsample_nearest_exact3d", ("linear", 1): "upsample_linear1d",
    ("bilinear", 2): "upsample_bilinear2d", ("bicubic", 2): "upsample_bicubic2d",
    ("trilinear", 3): "upsample_trilinear3d",
}
_ALIGNED = {"linear", "bilinear", "bicubic", "trilinear"}


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: "
                             "linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    dim = input.dim() - 2
    if dim < 1:
        raise ValueError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got "
                         f"{input.dim()}D) for the modes: nearest | linear | bilinear | bicubic "
                         f"| trilinear | area | nearest-exact (got {mode})")
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        if isinstance(size, (list, tuple)):
            if len(size) != dim:
                raise ValueError(f"Input and output must have the same number of spatial "
                                 f"dimensions, but got input with spatial dimensions of "
                                 f"{list(input.shape[2:])} and output size of {size}. Please "
                                 f"provide input tensor in (N, C, d1, d2, ...,dK) format and "
                                 f"output size in (o1, o2, ...,oK) format.")
            if not all(_is_integer(x) for x in size):
                raise TypeError(f"expected size to be one of int or Tuple[int] or Tuple[int, int] "
                                f"or Tuple[int, int, int], but got size with types "
                                f"{[type(x) for x in size]}")
            output_size = size
        else:
            output_size = [size] * dim
        scale_factors = None
    elif scale_factor is not None:
        if isinstance(scale_factor, (list, tuple)):
            if len(scale_factor) != dim:
                raise ValueError(f"Input and scale_factor must have the same number of spatial "
                                 f"dimensions, but got input with spatial dimensions of "
                                 f"{list(input.shape[2:])} and scale_factor of shape "
                                 f"{scale_factor}. Please provide input tensor in (N, C, d1, d2, "
                                 f"...,dK) format and scale_factor in (s1, s2, ...,sK) format.")
            scale_factors = scale_factor
        else:
            scale_factors = [scale_factor] * dim
        output_size = None
    else:
        raise ValueError("either size or scale_factor should be defined")
    if recompute_scale_factor is not None and recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    if mode == "area" and output_size is None:
        recompute_scale_factor = True
    if recompute_scale_factor is not None and recompute_scale_factor:
        output_size = [int(math.floor(float(input.shape[i + 2]) * scale_factors[i]))
                       for i in range(dim)]
        scale_factors = None
    if antialias and not (mode in ("bilinear", "bicubic", "lanczos") and input.dim() == 4):
        raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos modes "
                         "and requires a 4-D tensor as input")
    if mode == "lanczos" and input.dim() == 4:
        if align_corners:
            raise ValueError("Lanczos mode does not support align_corners=True")
        if not antialias:
            raise ValueError("Lanczos mode requires antialias=True")
    if antialias:
        return getattr(_aten, f"_upsample_{mode}2d_aa").vec(input, output_size, align_corners,
                                                            scale_factors)
    if mode == "area":
        return {1: adaptive_avg_pool1d, 2: adaptive_avg_pool2d,
                3: adaptive_avg_pool3d}[dim](input, output_size)
    op = _INTERP_OPS.get((mode, dim))
    if op is None:
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got "
                                  f"{input.dim()}D) for the modes: nearest | linear | bilinear | "
                                  f"bicubic | trilinear | lanczos | area | nearest-exact (got "
                                  f"{mode})")
    # the bindings, as PyTorch calls them: a size or scale of another type is their TypeError
    vec = getattr(ember._C._nn, op)
    if mode in _ALIGNED:
        return vec(input, output_size, align_corners, scale_factors)
    return vec(input, output_size, scale_factors)


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` "
                  "instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# ---------------------------------------------------------------------------------------------
# Padding, folding, pixel shuffle

def pad(input, pad, mode="constant", value=None):
    return ember._C._nn.pad(input, pad, mode, value)


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    return ember._C._nn.im2col(input, _pair(kernel_size), _pair(dilation), _pair(padding),
                               _pair(stride))


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    return ember._C._nn.col2im(input, _pair(output_size), _pair(kernel_size), _pair(dilation),
                               _pair(padding), _pair(stride))


pixel_shuffle = ember.pixel_shuffle
pixel_unshuffle = ember.pixel_unshuffle


# ---------------------------------------------------------------------------------------------
# Spatial transformers: grid_sample, affine_grid

GRID_SAMPLE_INTERPOLATION_MODES = {"bilinear": 0, "nearest": 1, "bicubic": 2}
GRID_SAMPLE_PADDING_MODES = {"zeros": 0, "border": 1, "reflection": 2}
_ALIGN_WARNING = ("Default grid_sample and affine_grid behavior has changed to "
                  "align_corners=False since 1.3.0. Please specify align_corners=True if the old "
                  "behavior is desired. See the documentation of grid_sample for details.")


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    if mode not in GRID_SAMPLE_INTERPOLATION_MODES:
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' "
                         f"or 'bicubic', but got: '{mode}'")
    if padding_mode not in GRID_SAMPLE_PADDING_MODES:
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', "
                         f"'border', or 'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    return _aten.grid_sampler.default(input, grid, GRID_SAMPLE_INTERPOLATION_MODES[mode],
                                      GRID_SAMPLE_PADDING_MODES[padding_mode], align_corners)


def affine_grid(theta, size, align_corners=None):
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    if len(size) == 4:
        if theta.dim() != 3 or theta.shape[-2] != 2 or theta.shape[-1] != 3:
            raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size "
                             f"{size}. Got {theta.shape}.")
        spatial_size = size[-2:]
    elif len(size) == 5:
        if theta.dim() != 3 or theta.shape[-2] != 3 or theta.shape[-1] != 4:
            raise ValueError(f"Expected a batch of 3D affine matrices of shape Nx3x4 for size "
                             f"{size}. Got {theta.shape}.")
        spatial_size = size[-3:]
    else:
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D "
                                  f"affine transforms, respectively. Got size {size}.")
    if align_corners and min(spatial_size) == 1:
        warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size grids "
                      "when align_corners=True. This is not an intended use case of affine_grid. "
                      "See the documentation of affine_grid for details.", stacklevel=2)
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    return _aten.affine_grid_generator.default(theta, list(size), align_corners)
