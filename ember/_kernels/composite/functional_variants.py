"""The functional forms of ``copy_``, ``zero_`` and the random in-place ops (``aten::copy``,
``aten::zero``, ``aten::uniform``, ``aten::normal_functional``, ...): what the Functionalize key
turns those mutations into, so functionalized graphs name them as PyTorch's do."""
from ..._ops.overload import ops

_aten = ops.aten


def copy(self, src, non_blocking=False):
    # a fresh tensor laid out like ``self`` (clone keeps its strides), holding ``src`` broadcast
    # and converted to it: what ``self.copy_(src)`` would leave in ``self``
    out = _aten.clone.default._call(self, None)
    return _aten.copy_.default._call(out, src, non_blocking)


def zero(self):
    return _aten.zero_.default._call(_aten.clone.default._call(self, None))


def _random_functional(inplace, overload):
    """A fresh copy of ``self`` filled by the in-place random op (PyTorch's generated kernel of
    the functional variant does the same): the same numbers for the same generator state."""
    def kernel(self, *args):
        op = getattr(getattr(_aten, inplace), overload)
        return op._call(_aten.clone.default._call(self, None), *args)
    kernel.__name__ = f"{inplace[:-1]}_functional"
    return kernel


uniform_functional = _random_functional("uniform_", "default")
normal_functional = _random_functional("normal_", "default")
random_from_functional = _random_functional("random_", "from")
random_to_functional = _random_functional("random_", "to")
random_functional = _random_functional("random_", "default")
exponential_functional = _random_functional("exponential_", "default")
geometric_functional = _random_functional("geometric_", "default")
cauchy_functional = _random_functional("cauchy_", "default")
log_normal_functional = _random_functional("log_normal_", "default")
