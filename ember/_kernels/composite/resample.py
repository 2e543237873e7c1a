"""CompositeImplicitAutograd resampling front ends: the ``.vec`` overloads of the upsample ops
(output size from ``scale_factors``, as ATen's upsample_compute_output_size), ``pad`` (picks the
padding op by mode and padded rank) and ``_pad_circular`` (a gather with wrapped indices)."""
import math

import numpy as np

from ..rules import resample as _r
from ..._ops.overload import ops
from ..registration import register
from ..._core.tensor_impl import wrap_array

_aten = ops.aten  # ops resolve when called: the op table is built after the kernels load


def _compute_output_size(input_size, output_size, scale_factors):
    k = len(input_size) - 2
    if output_size is not None:
        if scale_factors is not None:
            raise RuntimeError("Must specify exactly one of output_size and scale_factors")
        return list(output_size)
    if scale_factors is None:
        raise RuntimeError("Must specify exactly one of output_size and scale_factors")
    if len(scale_factors) != k:
        raise RuntimeError(f"It is expected scale_factors equals to {k}, but got size "
                           f"{len(scale_factors)}")
    return [int(math.floor(float(n) * s)) for n, s in zip(input_size[2:], scale_factors)]


def _vec(aten_name, name):
    """The .vec overload of upsample op ``aten_name`` (``name`` in cpu/resample.py's tables):
    output size and per-axis scales, then the default overload."""
    k, mode = _r._MODES[name]
    with_align = mode in _r._FLOAT_ONLY

    def kernel(input, output_size, *args):
        align, scale_factors = (args[0], args[1]) if with_align else (None, args[0])
        if len(input._size) != k + 2:
            raise RuntimeError(f"It is expected input_size equals to {k + 2}, but got size "
                               f"{len(input._size)}")
        out = _compute_output_size(input._size, output_size, scale_factors)
        scales = list(scale_factors) if scale_factors is not None else [None] * k
        op = getattr(_aten, aten_name).default
        return op._call(input, out, align, *scales) if with_align else \
            op._call(input, out, *scales)
    kernel.__name__ = aten_name + "_vec"
    return kernel


for _op, _n in _r.UPSAMPLE_OPS.items():
    register(_op + ".vec", "CompositeImplicitAutograd", _vec(_op, _n))

_MODES = {"constant", "reflect", "replicate", "circular"}


def pad(self, pad, mode="constant", value=None):
    aten = _aten
    if mode not in _MODES:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if mode == "constant":
        return aten.constant_pad_nd.default._call(self, pad, 0 if value is None else value)
    if value is not None and value != 0:
        raise RuntimeError(f"Padding mode \"{mode}\" doesn't take in value argument")
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    dim = len(self._size)
    if len(pad) // 2 > dim:
        raise RuntimeError(f"Padding length should be less than or equal to two times the input "
                           f"dimension but got padding length {len(pad)} and input of dimension "
                           f"{dim}")
    if mode == "circular":
        return aten._pad_circular.default._call(self, pad)
    k = len(pad) // 2
    if k > 3 or dim not in (k + 1, k + 2):
        raise NotImplementedError("Only 2D, 3D, 4D, 5D padding with non-constant padding are "
                                  "supported for now")
    op = {"reflect": "reflection_pad", "replicate": "replication_pad"}[mode] + f"{k}d"
    return getattr(aten, op).default._call(self, list(pad))


def pad_circular_(self, pad):
    """Circular padding: each padded dim gathers its positions modulo the (cropped) length."""
    aten = _aten
    k = len(pad) // 2
    dim = len(self._size)
    if len(pad) % 2 or dim - k not in (1, 2):
        raise RuntimeError(f"Invalid padding size, expected 1 or 2 non-padded dimensions, which "
                           f"would be equivalent to padding of length {(dim - 1) * 2} or "
                           f"{(dim - 2) * 2} respectively but got {len(pad)}")
    out = self
    for i in range(k):
        d = dim - 1 - i
        lo, hi = pad[2 * i], pad[2 * i + 1]
        n = self._size[d]
        if lo > n or hi > n:
            raise RuntimeError("Padding value causes wrapping around more than once.")
        if n + lo + hi < 0:
            raise RuntimeError("Negative padding value is resulting in an empty dimension.")
        # negative pads crop first; the wrap then runs over the cropped length (as ATen's copies)
        start, kept = max(-lo, 0), n + min(lo, 0) + min(hi, 0)
        idx = wrap_array(start + (np.arange(-lo, n + hi, dtype=np.int64) - start) % kept)
        if self._device != idx._device:
            idx = aten._to_copy.default._call(idx, None, None, self._device, None, False, None)
        out = aten.index.Tensor._call(out, [None] * d + [idx])
    return out
