"""The barebones unsigned types, uint16, uint32 and uint64: which ops' CPU kernels ATen has no
instance for. ATen added these dtypes with storage and little else: its dtype dispatches include
them only where a kernel lists ``AT_BAREBONES_UNSIGNED_TYPES`` (copies and casts, fills, views,
``cat``, ``eq``/``ne``, ``mul`` ...), so most ops raise ``NotImplementedError: "<name>" not
implemented for 'UInt16'``, naming the dispatch. ember's NumPy kernels would compute on any of
them, so the refusals are written once, here: each CPU kernel of an op listed in
:data:`NO_CPU_KERNEL` is installed behind :func:`gate` (through ``float8.gate``, which every CPU
kernel registration passes), and raises before it reads anything; the hot ops of
``float8.IN_KERNEL`` make the same check first thing in their kernels instead.

The table was read off PyTorch 2.13 (the op each refusing call of op_db's samples reached under a
dispatch mode, and the name its error printed); tests/test_dtype_sweep.py checks every op_db
entry on the three dtypes beside PyTorch. The gate runs ahead of an op's own argument checks,
where ATen's shape checks may come first: arguments that are wrong in more than one way may be
refused for their dtype here and for their shape there."""
import functools

from ..._core import dtype as D

BAREBONES = frozenset((D.uint16, D.uint32, D.uint64))


def _bmm(args, kwargs, dt):
    from .linalg import bmm_kernel
    batch1, batch2 = args[0], args[1]
    if len(batch1._size) != 3 or len(batch2._size) != 3:
        return "bmm"
    return bmm_kernel("bmm", batch1, batch2)


def _round_decimals(args, kwargs, dt):
    # round.decimals with decimals=0 is plain round (its vectorized kernel)
    decimals = args[1] if len(args) > 1 else kwargs.get("decimals", 0)
    return "round_vml_cpu" if decimals == 0 else "round_cpu"


def _convolution(args, kwargs, dt):
    """ATen's CPU convolution of an integral input takes its slow paths (1-d through 2-d)."""
    weight = args[1]
    transposed = len(args) > 6 and args[6]
    nd = max(len(weight._size) - 2, 2)
    return f"slow_conv_transpose{nd}d_out_cpu" if transposed else f"slow_conv{nd}d_cpu"


def _promoted(kernel):
    """A pointwise op whose TensorIterator dispatches on the promoted dtype of its operands:
    uint16 + a float computes in float (the promotion itself refuses uint16 beside another
    integral type, with its own error)."""
    def spec(args, kwargs, dt):
        from ..._core.promotion import result_type_of
        operands = [a for a in args if hasattr(a, "_dtype") or
                    a.__class__ in (bool, int, float, complex)]
        common = result_type_of(operands)
        return (kernel, common) if common in BAREBONES else None
    return spec


def _div_mode(args, kwargs, dt):
    mode = args[2] if len(args) > 2 else kwargs.get("rounding_mode")
    return _promoted("div_floor_cpu" if mode == "floor" else "div_trunc_cpu")(args, kwargs, dt)


def _to_dtype(kernel, at):
    """A sum or scan of an integral input accumulates in int64 unless a dtype is asked for
    (argument ``at`` or ``dtype=``): only a barebones unsigned one is refused."""
    def spec(args, kwargs, dt):
        out = args[at] if len(args) > at else kwargs.get("dtype")
        return (kernel, out) if out in BAREBONES else None
    return spec


def _flip(args, kwargs, dt):
    """ATen's flip moves whole elements by their size, except when the last dimension is
    flipped: that path dispatches on the dtype."""
    self, dims = args[0], args[1]
    nd = len(self._size)
    return "flip_cpu" if nd == 0 or any(d % nd == nd - 1 for d in dims) else None


def _softmax(args, kwargs, dt):
    from .float8 import _softmax  # (the kernel ATen takes: over the last dimension or not)
    return _softmax(args)


def _log_softmax(args, kwargs, dt):
    from .float8 import _log_softmax
    return _log_softmax(args)


def _index_select(args, kwargs, dt):
    """ATen's index_select moves whole elements by their size, except from a 0-d or 1-d self."""
    return "index_select" if len(args[0]._size) <= 1 else None


def _histc(args, kwargs, dt):
    """histc finds the range itself (aminmax) when min equals max, then spaces the bins."""
    lo = args[2] if len(args) > 2 else 0
    hi = args[3] if len(args) > 3 else 0
    return "aminmax_cpu" if lo == hi else "linspace_cpu"


def _index_add(args, kwargs, dt):
    from .float8 import _index_add
    return _index_add(args)


def _scatter_reduce(args, kwargs, dt):
    from .float8 import _scatter_reduce
    include_self = args[5] if len(args) > 5 else True
    return _scatter_reduce(args) if include_self else "scatter_reduce_exclude_input_init"


def _nonempty(kernel):
    """A kernel that returns an empty input's (empty) result before its dtype dispatch."""
    def spec(args, kwargs, dt):
        return kernel if 0 not in args[0]._size else None
    return spec


# aten overload (as native_functions.yaml names it) -> the name ATen's error prints, or a function
# of the arguments giving it
NO_CPU_KERNEL = {
    "_index_put_impl_": "index_put", "_adaptive_avg_pool2d": _nonempty("adaptive_avg_pool2d"),
    "_adaptive_avg_pool3d": _nonempty("adaptive_avg_pool3d_cpu"),
    "_linalg_eigh": "linalg_eigh_cpu", "_log_softmax": _log_softmax, "_prelu_kernel": "prelu_cpu",
    "_softmax": _softmax, "_softmax_backward_data": "softmax_backward_lastdim_kernel_impl",
    "_upsample_bilinear2d_aa": "compute_index_ranges_weights",
    "_upsample_nearest_exact1d": "compute_indices_weights_nearest", "abs": "abs_cpu",
    "adaptive_max_pool2d": "adaptive_max_pool2d",
    "adaptive_max_pool3d": "adaptive_max_pool3d_cpu", "add.Tensor": _promoted("add_stub"),
    "addbmm": "addmm_impl_cpu_", "addcmul": _promoted("addcmul_cpu_out"),
    "addmm": "addmm_impl_cpu_", "addmv": "addmv_impl_cpu", "amax": "max_values_cpu",
    "amin": "min_values_cpu", "aminmax": "aminmax_cpu", "argmax": "argmax_cpu",
    "argmin": "argmin_cpu", "avg_pool2d": "avg_pool2d", "avg_pool3d": "avg_pool3d_out_frame",
    "baddbmm": "baddbmm", "binary_cross_entropy": "binary_cross_entropy",
    "binary_cross_entropy_with_logits": "log_sigmoid_cpu", "bincount": "bincount_cpu",
    "bitwise_left_shift.Tensor": _promoted("lshift_cpu"), "bitwise_not": "bitwise_not_cpu",
    "bitwise_right_shift.Tensor": _promoted("rshift_cpu"), "bmm": _bmm,
    "bucketize.Tensor": "searchsorted_out_cpu", "celu": "elu_cpu", "cholesky": "cholesky_cpu",
    "cholesky_inverse": "cholesky_inverse_out_cpu", "cholesky_solve": "cholesky_solve_cpu",
    "clamp.Tensor": _promoted("clamp_cpu"), "clamp_max.Tensor": _promoted("minimum_cpu"),
    "clamp_min.Tensor": _promoted("maximum_cpu"), "convolution": _convolution,
    "count_nonzero": "nonzero_count_cpu", "cummax": "cummax_cpu", "cummin": "cummin_cpu",
    "cumprod": _to_dtype("cumprod_out_cpu", 2), "cumsum": _to_dtype("cumsum_out_cpu", 2),
    "div.Tensor_mode": _div_mode, "dot": "dot", "elu": "elu_cpu", "eye": "eye", "flip": _flip,
    "floor_divide": _promoted("div_floor_cpu"), "fmax": _promoted("maximum_cpu"),
    "fmin": _promoted("minimum_cpu"), "fmod.Tensor": _promoted("fmod_cpu"), "frac": "frac_cpu",
    "gather": "scatter_gather_tensor_cpu", "gcd": _promoted("gcd_cpu"),
    "ge.Tensor": _promoted("ge_cpu"), "gelu": "GeluKernelImpl", "geometric_": "geometric_cpu",
    "geqrf": "geqrf_cpu", "glu": "glu_cpu", "grid_sampler_2d": "grid_sampler_2d_cpu_kernel_impl",
    "grid_sampler_3d": "grid_sampler3d_cpu", "gt.Tensor": _promoted("gt_cpu"),
    "hardshrink": "hardshrink_cpu", "hardsigmoid": "hardsigmoid_cpu",
    "hardswish": "hardswish_cpu", "hardtanh": "clamp_scalar_cpu", "hash_tensor": "xor_sum_cpu",
    "heaviside": _promoted("heaviside_cpu"), "histc": _histc,
    "hypot": _promoted("hypot_cpu"), "igamma": _promoted("igamma_cpu"),
    "igammac": _promoted("igammac_cpu"), "im2col": "im2col_out_cpu", "index_add": _index_add,
    "index_copy": "index_copy_cpu", "index_fill.int_Scalar": "index_fill_cpu",
    "index_select": _index_select, "isin.Tensor_Tensor": "isin_default_cpu",
    "kthvalue": "kthvalue_cpu", "lcm": _promoted("lcm_cpu"), "le.Scalar": _promoted("le_cpu"),
    "le.Tensor": _promoted("le_cpu"), "leaky_relu": "leaky_relu_cpu",
    "lerp.Scalar": _promoted("lerp_kernel_scalar"), "linalg_cross": "cross",
    "linalg_householder_product": "orgqr_cpu", "linalg_lu": "lu_cpu",
    "linalg_lu_factor_ex": "lu_cpu", "linalg_solve_triangular": "triangular_solve_cpu",
    "log_normal_": "log_normal_cpu", "log_sigmoid_forward": "log_sigmoid_cpu",
    "logaddexp": _promoted("logaddexp_cpu"), "logaddexp2": _promoted("logaddexp2_cpu"),
    "logcumsumexp": "logcumsumexp_out_cpu", "logical_and": _promoted("logical_and_cpu"),
    "logical_not": "logical_not_cpu", "logical_or": _promoted("logical_or_cpu"),
    "logical_xor": _promoted("logical_xor_cpu"), "lt.Scalar": _promoted("lt_cpu"),
    "lt.Tensor": _promoted("lt_cpu"), "lu_unpack": "tril", "masked_fill.Scalar": "masked_fill",
    "masked_scatter": "masked_scatter", "masked_select": "masked_select", "max": "max_all",
    "max.dim": "max_cpu", "max_pool2d_with_indices": "max_pool2d",
    "max_pool3d_with_indices": "max_pool3d", "max_unpool2d": "max_unpool2d",
    "max_unpool3d": "max_unpool3d", "maximum": _promoted("maximum_cpu"), "median": "median_cpu",
    "min": "min_all", "min.dim": "min_cpu", "minimum": _promoted("minimum_cpu"),
    "mish": "mish_cpu", "mm": "addmm_impl_cpu_", "mode": "mode_cpu", "mse_loss": "mse_cpu",
    "mv": "addmv_impl_cpu", "nanmedian": "median_cpu", "native_batch_norm": "batch_norm",
    "native_group_norm": "GroupNormKernelImpl", "native_layer_norm": "LayerNormKernelImpl",
    "neg": "neg_cpu", "nextafter": _promoted("nextafter_cpu"),
    "nll_loss_forward": "nll_loss_out_frame", "nonzero": "nonzero_count_cpu",
    "normal.Tensor_Tensor": "min_all", "normal_": "normal_kernel_cpu", "ormqr": "ormqr_cpu",
    "pixel_shuffle": "pixel_shuffle", "pixel_unshuffle": "pixel_unshuffle",
    "pow.Tensor_Scalar": _promoted("pow"), "pow.Tensor_Tensor": _promoted("pow"),
    "put": "take_put_cpu", "reflection_pad1d": "reflection_pad1d", "relu": "clamp_min_scalar_cpu",
    "remainder.Tensor": _promoted("remainder_cpu"), "replication_pad1d": "replication_pad1d",
    "replication_pad2d": "replication_pad2d", "round.decimals": _round_decimals,
    "rsub.Tensor": _promoted("add_stub"), "scatter.src": "scatter_gather_tensor_cpu",
    "scatter_add": "scatter_gather_tensor_cpu",
    "scatter_reduce.two": _scatter_reduce,
    "segment_reduce": "_segment_reduce_cpu", "sgn": "sign_cpu", "sign": "sign_cpu",
    "silu": "silu_cpu", "softplus": "softplus_cpu", "softshrink": "softshrink_check",
    "sub.Tensor": _promoted("add_stub"), "sub_.Tensor": "add_stub",
    "sum": _to_dtype("sum_cpu", 1), "sum.dim_IntList": _to_dtype("sum_cpu", 3),
    "take": "take_cpu", "threshold": "threshold_cpu",
    "topk": "topk_cpu", "trace": "trace", "triangular_solve": "triangular_solve_cpu",
    "tril": "tril", "tril_indices": "tril_indices", "triu": "triu",
    "triu_indices": "triu_indices", "uniform_": "check_uniform_bounds",
    "upsample_bicubic2d": "compute_indices_weights_cubic",
    "upsample_bilinear2d": "upsample_bilinear2d_channels_last",
    "upsample_linear1d": "compute_indices_weights_linear",
    "upsample_nearest1d": "compute_indices_weights_nearest",
    "upsample_trilinear3d": "compute_indices_weights_linear", "vdot": "dot",
    # the other overloads of listed ops (their out= forms reach them too)
    "bucketize.Scalar": "searchsorted_out_cpu", "clamp": "clamp_scalar_cpu",
    "clamp_max": "clamp_max_scalar_cpu", "clamp_min": "clamp_min_scalar_cpu",
    "count_nonzero.dim_IntList": "nonzero_count_cpu", "index_fill.int_Tensor": "index_fill_cpu",
    "lerp.Tensor": _promoted("lerp_kernel_tensor"), "masked_fill.Tensor": "masked_fill",
    "median.dim": "median_out", "nanmedian.dim": "median_out",
    "scatter.reduce": "scatter_gather_tensor_cpu", "scatter.value": "scatter_gather_scalar_cpu",
    "scatter.value_reduce": "scatter_gather_scalar_cpu",
    "searchsorted.Scalar": "searchsorted_out_cpu",
    "searchsorted.Tensor": lambda args, kwargs, dt: (  # (no values: returns before its dispatch)
        "searchsorted_out_cpu" if 0 not in args[1]._size else None),
}


def _barebones(args, kwargs):
    """The first barebones unsigned dtype among the tensors (in lists too) and the dtypes asked
    for (``sum(..., dtype=)``, a factory's ``dtype=``)."""
    for a in args:
        dt = a if a.__class__ is D.dtype else getattr(a, "_dtype", None)
        if dt in BAREBONES:
            return dt
        if isinstance(a, (list, tuple)):
            for t in a:
                if getattr(t, "_dtype", None) in BAREBONES:
                    return t._dtype
    dt = kwargs.get("dtype")  # (factories: the dtype asked for)
    return dt if dt in BAREBONES else None


def check(op, args, kwargs):
    """PyTorch's NotImplementedError when ``op`` meets a barebones unsigned tensor (or is asked
    for one) in a dispatch that lacks them: the dtype the dispatch runs on is named."""
    dt = _barebones(args, kwargs)
    if dt is None:
        return
    spec = NO_CPU_KERNEL[op]
    if callable(spec):
        spec = spec(args, kwargs, dt)
        if spec is None:  # (this op has a kernel for these arguments)
            return
    name, dt = spec if isinstance(spec, tuple) else (spec, dt)
    raise NotImplementedError(f'"{name}" not implemented for \'{dt._short}\'')


# the listed ops whose CPU kernel (or an in-place twin's) :func:`gate` wrapped (a test checks
# that it is every one)
GATED = set()


def twin(op):
    """The functional overload of an in-place one ("sub_.Tensor": "sub.Tensor"), else None."""
    base, dot, overload = op.partition(".")
    if base.endswith("_") and not base.startswith("_"):
        return base[:-1] + dot + overload
    return None


def _listed(op):
    """The row of ``op``: its own, or its functional twin's for an in-place overload, which
    shares the dispatch."""
    if op in NO_CPU_KERNEL:
        return op
    functional = twin(op)
    return functional if functional in NO_CPU_KERNEL else None


def gate(op, fn, in_kernel=False):
    """CPU kernel ``fn`` of ``op``, behind :func:`check` when ``op`` (or its functional twin) is
    listed; ``in_kernel``: ``fn`` checks itself (``float8.IN_KERNEL``), only recorded."""
    row = _listed(op)
    if row is None:
        return fn
    GATED.add(row)
    if in_kernel:
        return fn

    @functools.wraps(fn)
    def kernel(*args, **kwargs):
        # (the common case, tensors of other dtypes, decided here: two calls less per op)
        for a in args:
            if a.__class__ in _SEQUENCES or getattr(a, "_dtype", None) in BAREBONES or \
                    a.__class__ is D.dtype and a in BAREBONES:
                check(row, args, kwargs)
                break
        else:
            if kwargs:
                check(row, args, kwargs)
        return fn(*args, **kwargs)
    return kernel


_SEQUENCES = frozenset((list, tuple))
