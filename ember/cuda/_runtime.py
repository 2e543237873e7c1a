"""The CUDA runtime interface: everything ember asks of a CUDA driver, in one small class.

Two implementations sit behind it:

* :class:`CupyRuntime` — a real GPU, through CuPy's runtime calls and, for the virtual-memory
  calls of expandable segments, NVIDIA's ``cuda-bindings`` (``pip install ember[cuda]``);
* :class:`SimulatedRuntime` — ``EMBER_CUDA_SIMULATE=1`` (``=N``: N devices): devices whose memory
  is host memory (each ``malloc`` is a NumPy buffer, and its host address is the "device"
  address; each device has its own capacity and accounting), whose streams
  run their work in order as it is launched, and whose events complete when the work their stream
  had before them is done. A test can hold a stream back (:meth:`SimulatedRuntime.hold`): events
  recorded on it stay pending until it is released or synchronized, which is how the allocator's
  stream-aware freeing is tested without a GPU.

Handles are plain ints (stream 0 is the legacy default stream), so the allocator and the stream
and event classes above this layer never see CuPy or NumPy objects. Errors: ``malloc`` raises
:class:`DeviceOutOfMemory` (the caching allocator turns it into ``OutOfMemoryError`` after its
retries); every other failure is a ``RuntimeError`` in CUDA's words (``CUDA error: ...``).
"""
import bisect
import contextlib
import itertools
import mmap
import os
import time
import warnings
from dataclasses import dataclass

import numpy as np

from . import _device_assert, _subnormals

__all__ = ["Runtime", "SimulatedRuntime", "CupyRuntime", "DeviceOutOfMemory", "DeviceProperties",
           "get_runtime", "simulated"]

GRANULARITY = 2 << 20  # cuMemGetAllocationGranularity on current GPUs: 2 MiB pages


class DeviceOutOfMemory(Exception):
    """cudaErrorMemoryAllocation: the device has no ``nbytes`` bytes to give."""

    def __init__(self, nbytes):
        super().__init__(f"CUDA error: out of memory (cudaMalloc of {nbytes} bytes)")
        self.nbytes = nbytes


@dataclass(frozen=True)
class DeviceProperties:
    """What ``ember.cuda.get_device_properties`` reports (PyTorch's ``_CudaDeviceProperties``)."""
    name: str
    major: int
    minor: int
    total_memory: int
    multi_processor_count: int
    L2_cache_size: int = 50 << 20
    max_threads_per_multi_processor: int = 2048
    warp_size: int = 32
    regs_per_multiprocessor: int = 65536
    is_integrated: bool = False
    is_multi_gpu_board: bool = False
    uuid: str = "00000000-0000-0000-0000-000000000000"
    pci_bus_id: int = 0
    pci_device_id: int = 0
    pci_domain_id: int = 0

    def __repr__(self):
        return (f"_CudaDeviceProperties(name='{self.name}', major={self.major}, "
                f"minor={self.minor}, total_memory={self.total_memory >> 20}MB, "
                f"multi_processor_count={self.multi_processor_count}, uuid={self.uuid}, "
                f"pci_bus_id={self.pci_bus_id}, pci_device_id={self.pci_device_id}, "
                f"pci_domain_id={self.pci_domain_id}, L2_cache_size={self.L2_cache_size >> 20}MB)")


def capture_error(what):
    """The error CUDA gives for a forbidden call while a stream is being captured."""
    return RuntimeError(f"CUDA error: operation not permitted when stream is capturing "
                        f"({what} during CUDA graph capture)")


class Runtime:
    """The interface (all methods abstract here). Devices are ints; streams, events, graphs and
    physical memory handles are ints; pointers are ints."""

    simulated = False

    # devices
    def device_count(self): raise NotImplementedError
    def get_device_properties(self, device): raise NotImplementedError
    def set_device(self, device): raise NotImplementedError
    def mem_get_info(self, device): raise NotImplementedError  # (free, total)
    def device_synchronize(self, device): raise NotImplementedError

    # memory (malloc(relaxed=True): in cudaStreamCaptureModeRelaxed, so allowed while a stream
    # captures, as the caching allocator's cudaMallocMaybeCapturing)
    def malloc(self, device, nbytes, relaxed=False): raise NotImplementedError
    def free(self, device, ptr): raise NotImplementedError
    # Host <-> device copies. ``pinned=True``: the host array is page-locked memory (from
    # ``host_alloc``) that the caller keeps alive until the copy completes, and the copy is
    # asynchronous on ``stream`` (a non_blocking copy); otherwise the call returns with the copy
    # done, as cudaMemcpyAsync on pageable memory (the host array may be a temporary).
    def memcpy_htod(self, dst, src_array, stream, pinned=False): raise NotImplementedError
    def memcpy_dtoh(self, dst_array, src, stream, pinned=False): raise NotImplementedError
    def memcpy_dtod(self, dst, src, nbytes, stream): raise NotImplementedError
    def memset(self, ptr, value, nbytes, stream): raise NotImplementedError

    # pinned (page-locked) host memory, for the caching host allocator: cudaHostAlloc/cudaFreeHost
    def host_alloc(self, nbytes): raise NotImplementedError  # -> host address
    def free_host(self, ptr): raise NotImplementedError

    # streams and events
    def stream_create(self, device, priority=0): raise NotImplementedError
    def stream_query(self, stream): raise NotImplementedError
    def stream_synchronize(self, stream): raise NotImplementedError
    def stream_wait_event(self, stream, event): raise NotImplementedError
    def stream_priority_range(self): return (0, -5)  # (least, greatest), as CUDA's
    def event_create(self, device, enable_timing=False, blocking=False): raise NotImplementedError
    def event_record(self, event, stream): raise NotImplementedError
    def event_query(self, event): raise NotImplementedError
    def event_synchronize(self, event): raise NotImplementedError
    def event_elapsed_time(self, start, end): raise NotImplementedError
    def event_destroy(self, event): raise NotImplementedError

    # graphs
    def stream_begin_capture(self, stream, mode): raise NotImplementedError
    def stream_end_capture(self, stream): raise NotImplementedError  # -> graph
    def stream_is_capturing(self, stream): raise NotImplementedError
    def graph_launch(self, graph, stream): raise NotImplementedError
    def graph_destroy(self, graph): raise NotImplementedError

    # virtual memory (expandable segments)
    def granularity(self, device): return GRANULARITY
    def address_reserve(self, device, size): raise NotImplementedError
    def address_free(self, ptr, size): raise NotImplementedError
    def mem_create(self, device, size): raise NotImplementedError
    def mem_map(self, ptr, size, handle): raise NotImplementedError
    def mem_unmap(self, ptr, size): raise NotImplementedError
    def mem_release(self, handle): raise NotImplementedError


# ---------------------------------------------------------------------------------------------
# The simulated device.

class _SimStream:
    __slots__ = ("device", "priority", "work", "done", "held", "capture")

    def __init__(self, device, priority):
        self.device, self.priority = device, priority
        self.work = 0  # work items launched so far
        self.done = 0  # ... of which completed (all of them unless the stream is held)
        self.held = False
        self.capture = None  # the list recording launches while the stream is being captured


class _SimEvent:
    __slots__ = ("device", "timing", "stream", "ticket", "time")

    def __init__(self, device, timing):
        self.device, self.timing = device, timing
        self.stream = None
        self.ticket = 0  # the stream's work count the event waits for
        self.time = None


class SimulatedRuntime(Runtime):
    """Simulated devices (see the module docstring): ``devices`` of them (default: the number
    ``EMBER_CUDA_SIMULATE`` gives, at least one), each of ``capacity_mb``. Memory: host NumPy
    buffers addressed by their host address; expandable segments: an address range reserved with
    ``mmap`` (no memory behind it until pages are mapped) whose mapped pages are tracked, so
    touching an unmapped page is an illegal address as on a GPU."""

    simulated = True

    def __init__(self, capacity_mb=None, devices=None):
        if capacity_mb is None:
            capacity_mb = int(os.environ.get("EMBER_CUDA_SIMULATE_MEMORY_MB", "16384"))
        if devices is None:
            devices = simulated_device_count()
        self.capacity = capacity_mb << 20
        self.devices = devices
        self._props = [DeviceProperties(
            name="ember simulated CUDA device", major=9, minor=0, total_memory=self.capacity,
            multi_processor_count=os.cpu_count() or 1, pci_bus_id=i,
            uuid=f"00000000-0000-0000-0000-{i:012d}") for i in range(devices)]
        self.used = [0] * devices  # bytes of each device's memory handed out (malloc + pages)
        self._bases = []  # sorted start addresses of live allocations and reservations
        self._regions = {}  # start -> (nbytes, host uint8 array, mapped page set or None)
        self._region_device = {}  # start of a malloc'd region -> its device
        self._handles = {}  # physical handle -> (size, device)
        self._host = {}  # pinned host allocations: address -> host array
        # handles of streams, events and graphs; from 3 up, as CUDA's are never 1 or 2 (the legacy
        # and per-thread default streams' handles, which DLPack's stream argument names)
        self._ids = itertools.count(3)
        self._streams = {0: _SimStream(0, 0)}
        self._events = {}
        self._graphs = {}
        self.device = 0

    @property
    def in_use(self):
        """Bytes handed out on all devices."""
        return sum(self.used)

    # -- devices -------------------------------------------------------------------------------
    def device_count(self):
        return self.devices

    def get_device_properties(self, device):
        self._check(device)
        return self._props[device]

    def set_device(self, device):
        self._check(device)
        self.device = device

    def _check(self, device):
        if not 0 <= device < self.devices:
            raise RuntimeError("CUDA error: invalid device ordinal")

    def mem_get_info(self, device):
        self._check(device)
        return self.capacity - self.used[device], self.capacity

    def device_synchronize(self, device):
        for s in self._streams.values():
            self._finish(s)

    # -- memory --------------------------------------------------------------------------------
    def malloc(self, device, nbytes, relaxed=False):
        self._check(device)
        if not relaxed:
            self._forbid_during_capture("cudaMalloc")
        if self.used[device] + nbytes > self.capacity:
            raise DeviceOutOfMemory(nbytes)
        buf = np.empty(max(nbytes, 1), np.uint8)
        ptr = buf.__array_interface__["data"][0]
        self._add_region(ptr, nbytes, buf, None)
        self._region_device[ptr] = device
        self.used[device] += nbytes
        return ptr

    def free(self, device, ptr):
        nbytes, _, pages = self._regions.get(ptr, (None, None, None))
        if nbytes is None or pages is not None or self._region_device.get(ptr) != device:
            raise RuntimeError("CUDA error: invalid argument (cudaFree of an address that "
                               "cudaMalloc did not return)")
        self._remove_region(ptr)
        del self._region_device[ptr]
        self.used[device] -= nbytes

    def _add_region(self, ptr, nbytes, buf, pages):
        bisect.insort(self._bases, ptr)
        self._regions[ptr] = (nbytes, buf, pages)

    def _remove_region(self, ptr):
        del self._regions[ptr]
        self._bases.pop(bisect.bisect_left(self._bases, ptr))

    def host_view(self, ptr, nbytes):
        """The host memory behind device bytes ``[ptr, ptr + nbytes)`` as a uint8 array (this is
        how the simulated device's kernels read and write device memory)."""
        i = bisect.bisect_right(self._bases, ptr) - 1
        if i >= 0:
            start = self._bases[i]
            size, buf, pages = self._regions[start]
            off = ptr - start
            if off + nbytes <= max(size, 1):
                if pages is not None and nbytes:
                    first, last = off // GRANULARITY, (off + nbytes - 1) // GRANULARITY
                    if any(p not in pages for p in range(first, last + 1)):
                        raise RuntimeError("CUDA error: an illegal memory access was encountered "
                                           "(unmapped page of an expandable segment)")
                return buf[off:off + nbytes]
        raise RuntimeError(f"CUDA error: an illegal memory access was encountered (address "
                           f"{ptr:#x}, {nbytes} bytes)")

    def memcpy_htod(self, dst, src_array, stream, pinned=False):
        # Either way the host bytes are read at launch (the simulated device runs work when it is
        # launched), so a pageable source may be a temporary, as with CUDA's staging copy. A GPU
        # waits for a copy from pageable memory (a synchronisation a capture refuses).
        if not pinned:
            self._forbid_during_capture("a host-to-device copy from pageable memory", stream)
        src = np.ascontiguousarray(src_array).reshape(-1).view(np.uint8)
        self._launch(stream, lambda: np.copyto(self.host_view(dst, src.nbytes), src))

    def memcpy_dtoh(self, dst_array, src, stream, pinned=False):
        dst = dst_array.reshape(-1).view(np.uint8)
        if pinned:  # asynchronous: one more work item on the stream, which the caller syncs
            self._launch(stream, lambda: np.copyto(dst, self.host_view(src, dst.nbytes)))
            return
        self._forbid_during_capture("a device-to-host copy", stream)
        self.stream_synchronize(stream)  # pageable host memory: the copy is synchronous
        np.copyto(dst, self.host_view(src, dst.nbytes))

    def host_alloc(self, nbytes):
        """Pinned host memory: plain host memory here (every host page is "pinned" for a device
        that is the host); kept by address until :meth:`free_host`."""
        buf = np.empty(max(nbytes, 1), np.uint8)
        ptr = buf.__array_interface__["data"][0]
        self._host[ptr] = buf
        return ptr

    def free_host(self, ptr):
        if self._host.pop(ptr, None) is None:
            raise RuntimeError("CUDA error: invalid argument (cudaFreeHost of an address that "
                               "cudaHostAlloc did not return)")

    def memcpy_dtod(self, dst, src, nbytes, stream):
        self._launch(stream, lambda: np.copyto(self.host_view(dst, nbytes),
                                               self.host_view(src, nbytes)))

    def memset(self, ptr, value, nbytes, stream):
        self._launch(stream, lambda: self.host_view(ptr, nbytes).fill(value))

    # -- work on streams -----------------------------------------------------------------------
    def launch(self, stream, fn):
        """Run ``fn`` (a kernel) as the next work item of ``stream``; while the stream is being
        captured, record it in the graph instead."""
        self._launch(stream, fn)

    def _launch(self, stream, fn):
        s = self._streams[stream]
        if s.capture is not None:
            s.capture.append(fn)
            return
        fn()  # the simulated device runs work when it is launched, in launch order
        s.work += 1
        if not s.held:
            s.done = s.work

    def _finish(self, s):
        s.held = False
        s.done = s.work

    def hold(self, stream):
        """Keep the work launched on ``stream`` from now on "running": events recorded on it stay
        pending until :meth:`release` or a synchronize (simulation only; for tests)."""
        self._streams[stream].held = True

    def release(self, stream):
        self._finish(self._streams[stream])

    def stream_create(self, device, priority=0):
        self._check(device)
        h = next(self._ids)
        least, greatest = self.stream_priority_range()
        self._streams[h] = _SimStream(device, min(max(priority, greatest), least))
        return h

    def stream_priority(self, stream):
        return self._streams[stream].priority

    def stream_query(self, stream):
        s = self._streams[stream]
        return s.done == s.work

    def stream_synchronize(self, stream):
        self._forbid_during_capture("cudaStreamSynchronize", stream)
        self._finish(self._streams[stream])

    def stream_wait_event(self, stream, event):
        # Work launched later on ``stream`` runs after the event's work; the simulation runs work
        # at launch, so the ordering holds already; a held event holds the waiting stream too.
        ev = self._events[event]
        if ev.stream is not None and not self.event_query(event):
            self._streams[stream].held = True

    def event_create(self, device, enable_timing=False, blocking=False):
        h = next(self._ids)
        self._events[h] = _SimEvent(device, enable_timing)
        return h

    def event_record(self, event, stream):
        ev, s = self._events[event], self._streams[stream]
        ev.stream, ev.ticket = stream, s.work
        ev.time = time.perf_counter()

    def event_query(self, event):
        ev = self._events[event]
        return ev.stream is None or self._streams[ev.stream].done >= ev.ticket

    def event_synchronize(self, event):
        ev = self._events[event]
        if ev.stream is not None and not self.event_query(event):
            self._finish(self._streams[ev.stream])

    def event_elapsed_time(self, start, end):
        a, b = self._events[start], self._events[end]
        if not (a.timing and b.timing):
            raise RuntimeError("CUDA error: invalid resource handle (elapsed_time of an event "
                               "created without enable_timing=True)")
        if a.time is None or b.time is None:
            raise RuntimeError("CUDA error: device not ready (elapsed_time of an event that was "
                               "not recorded)")
        return (b.time - a.time) * 1000.0

    def event_destroy(self, event):
        self._events.pop(event, None)

    # -- graphs --------------------------------------------------------------------------------
    def stream_begin_capture(self, stream, mode):
        s = self._streams[stream]
        if stream == 0:
            raise RuntimeError("CUDA error: operation not supported on the legacy default stream "
                               "(cudaStreamBeginCapture); capture on a side stream")
        if s.capture is not None:
            raise RuntimeError("CUDA error: the stream is already being captured")
        s.capture = []

    def stream_end_capture(self, stream):
        s = self._streams[stream]
        work, s.capture = s.capture, None
        h = next(self._ids)
        self._graphs[h] = work
        return h

    def stream_is_capturing(self, stream):
        return self._streams[stream].capture is not None

    def _forbid_during_capture(self, what, stream=None):
        streams = [self._streams[stream]] if stream is not None else self._streams.values()
        if any(s.capture is not None for s in streams):
            raise capture_error(what)

    def graph_launch(self, graph, stream):
        # as when they were launched one by one (arrays.launch): a device raises no
        # floating-point warnings
        with np.errstate(all="ignore"):
            for fn in self._graphs[graph]:
                self._launch(stream, fn)

    def graph_destroy(self, graph):
        self._graphs.pop(graph, None)

    # -- virtual memory ------------------------------------------------------------------------
    def address_reserve(self, device, size):
        size = -(-size // GRANULARITY) * GRANULARITY
        # An anonymous private mapping with MAP_NORESERVE holds address space, not memory: pages
        # cost memory only once written, and mem_unmap gives them back with MADV_DONTNEED.
        flags = mmap.MAP_PRIVATE | getattr(mmap, "MAP_ANONYMOUS", 0x20) | 0x4000  # MAP_NORESERVE
        m = mmap.mmap(-1, size, flags=flags)
        buf = np.frombuffer(m, np.uint8)
        ptr = buf.__array_interface__["data"][0]
        self._add_region(ptr, size, buf, set())
        self._mmaps = getattr(self, "_mmaps", {})
        self._mmaps[ptr] = m
        return ptr

    def address_free(self, ptr, size):
        _, _, pages = self._regions[ptr]
        if pages:
            raise RuntimeError("CUDA error: invalid argument (cuMemAddressFree of a range with "
                               "mapped pages)")
        self._remove_region(ptr)
        self._mmaps.pop(ptr)  # the mapping itself closes when its last NumPy view is gone

    def mem_create(self, device, size):
        self._check(device)
        if size % GRANULARITY:
            raise RuntimeError("CUDA error: invalid argument (cuMemCreate size is not a multiple "
                               "of the granularity)")
        if self.used[device] + size > self.capacity:
            raise DeviceOutOfMemory(size)
        h = next(self._ids)
        self._handles[h] = (size, device)
        self.used[device] += size
        return h

    def _pages(self, ptr, size):
        i = bisect.bisect_right(self._bases, ptr) - 1
        start = self._bases[i]
        _, buf, pages = self._regions[start]
        first = (ptr - start) // GRANULARITY
        return buf, pages, start, range(first, first + size // GRANULARITY)

    def mem_map(self, ptr, size, handle):
        if self._handles.get(handle, (None,))[0] != size:
            raise RuntimeError("CUDA error: invalid argument (cuMemMap size differs from the "
                               "handle's)")
        _, pages, _, rng = self._pages(ptr, size)
        if any(p in pages for p in rng):
            raise RuntimeError("CUDA error: invalid argument (cuMemMap over mapped pages)")
        pages.update(rng)

    def mem_unmap(self, ptr, size):
        buf, pages, start, rng = self._pages(ptr, size)
        pages.difference_update(rng)
        m = self._mmaps[start]
        off = ptr - start
        if hasattr(m, "madvise"):  # give the pages' host memory back, as unmapping does
            m.madvise(mmap.MADV_DONTNEED, off, size)

    def mem_release(self, handle):
        size, device = self._handles.pop(handle)
        self.used[device] -= size


# ---------------------------------------------------------------------------------------------
# A real GPU.

class CupyRuntime(Runtime):
    """A real GPU through CuPy's runtime module (and ``cuda-bindings``' driver API for the
    virtual-memory calls). Imported only when a GPU is used."""

    def __init__(self):
        import cupy
        import cupy.cuda.compiler
        # before any kernel is compiled: CuPy's binaries are kept in memory and on disk
        if not _subnormals.keep_subnormals(cupy.cuda.compiler):
            warnings.warn(f"CuPy {cupy.__version__}'s compiler is not the one ember knows: "
                          "its kernels flush float32 subnormals to zero (PyTorch's keep them)")
        self.cupy = cupy
        self.rt = cupy.cuda.runtime
        self._events = {}  # handle -> (device, timing)
        self._props = {}  # device -> DeviceProperties (fixed: asked once, as PyTorch caches them)

    def device_count(self):
        return self.rt.getDeviceCount()

    def get_device_properties(self, device):
        props = self._props.get(device)
        if props is None:
            props = self._props[device] = self._read_device_properties(device)
        return props

    def _read_device_properties(self, device):
        p = self.rt.getDeviceProperties(device)
        name = p["name"].decode() if isinstance(p["name"], bytes) else p["name"]
        uuid = p.get("uuid", b"")
        if isinstance(uuid, bytes) and len(uuid) == 16:
            h = uuid.hex()
            uuid = f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
        return DeviceProperties(
            name=name, major=p["major"], minor=p["minor"], total_memory=p["totalGlobalMem"],
            multi_processor_count=p["multiProcessorCount"], L2_cache_size=p["l2CacheSize"],
            max_threads_per_multi_processor=p["maxThreadsPerMultiProcessor"],
            warp_size=p["warpSize"], regs_per_multiprocessor=p.get("regsPerMultiprocessor", 65536),
            is_integrated=bool(p["integrated"]), is_multi_gpu_board=bool(p["isMultiGpuBoard"]),
            uuid=str(uuid), pci_bus_id=p["pciBusID"], pci_device_id=p["pciDeviceID"],
            pci_domain_id=p["pciDomainID"])

    def set_device(self, device):
        self.rt.setDevice(device)

    def mem_get_info(self, device):
        with self.cupy.cuda.Device(device):
            return self.rt.memGetInfo()

    def device_synchronize(self, device):
        with self.cupy.cuda.Device(device):
            self.rt.deviceSynchronize()
        if _device_assert._armed:
            _device_assert.raise_pending(self, device, done=True)

    def read_flag(self, word, ptr, device):
        """Copy a device-assert flag into ``word`` (a synchronous copy: after earlier work)."""
        with self.cupy.cuda.Device(device):
            self.rt.memcpy(word.ctypes.data, ptr, word.nbytes, self.rt.memcpyDeviceToHost)

    def malloc(self, device, nbytes, relaxed=False):
        with self.cupy.cuda.Device(device), self._capture_mode(relaxed):
            try:
                return self.rt.malloc(nbytes)
            except self.rt.CUDARuntimeError as e:
                if "cudaErrorMemoryAllocation" in str(e):
                    raise DeviceOutOfMemory(nbytes) from None
                raise RuntimeError(f"CUDA error: {e}") from None

    def free(self, device, ptr):
        with self.cupy.cuda.Device(device):
            self.rt.free(ptr)

    @contextlib.contextmanager
    def _capture_mode(self, relaxed):
        """cudaThreadExchangeStreamCaptureMode(relaxed) around a call, when asked for and when
        cuda-bindings has it."""
        if not relaxed:
            yield
            return
        try:
            from cuda.bindings import runtime as cudart
        except ImportError:
            yield
            return
        relaxed_mode = cudart.cudaStreamCaptureMode.cudaStreamCaptureModeRelaxed
        _, old = cudart.cudaThreadExchangeStreamCaptureMode(relaxed_mode)
        try:
            yield
        finally:
            cudart.cudaThreadExchangeStreamCaptureMode(old)

    def memcpy_htod(self, dst, src_array, stream, pinned=False):
        src = np.ascontiguousarray(src_array)
        self.rt.memcpyAsync(dst, src.ctypes.data, src.nbytes, self.rt.memcpyHostToDevice, stream)
        if not pinned:
            self.rt.streamSynchronize(stream)  # pageable source: it must outlive the copy

    def memcpy_dtoh(self, dst_array, src, stream, pinned=False):
        self.rt.memcpyAsync(dst_array.ctypes.data, src, dst_array.nbytes,
                            self.rt.memcpyDeviceToHost, stream)
        if not pinned:
            self.rt.streamSynchronize(stream)
            if _device_assert._armed:
                _device_assert.raise_any_pending(self)

    def host_alloc(self, nbytes):
        # (in relaxed capture mode, as malloc during a capture: pinning is no stream work)
        try:
            with self._capture_mode(True):
                return self.rt.hostAlloc(nbytes, 0)  # cudaHostAllocDefault
        except self.rt.CUDARuntimeError as e:
            raise RuntimeError(f"CUDA error: {e}") from None

    def free_host(self, ptr):
        self.rt.freeHost(ptr)

    def memcpy_dtod(self, dst, src, nbytes, stream):
        self.rt.memcpyAsync(dst, src, nbytes, self.rt.memcpyDeviceToDevice, stream)

    def memset(self, ptr, value, nbytes, stream):
        self.rt.memsetAsync(ptr, value, nbytes, stream)

    def stream_create(self, device, priority=0):
        with self.cupy.cuda.Device(device):
            return self.rt.streamCreateWithPriority(self.rt.streamNonBlocking, priority)

    def stream_priority(self, stream):
        return self.rt.streamGetPriority(stream)

    def stream_priority_range(self):
        from cuda.bindings import runtime as cudart  # CuPy does not wrap this call
        err, least, greatest = cudart.cudaDeviceGetStreamPriorityRange()
        if int(err):
            raise RuntimeError(f"CUDA error: {err}")
        return least, greatest

    def stream_query(self, stream):
        return self.rt.streamQuery(stream) == 0

    def stream_synchronize(self, stream):
        self.rt.streamSynchronize(stream)
        if _device_assert._armed:
            _device_assert.raise_any_pending(self)

    def stream_wait_event(self, stream, event):
        self.rt.streamWaitEvent(stream, event, 0)

    def event_create(self, device, enable_timing=False, blocking=False):
        flags = (0 if enable_timing else self.rt.eventDisableTiming) | \
            (self.rt.eventBlockingSync if blocking else 0)
        with self.cupy.cuda.Device(device):
            return self.rt.eventCreateWithFlags(flags)

    def event_record(self, event, stream):
        self.rt.eventRecord(event, stream)

    def event_query(self, event):
        return self.rt.eventQuery(event) == 0

    def event_synchronize(self, event):
        self.rt.eventSynchronize(event)
        if _device_assert._armed:
            _device_assert.raise_any_pending(self)

    def event_elapsed_time(self, start, end):
        return self.rt.eventElapsedTime(start, end)

    def event_destroy(self, event):
        self.rt.eventDestroy(event)

    def stream_begin_capture(self, stream, mode):
        modes = {"global": 0, "thread_local": 1, "relaxed": 2}
        self.rt.streamBeginCapture(stream, modes[mode])

    def stream_end_capture(self, stream):
        graph = self.rt.streamEndCapture(stream)
        return self.rt.graphInstantiate(graph)

    def stream_is_capturing(self, stream):
        return self.rt.streamIsCapturing(stream) != 0

    def graph_launch(self, graph, stream):
        self.rt.graphLaunch(graph, stream)

    def graph_destroy(self, graph):
        self.rt.graphExecDestroy(graph)

    # virtual memory through cuda-bindings' driver API
    def _driver(self):
        try:
            from cuda.bindings import driver
        except ImportError:
            from cuda import cuda as driver  # older cuda-python
        return driver

    def _check_drv(self, result):
        err, *rest = result
        if int(err) != 0:
            if "OUT_OF_MEMORY" in str(err):
                raise DeviceOutOfMemory(0)
            raise RuntimeError(f"CUDA error: {err}")
        return rest[0] if len(rest) == 1 else rest

    def _prop(self, device):
        d = self._driver()
        prop = d.CUmemAllocationProp()
        prop.type = d.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
        prop.location.type = d.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
        prop.location.id = device
        return prop

    def granularity(self, device):
        d = self._driver()
        return int(self._check_drv(d.cuMemGetAllocationGranularity(
            self._prop(device), d.CUmemAllocationGranularity_flags.CU_MEM_ALLOC_GRANULARITY_MINIMUM)))

    def address_reserve(self, device, size):
        return int(self._check_drv(self._driver().cuMemAddressReserve(size, 0, 0, 0)))

    def address_free(self, ptr, size):
        self._check_drv(self._driver().cuMemAddressFree(ptr, size))

    def mem_create(self, device, size):
        try:
            h = self._check_drv(self._driver().cuMemCreate(size, self._prop(device), 0))
        except DeviceOutOfMemory:
            raise DeviceOutOfMemory(size) from None
        self._handle_device = getattr(self, "_handle_device", {})
        self._handle_device[int(h)] = (h, device)
        return int(h)

    def mem_map(self, ptr, size, handle):
        d = self._driver()
        h, device = self._handle_device[handle]
        self._check_drv(d.cuMemMap(ptr, size, 0, h, 0))
        access = d.CUmemAccessDesc()
        access.location.type = d.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
        access.location.id = device
        access.flags = d.CUmemAccess_flags.CU_MEM_ACCESS_FLAGS_PROT_READWRITE
        self._check_drv(d.cuMemSetAccess(ptr, size, [access], 1))

    def mem_unmap(self, ptr, size):
        self._check_drv(self._driver().cuMemUnmap(ptr, size))

    def mem_release(self, handle):
        h, _ = self._handle_device.pop(handle)
        self._check_drv(self._driver().cuMemRelease(h))


# ---------------------------------------------------------------------------------------------

def simulated():
    """Whether ``EMBER_CUDA_SIMULATE`` asks for the simulated device (read at first use)."""
    return os.environ.get("EMBER_CUDA_SIMULATE", "0") not in ("", "0")


def simulated_device_count():
    """The simulated devices ``EMBER_CUDA_SIMULATE`` asks for: N for ``=N``, else one."""
    value = os.environ.get("EMBER_CUDA_SIMULATE", "1")
    return int(value) if value.isdigit() and int(value) > 1 else 1


def is_built():
    """Whether a runtime can exist here: the simulation is asked for, or CuPy is installed."""
    if simulated():
        return True
    import importlib.util
    return importlib.util.find_spec("cupy") is not None


_runtime = None


def get_runtime():
    """The process's runtime, or None when there is no CUDA (no simulation, no CuPy, no GPU)."""
    global _runtime
    if _runtime is None:
        if simulated():
            _runtime = SimulatedRuntime()
        else:
            try:
                import cupy
                if cupy.cuda.runtime.getDeviceCount() > 0:
                    _runtime = CupyRuntime()
            except Exception:  # no CuPy, no driver, or no device: no runtime
                return None
    return _runtime


def _set_runtime_for_tests(rt):
    """Install ``rt`` (e.g. a fresh SimulatedRuntime with a small capacity); returns the old one."""
    global _runtime
    old, _runtime = _runtime, rt
    return old
