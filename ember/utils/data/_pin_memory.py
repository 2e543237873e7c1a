"""``DataLoader(pin_memory=True)``: each batch's tensors copied into pinned memory, so that
``batch.to("cuda", non_blocking=True)`` can overlap the copy with compute (PyTorch's
``torch.utils.data._utils.pin_memory.pin_memory``). Nested structures keep their types."""
import collections.abc
import copy

from ..._tensor import Tensor


def pin_memory(data, device=None):
    """``data`` with every tensor (or object with a ``pin_memory`` method) pinned."""
    if isinstance(data, Tensor):
        return data.pin_memory()
    if hasattr(data, "pin_memory"):
        return data.pin_memory()
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, collections.abc.Mapping):
        try:
            if isinstance(data, collections.abc.MutableMapping):
                # a mapping type may carry extra state: update a shallow copy of it
                clone = copy.copy(data)
                clone.update({k: pin_memory(v, device) for k, v in data.items()})
                return clone
            return type(data)({k: pin_memory(v, device) for k, v in data.items()})
        except TypeError:  # no copy()/update() or no constructor from a dict
            return {k: pin_memory(v, device) for k, v in data.items()}
    if isinstance(data, tuple):
        if hasattr(data, "_fields"):  # namedtuple
            return type(data)(*(pin_memory(v, device) for v in data))
        return type(data)(pin_memory(v, device) for v in data)
    if isinstance(data, collections.abc.Sequence):
        try:
            if isinstance(data, collections.abc.MutableSequence):
                clone = copy.copy(data)
                for i, v in enumerate(data):
                    clone[i] = pin_memory(v, device)
                return clone
            return type(data)([pin_memory(v, device) for v in data])
        except TypeError:  # e.g. range
            return [pin_memory(v, device) for v in data]
    return data
