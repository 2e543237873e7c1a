"""``torch.mtia`` as in a PyTorch build without MTIA support: no device is available, and the
calls that need one raise PyTorch's errors. Seeding is accepted, as there."""

__all__ = ["current_device", "device_count", "empty_cache", "init", "is_available",
           "is_initialized", "manual_seed", "manual_seed_all", "synchronize"]


def _no_backend(call):
    def fn(*args, **kwargs):
        raise RuntimeError(f"Cannot execute {call}() without MTIA backend.")
    return fn


def is_available():
    return False


def device_count():
    return 0


def is_initialized():
    return False


def init():
    raise AssertionError("Torch not compiled with MTIA enabled. Ensure you have `import "
                         "mtia.host_runtime.torch_mtia.dynamic_library` in your python src file "
                         "and include `//mtia/host_runtime/torch_mtia:torch_mtia` as your target "
                         "dependency!")


def manual_seed(seed):
    pass


manual_seed_all = manual_seed
synchronize = current_device = _no_backend("getCurrentDevice")
empty_cache = _no_backend("emptyCache")
