"""An out-of-tree ember backend: the ``mmapdev`` device, whose memory is a memory-mapped file.

Everything goes through the public extension points, as a real PrivateUse1 backend would:

* ``rename_privateuse1_backend("mmapdev")`` + ``generate_methods_for_privateuse1_backend()``:
  ``ember.device("mmapdev")``, ``t.mmapdev()``, ``t.is_mmapdev``, ``module.mmapdev()``;
* an allocator (``set_allocator``) that hands out regions of a file-backed arena, so device
  memory is not host memory: host code never gets a CPU tensor over it, and data moves only
  through the ``copy_`` kernel (host -> device, device -> host, device -> device);
* kernels on the ``PrivateUse1`` key for the ops this device computes itself (factories,
  ``copy_``, ``fill_``, pointwise add/mul/relu, ``mm``/``addmm``, ``sum``), computing directly on
  the mapped memory, and a boxed fallback for every other op that copies the inputs to the host,
  runs the CPU kernel and copies the results back (what XLA-style backends call a CPU fallback);
* a device module ``ember.mmapdev`` (``is_available``, ``device_count``, ``memory_allocated``).

``install()`` does all of it once per process; ``tests/test_privateuse1.py`` uses it.
"""
import mmap
import os
import tempfile
import types

import numpy as np

import ember
from ember import library
from ember._core import storage as _storage
from ember._core.device import CPU
from ember._core.promotion import result_type_of
from ember._dispatch.keys import K, bit
from ember._tensor import empty_tensor, wrap_array
from ember.utils import generate_methods_for_privateuse1_backend, rename_privateuse1_backend

NAME = "mmapdev"
_ALIGN = 64


class MmapArena:
    """Device memory: fixed-size chunks of a temporary file mapped into this process, handed out
    by a bump pointer (a new chunk when one is full). Frees are counted, not reused."""

    def __init__(self, chunk_bytes=64 << 20):
        self.chunk_bytes = chunk_bytes
        self.chunks = []  # (file, mmap, numpy byte view)
        self.offset = chunk_bytes
        self.allocated_bytes = 0
        self.num_allocs = 0
        self.path = tempfile.mkdtemp(prefix="ember-mmapdev-")

    def _new_chunk(self, nbytes):
        size = max(self.chunk_bytes, nbytes)
        f = open(os.path.join(self.path, f"chunk{len(self.chunks)}.bin"), "w+b")
        f.truncate(size)
        m = mmap.mmap(f.fileno(), size)
        self.chunks.append((f, m, np.frombuffer(m, dtype=np.uint8)))
        self.offset = 0

    def allocate(self, nbytes):
        if self.offset + nbytes > len(self.chunks[-1][2]) if self.chunks else True:
            self._new_chunk(nbytes)
        start = self.offset
        self.offset = (start + nbytes + _ALIGN - 1) // _ALIGN * _ALIGN
        self.num_allocs += 1
        self.allocated_bytes += nbytes
        return DeviceBuffer(self.chunks[-1][2][start:start + nbytes], len(self.chunks) - 1, start)


class DeviceBuffer:
    """A region of the arena. It is deliberately not a NumPy array, so generic host code cannot
    read it; the kernels below view it with :func:`device_array`."""

    __slots__ = ("mem", "chunk", "start")

    def __init__(self, mem, chunk, start):
        self.mem, self.chunk, self.start = mem, chunk, start

    def data_ptr(self):
        return self.mem.__array_interface__["data"][0]

    def __len__(self):
        return len(self.mem)


def device_array(t):
    """The NumPy view of a mmapdev tensor's bytes (inside the kernels only)."""
    isz = t._dtype.itemsize
    return np.ndarray(t._size, t._dtype._np, t._storage._buf.mem, t._offset * isz,
                      tuple(s * isz for s in t._stride))


def _is_dev(x):
    return getattr(x, "_device", None) is not None and x._device.type == NAME


# ---------------------------------------------------------------------------------------------
# Kernels on the PrivateUse1 key.

def empty_memory_format(size, dtype=None, layout=None, device=None, pin_memory=None,
                        memory_format=None):
    return empty_tensor(size, dtype or ember.get_default_dtype(), ember.device(device))


def empty_strided(size, stride, dtype=None, layout=None, device=None, pin_memory=None):
    return empty_tensor(size, dtype or ember.get_default_dtype(), ember.device(device),
                        stride=tuple(stride))


def copy_(self, src, non_blocking=False):
    """Every copy that touches the device: host -> device, device -> host, device -> device."""
    s = device_array(src) if _is_dev(src) else src.contiguous()._nd()
    dst = device_array(self) if _is_dev(self) else self._nd()
    with np.errstate(invalid="ignore", over="ignore"):
        np.copyto(dst, np.broadcast_to(s, dst.shape), casting="unsafe")
    return self


def fill_Scalar(self, value):
    device_array(self)[...] = value
    return self


def _result_like(a, array, dtype):
    out = empty_tensor(array.shape, dtype, a._device)
    device_array(out)[...] = array
    return out


def add_Tensor(self, other, alpha=1):
    dtype = result_type_of((self, other))
    o = device_array(other) if _is_dev(other) else other
    r = device_array(self).astype(dtype._np) + alpha * np.asarray(o)
    return _result_like(self, r.astype(dtype._np), dtype)


def mul_Tensor(self, other):
    dtype = result_type_of((self, other))
    o = device_array(other) if _is_dev(other) else other
    return _result_like(self, (device_array(self) * np.asarray(o)).astype(dtype._np), dtype)


def relu(self):
    return _result_like(self, np.maximum(device_array(self), 0), self._dtype)


def mm(self, mat2):
    return _result_like(self, device_array(self) @ device_array(mat2), self._dtype)


def addmm(self, mat1, mat2, beta=1, alpha=1):
    r = beta * device_array(self) + alpha * (device_array(mat1) @ device_array(mat2))
    return _result_like(mat1, r.astype(mat1._dtype._np), mat1._dtype)


def sum_default(self, dtype=None):
    out_dtype = dtype or (self._dtype if self._dtype.is_floating_point else ember.int64)
    return _result_like(self, np.asarray(device_array(self).sum(dtype=out_dtype._np)), out_dtype)


KERNELS = {
    "empty.memory_format": empty_memory_format, "empty_strided": empty_strided,
    "copy_": copy_, "fill_.Scalar": fill_Scalar, "add.Tensor": add_Tensor,
    "mul.Tensor": mul_Tensor, "relu": relu, "mm": mm, "addmm": addmm, "sum": sum_default,
}


# ---------------------------------------------------------------------------------------------
# The CPU fallback for every other op.

def _to_host(x):
    if _is_dev(x):
        host = empty_tensor(x._size, x._dtype, CPU, stride=x._stride if
                            x.is_non_overlapping_and_dense() else None)
        copy_(host, x)
        return host
    if isinstance(x, (list, tuple)):
        return type(x)(_to_host(v) for v in x)
    if isinstance(x, ember.device) and x.type == NAME:
        return CPU
    return x


def _to_device(x, dev):
    if isinstance(x, ember.Tensor):
        out = empty_tensor(x._size, x._dtype, dev)
        copy_(out, x)
        return out
    if isinstance(x, (list, tuple)):
        return type(x)(_to_device(v, dev) for v in x)
    return x


def cpu_fallback(op, ks, *args, **kwargs):
    dev = next((a._device for a in _flat(args, kwargs) if _is_dev(a)), None) or \
        ember.device(NAME, 0)
    host_args = [_to_host(a) for a in args]
    host_kwargs = {k: _to_host(v) for k, v in kwargs.items()}
    values = host_args + list(host_kwargs.values())
    out = op._entry.redispatch(bit(K.CPU), *values)
    # arguments the schema says are written: copy the host result back into the device tensor
    for a, host, v in zip(op._schema.arguments, list(args) + list(kwargs.values()), values):
        if a.is_write and _is_dev(host):
            copy_(host, v)
            if out is v:
                out = host
    if isinstance(out, ember.Tensor) and out._device.type == "cpu" and not any(
            out is a for a in list(args) + list(kwargs.values())):
        return _to_device(out, dev)
    if isinstance(out, tuple):
        return type(out)(_to_device(o, dev) if isinstance(o, ember.Tensor) and
                         o._device.type == "cpu" else o for o in out)
    return out


def _flat(args, kwargs):
    for v in list(args) + list(kwargs.values()):
        if isinstance(v, (list, tuple)):
            yield from v
        else:
            yield v


# ---------------------------------------------------------------------------------------------
# The device module and installation.

arena = None
_libs = []


def _device_module():
    mod = types.ModuleType(f"ember.{NAME}")
    mod.is_available = lambda: True
    mod.device_count = lambda: 1
    mod.current_device = lambda: 0
    mod.memory_allocated = lambda device=None: arena.allocated_bytes
    mod.__doc__ = "The mmapdev device module (examples/privateuse1_backend.py)."
    return mod


def install():
    """Register the backend (once per process); returns the arena."""
    global arena
    if arena is not None:
        return arena
    from ember.utils.backend_registration import _register_device_module
    rename_privateuse1_backend(NAME)
    arena = MmapArena()
    _storage.set_allocator(NAME, arena)
    lib = library.Library("aten", "IMPL", "PrivateUse1")
    for name, fn in KERNELS.items():
        lib.impl(name, fn, "PrivateUse1")
    lib.fallback(cpu_fallback, "PrivateUse1", with_keyset=True)
    _libs.append(lib)
    generate_methods_for_privateuse1_backend()
    _register_device_module(NAME, _device_module())
    return arena


if __name__ == "__main__":
    install()
    x = ember.randn(3, 4)
    d = x.mmapdev()
    print(d.device, d.is_mmapdev, (d * 2 + 1).relu().sum().cpu(), x.mul(2).add(1).relu().sum())
