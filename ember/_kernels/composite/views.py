"""View kernels: each returns a tensor sharing its input's storage and version counter, with new
sizes, strides and offset (``_alias``). They serve every device, because only metadata changes;
the stride arithmetic itself lives in ``ember._core.strides``.

Three groups, as in PyTorch:

* CompositeExplicitAutograd views (``transpose``, ``select``, ``slice``...): build the alias;
* CompositeImplicitAutograd ops (``reshape``, ``narrow``, ``movedim``, ``chunk``...): decompose
  into the views above through the dispatcher, so traces show the ops PyTorch's show;
* in-place metadata ops (``t_``, ``unsqueeze_``...): change the tensor's own geometry (the
  generated ADInplaceOrView kernel bumps its version, as PyTorch does).

``_conj`` and ``_neg_view`` are views too: same geometry, the conjugate or negative bit flipped
(the Conjugate/Negative keys then resolve it where values are needed, ``_kernels/math_bits.py``).
"""
from ..._core import dtype as D
from ..._core import strides as _st
from ..._core.device import contiguous_format
from ..._core.tensor_impl import CONJUGATE, NEGATIVE, _alias, _set_conj, _set_neg
from ..._ops.overload import ops


_fmt = _st._fmt_list
_wrap = _st.wrap_dim


# ---- view / reshape / as_strided ------------------------------------------------------------------

def view(self, size):
    shape = _st.infer_size(tuple(size), _st.numel(self._size))
    stride = _st.compute_view_stride(self._size, self._stride, shape)
    if stride is None:
        raise RuntimeError("view size is not compatible with input tensor's size and stride (at "
                           "least one dimension spans across two contiguous subspaces). Use "
                           ".reshape(...) instead.")
    return _alias(self, shape, stride, self._offset)


def _conj(self):
    if not self._dtype.is_complex:
        # PyTorch's _set_conj asserts this (conj() returns a real tensor itself before)
        raise RuntimeError("isComplexType(typeMetaToScalarType(dtype())) INTERNAL ASSERT FAILED")
    t = _alias(self, self._size, self._stride, self._offset)
    _set_conj(t, not self._keyset & CONJUGATE)
    return t


def _neg_view(self):
    t = _alias(self, self._size, self._stride, self._offset)
    _set_neg(t, not self._keyset & NEGATIVE)
    return t


def view_dtype(self, dtype):
    """Reinterpret the bytes as ``dtype``. Like PyTorch, the result shares storage and version
    counter but is not tracked as a view (``_base`` is None): autograd cannot see through it."""
    if self._keyset & CONJUGATE:
        raise RuntimeError("torch.Tensor.view is not supported for conjugate view tensors when "
                           "converting to a different dtype.")
    if self._keyset & NEGATIVE:
        raise RuntimeError("torch.Tensor.view is not supported for tensors with negative bit set "
                           "when converting to a different dtype.")
    old, new = self._dtype.itemsize, dtype.itemsize
    if old == new:
        size, stride, offset = self._size, self._stride, self._offset
    else:
        describe = f"to view {self._dtype._short} as {dtype._short} (different element sizes)"
        size, stride, offset = _st.dtype_view_geometry(
            self._size, self._stride, self._offset, max(old // new, 1), max(new // old, 1),
            describe)
    t = _alias(self, size, stride, offset, dtype)
    t._base_ = None
    return t


def reshape(self, shape):
    """A view when the strides allow one, else a contiguous copy of shape ``shape`` (ATen's
    ``_unsafe_view`` of the clone: not a view, its own version counter)."""
    if self._storage_ is None:
        raise RuntimeError("reshape is not implemented for sparse tensors")
    shape = _st.infer_size(tuple(shape), _st.numel(self._size))
    if _st.compute_view_stride(self._size, self._stride, shape) is not None:
        return ops.aten.view.default._call(self, shape)
    copy = ops.aten.clone.default._call(self, contiguous_format)
    return ops.aten._unsafe_view.default._call(copy, shape)


def as_strided(self, size, stride, storage_offset=None):
    size, stride = tuple(size), tuple(stride)
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    if any(s < 0 for s in stride):
        raise RuntimeError(f"as_strided: Negative strides are not supported at the moment, got "
                           f"strides: {_fmt(stride)}")
    if any(s < 0 for s in size):
        raise RuntimeError(f"Storage size calculation overflowed with sizes={_fmt(size)} and "
                           f"strides={_fmt(stride)}")
    offset = self._offset if storage_offset is None else storage_offset
    if offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")
    # an empty view needs no storage, whatever its offset (PyTorch's computeStorageNbytes)
    need = 0 if _st.numel(size) == 0 else _st.storage_extent(size, stride, offset) * \
        self._dtype.itemsize
    if need > self._storage.nbytes() and self._device.type != "meta":  # PyTorch skips meta
        raise RuntimeError(f"setStorage: sizes {_fmt(size)}, strides {_fmt(stride)}, storage offset "
                           f"{offset}, and itemsize {self._dtype.itemsize} requiring a storage size of "
                           f"{need} are out of bounds for storage of size {self._storage.nbytes()}")
    return _alias(self, size, stride, offset)


# ---- dimension reordering ------------------------------------------------------------------------

def transpose_int(self, dim0, dim1):
    n = len(self._size)
    d0, d1 = _wrap(dim0, n), _wrap(dim1, n)
    if d0 == d1:
        return _alias(self, self._size, self._stride, self._offset)
    size, stride = list(self._size), list(self._stride)
    size[d0], size[d1] = size[d1], size[d0]
    stride[d0], stride[d1] = stride[d1], stride[d0]
    return _alias(self, tuple(size), tuple(stride), self._offset)


def swapaxes(self, axis0, axis1):
    return ops.aten.transpose.int._call(self, axis0, axis1)


def swapdims(self, dim0, dim1):
    return ops.aten.transpose.int._call(self, dim0, dim1)


def swapaxes_(self, axis0, axis1):
    return ops.aten.transpose_.default._call(self, axis0, axis1)


def swapdims_(self, dim0, dim1):
    return ops.aten.transpose_.default._call(self, dim0, dim1)


def _permutation(self, dims):
    n = len(self._size)
    if len(dims) != n:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does not "
                           f"match the length of the desired ordering of dimensions i.e. input.dim() "
                           f"= {n} is not equal to len(dims) = {len(dims)}")
    perm = [_wrap(d, n) for d in dims]
    if len(set(perm)) != n:
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return perm


def permute(self, dims):
    perm = _permutation(self, dims)
    return _alias(self, tuple(self._size[d] for d in perm), tuple(self._stride[d] for d in perm),
                  self._offset)


def _check_t(self, name="t"):
    if len(self._size) > 2:
        raise RuntimeError(f"{name}() expects a tensor with <= 2 dimensions, but self is "
                           f"{len(self._size)}D")


def t(self):
    _check_t(self)
    return transpose_int(self, 0, 1) if len(self._size) == 2 else \
        _alias(self, self._size, self._stride, self._offset)


def _movedim_perm(self, source, destination):
    """The permutation that moves ``source`` dims to ``destination`` (ATen's movedim)."""
    n = len(self._size)
    if len(source) != len(destination):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({_fmt(source)} "
                           f"dims) should contain the same number of dims as destination "
                           f"({_fmt(destination)} dims)")
    src = [_wrap(d, n) for d in source]
    dst = [_wrap(d, n) for d in destination]
    if len(set(src)) != len(src):
        raise RuntimeError(f"movedim: repeated dim in `source` ({_fmt(source)})")
    if len(set(dst)) != len(dst):
        raise RuntimeError(f"movedim: repeated dim in `destination` ({_fmt(destination)})")
    perm = [-1] * max(n, 1)
    for s, d in zip(src, dst):
        perm[d] = s
    rest = iter(d for d in range(n) if d not in src)
    perm = [p if p != -1 else next(rest) for p in perm[:n]]
    return perm


def movedim_intlist(self, source, destination):
    return ops.aten.permute.default._call(self, _movedim_perm(self, list(source), list(destination)))


def movedim_int(self, source, destination):
    return ops.aten.permute.default._call(self, _movedim_perm(self, [source], [destination]))


def moveaxis_intlist(self, source, destination):
    return ops.aten.movedim.intlist._call(self, source, destination)


def moveaxis_int(self, source, destination):
    return ops.aten.movedim.int._call(self, source, destination)


# ---- picking parts -------------------------------------------------------------------------------

def select_int(self, dim, index):
    n = len(self._size)
    if n == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = _wrap(dim, n)
    size = self._size[d]
    if not -size <= index < size:
        raise IndexError(f"select(): index {index} out of range for tensor of size "
                         f"{_fmt(self._size)} at dimension {d}")
    if index < 0:
        index += size
    return _alias(self, self._size[:d] + self._size[d + 1:], self._stride[:d] + self._stride[d + 1:],
                  self._offset + index * self._stride[d])


def slice_Tensor(self, dim=0, start=None, end=None, step=1):
    """Python-slice semantics on one dim: negative bounds count from the end, out-of-range
    bounds are clamped, the step must be positive."""
    n = len(self._size)
    if n == 0:
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    d = _wrap(dim, n)
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    size = self._size[d]
    start = 0 if start is None else start
    end = size if end is None else end
    if start < 0:
        start += size
    if end < 0:
        end += size
    start = min(max(start, 0), size)
    end = min(max(end, start), size)
    length = (end - start + step - 1) // step
    return _alias(self, self._size[:d] + (length,) + self._size[d + 1:],
                  self._stride[:d] + (self._stride[d] * step,) + self._stride[d + 1:],
                  self._offset + start * self._stride[d])


def narrow(self, dim, start, length):
    if not self._size:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    d = _wrap(dim, len(self._size))
    size = self._size[d]
    if not -size <= start <= size:
        raise IndexError(f"start out of range (expected to be in range of [{-size}, {size}], but "
                         f"got {start})")
    if start < 0:
        start += size
    if start + length > size:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    return ops.aten.slice.Tensor._call(self, d, start, start + length, 1)


def narrow_Tensor(self, dim, start, length):
    if start._size or start._dtype._category != D.INTEGRAL:
        raise RuntimeError("start must be an 0-dim integral Tensor.")
    return ops.aten.narrow.default._call(self, dim, int(start.item()), length)


def diagonal(self, offset=0, dim1=0, dim2=1):
    n = len(self._size)
    d1, d2 = _wrap(dim1, n), _wrap(dim2, n)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    size, stride, shift = _st.diagonal_geometry(self._size, self._stride, offset, d1, d2)
    return _alias(self, size, stride, self._offset + shift)


def unfold(self, dimension, size, step):
    n = len(self._size)
    d = _wrap(dimension, n)
    max_size = self._size[d] if n else 1
    if size > max_size:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {max_size} but size is "
                           f"{size}")
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    new_size, new_stride = _st.unfold_geometry(self._size, self._stride, d, size, step)
    return _alias(self, new_size, new_stride, self._offset)


# ---- adding and removing dims --------------------------------------------------------------------

def _unsqueezed(self, dim):
    n = len(self._size)
    d = _wrap(dim, n + 1)
    # the new dim's stride keeps the tensor contiguous when it was (ATen's inferUnsqueezeGeometry)
    st = self._size[d] * self._stride[d] if d < n else 1
    return self._size[:d] + (1,) + self._size[d:], self._stride[:d] + (st,) + self._stride[d:]


def unsqueeze(self, dim):
    size, stride = _unsqueezed(self, dim)
    return _alias(self, size, stride, self._offset)


def _squeezed(self, dims):
    """Drop the dims listed in ``dims`` (wrapped, checked) that have size 1."""
    n = len(self._size)
    wrapped = set()
    for d in dims:
        w = _wrap(d, n)
        if w in wrapped:
            raise RuntimeError(f"dim {w} appears multiple times in the list of dims")
        wrapped.add(w)
    keep = [i for i in range(n) if not (i in wrapped and self._size[i] == 1)]
    return tuple(self._size[i] for i in keep), tuple(self._stride[i] for i in keep)


def squeeze(self):
    size, stride = _squeezed(self, range(len(self._size)))
    return _alias(self, size, stride, self._offset)


def squeeze_dim(self, dim):
    size, stride = _squeezed(self, [dim])
    return _alias(self, size, stride, self._offset)


def squeeze_dims(self, dim):
    size, stride = _squeezed(self, dim)
    return _alias(self, size, stride, self._offset)


def expand(self, size, implicit=False):
    size = tuple(size)
    if len(size) < len(self._size):
        # PyTorch names the tensor by its type: torch.FloatTensor on CPU, MetaFloatType on meta
        kind = f"Meta{self._dtype._short}Type" if self._device.type == "meta" else self.type()
        raise RuntimeError(f"expand({kind}{{{_fmt(self._size)}}}, size={_fmt(size)}): the "
                           f"number of sizes provided ({len(size)}) must be greater or equal to the "
                           f"number of dimensions in the tensor ({len(self._size)})")
    new_size, new_stride = _st.expand_geometry(self._size, self._stride, size)
    return _alias(self, new_size, new_stride, self._offset)


def broadcast_to(self, size):
    return ops.aten.expand.default._call(self, size, False)


def flatten_using_ints(self, start_dim=0, end_dim=-1):
    n = len(self._size)
    if n == 0:
        return ops.aten.reshape.default._call(self, (1,))
    start, end = _wrap(start_dim, n), _wrap(end_dim, n)
    if start > end:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if start == end:
        return self
    shape = self._size[:start] + (_st.numel(self._size[start:end + 1]),) + self._size[end + 1:]
    return ops.aten.reshape.default._call(self, shape)


def unflatten_int(self, dim, sizes):
    sizes = tuple(sizes)
    d = _wrap(dim, len(self._size))
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    have = self._size[d]
    try:
        inferred = _st.infer_size(sizes, have)
    except RuntimeError as e:
        if "only one dimension" in str(e):
            raise RuntimeError(f"unflatten got an unexpected error:\n{e}") from None
        raise RuntimeError(f"unflatten: Provided sizes {_fmt(sizes)} don't multiply up to the size "
                           f"of dim {d} ({have}) in the input tensor") from None
    return ops.aten.view.default._call(self, self._size[:d] + inferred + self._size[d + 1:])


# ---- splitting -----------------------------------------------------------------------------------

def split_with_sizes(self, split_sizes, dim=0):
    if not self._size:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    d = _wrap(dim, len(self._size))
    split_sizes = tuple(split_sizes)
    if any(s < 0 for s in split_sizes):
        raise RuntimeError(f"split_with_sizes expects split_sizes have only non-negative entries, "
                           f"but got split_sizes={_fmt(split_sizes)}")
    size = self._size[d]
    if sum(split_sizes) != size:
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {size} (input "
                           f"tensor's size at dimension {d}), but got split_sizes={_fmt(split_sizes)}")
    out, start = [], 0
    for s in split_sizes:
        out.append(_narrowed(self, d, start, s))
        start += s
    return tuple(out)


def _narrowed(self, d, start, length):
    return _alias(self, self._size[:d] + (length,) + self._size[d + 1:], self._stride,
                  self._offset + start * self._stride[d])


def split_Tensor(self, split_size, dim=0):
    if not self._size:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    if split_size < 0:
        raise RuntimeError(f"split expects split_size be non-negative, but got "
                           f"split_size={split_size}")
    d = _wrap(dim, len(self._size))
    size = self._size[d]
    if split_size == 0 and size != 0:
        raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension "
                           f"size of {size}")
    # at least one piece, even from an empty dim (ATen: max((size + split - 1) / split, 1))
    count = max((size + split_size - 1) // split_size, 1) if split_size else 1
    return tuple(_narrowed(self, d, i * split_size, min(split_size, size - i * split_size))
                 for i in range(count))


def split_sizes(self, split_size, dim=0):
    return ops.aten.split_with_sizes.default._call(self, split_size, dim)


def chunk(self, chunks, dim=0):
    if not self._size:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    size = self._size[_wrap(dim, len(self._size))]
    split_size = (size + chunks - 1) // chunks
    if split_size == 0 and size == 0:
        # an empty dim gives ``chunks`` empty pieces (ATen splits with sizes of zeros)
        return ops.aten.split_with_sizes.default._call(self, (0,) * chunks, dim)
    return ops.aten.split.Tensor._call(self, split_size, dim)


def unbind_int(self, dim=0):
    d = _wrap(dim, len(self._size), scalar_ok=False)
    return tuple(select_int(self, d, i) for i in range(self._size[d]))


# ---- aliases -------------------------------------------------------------------------------------

def alias(self):
    return _alias(self, self._size, self._stride, self._offset)


def detach(self):
    """Shares storage and version counter but is not a view: ``_base`` is None, as in PyTorch."""
    t = _alias(self, self._size, self._stride, self._offset)
    t._base_ = None
    return t


# ---- in-place metadata ops -----------------------------------------------------------------------

def _restride(self, size, stride, offset=None):
    self._size, self._stride = size, stride
    if offset is not None:
        self._offset = offset
    self._np = None  # the cached NumPy view describes the old geometry
    return self


def t_(self):
    _check_t(self, "t_")
    v = t(self)
    return _restride(self, v._size, v._stride)


def transpose_(self, dim0, dim1):
    v = transpose_int(self, dim0, dim1)
    return _restride(self, v._size, v._stride)


def squeeze_(self):
    return _restride(self, *_squeezed(self, range(len(self._size))))


def squeeze__dim(self, dim):
    return _restride(self, *_squeezed(self, [dim]))


def squeeze__dims(self, dim):
    return _restride(self, *_squeezed(self, dim))


def unsqueeze_(self, dim):
    return _restride(self, *_unsqueezed(self, dim))


def as_strided_(self, size, stride, storage_offset=None):
    v = as_strided(self, size, stride, storage_offset)
    return _restride(self, v._size, v._stride, v._offset)


def set__source_Storage(self, source):
    nbytes = _storage_of(source).nbytes()
    return set__source_Storage_storage_offset(self, source, 0, (nbytes // self._dtype.itemsize,),
                                              ())


def set__source_Storage_storage_offset(self, source, storage_offset, size, stride=()):
    """Make ``self`` a view of ``source`` with the given geometry (PyTorch's set_)."""
    storage = _storage_of(source)
    if storage.device != self._device:
        raise RuntimeError(f"Attempted to set the storage of a tensor on device "
                           f"\"{self._device}\" to a storage on different device "
                           f"\"{storage.device}\".  This is no longer allowed; the devices must "
                           f"match.")
    size = tuple(int(s) for s in size)
    stride = tuple(int(s) for s in stride) if stride else _st.contiguous_strides(size)
    if len(stride) != len(size):
        raise RuntimeError("mismatch in length of strides and shape")
    if storage_offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {storage_offset}")
    itemsize = self._dtype.itemsize
    need = 0 if 0 in size else (storage_offset + 1 + sum((n - 1) * st for n, st in
                                                         zip(size, stride))) * itemsize
    if need > storage.nbytes():  # grown as ATen's resize_impl grows it (or refused)
        storage.resize_(need)
    self._storage = storage
    return _restride(self, size, stride, storage_offset)


def set__source_Tensor(self, source):
    """``self`` takes ``source``'s storage and geometry (a no-op on itself)."""
    if source is self:
        return self
    _check_set_dtype(self, source)
    return set__source_Storage_storage_offset(self, source._storage, source._offset,
                                              source._size, source._stride)


def set__source_Tensor_storage_offset(self, source, storage_offset, size, stride=()):
    """``source``'s storage read as ``self``'s dtype (ATen checks no dtype here), the offset
    counted from the source's own."""
    if not source.is_contiguous():
        raise RuntimeError("passed in tensor to be used as storage must be contiguous")
    return set__source_Storage_storage_offset(self, source._storage,
                                              storage_offset + source._offset, size, stride)


def set_(self):
    """``self`` becomes an empty tensor on a new empty storage of its device."""
    from ..._core.storage import UntypedStorage
    return set__source_Storage_storage_offset(self, UntypedStorage(0, device=self._device), 0,
                                              (0,), ())


def _check_set_dtype(self, source):
    if source._dtype != self._dtype:
        raise RuntimeError(f"Could not set tensor of type {source._dtype._cpp} to a tensor of "
                           f"type {self._dtype._cpp}")


def _storage_of(source):
    from ..._core.storage import UntypedStorage
    if isinstance(source, UntypedStorage):
        return source
    raise TypeError(f"set_(): argument 'source' must be Storage, not {type(source).__name__}")
