"""``while_loop(cond_fn, body_fn, carried_inputs)``: PyTorch's structured loop, run eagerly
(``ember.compile`` traces through it, with a graph break at the data-dependent condition)."""
from ..utils import _pytree as pytree

__all__ = ["while_loop"]


def while_loop(cond_fn, body_fn, carried_inputs):
    """``body_fn`` applied to the carried values while ``cond_fn`` of them is true; returns the
    last carried values (``carried_inputs`` when the condition is false at once) as a tuple."""
    from .._tensor import Tensor
    if not callable(cond_fn) or not callable(body_fn):
        raise RuntimeError("Expect cond_fn and body_fn to be callable.")
    if not isinstance(carried_inputs, (tuple, list)) or not pytree.tree_all(
            lambda t: isinstance(t, (Tensor, int)), carried_inputs):
        raise RuntimeError(f"Expect carried_inputs to be a tuple of possibly nested "
                           f"dict/list/tuple that only consists of tensor or int leaves, but "
                           f"got {carried_inputs}.")
    carried = tuple(carried_inputs)
    while True:
        pred = cond_fn(*carried)
        if isinstance(pred, Tensor):
            if pred.numel() != 1 or pred.dtype.name != "bool":
                raise RuntimeError(f"cond_fn must return a boolean scalar tensor or a "
                                   f"boolean but got {pred}")
            pred = bool(pred)
        elif not isinstance(pred, bool):
            raise RuntimeError(f"cond_fn must return a boolean scalar tensor or a boolean but "
                               f"got {pred}")
        if not pred:
            return carried
        out = body_fn(*carried)
        carried = tuple(out) if isinstance(out, (tuple, list)) else (out,)
        if len(carried) != len(carried_inputs):
            raise RuntimeError(f"body_fn should return the same number of elements as "
                               f"carried_inputs, but got {len(carried)} and "
                               f"{len(carried_inputs)}")
