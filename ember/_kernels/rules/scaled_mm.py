"""Rules of aten ``_scaled_mm`` (and ``_scaled_mm_v2``) on CPU: ATen's emulated float8 matmul,
``(float(a) * scale_a) @ (float(b) * scale_b) (+ bias)``, with tensorwise (one float32 scale
each) or rowwise (``scale_a`` (M, 1), ``scale_b`` (1, N), float32, contiguous) scaling. Checks in
ATen's order and with its messages; the result is (M, N) in ``out_dtype`` (default: ``self``'s
dtype). Imports no backend."""
from ..._core import dtype as D
from ..._core import strides as _st

TENSORWISE, ROWWISE = "tensorwise", "rowwise"
# _scaled_mm_v2's recipe and swizzle codes (torch.nn.functional.ScalingType / SwizzleType)
_V2_TENSORWISE, _V2_ROWWISE, _NO_SWIZZLE = 0, 1, 0


def _fmt(seq):
    return "[" + ", ".join(map(str, seq)) + "]"


def _t(x):
    """Tensor.t()'s (size, stride) without making the view (it rejects more than 2 dims)."""
    n = len(x._size)
    if n > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {n}D")
    return tuple(reversed(x._size)), tuple(reversed(x._stride))


def _is_contiguous(size, stride):
    expected = 1
    for sz, st in zip(reversed(size), reversed(stride)):
        if sz != 1 and st != expected:
            return False
        expected *= sz
    return True


def _tensorwise(t_dtype, scale):
    return t_dtype in D.FLOAT8 and scale._dtype is D.float32 and _st.numel(scale._size) == 1


def _rowwise(t_dtype, t_size, scale_size, scale_stride, scale_dtype):
    if not t_size:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    return (t_dtype in D.FLOAT8 and scale_dtype is D.float32 and len(scale_size) == 2 and
            scale_size[0] == t_size[0] and scale_size[1] == 1 and
            _is_contiguous(scale_size, scale_stride))


def _size(x, d):
    """Tensor.size(d), with its IndexErrors."""
    if not x._size:
        raise IndexError(f"Dimension specified as {d} but tensor has no dimensions")
    return x._size[_st.wrap_dim(d, len(x._size))]


def invalid_scaling(mat_a, mat_b, scale_a, scale_b):
    msg = ("Invalid scaling configuration.\n"
           "- For TensorWise scaling, a and b should be float8, scales should be float and "
           "singletons.\n"
           "- For RowWise scaling, a and b should be float8, scales should be float, scale_a "
           f"should be ({_size(mat_a, 0)}, 1) and scale_b should be (1, {_size(mat_b, 1)}), and "
           "both should be contiguous.\n"
           f"Got mat_a.dtype()={mat_a._dtype._short}")
    if scale_a is not None:
        msg += (f", scale_a.dtype()={scale_a._dtype._short}, scale_a.size()={_fmt(scale_a._size)}"
                f", scale_a.stride()={_fmt(scale_a._stride)}")
    else:
        msg += ", scale_a=None"
    msg += f", mat_b.dtype()={mat_b._dtype._short}"
    if scale_b is not None:
        msg += (f", scale_b.dtype()={scale_b._dtype._short}, scale_b.size()={_fmt(scale_b._size)}"
                f" and scale_b.stride()={_fmt(scale_b._stride)}")
    else:
        msg += " and scale_b=None"
    return ValueError(msg)


def joint_scaling(mat_a, mat_b, scale_a, scale_b):
    """ATen's get_joint_scaling: tensorwise/tensorwise, else rowwise/rowwise, else ValueError.
    (b and its scale are judged transposed, as ATen does, so b's rows are its columns.)"""
    if _tensorwise(mat_a._dtype, scale_a):
        _t(mat_b)
        _t(scale_b)
        if _tensorwise(mat_b._dtype, scale_b):
            return TENSORWISE
    if _rowwise(mat_a._dtype, mat_a._size, scale_a._size, scale_a._stride, scale_a._dtype):
        b_size, _ = _t(mat_b)
        sb_size, sb_stride = _t(scale_b)
        if _rowwise(mat_b._dtype, b_size, sb_size, sb_stride, scale_b._dtype):
            return ROWWISE
    raise invalid_scaling(mat_a, mat_b, scale_a, scale_b)


def _broadcast(a, b):
    """The broadcast shape, mismatches reported from the last dim (TensorIterator's order)."""
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)
    for i in reversed(range(n)):
        if a[i] != b[i] and a[i] != 1 and b[i] != 1:
            raise RuntimeError(f"The size of tensor a ({a[i]}) must match the size of tensor b "
                               f"({b[i]}) at non-singleton dimension {i}")
    return tuple(max(x, y) if min(x, y) else 0 for x, y in zip(a, b))


def check_emulated(mat_a, mat_b, scale_a, scale_b, bias, scale_result, impl):
    """_scaled_mm_out_cpu_emulated's checks; returns the result shape (M, N)."""
    if len(mat_a._size) != 2:
        raise RuntimeError("mat1 must be a matrix")
    if len(mat_b._size) != 2:
        raise RuntimeError("mat2 must be a matrix")
    (m, k), (k2, n) = mat_a._size, mat_b._size
    if k != k2:
        raise RuntimeError(f"mat_a and mat_b shapes cannot be multiplied ({m}x{k} and {k2}x{n})")
    if impl == ROWWISE:
        for name, s in (("scale_a", scale_a), ("scale_b", scale_b)):
            if s._stride[1] != 1:
                raise ValueError(f"expected {name}.stride(1) to be 1, but got {s._stride[1]}")
    if scale_result is not None and (_st.numel(scale_result._size) != 1 or
                                     scale_result._dtype is not D.float32):
        raise RuntimeError("scale_result must be a float scalar")
    if bias is not None and _st.numel(bias._size) != n:
        raise RuntimeError(f"Bias must be size {n} but got {_st.numel(bias._size)}")
    if bias is not None:  # ATen adds it in place into the (M, N) float32 product
        shape = _broadcast((m, n), bias._size)
        if shape != (m, n):
            raise RuntimeError(f"output with shape {_fmt((m, n))} doesn't match the broadcast "
                               f"shape {_fmt(shape)}")
    return (m, n)


def check_scaled_mm(mat_a, mat_b, scale_a, scale_b, bias, scale_result, out_dtype, out=None):
    """All of _scaled_mm's checks: (scaling kind, result shape, result dtype)."""
    result_dtype = out._dtype if out is not None else \
        (out_dtype if out_dtype is not None else mat_a._dtype)
    if out is not None and out_dtype is not None and out_dtype is not out._dtype:
        raise ValueError("out_dtype must match output matrix type")
    impl = joint_scaling(mat_a, mat_b, scale_a, scale_b)
    shape = check_emulated(mat_a, mat_b, scale_a, scale_b, bias, scale_result, impl)
    return impl, shape, result_dtype


# ---------------------------------------------------------------------------------------------
# _scaled_mm_v2: scales, recipes (ScalingType codes) and swizzles (SwizzleType codes) as lists;
# on CPU only a single tensorwise or rowwise float32 scale per operand and no swizzle.

def check_scaled_mm_v2_meta(mat_a, mat_b, out_dtype, contraction_dim):
    """The structured op's meta checks (ValueErrors); returns (M, N) and the result dtype."""
    if len(mat_a._size) != 2:
        raise ValueError("mat_a must be a matrix")
    if len(mat_b._size) != 2:
        raise ValueError("mat_b must be a matrix")
    if contraction_dim and len(contraction_dim) != 2:
        raise ValueError("contraction_dim must have exactly 2 elements")
    ca, cb = contraction_dim if contraction_dim else (1, 0)
    ka, kb = _size(mat_a, ca), _size(mat_b, cb)
    if ka != kb:
        suffix = "" if (ca, cb) == (1, 0) else \
            f" with contraction dims mat_a: {ca}, mat_b: {cb}"
        raise ValueError(f"mat_a and mat_b shapes cannot be multiplied "
                         f"({mat_a._size[0]}x{mat_a._size[1]} and "
                         f"{mat_b._size[0]}x{mat_b._size[1]}){suffix}")
    return (mat_a._size[0], mat_b._size[1]), \
        (out_dtype if out_dtype is not None else mat_a._dtype)


def _recipe(kind, mat_a, scale_a, recipe_a, mat_b, scale_b, recipe_b):
    """ATen's check_tensorwise_recipe / check_rowwise_recipe."""
    return (mat_a._dtype in D.FLOAT8 and mat_b._dtype in D.FLOAT8 and
            len(scale_a) == len(recipe_a) == len(scale_b) == len(recipe_b) == 1 and
            int(recipe_a[0]) == kind and scale_a[0]._dtype is D.float32 and
            int(recipe_b[0]) == kind and scale_b[0]._dtype is D.float32)


def _check_rowwise_scales(mat_a, mat_b, scale_a, scale_b):
    m, n = mat_a._size[0], mat_b._size[1]
    if _size(scale_a, 0) != m or _size(scale_a, 1) != 1:
        raise ValueError(f"scale_a must have shape [{m}, 1], got [{_fmt(scale_a._size)}]")
    if _st.numel(scale_a._size) != m:
        raise ValueError(f"scale_a must have {m} Float elements, got "
                         f"{_st.numel(scale_a._size)}")
    if _st.numel(scale_b._size) != n:
        raise ValueError(f"scale_b must have {n} Float elements, got "
                         f"{_st.numel(scale_b._size)}")
    for name, s in (("scale_a", scale_a), ("scale_b", scale_b)):
        stride = s._stride[_st.wrap_dim(1, len(s._size))]
        if stride != 1:
            raise ValueError(f"expected {name}.stride(1) to be 1, but got {stride}")


def check_scaled_mm_v2(mat_a, mat_b, scale_a, recipe_a, swizzle_a, scale_b, recipe_b, swizzle_b,
                       bias, out_dtype, contraction_dim):
    """All of _scaled_mm_v2's CPU checks: (scaling kind or None for an empty product, result
    shape, result dtype)."""
    shape, dt = check_scaled_mm_v2_meta(mat_a, mat_b, out_dtype, contraction_dim)
    if 0 in mat_a._size or mat_b._size[1] == 0:  # ATen returns before the other checks
        return None, shape, dt
    if bias is not None and _st.numel(bias._size) != shape[1]:
        raise ValueError(f"Bias must be size {shape[1]} but got {_st.numel(bias._size)}")
    if bias is not None and bias._dtype not in (D.float32, D.bfloat16, D.float16):
        raise ValueError(f"Bias must be Float32 or BFloat16 or Half, but got {bias._dtype._short}")
    if swizzle_a and swizzle_b and (int(swizzle_a[0]) != _NO_SWIZZLE or
                                    int(swizzle_b[0]) != _NO_SWIZZLE):
        raise ValueError("CPU does not support swizzle.")
    if _recipe(_V2_TENSORWISE, mat_a, scale_a, recipe_a, mat_b, scale_b, recipe_b):
        impl = TENSORWISE
        for name, s in (("scale_a", scale_a[0]), ("scale_b", scale_b[0])):
            if _st.numel(s._size) != 1:
                raise ValueError(f"{name} must have 1 Float element")
    elif _recipe(_V2_ROWWISE, mat_a, scale_a, recipe_a, mat_b, scale_b, recipe_b):
        impl = ROWWISE
        _check_rowwise_scales(mat_a, mat_b, scale_a[0], scale_b[0])
    else:
        raise invalid_scaling(mat_a, mat_b, scale_a[0] if scale_a else None,
                              scale_b[0] if scale_b else None)
    check_emulated(mat_a, mat_b, scale_a[0], scale_b[0], bias, None, impl)
    return impl, shape, dt
