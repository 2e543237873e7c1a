"""``torch.storage``: ``UntypedStorage`` (ember's storages, ``ember/_core/storage.py``), the
deprecated ``TypedStorage`` that ``Tensor.storage()`` returns — an untyped storage read as
elements of one dtype — and the legacy per-dtype classes (``ember.FloatStorage`` ...), which
build TypedStorages and recognise those of their dtype on the CPU. Element reads and writes go
through a tensor over the whole storage, so they are ember ops like any other."""
import collections.abc
import operator
import warnings

from ._core import dtype as D
from ._core.device import device as _device
from ._core.storage import UntypedStorage
from ._toplevel import classproperty

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

    def __new__(cls, *args, wrap_storage=None, dtype=None, device=None, _internal=False):
        if cls is TypedStorage:
            return super().__new__(cls)
        # a legacy class (FloatStorage ...): a TypedStorage of its dtype on the CPU
        if not _internal:
            _warn_typed_storage_removal()
        if cls is _LegacyStorage:
            raise RuntimeError("Only child classes of _LegacyStorage can be instantiated")
        msg = (f"{cls}.__new__ received an invalid combination of arguments. Expected one of:\n"
               f" * no arguments\n * (int size)\n * (Sequence data)\n"
               f" * (*, UntypedStorage wrap_storage)")
        if device is not None:
            raise RuntimeError(msg + "\nKeyword argument 'device' cannot be specified")
        if dtype is not None:
            raise RuntimeError(msg + "\nKeyword argument 'dtype' cannot be specified")
        if wrap_storage is None:
            if len(args) > 1:
                raise RuntimeError(msg + "\nToo many positional arguments")
            if len(args) == 1 and not _isint(args[0]) and \
                    not isinstance(args[0], collections.abc.Sequence):
                raise TypeError(msg + f"\nArgument type not recognized: {type(args[0])}")
            return TypedStorage(*args, dtype=cls._dtype, device="cpu", _internal=True)
        if args:
            raise RuntimeError(msg + "\nNo positional arguments should be given when using "
                                     "'wrap_storage'")
        if not isinstance(wrap_storage, UntypedStorage):
            raise TypeError(msg + f"\nArgument 'wrap_storage' must be UntypedStorage, but got "
                                  f"{type(wrap_storage)}")
        if wrap_storage.device.type != "cpu":
            raise RuntimeError(msg + f"\nDevice of 'wrap_storage' must be cpu, but got "
                                     f"{wrap_storage.device.type}")
        return TypedStorage(wrap_storage=wrap_storage, dtype=cls._dtype, _internal=True)

    def __init__(self, *args, device=None, dtype=None, wrap_storage=None, _internal=False):
        if not _internal:
            _warn_typed_storage_removal()
        msg = ("TypedStorage.__init__ received an invalid combination of arguments. Expected "
               "one of:\n * (*, torch.device device, torch.dtype dtype)\n"
               " * (int size, *, torch.device device, torch.dtype dtype)\n"
               " * (Sequence data, *, torch.device device, torch.dtype dtype)\n"
               " * (*, UntypedStorage wrap_storage, torch.dtype dtype)")
        if wrap_storage is not None:
            if args:
                raise RuntimeError(msg + "\nNo positional arguments should be given when using "
                                         "'wrap_storage'")
            if dtype is None:
                raise RuntimeError(msg + "\nArgument 'dtype' must be specified")
            if not isinstance(dtype, D.dtype):
                raise TypeError(msg + f"\nArgument 'dtype' must be torch.dtype, not "
                                      f"{type(dtype)}")
            if device is not None:
                raise RuntimeError(msg + "\nArgument 'device' should not be specified when "
                                         "'wrap_storage' is given")
            if not isinstance(wrap_storage, UntypedStorage):
                raise TypeError(msg + f"\nArgument 'wrap_storage' must be UntypedStorage, but "
                                      f"got {type(wrap_storage)}")
            self._untyped_storage = wrap_storage
            self.dtype = dtype
            return
        self.dtype = D.get_default_dtype() if dtype is None else dtype
        device = _device("cpu" if device is None else device)
        if not args:
            self._untyped_storage = UntypedStorage(device=device)
        elif len(args) > 1:
            raise RuntimeError(msg + "\nToo many positional arguments")
        elif _isint(args[0]):
            self._untyped_storage = UntypedStorage(operator.index(args[0]) * self.dtype.itemsize,
                                                   device=device)
        elif isinstance(args[0], collections.abc.Sequence):
            from . import tensor
            self._untyped_storage = tensor(args[0], dtype=self.dtype,
                                           device=device).untyped_storage()
        else:
            raise TypeError(msg + f"\nArgument type not recognized: {type(args[0])}")

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

    def __sizeof__(self):
        return super().__sizeof__() + self.nbytes()

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
        """The name of the legacy class of this dtype and device (``ember.FloatStorage``), or
        of TypedStorage where there is none."""
        if dtype is None:
            legacy = self._get_legacy_storage_class()
            if legacy is not None:
                return f"{legacy.__module__}.{legacy.__name__}"
            return "ember.storage.TypedStorage"
        raise NotImplementedError("TypedStorage.type(dtype): use tensor.to(dtype) instead")

    def _get_legacy_storage_class(self):
        name = _STORAGE_NAMES.get(self.dtype)
        if name is None or self.device.type not in ("cpu", "cuda"):
            return None
        import ember
        module = ember if self.device.type == "cpu" else ember.cuda
        return getattr(module, name, None)

    @classmethod
    def from_file(cls, filename, shared, size):
        """A CPU storage of ``size`` elements of the class's dtype, memory-mapped from a file
        (:meth:`UntypedStorage.from_file`); only the legacy classes know their dtype."""
        _warn_typed_storage_removal()
        if cls is TypedStorage:
            raise RuntimeError("from_file can only be called on derived classes")
        return cls(wrap_storage=UntypedStorage.from_file(filename, shared,
                                                         size * cls.dtype.itemsize))

    def _new_shared(self, size, *, device=None):
        """A storage of ``size`` elements of this dtype in shared memory."""
        untyped = UntypedStorage(size * self.dtype.itemsize,
                                 device="cpu" if device is None else device)
        return TypedStorage(wrap_storage=untyped.share_memory_(), dtype=self.dtype,
                            _internal=True)

    def __str__(self):
        info = (f"[ember.storage.TypedStorage(dtype={self.dtype}, device={self.device}) of size "
                f"{len(self)}]")
        if self.device.type == "meta":
            return "...\n" + info
        return " " + "\n ".join(str(v) for v in self.tolist()) + "\n" + info

    __repr__ = __str__


def _isint(x):
    import numpy as np
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


# ---------------------------------------------------------------------------------------------
# The legacy per-dtype classes (torch.FloatStorage ...): constructors of CPU TypedStorages.

class _LegacyStorageMeta(type):
    def __instancecheck__(cls, instance):
        # a TypedStorage of the class's dtype on the CPU counts as an instance
        return type(instance) is TypedStorage and instance.device.type == "cpu" and \
            getattr(cls, "_dtype", None) is instance.dtype


class _LegacyStorage(TypedStorage, metaclass=_LegacyStorageMeta):
    @classmethod
    def _new_shared(cls, size):
        """A storage of ``size`` elements of the class's dtype in shared memory."""
        untyped = UntypedStorage(size * cls._dtype.itemsize).share_memory_()
        return cls(wrap_storage=untyped)


_STORAGE_NAMES = {D.uint8: "ByteStorage", D.float64: "DoubleStorage", D.float32: "FloatStorage",
                  D.float16: "HalfStorage", D.int64: "LongStorage", D.int32: "IntStorage",
                  D.int16: "ShortStorage", D.int8: "CharStorage", D.bool_: "BoolStorage",
                  D.bfloat16: "BFloat16Storage", D.complex128: "ComplexDoubleStorage",
                  D.complex64: "ComplexFloatStorage"}


def _legacy_class(dt, name):
    return _LegacyStorageMeta(name, (_LegacyStorage,), {
        "_dtype": dt, "dtype": classproperty(lambda cls: cls._dtype), "__module__": "ember",
        "__doc__": f"A CPU storage of {dt} elements (a TypedStorage: deprecated)."})


LEGACY_STORAGES = {name: _legacy_class(dt, name) for dt, name in _STORAGE_NAMES.items()}


def default_storage_class():
    """``torch.Storage``: the legacy class of the default dtype."""
    return LEGACY_STORAGES[_STORAGE_NAMES[D.get_default_dtype()]]
