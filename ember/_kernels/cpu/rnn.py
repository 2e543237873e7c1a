"""CPU kernels of one recurrent layer over a whole sequence: ``_rnn_layer`` (LSTM, GRU, RNN with
tanh or relu, one direction) and its fused backward ``_rnn_layer_backward``.

PyTorch's CPU LSTM runs each layer and direction as one ``mkldnn_rnn_layer`` call; GRU and plain
RNN have no such op there (they loop cells in C++). Here all four modes are one op, so that a
layer is one dispatcher call instead of a dozen ops per time step. The input projection of all
steps is one matmul; each step is one ``h @ W_hh^T`` and the gate math on NumPy arrays (an LSTM
step's gate math is one C call where ``rnn_cells.py`` is built). The
forward keeps what the backward needs as a workspace output (as ``mkldnn_rnn_layer`` does); the
backward runs back-propagation through time step by step for the recurrent part and forms the
weight, bias and input gradients as whole-sequence matmuls. Gate order is PyTorch's: LSTM
``i, f, g, o``; GRU ``r, z, n`` with ``r`` applied to ``W_hn h + b_hn``. Half-precision inputs
compute in float32 and round once at the end.

Both kernels work on step-major rows: a padded (T, N, I) sequence is T steps of N rows, packed
data (``batch_sizes`` given) is step t's first ``batch_sizes[t]`` sequences. A step runs on the
rows of the sequences still going; in the reverse direction sequences join from their h0 as the
batch grows, as PyTorch's packed recurrence does.
"""
import numpy as np
from scipy.special import expit

from ..._core import dtype as D
from .gemm import matmul as _matmul
from ..._core.blas import products_of
from ..rules.rnn import GRU, LSTM, RNN_TANH, rnn_layer_shapes
from ._util import array_module, contiguous, nd, wrap
from . import rnn_cells


def _arr(t):
    """t's values as an array of the dtype the kernel computes in (float32 for half types)."""
    a = nd(t)
    if t._dtype is D.float16 or t._dtype is D.bfloat16:
        return a.astype(np.float32)
    return a


def _res(a, dt):
    a = contiguous(a)
    return wrap(a if a.dtype == dt._np else a.astype(dt._np))


def _sigmoid(a, out):
    """``expit(a, out=out)`` on device arrays (SciPy's ufunc is the host's)."""
    xp = array_module(a)
    return xp.divide(1, xp.exp(-a) + 1, out=out)


def _steps(bs, reverse):
    """(step, first row, rows) of each time step of a row-major sequence whose step t holds
    bs[t] rows, in the order the recurrence runs."""
    offsets, o = [], 0
    for b in bs:
        offsets.append(o)
        o += b
    steps = list(zip(range(len(bs)), offsets, bs))
    return steps[::-1] if reverse else steps


def _previous(seq, first, bs, reverse):
    """The state each row's step started from: the previous step's row of ``seq`` (rows, K), or
    ``first`` (N, K) for the rows whose sequence starts at that step."""
    prev = np.empty_like(seq)
    steps = _steps(bs, reverse)
    last = None  # (first row, rows) of the step before, in recurrence order
    for t, o, b in steps:
        k = 0 if last is None else min(b, last[1])
        if k:
            prev[o:o + k] = seq[last[0]:last[0] + k]
        if k < b:
            prev[o + k:o + b] = first[k:b]
        last = (o, b)
    return prev


def _final(seq, first, bs, reverse):
    """Each sequence's final state: its row at its last step in recurrence order (``first``
    when the sequence is empty)."""
    fin = first.copy()
    if not bs:
        return fin
    steps = _steps(bs, reverse)
    ends = steps[1:] + [(None, None, 0)]
    for (t, o, b), (_, _, b_next) in zip(steps, ends):
        # forward, the batch shrinks: rows b_next..b end here; reverse: all rows end at step 0
        lo = b_next if b_next < b else b
        if lo < b:
            fin[lo:b] = seq[o + lo:o + b]
    return fin


def _rnn_layer(input, weight_ih, weight_hh, bias_ih, bias_hh, hx, cx, reverse, batch_sizes,
               mode):
    bs, H, out_shape, ws_shape = rnn_layer_shapes(input, weight_ih, weight_hh, bias_ih, bias_hh,
                                                  hx, cx, batch_sizes, mode)
    x, w_ih, w_hh = _arr(input), _arr(weight_ih), _arr(weight_hh)
    G = w_ih.shape[0]
    N = hx._size[0]
    x = x.reshape(-1, x.shape[-1])  # (rows, I): a padded sequence's rows are step-major too
    # the input projection of every step at once; b_hh joins it except in GRU, where r scales it
    gi = _matmul(x, w_ih.T)
    if bias_ih is not None:
        gi += _arr(bias_ih)
    b_hh = _arr(bias_hh) if bias_hh is not None else None
    if b_hh is not None and mode != GRU:
        gi += b_hh
    w_hhT = w_hh.T
    xp = array_module(x)  # (a GPU runs this body on device arrays too)
    out = xp.empty((x.shape[0], H), gi.dtype)
    ws = xp.empty((x.shape[0], ws_shape[-1]), gi.dtype)
    sigmoid = expit if xp is np else _sigmoid
    h0 = _arr(hx).astype(gi.dtype, copy=False)
    c0 = _arr(cx).astype(gi.dtype, copy=False) if mode == LSTM else None
    h, c = h0, c0  # the state of the rows the current step runs
    # a step's gate math in C, on host memory
    cells = rnn_cells.module(gi.dtype) if mode == LSTM and xp is np else None
    with np.errstate(all="ignore"), products_of(N * H * G):
        for t, o, b in _steps(bs, reverse):
            if h.shape[0] > b:  # sequences ended (packed input, forward direction)
                h = h[:b]
                c = c[:b] if c is not None else None
            elif h.shape[0] < b:  # sequences start from their h0 (packed, reverse direction)
                h = np.concatenate([h, h0[h.shape[0]:b]])
                c = np.concatenate([c, c0[c.shape[0]:b]]) if c is not None else None
            gh = h.dot(w_hhT)
            rows = slice(o, o + b)
            if cells is not None:
                cells.lstm_forward(gi[rows], gh, c, ws[rows], out[rows])
                c, h = ws[rows, G:], out[rows]
            elif mode == LSTM:
                g = ws[rows, :G]  # i, f, g, o after their activations
                np.add(gi[rows], gh, out=g)
                sigmoid(g[:, :2 * H], out=g[:, :2 * H])
                np.tanh(g[:, 2 * H:3 * H], out=g[:, 2 * H:3 * H])
                sigmoid(g[:, 3 * H:], out=g[:, 3 * H:])
                c_new = ws[rows, G:]
                np.multiply(g[:, H:2 * H], c, out=c_new)
                c_new += g[:, :H] * g[:, 2 * H:3 * H]
                c = c_new
                h = np.multiply(g[:, 3 * H:], np.tanh(c), out=out[rows])
            elif mode == GRU:
                if b_hh is not None:
                    gh += b_hh
                w = ws[rows]  # r, z, n, W_hn h + b_hn
                rz = w[:, :2 * H]
                np.add(gi[rows, :2 * H], gh[:, :2 * H], out=rz)
                sigmoid(rz, out=rz)
                w[:, 3 * H:] = gh[:, 2 * H:]
                n = w[:, 2 * H:3 * H]
                np.multiply(w[:, :H], gh[:, 2 * H:], out=n)
                n += gi[rows, 2 * H:]
                np.tanh(n, out=n)
                # h' = (1 - z) n + z h = n + z (h - n)
                h_new = np.subtract(h, n, out=out[rows])
                h_new *= w[:, H:2 * H]
                h_new += n
                h = h_new
            else:
                pre = np.add(gi[rows], gh, out=out[rows])
                h = np.tanh(pre, out=pre) if mode == RNN_TANH else np.maximum(pre, 0, out=pre)
    dt = input._dtype
    # fresh arrays: a sequence's final state is a row of out/ws (or h0/c0 when T == 0)
    hy = _res(_final(out, h0, bs, reverse), dt)
    cy = _res(_final(ws[:, G:], c0, bs, reverse), dt) if mode == LSTM \
        else wrap(xp.empty((0,), dt._np))
    return _res(out.reshape(out_shape), dt), hy, cy, _res(ws.reshape(ws_shape), dt)


def _rnn_layer_backward(input, weight_ih, weight_hh, bias_ih, bias_hh, hx, cx, output, workspace,
                        grad_output, grad_hy, grad_cy, reverse, batch_sizes, mode):
    bs, H, _, _ = rnn_layer_shapes(input, weight_ih, weight_hh, bias_ih, bias_hh, hx, cx,
                                   batch_sizes, mode)
    x, w_ih, w_hh = _arr(input), _arr(weight_ih), _arr(weight_hh)
    G = w_ih.shape[0]
    N = hx._size[0]
    x = x.reshape(-1, x.shape[-1])
    R = x.shape[0]
    out = _arr(output).reshape(R, H)
    ws = _arr(workspace).reshape(R, -1)
    go = _arr(grad_output).reshape(R, H)
    h_prev = _previous(out, _arr(hx), bs, reverse)  # (rows, H): the state each step started from
    dh = _arr(grad_hy).astype(out.dtype, copy=True)  # per sequence: the gradient of its state
    xp = array_module(out)
    dgi = xp.empty((R, G), out.dtype)  # gradient of the pre-activations, input side
    dgh = dgi if mode != GRU else xp.empty((R, G), out.dtype)  # ... recurrent side
    # the recurrence backwards: the forward's steps in reverse order
    steps = _steps(bs, not reverse)
    with np.errstate(all="ignore"), products_of(N * H * G):
        cells = rnn_cells.module(out.dtype) if mode == LSTM and xp is np else None
        if cells is not None:  # a step's gate math in C (host memory)
            dc = _arr(grad_cy).astype(out.dtype, copy=True)
            c_prev = _previous(ws[:, G:], _arr(cx), bs, reverse)
            go, ws = np.ascontiguousarray(go), np.ascontiguousarray(ws)
            for t, r0, b in steps:
                rows = slice(r0, r0 + b)
                d = dgi[rows]
                cells.lstm_backward(dh[:b], dc[:b], go[rows], ws[rows], c_prev[rows], d)
                dh[:b] = d.dot(w_hh)
            dcx = dc
        elif mode == LSTM:
            dc = _arr(grad_cy).astype(out.dtype, copy=True)
            c_all = ws[:, G:]
            c_prev = _previous(c_all, _arr(cx), bs, reverse)
            tanh_c = np.tanh(c_all)
            i, f, g, o = (ws[:, k * H:(k + 1) * H] for k in range(4))
            # the factors that do not depend on the recurrence, for all steps at once
            d_o_fac = tanh_c * o * (1 - o)
            d_c_fac = o * (1 - tanh_c * tanh_c)
            d_i_fac = g * i * (1 - i)
            d_f_fac = c_prev * f * (1 - f)
            d_g_fac = i * (1 - g * g)
            for t, r0, b in steps:
                rows = slice(r0, r0 + b)
                dhb, dcb = dh[:b], dc[:b]
                dhb += go[rows]
                dcb += dhb * d_c_fac[rows]
                d = dgi[rows]
                np.multiply(dhb, d_o_fac[rows], out=d[:, 3 * H:])
                np.multiply(dcb, d_i_fac[rows], out=d[:, :H])
                np.multiply(dcb, d_f_fac[rows], out=d[:, H:2 * H])
                np.multiply(dcb, d_g_fac[rows], out=d[:, 2 * H:3 * H])
                dcb *= f[rows]
                dh[:b] = d.dot(w_hh)
            dcx = dc
        elif mode == GRU:
            r, z, n, ghn = (ws[:, k * H:(k + 1) * H] for k in range(4))
            dn_fac = (1 - z) * (1 - n * n)
            dz_fac = (h_prev - n) * z * (1 - z)
            dr_fac = ghn * r * (1 - r)
            for t, r0, b in steps:
                rows = slice(r0, r0 + b)
                dhb = dh[:b]
                dhb += go[rows]
                di, dr = dgi[rows], dgh[rows]
                dn = np.multiply(dhb, dn_fac[rows], out=di[:, 2 * H:])
                np.multiply(dhb, dz_fac[rows], out=di[:, H:2 * H])
                np.multiply(dn, dr_fac[rows], out=di[:, :H])
                dr[:, :2 * H] = di[:, :2 * H]
                np.multiply(dn, r[rows], out=dr[:, 2 * H:])
                dhb *= z[rows]
                dhb += dr.dot(w_hh)
            dcx = None
        else:
            fac = 1 - out * out if mode == RNN_TANH else (out > 0).astype(out.dtype)
            for t, r0, b in steps:
                rows = slice(r0, r0 + b)
                dhb = dh[:b]
                dhb += go[rows]
                np.multiply(dhb, fac[rows], out=dgi[rows])
                dh[:b] = dgi[rows].dot(w_hh)
            dcx = None
    # the non-recurrent gradients: one matmul each over all steps
    dx = _matmul(dgi, w_ih).reshape(input._size)
    dw_ih = _matmul(dgi.T, x)
    dw_hh = _matmul(dgh.T, h_prev)
    d_bih = dgi.sum(0) if bias_ih is not None else None
    d_bhh = dgh.sum(0) if bias_hh is not None else None
    dt = input._dtype
    return (_res(dx, dt), _res(dw_ih, dt), _res(dw_hh, dt),
            _res(d_bih, dt) if d_bih is not None else None,
            _res(d_bhh, dt) if d_bhh is not None else None,
            _res(dh, dt), _res(dcx, dt) if dcx is not None else None)
