"""Adam and AdamW with ``fused=True``: one ``_fused_adam_``/``_fused_adamw_`` call per group,
against PyTorch's fused optimizers (values, step counts, state), with GradScaler handing the
optimizer its scale and found_inf, PyTorch's errors, and the same op on the (simulated) CUDA
device."""
import numpy as np
import pytest

import ember
from helpers import assert_same

torch = pytest.importorskip("torch")

CONFIGS = [dict(), dict(weight_decay=0.1, amsgrad=True), dict(maximize=True, weight_decay=0.05),
           dict(betas=(0.8, 0.9), eps=1e-6, lr=0.05)]


def _pair(cls, shapes, seed, **kw):
    rng = np.random.default_rng(seed)
    ws = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    pe = [ember.nn.Parameter(ember.tensor(w)) for w in ws]
    pt = [torch.nn.Parameter(torch.tensor(w)) for w in ws]
    kw.setdefault("lr", 0.01)
    return (pe, getattr(ember.optim, cls)(pe, fused=True, **kw),
            pt, getattr(torch.optim, cls)(pt, fused=True, **kw), rng)


@pytest.mark.parametrize("cls", ["Adam", "AdamW"])
@pytest.mark.parametrize("cfg", range(len(CONFIGS)))
def test_fused_matches_pytorch(cls, cfg):
    pe, oe, pt, ot, rng = _pair(cls, [(4, 3), (5,)], cfg, **CONFIGS[cfg])
    for _ in range(6):
        for e, t in zip(pe, pt):
            g = rng.standard_normal(tuple(e.shape)).astype(np.float32)
            e.grad, t.grad = ember.tensor(g), torch.tensor(g)
        oe.step()
        ot.step()
    for e, t in zip(pe, pt):
        assert_same(e.detach(), t.detach(), rtol=1e-5, atol=1e-6)
        se, st = oe.state[e], ot.state[t]
        assert list(se) == list(st)
        assert se["step"].dtype == ember.float32 and se["step"].item() == st["step"].item() == 6
        assert_same(se["exp_avg_sq"], st["exp_avg_sq"], rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("cls", ["Adam", "AdamW"])
def test_fused_matches_the_single_tensor_path(cls):
    rng = np.random.default_rng(3)
    w = rng.standard_normal((6, 2)).astype(np.float32)
    a, b = ember.nn.Parameter(ember.tensor(w)), ember.nn.Parameter(ember.tensor(w))
    oa = getattr(ember.optim, cls)([a], lr=0.02, weight_decay=0.1, fused=True)
    ob = getattr(ember.optim, cls)([b], lr=0.02, weight_decay=0.1, foreach=False)
    for _ in range(4):
        g = ember.tensor(rng.standard_normal((6, 2)).astype(np.float32))
        a.grad, b.grad = g.clone(), g.clone()
        oa.step()
        ob.step()
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_one_op_call_per_group():
    p = [ember.nn.Parameter(ember.randn(3)) for _ in range(4)]
    opt = ember.optim.AdamW(p, fused=True)
    for q in p:
        q.grad = ember.randn(3)
    with ember.profiler.profile() as prof:
        opt.step()
    names = [e.key for e in prof.key_averages()]
    assert "aten::_fused_adamw_" in names and "aten::lerp_" not in names
    assert next(e.count for e in prof.key_averages() if e.key == "aten::_fused_adamw_") == 1


@pytest.mark.parametrize("inf", [False, True])
def test_grad_scaler_hands_the_scale_to_a_fused_optimizer(inf):
    """GradScaler does not unscale for a fused optimizer: the op divides by the scale (and keeps
    the unscaled gradient); with an inf it changes nothing and the step count is taken back."""
    out = {}
    for lib in (ember, torch):
        lib.manual_seed(0)
        w = lib.nn.Parameter(lib.tensor(np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)))
        opt = lib.optim.Adam([w], lr=0.1, fused=True)
        scaler = lib.amp.GradScaler("cpu", init_scale=1024.0)
        x = lib.tensor(np.arange(3, dtype=np.float32))
        loss = (w @ x).pow(2).sum() * (float("inf") if inf else 1.0)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        out[lib.__name__] = (w.detach().numpy().copy(), w.grad.numpy().copy(),
                             opt.state[w]["step"].item(), scaler.get_scale())
    e, t = out["ember"], out["torch"]
    np.testing.assert_allclose(e[0], t[0], rtol=1e-6)
    np.testing.assert_allclose(e[1], t[1], rtol=1e-6)
    assert e[2] == t[2] == (0.0 if inf else 1.0) and e[3] == t[3] == (512.0 if inf else 1024.0)


def test_fused_errors_as_pytorch():
    p = [ember.nn.Parameter(ember.randn(2))]
    for lib, params in ((ember, p), (torch, [torch.nn.Parameter(torch.randn(2))])):
        with pytest.raises(RuntimeError, match="`fused` and `foreach` cannot be `True` together"):
            lib.optim.Adam(params, fused=True, foreach=True)
        with pytest.raises(RuntimeError, match="`fused` does not support `differentiable`"):
            lib.optim.AdamW(params, fused=True, differentiable=True)
    ints = ember.ones(2, dtype=ember.int64)
    opt = ember.optim.Adam([ints], fused=True)
    ints.grad = ember.ones(2, dtype=ember.int64)
    with pytest.raises(RuntimeError, match="requires all the params to be floating point"):
        opt.step()
    with pytest.raises(RuntimeError, match="exp_avgs.size"):
        ember._fused_adam_([ember.ones(2)], [ember.ones(2)], [], [ember.ones(2)], [],
                           [ember.tensor(1.0)], lr=0.1, beta1=0.9, beta2=0.99,
                           weight_decay=0.0, eps=1e-8, amsgrad=False, maximize=False)
    meta = ember.ones(2, device="meta")  # the Meta kernel checks the same rules
    with pytest.raises(RuntimeError, match="max_exp_avg_sqs.size"):
        ember._fused_adam_([meta], [meta], [meta], [meta], [], [ember.tensor(1.0)], lr=0.1,
                           beta1=0.9, beta2=0.99, weight_decay=0.0, eps=1e-8, amsgrad=True,
                           maximize=False)


def test_fused_adam_on_cuda_matches_cpu(cuda_device):
    rng = np.random.default_rng(7)
    w = rng.standard_normal((5, 4)).astype(np.float32)
    c = ember.nn.Parameter(ember.tensor(w))
    d = ember.nn.Parameter(ember.tensor(w).cuda())
    oc = ember.optim.AdamW([c], lr=0.03, amsgrad=True, fused=True)
    od = ember.optim.AdamW([d], lr=0.03, amsgrad=True, fused=True)
    for _ in range(3):
        g = rng.standard_normal((5, 4)).astype(np.float32)
        c.grad, d.grad = ember.tensor(g), ember.tensor(g).cuda()
        oc.step()
        od.step()
    assert od.state[d]["step"].device.type == "cuda"
    np.testing.assert_allclose(d.detach().cpu().numpy(), c.detach().numpy(), rtol=1e-6, atol=1e-7)
