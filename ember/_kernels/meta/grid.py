"""Meta kernels of the grid sampler and antialiased upsampling ops: the CPU kernels' checks and
shape rules (ember/_kernels/cpu/grid.py), no data."""
from ..._core.device import META
from ..._core.tensor_impl import empty_tensor
from ..rules import grid as _g
from ..registration import register



def _grid_sampler(k):
    def kernel(input, grid, interpolation_mode, padding_mode, align_corners):
        shape = _g.check_grid_sampler(k, input, grid, interpolation_mode, padding_mode)
        return empty_tensor(shape, input._dtype, META)
    return kernel


def _grid_sampler_backward(k):
    def kernel(grad_output, input, grid, interpolation_mode, padding_mode, align_corners,
               output_mask):
        _g.check_grid_sampler(k, input, grid, interpolation_mode, padding_mode)
        return (empty_tensor(input._size, input._dtype, META) if output_mask[0] else None,
                empty_tensor(grid._size, grid._dtype, META))
    return kernel


def _upsample_aa(name):
    def kernel(self, output_size, align_corners, scales_h=None, scales_w=None):
        shape = _g.check_upsample_aa(name, self._size, output_size, self._dtype)
        return empty_tensor(shape, self._dtype, META)
    return kernel


def _upsample_aa_backward(name):
    def kernel(grad_output, output_size, input_size, align_corners, scales_h=None,
               scales_w=None):
        _g.check_upsample_aa(name, input_size, output_size, grad_output._dtype, True)
        return empty_tensor(tuple(input_size), grad_output._dtype, META)
    return kernel


for _k in (2, 3):
    register(f"grid_sampler_{_k}d", "Meta", _grid_sampler(_k))
    register(f"grid_sampler_{_k}d_backward", "Meta", _grid_sampler_backward(_k))
for _n in _g._AA:
    register(_n, "Meta", _upsample_aa(_n))
    register(_n + "_backward", "Meta", _upsample_aa_backward(_n))
