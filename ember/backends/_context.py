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
