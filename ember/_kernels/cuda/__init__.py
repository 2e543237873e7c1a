"""Kernels on the ``CUDA`` dispatch key.

What the device runtime itself provides is registered per op: ``empty``/``empty_strided`` (memory
from the caching allocator on the current stream), ``copy_`` between host and device and within
the device (the runtime's memcpy on the current stream; ``non_blocking`` copies from or into pinned
memory are asynchronous), ``record_stream``.

The device kernels of the modules beside this one compute on the device itself, from kernel
bodies written once against an array module (CuPy on a GPU, NumPy on the simulated device; see
``arrays.py``): ``pointwise.py`` (every overload of the pointwise table), ``reduction.py``,
``blas.py`` (cuBLAS products), ``tensor_ops.py`` (fills, constant factories, converting copies),
``fused.py`` (softmax, layer_norm and gelu as single kernels from the raw CUDA sources in
``csrc/``, on a GPU), ``conv.py`` (convolutions with algorithms chosen as ``cudnn.benchmark``
says), ``foreach.py`` (the optimizers' multi-tensor ops, one launch per list, on a GPU).
On a GPU, functional ops without a device kernel of their own first run their CPU kernel body on
device arrays (``shared.py``). A kernel that cannot compute a call on the device hands it to
:func:`host_kernel_fallback`, the CUDA key's backend fallback, which every other op reaches too.
It runs the op's CPU kernel:

* on the simulated device, directly on device memory: a CUDA tensor is handed to the CPU kernel
  as a CPU tensor over the same bytes (the simulated device's memory is host memory), and the
  kernel is launched on the current stream (recorded instead while the stream is being captured
  into a CUDA graph, and replayed by the graph);
* on a real GPU, through host staging copies (device → host, the CPU kernel, host → device for
  what it wrote). This keeps every op correct on a GPU until the CUDA kernels of part 2 of the
  CUDA work register themselves on this key and take over op by op.

Fresh results are copied into device memory from the caching allocator, so memory statistics
count every tensor the program makes; results that are an input (in-place, ``out=``) or a view of
one are returned as that input or as a view of its device storage.
"""
import numpy as np

from ... import library
from ..._core import strides as _st
from ..._core.device import CPU, device as _device
from ..._core.dtype import get_default_dtype
from ..._dispatch.keys import K, bit
from ..._ops.overload import ops
from ..._core.tensor_impl import empty_tensor, make_tensor
from ..rules.factory import check_resize_memory_format
from ..._tensor import Tensor  # the frontend class itself: isinstance checks on op arguments
from . import (arrays, attention, blas, conv, foreach, fused, pointwise, random, reduction,
               shared, tensor_ops)
from .arrays import NeedsHost, _cuda

_CPU_KEYS = bit(K.CPU)


def _device_of(dev):
    """``cuda`` → ``cuda:<current>`` (a bad index fails where the memory is asked for: "CUDA
    error: invalid device ordinal")."""
    cuda = _cuda()
    cuda._lazy_init()
    if dev.__class__ is _device and dev.index is not None:
        return dev
    return _device("cuda", cuda._get_device_index(dev, optional=True))


# ---------------------------------------------------------------------------------------------
# Allocation and copies: what the runtime does itself.

def empty_memory_format(size, dtype=None, layout=None, device=None, pin_memory=None,
                        memory_format=None):
    _check_not_pinned(pin_memory)
    stride = None
    if memory_format is not None and memory_format._name in ("channels_last",
                                                             "channels_last_3d"):
        stride = _st.channels_last_strides(tuple(size))
    return empty_tensor(size, dtype or get_default_dtype(), _device_of(device), stride=stride)


def empty_strided(size, stride, dtype=None, layout=None, device=None, pin_memory=None):
    _check_not_pinned(pin_memory)
    return empty_tensor(size, dtype or get_default_dtype(), _device_of(device),
                        stride=tuple(stride))


def _check_not_pinned(pin_memory):
    if pin_memory:  # PyTorch's empty_cuda
        raise RuntimeError("Only dense CPU tensors can be pinned")


def _dense_bytes(t):
    """(first byte, byte count) of a tensor whose elements are one dense run, else None."""
    if not (t.is_contiguous() or (t._size and _st.is_non_overlapping_and_dense(t._size,
                                                                                t._stride))):
        return None
    isz = t._dtype.itemsize
    lo = t._offset + sum(s * (n - 1) for n, s in zip(t._size, t._stride) if s < 0)
    return lo * isz, t.numel() * isz


def copy_(self, src, non_blocking=False):
    """Host ↔ device and device ↔ device copies through the runtime when both sides are the
    same dtype and layout and dense; anything else (casts, broadcasting, strided) runs as a
    kernel through the fallback."""
    cuda = _cuda()
    if (self._dtype == src._dtype and self._size == src._size and self._stride == src._stride
            and self.numel()):
        d, s = _dense_bytes(self), _dense_bytes(src)
        if d is not None and s is not None:
            rt = cuda._lazy_init()
            dev = self._device if self._device.type == "cuda" else src._device
            stream = cuda.streams.current_stream_handle(dev.index)
            if self._device.type == "cuda" and src._device.type == "cuda":
                with arrays.timed(rt, dev.index, stream, "Memcpy DtoD (Device -> Device)"):
                    rt.memcpy_dtod(self._storage.data_ptr() + d[0],
                                   src._storage.data_ptr() + s[0], d[1], stream)
            else:
                # From or into pinned memory a non_blocking copy is asynchronous on the stream,
                # and the host block is tied to the stream (it is reused only after the copy);
                # with pageable memory it completes before returning, as in CUDA.
                to_device = self._device.type == "cuda"
                host_t, off = (src, s[0]) if to_device else (self, d[0])
                host = host_t._storage._data()[off:off + d[1]]
                host_ptr = host_t._storage.data_ptr() + off
                pinned = non_blocking and _host_allocator().is_pinned_ptr(host_ptr)
                kind = "Pinned" if pinned else "Pageable"
                if to_device:
                    with arrays.timed(rt, dev.index, stream, f"Memcpy HtoD ({kind} -> Device)"):
                        rt.memcpy_htod(self._storage.data_ptr() + d[0], host, stream,
                                       pinned=pinned)
                else:
                    with arrays.timed(rt, dev.index, stream, f"Memcpy DtoH (Device -> {kind})"):
                        rt.memcpy_dtoh(host, src._storage.data_ptr() + s[0], stream,
                                       pinned=pinned)
                if pinned:
                    _host_allocator().record_event(host_ptr, stream, dev.index)
            return self
    if self._device.type == "cuda" and src._device.type == "cuda":
        try:
            return tensor_ops.copy_on_device(self, src)
        except NeedsHost:
            pass
    return host_kernel_fallback(ops.aten.copy_.default, self, src, non_blocking)


def _host_allocator():
    from ...cuda import _host_allocator
    return _host_allocator


def resize_(self, size, memory_format=None):
    """Grow or shrink the tensor's view of its storage; a larger one moves to a new block
    (the old bytes copied on the device), as PyTorch's resize_ on CUDA."""
    check_resize_memory_format(size, memory_format)
    with _cuda().device(self._device.index):
        self._resize_metadata(size, memory_format)
    return self


def record_stream(self, s):
    """Keep the block alive until the work queued on ``s`` so far is done (the allocator
    records an event on ``s`` when the tensor is freed)."""
    self._storage._buf.record_stream(s.cuda_stream)


# ---------------------------------------------------------------------------------------------
# The fallback: CPU kernels on device tensors.

class _Staging:
    """The host side of one fallback call: a CPU tensor for each CUDA tensor argument, sharing
    one host buffer per device storage (so views of one storage stay views of one buffer)."""

    def __init__(self, rt, stream, copies=False):
        self.rt = rt
        self.stream = stream  # the copies are ordered with the op's stream
        self.buffers = {}  # id(device storage) -> (device storage, host uint8 array)
        self.copies = copies  # simulated device: copies of its memory, not views

    def host_buffer(self, storage):
        entry = self.buffers.get(id(storage))
        if entry is None:
            n = storage.nbytes()
            ptr = storage.data_ptr()
            if self.rt.simulated:
                buf = self.rt.host_view(ptr, n) if n else np.empty(0, np.uint8)
                if self.copies:
                    buf = buf.copy()
            else:
                buf = np.empty(n, np.uint8)
                if n:
                    self.rt.memcpy_dtoh(buf, ptr, self.stream)
            entry = self.buffers[id(storage)] = (storage, buf)
        return entry[1]

    def host_tensor(self, t):
        from ..._core.storage import from_array
        buf = self.host_buffer(t._storage)
        st = from_array(buf, CPU)
        h = make_tensor(st, t._size, t._stride, t._offset, t._dtype, CPU)
        if t._vc is not None and h._vc is not None:
            h._vc = t._vc  # in-place kernels bump the device tensor's version
        return h

    def write_back(self, storage):
        """Real GPU: copy a host buffer the kernel wrote back to the device."""
        if not self.rt.simulated:
            _, buf = self.buffers[id(storage)]
            if buf.nbytes:
                self.rt.memcpy_htod(storage.data_ptr(), buf, self.stream)

    def device_view_of(self, h):
        """If CPU result ``h`` lies in one of the staged buffers, the same view on the device
        storage; else None."""
        if not h._size or h.numel() == 0:
            return None
        hp = h._storage.data_ptr()
        for storage, buf in self.buffers.values():
            base = buf.__array_interface__["data"][0] if buf.nbytes else None
            if base is not None and base <= hp < base + buf.nbytes:
                isz = h._dtype.itemsize
                off = (hp - base) // isz + h._offset
                return make_tensor(storage, h._size, h._stride, off, h._dtype,
                                   storage.device)
        return None


def host_array(t):
    """``(array, staged)``: CUDA tensor ``t``'s elements as a NumPy array — on the simulated
    device a view of its memory (``staged`` False), on a GPU a host copy (``staged`` True: writes
    to it reach the device only through a copy back)."""
    cuda = _cuda()
    rt = cuda._lazy_init()
    staging = _Staging(rt, cuda.streams.current_stream_handle(t._device.index))
    h = staging.host_tensor(t)
    return h._nd(), not rt.simulated


def _to_device(h, dev, rt, stream):
    """A fresh CPU result as a new device tensor (same strides when dense)."""
    stride = h._stride if h.is_non_overlapping_and_dense() else None
    out = empty_tensor(h._size, h._dtype, dev, stride=stride)
    _store(out, h, rt, stream)
    return out


def _store(out, h, rt, stream):
    """Write CPU result ``h`` into device tensor ``out``'s storage (same size; dense)."""
    n = out._storage.nbytes()
    if not n:
        return
    if h._stride != out._stride:
        h = h.contiguous()
    src = h._storage._data()[h._offset * h._dtype.itemsize:][:n]
    if rt.simulated:  # the kernel's own write: it is already running on the stream
        np.copyto(rt.host_view(out._storage.data_ptr(), n), src)
    else:
        rt.memcpy_htod(out._storage.data_ptr(), src, stream)


def _flat(x):
    return [y for v in x for y in _flat(v)] if isinstance(x, (list, tuple)) else [x]


# (Module-level recursions, not nested functions calling themselves: such a closure sits in a
# reference cycle with its own cell and keeps what it holds, here staged and device tensors,
# alive until the cyclic garbage collector runs, out of the caching allocators' reach.)

def _hosted(v, staging):
    """An argument with its CUDA tensors replaced by host copies (devices by the CPU)."""
    if isinstance(v, Tensor):
        return staging.host_tensor(v) if v._device.type == "cuda" else v
    if isinstance(v, (list, tuple)) and v and any(isinstance(x, Tensor) for x in v):
        return type(v)(_hosted(x, staging) for x in v)
    if isinstance(v, _device) and v.type == "cuda":
        return CPU
    return v


def _on_device(o, originals, fresh, staging, dev, rt, stream):
    """A host kernel's result as device tensors: the argument a host copy stands for, the
    device view of a staged storage, or a new device tensor (recorded in ``fresh``)."""
    if isinstance(o, Tensor):
        d = originals.get(id(o))
        if d is not None:
            return d
        if o._device.type != "cpu":
            return o
        view = staging.device_view_of(o)
        if view is not None:
            return view
        r = fresh[id(o)] = _to_device(o, dev, rt, stream)
        return r
    if isinstance(o, (list, tuple)):
        return type(o)(_on_device(x, originals, fresh, staging, dev, rt, stream) for x in o)
    return o


def host_kernel_fallback(op, *args, **kwargs):
    """Run ``op``'s CPU kernel on CUDA arguments (see the module docstring)."""
    if op._entry.namespace != "aten":  # stands in for aten's CUDA kernels only
        from ..._dispatch.dispatcher import _missing_kernel
        raise _missing_kernel(op._entry, K.CUDA)
    if _cuda().several_devices:
        return _on_tensors_device(op._entry.qualname, lambda *a, **k: _host_kernel(op, *a, **k),
                                  args, kwargs)
    return _host_kernel(op, *args, **kwargs)


def _host_kernel(op, *args, **kwargs):
    cuda = _cuda()
    rt = cuda._lazy_init()
    schema = op._schema
    dev = _common_device(args, kwargs)
    stream = cuda.streams.current_stream_handle(dev.index)
    staging = _Staging(rt, stream)

    # Positional in schema order (a boxed fallback gets the keyword-only arguments by keyword).
    values = list(args) + [kwargs[a.name] for a in schema.arguments[len(args):]
                           if a.name in kwargs]
    # Random ops draw from the device's generator, not the CPU's.
    values = [cuda.default_generators[dev.index] if v is None and a.base == "Generator" else v
              for v, a in zip(values, schema.arguments)]
    if not rt.simulated and shared.eligible(op):
        try:
            return shared.run(op, values, dev)
        except NeedsHost:
            pass  # staged below, and from now on
    host_values = [_hosted(v, staging) for v in values]

    def run():
        return op._entry.redispatch(_CPU_KEYS, *host_values)

    capturing = rt.stream_is_capturing(stream)
    if not rt.simulated:
        staged = arrays.stats["staged"]
        staged[str(op)] = staged.get(str(op), 0) + 1
    if capturing and not rt.simulated:
        raise RuntimeError(f"CUDA error: operation not permitted when stream is capturing "
                           f"({op} has no CUDA kernel yet and runs on the host)")
    first_values, first_staging = host_values, staging
    with arrays.timed(rt, dev.index, stream, f"ember::cuda::host::{schema.base_name}"):
        if rt.simulated and not capturing:
            box = []
            rt.launch(stream, lambda: box.append(run()))
            out = box[0]
        elif capturing:
            # A run that gives the captured outputs their layout; the values are the replays'
            # (the memory may hold anything now: no overflow warnings from it). A captured
            # kernel writes nothing until a replay: one writing an argument runs on copies.
            if any(a.is_write for a in schema.arguments):
                first_staging = _Staging(rt, stream, copies=True)
                first_values = [_hosted(v, first_staging) for v in values]
            with np.errstate(all="ignore"):
                out = op._entry.redispatch(_CPU_KEYS, *first_values)
        else:
            out = run()
    if capturing and not isinstance(out, (Tensor, list, tuple, type(None))):
        raise _runtime_capture_error(f"{op} returns a Python value to the host")
    for a, v in zip(schema.arguments, values):
        if a.is_write:
            for t in _flat(v):
                if isinstance(t, Tensor) and t._device.type == "cuda":
                    staging.write_back(t._storage)

    originals = {id(h): d for h, d in zip(_flat(first_values), _flat(values))
                 if isinstance(h, Tensor)}
    fresh = {}  # id(host result) -> device tensor it was copied into
    result = _on_device(out, originals, fresh, first_staging, dev, rt, stream)
    if capturing:
        # The graph replays the kernel on the captured memory: inputs, in-place results and views
        # are the captured bytes themselves; fresh results are stored into the same outputs.
        targets = [fresh.get(id(o)) for o in _flat(out)]

        def replay():
            for r, h in zip(targets, _flat(run())):
                if r is not None:
                    _store(r, h, rt, stream)
        rt.launch(stream, replay)
    return result


def _runtime_capture_error(what):
    from ...cuda._runtime import capture_error
    return capture_error(what)


def _common_device(args, kwargs):
    for v in list(args) + list(kwargs.values()):
        for t in (v if isinstance(v, (list, tuple)) else (v,)):
            d = getattr(t, "_device", None) if isinstance(t, Tensor) else \
                t if isinstance(t, _device) else None
            if d is not None and d.type == "cuda":
                return d if d.index is not None else _device_of(d)
    return _device_of(None)


def _tensor_device_index(qualname, args, kwargs):
    """The index of the CUDA device the call's tensors are on, as PyTorch's generated CUDA
    wrappers find it (``check_and_update_common_device``): None without a CUDA tensor; tensors
    on two devices are an error (0-dim CPU tensors may join, as everywhere)."""
    index = None
    for v in (*args, *kwargs.values()):
        for t in (v if isinstance(v, (list, tuple)) else (v,)):
            d = getattr(t, "_device", None) if isinstance(t, Tensor) else None
            if d is None or d.type != "cuda":
                continue
            i = d.index or 0
            if index is None:
                index = i
            elif i != index:
                raise RuntimeError(f"Expected all tensors to be on the same device, but found "
                                   f"at least two devices, cuda:{index} and cuda:{i}! (when "
                                   f"checking arguments for {qualname})")
    return index


def _on_tensors_device(qualname, fn, args, kwargs):
    """``fn(*args, **kwargs)`` with the device of the call's tensors current (PyTorch's device
    guard around a CUDA kernel): results are allocated there and launched on its stream. Only
    with several devices; with one, every CUDA tensor is on the current device."""
    cuda = _cuda()
    index = _tensor_device_index(qualname, args, kwargs)
    if index is None or index == cuda.streams._state.device:
        return fn(*args, **kwargs)
    with cuda.device(index):
        return fn(*args, **kwargs)


def _or_host(name, kernel):
    """``kernel``, handing a call it cannot compute on the device (NeedsHost) to the fallback;
    with several devices, run on the device of its tensors."""
    op = None
    qualname = "aten::" + name

    def run(*args, **kwargs):
        if _cuda().several_devices:
            return _on_tensors_device(qualname, on_device, args, kwargs)
        return on_device(*args, **kwargs)

    def on_device(*args, **kwargs):
        nonlocal op
        try:
            return kernel(*args, **kwargs)
        except NeedsHost as e:
            if op is None:
                base, _, overload = name.partition(".")
                op = getattr(getattr(ops.aten, base), overload or "default")
            arrays.stats["host"][name] = str(e)[:200]
            return host_kernel_fallback(op, *args, **kwargs)
    run.__name__ = run.__qualname__ = getattr(kernel, "__name__", name).replace("<lambda>", name)
    run.__module__ = kernel.__module__
    return run


_libs = []


def register():
    """Put this module's kernels, the device kernels and the fallback on the CUDA key (once the
    aten ops exist). ``record_stream`` is named in ``native_functions.yaml`` instead: it is
    CUDA-only."""
    lib = library.Library("aten", "IMPL", "CUDA")
    for name, fn in {"empty.memory_format": empty_memory_format, "empty_strided": empty_strided,
                     "copy_": copy_, "resize_": resize_}.items():
        lib.impl(name, fn, "CUDA")
    for module in (pointwise, reduction, blas, tensor_ops, fused, conv, foreach, random,
                   attention):
        for name, fn in module.kernels().items():
            lib.impl(name, _or_host(name, fn), "CUDA")
    lib.fallback(host_kernel_fallback, "CUDA")
    _libs.append(lib)
