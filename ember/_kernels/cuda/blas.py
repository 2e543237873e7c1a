"""CUDA matrix products: ``mm``, ``bmm``, ``addmm``, ``baddbmm`` (``matmul`` and ``linear`` are
composites over them).

Shapes, dtypes and PyTorch's errors are the rules' (``rules/linalg.py``); the product is the array
module's ``matmul`` — cuBLAS through CuPy on a GPU. ``ember.backends.cuda.matmul.allow_tf32``
(``set_float32_matmul_precision("high")``) selects cuBLAS's TF32 compute type for float32
products, read at every call as PyTorch reads it; for float16/bfloat16 products
``allow_fp16_reduced_precision_reduction``/``allow_bf16_reduced_precision_reduction`` (False:
cuBLAS's ``CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION``) and ``allow_fp16_accumulation``
(float16 compute type) are applied the same way. With ``ember.cuda.tunable`` enabled the product
is TunableOp's choice of solution for the GEMM.

Floating-point products whose operands are row- or column-major matrices (or batches of them)
call cuBLAS's ``gemmEx``/``gemmStridedBatchedEx`` directly on the tensors' memory, as PyTorch's
``at::cuda::blas::gemm`` does: CuPy's ``matmul`` spends ~50 us of host time per call deciding
what these few lines know. Other layouts and dtypes go through ``matmul``.
"""
import numpy as np

from ..._core import blas as host_blas
from ..._core import dtype as D
from ..._core.tensor_impl import empty_tensor
from ...backends._context import ctx
from ..rules.linalg import check_addmm, check_baddbmm, check_bmm, check_mm
from .arrays import device_array, launch, to_tensor

_tf32 = [None]  # whether float32 products may use TF32, as CuPy and cuBLAS were last told


def _sync_tf32(xp):
    """Tell CuPy's float32 products whether TF32 tensor cores may compute them."""
    tf32 = ctx.float32_matmul_precision != "highest"
    if _tf32[0] is not tf32:
        from cupy._core import _routines_linalg as L
        L.set_compute_type(xp.float32, getattr(L, "COMPUTE_TYPE_TF32", 7) if tf32
                           else getattr(L, "COMPUTE_TYPE_DEFAULT", 1))
        _tf32[0] = tf32


# (disallow reduced-precision reduction, float16 accumulation) as cuBLAS and CuPy start: neither
_half_modes = [(False, False)]


def _sync_half_modes(xp, dt):
    """cuBLAS's math mode and CuPy's float16 compute type for a half-precision product."""
    disallow = not (ctx.fp16_reduction if dt is D.float16 else ctx.bf16_reduction)[0]
    state = (disallow, dt is D.float16 and ctx.fp16_accumulation)
    if _half_modes[0] != state:
        from cupy._core import _routines_linalg as L
        from cupy_backends.cuda.libs import cublas
        cublas.setMathMode(xp.cuda.device.get_cublas_handle(), 16 if disallow else 0)
        L.set_compute_type(xp.float16, getattr(L, "COMPUTE_TYPE_FP16", 3) if state[1]
                           else getattr(L, "COMPUTE_TYPE_DEFAULT", 1))
        _half_modes[0] = state


# cudaDataType and cublasComputeType_t values (library_types.h, cublas_api.h)
_CUDA_R = {D.float32: 0, D.float64: 1, D.float16: 2, D.bfloat16: 14}
CUBLAS_COMPUTE_16F, CUBLAS_COMPUTE_32F, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_COMPUTE_64F = \
    64, 68, 77, 70
CUBLAS_GEMM_DEFAULT = -1


def _operand(t):
    """``(trans, ld, batch stride)`` of a matrix (batch) operand as cuBLAS's column-major view
    of ``t.T`` needs it — 0: ``t`` is row-major (its transpose is column-major as stored), 1:
    column-major (transpose it back) — or None for other layouts."""
    *batch, rows, cols = t._size
    *bs, sr, sc = t._stride
    if sc == 1 and sr >= max(1, cols):
        trans, ld = 0, sr
    elif sr == 1 and sc >= max(1, rows):
        trans, ld = 1, sc
    else:
        return None
    return trans, ld, (bs[0] if batch and batch[0] > 1 else 0)


def _cublas_compute(dt):
    """cuBLAS's compute type for a ``dt`` product under the precision flags (already synced)."""
    if dt is D.float64:
        return CUBLAS_COMPUTE_64F, np.float64
    if dt is D.float32:
        return (CUBLAS_COMPUTE_32F_FAST_TF32 if _tf32[0] else CUBLAS_COMPUTE_32F), np.float32
    if dt is D.float16 and _half_modes[0][1]:
        return CUBLAS_COMPUTE_16F, np.float16
    return CUBLAS_COMPUTE_32F, np.float32


_cublas = []  # CuPy's cuBLAS bindings, imported at the first product


def _cublas_module():
    if not _cublas:
        from cupy_backends.cuda.libs import cublas
        _cublas.append(cublas)
    return _cublas[0]


# alpha and beta as cuBLAS reads them (host pointer mode, during the call): one array per (type,
# value), kept, so a product builds none (and takes no ctypes object for its address)
_host_scalars = {}


def _host_scalar(scalar, value):
    """(array, address) of ``value`` as a 1-element ``scalar`` array; the caller holds the array
    while cuBLAS reads it."""
    key = (scalar, value)
    entry = _host_scalars.get(key)
    if entry is None:
        a = np.array([value], scalar)
        entry = (a, a.__array_interface__["data"][0])
        if len(_host_scalars) < 64:  # usually 0 and 1: a bound, not a cache of every value
            _host_scalars[key] = entry
    return entry


def _set_stream(cublas, handle, stream):
    """Point the cuBLAS handle at ``stream``; returns the module whose ``gemmEx`` and
    ``gemmStridedBatchedEx`` the product then calls. CuPy's bindings refuse a stream that is
    capturing a CUDA graph — ``setStream`` and every BLAS call, which sets the stream again first
    (CuPy has not checked cuBLAS's conditions for graphs). PyTorch captures cuBLAS calls, and
    cuBLAS takes them with the workspace it made with the handle (host-mode alpha and beta are
    captured by value). So during a capture ember calls ``cublasSetStream`` and the products
    itself (``_CapturedCublas``), in the libcublas CuPy loaded."""
    try:
        cublas.setStream(handle, stream)
        return cublas
    except NotImplementedError:
        lib = _libcublas()
        _check(lib.cublasSetStream_v2(handle, stream), "cublasSetStream")
        return _CapturedCublas


def _check(status, name):
    if status:
        raise RuntimeError(f"CUDA error: {name} failed (cuBLAS status {status}) while the stream "
                           f"was capturing a CUDA graph")


class _CapturedCublas:
    """CuPy's two product calls (same arguments), without CuPy's stream check: straight into
    libcublas, on the stream ``_set_stream`` gave the handle."""

    @staticmethod
    def gemmEx(*args):
        _check(_libcublas().cublasGemmEx(*args), "cublasGemmEx")

    @staticmethod
    def gemmStridedBatchedEx(*args):
        _check(_libcublas().cublasGemmStridedBatchedEx(*args), "cublasGemmStridedBatchedEx")


_libcublas_loaded = []


def _libcublas():
    """The libcublas this process loaded (for CuPy), by its path: a copy loaded again by name
    could be another library, which would not know CuPy's handles."""
    if not _libcublas_loaded:
        import ctypes
        with open("/proc/self/maps") as f:
            paths = [line.split()[-1] for line in f if "libcublas.so" in line
                     and "libcublasLt" not in line]
        if not paths:
            raise RuntimeError("cuBLAS calls cannot be captured in a CUDA graph here: the "
                               "libcublas CuPy uses was not found among the loaded libraries")
        lib = ctypes.CDLL(paths[0])
        p, i, ll = ctypes.c_void_p, ctypes.c_int, ctypes.c_longlong
        lib.cublasSetStream_v2.argtypes = [p, p]
        # (handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C, Ctype,
        # ldc, computeType, algo): cublas_api.h, the enums C ints
        lib.cublasGemmEx.argtypes = [p, i, i, i, i, i, p, p, i, i, p, i, i, p, p, i, i, i, i]
        # the same with each matrix's batch stride after its leading dimension, then the count
        lib.cublasGemmStridedBatchedEx.argtypes = [p, i, i, i, i, i, p, p, i, i, ll, p, i, i,
                                                   ll, p, p, i, i, ll, i, i, i]
        for f in (lib.cublasSetStream_v2, lib.cublasGemmEx, lib.cublasGemmStridedBatchedEx):
            f.restype = i
        _libcublas_loaded.append(lib)
    return _libcublas_loaded[0]


def _gemm(xp, rt, a_t, b_t, c_t, beta, alpha):
    """``beta * c + alpha * (a @ b)`` (``c`` broadcast; None: no ``c``) by one cuBLAS call into
    a new tensor, or None when the layout or dtype is not one cuBLAS takes as it is."""
    dt = a_t._dtype
    data_type = _CUDA_R.get(dt)
    if data_type is None or b_t._dtype is not dt or 0 in a_t._size or 0 in b_t._size:
        return None
    pa, pb = _operand(a_t), _operand(b_t)
    if pa is None or pb is None:
        return None
    cublas = _cublas_module()
    *batch, m, k = a_t._size
    n = b_t._size[-1]
    out = empty_tensor((*batch, m, n), dt, a_t._device)
    if c_t is None or beta == 0:
        beta = 0
    else:  # cuBLAS scales what the output holds: c, broadcast, first
        device_array(out, rt)[...] = device_array(c_t, rt)
    compute, scalar = _cublas_compute(dt)
    alpha_, beta_ = _host_scalar(scalar, alpha), _host_scalar(scalar, beta)
    alpha_ptr, beta_ptr = alpha_[1], beta_[1]
    handle = xp.cuda.device.get_cublas_handle()
    cublas = _set_stream(cublas, handle, xp.cuda.get_current_stream().ptr)
    # row-major C = A @ B is column-major C^T = B^T A^T: cuBLAS computes (n x k)(k x m)
    if batch:
        cublas.gemmStridedBatchedEx(
            handle, pb[0], pa[0], n, m, k, alpha_ptr, b_t.data_ptr(), data_type, pb[1], pb[2],
            a_t.data_ptr(), data_type, pa[1], pa[2], beta_ptr, out.data_ptr(), data_type, n,
            m * n, batch[0], compute, CUBLAS_GEMM_DEFAULT)
    else:
        cublas.gemmEx(handle, pb[0], pa[0], n, m, k, alpha_ptr, b_t.data_ptr(), data_type,
                      pb[1], a_t.data_ptr(), data_type, pa[1], beta_ptr, out.data_ptr(),
                      data_type, n, compute, CUBLAS_GEMM_DEFAULT)
    return out


def _matmul(xp, a_t, b_t, rt):
    """``a @ b`` on device arrays: through TunableOp when it is enabled (ember.cuda.tunable)."""
    a, b = device_array(a_t, rt), device_array(b_t, rt)
    if a_t._dtype.is_floating_point:
        from ...cuda import tunable
        if tunable.is_enabled():
            sync = (lambda: None) if xp.__name__ == "numpy" else \
                xp.cuda.get_current_stream().synchronize
            return tunable.matmul(xp, a_t, b_t, a, b, sync)
    # (on the simulated device, host arrays: the host's products, float16 ones on BLAS too)
    return host_blas.matmul(a, b) if xp is np else xp.matmul(a, b)


_warned_lt = []


def _warn_if_cublaslt():
    """``preferred_blas_library("cublaslt")`` asks for a library ember does not call: say so once
    (PyTorch warns likewise when a preferred library is missing) and compute with cuBLAS."""
    if ctx.blas_backend == "Cublaslt" and not _warned_lt:
        import warnings
        _warned_lt.append(True)
        warnings.warn("preferred_blas_library('cublaslt'): ember's CUDA products run on cuBLAS "
                      "through CuPy; cuBLASLt is not used", UserWarning, stacklevel=3)


def _product(a_t, b_t, dt, c_t=None, beta=1, alpha=1):
    _warn_if_cublaslt()
    def body(xp, rt):
        if xp.__name__ == "cupy" and dt is D.float32:
            _sync_tf32(xp)
        elif xp.__name__ == "cupy" and (dt is D.float16 or dt is D.bfloat16):
            _sync_half_modes(xp, dt)
        if xp.__name__ == "cupy" and dt._category > D.INTEGRAL:
            from ...cuda import tunable
            if not tunable.is_enabled():
                out = _gemm(xp, rt, a_t, b_t, c_t, beta, alpha)
                if out is not None:
                    return out
        r = _matmul(xp, a_t, b_t, rt)
        if dt._category <= D.INTEGRAL:
            a, b = int(alpha), int(beta)
        else:
            a, b = alpha, beta
        if a != 1:
            r *= r.dtype.type(a)
        if c_t is not None and b != 0:
            c = device_array(c_t, rt)
            r += c if b == 1 else c * c.dtype.type(b)
        return to_tensor(r, dt, a_t._device, rt)
    return launch(a_t._device, body)


def mm(self, mat2):
    check_mm(self, mat2)
    return _product(self, mat2, self._dtype)


def bmm(self, mat2):
    check_bmm(self, mat2)
    return _product(self, mat2, self._dtype)


def addmm(self, mat1, mat2, beta=1, alpha=1):
    check_addmm(self, mat1, mat2)
    return _product(mat1, mat2, mat1._dtype, self, beta, alpha)


def baddbmm(self, batch1, batch2, beta=1, alpha=1):
    check_baddbmm(self, batch1, batch2)
    return _product(batch1, batch2, batch1._dtype, self, beta, alpha)


def kernels():
    return {"mm": mm, "bmm": bmm, "addmm": addmm, "baddbmm": baddbmm}

