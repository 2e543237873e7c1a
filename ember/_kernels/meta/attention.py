"""Meta kernels of the fused attention ops: output shapes and dtypes only."""
from ..._core import dtype as D
from ..._core.device import META
from ..._core.tensor_impl import empty_tensor


def meta__scaled_dot_product_flash_attention_for_cpu(query, key, value, dropout_p=0.0,
                                                      is_causal=False, attn_mask=None,
                                                      scale=None):
    B, H, L, _ = query.shape
    return (empty_tensor((B, H, L, value.size(-1)), query._dtype, META),
            empty_tensor((B, H, L), D.float64 if query._dtype is D.float64 else D.float32, META))


def meta__scaled_dot_product_flash_attention_for_cpu_backward(grad_out, query, key, value, out,
                                                               logsumexp, dropout_p, is_causal,
                                                               attn_mask=None, scale=None):
    return (empty_tensor(query.shape, query._dtype, META),
            empty_tensor(key.shape, key._dtype, META),
            empty_tensor(value.shape, value._dtype, META))


def meta__scaled_dot_product_efficient_attention(query, key, value, attn_bias,
                                                 compute_log_sumexp, dropout_p=0.0,
                                                 is_causal=False, scale=None):
    """PyTorch's layout: the output (B, H, L, Ev) lies as (B, L, H, Ev); the log-sum-exp is
    float32 with L rounded up to 32 (empty without compute_log_sumexp)."""
    B, H, L, _ = query.shape
    out = empty_tensor((B, L, H, value.size(-1)), query._dtype, META).transpose(1, 2)
    lse = empty_tensor((B, H, -(-L // 32) * 32 if compute_log_sumexp else 0), D.float32, META)
    return out, lse, empty_tensor((), D.int64, META), empty_tensor((), D.int64, META)


def meta__scaled_dot_product_efficient_attention_backward(grad_out_, query, key, value,
                                                          attn_bias, out, logsumexp,
                                                          philox_seed, philox_offset, dropout_p,
                                                          grad_input_mask, is_causal=False,
                                                          scale=None):
    grads = tuple(empty_tensor(t.shape, t._dtype, META) if m else None
                  for t, m in zip((query, key, value), grad_input_mask))
    return grads + (None,)


def meta__scaled_dot_product_flash_attention(query, key, value, dropout_p=0.0, is_causal=False,
                                             return_debug_mask=False, scale=None):
    """As the CUDA kernel: the output (B, H, L, Ev) laid out as (B, L, H, Ev), the log-sum-exp
    float32 (B, H, L), no cumulative sequence lengths (dense inputs), the maximum lengths, the
    Philox state's two uint64 words and an unused one, an empty debug mask."""
    B, H, L, _ = query.shape
    out = empty_tensor((B, L, H, value.size(-1)), query._dtype, META).transpose(1, 2)
    return (out, empty_tensor((B, H, L), D.float32, META), None, None, L, key.size(2),
            empty_tensor((2,), D.uint64, META), empty_tensor((), D.uint64, META),
            empty_tensor((0,), query._dtype, META))


def meta__scaled_dot_product_flash_attention_backward(grad_out, query, key, value, out,
                                                      logsumexp, cum_seq_q, cum_seq_k, max_q,
                                                      max_k, dropout_p, is_causal, philox_seed,
                                                      philox_offset, scale=None):
    return tuple(empty_tensor(t.shape, t._dtype, META) for t in (query, key, value))
