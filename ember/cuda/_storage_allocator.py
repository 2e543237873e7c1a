"""The allocator object ember's storages call for device memory (``ember._core.storage``):
each request is a block from the current device's caching allocator, on the current stream."""
from . import _caching_allocator
from .streams import _state, current_stream_handle


class StorageAllocator:
    def allocate(self, nbytes):
        idx = _state.device
        return _caching_allocator.allocate(nbytes, idx, current_stream_handle(idx))

    def allocate_for(self, nbytes, device):
        """``nbytes`` for a storage on ``device``: its own device's allocator (the current
        device's when it names no index), on that device's current stream."""
        idx = _state.device if device.index is None else device.index
        return _caching_allocator.allocate(nbytes, idx, current_stream_handle(idx))

    def copy_bytes(self, dst, src, nbytes):
        """Device-to-device copy of ``nbytes`` between two of this allocator's blocks (a storage
        that grows, ``resize_``), on the current stream."""
        from . import _lazy_init
        if nbytes:
            _lazy_init().memcpy_dtod(dst.data_ptr(), src.data_ptr(), nbytes,
                                     current_stream_handle(_state.device))
