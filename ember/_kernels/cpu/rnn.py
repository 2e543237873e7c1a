"""CPU kernels of one recurrent layer over a whole sequence: ``_rnn_layer`` (LSTM, GRU, RNN with
tanh or relu, one direction) and its fused backward ``_rnn_layer_backward``.

PyTorch's CPU LSTM runs each layer and direction as one ``mkldnn_rnn_layer`` call; GRU and plain
RNN have no such op there (they loop cells in C++). Here all four modes are one op, so that a
layer is one dispatcher call instead of a dozen ops per time step. The input projection of all
steps is one matmul; each step is one ``h @ W_hh^T`` and the gate math on NumPy arrays. The
forward keeps what the backward needs as a workspace output (as ``mkldnn_rnn_layer`` does); the
backward runs back-propagation through time step by step for the recurrent part and forms the
weight, bias and input gradients as whole-sequence matmuls. Gate order is PyTorch's: LSTM
``i, f, g, o``; GRU ``r, z, n`` with ``r`` applied to ``W_hn h + b_hn``. Half-precision inputs
compute in float32 and round once at the end.
"""
import numpy as np
from scipy.special import expit

from ..._core import dtype as D
from ..._core.blas import matmul as _matmul
from ..._core.blas import products_of
from ..rules.rnn import GRU, LSTM, RNN_TANH, rnn_layer_shapes
from ._util import nd, wrap


def _arr(t):
    """t's values as an array of the dtype the kernel computes in (float32 for half types)."""
    a = nd(t)
    if t._dtype is D.float16 or t._dtype is D.bfloat16:
        return a.astype(np.float32)
    return a


def _res(a, dt):
    a = np.ascontiguousarray(a)
    return wrap(a if a.dtype == dt._np else a.astype(dt._np))


def _order(T, reverse):
    return range(T - 1, -1, -1) if reverse else range(T)


def _previous(seq, first, reverse):
    """The value each step started from: ``first`` then the per-step values ``seq`` (T, N, K)
    shifted by one step in the direction of the recurrence."""
    if seq.shape[0] == 0:
        return seq
    first = first[None]
    if reverse:
        return np.concatenate([seq[1:], first], 0)
    return np.concatenate([first, seq[:-1]], 0)


def _rnn_layer(input, weight_ih, weight_hh, bias_ih, bias_hh, hx, cx, reverse, mode):
    T, N, H, ws_shape = rnn_layer_shapes(input, weight_ih, weight_hh, bias_ih, bias_hh, hx, cx,
                                         mode)
    x, w_ih, w_hh = _arr(input), _arr(weight_ih), _arr(weight_hh)
    G = w_ih.shape[0]
    # the input projection of every step at once; b_hh joins it except in GRU, where r scales it
    gi = _matmul(x.reshape(T * N, x.shape[2]), w_ih.T).reshape(T, N, G)
    if bias_ih is not None:
        gi += _arr(bias_ih)
    b_hh = _arr(bias_hh) if bias_hh is not None else None
    if b_hh is not None and mode != GRU:
        gi += b_hh
    w_hhT = w_hh.T
    out = np.empty((T, N, H), gi.dtype)
    ws = np.empty(ws_shape, gi.dtype)
    h = _arr(hx).astype(gi.dtype, copy=False)
    c = _arr(cx).astype(gi.dtype, copy=False) if mode == LSTM else None
    with np.errstate(all="ignore"), products_of(N * H * G):
        for t in _order(T, reverse):
            gh = h.dot(w_hhT)
            if mode == LSTM:
                g = ws[t, :, :G]  # i, f, g, o after their activations
                np.add(gi[t], gh, out=g)
                expit(g[:, :2 * H], out=g[:, :2 * H])
                np.tanh(g[:, 2 * H:3 * H], out=g[:, 2 * H:3 * H])
                expit(g[:, 3 * H:], out=g[:, 3 * H:])
                c_new = ws[t, :, G:]
                np.multiply(g[:, H:2 * H], c, out=c_new)
                c_new += g[:, :H] * g[:, 2 * H:3 * H]
                c = c_new
                h = np.multiply(g[:, 3 * H:], np.tanh(c), out=out[t])
            elif mode == GRU:
                if b_hh is not None:
                    gh += b_hh
                w = ws[t]  # r, z, n, W_hn h + b_hn
                rz = w[:, :2 * H]
                np.add(gi[t, :, :2 * H], gh[:, :2 * H], out=rz)
                expit(rz, out=rz)
                w[:, 3 * H:] = gh[:, 2 * H:]
                n = w[:, 2 * H:3 * H]
                np.multiply(w[:, :H], gh[:, 2 * H:], out=n)
                n += gi[t, :, 2 * H:]
                np.tanh(n, out=n)
                # h' = (1 - z) n + z h = n + z (h - n)
                h_new = np.subtract(h, n, out=out[t])
                h_new *= w[:, H:2 * H]
                h_new += n
                h = h_new
            else:
                pre = np.add(gi[t], gh, out=out[t])
                h = np.tanh(pre, out=pre) if mode == RNN_TANH else np.maximum(pre, 0, out=pre)
    dt = input._dtype
    # the final states are fresh arrays (views of out/ws, or hx/cx themselves when T == 0)
    hy = _res(np.array(h), dt)
    cy = _res(np.array(c), dt) if mode == LSTM else wrap(np.empty((0,), dt._np))
    return _res(out, dt), hy, cy, _res(ws, dt)


def _rnn_layer_backward(input, weight_ih, weight_hh, bias_ih, bias_hh, hx, cx, output, workspace,
                        grad_output, grad_hy, grad_cy, reverse, mode):
    T, N, H, _ = rnn_layer_shapes(input, weight_ih, weight_hh, bias_ih, bias_hh, hx, cx, mode)
    x, w_ih, w_hh = _arr(input), _arr(weight_ih), _arr(weight_hh)
    G = w_ih.shape[0]
    out, ws = _arr(output), _arr(workspace)
    h0 = _arr(hx)
    h_prev = _previous(out, h0, reverse)  # (T, N, H): the state each step started from
    go = _arr(grad_output)
    dh = _arr(grad_hy).astype(out.dtype, copy=True)
    dgi = np.empty((T, N, G), out.dtype)  # gradient of the pre-activations, input side
    dgh = dgi if mode != GRU else np.empty((T, N, G), out.dtype)  # ... recurrent side
    with np.errstate(all="ignore"), products_of(N * H * G):
        if mode == LSTM:
            dc = _arr(grad_cy).astype(out.dtype, copy=True)
            c_all = ws[:, :, G:]
            c_prev = _previous(c_all, _arr(cx), reverse)
            tanh_c = np.tanh(c_all)
            gates = ws[:, :, :G]
            i, f, g, o = (gates[:, :, k * H:(k + 1) * H] for k in range(4))
            # the factors that do not depend on the recurrence, for all steps at once
            d_o_fac = tanh_c * o * (1 - o)
            d_c_fac = o * (1 - tanh_c * tanh_c)
            d_i_fac = g * i * (1 - i)
            d_f_fac = c_prev * f * (1 - f)
            d_g_fac = i * (1 - g * g)
            for t in _order(T, not reverse):
                dh += go[t]
                dc += dh * d_c_fac[t]
                d = dgi[t]
                np.multiply(dh, d_o_fac[t], out=d[:, 3 * H:])
                np.multiply(dc, d_i_fac[t], out=d[:, :H])
                np.multiply(dc, d_f_fac[t], out=d[:, H:2 * H])
                np.multiply(dc, d_g_fac[t], out=d[:, 2 * H:3 * H])
                dc *= f[t]
                dh = d.dot(w_hh)
            dcx = dc
        elif mode == GRU:
            r, z, n, ghn = (ws[:, :, k * H:(k + 1) * H] for k in range(4))
            dn_fac = (1 - z) * (1 - n * n)
            dz_fac = (h_prev - n) * z * (1 - z)
            dr_fac = ghn * r * (1 - r)
            for t in _order(T, not reverse):
                dh += go[t]
                di, dr = dgi[t], dgh[t]
                dn = np.multiply(dh, dn_fac[t], out=di[:, 2 * H:])
                np.multiply(dh, dz_fac[t], out=di[:, H:2 * H])
                np.multiply(dn, dr_fac[t], out=di[:, :H])
                dr[:, :2 * H] = di[:, :2 * H]
                np.multiply(dn, r[t], out=dr[:, 2 * H:])
                dh = dh * z[t]
                dh += dr.dot(w_hh)
            dcx = None
        else:
            fac = 1 - out * out if mode == RNN_TANH else (out > 0).astype(out.dtype)
            for t in _order(T, not reverse):
                dh += go[t]
                np.multiply(dh, fac[t], out=dgi[t])
                dh = dgi[t].dot(w_hh)
            dcx = None
    # the non-recurrent gradients: one matmul each over all steps
    dgi2 = dgi.reshape(T * N, G)
    dgh2 = dgh.reshape(T * N, G)
    dx = _matmul(dgi2, w_ih).reshape(T, N, w_ih.shape[1])
    dw_ih = _matmul(dgi2.T, x.reshape(T * N, x.shape[2]))
    dw_hh = _matmul(dgh2.T, h_prev.reshape(T * N, H))
    d_bih = dgi2.sum(0) if bias_ih is not None else None
    d_bhh = dgh2.sum(0) if bias_hh is not None else None
    dt = input._dtype
    return (_res(dx, dt), _res(dw_ih, dt), _res(dw_hh, dt),
            _res(d_bih, dt) if d_bih is not None else None,
            _res(d_bhh, dt) if d_bhh is not None else None,
            _res(dh, dt), _res(dcx, dt) if dcx is not None else None)
