"""Decompositions added for issue 18, written in ember ops: addr (beta * self + alpha *
outer(vec1, vec2)), the functional fill, resolve_neg and sum_to_size."""
from ..._ops.overload import ops

_aten = ops.aten


def addr(self, vec1, vec2, beta=1, alpha=1):
    for name, v in (("vec1", vec1), ("vec2", vec2)):
        if v.dim() != 1:
            raise RuntimeError(f"addr: Expected 1-D argument {name}, but got {v.dim()}-D")
    outer = _aten.outer.default._call(vec1, vec2)
    if not (alpha == 1 and alpha.__class__ is int):
        outer = _aten.mul.Tensor._call(outer, alpha)
    if beta == 0:  # self is ignored (NaN and inf in it do not propagate), but still broadcast
        scaled = _aten.mul.Tensor._call(_aten.zeros_like.default._call(
            self, None, None, None, None, None), 0)
    elif beta == 1 and beta.__class__ is int:
        scaled = self
    else:
        scaled = _aten.mul.Tensor._call(self, beta)
    return _aten.add.Tensor._call(scaled, outer, 1)


def fill_Scalar(self, value):
    return _aten.fill_.Scalar._call(_aten.clone.default._call(self, None), value)


def fill_Tensor(self, value):
    return _aten.fill_.Tensor._call(_aten.clone.default._call(self, None), value)


def resolve_neg(self):
    # ember has no negative bit: every tensor is already resolved (PyTorch returns self then)
    return self


def sum_to_size(self, size):
    size = tuple(size)
    shape = tuple(self._size)
    lead = len(shape) - len(size)
    ok = lead >= 0 and all(s == 1 or s == t for s, t in zip(size, shape[lead:]))
    if not ok:
        raise RuntimeError(f"size {{[{', '.join(map(str, size))}]}} is not expandable to size "
                           f"{{[{', '.join(map(str, shape))}]}}.")
    from ...autograd.engine import sum_to
    return sum_to(self, size)


__all__ = ["addr", "fill_Scalar", "fill_Tensor", "resolve_neg", "sum_to_size"]
