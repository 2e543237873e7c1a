"""``ember.cuda``: the CUDA device module, as PyTorch's ``torch.cuda``.

Device management (``device_count``, ``current_device``, ``set_device``, ``device``), properties,
``synchronize``, the per-device random generators, streams and events (``streams``), CUDA graphs
(``graphs``), memory (``memory``: the caching allocator's statistics and controls) and ``nvtx``.

The runtime starts lazily, at the first call that needs a device (``_lazy_init``), on the real
GPU (CuPy) or on the simulated one (``EMBER_CUDA_SIMULATE=1``; see ``_runtime``). Calls that
programs make at their top whether or not a GPU is there — seeding, ``is_available``,
``device_count`` — never start it; seeding is queued until it starts, as in PyTorch.
"""
import threading

from .._core.device import device as _device
from . import amp  # noqa: F401
from . import _runtime
from .streams import (Event, ExternalStream, Stream, StreamContext, current_stream,  # noqa: F401
                      default_stream, set_stream, stream)
from .streams import _state

__all__ = ["is_available", "device_count", "current_device", "set_device", "device", "device_of",
           "get_device_name", "get_device_properties", "get_device_capability", "synchronize",
           "is_initialized", "init", "manual_seed", "manual_seed_all", "seed", "seed_all",
           "initial_seed", "get_rng_state", "set_rng_state", "get_rng_state_all",
           "set_rng_state_all", "is_bf16_supported", "is_tf32_supported", "Stream",
           "ExternalStream", "Event", "StreamContext", "current_stream", "default_stream",
           "set_stream", "stream", "default_generators", "get_arch_list", "get_gencode_flags"]

_initialized = False
_init_lock = threading.Lock()
default_generators = ()
# Seeding requested before CUDA initializes, as (what, seed or None): the latest of each kind is
# applied when the runtime starts, as PyTorch's queued lazy calls do.
_queued_seeds = {}


def is_available():
    """True when a CUDA device can be used: the simulated one, or CuPy seeing a GPU."""
    return device_count() > 0


def device_count():
    """The number of devices (without starting the runtime, as PyTorch's)."""
    if _runtime._runtime is not None:
        return _runtime._runtime.device_count()
    if _runtime.simulated():
        return _runtime.simulated_device_count()
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount()
    except Exception:  # no CuPy, no driver, or no device: all mean "no devices"
        return 0


def is_initialized():
    return _initialized


def init():
    """Start the runtime now (it otherwise starts at first use)."""
    _lazy_init()


def _lazy_init():
    """The runtime, started on first use. Errors as PyTorch's: no CUDA support at all, or CUDA
    without a device."""
    global _initialized, default_generators, several_devices
    if _initialized:
        return _runtime._runtime
    with _init_lock:
        if _initialized:
            return _runtime._runtime
        if not _runtime.simulated():
            try:
                import cupy  # noqa: F401
            except ImportError:
                raise AssertionError("Torch not compiled with CUDA enabled") from None
        rt = _runtime.get_runtime()
        if rt is None or rt.device_count() == 0:
            raise RuntimeError("No CUDA GPUs are available")
        from ..random import Generator
        default_generators = tuple(Generator._for_device(_device("cuda", i))
                                   for i in range(rt.device_count()))
        several_devices = rt.device_count() > 1
        from .._core import storage as _storage
        from ._storage_allocator import StorageAllocator
        _storage.set_allocator("cuda", StorageAllocator())
        from ..autograd import graph as _autograd_graph
        _autograd_graph.CUDA_STREAMS[:] = [_state]  # nodes record their forward stream
        _initialized = True
        _apply_queued_seeds()
        return rt


# Whether the runtime has more than one device: then the CUDA kernels check that their tensors
# share one and run with it current (ember/_kernels/cuda/__init__.py); with one there is nothing
# to check.
several_devices = False


def _forget_runtime():
    """Back to "not initialized": the runtime, allocators, generators and streams are dropped
    (tests that start the simulated device for a while and then need a machine without CUDA).
    Tensors still holding device memory keep their allocator alive until they go."""
    global _initialized, default_generators, several_devices
    from . import _caching_allocator, _device_assert
    from .streams import _state as streams_state
    with _init_lock:
        _initialized = False
        several_devices = False
        default_generators = ()
        _caching_allocator._reset_for_tests()
        _device_assert.forget()
        _runtime._set_runtime_for_tests(None)
        streams_state.device = 0
        streams_state.streams.clear()
        graphs.graph.default_capture_stream = None
        from ..autograd import graph as _autograd_graph
        _autograd_graph.CUDA_STREAMS.clear()


def _get_device_index(device, optional=False, allow_cpu=False):
    """PyTorch's ``_get_device_index``: an int from an int, a device, a string or None (the
    current device when ``optional``)."""
    if isinstance(device, str):
        device = _device(device)
    if isinstance(device, _device):
        if allow_cpu and device.type == "cpu":
            return -1
        if device.type != "cuda":
            raise ValueError(f"Expected a cuda device, but got: {device}")
        device = device.index
    if device is None:
        if not optional:
            raise ValueError(f"Expected a torch.device with a specified index or an integer, "
                             f"but got:{device}")
        return _state.device
    if not isinstance(device, int):
        raise ValueError(f"Expected a torch.device with a specified index or an integer, but "
                         f"got:{device}")
    return device


def _check_index(idx):
    n = device_count()
    if not 0 <= idx < n:
        raise RuntimeError(f"CUDA error: invalid device ordinal\nCUDA kernel errors might be "
                           f"asynchronously reported at some other API call, so the stacktrace "
                           f"below might be incorrect.\nDevice index {idx} is out of range: "
                           f"{n} device(s) available")


def current_device():
    _lazy_init()
    return _state.device


def set_device(device):
    """Make ``device`` current for this thread (a negative index does nothing, as PyTorch)."""
    idx = _get_device_index(device)
    if idx >= 0:
        _lazy_init()
        _check_index(idx)
        _state.device = idx


class device:
    """``with ember.cuda.device(i):`` — ``i`` is the current device inside the block."""

    def __init__(self, device):
        self.idx = _get_device_index(device, optional=True)
        self.prev_idx = -1

    def __enter__(self):
        self.prev_idx = _state.device
        if self.idx != self.prev_idx and self.idx >= 0:
            _lazy_init()
            _check_index(self.idx)
            _state.device = self.idx

    def __exit__(self, *exc):
        _state.device = self.prev_idx
        return False


class device_of(device):
    """``with ember.cuda.device_of(t):`` — the device of tensor ``t`` (no-op for a CPU tensor)."""

    def __init__(self, obj):
        idx = obj.get_device() if obj.is_cuda else -1
        super().__init__(idx)


def get_device_properties(device=None):
    rt = _lazy_init()
    idx = _get_device_index(device, optional=True)
    if not 0 <= idx < rt.device_count():
        raise AssertionError("Invalid device id")
    return rt.get_device_properties(idx)


def get_device_name(device=None):
    return get_device_properties(device).name


def get_device_capability(device=None):
    p = get_device_properties(device)
    return p.major, p.minor


def get_arch_list():
    """The architectures ember's CUDA sources are compiled for (``sm_90``: H100/H200)."""
    return ["sm_90"] if is_available() else []


def get_gencode_flags():
    return " ".join(f"-gencode compute={a.replace('sm', 'compute')},code={a}"
                    for a in get_arch_list())


def is_bf16_supported(including_emulation=True):
    return is_available() and get_device_capability()[0] >= 8


def is_tf32_supported():
    return is_available() and get_device_capability()[0] >= 8


def synchronize(device=None):
    """Wait for all work on all streams of ``device`` (current by default)."""
    rt = _lazy_init()
    idx = _get_device_index(device, optional=True)
    _check_index(idx)
    rt.device_synchronize(idx)


# -- random number generation -----------------------------------------------------------------

def _apply_queued_seeds():
    for what in ("all", "current"):
        if what in _queued_seeds:
            s = _queued_seeds.pop(what)
            gens = default_generators if what == "all" else \
                (default_generators[_state.device],)
            for g in gens:
                g.seed() if s is None else g.manual_seed(s)
    if "state" in _queued_seeds:
        default_generators[_state.device].set_state(_queued_seeds.pop("state"))


def manual_seed(seed):
    """Seed the current GPU's generator: applied now if CUDA has started, else queued."""
    _queued_seeds["current"] = int(seed)
    if _initialized:
        _apply_queued_seeds()


def manual_seed_all(seed):
    _queued_seeds["all"] = int(seed)
    if _initialized:
        _apply_queued_seeds()


def seed():
    """Seed the current GPU's generator from a random number (queued, as manual_seed)."""
    _queued_seeds["current"] = None
    if _initialized:
        _apply_queued_seeds()


def seed_all():
    _queued_seeds["all"] = None
    if _initialized:
        _apply_queued_seeds()


def _generator(device):
    _lazy_init()
    idx = _get_device_index(device, optional=True)
    _check_index(idx)
    return default_generators[idx]


def initial_seed():
    return _generator(None).initial_seed()


def get_rng_state(device="cuda"):
    return _generator(device).get_state()


def set_rng_state(new_state, device="cuda"):
    if not _initialized:
        _queued_seeds["state"] = new_state
        return
    _generator(device).set_state(new_state)


def get_rng_state_all():
    return [get_rng_state(i) for i in range(device_count())]


def set_rng_state_all(new_states):
    for i, state in enumerate(new_states):
        set_rng_state(state, i)


# -- submodules ------------------------------------------------------------------------------
from . import memory, nvtx, graphs, tunable  # noqa: E402,F401
from .memory import *  # noqa: E402,F401,F403
from .graphs import (CUDAGraph, graph, graph_pool_handle,  # noqa: E402,F401
                     is_current_stream_capturing, make_graphed_callables)
from ._caching_allocator import OutOfMemoryError  # noqa: E402,F401
from ._host_allocator import (host_memory_stats, host_memory_stats_as_nested_dict,  # noqa: E402,F401
                              reset_accumulated_host_memory_stats, reset_peak_host_memory_stats)

__all__ += memory.__all__ + ["CUDAGraph", "graph", "graph_pool_handle",
                             "is_current_stream_capturing", "make_graphed_callables",
                             "OutOfMemoryError", "memory", "nvtx", "graphs", "amp",
                             "host_memory_stats", "host_memory_stats_as_nested_dict",
                             "reset_accumulated_host_memory_stats", "reset_peak_host_memory_stats"]

from .._legacy_tensor_types import types as _legacy_types  # noqa: E402
globals().update(_legacy_types("cuda", "torch.cuda"))  # torch.cuda.FloatTensor, ...
