"""Fused CUDA kernels from the raw sources in ``csrc/``: softmax and log_softmax with their
backward ops, native_layer_norm and its backward, gelu and gelu_backward — one kernel where the
array-module bodies make several passes (softmax: max, subtract, exp, sum, divide).

Each source is ``csrc/common.cuh`` (block reductions) followed by the file, compiled once per
process by CuPy (NVRTC, for the device's architecture); CI compiles the same text for sm_90 with
NVRTC through cuda-bindings, without a GPU (``tests/test_cuda_sources.py``). The kernels take
float32 and float64 tensors in the layouts they index directly (contiguous, reducing over the last
dimension); other calls, and every call on the simulated device (which runs no CUDA C), decline
with ``NeedsHost`` and take the CUDA fallback — the CPU kernel body on device arrays on a GPU
(``shared.py``), on device memory in the simulation. Arguments are checked by the rules first, so
both paths raise the same errors.
"""
import math
import os

import numpy as np

from ..._core import dtype as D
from ..._core.tensor_impl import empty_tensor
from ..rules.nn import (activation_backward_shape, check_activation, check_floating,
                        check_softmax, check_softmax_backward, layer_norm_shapes)
from .arrays import NeedsHost, device_array, launch, runtime, to_tensor

CSRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "csrc")
SOURCES = ("softmax.cu", "layer_norm.cu", "gelu.cu")
_SUFFIX = {D.float32: "f32", D.float64: "f64"}
_modules = {}


def source(filename):
    """The text compiled for ``csrc/<filename>``: the shared header, then the file."""
    with open(os.path.join(CSRC, "common.cuh")) as f:
        common = f.read()
    with open(os.path.join(CSRC, filename)) as f:
        return f"{common}\n// ---- {filename}\n{f.read()}"


def _kernel(filename, name):
    mod = _modules.get(filename)
    if mod is None:
        import cupy
        mod = _modules[filename] = cupy.RawModule(code=source(filename),
                                                  options=("-std=c++17",))
    return mod.get_function(name)


def _fusable(*tensors):
    """The dtype suffix when every tensor (None allowed) is a contiguous CUDA tensor of one
    float32/float64 dtype and the device runs CUDA C; else decline."""
    ts = [t for t in tensors if t is not None]
    dt = ts[0]._dtype
    if dt not in _SUFFIX or runtime().simulated or any(
            t._dtype is not dt or t._device.type != "cuda" or not t.is_contiguous() or
            not t.numel() for t in ts):
        raise NeedsHost("no fused kernel for this layout, dtype or device")
    return _SUFFIX[dt]


def _threads(n):
    """Threads per row-block: about eight elements each, a whole number of warps."""
    return min(1024, 32 * max(1, math.ceil(n / 256)))


def _null_or(t, rt):
    return device_array(t, rt) if t is not None else np.uint64(0)


# ---------------------------------------------------------------------------------------------
# softmax / log_softmax

def _softmax_forward(self, dim, half_to_float, log):
    d = check_softmax(self, dim, half_to_float, "log_softmax" if log else "softmax")
    sfx = _fusable(self)
    if d != self.dim() - 1:
        raise NeedsHost("softmax over an inner dimension")
    n = self._size[-1]
    out = empty_tensor(self._size, self._dtype, self._device)

    def body(xp, rt):
        _kernel("softmax.cu", f"softmax_forward_{sfx}")(
            (self.numel() // n,), (_threads(n),),
            (device_array(self, rt), device_array(out, rt), np.int32(n), np.int32(log)))
        return out
    return launch(self._device, body)


def _softmax_backward(grad_output, output, dim, input_dtype, log):
    d = check_softmax_backward(grad_output, output, dim, input_dtype)
    sfx = _fusable(grad_output, output)
    if d != output.dim() - 1 or input_dtype is not output._dtype:
        raise NeedsHost("softmax backward over an inner dimension or to another dtype")
    n = output._size[-1]
    gx = empty_tensor(output._size, output._dtype, output._device)

    def body(xp, rt):
        _kernel("softmax.cu", f"softmax_backward_{sfx}")(
            (output.numel() // n,), (_threads(n),),
            (device_array(grad_output, rt), device_array(output, rt), device_array(gx, rt),
             np.int32(n), np.int32(log)))
        return gx
    return launch(output._device, body)


def _softmax(self, dim, half_to_float):
    return _softmax_forward(self, dim, half_to_float, False)


def _log_softmax(self, dim, half_to_float):
    return _softmax_forward(self, dim, half_to_float, True)


def _softmax_backward_data(grad_output, output, dim, input_dtype):
    return _softmax_backward(grad_output, output, dim, input_dtype, False)


def _log_softmax_backward_data(grad_output, output, dim, input_dtype):
    return _softmax_backward(grad_output, output, dim, input_dtype, True)


# ---------------------------------------------------------------------------------------------
# layer_norm

def native_layer_norm(input, normalized_shape, weight, bias, eps):  # noqa: A002
    check_floating("LayerNormKernelImpl", input)
    m, n, stat_shape = layer_norm_shapes(input, normalized_shape, weight, bias)
    sfx = _fusable(input, weight, bias)
    dev, dt = input._device, input._dtype
    out = empty_tensor(input._size, dt, dev)
    mean, rstd = empty_tensor(stat_shape, dt, dev), empty_tensor(stat_shape, dt, dev)

    def body(xp, rt):
        _kernel("layer_norm.cu", f"layer_norm_forward_{sfx}")(
            (m,), (_threads(n),),
            (device_array(input, rt), _null_or(weight, rt), _null_or(bias, rt),
             device_array(out, rt), device_array(mean, rt), device_array(rstd, rt), np.int32(n),
             dt._np.type(eps)))
        return out, mean, rstd
    return launch(dev, body)


def native_layer_norm_backward(grad_out, input, normalized_shape, mean, rstd, weight, bias,  # noqa: A002
                               output_mask):
    m, n, _ = layer_norm_shapes(input, normalized_shape, weight, bias)
    sfx = _fusable(grad_out, input, mean, rstd, weight)
    dev, dt = input._device, input._dtype
    want_w = output_mask[1] and weight is not None
    want_b = output_mask[2] and bias is not None
    gi = empty_tensor(input._size, dt, dev) if output_mask[0] else None

    def body(xp, rt):
        g, x = device_array(grad_out, rt), device_array(input, rt)
        mu, rs = device_array(mean, rt), device_array(rstd, rt)
        if gi is not None:
            _kernel("layer_norm.cu", f"layer_norm_backward_input_{sfx}")(
                (m,), (_threads(n),),
                (g, x, mu, rs, _null_or(weight, rt), device_array(gi, rt), np.int32(n)))
        gw = gb = None
        if want_w or want_b:
            # one partial sum per chunk of rows and column, then the chunks added up
            chunks, block = min(m, 64), min(256, 32 * math.ceil(n / 32))
            dw, db = xp.empty((chunks, n), dt._np), xp.empty((chunks, n), dt._np)
            _kernel("layer_norm.cu", f"layer_norm_param_partials_{sfx}")(
                (math.ceil(n / block), chunks), (block,),
                (g, x, mu, rs, dw, db, np.int64(m), np.int32(n)))
            if want_w:
                gw = to_tensor(dw.sum(axis=0).reshape(weight._size), dt, dev, rt)
            if want_b:
                gb = to_tensor(db.sum(axis=0).reshape(bias._size), dt, dev, rt)
        return gi, gw, gb
    return launch(dev, body)


# ---------------------------------------------------------------------------------------------
# gelu

def _grid(numel):
    return (min(math.ceil(numel / 256), 65535 * 8),), (256,)


def gelu(self, approximate="none"):
    check_activation("gelu", self, (approximate,))
    sfx = _fusable(self)
    out = empty_tensor(self._size, self._dtype, self._device)

    def body(xp, rt):
        grid, block = _grid(self.numel())
        _kernel("gelu.cu", f"gelu_forward_{sfx}")(
            grid, block, (device_array(self, rt), device_array(out, rt),
                          np.int64(self.numel()), np.int32(approximate == "tanh")))
        return out
    return launch(self._device, body)


def gelu_backward(grad_output, self, approximate="none"):
    check_activation("gelu", self, (approximate,))
    shape = activation_backward_shape(grad_output, self)
    sfx = _fusable(grad_output, self)
    if grad_output._size != self._size or shape != self._size:
        raise NeedsHost("gelu_backward with broadcasting")
    gx = empty_tensor(self._size, self._dtype, self._device)

    def body(xp, rt):
        grid, block = _grid(self.numel())
        _kernel("gelu.cu", f"gelu_backward_{sfx}")(
            grid, block, (device_array(grad_output, rt), device_array(self, rt),
                          device_array(gx, rt), np.int64(self.numel()),
                          np.int32(approximate == "tanh")))
        return gx
    return launch(self._device, body)


def kernels():
    return {"_softmax": _softmax, "_log_softmax": _log_softmax,
            "_softmax_backward_data": _softmax_backward_data,
            "_log_softmax_backward_data": _log_softmax_backward_data,
            "native_layer_norm": native_layer_norm,
            "native_layer_norm_backward": native_layer_norm_backward,
            "gelu": gelu, "gelu_backward": gelu_backward}

