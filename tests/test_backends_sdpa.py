"""scaled_dot_product_attention's CPU backend choice (PyTorch's rules), the fused blockwise
kernel against PyTorch's (values and gradients), the math path under sdpa_kernel, and the
"No available kernel" errors with their reasons."""
import warnings

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.nn.attention import SDPBackend, sdpa_kernel
from ember.utils._python_dispatch import TorchDispatchMode

torch = pytest.importorskip("torch")
import torch.nn.attention  # noqa: E402


class OpLog(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.ops = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.append(str(func))
        return func(*args, **(kwargs or {}))


def _pair(shape, seed, dtype=np.float64):
    a = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return ember.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)


@pytest.mark.parametrize("case", ["plain", "causal", "float_mask", "bool_mask", "gqa", "long",
                                  "long_causal", "long_gqa_mask", "causal_more_queries"])
def test_fused_matches_torch_values_and_grads(case, monkeypatch):
    B, H, L, S, E = 2, 4, 5, 7, 8
    kw = {}
    hk = H
    if case == "causal":
        S, kw = L, {"is_causal": True}
    if case == "gqa":
        hk, kw = 2, {"enable_gqa": True}
    if case == "long":
        S = 300  # several key blocks
    if case.startswith("long_") or case == "causal_more_queries":
        # several query and key blocks, handed to two threads; causal tiles above the diagonal
        # are skipped
        monkeypatch.setattr(ember._core.parallel, "num_threads", lambda: 2)
        B = 1
        H = hk = 2
    if case == "long_causal":
        L = S = 600
        kw = {"is_causal": True}
    if case == "long_gqa_mask":
        L, S, hk, kw = 530, 300, 1, {"enable_gqa": True}
    if case == "causal_more_queries":
        L, S, kw = 700, 300, {"is_causal": True}
    (qe, qt), (ke, kt), (ve, vt) = (_pair((B, H, L, E), 0), _pair((B, hk, S, E), 1),
                                    _pair((B, hk, S, E), 2))
    me = mt = None
    if case in ("float_mask", "long_gqa_mask"):
        m = np.random.default_rng(3).standard_normal((B, 1, L, S))
        me, mt = ember.tensor(m), torch.tensor(m)
    if case == "bool_mask":
        m = np.random.default_rng(3).random((L, S)) > 0.3
        me, mt = ember.tensor(m), torch.tensor(m)
    with OpLog() as log:
        oe = F.scaled_dot_product_attention(qe, ke, ve, attn_mask=me, **kw)
    assert "aten._scaled_dot_product_flash_attention_for_cpu.default" in log.ops
    assert "aten.bmm.default" not in log.ops and "aten._softmax.default" not in log.ops
    ot = torch.nn.functional.scaled_dot_product_attention(qt, kt, vt, attn_mask=mt, **kw)
    g = np.cos(np.arange(ot.numel())).reshape(ot.shape)
    oe.backward(ember.tensor(g))
    ot.backward(torch.tensor(g))
    np.testing.assert_allclose(oe.detach().numpy(), ot.detach().numpy(), atol=1e-12)
    for a, b in ((qe, qt), (ke, kt), (ve, vt)):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), atol=1e-12)


def test_math_backend_under_sdpa_kernel_and_when_flash_cannot_run():
    q = ember.randn(2, 3, 4, 8)
    with OpLog() as log, sdpa_kernel([SDPBackend.MATH]):
        a = F.scaled_dot_product_attention(q, q, q)
    assert "aten._scaled_dot_product_flash_attention_for_cpu.default" not in log.ops
    assert "aten._softmax.default" in log.ops
    np.testing.assert_allclose(a.numpy(), F.scaled_dot_product_attention(q, q, q).numpy(),
                               atol=1e-6)
    q3 = ember.randn(3, 4, 8)  # 3-D: flash cannot run, math does (as PyTorch chooses)
    with OpLog() as log:
        F.scaled_dot_product_attention(q3, q3, q3)
    assert "aten._scaled_dot_product_flash_attention_for_cpu.default" not in log.ops


def test_choice_matches_torch():
    cases = [((2, 3, 4, 8), (2, 3, 4, 8), {}), ((2, 3, 4, 8), (2, 1, 4, 8), {}),
             ((2, 3, 4, 8), (2, 1, 4, 8), {"enable_gqa": True}), ((3, 4, 8), (3, 4, 8), {}),
             ((2, 3, 4, 8), (2, 3, 4, 8), {"dropout_p": 0.5})]
    from ember.backends._sdp import fused_sdp_choice
    for qs, ks, kw in cases:
        mine = fused_sdp_choice(ember.randn(*qs), ember.randn(*ks), ember.randn(*ks), **kw)
        theirs = torch._fused_sdp_choice(torch.randn(*qs), torch.randn(*ks), torch.randn(*ks),
                                         **kw)
        assert mine == theirs, (qs, ks, kw)


@pytest.mark.parametrize("case", ["dropout", "3d", "vdim", "int", "stride", "batch", "heads",
                                  "mask5d"])
def test_no_available_kernel_reasons_like_torch(case):
    def args(lib):
        lib.manual_seed(0)
        q = lib.randn(2, 3, 4, 8)
        a = {"query": q, "key": q, "value": q}
        if case == "dropout":
            a["dropout_p"] = 0.5
        elif case == "3d":
            a = {k: lib.randn(3, 4, 8) for k in a}
        elif case == "vdim":
            a["value"] = lib.randn(2, 3, 4, 16)
        elif case == "int":
            a = {k: lib.ones(2, 3, 4, 8, dtype=lib.int32) for k in a}
        elif case == "stride":
            a["query"] = lib.randn(2, 3, 8, 4).transpose(-1, -2)
        elif case == "batch":
            a["key"] = a["value"] = lib.randn(1, 3, 4, 8)
        elif case == "heads":
            a["key"] = a["value"] = lib.randn(2, 1, 4, 8)
        elif case == "mask5d":
            a["attn_mask"] = lib.zeros(1, 2, 3, 4, 4)
        return a

    def run(lib, backend_mod, fn):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            with pytest.raises(RuntimeError) as e:
                with backend_mod.sdpa_kernel([backend_mod.SDPBackend.FLASH_ATTENTION]):
                    fn(**args(lib))
        return str(e.value), [str(x.message).split(" (Triggered")[0] for x in w]

    mine = run(ember, ember.nn.attention, F.scaled_dot_product_attention)
    theirs = run(torch, torch.nn.attention, torch.nn.functional.scaled_dot_product_attention)
    assert mine == theirs
    assert mine[0] == "No available kernel.  Aborting execution."


def test_no_viable_backend_error_like_torch():
    q = ember.randn(1, 1, 2, 4)
    with pytest.raises(RuntimeError, match="No viable backend for scaled_dot_product_attention"):
        with sdpa_kernel([SDPBackend.EFFICIENT_ATTENTION]):
            F.scaled_dot_product_attention(q, q, q)


def test_fused_kernel_extra_memory_is_linear_in_sequence():
    """The fused kernel's peak allocation grows ~2x when the sequence doubles (the math path's
    grows ~4x: it holds the L x L score matrix)."""
    import tracemalloc

    def peak(n, backends):
        q = ember.randn(1, 2, n, 16, requires_grad=True)
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        with sdpa_kernel(backends):
            F.scaled_dot_product_attention(q, q, q).sum().backward()
        p = tracemalloc.get_traced_memory()[1] - base
        tracemalloc.stop()
        return p

    flash = [SDPBackend.FLASH_ATTENTION]
    math_ = [SDPBackend.MATH]
    f1, f2 = peak(2048, flash), peak(4096, flash)
    m1, m2 = peak(2048, math_), peak(4096, math_)
    assert f2 / f1 < 2.6, (f1, f2)
    assert m2 / m1 > 3.0, (m1, m2)
    assert f2 < m2 / 4


@pytest.mark.parametrize("variant", ["upper_left", "lower_right"])
@pytest.mark.parametrize("lengths", [(4, 6), (6, 6), (6, 4)])
def test_causal_bias_masks_as_torch(variant, lengths):
    """nn.attention.bias: the CausalBias subclass (its shape, repr and warning included) takes
    scaled_dot_product_attention through __torch_function__; values and gradients as PyTorch's
    (NaN rows where a lower-right mask leaves a query no key, as PyTorch warns)."""
    import importlib
    L, S = lengths

    def run(lib):
        bias = importlib.import_module(lib.__name__ + ".nn.attention.bias")
        rng = np.random.default_rng(0)
        q, k, v = (lib.tensor(rng.standard_normal(shape), requires_grad=True)
                   for shape in ((2, 3, L, 8), (2, 3, S, 8), (2, 3, S, 8)))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            mask = getattr(bias, "causal_" + variant)(L, S)
            out = lib.nn.functional.scaled_dot_product_attention(q, k, v, mask)
        out.sum().backward()
        return (type(mask).__name__, tuple(mask.shape), int(mask.variant),
                repr(mask).split("(", 1)[1], [str(w.message) for w in caught],
                out.detach().numpy(), q.grad.numpy(), v.grad.numpy())
    mine, theirs = run(ember), run(torch)
    assert mine[:5] == theirs[:5]
    for a, b in zip(mine[5:], theirs[5:]):
        np.testing.assert_allclose(a, b, atol=1e-12, equal_nan=True)
    from ember.nn.attention.bias import causal_upper_left
    with pytest.raises(ValueError, match="CausalBias should not be used with causal=True"):
        q = ember.randn(1, 1, 2, 4)
        F.scaled_dot_product_attention(q, q, q, causal_upper_left(2, 2), is_causal=True)
    with pytest.raises(AssertionError, match="causal_upper_left only supports 2D tensors"):
        causal_upper_left(2, 2, 2)


def test_mask_requiring_grad_gets_its_gradient_through_the_math_path():
    """A float mask that requires grad (T5's learned position bias) takes the math path, as
    PyTorch's CPU choice does: the flash kernel has no mask gradient."""
    from ember.backends._sdp import fused_sdp_choice
    q, tq = _pair((2, 3, 5, 8), 0)
    k, tk = _pair((2, 3, 5, 8), 1)
    v, tv = _pair((2, 3, 5, 8), 2)
    m, tm = _pair((1, 3, 5, 5), 3)
    assert fused_sdp_choice(q, k, v, m) == torch._fused_sdp_choice(tq, tk, tv, tm) == 0
    for x in (q, k, v):
        x.requires_grad_(False)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=m)
    tout = torch.nn.functional.scaled_dot_product_attention(tq.detach(), tk.detach(),
                                                            tv.detach(), attn_mask=tm)
    (out * out).sum().backward()
    (tout * tout).sum().backward()
    np.testing.assert_allclose(m.grad.numpy(), tm.grad.numpy(), rtol=1e-10, atol=1e-12)
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION), pytest.raises(RuntimeError,
                                                                match="No available kernel"):
        F.scaled_dot_product_attention(q, k, v, attn_mask=m)
