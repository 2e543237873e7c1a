"""``UntypedStorage``: bytes on a device, with no dtype and no shape, and the allocators behind them.

A CPU storage owns (or borrows) a NumPy buffer; a meta storage has a byte count and no memory.
Kernels that produce a fresh NumPy array hand it to :func:`from_array`, which adopts the array's
memory without copying.
"""
import mmap
import os
import weakref

import numpy as np

from . import shared_memory as _shm
from .allocator import cpu_cache as _cpu_cache
from .device import CPU, META, device as _device
from .dtype import uint8


class CPUAllocator:
    """Allocates zero-copy NumPy byte buffers and keeps PyTorch-style statistics; large blocks
    come from the caching allocator (``ember/_core/allocator.py``)."""

    def __init__(self):
        self.allocated_bytes = 0
        self.num_allocs = 0

    def allocate(self, nbytes):
        try:
            block = _cpu_cache.allocate(nbytes)
        except (MemoryError, ValueError):  # NumPy's words for "no such memory"
            raise allocation_error(nbytes) from None
        self.num_allocs += 1
        self.allocated_bytes += nbytes
        return block


def allocation_error(nbytes):
    """PyTorch's CPU allocator failure, in its words."""
    return RuntimeError(f"[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: "
                        f"can't allocate memory: you tried to allocate {nbytes} bytes. "
                        f"Error code 12 (Cannot allocate memory)")


class MetaAllocator:
    """Meta storages hold no memory; the allocator only records the request."""

    def allocate(self, nbytes):
        return None


_allocators = {"cpu": CPUAllocator(), "meta": MetaAllocator()}

# Allocation observers (the memory profiler): each is called as ``obs(storage)`` right after a
# storage gets its memory. Empty unless a profiler with profile_memory=True is running, so the
# cost when unused is one truth test per new storage. An observer that wants frees attaches a
# ``weakref.finalize`` to the storage.
_alloc_observers = []


def _notify_alloc(storage):
    for obs in _alloc_observers:
        obs(storage)


def get_allocator(dev):
    return _allocators[dev.type]


def set_allocator(device_type, allocator):
    """Install the allocator for a device type (how out-of-tree backends bring their memory)."""
    _allocators[device_type] = allocator


def _allocate(alloc, nbytes, dev):
    """``nbytes`` from ``alloc`` on device ``dev``: an allocator serving several devices takes
    the device (``allocate_for``), which need not be the current one."""
    allocate_for = getattr(alloc, "allocate_for", None)
    return alloc.allocate(nbytes) if allocate_for is None else allocate_for(nbytes, dev)


class UntypedStorage:
    """A flat run of bytes on one device. Views of a tensor share one storage."""

    __slots__ = ("_buf", "_bytes", "_nbytes", "device", "_resizable", "_allocator", "__weakref__")

    def __init__(self, size=0, *, device=None):
        dev = CPU if device is None else _device(device)
        alloc = get_allocator(dev)
        self._buf = _allocate(alloc, size, dev)
        self._bytes = self._buf
        self._nbytes = size
        self.device = dev
        self._resizable = True
        self._allocator = alloc
        if _alloc_observers:
            _notify_alloc(self)

    # -- inspection -------------------------------------------------------------------------
    def nbytes(self):
        return self._nbytes

    def size(self):
        return self._nbytes

    def __len__(self):
        return self._nbytes

    def __sizeof__(self):
        # (sys.getsizeof counts the bytes held, as PyTorch's: torchinfo's "Input size (MB)")
        return super().__sizeof__() + self._nbytes

    def element_size(self):
        return 1

    def resizable(self):
        return self._resizable

    @property
    def allocator(self):
        return self._allocator

    @property
    def is_meta(self):
        return self.device.type == "meta"

    def data_ptr(self):
        buf = self._buf
        if buf is None:
            return 0
        if isinstance(buf, np.ndarray):
            return buf.__array_interface__["data"][0]
        return buf.data_ptr()

    def _data(self):
        """The storage as a 1-d uint8 NumPy array (CPU only)."""
        b = self._bytes
        if b is None:
            if self._buf is None or self.device.type == "cuda":
                raise NotImplementedError(
                    f"Cannot access data of a storage on the '{self.device.type}' device")
            b = self._bytes = _byte_view(self._buf)
        return b

    def tolist(self):
        return self._data().tolist()

    def __getitem__(self, i):
        if isinstance(i, slice):
            return self._slice(i)
        return int(self._data()[i])

    def _slice(self, i):
        """``storage[a:b]``: a storage over those bytes of this one's memory (no copy, not
        resizable), as PyTorch's."""
        start, stop, step = i.indices(self._nbytes)
        if step != 1:
            raise RuntimeError(f"Trying to slice with a step of {step}, but only a step of 1 is "
                               f"supported")
        if self.device.type not in ("cpu", "meta"):
            raise NotImplementedError(f"slicing a storage on the '{self.device.type}' device is "
                                      f"not supported by ember")
        s = UntypedStorage.__new__(UntypedStorage)
        s._nbytes = max(stop - start, 0)
        s._buf = s._bytes = None if self._buf is None else self._data()[start:start + s._nbytes]
        s.device = self.device
        s._resizable = False
        s._allocator = self._allocator
        return s

    def __setitem__(self, i, v):
        self._data()[i] = v

    def fill_(self, value):
        self._data()[:] = value
        return self

    def copy_(self, src, non_blocking=False):
        if src.nbytes() != self._nbytes:
            raise RuntimeError(f"size mismatch: {src.nbytes()} vs {self._nbytes}")
        if self.device.type == "meta":
            return self
        if self.device.type == "cpu" and src.device.type == "cpu":
            self._data()[:] = src._data()
        else:  # device memory on a side: the device runtime's copy, through Tensor.copy_
            self._as_byte_tensor().copy_(src._as_byte_tensor(), non_blocking)
        return self

    def cpu(self):
        """This storage on the CPU: itself when it is there, else a copy (as PyTorch's)."""
        if self.device.type == "cpu":
            return self
        return self._as_byte_tensor().cpu().untyped_storage()

    def to(self, *, device, non_blocking=False):
        """This storage on ``device``: itself when it is there, else a copy (as PyTorch's)."""
        dev = _device(device)
        if dev == self.device:
            return self
        return self._as_byte_tensor().to(dev, non_blocking=non_blocking).untyped_storage()

    def cuda(self, device=None, non_blocking=False):
        """This storage on the current CUDA device, or on CUDA device index ``device``."""
        dev = _device("cuda", device) if device else _device("cuda")
        return self.to(device=dev, non_blocking=non_blocking)

    def resize_(self, nbytes):
        self._resize_buffer(nbytes)
        if self.device.type == "cpu":
            _forget_cached_arrays(self)
        return self

    def _resize_buffer(self, nbytes):
        """resize_ without telling the tensors that view this storage (Tensor.resize_, which
        resets its own cached array, and out= arguments grown by kernels: a walk of the heap
        per call would cost them milliseconds)."""
        if not self._resizable:
            raise RuntimeError("Trying to resize storage that is not resizable")
        if self.device.type == "meta":
            self._nbytes = nbytes
            return self
        new = _allocate(self._allocator, nbytes, self.device)
        n = min(nbytes, self._nbytes)
        if self.device.type == "cpu":
            new[:n] = self._data()[:n]
            self._bytes = new
        else:  # device memory is copied on the device
            self._allocator.copy_bytes(new, self._buf, n)
            self._bytes = None
        self._buf = new
        self._nbytes = nbytes
        return self

    def clone(self):
        s = UntypedStorage(self._nbytes, device=self.device)
        return s.copy_(self)

    def untyped(self):
        return self

    @classmethod
    def from_file(cls, filename, shared=False, nbytes=0):
        """A CPU storage of the first ``nbytes`` bytes of a file, memory-mapped as by
        ``torch.from_file`` (``shared``: writes reach the file; otherwise they stay here)."""
        from .. import from_file  # the package imports this module: a true cycle
        return from_file(filename, shared, nbytes, dtype=uint8).untyped_storage()

    # -- pinned memory (through the Tensor ops, as PyTorch's storage methods) ------------------
    def _as_byte_tensor(self):
        from .tensor_impl import make_tensor  # tensor_impl imports this module: a true cycle
        return make_tensor(self, (self._nbytes,), (1,), 0, uint8, self.device)

    def is_pinned(self, device=None):
        """Whether this CPU storage is in pinned (page-locked) memory."""
        return self._as_byte_tensor().is_pinned(device)

    def pin_memory(self, device=None):
        """This storage copied into pinned memory, unless it is pinned already."""
        if self.device.type != "cpu":
            raise TypeError("cannot pin 'torch.storage.UntypedStorage' only CPU memory can be pinned")
        return self._as_byte_tensor().pin_memory(device).untyped_storage()

    # -- shared memory (ember.multiprocessing: what other processes map) ----------------------
    def share_memory_(self):
        """Move a CPU storage's bytes into shared memory, in place: the tensors viewing it
        follow. Under the ``file_descriptor`` sharing strategy the memory is an anonymous file
        (``memfd_create``) whose descriptor the storage keeps; under ``file_system`` a file of
        ``/dev/shm`` known by its name (:mod:`ember.multiprocessing`). Either is mapped
        ``MAP_SHARED``, so a forked child shares it, and a pickled storage is sent as its handle
        (:mod:`ember.multiprocessing.reductions`), which the receiver maps. As PyTorch's, a
        shared storage can no longer be resized; a storage in shared memory already, device
        storages (shared already) and meta ones are left as they are."""
        if self.device.type != "cpu" or self.is_shared():
            return self
        from ..multiprocessing import get_sharing_strategy  # (imports this module)
        if get_sharing_strategy() == "file_system":
            self._share_filename_cpu_()
        else:
            self._share_fd_cpu_()
        return self

    def is_shared(self):
        """Whether the storage is in shared memory (a mapped file, as PyTorch's; device
        storages always are, as PyTorch's CUDA tensors)."""
        if self.device.type == "cpu":
            return isinstance(_shm.mapping_of(self._buf), mmap.mmap)
        return self.device.type == "cuda"

    def _shared_mapping(self, kind, only_user=None):
        """The shared mapping of this storage's memory whose handle is a ``kind`` ("fd" or
        "name"), moving the bytes into a new one first when they are elsewhere (as PyTorch's
        ``_share_fd_cpu_``/``_share_filename_cpu_``: a storage shared the other way moves).
        ``only_user``: the one tensor that holds this storage, when the caller knows there is
        no other, spares the heap walk that finds the tensors caching an array over it."""
        if self.device.type != "cpu":
            raise RuntimeError(f"_share_{'fd' if kind == 'fd' else 'filename'}_: only available "
                               f"on CPU")
        with _shm.share_lock:
            mapping = _shm.mapping_of(self._buf)
            if (not isinstance(mapping, _shm.SharedMapping) or getattr(mapping, kind) is None
                    or mapping.address != self.data_ptr()):
                n = self._nbytes
                mapping = _shm.new_fd_mapping(n) if kind == "fd" else _shm.new_named_mapping(n)
                buf = np.frombuffer(mapping, np.uint8, count=n)
                buf[:] = self._data()[:n]
                self._buf = self._bytes = buf
                self._resizable = False
                if only_user is None:
                    _forget_cached_arrays(self)
                else:
                    only_user._np = None
            return mapping

    def _share_fd_cpu_(self):
        """``(fd, nbytes)``: the descriptor of this storage's shared memory (moved there first
        if needed), which the file_descriptor strategy sends."""
        return self._shared_mapping("fd").fd, self._nbytes

    def _share_filename_cpu_(self):
        """``(manager, name, nbytes)``: the ``/dev/shm`` name of this storage's shared memory
        (moved there first if needed), which the file_system strategy sends. ember runs no
        shared-memory manager process (the file counts its own users), so ``manager`` is
        ``None``."""
        return None, self._shared_mapping("name").name.encode(), self._nbytes

    def _shared_incref(self):
        """One more user of this storage's ``/dev/shm`` file (a message in flight holds one)."""
        mapping = _shm.mapping_of(self._buf)
        if isinstance(mapping, _shm.SharedMapping) and mapping.name is not None:
            _shm.add_file_ref(mapping.name, mapping.refcount_offset, 1)
        return self

    def _shared_decref(self):
        """One user fewer of this storage's ``/dev/shm`` file (the message that brought it)."""
        mapping = _shm.mapping_of(self._buf)
        if isinstance(mapping, _shm.SharedMapping) and mapping.name is not None:
            _shm.add_file_ref(mapping.name, mapping.refcount_offset, -1)
        return self

    @classmethod
    def _new_shared(cls, size, *, device="cpu"):
        """A new storage of ``size`` bytes in shared memory (the current strategy's)."""
        from ..multiprocessing import get_sharing_strategy  # (imports this module)
        if _device(device).type != "cpu":
            return cls(size, device=device)
        if get_sharing_strategy() == "file_system":
            return cls._new_using_filename_cpu(size)
        return cls._new_using_fd_cpu(size)

    @classmethod
    def _new_using_fd_cpu(cls, size):
        """A new storage of ``size`` bytes in shared memory known by a descriptor."""
        return _wrap_mapping(_shm.new_fd_mapping(size), size)

    @classmethod
    def _new_using_filename_cpu(cls, size):
        """A new storage of ``size`` bytes in a ``/dev/shm`` file."""
        return _wrap_mapping(_shm.new_named_mapping(size), size)

    @classmethod
    def _new_shared_fd_cpu(cls, fd, size):
        """The storage of ``size`` bytes of the shared memory behind descriptor ``fd`` (which
        the caller keeps: the storage holds a duplicate)."""
        return _wrap_mapping(_shm.fd_mapping(os.dup(fd), size), size)

    @classmethod
    def _new_shared_filename_cpu(cls, manager, handle, size):
        """The storage of ``size`` bytes of the ``/dev/shm`` file named ``handle``."""
        name = handle.decode() if isinstance(handle, bytes) else handle
        return _wrap_mapping(_shm.open_named_mapping(name, size), size)

    def __repr__(self):
        if self.device.type == "meta":
            return f"[ember.storage.UntypedStorage(device=meta) of size {self._nbytes}]"
        body = "\n".join(f" {v}" for v in self._data().tolist())
        return f"{body}\n[ember.storage.UntypedStorage(device={self.device}) of size {self._nbytes}]"


def _byte_view(arr):
    """A uint8 view of all the memory an array spans (the array must be dense, lowest stride >0)."""
    if arr.dtype == np.uint8 and arr.ndim == 1:
        return arr
    if arr.flags.c_contiguous or arr.flags.f_contiguous:
        return arr.reshape(-1, order="A").view(np.uint8)
    # a dense array in some other dimension order: walk to its permuted-contiguous form
    order = np.argsort(arr.strides)[::-1]
    return arr.transpose(order).reshape(-1).view(np.uint8)


def from_array(arr, dev=CPU):
    """Adopt a fresh dense NumPy array's memory as a storage, without copying."""
    s = UntypedStorage.__new__(UntypedStorage)
    s._buf = arr
    s._bytes = None
    s._nbytes = arr.nbytes
    s.device = dev
    s._resizable = True
    s._allocator = _allocators[dev.type]
    if _alloc_observers:
        _notify_alloc(s)
    return s


def _wrap_mapping(mapping, nbytes):
    s = from_array(np.frombuffer(mapping, np.uint8, count=nbytes))
    s._resizable = False
    return s


def meta_storage(nbytes):
    s = UntypedStorage.__new__(UntypedStorage)
    s._buf = s._bytes = None
    s._nbytes = nbytes
    s.device = META
    s._resizable = True
    s._allocator = _allocators["meta"]
    if _alloc_observers:
        _notify_alloc(s)
    return s


# CPU storages resized (or moved into shared memory) since the process started: id -> (a weak
# reference to the storage, {id: weak reference} of the tensors that cached a NumPy array over
# its buffer since). (Not a WeakSet: it compares tensors with ==, which is elementwise.)
_array_users = {}


def note_array_user(storage, t):
    """Tensor ``t`` has just cached a NumPy array over ``storage``'s buffer (``Tensor._nd``): a
    later resize of a storage resized before must clear it."""
    entry = _array_users.get(id(storage))
    if entry is not None and entry[0]() is storage:
        entry[1][id(t)] = weakref.ref(t)


def _forget_cached_arrays(storage):
    """After ``storage``'s CPU buffer was replaced: the tensors viewing it drop the NumPy array
    each caches over the old buffer (``Tensor._nd``, read by every CPU kernel), so they read and
    write the new one, as PyTorch's tensors see their storage's new data pointer. At a storage's
    first resize they are found as its referrers in the garbage collector, a walk of the heap
    (a registry kept for every storage would cost every CPU op); from then on the tensors that
    cache an array over it are noted (``note_array_user``), so resizing it again — FSDP frees
    and refills its parameters' storages at each step — walks nothing."""
    from .._tensor import Tensor  # imports this module: a true cycle
    key = id(storage)
    entry = _array_users.get(key)
    if entry is not None and entry[0]() is storage:
        users = [r() for r in entry[1].values()]
        entry[1].clear()
    else:
        import gc
        users = [r for r in gc.get_referrers(storage) if isinstance(r, Tensor)]
        ref = weakref.ref(storage, lambda _, key=key: _array_users.pop(key, None))
        _array_users[key] = (ref, {})
    for t in users:
        if t is not None and t._storage_ is storage:
            t._np = None
