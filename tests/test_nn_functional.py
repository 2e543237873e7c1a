"""ember.nn.functional against torch.nn.functional: values and gradients (float64) of every
function in the table, argument errors, random functions' statistics, and gradcheck on the fused
backward kernels (softmax, log_softmax, layer_norm, nll_loss, embedding)."""
import warnings

import numpy as np
import pytest

import ember
import ember.nn.functional as EF

_rng = np.random.default_rng(0)


def _pair(torch, a, requires_grad=True):
    a = np.asarray(a)
    e = ember.from_numpy(a.copy())
    t = torch.from_numpy(a.copy())
    if requires_grad and a.dtype.kind == "f":
        e.requires_grad_(True)
        t.requires_grad_(True)
    return e, t


class C:
    """An argument array that must not require grad (weights, running stats, targets)."""
    def __init__(self, a):
        self.a = np.asarray(a)


def _randn(*shape):
    return _rng.standard_normal(shape)


def _labels(n, c, shape=None):
    return _rng.integers(0, c, shape or (n,))


# name: (function name, argument builders, kwargs). Builders are arrays (tensors) or plain
# values; float arrays get requires_grad on both sides.
CASES = {
    "linear": ("linear", [_randn(3, 4), _randn(5, 4), _randn(5)], {}),
    "linear_3d": ("linear", [_randn(2, 3, 4), _randn(5, 4), _randn(5)], {}),
    "linear_nobias": ("linear", [_randn(3, 4), _randn(5, 4)], {}),
    "bilinear": ("bilinear", [_randn(3, 4), _randn(3, 2), _randn(5, 4, 2), _randn(5)], {}),
    "embedding": ("embedding", [_labels(6, 5, (2, 3)), _randn(5, 3)], {}),
    "embedding_pad": ("embedding", [np.array([[0, 2, 2], [4, 2, 1]]), _randn(5, 3)],
                      {"padding_idx": 2}),
    "embedding_freq": ("embedding", [np.array([0, 2, 2, 1]), _randn(5, 3)],
                       {"scale_grad_by_freq": True}),
    "embedding_bag_mean": ("embedding_bag", [np.array([0, 2, 2, 4, 1, 3]), _randn(5, 3),
                                             np.array([0, 2, 2, 5])], {}),
    "embedding_bag_sum2d": ("embedding_bag", [np.array([[0, 2], [4, 1]]), _randn(5, 3)],
                            {"mode": "sum"}),
    "embedding_bag_max": ("embedding_bag", [np.array([0, 2, 2, 4, 1]), _randn(5, 3),
                                            np.array([0, 3])], {"mode": "max"}),
    "batch_norm_train": ("batch_norm", [_randn(4, 3, 2), C(np.zeros(3)), C(np.ones(3)), _randn(3),
                                        _randn(3)], {"training": True}),
    "batch_norm_eval": ("batch_norm", [_randn(4, 3), C(_randn(3) * 0.1), C(np.abs(_randn(3)) + 0.5),
                                       _randn(3), _randn(3)], {"training": False}),
    "layer_norm": ("layer_norm", [_randn(4, 3, 5), (3, 5), _randn(3, 5), _randn(3, 5)], {}),
    "layer_norm_plain": ("layer_norm", [_randn(4, 6), (6,)], {}),
    "group_norm": ("group_norm", [_randn(2, 6, 4), 3, _randn(6), _randn(6)], {}),
    "instance_norm": ("instance_norm", [_randn(2, 3, 5)], {}),
    "instance_norm_affine": ("instance_norm", [_randn(2, 3, 5)], {}),
    "rms_norm": ("rms_norm", [_randn(3, 4), (4,), _randn(4)], {}),
    "local_response_norm": ("local_response_norm", [_randn(2, 5, 3), 3], {}),
    "normalize": ("normalize", [_randn(3, 4)], {}),
    "softmax": ("softmax", [_randn(3, 4)], {"dim": 1}),
    "softmax_dim0": ("softmax", [_randn(3, 4, 2)], {"dim": 0}),
    "log_softmax": ("log_softmax", [_randn(3, 4)], {"dim": -1}),
    "softmin": ("softmin", [_randn(3, 4)], {"dim": 1}),
    "cross_entropy": ("cross_entropy", [_randn(5, 4), _labels(5, 4)], {}),
    "cross_entropy_sum_w": ("cross_entropy", [_randn(5, 4), _labels(5, 4), C(np.abs(_randn(4)))],
                            {"reduction": "sum"}),
    "cross_entropy_ignore": ("cross_entropy", [_randn(5, 4), np.array([0, -100, 2, 3, -100])],
                             {}),
    "cross_entropy_none": ("cross_entropy", [_randn(5, 4), _labels(5, 4)], {"reduction": "none"}),
    "cross_entropy_smooth": ("cross_entropy", [_randn(5, 4), _labels(5, 4)],
                             {"label_smoothing": 0.2}),
    "cross_entropy_smooth_w": ("cross_entropy", [_randn(5, 4), np.array([0, 1, -100, 3, 1]),
                                                 C(np.abs(_randn(4)))], {"label_smoothing": 0.1}),
    "cross_entropy_probs": ("cross_entropy", [_randn(5, 4), C(np.abs(_randn(5, 4)))], {}),
    "cross_entropy_nd": ("cross_entropy", [_randn(2, 4, 3), _labels(2, 4, (2, 3))], {}),
    "cross_entropy_1d": ("cross_entropy", [_randn(4), np.array(2)], {}),
    "nll_loss": ("nll_loss", [_randn(5, 4), _labels(5, 4)], {}),
    "nll_loss_w": ("nll_loss", [_randn(5, 4), _labels(5, 4), C(np.abs(_randn(4)))], {}),
    "mse_loss": ("mse_loss", [_randn(3, 4), _randn(3, 4)], {}),
    "mse_loss_none": ("mse_loss", [_randn(3, 4), _randn(3, 4)], {"reduction": "none"}),
    "l1_loss": ("l1_loss", [_randn(3, 4), _randn(3, 4)], {}),
    "smooth_l1_loss": ("smooth_l1_loss", [_randn(3, 4), _randn(3, 4)], {"beta": 0.5}),
    "huber_loss": ("huber_loss", [_randn(3, 4), _randn(3, 4)], {"delta": 0.7}),
    "bce": ("binary_cross_entropy", [_rng.uniform(0.05, 0.95, (3, 4)),
                                     _rng.uniform(0, 1, (3, 4))], {}),
    "bce_w": ("binary_cross_entropy", [_rng.uniform(0.05, 0.95, (3, 4)),
                                       _rng.uniform(0, 1, (3, 4)), C(np.abs(_randn(4)))], {}),
    "bce_logits": ("binary_cross_entropy_with_logits", [_randn(3, 4), _rng.uniform(0, 1, (3, 4))],
                   {}),
    "bce_logits_pw": ("binary_cross_entropy_with_logits", [_randn(3, 4),
                                                           _rng.uniform(0, 1, (3, 4))],
                      {"pos_weight": "PW"}),
    "kl_div": ("kl_div", [_randn(3, 4), _rng.uniform(0.1, 1, (3, 4))], {"reduction": "batchmean"}),
    "kl_div_log": ("kl_div", [_randn(3, 4), _randn(3, 4)], {"reduction": "sum",
                                                            "log_target": True}),
    "poisson_nll": ("poisson_nll_loss", [_randn(3, 4), np.abs(_randn(3, 4)) * 3], {}),
    "poisson_nll_full": ("poisson_nll_loss", [np.abs(_randn(3, 4)) + 0.1,
                                              np.abs(_randn(3, 4)) * 3],
                         {"log_input": False, "full": True}),
    "gaussian_nll": ("gaussian_nll_loss", [_randn(3, 4), _randn(3, 4),
                                           np.abs(_randn(3, 4)) + 0.1], {}),
    "margin_ranking": ("margin_ranking_loss", [_randn(5), _randn(5),
                                               np.sign(_randn(5))], {"margin": 0.3}),
    "hinge_embedding": ("hinge_embedding_loss", [_randn(5), np.sign(_randn(5))], {}),
    "cosine_embedding": ("cosine_embedding_loss", [_randn(4, 3), _randn(4, 3),
                                                   np.array([1, -1, 1, -1])], {"margin": 0.1}),
    "triplet_margin": ("triplet_margin_loss", [_randn(4, 3), _randn(4, 3), _randn(4, 3)],
                       {"swap": True}),
    "multilabel_soft_margin": ("multilabel_soft_margin_loss", [_randn(3, 4),
                                                               _rng.integers(0, 2, (3, 4))
                                                               .astype(float)], {}),
    "multilabel_margin": ("multilabel_margin_loss", [_randn(3, 4),
                                                     np.array([[3, 0, -1, 1], [0, 1, 2, 3],
                                                               [1, -1, 0, 0]])], {}),
    "multi_margin": ("multi_margin_loss", [_randn(3, 4), _labels(3, 4)], {}),
    "multi_margin_p2": ("multi_margin_loss", [_randn(3, 4), _labels(3, 4)], {"p": 2}),
    "soft_margin": ("soft_margin_loss", [_randn(3, 4), C(np.sign(_randn(3, 4)))], {}),
    "cosine_similarity": ("cosine_similarity", [_randn(3, 4), _randn(3, 4)], {}),
    "pairwise_distance": ("pairwise_distance", [_randn(3, 4), _randn(3, 4)], {}),
    "pdist": ("pdist", [_randn(4, 3)], {}),
    "sdpa": ("scaled_dot_product_attention", [_randn(2, 3, 4, 5), _randn(2, 3, 6, 5),
                                              _randn(2, 3, 6, 5)], {}),
    "sdpa_causal": ("scaled_dot_product_attention", [_randn(2, 4, 5), _randn(2, 4, 5),
                                                     _randn(2, 4, 5)], {"is_causal": True}),
    "sdpa_boolmask": ("scaled_dot_product_attention",
                      [_randn(2, 3, 5), _randn(2, 4, 5), _randn(2, 4, 5),
                       np.array([[True, False, True, True]] * 3)], {"scale": 0.3}),
    "sdpa_floatmask": ("scaled_dot_product_attention",
                       [_randn(2, 3, 5), _randn(2, 4, 5), _randn(2, 4, 5), _randn(3, 4)], {}),
    "sdpa_gqa": ("scaled_dot_product_attention", [_randn(1, 4, 3, 2), _randn(1, 2, 3, 2),
                                                  _randn(1, 2, 3, 2)], {"enable_gqa": True}),
    "ctc_loss": ("ctc_loss", [np.log(_rng.dirichlet(np.ones(5), (6, 2))), _rng.integers(1, 5, (2, 3)),
                              np.array([6, 5]), np.array([3, 2])], {}),
}

ACTIVATIONS = {
    "relu": {}, "relu6": {}, "elu": {"alpha": 0.7}, "selu": {}, "celu": {"alpha": 1.3},
    "leaky_relu": {"negative_slope": 0.2}, "hardtanh": {"min_val": -0.5, "max_val": 0.8},
    "gelu": {}, "gelu_tanh": {"approximate": "tanh"}, "silu": {}, "mish": {},
    "softplus": {"beta": 2, "threshold": 3}, "softsign": {}, "hardsigmoid": {}, "hardswish": {},
    "logsigmoid": {}, "tanhshrink": {}, "softshrink": {"lambd": 0.3}, "hardshrink": {"lambd": 0.3},
    "threshold": {"threshold": 0.1, "value": -2.0}, "glu": {"dim": 0}, "tanh": {}, "sigmoid": {},
}
for _a, _kw in ACTIVATIONS.items():
    CASES["act_" + _a] = (_a.replace("_tanh", ""), [_randn(4, 3)], _kw)
CASES["act_prelu"] = ("prelu", [_randn(2, 3, 4), np.abs(_randn(3))], {})
CASES["act_prelu_scalar"] = ("prelu", [_randn(2, 3), np.array([0.25])], {})


def _build(torch, args, kwargs):
    e_args, t_args, leaves = [], [], []
    for a in args:
        if isinstance(a, C):
            e, t = _pair(torch, a.a, requires_grad=False)
            e_args.append(e)
            t_args.append(t)
        elif isinstance(a, np.ndarray):
            e, t = _pair(torch, a)
            e_args.append(e)
            t_args.append(t)
            if a.dtype.kind == "f":
                leaves.append((e, t))
        else:
            e_args.append(a)
            t_args.append(a)
    e_kw, t_kw = dict(kwargs), dict(kwargs)
    if kwargs.get("pos_weight") == "PW":
        e, t = _pair(torch, np.abs(_randn(4)) + 0.5, requires_grad=False)
        e_kw["pos_weight"], t_kw["pos_weight"] = e, t
    return e_args, t_args, e_kw, t_kw, leaves


def _torch_fn(torch, name):
    return getattr(torch.nn.functional, name, None) or getattr(torch, name)


@pytest.mark.parametrize("case", sorted(CASES))
def test_values_and_grads(torch, case):
    name, args, kwargs = CASES[case]
    e_args, t_args, e_kw, t_kw, leaves = _build(torch, args, kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t_out = _torch_fn(torch, name)(*t_args, **t_kw)
        e_out = getattr(EF, name)(*e_args, **e_kw)
    assert tuple(e_out.shape) == tuple(t_out.shape)
    assert str(e_out.dtype) == str(t_out.dtype).replace("torch", "ember")
    np.testing.assert_allclose(e_out.detach().numpy(), t_out.detach().numpy(), rtol=1e-6,
                               atol=1e-8)
    if not leaves:
        return
    g = _randn(*t_out.shape) if t_out.dim() else np.array(1.3)
    t_out.backward(torch.from_numpy(g.copy()))
    e_out.backward(ember.from_numpy(g.copy()))
    for e, t in leaves:
        if t.grad is None:
            assert e.grad is None or not np.any(e.grad.numpy())
            continue
        np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-6, atol=1e-8,
                                   err_msg=f"{case}: gradient")


def test_grad_fn_names(torch):
    x = ember.randn(3, 4, requires_grad=True)
    assert type(EF.cross_entropy(x, ember.tensor([0, 1, 2])).grad_fn).__name__ == \
        "NllLossBackward0"
    assert type(EF.softmax(x, 1).grad_fn).__name__ == "SoftmaxBackward0"
    assert type(EF.log_softmax(x, 1).grad_fn).__name__ == "LogSoftmaxBackward0"
    assert type(EF.layer_norm(x, (4,)).grad_fn).__name__ == "NativeLayerNormBackward0"
    assert type(EF.gelu(x).grad_fn).__name__ == "GeluBackward0"


def test_running_stats(torch):
    x = _randn(6, 3, 4)
    for momentum in (0.1, 0.5):
        e_rm, e_rv = ember.zeros(3, dtype=ember.float64), ember.ones(3, dtype=ember.float64)
        t_rm, t_rv = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
        EF.batch_norm(ember.from_numpy(x), e_rm, e_rv, training=True, momentum=momentum)
        torch.nn.functional.batch_norm(torch.from_numpy(x), t_rm, t_rv, training=True,
                                       momentum=momentum)
        np.testing.assert_allclose(e_rm.numpy(), t_rm.numpy(), rtol=1e-10)
        np.testing.assert_allclose(e_rv.numpy(), t_rv.numpy(), rtol=1e-10)
    e_rm, e_rv = ember.zeros(3, dtype=ember.float64), ember.ones(3, dtype=ember.float64)
    t_rm, t_rv = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    EF.instance_norm(ember.from_numpy(x), e_rm, e_rv)
    torch.nn.functional.instance_norm(torch.from_numpy(x), t_rm, t_rv)
    np.testing.assert_allclose(e_rm.numpy(), t_rm.numpy(), rtol=1e-10)
    np.testing.assert_allclose(e_rv.numpy(), t_rv.numpy(), rtol=1e-10)


def test_embedding_max_norm(torch):
    w = _randn(5, 3) * 3
    ew, tw = ember.from_numpy(w.copy()), torch.from_numpy(w.copy())
    idx = np.array([0, 2, 2])
    e = EF.embedding(ember.from_numpy(idx), ew, max_norm=1.0)
    t = torch.nn.functional.embedding(torch.from_numpy(idx), tw, max_norm=1.0)
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-6)
    np.testing.assert_allclose(ew.numpy(), tw.numpy(), rtol=1e-6)


@pytest.mark.parametrize("indices,padding_idx,scale", [
    ([-1, 0, 1], -1, False),        # a negative index is not wrapped: it adds nothing
    ([-1, 0, 3], 3, False),
    ([5, 0, 1, -5], -1, False),     # out of range either side: nothing, no error
    ([[3, 0], [1, 3]], -1, True),   # padding_idx -1 is not row 3 at this level
    ([2, 0, 2, 1], -2, True),
    ([0, 2, 2, 1], 2, True),
])
def test_embedding_dense_backward_indices_out_of_range(indices, padding_idx, scale, torch):
    """aten.embedding_dense_backward as ATen's CPU kernel: rows whose index is padding_idx or
    lies outside [0, num_weights) add nothing (F.embedding's forward has already rejected such
    indices; the op itself takes them). With scale_grad_by_freq only in-range indices are
    tried: ATen counts out-of-range ones out of bounds."""
    g = _randn(*np.shape(indices), 3)
    got = ember.ops.aten.embedding_dense_backward(ember.from_numpy(g), ember.tensor(indices), 4,
                                                  padding_idx, scale)
    want = torch.ops.aten.embedding_dense_backward(torch.from_numpy(g), torch.tensor(indices), 4,
                                                   padding_idx, scale)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)


def test_embedding_negative_padding_idx_grad(torch):
    # F.embedding turns padding_idx -1 into num_embeddings - 1: that row gets no gradient
    w = _randn(4, 3)
    grads = []
    for m in (ember, torch):
        x = m.from_numpy(w.copy()).requires_grad_(True)
        m.nn.functional.embedding(m.tensor([3, 0, 1, 3]), x, padding_idx=-1,
                                  scale_grad_by_freq=True).sum().backward()
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(*grads)


def test_one_hot(torch):
    t = np.array([[0, 3], [2, 1]])
    for n in (-1, 5):
        assert np.array_equal(EF.one_hot(ember.from_numpy(t), n).numpy(),
                              torch.nn.functional.one_hot(torch.from_numpy(t), n).numpy())
    assert EF.one_hot(ember.from_numpy(t)).dtype == ember.int64
    for bad, n in ((np.array([0, -1]), -1), (np.array([0, 5]), 3)):
        with pytest.raises(RuntimeError):
            torch.nn.functional.one_hot(torch.from_numpy(bad), n)
        with pytest.raises(RuntimeError):
            EF.one_hot(ember.from_numpy(bad), n)


@pytest.mark.parametrize("fn", ["dropout", "alpha_dropout", "feature_alpha_dropout",
                                "dropout2d"])
def test_dropout_statistics(fn):
    ember.manual_seed(0)
    x = ember.ones(200, 50, 4, 4) if fn != "dropout" else ember.ones(100000)
    y = getattr(EF, fn)(x, 0.3, True)
    a = y.numpy()
    if fn in ("dropout", "dropout2d"):
        assert set(np.unique(a)) <= {0.0, np.float32(1 / 0.7)}
        assert abs((a == 0).mean() - 0.3) < 0.02
        assert abs(a.mean() - 1.0) < 0.05
    else:
        assert abs((a < a.max()).mean() - 0.3) < 0.02
    # evaluation mode is the identity
    assert getattr(EF, fn)(x, 0.3, False) is x


def test_dropout_grad_uses_mask(torch):
    ember.manual_seed(1)
    x = ember.randn(50, 40, requires_grad=True)
    y = EF.dropout(x, 0.5)
    y.sum().backward()
    kept = y.detach().numpy() != 0
    np.testing.assert_allclose(x.grad.numpy(), np.where(kept, 2.0, 0.0))
    # on the CPU, PyTorch multiplies by bernoulli noise (the fused kernel is for devices)
    t = torch.nn.functional.dropout(torch.randn(3, requires_grad=True), 0.5)
    assert type(y.grad_fn).__name__ == type(t.grad_fn).__name__


def test_dropout_inplace_and_errors(torch):
    x = ember.ones(10)
    assert EF.dropout(x, 0.5, True, inplace=True) is x
    for f in (EF.dropout, torch.nn.functional.dropout):
        with pytest.raises(ValueError):
            f(torch.ones(3) if f is torch.nn.functional.dropout else ember.ones(3), 1.5)


def test_rrelu_and_gumbel(torch):
    ember.manual_seed(0)
    x = ember.from_numpy(_randn(1000))
    y = EF.rrelu(x, 0.1, 0.3, training=True).numpy()
    neg = x.numpy() < 0
    ratio = y[neg] / x.numpy()[neg]
    assert ratio.min() >= 0.1 - 1e-6 and ratio.max() <= 0.3 + 1e-6
    np.testing.assert_allclose(EF.rrelu(x, 0.1, 0.3).numpy(),
                               torch.nn.functional.rrelu(torch.from_numpy(x.numpy()), 0.1, 0.3)
                               .numpy())
    logits = ember.randn(5, 4)
    s = EF.gumbel_softmax(logits, tau=0.5)
    np.testing.assert_allclose(s.sum(-1).numpy(), np.ones(5), rtol=1e-5)
    h = EF.gumbel_softmax(logits, hard=True).numpy()
    assert set(np.unique(h)) <= {0.0, 1.0} and np.all(h.sum(-1) == 1)


def test_cdist(torch):
    a, b = _randn(2, 4, 3), _randn(2, 5, 3)
    for p in (2.0, 1.0, 3.0):
        e = ember.cdist(ember.from_numpy(a), ember.from_numpy(b), p) if hasattr(ember, "cdist") \
            else EF.cdist(ember.from_numpy(a), ember.from_numpy(b), p)
        t = torch.cdist(torch.from_numpy(a), torch.from_numpy(b), p)
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-6, atol=1e-8)


def test_multi_head_attention_forward(torch):
    L, N, E, H = 3, 2, 4, 2
    q, k, v = _randn(L, N, E), _randn(5, N, E), _randn(5, N, E)
    w_in, b_in, w_out, b_out = _randn(3 * E, E), _randn(3 * E), _randn(E, E), _randn(E)
    mask = np.zeros((N, 5), bool)
    mask[0, -1] = True
    args = lambda m, T: (T(q), T(k), T(v), E, H, T(w_in), T(b_in), None, None, False, 0.0,  # noqa
                         T(w_out), T(b_out))
    e_out, e_w = EF.multi_head_attention_forward(*args(EF, ember.from_numpy),
                                                 key_padding_mask=ember.from_numpy(mask))
    t_out, t_w = torch.nn.functional.multi_head_attention_forward(
        *args(None, torch.from_numpy), key_padding_mask=torch.from_numpy(mask))
    np.testing.assert_allclose(e_out.numpy(), t_out.numpy(), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(e_w.numpy(), t_w.numpy(), rtol=1e-6, atol=1e-8)


_MHA_CONFIGS = {
    "cross": {}, "self": {"self": True}, "self-sdpa": {"self": True, "need_weights": False},
    "encoder-decoder-sdpa": {"kv": True, "need_weights": False},
    "bool-mask": {"mask": "bool"}, "float-mask-and-padding": {"mask": "float", "kpm": True},
    "padding-sdpa": {"kpm": True, "need_weights": False},
    "bias-kv-zero-attn": {"bias_kv": True, "zero_attn": True, "kpm": True},
    "separate-weights": {"separate": True}, "unbatched-3d-mask": {"unbatched": True, "mask3": True},
    "causal-sdpa": {"self": True, "causal": True, "need_weights": False},
    "heads-not-averaged": {"average": False},
}


def _mha(F, T, cfg):
    """multi_head_attention_forward on one set of inputs in either library: output, weights
    and the gradients of the query and the packed (or separate) projection weights."""
    rng = np.random.default_rng(7)
    L, S, N, E, H = 4, 5, 2, 12, 3
    def leaf(*shape):  # noqa: E306
        t = T((rng.standard_normal(shape) * 0.3).astype(np.float32))
        t.requires_grad_(True)
        return t
    unbatched = cfg.get("unbatched")
    shape = lambda n: (n, E) if unbatched else (n, N, E)  # noqa: E731
    q = leaf(*shape(L))
    k = q if cfg.get("self") else leaf(*shape(S))
    v = q if cfg.get("self") else k if cfg.get("kv") else leaf(*shape(S))
    src = L if cfg.get("self") else S
    w_in, b_in, w_out, b_out = leaf(3 * E, E), leaf(3 * E), leaf(E, E), leaf(E)
    kw = {}
    if cfg.get("separate"):
        kw.update(use_separate_proj_weight=True, q_proj_weight=leaf(E, E),
                  k_proj_weight=leaf(E, E), v_proj_weight=leaf(E, E))
    mask = rng.standard_normal((L, src))
    if cfg.get("mask") == "bool" or cfg.get("causal"):
        kw["attn_mask"] = T(np.triu(np.ones((L, src), bool), 1) if cfg.get("causal") else mask > 1)
    elif cfg.get("mask") == "float":
        kw["attn_mask"] = T(mask.astype(np.float32))
    elif cfg.get("mask3"):
        kw["attn_mask"] = T(rng.standard_normal((H, L, src)).astype(np.float32))
    if cfg.get("kpm"):
        kw["key_padding_mask"] = T(np.arange(src)[None, :] >= np.array([[src], [src - 2]]))
    bias_k, bias_v = (leaf(1, 1, E), leaf(1, 1, E)) if cfg.get("bias_kv") else (None, None)
    out, weights = F.multi_head_attention_forward(
        q, k, v, E, H, w_in, b_in, bias_k, bias_v, cfg.get("zero_attn", False), 0.0, w_out,
        b_out, need_weights=cfg.get("need_weights", True), is_causal=cfg.get("causal", False),
        average_attn_weights=cfg.get("average", True), **kw)
    out.square().sum().backward()
    w = kw["q_proj_weight"] if cfg.get("separate") else w_in
    return [out, weights, q.grad, w.grad, w_out.grad]


@pytest.mark.parametrize("cfg", list(_MHA_CONFIGS))
def test_multi_head_attention_forward_configurations(torch, cfg):
    """PyTorch's steps: packed projections (one product for self-attention, two for
    encoder-decoder), additive merged masks, baddbmm of the scaled query when the weights are
    returned and scaled_dot_product_attention over the heads when not (is_causal included),
    bias_k/bias_v and zero attention padded onto the masks."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the mixed bool/float masks' deprecation warning)
        mine = _mha(EF, ember.from_numpy, _MHA_CONFIGS[cfg])
        theirs = _mha(torch.nn.functional, torch.from_numpy, _MHA_CONFIGS[cfg])
    for a, b in zip(mine, theirs):
        assert (a is None) == (b is None)
        if a is not None:
            assert tuple(a.shape) == tuple(b.shape)
            np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=2e-5,
                                       atol=2e-5)


@pytest.mark.parametrize("bad", [
    dict(key=(5, 2)), dict(query=(2, 3, 4, 12)), dict(key_padding_mask=(2,)),
    dict(attn_mask=(4,)), dict(attn_mask=(4, 6)), dict(attn_mask=(5, 4, 5)),
    dict(key_padding_mask=(3, 5)), dict(value=(6, 2, 12)), dict(bias_k=True),
    dict(embed=13), dict(heads=5), dict(query=(4, 12), key=(5, 12), value=(5, 12),
                                        attn_mask=(2, 4, 5)),
])
def test_multi_head_attention_forward_errors_match_torch(torch, bad):
    """Each shape check raises PyTorch's exception type with PyTorch's message."""
    def call(F, T):
        shapes = {"query": (4, 2, 12), "key": (5, 2, 12), "value": (5, 2, 12)}
        shapes.update({n: bad[n] for n in ("query", "key", "value") if n in bad})
        x = {n: T(np.ones(s, np.float32)) for n, s in shapes.items()}
        kw = {n: T(np.zeros(bad[n], bool)) for n in ("key_padding_mask", "attn_mask")
              if n in bad}
        bias_k = T(np.ones((1, 1, 12), np.float32)) if bad.get("bias_k") else None
        w_in, w_out = T(np.ones((36, 12), np.float32)), T(np.ones((12, 12), np.float32))
        return F.multi_head_attention_forward(
            x["query"], x["key"], x["value"], bad.get("embed", 12), bad.get("heads", 3), w_in,
            None, bias_k, None, False, 0.0, w_out, None, **kw)
    with pytest.raises(Exception) as t_exc:
        call(torch.nn.functional, torch.from_numpy)
    with pytest.raises(Exception) as e_exc:
        call(EF, ember.from_numpy)
    assert (type(e_exc.value), str(e_exc.value).replace("ember.", "torch.")) == \
        (type(t_exc.value), str(t_exc.value))


def test_private_functional_helpers_libraries_import(torch):
    """The private names of torch.nn.functional that code imports from it: the in-projection
    helpers, the pooling forms without indices, _pair and friends, _threshold, _is_integer,
    _no_grad_embedding_renorm_, _unpool_output_size."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 6, 6)).astype(np.float32)
    q, k = rng.standard_normal((2, 4, 6)).astype(np.float32), rng.standard_normal((3, 4, 6))
    w, b = rng.standard_normal((18, 6)).astype(np.float32), rng.standard_normal(18)
    table = rng.standard_normal((5, 3)).astype(np.float32) * 3
    results = {}
    for F, T in ((EF, ember.from_numpy), (torch.nn.functional, torch.from_numpy)):
        t = T(x)
        qq, kk = T(q), T(k.astype(np.float32))
        ww, bb = T(w), T(b.astype(np.float32))
        weight = T(table.copy())
        F._no_grad_embedding_renorm_(weight, T(np.array([0, 2])), 1.0, 2.0)
        results[F] = [*F._in_projection_packed(qq, qq, qq, ww, bb),
                      *F._in_projection_packed(qq, kk, kk, ww, None),
                      *F._in_projection(qq, kk, kk, *ww.chunk(3), *bb.chunk(3)),
                      F._max_pool2d(t, 2, return_indices=True), F._max_pool1d(t[0], 3, 1),
                      F._adaptive_max_pool2d(t, 3), F._threshold(t, 0.1, -1.0), weight,
                      F._fractional_max_pool2d(t, 2, output_size=3,
                                               _random_samples=T(np.full((2, 3, 2), 0.5,
                                                                         np.float32)))]
        assert (F._pair(3), F._single([1]), F._triple(2)) == ((3, 3), (1,), (2, 2, 2))
        assert [F._is_integer(v) for v in (3, np.int64(2), 2.0, T(np.array([1])), t)] == \
            [True, True, False, True, False]
        assert F._unpool_output_size(t, [2, 2], [2, 2], [0, 0], None) == [12, 12]
    for a, b in zip(results[EF], results[torch.nn.functional]):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)


@pytest.mark.parametrize("call", [
    lambda F, T: F.cross_entropy(T(_randn(3, 4)), T(np.array([0, 4, 1]))),
    lambda F, T: F.nll_loss(T(_randn(3, 4)), T(np.array([0, 1]))),
    lambda F, T: F.layer_norm(T(_randn(3, 4)), (3,)),
    lambda F, T: F.group_norm(T(_randn(2, 6, 3)), 4),
    lambda F, T: F.glu(T(_randn(3, 3)), 1),
    lambda F, T: F.softmax(T(np.array([1, 2])), 0),
    lambda F, T: F.gelu(T(_randn(3)), approximate="bad"),
    lambda F, T: F.embedding(T(np.array([0, 7])), T(_randn(5, 2))),
    lambda F, T: F.binary_cross_entropy(T(_rng.uniform(0, 1, 3)), T(_rng.uniform(0, 1, 4))),
    lambda F, T: F.batch_norm(T(_randn(1, 3)), None, None, training=True),
    lambda F, T: F.softshrink(T(_randn(3)), -1.0),
    lambda F, T: F.mse_loss(T(_randn(3)), T(_randn(3)), reduction="bad"),
], ids=["ce-target-oob", "nll-batch", "ln-shape", "gn-groups", "glu-odd", "softmax-int",
        "gelu-approx", "embedding-oob", "bce-size", "bn-one-value", "softshrink-neg",
        "bad-reduction"])
def test_errors_match_torch(torch, call):
    with pytest.raises(Exception) as t_exc:
        call(torch.nn.functional, torch.from_numpy)
    with pytest.raises(Exception) as e_exc:
        call(EF, ember.from_numpy)
    assert type(e_exc.value) is type(t_exc.value), (e_exc.value, t_exc.value)


def test_implicit_softmax_dim_warns(torch):
    with pytest.warns(UserWarning, match="Implicit dimension choice"):
        r = EF.softmax(ember.randn(2, 3))
    assert r.shape == (2, 3)


@pytest.mark.parametrize("fn", [
    lambda x: EF.softmax(x, 1), lambda x: EF.log_softmax(x, 0),
    lambda x: EF.layer_norm(x, (4,)), lambda x: EF.gelu(x), lambda x: EF.silu(x),
    lambda x: EF.cross_entropy(x, ember.tensor([0, 3, 1])),
    lambda x: EF.group_norm(x.reshape(3, 2, 2), 2),
], ids=["softmax", "log_softmax", "layer_norm", "gelu", "silu", "cross_entropy", "group_norm"])
def test_gradcheck(fn):
    x = ember.randn(3, 4, dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(fn, (x,))


def test_embedding_gradcheck():
    w = ember.randn(5, 3, dtype=ember.float64, requires_grad=True)
    idx = ember.tensor([[0, 2], [2, 4]])
    assert ember.autograd.gradcheck(lambda w: EF.embedding(idx, w), (w,))


def test_half_precision(torch):
    x = _randn(3, 5).astype(np.float32)
    for dt in ("float16", "bfloat16"):
        e = ember.from_numpy(x).to(getattr(ember, dt))
        t = torch.from_numpy(x).to(getattr(torch, dt))
        for f in ("softmax", "log_softmax"):
            r_e = getattr(EF, f)(e, 1)
            r_t = getattr(torch.nn.functional, f)(t, 1)
            assert str(r_e.dtype).split(".")[-1] == dt
            np.testing.assert_allclose(r_e.float().numpy(), r_t.float().numpy(), atol=2e-2,
                                       rtol=2e-2)
        r_e = EF.layer_norm(e, (5,))
        r_t = torch.nn.functional.layer_norm(t, (5,))
        np.testing.assert_allclose(r_e.float().numpy(), r_t.float().numpy(), atol=5e-2,
                                   rtol=5e-2)


def test_hardswish_gradient_at_the_kinks_matches_pytorch(torch):
    x = [-3.0, -2.5, 0.0, 3.0, 3.5, -3.5]
    e = ember.tensor(x, requires_grad=True)
    ember.nn.functional.hardswish(e).sum().backward()
    t = torch.tensor(x, requires_grad=True)
    torch.nn.functional.hardswish(t).sum().backward()
    assert e.grad.tolist() == t.grad.tolist()


@pytest.mark.parametrize("op,params", [("threshold_backward", (0.0,)), ("silu_backward", ()),
                                       ("hardtanh_backward", (-1.0, 1.0)),
                                       ("softplus_backward", (1.0, 20.0)),
                                       ("hardswish_backward", ())])
def test_activation_backward_ops_broadcast_like_pytorch(torch, op, params):
    """PyTorch's activation backward ops are binary TensorIterator ops: grad and input
    broadcast (vmap relies on it when only one of them is batched)."""
    g = np.linspace(-2, 2, 6).reshape(2, 3).astype(np.float32)
    x = np.array([-0.5, 0.25, 1.5], np.float32)
    for a, b in ((g, x), (x, g)):
        got = getattr(ember.ops.aten, op)(ember.tensor(a), ember.tensor(b), *params)
        want = getattr(torch.ops.aten, op)(torch.tensor(a), torch.tensor(b), *params)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
        meta = getattr(ember.ops.aten, op)(ember.tensor(a).to("meta"), ember.tensor(b).to("meta"),
                                           *params)
        assert meta.shape == tuple(want.shape)
    with pytest.raises(RuntimeError, match=r"size of tensor a \(3\) must match"):
        getattr(ember.ops.aten, op)(ember.ones(2, 3), ember.ones(4), *params)


def test_bce_with_logits_result_has_the_targets_dtype():
    """ATen builds the loss in place on 1 - target: a float64 input with a float32 target
    gives float32 (Faster R-CNN's float64 training meets this), the gradients keep each
    operand's dtype, and an integer target is refused with ATen's casting error."""
    torch = pytest.importorskip("torch")
    for lib in (torch, ember):
        x = lib.tensor([0.5, -1.0, 2.0], dtype=lib.float64, requires_grad=True)
        t = lib.tensor([1.0, 0.0, 0.5], requires_grad=True)
        loss = lib.nn.functional.binary_cross_entropy_with_logits(x, t, pos_weight=lib.ones(3))
        loss.backward()
        assert str(loss.dtype).endswith("float32") and str(x.grad.dtype).endswith("float64")
        assert str(t.grad.dtype).endswith("float32")
        meta = lib.nn.functional.binary_cross_entropy_with_logits(
            lib.zeros(2, dtype=lib.float64, device="meta"), lib.zeros(2, device="meta"))
        assert str(meta.dtype).endswith("float32")
        with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                               "output type Long"):
            lib.nn.functional.binary_cross_entropy_with_logits(lib.zeros(2), lib.ones(2).long())


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("mixed", [True, False], ids=["float32_params", "same_dtype_params"])
def test_layer_norm_16_bit_as_aten(dtype, mixed):
    """bfloat16/float16 layer_norm as ATen's CPU kernel: float32 statistics when the parameters
    are float32 (autocast's LayerNorm), else the input's dtype; the weight and bias gradients
    summed in the input's dtype per thread, bit for bit (a float sum differs by several ulps
    after a few hundred rows); the input gradient and output within one 16-bit ulp."""
    torch = pytest.importorskip("torch")
    threads = ember.get_num_threads()
    ember.set_num_threads(torch.get_num_threads())  # ATen's sums follow its thread split
    try:
        for m, n in ((1, 16), (37, 70), (600, 96)):
            rng = np.random.default_rng(m)
            arrays = [rng.standard_normal(s).astype(np.float32) * 2 + 1
                      for s in ((m, n), (n,), (n,), (m, n))]
            pdt = "float32" if mixed else dtype
            ins = {}
            for lib in (torch, ember):
                x, w, b, dy = (lib.from_numpy(a.copy()) for a in arrays)
                x, dy = x.to(getattr(lib, dtype)), dy.to(getattr(lib, dtype))
                w, b = w.to(getattr(lib, pdt)), b.to(getattr(lib, pdt))
                y, mean, rstd = lib.native_layer_norm(x, [n], w, b, 1e-5)
                ins[lib] = (y, mean, rstd, lib.ops.aten.native_layer_norm_backward(
                    dy, x, [n], mean, rstd, w, b, [True, True, True]))
            (ty, tm, tr, tg), (ey, em, er, eg) = ins[torch], ins[ember]
            assert str(em.dtype).split(".")[1] == str(tm.dtype).split(".")[1] == \
                ("float32" if mixed else dtype)
            ulp = {"bfloat16": 2 ** -7, "float16": 2 ** -10}[dtype]
            for got, want in ((ey, ty), (eg[0], tg[0])):
                got, want = got.float().numpy(), want.float().numpy()
                np.testing.assert_allclose(got, want, rtol=ulp, atol=ulp * np.abs(want).max())
            np.testing.assert_allclose(em.float().numpy(), tm.float().numpy(), rtol=1e-5)
            # the weight and bias gradients from PyTorch's own statistics: exact
            e = [ember.from_numpy(t.float().numpy()).to(getattr(ember, str(t.dtype)[6:]))
                 for t in (tm, tr)]
            x, dy = (ember.from_numpy(a.copy()).to(getattr(ember, dtype))
                     for a in (arrays[0], arrays[3]))
            w, b = (ember.from_numpy(a.copy()).to(getattr(ember, pdt)) for a in arrays[1:3])
            _, dw, db = ember.ops.aten.native_layer_norm_backward(dy, x, [n], *e, w, b,
                                                                  [False, True, True])
            for got, want in ((dw, tg[1]), (db, tg[2])):
                assert str(got.dtype)[6:] == str(want.dtype)[6:] == pdt
                np.testing.assert_array_equal(got.float().numpy(), want.float().numpy())
    finally:
        ember.set_num_threads(threads)


def test_layer_norm_mixed_dtype_errors_as_aten():
    torch = pytest.importorskip("torch")
    for lib in (torch, ember):
        x16 = lib.ones(2, 3, dtype=lib.bfloat16)
        for x, w, b, msg in (
                (x16, lib.ones(3), lib.ones(3, dtype=lib.bfloat16), "parameter to have scalar "
                                                                     "type of Float"),
                (x16, lib.ones(3, dtype=lib.float64), None, "parameter to have scalar type"),
                (lib.ones(2, 3), lib.ones(3, dtype=lib.bfloat16), None, "parameter to have"),
                (lib.ones(2, 3), lib.ones(3, dtype=lib.float64), None, "parameter to have")):
            with pytest.raises(RuntimeError, match=f"mixed dtype \\(CPU\\): expect {msg}"):
                lib.native_layer_norm(x, [3], w, b, 1e-5)
        meta = lib.native_layer_norm(lib.ones(2, 3, dtype=lib.bfloat16, device="meta"), [3],
                                     lib.ones(3, device="meta"), None, 1e-5)
        assert str(meta[1].dtype).endswith("float32")


def test_bfloat16_autocast_training_follows_pytorch():
    """20 AdamW steps of a Linear-GELU-LayerNorm-Linear model under CPU autocast(bfloat16):
    the losses and the LayerNorm's weights stay on PyTorch's (they drifted by 3e-4 while the
    LayerNorm's weight gradient was summed in float)."""
    torch = pytest.importorskip("torch")
    threads = ember.get_num_threads()
    ember.set_num_threads(torch.get_num_threads())
    rs = np.random.RandomState(0)
    X, Y = rs.randn(256, 8).astype(np.float32), rs.randn(256, 1).astype(np.float32)
    runs = []
    try:
        for lib in (torch, ember):
            lib.manual_seed(0)
            m = lib.nn.Sequential(lib.nn.Linear(8, 64), lib.nn.GELU(), lib.nn.LayerNorm(64),
                                  lib.nn.Linear(64, 1))
            opt = lib.optim.AdamW(m.parameters(), lr=1e-2)
            x, y = lib.from_numpy(X), lib.from_numpy(Y)
            losses = []
            for _ in range(20):
                with lib.autocast("cpu", dtype=lib.bfloat16):
                    loss = lib.nn.functional.mse_loss(m(x).float(), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
                losses.append(loss.item())
            runs.append((np.array(losses), m[2].weight.detach().numpy().copy()))
    finally:
        ember.set_num_threads(threads)
    (tl, tw), (el, ew) = runs
    np.testing.assert_allclose(el, tl, rtol=1e-5)
    np.testing.assert_allclose(ew, tw, rtol=0, atol=1e-6)


@pytest.mark.parametrize("norm", ["batch_norm_train", "batch_norm_eval", "group_norm"])
def test_norms_over_bfloat16_with_float32_parameters_as_aten(norm):
    """Autocast's batch and group norms (a bfloat16 input, float32 weights and running stats):
    ATen keeps the statistics in float32 ("mixed type"); rounding them to bfloat16 cost the
    weight gradient four digits. With bfloat16 parameters the statistics are bfloat16."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    x, dy = (rng.standard_normal((4, 8, 6, 6)).astype(np.float32) * 2 + 1 for _ in range(2))
    w, b = (rng.standard_normal(8).astype(np.float32) for _ in range(2))
    rm, rv = rng.random(8).astype(np.float32), rng.random(8).astype(np.float32) + 0.5
    for pdt in ("float32", "bfloat16"):
        out = {}
        for lib in (torch, ember):
            xx, g = (lib.from_numpy(a.copy()).to(lib.bfloat16) for a in (x, dy))
            ww, bb, r1, r2 = (lib.from_numpy(a.copy()).to(getattr(lib, pdt))
                              for a in (w, b, rm, rv))
            xx.requires_grad_(), ww.requires_grad_(), bb.requires_grad_()
            if norm == "group_norm":
                stats = lib.native_group_norm(xx, ww, bb, 4, 8, 36, 2, 1e-5)[1:]
                y = lib.nn.functional.group_norm(xx, 2, ww, bb)
            else:
                train = norm == "batch_norm_train"
                stats = lib.native_batch_norm(xx, ww, bb, r1.clone(), r2.clone(), train, 0.1,
                                              1e-5)[1:]
                y = lib.nn.functional.batch_norm(xx, r1, r2, ww, bb, training=train)
            y.backward(g)
            out[lib] = [str(s.dtype)[6:] for s in stats], [
                t.detach().float().numpy() for t in (y, xx.grad, ww.grad, bb.grad, r1, r2)]
        (tdt, tv), (edt, ev) = out[torch], out[ember]
        assert edt == tdt == [pdt] * 2
        if pdt == "float32":
            for got, want in zip(ev, tv):
                scale = np.abs(want).max()
                np.testing.assert_allclose(got, want, rtol=2 ** -7, atol=2 ** -8 * scale)
            np.testing.assert_allclose(ev[2], tv[2], rtol=1e-4, atol=1e-4 * np.abs(tv[2]).max())


def _nll(lib, x, reduction):
    n, c = x.shape
    target = lib.from_numpy(np.arange(n) * 7 % c)
    target[::5] = -100
    weight = lib.from_numpy(np.linspace(0.5, 1.5, c, dtype=np.float32)).to(x.dtype)
    return lib.nn.functional.nll_loss(x.log_softmax(-1), target, weight, reduction=reduction)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_reduced_float_normalize_log_softmax_nll_are_pytorchs_bits(torch, dtype):
    """Half and bfloat16 as ATen's CPU kernels round them (x-transformers' RMSNorm and a
    bfloat16 model's loss): F.normalize divides by Tensor.norm (accumulated in float, rounded
    once) and its backward is norm_backward's ``grad * (self / norm)``; log_softmax over the
    last dim rounds each row's sum of exponentials and its log to the dtype before subtracting
    (over another dim, or a last dim of size 1 behind it, ATen keeps them in float); nll_loss
    sums in the dtype by ATen's cascade and its backward divides by the total weight first."""
    rng = np.random.default_rng(0)
    cases = [
        (lambda lib, x: lib.nn.functional.normalize(x, dim=-1), (24, 32)),
        (lambda lib, x: lib.nn.functional.normalize(x, p=3.0, dim=1) * 5.656, (4, 6, 5)),
        (lambda lib, x: x.log_softmax(dim=-1), (40, 33)),
        (lambda lib, x: x.log_softmax(dim=1), (40, 1000)),
        (lambda lib, x: x.log_softmax(dim=0), (40, 33)),
        (lambda lib, x: x.log_softmax(dim=1), (40, 33, 1)),
        (lambda lib, x: lib.nn.functional.cross_entropy(x, x.argmin(-1)), (16, 50)),
        (lambda lib, x: _nll(lib, x, "mean"), (1000, 7)),
        (lambda lib, x: _nll(lib, x, "sum"), (300, 7)),
    ]
    for i, (fn, shape) in enumerate(cases):
        x = (rng.standard_normal(shape) * 3).astype(np.float32)
        outs = []
        for lib in (torch, ember):
            t = lib.from_numpy(x.copy()).to(getattr(lib, dtype)).requires_grad_()
            y = fn(lib, t)
            g = lib.from_numpy(np.linspace(-1, 1, y.numel(), dtype=np.float32)).reshape(y.shape)
            y.backward(g.to(y.dtype))
            outs.append([y.detach().float().numpy(), t.grad.float().numpy()])
        for got, want in zip(outs[1], outs[0]):
            np.testing.assert_array_equal(got, want, err_msg=f"case {i}")


@pytest.mark.parametrize("p", [1.0, 2.0, 3.0, 0.5, float("inf")])
def test_normalize_gradient_at_a_zero_vector_is_pytorchs(torch, p):
    """A zero vector divides by eps and its gradient is grad / eps as in PyTorch (the norm's
    backward masks the zero norm), not NaN."""
    x = np.array([[0.0, 0.0, 0.0], [1.0, -2.0, 2.0], [0.0, 3.0, 0.0]])
    grads = []
    for lib in (torch, ember):
        t = lib.tensor(x, requires_grad=True)
        lib.nn.functional.normalize(t, p=p, dim=1).backward(lib.tensor([[1.0, 2.0, 3.0]] * 3))
        grads.append(t.grad.numpy())
    assert np.isfinite(grads[0]).all()
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-12, atol=1e-12)
