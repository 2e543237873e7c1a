"""On a GPU, the CPU kernel bodies of functional ops run on device arrays.

Most of ember's CPU kernels are array code: ``x.max(axis=d)``, ``np.exp(e, out=e)``,
``np.einsum(...)``. Handed tensors whose arrays are CuPy views of device memory, NumPy's dispatch
protocols (``__array_ufunc__``, ``__array_function__``) send those calls to CuPy, which launches
CUDA kernels (cuBLAS for products); a body that makes new arrays asks
``cpu._util.array_module`` for the module to make them with, and ``wrap`` adopts CuPy results as
CUDA tensors. So softmax, layer_norm, nll_loss, embedding, their fused backward ops, cat, stack,
tril and most other functional ops compute on the GPU from one kernel body — Chainer's design,
which the CUDA issue asks for.

:func:`run` is tried by the host-kernel fallback on a real GPU before staging copies, for ops
that write no argument (a failed attempt must leave nothing half-written; ``WRITES_ON_DEVICE``
lists the in-place ones whose body cannot fail after its first write) and draw no random numbers (the device generator's stream stays the fallback's). A body that leaves NumPy's
protocols fails loudly — CuPy refuses implicit host conversion (``TypeError``), host-only
attributes are missing (``AttributeError``) — and then the op is remembered in ``host_only``
with the reason (``arrays.stats``) and staged from then on. On the simulated device the
fallback runs the same body on host memory directly, so nothing here is needed there.
"""
from ..._core import dtype as D
from ..._core.device import CPU
from ..._core.tensor_impl import make_tensor
from ..._dispatch.keys import K, bit
from ..._tensor import Tensor
from ...cuda import _device_assert
from .arrays import HOST_DTYPES, NeedsHost, device_array, launch, runtime, stats, to_tensor

_CPU_KEYS = bit(K.CPU)
host_only = set()  # ops whose body needs the host


# In-place ops whose CPU body is device-clean before its first write (it cannot fail half-way):
# GradScaler's two ops and the optimizers' foreach updates (their fast paths; the slow paths
# refuse device arrays before writing), whose CUDA calls would otherwise copy every gradient and
# parameter to the host and back; the in-place activations (``nn.ReLU6(inplace=True)``,
# ``nn.SiLU(inplace=True)``, ...: the activation computed whole, then one copy into self)
WRITES_ON_DEVICE = frozenset({
    "_amp_foreach_non_finite_check_and_unscale_", "_amp_update_scale_",
    "_foreach_add_", "_foreach_mul_", "_foreach_div_", "_foreach_lerp_", "_foreach_addcmul_",
    "_foreach_addcdiv_", "_foreach_maximum_", "_foreach_clamp_min_", "_foreach_clamp_max_",
    "gelu_", "silu_", "mish_", "elu_", "celu_", "leaky_relu_", "hardtanh_", "hardsigmoid_",
    "hardswish_", "threshold_"})


# Ops whose CPU body computes other values on CuPy arrays: CuPy's special functions (its
# scipy.special, sinc) differ from the CPU kernels, which give PyTorch's values, at ±inf and NaN
# (seen on an H200, CuPy 14.2); median's body calls ember ops on its arguments (they
# need host memory). They stage through the host.
HOST_BODIES = frozenset({
    "i0", "sinc", "median", "nanmedian", "special_i0", "special_i0e", "special_i1",
    "special_i1e", "special_sinc", "special_bessel_j0", "special_bessel_j1", "special_bessel_y0",
    "special_bessel_y1", "special_modified_bessel_i0", "special_modified_bessel_i1",
    "special_scaled_modified_bessel_k0", "special_scaled_modified_bessel_k1"})

# PyTorch's CPU-only ops: SDPA's blockwise CPU kernel and its backward (on a GPU SDPA picks its
# CUDA kernels; a direct call with device tensors stages through the host)
CPU_ONLY = frozenset({"_scaled_dot_product_flash_attention_for_cpu",
                      "_scaled_dot_product_flash_attention_for_cpu_backward"})

# Element types CuPy has no arrays of: a call with a tensor of one stages through the host.
_NO_CUPY_DTYPES = HOST_DTYPES | {D.bfloat16}


def eligible(op):
    schema = op._schema
    return op not in host_only and schema.base_name not in HOST_BODIES | CPU_ONLY and not any(
        a.base == "Generator" or a.is_write and schema.base_name not in WRITES_ON_DEVICE
        for a in schema.arguments)


def _alias(t, rt):
    """A CPU tensor (as the CPU kernel expects) whose array is the device view of ``t``."""
    a = make_tensor(t._storage, t._size, t._stride, t._offset, t._dtype, CPU)
    a._np = device_array(t, rt)
    a._vc = t._vc
    return a


def _cupy_dtypes(v):
    if isinstance(v, Tensor):
        return v._dtype not in _NO_CUPY_DTYPES
    if isinstance(v, (list, tuple)):
        return all(_cupy_dtypes(x) for x in v)
    return True


def run(op, values, dev):
    """``op``'s CPU kernel on device views of ``values`` (schema order); raises NeedsHost."""
    if not all(_cupy_dtypes(v) for v in values):
        raise NeedsHost("an element type CuPy has no arrays of")

    def body(xp, rt):
        originals = {}  # id(device view) -> the tensor it views
        out = op._entry.redispatch(_CPU_KEYS, *[_aliased(v, rt, originals) for v in values])
        return _back(out, originals, dev, rt)
    try:
        out = launch(dev, body)
    except NeedsHost as e:
        host_only.add(op)
        stats["host"][str(op)] = str(e)[:200]
        raise
    if _device_assert._armed and not _holds_tensor(out):
        # a host value (item(), equal()): the body waited for the device, as a copy to the host
        # does, and a failed device-side check raises now
        _device_assert.raise_any_pending(runtime())
    return out


def _holds_tensor(o):
    return isinstance(o, Tensor) or isinstance(o, (list, tuple)) and any(
        _holds_tensor(x) for x in o)


# (Module-level recursions, not nested functions calling themselves: such a closure sits in a
# reference cycle with its own cell and keeps what it holds, here device tensors, alive until
# the cyclic garbage collector runs, out of the caching allocator's reach.)

def _aliased(v, rt, originals):
    """An argument with its CUDA tensors replaced by CPU tensors viewing the device arrays."""
    if isinstance(v, Tensor) and v._device.type == "cuda":
        a = _alias(v, rt)
        originals[id(a)] = v
        return a
    if isinstance(v, (list, tuple)) and any(isinstance(x, Tensor) for x in v):
        return type(v)(_aliased(x, rt, originals) for x in v)
    if getattr(v, "type", None) == "cuda":  # a device argument
        return CPU
    return v


def _back(o, originals, dev, rt):
    """A kernel result as device tensors: the argument a view stands for, or a new tensor."""
    if isinstance(o, Tensor):
        d = originals.get(id(o))
        if d is not None:
            return d
        if o._device.type == "cuda":
            return o
        arr = o._np
        if hasattr(arr, "__cuda_array_interface__"):  # a device array
            return to_tensor(arr, o._dtype, dev, rt)
        return _from_host(o, dev)
    if isinstance(o, (list, tuple)):
        return type(o)(_back(x, originals, dev, rt) for x in o)
    return o


def _from_host(h, dev):
    """A host result the body made on purpose (a small constant, say) copied to the device."""
    from . import _to_device, _cuda
    cuda = _cuda()
    return _to_device(h, dev, cuda._lazy_init(), cuda.streams.current_stream_handle(dev.index))
