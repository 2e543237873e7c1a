"""Composite kernels of advanced indexing writes: ``index_put_`` runs ``_index_put_impl_`` (the
backend kernel), ``index_put`` does the same on a clone."""
from ..._dispatch.keys import DEVICE_TO_BACKEND, bit
from ..._ops.overload import ops


def index_put_(self, indices, values, accumulate=False):
    # Called below ADInplaceOrView (which already bumped self's version): go straight to the
    # backend kernel, as PyTorch's guard does, so the write counts once.
    ks = bit(DEVICE_TO_BACKEND[self._device.type])
    return ops.aten._index_put_impl_.default._entry.redispatch(ks, self, indices, values,
                                                               accumulate, False)


def index_put(self, indices, values, accumulate=False):
    copy = ops.aten.clone.default._call(self, None)
    return ops.aten.index_put_.default._call(copy, indices, values, accumulate)
