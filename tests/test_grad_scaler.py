"""GradScaler and its two ops, against PyTorch 2.13 on the CPU.

ember's side uses ``ember.optim.SGD`` where it exists, else ``_TinySGD`` below (the optimizer
interface GradScaler needs: ``param_groups`` and ``step()``); PyTorch's side uses
``torch.optim.SGD`` with the same learning rate, so the parameters must agree step by step.
"""
import math
import pickle

import numpy as np
import pytest

import ember
from helpers import assert_same, from_np


class _TinySGD:
    """Plain SGD (p -= lr * grad) with PyTorch's optimizer interface."""

    def __init__(self, params, lr):
        self.param_groups = [{"params": list(params), "lr": lr}]
        self.state = {}

    def step(self, closure=None):
        with ember.no_grad():
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is not None:
                        p.sub_(p.grad * group["lr"])

    def zero_grad(self, set_to_none=True):
        for group in self.param_groups:
            for p in group["params"]:
                p.grad = None


def _optimizer(lib, params, lr):
    try:
        import ember.optim  # noqa: F401  (being built; fall back to _TinySGD without it)
    except ImportError:
        pass
    sgd = getattr(getattr(lib, "optim", None), "SGD", None)
    return sgd(params, lr=lr) if sgd is not None else _TinySGD(params, lr)


def _train(lib, w0, losses_with_inf, scaler_kw, clip=None):
    """A few steps of w -> sum((w*x)^2) * k; ``k = inf`` on the listed steps makes grads inf."""
    w = lib.tensor(w0, requires_grad=True)
    opt = _optimizer(lib, [w], lr=0.01)
    scaler = lib.amp.GradScaler("cpu", **scaler_kw)
    scales, ws = [], []
    for i in range(8):
        opt.zero_grad()
        k = math.inf if i in losses_with_inf else 1.0
        x = lib.tensor([1.0, 2.0, 3.0])
        loss = ((w * x) * (w * x)).sum() * k
        scaler.scale(loss).backward()
        if clip is not None:
            scaler.unscale_(opt)
            with lib.no_grad():
                norm = float((w.grad * w.grad).sum()) ** 0.5
                if math.isfinite(norm) and norm > clip:
                    w.grad.mul_(clip / norm)
        scaler.step(opt)
        scaler.update()
        scales.append(scaler.get_scale())
        ws.append(np.array(w.detach().tolist(), dtype=np.float32))
    return scales, ws, scaler


@pytest.mark.parametrize("clip", [None, 1.0])
def test_scale_sequence_and_skipped_steps_match_pytorch(torch, clip):
    w0 = [0.5, -1.0, 2.0]
    kw = {"init_scale": 1024.0, "growth_interval": 3}
    e_scales, e_ws, _ = _train(ember, w0, {2, 6}, kw, clip)
    t_scales, t_ws, _ = _train(torch, w0, {2, 6}, kw, clip)
    assert e_scales == t_scales
    assert e_scales[2] == e_scales[1] * 0.5  # backoff on the inf step
    np.testing.assert_array_equal(e_ws[2], e_ws[1])  # ... whose optimizer step was skipped
    for e, t in zip(e_ws, t_ws):
        np.testing.assert_allclose(e, t, rtol=1e-6)


def test_defaults_match_pytorch(torch):
    e, t = ember.amp.GradScaler("cpu"), torch.amp.GradScaler("cpu")
    for attr in ("_init_scale", "_growth_factor", "_backoff_factor", "_growth_interval"):
        assert getattr(e, attr) == getattr(t, attr)
    assert e.get_scale() == 2.0 ** 16 and e.is_enabled()
    loss = ember.tensor(2.0)
    scaled = e.scale(loss)
    assert scaled.item() == 2.0 ** 17
    assert e._scale.dtype is ember.float32 and e._growth_tracker.dtype is ember.int32
    nested = e.scale([loss, (loss, loss)])
    assert isinstance(nested, list) and isinstance(nested[1], tuple)
    assert nested[1][0].item() == 2.0 ** 17
    with pytest.raises(ValueError, match="outputs must be a Tensor or an iterable of Tensors"):
        e.scale([loss, 3])


def test_state_dict_roundtrip_matches_pytorch(torch):
    dicts = []
    for lib in (ember, torch):
        w0 = [1.0, 2.0, 3.0]
        _, _, scaler = _train(lib, w0, {1}, {"init_scale": 256.0, "growth_interval": 2})
        dicts.append(scaler.state_dict())
    assert dicts[0] == dicts[1]
    fresh = ember.amp.GradScaler("cpu")
    fresh.load_state_dict(dicts[0])
    assert fresh.state_dict() == dicts[0]
    clone = pickle.loads(pickle.dumps(fresh))
    assert clone.state_dict() == dicts[0]
    with pytest.raises(RuntimeError, match="The source state dict is empty"):
        fresh.load_state_dict({})


def test_stage_errors_match_pytorch(torch):
    messages = []
    for lib in (ember, torch):
        w = lib.tensor([1.0, 2.0], requires_grad=True)
        opt = _optimizer(lib, [w], lr=0.1)
        scaler = lib.amp.GradScaler("cpu")
        got = []
        with pytest.raises(AssertionError) as e:
            scaler.unscale_(opt)
        got.append(str(e.value))
        scaler.scale((w * w).sum()).backward()
        scaler.unscale_(opt)
        with pytest.raises(RuntimeError) as e:
            scaler.unscale_(opt)
        got.append(str(e.value))
        scaler.step(opt)
        with pytest.raises(RuntimeError) as e:
            scaler.step(opt)
        got.append(str(e.value))
        with pytest.raises(RuntimeError) as e:
            scaler.unscale_(opt)
        got.append(str(e.value))
        with pytest.raises(RuntimeError) as e:
            scaler.step(opt, closure=lambda: None)
        got.append(str(e.value))
        scaler.update()
        h = lib.ones(2, dtype=lib.float16, requires_grad=True)
        h.grad = lib.ones(2, dtype=lib.float16)
        with pytest.raises(ValueError) as e:
            scaler.unscale_(_optimizer(lib, [h], lr=0.1))
        got.append(str(e.value))
        messages.append(got)
    assert messages[0] == messages[1]


def test_bad_factors_and_disabled_scaler(torch):
    with pytest.raises(AssertionError, match="The growth factor must be > 1.0."):
        ember.amp.GradScaler("cpu", growth_factor=1.0)
    with pytest.raises(AssertionError, match="The backoff factor must be < 1.0."):
        ember.amp.GradScaler("cpu", backoff_factor=1.0)
    off = ember.amp.GradScaler("cpu", enabled=False)
    loss = ember.tensor(3.0)
    assert off.scale(loss) is loss and off.get_scale() == 1.0 and off.state_dict() == {}
    if not ember.cuda.is_available():
        with pytest.warns(UserWarning, match="CUDA is not available.  Disabling."), \
                pytest.warns(FutureWarning, match="torch.cuda.amp.GradScaler"):
            assert ember.cuda.amp.GradScaler().is_enabled() is False


# ---------------------------------------------------------------------------------------------
# The ops.

def test_amp_update_scale_matches_pytorch(torch):
    # PyTorch, checked on CPU with interval 3 and no infs: 4 -> 4 -> 4 -> 8.
    seq = []
    for lib in (ember, torch):
        s = lib.tensor(4.0)
        g = lib.tensor(0, dtype=lib.int32)
        out = []
        for found in (0.0, 0.0, 0.0, 1.0, 0.0):
            r = lib._amp_update_scale_(s, g, lib.tensor(found), 2.0, 0.5, 3)
            assert r is s
            out.append((s.item(), g.item()))
        seq.append(out)
    assert seq[0] == seq[1] == [(4.0, 1), (4.0, 2), (8.0, 0), (4.0, 0), (4.0, 1)]


def test_amp_update_scale_never_grows_into_inf(torch):
    for lib in (ember, torch):
        s = lib.tensor(3e38)
        g = lib.tensor(0, dtype=lib.int32)
        lib._amp_update_scale_(s, g, lib.tensor(0.0), 2.0, 0.5, 1)
        assert s.item() == pytest.approx(3e38) and g.item() == 0


def test_foreach_non_finite_check_and_unscale_matches_pytorch(torch):
    arrays = [np.array([1.0, 2.0, np.inf], np.float32), np.array([[4.0, np.nan]], np.float32),
              np.array([8.0, 16.0], np.float32)]
    eg = [from_np(a) for a in arrays]
    tg = [torch.from_numpy(a.copy()) for a in arrays]
    ef, tf = ember.zeros(()), torch.zeros(())
    assert ember._amp_foreach_non_finite_check_and_unscale_(eg, ef, ember.tensor(0.5)) is None
    torch._amp_foreach_non_finite_check_and_unscale_(tg, tf, torch.tensor(0.5))
    for e, t in zip(eg, tg):
        assert_same(e, t)
    assert_same(ef, tf)
    assert eg[2]._version == 1  # written in place, version bumped
    clean = [ember.ones(2)]
    f = ember.zeros(())
    ember._amp_foreach_non_finite_check_and_unscale_(clean, f, ember.tensor(0.25))
    assert f.item() == 0.0 and clean[0].tolist() == [0.25, 0.25]


def test_amp_op_errors_match_pytorch(torch):
    for lib in (ember, torch):
        g = [lib.ones(2)]
        with pytest.raises(RuntimeError, match="found_inf must be a float tensor."):
            lib._amp_foreach_non_finite_check_and_unscale_(g, lib.zeros((), dtype=lib.float64),
                                                           lib.tensor(1.0))
        with pytest.raises(RuntimeError, match="inv_scale must be a 1-element tensor."):
            lib._amp_foreach_non_finite_check_and_unscale_(g, lib.zeros(()), lib.ones(2))
        with pytest.raises(RuntimeError, match="growth_tracker must be an int tensor."):
            lib._amp_update_scale_(lib.tensor(1.0), lib.tensor(0.0), lib.tensor(0.0), 2.0, 0.5, 3)
        with pytest.raises(RuntimeError, match="current_scale must be a float tensor."):
            lib._amp_update_scale_(lib.tensor(1.0, dtype=lib.float64),
                                   lib.tensor(0, dtype=lib.int32), lib.tensor(0.0), 2.0, 0.5, 3)
        with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
            lib._amp_foreach_non_finite_check_and_unscale_(g + [lib.ones(2, dtype=lib.int64)],
                                                           lib.zeros(()), lib.tensor(2.0))
        if lib is ember:  # ember checks every input first; PyTorch has unscaled g[0] by now
            assert g[0].tolist() == [1.0, 1.0]


def test_amp_ops_on_meta():
    s = ember.empty((), device="meta")
    g = ember.empty((), dtype=ember.int32, device="meta")
    assert ember._amp_update_scale_(s, g, ember.empty((), device="meta"), 2.0, 0.5, 3) is s
    grads = [ember.empty(3, device="meta")]
    assert ember._amp_foreach_non_finite_check_and_unscale_(
        grads, ember.empty((), device="meta"), ember.empty((), device="meta")) is None
