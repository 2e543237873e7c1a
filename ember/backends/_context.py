"""The process-wide backend switches (PyTorch keeps them in ``at::globalContext()``), with
setters that type-check as PyTorch's C++ bindings do.

Every ``ember.backends.*`` flag reads and writes this one state, so that e.g.
``ember.backends.cuda.matmul.allow_tf32`` and ``ember.set_float32_matmul_precision`` stay linked
as in PyTorch, and ``scaled_dot_product_attention`` sees what ``sdpa_kernel`` set. No ember
import here: ``ember._functional_ops`` reads it while ember is still being built.
"""


def check_bool(setter_name, value):
    """PyTorch's ``THPUtils_checkBool`` message: ``set_benchmark_cudnn expects a bool, but got
    str`` (RuntimeError)."""
    if not isinstance(value, bool):
        raise RuntimeError(f"{setter_name} expects a bool, but got {type(value).__name__}")
    return value


class _Context:
    """Flag values with PyTorch 2.13's defaults on a CPU build."""

    def __init__(self):
        # cuDNN / MIOpen
        self.cudnn_enabled = True
        self.cudnn_benchmark = False
        self.cudnn_benchmark_limit = 10
        self.cudnn_deterministic = False
        self.cudnn_allow_tf32 = True
        self.cudnn_depthwise_kernel = "auto"
        self.miopen_immediate = False
        # oneDNN
        self.mkldnn_enabled = True
        self.mkldnn_deterministic = False
        self.nnpack_enabled = True
        # cuBLAS: allow_tf32 is float32_matmul_precision != "highest" (PyTorch derives one from
        # the other)
        self.float32_matmul_precision = "highest"
        self.fp16_reduction = (True, True)  # (allow_reduced_precision, allow_splitk)
        self.bf16_reduction = (True, True)
        self.fp16_accumulation = False
        # fp32_precision per (backend, op): "none" until set ("ieee" / "tf32")
        self.fp32_precision = {}
        # scaled_dot_product_attention backends (PyTorch's defaults: all enabled)
        self.sdp = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True,
                    "overrideable": True}
        self.sdp_priority = [1, 2, 0, 3, 4]  # FLASH, EFFICIENT, MATH, CUDNN, OVERRIDEABLE
        self.math_sdp_fp16_bf16_reduction = False
        # linear-algebra / BLAS library preferences (names, resolved by backends.cuda)
        self.linalg_backend = "Default"
        self.blas_backend = "Cublas"
        self.rocm_fa_backend = "Default"
        # quantized engine
        self.qengine = "none"  # ember has no quantized engine


ctx = _Context()


# Determinism (``ember.use_deterministic_algorithms``, ``ember.utils.deterministic``)
ctx.deterministic = False
ctx.deterministic_warn_only = False
ctx.deterministic_fill_uninitialized_memory = True


def alert_not_deterministic(caller):
    """PyTorch's ``alertNotDeterministic``: a kernel with no deterministic implementation calls
    this; under ``use_deterministic_algorithms(True)`` it raises (or warns, with warn_only)."""
    if not ctx.deterministic:
        return
    if ctx.deterministic_warn_only:
        import warnings
        warnings.warn(f"{caller} does not have a deterministic implementation, but you set "
                      f"'torch.use_deterministic_algorithms(True, warn_only=True)'. You can file "
                      f"an issue at https://github.com/pytorch/pytorch/issues to help us "
                      f"prioritize adding deterministic support for this operation.",
                      stacklevel=3)
        return
    raise RuntimeError(
        f"{caller} does not have a deterministic implementation, but you set "
        f"'torch.use_deterministic_algorithms(True)'. You can turn off determinism just for this "
        f"operation, or you can use the 'warn_only=True' option, if that's acceptable for your "
        f"application. You can also file an issue at https://github.com/pytorch/pytorch/issues "
        f"to help us prioritize adding deterministic support for this operation.")


def fills_uninitialized():
    """Whether fresh memory is filled (deterministic algorithms with
    ``fill_uninitialized_memory``): callers ask first and build no array view otherwise."""
    return ctx.deterministic and ctx.deterministic_fill_uninitialized_memory


def fill_uninitialized(array):
    """PyTorch's ``fill_empty_deterministic_``: when deterministic algorithms and
    ``fill_uninitialized_memory`` are both on, fresh memory (a NumPy view of it) is filled with
    NaN (floating and complex dtypes), the dtype's largest value (integers) or True (bool)."""
    if not (ctx.deterministic and ctx.deterministic_fill_uninitialized_memory) or not array.size:
        return
    import numpy as np
    kind = array.dtype.kind
    if kind in "fc" or array.dtype.name == "bfloat16" or kind == "V":
        array[...] = np.nan
    elif kind == "b":
        array[...] = True
    elif kind in "iu":
        array[...] = np.iinfo(array.dtype).max
    else:  # ml_dtypes float8 etc. report kind "V"/"f"; anything else is left as is
        pass
