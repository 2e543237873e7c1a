"""The fused inference path of nn.MultiheadAttention, nn.TransformerEncoderLayer and
nn.TransformerEncoder (ember.backends.mha): the aten ops it runs (against PyTorch's), when the
modules take it (op logs through TorchDispatchMode) and that it gives PyTorch's numbers."""
import warnings

import numpy as np
import pytest

import ember
from ember.utils._python_dispatch import TorchDispatchMode

RNG = np.random.RandomState(0)
X = RNG.randn(3, 5, 8).astype(np.float32)
KPM = np.array([[False] * 5, [False, False, False, True, True], [True] * 5])
CAUSAL = np.triu(np.ones((5, 5), bool), 1)
FUSED = {"aten._native_multi_head_attention.default", "aten._transformer_encoder_layer_fwd.default"}


class OpLog(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.ops = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.append(str(func))
        return func(*args, **(kwargs or {}))


def fused_ops(fn):
    with OpLog() as log:
        fn()
    return [op for op in log.ops if op in FUSED]


def copy_params(torch_module, ember_module):
    ember_module.load_state_dict({k: ember.tensor(v.detach().numpy())
                                  for k, v in torch_module.state_dict().items()})


def close(e, t, atol=1e-6):
    t = t.detach().numpy()
    e = e.detach().numpy()
    assert np.array_equal(np.isnan(e), np.isnan(t))
    np.testing.assert_allclose(np.nan_to_num(e), np.nan_to_num(t), rtol=1e-5, atol=atol)


@pytest.mark.parametrize("mask_type,mask", [
    (1, KPM), (0, CAUSAL), (2, np.broadcast_to(CAUSAL, (3, 2, 5, 5)).copy())])
def test_masked_softmax_matches_pytorch(torch, mask_type, mask):
    x = RNG.randn(3, 2, 5, 5)
    grad = RNG.randn(3, 2, 5, 5)
    ours, theirs = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out_e = ember._masked_softmax(ours, ember.tensor(mask), 3, mask_type)
    out_t = torch._masked_softmax(theirs, torch.tensor(mask), 3, mask_type)
    close(out_e, out_t)
    assert type(out_e.grad_fn).__name__ == "MaskedSoftmaxBackward0"
    if mask_type == 2:  # PyTorch's backward takes only masks of the input's shape
        (out_e * ember.tensor(grad)).sum().backward()
        (out_t * torch.tensor(grad)).sum().backward()
        close(ours.grad, theirs.grad)


@pytest.mark.parametrize("args,message", [
    (lambda L: (L.randn(2, 2, 3, 3), L.zeros(2, 3), 3, 1), "Mask should be a boolean tensor"),
    (lambda L: (L.randn(2, 2, 3, 3), L.zeros(2, 3, dtype=L.bool), 3, None),
     "Mask Type should be defined"),
    (lambda L: (L.randn(2, 2, 3, 3), L.zeros(3, 3, dtype=L.bool), 3, 1),
     "For mask_type == 1 mask shape should be (B, L)"),
    (lambda L: (L.randn(2, 3), L.zeros(3, 2, dtype=L.bool), 1, None),
     "For mask_type == 2 mask shape should match input shape")])
def test_masked_softmax_errors_match_pytorch(torch, args, message):
    for lib in (torch, ember):
        with pytest.raises(RuntimeError, match=message.replace("(", r"\(").replace(")", r"\)")):
            lib._masked_softmax(*args(lib))


def test_transform_bias_rescale_qkv_matches_pytorch(torch):
    qkv, bias = RNG.randn(2, 5, 24).astype(np.float32), RNG.randn(24).astype(np.float32)
    ours = ember._transform_bias_rescale_qkv(ember.tensor(qkv), ember.tensor(bias), 4)
    theirs = torch._transform_bias_rescale_qkv(torch.tensor(qkv), torch.tensor(bias), 4)
    for e, t in zip(ours, theirs):
        assert tuple(e.shape) == tuple(t.shape) == (2, 4, 5, 2)
        close(e, t)
    with pytest.raises(RuntimeError, match="Expected D % num_head == 0 to be true"):
        ember._transform_bias_rescale_qkv(ember.tensor(qkv), ember.tensor(bias), 3)


def test_native_multi_head_attention_is_not_differentiable(torch):
    for lib in (torch, ember):
        q = lib.randn(2, 3, 8, requires_grad=True)
        out, weights = lib._native_multi_head_attention(
            q, q, q, 8, 2, lib.randn(24, 8), lib.randn(24), lib.randn(8, 8), lib.randn(8))
        assert tuple(weights.shape) == (2, 3, 3)
        with pytest.raises(RuntimeError, match="derivative for aten::_native_multi_head_attention"
                                               " is not implemented"):
            out.sum().backward()


def test_native_multi_head_attention_checks_match_pytorch(torch):
    for lib in (torch, ember):
        q = lib.randn(2, 3, 8)
        w, b = lib.randn(24, 8), lib.randn(24)
        with pytest.raises(RuntimeError, match="passed-in embed_dim 6 didn't match last dim of "
                                               "query 8"):
            lib._native_multi_head_attention(q, q, q, 6, 2, w, b, lib.randn(8, 8), lib.randn(8))
        with pytest.raises(RuntimeError, match="expected `qkv_bias` first dim"):
            lib._native_multi_head_attention(q, q, q, 8, 2, w, lib.randn(8), lib.randn(8, 8),
                                             lib.randn(8))


def _mha_pair(torch, **kw):
    torch.manual_seed(0)
    theirs = torch.nn.MultiheadAttention(8, 2, batch_first=True, **kw).eval()
    ours = ember.nn.MultiheadAttention(8, 2, batch_first=True, **kw).eval()
    copy_params(theirs, ours)
    return ours, theirs


@pytest.mark.parametrize("masks", ["none", "padding", "causal", "both"])
@pytest.mark.parametrize("weights", ["averaged", "per_head", "none"])
def test_multihead_attention_fast_path_matches_pytorch(torch, masks, weights):
    ours, theirs = _mha_pair(torch)
    outs = []
    for lib, module in ((ember, ours), (torch, theirs)):
        kw = {"need_weights": weights != "none", "average_attn_weights": weights == "averaged"}
        if masks in ("padding", "both"):
            kw["key_padding_mask"] = lib.tensor(KPM[:2])
        if masks in ("causal", "both"):
            kw["attn_mask"] = lib.tensor(CAUSAL)
        x = lib.tensor(X[:2])
        with lib.no_grad():
            outs.append(module(x, x, x, **kw))
        if lib is ember:
            with lib.no_grad():
                assert fused_ops(lambda: module(x, x, x, **kw)) == [
                    "aten._native_multi_head_attention.default"]
    (out_e, w_e), (out_t, w_t) = outs
    close(out_e, out_t)
    assert (w_e is None) == (w_t is None)
    if w_t is not None:
        close(w_e, w_t)


def test_multihead_attention_general_path_when_blocked(torch):
    ours, _ = _mha_pair(torch)
    x = ember.tensor(X)
    assert ours._why_not_fast_path(x, x, x, True) == (
        "grad is enabled and at least one of query or the input/output projection weights or "
        "biases requires_grad")
    assert fused_ops(lambda: ours(x, x, x)) == []
    with ember.no_grad():
        y = ember.tensor(X)
        assert ours._why_not_fast_path(x, y, y, True) == (
            "non-self attention was used (query, key, and value are not the same Tensor)")
        assert fused_ops(lambda: ours(x, y, y)) == []
        ember.backends.mha.set_fastpath_enabled(False)
        try:
            assert fused_ops(lambda: ours(x, x, x)) == []
        finally:
            ember.backends.mha.set_fastpath_enabled(True)
        ours.train()
        assert ours._why_not_fast_path(x, x, x, True) == "training is enabled"
        assert fused_ops(lambda: ours(x, x, x)) == []


@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_fast_path_matches_pytorch(torch, activation, norm_first):
    torch.manual_seed(1)
    kw = dict(dim_feedforward=16, batch_first=True, activation=activation, norm_first=norm_first)
    theirs = torch.nn.TransformerEncoderLayer(8, 2, **kw).eval()
    ours = ember.nn.TransformerEncoderLayer(8, 2, **kw).eval()
    copy_params(theirs, ours)
    for mask in (None, KPM[:2]):
        outs = []
        for lib, layer in ((ember, ours), (torch, theirs)):
            m = None if mask is None else lib.tensor(mask)
            with lib.no_grad():
                outs.append(layer(lib.tensor(X[:2]), src_key_padding_mask=m))
        close(*outs)
    with ember.no_grad():
        assert fused_ops(lambda: ours(ember.tensor(X))) == [
            "aten._transformer_encoder_layer_fwd.default"]
        ours.register_forward_hook(lambda *a: None)
        assert ours._why_not_sparsity_fast_path(ember.tensor(X)) == (
            "forward pre-/hooks are attached to the module")


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_stack_matches_pytorch_padding(torch, norm_first):
    """PyTorch runs a post-norm stack on nested tensors when given a key-padding mask, which
    zeroes the padded positions (a fully padded sequence too); ember matches the numbers."""
    torch.manual_seed(2)
    kw = dict(dim_feedforward=16, batch_first=True, norm_first=norm_first)
    with warnings.catch_warnings(record=True) as theirs_warned:
        warnings.simplefilter("always")
        theirs = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(8, 2, **kw), 2,
                                             norm=torch.nn.LayerNorm(8)).eval()
    with warnings.catch_warnings(record=True) as ours_warned:
        warnings.simplefilter("always")
        ours = ember.nn.TransformerEncoder(ember.nn.TransformerEncoderLayer(8, 2, **kw), 2,
                                           norm=ember.nn.LayerNorm(8)).eval()
    assert [str(w.message) for w in ours_warned] == [str(w.message) for w in theirs_warned]
    copy_params(theirs, ours)
    for mask in (KPM, KPM[:, ::-1].copy(), None):  # right-padded, left-padded, none
        outs = []
        for lib, stack in ((ember, ours), (torch, theirs)):
            with lib.no_grad():
                outs.append(stack(lib.tensor(X), src_key_padding_mask=None if mask is None
                                  else lib.tensor(mask)))
        close(*outs, atol=1e-5)


def test_transformer_fast_path_off_gives_pytorchs_numbers(torch):
    """With the fast path off, the general path runs (no fused op) and computes what
    PyTorch's does; the two paths agree except on a sequence whose keys are all padded, which
    the fused kernel makes NaN and the general path (scaled_dot_product_attention) zeros, in
    PyTorch as here."""
    outs = {}
    for lib in (ember, torch):
        lib.manual_seed(3)
        layer = lib.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True).eval()
        x, mask = lib.tensor(X), lib.tensor(KPM[:, ::-1].copy())
        with lib.no_grad():
            fused = layer(x, src_key_padding_mask=mask)
            lib.backends.mha.set_fastpath_enabled(False)
            try:
                if lib is ember:
                    assert fused_ops(lambda: layer(x)) == []
                general = layer(x, src_key_padding_mask=mask)
            finally:
                lib.backends.mha.set_fastpath_enabled(True)
        outs[lib] = fused.numpy(), general.numpy()
    for mine, theirs in zip(outs[ember], outs[torch]):
        np.testing.assert_allclose(mine, theirs, rtol=1e-5, atol=1e-6)
    fused, general = outs[ember]
    assert np.isnan(fused[2]).all() and not np.isnan(general).any()
    np.testing.assert_allclose(fused[:2], general[:2], rtol=1e-5, atol=1e-6)


def test_out_variants_write_the_functional_results():
    """The generated out= variants of the fast-path ops give what the functional ops return."""
    aten = ember.ops.aten
    x = ember.tensor(RNG.randn(3, 2, 5, 5).astype(np.float32))
    mask = ember.tensor(KPM)
    want = aten._masked_softmax(x, mask, 3, 1)
    out = ember.empty(0)
    aten._masked_softmax.out(x, mask, 3, 1, out=out)
    np.testing.assert_array_equal(out.numpy(), want.numpy())
    grad = ember.tensor(RNG.randn(3, 2, 5, 5).astype(np.float32))
    full = ember.tensor(np.broadcast_to(CAUSAL, (3, 2, 5, 5)).copy())
    y = aten._masked_softmax(x, full, 3, 2)
    out = ember.empty(0)
    aten._masked_softmax_backward.out(grad, y, full, 3, out=out)
    np.testing.assert_array_equal(out.numpy(),
                                  aten._masked_softmax_backward(grad, y, full, 3).numpy())
    qkv, bias = ember.tensor(RNG.randn(2, 5, 24).astype(np.float32)), ember.zeros(24)
    outs = [ember.empty(0) for _ in range(3)]
    aten._transform_bias_rescale_qkv.out(qkv, bias, 4, out0=outs[0], out1=outs[1], out2=outs[2])
    for o, w in zip(outs, aten._transform_bias_rescale_qkv(qkv, bias, 4)):
        np.testing.assert_array_equal(o.numpy(), w.numpy())
    q = ember.tensor(X[:2])
    params = [ember.tensor(RNG.randn(*s).astype(np.float32))
              for s in [(24, 8), (24,), (8, 8), (8,)]]
    o0, o1 = ember.empty(0), ember.empty(0)
    aten._native_multi_head_attention.out(q, q, q, 8, 2, *params, out0=o0, out1=o1)
    w0, w1 = aten._native_multi_head_attention(q, q, q, 8, 2, *params)
    np.testing.assert_array_equal(o0.numpy(), w0.numpy())
    np.testing.assert_array_equal(o1.numpy(), w1.numpy())
    layer = [ember.tensor(RNG.randn(*s).astype(np.float32)) for s in
             [(24, 8), (24,), (8, 8), (8,), (8,), (8,), (8,), (8,), (16, 8), (16,), (8, 16), (8,)]]
    args = (q, 8, 2, *layer[:4], False, False, 1e-5, *layer[4:])
    out = ember.empty(0)
    aten._transformer_encoder_layer_fwd.out(*args, out=out)
    np.testing.assert_array_equal(out.numpy(), aten._transformer_encoder_layer_fwd(*args).numpy())
