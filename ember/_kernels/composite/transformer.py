"""The inference fast path of ``nn.MultiheadAttention`` and ``nn.TransformerEncoderLayer``, as
ATen's ``attention.cpp``/``transformer.cpp`` define it, written in ember ops:
``_masked_softmax`` (+ backward), ``_transform_bias_rescale_qkv``,
``_native_multi_head_attention`` and ``_transformer_encoder_layer_fwd``.

The modules take this path in eval mode with no gradient wanted (``ember.backends.mha``); it
gives the general path's results, with ATen's quirks kept: a float mask is read as a boolean
one (nonzero = masked out), and a row with every key masked is NaN.
"""
import math

from ..._core import dtype as D
from ..._ops.overload import ops
from ..rules import check_failed

_aten = ops.aten


def _check(cond, message):
    if not cond:
        raise RuntimeError(message)


def _masked_softmax(self, mask, dim=None, mask_type=None):
    """softmax over ``dim`` (default: the last) with ``mask`` True where a key is masked out.
    ``mask_type`` 0: an (L, L) attention mask, 1: a (B, L) key-padding mask of a (B, H, L, L)
    input, 2: a mask of the input's shape; a mask that is not 2-D, or an input that is not
    4-D, is always type 2."""
    _check(mask._dtype is D.bool_, "Mask should be a boolean tensor")
    if mask.dim() != 2 or self.dim() != 4:
        mask_type = 2
    _check(mask_type is not None, "Mask Type should be defined")
    dim = self.dim() - 1 if dim is None else dim
    size = list(self._size)
    if mask_type == 2:
        _check(size == list(mask._size), "For mask_type == 2 mask shape should match input shape")
    elif mask_type == 1:
        _check(size[0] == mask._size[0] and size[2] == mask._size[1],
               "For mask_type == 1 mask shape should be (B, L)")
        mask = _aten.view.default._call(mask, [size[0], 1, 1, size[2]])
    elif mask_type == 0:
        _check(size[2] == mask._size[0] and size[2] == mask._size[1],
               "For mask_type == 0 mask shape should be (L, L)")
        mask = _aten.view.default._call(mask, [1, 1, size[2], size[2]])
    else:
        raise RuntimeError("Unknown mask_type")
    filled = _aten.masked_fill.Scalar._call(self, mask, float("-inf"))
    return _aten._softmax.default._call(filled, dim, False)


def _masked_softmax_backward(grad_output, output, mask, dim=None):
    _check(list(grad_output._size) == list(mask._size), "Mask shape should match grad shape")
    _check(mask._dtype is D.bool_, "Mask should be a boolean tensor")
    dim = output.dim() - 1 if dim is None else dim
    grad = _aten._softmax_backward_data.default._call(grad_output, output, dim, output._dtype)
    return _aten.masked_fill.Scalar._call(grad, mask, 0)


def _transform_bias_rescale_qkv(qkv, qkv_bias, num_heads):
    """[B, T, 3D] projections + bias -> q, k, v of shape [B, heads, T, D / heads], q scaled by
    1/sqrt(D / heads) (in the input's dtype, as ATen's kernel)."""
    B, T, three_d = qkv._size
    d = three_d // 3
    _check(d % num_heads == 0, check_failed("D % num_head == 0"))
    _check(three_d % 3 == 0, check_failed("_3D % 3 == 0"))
    head = d // num_heads
    biased = _aten.add.Tensor._call(qkv, qkv_bias, 1)
    split = _aten.view.default._call(biased, [B, T, 3, num_heads, head])
    q, k, v = (_aten.clone.default._call(_aten.permute.default._call(t, [0, 2, 1, 3]), None)
               for t in _aten.unbind.int._call(split, 2))
    q = _aten.mul.Tensor._call(q, _aten.scalar_tensor.default._call(
        1.0 / math.sqrt(head), q._dtype, None, None, None))
    return q, k, v


def _qkv_projection(query, key, value, embed_dim, qkv_weight):
    """[B, T, 3D]: one product for self-attention, split weights otherwise (ATen's order)."""
    if key is value:
        if query is key:
            return _aten.matmul.default._call(query, _aten.t.default._call(qkv_weight))
        w_q, w_kv = _aten.split_with_sizes.default._call(qkv_weight,
                                                         [embed_dim, 2 * embed_dim], 0)
        parts = [_aten.matmul.default._call(x, _aten.t.default._call(w))
                 for x, w in ((query, w_q), (key, w_kv))]
    else:
        weights = _aten.chunk.default._call(qkv_weight, 3, 0)
        parts = [_aten.matmul.default._call(x, _aten.t.default._call(w))
                 for x, w in zip((query, key, value), weights)]
    return _aten.cat.default._call(parts, 2)


def _native_multi_head_attention(query, key, value, embed_dim, num_head, qkv_weight, qkv_bias,
                                 proj_weight, proj_bias, mask=None, need_weights=True,
                                 average_attn_weights=True, mask_type=None):
    d = embed_dim
    _check(query.dim() == 3, f"expected 3-D `query`, got {query.dim()}-D tensor")
    _check(query._size[2] == embed_dim,
           f"passed-in embed_dim {embed_dim} didn't match last dim of query {query._size[2]}")
    _check(key.dim() == 3, f"expected 3-D `key`, got {key.dim()}-D tensor")
    _check(value.dim() == 3, f"expected 3-D `value`, got {value.dim()}-D tensor")
    _check(query._size == key._size == value._size,
           "expected `query`/`key`/`value` shapes to match")
    _check(qkv_weight.dim() == 2, f"expected 2-D `qkv_weight`, got {qkv_weight.dim()}-D tensor")
    _check(d * 3 == qkv_weight._size[0], "expected `qkv_weight` first dim to be 3x embed_dim")
    _check(d == qkv_weight._size[1], "expected `qkv_weight` second dim to be embed_Dim")
    _check(qkv_bias.dim() == 1, f"expected 1-D `qkv_bias`, got {qkv_bias.dim()}-D tensor")
    _check(qkv_bias._size[0] == 3 * d,
           "expected `qkv_bias` first dim and first dim of query to be equal")
    _check(d % num_head == 0, "`embed_dim` must divide evenly by `num_heads`")

    qkv = _qkv_projection(query, key, value, embed_dim, qkv_weight)
    if qkv.numel() == 0:
        return _aten.empty_like.default._call(query, None, None, None, None, None), None
    q, k, v = _aten._transform_bias_rescale_qkv.default._call(qkv, qkv_bias, num_head)
    scores = _aten.matmul.default._call(q, _aten.transpose.int._call(k, 2, 3))  # [B, H, T, T]
    if mask is not None:
        if mask._dtype is not D.bool_:  # ATen reads any mask as boolean: nonzero = masked
            mask = _aten._to_copy.default._call(mask, D.bool_, None, None, None, False, None)
        weights = _aten._masked_softmax.default._call(scores, mask, scores.dim() - 1, mask_type)
    else:
        weights = _aten._softmax.default._call(scores, scores.dim() - 1, False)
    context = _aten.matmul.default._call(weights, v)  # [B, H, T, D / H]
    B, T = query._size[0], query._size[1]
    merged = _aten.reshape.default._call(_aten.transpose.int._call(context, 1, 2), [B, T, d])
    proj = _aten.linear.default._call(merged, proj_weight, proj_bias)
    if not need_weights:
        return proj, None
    if average_attn_weights:
        weights = _aten.div.Scalar._call(_aten.sum.dim_IntList._call(weights, [1], False, None),
                                         num_head)
    return proj, weights


def _transformer_encoder_layer_fwd(src, embed_dim, num_heads, qkv_weight, qkv_bias, proj_weight,
                                   proj_bias, use_gelu, norm_first, eps, norm_weight_1,
                                   norm_bias_1, norm_weight_2, norm_bias_2, ffn_weight_1,
                                   ffn_bias_1, ffn_weight_2, ffn_bias_2, mask=None,
                                   mask_type=None):
    """One post-norm (or pre-norm) encoder layer: self-attention, residual, layer norm, the
    feed-forward block (ReLU or GELU), residual, layer norm."""
    if src.numel() == 0:
        return _aten.clone.default._call(src, None)

    def norm(x, weight, bias):
        return _aten.layer_norm.default._call(x, [embed_dim], weight, bias, eps, True)

    x = norm(src, norm_weight_1, norm_bias_1) if norm_first else src
    x = _aten._native_multi_head_attention.default._call(
        x, x, x, embed_dim, num_heads, qkv_weight, qkv_bias, proj_weight, proj_bias, mask,
        False, True, mask_type)[0]
    x = _aten.add.Tensor._call(x, src, 1)
    if not norm_first:
        x = norm(x, norm_weight_1, norm_bias_1)
    residual = x
    if norm_first:
        x = norm(x, norm_weight_2, norm_bias_2)
    hidden = _aten.linear.default._call(x, ffn_weight_1, ffn_bias_1)
    hidden = (_aten.gelu.default._call(hidden, "none") if use_gelu
              else _aten.relu.default._call(hidden))
    x = _aten.add.Tensor._call(_aten.linear.default._call(hidden, ffn_weight_2, ffn_bias_2),
                               residual, 1)
    if not norm_first:
        x = norm(x, norm_weight_2, norm_bias_2)
    return x
