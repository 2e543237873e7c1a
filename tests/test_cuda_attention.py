"""scaled_dot_product_attention on CUDA: the flash and memory-efficient ops
(``_kernels/cuda/attention.py``: the Triton kernels, or blocked products — NumPy on the simulated
device, CuPy and cuBLAS on a GPU) against the math path, PyTorch's backend choice, and the ops'
PyTorch layouts."""
import os
import warnings

import numpy as np
import pytest

import ember
from ember.backends import _sdp
from ember.nn.attention import SDPBackend, sdpa_kernel

pytestmark = pytest.mark.usefixtures("cuda_device")
F = ember.nn.functional


def _grads(fn, q, k, v, g):
    for t in (q, k, v):
        t.grad = None
    y = fn(q, k, v)
    (y * g).sum().backward()
    return y.detach(), [t.grad.clone() for t in (q, k, v)]


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shape", [(2, 3, 5, 7, 8, 11), (1, 2, 16, 16, 32, 32),
                                   (2, 4, 9, 4, 16, 16), (1, 1, 1, 1, 4, 4)])
def test_efficient_kernel_matches_the_math_path(causal, shape):
    q, k, v = _matches_the_math_path(causal, shape)
    assert type(F.scaled_dot_product_attention(q, k, v, is_causal=causal).grad_fn).__name__ == \
        "ScaledDotProductEfficientAttentionBackward0"


def _matches_the_math_path(causal, shape):
    """float32 attention of ``shape`` (B, H, L, S, Dq, Dv) through scaled_dot_product_attention:
    output and gradients within float32 rounding of the math path; returns (q, k, v)."""
    B, H, L, S, Dq, Dv = shape
    ember.manual_seed(0)
    q = ember.randn(B, H, L, Dq, device="cuda", requires_grad=True)
    k = ember.randn(B, H, S, Dq, device="cuda", requires_grad=True)
    v = ember.randn(B, H, S, Dv, device="cuda", requires_grad=True)
    g = ember.randn(B, H, L, Dv, device="cuda")
    y, grads = _grads(lambda *a: F.scaled_dot_product_attention(*a, is_causal=causal), q, k, v, g)
    y_ref, ref = _grads(lambda *a: F._sdpa_math(*a, is_causal=causal), q, k, v, g)
    assert np.allclose(y.cpu().numpy(), y_ref.cpu().numpy(), atol=2e-6)
    for a, b in zip(grads, ref):
        assert np.allclose(a.cpu().numpy(), b.cpu().numpy(), atol=5e-6)
    return q, k, v


@pytest.fixture
def fused(monkeypatch, cuda_device):
    """The fused Triton kernels (flash_attention.py) for every call they take: under Triton's
    interpreter on the simulated device, compiled on a GPU. Yields the list of launches."""
    pytest.importorskip("triton")
    from ember._kernels.cuda import attention, flash_attention
    if cuda_device == "simulated":
        assert os.environ.get("TRITON_INTERPRET") == "1"  # set by conftest.py
    monkeypatch.setattr(attention, "use_triton", True)
    launches = []
    for name in ("forward", "backward"):
        fn = getattr(flash_attention, name)
        monkeypatch.setattr(flash_attention, name,
                            lambda *a, _fn=fn, _n=name: (launches.append(_n), _fn(*a))[1])
    yield launches


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shape", [(2, 3, 5, 7, 8, 11), (1, 2, 16, 16, 32, 32),
                                   (2, 2, 70, 45, 16, 24), (1, 1, 1, 1, 4, 4)])
def test_fused_kernels_match_the_math_path(fused, causal, shape):
    """FlashAttention-2 in Triton: several query and key blocks (70 rows), queries longer and
    shorter than the keys under the causal mask, head dimensions padded to the blocks."""
    _matches_the_math_path(causal, shape)
    assert fused == ["forward", "backward"]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_fused_kernels_in_half_precision(fused, cuda_device, dtype):
    """16-bit inputs: products on the tensor cores with float32 accumulation, the results in
    the input's dtype, within its rounding of the float32 math path."""
    if dtype == "bfloat16" and cuda_device == "simulated":
        pytest.skip("Triton's interpreter computes bfloat16 tl.dot wrongly (with PyTorch's "
                    "tensors too, Triton 3.9); a GPU checks it")
    dt = getattr(ember, dtype)
    ember.manual_seed(0)
    q, k, v, g = (ember.randn(1, 2, 33, 16, device="cuda").to(dt) for _ in range(4))
    for t in (q, k, v):
        t.requires_grad_()
    y, grads = _grads(lambda *a: F.scaled_dot_product_attention(*a, is_causal=True), q, k, v, g)
    assert fused == ["forward", "backward"] and y.dtype == dt and grads[0].dtype == dt
    leaves = [t.detach().float().requires_grad_() for t in (q, k, v)]
    y_ref, ref = _grads(lambda *a: F._sdpa_math(*a, is_causal=True), *leaves, g.float())
    assert np.allclose(y.float().cpu().numpy(), y_ref.cpu().numpy(), atol=1e-2)
    for a, b in zip(grads, ref):
        assert np.allclose(a.float().cpu().numpy(), b.cpu().numpy(), atol=2e-2)


def test_the_blocked_path_takes_what_the_fused_kernels_do_not(fused):
    """A head dimension over flash_attention.MAX_HEAD_DIM goes to the blocked products."""
    q = ember.randn(1, 1, 8, 160, device="cuda")
    y = F.scaled_dot_product_attention(q, q, q, is_causal=True)
    assert fused == []
    assert np.allclose(y.cpu().numpy(), F._sdpa_math(q, q, q, is_causal=True).cpu().numpy(),
                       atol=2e-6)


@pytest.mark.parametrize("budget", [4 * 7 * 3 * 5, 4 * 7 * 3 * 9 * 2])
@pytest.mark.parametrize("causal", [False, True])
def test_blocks_of_rows_and_batches_give_the_same_values(monkeypatch, causal, budget):
    """A small scores budget splits the queries into blocks of rows (5 rows) or takes two batch
    entries per block (9 rows, the whole sequence): values and gradients as the math path."""
    from ember._kernels.cuda import attention
    monkeypatch.setattr(attention, "_SCORES_BUDGET", budget)
    assert attention._blocks(3, 3, 9, 7) == (
        ([slice(0, 1), slice(1, 2), slice(2, 3)], [slice(0, 5), slice(5, 9)]) if budget < 4 * 7 * 3 * 9
        else ([slice(0, 2), slice(2, 3)], [slice(0, 9)]))
    ember.manual_seed(1)
    q, k = (ember.randn(3, 3, n, 8, device="cuda", requires_grad=True) for n in (9, 7))
    v = ember.randn(3, 3, 7, 5, device="cuda", requires_grad=True)
    g = ember.randn(3, 3, 9, 5, device="cuda")
    y, grads = _grads(lambda *a: F.scaled_dot_product_attention(*a, is_causal=causal), q, k, v, g)
    y_ref, ref = _grads(lambda *a: F._sdpa_math(*a, is_causal=causal), q, k, v, g)
    assert np.allclose(y.cpu().numpy(), y_ref.cpu().numpy(), atol=2e-6)
    for a, b in zip(grads, ref):
        assert np.allclose(a.cpu().numpy(), b.cpu().numpy(), atol=5e-6)


def test_gpt_layout_half_precision_and_nan():
    """q, k, v as a GPT block makes them (strided views of one projection); the output lies as
    (B, L, H, E), so the transpose back is already contiguous; half inputs compute in float32;
    a NaN stays in its row."""
    B, T, H, E = 2, 6, 3, 4
    qkv = ember.randn(B, T, 3 * H * E, device="cuda")
    q, k, v = (t.view(B, T, H, E).transpose(1, 2) for t in qkv.split(H * E, dim=2))
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert y.transpose(1, 2).is_contiguous()
    ref = F._sdpa_math(q.contiguous(), k.contiguous(), v.contiguous(), is_causal=True)
    assert np.allclose(y.cpu().numpy(), ref.cpu().numpy(), atol=2e-6)
    for dt in (ember.float16, ember.bfloat16):
        h = F.scaled_dot_product_attention(q.to(dt), k.to(dt), v.to(dt))
        assert h.dtype == dt
        expect = F._sdpa_math(q.float(), k.float(), v.float()).to(dt)
        assert np.allclose(h.float().cpu().numpy(), expect.float().cpu().numpy(), atol=1e-2)
    bad = q.clone()
    bad[0, 0, 2, 1] = float("nan")
    out = F.scaled_dot_product_attention(bad, k, v).cpu().numpy()
    assert np.isnan(out[0, 0, 2]).all() and not np.isnan(np.delete(out[0, 0], 2, 0)).any()


def test_backend_choice_follows_pytorchs_rules():
    q = ember.randn(1, 2, 4, 8, device="cuda", requires_grad=True)

    def node(**kw):
        return type(F.scaled_dot_product_attention(q, q, q, **kw).grad_fn).__name__
    assert node() == "ScaledDotProductEfficientAttentionBackward0"
    mask = ember.ones(4, 4, dtype=ember.bool, device="cuda")
    # what ember's kernel does not take goes to the math path
    assert node(attn_mask=mask) != "ScaledDotProductEfficientAttentionBackward0"
    assert node(dropout_p=0.5) != "ScaledDotProductEfficientAttentionBackward0"
    q64 = ember.randn(1, 2, 4, 8, device="cuda", dtype=ember.float64)
    assert F.scaled_dot_product_attention(q64, q64, q64).dtype == ember.float64
    with sdpa_kernel([SDPBackend.MATH]):
        assert node() != "ScaledDotProductEfficientAttentionBackward0"
    with sdpa_kernel([SDPBackend.EFFICIENT_ATTENTION]):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            with pytest.raises(RuntimeError, match="No available kernel"):
                F.scaled_dot_product_attention(q, q, q, attn_mask=mask)
        assert "ember's memory-efficient attention kernel takes no attn_mask." in \
            [str(x.message) for x in w]
    params = _sdp.SDPAParams(q, q, q, None, 0.0, True, False)
    assert ember.backends.cuda.can_use_efficient_attention(params)
    assert not ember.backends.cuda.can_use_flash_attention(params)  # float32


def _flash_reason(q, k, v, **kw):
    """The warning can_use_flash_attention(debug=True) gives, or None where flash can run."""
    params = _sdp.SDPAParams(q, k, v, kw.get("attn_mask"), kw.get("dropout_p", 0.0),
                             kw.get("is_causal", False), kw.get("enable_gqa", False))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        ok = ember.backends.cuda.can_use_flash_attention(params, debug=True)
    assert ok is (not w)
    return str(w[0].message) if w else None


def test_half_types_take_the_flash_op_as_pytorchs_rules_pick_it():
    """PyTorch's CUDA order tries flash first: float16/bfloat16 inputs without a mask run
    ``_scaled_dot_product_flash_attention`` (its grad_fn), within their rounding of the float32
    math path; what flash does not take goes on to the memory-efficient op, in PyTorch's
    words."""
    ember.manual_seed(0)
    for dt in (ember.float16, ember.bfloat16):
        q, k, v, g = (ember.randn(2, 3, 17, 8, device="cuda").to(dt) for _ in range(4))
        for t in (q, k, v):
            t.requires_grad_()
        y, grads = _grads(lambda *a: F.scaled_dot_product_attention(*a, is_causal=True),
                          q, k, v, g)
        assert type(F.scaled_dot_product_attention(q, k, v).grad_fn).__name__ == \
            "ScaledDotProductFlashAttentionBackward0"
        assert y.dtype == dt and [t.dtype for t in grads] == [dt] * 3
        leaves = [t.detach().float().requires_grad_() for t in (q, k, v)]
        y_ref, ref = _grads(lambda *a: F._sdpa_math(*a, is_causal=True), *leaves, g.float())
        tol = 1e-2 if dt is ember.float16 else 5e-2
        assert np.allclose(y.float().cpu().numpy(), y_ref.cpu().numpy(), atol=tol)
        for a, b in zip(grads, ref):
            assert np.allclose(a.float().cpu().numpy(), b.cpu().numpy(), atol=2 * tol)
    h = ember.randn(1, 4, 6, 8, device="cuda", dtype=ember.float16)
    k5 = ember.randn(1, 4, 5, 8, device="cuda", dtype=ember.float16)
    assert _flash_reason(h, h, h) is None
    assert _flash_reason(h.float(), h.float(), h.float()) == (
        "Expected query, key and value to all be of dtype: {Half, BFloat16}. Got Query dtype: "
        "float, Key dtype: float, and Value dtype: float instead.")
    assert _flash_reason(h, k5, k5, is_causal=True) == (
        "Flash attention does not support the is_causal flag when seqlen_q != seqlen_k. Got "
        "seqlen_q: 6 seqlen_k: 5. If you would like to use causal attention with non-square "
        "masks, please see CausalAttnMask.")
    assert _flash_reason(h, k5, k5) is None  # (without the causal flag any lengths)
    mask = ember.ones(6, 6, dtype=ember.bool, device="cuda")
    assert _flash_reason(h, h, h, attn_mask=mask) == \
        "Flash Attention does not support non-null attn_mask."
    wide = ember.randn(1, 4, 6, 264, device="cuda", dtype=ember.float16)
    assert _flash_reason(wide, wide, wide).startswith(
        "Flash attention requires q,k,v to have the same last dimension and to be less than or "
        "equal to 256. Got Query.size(-1): 264")
    kv = ember.randn(1, 2, 6, 8, device="cuda", dtype=ember.float16)
    assert _flash_reason(h, kv, kv, enable_gqa=True) == \
        "ember's flash attention kernel takes no grouped-query heads."
    assert _flash_reason(h, h, h, dropout_p=0.1) == \
        "ember's flash attention kernel takes no dropout."
    with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
        with pytest.warns(UserWarning, match=r"all be of dtype: \{Half, BFloat16\}"):
            with pytest.raises(RuntimeError, match="No available kernel"):
                F.scaled_dot_product_attention(h.float(), h.float(), h.float())
        assert F.scaled_dot_product_attention(h, h, h).dtype == ember.float16

    def node(*a, **kw):
        return type(F.scaled_dot_product_attention(*a, **kw).grad_fn).__name__
    hg, kg = h.requires_grad_(), k5.requires_grad_()
    assert node(hg, kg, kg, is_causal=True) == "ScaledDotProductEfficientAttentionBackward0"
    either = [SDPBackend.EFFICIENT_ATTENTION, SDPBackend.FLASH_ATTENTION]
    with sdpa_kernel(either):  # (the order is PyTorch's priority, not the list's)
        assert node(hg, hg, hg) == "ScaledDotProductFlashAttentionBackward0"
    with sdpa_kernel(either, set_priority=True):
        assert node(hg, hg, hg) == "ScaledDotProductEfficientAttentionBackward0"
    ember.backends.cuda.enable_flash_sdp(False)
    try:
        assert node(hg, hg, hg) == "ScaledDotProductEfficientAttentionBackward0"
        assert _flash_reason(h, h, h) == "Flash attention has been runtime disabled."
    finally:
        ember.backends.cuda.enable_flash_sdp(True)


def _bottom_right_reference(q, k, v):
    """Attention under the bottom-right causal mask in float32 (query i of L sees keys
    0..i + S - L), a query that sees no key giving zeros and an infinite log-sum-exp, as
    FlashAttention's kernels; (output, log-sum-exp)."""
    L, S = q.size(-2), k.size(-2)
    sees = ember.ones(L, S, dtype=ember.bool, device=q.device).tril(S - L)
    s = (q.float() @ k.float().transpose(-2, -1)) / np.sqrt(q.size(-1))
    s = s.masked_fill(~sees, float("-inf"))
    m = s.amax(-1, keepdim=True).detach()
    unseen = m == float("-inf")
    m = m.masked_fill(unseen, 0.0)
    p = (s - m).exp()
    total = p.sum(-1, keepdim=True)
    out = (p @ v.float()) / total.masked_fill(unseen, 1.0)
    return out, (total.log() + m).masked_fill(unseen, float("inf")).squeeze(-1)


@pytest.mark.parametrize("fused_kernels", [False, True])
@pytest.mark.parametrize("lengths", [(5, 9), (9, 5), (70, 45)])
def test_the_flash_ops_causal_mask_is_bottom_right(request, fused_kernels, lengths):
    """PyTorch's flash op aligns its causal mask to the last key where L != S; a query that
    sees no key (L > S) gets zeros and an infinite log-sum-exp, as FlashAttention's kernels.
    Output, log-sum-exp and gradients against the float32 reference, on the blocked products
    and on the Triton kernels."""
    if fused_kernels:
        request.getfixturevalue("fused")
    L, S = lengths
    ember.manual_seed(0)
    q, k, v = (ember.randn(2, 2, n, 16, device="cuda").half().requires_grad_()
               for n in (L, S, S))
    out, lse = ember.ops.aten._scaled_dot_product_flash_attention(q, k, v, is_causal=True)[:2]
    leaves = [t.detach().float().requires_grad_() for t in (q, k, v)]
    ref_out, ref_lse = _bottom_right_reference(*leaves)
    assert np.allclose(out.detach().float().cpu().numpy(), ref_out.detach().cpu().numpy(),
                       atol=1e-2)
    assert np.allclose(lse.cpu().numpy(), ref_lse.detach().cpu().numpy(), atol=1e-2)
    assert np.isinf(lse.cpu().numpy()).any() == (L > S)
    out.float().sum().backward()
    ref_out.sum().backward()
    for a, b in zip((q, k, v), leaves):
        assert np.allclose(a.grad.float().cpu().numpy(), b.grad.cpu().numpy(), atol=3e-2)


def test_causal_bias_on_cuda():
    """An upper-left CausalBias is is_causal=True; a lower-right one of L != S runs the flash
    op (its causal mask is bottom-right) for half inputs, as PyTorch's, and the materialized
    mask otherwise; both equal the CPU's result."""
    from ember.nn.attention.bias import causal_lower_right, causal_upper_left
    ember.manual_seed(0)
    q = ember.randn(1, 2, 6, 8, device="cuda", dtype=ember.float16, requires_grad=True)
    assert type(F.scaled_dot_product_attention(q, q, q, causal_upper_left(6, 6)).grad_fn
                ).__name__ == "ScaledDotProductFlashAttentionBackward0"
    k = ember.randn(1, 2, 9, 8, device="cuda")
    qf = q.detach().float()
    want = F.scaled_dot_product_attention(qf.cpu(), k.cpu(), k.cpu(), causal_lower_right(6, 9))
    got = F.scaled_dot_product_attention(qf, k, k, causal_lower_right(6, 9))
    assert np.allclose(got.cpu().numpy(), want.numpy(), atol=1e-6)
    kh = k.half().requires_grad_()
    half = F.scaled_dot_product_attention(q, kh, kh, causal_lower_right(6, 9))
    assert type(half.grad_fn).__name__ == "ScaledDotProductFlashAttentionBackward0"
    assert np.allclose(half.detach().float().cpu().numpy(), want.numpy(), atol=1e-2)


def test_the_flash_ops_layout_and_errors():
    """PyTorch's flash op's nine results for dense inputs, the Meta kernel's alike, and its
    refusals (inputs untouched)."""
    q = ember.randn(2, 3, 33, 8, device="cuda", dtype=ember.float16)
    k = ember.randn(2, 3, 20, 8, device="cuda", dtype=ember.float16)
    out, lse, cum_q, cum_k, max_q, max_k, rng_state, unused, debug = \
        ember.ops.aten._scaled_dot_product_flash_attention(q, k, k)
    assert out.shape == (2, 3, 33, 8) and out.stride() == (33 * 24, 8, 24, 1)
    assert out.dtype == ember.float16
    assert lse.shape == (2, 3, 33) and lse.dtype == ember.float32
    assert cum_q is None and cum_k is None and (max_q, max_k) == (33, 20)
    assert rng_state.shape == (2,) and rng_state.dtype == ember.uint64
    assert unused.shape == () and rng_state.device == q.device
    assert debug.shape == (0,) and debug.dtype == ember.float16
    s = (q.float() @ k.float().transpose(-2, -1)) / np.sqrt(8)
    assert np.allclose(lse.cpu().numpy(), ember.logsumexp(s, -1).cpu().numpy(), atol=1e-3)
    meta = [t.to("meta") for t in (q, k)]
    m = ember.ops.aten._scaled_dot_product_flash_attention(meta[0], meta[1], meta[1])
    assert m[0].stride() == out.stride() and m[1].shape == lse.shape
    assert m[2:6] == (None, None, 33, 20) and m[6].dtype == ember.uint64
    before = q.clone()
    with pytest.raises(RuntimeError, match="of dtype Half or BFloat16"):
        ember.ops.aten._scaled_dot_product_flash_attention(q.float(), q.float(), q.float())
    with pytest.raises(NotImplementedError, match="takes no dropout"):
        ember.ops.aten._scaled_dot_product_flash_attention(q, q, q, 0.5)
    with pytest.raises(NotImplementedError, match="return_debug_mask"):
        ember.ops.aten._scaled_dot_product_flash_attention(q, q, q, return_debug_mask=True)
    assert ember.equal(q, before)


@pytest.mark.parametrize("mode", [None, "reduce-overhead"])
def test_compiled_half_attention_runs_the_flash_op(mode):
    """ember.compile keeps the flash op whole (a fallback whose sizes are the graph's
    constants), and under reduce-overhead captures it: loss and gradients as eager."""
    ember.manual_seed(0)
    lin = ember.nn.Linear(16, 48).cuda().half()

    def f(x):
        q, k, v = lin(x).view(2, 8, 3, 2, 8).permute(2, 0, 3, 1, 4)
        return F.scaled_dot_product_attention(q, k, v, is_causal=True).float().square().sum()
    x = ember.randn(2, 8, 16, device="cuda", dtype=ember.float16)
    expect = f(x)
    expect.backward()
    grad = lin.weight.grad.clone()
    compiled = ember.compile(f, mode=mode)
    for _ in range(2):
        lin.weight.grad = None
        got = compiled(x)
        got.backward()
        assert float(got) == float(expect)
        assert ember.equal(lin.weight.grad, grad)


def test_the_ops_layout_and_errors():
    q = ember.randn(2, 3, 33, 8, device="cuda")
    out, lse, seed, offset = ember.ops.aten._scaled_dot_product_efficient_attention(
        q, q, q, None, True)
    assert out.shape == (2, 3, 33, 8) and out.stride() == (33 * 24, 8, 24, 1)
    assert lse.shape == (2, 3, 64) and lse.dtype == ember.float32  # rows padded to 32
    assert seed.shape == () and seed.device.type == "cpu" and seed.dtype == ember.int64
    # the log-sum-exp is each row's logsumexp of the scaled scores
    s = (q @ q.transpose(-2, -1)) / np.sqrt(8)
    assert np.allclose(lse[..., :33].cpu().numpy(), ember.logsumexp(s, -1).cpu().numpy(),
                       atol=1e-5)
    _, empty_lse, _, _ = ember.ops.aten._scaled_dot_product_efficient_attention(
        q, q, q, None, False)
    assert empty_lse.shape == (2, 3, 0)
    meta = q.to("meta")
    m_out, m_lse, _, _ = ember.ops.aten._scaled_dot_product_efficient_attention(
        meta, meta, meta, None, True)
    assert m_out.stride() == out.stride() and m_lse.shape == lse.shape
    with pytest.raises(NotImplementedError, match="takes no attn_bias"):
        ember.ops.aten._scaled_dot_product_efficient_attention(q, q, q, ember.zeros(
            33, 33, device="cuda"), False)


def test_a_graphed_gpt_trains_as_eager():
    """The GPT of benchmarks/gpt.py with forward and backward captured by
    make_graphed_callables (the attention kernel recorded in the graph) takes the same steps as
    the eager model."""
    import os
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))
    import gpt
    eager = gpt.build(ember, context=16, width=32, n_layer=2, n_head=2, device="cuda")
    model = gpt.build(ember, context=16, width=32, n_layer=2, n_head=2, device="cuda")
    model.load_state_dict(eager.state_dict())
    x = ember.randint(65, (2, 16), generator=ember.Generator().manual_seed(1)).cuda()
    y = ember.randint(65, (2, 16), generator=ember.Generator().manual_seed(2)).cuda()
    graphed = ember.cuda.make_graphed_callables(model, (x, y))
    opts = [ember.optim.SGD(m.parameters(), lr=0.1) for m in (eager, model)]
    for _ in range(3):
        for opt in opts:
            opt.zero_grad(set_to_none=True)
        expect, got = eager(x, y), graphed(x, y)
        expect.backward()
        got.backward()
        for opt in opts:
            opt.step()
        assert float(got) == pytest.approx(float(expect), rel=1e-6)
    for p, q in zip(eager.parameters(), model.parameters()):
        assert np.allclose(p.detach().cpu().numpy(), q.detach().cpu().numpy(), atol=1e-6)
