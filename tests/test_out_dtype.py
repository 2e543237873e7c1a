"""out= tensors of the wrong dtype, against PyTorch: the structured kernels outside
TensorIterator (products, softmax, tril/triu, sort/topk, upsampling ...) refuse an out whose
dtype is not the result's with PyTorch's message, and write nothing; reductions that take their
dtype from out still accept it. Every out= overload the op table has no out= samples for (random
ops, factories, linalg, backward, batch-norm, transformer and fake-quantize internals, fractional
max pooling, hash_tensor, nonzero_static, _scaled_mm ...) is swept here over out dtypes; the
table's are swept in tests/test_out_sweep.py."""
import pytest

import ember
from helpers import assert_same


def _calls(L):
    s, b, v, a = L.ones(3, 3), L.ones(2, 3, 3), L.ones(3), L.ones(2, 3)
    i64 = L.int64
    return {
        "mm": lambda o: L.mm(s, s, out=o(3, 3)), "bmm": lambda o: L.bmm(b, b, out=o(2, 3, 3)),
        "addmm": lambda o: L.addmm(s, s, s, out=o(3, 3)),
        "baddbmm": lambda o: L.baddbmm(b, b, b, out=o(2, 3, 3)),
        "addmv": lambda o: L.addmv(v, s, v, out=o(3)),
        "_softmax": lambda o: L.ops.aten._softmax.out(a, 1, False, out=o(2, 3)),
        "_log_softmax": lambda o: L.ops.aten._log_softmax.out(a, 1, False, out=o(2, 3)),
        "tril": lambda o: L.tril(a, out=o(2, 3)), "triu": lambda o: L.triu(a, out=o(2, 3)),
        "norm": lambda o: L.norm(a, 2, 1, out=o(2)), "diag": lambda o: L.diag(s, out=o(3)),
        "sort": lambda o: L.sort(a, 1, out=(o(2, 3), L.empty(2, 3, dtype=i64))),
        "topk": lambda o: L.topk(a, 2, out=(o(2, 2), L.empty(2, 2, dtype=i64))),
        "upsample_nearest2d": lambda o: L._C._nn.upsample_nearest2d(
            L.ones(1, 1, 2, 2), [4, 4], out=o(1, 1, 4, 4)),
        # reductions whose dtype comes from out
        "sum": lambda o: L.sum(a, 1, out=o(2)), "cumsum": lambda o: L.cumsum(a, 1, out=o(2, 3)),
    }


@pytest.mark.parametrize("name", list(_calls(ember)))
def test_out_of_another_dtype_as_pytorch(torch, name):
    outcomes = []
    for L in (ember, torch):
        outs = []

        def o(*shape):
            t = L.full(shape, 7.0, dtype=L.float64)
            outs.append(t)
            return t
        try:
            _calls(L)[name](o)
            outcomes.append("ok")
        except RuntimeError as e:
            outcomes.append(str(e))
            assert all((t.numpy() == 7.0).all() for t in outs), "out written before the error"
    assert outcomes[0] == outcomes[1]


# out= overloads outside the op table's out= entries (random ops, factories' relatives, linalg
# and loss forms the table lists without out=): each out position in turn of each other dtype
_DTYPES = ("float64", "float16", "int64", "bool", "complex64")


def _more_calls(L):
    a, m = L.rand(2, 3), L.rand(3, 3) + 3 * L.eye(3)
    p = L.rand(2, 3)
    spd = m @ m.mT
    aa = L.ops.aten
    return {  # name -> (call taking the outs, the outs' fresh dtypes and shapes)
        "bernoulli.float_out": (lambda o: aa.bernoulli.float_out(a, 0.5, out=o[0]),
                                [("float32", (2, 3))]),
        "bernoulli.Tensor_out": (lambda o: aa.bernoulli.Tensor_out(a, p, out=o[0]),
                                 [("float32", (2, 3))]),
        "poisson.out": (lambda o: aa.poisson.out(a, out=o[0]), [("float32", (2, 3))]),
        "randint_like.out": (lambda o: aa.randint_like.out(a, 5, out=o[0]),
                             [("float32", (2, 3))]),
        "linear.out": (lambda o: L.nn.functional.linear(a, m, m[0], out=o[0]),
                       [("float32", (2, 3))]),
        "randint_like.low_dtype_out": (lambda o: aa.randint_like.low_dtype_out(a, 1, 5, out=o[0]),
                                       [("float32", (2, 3))]),
        "multinomial.out": (lambda o: aa.multinomial.out(p, 2, out=o[0]), [("int64", (2, 2))]),
        "binary_cross_entropy.out": (lambda o: aa.binary_cross_entropy.out(p, a, None, 1,
                                                                           out=o[0]),
                                     [("float32", ())]),
        "_softmax_backward_data.out": (
            lambda o: aa._softmax_backward_data.out(a, p, 1, L.float32, grad_input=o[0]),
            [("float32", (2, 3))]),
        "linalg_lu_factor.out": (lambda o: aa.linalg_lu_factor.out(m, LU=o[0], pivots=o[1]),
                                 [("float32", (3, 3)), ("int32", (3,))]),
        "linalg_tensorinv.out": (lambda o: aa.linalg_tensorinv.out(m, 1, out=o[0]),
                                 [("float32", (3, 3))]),
        "linalg_tensorsolve.out": (lambda o: aa.linalg_tensorsolve.out(m, a[0], None, out=o[0]),
                                   [("float32", (3,))]),
        "nuclear_norm.out": (lambda o: aa.nuclear_norm.out(m, False, out=o[0]),
                             [("float32", ())]),
        "frobenius_norm.out": (lambda o: aa.frobenius_norm.out(m, [0, 1], False, out=o[0]),
                               [("float32", ())]),
        "triangular_solve.X": (lambda o: aa.triangular_solve.X(a.mT, m, X=o[0], M=o[1]),
                               [("float32", (3, 2)), ("float32", (3, 3))]),
        "geqrf.a": (lambda o: aa.geqrf.a(m, a=o[0], tau=o[1]),
                    [("float32", (3, 3)), ("float32", (3,))]),
        "qr.Q": (lambda o: aa.qr.Q(m, True, Q=o[0], R=o[1]),
                 [("float32", (3, 3)), ("float32", (3, 3))]),
        "linalg_ldl_factor.out": (lambda o: aa.linalg_ldl_factor.out(spd, LD=o[0], pivots=o[1]),
                                  [("float32", (3, 3)), ("int32", (3,))]),
        "linalg_ldl_solve.out": (lambda o: aa.linalg_ldl_solve.out(
            *L.linalg.ldl_factor(spd), a.mT, out=o[0]), [("float32", (3, 2))]),
        "lu_unpack.out": (lambda o: aa.lu_unpack.out(*L.linalg.lu_factor(m), P=o[0], L=o[1],
                                                     U=o[2]),
                          [("float32", (3, 3))] * 3),
        "lu_solve.out": (lambda o: aa.lu_solve.out(a.mT, *L.linalg.lu_factor(m), out=o[0]),
                         [("float32", (3, 2))]),
        "orgqr.out": (lambda o: aa.orgqr.out(*L.geqrf(m), out=o[0]), [("float32", (3, 3))]),
        "_log_softmax_backward_data.out": (
            lambda o: aa._log_softmax_backward_data.out(a, p, 1, L.float32, out=o[0]),
            [("float32", (2, 3))]),
        # factories: the result is made in out's dtype
        "linspace.out": (lambda o: aa.linspace.out(0, 1, 4, out=o[0]), [("float32", (4,))]),
        "arange.out": (lambda o: aa.arange.out(4, out=o[0]), [("float32", (4,))]),
        "eye.out": (lambda o: aa.eye.out(3, out=o[0]), [("float32", (3, 3))]),
        "fft_fftfreq.out": (lambda o: aa.fft_fftfreq.out(4, out=o[0]), [("float32", (4,))]),
        "randperm.out": (lambda o: aa.randperm.out(4, out=o[0]), [("int64", (4,))]),
        "rand.out": (lambda o: aa.rand.out([3], out=o[0]), [("float32", (3,))]),
        "randint.out": (lambda o: aa.randint.out(5, [3], out=o[0]), [("int64", (3,))]),
        **_internal_calls(L, a, m, p, spd),
    }


def _internal_calls(L, a, m, p, spd):
    """out= overloads of internals (backward, batch-norm and softmax forms, pooling with random
    samples), factories' other overloads and the generator forms of the random ones."""
    aa = L.ops.aten
    x4, g4 = L.rand(1, 1, 4, 4), L.rand(1, 1, 2, 2)
    x5, g5 = L.rand(1, 1, 4, 4, 4), L.rand(1, 1, 2, 2, 2)
    w, b, rm, rv = L.rand(3), L.rand(3), L.rand(3), L.rand(3) + 1
    mask = p > 0.5
    lengths, data = L.tensor([1, 3]), L.rand(4)
    t0, t1 = L.tensor(0.0), L.tensor(1.0)
    qkv, q = L.rand(2, 3, 12), L.rand(2, 3, 4)
    f8, w4 = L.rand(16, 16).to(L.float8_e4m3fn), L.rand(4)
    f32, i64 = "float32", "int64"
    pool2 = aa.fractional_max_pool2d.default(x4, [2, 2], [2, 2], L.rand(1, 1, 2))
    pool3 = aa.fractional_max_pool3d.default(x5, [2, 2, 2], [2, 2, 2], L.rand(1, 1, 3))
    return {
        "_adaptive_avg_pool2d_backward.out": (
            lambda o: aa._adaptive_avg_pool2d_backward.out(g4, x4, out=o[0]), [(f32, (1, 1, 4, 4))]),
        "_adaptive_avg_pool3d_backward.out": (
            lambda o: aa._adaptive_avg_pool3d_backward.out(g5, x5, out=o[0]),
            [(f32, (1, 1, 4, 4, 4))]),
        "hardswish_backward.out": (lambda o: aa.hardswish_backward.out(a, p, out=o[0]),
                                   [(f32, (2, 3))]),
        "native_dropout_backward.out": (
            lambda o: aa.native_dropout_backward.out(a, mask, 2.0, out=o[0]), [(f32, (2, 3))]),
        "_unsafe_view.out": (lambda o: aa._unsafe_view.out(a, [3, 2], out=o[0]), [(f32, (3, 2))]),
        "embedding_dense_backward.out": (
            lambda o: aa.embedding_dense_backward.out(a, L.tensor([0, 2]), 4, -1, False, out=o[0]),
            [(f32, (4, 3))]),
        "conv_tbc.out": (lambda o: aa.conv_tbc.out(L.rand(4, 1, 2), L.rand(3, 2, 2), b[:2], 1,
                                                   out=o[0]), [(f32, (4, 1, 2))]),
        "_convolution.out": (lambda o: aa._convolution.out(
            x4, L.rand(2, 1, 3, 3), b[:2], [1, 1], [1, 1], [1, 1], False, [0, 0], 1, False,
            False, True, True, out=o[0]), [(f32, (1, 2, 4, 4))]),
        "nuclear_norm.dim_out": (lambda o: aa.nuclear_norm.dim_out(m, [0, 1], False, out=o[0]),
                                 [(f32, ())]),
        "nonzero_static.out": (lambda o: aa.nonzero_static.out(mask, size=4, fill_value=-1,
                                                               out=o[0]), [(i64, (4, 2))]),
        "_masked_softmax.out": (lambda o: aa._masked_softmax.out(a, mask, 1, None, out=o[0]),
                                [(f32, (2, 3))]),
        "_masked_softmax_backward.out": (
            lambda o: aa._masked_softmax_backward.out(a, p, mask, 1, out=o[0]), [(f32, (2, 3))]),
        "_native_batch_norm_legit_no_training.out": (
            lambda o: aa._native_batch_norm_legit_no_training.out(
                a, w, b, rm, rv, 0.1, 1e-5, out0=o[0], out1=o[1], out2=o[2]),
            [(f32, (2, 3)), (f32, (0,)), (f32, (0,))]),
        "_native_batch_norm_legit.out": (
            lambda o: aa._native_batch_norm_legit.out(
                a, w, b, rm.clone(), rv.clone(), True, 0.1, 1e-5, out=o[0], save_mean=o[1],
                save_invstd=o[2]), [(f32, (2, 3)), (f32, (3,)), (f32, (3,))]),
        "_native_batch_norm_legit.no_stats_out": (
            lambda o: aa._native_batch_norm_legit.no_stats_out(
                a, w, b, True, 0.1, 1e-5, out=o[0], save_mean=o[1], save_invstd=o[2]),
            [(f32, (2, 3)), (f32, (3,)), (f32, (3,))]),
        "_batch_norm_with_update.out": (
            lambda o: aa._batch_norm_with_update.out(
                a, w, b, rm.clone(), rv.clone(), 0.1, 1e-5, out=o[0], save_mean=o[1],
                save_invstd=o[2], reserve=o[3]),
            [(f32, (2, 3)), (f32, (3,)), (f32, (3,)), ("uint8", (0,))]),
        "_batch_norm_no_update.out": (
            lambda o: aa._batch_norm_no_update.out(
                a, w, b, rm, rv, 0.1, 1e-5, out0=o[0], out1=o[1], out2=o[2], out3=o[3]),
            [(f32, (2, 3)), (f32, (0,)), (f32, (0,)), ("uint8", (0,))]),
        "_convert_indices_from_coo_to_csr.out": (
            lambda o: aa._convert_indices_from_coo_to_csr.out(L.tensor([0, 0, 1, 2]), 3,
                                                              out=o[0]), [(i64, (4,))]),
        "_convert_indices_from_csr_to_coo.out": (
            lambda o: aa._convert_indices_from_csr_to_coo.out(
                L.tensor([0, 2, 3, 4]), L.tensor([0, 1, 1, 2]), out=o[0]), [(i64, (2, 4))]),
        "segment_reduce.out": (lambda o: aa.segment_reduce.out(data, "sum", lengths=lengths,
                                                               out=o[0]), [(f32, (2,))]),
        "_segment_reduce_backward.out": (
            lambda o: aa._segment_reduce_backward.out(L.ones(2), L.ones(2), data, "sum",
                                                      lengths=lengths, out=o[0]), [(f32, (4,))]),
        "linalg_ldl_factor_ex.out": (
            lambda o: aa.linalg_ldl_factor_ex.out(spd, LD=o[0], pivots=o[1], info=o[2]),
            [(f32, (3, 3)), ("int32", (3,)), ("int32", ())]),
        "fractional_max_pool2d.output": (
            lambda o: aa.fractional_max_pool2d.output(x4, [2, 2], [2, 2], L.rand(1, 1, 2),
                                                      output=o[0], indices=o[1]),
            [(f32, (1, 1, 2, 2)), (i64, (1, 1, 2, 2))]),
        "fractional_max_pool2d_backward.grad_input": (
            lambda o: aa.fractional_max_pool2d_backward.grad_input(
                g4, x4, [2, 2], [2, 2], pool2[1], grad_input=o[0]), [(f32, (1, 1, 4, 4))]),
        "fractional_max_pool3d.output": (
            lambda o: aa.fractional_max_pool3d.output(x5, [2, 2, 2], [2, 2, 2], L.rand(1, 1, 3),
                                                      output=o[0], indices=o[1]),
            [(f32, (1, 1, 2, 2, 2)), (i64, (1, 1, 2, 2, 2))]),
        "fractional_max_pool3d_backward.grad_input": (
            lambda o: aa.fractional_max_pool3d_backward.grad_input(
                g5, x5, [2, 2, 2], [2, 2, 2], pool3[1], grad_input=o[0]),
            [(f32, (1, 1, 4, 4, 4))]),
        "hash_tensor.out": (lambda o: aa.hash_tensor.out(L.tensor([1, 2, 3]), out=o[0]),
                            [("uint64", ())]),
        "fake_quantize_per_tensor_affine_cachemask.out": (
            lambda o: aa.fake_quantize_per_tensor_affine_cachemask.out(
                a, 0.1, 0, 0, 255, out0=o[0], out1=o[1]), [(f32, (2, 3)), ("bool", (2, 3))]),
        "fake_quantize_per_channel_affine_cachemask.out": (
            lambda o: aa.fake_quantize_per_channel_affine_cachemask.out(
                a, L.tensor([0.1, 0.2]), L.tensor([0, 0], dtype=L.int32), 0, 0, 255, out0=o[0],
                out1=o[1]), [(f32, (2, 3)), ("bool", (2, 3))]),
        "_fake_quantize_per_tensor_affine_cachemask_tensor_qparams.out": (
            lambda o: aa._fake_quantize_per_tensor_affine_cachemask_tensor_qparams.out(
                a, L.tensor([0.1]), L.tensor([0], dtype=L.int32), L.tensor([1]), 0, 255,
                out0=o[0], out1=o[1]), [(f32, (2, 3)), ("bool", (2, 3))]),
        "_fake_quantize_learnable_per_tensor_affine.out": (
            lambda o: aa._fake_quantize_learnable_per_tensor_affine.out(
                a, L.tensor([0.1]), L.tensor([0.0]), 0, 255, 1.0, out=o[0]), [(f32, (2, 3))]),
        "_fake_quantize_learnable_per_channel_affine.out": (
            lambda o: aa._fake_quantize_learnable_per_channel_affine.out(
                a, L.tensor([0.1, 0.2]), L.tensor([0.0, 0.0]), 0, 0, 255, 1.0, out=o[0]),
            [(f32, (2, 3))]),
        "_transform_bias_rescale_qkv.out": (
            lambda o: aa._transform_bias_rescale_qkv.out(qkv, L.ones(12), 2, out0=o[0], out1=o[1],
                                                         out2=o[2]), [(f32, (2, 2, 3, 2))] * 3),
        "_native_multi_head_attention.out": (
            lambda o: aa._native_multi_head_attention.out(
                q, q, q, 4, 2, L.rand(12, 4), L.rand(12), L.rand(4, 4), L.rand(4), out0=o[0],
                out1=o[1]), [(f32, (2, 3, 4)), (f32, (2, 3, 3))]),
        "_scaled_mm.out": (
            lambda o: aa._scaled_mm.out(f8, f8.t(), t1, t1, out_dtype=L.float32, out=o[0]),
            [(f32, (16, 16))]),
        "_scaled_mm_v2.out": (  # (recipe 0: one tensor-wise scale, swizzle 0: none)
            lambda o: aa._scaled_mm_v2.out(f8, f8.t(), [t1], [0], [0], [t1], [0], [0], None,
                                           L.float32, out=o[0]), [(f32, (16, 16))]),
        "_transformer_encoder_layer_fwd.out": (
            lambda o: aa._transformer_encoder_layer_fwd.out(
                q, 4, 2, L.rand(12, 4), L.rand(12), L.rand(4, 4), w4, False, False, 1e-5, w4, w4,
                w4, w4, L.rand(8, 4), L.rand(8), L.rand(4, 8), w4, out=o[0]), [(f32, (2, 3, 4))]),
        # (without an accelerator both refuse before looking at out; with one, out is checked)
        "_pin_memory.out": (lambda o: aa._pin_memory.out(a, out=o[0]), [(f32, (2, 3))]),
        # factories: the result is made in out's dtype
        "arange.start_out": (lambda o: aa.arange.start_out(1, 5, 1, out=o[0]), [(f32, (4,))]),
        "eye.m_out": (lambda o: aa.eye.m_out(3, 2, out=o[0]), [(f32, (3, 2))]),
        "fft_rfftfreq.out": (lambda o: aa.fft_rfftfreq.out(4, 1.0, out=o[0]), [(f32, (3,))]),
        "full.out": (lambda o: aa.full.out([2, 3], 1.5, out=o[0]), [(f32, (2, 3))]),
        "ones.out": (lambda o: aa.ones.out([2, 3], out=o[0]), [(f32, (2, 3))]),
        "zeros.out": (lambda o: aa.zeros.out([2, 3], out=o[0]), [(f32, (2, 3))]),
        "logspace.out": (lambda o: aa.logspace.out(0, 1, 4, 10.0, out=o[0]), [(f32, (4,))]),
        "linspace.Scalar_Tensor_out": (
            lambda o: aa.linspace.Scalar_Tensor_out(0, t1, 4, out=o[0]), [(f32, (4,))]),
        "linspace.Tensor_Scalar_out": (
            lambda o: aa.linspace.Tensor_Scalar_out(t0, 1, 4, out=o[0]), [(f32, (4,))]),
        "linspace.Tensor_Tensor_out": (
            lambda o: aa.linspace.Tensor_Tensor_out(t0, t1, 4, out=o[0]), [(f32, (4,))]),
        "logspace.Scalar_Tensor_out": (
            lambda o: aa.logspace.Scalar_Tensor_out(0, t1, 4, 2.0, out=o[0]), [(f32, (4,))]),
        "logspace.Tensor_Scalar_out": (
            lambda o: aa.logspace.Tensor_Scalar_out(t0, 1, 4, 2.0, out=o[0]), [(f32, (4,))]),
        "logspace.Tensor_Tensor_out": (
            lambda o: aa.logspace.Tensor_Tensor_out(t0, t1, 4, 2.0, out=o[0]), [(f32, (4,))]),
        "tril_indices.out": (lambda o: aa.tril_indices.out(3, 3, 0, out=o[0]), [(i64, (2, 6))]),
        "triu_indices.out": (lambda o: aa.triu_indices.out(3, 3, 0, out=o[0]), [(i64, (2, 6))]),
        # random ops (both generators seeded alike)
        "bernoulli.out": (lambda o: aa.bernoulli.out(p, out=o[0]), [(f32, (2, 3))]),
        "randn.out": (lambda o: aa.randn.out([3], out=o[0]), [(f32, (3,))]),
        "randint.low_out": (lambda o: aa.randint.low_out(1, 5, [3], out=o[0]), [(i64, (3,))]),
        "randint_like.Tensor_out": (
            lambda o: aa.randint_like.Tensor_out(a, L.tensor(5), out=o[0]), [(f32, (2, 3))]),
        "rand.generator_out": (lambda o: aa.rand.generator_out([3], generator=None, out=o[0]),
                               [(f32, (3,))]),
        "randn.generator_out": (lambda o: aa.randn.generator_out([3], generator=None, out=o[0]),
                                [(f32, (3,))]),
        "randint.generator_out": (
            lambda o: aa.randint.generator_out(5, [3], generator=None, out=o[0]), [(i64, (3,))]),
        "randint.low_generator_out": (
            lambda o: aa.randint.low_generator_out(1, 5, [3], generator=None, out=o[0]),
            [(i64, (3,))]),
        "randperm.generator_out": (
            lambda o: aa.randperm.generator_out(4, generator=None, out=o[0]), [(i64, (4,))]),
    }


def _sweep_cases():
    for name, (_, fresh) in _more_calls(ember).items():
        for i, (dt, _) in enumerate(fresh):
            for other in _DTYPES:
                if other != dt:
                    yield name, i, other


@pytest.mark.parametrize("name,pos,dtype", list(_sweep_cases()))
def test_more_outs_of_another_dtype_as_pytorch(torch, name, pos, dtype):
    outcomes, outs_of = [], []
    for L in (ember, torch):
        L.manual_seed(0)
        call, fresh = _more_calls(L)[name]
        outs = [L.full(shape, 7, dtype=getattr(L, dtype if i == pos else dt))
                for i, (dt, shape) in enumerate(fresh)]
        before = [t.clone() for t in outs]
        L.manual_seed(1)
        try:
            call(outs)
            outcomes.append("ok")
        except (RuntimeError, NotImplementedError, ValueError) as e:
            outcomes.append(f"{type(e).__name__}: {e}")
            # (ember writes nothing; some ATen kernels write an out before refusing another)
            assert L is not ember or all(L.equal(t, b) for t, b in zip(outs, before)), \
                "out written before the error"
        outs_of.append(outs)
    assert outcomes[0] == outcomes[1]
    if outcomes[0] == "ok":
        for e, t in zip(*outs_of):
            assert_same(e, t, rtol=1e-3, atol=1e-3)


def test_every_out_overload_is_swept():
    """Each out= overload ember declares is swept: by tests/test_out_sweep.py (the op table's),
    here, or by tests/test_out_overloads.py (outputs unique up to sign or phase)."""
    from ember._dispatch.dispatcher import _operators
    from opinfo import OPS
    from test_out_overloads import _OPS as _UP_TO_SIGN  # (the decompositions' out= forms)
    swept = {op.out for op in OPS if op.out} | set(_more_calls(ember)) | set(_UP_TO_SIGN)
    missing = []
    for qualname in _operators:
        if not qualname.startswith("aten::"):
            continue
        name, _, ov = qualname[len("aten::"):].partition(".")
        schema = getattr(getattr(ember.ops.aten, name), ov or "default")._schema
        if any(a.is_write and a.kwarg_only for a in schema.arguments) and \
                f"{name}.{ov or 'default'}" not in swept:
            missing.append(f"{name}.{ov or 'default'}")
    assert not missing, f"out= overloads without a sweep sample: {sorted(missing)}"
