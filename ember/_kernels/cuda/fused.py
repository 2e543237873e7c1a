"""Fused CUDA kernels from the raw sources in ``csrc/``: softmax and log_softmax with their
backward ops, native_layer_norm and its backward, gelu and gelu_backward — one kernel where the
array-module bodies make several passes (softmax: max, subtract, exp, sum, divide).

The row ops (softmax, layer_norm) read a row from global memory once into registers where it fits
(up to 16384 float32 or 8192 float64 elements), in 16-byte packs where the length and the arrays'
alignment allow (:func:`_register_rows`); longer rows take the loop kernels, which read the row
once per pass.

Each source is ``csrc/common.cuh`` (block reductions, register rows) followed by the file,
compiled once per process by CuPy (NVRTC, for the device's architecture); CI compiles the same
text for sm_90 with NVRTC through cuda-bindings, without a GPU (``tests/test_cuda_sources.py``,
which also checks that every name :func:`kernel_names` lists is a kernel of its source). The
kernels take float32 and float64 tensors in the layouts they index directly (contiguous, reducing
over the last dimension); other calls, and every call on the simulated device (which runs no
CUDA C), decline with ``NeedsHost`` and take the CUDA fallback — the CPU kernel body on device
arrays on a GPU (``shared.py``), on device memory in the simulation. Arguments are checked by the
rules first, so both paths raise the same errors. Kernels get raw device addresses
(:func:`pointer`), not CuPy arrays.
"""
import functools
import math
import os

import numpy as np

from ..._core import dtype as D
from ..._core.tensor_impl import empty_tensor
from ..rules.nn import (activation_backward_shape, check_activation, check_floating,
                        check_softmax, check_softmax_backward, layer_norm_shapes)
from .arrays import NeedsHost, launch, runtime, to_tensor

CSRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "csrc")
SOURCES = ("softmax.cu", "layer_norm.cu", "gelu.cu", "binary.cu", "foreach.cu",
           "random.cu")
_SUFFIX = {D.float32: "f32", D.float64: "f64"}
_modules = {}


def source(filename):
    """The text compiled for ``csrc/<filename>``: the shared header, then the file."""
    with open(os.path.join(CSRC, "common.cuh")) as f:
        common = f.read()
    with open(os.path.join(CSRC, filename)) as f:
        return f"{common}\n// ---- {filename}\n{f.read()}"


def host_source(filename):
    """``csrc/<filename>`` as C for the host (``EMBER_HOST_EMULATION``), for the sources written
    to compile so (random.cu: plain loops, no shared memory or warp operations)."""
    with open(os.path.join(CSRC, filename)) as f:
        return f"#include <stdint.h>\n#define EMBER_HOST_EMULATION\n{f.read()}"


def host_module(module_name, filename, bindings):
    """``csrc/<filename>``'s host build with ``bindings`` (a C module named ``module_name``),
    built once per process; RuntimeError without a C compiler."""
    built = _host_modules.get(module_name)
    if built is None:
        from ..._inductor.codecache import HandWrittenModule
        built = HandWrittenModule(module_name, lambda: host_source(filename) + bindings,
                                  f"{filename} has no host build", parallel=False).get()
        if built is None:
            raise RuntimeError(f"the host build of {filename} needs a C compiler")
        _host_modules[module_name] = built
    return built


_host_modules = {}


_functions = {}  # kernel name -> CuPy function: get_function costs microseconds a call


def _kernel(filename, name):
    fn = _functions.get(name)
    if fn is None:
        mod = _modules.get(filename)
        if mod is None:
            import cupy
            mod = _modules[filename] = cupy.RawModule(code=source(filename),
                                                      options=("-std=c++17",))
        fn = _functions[name] = mod.get_function(name)
    return fn


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
    """Threads per row-block of the loop kernels: about eight elements each, whole warps."""
    return min(1024, 32 * max(1, math.ceil(n / 256)))


def pointer(t):
    """The device address of tensor ``t``'s first element, as a kernel argument. Raw addresses
    rather than CuPy arrays: building an array per operand costs microseconds a launch."""
    return np.uint64(t._storage.data_ptr() + t._offset * t._dtype.itemsize)


def _pointer_or_null(t):
    return pointer(t) if t is not None else np.uint64(0)


# Register rows (see csrc/common.cuh): elements per 16-byte pack, and the elements a thread holds
# (K), by dtype suffix; csrc/common.cuh's EMBER_REG_KERNELS instantiates the same.
_VEC = {"f32": 4, "f64": 2}
_REG_K = {"f32": (4, 8, 16, 32), "f64": (2, 4, 8, 16)}
_REG_THREADS = 512  # the kernels' __launch_bounds__: up to 128 registers a thread
# A row's block grows to _REG_THREADS only once K is at its largest. On an H100, float32 rows of
# 4096: 256 threads of 16 and 512 of 8 ran alike, 128 of 32 about 7% slower.
_ROW_THREADS = 256
_WARP_ROWS = 4  # rows (warps) per block when one warp holds a row (1 to 8 ran alike)


def _register_rows(op, sfx, n, *pointers):
    """(kernel name, block, rows per block) of the register-row kernel ``op`` for rows of length
    ``n`` over the arrays at ``pointers`` (0 for an absent one), or None when a row is too long
    for registers. 16-byte packs need n a multiple of the pack and every row start 16-byte
    aligned: with n a multiple, that is each array's first element aligned (a contiguous view
    with a storage offset may not be)."""
    aligned = n % _VEC[sfx] == 0
    for p in pointers:
        aligned = aligned and not int(p) % 16
    return _layout(op, sfx, n, aligned)


@functools.lru_cache(maxsize=1024)  # a few microseconds saved per launch
def _layout(op, sfx, n, aligned):
    """See _register_rows. Rows of up to 32 * K elements take one warp each, _WARP_ROWS rows a
    block; longer rows a block of whole warps, K the smallest holding the row in at most
    _ROW_THREADS threads (for float32 n = 4096: 256 threads of 16), then up to _REG_THREADS
    threads of the largest K."""
    vec = _VEC[sfx] if aligned else 1
    ks = _REG_K[sfx]
    for k in ks:
        if n <= 32 * k:
            return _reg_name(op, sfx, vec, k), (32, _WARP_ROWS), _WARP_ROWS
    for k in ks:
        if n <= _ROW_THREADS * k:
            return _reg_name(op, sfx, vec, k), (32 * math.ceil(n / (32 * k)), 1), 1
    if n <= _REG_THREADS * ks[-1]:
        return _reg_name(op, sfx, vec, ks[-1]), (32 * math.ceil(n / (32 * ks[-1])), 1), 1
    return None


def _reg_name(op, sfx, vec, k):
    return f"{op}_reg_{sfx}_v{vec}_k{k}"


def kernel_names():
    """filename -> every kernel name this module (and pointwise.py, foreach.py and random.py, for
    binary.cu, foreach.cu and random.cu) may launch: the loop kernels, the register-row kernels of
    each (dtype, vector width, K), the binary ops, the multi-tensor ops, the random kernels."""
    from .foreach import kernel_names as foreach_kernel_names
    from .random import kernel_names as random_kernel_names
    names = {"softmax.cu": [], "layer_norm.cu": [], "gelu.cu": [], "binary.cu": [],
             "foreach.cu": foreach_kernel_names(), "random.cu": random_kernel_names()}
    for sfx in ("f32", "f64"):
        names["softmax.cu"] += [f"softmax_forward_{sfx}", f"softmax_backward_{sfx}"]
        names["layer_norm.cu"] += [f"layer_norm_forward_{sfx}",
                                   f"layer_norm_backward_input_{sfx}",
                                   f"layer_norm_param_partials_{sfx}"]
        names["gelu.cu"] += [f"gelu_forward_{sfx}", f"gelu_backward_{sfx}"]
        for vec in (_VEC[sfx], 1):
            for k in _REG_K[sfx]:
                names["softmax.cu"] += [_reg_name("softmax_forward", sfx, vec, k),
                                        _reg_name("softmax_backward", sfx, vec, k)]
                names["layer_norm.cu"] += [_reg_name("layer_norm_forward", sfx, vec, k),
                                           _reg_name("layer_norm_backward_input", sfx, vec, k)]
    from .pointwise import BINARY_SUFFIX, binary_kernel_name
    for dt in BINARY_SUFFIX:
        names["binary.cu"] += [binary_kernel_name(op, dt) for op in ("add", "sub", "mul", "div")
                               if op != "div" or dt.is_floating_point]
    return names


# ---------------------------------------------------------------------------------------------
# softmax / log_softmax

def _softmax_forward(self, dim, half_to_float, log):
    d = check_softmax(self, dim, half_to_float, "log_softmax" if log else "softmax")
    sfx = _fusable(self)
    if d != self.dim() - 1:
        raise NeedsHost("softmax over an inner dimension")
    n = self._size[-1]
    out = empty_tensor(self._size, self._dtype, self._device)

    rows = self.numel() // n
    x, y = pointer(self), pointer(out)
    reg = _register_rows("softmax_forward", sfx, n, x, y)

    def body(xp, rt):
        if reg is not None:
            name, block, per_block = reg
            _kernel("softmax.cu", name)(
                (-(-rows // per_block),), block,
                (x, y, np.int64(rows), np.int32(n), np.int32(log)))
        else:
            _kernel("softmax.cu", f"softmax_forward_{sfx}")(
                (rows,), (_threads(n),), (x, y, np.int32(n), np.int32(log)))
        return out
    return launch(self._device, body)


def _softmax_backward(grad_output, output, dim, input_dtype, log):
    d = check_softmax_backward(grad_output, output, dim, input_dtype,
                               "log_softmax" if log else "softmax")
    sfx = _fusable(grad_output, output)
    if d != output.dim() - 1 or input_dtype is not output._dtype:
        raise NeedsHost("softmax backward over an inner dimension or to another dtype")
    n = output._size[-1]
    gx = empty_tensor(output._size, output._dtype, output._device)

    rows = output.numel() // n
    g, y, dx = pointer(grad_output), pointer(output), pointer(gx)
    reg = _register_rows("softmax_backward", sfx, n, g, y, dx)

    def body(xp, rt):
        if reg is not None:
            name, block, per_block = reg
            _kernel("softmax.cu", name)(
                (-(-rows // per_block),), block,
                (g, y, dx, np.int64(rows), np.int32(n), np.int32(log)))
        else:
            _kernel("softmax.cu", f"softmax_backward_{sfx}")(
                (rows,), (_threads(n),), (g, y, dx, np.int32(n), np.int32(log)))
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

    x, w, b, y = pointer(input), _pointer_or_null(weight), _pointer_or_null(bias), pointer(out)
    reg = _register_rows("layer_norm_forward", sfx, n, x, w, b, y)

    def body(xp, rt):
        if reg is not None:
            name, block, per_block = reg
            _kernel("layer_norm.cu", name)(
                (-(-m // per_block),), block,
                (x, w, b, y, pointer(mean), pointer(rstd), np.int64(m), np.int32(n),
                 dt._np.type(eps)))
        else:
            _kernel("layer_norm.cu", f"layer_norm_forward_{sfx}")(
                (m,), (_threads(n),),
                (x, w, b, y, pointer(mean), pointer(rstd), np.int32(n), dt._np.type(eps)))
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
    g, x, mu, rs = pointer(grad_out), pointer(input), pointer(mean), pointer(rstd)
    w, dx = _pointer_or_null(weight), _pointer_or_null(gi)
    reg = _register_rows("layer_norm_backward_input", sfx, n, g, x, w, dx)

    def body(xp, rt):
        if gi is not None and reg is not None:
            name, block, per_block = reg
            _kernel("layer_norm.cu", name)(
                (-(-m // per_block),), block, (g, x, mu, rs, w, dx, np.int64(m), np.int32(n)))
        elif gi is not None:
            _kernel("layer_norm.cu", f"layer_norm_backward_input_{sfx}")(
                (m,), (_threads(n),), (g, x, mu, rs, w, dx, np.int32(n)))
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
            grid, block, (pointer(self), pointer(out),
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
            grid, block, (pointer(grad_output), pointer(self), pointer(gx),
                          np.int64(self.numel()),
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

