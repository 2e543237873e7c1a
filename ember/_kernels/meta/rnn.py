"""Meta kernels of the single-layer recurrent ops (``cpu/rnn.py``): the same checks and result
shapes (``rules/rnn.py``), without touching data, so fake tensors and compile tracing see a
layer as one op."""
from ..._core.device import META
from ..._core.tensor_impl import empty_tensor
from ..rules.rnn import LSTM, rnn_layer_shapes


def meta__rnn_layer(input, weight_ih, weight_hh, bias_ih, bias_hh, hx, cx, reverse, batch_sizes,
                    mode):
    _, _, out_shape, ws_shape = rnn_layer_shapes(input, weight_ih, weight_hh, bias_ih, bias_hh,
                                                 hx, cx, batch_sizes, mode)
    dt = input._dtype
    cy = empty_tensor(hx._size if mode == LSTM else (0,), dt, META)
    return (empty_tensor(out_shape, dt, META), empty_tensor(hx._size, dt, META), cy,
            empty_tensor(ws_shape, dt, META))


def meta__rnn_layer_backward(input, weight_ih, weight_hh, bias_ih, bias_hh, hx, cx, output,
                             workspace, grad_output, grad_hy, grad_cy, reverse, batch_sizes,
                             mode):
    rnn_layer_shapes(input, weight_ih, weight_hh, bias_ih, bias_hh, hx, cx, batch_sizes, mode)
    like = lambda t: empty_tensor(t._size, t._dtype, META) if t is not None else None  # noqa: E731
    return (like(input), like(weight_ih), like(weight_hh), like(bias_ih), like(bias_hh), like(hx),
            like(cx) if mode == LSTM else None)
