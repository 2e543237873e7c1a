"""PyTorch's ``torch.distributed`` exceptions: ``DistError`` (a ``RuntimeError``) and the kinds
below it, raised by the communication engine (``DistBackendError``), the stores' connections
(``DistNetworkError``), the stores themselves (``DistStoreError``) and an empty store queue
(``QueueEmptyError``)."""

__all__ = ["DistError", "DistBackendError", "DistNetworkError", "DistStoreError",
           "QueueEmptyError"]


class DistError(RuntimeError):
    """An error of ``torch.distributed``: the base of the kinds below."""


class DistBackendError(DistError):
    """An error of the communication backend (a collective that timed out, a lost peer)."""


class DistNetworkError(DistError):
    """A network error: a store's connection that could not be made or was lost."""


class DistStoreError(DistError):
    """A store error: a key that did not appear within the timeout."""


class QueueEmptyError(DistStoreError):
    """``queue_pop(key, block=False)`` on an empty queue."""


for _cls in (DistError, DistBackendError, DistNetworkError, DistStoreError, QueueEmptyError):
    _cls.__module__ = "ember.distributed"  # where PyTorch's live
del _cls
