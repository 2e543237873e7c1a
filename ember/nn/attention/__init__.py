"""``ember.nn.attention``: choose which backends ``nn.functional.scaled_dot_product_attention``
may use (``sdpa_kernel``, ``SDPBackend``), as ``torch.nn.attention``."""
import contextlib

from ...backends._context import ctx as _ctx
from ...backends._sdp import SDPAParams, SDPBackend  # noqa: F401
from ...backends.cuda import can_use_efficient_attention, can_use_flash_attention

__all__ = ["SDPBackend", "sdpa_kernel", "WARN_FOR_UNFUSED_KERNELS"]

# If True, scaled_dot_product_attention warns every reason the fused kernels were not used.
WARN_FOR_UNFUSED_KERNELS = False


def _raise_kernel_warnings(params):
    from warnings import warn
    if WARN_FOR_UNFUSED_KERNELS:
        if not can_use_efficient_attention(params):
            warn("Efficient attention can't be used because:", stacklevel=2)
            can_use_efficient_attention(params, True)
        if not can_use_flash_attention(params):
            warn("Flash attention can't be used because:", stacklevel=2)
            can_use_flash_attention(params, True)


_backend_names = {"cudnn": "CUDNN_ATTENTION", "flash": "FLASH_ATTENTION",
                  "mem_efficient": "EFFICIENT_ATTENTION", "math": "MATH",
                  "overrideable": "OVERRIDEABLE"}


def _cur_sdpa_kernel_backends(with_priority=False):
    backends = [getattr(SDPBackend, val) for name, val in _backend_names.items()
                if _ctx.sdp[name]]
    if with_priority:
        backends = sorted(backends, key=lambda b: _ctx.sdp_priority.index(int(b)))
    return backends


def _sdpa_kernel(backends, set_priority=False):
    for name, val in _backend_names.items():
        _ctx.sdp[name] = getattr(SDPBackend, val) in backends
    if set_priority:
        user_priority = [int(b) for b in backends]
        for b in list(_ctx.sdp_priority):
            if b not in user_priority:
                user_priority.append(int(b))
        _ctx.sdp_priority = user_priority


@contextlib.contextmanager
def sdpa_kernel(backends, set_priority: bool = False):
    r"""Context manager that enables only ``backends`` (one ``SDPBackend`` or a list) for
    scaled dot product attention, restoring the previous set on exit. With ``set_priority``
    the list order is also the order kernels are tried in (CUDA; the CPU tries flash, then
    math, as PyTorch does)."""
    if not isinstance(backends, (list, SDPBackend)):
        raise AssertionError(f"Backend must be an instance of SDPBackend or a list of SDPBackend "
                             f"instances, got {type(backends).__name__}")
    if isinstance(backends, SDPBackend):
        backends = [backends]
    backends = list(dict.fromkeys(backends))
    previous_backends = _cur_sdpa_kernel_backends(with_priority=set_priority)
    try:
        _sdpa_kernel(backends, set_priority)
        yield {}
    finally:
        _sdpa_kernel(previous_backends, set_priority)


def _get_flash_version() -> str:
    return "2.5.7"
