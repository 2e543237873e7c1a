"""Batching by a rule the user wrote: an ``autograd.Function``'s ``vmap`` staticmethod and a
custom op's ``ember.library.register_vmap`` function (PyTorch's
``custom_function_call_vmap_helper``).

The rule is called as ``rule(info, in_dims, *values, **kwargs)``: ``values`` are the arguments
with the tensors batched at the innermost level unwrapped, ``in_dims`` mirrors the arguments
(each tensor's batch dim or None; a list of dims for a list of tensors) and ``info`` carries the
layer's batch size and randomness. It returns ``(output, out_dims)``; each output is wrapped at
that level along its out dim, and an output that is one of the values it was given comes back
as the argument it was unwrapped from (PyTorch's wrap_outputs_maintaining_identity).
"""
from typing import NamedTuple

from ..utils._pytree import _broadcast_to_and_flatten, tree_flatten, tree_unflatten
from .batched_tensor import BatchedTensor, make_batched
from .batching import level_of
from .interpreter import find_vmap_layer, hidden


class VmapInfo(NamedTuple):
    """What a vmap rule gets as ``info``."""
    batch_size: int
    randomness: str


def _unwrap(a, level, originals):
    if a.__class__ is BatchedTensor and a._level == level:
        originals[id(a._value)] = a
        return a._value, a._bdim
    if a.__class__ in (list, tuple):
        pairs = [_unwrap(t, level, originals) for t in a]
        return a.__class__(v for v, _ in pairs), [d for _, d in pairs]
    if hasattr(a, "_size"):
        originals[id(a)] = a
    return a, None


def run_vmap_rule(rule, args, kwargs):
    """Call ``rule`` for ``args`` (some batched) and wrap what it returns; see the module
    docstring."""
    level = level_of(args)
    layer = find_vmap_layer(level)
    originals = {}  # id(tensor the rule gets) -> the argument it stands for
    values, in_dims = [], []
    for a in args:
        v, d = _unwrap(a, level, originals)
        values.append(v)
        in_dims.append(d)
    with hidden(layer):
        result = rule(VmapInfo(layer.batch_size, layer.randomness), tuple(in_dims), *values,
                      **kwargs)
    base = ("Expected the vmap staticmethod to have two returns, an output and out_dims with "
            "pytree structure compatible with the output. ")
    if not isinstance(result, tuple):
        raise RuntimeError(base + f"Got a {type(result)} instead")
    if len(result) != 2:
        raise RuntimeError(base + f"Got {len(result)} returns instead")
    out, out_dims = result
    flat, spec = tree_flatten(out)
    dims = _broadcast_to_and_flatten(out_dims, spec)
    if dims is None:
        raise RuntimeError(
            f"The autograd.Function's vmap staticmethod returned an incompatible (output, "
            f"out_dims) tuple. Expected out_dims={out_dims} to be compatible with the structure "
            f"of `output`. out_dims has structure {tree_flatten(out_dims)[1]} but output has "
            f"structure {spec}. For more details, please see "
            f"https://pytorch.org/docs/main/notes/extending.func.html")
    wrapped = []
    for o, d in zip(flat, dims):
        if not hasattr(o, "_size") or d is None:
            wrapped.append(o)
        elif id(o) in originals:
            wrapped.append(originals[id(o)])
        else:
            wrapped.append(make_batched(o, d % o.dim(), level))
    return tree_unflatten(wrapped, spec)
