"""Packed sequences: variable-length batches for the recurrent layers.

A ``PackedSequence`` stores a batch of sequences sorted by decreasing length, time step by time
step: ``data`` holds, for each step ``t``, the rows of the ``batch_sizes[t]`` sequences still
running, one after the other. The recurrent layers consume it step by step, so no computation
is spent on padding. Packing and unpacking are built from slicing, ``cat`` and ``stack`` and so
are differentiable. Semantics and messages are those of ``torch.nn.utils.rnn``.
"""
from collections import namedtuple
from collections.abc import Iterable

import ember as torch

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence",
           "pad_packed_sequence", "pad_sequence", "unpad_sequence", "pack_sequence",
           "unpack_sequence"]

PackedSequence_ = namedtuple("PackedSequence_",
                             ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])


def bind(optional, fn):
    return None if optional is None else fn(optional)


class PackedSequence(PackedSequence_):
    """The data and per-step batch sizes of a packed batch (see the module docstring).

    ``batch_sizes`` is always a CPU int64 tensor; ``sorted_indices`` maps the packed order to the
    caller's batch order (``None`` when the batch came sorted), ``unsorted_indices`` inverts it.
    """

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        return super().__new__(cls, *_packed_sequence_init_args(data, batch_sizes,
                                                                sorted_indices, unsorted_indices))

    def pin_memory(self):
        return type(self)(self.data.pin_memory(), self.batch_sizes,
                          bind(self.sorted_indices, lambda t: t.pin_memory()),
                          bind(self.unsorted_indices, lambda t: t.pin_memory()))

    def to(self, *args, **kwargs):
        """``Tensor.to`` on ``data``; the index tensors follow its device. Returns ``self`` when
        nothing changes."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        non_blocking = kwargs.get("non_blocking", False)
        call_to = lambda t: t.to(data.device, non_blocking=non_blocking)  # noqa: E731
        return type(self)(data, self.batch_sizes, bind(self.sorted_indices, call_to),
                          bind(self.unsorted_indices, call_to))

    def cuda(self, *args, **kwargs):
        kwargs.setdefault("device", "cuda")
        return self.to(*args, **kwargs)

    def cpu(self, *args, **kwargs):
        kwargs["device"] = "cpu"
        return self.to(*args, **kwargs)

    def double(self):
        return self.to(dtype=torch.double)

    def float(self):
        return self.to(dtype=torch.float)

    def half(self):
        return self.to(dtype=torch.half)

    def long(self):
        return self.to(dtype=torch.long)

    def int(self):
        return self.to(dtype=torch.int)

    def short(self):
        return self.to(dtype=torch.short)

    def char(self):
        return self.to(dtype=torch.int8)

    def byte(self):
        return self.to(dtype=torch.uint8)

    @property
    def is_cuda(self):
        return self.data.is_cuda

    def is_pinned(self):
        return self.data.is_pinned()


def _packed_sequence_init_args(data, batch_sizes=None, sorted_indices=None,
                               unsorted_indices=None):
    if unsorted_indices is None:
        unsorted_indices = invert_permutation(sorted_indices)
    if batch_sizes is not None:
        if batch_sizes.device.type != "cpu":
            raise ValueError(
                "batch_sizes should always be on CPU. Instances of PackedSequence should never be "
                "created manually. They should be instantiated by functions like pack_sequence "
                "and pack_padded_sequences in nn.utils.rnn. "
                "https://pytorch.org/docs/stable/nn.html#torch.nn.utils.rnn.pack_sequence")
        return data, batch_sizes, sorted_indices, unsorted_indices
    if not (isinstance(data, (list, tuple)) and len(data) == 2):
        raise AssertionError("Expected data to be a list or tuple of length 2")
    return data[0], data[1], sorted_indices, unsorted_indices


def invert_permutation(permutation):
    """The inverse of a 1-D permutation tensor (``None`` stays ``None``)."""
    if permutation is None:
        return None
    output = torch.empty_like(permutation)
    output.scatter_(0, permutation, torch.arange(0, permutation.numel(),
                                                 device=permutation.device))
    return output


def _pack_padded(input, lengths, batch_first):
    """``_VF._pack_padded_sequence``: ``lengths`` is a sorted list of ints."""
    if batch_first:
        input = input.transpose(0, 1)
    batch_size = input.size(1)
    if len(lengths) != batch_size:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got "
                           f"{len(lengths)} (batch_size={batch_size})")
    if lengths and lengths[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an "
                           "element in 'lengths' that is <= 0")
    if any(a < b for a, b in zip(lengths, lengths[1:])):
        raise RuntimeError(
            "`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. "
            "You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence "
            "to sidestep this requirement if you do not need ONNX exportability.")
    batch_sizes = [sum(1 for n in lengths if n > t) for t in range(lengths[0])]
    data = torch.cat([input[t, :b] for t, b in enumerate(batch_sizes)], 0)
    return data, torch.tensor(batch_sizes, dtype=torch.int64)


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Pack a padded ``T x B x *`` (``B x T x *`` with ``batch_first``) batch whose sequences
    have the given ``lengths``. With ``enforce_sorted`` the lengths must be decreasing;
    otherwise the batch is sorted here and the permutation kept in the result."""
    if not isinstance(lengths, torch.Tensor):
        lengths = torch.as_tensor(lengths, dtype=torch.int64, device="cpu")
    else:
        lengths = lengths.to(dtype=torch.int64)
    if enforce_sorted:
        sorted_indices = None
    else:
        lengths, sorted_indices = torch.sort(lengths, descending=True)
        sorted_indices = sorted_indices.to(input.device)
        input = input.index_select(0 if batch_first else 1, sorted_indices)
    data, batch_sizes = _pack_padded(input, [int(n) for n in lengths.tolist()], batch_first)
    return PackedSequence(data, batch_sizes, sorted_indices, None)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """Inverse of ``pack_padded_sequence``: the padded batch (in the caller's original order)
    and a CPU int64 tensor of the sequence lengths. ``total_length`` pads further."""
    batch_sizes = [int(b) for b in sequence.batch_sizes.tolist()]
    max_seq_length = len(batch_sizes)
    if total_length is not None:
        if total_length < max_seq_length:
            raise ValueError("Expected total_length to be at least the length of the longest "
                             f"sequence in input, but got total_length={total_length} and max "
                             f"sequence length being {max_seq_length}")
        max_seq_length = total_length
    data = sequence.data
    batch = batch_sizes[0]
    trailing = tuple(data.shape[1:])
    rows, offset = [], 0
    for t in range(max_seq_length):
        b = batch_sizes[t] if t < len(batch_sizes) else 0
        step = data[offset:offset + b]
        offset += b
        if b < batch:
            pad = torch.full((batch - b,) + trailing, padding_value, dtype=data.dtype,
                             device=data.device)
            step = torch.cat([step, pad], 0) if b else pad
        rows.append(step)
    padded = torch.stack(rows, 1 if batch_first else 0)
    lengths = torch.tensor([sum(1 for b in batch_sizes if b > i) for i in range(batch)],
                           dtype=torch.int64)
    if sequence.unsorted_indices is not None:
        return (padded.index_select(0 if batch_first else 1, sequence.unsorted_indices),
                lengths[sequence.unsorted_indices.cpu()])
    return padded, lengths


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stack ``L_i x *`` tensors into ``T x B x *`` (``B x T x *`` with ``batch_first``),
    filling with ``padding_value`` on ``padding_side`` (``'right'`` or ``'left'``)."""
    if isinstance(sequences, torch.Tensor):
        sequences = sequences.unbind(0)
    if not isinstance(sequences, Iterable):
        raise RuntimeError("pad_sequence: Expected iterable for input sequences, but got arg of "
                           f"type: {type(sequences)}")
    sequences = tuple(sequences)
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got "
                           f"{padding_side}.")
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    max_len = max(s.size(0) for s in sequences)
    padded = []
    for s in sequences:
        missing = max_len - s.size(0)
        if missing:
            pad = torch.full((missing,) + tuple(s.shape[1:]), padding_value, dtype=s.dtype,
                             device=s.device)
            s = torch.cat([s, pad] if padding_side == "right" else [pad, s], 0)
        padded.append(s)
    return torch.stack(padded, 0 if batch_first else 1)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """Split a padded batch back into its ``lengths[i]``-long sequences."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [seq[:int(length)] for seq, length in zip(padded_sequences, lengths)]


def pack_sequence(sequences, enforce_sorted=True):
    """Pack a list of ``L_i x *`` tensors (``pad_sequence`` then ``pack_padded_sequence``)."""
    lengths = torch.as_tensor([v.size(0) for v in sequences])
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """The list of sequences a ``PackedSequence`` holds, in the caller's original order."""
    padded_sequences, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded_sequences, lengths, batch_first=True)
