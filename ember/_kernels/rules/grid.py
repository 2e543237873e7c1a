"""Rules of the grid sampler and the antialiased upsampling ops, for every backend: argument checks
and result shapes and dtypes, with PyTorch's errors. The CPU kernels (``cpu/grid.py``) and the
Meta kernels (``meta/grid.py``) call them; this module imports no backend."""
import numpy as np

from ..._core import dtype as D
from .resample import check_upsample


_AA = ["_upsample_bilinear2d_aa", "_upsample_bicubic2d_aa", "_upsample_lanczos2d_aa"]


BILINEAR, NEAREST, BICUBIC = 0, 1, 2       # F.grid_sample's mode enum


ZEROS, BORDER, REFLECTION = 0, 1, 2        # F.grid_sample's padding_mode enum


def _shape_str(size):
    return "[" + ", ".join(map(str, size)) + "]"


def check_grid_sampler(k, input, grid, interpolation_mode, padding_mode):
    """ATen's check_grid_sampler_common + check_grid_sampler_{2,3}d; returns the output shape."""
    isz, gsz = tuple(input._size), tuple(grid._size)
    if input._device != grid._device:
        raise RuntimeError(f"grid_sampler(): expected input and grid to be on same device, but "
                           f"input is on {input._device} and grid is on {grid._device}")
    if isz[0] != gsz[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, "
                           f"but got input with sizes {_shape_str(isz)} and grid with sizes "
                           f"{_shape_str(gsz)}")
    if gsz[-1] != len(isz) - 2:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {len(isz) - 2} in last "
                           f"dimension, but got grid with sizes {_shape_str(gsz)}")
    for i in range(2, len(isz)):
        if isz[i] == 0:
            raise RuntimeError(f"grid_sampler(): expected input to have non-empty spatial "
                               f"dimensions, but input has sizes {_shape_str(isz)} with dimension "
                               f"{i} being empty")
    if len(isz) != k + 2 or len(gsz) != k + 2:
        raise RuntimeError(f"grid_sampler(): expected {k + 2}D input and grid with same number of "
                           f"dimensions, but got input with sizes {_shape_str(isz)} and grid with "
                           f"sizes {_shape_str(gsz)}")
    if k == 3 and interpolation_mode == BICUBIC:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    if interpolation_mode not in (BILINEAR, NEAREST, BICUBIC):
        raise RuntimeError(f"grid_sampler(): unknown interpolation_mode {interpolation_mode}")
    if padding_mode not in (ZEROS, BORDER, REFLECTION):
        raise RuntimeError(f"grid_sampler(): unknown padding_mode {padding_mode}")
    if not input._dtype.is_floating_point or input._dtype.is_complex:
        kernel = "grid_sampler_2d_cpu_kernel_impl" if k == 2 else "grid_sampler3d_cpu"
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{input._dtype._short}'")
    if grid._dtype is not input._dtype:
        raise RuntimeError(f"expected scalar type {input._dtype._short} but found "
                           f"{grid._dtype._short}")
    return (isz[0], isz[1], *gsz[1:-1])


def _triangle(x):
    x = np.abs(x)
    return np.where(x < 1, 1 - x, 0)


def _keys_cubic(x, a=-0.5):
    """PIL's bicubic filter (a = -0.5, unlike the -0.75 of the non-antialiased op)."""
    x = np.abs(x)
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    far = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return np.where(x < 1, near, np.where(x < 2, far, 0))


def _lanczos(x):
    """PIL's Lanczos-3 filter: sinc(x) sinc(x / 3) on [-3, 3)."""
    return np.where((x >= -3) & (x < 3), np.sinc(x) * np.sinc(x / 3), 0)


# op -> (filter, filter support in input pixels at unit scale, plain op sharing its shape rules)
_FILTERS = {"_upsample_bilinear2d_aa": (_triangle, 2, "upsample_bilinear2d"),
            "_upsample_bicubic2d_aa": (_keys_cubic, 4, "upsample_bicubic2d"),
            "_upsample_lanczos2d_aa": (_lanczos, 6, "upsample_bicubic2d")}


def check_upsample_aa(name, input_size, output_size, dtype, backward=False):
    # the shape rules are the plain op's; the dtypes differ (uint8 forward only, no half types)
    shape = check_upsample(_FILTERS[name][2], tuple(input_size), output_size, D.float32)
    if not (dtype in (D.float32, D.float64) or (dtype is D.uint8 and not backward)):
        kernel = (name[1:] + "_backward_cpu") if backward else "compute_index_ranges_weights"
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{dtype._short}'")
    return shape
