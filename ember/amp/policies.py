"""Autocast's kernels: one table per device mapping an op overload to its cast policy.

PyTorch 2.13 registers these (``aten/src/ATen/autocast_mode.cpp``) on the AutocastCPU and
AutocastCUDA keys; every other op falls through. An autocast kernel, like PyTorch's
``WrapFunction_``, excludes its own Autocast key from this thread's dispatch TLS, casts the
arguments (through the dispatcher, with ``aten::_to_copy``, so autograd below records the casts),
and calls the op again from the top: the nested call skips autocast and reaches autograd, so the
graph sees the low-precision op and gradients flow back to fp32 leaves in fp32.

Policies (``CastPolicy`` in PyTorch):

* ``lower_precision_fp``: cast eligible arguments to the region's dtype (bfloat16 / float16);
* ``fp32``: cast eligible arguments to float32;
* ``fp32_set_opt_dtype``: if the first argument is eligible and no ``dtype`` was given, pass
  ``dtype=float32`` (the op then computes in float32 without a cast copy);
* ``fp32_append_dtype``: call the overload that takes a ``dtype``, with float32;
* ``promote``: cast to the widest floating type among the arguments (float32 wins);
* ``banned``: raise (``binary_cross_entropy`` on CUDA).

A tensor is eligible when it is floating point, lives on the autocast device, and is not
float64 (float64 is never cast). Tables are keyed by overload name; kernels are attached when an
op in a table is defined (ops are defined over time through ember.library).
"""
from .._core import dtype as D
from .._dispatch import dispatcher as _d
from .._dispatch import tls as _tls
from .._dispatch.keys import K, bit
from . import autocast_mode as _mode

_state = _mode.state

# ---------------------------------------------------------------------------------------------
# The tables (PyTorch 2.13; tests/test_autocast.py checks them against torch's registrations).

_CPU_LOWER = """
    conv1d conv1d.padding conv2d conv2d.padding conv3d conv3d.padding bmm mm linalg_vecdot
    baddbmm addmm _addmm_activation addbmm linear _convolution.deprecated matmul conv_tbc
    mkldnn_rnn_layer conv_transpose1d conv_transpose2d.input conv_transpose3d.input prelu
    scaled_dot_product_attention _native_multi_head_attention"""
_CPU_FP32 = """
    avg_pool3d binary_cross_entropy grid_sampler grid_sampler_2d _grid_sampler_2d_cpu_fallback
    grid_sampler_3d polar prod prod.dim_int quantile quantile.scalar nanquantile
    nanquantile.scalar stft stft.center cdist trace view_as_complex cholesky cholesky_inverse
    cholesky_solve inverse lu_solve orgqr ormqr pinverse max_pool3d max_unpool2d max_unpool3d
    adaptive_avg_pool3d adaptive_max_pool3d fractional_max_pool2d fractional_max_pool3d
    reflection_pad1d reflection_pad2d replication_pad1d replication_pad2d replication_pad3d
    mse_loss cosine_embedding_loss nll_loss nll_loss2d hinge_embedding_loss poisson_nll_loss
    smooth_l1_loss cross_entropy_loss l1_loss huber_loss margin_ranking_loss soft_margin_loss
    triplet_margin_loss multi_margin_loss ctc_loss.IntList ctc_loss.Tensor kl_div
    multilabel_margin_loss multilabel_margin_loss_forward binary_cross_entropy_with_logits
    fft_fft fft_ifft fft_fft2 fft_ifft2 fft_fftn fft_ifftn fft_rfft fft_irfft fft_rfft2
    fft_irfft2 fft_rfftn fft_irfftn fft_hfft fft_ihfft linalg_cond linalg_cond.p_str
    linalg_matrix_rank linalg_matrix_rank.atol_rtol_tensor linalg_matrix_rank.atol_rtol_float
    linalg_matrix_rank.tol_tensor linalg_solve linalg_cholesky linalg_cholesky_ex
    linalg_svdvals linalg_eigvals linalg_eigvalsh linalg_inv linalg_inv_ex
    linalg_householder_product linalg_tensorinv linalg_tensorsolve linalg_qr linalg_svd
    linalg_eig linalg_eigh linalg_lstsq fake_quantize_per_tensor_affine geqrf _lu_with_info
    qr svd triangular_solve"""
_CPU_PROMOTE = "stack cat index_copy"

_CUDA_LOWER = """
    _convolution _convolution.deprecated conv1d conv2d conv3d conv_tbc conv_transpose1d
    conv_transpose2d.input conv_transpose3d.input convolution prelu addmm addmv addr matmul
    einsum mm mv linalg_vecdot linear addbmm baddbmm bmm chain_matmul linalg_multi_dot
    _thnn_fused_lstm_cell _thnn_fused_gru_cell lstm_cell gru_cell rnn_tanh_cell rnn_relu_cell
    _scaled_dot_product_flash_attention scaled_dot_product_attention cudnn_convolution
    cudnn_convolution_transpose"""
_CUDA_FP32 = """
    acos asin cosh erfinv exp expm1 log log10 log2 log1p reciprocal rsqrt sinh tan
    pow.Tensor_Scalar pow.Tensor_Tensor pow.Scalar softplus layer_norm native_layer_norm
    rms_norm group_norm frobenius_norm.dim nuclear_norm nuclear_norm.dim cosine_similarity
    poisson_nll_loss cosine_embedding_loss nll_loss nll_loss2d hinge_embedding_loss kl_div
    l1_loss smooth_l1_loss huber_loss mse_loss margin_ranking_loss multilabel_margin_loss
    soft_margin_loss triplet_margin_loss multi_margin_loss binary_cross_entropy_with_logits
    dist pdist cdist renorm logsumexp upsample_nearest1d _upsample_nearest_exact1d
    upsample_nearest2d _upsample_nearest_exact2d upsample_nearest3d _upsample_nearest_exact3d
    upsample_linear1d upsample_bilinear2d _upsample_bilinear2d_aa upsample_trilinear3d
    upsample_bicubic2d _upsample_bicubic2d_aa"""
_CUDA_FP32_SET_OPT_DTYPE = """
    prod prod.dim_int softmax.int log_softmax.int cumprod cumsum linalg_vector_norm
    linalg_matrix_norm linalg_matrix_norm.str_ord sum sum.dim_IntList"""
# fp32_append_dtype: the overload called instead, with dtype=float32 appended.
_CUDA_FP32_APPEND_DTYPE = {"norm.Scalar": "norm.ScalarOpt_dtype",
                           "norm.ScalarOpt_dim": "norm.ScalarOpt_dim_dtype"}
_CUDA_PROMOTE = """
    addcdiv addcmul atan2 bilinear cross dot vdot grid_sampler index_put tensordot scatter_add"""
_CUDA_BANNED = "binary_cross_entropy"

_BCE_BANNED_MESSAGE = (
    "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
    "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
    "In this case, combine the two layers using torch.nn.functional.binary_cross_entropy_with_logits\n"
    "or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n"
    "safe to autocast.")


def _table(**lists):
    table = {}
    for policy, names in lists.items():
        for name in (names.split() if isinstance(names, str) else names):
            table[name] = policy
    return table


# device type -> {overload name ("mm", "conv2d.padding") -> policy name}
TABLES = {
    "cpu": _table(lower_precision_fp=_CPU_LOWER, fp32=_CPU_FP32, promote=_CPU_PROMOTE),
    "cuda": _table(lower_precision_fp=_CUDA_LOWER, fp32=_CUDA_FP32,
                   fp32_set_opt_dtype=_CUDA_FP32_SET_OPT_DTYPE,
                   fp32_append_dtype=list(_CUDA_FP32_APPEND_DTYPE), promote=_CUDA_PROMOTE,
                   banned=_CUDA_BANNED),
}
_AUTOCAST_KEY = {"cpu": K.AutocastCPU, "cuda": K.AutocastCUDA}
# every device type with an Autocast key (custom ops may register for those without tables)
_AUTOCAST_KEY_OF_DEVICE = {"cpu": K.AutocastCPU, "cuda": K.AutocastCUDA, "xpu": K.AutocastXPU,
                           "privateuseone": K.AutocastPrivateUse1}


# ---------------------------------------------------------------------------------------------
# Casting (PyTorch's is_eligible / cached_cast).

def _is_eligible(t, device_type):
    return (t._dtype.is_floating_point and t._device.type == device_type
            and t._dtype is not D.float64)


def _to(t, dtype):
    from .._ops.overload import ops
    return ops.aten._to_copy.default._call(t, dtype, None, None, None, False, None)


def cached_cast(to_type, arg, device_type):
    """``arg`` cast to ``to_type`` if it is eligible; fp32 leaves that require grad are cast
    once per outermost autocast region (the weight cache)."""
    if not _is_eligible(arg, device_type) or arg._dtype is to_type:
        return arg
    can_try_cache = (to_type is _state.dtype[device_type] and arg._dtype is D.float32
                     and arg._grad_fn is None and arg.requires_grad and arg._base_ is None
                     and _state.cache_enabled)
    if not can_try_cache:
        return _to(arg, to_type)
    hit = _state.cache.get(id(arg))
    if hit is not None and hit[0] is arg:
        return hit[1]
    casted = _to(arg, to_type)
    _state.cache[id(arg)] = (arg, casted)
    return casted


def _prioritize(current, t, device_type):
    """One step of PyTorch's promote_type: float32 beats the lower-precision dtype."""
    if not (t._dtype.is_floating_point and t._device.type == device_type):
        return current
    nxt = t._dtype
    if nxt is D.float64:
        return current  # float64 arguments are ignored, never promoted to
    if current is D.float32 or nxt is D.float32:
        return D.float32
    lower = _state.dtype[device_type]
    if current is lower and nxt is lower:
        return lower
    raise RuntimeError("Unexpected floating ScalarType in at::autocast::prioritize")


# ---------------------------------------------------------------------------------------------
# Policies: fn(call, spec, device_type, args) -> result, args already a list.

def _cast_tensor_args(to_type, spec, device_type, args):
    for i in spec.tensor_args:
        a = args[i]
        if a is None:
            continue
        if isinstance(a, (list, tuple)):
            args[i] = type(a)(t if t is None else cached_cast(to_type, t, device_type) for t in a)
        else:
            args[i] = cached_cast(to_type, a, device_type)
    return args


def _lower_precision_fp(spec, device_type, args):
    return spec.call(*_cast_tensor_args(_state.dtype[device_type], spec, device_type, args))


def _fp32(spec, device_type, args):
    return spec.call(*_cast_tensor_args(D.float32, spec, device_type, args))


def _first_arg_eligible(spec, device_type, args):
    first = args[spec.tensor_args[0]] if spec.tensor_args else None
    return first is not None and hasattr(first, "_dtype") and _is_eligible(first, device_type)


def _fp32_set_opt_dtype(spec, device_type, args):
    if _first_arg_eligible(spec, device_type, args) and args[spec.dtype_arg] is None:
        args[spec.dtype_arg] = D.float32
    return spec.call(*args)


def _fp32_append_dtype(spec, device_type, args):
    first = args[0]
    out_type = D.float32 if _first_arg_eligible(spec, device_type, args) else first._dtype
    return spec.dtype_overload_call(*args, out_type)


def _promote(spec, device_type, args):
    to_type = _state.dtype[device_type]
    for i in spec.tensor_args:
        a = args[i]
        for t in (a if isinstance(a, (list, tuple)) else (a,)):
            if t is not None:
                to_type = _prioritize(to_type, t, device_type)
    return spec.call(*_cast_tensor_args(to_type, spec, device_type, args))


def _banned(spec, device_type, args):
    raise RuntimeError(_BCE_BANNED_MESSAGE)


POLICIES = {"lower_precision_fp": _lower_precision_fp, "fp32": _fp32,
            "fp32_set_opt_dtype": _fp32_set_opt_dtype, "fp32_append_dtype": _fp32_append_dtype,
            "promote": _promote, "banned": _banned}


class _OpSpec:
    """What a policy needs to know about one op: where its tensors and dtype are, how to call it."""

    def __init__(self, entry, dtype_overload=None):
        args = entry.schema.arguments
        self.entry = entry
        self.tensor_args = [i for i, a in enumerate(args) if a.base == "Tensor"]
        names = [a.name for a in args]
        self.dtype_arg = names.index("dtype") if "dtype" in names else None
        self._dtype_overload = dtype_overload

    @property
    def call(self):
        # The OpOverload (and its generated call) exists only once the op is fully defined.
        return self.entry.overload._call

    @property
    def dtype_overload_call(self):
        entry = _d.get_entry(f"{self.entry.namespace}::{self._dtype_overload}")
        if entry is None:
            raise NotImplementedError(f"autocast: {self.entry.qualname} needs "
                                      f"aten::{self._dtype_overload}, which ember does not have")
        return entry.overload._call


def _make_kernel(entry, device_type, policy_name):
    spec = _OpSpec(entry, _CUDA_FP32_APPEND_DTYPE.get(entry.qualname.partition("::")[2]))
    policy = POLICIES[policy_name]
    own_bit = bit(_AUTOCAST_KEY[device_type])
    tls = _tls.state

    def autocast_kernel(ks, *args):
        saved = tls.excluded
        tls.excluded = saved | own_bit  # ExcludeDispatchKeyGuard no_autocast(own key)
        try:
            return policy(spec, device_type, list(args))
        finally:
            tls.excluded = saved
    autocast_kernel.__name__ = f"autocast_{device_type}_{policy_name}"
    return autocast_kernel


def _cast(value, device_type, dtype):
    """``value`` with its eligible tensors (lists and tuples searched) cast to ``dtype``."""
    if hasattr(value, "_dtype"):
        return _to(value, dtype) if _is_eligible(value, device_type) and \
            value._dtype is not dtype else value
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(v, device_type, dtype) for v in value)
    return value


def cast_inputs_kernel(entry, device_type, dtype):
    """The Autocast kernel ``ember.library.register_autocast`` gives a custom op: eligible
    inputs cast to ``dtype``, then the op called again from the top with this device's autocast
    off (no weight cache: PyTorch's custom-op rule casts each call)."""
    own_bit = bit(_AUTOCAST_KEY_OF_DEVICE[device_type])
    tls = _tls.state
    call = entry.overload._call

    def autocast_kernel(*args):
        saved = tls.excluded
        tls.excluded = saved | own_bit
        try:
            return call(*_cast(args, device_type, dtype))
        finally:
            tls.excluded = saved
    autocast_kernel.__name__ = f"autocast_{device_type}_cast_inputs"
    return autocast_kernel


def _attach(entry):
    """The ember.library entry-setup hook: give a newly defined aten op its autocast kernels."""
    if entry.namespace != "aten":
        return
    name = entry.qualname.partition("::")[2]
    for device_type, table in TABLES.items():
        policy = table.get(name)
        if policy is not None:
            entry.register(_AUTOCAST_KEY[device_type], _d.Kernel(
                _make_kernel(entry, device_type, policy), _d.KEYSET,
                f"registered at ember/amp/policies.py ({policy})"))


def install():
    """Attach autocast kernels to every op already defined, and to every op defined later."""
    from ..library import _entry_setup_hooks
    if _attach in _entry_setup_hooks:
        return
    _entry_setup_hooks.append(_attach)
    for entry in list(_d._operators.values()):
        _attach(entry)
