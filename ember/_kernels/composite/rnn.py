"""CompositeImplicitAutograd kernels of ``lstm``, ``gru``, ``rnn_tanh`` and ``rnn_relu`` (the
``.input`` overloads for padded sequences, ``.data`` for packed ones), the ops behind
``nn.LSTM/GRU/RNN`` (PyTorch's ``_VF.lstm`` ...): as ATen's ``_rnn_impl`` they loop layers and
directions (dropout between layers while training, the two directions' outputs concatenated,
``batch_first`` handled once), and each layer and direction is one ``_rnn_layer`` call
(``cpu/rnn.py``). Autograd records those calls, so a layer's backward is one
``_rnn_layer_backward``.

Also here: PyTorch's cell ops (``lstm_cell``, ``gru_cell``, ``rnn_tanh_cell``, ``rnn_relu_cell``)
and the step-by-step recurrence over them (:func:`layer_steps`), which runs LSTM projections
(``weight_hr``, which ``_rnn_layer`` does not take) and which ``_rnn_layer``'s double backward
and forward derivative differentiate.

The stack's kernels take a keyword ``linear`` that the dispatcher never passes: with it, every
layer runs step by step with the cells' products computed by ``linear(x, weight, bias)``. That
is the seam of per-sample gradients (``nn/utils/_expanded_weights``, PyTorch's use of its RNN
decompositions there): given ``F.linear``, each product of an ExpandedWeight reaches its
per-sample rule, one (batch, features) step at a time."""
from ..._ops.overload import ops
from ..rules.rnn import GRU, LSTM, RNN_RELU, RNN_TANH

_aten = ops.aten  # ops resolve when called: the op table is built after the kernels load


def _layers(mode, input, h0, c0, params, has_biases, num_layers, dropout, train, bidirectional,
            batch_first, batch_sizes=(), linear=None):
    """Runs the stack; returns (output, h_n, c_n or None). ``batch_sizes`` (a list) non-empty:
    ``input`` is packed data; ``linear`` given: every layer step by step with it."""
    aten = _aten
    directions = 2 if bidirectional else 1
    per = 4 if has_biases else 2
    proj = mode == LSTM and len(params) == num_layers * directions * (per + 1)
    if proj:
        per += 1  # weight_hr_l{k} follows each layer's biases
    elif len(params) != num_layers * directions * per:
        raise RuntimeError(f"Expected {num_layers * directions * per} parameters for "
                           f"{num_layers} layer(s), got {len(params)}")
    if input.dim() != (2 if batch_sizes else 3):
        raise RuntimeError(f"input must have {2 if batch_sizes else 3} dimensions, got "
                           f"{input.dim()}")
    x = input.transpose(0, 1) if batch_first else input
    h_n, c_n = [], []
    for layer in range(num_layers):
        outs = []
        for direction in range(directions):
            idx = layer * directions + direction
            w = params[idx * per:(idx + 1) * per]
            b_ih, b_hh = (w[2], w[3]) if has_biases else (None, None)
            cx = c0[idx] if mode == LSTM else None
            if proj or linear is not None:
                # projections, or a caller's linear: the step-by-step recurrence
                out, hy, cy = layer_steps(x, w[0], w[1], b_ih, b_hh, h0[idx], cx,
                                          direction == 1, batch_sizes, mode,
                                          w[-1] if proj else None, linear)
            else:
                out, hy, cy, _ = aten._rnn_layer.default(x, w[0], w[1], b_ih, b_hh, h0[idx], cx,
                                                         direction == 1, batch_sizes, mode)
            outs.append(out)
            h_n.append(hy)
            if mode == LSTM:
                c_n.append(cy)
        x = aten.cat.default(outs, -1) if directions == 2 else outs[0]
        if dropout != 0 and train and layer < num_layers - 1:
            x = aten.dropout.default(x, dropout, train)
    output = x.transpose(0, 1) if batch_first else x
    h_n = aten.stack.default(h_n, 0)
    return output, h_n, (aten.stack.default(c_n, 0) if mode == LSTM else None)


def lstm_input(input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
               batch_first, *, linear=None):
    if len(hx) != 2:
        raise RuntimeError("lstm expects two hidden states")
    return _layers(LSTM, input, hx[0], hx[1], params, has_biases, num_layers, dropout, train,
                   bidirectional, batch_first, linear=linear)


def gru_input(input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
              batch_first, *, linear=None):
    return _layers(GRU, input, hx, None, params, has_biases, num_layers, dropout, train,
                   bidirectional, batch_first, linear=linear)[:2]


def rnn_tanh_input(input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
                   batch_first, *, linear=None):
    return _layers(RNN_TANH, input, hx, None, params, has_biases, num_layers, dropout, train,
                   bidirectional, batch_first, linear=linear)[:2]


def rnn_relu_input(input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
                   batch_first, *, linear=None):
    return _layers(RNN_RELU, input, hx, None, params, has_biases, num_layers, dropout, train,
                   bidirectional, batch_first, linear=linear)[:2]


def _sizes(batch_sizes):
    return [int(b) for b in batch_sizes.tolist()]


def lstm_data(data, batch_sizes, hx, params, has_biases, num_layers, dropout, train,
              bidirectional, *, linear=None):
    if len(hx) != 2:
        raise RuntimeError("lstm expects two hidden states")
    return _layers(LSTM, data, hx[0], hx[1], params, has_biases, num_layers, dropout, train,
                   bidirectional, False, _sizes(batch_sizes), linear)


def gru_data(data, batch_sizes, hx, params, has_biases, num_layers, dropout, train,
             bidirectional, *, linear=None):
    return _layers(GRU, data, hx, None, params, has_biases, num_layers, dropout, train,
                   bidirectional, False, _sizes(batch_sizes), linear)[:2]


def rnn_tanh_data(data, batch_sizes, hx, params, has_biases, num_layers, dropout, train,
                  bidirectional, *, linear=None):
    return _layers(RNN_TANH, data, hx, None, params, has_biases, num_layers, dropout, train,
                   bidirectional, False, _sizes(batch_sizes), linear)[:2]


def rnn_relu_data(data, batch_sizes, hx, params, has_biases, num_layers, dropout, train,
                  bidirectional, *, linear=None):
    return _layers(RNN_RELU, data, hx, None, params, has_biases, num_layers, dropout, train,
                   bidirectional, False, _sizes(batch_sizes), linear)[:2]


# -- cells and the step-by-step recurrence ----------------------------------------------------

def _check_cell(input, hx, w_ih, w_hh, labels):
    """ATen's check_rnn_cell_forward_input / _hidden."""
    if input.size(1) != w_ih.size(1):
        raise RuntimeError(f"input has inconsistent input_size: got {input.size(1)} expected "
                           f"{w_ih.size(1)}")
    for h, label in zip(hx, labels):
        if input.size(0) != h.size(0):
            raise RuntimeError(f"Input batch size {input.size(0)} doesn't match hidden{label} "
                               f"batch size {h.size(0)}")
        if h.size(1) != w_hh.size(1):
            raise RuntimeError(f"hidden{label} has inconsistent hidden_size: got {h.size(1)}, "
                               f"expected {w_hh.size(1)}")


# The cells' arithmetic, shared by the cell ops and the stack's ``linear=`` path.

def _aten_linear(x, weight, bias):
    return _aten.linear.default(x, weight, bias)


def _gates(input, hx, w_ih, w_hh, b_ih, b_hh, linear=_aten_linear):
    return _aten.add.Tensor(linear(input, w_ih, b_ih), linear(hx, w_hh, b_hh))


def _lstm_step(input, h, c, w_ih, w_hh, b_ih, b_hh, linear=_aten_linear):
    i, f, g, o = _gates(input, h, w_ih, w_hh, b_ih, b_hh, linear).chunk(4, 1)
    cy = f.sigmoid() * c + i.sigmoid() * g.tanh()
    return o.sigmoid() * cy.tanh(), cy


def _gru_step(input, hx, w_ih, w_hh, b_ih, b_hh, linear=_aten_linear):
    i_r, i_z, i_n = linear(input, w_ih, b_ih).chunk(3, 1)
    h_r, h_z, h_n = linear(hx, w_hh, b_hh).chunk(3, 1)
    r = (i_r + h_r).sigmoid()
    z = (i_z + h_z).sigmoid()
    n = (i_n + r * h_n).tanh()
    return n + z * (hx - n)


def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    if len(hx) != 2:
        raise RuntimeError("lstm_cell expects two hidden states")
    _check_cell(input, hx, w_ih, w_hh, ["0", "1"])
    return _lstm_step(input, hx[0], hx[1], w_ih, w_hh, b_ih, b_hh)


def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    _check_cell(input, [hx], w_ih, w_hh, ["0"])
    return _gru_step(input, hx, w_ih, w_hh, b_ih, b_hh)


def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    _check_cell(input, [hx], w_ih, w_hh, ["0"])
    return _gates(input, hx, w_ih, w_hh, b_ih, b_hh).tanh()


def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    _check_cell(input, [hx], w_ih, w_hh, ["0"])
    return _gates(input, hx, w_ih, w_hh, b_ih, b_hh).relu()


_CELLS = {RNN_RELU: "rnn_relu_cell", RNN_TANH: "rnn_tanh_cell", GRU: "gru_cell"}


def _step(x, state, weights, mode, linear=None):
    """One time step on a (h,) or (h, c) state; weights (w_ih, w_hh, b_ih, b_hh, w_hr). The
    cell ops, or with ``linear`` their arithmetic with its products."""
    aten = _aten
    w_ih, w_hh, b_ih, b_hh, w_hr = weights
    if linear is not None:
        if mode == LSTM:
            h, c = _lstm_step(x, state[0], state[1], w_ih, w_hh, b_ih, b_hh, linear)
            return (h if w_hr is None else linear(h, w_hr, None)), c
        if mode == GRU:
            return (_gru_step(x, state[0], w_ih, w_hh, b_ih, b_hh, linear),)
        gates = _gates(x, state[0], w_ih, w_hh, b_ih, b_hh, linear)
        return (gates.tanh() if mode == RNN_TANH else gates.relu(),)
    if mode == LSTM:
        if w_hr is None:
            return aten.lstm_cell.default(x, list(state), w_ih, w_hh, b_ih, b_hh)
        # a projected state is narrower than the cell: ATen's projection cell, not lstm_cell
        h, c = _lstm_step(x, state[0], state[1], w_ih, w_hh, b_ih, b_hh)
        return aten.matmul.default(h, w_hr.t()), c
    return (getattr(aten, _CELLS[mode]).default(x, state[0], w_ih, w_hh, b_ih, b_hh),)


def _steps_run(steps, init, weights, mode, reverse, batch_sizes, linear=None):
    """The recurrence over ``steps`` (per-step inputs, rows = batch) from the state tuple
    ``init``; ``batch_sizes`` (non-increasing) gives each step's rows. Returns the per-step
    outputs and the final state tuple (rows in batch order)."""
    aten = _aten
    take = lambda st, a, b: tuple(s[a:b] for s in st)  # noqa: E731
    out_t = [None] * len(steps)
    if not steps:
        return out_t, init
    if not reverse:
        # Sequences end as the batch shrinks: park their final state, keep the rest.
        state, done, rows = init, [], batch_sizes[0]
        for t, b in enumerate(batch_sizes):
            if b < rows:
                done.append(take(state, b, rows))
                state, rows = take(state, 0, b), b
            state = _step(steps[t], state, weights, mode, linear)
            out_t[t] = state[0]
        final = tuple(aten.cat.default([s, *(d[i] for d in reversed(done))], 0) if done else s
                      for i, s in enumerate(state))
    else:
        # Backwards, sequences join as the batch grows, starting from their initial state.
        rows = batch_sizes[-1]
        state = take(init, 0, rows)
        for t in range(len(steps) - 1, -1, -1):
            b = batch_sizes[t]
            if b > rows:
                state = tuple(aten.cat.default([s, i[rows:b]], 0) for s, i in zip(state, init))
                rows = b
            state = _step(steps[t], state, weights, mode, linear)
            out_t[t] = state[0]
        final = state
    return out_t, final


def layer_steps(input, w_ih, w_hh, b_ih, b_hh, hx, cx, reverse, batch_sizes, mode, w_hr=None,
                linear=None):
    """One layer and direction with ``_rnn_layer``'s arguments (plus an LSTM projection
    ``w_hr``), step by step over the cell ops (their arithmetic with ``linear``'s products, if
    given). Returns (output, h_n, c_n or None)."""
    aten = _aten
    packed = len(batch_sizes) > 0
    if packed:
        bs, offsets = [int(b) for b in batch_sizes], [0]
        for b in bs:
            offsets.append(offsets[-1] + b)
        steps = [input[offsets[t]:offsets[t + 1]] for t in range(len(bs))]
    else:
        steps = list(input.unbind(0))
        bs = [input.size(1)] * len(steps)
    state = (hx, cx) if mode == LSTM else (hx,)
    outs, final = _steps_run(steps, state, (w_ih, w_hh, b_ih, b_hh, w_hr), mode, reverse, bs,
                             linear)
    if outs:
        out = aten.cat.default(outs, 0) if packed else aten.stack.default(outs, 0)
    else:
        out = input.new_zeros(tuple(input.shape[:-1]) + (hx.size(-1),))
    return out, final[0], (final[1] if mode == LSTM else None)
