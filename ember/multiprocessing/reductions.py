"""How tensors and storages are pickled between processes (``ForkingPickler``'s reducers,
registered by :func:`init_reductions` when ``ember.multiprocessing`` is imported), laid out as
``torch.multiprocessing.reductions``.

A tensor is sent as its storage plus its view (offset, size, stride, requires_grad), and a
storage once per message, so views sent together share their memory on arrival, as in
PyTorch. The storage itself travels as a copy of its bytes: PyTorch sends a shared storage's
file descriptor (or shared-memory file name), and ember's shared storages
(``share_memory_``, an anonymous shared mapping) have no such handle to send. Across a fork a
shared storage is still one memory (the mapping is inherited)."""
import pickle
import threading
import weakref
from multiprocessing.reduction import ForkingPickler

import numpy as np

from .._core.device import strided

__all__ = ["StorageWeakRef", "SharedCache", "rebuild_tensor", "reduce_tensor",
           "rebuild_storage_empty", "rebuild_storage_bytes", "reduce_storage",
           "rebuild_typed_storage", "reduce_typed_storage", "rebuild_typed_storage_child",
           "reduce_typed_storage_child", "init_reductions"]


class StorageWeakRef:
    """A weak reference to a storage (untyped, or a typed storage's bytes), comparable and
    hashable by the storage it refers to."""

    __slots__ = ["cdata", "_ref", "__weakref__"]

    def __init__(self, storage):
        from ..storage import TypedStorage
        if isinstance(storage, TypedStorage):
            storage = storage._untyped_storage
        self._ref = weakref.ref(storage)
        self.cdata = id(storage)

    @classmethod
    def from_weakref(cls, cdata):
        instance = cls.__new__(cls)
        instance._ref = lambda: None
        instance.cdata = cdata
        return instance

    def expired(self):
        return self._ref() is None

    def __hash__(self):
        return self.cdata

    def __eq__(self, other):
        if id(self) == id(other):
            return True
        return isinstance(other, StorageWeakRef) and self.cdata == other.cdata


class SharedCache(dict):
    """A dictionary from handles to :class:`StorageWeakRef`, whose expired entries are
    dropped whenever it grows past a limit (PyTorch's cache of received shared storages)."""

    def __init__(self):
        super().__init__()
        self.limit = 128
        self.lock = threading.Lock()

    def get(self, key):
        with self.lock:
            return dict.get(self, key)

    def __setitem__(self, key, storage_ref):
        with self.lock:
            dict.__setitem__(self, key, storage_ref)
            if len(self) > self.limit:
                self.free_dead_references()

    def free_dead_references(self):
        live = 0
        for key, storage_ref in list(self.items()):
            if storage_ref.expired():
                del self[key]
            else:
                live += 1
        self.limit = max(128, live * 2)


shared_cache = SharedCache()


def rebuild_tensor(cls, storage, metadata):
    """The tensor of ``storage`` (a TypedStorage) that :func:`reduce_tensor` described."""
    from .._tensor import make_tensor
    from ..nn.parameter import Parameter
    storage_offset, size, stride, requires_grad = metadata
    untyped = storage._untyped_storage
    t = make_tensor(untyped, tuple(size), tuple(stride), storage_offset, storage.dtype,
                    untyped.device)
    if cls == Parameter:
        # (given to the constructor: an integer Parameter must refuse requires_grad=True)
        return Parameter(t, requires_grad=requires_grad)
    t.requires_grad = requires_grad
    return t


def reduce_tensor(tensor):
    """A tensor as its storage and view; any other layout or device as its own pickling."""
    from ..utils.hooks import warn_if_has_hooks
    if tensor.requires_grad and not tensor.is_leaf:
        raise RuntimeError(
            "Cowardly refusing to serialize non-leaf tensor which requires_grad, since "
            "autograd does not support crossing process boundaries.  If you just want to "
            "transfer the data, call detach() on the tensor before serializing (e.g., "
            "putting it on the queue).")
    warn_if_has_hooks(tensor)
    if tensor.layout is not strided or tensor.is_quantized or tensor.device.type != "cpu":
        # (sparse, quantized, meta and CUDA tensors: their own pickling, a copy)
        return tensor.__reduce_ex__(pickle.HIGHEST_PROTOCOL)
    metadata = (tensor.storage_offset(), tuple(tensor.size()), tensor.stride(),
                tensor.requires_grad)
    return (rebuild_tensor, (type(tensor), tensor._typed_storage(), metadata))


def rebuild_storage_empty(cls):
    return cls()


def rebuild_storage_bytes(cls, data):
    """A CPU storage holding ``data`` (the bytes :func:`reduce_storage` sent)."""
    from .._core.storage import from_array
    return from_array(np.frombuffer(bytearray(data), np.uint8))


def reduce_storage(storage):
    """A CPU storage as a copy of its bytes (an empty one as its class)."""
    if storage.device.type == "cuda":
        raise RuntimeError("Cannot pickle CUDA storage; try pickling a CUDA tensor instead")
    if storage.device.type == "meta":
        raise RuntimeError("Cannot pickle meta storage; try pickling a meta tensor instead")
    if storage.nbytes() == 0:
        return (rebuild_storage_empty, (type(storage),))
    return (rebuild_storage_bytes, (type(storage), bytes(storage._data())))


def rebuild_typed_storage(storage, dtype):
    from ..storage import TypedStorage
    return TypedStorage(wrap_storage=storage, dtype=dtype, _internal=True)


def reduce_typed_storage(storage):
    """A TypedStorage as its bytes' storage and its dtype."""
    return (rebuild_typed_storage, (storage._untyped_storage, storage.dtype))


def rebuild_typed_storage_child(storage, storage_type):
    return storage_type(wrap_storage=storage, _internal=True)


def reduce_typed_storage_child(storage):
    """A legacy storage (``FloatStorage`` ...) as its bytes' storage and its class."""
    return (rebuild_typed_storage_child, (storage._untyped_storage, type(storage)))


def init_reductions():
    """Register these reducers with ``multiprocessing``'s pickler."""
    from .. import Tensor
    from .._core.storage import UntypedStorage
    from ..nn.parameter import Parameter
    from ..storage import LEGACY_STORAGES, TypedStorage
    ForkingPickler.register(UntypedStorage, reduce_storage)
    for cls in LEGACY_STORAGES.values():
        ForkingPickler.register(cls, reduce_typed_storage_child)
    ForkingPickler.register(TypedStorage, reduce_typed_storage)
    ForkingPickler.register(Tensor, reduce_tensor)
    ForkingPickler.register(Parameter, reduce_tensor)
