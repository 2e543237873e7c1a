"""The ops ATen's CPU kernels have no float8 instance for, beyond the pointwise, reduction,
sorting and random ones whose rules check it themselves: the dtype dispatch of ATen's kernel
(``AT_DISPATCH_*`` without the float8 types) raises ``NotImplementedError: "<name>" not
implemented for 'Float8_e4m3fn'``, naming the dispatch. Each CPU kernel of an op listed here is
installed behind :func:`gate` (by ``registration.register`` and, for the kernels
native_functions.yaml names, ``ember/_ops/registry.py``), so the check is written once, here;
the hot ops of :data:`IN_KERNEL` call :func:`refuse` first thing in their kernels instead, which
costs a dtype test where the wrapper cost a call. The meta kernels take float8, as PyTorch's meta
functions do.

What PyTorch does run on float8 (and ember with it, tests/test_float8.py): copies and casts,
views, ``index_select``/``index_put``/``embedding``, ``cat``/``stack`` of one float8 dtype, fills
and factories, ``eq``/``ne``/``isnan``, ``abs``, ``mul`` of two tensors, ``mm``/``addmm``/``matmul``
(not float8_e8m0fnu), ``where``, ``index_reduce(..., "prod")``."""
import functools

from ..._core import dtype as D
from . import unsigned as _unsigned


def _softmax(args):
    self, dim = args[0], args[1]
    nd = len(self._size)
    last = nd == 0 or dim % nd == nd - 1
    return "softmax_lastdim_kernel_impl" if last else "softmax_kernel_impl"


def _log_softmax(args):
    return "log_" + _softmax(args)


def _gather(args):
    """ATen's gather takes its expanded-index path (index varying along dim 0 only, as
    ``index.expand``) before the generic one, and names it."""
    self, dim, index = args[0], args[1], args[2]
    expanded = (dim % max(len(self._size), 1) == 0 and len(index._size) > 0 and
                _numel(self) > 0 and _numel(index) > 0 and
                all(s == 0 for s in index._stride[1:]))
    return "gather_expanded_index" if expanded else "scatter_gather_tensor_cpu"


def _scatter_reduce(args):
    reduce = args[4]
    return ("scatter_gather_tensor_cpu_reduce_" + reduce if reduce in ("amax", "amin", "mean")
            else "scatter_gather_tensor_cpu")


def _index_add(args):
    # 1-d self: index_add_'s own loop; otherwise ATen adds through scatter_add
    return "index_add_" if len(args[0]._size) <= 1 else "scatter_gather_tensor_cpu"


def _searchsorted(args):
    """Boundaries and input of different dtypes are promoted first: float8 does not promote."""
    seq, x = args[0], args[1]
    x_dtype = getattr(x, "_dtype", None)
    if x_dtype is not None and x_dtype is not seq._dtype:
        from ..._core.promotion import promote_types
        promote_types(seq._dtype, x_dtype)
    return "searchsorted_out_cpu"


def _unique_consecutive(args):
    return "unique" if len(args) < 4 or args[3] is None else "unique_dim"


def _e8m0_only(args, kernel):
    return kernel if any(getattr(a, "_dtype", None) is D.float8_e8m0fnu for a in args) else None


def _numel(t):
    n = 1
    for s in t._size:
        n *= s
    return n


# aten overload (as native_functions.yaml names it) -> the name ATen's float8 error prints, or a
# function of the arguments giving it
NO_CPU_KERNEL = {
    # activations, normalisation, losses
    "gelu": "GeluKernelImpl", "silu": "silu_cpu", "hardtanh": "clamp_scalar_cpu",
    "leaky_relu": "leaky_relu_cpu", "elu": "elu_cpu", "softplus": "softplus_cpu",
    "hardsigmoid": "hardsigmoid_cpu", "hardswish": "hardswish_cpu", "mish": "mish_cpu",
    "glu": "glu_cpu", "log_sigmoid_forward": "log_sigmoid_cpu", "threshold": "threshold_cpu",
    "_softmax": _softmax, "_log_softmax": _log_softmax,
    "native_layer_norm": "LayerNormKernelImpl", "native_group_norm": "GroupNormKernelImpl",
    "native_batch_norm": "batch_norm",
    "mse_loss": "mse_cpu",
    "max_pool2d_with_indices": "max_pool2d", "avg_pool2d": "avg_pool2d",
    "adaptive_max_pool2d": "adaptive_max_pool2d",
    # products (mm and addmm have float8 kernels, but not for float8_e8m0fnu)
    "mm": lambda args: _e8m0_only(args, "addmm_impl_cpu_"),
    "addmm": lambda args: _e8m0_only(args, "addmm_impl_cpu_"),
    "_index_put_impl_": lambda args: _e8m0_only(args, "index_put"),
    "bmm": "bmm", "baddbmm": "baddbmm", "mv": "addmv_impl_cpu", "addmv": "addmv_impl_cpu",
    "vdot": "dot", "trace": "trace", "linalg_cross": "cross",
    # reductions and scans not in rules/reduction.py
    "logsumexp": "max_values_cpu", "cummax": "cummax_cpu", "cummin": "cummin_cpu",
    "histc": lambda args: _unsigned._histc(args, None, None),
    "_unique2": "unique", "unique_consecutive": _unique_consecutive, "unique_dim": "unique_dim",
    "isin.Tensor_Tensor": "isin_default_cpu", "isin.Scalar_Tensor": "isin_default_cpu",
    "searchsorted.Tensor": _searchsorted, "searchsorted.Scalar": _searchsorted,
    "bucketize.Tensor": lambda args: _searchsorted((args[1], args[0])),
    "linalg_vector_norm": lambda args: (
        "norm_cpu" if len(args) < 5 or args[4] is None or args[4] is args[0]._dtype else None),
    # samplers (ATen has no float8 random kernels; its meta functions take float8)
    "random_": "random_kernel_cpu", "random_.from": "random_update_from_to",
    "random_.to": "random_update_from_to", "bernoulli_.float": "bernoulli_scalar_cpu_",
    "bernoulli_.Tensor": lambda args: ("bernoulli_tensor_cpu_self_" if args[0]._dtype in D.FLOAT8
                                       else "bernoulli_tensor_cpu_p_"),
    "exponential_": "exponential_cpu", "geometric_": "geometric_cpu", "cauchy_": "cauchy_cpu",
    "log_normal_": "log_normal_cpu", "poisson": "poisson_cpu", "multinomial": "aminmax_cpu",
    "randperm.generator_out": "randperm",
    # indexing
    "gather": _gather, "scatter.src": "scatter_gather_tensor_cpu",
    "scatter.reduce": "scatter_gather_tensor_cpu", "scatter_add": "scatter_gather_tensor_cpu",
    "scatter.value": "scatter_gather_scalar_cpu",
    "scatter.value_reduce": "scatter_gather_scalar_cpu", "scatter_reduce.two": _scatter_reduce,
    "index_add": _index_add, "index_copy": "index_copy_cpu",
    "index_fill.int_Scalar": "index_fill_cpu", "index_fill.int_Tensor": "index_fill_cpu",
    "masked_scatter": "masked_scatter", "take": "take_cpu", "put": "take_put_cpu",
    "tril": "tril", "triu": "triu",
    # kernels whose dtype dispatch is the barebones unsigned types' too (rules/unsigned.py)
    "convolution": lambda args: _unsigned._convolution(args, None, None),
    "im2col": "im2col_out_cpu", "col2im": "col2im_out_cpu",
    "_adaptive_avg_pool2d": lambda args: _unsigned.NO_CPU_KERNEL["_adaptive_avg_pool2d"](
        args, None, None),
    "_adaptive_avg_pool3d": lambda args: _unsigned.NO_CPU_KERNEL["_adaptive_avg_pool3d"](
        args, None, None),
    "max_unpool2d": "max_unpool2d", "max_unpool3d": "max_unpool3d",
    "upsample_nearest1d": "compute_indices_weights_nearest",
    "_upsample_nearest_exact1d": "compute_indices_weights_nearest",
    "upsample_linear1d": "compute_indices_weights_linear",
    "upsample_bilinear2d": "upsample_bilinear2d_channels_last",
    "upsample_bicubic2d": "compute_indices_weights_cubic",
    "upsample_trilinear3d": "compute_indices_weights_linear",
    "reflection_pad1d": "reflection_pad1d", "replication_pad1d": "replication_pad1d",
    "replication_pad2d": "replication_pad2d", "pixel_shuffle": "pixel_shuffle",
    "pixel_unshuffle": "pixel_unshuffle", "grid_sampler_2d": "grid_sampler_2d_cpu_kernel_impl",
    "grid_sampler_3d": "grid_sampler3d_cpu", "celu": "elu_cpu", "softshrink": "softshrink_check",
    "hardshrink": "hardshrink_cpu", "binary_cross_entropy_with_logits": "log_sigmoid_cpu",
    "nll_loss_forward": "nll_loss_out_frame", "count_nonzero.dim_IntList": "nonzero_count_cpu",
    "bucketize.Scalar": "searchsorted_out_cpu",
    "round.decimals": lambda args: _unsigned._round_decimals(args, {}, None),
    "clamp.Tensor": "clamp_cpu", "clamp_min.Tensor": "maximum_cpu",
    "clamp_max.Tensor": "minimum_cpu", "lerp.Tensor": "lerp_kernel_tensor",
}


_FLOAT8 = frozenset(D.FLOAT8)


def check(op, args):
    """PyTorch's NotImplementedError when a tensor argument of ``op`` is float8 (the first such
    tensor's dtype is named)."""
    for a in args:
        dt = getattr(a, "_dtype", None)
        if dt in _FLOAT8:
            spec = NO_CPU_KERNEL[op]
            name = spec(args) if callable(spec) else spec
            if name is not None:  # (None: this op has a kernel for these arguments)
                raise NotImplementedError(f'"{name}" not implemented for \'{dt._short}\'')
            return


# the listed ops whose CPU kernel :func:`gate` wrapped, or which check in their kernel (a test
# checks that it is every one)
GATED = set()

# The hot ops whose CPU kernels test their operands' dtypes against :data:`REFUSED` themselves
# and call :func:`refuse` on a hit, first thing (where the gate's wrapper would have checked):
# the wrapper costs a call, ~0.4 us of a 3x3 ``mm`` kernel's 3.1 us, up to ~1 us where a list or
# None argument sent it to the full check (``sum(x, [0])``, ``layer_norm``). Every overload is
# named, in-place twins too (tests/test_dtype_gates.py calls each on every refused dtype beside
# PyTorch).
IN_KERNEL = frozenset((
    "add.Tensor", "add_.Tensor", "sub.Tensor", "sub_.Tensor",
    "mm", "addmm", "bmm", "baddbmm", "mv", "dot",
    "relu", "relu_", "_softmax", "_log_softmax", "native_layer_norm", "native_batch_norm",
    "nll_loss_forward", "sum", "sum.dim_IntList", "max.dim", "argmax", "index_select",
    # the activations of cpu/nn.py (the in-place twins ATen has)
    "gelu", "gelu_", "silu", "silu_", "mish", "mish_", "elu", "elu_", "celu", "celu_",
    "leaky_relu", "leaky_relu_", "hardtanh", "hardtanh_", "hardsigmoid", "hardsigmoid_",
    "hardswish", "hardswish_", "softplus", "softshrink", "hardshrink", "threshold", "threshold_",
))

# the dtypes some CPU kernels lack: float8 (this table) and the barebones unsigned types
# (rules/unsigned.py)
REFUSED = _FLOAT8 | _unsigned.BAREBONES


def refuse(op, args):
    """What the gates' wrappers check, for a kernel of :data:`IN_KERNEL` that found a dtype of
    :data:`REFUSED` among ``args`` (its positional arguments): float8 first, then the barebones
    unsigned types. An in-place overload is refused as its functional row."""
    row = op if op in NO_CPU_KERNEL else _unsigned.twin(op)
    if row in NO_CPU_KERNEL:
        check(row, args)
    row = _unsigned._listed(op)
    if row is not None:
        _unsigned.check(row, args, {})


def gate(op, fn):
    """CPU kernel ``fn`` of ``op``, behind :func:`check` when ``op`` is listed, and behind the
    barebones unsigned types' check (``rules/unsigned.py``) when that table lists it: every CPU
    kernel registration passes here, so both dtype tables gate through this one call. The
    wrapper's ``__wrapped__`` is ``fn`` itself either way (registration compares it). A kernel
    of :data:`IN_KERNEL` is returned as it is."""
    in_kernel = op in IN_KERNEL
    inner = _unsigned.gate(op, fn, in_kernel)
    row = op if op in NO_CPU_KERNEL else _unsigned.twin(op) if in_kernel else None
    if row not in NO_CPU_KERNEL:
        return inner
    GATED.add(row)
    if in_kernel:
        return inner

    @functools.wraps(fn)
    def kernel(*args, **kwargs):
        for a in args:  # (inlined: these kernels are hot, gather's among them)
            if getattr(a, "_dtype", None) in _FLOAT8:
                check(op, args)
                break
        return inner(*args, **kwargs)
    return kernel
