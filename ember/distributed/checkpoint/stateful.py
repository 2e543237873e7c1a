"""The ``Stateful`` protocol: ``save`` checkpoints an object's ``state_dict()`` and ``load``
restores it through ``load_state_dict`` (PyTorch's ``torch.distributed.checkpoint.stateful``)."""
from typing import Any, Protocol, TypeVar, runtime_checkable

__all__ = ["Stateful", "StatefulT"]


@runtime_checkable
class Stateful(Protocol):
    """Stateful protocol for objects that can be checkpointed and restored."""

    def state_dict(self) -> dict[str, Any]:
        """The state to checkpoint (also called by ``load``, which loads into it in place)."""
        ...

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the object's state from ``state_dict``."""
        ...


StatefulT = TypeVar("StatefulT", bound=Stateful)
