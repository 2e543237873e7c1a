"""PyTorch's ``torch.fx.annotate``: give a traced value (a Proxy) a type, which its node then
prints in the generated code."""
from .proxy import Proxy

__all__ = ["annotate"]


def annotate(val, type):  # noqa: A002  (PyTorch's parameter name)
    """``val``, its node typed ``type`` when it is a Proxy; RuntimeError if it has a type."""
    if isinstance(val, Proxy):
        if val.node.type:
            raise RuntimeError(
                f"Tried to annotate a value that already had a type on it!"
                f" Existing type is {val.node.type} "
                f"and new type is {type}. "
                f"This could happen if you tried to annotate a function parameter "
                f"value (in which case you should use the type slot "
                f"on the function signature) or you called "
                f"annotate on the same value twice")
        val.node.type = type
    return val
