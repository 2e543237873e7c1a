"""``ember.cuda``: the CUDA device module. For now: availability, ``amp``, and the calls
programs make at their top whether or not a GPU is there (seeding is queued until CUDA
initializes, as PyTorch queues it; a call that needs a device says there is none)."""
from . import amp  # noqa: F401

_initialized = False
# Seeding requested before CUDA initializes, as (what, seed or None): the device runtime applies
# the latest of each kind when it starts, as PyTorch's queued lazy calls do.
_queued_seeds = {}


def is_available():
    """True when CuPy is installed and sees a GPU."""
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # no CuPy, no driver, or no device: all mean "not available"
        return False


def device_count():
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount()
    except Exception:  # noqa: BLE001  (as is_available)
        return 0


def is_initialized():
    return _initialized


def _lazy_init():
    """Errors as PyTorch's: no CUDA support at all, or CUDA without a device. ember's device
    runtime lands with the CUDA issue; until then an initialization that could proceed says so."""
    try:
        import cupy  # noqa: F401
    except ImportError:
        raise AssertionError("Torch not compiled with CUDA enabled") from None
    if device_count() == 0:
        raise RuntimeError("No CUDA GPUs are available")
    raise NotImplementedError("ember: the CUDA device runtime is not built yet")


def manual_seed(seed):
    """Seed the current GPU's generator: queued until CUDA initializes, silent without CUDA."""
    _queued_seeds["current"] = int(seed)


def manual_seed_all(seed):
    _queued_seeds["all"] = int(seed)


def seed():
    """Seed the current GPU's generator from a random number (queued, as manual_seed)."""
    _queued_seeds["current"] = None


def seed_all():
    _queued_seeds["all"] = None


def initial_seed():
    _lazy_init()


def get_rng_state(device="cuda"):
    _lazy_init()


def set_rng_state(new_state, device="cuda"):
    _queued_seeds["state"] = new_state


def get_rng_state_all():
    return [get_rng_state(i) for i in range(device_count())]


def set_rng_state_all(new_states):
    for i, state in enumerate(new_states):
        set_rng_state(state, i)


def current_device():
    _lazy_init()


def synchronize(device=None):
    _lazy_init()


def empty_cache():
    """Nothing is cached before CUDA initializes."""


def memory_allocated(device=None):
    """Nothing is allocated before CUDA initializes."""
    return 0
