"""The run-time assertion ops (``torch._assert_async``, ``_assert_scalar``,
``_assert_tensor_metadata``) and the value-range constraints of export
(``torch.sym_constrain_range``, ``sym_constrain_range_for_size``), as ATen's eager kernels:
each checks its condition now and returns nothing. Compiled graphs keep them as nodes."""
from ..._ops.overload import ops

_aten = ops.aten
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


def _is_nonzero(self):
    return _aten.is_nonzero.default._call(self)


def _assert_async(self):
    if not _is_nonzero(self):
        raise RuntimeError("Expected Tensor with single nonzero value, but got zero")


def _assert_async_msg(self, assert_msg):
    if not _is_nonzero(self):
        raise RuntimeError(assert_msg if assert_msg else "Assertion is failed")


def _assert_scalar(self, assert_msg):
    if not self:
        raise RuntimeError(assert_msg)


def _fmt(seq):
    return "[" + ", ".join(str(int(s)) for s in seq) + "]"


def _assert_tensor_metadata(a, size=None, stride=None, dtype=None, device=None, layout=None):
    if size is not None and tuple(size) != tuple(a.shape):
        raise RuntimeError(f"Tensor sizes mismatch! Expected: {_fmt(size)}, Got: "
                           f"{_fmt(a.shape)}")
    if stride is not None and tuple(stride) != tuple(a.stride()):
        raise RuntimeError(f"Tensor strides mismatch! Expected: {_fmt(stride)}, Got: "
                           f"{_fmt(a.stride())}")
    if dtype is not None and dtype is not a.dtype:
        # (the tensor's dtype is printed as its caffe2 TypeMeta: "float", not "Float")
        raise RuntimeError(f"Tensor dtype mismatch! Expected: {dtype._short}, Got: "
                           f"{a.dtype._cpp}")
    if layout is not None and layout is not a.layout:
        raise RuntimeError(f"Tensor layout mismatch! Expected: {_layout_name(layout)}, Got: "
                           f"{_layout_name(a.layout)}")
    if device is not None and device != a.device:
        raise RuntimeError(f"Tensor device mismatch! Expected: {device}, Got: {a.device}")


def _layout_name(layout):
    """c10's Layout names (Strided, Sparse, SparseCsr ...)."""
    return {"strided": "Strided", "sparse_coo": "Sparse", "sparse_csr": "SparseCsr",
            "sparse_csc": "SparseCsc", "sparse_bsr": "SparseBsr", "sparse_bsc": "SparseBsc",
            "jagged": "Jagged"}.get(layout._name, layout._name)


def sym_constrain_range(size, min=None, max=None):
    lo = _INT64_MIN if min is None else min
    hi = _INT64_MAX if max is None else max
    value = int(size)
    if hi < lo:
        raise RuntimeError(f"Max must be greater than or equal to min. Got min={lo} max={hi}")
    if not lo <= value <= hi:
        raise RuntimeError(f"Invalid value range for {value} between [{lo}, {hi}].")


def sym_constrain_range_for_size(size, min=None, max=None):
    if max is not None and max <= 2:
        raise RuntimeError(f"Max value to constrain_range_for_size must be greater than 2. "
                           f"got: {max}")
    sym_constrain_range(size, 0 if min is None else min, max)
