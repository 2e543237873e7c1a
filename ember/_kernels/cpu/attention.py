"""The fused CPU attention kernel, ``aten::_scaled_dot_product_flash_attention_for_cpu`` and its
backward: softmax(q k^T * scale + mask) v computed block by block over the keys with an online
softmax (FlashAttention's recurrence), so the extra memory is one (queries x key-block) score
tile per head instead of the full (queries x keys) matrix.

Layout: query heads that share a key/value head (grouped-query attention) are stacked along
the query axis, so each key/value head is multiplied once and its gradient sums over the group
inside the same product. Half and bfloat16 inputs compute in float32, as PyTorch accumulates.
"""
import math

import numpy as np

from ..._core import dtype as D
from ..._core.blas import matmul as _matmul
from ._util import nd, wrap


_TILE_ELEMENTS = 1 << 24  # score-tile budget (all heads together): 64 MiB in float32
_MAX_BLOCK = 256  # keys per block: bounds the tile by (queries x 256) whatever the budget


def _work(t):
    a = nd(t)
    if t._dtype in (D.float16, D.bfloat16):
        return a.astype(np.float32)
    return a


def _layout(query, key, value, attn_mask, scale):
    """(q*scale, k, v, mask-block function, shapes) with q as (B*Hk, rep*L, E)."""
    B, Hq, L, E = query.shape
    Hk, S = key.size(1), key.size(2)
    rep = Hq // Hk
    scale = 1.0 / math.sqrt(E) if scale is None else scale
    q = _work(query)
    dt = q.dtype
    q = (q * dt.type(scale)).reshape(B * Hk, rep * L, E)
    k = np.ascontiguousarray(_work(key)).reshape(B * Hk, S, E)
    v = np.ascontiguousarray(_work(value)).reshape(B * Hk, S, value.size(-1))
    mask = None
    if attn_mask is not None:
        m = nd(attn_mask)
        if m.dtype == np.bool_:  # the frontend turns boolean masks into additive ones first
            raise RuntimeError("scaled_dot_product_attention_flash_attention: Attention mask is "
                               "the same data type as query")
        m = m.astype(dt, copy=False)
        mask = np.broadcast_to(m.reshape((1,) * (4 - m.ndim) + m.shape), (B, Hq, L, S))
    return q, k, v, mask, (B, Hq, Hk, rep, L, S, E, scale)


def _bias(mask, is_causal, s0, s1, shapes, dt):
    """The additive mask of key block [s0, s1) in the stacked layout, or None."""
    B, Hq, Hk, rep, L, S, E, _ = shapes
    bias = None
    if mask is not None:
        bias = mask[..., s0:s1].reshape(B * Hk, rep * L, s1 - s0)
    if is_causal:  # top-left aligned: query i sees keys j <= i
        rows = np.arange(L)[:, None]
        causal = np.where(np.arange(s0, s1)[None, :] <= rows, dt.type(0), dt.type(-np.inf))
        causal = np.tile(causal, (rep, 1))[None]
        bias = causal if bias is None else bias + causal
    return bias


def _block(shapes):
    B, Hq, Hk, rep, L, S, E, _ = shapes
    return int(max(32, min(S, _MAX_BLOCK, _TILE_ELEMENTS // max(1, B * Hq * L))))


def _scaled_dot_product_flash_attention_for_cpu(query, key, value, dropout_p=0.0,
                                                 is_causal=False, attn_mask=None, scale=None):
    if dropout_p > 0.0:
        raise RuntimeError("scaled_dot_product_flash_attention_for_cpu: dropout is not "
                           "supported")
    q, k, v, mask, shapes = _layout(query, key, value, attn_mask, scale)
    B, Hq, Hk, rep, L, S, E, _ = shapes
    dt = q.dtype
    BH, R = q.shape[0], q.shape[1]
    m = np.full((BH, R), -np.inf, dt)  # running row max
    denom = np.zeros((BH, R), dt)  # running sum of exp
    acc = np.zeros((BH, R, v.shape[-1]), dt)
    blk = _block(shapes)
    with np.errstate(invalid="ignore", over="ignore"):
        for s0 in range(0, S, blk):
            s1 = min(S, s0 + blk)
            s = _matmul(q, k[:, s0:s1].transpose(0, 2, 1))
            bias = _bias(mask, is_causal, s0, s1, shapes, dt)
            if bias is not None:
                s += bias
            m_new = np.maximum(m, s.max(axis=-1))
            m_safe = np.where(np.isfinite(m_new), m_new, dt.type(0))  # fully masked so far
            s -= m_safe[..., None]
            np.exp(s, out=s)
            alpha = np.exp(m - m_safe)
            denom *= alpha
            denom += s.sum(axis=-1)
            acc *= alpha[..., None]
            acc += _matmul(s, v[:, s0:s1])
            m = m_new
        # rows with every key masked: output 0 and logsumexp 0, as PyTorch's kernel
        empty = denom == 0
        denom[empty] = 1
        out = acc / denom[..., None]
        lse = m + np.log(denom)
        lse[empty] = 0
    out = out.reshape(B, Hq, L, v.shape[-1]).astype(query._dtype._np, copy=False)
    lse = lse.reshape(B, Hq, L).astype(np.float64 if dt == np.float64 else np.float32,
                                       copy=False)
    return wrap(np.ascontiguousarray(out)), wrap(np.ascontiguousarray(lse))


def _scaled_dot_product_flash_attention_for_cpu_backward(grad_out, query, key, value, out,
                                                          logsumexp, dropout_p, is_causal,
                                                          attn_mask=None, scale=None):
    q, k, v, mask, shapes = _layout(query, key, value, attn_mask, scale)
    B, Hq, Hk, rep, L, S, E, sc = shapes
    dt = q.dtype
    BH, R = q.shape[0], q.shape[1]
    do = _work(grad_out).astype(dt, copy=False).reshape(BH, R, -1)
    o = _work(out).astype(dt, copy=False).reshape(BH, R, -1)
    lse = nd(logsumexp).astype(dt, copy=False).reshape(BH, R)
    delta = np.einsum("brd,brd->br", do, o)[..., None]
    dq = np.zeros_like(q)
    dk = np.empty_like(k)
    dv = np.empty_like(v)
    blk = _block(shapes)
    with np.errstate(invalid="ignore", over="ignore"):
        for s0 in range(0, S, blk):
            s1 = min(S, s0 + blk)
            kb = k[:, s0:s1]
            p = _matmul(q, kb.transpose(0, 2, 1))
            bias = _bias(mask, is_causal, s0, s1, shapes, dt)
            if bias is not None:
                p += bias
            p -= lse[..., None]
            np.exp(p, out=p)
            dv[:, s0:s1] = _matmul(p.transpose(0, 2, 1), do)
            ds = _matmul(do, v[:, s0:s1].transpose(0, 2, 1))
            ds -= delta
            ds *= p
            dq += _matmul(ds, kb)
            dk[:, s0:s1] = _matmul(ds.transpose(0, 2, 1), q)  # q already carries the scale
    dq *= dt.type(sc)
    dq = dq.reshape(B, Hq, L, E).astype(query._dtype._np, copy=False)
    dk = dk.reshape(B, Hk, S, E).astype(key._dtype._np, copy=False)
    dv = dv.reshape(B, Hk, S, -1).astype(value._dtype._np, copy=False)
    return wrap(np.ascontiguousarray(dq)), wrap(dk), wrap(dv)
