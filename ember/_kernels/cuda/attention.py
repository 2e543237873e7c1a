"""Memory-efficient attention on CUDA: ``aten::_scaled_dot_product_efficient_attention`` and its
backward, what ``scaled_dot_product_attention`` runs on a CUDA device when PyTorch's rules pick
the memory-efficient backend (``ember/backends/_sdp.py``).

Blocked attention on matrix products (xformers' "small-k" path; FlashAttention's equations with
the tiles as large as a memory budget allows): the queries go in blocks of rows, and for each
block the scores ``q kᵀ · scale`` are one batched product, the causal mask one broadcast add,
the softmax an exact one over the block's rows, ``p v`` another product. The scores of at most
``_SCORES_BUDGET`` bytes exist at a time, so the memory stays bounded at any sequence length,
and the arithmetic is cuBLAS's (float32 products, no tf32, as PyTorch's float32 kernel). The
backward recomputes each block's probabilities from the forward's log-sum-exp:

    dV += pᵀ dO,   dP = dO vᵀ,   dS = p (dP − rowsum(dO ∘ O)),   dQ = dS k · scale,
    dK += dSᵀ q · scale.

On a GPU the arrays are CuPy's (products on cuBLAS); on the simulated device NumPy's on the
device memory: the same code runs in CI. float16 and bfloat16 inputs compute in float32
(converted copies) and round the output once.

As PyTorch's: the output is (B, H, L, Ev) laid out as (B, L, H, Ev) (its transpose back to
(B, L, H * Ev) is free), the log-sum-exp is float32 (B, H, L rounded up to 32), the Philox seed
and offset are 0-dim int64 CPU tensors. What ember's kernels do not take — an attention bias,
dropout, grouped-query heads, float64 — ``_sdp.py`` sends to the math path instead; called
directly with those, these ops raise.
"""
import math

import numpy as np

from ..._core import dtype as D
from ..._core.device import device as _device
from ..._core.tensor_impl import empty_tensor
from .arrays import device_array, launch

_ALIGN_LSE = 32  # PyTorch's kAlignLSE: the log-sum-exp rows are padded to a multiple of this
_SCORES_BUDGET = 128 << 20  # bytes of float32 scores per block of query rows
_CPU = _device("cpu")


def _blocks(B, H, L, S):
    """(batch slices, row slices) whose blocks hold at most _SCORES_BUDGET bytes of scores."""
    per_row = 4 * S  # one query row of one (batch, head)
    rows = max(1, _SCORES_BUDGET // max(per_row * H, 1))
    batches = max(1, rows // L) if rows >= L else 1
    rows = min(rows, L)
    return ([slice(b, min(b + batches, B)) for b in range(0, B, batches)],
            [slice(i, min(i + rows, L)) for i in range(0, L, rows)])


def _causal_mask(xp, rows, S, device):
    """(rows, S) float32: -inf where key j > query i (top-left alignment: query i sees keys
    0..i), else 0. The last few are kept (a model asks for the same ones at every layer)."""
    key = (xp.__name__, device, rows.start, rows.stop, S)
    mask = _masks.get(key)
    if mask is None:
        i = xp.arange(rows.start, rows.stop).reshape(-1, 1)
        mask = xp.where(xp.arange(S).reshape(1, -1) > i, np.float32(-np.inf), np.float32(0))
        from ...cuda.graphs import is_current_stream_capturing
        if not is_current_stream_capturing():  # (captured, its values exist only in replays)
            if len(_masks) >= 8:
                _masks.pop(next(iter(_masks)))
            _masks[key] = mask
    return mask


_masks = {}


def _scores(xp, q, k, rows, S, scale, causal, device):
    """q kᵀ · scale for query rows ``rows`` (a slice), the causal mask applied."""
    s = xp.matmul(q[:, :, rows], k.swapaxes(-1, -2))
    s *= np.float32(scale)
    if causal:
        s += _causal_mask(xp, rows, S, device)
    return s


def _float32(t):
    return t if t._dtype is D.float32 else t.to(D.float32)


def _scale(query, scale):
    return 1.0 / math.sqrt(query.size(-1)) if scale is None else float(scale)


def _check_supported(query, key, value, attn_bias, dropout_p):
    if attn_bias is not None:
        raise NotImplementedError("ember's memory-efficient attention takes no attn_bias (the "
                                  "math path does: scaled_dot_product_attention picks it)")
    if dropout_p > 0.0:
        raise NotImplementedError("ember's memory-efficient attention takes no dropout (the math "
                                  "path does: scaled_dot_product_attention picks it)")
    if query.dim() != 4 or key.dim() != 4 or value.dim() != 4:
        raise RuntimeError("_scaled_dot_product_efficient_attention: query, key and value must "
                           "be 4-dimensional (batch, heads, sequence, head dimension)")
    for t in (query, key, value):
        if t._dtype not in (D.float32, D.float16, D.bfloat16):
            raise RuntimeError(f"_scaled_dot_product_efficient_attention: expected query, key "
                               f"and value to be of dtype Float, Half or BFloat16, got "
                               f"{t._dtype}")


def _scaled_dot_product_efficient_attention(query, key, value, attn_bias, compute_log_sumexp,
                                            dropout_p=0.0, is_causal=False, scale=None):
    _check_supported(query, key, value, attn_bias, dropout_p)
    B, H, L, _ = query.shape
    S, Ev = key.size(2), value.size(-1)
    dev = query._device
    q, k, v = (_float32(t) for t in (query, key, value))
    # (B, L, H, Ev) memory, seen as (B, H, L, Ev): PyTorch's layout of this output
    out = empty_tensor((B, L, H, Ev), D.float32, dev).transpose(1, 2)
    padded = -(-L // _ALIGN_LSE) * _ALIGN_LSE
    lse = empty_tensor((B, H, padded), D.float32, dev)
    sc, causal = _scale(query, scale), bool(is_causal)

    def body(xp, rt):
        qa, ka, va, oa, la = (device_array(t, rt) for t in (q, k, v, out, lse))
        if not S:  # nothing to attend to
            oa[...] = 0
            la[...] = -np.inf
            return
        batches, row_blocks = _blocks(B, H, L, S)
        for b in batches:
            for rows in row_blocks:
                s = _scores(xp, qa[b], ka[b], rows, S, sc, causal, dev)
                m = s.max(-1, keepdims=True)
                s -= m
                xp.exp(s, out=s)
                total = s.sum(-1, keepdims=True)
                oa[b, :, rows] = xp.matmul(s, va[b]) / total
                la[b, :, rows] = (m + xp.log(total))[..., 0]
    if B * H * L:
        launch(dev, body, capturable=True)
    if out._dtype is not query._dtype:
        out = out.to(query._dtype)
    if not compute_log_sumexp:
        lse = empty_tensor((B, H, 0), D.float32, dev)
    seed = empty_tensor((), D.int64, _CPU).zero_()
    offset = empty_tensor((), D.int64, _CPU).zero_()
    return out, lse, seed, offset


def _scaled_dot_product_efficient_attention_backward(grad_out_, query, key, value, attn_bias,
                                                     out, logsumexp, philox_seed, philox_offset,
                                                     dropout_p, grad_input_mask, is_causal=False,
                                                     scale=None):
    _check_supported(query, key, value, attn_bias, dropout_p)
    B, H, L, Dq = query.shape
    S, Ev = key.size(2), value.size(-1)
    q, k, v, o, g = (_float32(t) for t in (query, key, value, out, grad_out_))
    if logsumexp.size(-1) < L:
        raise RuntimeError("_scaled_dot_product_efficient_attention_backward: the forward's "
                           "logsumexp is needed (compute_log_sumexp=True)")
    dev = query._device
    dq = empty_tensor((B, H, L, Dq), D.float32, dev)
    dk = empty_tensor((B, H, S, Dq), D.float32, dev)
    dv = empty_tensor((B, H, S, Ev), D.float32, dev)
    sc, causal = _scale(query, scale), bool(is_causal)

    def body(xp, rt):
        qa, ka, va, oa, ga, la, dqa, dka, dva = (device_array(t, rt) for t in (
            q, k, v, o, g, logsumexp, dq, dk, dv))
        dqa[...], dka[...], dva[...] = 0, 0, 0
        if not S:
            return
        batches, row_blocks = _blocks(B, H, L, S)
        for b in batches:
            for rows in row_blocks:
                p = _scores(xp, qa[b], ka[b], rows, S, sc, causal, dev)
                p -= la[b, :, rows, None]
                xp.exp(p, out=p)  # the forward's probabilities
                gb = ga[b, :, rows]
                dva[b] += xp.matmul(p.swapaxes(-1, -2), gb)
                ds = xp.matmul(gb, va[b].swapaxes(-1, -2))
                ds -= (gb * oa[b, :, rows]).sum(-1, keepdims=True)
                ds *= p
                ds *= np.float32(sc)
                dqa[b, :, rows] = xp.matmul(ds, ka[b])
                dka[b] += xp.matmul(ds.swapaxes(-1, -2), qa[b, :, rows])
    if B * H * max(L, S):
        launch(dev, body, capturable=True)
    grads = [t if t._dtype is ref._dtype else t.to(ref._dtype)
             for t, ref in ((dq, query), (dk, key), (dv, value))]
    mask = list(grad_input_mask) + [False] * (4 - len(grad_input_mask))
    return tuple(g if m else None for g, m in zip(grads, mask[:3])) + (None,)


def kernels():
    return {"_scaled_dot_product_efficient_attention": _scaled_dot_product_efficient_attention,
            "_scaled_dot_product_efficient_attention_backward":
                _scaled_dot_product_efficient_attention_backward}
