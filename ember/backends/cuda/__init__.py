"""``ember.backends.cuda``: the CUDA-side switches of PyTorch — cuBLAS (``matmul``), cuFFT plan
caches, preferred BLAS/linear-algebra libraries and the scaled-dot-product-attention backend
flags.

``is_built()`` tells whether ember has a CUDA runtime (CuPy, or the simulated device).
``matmul.allow_tf32`` is the other face of ``ember.set_float32_matmul_precision`` (as in
PyTorch: True means "high"). The SDP flags (``enable_flash_sdp``, ``enable_math_sdp``, ...) are
the ones ``nn.functional.scaled_dot_product_attention`` reads to choose its kernel on every
device, including the CPU (``ember.backends._sdp``)."""
import contextlib
import enum
import warnings
from typing import Any

from .._context import check_bool, ctx as _ctx
from .._sdp import SDPAParams, SDPBackend, can_use_cuda_kernel as _can_use_cuda_kernel
from .._sdp import can_use_efficient_attention as _can_use_efficient_attention
from .._sdp import can_use_flash_attention as _can_use_flash_attention

__all__ = ["is_built", "cuFFTPlanCacheAttrContextProp", "cuFFTPlanCache",
           "cuFFTPlanCacheManager", "cuBLASModule", "preferred_linalg_library",
           "preferred_blas_library", "preferred_rocm_fa_library", "is_ck_sdpa_available",
           "cufft_plan_cache", "matmul", "SDPAParams", "enable_cudnn_sdp", "cudnn_sdp_enabled",
           "enable_flash_sdp", "flash_sdp_enabled", "enable_mem_efficient_sdp",
           "mem_efficient_sdp_enabled", "math_sdp_enabled", "enable_math_sdp",
           "allow_fp16_bf16_reduction_math_sdp", "fp16_bf16_reduction_math_sdp_allowed",
           "is_flash_attention_available", "can_use_flash_attention",
           "can_use_efficient_attention", "can_use_cudnn_attention", "sdp_kernel"]


def is_built():
    r"""Return whether ember has a CUDA runtime: CuPy is installed (``pip install ember[cuda]``)
    or the simulated device was asked for (``EMBER_CUDA_SIMULATE=1``).

    Like PyTorch's "compiled with CUDA", this does not mean a GPU is available on this machine."""
    from ...cuda import _runtime
    return _runtime.is_built()


def _device_count():
    if not is_built():
        return 0
    from ... import cuda
    return cuda.device_count() if hasattr(cuda, "device_count") else int(cuda.is_available())


# ------------------------------------------------------------------------------------------
# cuFFT plan caches: ember's FFTs are NumPy's (no plans are cached), so every cache is empty;
# with no CUDA device there is no cache to index, and PyTorch's errors are raised.

class cuFFTPlanCacheAttrContextProp:
    """Like ContextProp, with the calling cache's ``device_index`` passed to getter/setter."""

    def __init__(self, getter, setter):
        self.getter = getter
        self.setter = setter

    def __get__(self, obj, objtype):
        return self.getter(obj.device_index)

    def __set__(self, obj, val):
        if isinstance(self.setter, str):
            raise RuntimeError(self.setter)
        self.setter(obj.device_index, val)


_plan_cache_max_size = {}


def _get_max_size(index):
    return _plan_cache_max_size.get(index, 4096)


def _set_max_size(index, value):
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"_cufft_set_plan_cache_max_size(): argument 'max_size' (position 2) "
                        f"must be int, not {type(value).__name__}")
    if value < 0:
        raise RuntimeError(f"cuFFT plan cache size must be non-negative, but got {value}")
    _plan_cache_max_size[index] = value


class cuFFTPlanCache:
    r"""The plan cache of one CUDA device: ``size`` (read-only), ``max_size``, ``clear()``."""

    def __init__(self, device_index):
        self.device_index = device_index

    size = cuFFTPlanCacheAttrContextProp(
        lambda index: 0,
        ".size is a read-only property showing the number of plans currently in the "
        "cache. To change the cache capacity, set cufft_plan_cache.max_size.")
    max_size = cuFFTPlanCacheAttrContextProp(_get_max_size, _set_max_size)

    def clear(self):
        return None  # nothing is cached


class cuFFTPlanCacheManager:
    r"""All cuFFT plan caches: indexed by device; used directly, the current device's cache."""

    __initialized = False

    def __init__(self):
        self.caches = []
        self.__initialized = True

    def __getitem__(self, device):
        index = device.index if hasattr(device, "index") else device
        if isinstance(device, str):
            from ..._core.device import device as _device
            index = _device(device).index
        index = 0 if index is None else index
        count = _device_count()
        if index < 0 or index >= count:
            raise RuntimeError(f"cufft_plan_cache: expected 0 <= device index < {count}, but got "
                               f"device with index {index}")
        if len(self.caches) == 0:
            self.caches.extend(cuFFTPlanCache(i) for i in range(count))
        return self.caches[index]

    def __getattr__(self, name):
        if _device_count() == 0:
            raise AssertionError("Torch not compiled with CUDA enabled")
        return getattr(self[0], name)

    def __setattr__(self, name, value):
        if self.__initialized:
            if _device_count() == 0:
                raise AssertionError("Torch not compiled with CUDA enabled")
            return setattr(self[0], name, value)
        return super().__setattr__(name, value)


# ------------------------------------------------------------------------------------------
# cuBLAS

class cuBLASModule:
    """``ember.backends.cuda.matmul``: reduced-precision switches of CUDA matmuls."""

    @staticmethod
    def _parse_reduction_setting(value: Any, attr_name: str):
        def _ensure_bool(obj, which):
            if isinstance(obj, bool):
                return obj
            raise TypeError(f"{attr_name} expects a bool for {which}, but got {type(obj)!r}")

        if isinstance(value, bool):
            return value, True
        if isinstance(value, (list, tuple)):
            if not value:
                raise TypeError(f"{attr_name} expects at least one boolean argument")
            if len(value) > 2:
                raise TypeError(f"{attr_name} expects at most two boolean arguments")
            allow = _ensure_bool(value[0], "allow_reduced_precision")
            if len(value) == 1:
                return allow, True
            return allow, _ensure_bool(value[1], "allow_splitk")
        raise TypeError(f"{attr_name} expects a bool or a tuple/list of bools, but got "
                        f"{type(value)!r}")

    def __getattr__(self, name):
        if name == "allow_tf32":
            return _ctx.float32_matmul_precision != "highest"
        if name == "allow_fp16_reduced_precision_reduction":
            return _ctx.fp16_reduction[0]
        if name == "allow_fp16_reduced_precision_reduction_split_k":
            return _ctx.fp16_reduction[1]
        if name == "allow_bf16_reduced_precision_reduction":
            return _ctx.bf16_reduction[0]
        if name == "allow_bf16_reduced_precision_reduction_split_k":
            return _ctx.bf16_reduction[1]
        if name == "allow_fp16_accumulation":
            return _ctx.fp16_accumulation
        if name == "fp32_precision":
            from .. import _get_fp32
            return _get_fp32("cuda", "matmul")
        raise AttributeError("Unknown attribute " + name)

    def __setattr__(self, name, value):
        if name == "allow_tf32":
            check_bool("set_allow_tf32_cublas", value)
            _ctx.float32_matmul_precision = "high" if value else "highest"
            return None
        if name == "allow_fp16_reduced_precision_reduction":
            _ctx.fp16_reduction = self._parse_reduction_setting(value, name)
            return None
        if name == "allow_bf16_reduced_precision_reduction":
            _ctx.bf16_reduction = self._parse_reduction_setting(value, name)
            return None
        if name == "allow_fp16_accumulation":
            _ctx.fp16_accumulation = check_bool("set_allow_fp16_accumulation_cublas", value)
            return None
        if name == "fp32_precision":
            from .. import _set_fp32
            return _set_fp32("cuda", "matmul", value)
        raise AttributeError("Unknown attribute " + name)


class _LinalgBackend(enum.Enum):
    Default = 0
    Cusolver = 1
    Magma = 2

    def __repr__(self):
        return f"_LinalgBackend.{self.name}"


class _BlasBackend(enum.Enum):
    Default = 0
    Cublas = 1
    Cublaslt = 2
    Ck = 3

    def __repr__(self):
        return f"_BlasBackend.{self.name}"


class _ROCmFABackend(enum.Enum):
    Default = 0
    AOTriton = 1
    Ck = 2

    def __repr__(self):
        return f"_ROCmFABackend.{self.name}"


_LinalgBackends = {"default": _LinalgBackend.Default, "cusolver": _LinalgBackend.Cusolver,
                   "magma": _LinalgBackend.Magma}
_LinalgBackends_str = ", ".join(_LinalgBackends.keys())
_BlasBackends = {"default": _BlasBackend.Default, "cublas": _BlasBackend.Cublas,
                 "hipblas": _BlasBackend.Cublas, "cublaslt": _BlasBackend.Cublaslt,
                 "hipblaslt": _BlasBackend.Cublaslt, "ck": _BlasBackend.Ck}
_BlasBackends_str = ", ".join(_BlasBackends.keys())
_ROCmFABackends = {"default": _ROCmFABackend.Default, "aotriton": _ROCmFABackend.AOTriton,
                   "ck": _ROCmFABackend.Ck}
_ROCmFABackends_str = ", ".join(_ROCmFABackends.keys())


def _preferred(backend, table, table_str, enum_cls, attr, bad_type=RuntimeError):
    if backend is None:
        pass
    elif isinstance(backend, str):
        if backend not in table:
            raise RuntimeError(f"Unknown input value. Choose from: {table_str}.")
        setattr(_ctx, attr, table[backend].name)
    elif isinstance(backend, enum_cls):
        setattr(_ctx, attr, backend.name)
    elif bad_type is RuntimeError:
        raise RuntimeError("Unknown input value type.")
    else:
        raise bad_type(f"Unknown input value. Choose from: {table_str}.")
    return enum_cls[getattr(_ctx, attr)]


def preferred_linalg_library(backend=None):
    r"""Override (or, with no argument, return) the library for CUDA linear algebra:
    "cusolver", "magma" or "default". ember's linear algebra is NumPy/LAPACK on every device
    today, so the choice is recorded for the CUDA kernels that consult it."""
    return _preferred(backend, _LinalgBackends, _LinalgBackends_str, _LinalgBackend,
                      "linalg_backend")


def preferred_blas_library(backend=None):
    r"""Override (or return) the library for CUDA BLAS: "cublas", "cublaslt", "ck" or
    "default"."""
    return _preferred(backend, _BlasBackends, _BlasBackends_str, _BlasBackend, "blas_backend")


def preferred_rocm_fa_library(backend=None):
    r"""[ROCm-only] Override (or return) the Flash Attention backend: "aotriton", "ck" or
    "default"."""
    return _preferred(backend, _ROCmFABackends, _ROCmFABackends_str, _ROCmFABackend,
                      "rocm_fa_backend", bad_type=ValueError)


def is_ck_sdpa_available() -> bool:
    r"""Whether composable_kernel may be used for scaled-dot-product-attention (ROCm only)."""
    return False


# ------------------------------------------------------------------------------------------
# scaled_dot_product_attention backend flags (read by nn.functional on every device)

def flash_sdp_enabled():
    r"""Returns whether flash scaled dot product attention is enabled or not."""
    return _ctx.sdp["flash"]


def enable_flash_sdp(enabled: bool):
    r"""Enables or disables flash scaled dot product attention."""
    # PyTorch 2.13's binding reports every SDP setter as set_sdp_use_math
    _ctx.sdp["flash"] = check_bool("set_sdp_use_math", enabled)


def mem_efficient_sdp_enabled():
    r"""Returns whether memory efficient scaled dot product attention is enabled or not."""
    return _ctx.sdp["mem_efficient"]


def enable_mem_efficient_sdp(enabled: bool):
    r"""Enables or disables memory efficient scaled dot product attention."""
    _ctx.sdp["mem_efficient"] = check_bool("set_sdp_use_math", enabled)


def math_sdp_enabled():
    r"""Returns whether math scaled dot product attention is enabled or not."""
    return _ctx.sdp["math"]


def enable_math_sdp(enabled: bool):
    r"""Enables or disables math scaled dot product attention."""
    _ctx.sdp["math"] = check_bool("set_sdp_use_math", enabled)


def allow_fp16_bf16_reduction_math_sdp(enabled: bool):
    r"""Enables or disables fp16/bf16 reduction in math scaled dot product attention."""
    _ctx.math_sdp_fp16_bf16_reduction = check_bool("set_math_sdp_allow_fp16_bf16_reduction",
                                                   enabled)


def fp16_bf16_reduction_math_sdp_allowed():
    r"""Returns whether fp16/bf16 reduction in math scaled dot product attention is enabled."""
    return _ctx.math_sdp_fp16_bf16_reduction


def cudnn_sdp_enabled():
    r"""Returns whether cuDNN scaled dot product attention is enabled or not."""
    return _ctx.sdp["cudnn"]


def enable_cudnn_sdp(enabled: bool):
    r"""Enables or disables cuDNN scaled dot product attention."""
    _ctx.sdp["cudnn"] = check_bool("set_sdp_use_math", enabled)


def is_flash_attention_available() -> bool:
    r"""Whether ember has the CUDA flash attention op (it does: the FlashAttention-2 kernels in
    Triton where Triton is installed, blocked products otherwise)."""
    return True


def can_use_flash_attention(params: SDPAParams, debug: bool = False) -> bool:
    r"""Whether CUDA flash attention can run ``params``; with ``debug`` a warning says why not."""
    return _can_use_flash_attention(params, debug)


def can_use_efficient_attention(params: SDPAParams, debug: bool = False) -> bool:
    r"""Whether CUDA memory-efficient attention can run ``params`` (``debug`` warns why not)."""
    return _can_use_efficient_attention(params, debug)


def can_use_cudnn_attention(params: SDPAParams, debug: bool = False) -> bool:
    r"""Whether cuDNN attention can run ``params`` (``debug`` warns why not)."""
    return _can_use_cuda_kernel("cuDNN attention", params, debug)


@contextlib.contextmanager
def sdp_kernel(enable_flash: bool = True, enable_math: bool = True,
               enable_mem_efficient: bool = True, enable_cudnn: bool = True):
    r"""Deprecated: temporarily enable/disable SDP backends; use
    ``ember.nn.attention.sdpa_kernel``."""
    warnings.warn("`torch.backends.cuda.sdp_kernel()` is deprecated. In the future, this context "
                  "manager will be removed. Please see `torch.nn.attention.sdpa_kernel()` for "
                  "the new context manager, with updated signature.", FutureWarning,
                  stacklevel=3)
    from ...nn.attention import sdpa_kernel
    backend_list = []
    if enable_flash:
        backend_list.append(SDPBackend.FLASH_ATTENTION)
    if enable_mem_efficient:
        backend_list.append(SDPBackend.EFFICIENT_ATTENTION)
    if enable_math:
        backend_list.append(SDPBackend.MATH)
    if enable_cudnn:
        backend_list.append(SDPBackend.CUDNN_ATTENTION)
    with sdpa_kernel(backend_list) as context:
        yield context


cufft_plan_cache = cuFFTPlanCacheManager()
matmul = cuBLASModule()
