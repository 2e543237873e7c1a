"""``ember.Size``: the tuple subclass that ``Tensor.shape`` returns."""
import math

from . import api_name
from .symint import SymInt, prod as _prod


class Size(tuple):
    __slots__ = ()

    def __new__(cls, seq=()):
        try:
            # symbolic sizes stay SymInts (int() would specialise them)
            return tuple.__new__(cls, [s if s.__class__ is SymInt else int(operator_index(s))
                                       for s in seq])
        except TypeError:
            i, bad = next((i, s) for i, s in enumerate(seq) if not _is_int(s))
            raise TypeError(f"torch.Size() takes an iterable of 'int' (item {i} is "
                            f"'{type(bad).__name__}')") from None

    def __repr__(self):
        return f"{api_name.name}.Size([{', '.join(map(str, self))}])"

    __str__ = __repr__

    def __getitem__(self, i):
        r = tuple.__getitem__(self, i)
        return Size(r) if isinstance(i, slice) else r

    def __add__(self, other):
        return Size(tuple.__add__(self, tuple(other)))

    def __radd__(self, other):
        return Size(tuple(other) + tuple(self))

    def __mul__(self, n):
        return Size(tuple.__mul__(self, n))

    __rmul__ = __mul__

    def numel(self):
        return math.prod(self) if not any(s.__class__ is SymInt for s in self) else \
            _prod(self)

    def __reduce__(self):
        return (Size, (tuple(self),))


def _is_int(s):
    try:
        operator_index(s)
        return True
    except TypeError:
        return False


def operator_index(s):
    import operator
    if hasattr(s, "_size") and hasattr(s, "item"):  # a 0-dim integer tensor
        return int(s.item())
    return operator.index(s)
