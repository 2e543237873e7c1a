"""Meta kernels of the fused CPU attention ops: output shapes and dtypes only."""
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
