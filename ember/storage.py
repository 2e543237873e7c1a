"""``torch.storage``: ``UntypedStorage`` (ember's storages, ``ember/_core/storage.py``) and the
deprecated ``TypedStorage`` that ``Tensor.storage()`` returns — an untyped storage read as
elements of one dtype. Element reads and writes go through a tensor over the whole storage, so
they are ember ops like any other."""
import warnings

from ._core.storage import UntypedStorage

__all__ = ["TypedStorage", "UntypedStorage"]

_warned = []


def _warn_typed_storage_removal(stacklevel=2):
    """PyTorch's deprecation warning, given once per process as there."""
    if _warned:
        return
    _warned.append(True)
    warnings.warn("TypedStorage is deprecated. It will be removed in the future and "
                  "UntypedStorage will be the only storage class. This should only matter to "
                  "you if you are using storages directly.  To access UntypedStorage directly, "
                  "use tensor.untyped_storage() instead of tensor.storage()", UserWarning,
                  stacklevel=stacklevel + 1)


class TypedStorage:
    """An :class:`UntypedStorage` seen as ``size()`` elements of ``dtype`` (sharing its
    memory: writes through either show in the other and in the tensors over it)."""
    is_sparse = False

    def __init__(self, *, wrap_storage, dtype, _internal=False):
        if not _internal:
            _warn_typed_storage_removal()
        self._untyped_storage = wrap_storage
        self.dtype = dtype

    # -- what it views ---------------------------------------------------------------------------
    @property
    def device(self):
        return self._untyped_storage.device

    @property
    def is_cuda(self):
        return self.device.type == "cuda"

    def untyped(self):
        return self._untyped_storage

    def _size(self):
        return self._untyped_storage.nbytes() // self.dtype.itemsize

    def size(self):
        return self._size()

    def __len__(self):
        return self._size()

    def nbytes(self):
        return self._untyped_storage.nbytes()

    def element_size(self):
        return self.dtype.itemsize

    def data_ptr(self):
        return self._untyped_storage.data_ptr()

    def is_shared(self):
        return self._untyped_storage.is_shared()

    def share_memory_(self):
        self._untyped_storage.share_memory_()
        return self

    def _tensor(self):
        """A 1-d tensor over every element of the storage."""
        from ._ops.overload import ops
        t = ops.aten.empty.memory_format._call((0,), self.dtype, None, self.device, None, None)
        return ops.aten.set_.source_Storage_storage_offset._call(
            t, self._untyped_storage, 0, (self._size(),), (1,))

    # -- elements --------------------------------------------------------------------------------
    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return TypedStorage(wrap_storage=self._tensor()[idx].clone().untyped_storage(),
                                dtype=self.dtype, _internal=True)
        if not isinstance(idx, int):
            raise RuntimeError(f"can't index a {type(self)} with {type(idx)}")
        n = self._size()
        if not -n <= idx < n:
            raise IndexError(f"index {idx} out of range for storage of size {n}")
        return self._tensor()[idx].item()

    def __setitem__(self, idx, value):
        if not isinstance(idx, (int, slice)):
            raise RuntimeError(f"can't index a {type(self)} with {type(idx)}")
        self._tensor()[idx] = value

    def __iter__(self):
        return iter(self.tolist())

    def tolist(self):
        return self._tensor().tolist()

    def fill_(self, value):
        self._tensor().fill_(value)
        return self

    def copy_(self, source, non_blocking=None):
        src = source._tensor() if isinstance(source, TypedStorage) else source
        self._tensor().copy_(src)
        return self

    def resize_(self, size):
        self._untyped_storage.resize_(size * self.dtype.itemsize)

    def clone(self):
        return TypedStorage(wrap_storage=self._tensor().clone().untyped_storage(),
                            dtype=self.dtype, _internal=True)

    def cpu(self):
        if self.device.type == "cpu":
            return self
        return TypedStorage(wrap_storage=self._tensor().cpu().untyped_storage(),
                            dtype=self.dtype, _internal=True)

    def type(self, dtype=None, non_blocking=False):
        if dtype is None:
            return "ember.storage.TypedStorage"
        raise NotImplementedError("TypedStorage.type(dtype): use tensor.to(dtype) instead")

    def __str__(self):
        info = (f"[ember.storage.TypedStorage(dtype={self.dtype}, device={self.device}) of size "
                f"{len(self)}]")
        if self.device.type == "meta":
            return "...\n" + info
        return " " + "\n ".join(str(v) for v in self.tolist()) + "\n" + info

    __repr__ = __str__
