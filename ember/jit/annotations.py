"""``torch.jit.annotations``: the typing names TorchScript signatures use, and the predicates that
read them. ``BroadcastingList2[int]`` annotates an argument given as an int or a list of two
(``nn.functional``'s ``kernel_size``); in Python, subscripting it gives None, as in PyTorch.
TorchScript's own type objects (``TensorType``, ``IntType`` ...) live in ``ember._jit_types``."""
import types
import typing
from typing import Any, Dict, List, Optional, Tuple, Union, get_args, get_origin

from .._jit_internal import BroadcastingList1, BroadcastingList2, BroadcastingList3
from ..futures import Future

__all__ = ["Any", "List", "BroadcastingList1", "BroadcastingList2", "BroadcastingList3", "Tuple",
           "is_tuple", "is_list", "Dict", "is_dict", "is_optional", "is_union", "Optional",
           "Union", "Future"]


def _missing_parameter(target_type):
    if target_type.endswith("ict"):
        raise RuntimeError(f"Attempted to use {target_type} without contained types. Please add "
                           f"contained type, e.g. {target_type}[int, int]")
    raise RuntimeError(f"Attempted to use {target_type} without a contained type. Please add a "
                       f"contained type, e.g. {target_type}[int]")


def _is_container(ann, origin, bare, name):
    if ann is bare:
        _missing_parameter(name)
    return getattr(ann, "__module__", None) in ("builtins", "typing") and get_origin(ann) is origin


def is_tuple(ann):
    return _is_container(ann, tuple, typing.Tuple, "Tuple")


def is_list(ann):
    return _is_container(ann, list, typing.List, "List")


def is_dict(ann):
    return _is_container(ann, dict, typing.Dict, "Dict")


def is_union(ann):
    if ann is Union:
        _missing_parameter("Union")
    return isinstance(ann, types.UnionType) or (
        getattr(ann, "__module__", None) == "typing" and get_origin(ann) is Union)


def is_optional(ann):
    if ann is Optional:
        _missing_parameter("Optional")
    args = get_args(ann)
    return is_union(ann) and len(args) == 2 and type(None) in args
