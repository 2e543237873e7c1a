"""``scaled_dot_product_attention`` on jagged tensors (PyTorch's ``torch/nested/_internal/
sdpa.py``): variable-length attention, each sequence attending within itself.

ember has one backend here, PyTorch's math path: each component's query attends to the same
component's key and value with dense SDPA, and the outputs are packed into a jagged tensor with
the query's raggedness. PyTorch's flash and memory-efficient kernels (CUDA) are not built, and
``is_causal`` gets PyTorch's CPU answer: no viable backend.
"""
from .nested_tensor import NestedTensor, nested_view_from_values_offsets_lengths


def _validate_sdpa_input(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False,
                         scale=None):
    if not (isinstance(query, NestedTensor) and isinstance(key, NestedTensor)
            and isinstance(value, NestedTensor)):
        raise ValueError(
            f"Expected query, key, and value to be nested tensors, but got query.is_nested: "
            f"{query.is_nested}, key.is_nested: {key.is_nested}, and value.is_nested: "
            f"{value.is_nested} instead.")
    if query.dtype != key.dtype or query.dtype != value.dtype:
        raise ValueError(
            f"Expected query, key, and value to have the same dtype, but got query.dtype: "
            f"{query.dtype}, key.dtype: {key.dtype}, and value.dtype: {value.dtype} instead.")
    if query.device != key.device or query.device != value.device:
        raise ValueError(
            f"Expected query, key, and value to have the same device type, but got "
            f"query.device: {query.device}, key.device: {key.device}, and value.device: "
            f"{value.device} instead.")
    if query.dim() < 3 or key.dim() < 3 or value.dim() < 3:
        raise ValueError(
            f"Expected query, key, and value to all be at least 3 dimensional, but got "
            f"query.dim: {query.dim()}, key.dim: {key.dim()} and value.dim: {value.dim()} "
            f"instead.")
    if query._ragged_idx != key._ragged_idx or query._ragged_idx != value._ragged_idx:
        raise ValueError(
            f"Expected query, key, and value to all be ragged on the same dimension, but got "
            f"ragged dims {query._ragged_idx}, {key._ragged_idx}, and {value._ragged_idx}, "
            f"respectively.")
    if attn_mask is not None:
        raise ValueError("Masks are not yet supported!")


def jagged_scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                        is_causal=False, scale=None, enable_gqa=False):
    import ember
    import ember.nn.functional as F
    from .ops import _pieces
    _validate_sdpa_input(query, key, value, attn_mask, dropout_p, is_causal, scale)
    r = query._ragged_idx
    if query.dim() > 3 and r == 1:
        # the ragged dim is a second batch dim, not the sequence: dense SDPA on the values
        out = F.scaled_dot_product_attention(query.values(), key.values(), value.values(),
                                             dropout_p=dropout_p, is_causal=is_causal,
                                             scale=scale, enable_gqa=enable_gqa)
        return nested_view_from_values_offsets_lengths(out, query._offsets, query._lengths)
    if r != query.dim() - 2:
        raise RuntimeError(f"scaled_dot_product_attention(): the ragged dim of a nested tensor "
                           f"must be the sequence dim ({query.dim() - 2}), got {r}")
    if is_causal:
        raise RuntimeError("No viable backend for scaled_dot_product_attention was found.")
    outs = [F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p, scale=scale,
                                           enable_gqa=enable_gqa)
            for q, k, v in zip(_pieces(query, query.values()), _pieces(key, key.values()),
                               _pieces(value, value.values()))]
    offsets = query._offsets
    if query._lengths is not None:  # the outputs are packed: no holes between them
        offsets = F.pad(query._lengths.cumsum(0), (1, 0))
    return nested_view_from_values_offsets_lengths(
        ember.cat(outs, r - 1), offsets, ragged_idx=r,
        min_seqlen=query._maybe_min_seqlen, max_seqlen=query._maybe_max_seqlen)
