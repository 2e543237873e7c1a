"""CompositeImplicitAutograd kernels of ``lstm``, ``gru``, ``rnn_tanh`` and ``rnn_relu`` (the
``.input`` overloads for padded sequences, ``.data`` for packed ones), the ops behind
``nn.LSTM/GRU/RNN`` (PyTorch's ``_VF.lstm`` ...): as ATen's ``_rnn_impl`` they loop layers and
directions (dropout between layers while training, the two directions' outputs concatenated,
``batch_first`` handled once), and each layer and direction is one ``_rnn_layer`` call
(``cpu/rnn.py``). Autograd records those calls, so a layer's backward is one
``_rnn_layer_backward``."""
from ..._ops.overload import ops
from ..rules.rnn import GRU, LSTM, RNN_RELU, RNN_TANH

_aten = ops.aten  # ops resolve when called: the op table is built after the kernels load


def _layers(mode, input, h0, c0, params, has_biases, num_layers, dropout, train, bidirectional,
            batch_first, batch_sizes=()):
    """Runs the stack; returns (output, h_n, c_n or None). ``batch_sizes`` (a list) non-empty:
    ``input`` is packed data."""
    aten = _aten
    directions = 2 if bidirectional else 1
    per = 4 if has_biases else 2
    if len(params) != num_layers * directions * per:
        if mode == LSTM and len(params) == num_layers * directions * (per + 1):
            # PyTorch runs proj_size through here too; ember's layer op has no projection yet
            # (nn.LSTM keeps its step-by-step path for proj_size > 0).
            raise NotImplementedError("ember's aten::lstm does not support projections "
                                      "(weight_hr) yet")
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
               batch_first):
    if len(hx) != 2:
        raise RuntimeError("lstm expects two hidden states")
    return _layers(LSTM, input, hx[0], hx[1], params, has_biases, num_layers, dropout, train,
                   bidirectional, batch_first)


def gru_input(input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
              batch_first):
    return _layers(GRU, input, hx, None, params, has_biases, num_layers, dropout, train,
                   bidirectional, batch_first)[:2]


def rnn_tanh_input(input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
                   batch_first):
    return _layers(RNN_TANH, input, hx, None, params, has_biases, num_layers, dropout, train,
                   bidirectional, batch_first)[:2]


def rnn_relu_input(input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
                   batch_first):
    return _layers(RNN_RELU, input, hx, None, params, has_biases, num_layers, dropout, train,
                   bidirectional, batch_first)[:2]


def _sizes(batch_sizes):
    return [int(b) for b in batch_sizes.tolist()]


def lstm_data(data, batch_sizes, hx, params, has_biases, num_layers, dropout, train,
              bidirectional):
    if len(hx) != 2:
        raise RuntimeError("lstm expects two hidden states")
    return _layers(LSTM, data, hx[0], hx[1], params, has_biases, num_layers, dropout, train,
                   bidirectional, False, _sizes(batch_sizes))


def gru_data(data, batch_sizes, hx, params, has_biases, num_layers, dropout, train,
             bidirectional):
    return _layers(GRU, data, hx, None, params, has_biases, num_layers, dropout, train,
                   bidirectional, False, _sizes(batch_sizes))[:2]


def rnn_tanh_data(data, batch_sizes, hx, params, has_biases, num_layers, dropout, train,
                  bidirectional):
    return _layers(RNN_TANH, data, hx, None, params, has_biases, num_layers, dropout, train,
                   bidirectional, False, _sizes(batch_sizes))[:2]


def rnn_relu_data(data, batch_sizes, hx, params, has_biases, num_layers, dropout, train,
                  bidirectional):
    return _layers(RNN_RELU, data, hx, None, params, has_biases, num_layers, dropout, train,
                   bidirectional, False, _sizes(batch_sizes))[:2]
