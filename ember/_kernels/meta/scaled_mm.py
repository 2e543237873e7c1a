"""Meta kernels of _scaled_mm (and .out): the CPU kernels' checks, then shape and dtype."""
from ..._core.device import META
from ..._core.tensor_impl import empty_tensor
from ..generic import resize_output
from ..rules.scaled_mm import check_scaled_mm


def meta_scaled_mm(self, mat2, scale_a, scale_b, bias=None, scale_result=None, out_dtype=None,
                   use_fast_accum=False):
    _, shape, dt = check_scaled_mm(self, mat2, scale_a, scale_b, bias, scale_result, out_dtype)
    return empty_tensor(shape, dt, META)


def meta_scaled_mm_out(self, mat2, scale_a, scale_b, bias=None, scale_result=None,
                       out_dtype=None, use_fast_accum=False, out=None):
    _, shape, _ = check_scaled_mm(self, mat2, scale_a, scale_b, bias, scale_result, out_dtype,
                                  out)
    resize_output("_scaled_mm", out, shape)
    return out
