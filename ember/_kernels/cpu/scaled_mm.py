"""CPU kernels of _scaled_mm and _scaled_mm_v2 (and .out): ATen's emulated float8 matmul on
NumPy, computed in float32 (scaled operands, matmul, bias, then 1 / scale_result for a float8
e4m3fn/e5m2 ``out_dtype``) and converted to the result dtype with c10's float8 rounding."""
import numpy as np

from ..._core import dtype as D
from ..._core import float8 as _float8
from ..generic import copy_into, resize_output
from ..rules.scaled_mm import TENSORWISE, check_scaled_mm, check_scaled_mm_v2
from ._util import nd, wrap


def _compute(mat_a, mat_b, scale_a, scale_b, bias, scale_result, out_dtype, impl, result_dtype):
    """The (M, N) result array of dtype ``result_dtype``."""
    def scale(x):
        s = nd(x).astype(np.float32)
        return s.reshape(()) if impl == TENSORWISE else s

    with np.errstate(all="ignore"):
        a = nd(mat_a).astype(np.float32) * scale(scale_a)
        b = nd(mat_b).astype(np.float32) * scale(scale_b)
        r = np.matmul(a, b)
        if bias is not None:  # ATen's add_ into the float32 product (in the common dtype)
            r = (r + nd(bias)).astype(np.float32) if bias._dtype is not D.float32 else r + nd(bias)
        # the output scale applies only where out_dtype names e4m3fn/e5m2 (ATen reads the
        # optional out_dtype with a bfloat16 default here)
        if out_dtype in (D.float8_e4m3fn, D.float8_e5m2):
            inv = np.float32(1) / (nd(scale_result).astype(np.float32).reshape(())
                                   if scale_result is not None else np.float32(1))
            r = r * inv
        if result_dtype.is_complex or result_dtype is D.bool_:
            return r.astype(result_dtype._np)
        return _float8.cast(r, result_dtype._np)


def _scaled_mm(self, mat2, scale_a, scale_b, bias=None, scale_result=None, out_dtype=None,
               use_fast_accum=False):
    impl, shape, dt = check_scaled_mm(self, mat2, scale_a, scale_b, bias, scale_result,
                                      out_dtype)
    r = _compute(self, mat2, scale_a, scale_b, bias, scale_result, out_dtype, impl, dt)
    return wrap(np.ascontiguousarray(r.reshape(shape)))


def _scaled_mm_out(self, mat2, scale_a, scale_b, bias=None, scale_result=None, out_dtype=None,
                   use_fast_accum=False, out=None):
    impl, shape, dt = check_scaled_mm(self, mat2, scale_a, scale_b, bias, scale_result,
                                      out_dtype, out)
    r = _compute(self, mat2, scale_a, scale_b, bias, scale_result, out_dtype, impl, dt)
    resize_output("_scaled_mm", out, shape)
    copy_into(out, wrap(np.ascontiguousarray(r.reshape(shape))))
    return out


def _scaled_mm_v2(self, mat2, scale_a, recipe_a, swizzle_a, scale_b, recipe_b, swizzle_b, bias,
                  out_dtype, contraction_dim=(), use_fast_accum=False):
    impl, shape, dt = check_scaled_mm_v2(self, mat2, scale_a, recipe_a, swizzle_a, scale_b,
                                         recipe_b, swizzle_b, bias, out_dtype, contraction_dim)
    return wrap(_compute_v2(self, mat2, scale_a, scale_b, bias, impl, shape, dt))


def _compute_v2(mat_a, mat_b, scale_a, scale_b, bias, impl, shape, dt):
    if impl is None:  # an empty product: M or N is 0, or K is 0 (zeros)
        return np.zeros(shape, dt._np)
    # ATen passes the result dtype as out_dtype and no scale_result
    r = _compute(mat_a, mat_b, scale_a[0], scale_b[0], bias, None, dt, impl, dt)
    return np.ascontiguousarray(r.reshape(shape))


def _scaled_mm_v2_out(self, mat2, scale_a, recipe_a, swizzle_a, scale_b, recipe_b, swizzle_b,
                      bias, out_dtype, contraction_dim=(), use_fast_accum=False, out=None):
    # out keeps its dtype, which out_dtype (when given) must name
    impl, shape, _ = check_scaled_mm_v2(self, mat2, scale_a, recipe_a, swizzle_a, scale_b,
                                        recipe_b, swizzle_b, bias, out_dtype, contraction_dim)
    if out_dtype is not None and out._dtype is not out_dtype:
        raise ValueError("out_dtype must match output matrix type")
    r = _compute_v2(self, mat2, scale_a, scale_b, bias, impl, shape, out._dtype)
    resize_output("_scaled_mm_v2", out, shape)
    copy_into(out, wrap(r))
    return out
