"""``NestedTensor``: the jagged layout, a ``__torch_dispatch__`` wrapper subclass (PyTorch's
``torch/nested/_internal/nested_tensor.py``).

A jagged tensor of outer shape ``(B, j1, D)`` holds a dense ``values`` tensor of shape
``(sum of the lengths, D)`` and an ``offsets`` tensor of ``B + 1`` positions into it (and, for
a non-contiguous one from ``narrow``, a ``lengths`` tensor); ``_ragged_idx`` says which outer
dimension is ragged. The outer tensor has no data of its own: its size holds the nested int
``j1`` (``nested_int.py``), its stride ``D*j1``, and every operator reaching the Python key
goes to ``ops.py``, which computes on ``values``. Autograd records on the outer tensor, as
in PyTorch; :class:`ViewBufferFromNested` and :class:`ViewNestedFromBuffer` carry gradients
between the outer tensor and its values.
"""
from ... import autograd
from ..._core.device import jagged
from ..._dispatch.keys import K, bit
from ..._tensor import Tensor
from ...utils.weak import WeakTensorKeyDictionary
from .nested_int import NestedIntNode

# offsets (or lengths) tensor -> its nested int: tensors sharing offsets share the ragged size.
# The counter starts at 1 because PyTorch's first user-visible nested int is j1 (its j0 belongs
# to an internal dummy tensor), so shapes print alike.
_tensor_id_counter = 1
_tensor_symint_registry = WeakTensorKeyDictionary()
_NESTED_KEYS = {"cpu": bit(K.NestedTensorCPU) | bit(K.AutogradNestedTensor),
                "cuda": bit(K.NestedTensorCUDA) | bit(K.AutogradNestedTensor)}


def get_tensor_symint(tensor, *, coeff=1):
    """The nested int standing for the ragged size described by ``tensor`` (made on first use)."""
    global _tensor_id_counter
    symint = _tensor_symint_registry.get(tensor)
    if symint is None:
        symint = NestedIntNode(_tensor_id_counter, coeff).wrapped()
        _tensor_id_counter += 1
        _tensor_symint_registry[tensor] = symint
    return symint


class NestedTensor(Tensor):
    """See the module docstring. Build one with ``ember.nested.nested_tensor`` or
    ``nested_tensor_from_jagged``; ``NestedTensor(values, offsets)`` wraps without a graph."""

    def __new__(cls, values, offsets, *, lengths=None, **kwargs):
        if offsets is None:
            raise AssertionError("offsets must not be None")
        if offsets.ndim != 1:
            raise AssertionError(f"offsets must be 1D, but got {offsets.ndim}D")
        if isinstance(values, NestedTensor):
            raise AssertionError("values must not be a NestedTensor")
        if values.device != offsets.device:
            raise AssertionError(
                f"values and offsets must be on the same device, but got "
                f"values.device={values.device} and offsets.device={offsets.device}")
        ragged_size = get_tensor_symint(offsets if lengths is None else lengths)
        ragged_idx = kwargs.get("_ragged_idx", 1)
        B = offsets.shape[0] - 1
        if lengths is not None and B != lengths.shape[0]:
            raise AssertionError(
                f"offsets and lengths batch sizes must match: offsets.shape[0] - 1 = {B}, "
                f"lengths.shape[0] = {lengths.shape[0]}")
        r = ragged_idx - 1  # the ragged dimension in values
        stride = values.stride()
        # the wrapper is made with the values' (concrete) metadata, then given its outer size
        # and strides, which hold the nested int
        t = Tensor._make_wrapper_subclass(
            cls, (B, *values.shape), (0, *stride), 0, None, values.dtype, jagged,
            values.device, storage_size=values.untyped_storage().nbytes())
        t._size = (B, *values.shape[:r], ragged_size, *values.shape[r + 1:])
        t._stride = (ragged_size * stride[r], *stride)
        t._keyset |= _NESTED_KEYS[values.device.type]
        t._ragged_idx = ragged_idx
        if kwargs.get("requires_grad", False):
            t.requires_grad_(True)
        return t

    def __init__(self, values, offsets, *, lengths=None, **kwargs):
        self._values = values
        self._offsets = offsets
        self._lengths = lengths
        # min / max sequence lengths, as ints, computed on first use
        self._metadata_cache = kwargs.get("_metadata_cache") or {}

    # -- the jagged structure ------------------------------------------------------------------
    def values(self):
        """The values tensor, as a view on the autograd graph."""
        return ViewBufferFromNested.apply(self)

    def offsets(self):
        return self._offsets

    def lengths(self):
        return self._lengths

    def _seq_lengths(self):
        return self._offsets.diff() if self._lengths is None else self._lengths

    def _get_max_seqlen(self):
        if "max_seqlen" not in self._metadata_cache:
            self._metadata_cache["max_seqlen"] = int(self._seq_lengths().max().item())
        return self._metadata_cache["max_seqlen"]

    def _get_min_seqlen(self):
        if "min_seqlen" not in self._metadata_cache:
            self._metadata_cache["min_seqlen"] = int(self._seq_lengths().min().item())
        return self._metadata_cache["min_seqlen"]

    _max_seqlen = property(_get_max_seqlen)
    _min_seqlen = property(_get_min_seqlen)
    _maybe_max_seqlen = property(lambda self: self._metadata_cache.get("max_seqlen"))
    _maybe_min_seqlen = property(lambda self: self._metadata_cache.get("min_seqlen"))

    # -- metadata PyTorch answers in ops.py's getters ------------------------------------------
    @property
    def layout(self):
        return jagged

    is_nested = property(lambda self: True, doc="Is a nested tensor: always.")

    def numel(self):
        if self._lengths is None:
            return self._values.numel()
        r = self._ragged_idx
        fixed = 1
        for s in (*self._size[1:r], *self._size[r + 1:]):
            fixed *= s
        return int(self._lengths.sum().item()) * fixed

    nelement = numel

    def is_contiguous(self, memory_format=None):
        return self._lengths is None and self._values.is_contiguous()

    def _is_contiguous_or_false(self):
        return self.is_contiguous()

    def is_non_overlapping_and_dense(self):
        return False

    def to_padded_tensor(self, padding, output_size=None):
        from .ops import to_padded_tensor
        return to_padded_tensor(self, padding, output_size)

    def __repr__(self, *, tensor_contents=None):
        grad_fn_str = f", requires_grad={self.requires_grad}" if self.requires_grad else ""
        if self.grad_fn:
            grad_fn_str = f", grad_fn={self.grad_fn}"
        return (f"NestedTensor(size={self._size}, offsets={self._offsets}{grad_fn_str}, "
                f"contiguous={self._is_contiguous_or_false()})")

    def __reduce_ex__(self, proto):
        raise NotImplementedError("ember cannot pickle a jagged nested tensor; save its "
                                  "values() and offsets() instead")

    # -- the extension points ------------------------------------------------------------------
    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        from .ops import lookup_jagged
        kwargs = {} if kwargs is None else kwargs
        fn = lookup_jagged(func, *args, **kwargs)
        if fn is not None:
            return fn(*args, **kwargs)
        raise NotImplementedError(func)

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        from ..._C import DisableTorchFunctionSubclass
        from .ops import jagged_torch_function
        kwargs = {} if kwargs is None else kwargs
        try:
            return jagged_torch_function(func, *args, **kwargs)
        except NotImplementedError:
            pass
        with DisableTorchFunctionSubclass():
            return func(*args, **kwargs)


class ViewBufferFromNested(autograd.Function):
    """The values of a jagged tensor; the gradient goes back as a jagged tensor."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x.offsets())
        ctx.lengths = x._lengths
        ctx.metadata_cache = x._metadata_cache
        ctx.ragged_idx = x._ragged_idx
        return x._values.detach()

    @staticmethod
    def backward(ctx, gO):
        (offsets,) = ctx.saved_tensors
        return NestedTensor(gO, offsets=offsets, lengths=ctx.lengths,
                            _metadata_cache=ctx.metadata_cache, _ragged_idx=ctx.ragged_idx)


class ViewNestedFromBuffer(autograd.Function):
    """A jagged tensor over ``values`` (on the graph through them); its gradient's values go
    back to ``values``."""

    @staticmethod
    def forward(ctx, values, offsets, lengths=None, ragged_idx=1, metadata_cache=None):
        return NestedTensor(values.detach(), offsets=offsets, lengths=lengths,
                            _ragged_idx=ragged_idx, _metadata_cache=metadata_cache)

    @staticmethod
    def backward(ctx, gO):
        return gO._values, None, None, None, None


def nested_view_from_values_offsets_lengths(values, offsets, lengths=None, ragged_idx=1,
                                            min_seqlen=None, max_seqlen=None):
    cache = {}
    if min_seqlen is not None:
        cache["min_seqlen"] = int(min_seqlen)
    if max_seqlen is not None:
        cache["max_seqlen"] = int(max_seqlen)
    return ViewNestedFromBuffer.apply(values, offsets, lengths, ragged_idx, cache)


def nested_view_from_values_offsets(values, offsets, ragged_idx=1, min_seqlen=None,
                                    max_seqlen=None):
    return nested_view_from_values_offsets_lengths(values, offsets, None, ragged_idx,
                                                   min_seqlen, max_seqlen)


def nested_like(nt, values):
    """A jagged tensor with ``nt``'s structure (offsets, lengths, ragged dim) over ``values``."""
    return ViewNestedFromBuffer.apply(values, nt._offsets, nt._lengths, nt._ragged_idx,
                                      nt._metadata_cache)


def jagged_from_list(tensors, offsets, dtype=None, device=None):
    """A jagged tensor holding ``tensors`` (one dim may vary in size), and its offsets."""
    import ember
    if len(tensors) == 0:
        raise RuntimeError("Cannot construct a nested tensor from an empty tensor list")
    if len({t.dtype for t in tensors}) != 1:
        raise RuntimeError("When constructing a nested tensor, all tensors in list must have "
                           "the same dtype")
    if len({t.device for t in tensors}) != 1:
        raise RuntimeError("When constructing a nested tensor, all tensors in list must be on "
                           "the same device")
    if len({t.dim() for t in tensors}) != 1:
        raise RuntimeError("When constructing a nested tensor, all tensors in list must have "
                           "the same dim")
    component_dim = tensors[0].dim()
    if component_dim == 0:
        raise RuntimeError("Cannot construct a nested tensor from a list of zero-dim tensors")
    sizes = [t.shape for t in tensors]
    ragged_idx = None
    for d in range(component_dim):
        if any(size[d] != sizes[0][d] for size in sizes):
            if ragged_idx is not None:
                raise RuntimeError(
                    "Cannot represent given tensor list as a nested tensor with the jagged "
                    "layout. Note that the jagged layout only allows for a single ragged "
                    "dimension. For example: (B, *, D_0, D_1, ..., D_N), with ragged * dim.")
            ragged_idx = d + 1
    if ragged_idx is None:
        ragged_idx = 1
    values = ember.cat(tensors, dim=ragged_idx - 1)
    to_kwargs = {}
    if device is not None:
        to_kwargs["device"] = device
    if dtype is not None:
        to_kwargs["dtype"] = dtype
    values = values.to(**to_kwargs)
    lens = [s[ragged_idx - 1] for s in sizes]
    if offsets is None:
        offsets = ember.cat([ember.zeros(1, dtype=ember.int64, device=values.device),
                             ember.tensor(lens, device=values.device).cumsum(dim=0)])
    nt = nested_view_from_values_offsets(values, offsets, ragged_idx=ragged_idx,
                                         min_seqlen=min(lens), max_seqlen=max(lens))
    return nt, offsets


def jagged_from_tensor_and_lengths(tensor, starts, lengths):
    """The jagged tensor of ``tensor[b, starts[b]:starts[b] + lengths[b]]`` for each ``b``,
    sharing ``tensor``'s memory: contiguous when the pieces abut, else with lengths."""
    import ember
    batch_size = tensor.shape[0]
    try:
        start_list = starts.expand(batch_size)
        length_list = lengths.expand(batch_size)
    except RuntimeError:
        raise RuntimeError(
            "When constructing a jagged nested tensor using narrow(), your start and length "
            "must be Tensors that broadcast to input.shape[0]") from None
    if tensor.dim() < 2:
        raise AssertionError("tensor must at least be 2D for the nested narrow op to work")
    max_seq_len = tensor.shape[1]
    offset_lengths = max_seq_len * ember.arange(0, batch_size, dtype=ember.int64,
                                                device=tensor.device)
    offsets = ember.cat([start_list + offset_lengths,
                         (start_list[-1] + offset_lengths[-1] + length_list[-1]).unsqueeze(0)])
    values = tensor.reshape(-1, *tensor.shape[2:])
    is_contiguous = not (bool(ember.any(length_list[1:-1].ne(max_seq_len)))
                         or bool(ember.any(offsets[1:-2].diff().ne(max_seq_len)))
                         or int(offsets[0] + length_list[0]) != max_seq_len)
    max_seqlen = int(ember.max(lengths).item())
    min_seqlen = int(ember.min(lengths).item())
    if is_contiguous:
        nt = nested_view_from_values_offsets(values[int(offsets[0]):int(offsets[-1])],
                                             offsets - offsets[0], min_seqlen=min_seqlen,
                                             max_seqlen=max_seqlen)
    else:
        nt = nested_view_from_values_offsets_lengths(values, offsets, length_list,
                                                     min_seqlen=min_seqlen,
                                                     max_seqlen=max_seqlen)
    return nt, offsets, None if is_contiguous else length_list
