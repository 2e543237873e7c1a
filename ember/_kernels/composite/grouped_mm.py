"""``_grouped_mm``'s CompositeExplicitAutograd kernel (ATen's ``_grouped_mm_fallback``): one
``mm`` per group into a slice of the result, or one ``bmm`` when both operands are 3-D.

``offs[i]`` ends group ``i`` of the jagged dim of the 2-D operand(s): mat_a's rows (2d x 3d),
mat_b's columns (3d x 2d) or the shared inner dim (2d x 2d, one output matrix per group). Each
group starts where the previous one ended and is cut as a Python slice, as ATen's ``slice``
cuts it: an end past the dim is clamped, an end before the start gives an empty group, and a
later group writes over an earlier one where they overlap. The checks and the result's layout
(its last dim padded to 16 bytes) are ``rules/linalg.check_grouped_mm``'s, which the Meta kernel
shares; the gradient is two more grouped products (``derivatives.yaml``)."""
from ..._ops.overload import ops
from ..rules.linalg import check_grouped_mm

_aten = ops.aten


def _slice(t, dim, start, end):
    return _aten.slice.Tensor._call(t, dim, start, end, 1)


def _grouped_mm(self, mat2, offs=None, bias=None, out_dtype=None):
    size, stride, dtype = check_grouped_mm(self, mat2, offs, bias, out_dtype)
    out = _aten.empty_strided.default._call(size, stride, dtype, None, self._device, None)
    if offs is None:
        return _aten.bmm.out._call(self, mat2, out)
    # ATen leaves the rows (or columns) after offs[-1] uninitialized; zeros are one valid
    # value of that, and keep the result and its gradients deterministic
    _aten.zero_.default._call(out)
    a_2d, b_2d = self.dim() == 2, mat2.dim() == 2
    start = 0
    for group, end in enumerate(offs.tolist()):
        if a_2d and b_2d:
            _aten.mm.out._call(_slice(self, 1, start, end), _slice(mat2, 0, start, end),
                               _aten.select.int._call(out, 0, group))
        elif a_2d:
            _aten.mm.out._call(_slice(self, 0, start, end),
                               _aten.select.int._call(mat2, 0, group), _slice(out, 0, start, end))
        else:
            _aten.mm.out._call(_aten.select.int._call(self, 0, group),
                               _slice(mat2, 1, start, end), _slice(out, 1, start, end))
        start = end
    return out
