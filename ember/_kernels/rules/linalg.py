"""Rules of the linear-algebra ops, for every backend: argument checks and result shapes and
dtypes, with PyTorch's errors. The CPU kernels (``cpu/linalg.py``) and the Meta kernels
(``meta/linalg.py``) call them; this module imports no backend."""
from ..._core import dtype as D
from ..._core import strides as _st
from .reduction import check_no_narrowing


def _x(shape):
    return "x".join(map(str, shape))


def _no_bool(dt, kernel="addmm_impl_cpu_"):
    """ATen's CPU products have no bool kernel, nor a ComplexHalf one (named ``kernel``)."""
    if dt is D.bool_ or dt is D.complex32:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{dt._short}'")


def _nothing_to_multiply(dt, *sizes):
    """Whether a ComplexHalf product returns before ATen's dtype dispatch: its result is empty,
    or the summed dim is (addmm_impl_cpu_, bmm/baddbmm and addmv zero the result or scale
    self by beta first). A size of 0 among ``sizes`` (the result's dims and the summed one)
    says so."""
    return dt is D.complex32 and 0 in sizes


def check_mm(self, mat2, first="self"):
    """mm's checks; returns the result shape."""
    if len(self._size) != 2:
        raise RuntimeError(f"{first} must be a matrix")
    if len(mat2._size) != 2:
        raise RuntimeError("mat2 must be a matrix")
    if self._size[1] != mat2._size[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({_x(self._size)} and "
                           f"{_x(mat2._size)})")
    if self._dtype is not mat2._dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                           f"{self._dtype._cpp} != {mat2._dtype._cpp}")
    # (ATen's mm returns a product with nothing to multiply before its dtype dispatch)
    if not (self._dtype is D.bool_ and 0 in (self._size[0], self._size[1], mat2._size[1]) and
            first == "self") and \
            not _nothing_to_multiply(self._dtype, self._size[0], self._size[1], mat2._size[1]):
        _no_bool(self._dtype)
    return (self._size[0], mat2._size[1])


def check_bmm(self, mat2, kernel="bmm"):
    """bmm's checks (``kernel``: the dtype dispatch that follows them, None for a caller that
    checks more first); returns the result shape."""
    if len(self._size) != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if len(mat2._size) != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    b, n, m = self._size
    if (mat2._size[0], mat2._size[1]) != (b, m):
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{b}, {m}] but got: [{mat2._size[0]}, {mat2._size[1]}].")
    if self._dtype is not mat2._dtype:
        raise RuntimeError(f"expected scalar type {self._dtype._short} but found "
                           f"{mat2._dtype._short}")
    if kernel and not _nothing_to_multiply(self._dtype, b, n, m, mat2._size[2]):
        _no_bool(self._dtype, bmm_kernel(kernel, self, mat2))
    return (b, n, mat2._size[2])


def bmm_kernel(kernel, batch1, batch2):
    """ATen's CPU bmm/baddbmm loop takes small products (under 400 multiply-adds a matrix, its
    kernel named ``kernel``); larger ones go to its batched GEMM, which dispatches ComplexHalf
    batches itself and the rest matrix by matrix through addmm."""
    b, n, m = batch1._size
    if m * n * batch2._size[2] < 400:
        return kernel
    return "baddbmm_with_gemm" if batch1._dtype is D.complex32 and b > 1 else "addmm_impl_cpu_"


def check_addmm(self, mat1, mat2):
    shape = check_mm(mat1, mat2, "mat1")
    if self._dtype is not mat2._dtype:
        raise RuntimeError(f"self and mat2 must have the same dtype, but got {self._dtype._short} "
                           f"and {mat2._dtype._short}")
    _check_expandable(self._size, shape)
    return shape


def _check_expandable(size, target):
    """``self`` of addmm broadcasts to the product's shape (PyTorch's expand error)."""
    if len(size) > len(target):
        raise RuntimeError(f"The expanded size of the tensor ({target[-1]}) must match the "
                           f"existing size ({size[-1]}) at non-singleton dimension 1.")
    off = len(target) - len(size)
    for i, s in enumerate(size):
        if s != 1 and s != target[off + i]:
            raise RuntimeError(f"The expanded size of the tensor ({target[off + i]}) must match "
                               f"the existing size ({s}) at non-singleton dimension {off + i}.  "
                               f"Target sizes: [{', '.join(map(str, target))}].  Tensor sizes: "
                               f"[{', '.join(map(str, size))}]")


def check_mv(self, vec):
    if len(self._size) != 2 or len(vec._size) != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got 1, {len(self._size)}, "
                           f"{len(vec._size)}")
    if self._size[1] != vec._size[0]:
        raise RuntimeError(f"size mismatch, got input ({self._size[0]}), mat ({_x(self._size)}), "
                           f"vec ({vec._size[0]})")
    if self._dtype is not vec._dtype:
        v, m = vec._dtype._short, self._dtype._short
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got {v}, {m}, "
                           f"and {v}")
    if not _nothing_to_multiply(self._dtype, *self._size):
        _no_bool(self._dtype, "addmv_impl_cpu")
    return (self._size[0],)


def check_dot(self, tensor):
    if len(self._size) != 1 or len(tensor._size) != 1:
        raise RuntimeError(f"1D tensors expected, but got {len(self._size)}D and "
                           f"{len(tensor._size)}D tensors")
    n, m = self._size[0], tensor._size[0]
    if n != m:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{n}] and src [{m}] to have "
                           f"the same number of elements, but got {n} and {m} elements "
                           f"respectively")
    if self._dtype is not tensor._dtype:
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found "
                           f"{self._dtype._short} and {tensor._dtype._short}")
    _no_bool(self._dtype, "dot")
    if self._dtype in D.FLOAT8:  # (mm and matmul of float8 matrices do have a kernel)
        raise NotImplementedError(f"\"dot\" not implemented for '{self._dtype._short}'")
    return ()


def check_baddbmm(self, batch1, batch2):
    shape = check_bmm(batch1, batch2, None)
    if self._dtype is not batch1._dtype:
        raise RuntimeError(f"Input dtypes must be the same, got: input {self._dtype._cpp}, "
                           f"batch1: {batch1._dtype._cpp}, batch2: {batch2._dtype._cpp}")
    _check_expandable(self._size, shape)
    if not _nothing_to_multiply(batch1._dtype, *shape, batch1._size[2]):
        _no_bool(self._dtype, bmm_kernel("baddbmm", batch1, batch2))
    return shape


def check_addbmm(self, batch1, batch2):
    b, n, p = check_baddbmm_batches(batch1, batch2)
    if self._dtype is not batch1._dtype:
        # (ATen's addbmm is addmm_ over the batches: addmm's wording)
        raise RuntimeError(f"self and mat2 must have the same dtype, but got {self._dtype._short} "
                           f"and {batch2._dtype._short}")
    _check_expandable(self._size, (n, p))
    # (addmm_ over the batches: none, or each with nothing to multiply, dispatches nothing)
    if not _nothing_to_multiply(batch1._dtype, b, n, p, batch1._size[2]):
        _no_bool(self._dtype)
    return (n, p)


def check_baddbmm_batches(batch1, batch2):
    return check_bmm(batch1, batch2, None)


_GROUPED_MM_DTYPES = (D.float32, D.bfloat16, D.float16)


def grouped_mm_is_transposed(sizes, strides):
    """Whether a grouped-product operand of ``sizes``/``strides`` is column-major in its last
    two dims (its gradient is then computed transposed, to come out column-major too)."""
    end = len(sizes) - 1
    return strides[end - 1] == 1 and strides[end] >= max(1, sizes[end - 1])


def _check_grouped_mm_strides(mat):
    """ATen's check_valid_strides_and_return_transposed: the last two dims are row- or
    column-major with the leading stride a multiple of 16 bytes (the grouped GEMM kernels' TMA
    alignment, which the CPU fallback checks too)."""
    size, stride, end = mat._size, mat._stride, len(mat._size) - 1
    if grouped_mm_is_transposed(size, stride):
        lead = stride[end]
    elif stride[end] == 1 and stride[end - 1] >= max(1, size[end]):
        lead = stride[end - 1]
    else:
        raise RuntimeError(f"Invalid strides/sizes, got {_fmt(stride)} for strides and "
                           f"{_fmt(size)} for sizes")
    if lead % (16 // mat._dtype.itemsize):
        raise RuntimeError("strides should be multiple of 16 bytes")


def check_grouped_mm(mat_a, mat_b, offs=None, bias=None, out_dtype=None):
    """_grouped_mm's checks in ATen's order (_grouped_mm_validate_inputs, the output dtype, the
    batch sizes of create_grouped_gemm_output_tensor, then mm_out's / bmm_out's dtype check);
    returns the result's size, stride and dtype. The result's last dim is padded to 16 bytes,
    as ATen allocates it (outside ROCm)."""
    for name, m in (("mat_a", mat_a), ("mat_b", mat_b)):
        if m._dtype not in _GROUPED_MM_DTYPES:
            raise RuntimeError(f"Expected {name} to be Float32, BFloat16 or Float16 matrix, got "
                               f"{m._dtype._short}")
    for name, m in (("mat_a", mat_a), ("mat_b", mat_b)):
        if len(m._size) not in (2, 3):
            raise RuntimeError(f"{name} has to be 2 or 3d")
    a_2d, b_2d = len(mat_a._size) == 2, len(mat_b._size) == 2
    if (not a_2d or not b_2d) and mat_a._size[-1] != mat_b._size[-2]:
        raise RuntimeError("contraction dimension of mat_a and mat_b must match")
    _check_grouped_mm_strides(mat_a)
    _check_grouped_mm_strides(mat_b)
    if (offs is not None) != (a_2d or b_2d):
        raise RuntimeError("Have to provide offsets if there is a 2d matrix, or no offset if "
                           "both matrices are 3d")
    if offs is not None:
        if len(offs._size) != 1:
            raise RuntimeError("offs has to be 1D")
        if offs._dtype is not D.int32:
            raise RuntimeError("Offsets have to be int32")
    if bias is not None:
        raise RuntimeError("Bias not supported yet")
    dtype = out_dtype if out_dtype is not None else mat_a._dtype
    if dtype is not mat_a._dtype:
        raise RuntimeError("Grouped gemm output dtype must match `mat_a` dtype")
    if a_2d and b_2d:
        size = (offs._size[0], mat_a._size[0], mat_b._size[1])
    elif a_2d or b_2d:
        if offs._size[0] != (mat_b if a_2d else mat_a)._size[0]:
            raise RuntimeError("matrix batch sizes have to match")
        size = (mat_a._size[0], mat_b._size[-1]) if a_2d else (mat_a._size[1], mat_b._size[1])
    else:
        if mat_a._size[0] != mat_b._size[0]:
            raise RuntimeError("batched dimension has to match")
        size = (mat_a._size[0], mat_a._size[1], mat_b._size[-1])
    # each group is one mm_out (bmm_out for 3d x 3d) into the result, whose dtype is mat_a's
    if mat_a._dtype is not mat_b._dtype:
        if not (a_2d or b_2d):
            raise RuntimeError(f"Expected out tensor to have dtype {mat_b._dtype._cpp}, but got "
                               f"{mat_a._dtype._cpp} instead")
        if offs._size[0]:
            raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                               f"{mat_a._dtype._cpp} != {mat_b._dtype._cpp}")
    alignment = 16 // dtype.itemsize
    padded = -(-size[-1] // alignment) * alignment
    stride = (padded, 1) if len(size) == 2 else (size[1] * padded, padded, 1)
    return size, stride, dtype


def check_addmv(self, mat, vec):
    shape = check_mv(mat, vec)
    if self._dtype is not mat._dtype:
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got "
                           f"{self._dtype._short}, {mat._dtype._short}, and {vec._dtype._short}")
    if len(self._size) > 1 or (self._size and self._size[0] not in (1, shape[0])):
        raise RuntimeError(f"size mismatch, got input ({self._size[0] if self._size else 1}), "
                           f"mat ({_x(mat._size)}), vec ({vec._size[0]})")
    return shape


def check_vdot(self, other):
    if len(self._size) != 1 or len(other._size) != 1:
        raise RuntimeError(f"1D tensors expected, but got {len(self._size)}D and "
                           f"{len(other._size)}D tensors")
    if self._dtype is not other._dtype:
        raise RuntimeError(f"vdot : expected both vectors to have same dtype, but found "
                           f"{self._dtype._short} and {other._dtype._short}")
    if self._size[0] != other._size[0]:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{self._size[0]}] and src "
                           f"[{other._size[0]}] to have the same number of elements, but got "
                           f"{self._size[0]} and {other._size[0]} elements respectively")
    _no_bool(self._dtype, "dot" if self._dtype is D.bool_ else "vdot")
    return ()


def check_square(name, A, arg="A"):
    if A.dim() < 2:
        raise RuntimeError(f"{name}: The input tensor {arg} must have at least 2 dimensions.")
    if A._size[-1] != A._size[-2]:
        raise RuntimeError(f"{name}: {arg} must be batches of square matrices, but they are "
                           f"{A._size[-2]} by {A._size[-1]} matrices")


def check_float(name, A, arg="A", kernel=None, low_precision=False):
    """ATen's checkFloatingOrComplex, then its LAPACK kernel's dtype dispatch: a tensor neither
    floating nor complex is refused by ``name``; a low-precision floating one passes the check
    (and is computed where ``low_precision``) and is refused by the dispatch of ``kernel``
    (float, double and the complex types), or, for an op that disallows low precision
    (``kernel`` None), by ``name``."""
    dt = A._dtype
    if not (dt.is_floating_point or dt.is_complex):
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got "
                           f"{dt._short}")
    if dt.is_floating_point and dt not in (D.float32, D.float64) and not low_precision:
        if kernel is None:
            raise RuntimeError(f"{name}: Low precision dtypes not supported. Got {dt._short}")
        if _st.numel(A._size):  # (an empty input never reaches the kernel)
            raise NotImplementedError(f"\"{kernel}\" not implemented for '{dt._short}'")


def _check_matrix(name, A, kernel=None, low_precision=False):
    if A.dim() < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    check_float(name, A, kernel=kernel, low_precision=low_precision)


def check_eigh_dtype(A):
    """linalg.eigh checks no dtype itself: its kernel's dispatch does, for a non-empty input."""
    if _st.numel(A._size):
        check_lapack_dtype("linalg_eigh_cpu", A)


def check_eig_dtype(A):
    """linalg.eig's dtype checks: its complex result type first (none for a non-floating
    input), then its kernel's dispatch."""
    dt = A._dtype
    if not (dt.is_floating_point or dt.is_complex):
        raise RuntimeError(f"Unknown Complex ScalarType for {dt._short}")
    check_lapack_dtype("linalg_eig_out_cpu", A)


def check_lstsq_matrix_rank_dtype(t):
    """linalg.lstsq's and matrix_rank's dtype check (a LAPACK one, named for float and double)."""
    if t._dtype not in _LAPACK_DTYPES:
        raise RuntimeError("This function doesn't handle types other than float and double")


def check_pinv_dtype(A):
    if A._dtype not in _LAPACK_DTYPES or A.dim() < 2:
        raise RuntimeError(f"linalg.pinv({A._dtype._short}{{{_fmt(A._size)}}}): expected a tensor "
                           f"with 2 or more dimensions of float, double, cfloat or cdouble types")


_NORM_DTYPES = (D.float32, D.float64, D.float16, D.bfloat16)


def vector_norm_check(self, ord, dim, dtype):
    if self._dtype in D.FLOAT8:
        # a float8 input is floating here: only its CPU kernel is missing (rules/float8.py);
        # another dtype= does not promote with it
        if dtype is not None and dtype is not self._dtype:
            from ..._core.promotion import promote_types
            promote_types(self._dtype, dtype)
    elif not (self._dtype in _NORM_DTYPES or self._dtype.is_complex):
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as "
                           f"input. Got {self._dtype._short}")
    if dtype is not None:
        if not (dtype in _NORM_DTYPES or dtype.is_complex):
            raise RuntimeError(f"linalg.vector_norm: dtype should be floating point or complex, "
                               f"but got {dtype._short}")
        if dtype.is_complex != self._dtype.is_complex:
            kind = "complex for complex" if self._dtype.is_complex else "real for real"
            raise RuntimeError(f"linalg.vector_norm: dtype should be {kind} inputs, but got "
                               f"{dtype._short}")
        check_no_narrowing(self, dtype)
    nd_ = self.dim()
    dims = None if dim is None or (len(dim) == 0) else [_st.wrap_dim(d, nd_) for d in dim]
    if dims is not None and len(set(dims)) != len(dims):
        raise RuntimeError(f"dim {dims[0]} appears multiple times in the list of dims")
    if self.numel() == 0 and (ord < 0 or ord == float("inf")):
        red = range(nd_) if dims is None else dims
        if any(self._size[d] == 0 for d in red):
            raise RuntimeError(f"linalg.vector_norm cannot compute the {ord} norm on an empty "
                               f"tensor because the operation does not have an identity")
    out = (dtype or self._dtype)
    out = out.to_real() if out.is_complex else out
    return dims, out


def vector_norm_shape(self, dims, keepdim):
    nd_ = self.dim()
    red = set(range(nd_) if dims is None else dims)
    if keepdim:
        return tuple(1 if i in red else s for i, s in enumerate(self._size))
    return tuple(s for i, s in enumerate(self._size) if i not in red)


_LAPACK_DTYPES = (D.float32, D.float64, D.complex64, D.complex128)


def check_lapack_dtype(kernel, t):
    """PyTorch's AT_DISPATCH for the LAPACK kernels: float, double and the complex types."""
    if t._dtype not in _LAPACK_DTYPES:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{t._dtype._short}'")


def _fmt(shape):
    return "[" + ", ".join(map(str, shape)) + "]"


def _check_ge2(name, t):
    if t.dim() < 2:
        raise RuntimeError(f"{name}: Expected tensor with 2 or more dimensions. Got size: "
                           f"{_fmt(t._size)} instead")


def _square(name, A, arg="A"):
    if A._size[-1] != A._size[-2]:
        raise RuntimeError(f"{name}{': ' if name else ''}{arg} must be batches of square "
                           f"matrices, but they are {A._size[-2]} by {A._size[-1]} matrices")


def check_lu_factor(A, name="torch.lu_factor", pivot=True):
    _check_ge2(name, A)
    check_lapack_dtype("lu_cpu", A)
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")
    m, n = A._size[-2:]
    b = A._size[:-2]
    return (A._size, b + (min(m, n),), b)


def check_lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True):
    _check_ge2("torch.lu_unpack", LU_data)
    if LU_pivots._dtype is not D.int32:
        raise RuntimeError("torch.lu_unpack: LU_pivots is expected to be a contiguous tensor of "
                           "torch.int32 dtype.\nNote: this function is intended to be used with "
                           "the output produced by torch.linalg.lu_factor")
    m, n = LU_data._size[-2:]
    k = min(m, n)
    b = LU_data._size[:-2]
    if unpack_pivots and tuple(LU_pivots._size) != b + (k,):
        raise RuntimeError(f"torch.lu_unpack: Expected LU_pivots to have shape {_fmt(b + (k,))} "
                           f"but got {_fmt(LU_pivots._size)}")
    p = b + (m, m) if unpack_pivots else (0,)
    if unpack_data:
        return p, b + (m, k), b + (k, n)
    return p, (0,), (0,)


def check_linalg_lu(A, pivot=True):
    check_lu_factor(A, "linalg.lu", pivot)
    m, n = A._size[-2:]
    k = min(m, n)
    b = A._size[:-2]
    return b + (m, m), b + (m, k), b + (k, n)


def check_lu_solve(LU, pivots, B, left=True, adjoint=False):
    if LU.dim() < 2:
        raise RuntimeError("linalg.lu_solve: The input tensor LU must have at least 2 dimensions.")
    if B.dim() < 2:
        raise RuntimeError("linalg.lu_solve: The input tensor B must have at least 2 dimensions.")
    _square("torch.linalg.lu_solve", LU)
    n = LU._size[-1]
    if (B._size[-2] if left else B._size[-1]) != n:
        raise RuntimeError(f"linalg.lu_solve: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({_x(LU._size)} and "
                           f"{_x(B._size)})")
    if LU._dtype is not B._dtype:
        raise RuntimeError(f"linalg.lu_solve: Expected LU and B to have the same dtype, but found "
                           f"LU of type {LU._dtype._short} and B of type {B._dtype._short} "
                           f"instead")
    if pivots._dtype is not D.int32:
        raise RuntimeError("linalg.lu_solve: pivots should be a Tensor of scalar type torch.int32")
    if tuple(pivots._size[-1:]) != (n,) or pivots.dim() != LU.dim() - 1:
        raise RuntimeError("linalg.lu_solve: Number of pivots per batch should be same as the "
                           "dimension of the matrix")
    check_float("torch.linalg.lu_solve", LU, kernel="linalg.lu_solve_cpu")
    batch = _st.broadcast_shapes(LU._size[:-2], B._size[:-2])
    return batch + tuple(B._size[-2:])


def check_solve_triangular(A, B, upper, left=True, unitriangular=False):
    name = "linalg.solve_triangular"
    if A.dim() < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    if B.dim() < 2:
        raise RuntimeError(f"{name}: The input tensor B must have at least 2 dimensions.")
    _square(name, A)
    if (B._size[-2] if left else B._size[-1]) != A._size[-1]:
        raise RuntimeError(f"{name}: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({_x(A._size)} and {_x(B._size)})")
    # no dtype check: ATen copies B into a result of A's dtype
    check_lapack_dtype("triangular_solve_cpu", A)
    return _st.broadcast_shapes(A._size[:-2], B._size[:-2]) + tuple(B._size[-2:])


def check_linear_solve_args(self, A, name, kernel):
    """The checks PyTorch's linearSolveCheckInputs makes for triangular_solve/cholesky_solve."""
    if self._dtype is not A._dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type "
                           f"{self._dtype._short} and A of type {A._dtype._short} instead.")
    _square("", A)
    if A._size[-1] != self._size[-2]:
        raise RuntimeError(f"Incompatible matrix sizes for {name}: each A matrix is "
                           f"{A._size[-1]} by {A._size[-1]} but each b matrix is "
                           f"{self._size[-2]} by {self._size[-1]}")
    check_lapack_dtype(kernel, A)
    batch = _st.broadcast_shapes(self._size[:-2], A._size[:-2])
    return batch + tuple(self._size[-2:]), batch + tuple(A._size[-2:])


def check_triangular_solve(self, A):
    if self.dim() < 2:
        raise RuntimeError(f"torch.triangular_solve: Expected b to have at least 2 dimensions, "
                           f"but it has {self.dim()} dimensions instead")
    if A.dim() < 2:
        raise RuntimeError(f"torch.triangular_solve: Expected A to have at least 2 dimensions, "
                           f"but it has {A.dim()} dimensions instead")
    return check_linear_solve_args(self, A, "triangular_solve", "triangular_solve_cpu")


def check_cholesky_solve(self, input2):
    if self.dim() < 2:
        raise RuntimeError(f"b should have at least 2 dimensions, but has {self.dim()} "
                           f"dimensions instead")
    if input2.dim() < 2:
        raise RuntimeError(f"u should have at least 2 dimensions, but has {input2.dim()} "
                           f"dimensions instead")
    return check_linear_solve_args(self, input2, "cholesky_solve", "cholesky_solve_cpu")[0]


def check_cholesky_inverse(self, upper=False):
    if self.dim() < 2:
        raise RuntimeError("cholesky_inverse: The input tensor A must have at least 2 dimensions.")
    _square("cholesky_inverse", self)
    check_lapack_dtype("cholesky_inverse_out_cpu", self)
    return tuple(self._size)


def check_geqrf(self):
    if self.dim() < 2:
        raise RuntimeError("torch.geqrf: input must have at least 2 dimensions.")
    check_lapack_dtype("geqrf_cpu", self)
    m, n = self._size[-2:]
    return tuple(self._size), tuple(self._size[:-2]) + (min(m, n),)


def check_householder_product(input, tau):
    name = "torch.linalg.householder_product"
    if input.dim() < 2:
        raise RuntimeError(f"{name}: input must have at least 2 dimensions.")
    if input._size[-2] < input._size[-1]:
        raise RuntimeError(f"{name}: input.shape[-2] must be greater than or equal to "
                           f"input.shape[-1]")
    if tau.dim() and input._size[-1] < tau._size[-1]:
        raise RuntimeError(f"{name}: input.shape[-1] must be greater than or equal to "
                           f"tau.shape[-1]")
    if input.dim() - tau.dim() != 1:
        raise RuntimeError(f"{name}: Expected tau to have one dimension less than input, but got "
                           f"tau.ndim equal to {tau.dim()} and input.ndim is equal to "
                           f"{input.dim()}")
    if input.dim() > 2 and tuple(tau._size[:-1]) != tuple(input._size[:-2]):
        raise RuntimeError(f"{name}: Expected batch dimensions of tau to be equal to "
                           f"input.shape[:-2], but got {_fmt(tau._size[:-1])}")
    if tau._dtype is not input._dtype:
        raise RuntimeError(f"{name}: tau dtype {tau._dtype._short} does not match input dtype "
                           f"{input._dtype._short}")
    check_lapack_dtype("orgqr_cpu", input)
    return tuple(input._size)


def check_ormqr(self, input2, input3, left=True, transpose=False):
    name = "torch.ormqr"
    if self.dim() < 2:
        raise RuntimeError(f"{name}: input must have at least 2 dimensions.")
    if input3.dim() < 2:
        raise RuntimeError(f"{name}: other must have at least 2 dimensions.")
    left_size = -2 if left else -1
    if input3._size[left_size] != self._size[-2]:
        which = "other.shape[-2]" if left else "other.shape[-1]"
        raise RuntimeError(f"{name}: {which} must be equal to input.shape[-2]")
    if input2._size[-1:] != (min(input3._size[left_size], self._size[-1]),):
        raise RuntimeError(f"{name}: tau.shape[-1] must be equal to min(other.shape[{left_size}], "
                           f"input.shape[-1])")
    if self.dim() - input2.dim() != 1:
        raise RuntimeError(f"{name}: Expected tau to have one dimension less than input, but got "
                           f"tau.ndim equal to {input2.dim()} and input.ndim is equal to "
                           f"{self.dim()}")
    if self.dim() != input3.dim():
        raise RuntimeError(f"{name}: Expected other to have the same number of dimensions as "
                           f"input, but got other.ndim equal to {input3.dim()} and input.ndim is "
                           f"equal to {self.dim()}")
    if self.dim() > 2:
        if tuple(input2._size[:-1]) != tuple(self._size[:-2]):
            raise RuntimeError(f"{name}: Expected batch dimensions of tau to be equal to "
                               f"input.shape[:-2], but got {_fmt(input2._size[:-1])}")
        if tuple(input3._size[:-2]) != tuple(self._size[:-2]):
            raise RuntimeError(f"{name}: Expected batch dimensions of other to be equal to "
                               f"input.shape[:-2], but got {_fmt(input3._size[:-2])}")
    if input2._dtype is not self._dtype:
        raise RuntimeError(f"{name}: Expected input and tau to have the same dtype, but input has "
                           f"dtype{self._dtype._short} and tau has dtype {input2._dtype._short}")
    if input3._dtype is not self._dtype:
        raise RuntimeError(f"{name}: Expected input and other to have the same dtype, but input "
                           f"has dtype{self._dtype._short} and other has dtype "
                           f"{input3._dtype._short}")
    check_lapack_dtype("ormqr_cpu", self)
    return tuple(input3._size)


def check_matrix_exp(self):
    if self.dim() < 2:
        raise RuntimeError("linalg.matrix_exp: The input tensor A must have at least 2 "
                           "dimensions.")
    _square("linalg.matrix_exp", self)
    if not (self._dtype.is_floating_point or self._dtype.is_complex):
        raise RuntimeError(f"linalg.matrix_exp: Expected a floating point or complex tensor as "
                           f"input. Got {self._dtype._short}")
    return tuple(self._size)


def check_ldl_factor(self, hermitian=False):
    name = "torch.linalg.ldl_factor_ex"
    if self.dim() < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    _square(name, self)
    check_float(name, self, kernel="ldl_factor_kernel_cpu")
    return tuple(self._size), tuple(self._size[:-1]), tuple(self._size[:-2])


def check_ldl_solve(LD, pivots, B, hermitian=False):
    name = "torch.linalg.ldl_solve"
    if LD.dim() < 2:
        raise RuntimeError(f"{name}: The input tensor LD must have at least 2 dimensions.")
    _square(name, LD, "LD")
    if B.dim() < 2:
        raise RuntimeError(f"{name}: The input tensor B must have at least 2 dimensions.")
    if tuple(LD._size[:-1]) != tuple(pivots._size):
        raise RuntimeError(f"{name}: Expected LD.shape[:-1] and pivots.shape to be the same, but "
                           f"got pivots with shape {_fmt(pivots._size)} instead")
    if pivots._dtype.is_floating_point or pivots._dtype.is_complex or pivots._dtype is D.bool_:
        raise RuntimeError(f"{name}: Expected pivots to be integers. Got {pivots._dtype._short}")
    check_float(name, LD, "LD", kernel="ldl_solve_kernel_cpu")
    return check_linear_solve_args(B, LD, "torch.linalg.ldl_solve", "ldl_solve_kernel_cpu")[0]
