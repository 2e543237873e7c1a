"""Rules of the single-layer recurrent ops ``_rnn_layer`` / ``_rnn_layer_backward`` for every
backend: the mode numbering, the argument checks and the result shapes. The CPU kernels
(``cpu/rnn.py``) and the Meta kernels (``meta/rnn.py``) call them; this module imports no
backend."""
from ..._core import dtype as D

# PyTorch's RNN mode numbering (cuDNN's and oneDNN's: ``mkldnn_rnn_layer``'s ``mode``).
RNN_RELU, RNN_TANH, LSTM, GRU = 0, 1, 2, 3
GATES = {RNN_RELU: 1, RNN_TANH: 1, LSTM: 4, GRU: 3}
# Per-step values the backward needs beyond the outputs, in units of hidden_size: LSTM keeps its
# activated gates i, f, g, o and the cell state c_t; GRU keeps r, z, n and W_hn h + b_hn (r
# multiplies it); a plain RNN needs nothing (its derivative is a function of its output).
WORKSPACE = {RNN_RELU: 0, RNN_TANH: 0, LSTM: 5, GRU: 4}


def _fmt(shape):
    return "[" + ", ".join(map(str, shape)) + "]"


def rnn_layer_shapes(input, weight_ih, weight_hh, bias_ih, bias_hh, hx, cx, batch_sizes, mode):
    """Checks one layer's arguments. ``batch_sizes`` empty: ``input`` is a padded (T, N, I)
    sequence; else ``input`` is packed data (sum(batch_sizes), I), step t holding the first
    batch_sizes[t] sequences (non-increasing, as ``pack_padded_sequence`` makes them).
    Returns (batch_sizes as a list, H, output shape, workspace shape)."""
    if mode not in GATES:
        raise RuntimeError(f"_rnn_layer: unknown mode {mode}")
    for t in (input, weight_ih, weight_hh, bias_ih, bias_hh, hx, cx):
        if t is not None and t._dtype._category != D.FLOATING:
            raise NotImplementedError(f"\"_rnn_layer\" not implemented for '{t._dtype._short}'")
    for t in (weight_ih, weight_hh, bias_ih, bias_hh, hx, cx):
        if t is not None and t._dtype is not input._dtype:
            raise RuntimeError(f"Input and parameter tensors are not the same dtype, found input "
                               f"tensor with {input._dtype._short} and parameter tensor with "
                               f"{t._dtype._short}")
    packed = len(batch_sizes) > 0
    if input.dim() != (2 if packed else 3):
        raise RuntimeError(f"_rnn_layer: input must have {2 if packed else 3} dimensions, got "
                           f"{input.dim()}")
    if packed:
        bs = [int(b) for b in batch_sizes]
        if any(b <= 0 for b in bs) or any(a < b for a, b in zip(bs, bs[1:])):
            raise RuntimeError("batch_sizes must be positive and non-increasing")
        if sum(bs) != input._size[0]:
            raise RuntimeError(f"_rnn_layer: batch_sizes sum to {sum(bs)}, but the packed input "
                               f"has {input._size[0]} rows")
        N = bs[0]
    else:
        T, N = input._size[:2]
        bs = [N] * T
    I = input._size[-1]
    gates = GATES[mode]
    if weight_ih.dim() != 2 or weight_hh.dim() != 2 or weight_ih._size[0] % gates:
        raise RuntimeError(f"_rnn_layer: weights of shape {_fmt(weight_ih._size)} and "
                           f"{_fmt(weight_hh._size)} do not fit mode {mode}")
    H = weight_ih._size[0] // gates
    if weight_ih._size[1] != I:
        raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                           f"{weight_ih._size[1]}, got {I}")
    if weight_hh._size != (gates * H, H):
        raise RuntimeError(f"_rnn_layer: weight_hh must have shape {_fmt((gates * H, H))}, got "
                           f"{_fmt(weight_hh._size)}")
    for b in (bias_ih, bias_hh):
        if b is not None and b._size != (gates * H,):
            raise RuntimeError(f"_rnn_layer: bias must have shape {_fmt((gates * H,))}, got "
                               f"{_fmt(b._size)}")
    if hx._size != (N, H):
        raise RuntimeError(f"Expected hidden size {(N, H)}, got {_fmt(hx._size)}")
    if mode == LSTM:
        if cx is None or cx._size != (N, H):
            got = _fmt(cx._size) if cx is not None else "None"
            raise RuntimeError(f"Expected hidden size {(N, H)}, got {got}")
    lead = input._size[:-1]
    return bs, H, lead + (H,), lead + (WORKSPACE[mode] * H,)
