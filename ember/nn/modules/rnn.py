"""Recurrent layers: ``RNN``, ``LSTM``, ``GRU`` and their ``*Cell`` forms.

Parameters, their names (``weight_ih_l0``, ``..._reverse``), shapes and initialization are
PyTorch's. As in PyTorch, ``forward`` hands the whole stack to one aten op (``lstm.input`` for a
padded sequence, ``lstm.data`` for a ``PackedSequence``; ``gru``, ``rnn_tanh``, ``rnn_relu``
likewise, ``ember/_kernels/composite/rnn.py``), which runs each layer and direction as one
``_rnn_layer`` call (LSTM projections: step by step over ``lstm_cell``). The ``*Cell`` modules
call ``aten::lstm_cell``, ``gru_cell``, ``rnn_tanh_cell``, ``rnn_relu_cell``.
"""
import math
import numbers

from ... import empty, zeros
from ... import gru as _gru, lstm as _lstm, rnn_relu as _rnn_relu, rnn_tanh as _rnn_tanh
from .. import init
from ..parameter import Parameter
from ..utils.rnn import PackedSequence
from .module import Module
from ..._ops.overload import ops as _ops

_aten = _ops.aten

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}
# The stack's op is called through its public function, as PyTorch's _VF.lstm ...: a tensor
# subclass's __torch_function__ (ExpandedWeight's) sees ember.lstm, not the aten overload.
_VF = {"LSTM": _lstm, "GRU": _gru, "RNN_TANH": _rnn_tanh, "RNN_RELU": _rnn_relu}


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
        # one aten op for the stack (PyTorch's _VF.lstm(data, batch_sizes, ...))
        args = (self._flat_weights, self.bias, self.num_layers, self.dropout, self.training,
                self.bidirectional)
        if is_lstm:
            # (hx a tuple, as PyTorch's: a list third argument marks the input variant)
            out_data, h_n, c_n = _VF[self.mode](data, packed.batch_sizes, tuple(hx), *args)
            hidden = (h_n, c_n)
        else:
            out_data, hidden = _VF[self.mode](data, packed.batch_sizes, hx, *args)
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
        # the whole stack is one aten op, each layer and direction one _rnn_layer call
        # (PyTorch's _VF.lstm ...)
        args = (self._flat_weights, self.bias, self.num_layers, self.dropout, self.training,
                self.bidirectional, self.batch_first)
        if is_lstm:
            output, h_n, c_n = _VF[self.mode](input, list(hx), *args)
            hidden = (h_n, c_n)
        else:
            output, hidden = _VF[self.mode](input, hx, *args)
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
        cell = _aten.rnn_tanh_cell if self.nonlinearity == "tanh" else _aten.rnn_relu_cell
        ret = cell.default(input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return ret if batched else ret.squeeze(0)


class LSTMCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        input, hx, batched = self._prepare(input, hx, lstm=True)
        h, c = _aten.lstm_cell.default(input, list(hx), self.weight_ih, self.weight_hh,
                                       self.bias_ih, self.bias_hh)
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        input, hx, batched = self._prepare(input, hx)
        ret = _aten.gru_cell.default(input, hx, self.weight_ih, self.weight_hh, self.bias_ih,
                                     self.bias_hh)
        return ret if batched else ret.squeeze(0)
