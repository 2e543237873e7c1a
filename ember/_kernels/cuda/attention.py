"""Memory-efficient attention on CUDA: ``aten::_scaled_dot_product_efficient_attention`` and its
backward, what ``scaled_dot_product_attention`` runs on a CUDA device when PyTorch's rules pick
the memory-efficient backend (``ember/backends/_sdp.py``).

On a GPU with Triton installed both run as fused kernels (``flash_attention.py``,
FlashAttention-2 in Triton) when they take the inputs (head dimensions up to 128); a launch that
fails there is logged once and the blocked products below take over. Elsewhere — the simulated
device, no Triton, larger heads — attention is the blocked products:

Blocked attention on matrix products (xformers' "small-k" path; FlashAttention's equations with
the tiles as large as a memory budget allows), written with ember's own CUDA ops: the queries go
in blocks of rows, and for each block the scores ``q kᵀ · scale`` (plus the causal mask) are one
``baddbmm``; the softmax is an exact one over the block's rows (the row maximum subtracted and
``exp`` in place; the row sums divide ``p v``, one ``bmm``, and give the log-sum-exp). The
scores of at most ``_SCORES_BUDGET`` bytes exist at a time, so the memory stays bounded at any
sequence length, and the arithmetic is cuBLAS's (float32 products, no tf32, as PyTorch's float32
kernel; ``blas.py``'s direct calls, which a CUDA graph can capture). The backward recomputes each
block's probabilities from the forward's log-sum-exp:

    dV += pᵀ dO,   dP = dO vᵀ,   dS = p (dP − rowsum(dO ∘ O)),   dQ = dS k · scale,
    dK += dSᵀ q · scale.

The ops are called below autograd (they compute the op, they are not recorded), so the same code
runs on a GPU and on the simulated device in CI. float16 and bfloat16 inputs compute in float32
(converted copies) and round the output once.

As PyTorch's: the output is (B, H, L, Ev) laid out as (B, L, H, Ev) (its transpose back to
(B, L, H * Ev) is free), the log-sum-exp is float32 (B, H, L rounded up to 32), the Philox seed
and offset are 0-dim int64 CPU tensors. What ember's kernels do not take — an attention bias,
dropout, grouped-query heads, float64 — ``_sdp.py`` sends to the math path instead; called
directly with those, these ops raise.
"""
import logging
import math

from ... import autograd
from ..._core import dtype as D
from ..._core.device import device as _device
from ..._core.tensor_impl import empty_tensor
from ..._ops.overload import ops
from . import flash_attention
from .arrays import runtime

_aten = ops.aten
_ALIGN_LSE = 32  # PyTorch's kAlignLSE: the log-sum-exp rows are padded to a multiple of this
_SCORES_BUDGET = 128 << 20  # bytes of float32 scores per block of query rows
_CPU = _device("cpu")
log = logging.getLogger(__name__)

# The fused Triton kernels (flash_attention.py): None — on a GPU where Triton is installed, the
# blocked products elsewhere (the simulated device); True — wherever they take the inputs
# (tests, under Triton's interpreter); False — never.
use_triton = None
_triton_failed = []  # the error of a GPU launch that failed: the blocked path from then on


def _fused(query, key, value):
    if use_triton is False or _triton_failed or use_triton is None and runtime().simulated:
        return False
    return flash_attention.supports(query, key, value) and flash_attention.available()


def _try_fused(kernels, *args):
    """``kernels(*args)`` (a flash_attention launch), or None where it fails on a GPU (Triton
    missing a piece, a driver error): logged once, and the blocked path runs from then on. Where
    the kernels were asked for (``use_triton = True``: a test) the error is raised."""
    try:
        return kernels(*args)
    except Exception as e:  # noqa: BLE001
        if use_triton is True:
            raise
        _triton_failed.append(f"{type(e).__name__}: {e}")
        log.warning("ember: the fused attention kernels failed to launch (%s); attention runs "
                    "as blocked products from now on", _triton_failed[0][:300])
        return None


def _blocks(B, H, L, S):
    """(batch slices, row slices) whose blocks hold at most _SCORES_BUDGET bytes of scores."""
    per_row = 4 * S  # one query row of one (batch, head)
    rows = max(1, _SCORES_BUDGET // max(per_row * H, 1))
    batches = max(1, rows // L) if rows >= L else 1
    rows = min(rows, L)
    return ([slice(b, min(b + batches, B)) for b in range(0, B, batches)],
            [slice(i, min(i + rows, L)) for i in range(0, L, rows)])


def _scores(q, k, rows, scale, causal):
    """``q kᵀ · scale`` for query rows ``rows`` (a slice) of ``q`` (N, L, D) against ``k``
    (N, S, D), with the causal mask (top-left: query i sees keys 0..i)."""
    r, S = rows.stop - rows.start, k.size(1)
    qr, kt = q[:, rows], k.transpose(1, 2)
    if not causal:
        return _aten.bmm.default(qr, kt).mul_(scale)
    # -inf where key j > query i, that is j - (i - start) >= start + 1
    mask = _aten.full.default((r, S), -math.inf, dtype=D.float32, device=q.device)
    return _aten.baddbmm.default(_aten.triu.default(mask, rows.start + 1), qr, kt, alpha=scale)


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


def _batched(t):
    """(B, H, n, d) as (B·H, n, d) contiguous float32 (a copy only when the layout needs one)."""
    B, H, n, d = t.shape
    return _float32(t).reshape(B * H, n, d)


def _scaled_dot_product_efficient_attention(query, key, value, attn_bias, compute_log_sumexp,
                                            dropout_p=0.0, is_causal=False, scale=None):
    _check_supported(query, key, value, attn_bias, dropout_p)
    B, H, L, _ = query.shape
    S, Ev = key.size(2), value.size(-1)
    dev = query._device
    padded = -(-L // _ALIGN_LSE) * _ALIGN_LSE
    lse = empty_tensor((B, H, padded), D.float32, dev)
    sc, causal = _scale(query, scale), bool(is_causal)
    if S and B * H * L and _fused(query, key, value):
        out = _try_fused(flash_attention.forward, query, key, value, lse, sc, causal)
        if out is not None:
            return _with_lse(out, lse, compute_log_sumexp)
    # (B, L, H, Ev) memory, seen as (B, H, L, Ev): PyTorch's layout of this output
    out = empty_tensor((B, L, H, Ev), D.float32, dev).transpose(1, 2)
    with autograd.no_grad():
        if not S:  # nothing to attend to
            out.zero_()
            lse.fill_(-math.inf)
        elif B * H * L:
            q, k, v = (_batched(t) for t in (query, key, value))
            batches, row_blocks = _blocks(B, H, L, S)
            for b in batches:
                n, nb = slice(b.start * H, b.stop * H), b.stop - b.start
                for rows in row_blocks:
                    r = rows.stop - rows.start
                    e = _scores(q[n], k[n], rows, sc, causal)
                    m = e.amax(-1, keepdim=True)
                    e.sub_(m).exp_()  # the softmax's numerators; its denominators:
                    total = e.sum(-1, keepdim=True)
                    o = _aten.bmm.default(e, v[n]).div_(total)
                    out[b, :, rows].copy_(o.view(nb, H, r, Ev))
                    lse[b, :, rows].copy_(total.log_().add_(m).view(nb, H, r))
    if out._dtype is not query._dtype:
        out = out.to(query._dtype)
    return _with_lse(out, lse, compute_log_sumexp)


def _with_lse(out, lse, compute_log_sumexp):
    """The op's four results: the output, the log-sum-exp (empty unless asked for), and the
    Philox seed and offset of the dropout it does not do."""
    if not compute_log_sumexp:
        lse = empty_tensor((*lse.shape[:2], 0), D.float32, lse._device)
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
    if logsumexp.size(-1) < L:
        raise RuntimeError("_scaled_dot_product_efficient_attention_backward: the forward's "
                           "logsumexp is needed (compute_log_sumexp=True)")
    dev = query._device
    sc, causal = _scale(query, scale), bool(is_causal)
    mask = list(grad_input_mask) + [False] * (4 - len(grad_input_mask))
    if S and B * H * L and _fused(query, key, value):
        grads = _try_fused(flash_attention.backward, grad_out_, query, key, value, out,
                           logsumexp, sc, causal)
        if grads is not None:
            return tuple(g if m else None for g, m in zip(grads, mask[:3])) + (None,)
    dq = empty_tensor((B * H, L, Dq), D.float32, dev)
    dk = empty_tensor((B * H, S, Dq), D.float32, dev)
    dv = empty_tensor((B * H, S, Ev), D.float32, dev)
    with autograd.no_grad():
        dk.zero_(), dv.zero_()
        if not S:
            dq.zero_()
        elif B * H * L:
            q, k, v, o, g = (_batched(t) for t in (query, key, value, out, grad_out_))
            batches, row_blocks = _blocks(B, H, L, S)
            for b in batches:
                n, nb = slice(b.start * H, b.stop * H), b.stop - b.start
                for rows in row_blocks:
                    r = rows.stop - rows.start
                    block_lse = logsumexp[b, :, rows].reshape(nb * H, r, 1)
                    p = _scores(q[n], k[n], rows, sc, causal).sub_(block_lse).exp_()
                    g_r, o_r = g[n, rows], o[n, rows]
                    dv[n].add_(_aten.bmm.default(p.transpose(1, 2), g_r))
                    ds = _aten.bmm.default(g_r, v[n].transpose(1, 2))
                    ds.sub_((g_r * o_r).sum(-1, keepdim=True)).mul_(p)
                    dq[n, rows] = _aten.bmm.default(ds, k[n]).mul_(sc)
                    dk[n].add_(_aten.bmm.default(ds.transpose(1, 2), q[n, rows]), alpha=sc)
    grads = [t.view(B, H, *t.shape[1:]) for t in (dq, dk, dv)]
    grads = [t if t._dtype is ref._dtype else t.to(ref._dtype)
             for t, ref in zip(grads, (query, key, value))]
    return tuple(g if m else None for g, m in zip(grads, mask[:3])) + (None,)


def kernels():
    return {"_scaled_dot_product_efficient_attention": _scaled_dot_product_efficient_attention,
            "_scaled_dot_product_efficient_attention_backward":
                _scaled_dot_product_efficient_attention_backward}
