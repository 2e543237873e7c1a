"""ember.nn.attention.flex_attention against PyTorch's eager flex_attention on the CPU: outputs and
log-sum-exps under score_mods (captured tensors included) and block masks, GQA, fully masked rows,
dtypes; BlockMask's layout tensors, dense form, sparsity and printed forms; the argument errors;
gradients (PyTorch's CPU path has none: against its dense attention); ember.compile and the
simulated CUDA device."""
import warnings

import numpy as np
import pytest

import ember
from helpers import simulated_cuda, to_np

import ember.nn.attention.flex_attention as EF


@pytest.fixture
def tfa(torch):
    """PyTorch's flex_attention module, its eager path called directly: the same dense math as
    its default (an internal torch.compile with the eager backend), without compiling."""
    import torch.nn.attention.flex_attention as TF
    saved = TF._FLEX_ATTENTION_DISABLE_COMPILE_DEBUG
    TF._FLEX_ATTENTION_DISABLE_COMPILE_DEBUG = True
    yield TF
    TF._FLEX_ATTENTION_DISABLE_COMPILE_DEBUG = saved


def _qkv(torch, B, Hq, L, S, E, Hkv=None, Ev=None, dtype="float32", seed=0):
    """The same random (q, k, v) for PyTorch and for ember."""
    rng = np.random.default_rng(seed)
    shapes = [(B, Hq, L, E), (B, Hkv or Hq, S, E), (B, Hkv or Hq, S, Ev or E)]
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    t = [torch.from_numpy(a).to(getattr(torch, dtype)) for a in arrays]
    e = [ember.tensor(a).to(getattr(ember, dtype)) for a in arrays]
    return t, e


def _close(e, t, atol=1e-5):
    assert e.shape == tuple(t.shape)
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    np.testing.assert_allclose(to_np(e), to_np(t), atol=atol, rtol=atol)


def causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


def sliding_window(b, h, q_idx, kv_idx):
    return q_idx - kv_idx <= 3


def _both(torch, tfa, fn):
    """``fn(lib, module)`` for PyTorch and for ember."""
    return fn(torch, tfa), fn(ember, EF)


def test_no_mods_and_scale(torch, tfa):
    (tq, tk, tv), (eq, ek, ev) = _qkv(torch, 2, 2, 8, 8, 4)
    _close(EF.flex_attention(eq, ek, ev), tfa.flex_attention(tq, tk, tv))
    _close(EF.flex_attention(eq, ek, ev, scale=0.3), tfa.flex_attention(tq, tk, tv, scale=0.3))


@pytest.mark.parametrize("mask_mod,block_size", [
    (lambda m: causal, 4), (lambda m: causal, (2, 4)),
    (lambda m: m.and_masks(causal, sliding_window), 2),
    (lambda m: m.or_masks(sliding_window, lambda b, h, q, k: k == 0), 3),
    (lambda m: m.noop_mask, 4)])
def test_block_mask_layout_and_attention(torch, tfa, mask_mod, block_size):
    """create_block_mask's partial/full blocks and their transposes equal PyTorch's (a block
    size that does not divide the lengths pads), and attention under them agrees.
    ``mask_mod(module)`` builds the mask_mod from that module's combinators."""
    def make(lib, mod):
        return mod.create_block_mask(mask_mod(mod), 2, 2, 10, 12, device="cpu",
                                     BLOCK_SIZE=block_size)
    tb, eb = _both(torch, tfa, make)
    for name in ("kv_num_blocks", "kv_indices", "full_kv_num_blocks", "full_kv_indices",
                 "q_num_blocks", "q_indices", "full_q_num_blocks", "full_q_indices"):
        np.testing.assert_array_equal(to_np(getattr(eb, name)), to_np(getattr(tb, name)), name)
        assert getattr(eb, name).dtype == ember.int32
    assert eb.BLOCK_SIZE == tb.BLOCK_SIZE and eb.seq_lengths == tb.seq_lengths
    assert eb.shape == tb.shape
    np.testing.assert_array_equal(to_np(eb.to_dense()), to_np(tb.to_dense()))
    assert eb.sparsity() == tb.sparsity()
    assert str(eb) == str(tb)
    assert repr(eb) == repr(tb).replace("torch.", "ember.")
    assert eb.to_string(grid_size=-1, limit=2) == tb.to_string(grid_size=-1, limit=2)
    assert len(eb.as_tuple()) == len(tb.as_tuple()) == 17
    (tq, tk, tv), (eq, ek, ev) = _qkv(torch, 2, 2, 10, 12, 4)
    _close(EF.flex_attention(eq, ek, ev, block_mask=eb),
           tfa.flex_attention(tq, tk, tv, block_mask=tb))


def test_document_mask_and_alibi_with_captured_tensors(torch, tfa):
    """Mods indexing captured tensors with the index tensors (a gather under vmap)."""
    doc = [0, 0, 0, 1, 1, 2, 2, 2, 2]
    slopes = [0.5, 0.25]

    def run(lib, mod):
        document_id = lib.tensor(doc)
        alibi_slopes = lib.tensor(slopes)

        def document_causal(b, h, q_idx, kv_idx):
            return (document_id[q_idx] == document_id[kv_idx]) & (q_idx >= kv_idx)

        def alibi(score, b, h, q_idx, kv_idx):
            return score + alibi_slopes[h] * (kv_idx - q_idx)

        bm = mod.create_block_mask(document_causal, None, None, 9, 9, device="cpu",
                                   BLOCK_SIZE=4)
        q, k, v = qkv[0] if lib is torch else qkv[1]
        return bm, mod.flex_attention(q, k, v, score_mod=alibi, block_mask=bm)

    qkv = _qkv(torch, 1, 2, 9, 9, 4)
    (tb, tout), (eb, eout) = _both(torch, tfa, run)
    np.testing.assert_array_equal(to_np(eb.kv_indices), to_np(tb.kv_indices))
    _close(eout, tout)


def test_create_mask(torch, tfa):
    """create_mask of a mask_mod (its values) and of a score_mod (False where it gives -inf)."""
    def masks(lib, mod):
        def neg(score, b, h, q_idx, kv_idx):
            return lib.where(q_idx + h >= kv_idx, score, -float("inf"))
        return (mod.create_mask(mod.and_masks(causal, sliding_window), 2, 2, 5, 7, device="cpu"),
                mod.create_mask(neg, 1, 2, 5, 7, device="cpu"))

    (tm, ts), (em, es) = _both(torch, tfa, masks)
    assert em.dtype == ember.bool and es.dtype == ember.bool
    np.testing.assert_array_equal(to_np(em), to_np(tm))
    np.testing.assert_array_equal(to_np(es), to_np(ts))


def test_gqa_lse_and_different_lengths(torch, tfa):
    """enable_gqa with 6 query heads on 2 KV heads, L != S, Ev != E; lse by return_lse (a
    FutureWarning) and by return_aux."""
    (tq, tk, tv), (eq, ek, ev) = _qkv(torch, 2, 6, 5, 11, 4, Hkv=2, Ev=3)
    tb = tfa.create_block_mask(causal, 2, 6, 5, 11, device="cpu", BLOCK_SIZE=2)
    eb = EF.create_block_mask(causal, 2, 6, 5, 11, device="cpu", BLOCK_SIZE=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        tout, tlse = tfa.flex_attention(tq, tk, tv, block_mask=tb, enable_gqa=True,
                                        return_lse=True)
    EF._WARNINGS_SHOWN.discard("deprecated_return_lse")
    with pytest.warns(FutureWarning, match="return_lse is deprecated"):
        eout, else_ = EF.flex_attention(eq, ek, ev, block_mask=eb, enable_gqa=True,
                                        return_lse=True)
    _close(eout, tout)
    _close(else_, tlse)
    tout, taux = tfa.flex_attention(tq, tk, tv, block_mask=tb, enable_gqa=True,
                                    return_aux=tfa.AuxRequest(lse=True))
    eout, eaux = EF.flex_attention(eq, ek, ev, block_mask=eb, enable_gqa=True,
                                   return_aux=EF.AuxRequest(lse=True))
    assert isinstance(eaux, EF.AuxOutput) and eaux.max_scores is None
    _close(eaux.lse, taux.lse)
    eout, eaux = EF.flex_attention(eq, ek, ev, return_aux=EF.AuxRequest(), enable_gqa=True)
    assert eaux == EF.AuxOutput(None, None)


def test_fully_masked_rows(torch, tfa):
    """Rows whose every key is masked give zeros and an lse of -inf, as PyTorch's."""
    def late(b, h, q_idx, kv_idx):
        return (q_idx >= 3) & (kv_idx <= q_idx)

    (tq, tk, tv), (eq, ek, ev) = _qkv(torch, 1, 2, 6, 6, 4)
    tb = tfa.create_block_mask(late, 1, 2, 6, 6, device="cpu", BLOCK_SIZE=2)
    eb = EF.create_block_mask(late, 1, 2, 6, 6, device="cpu", BLOCK_SIZE=2)
    tout, taux = tfa.flex_attention(tq, tk, tv, block_mask=tb,
                                    return_aux=tfa.AuxRequest(lse=True))
    eout, eaux = EF.flex_attention(eq, ek, ev, block_mask=eb,
                                   return_aux=EF.AuxRequest(lse=True))
    _close(eout, tout)
    _close(eaux.lse, taux.lse)
    assert (to_np(eout)[:, :, :3] == 0).all() and np.isneginf(to_np(eaux.lse)[:, :, :3]).all()


@pytest.mark.parametrize("dtype,atol", [("float64", 1e-12), ("float32", 1e-5),
                                        ("bfloat16", 2e-2)])
def test_dtypes(torch, tfa, dtype, atol):
    """Scores in float64 for float64, else float32 (lse in that precision), the output in the
    inputs' dtype."""
    def rel(score, b, h, q_idx, kv_idx):
        return score + (q_idx - kv_idx) * 0.1

    (tq, tk, tv), (eq, ek, ev) = _qkv(torch, 1, 2, 6, 6, 8, dtype=dtype)
    tb = tfa.create_block_mask(causal, 1, 2, 6, 6, device="cpu", BLOCK_SIZE=2)
    eb = EF.create_block_mask(causal, 1, 2, 6, 6, device="cpu", BLOCK_SIZE=2)
    tout, taux = tfa.flex_attention(tq, tk, tv, score_mod=rel, block_mask=tb,
                                    return_aux=tfa.AuxRequest(lse=True))
    eout, eaux = EF.flex_attention(eq, ek, ev, score_mod=rel, block_mask=eb,
                                   return_aux=EF.AuxRequest(lse=True))
    _close(eout, tout, atol)
    _close(eaux.lse, taux.lse, 1e-12 if dtype == "float64" else 1e-5)


def test_output_takes_the_query_layout(torch, tfa):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((2, 5, 3, 4)).astype(np.float32)
    tq = torch.from_numpy(a).transpose(1, 2)
    eq = ember.tensor(a).transpose(1, 2)
    tout = tfa.flex_attention(tq, tq, tq)
    eout = EF.flex_attention(eq, eq, eq)
    assert eout.stride() == tout.stride()
    _close(eout, tout)


def test_block_mask_broadcasts_over_batch_and_kv_batch(torch, tfa):
    """A block mask of batch and head 1 serves every (b, h); key/value of batch 1 broadcast to
    the query's batch when the block mask has it."""
    (tq, tk, tv), (eq, ek, ev) = _qkv(torch, 2, 2, 6, 6, 4)
    for lib, mod, q, k, v in ((torch, tfa, tq, tk, tv), (ember, EF, eq, ek, ev)):
        b1 = mod.create_block_mask(causal, 1, 1, 6, 6, device="cpu", BLOCK_SIZE=2)
        b2 = mod.create_block_mask(causal, 2, 2, 6, 6, device="cpu", BLOCK_SIZE=2)
        res = (mod.flex_attention(q, k, v, block_mask=b1),
               mod.flex_attention(q, k[:1], v[:1], block_mask=b2))
        if lib is torch:
            tres = res
        else:
            eres = res
    for e, t in zip(eres, tres):
        _close(e, t)


def test_hand_built_block_mask_uses_its_blocks(torch, tfa):
    """A block absent from the mask is never attended and a full block is attended whatever
    mask_mod says (PyTorch's kernels; its eager path reads only mask_mod, so the reference
    spells the same pattern as a mask_mod)."""
    (tq, tk, tv), (eq, ek, ev) = _qkv(torch, 1, 1, 8, 8, 4)
    # block-diagonal: query block i attends key block i only, as a partial block with no mask
    num = ember.tensor([[[1, 1]]], dtype=ember.int32)
    idx = ember.tensor([[[[0, 1], [1, 0]]]], dtype=ember.int32)
    eb = EF.BlockMask.from_kv_blocks(num, idx, BLOCK_SIZE=4)
    assert eb.seq_lengths == (8, 8) and eb.mask_mod is EF.noop_mask
    tb = tfa.create_block_mask(lambda b, h, q, k: q // 4 == k // 4, 1, 1, 8, 8, device="cpu",
                               BLOCK_SIZE=4)
    _close(EF.flex_attention(eq, ek, ev, block_mask=eb),
           tfa.flex_attention(tq, tk, tv, block_mask=tb))
    # every block full: the causal mask_mod is not consulted
    zero = ember.zeros(1, 1, 2, dtype=ember.int32)
    full = EF.BlockMask.from_kv_blocks(zero, idx, ember.full((1, 1, 2), 2, dtype=ember.int32),
                                       ember.tensor([[[[0, 1], [0, 1]]]], dtype=ember.int32),
                                       BLOCK_SIZE=4, mask_mod=causal)
    _close(EF.flex_attention(eq, ek, ev, block_mask=full), tfa.flex_attention(tq, tk, tv))


def test_slicing_adjust_and_to(torch, tfa):
    def make(lib, mod):
        return mod.create_block_mask(causal, 2, 3, 8, 8, device="cpu", BLOCK_SIZE=2)
    tb, eb = _both(torch, tfa, make)
    for index in (0, (1, -1), (slice(0, 2), slice(1, 3)), (0, 1, [1, 3])):
        t_index = tuple(torch.tensor(i) if isinstance(i, list) else i for i in index) \
            if isinstance(index, tuple) else index
        e_index = tuple(ember.tensor(i) if isinstance(i, list) else i for i in index) \
            if isinstance(index, tuple) else index
        ts, es = tb[t_index], eb[e_index]
        for name in ("kv_num_blocks", "kv_indices", "full_kv_num_blocks", "full_kv_indices",
                     "q_num_blocks", "q_indices"):
            np.testing.assert_array_equal(to_np(getattr(es, name)), to_np(getattr(ts, name)))
        with pytest.raises(RuntimeError, match="Cannot use mask_mod from a sliced BlockMask"):
            es.mask_mod(*[ember.tensor(0)] * 4)
    ta, ea = tb._adjust(5, 6), eb._adjust(5, 6)
    assert ea.seq_lengths == ta.seq_lengths == (5, 6) and ea.mask_mod is causal
    for name in ("kv_num_blocks", "kv_indices", "full_kv_num_blocks", "full_kv_indices",
                 "q_num_blocks", "q_indices", "full_q_num_blocks", "full_q_indices"):
        np.testing.assert_array_equal(to_np(getattr(ea, name)), to_np(getattr(ta, name)))
    moved = eb.to("cpu")
    assert moved.kv_indices.device == ember.device("cpu") and moved.mask_mod is causal
    assert moved.sparsity() == eb.sparsity()


def test_dq_write_order(torch, tfa):
    def make(lib, mod):
        return mod.create_block_mask(causal, 1, 2, 8, 8, device="cpu", BLOCK_SIZE=2,
                                     compute_dq_write_order=True, dq_kv_order=False)
    tb, eb = _both(torch, tfa, make)
    np.testing.assert_array_equal(to_np(eb.dq_write_order), to_np(tb.dq_write_order))
    np.testing.assert_array_equal(to_np(eb.dq_write_order_full), to_np(tb.dq_write_order_full))
    assert eb.dq_kv_order_spt is False and eb.as_tuple()[13] is False


def _raises_alike(torch, tfa, call):
    """``call(lib, module)`` raises the same exception type and message for both."""
    with pytest.raises(Exception) as t_info:
        call(torch, tfa)
    with pytest.raises(type(t_info.value)) as e_info:
        call(ember, EF)
    assert str(e_info.value) == str(t_info.value)


@pytest.mark.parametrize("case", [
    lambda l, m: m.flex_attention(l.ones(2, 4, 8), l.ones(2, 4, 8), l.ones(2, 4, 8)),
    lambda l, m: m.flex_attention(l.ones(8), l.ones(8), l.ones(8)),
    lambda l, m: m.flex_attention(l.ones(1, 2, 4, 8), l.ones(1, 2, 4, 6), l.ones(1, 2, 4, 6)),
    lambda l, m: m.flex_attention(l.ones(1, 4, 4, 8), l.ones(1, 2, 4, 8), l.ones(1, 2, 4, 8)),
    lambda l, m: m.flex_attention(l.ones(1, 3, 4, 8), l.ones(1, 2, 4, 8), l.ones(1, 2, 4, 8),
                                  enable_gqa=True),
    lambda l, m: m.flex_attention(l.ones(2, 2, 4, 8), l.ones(1, 2, 4, 8), l.ones(1, 2, 4, 8)),
    lambda l, m: m.flex_attention(
        l.ones(2, 2, 4, 8), l.ones(1, 2, 4, 8), l.ones(1, 2, 4, 8),
        block_mask=m.create_block_mask(causal, 1, 2, 4, 4, device="cpu", BLOCK_SIZE=2)),
    lambda l, m: m.flex_attention(
        l.ones(2, 2, 4, 8), l.ones(3, 2, 4, 8), l.ones(3, 2, 4, 8),
        block_mask=m.create_block_mask(causal, 2, 2, 4, 4, device="cpu", BLOCK_SIZE=2)),
    lambda l, m: m.flex_attention(
        l.ones(1, 2, 8, 8), l.ones(1, 2, 8, 8), l.ones(1, 2, 8, 8),
        block_mask=m.create_block_mask(causal, 1, 2, 4, 4, device="cpu", BLOCK_SIZE=2)),
    lambda l, m: m.flex_attention(
        l.ones(1, 2, 4, 8), l.ones(1, 2, 4, 8), l.ones(1, 2, 4, 8),
        block_mask=m.create_block_mask(causal, 1, 2, 8, 8, device="cpu", BLOCK_SIZE=2)),
    lambda l, m: m.flex_attention(
        l.ones(1, 2, 4, 8), l.ones(1, 2, 4, 8), l.ones(1, 2, 4, 8),
        block_mask=m.create_block_mask(causal, 2, 2, 4, 4, device="cpu", BLOCK_SIZE=2)[0]),
    lambda l, m: m.flex_attention(l.ones(1, 2, 4, 8), l.ones(1, 2, 4, 8), l.ones(1, 2, 4, 8),
                                  return_lse=True, return_aux=m.AuxRequest(lse=True)),
    lambda l, m: m.flex_attention(l.ones(1, 2, 4, 8), l.ones(1, 2, 4, 8), l.ones(1, 2, 4, 8),
                                  return_aux=m.AuxRequest(max_scores=True)),
    lambda l, m: m.flex_attention(l.ones(1, 2, 4, 8), l.ones(1, 2, 4, 8), l.ones(1, 2, 4, 8),
                                  kernel_options={"BACKEND": "X"}),
    lambda l, m: m.flex_attention(l.ones(1, 2, 4, 8), l.ones(1, 2, 4, 8), l.ones(1, 2, 4, 8),
                                  kernel_options={"BACKEND": "AUTO",
                                                  "FORCE_USE_FLEX_ATTENTION": True}),
    lambda l, m: m.flex_attention(l.ones(1, 2, 4, 8), l.ones(1, 2, 4, 8), l.ones(1, 2, 4, 8),
                                  kernel_options={"OUTPUT_LOGSUMEXP": True}),
    lambda l, m: m.flex_attention(*[l.ones(1, 2, 4, 8, device="meta")] * 3),
    lambda l, m: m.flex_attention(l.ones(1, 2, 4, 8), l.ones(1, 2, 4, 8, device="meta"),
                                  l.ones(1, 2, 4, 8)),
    lambda l, m: m.create_block_mask(lambda b, h: b, 1, 1, 4, 4, device="cpu"),
    lambda l, m: m.create_block_mask(causal, 1, 1, 4, 4, device="cpu", dq_kv_order=1),
    lambda l, m: m.BlockMask.from_kv_blocks(l.ones(2, dtype=l.int32), l.zeros(2, dtype=l.int32)),
    lambda l, m: m.BlockMask.from_kv_blocks(l.ones(1, 1, 2, dtype=l.int32),
                                            l.zeros(1, 1, 2, 2, dtype=l.int32),
                                            l.ones(1, 1, 2, dtype=l.int32)),
    lambda l, m: m.and_masks(causal, None),
])
def test_errors(torch, tfa, case):
    _raises_alike(torch, tfa, case)


def test_gradients_reach_qkv_and_a_learnable_bias(torch):
    """Gradients of q, k, v and of a bias the score_mod captures, with GQA and a causal block
    mask, against PyTorch's dense attention (its flex_attention has no CPU backward)."""
    rng = np.random.default_rng(2)
    arrays = [rng.standard_normal(s).astype(np.float64)
              for s in [(1, 4, 5, 3), (1, 2, 5, 3), (1, 2, 5, 3), (4, 5, 5), (1, 4, 5, 3)]]
    eq, ek, ev, ebias, eg = [ember.tensor(a, requires_grad=True) for a in arrays]
    tq, tk, tv, tbias, tg = [torch.tensor(a, requires_grad=True) for a in arrays]

    def bias_mod(score, b, h, q_idx, kv_idx):
        return score + ebias[h, q_idx, kv_idx]

    bm = EF.create_block_mask(causal, 1, 4, 5, 5, device="cpu", BLOCK_SIZE=2)
    out = EF.flex_attention(eq, ek, ev, score_mod=bias_mod, block_mask=bm, enable_gqa=True)
    (out * eg.detach()).sum().backward()

    scores = tq @ tk.repeat_interleave(2, 1).transpose(-2, -1) / 3 ** 0.5 + tbias
    scores = scores.masked_fill(~torch.ones(5, 5, dtype=torch.bool).tril(), -float("inf"))
    ref = scores.softmax(-1) @ tv.repeat_interleave(2, 1)
    (ref * tg.detach()).sum().backward()
    _close(out.detach(), ref.detach(), 1e-12)
    for e, t in ((eq, tq), (ek, tk), (ev, tv), (ebias, tbias)):
        _close(e.grad, t.grad, 1e-12)


def test_compile_matches_eager():
    """Under ember.compile flex_attention is one graph with the code around it (its block
    mask's tensors and its mods' captured tensors are graph inputs): a new block mask is
    honoured and a captured bias gets its gradient."""
    from ember._dynamo.testing import CompileCounter
    bias = ember.randn(6, 6, requires_grad=True)

    def bias_mod(score, b, h, q_idx, kv_idx):
        return score + bias[q_idx, kv_idx]

    def f(q, k, v, block_mask):
        return flex_attention(q.sin(), k, v, score_mod=bias_mod, block_mask=block_mask) * 2

    flex_attention = EF.flex_attention
    q, k, v = (ember.randn(1, 2, 6, 4) for _ in range(3))
    masks = [EF.create_block_mask(m, 1, 2, 6, 6, device="cpu", BLOCK_SIZE=2)
             for m in (causal, sliding_window)]
    ember._dynamo.reset()
    cnt = CompileCounter()
    compiled = ember.compile(f, backend=cnt, fullgraph=True)
    for bm in masks:
        expected = f(q, k, v, bm)
        expected.sum().backward()
        grad, bias.grad = bias.grad, None
        got = compiled(q, k, v, bm)
        got.sum().backward()
        assert ember.equal(got, expected) and ember.equal(bias.grad, grad)
        bias.grad = None
    # one whole graph per mask: their mask_mod functions differ (guarded by identity, as
    # PyTorch's Dynamo does), their tensors are inputs
    assert cnt.frame_count == 2

    def g(q, k, v):
        block_mask = EF.create_block_mask(causal, 1, 2, 6, 6, device="cpu", BLOCK_SIZE=2)
        return flex_attention(q + 1, k, v, block_mask=block_mask._adjust(6, 6))
    assert ember.equal(ember.compile(g, backend="eager")(q, k, v), g(q, k, v))
    ember._dynamo.reset()


def test_simulated_cuda():
    """The same path on ember's simulated CUDA device, where max_scores is returned (as on
    PyTorch's CUDA) and a block mask on another device is refused."""
    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal((1, 2, 6, 4)).astype(np.float32) for _ in range(3)]
    slope = ember.tensor([0.5, -0.5])
    cpu_out, cpu_aux = EF.flex_attention(
        *[ember.tensor(a) for a in arrays], score_mod=lambda s, b, h, q, k: s + slope[h] * k,
        block_mask=EF.create_block_mask(causal, 1, 2, 6, 6, device="cpu", BLOCK_SIZE=2),
        return_aux=EF.AuxRequest(lse=True))
    with simulated_cuda():
        q, k, v = [ember.tensor(a, device="cuda", requires_grad=True) for a in arrays]
        cuda_slope = slope.to("cuda")
        bm = EF.create_block_mask(causal, 1, 2, 6, 6, BLOCK_SIZE=2)
        assert bm.kv_indices.device.type == "cuda"
        out, aux = EF.flex_attention(
            q, k, v, score_mod=lambda s, b, h, qi, ki: s + cuda_slope[h] * ki, block_mask=bm,
            return_aux=EF.AuxRequest(lse=True, max_scores=True))
        assert out.device.type == "cuda" and aux.max_scores.shape == (1, 2, 6)
        out.sum().backward()
        assert q.grad.device.type == "cuda"
        np.testing.assert_allclose(out.detach().cpu().numpy(), to_np(cpu_out), atol=1e-6)
        np.testing.assert_allclose(aux.lse.detach().cpu().numpy(), to_np(cpu_aux.lse),
                                   atol=1e-6)
        with pytest.raises(RuntimeError, match="Expect q/k/v and block_mask to be on the same "
                                               "device but got cuda:0 and cpu"):
            EF.flex_attention(q, k, v, block_mask=bm.to("cpu"))


def test_mod_type_and_create_block_mask_compile_flag():
    assert EF._get_mod_type(causal) is EF._ModificationType.MASK_MOD
    assert EF._get_mod_type(lambda s, b, h, q, k, x=1: s) is EF._ModificationType.SCORE_MOD
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        bm = EF.create_block_mask(causal, 1, 1, 4, 4, device="cpu", BLOCK_SIZE=2, _compile=True)
    assert any(issubclass(w.category, DeprecationWarning) for w in caught)
    assert bm.kv_num_blocks.tolist() == [[[1, 1]]]
