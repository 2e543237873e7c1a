"""``ember.backends.cudnn``: NVIDIA cuDNN's switches. ember does not link cuDNN, so
``is_available()`` is False and ``version()`` None; the flags (``enabled``, ``benchmark``,
``deterministic``, ``allow_tf32``, ...) keep PyTorch's names, defaults and type checks so that
programs setting them at their top run, and ``flags(...)`` scopes them. ``benchmark_limit`` is
None without cuDNN, as in PyTorch.

What cuDNN's flags do to PyTorch's convolutions they do to ember's CUDA convolutions
(``ember/_kernels/cuda/conv.py``): ``benchmark`` times the eligible algorithms of each new
configuration once and caches the fastest, ``benchmark_limit`` bounds how many are tried, and
``deterministic`` leaves out the non-deterministic ones (the atomic input gradient)."""
import sys
from contextlib import contextmanager

import ember

from .. import (ContextProp, PropModule, _FP32Precision, _allow_nonbracketed_mutation,
                _get_fp32_precision_getter, _set_fp32_precision_setter)
from .._context import check_bool, ctx as _ctx
from . import rnn  # noqa: F401


def version():
    """Return the version of cuDNN (None: ember does not link cuDNN)."""
    return None


def _dtypes():
    return {ember.half, ember.float, ember.double}


def is_available():
    r"""Return a bool indicating if CUDNN is currently available."""
    return False


def is_acceptable(tensor):
    """Whether cuDNN would take ``tensor`` (never without cuDNN; PyTorch's checks first)."""
    if not _ctx.cudnn_enabled:
        return False
    if tensor.device.type != "cuda" or tensor.dtype not in _dtypes():
        return False
    import warnings
    warnings.warn("ember was built without cuDNN/MIOpen support. To use cuDNN/MIOpen, rebuild "
                  "ember making sure the library is visible to the build system.", stacklevel=2)
    return False


def _bool_flag(attr, setter_name):
    def get():
        return getattr(_ctx, attr)

    def set_(v):
        setattr(_ctx, attr, check_bool(setter_name, v))
    return get, set_


_get_enabled, _set_enabled = _bool_flag("cudnn_enabled", "set_enabled_cudnn")
_get_benchmark, _set_benchmark = _bool_flag("cudnn_benchmark", "set_benchmark_cudnn")
_get_deterministic, _set_deterministic = _bool_flag("cudnn_deterministic",
                                                    "set_deterministic_cudnn")
# PyTorch 2.13's binding reports this setter under cuBLAS's name; the message is kept.
_get_allow_tf32, _set_allow_tf32 = _bool_flag("cudnn_allow_tf32", "set_allow_tf32_cublas")
_DEPTHWISE = ("auto", "cudnn", "native")


def _get_depthwise_kernel():
    return _ctx.cudnn_depthwise_kernel


def _set_depthwise_kernel(v):
    if not isinstance(v, str):
        raise RuntimeError(f"set_cudnn_depthwise_kernel expects a string, but got "
                           f"{type(v).__name__}")
    if v not in _DEPTHWISE:
        raise RuntimeError(f"Unknown cuDNN depthwise kernel mode: {v}. Expected one of: "
                           f"{', '.join(_DEPTHWISE)}")
    _ctx.cudnn_depthwise_kernel = v


def set_flags(_enabled=None, _benchmark=None, _benchmark_limit=None, _deterministic=None,
              _allow_tf32=None, _fp32_precision="none", _depthwise_kernel=None):
    orig_flags = (_get_enabled(), _get_benchmark(),
                  None if not is_available() else _ctx.cudnn_benchmark_limit,
                  _get_deterministic(), _get_allow_tf32(),
                  _get_fp32_precision_getter("cuda", "all")(), _get_depthwise_kernel())
    if _enabled is not None:
        _set_enabled(_enabled)
    if _benchmark is not None:
        _set_benchmark(_benchmark)
    if _benchmark_limit is not None and is_available():
        _ctx.cudnn_benchmark_limit = _benchmark_limit
    if _deterministic is not None:
        _set_deterministic(_deterministic)
    if _allow_tf32 is not None:
        _set_allow_tf32(_allow_tf32)
    if _fp32_precision is not None:
        _set_fp32_precision_setter("cuda", "all")(_fp32_precision)
    if _depthwise_kernel is not None:
        _set_depthwise_kernel(_depthwise_kernel)
    return orig_flags


@contextmanager
def flags(enabled=False, benchmark=False, benchmark_limit=10, deterministic=False,
          allow_tf32=True, fp32_precision="none", depthwise_kernel="auto"):
    with _allow_nonbracketed_mutation():
        orig_flags = set_flags(enabled, benchmark, benchmark_limit, deterministic, allow_tf32,
                               fp32_precision, depthwise_kernel)
    try:
        yield
    finally:
        with _allow_nonbracketed_mutation():
            set_flags(*orig_flags)


class CudnnModule(PropModule):
    enabled = ContextProp(_get_enabled, _set_enabled)
    deterministic = ContextProp(_get_deterministic, _set_deterministic)
    benchmark = ContextProp(_get_benchmark, _set_benchmark)
    benchmark_limit = None  # an int property only where cuDNN is available (PyTorch's rule)
    allow_tf32 = ContextProp(_get_allow_tf32, _set_allow_tf32)
    conv = _FP32Precision("cuda", "conv")
    fp32_precision = ContextProp(_get_fp32_precision_getter("cuda", "all"),
                                 _set_fp32_precision_setter("cuda", "all"))
    depthwise_kernel = ContextProp(_get_depthwise_kernel, _set_depthwise_kernel)


sys.modules[__name__] = CudnnModule(sys.modules[__name__], __name__)
