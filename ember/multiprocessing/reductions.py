"""How tensors and storages are pickled between processes (``ForkingPickler``'s reducers,
registered by :func:`init_reductions` when ``ember.multiprocessing`` is imported), laid out as
``torch.multiprocessing.reductions``.

A tensor is sent as its storage plus its view (offset, size, stride, requires_grad). A CPU
storage is moved into shared memory (``share_memory_``) and sent as its handle, as PyTorch's:
under the ``file_descriptor`` strategy its descriptor (``multiprocessing.reduction.DupFd``: passed
to a starting child, or fetched from the sender through ``resource_sharer`` by the receiver),
under ``file_system`` its ``/dev/shm`` file's name. The receiver maps that memory, so what one
process writes the other reads; :data:`shared_cache` makes a storage received twice (or sent
back) one storage, so views sent in separate messages still share. Empty storages travel as
their class; CUDA and meta storages are refused, and their tensors, with sparse and quantized
ones, are sent by their own pickling."""
import multiprocessing
import os
import pickle
import sys
import threading
import weakref
from multiprocessing.reduction import ForkingPickler
from multiprocessing.util import register_after_fork

from .._core.device import strided

try:
    # (imported now, not by the first DupFd: a child forked while another thread imports it,
    # as a Queue's feeder thread can, would inherit it half initialised; PyTorch's reason)
    import multiprocessing.resource_sharer  # noqa: F401
except ImportError:
    pass

__all__ = ["StorageWeakRef", "SharedCache", "rebuild_tensor", "reduce_tensor",
           "rebuild_storage_empty", "rebuild_storage_fd", "rebuild_storage_filename",
           "reduce_storage", "fd_id", "storage_from_cache",
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
    """A dictionary from handles (a descriptor's :func:`fd_id`, a file's name) to
    :class:`StorageWeakRef`, whose expired entries are dropped whenever it grows past a limit
    (PyTorch's cache of the shared storages sent and received)."""

    def __init__(self):
        super().__init__()
        self.limit = 128
        self._after_fork()
        # (a child forked while the lock is held would never get it: a new lock there)
        register_after_fork(self, SharedCache._after_fork)

    def _after_fork(self):
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


class _Slot:
    __slots__ = ("obj",)


def _holders(obj):
    return sys.getrefcount(obj)


def _one_holder():
    """What :func:`_holders` counts for an object held by one slot alone (measured, not assumed:
    the interpreter's own references differ between Python versions)."""
    slot = _Slot()
    slot.obj = object()
    return _holders(slot.obj)


_ONE_HOLDER = _one_holder()


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
    tensor._storage  # (a kernel's result adopts its array as its storage now)
    if tensor._storage_.nbytes() and _holders(tensor._storage_) == _ONE_HOLDER:
        # The storage is this tensor's alone, so no other tensor caches an array over it: move
        # it into shared memory here, sparing reduce_storage's move the heap walk that finds
        # them (milliseconds, for each batch a DataLoader worker sends).
        from . import get_sharing_strategy
        tensor._storage_._shared_mapping(
            "name" if get_sharing_strategy() == "file_system" else "fd", only_user=tensor)
    metadata = (tensor.storage_offset(), tuple(tensor.size()), tensor.stride(),
                tensor.requires_grad)
    return (rebuild_tensor, (type(tensor), tensor._typed_storage(), metadata))


def fd_id(fd):
    """What identifies the memory behind a descriptor in every process: (inode, device)."""
    stat = os.fstat(fd)
    return (stat.st_ino, stat.st_dev)


def storage_from_cache(cls, key):
    """The live storage sent or received before under handle ``key``, or None."""
    storage_ref = shared_cache.get(key)
    if storage_ref is None:
        return None
    return storage_ref._ref()


def rebuild_storage_fd(cls, df, size):
    """The storage of the shared memory whose descriptor ``df`` (a ``DupFd``) brings."""
    fd = df.detach()
    try:
        storage = storage_from_cache(cls, fd_id(fd))
        if storage is not None:
            return storage
        storage = cls._new_shared_fd_cpu(fd, size)
        shared_cache[fd_id(fd)] = StorageWeakRef(storage)
        return storage
    finally:
        os.close(fd)


def rebuild_storage_filename(cls, manager, handle, size):
    """The storage of the ``/dev/shm`` file ``handle``; the reference the message held on the
    file is dropped."""
    storage = storage_from_cache(cls, handle)
    if storage is None:
        storage = cls._new_shared_filename_cpu(manager, handle, size)
        shared_cache[handle] = StorageWeakRef(storage)
    return storage._shared_decref()


def rebuild_storage_empty(cls):
    return cls()


def reduce_storage(storage):
    """A CPU storage as the handle of its shared memory, moved there first (see the module
    docstring); an empty one as its class."""
    from . import get_sharing_strategy
    if storage.device.type == "cuda":
        raise RuntimeError("Cannot pickle CUDA storage; try pickling a CUDA tensor instead")
    if storage.device.type == "meta":
        raise RuntimeError("Cannot pickle meta storage; try pickling a meta tensor instead")
    if storage.nbytes() == 0:
        # (an empty file cannot be mapped)
        return (rebuild_storage_empty, (type(storage),))
    if get_sharing_strategy() == "file_system":
        metadata = storage._share_filename_cpu_()
        cache_key = metadata[1]
        rebuild = rebuild_storage_filename
        # (the message's reference: the file outlives this storage until it is received)
        storage._shared_incref()
    else:
        fd, size = storage._share_fd_cpu_()
        cache_key = fd_id(fd)
        metadata = (multiprocessing.reduction.DupFd(fd), size)
        rebuild = rebuild_storage_fd
    shared_cache[cache_key] = StorageWeakRef(storage)
    return (rebuild, (type(storage),) + metadata)


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
