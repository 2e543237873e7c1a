"""The dtype an ``out=`` tensor may have, op by op, as ATen checks it: one table for every
backend's out= kernels (``generic.out_wrapper`` and the hand-written ones through
``generic.write_checked``). ATen has several rules (structured kernels want the result's dtype
exactly, TensorIterator wants one it can cast to, linalg a safely castable one, older kernels their
own check and message); each op is keyed to the rule and message it meets in ATen."""
from ..._core.promotion import can_cast

# out= dtype rules, checked on the functional result before anything is written. A rule is
# (test(result dtype, out dtype), message[, exception type: RuntimeError]), a tuple of them (one
# per output), or a function of the functional's arguments and the outs returning one (where
# the inputs decide); the message is a template of ``out``/``result`` (the dtypes) and
# ``out_type`` (out's legacy tensor type name), or a function of (result dtype, out dtype). An
# op with a rule skips TensorIterator's can_cast(result, out) check, every other op's rule.

def _same(result, out):
    return out is result


def _casts(result, out):
    return can_cast(result, out)


def _complex_out(result, out):
    return out.is_complex


def _floating_out(result, out):
    return out.is_floating_point


def _inexact_out(result, out):
    return out.is_floating_point or out.is_complex


def _bool_out(result, out):
    return out._short == "Bool"


def _bool_or_byte_out(result, out):
    return out._short in ("Bool", "Byte")


def _real_out(result, out):
    return not out.is_complex


def _any_out(result, out):
    return True


def _exact(message):
    return (_same, message)


def _castable(message):
    return (_casts, message)


# the codegen's resize_out (structured kernels) and copy_arg (autogen'd out= kernels)
_RESIZE_OUT = _exact("Expected out tensor to have dtype {result._cpp}, but got {out._cpp} instead")
# TensorIterator built with check_all_same_dtype (unary ops without promotion, clamp, activations)
_ALL_SAME = _exact("Found dtype {out._short} but expected {result._short}")
# linalg's checkLinalgCompatibleDtype
_LINALG_CAST = ("{name}: Expected result to be safely castable from {{result._short}} dtype, but "
                "got result with dtype {{out._short}}")
# ATen's checkScalarType / TORCH_CHECK_TYPE in older kernels
_SCALAR_TYPE = _exact("expected scalar type {result._short} but found {out._short}")
_CUM_SCALAR_TYPE = _exact("expected scalar_type {result._short} but found {out._short}")
_FFT_C = "{name} expects a complex output tensor, but got {{out._short}}"
_FFT_R = "{name} expects a floating point output tensor, but got {{out._short}}"


def _linalg(name):
    return _castable(_LINALG_CAST.format(name=name))


def _fft(name, complex_out=True):
    return (_complex_out, _FFT_C.format(name=name)) if complex_out else \
        (_floating_out, _FFT_R.format(name=name))


def _searchsorted_message(result, out):
    return ("torch.searchsorted(): output tensor's dtype is wrong, it can only be Int(int32) or "
            "Long(int64) depending on whether out_int32 flag is True, but we got output tensor's "
            f"dtype {out._short} and out_int32 flag is {result._short == 'Int'}")


_MEDIAN = (_exact("Expected tensor for 'values' to have the same type as tensor for argument #2 "
                  "'self'; but type {out_type} does not equal torch.{result._short}Tensor (while "
                  "checking arguments for median)"),
           _exact("Expected tensor for argument #1 'indices' to have scalar type Long; but got "
                  "{out_type} instead (while checking arguments for median)"))
_TENSORDOT = _exact("tensordot: Expected the output tensor to have dtype {result._short}, but got "
                    "an output tensor with dtype {out._short}")
_DOT = _exact("result dtype {out._short} does not match input dtype {result._short}")
_MULTI_DOT = _exact("multi_dot(): expected out tensor to have dtype {result._cpp} but got "
                    "{out._cpp}")
_MV = _exact("addmv input tensors must have the same dtype, but got {out._short}, {result._short}, "
             "and {result._short}")
_QUANTILE = _exact("quantile() out tensor must be same dtype as the input tensor")
_UNARY_CAN_CAST = _castable(
    "Expected canCast( typeMetaToScalarType(self.dtype()), typeMetaToScalarType(out.dtype())) to "
    "be true, but got false.  (Could this error message be improved?  If so, please report an "
    "enhancement request to PyTorch.)")


def _std_var(args, outs):
    """std/var along given dims of a non-empty real input reduce in a complex out's dtype, which
    has no kernel; a full reduction (no dims) casts its result instead. Other outs: can_cast."""
    self, dim = args[0], args[1]
    if self._dtype.is_complex or not dim or not self.numel() or not outs[0]._dtype.is_complex:
        return None
    return (_real_out, '"std_cpu" not implemented for \'{out._short}\'', NotImplementedError)


def _mvlgamma(args, outs):
    """(sic) ATen's mvlgamma_out names self's dtype the result type and the result's the
    desired output type."""
    return _castable("mvlgamma: result type " + args[0]._dtype._short + " can't be cast to the "
                     "desired output type {result._short}")


# Keyed by the functional overload ("max.dim") or, for all its overloads, the op's name ("mm").
_OUT_DTYPE_RULES = {
    "multinomial": _exact("multinomial expects Long tensor out, got: {out._short}"),
    "nonzero_static": _exact("nonzero_static: Expected out tensor to have scalar type Long but "
                             "got scalar type{out._short}"),
    # batch norm's CPU kernel checks each output's scalar type; its reserve may be any
    "_native_batch_norm_legit": _SCALAR_TYPE,
    "_batch_norm_with_update": (_SCALAR_TYPE,) * 3 + ((_any_out, ""),),
    # bernoulli.out is bernoulli_ on out (drawn in out's dtype); bernoulli.p's out= is
    # TensorIterator's
    "bernoulli": (_real_out, '"bernoulli_tensor_cpu_self_" not implemented for \'{out._short}\'',
                  NotImplementedError),
    "bernoulli.p": None,
    "hash_tensor": _exact("Expected result to be of dtype uint64, but got {out._short}"),
    "fractional_max_pool3d_backward": _SCALAR_TYPE,  # (not structured, unlike the 2d one)
    # structured kernels outside TensorIterator (the codegen's resize_out check)
    **dict.fromkeys([
        "mm", "bmm", "addmm", "linear", "_addmm_activation", "baddbmm", "addmv", "_softmax", "_log_softmax", "tril", "triu",
        "fractional_max_pool2d", "fractional_max_pool2d_backward", "fractional_max_pool3d",
        "_convert_indices_from_coo_to_csr",
        "_convert_indices_from_csr_to_coo",
        "norm", "sort", "topk", "max.dim", "min.dim", "aminmax", "linalg_cross", "cross",
        "diag", "argmax", "argmin", "argsort", "msort", "avg_pool2d", "avg_pool3d", "index_add",
        "index_copy", "isin", "linalg_det", "linalg_eigvalsh", "linalg_lu",
        "linalg_lu_factor_ex", "linalg_lu_solve", "linalg_solve", "linalg_svdvals",
        "linalg_vector_norm", "reflection_pad1d",
        "reflection_pad3d", "replication_pad1d", "replication_pad2d", "replication_pad3d",
        "renorm", "scatter", "scatter_add", "scatter_reduce", "take_along_dim", "inverse",
        "linalg_inv", "linalg_cholesky",
        "upsample_nearest1d", "upsample_nearest2d", "upsample_nearest3d", "upsample_linear1d",
        "upsample_bilinear2d", "upsample_bicubic2d", "upsample_trilinear3d",
        "_upsample_nearest_exact1d", "_upsample_nearest_exact2d", "_upsample_nearest_exact3d",
        "_upsample_bilinear2d_aa", "_upsample_bicubic2d_aa", "_upsample_lanczos2d_aa",
        "_softmax_backward_data", "_log_softmax_backward_data", "linalg_lu_factor",
        "linalg_ldl_factor", "linalg_ldl_factor_ex", "linalg_ldl_solve", "frobenius_norm",
        "triangular_solve", "qr", "lu_unpack", "lu_solve", "softmax", "log_softmax",
        "linalg_inv_ex", "linalg_solve_ex", "linalg_cholesky_ex", "linalg_slogdet", "slogdet",
        "linalg_svd", "linalg_qr", "linalg_eigh", "_linalg_svd", "_linalg_eigh",
        "_linalg_solve_ex", "_linalg_det", "_linalg_slogdet"],
        _RESIZE_OUT),
    **dict.fromkeys([
        "ceil", "floor", "trunc", "fix", "frac", "round", "special_round", "neg",
        "negative", "sign", "sgn", "bitwise_not", "conj_physical", "clamp", "clamp_min",
        "clamp_max", "clip", "elu", "gelu", "hardshrink", "hardsigmoid", "hardswish", "hardtanh",
        "leaky_relu", "mish", "silu", "softplus", "softshrink", "lerp.Tensor",
        "binary_cross_entropy"], _ALL_SAME),
    # complex_out/polar_out check their out's dtype exactly (TensorFactories.cpp)
    **dict.fromkeys(["complex", "polar"], _exact(
        "Expected object of scalar type {result._short} but got scalar type {out._short} for "
        "argument 'out'")),
    # out= kernels written by hand, each with its own check
    # all_out/any_out take a bool or uint8 out (check_result_is_bytebool)
    **{n: (_bool_or_byte_out, f"{n} only supports bool tensor for result, got: {{out._short}}")
       for n in ("all", "any")},
    "amax": _exact("Expected the dtype for input and out to match, but got {result._short} for "
                   "input's dtype and {out._short} for out's dtype."),
    "amin": _exact("Expected the dtype for input and out to match, but got {result._short} for "
                   "input's dtype and {out._short} for out's dtype."),
    **dict.fromkeys(["searchsorted", "bucketize.Tensor"], _exact(_searchsorted_message)),
    **dict.fromkeys(["chain_matmul", "linalg_multi_dot"], _MULTI_DOT),
    **dict.fromkeys(["tensordot", "inner"], _TENSORDOT),
    **dict.fromkeys(["dot", "vdot"], _DOT),
    # matmul_out writes through dot_out, mv_out or mm_out/bmm_out, whichever the ranks pick
    **dict.fromkeys(["matmul", "linalg_matmul"], lambda args, outs: (
        _DOT if args[0].dim() == 1 and args[1].dim() == 1 else
        _MV if args[1].dim() == 1 else _RESIZE_OUT)),
    "mv": _MV,
    # abs of a complex tensor casts its real result into out (unary_op_impl_with_complex_to_
    # float_out); of a real one, TensorIterator wants out of the input's dtype
    "abs": lambda args, outs: None if args[0]._dtype.is_complex else _ALL_SAME,
    "addbmm": _exact("self and mat2 must have the same dtype, but got {out._short} and "
                     "{result._short}"),
    "cholesky": _linalg("cholesky"), "cholesky_inverse": _linalg("cholesky_inverse"),
    "cholesky_solve": _linalg("cholesky_solve"), "linalg_cond": _linalg("linalg.cond"),
    **dict.fromkeys(["linalg_householder_product", "orgqr"],
                    _linalg("torch.linalg.householder_product")),
    "linalg_matrix_power": _linalg("matrix_power"), "matrix_power": _linalg("matrix_power"),
    "linalg_matrix_rank": _linalg("torch.linalg.matrix_rank"),
    "linalg_pinv": _linalg("linalg.pinv"), "linalg_tensorinv": _linalg("tensorinv"),
    "linalg_tensorsolve": _linalg("tensorsolve"),
    # (PyTorch's lstsq names the residuals "solution" in its message too)
    "linalg_lstsq": tuple(_castable(f"torch.linalg.lstsq: Expected {n} to be safely castable "
                                    f"from {{result._short}} dtype, but got {n} with dtype "
                                    f"{{out._short}}")
                          for n in ("solution", "solution", "rank", "singular_values")),
    "linalg_eig": tuple(_castable(f"torch.linalg.eig: Expected {n} to be safely castable from "
                                  f"{{result._short}} dtype, but got {n} with dtype {{out._short}}")
                        for n in ("eigenvalues", "eigenvectors")),
    "linalg_eigvals": _castable("torch.linalg.eigvals: Expected eigenvalues to be safely castable "
                                "from {result._short} dtype, but got eigenvalues with dtype "
                                "{out._short}"),
    "geqrf": tuple(_castable(f"torch.geqrf: Expected {n} to be safely castable from "
                             f"{{result._short}} dtype, but got {n} with dtype {{out._short}}")
                   for n in ("a", "tau")),
    **dict.fromkeys(["linalg_matrix_norm", "nuclear_norm"], _exact(
        "linalg.matrix_norm expected out tensor dtype {result._short} but got: {out._short}")),
    "linalg_norm": _exact("linalg.norm expected out tensor dtype {result._short} but got: "
                          "{out._short}"),
    "linalg_vecdot": _exact("linalg.vecdot: Expected out of dtype{result._short} but found "
                            "{out._short}"),
    "linalg_solve_triangular": _SCALAR_TYPE, "col2im": _SCALAR_TYPE, "im2col": _SCALAR_TYPE,
    "max_unpool2d": _SCALAR_TYPE, "max_unpool3d": _SCALAR_TYPE, "reflection_pad2d": _SCALAR_TYPE,
    "cummax": _CUM_SCALAR_TYPE, "cummin": _CUM_SCALAR_TYPE, "logcumsumexp": _CUM_SCALAR_TYPE,
    **dict.fromkeys(["logsumexp", "special_logsumexp"], (
        _inexact_out, "logsumexp(): Expected floating point type for result tensor, but got: "
                       "{out._short}")),
    "index_select": _exact("index_select(): self and result must have the same scalar type"),
    "masked_select": _exact("masked_select(): self and result must have the same scalar type"),
    "take": _exact("take(): self and out expected to have the same dtype, but got self.dtype = "
                   "{result._short} and out.dtype = {out._short}"),
    "where": _exact("Expected out type to be {result._short} but got {out._short}"),
    "histc": _exact("torch.histogram: input tensor and hist tensor should have the same dtype, "
                    "but got input {result._cpp} and hist {out._cpp}"),
    "heaviside": _exact(lambda result, out: "heaviside is not yet implemented for " + (
        "complex tensors." if out.is_complex else "tensors with different dtypes.")),
    "nan_to_num": _exact("nan_to_num: dtype of out: {out._short} should be same as input: "
                         "{result._short}"),
    "nonzero": _exact("nonzero: Expected out tensor to have scalar type Long but got scalar "
                      "type{out._short}"),
    "ormqr": _exact("torch.ormqr: Expected input and result to have the same dtype, but input "
                    "has dtype{result._short} and result has dtype {out._short}"),
    "narrow_copy": _exact("Expected self.dtype() == output.dtype() to be true, but got false.  "
                          "(Could this error message be improved?  If so, please report an "
                          "enhancement request to PyTorch.)"),
    **dict.fromkeys(["quantile", "nanquantile"], _QUANTILE),
    **dict.fromkeys(["max", "min"], _UNARY_CAN_CAST),  # max.unary_out, min.unary_out
    "float_power": _exact("the output given to float_power has dtype {out._short} but the "
                          "operation's result requires dtype {result._short}"),
    "mean": _castable("mean.dtype_out(): input types can't be cast to the desired output type "
                      "{out._short}"),
    **dict.fromkeys(["mvlgamma", "special_multigammaln"], _mvlgamma),
    **dict.fromkeys(["std", "var"], _std_var),
    "ldexp": _castable("ldexp can't be cast to the desired output type {out._short}"),
    # overloads of the ops above that follow TensorIterator's rule
    **dict.fromkeys(["max.other", "min.other", "clamp.Tensor", "clamp_min.Tensor",
                     "clamp_max.Tensor", "clip.Tensor", "mean.dim"], None),
    # multi-output kernels: one rule per output
    **dict.fromkeys(["median.dim", "nanmedian.dim"], _MEDIAN),
    "mode": (_exact("expected scalar type '{result._short}' but got '{out._short}' for values "
                    "output"),
             _exact("expected scalar type 'Long' but got '{out._short}' for indices output")),
    "kthvalue": (_exact("output values must be of same type as input"),
                 _exact("output indices must be of scalar type Long")),
    "frexp": (_exact("torch.frexp() expects mantissa to have dtype {result._cpp} but got "
                     "{out._cpp}"),
              _exact("torch.frexp() expects exponent to have int dtype but got {out._cpp}")),
    # the FFTs write any out of the right kind, cast (fft_r2c/c2c/c2r: any dtype at all)
    **dict.fromkeys(["_fft_c2c", "_fft_r2c", "_fft_c2r"], (_any_out, "")),
    "fft_fft": _fft("fft"), "fft_ifft": _fft("ifft"), "fft_rfft": _fft("rfft"),
    "fft_ihfft": _fft("ihfft"), **dict.fromkeys(["fft_fft2", "fft_fftn", "fft_ifft2",
                                                 "fft_ifftn"], _fft("fftn")),
    **dict.fromkeys(["fft_rfft2", "fft_rfftn"], _fft("rfftn")),
    **dict.fromkeys(["fft_ihfft2", "fft_ihfftn"], _fft("ihfftn")),
    "fft_irfft": _fft("irfft", False), "fft_hfft": _fft("hfft", False),
    **dict.fromkeys(["fft_irfft2", "fft_irfftn"], _fft("irfftn", False)),
    **dict.fromkeys(["fft_hfft2", "fft_hfftn"], _fft("hfftn", False)),
    **{n: (_bool_out, f"{n} does not support non-boolean outputs.")
       for n in ("isneginf", "isposinf", "signbit")},
}

# Reductions whose dtype, when not given, is out's (ATen's infer_dtype_from_optional)
OUT_GIVES_DTYPE = {"sum.dim_IntList", "prod.dim_int"}

# The out= overloads PyTorch's codegen writes from the functional op (``autogen:`` in its
# native_functions.yaml, CompositeViewCopyKernels.cpp): copy_arg wants the result's dtype exactly
# (randint_like's, which draw in out's dtype, are left out: composite/random.py)
_OUT_COPY_ARG = set("""
    _adaptive_avg_pool2d.out _adaptive_avg_pool2d_backward.out _adaptive_avg_pool3d.out
    _adaptive_avg_pool3d_backward.out _batch_norm_no_update.out _cdist_backward.out
    _cdist_forward.out _conj_physical.out _convolution.out _euclidean_dist.out
    _fake_quantize_learnable_per_channel_affine.out _fake_quantize_learnable_per_tensor_affine.out
    _fake_quantize_per_tensor_affine_cachemask_tensor_qparams.out
    fake_quantize_per_channel_affine_cachemask.out fake_quantize_per_tensor_affine_cachemask.out _masked_softmax.out
    _masked_softmax_backward.out _native_batch_norm_legit_no_training.out
    _native_multi_head_attention.out _pdist_backward.out _pdist_forward.out _pin_memory.out
    _segment_reduce_backward.out _transform_bias_rescale_qkv.out
    _transformer_encoder_layer_fwd.out _unique2.out _unsafe_view.out add.Scalar_out
    affine_grid_generator.out alias_copy.out as_strided_copy.out as_strided_scatter.out
    bernoulli.Tensor_out bernoulli.float_out binary_cross_entropy_with_logits.out bincount.out
    bitwise_and.Scalar_Tensor_out bitwise_left_shift.Scalar_Tensor_out
    bitwise_or.Scalar_Tensor_out bitwise_right_shift.Scalar_Tensor_out
    bitwise_xor.Scalar_Tensor_out block_diag.out bucketize.Scalar_out celu.out
    constant_pad_nd.out conv_tbc.out convolution.out count_nonzero.dim_IntList_out
    count_nonzero.out detach_copy.out diag_embed.out diagonal_copy.out diagonal_scatter.out
    dist.out div.Scalar_mode_out div.Scalar_out embedding.out embedding_dense_backward.out
    expand_copy.out flip.out floor_divide.Scalar_out grid_sampler_2d.out grid_sampler_3d.out
    hardswish_backward.out index_fill.int_Scalar_out index_fill.int_Tensor_out isinf.out
    isnan.out linalg_matrix_exp.out masked_fill.Scalar_out masked_fill.Tensor_out
    masked_scatter.out median.out mul.Scalar_out nanmedian.out native_dropout_backward.out
    norm.ScalarOpt_dtype_out norm.Scalar_out permute_copy.out pixel_shuffle.out
    pixel_unshuffle.out poisson.out prod.out put.out relu.out remainder.Scalar_Tensor_out repeat.out
    repeat_interleave.Tensor_out roll.out rot90.out rsub.Scalar_out rsub.Tensor_out
    segment_reduce.out select_copy.int_out select_scatter.out slice_copy.Tensor_out
    slice_scatter.out squeeze_copy.dim_out squeeze_copy.dims_out squeeze_copy.out
    std_mean.correction_out sub.Scalar_out sum.out t_copy.out trace.out transpose_copy.int_out
    tril_indices.out triu_indices.out unfold_copy.out unique_consecutive.out unique_dim.out
    unsqueeze_copy.out var_mean.correction_out view_as_complex_copy.out view_as_real_copy.out
    view_copy.dtype_out view_copy.out""".split())

# PyTorch's legacy tensor type names, which a few old checks print
_LEGACY_TYPES = {"Byte", "Char", "Short", "Int", "Long", "Half", "Float", "Double"}


def out_rules(functional_qualname, out_qualname, opname, nout):
    """One dtype rule (or None: TensorIterator's can_cast) per output of an out= kernel."""
    if out_qualname in _OUT_COPY_ARG:
        rule = _RESIZE_OUT
    elif functional_qualname in _OUT_DTYPE_RULES:
        rule = _OUT_DTYPE_RULES[functional_qualname]
    else:
        rule = _OUT_DTYPE_RULES.get(opname)
    if rule is None or callable(rule) or not isinstance(rule[0], tuple):
        return (rule,) * nout
    return rule


def check_out_dtypes(rules, results, outs, args):
    """The rules of each output (resolved on the arguments where they depend on them)."""
    rules = tuple(rule(args, outs) if callable(rule) else rule for rule in rules)
    for rule, r, o in zip(rules, results, outs):
        if rule is not None and not rule[0](r._dtype, o._dtype):
            msg, exc = rule[1], rule[2] if len(rule) > 2 else RuntimeError
            out_type = f"torch.{o._dtype._short}Tensor" if o._dtype._short in _LEGACY_TYPES \
                else f"CPU{o._dtype._short}Type"
            raise exc(msg(r._dtype, o._dtype) if callable(msg) else
                      msg.format(out=o._dtype, result=r._dtype, out_type=out_type))
    return rules
