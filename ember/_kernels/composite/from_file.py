"""``torch.from_file``: a 1-d CPU tensor over the first ``size`` elements of a file, through a
memory mapping (ATen's MapAllocator): ``shared=True`` maps the file itself (writes reach it, and
a missing or short file is created or extended with zeros); otherwise the mapping is private
(copy-on-write: writes stay in this process) and the file must hold the bytes. The storage, like
PyTorch's, is shared memory and cannot be resized. PyTorch registers it for the CPU only."""
import mmap
import os

import numpy as np

from ..._core.dtype import get_default_dtype
from ..._core.storage import from_array
from ..._ops.overload import ops
from ..registration import register


def _os_error(e):
    return f"{os.strerror(e.errno)} ({e.errno})"


def from_file(filename, shared=None, size=0, dtype=None, layout=None, device=None,
              pin_memory=None):
    if pin_memory:
        raise RuntimeError("tensors constructed from a file cannot be pinned")
    dtype = get_default_dtype() if dtype is None else dtype
    count = 0 if size is None else size
    nbytes = count * dtype.itemsize
    shared = bool(shared)
    if nbytes < 0:
        raise RuntimeError(f"unable to mmap {nbytes} bytes from file <{filename}>: Cannot "
                           f"allocate memory (12)")
    mode = "read-write" if shared else "read-only"
    try:
        fd = os.open(filename, os.O_RDWR | os.O_CREAT if shared else os.O_RDONLY, 0o600)
    except OSError as e:
        raise RuntimeError(f"unable to open file <{filename}> in {mode} mode: "
                           f"{_os_error(e)}") from None
    try:
        file_size = os.fstat(fd).st_size
        if nbytes > file_size:
            if not shared:
                raise RuntimeError(f"file <{filename}> size <{file_size}> is smaller than the "
                                   f"required mapping size <{nbytes}>")
            os.ftruncate(fd, nbytes)
        if nbytes:
            mapping = mmap.mmap(fd, nbytes, access=mmap.ACCESS_WRITE if shared
                                else mmap.ACCESS_COPY)
            buf = np.frombuffer(mapping, np.uint8, count=nbytes)
        else:
            buf = np.empty(0, np.uint8)
    finally:
        os.close(fd)
    storage = from_array(buf)
    storage._resizable = False
    t = ops.aten.empty.memory_format._call((0,), dtype, None, None, None, None)
    return ops.aten.set_.source_Storage_storage_offset._call(t, storage, 0, (count,), (1,))


register("from_file", "CPU", from_file)
