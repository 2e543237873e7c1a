"""Meta kernels of the foreach ops: the in-place ones return nothing, the functional ones a list
of results shaped like their inputs (their single-tensor op's dtype rule)."""
from ..cpu.foreach import _check_lengths

__all__ = ["meta_foreach_inplace", "meta_foreach_sqrt", "meta_foreach_neg",
           "meta_foreach_add_List"]


def meta_foreach_inplace(self, *args):
    _check_lengths(self, *(a for a in args if isinstance(a, (list, tuple))))
    return None


def meta_foreach_sqrt(self):
    # Each result follows its single op's Meta rule (sqrt of an integral tensor is floating).
    from ..._ops.overload import ops
    _check_lengths(self)
    return tuple(ops.aten.sqrt.default._call(t) for t in self)


def meta_foreach_neg(self):
    from ..._ops.overload import ops
    _check_lengths(self)
    return tuple(ops.aten.neg.default._call(t) for t in self)


def meta_foreach_add_List(self, other, alpha=1):
    from ..._ops.overload import ops
    _check_lengths(self, other)
    return tuple(ops.aten.add.Tensor._call(t, o, alpha) for t, o in zip(self, other))
