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
        raise IndexError("dimension specified as 0 but tensor has no dimensions")
    return (t_dtype in D.FLOAT8 and scale_dtype is D.float32 and len(scale_size) == 2 and
            scale_size[0] == t_size[0] and scale_size[1] == 1 and
            _is_contiguous(scale_size, scale_stride))


def _size(x, d):
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
