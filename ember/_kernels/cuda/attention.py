"""Attention on CUDA: ``aten::_scaled_dot_product_flash_attention`` and
``aten::_scaled_dot_product_efficient_attention`` with their backward ops, what
``scaled_dot_product_attention`` runs on a CUDA device when PyTorch's rules pick the flash
backend (float16/bfloat16) or the memory-efficient one (``ember/backends/_sdp.py``). The two ops
differ in their schemas and in what they take (PyTorch's flash op: half types only; the
memory-efficient op: float32 too), not in how they compute: one forward and one backward below.

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
(B, L, H * Ev) is free); the memory-efficient op's log-sum-exp is float32 (B, H, L rounded up to
32) and its Philox seed and offset 0-dim int64 CPU tensors; the flash op's log-sum-exp is
float32 (B, H, L), its Philox state two uint64 words on the device. What ember's kernels do not
take — an attention bias, dropout, grouped-query heads, float64 — ``_sdp.py`` sends to the math
path instead; called directly with those, these ops raise.
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


def _scores(q, k, rows, scale, offset):
    """``q kᵀ · scale`` for query rows ``rows`` (a slice) of ``q`` (N, L, D) against ``k``
    (N, S, D), with the causal mask of diagonal ``offset`` (query i sees keys 0..i + offset;
    None: no mask)."""
    r, S = rows.stop - rows.start, k.size(1)
    qr, kt = q[:, rows], k.transpose(1, 2)
    if offset is None:
        return _aten.bmm.default(qr, kt).mul_(scale)
    # -inf where key j > query i + offset, that is j - (i - start) >= start + offset + 1
    mask = _aten.full.default((r, S), -math.inf, dtype=D.float32, device=q.device)
    return _aten.baddbmm.default(_aten.triu.default(mask, rows.start + offset + 1), qr, kt,
                                 alpha=scale)


def _float32(t):
    return t if t._dtype is D.float32 else t.to(D.float32)


def _scale(query, scale):
    return 1.0 / math.sqrt(query.size(-1)) if scale is None else float(scale)


def _check_supported(op, query, key, value, dropout_p, dtypes=(D.float32, D.float16, D.bfloat16),
                     dtype_message="of dtype Float, Half or BFloat16"):
    """What every call of ``op`` (either attention op) must be: 4-dimensional inputs of one of
    ``dtypes``, no dropout (ember's kernels draw none)."""
    if dropout_p > 0.0:
        raise NotImplementedError(f"ember's {op} takes no dropout (the math path does: "
                                  f"scaled_dot_product_attention picks it)")
    if query.dim() != 4 or key.dim() != 4 or value.dim() != 4:
        raise RuntimeError(f"{op}: query, key and value must be 4-dimensional (batch, heads, "
                           f"sequence, head dimension)")
    for t in (query, key, value):
        if t._dtype not in dtypes:
            raise RuntimeError(f"{op}: expected query, key and value to be {dtype_message}, "
                               f"got {t._dtype}")


def _check_efficient(query, key, value, attn_bias, dropout_p):
    if attn_bias is not None:
        raise NotImplementedError("ember's memory-efficient attention takes no attn_bias (the "
                                  "math path does: scaled_dot_product_attention picks it)")
    _check_supported("_scaled_dot_product_efficient_attention", query, key, value, dropout_p)


def _check_flash(query, key, value, dropout_p):
    _check_supported("_scaled_dot_product_flash_attention", query, key, value, dropout_p,
                     (D.float16, D.bfloat16), "of dtype Half or BFloat16 (FlashAttention only "
                     "supports fp16 and bf16)")
    if not query.size(-1) == key.size(-1) == value.size(-1) or query.size(-1) > 256:
        raise RuntimeError("_scaled_dot_product_flash_attention: query, key and value must "
                           "have one head dimension of at most 256")


def _flash_offset(query, key, is_causal):
    """The flash op's causal diagonal: bottom-right, as PyTorch's flash kernel aligns it (the
    same as top-left where the lengths agree)."""
    return key.size(2) - query.size(2) if is_causal else None


def _batched(t):
    """(B, H, n, d) as (B·H, n, d) contiguous float32 (a copy only when the layout needs one)."""
    B, H, n, d = t.shape
    return _float32(t).reshape(B * H, n, d)


def _forward(query, key, value, lse, scale, offset):
    """The attention of ``query`` over ``key``/``value`` in the query's dtype, (B, H, L, Ev)
    laid out as (B, L, H, Ev), under the causal mask of diagonal ``offset`` (see _scores; None:
    none); each row's log-sum-exp written into ``lse`` (B, H, ≥ L). A row the mask leaves no
    key (offset < 0) gets zeros and an infinite log-sum-exp, as FlashAttention's."""
    B, H, L, _ = query.shape
    S, Ev = key.size(2), value.size(-1)
    dev = query._device
    sc = _scale(query, scale)
    if S and B * H * L and _fused(query, key, value):
        out = _try_fused(flash_attention.forward, query, key, value, lse, sc,
                         offset is not None, offset or 0)
        if out is not None:
            return out
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
                    e = _scores(q[n], k[n], rows, sc, offset)
                    m = e.amax(-1, keepdim=True)
                    unseen = None  # rows that see no key: only before a negative offset
                    if offset is not None and rows.start < -offset:
                        unseen = m == -math.inf
                        m.masked_fill_(unseen, 0.0)
                    e.sub_(m).exp_()  # the softmax's numerators; its denominators:
                    total = e.sum(-1, keepdim=True)
                    if unseen is not None:
                        total.masked_fill_(unseen, 1.0)  # (zeros over one)
                    o = _aten.bmm.default(e, v[n]).div_(total)
                    out[b, :, rows].copy_(o.view(nb, H, r, Ev))
                    row_lse = total.log_().add_(m)
                    if unseen is not None:
                        row_lse.masked_fill_(unseen, math.inf)
                    lse[b, :, rows].copy_(row_lse.view(nb, H, r))
    return out if out._dtype is query._dtype else out.to(query._dtype)


def _scaled_dot_product_efficient_attention(query, key, value, attn_bias, compute_log_sumexp,
                                            dropout_p=0.0, is_causal=False, scale=None):
    _check_efficient(query, key, value, attn_bias, dropout_p)
    B, H, L, _ = query.shape
    padded = -(-L // _ALIGN_LSE) * _ALIGN_LSE
    lse = empty_tensor((B, H, padded), D.float32, query._device)
    out = _forward(query, key, value, lse, scale, 0 if is_causal else None)
    return _with_lse(out, lse, compute_log_sumexp)


def _scaled_dot_product_flash_attention(query, key, value, dropout_p=0.0, is_causal=False,
                                        return_debug_mask=False, scale=None):
    _check_flash(query, key, value, dropout_p)
    if return_debug_mask:
        raise NotImplementedError("ember's _scaled_dot_product_flash_attention returns no debug "
                                  "attention mask (return_debug_mask=True)")
    B, H, L, _ = query.shape
    dev = query._device
    lse = empty_tensor((B, H, L), D.float32, dev)
    out = _forward(query, key, value, lse, scale, _flash_offset(query, key, is_causal))
    # the Philox state of the dropout it does not do, as PyTorch's: two uint64 words, one unused
    rng_state = empty_tensor((2,), D.uint64, dev).zero_()
    unused = empty_tensor((), D.uint64, dev).zero_()
    return (out, lse, None, None, L, key.size(2), rng_state, unused,
            empty_tensor((0,), query._dtype, dev))


def _with_lse(out, lse, compute_log_sumexp):
    """The op's four results: the output, the log-sum-exp (empty unless asked for), and the
    Philox seed and offset of the dropout it does not do."""
    if not compute_log_sumexp:
        lse = empty_tensor((*lse.shape[:2], 0), D.float32, lse._device)
    seed = empty_tensor((), D.int64, _CPU).zero_()
    offset = empty_tensor((), D.int64, _CPU).zero_()
    return out, lse, seed, offset


def _backward(grad_out, query, key, value, out, logsumexp, scale, offset):
    """(dQ, dK, dV) in the inputs' dtypes, from the forward's output and log-sum-exp (under
    the causal mask of diagonal ``offset``, as _forward)."""
    B, H, L, Dq = query.shape
    S, Ev = key.size(2), value.size(-1)
    dev = query._device
    sc = _scale(query, scale)
    if S and B * H * L and _fused(query, key, value):
        grads = _try_fused(flash_attention.backward, grad_out, query, key, value, out,
                           logsumexp, sc, offset is not None, offset or 0)
        if grads is not None:
            return grads
    dq = empty_tensor((B * H, L, Dq), D.float32, dev)
    dk = empty_tensor((B * H, S, Dq), D.float32, dev)
    dv = empty_tensor((B * H, S, Ev), D.float32, dev)
    with autograd.no_grad():
        dk.zero_(), dv.zero_()
        if not S:
            dq.zero_()
        elif B * H * L:
            q, k, v, o, g = (_batched(t) for t in (query, key, value, out, grad_out))
            batches, row_blocks = _blocks(B, H, L, S)
            for b in batches:
                n, nb = slice(b.start * H, b.stop * H), b.stop - b.start
                for rows in row_blocks:
                    r = rows.stop - rows.start
                    block_lse = logsumexp[b, :, rows].reshape(nb * H, r, 1)
                    p = _scores(q[n], k[n], rows, sc, offset).sub_(block_lse).exp_()
                    g_r, o_r = g[n, rows], o[n, rows]
                    dv[n].add_(_aten.bmm.default(p.transpose(1, 2), g_r))
                    ds = _aten.bmm.default(g_r, v[n].transpose(1, 2))
                    ds.sub_((g_r * o_r).sum(-1, keepdim=True)).mul_(p)
                    dq[n, rows] = _aten.bmm.default(ds, k[n]).mul_(sc)
                    dk[n].add_(_aten.bmm.default(ds.transpose(1, 2), q[n, rows]), alpha=sc)
    grads = [t.view(B, H, *t.shape[1:]) for t in (dq, dk, dv)]
    return tuple(t if t._dtype is ref._dtype else t.to(ref._dtype)
                 for t, ref in zip(grads, (query, key, value)))


def _scaled_dot_product_efficient_attention_backward(grad_out_, query, key, value, attn_bias,
                                                     out, logsumexp, philox_seed, philox_offset,
                                                     dropout_p, grad_input_mask, is_causal=False,
                                                     scale=None):
    _check_efficient(query, key, value, attn_bias, dropout_p)
    if logsumexp.size(-1) < query.size(2):
        raise RuntimeError("_scaled_dot_product_efficient_attention_backward: the forward's "
                           "logsumexp is needed (compute_log_sumexp=True)")
    grads = _backward(grad_out_, query, key, value, out, logsumexp, scale,
                      0 if is_causal else None)
    mask = list(grad_input_mask) + [False] * (4 - len(grad_input_mask))
    return tuple(g if m else None for g, m in zip(grads, mask[:3])) + (None,)


def _scaled_dot_product_flash_attention_backward(grad_out, query, key, value, out, logsumexp,
                                                 cum_seq_q, cum_seq_k, max_q, max_k, dropout_p,
                                                 is_causal, philox_seed, philox_offset,
                                                 scale=None):
    _check_flash(query, key, value, dropout_p)
    return _backward(grad_out, query, key, value, out, logsumexp, scale,
                     _flash_offset(query, key, is_causal))


def kernels():
    return {"_scaled_dot_product_efficient_attention": _scaled_dot_product_efficient_attention,
            "_scaled_dot_product_efficient_attention_backward":
                _scaled_dot_product_efficient_attention_backward,
            "_scaled_dot_product_flash_attention": _scaled_dot_product_flash_attention,
            "_scaled_dot_product_flash_attention_backward":
                _scaled_dot_product_flash_attention_backward}
