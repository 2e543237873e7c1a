"""Recurrent layers: ``RNN``, ``LSTM``, ``GRU`` and their ``*Cell`` forms.

Parameters, their names (``weight_ih_l0``, ``..._reverse``), shapes and initialization are
PyTorch's. As in PyTorch, ``forward`` hands the whole stack to one aten op (``lstm.input`` for a
padded sequence, ``lstm.data`` for a ``PackedSequence``; ``gru``, ``rnn_tanh``, ``rnn_relu``
likewise, ``ember/_kernels/composite/rnn.py``), which runs each layer and direction as one
``_rnn_layer`` call. The cells, LSTM projections (``proj_size > 0``, which the ops do not take)
and the layer's double backward run the recurrence step by step here with ``F.linear`` and
pointwise ops (PyTorch's gate order: LSTM ``i, f, g, o``; GRU ``r, z, n``).
"""
import math
import numbers

from ... import cat, empty, stack, zeros
from .. import functional as F
from .. import init
from ..parameter import Parameter
from ..utils.rnn import PackedSequence
from .module import Module
from ..._ops.overload import ops as _ops

_aten = _ops.aten

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}
_MODE_NUMBERS = {"RNN_RELU": 0, "RNN_TANH": 1, "LSTM": 2, "GRU": 3}  # PyTorch's (cuDNN's) numbering


def _rnn_cell(x, h, w_ih, w_hh, b_ih, b_hh, nonlinearity):
    pre = F.linear(x, w_ih, b_ih) + F.linear(h, w_hh, b_hh)
    return pre.tanh() if nonlinearity == "tanh" else pre.relu()


def _lstm_cell(x, hc, w_ih, w_hh, b_ih, b_hh, w_hr=None):
    h, c = hc
    gates = F.linear(x, w_ih, b_ih) + F.linear(h, w_hh, b_hh)
    i, f, g, o = gates.chunk(4, -1)
    c = f.sigmoid() * c + i.sigmoid() * g.tanh()
    h = o.sigmoid() * c.tanh()
    if w_hr is not None:
        h = F.linear(h, w_hr)
    return h, c


def _gru_cell(x, h, w_ih, w_hh, b_ih, b_hh):
    gi = F.linear(x, w_ih, b_ih)
    gh = F.linear(h, w_hh, b_hh)
    i_r, i_z, i_n = gi.chunk(3, -1)
    h_r, h_z, h_n = gh.chunk(3, -1)
    r = (i_r + h_r).sigmoid()
    z = (i_z + h_z).sigmoid()
    n = (i_n + r * h_n).tanh()
    return (1 - z) * n + z * h


def _layer_steps(input, w_ih, w_hh, b_ih, b_hh, hx, cx, reverse, batch_sizes, mode):
    """One layer and direction (``aten::_rnn_layer``'s arguments, mode numbered as PyTorch's: 0
    RNN_RELU, 1 RNN_TANH, 2 LSTM, 3 GRU; ``batch_sizes`` non-empty for packed input) step by
    step in differentiable ops: the recomputation the layer's double backward differentiates.
    Returns (output, h_n, c_n or None)."""
    packed = len(batch_sizes) > 0
    if packed:
        offsets = [0]
        for b in batch_sizes:
            offsets.append(offsets[-1] + b)
        steps = [input[offsets[t]:offsets[t + 1]] for t in range(len(batch_sizes))]
    else:
        steps = list(input.unbind(0))
    state = (hx, cx) if mode == 2 else (hx,)
    weights = (w_ih, w_hh, b_ih, b_hh)
    outs, final = _steps_run(steps, state, weights, mode, reverse,
                             list(batch_sizes) if packed else None)
    if outs:
        out = cat(outs, 0) if packed else stack(outs, 0)
    else:
        out = input.new_zeros(tuple(input.shape[:-1]) + (w_hh.shape[1],))
    return out, final[0], (final[1] if mode == 2 else None)


def _step(x, state, weights, mode):
    """One time step of mode ``mode`` (numbered as in _layer_steps) on a (h,) or (h, c) state."""
    w_ih, w_hh, b_ih, b_hh = weights[:4]
    if mode == 2:
        return _lstm_cell(x, state, w_ih, w_hh, b_ih, b_hh, weights[4] if len(weights) > 4
                          else None)
    if mode == 3:
        return (_gru_cell(x, state[0], w_ih, w_hh, b_ih, b_hh),)
    return (_rnn_cell(x, state[0], w_ih, w_hh, b_ih, b_hh, "tanh" if mode == 1 else "relu"),)


def _steps_run(steps, init, weights, mode, reverse, batch_sizes=None):
    """The recurrence over ``steps`` (per-step inputs, rows = batch) from the state tuple
    ``init`` ((h,) or (h, c)). ``batch_sizes`` (packed input, non-increasing) gives each step's
    rows; ``None`` means all. Returns the per-step outputs and the final state tuple."""
    if batch_sizes is None:
        batch_sizes = [steps[0].size(0)] * len(steps) if steps else []
    take = lambda st, a, b: tuple(s[a:b] for s in st)  # noqa: E731
    out_t = [None] * len(steps)
    if not reverse:
        # Sequences end as the batch shrinks: park their final state, keep the rest.
        state, done, rows = init, [], batch_sizes[0] if batch_sizes else 0
        for t, b in enumerate(batch_sizes):
            if b < rows:
                done.append(take(state, b, rows))
                state, rows = take(state, 0, b), b
            state = _step(steps[t], state, weights, mode)
            out_t[t] = state[0]
        final = tuple(cat([s, *(d[i] for d in reversed(done))], 0) if done else s
                      for i, s in enumerate(state))
    else:
        # Backwards, sequences join as the batch grows, starting from their h0.
        rows = batch_sizes[-1] if batch_sizes else 0
        state = take(init, 0, rows) if batch_sizes else init
        for t in range(len(steps) - 1, -1, -1):
            b = batch_sizes[t]
            if b > rows:
                state = tuple(cat([s, i[rows:b]], 0) for s, i in zip(state, init))
                rows = b
            state = _step(steps[t], state, weights, mode)
            out_t[t] = state[0]
        final = state
    return out_t, final


class RNNBase(Module):
    __constants__ = ["mode", "input_size", "hidden_size", "num_layers", "bias", "batch_first",
                     "dropout", "bidirectional", "proj_size"]

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, proj_size=0, device=None,
                 dtype=None):
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        num_directions = 2 if bidirectional else 1
        if (not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1
                or isinstance(dropout, bool)):
            raise ValueError("dropout should be a number in range [0, 1] representing the "
                             "probability of an element being zeroed")
        if not isinstance(hidden_size, int):
            raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable "
                             "projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if mode not in _GATES:
            raise ValueError(f"Unrecognized RNN mode: {mode}")
        gate_size = _GATES[mode] * hidden_size
        self._flat_weights_names = []
        self._all_weights = []
        for layer in range(num_layers):
            for direction in range(num_directions):
                real_hidden_size = proj_size if proj_size > 0 else hidden_size
                layer_input_size = input_size if layer == 0 else real_hidden_size * num_directions
                params = [Parameter(empty((gate_size, layer_input_size), **factory_kwargs)),
                          Parameter(empty((gate_size, real_hidden_size), **factory_kwargs))]
                names = ["weight_ih_l{}{}", "weight_hh_l{}{}"]
                if bias:
                    params += [Parameter(empty(gate_size, **factory_kwargs)),
                               Parameter(empty(gate_size, **factory_kwargs))]
                    names += ["bias_ih_l{}{}", "bias_hh_l{}{}"]
                if proj_size > 0:
                    params.append(Parameter(empty((proj_size, hidden_size), **factory_kwargs)))
                    names.append("weight_hr_l{}{}")
                suffix = "_reverse" if direction == 1 else ""
                names = [n.format(layer, suffix) for n in names]
                for name, param in zip(names, params):
                    setattr(self, name, param)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    @property
    def _flat_weights(self):
        return [getattr(self, n) for n in self._flat_weights_names]

    @property
    def all_weights(self):
        return [[getattr(self, w) for w in weights] for weights in self._all_weights]

    def flatten_parameters(self):
        """A cuDNN layout optimization in PyTorch; nothing to do here."""

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if self.proj_size != 0:
            s += ", proj_size={proj_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)

    def _layer_weights(self, layer, direction):
        suffix = "_reverse" if direction == 1 else ""
        get = lambda n: getattr(self, f"{n}_l{layer}{suffix}", None)  # noqa: E731
        return get("weight_ih"), get("weight_hh"), get("bias_ih"), get("bias_hh"), get("weight_hr")

    def _run(self, steps, hx, batch_sizes=None):
        """The step-by-step forward, for LSTM projections (proj_size > 0), which the aten ops
        do not take: ``steps`` are the per-time-step inputs (rows = batch), ``hx`` a tensor or
        an (h, c) pair shaped (layers * directions, N, H), ``batch_sizes`` (packed input) each
        step's rows. Returns the per-step outputs and the final states."""
        num_directions = 2 if self.bidirectional else 1
        is_lstm = self.mode == "LSTM"
        mode = _MODE_NUMBERS[self.mode]
        h_n, c_n = [], []
        for layer in range(self.num_layers):
            outs = []
            for direction in range(num_directions):
                idx = layer * num_directions + direction
                init = (hx[0][idx], hx[1][idx]) if is_lstm else (hx[idx],)
                out_t, final = _steps_run(steps, init, self._layer_weights(layer, direction),
                                          mode, direction == 1, batch_sizes)
                outs.append(out_t)
                h_n.append(final[0])
                if is_lstm:
                    c_n.append(final[1])
            steps = [cat([o[t] for o in outs], -1) if num_directions == 2 else outs[0][t]
                     for t in range(len(steps))]
            if self.dropout and self.training and layer < self.num_layers - 1:
                steps = [F.dropout(s, self.dropout, True) for s in steps]
        if is_lstm:
            return steps, (stack(h_n, 0), stack(c_n, 0))
        return steps, stack(h_n, 0)

    def _initial_state(self, batch, like):
        num_directions = 2 if self.bidirectional else 1
        real_hidden = self.proj_size if self.proj_size > 0 else self.hidden_size
        shape = (self.num_layers * num_directions, batch)
        h0 = zeros(shape + (real_hidden,), dtype=like.dtype, device=like.device)
        if self.mode == "LSTM":
            return h0, zeros(shape + (self.hidden_size,), dtype=like.dtype, device=like.device)
        return h0

    def _forward_packed(self, packed, hx):
        data, batch_sizes, sorted_indices, unsorted_indices = packed
        batch_sizes = [int(b) for b in batch_sizes.tolist()]
        is_lstm = self.mode == "LSTM"
        if hx is None:
            hx = self._initial_state(batch_sizes[0], data)
        elif sorted_indices is not None:
            # hx rows follow the caller's batch order; the packed rows are sorted by length.
            hx = tuple(h.index_select(1, sorted_indices) for h in hx) if is_lstm \
                else hx.index_select(1, sorted_indices)
        self._check_forward_args(data, hx, batch_sizes)
        if self.proj_size == 0:
            # one aten op for the stack (PyTorch's _VF.lstm(data, batch_sizes, ...))
            args = (self._flat_weights, self.bias, self.num_layers, self.dropout, self.training,
                    self.bidirectional)
            if is_lstm:
                out_data, h_n, c_n = _aten.lstm.data(data, packed.batch_sizes, list(hx), *args)
                hidden = (h_n, c_n)
            else:
                out_data, hidden = getattr(_aten, self.mode.lower()).data(
                    data, packed.batch_sizes, hx, *args)
        else:
            offsets = [0]
            for b in batch_sizes:
                offsets.append(offsets[-1] + b)
            steps = [data[offsets[t]:offsets[t + 1]] for t in range(len(batch_sizes))]
            outputs, hidden = self._run(steps, hx, batch_sizes)
            out_data = cat(outputs, 0)
        output = PackedSequence(out_data, packed.batch_sizes, sorted_indices, unsorted_indices)
        if unsorted_indices is not None:
            hidden = tuple(h.index_select(1, unsorted_indices) for h in hidden) if is_lstm \
                else hidden.index_select(1, unsorted_indices)
        return output, hidden

    def _check_forward_args(self, input, hx, batch_sizes=None):
        """PyTorch's RNNBase.check_forward_args: the input's dimensions and feature size, the
        states' shapes (after unbatched input got its batch dimension)."""
        if input.dtype != self._flat_weights[0].dtype:
            raise ValueError(f"input must have the type {self._flat_weights[0].dtype}, got type "
                             f"{input.dtype}")
        expected_dim = 2 if batch_sizes is not None else 3
        if input.dim() != expected_dim:
            raise RuntimeError(f"input must have {expected_dim} dimensions, got {input.dim()}")
        if self.input_size != input.size(-1):
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {input.size(-1)}")
        if batch_sizes is not None:
            mini_batch = int(batch_sizes[0])
        else:
            mini_batch = input.size(0) if self.batch_first else input.size(1)
        num_directions = 2 if self.bidirectional else 1
        lead = (self.num_layers * num_directions, mini_batch)
        h_size = lead + (self.proj_size if self.proj_size > 0 else self.hidden_size,)
        if self.mode == "LSTM":
            checks = [(hx[0], h_size, "Expected hidden[0] size {}, got {}"),
                      (hx[1], lead + (self.hidden_size,), "Expected hidden[1] size {}, got {}")]
        else:
            checks = [(hx, h_size, "Expected hidden size {}, got {}")]
        for h, size, msg in checks:
            if tuple(h.size()) != size:
                raise RuntimeError(msg.format(size, list(h.size())))

    def _forward(self, input, hx):
        if isinstance(input, PackedSequence):
            return self._forward_packed(input, hx)
        is_lstm = self.mode == "LSTM"
        if input.dim() not in (2, 3):
            raise ValueError(f"{type(self).__name__}: Expected input to be 2D or 3D, got "
                             f"{input.dim()}D instead")
        batched = input.dim() == 3
        batch_dim = 0 if self.batch_first else 1
        if hx is not None:
            dims = (hx[0].dim(), hx[1].dim()) if is_lstm else (hx.dim(),)
            want = 3 if batched else 2
            if any(d != want for d in dims):
                kind = "batched 3-D" if batched else "unbatched 2-D"
                if is_lstm:
                    raise RuntimeError(f"For {kind} input, hx and cx should also be {want}-D but "
                                       f"got ({dims[0]}-D, {dims[1]}-D) tensors")
                raise RuntimeError(f"For {kind} input, hx should also be {want}-D but got "
                                   f"{dims[0]}-D tensor")
        if not batched:
            input = input.unsqueeze(batch_dim)
            if hx is not None:
                hx = (hx[0].unsqueeze(1), hx[1].unsqueeze(1)) if is_lstm else hx.unsqueeze(1)
        if hx is None:
            hx = self._initial_state(input.size(0 if self.batch_first else 1), input)
        self._check_forward_args(input, hx)
        if self.proj_size == 0:
            # the whole stack is one aten op, each layer and direction one _rnn_layer call
            # (PyTorch's _VF.lstm ...)
            args = (self._flat_weights, self.bias, self.num_layers, self.dropout, self.training,
                    self.bidirectional, self.batch_first)
            if is_lstm:
                output, h_n, c_n = _aten.lstm.input(input, list(hx), *args)
                hidden = (h_n, c_n)
            else:
                # aten::gru, rnn_tanh, rnn_relu: the mode's name in lower case
                output, hidden = getattr(_aten, self.mode.lower()).input(input, hx, *args)
        else:  # LSTM projections: the step-by-step path, time-major
            steps, hidden = self._run(input.transpose(0, 1).unbind(0) if self.batch_first
                                      else input.unbind(0), hx)
            output = stack(steps, 1 if self.batch_first else 0)
        if not batched:
            output = output.squeeze(batch_dim)
            hidden = (hidden[0].squeeze(1), hidden[1].squeeze(1)) if is_lstm \
                else hidden.squeeze(1)
        return output, hidden

    def forward(self, input, hx=None):
        return self._forward(input, hx)


class RNN(RNNBase):
    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            self.nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' or "
                             "'relu'.")
        super().__init__(mode, *args, **kwargs)


class LSTM(RNNBase):
    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)


class GRU(RNNBase):
    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)


class RNNCellBase(Module):
    __constants__ = ["input_size", "hidden_size", "bias"]

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(empty((num_chunks * hidden_size, input_size),
                                         **factory_kwargs))
        self.weight_hh = Parameter(empty((num_chunks * hidden_size, hidden_size),
                                         **factory_kwargs))
        if bias:
            self.bias_ih = Parameter(empty(num_chunks * hidden_size, **factory_kwargs))
            self.bias_hh = Parameter(empty(num_chunks * hidden_size, **factory_kwargs))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            s += ", bias={bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += ", nonlinearity={nonlinearity}"
        return s.format(**self.__dict__)

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _prepare(self, input, hx, lstm=False):
        if input.dim() not in (1, 2):
            raise ValueError(f"{type(self).__name__}: Expected input to be 1D or 2D, got "
                             f"{input.dim()}D instead")
        batched = input.dim() == 2
        if not batched:
            input = input.unsqueeze(0)
        if hx is None:
            z = zeros(input.size(0), self.hidden_size, dtype=input.dtype, device=input.device)
            hx = (z, z) if lstm else z
        elif not batched:
            hx = (hx[0].unsqueeze(0), hx[1].unsqueeze(0)) if lstm else hx.unsqueeze(0)
        return input, hx, batched


class RNNCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None,
                 dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        if self.nonlinearity not in ("tanh", "relu"):
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        input, hx, batched = self._prepare(input, hx)
        ret = _rnn_cell(input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh,
                        self.nonlinearity)
        return ret if batched else ret.squeeze(0)


class LSTMCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        input, hx, batched = self._prepare(input, hx, lstm=True)
        h, c = _lstm_cell(input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        input, hx, batched = self._prepare(input, hx)
        ret = _gru_cell(input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return ret if batched else ret.squeeze(0)
