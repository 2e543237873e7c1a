"""Shared memory for CPU storages (``UntypedStorage.share_memory_``, ember.multiprocessing): the
mappings another process maps by a handle — an anonymous file's descriptor (the file_descriptor
strategy, ``memfd_create``) or a ``/dev/shm`` file's name (file_system).

A shared storage's buffer views a :class:`SharedMapping`, which carries that handle. A
file_system file counts the mappings of it (and the messages carrying its name) in its last 8
bytes, as PyTorch's refcounted shared files do, under an flock; whoever brings the count to zero
unlinks it (see ``_file_refs``). PyTorch also runs a manager process that unlinks the files of
processes that died; ember has none, so a process killed while holding a reference leaves its
file in /dev/shm."""

import itertools
import mmap
import os
import random
import threading
import weakref

import numpy as np


class SharedMapping(mmap.mmap):
    """A ``MAP_SHARED`` mapping of shared memory with its handle: ``fd`` (file_descriptor) or
    ``name`` (file_system), and ``address``, where its bytes start."""
    fd = name = None
    address = refcount_offset = 0


_SHM_DIR = "/dev/shm"
share_lock = threading.Lock()


def _new_share_lock():
    global share_lock
    share_lock = threading.Lock()


if hasattr(os, "register_at_fork"):  # (a child forked while another thread moved a storage)
    os.register_at_fork(after_in_child=_new_share_lock)
_shm_counter = itertools.count()


def mapping_of(buf):
    """The object whose memory the NumPy array ``buf`` views (an mmap for a mapped storage)."""
    while isinstance(buf, np.ndarray):
        buf = buf.base
    return buf.obj if isinstance(buf, memoryview) else buf


def _map(fd, nbytes):
    # (an empty mapping is refused by mmap: an empty storage maps one byte)
    mapping = SharedMapping(fd, max(nbytes, 1), flags=mmap.MAP_SHARED,
                             prot=mmap.PROT_READ | mmap.PROT_WRITE)
    mapping.address = np.frombuffer(mapping, np.uint8).ctypes.data
    return mapping


def new_fd_mapping(nbytes):
    """New zeroed shared memory of ``nbytes``, an anonymous file whose descriptor it keeps."""
    fd = os.memfd_create("ember_shared_storage", os.MFD_CLOEXEC)
    try:
        os.ftruncate(fd, max(nbytes, 1))
    except BaseException:
        os.close(fd)
        raise
    return fd_mapping(fd, nbytes)


def fd_mapping(fd, nbytes):
    """A mapping of ``nbytes`` of the shared memory behind ``fd``, which it owns from now on
    (and closes when it is gone)."""
    try:
        mapping = _map(fd, nbytes)
    except BaseException:
        os.close(fd)
        raise
    mapping.fd = fd
    weakref.finalize(mapping, os.close, fd).atexit = False
    return mapping


def _refcount_offset(nbytes):
    return (max(nbytes, 1) + 7) // 8 * 8


def new_named_mapping(nbytes):
    """New zeroed shared memory of ``nbytes``, a ``/dev/shm`` file (PyTorch's names:
    ``/torch_<pid>_<random>_<count>``, here ``/ember_...``) with one user, this mapping."""
    offset = _refcount_offset(nbytes)
    while True:
        name = f"/ember_{os.getpid()}_{random.getrandbits(31)}_{next(_shm_counter)}"
        try:
            fd = os.open(_SHM_DIR + name, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
            break
        except FileExistsError:
            continue
    try:
        os.ftruncate(fd, offset + 8)
        os.pwrite(fd, (1).to_bytes(8, "little"), offset)
        mapping = _map(fd, nbytes)
    except BaseException:
        os.close(fd)
        os.unlink(_SHM_DIR + name)
        raise
    os.close(fd)  # (the name is the handle: file_system keeps no descriptors open)
    return _named(mapping, name, offset)


def open_named_mapping(name, nbytes):
    """A new mapping of the ``/dev/shm`` file ``name``, counted as one more user of it."""
    try:
        fd = os.open(_SHM_DIR + name, os.O_RDWR)
    except FileNotFoundError:
        raise RuntimeError(f"unable to open shared memory object <{name}> in read-write mode: "
                           f"No such file or directory (2)") from None
    try:
        offset = _refcount_offset(nbytes)
        _locked_add(fd, offset, 1)
        mapping = _map(fd, nbytes)
    finally:
        os.close(fd)
    return _named(mapping, name, offset)


# The /dev/shm files this process holds a reference on, one per mapping: id(mapping) -> (name,
# refcount offset, pid). A reference is dropped when its mapping is gone or at the process's
# exit. (A forked child inherits its parent's mappings and this table, not the references: the
# pid tells them apart.)
_file_refs = {}
_exit_hooked = False


def _named(mapping, name, offset):
    global _exit_hooked
    mapping.name = name
    mapping.refcount_offset = offset
    key = id(mapping)
    _file_refs[key] = (name, offset, os.getpid())
    weakref.finalize(mapping, _drop_file_ref, key).atexit = False
    if not _exit_hooked:
        # multiprocessing's exit function, not atexit: it also runs when a multiprocessing
        # child (forked, or started by a fork server) ends in os._exit. A child clears its
        # exit finalizers after its arguments were unpickled, so each child registers anew.
        import multiprocessing.util
        _drop_file_refs_at_exit(_drop_all_file_refs)
        multiprocessing.util.register_after_fork(_drop_all_file_refs, _drop_file_refs_at_exit)
        _exit_hooked = True
    return mapping


def _drop_file_refs_at_exit(drop_all):
    import multiprocessing.util
    multiprocessing.util.Finalize(None, drop_all, exitpriority=0)


def _drop_file_ref(key):
    entry = _file_refs.pop(key, None)
    if entry is not None and entry[2] == os.getpid():
        add_file_ref(entry[0], entry[1], -1)


def _drop_all_file_refs():
    for key in list(_file_refs):
        _drop_file_ref(key)


def add_file_ref(name, offset, delta):
    """Add ``delta`` to the users of the ``/dev/shm`` file ``name``, unlinking it at zero."""
    try:
        fd = os.open(_SHM_DIR + name, os.O_RDWR)
    except FileNotFoundError:  # (unlinked already: at exit, in no particular order)
        return
    try:
        if _locked_add(fd, offset, delta) <= 0:
            os.unlink(_SHM_DIR + name)
    finally:
        os.close(fd)


def _locked_add(fd, offset, delta):
    import fcntl  # (POSIX only, as file_system's /dev/shm)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        count = int.from_bytes(os.pread(fd, 8, offset), "little") + delta
        os.pwrite(fd, count.to_bytes(8, "little"), offset)
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
    return count
