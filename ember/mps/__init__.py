"""``torch.mps`` as in a PyTorch build without the Metal backend: no device, and the calls
that need one raise PyTorch's errors (``ember.backends.mps.is_available()`` is False too)."""

__all__ = ["current_allocated_memory", "device_count", "driver_allocated_memory", "empty_cache",
           "get_rng_state", "is_available", "manual_seed", "seed", "set_rng_state",
           "synchronize"]


def _no_backend(call):
    def fn(*args, **kwargs):
        raise RuntimeError(f"Cannot execute {call}() without MPS backend.")
    return fn


def is_available():
    return False


def device_count():
    return 0


def manual_seed(seed):
    pass


seed = get_rng_state = set_rng_state = _no_backend("getDefaultGenerator")
synchronize = _no_backend("deviceSynchronize")
empty_cache = _no_backend("emptyCache")
current_allocated_memory = _no_backend("getCurrentAllocatedMemory")
driver_allocated_memory = _no_backend("getDriverAllocatedMemory")
