"""``torch.xpu`` as in a PyTorch build without XPU support: no device is available, device
queries report none, and the calls that need a device raise PyTorch's error. Seeding is
accepted (PyTorch queues it for a device that may appear)."""

__all__ = ["current_device", "device_count", "empty_cache", "get_device_name", "init",
           "initial_seed", "is_available", "is_bf16_supported", "is_initialized", "manual_seed",
           "manual_seed_all", "memory_allocated", "seed", "seed_all", "set_device",
           "synchronize"]


def _no_xpu(*args, **kwargs):
    raise AssertionError("Torch not compiled with XPU enabled")


def is_available():
    return False


def device_count():
    return 0


def is_initialized():
    return False


def is_bf16_supported(including_emulation=True):
    return False


def manual_seed(seed):
    pass


manual_seed_all = manual_seed


def seed():
    pass


seed_all = seed


def empty_cache():
    pass


def memory_allocated(device=None):
    return 0


init = synchronize = current_device = set_device = get_device_name = initial_seed = _no_xpu
