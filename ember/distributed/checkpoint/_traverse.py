"""Walking nested state dicts, and flattening them to PyTorch's dotted keys (PyTorch's
``_traverse`` and ``_nested_dict``): ``{"optim": {"state": {"w": {"exp_avg": t}}}}`` saves ``t``
under ``"optim.state.w.exp_avg"``, and the mapping back to the path ``("optim", "state", "w",
"exp_avg")`` is stored as the planner data so a load can put values back where they belong.

Mappings are always walked; a list is walked only when it holds a tensor or a walkable
container (else it, like a tuple or any other object, is one saved value).
"""
from collections.abc import Mapping

from ..._tensor import Tensor

__all__ = ["traverse_state_dict", "set_element", "get_element", "flatten_state_dict",
           "unflatten_state_dict"]


def _keep_visiting_tensors(value):
    return isinstance(value, Tensor)


def traverse_state_dict(state_dict, visitor, keep_traversing=_keep_visiting_tensors):
    """Call ``visitor(path, value)`` for each leaf of ``state_dict``."""

    def is_terminal(value):
        if isinstance(value, Mapping):
            return False
        if not isinstance(value, list):
            return True
        for entry in value:
            if isinstance(entry, (Mapping, list)) and not is_terminal(entry):
                return False
            if keep_traversing is not None and keep_traversing(entry):
                return False
        return True

    def traverse(path, value):
        if isinstance(value, Mapping):
            for k, v in value.items():
                traverse(path + (str(k),), v)
        elif is_terminal(value):
            visitor(path, value)
        elif isinstance(value, (list, tuple)):
            for i, v in enumerate(value):
                traverse(path + (i,), v)

    for key, value in state_dict.items():
        traverse((str(key),), value)


def set_element(root_dict, path, value):
    """Set ``value`` in ``root_dict`` along ``path``, creating dicts (str keys) and lists (int
    keys) on the way."""
    container = root_dict

    def extend_list(lst, idx):
        while len(lst) <= idx:
            lst.append(None)

    for i in range(1, len(path)):
        prev_key, key = path[i - 1], path[i]
        default = {} if type(key) is str else []
        if isinstance(container, Mapping):
            container = container.setdefault(prev_key, default)
        else:
            extend_list(container, prev_key)
            if container[prev_key] is None:
                container[prev_key] = default
            container = container[prev_key]
    key = path[-1]
    if type(key) is int:
        extend_list(container, key)
    container[key] = value


def get_element(root_dict, path, default_value=None):
    """The value at ``path`` in ``root_dict``, or ``default_value`` if there is none."""
    value = root_dict
    for part in path:
        if type(part) is int:
            if not isinstance(value, list) or len(value) < part:
                return default_value
        elif not isinstance(value, Mapping) or part not in value:
            return default_value
        value = value[part]
    return value


def flatten_state_dict(state_dict):
    """``(flat state dict, {flat key: path})``: the leaves keyed by their dotted paths."""
    flattened, mappings = {}, {}

    def flat_copy(path, value):
        new_fqn = ".".join(map(str, path))
        if new_fqn in flattened:
            raise ValueError(f"duplicated flatten key {new_fqn}")
        flattened[new_fqn] = value
        mappings[new_fqn] = path

    traverse_state_dict(state_dict, flat_copy)
    return flattened, mappings


def unflatten_state_dict(state_dict, mapping):
    """The nested state dict that ``flatten_state_dict`` flattened into ``state_dict``."""
    nested = {}
    for key, value in state_dict.items():
        set_element(nested, mapping[key], value)
    return nested
