"""The fused CPU attention kernel, ``aten::_scaled_dot_product_flash_attention_for_cpu`` and its
backward: softmax(q k^T * scale + mask) v computed tile by tile with an online softmax
(FlashAttention's recurrence), so the extra memory is a few (query-block x key-block) tiles per
thread instead of the full (queries x keys) matrix.

The tiles are small enough to stay in a core's cache between the products and the elementwise
passes over them, and the work is spread over ``ember.get_num_threads()`` threads as PyTorch's
kernel does: the forward by (query heads, query block), the backward by key/value heads (each
owns its key gradient; the query heads sharing it under grouped-query attention are its own
too). Short sequences put several heads in one tile, so that each NumPy call still has work.
Half and bfloat16 inputs compute in float32, as PyTorch accumulates.

For short sequences, where a C compiler is at hand, the C kernel of ``flash_attention.py`` (a row
at a time) takes the work instead: there a tile is a few dozen NumPy calls, which cost more than
the arithmetic.
"""
import math

import numpy as np

from ..._core import dtype as D
from ..._core.parallel import num_threads, parallel_for
from . import flash_attention
from ._util import nd, wrap


_Q_BLOCK = 256  # query rows per tile
_K_BLOCK = 256  # keys per tile: a 256 x 256 float32 score tile is 256 KiB, inside a core's L2
_TILE = _Q_BLOCK * _K_BLOCK  # elements of a score tile, all its heads together


def _work(t):
    a = nd(t)
    if t._dtype in (D.float16, D.bfloat16):
        return a.astype(np.float32)
    return a


class _Problem:
    """The inputs as the tiles read them: q (pre-scaled) as (B*Hq, L, E), k and v as
    (B*Hk, S, E); the mask as (B, Hq, L, S), broadcast."""

    def __init__(self, query, key, value, attn_mask, is_causal, scale):
        B, Hq, L, E = query._size
        Hk, S = key._size[1], key._size[2]
        self.Hq, self.Hk, self.rep, self.L, self.S = Hq, Hk, Hq // Hk, L, S
        self.scale = 1.0 / math.sqrt(E) if scale is None else scale
        q = _work(query)
        self.dt = dt = q.dtype
        self.q = (q * dt.type(self.scale)).reshape(B * Hq, L, E)
        self.k = np.ascontiguousarray(_work(key)).reshape(B * Hk, S, E)
        self.v = np.ascontiguousarray(_work(value)).reshape(B * Hk, S, value._size[-1])
        self.is_causal = is_causal
        self.mask = None
        if attn_mask is not None:
            m = nd(attn_mask)
            if m.dtype == np.bool_:  # the frontend turns boolean masks into additive ones first
                raise RuntimeError("scaled_dot_product_attention_flash_attention: Attention mask "
                                   "is the same data type as query")
            self.mask_base = np.ascontiguousarray(m.astype(dt, copy=False).reshape(
                (1,) * (4 - m.ndim) + m.shape))  # (the C kernel reads it with 0 strides)
            self.mask = np.broadcast_to(self.mask_base, (B, Hq, L, S))

    def group(self, heads, rows, cols, blocks):
        """Heads per unit of work: short sequences take several heads per tile (one NumPy call
        then covers them all), as long as the units still keep every thread busy."""
        g = max(1, _TILE // max(1, rows * cols))
        return max(1, min(g, heads * blocks // (2 * num_threads())))

    def kv(self, j0, j1):
        """Key and value blocks of query heads [j0, j1): views when every query head has its
        own key/value head, gathered copies under grouped-query attention."""
        if self.rep == 1:
            return self.k[j0:j1], self.v[j0:j1]
        js = np.arange(j0, j1)
        h = js // self.Hq * self.Hk + js % self.Hq // self.rep
        return self.k[h], self.v[h]

    def q_heads(self, h0, h1, ri):
        """The query heads reading key/value heads [h0, h1) as repeat ``ri`` of each (a slice
        when there is one query head per key/value head)."""
        if self.rep == 1:
            return slice(h0, h1)
        hs = np.arange(h0, h1)
        return hs // self.Hk * self.Hq + hs % self.Hk * self.rep + ri

    def sees(self, l1, s0):
        """Whether query rows ending before ``l1`` see any key from ``s0`` on (causal masking
        is top-left aligned: query i sees keys j <= i)."""
        return not self.is_causal or s0 < l1

    def bias(self, js, l0, l1, s0, s1):
        """The additive mask of the tile (query heads ``js``, rows [l0, l1), keys [s0, s1)),
        or None: (heads, rows, keys), or (rows, keys) for the causal part alone."""
        bias = None
        if self.mask is not None:
            js = np.arange(js.start, js.stop) if isinstance(js, slice) else js
            bias = self.mask[js // self.Hq, js % self.Hq, l0:l1, s0:s1]
        if self.is_causal and s1 - 1 > l0:  # the tile reaches above the diagonal
            hidden = np.arange(s0, s1)[None, :] > np.arange(l0, l1)[:, None]
            causal = np.where(hidden, self.dt.type(-np.inf), self.dt.type(0))
            bias = causal if bias is None else bias + causal
        return bias


def _scaled_dot_product_flash_attention_for_cpu(query, key, value, dropout_p=0.0,
                                                 is_causal=False, attn_mask=None, scale=None):
    if dropout_p > 0.0:
        raise RuntimeError("scaled_dot_product_flash_attention_for_cpu: dropout is not "
                           "supported")
    P = _Problem(query, key, value, attn_mask, is_causal, scale)
    L, S, dt = P.L, P.S, P.dt
    BHq, Ev = P.q.shape[0], P.v.shape[-1]
    out = np.empty((BHq, L, Ev), dt)
    lse = np.empty((BHq, L), dt)
    n_blocks = -(-L // _Q_BLOCK)
    G = P.group(BHq, min(L, _Q_BLOCK), min(S, _K_BLOCK), n_blocks)
    n_groups = -(-BHq // G)

    def rows(u):
        """Output rows of one (group of query heads, query block)."""
        jg, qb = divmod(u, n_blocks)
        j0, j1 = jg * G, min(BHq, jg * G + G)
        l0 = qb * _Q_BLOCK
        l1 = min(L, l0 + _Q_BLOCK)
        q = P.q[j0:j1, l0:l1]
        k, v = P.kv(j0, j1)
        m = np.full(q.shape[:2], -np.inf, dt)  # running row max
        denom = np.zeros(q.shape[:2], dt)  # running sum of exp
        acc = np.zeros((*q.shape[:2], Ev), dt)
        with np.errstate(invalid="ignore", over="ignore"):  # per thread: it is thread-local
            for s0 in range(0, S, _K_BLOCK):
                if not P.sees(l1, s0):
                    break
                s1 = min(S, s0 + _K_BLOCK)
                s = q @ k[:, s0:s1].transpose(0, 2, 1)
                bias = P.bias(slice(j0, j1), l0, l1, s0, s1)
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
                acc += s @ v[:, s0:s1]
                m = m_new
            # rows with every key masked: output 0 and logsumexp 0, as PyTorch's kernel
            empty = denom == 0
            denom[empty] = 1
            np.divide(acc, denom[..., None], out=out[j0:j1, l0:l1])
            row_lse = m + np.log(denom)
            row_lse[empty] = 0
            lse[j0:j1, l0:l1] = row_lse

    if flash_attention.usable(P):
        flash_attention.forward(P, out, lse)
    else:
        parallel_for(n_groups * n_blocks, rows)
    B, Hq = query.size(0), query.size(1)
    out = out.reshape(B, Hq, L, Ev).astype(query._dtype._np, copy=False)
    lse = lse.reshape(B, Hq, L).astype(np.float64 if dt == np.float64 else np.float32,
                                       copy=False)
    return wrap(out), wrap(lse)


def _scaled_dot_product_flash_attention_for_cpu_backward(grad_out, query, key, value, out,
                                                          logsumexp, dropout_p, is_causal,
                                                          attn_mask=None, scale=None):
    P = _Problem(query, key, value, attn_mask, is_causal, scale)
    L, S, dt, rep = P.L, P.S, P.dt, P.rep
    BHq, E, Ev = P.q.shape[0], P.q.shape[-1], P.v.shape[-1]
    do = _work(grad_out).astype(dt, copy=False).reshape(BHq, L, Ev)
    o = _work(out).astype(dt, copy=False).reshape(BHq, L, Ev)
    lse = nd(logsumexp).astype(dt, copy=False).reshape(BHq, L)
    dk = np.empty_like(P.k)
    dv = np.empty_like(P.v)
    if flash_attention.usable(P):
        dq = np.empty(P.q.shape, dt)
        flash_attention.backward(P, *map(np.ascontiguousarray, (do, o, lse)), dq, dk, dv)
        return _backward_results(query, key, value, P, dq, dk, dv)
    delta = np.einsum("jld,jld->jl", do, o)
    dq = np.zeros_like(P.q)

    BHk = dk.shape[0]
    G = P.group(BHk, min(L, _Q_BLOCK) * rep, min(S, _K_BLOCK), 1)

    def heads(u):
        """Key and value gradients of key/value heads [h0, h1), and the query gradients of the
        query heads reading them: key blocks outside, query blocks inside (FlashAttention's
        order)."""
        h0, h1 = u * G, min(BHk, u * G + G)
        k, v = P.k[h0:h1], P.v[h0:h1]
        with np.errstate(invalid="ignore", over="ignore"):
            for s0 in range(0, S, _K_BLOCK):
                s1 = min(S, s0 + _K_BLOCK)
                kb, vb = k[:, s0:s1], v[:, s0:s1]
                dk_b = np.zeros((h1 - h0, s1 - s0, E), dt)
                dv_b = np.zeros((h1 - h0, s1 - s0, Ev), dt)
                for ri in range(rep):
                    js = P.q_heads(h0, h1, ri)
                    for l0 in range(0, L, _Q_BLOCK):
                        l1 = min(L, l0 + _Q_BLOCK)
                        if not P.sees(l1, s0):
                            continue
                        q, g = P.q[js, l0:l1], do[js, l0:l1]
                        p = q @ kb.transpose(0, 2, 1)
                        bias = P.bias(js, l0, l1, s0, s1)
                        if bias is not None:
                            p += bias
                        p -= lse[js, l0:l1, None]
                        np.exp(p, out=p)
                        dv_b += p.transpose(0, 2, 1) @ g
                        ds = g @ vb.transpose(0, 2, 1)
                        ds -= delta[js, l0:l1, None]
                        ds *= p
                        dq[js, l0:l1] += ds @ kb
                        dk_b += ds.transpose(0, 2, 1) @ q  # q already carries the scale
                dk[h0:h1, s0:s1] = dk_b
                dv[h0:h1, s0:s1] = dv_b

    parallel_for(-(-BHk // G), heads)
    dq *= dt.type(P.scale)
    return _backward_results(query, key, value, P, dq, dk, dv)


def _backward_results(query, key, value, P, dq, dk, dv):
    L, S, E, Ev = P.L, P.S, P.q.shape[-1], P.v.shape[-1]
    B = query.size(0)
    dq = dq.reshape(B, P.Hq, L, E).astype(query._dtype._np, copy=False)
    dk = dk.reshape(B, P.Hk, S, E).astype(key._dtype._np, copy=False)
    dv = dv.reshape(B, P.Hk, S, Ev).astype(value._dtype._np, copy=False)
    return wrap(dq), wrap(dk), wrap(dv)
