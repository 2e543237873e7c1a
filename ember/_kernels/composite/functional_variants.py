"""The functional forms of ``copy_`` and ``zero_`` (``aten::copy``, ``aten::zero``): what the
Functionalize key turns those mutations into, so functionalized graphs name them as PyTorch's do."""
from ..._ops.overload import ops

_aten = ops.aten


def copy(self, src, non_blocking=False):
    # a fresh tensor laid out like ``self`` (clone keeps its strides), holding ``src`` broadcast
    # and converted to it: what ``self.copy_(src)`` would leave in ``self``
    out = _aten.clone.default._call(self, None)
    return _aten.copy_.default._call(out, src, non_blocking)


def zero(self):
    return _aten.zero_.default._call(_aten.clone.default._call(self, None))
