"""``ember.cpu``: the CPU device module (PyTorch's ``torch.cpu``): its ``amp`` submodule, and the
statistics of ember's caching allocator for large CPU blocks (``ember/_core/allocator.py``;
PyTorch's CPU allocator has none, so these follow ``torch.cuda.memory_stats`` and friends)."""
from . import amp  # noqa: F401
from .._core.allocator import cpu_cache as _cache


def is_available():
    """The CPU is always available."""
    return True


def memory_stats():
    """The caching allocator's counters, named as in ``torch.cuda.memory_stats`` where one
    exists: ``allocated_bytes.all.current`` (cached blocks in use), ``reserved_bytes.all.current``
    and ``.peak`` (held by the cache), ``num_alloc_requests`` / ``num_cache_hits`` (large
    requests, and those served from the cache)."""
    return _cache.memory_stats()


def memory_allocated():
    """Bytes of cached (large) blocks in use by tensors now."""
    return _cache.allocated_bytes()


def memory_reserved():
    """Bytes held by the caching allocator, in use or free."""
    return _cache.reserved_bytes


def max_memory_reserved():
    return _cache.peak_reserved_bytes


def reset_peak_memory_stats():
    _cache.reset_peak_stats()


def empty_cache():
    """Give the cached blocks that no tensor uses back to the system."""
    _cache.empty_cache()


def _is_vnni_supported():
    """Whether the CPU has AVX512-VNNI (PyTorch checks only that one, not AVX-VNNI)."""
    from ..backends.cpu import _cpu_flags
    return "avx512_vnni" in _cpu_flags()
