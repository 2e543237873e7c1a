"""``ember.nested``: nested tensors with PyTorch's jagged layout (``layout=ember.jagged``).

A jagged tensor batches tensors whose sizes differ along one dim (``(B, j1, D)``); see
``_internal/nested_tensor.py``. PyTorch's default nested layout, ``strided``, is a C++ tensor
implementation ember does not have: asking for it raises ``NotImplementedError``.
"""
from .. import _tensor
from .._core.device import jagged, strided
from ._internal.nested_tensor import (jagged_from_list,
                                      jagged_from_tensor_and_lengths,
                                      nested_view_from_values_offsets,
                                      nested_view_from_values_offsets_lengths)
from ._internal.ops import to_padded_tensor as _to_padded_tensor

__all__ = ["to_padded_tensor", "as_nested_tensor", "nested_tensor", "nested_tensor_from_jagged",
           "narrow", "masked_select"]

Tensor = _tensor.Tensor


def _check_layout(layout, fn):
    if layout == strided:
        raise NotImplementedError(
            f"{fn}(): ember has the jagged nested-tensor layout only (layout=ember.jagged); "
            "PyTorch's strided layout is a C++ tensor implementation ember does not have")
    if layout != jagged:
        raise RuntimeError(f"Specified layout is unsupported for nested tensors: {layout}")


def as_nested_tensor(ts, dtype=None, device=None, layout=None):
    """A jagged tensor over a list of tensors (copied, on the autograd graph) or over a dense
    tensor's first dim (its memory, when no dtype or device change asks a copy)."""
    import ember
    is_tensor_list = isinstance(ts, (list, tuple)) and all(isinstance(t, Tensor) for t in ts)
    if not isinstance(ts, Tensor) and not is_tensor_list:
        raise TypeError("as_nested_tensor(): Expected first argument to be a tensor or a list "
                        "/ tuple of tensors ")
    if isinstance(ts, Tensor) and ts.dim() < 2:
        raise RuntimeError("as_nested_tensor(): Expected tensor argument to have dim() > 1")
    if isinstance(ts, Tensor) and ts.is_nested:
        if layout == ts.layout:
            return ts.to(device=device, dtype=dtype)
        raise RuntimeError("as_nested_tensor(): Converting between nested tensor layouts is not "
                           "supported")
    _check_layout(strided if layout is None else layout, "as_nested_tensor")
    if isinstance(ts, Tensor):
        if device is None:
            device = ts.device
        values = ts.contiguous().flatten(0, 1).to(device=device, dtype=dtype)
        batch_size, seq_len = ts.shape[0], ts.shape[1]
        offsets = ember.arange(0, batch_size * seq_len + 1, seq_len, device=device,
                               dtype=ember.int64)
        return nested_view_from_values_offsets(values, offsets, min_seqlen=seq_len,
                                               max_seqlen=seq_len)
    nt, _ = jagged_from_list(list(ts), offsets=None, device=device, dtype=dtype)
    return nt


def nested_tensor(tensor_list, *, dtype=None, layout=None, device=None, requires_grad=False,
                  pin_memory=False):
    """A jagged tensor holding copies of ``tensor_list`` (tensors or array-likes): a leaf,
    with no autograd history from the list."""
    import ember
    _check_layout(strided if layout is None else layout, "nested_tensor")
    list_of_tensors = [t if isinstance(t, Tensor) else ember.as_tensor(t) for t in tensor_list]
    with ember.no_grad():
        if pin_memory:
            list_of_tensors = [t.pin_memory() for t in list_of_tensors]
        nt, _ = jagged_from_list(list_of_tensors, offsets=None, device=device, dtype=dtype)
    nt.requires_grad_(requires_grad)
    return nt


def narrow(tensor, dim, start, length, layout=strided):
    """The jagged tensor of ``tensor[b, start[b]:start[b] + length[b]]`` for each ``b``: a view
    of ``tensor`` (with lengths when the pieces do not abut)."""
    import ember
    from .._core.symint import SymInt
    if not isinstance(start, (int, SymInt, Tensor)):
        raise RuntimeError("start must be an integer or a tensor")
    if not isinstance(length, (int, SymInt, Tensor)):
        raise RuntimeError("length must be an integer or a tensor")
    _check_layout(layout, "narrow")
    if dim != 1:
        raise RuntimeError("jagged layout only supports dim=1")
    if isinstance(start, (int, SymInt)):
        start = ember.tensor([start], device=tensor.device, dtype=ember.int64)
    if isinstance(length, (int, SymInt)):
        length = ember.tensor([length], device=tensor.device, dtype=ember.int64)
    nt, _, _ = jagged_from_tensor_and_lengths(tensor, start, length)
    return nt


def nested_tensor_from_jagged(values, offsets=None, lengths=None, jagged_dim=None,
                              min_seqlen=None, max_seqlen=None):
    """A jagged tensor viewing ``values`` with ``offsets`` (or ``lengths`` alone, or both for
    components with holes between them), ragged on outer dim ``jagged_dim`` (default 1)."""
    import ember.nn.functional as F
    if offsets is None:
        if lengths is None:
            raise RuntimeError("nested_tensor_from_jagged(): At least one of offsets or lengths "
                               "is required.")
        offsets = F.pad(lengths.cumsum(0), (1, 0))
        lengths = None
    if jagged_dim is None:
        jagged_dim = 1
    elif jagged_dim < 1:
        raise ValueError(f"Expected jagged_dim >=1, but got {jagged_dim}.")
    return nested_view_from_values_offsets_lengths(values, offsets, lengths,
                                                   ragged_idx=jagged_dim,
                                                   min_seqlen=min_seqlen, max_seqlen=max_seqlen)


def to_padded_tensor(input, padding, output_size=None, *, out=None):
    """The dense tensor of ``input``'s components padded with ``padding`` along the ragged
    dim."""
    if out is not None:
        raise NotImplementedError("ember.nested.to_padded_tensor(): out= is not supported")
    return _to_padded_tensor(input, padding, output_size)


def masked_select(tensor, mask):
    """The jagged tensor of each last-dim row's elements where ``mask`` (broadcast to
    ``tensor``) is true."""
    import ember.nn.functional as F
    if tensor.layout != strided:
        raise RuntimeError(f"torch.nested.masked_select requires a strided tensor, given "
                           f"{tensor.layout}")
    if mask.layout != strided:
        raise RuntimeError(f"torch.nested.masked_select requires a strided mask, given: "
                           f"{mask.layout}")
    res_values = tensor.masked_select(mask)
    res_lengths = mask.expand(tensor.shape).sum(dim=tensor.ndim - 1).view(-1)
    return nested_view_from_values_offsets(values=res_values,
                                           offsets=F.pad(res_lengths.cumsum(dim=0), (1, 0)))
