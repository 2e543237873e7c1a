"""Which kernel ``scaled_dot_product_attention`` runs: ``SDPBackend``, ``SDPAParams`` and
PyTorch's selection rules (``aten/src/ATen/native/transformers/sdp_utils_cpp.cpp``).

On the CPU PyTorch tries the fused flash kernel first, then the math decomposition; each fused
kernel has a list of constraints, and when the user has disabled every kernel that could run,
the reasons are warned and "No available kernel" raised. ember keeps the same order, the same
constraints and the same messages.

On CUDA PyTorch tries its backends in ``sdpa_kernel``'s priority order (flash, memory-efficient,
math, cuDNN by default). ember has the flash and the memory-efficient ops
(``ember/_kernels/cuda/attention.py``, one kernel pair behind both), which take less than
PyTorch's: each one's constraints are PyTorch's, in PyTorch's order and words, plus ember's own
(no dropout; for the memory-efficient op no attention bias; no grouped-query heads), each with a
message. cuDNN never runs (``can_use_cuda_kernel`` says why)."""
import enum
import warnings

from ._context import ctx


class SDPBackend(enum.IntEnum):
    """The backends of scaled_dot_product_attention (values as PyTorch's ``_SDPBackend``)."""
    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4


SDPBackend.__module__ = "ember.nn.attention"


class SDPAParams:
    """The arguments of one scaled_dot_product_attention call, as the kernel checks see them."""

    def __init__(self, query, key, value, attn_mask, dropout, is_causal, enable_gqa):
        self.query, self.key, self.value, self.attn_mask = query, key, value, attn_mask
        self.dropout = float(dropout)
        self.is_causal = bool(is_causal)
        self.enable_gqa = bool(enable_gqa)


SDPAParams.__module__ = "ember.backends.cuda"

_FLASH_CPU_DTYPES = ("float32", "float64", "bfloat16", "float16")


def _dtname(t):
    return t.dtype._cpp


def _sizes(t):
    return "[" + ", ".join(str(s) for s in t.shape) + "]"


def _dims_reason(p):
    """PyTorch's ``check_tensor_shapes``: query, key and value are 4-dimensional."""
    q, k, v = p.query, p.key, p.value
    if not (q.dim() == 4 and k.dim() == 4 and v.dim() == 4):
        return (f"All fused kernels requires query, key and value to be 4 dimensional, but got "
                f"Query dim: {q.dim()}, Key dim: {k.dim()}, Value dim: {v.dim()} instead.")
    return None


def _dense_input_reason(p, gqa_ok):
    """PyTorch's checks every fused kernel makes of dense inputs (4 dimensions, one batch size,
    the same heads unless grouped-query heads are allowed), as a message, or None."""
    q, k, v = p.query, p.key, p.value
    reason = _dims_reason(p)
    if reason is not None:
        return reason
    if not (q.size(0) == k.size(0) == v.size(0)):
        return (f"For dense inputs, both fused kernels require query, key and value to have the "
                f"same batch_size. Query.sizes(): {_sizes(q)}, Key.sizes(): {_sizes(k)}, "
                f"Value.sizes(): {_sizes(v)} instead. To broadcast dense inputs, try using "
                f"unsqueeze and expand_to before passing them into the kernel.")
    hq, hk, hv = q.size(1), k.size(1), v.size(1)
    if gqa_ok and p.enable_gqa:
        if hk != hv or hq % hk:
            return (f"FlashAttentionV2 only supports grouped query attention, where the number of "
                    f"heads in key/value must divide number of heads in query. Got input Key "
                    f"sizes(): {k.size(1)}, Value sizes(): {v.size(1)}, Query sizes(): "
                    f"{q.size(1)} instead.")
    elif not (hq == hk == hv):
        return (f"For dense input, both fused kernels require query, key and value to have the "
                f"same num_heads. Query.sizes(): {_sizes(q)}, Key sizes(): {_sizes(k)}, Value "
                f"sizes(): {_sizes(v)} instead. To broadcast dense inputs, try using unsqueeze "
                f"and expand_to before passing them into the kernel.")
    return None


def _layout_reason(p, ignore_singleton_dim=False):
    """PyTorch's checks of sequence lengths and the unit stride of the head dimension (which
    does not matter for a head dimension of 1 where ``ignore_singleton_dim``, as for flash)."""
    q, k, v = p.query, p.key, p.value
    if q.size(2) == 0 or k.size(2) == 0:
        return (f"All fused kernels do not support zero seq_len_q or seq_len_kv. Got "
                f"Query.size(-2): {q.size(2)}, Key.size(-2): {k.size(2)}.")
    if ignore_singleton_dim and q.size(-1) == 1:
        return None
    if not (q.stride(-1) == 1 and k.stride(-1) == 1 and v.stride(-1) == 1):
        return (f"All fused kernels require the last dimension of the input to have stride 1. "
                f"Got Query.stride(-1): {q.stride(-1)}, Key.stride(-1): {k.stride(-1)}, "
                f"Value.stride(-1): {v.stride(-1)}")
    return None


def _flash_cpu_reasons(p):
    """The first failed constraint of PyTorch's ``use_flash_attention_cpp`` as a message, or
    None when the CPU flash kernel can run ``p``."""
    q, k, v, m = p.query, p.key, p.value, p.attn_mask
    if not ctx.sdp["flash"]:
        return "Flash attention has been runtime disabled."
    if p.dropout > 0.0:
        return "Both fused kernels do not support non-zero dropout."
    reason = _dense_input_reason(p, gqa_ok=True)
    if reason is not None:
        return reason
    if m is not None and m.requires_grad:
        # PyTorch's CPU kernel has no gradient for the mask: the math path computes one
        # (T5's learned position bias is such a mask). PyTorch names no reason for it.
        return ""
    if m is not None:
        L, S = q.size(2), k.size(2)
        ok = (m.dim() == 2 and m.size(0) in (1, L) and m.size(1) in (1, S)) or \
             (m.dim() == 4 and m.size(0) in (1, q.size(0)) and m.size(1) in (1, q.size(1))
              and m.size(2) in (1, L) and m.size(3) in (1, S))
        if not ok:
            return ("Please use the following attn mask shapes: 2d - ({Q_seq_len, 1}  x "
                    "{KV_seq_len, 1}); 4d - ({Batch, 1} x {Num_heads, 1} x {Q_seq_len, 1}  x "
                    "{KV_seq_len, 1})")
    if not (q.size(-1) == k.size(-1) == v.size(-1)):
        return (f"Flash attention requires q,k,v to have the same last dimension. Got "
                f"Query.size(-1): {q.size(-1)}, Key.size(-1): {k.size(-1)}, Value.size(-1): "
                f"{v.size(-1)} instead.")
    reason = _layout_reason(p)
    if reason is not None:
        return reason
    return _dtype_reason(p, _FLASH_CPU_DTYPES, "Float, Double, BFloat16, Half")


def _dtype_reason(p, allowed, listed):
    """PyTorch's check that q, k and v share one of a kernel's dtypes (``allowed``, named
    ``listed`` in the message), or None."""
    q, k, v = p.query, p.key, p.value
    names = [str(t.dtype).rpartition(".")[2] for t in (q, k, v)]
    if names[0] == names[1] == names[2] and names[0] in allowed:
        return None
    return (f"Expected query, key and value to all be of dtype: {{{listed}}}. Got Query dtype: "
            f"{_dtname(q)}, Key dtype: {_dtname(k)}, and Value dtype: {_dtname(v)} instead.")


def use_flash_attention_cpp(params, debug=False):
    """Whether the fused CPU kernel (``_scaled_dot_product_flash_attention_for_cpu``) can run
    ``params``; with ``debug`` the failed constraint is warned."""
    reason = _flash_cpu_reasons(params)
    if reason and debug:
        warnings.warn(reason, stacklevel=3)
    return reason is None


def select_sdp_backend_cpp(params):
    """PyTorch's ``select_sdp_backend_cpp``: flash if it can run, else math if enabled; with
    neither, the reasons are warned and RuntimeError raised."""
    if not ctx.sdp["math"] and not ctx.sdp["flash"]:
        return SDPBackend.ERROR
    if use_flash_attention_cpp(params):
        return SDPBackend.FLASH_ATTENTION
    if ctx.sdp["math"]:
        return SDPBackend.MATH
    warnings.warn("Flash attention kernel not used because:", stacklevel=3)
    use_flash_attention_cpp(params, debug=True)
    raise RuntimeError("No available kernel.  Aborting execution.")


def fused_sdp_choice(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False,
                     scale=None, enable_gqa=False):
    """``aten::_fused_sdp_choice``: the backend's int value (CPU or CUDA rules by the query's
    device)."""
    params = SDPAParams(query, key, value, attn_mask, dropout_p, is_causal, enable_gqa)
    if query.device.type == "cuda":
        return int(select_sdp_backend_cuda(params))
    return int(select_sdp_backend_cpp(params))


_NO_VIABLE = ("No viable backend for scaled_dot_product_attention was found. This is likely due "
              "to turning off both the math kernel and the fused kernels.")


_EFFICIENT_DTYPES = ("float32", "bfloat16", "float16")
_FLASH_CUDA_DTYPES = ("bfloat16", "float16")


def _device_reason(p):
    q, k, v = p.query, p.key, p.value
    if q.device.type != "cuda":
        return (f"All tensors need to be on cuda device. Got query on device: {q.device}, key "
                f"on device: {k.device}, value on device: {v.device}")
    return None


def _flash_cuda_reasons(p):
    """The first constraint of PyTorch's ``can_use_flash_attention`` (in its order) or of ember's
    flash op that ``p`` fails, or None."""
    q, k, v = p.query, p.key, p.value
    if not ctx.sdp["flash"]:
        return "Flash attention has been runtime disabled."
    reason = _device_reason(p) or _dims_reason(p)
    if reason is not None:
        return reason
    if p.attn_mask is not None:
        return "Flash Attention does not support non-null attn_mask."
    if not (q.size(-1) == k.size(-1) == v.size(-1) and q.size(-1) <= 256):
        return (f"Flash attention requires q,k,v to have the same last dimension and to be less "
                f"than or equal to 256. Got Query.size(-1): {q.size(-1)}, Key.size(-1): "
                f"{k.size(-1)}, Value.size(-1): {v.size(-1)} instead.")
    from ..cuda import get_device_capability
    major, minor = get_device_capability(q.device)
    if not (8, 0) <= (major, minor) <= (12, 1):
        return (f"Flash attention only supports gpu architectures in the range [sm80, sm121]. "
                f"Attempting to run on a sm {major}.{minor} gpu.")
    if p.is_causal and q.size(-2) != k.size(-2):
        return (f"Flash attention does not support the is_causal flag when seqlen_q != "
                f"seqlen_k. Got seqlen_q: {q.size(-2)} seqlen_k: {k.size(-2)}. If you would "
                f"like to use causal attention with non-square masks, please see "
                f"CausalAttnMask.")
    reason = (_dtype_reason(p, _FLASH_CUDA_DTYPES, "Half, BFloat16")
              or _dense_input_reason(p, gqa_ok=True))
    if reason is not None:
        return reason
    if q.size(1) != k.size(1):
        return "ember's flash attention kernel takes no grouped-query heads."
    reason = _layout_reason(p, ignore_singleton_dim=True)
    if reason is not None:
        return reason
    if p.dropout > 0.0:
        return "ember's flash attention kernel takes no dropout."
    return None


def _efficient_cuda_reasons(p):
    """The first constraint ember's memory-efficient CUDA kernel fails, or None."""
    q, k = p.query, p.key
    if not ctx.sdp["mem_efficient"]:
        return "Memory Efficient attention has been runtime disabled."
    # (ember's kernel: no grouped heads)
    reason = _device_reason(p) or _dense_input_reason(p, gqa_ok=False)
    if reason is not None:
        return reason
    if p.attn_mask is not None:
        return "ember's memory-efficient attention kernel takes no attn_mask."
    if p.dropout > 0.0:
        return "ember's memory-efficient attention kernel takes no dropout."
    if q.size(-1) != k.size(-1):
        return (f"Query and key must have the same last dimension. Got Query.size(-1): "
                f"{q.size(-1)}, Key.size(-1): {k.size(-1)} instead.")
    reason = _layout_reason(p)
    if reason is not None:
        return reason
    return _dtype_reason(p, _EFFICIENT_DTYPES, "Float, BFloat16, Half")


def _check_params(kernel, params):
    if not isinstance(params, SDPAParams):
        raise TypeError(f"can_use_{kernel.split()[0].lower()}_attention(): argument 'params' "
                        f"must be SDPAParams, not {type(params).__name__}")


def _can_use(kernel, reasons, params, debug):
    _check_params(kernel, params)
    reason = reasons(params)
    if reason is not None and debug:
        warnings.warn(reason, stacklevel=4)
    return reason is None


def can_use_efficient_attention(params, debug=False):
    """Whether ember's memory-efficient CUDA kernel can run ``params``; with ``debug`` the failed
    constraint is warned."""
    return _can_use("Memory efficient attention", _efficient_cuda_reasons, params, debug)


def can_use_flash_attention(params, debug=False):
    """Whether ember's CUDA flash attention op can run ``params``; with ``debug`` the failed
    constraint is warned."""
    return _can_use("Flash attention", _flash_cuda_reasons, params, debug)


def can_use_cuda_kernel(kernel, params, debug):
    """The CUDA fused kernel ember does not have (cuDNN): False; with ``debug`` a warning says
    so."""
    _check_params(kernel, params)
    if debug:
        warnings.warn(f"{kernel} can't be used because: ember has no CUDA {kernel.lower()} "
                      f"kernel.", stacklevel=3)
    return False


def select_sdp_backend_cuda(params):
    """PyTorch's ``select_sdp_backend`` for CUDA: the first backend in priority order that can
    run; with none (math disabled too), the reasons are warned and RuntimeError raised."""
    if not any(ctx.sdp[name] for name in ("math", "flash", "mem_efficient", "cudnn")):
        return SDPBackend.ERROR
    for backend in ctx.sdp_priority:
        if backend == SDPBackend.FLASH_ATTENTION and can_use_flash_attention(params):
            return SDPBackend.FLASH_ATTENTION
        if backend == SDPBackend.EFFICIENT_ATTENTION and can_use_efficient_attention(params):
            return SDPBackend.EFFICIENT_ATTENTION
        if backend == SDPBackend.MATH and ctx.sdp["math"]:
            return SDPBackend.MATH
    warnings.warn("Memory efficient kernel not used because:", stacklevel=3)
    can_use_efficient_attention(params, debug=True)
    warnings.warn("Flash attention kernel not used because:", stacklevel=3)
    can_use_flash_attention(params, debug=True)
    warnings.warn("CuDNN attention kernel not used because:", stacklevel=3)
    can_use_cuda_kernel("cuDNN attention", params, True)
    raise RuntimeError("No available kernel. Aborting execution.")
