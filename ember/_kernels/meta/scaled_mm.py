"""Meta kernels of _scaled_mm and _scaled_mm_v2 (and .out): shape and dtype after the checks
that need no values (all of _scaled_mm's; _scaled_mm_v2's structured meta checks)."""
from ..._core.device import META
from ..._core.tensor_impl import empty_tensor
from ..generic import resize_output
from ..rules.scaled_mm import check_scaled_mm, check_scaled_mm_v2_meta


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


def meta_scaled_mm_v2(self, mat2, scale_a, recipe_a, swizzle_a, scale_b, recipe_b, swizzle_b,
                      bias, out_dtype, contraction_dim=(), use_fast_accum=False):
    shape, dt = check_scaled_mm_v2_meta(self, mat2, out_dtype, contraction_dim)
    return empty_tensor(shape, dt, META)


def meta_scaled_mm_v2_out(self, mat2, scale_a, recipe_a, swizzle_a, scale_b, recipe_b,
                          swizzle_b, bias, out_dtype, contraction_dim=(), use_fast_accum=False,
                          out=None):
    shape, _ = check_scaled_mm_v2_meta(self, mat2, out_dtype, contraction_dim)
    if out_dtype is not None and out._dtype is not out_dtype:
        raise ValueError("out_dtype must match output matrix type")
    resize_output("_scaled_mm_v2", out, shape)
    return out
