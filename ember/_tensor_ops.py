"""Python operators on Tensor (``+``, ``-``, ``@``, ``==``, ``+=`` ...), each mapped to the aten
overload PyTorch calls for it. A right-hand operand that is neither a Tensor nor a number makes
the operator return NotImplemented, so Python can try the other operand."""
import numbers

from ._ops.overload import ops
from ._tensor import Tensor

_FAST = {int, float, bool, complex}


def _ok(other):
    return other.__class__ in _FAST or isinstance(other, (Tensor, numbers.Number))


def _binary(overload, extra=()):
    call = overload._call

    def fn(self, other):
        if other.__class__ not in _FAST and not isinstance(other, (Tensor, numbers.Number)):
            return NotImplemented
        return call(self, other, *extra)
    return fn


def _reflected(overload, extra=()):
    call = overload._call

    def fn(self, other):
        if not _ok(other):
            return NotImplemented
        return call(other, self, *extra)
    return fn


# Python operator -> (aten packet name, overload, extra positional args, reflected?)
_TABLE = {
    "__add__": ("add", "Tensor", (1,), False),
    "__radd__": ("add", "Tensor", (1,), False),
    "__iadd__": ("add_", "Tensor", (1,), False),
}


def install():
    for dunder, (name, ov, extra, reflected) in _TABLE.items():
        packet = getattr(ops.aten, name, None)
        if packet is None or ov not in packet._overloads:
            continue
        overload = getattr(packet, ov)
        setattr(Tensor, dunder, (_reflected if reflected else _binary)(overload, extra))
