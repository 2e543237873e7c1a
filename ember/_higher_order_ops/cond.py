"""``ember.cond(pred, true_fn, false_fn, operands)``: data-dependent control flow that a
compiled graph can keep. Eagerly it runs one branch; captured by ``ember.compile`` both branches
become subgraphs of one graph (``ember._dynamo`` traces them), so a tensor predicate is not a
graph break. Both branches take ``operands`` and must return tensors of the same metadata."""
__all__ = ["cond"]


def cond(pred, true_fn, false_fn, operands=()):
    from .._tensor import Tensor
    if isinstance(pred, Tensor):
        if pred.numel() != 1:
            raise RuntimeError(f"Expected pred to be bool or single-element tensor, but got "
                               f"{pred}.")
        pred = bool(pred)
    elif not isinstance(pred, bool):
        raise RuntimeError(f"Expected pred to be bool or tensor, but got {pred}.")
    if not callable(true_fn) or not callable(false_fn):
        raise RuntimeError("Expect both branches to be callable.")
    if not isinstance(operands, (tuple, list)) or not all(isinstance(o, Tensor)
                                                         for o in operands):
        raise RuntimeError(f"Expect operands to be a tuple of possibly nested dict/list/tuple "
                           f"that only consists of tensor leaves, but got {operands}.")
    return true_fn(*operands) if pred else false_fn(*operands)
