"""ember.utils.checkpoint: gradients equal the uncheckpointed ones, activations are really not
kept, RNG replay, determinism checks and PyTorch's errors."""
import gc
import tracemalloc
import warnings

import numpy as np
import pytest

import ember
from ember.autograd.graph import saved_tensors_hooks
from ember.utils.checkpoint import CheckpointError, checkpoint, checkpoint_sequential
from helpers import to_np

nn = ember.nn


def _mlp(layers=6, width=16, dropout=0.0):
    ember.manual_seed(0)
    mods = []
    for _ in range(layers):
        mods += [nn.Linear(width, width), nn.Tanh()]
        if dropout:
            mods.append(nn.Dropout(dropout))
    return nn.Sequential(*mods)


def _grads(net, x, run):
    net.zero_grad()
    x.grad = None
    ember.manual_seed(123)
    out = run(net, x)
    (out * out).sum().backward()
    return to_np(out), [to_np(p.grad) for p in net.parameters()] + [to_np(x.grad)]


@pytest.mark.parametrize("use_reentrant", [True, False])
@pytest.mark.parametrize("how", ["sequential", "single"])
def test_gradients_equal_no_checkpoint(use_reentrant, how):
    net = _mlp(dropout=0.25)
    x = ember.randn(4, 16, requires_grad=True)
    ref_out, ref = _grads(net, x, lambda n, v: n(v))
    if how == "sequential":
        run = lambda n, v: checkpoint_sequential(n, 3, v, use_reentrant=use_reentrant)  # noqa
    else:
        run = lambda n, v: n[4:](checkpoint(n[:4], v, use_reentrant=use_reentrant))  # noqa
    out, got = _grads(net, x, run)
    np.testing.assert_array_equal(out, ref_out)
    for a, b in zip(got, ref):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_preserve_rng_state(use_reentrant):
    """Dropout's mask is replayed in the recomputation; without preserve_rng_state it is not,
    and the gradient then disagrees with the forward actually computed."""
    x = ember.randn(64, requires_grad=True)

    def fn(v):
        return nn.functional.dropout(v, 0.5, training=True) * 3.0

    ember.manual_seed(5)
    y = checkpoint(fn, x, use_reentrant=use_reentrant)
    y.sum().backward()
    mask = to_np(y) != 0
    np.testing.assert_array_equal(to_np(x.grad), np.where(mask, 6.0, 0.0))
    x.grad = None
    ember.manual_seed(5)
    y = checkpoint(fn, x, use_reentrant=use_reentrant, preserve_rng_state=False)
    y.sum().backward()
    assert (to_np(x.grad) != np.where(to_np(y) != 0, 6.0, 0.0)).any()


def _count_saved(fn):
    """How many tensors autograd saves for backward while ``fn`` runs (seen from outside)."""
    saved = []

    def pack(t):
        saved.append(t.numel())
        return t

    with saved_tensors_hooks(pack, lambda t: t):
        out = fn()
    return out, saved


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_activations_are_not_saved(use_reentrant):
    net = _mlp(layers=6)
    x = ember.randn(4, 16, requires_grad=True)
    _, plain = _count_saved(lambda: net(x))
    out, ckpt = _count_saved(lambda: checkpoint(net, x, use_reentrant=use_reentrant))
    assert len(plain) >= 12  # each Linear saves input, weight; each Tanh its output
    # Only the checkpoint's input is saved (as in PyTorch); the activations inside are not
    # (non-reentrant: the inner hooks turn them into holders, invisible from outside).
    assert ckpt == [64]
    out.sum().backward()
    assert net[0].weight.grad is not None


def _live_and_peak(run, net, x):
    """(bytes held after the forward, peak bytes over forward + backward), as tracemalloc sees
    them: NumPy reports every array buffer (so every tensor's storage) to it."""
    net.zero_grad()
    x.grad = None
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        out = run(net, x)
        live = tracemalloc.get_traced_memory()[0] - base
        out.sum().backward()
        del out
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    return live, peak, [to_np(p.grad) for p in net.parameters()] + [to_np(x.grad)]


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_memory_is_really_saved(use_reentrant):
    """12-layer MLP: the activations held after the forward and the peak over forward and
    backward shrink with checkpoint_sequential; gradients are identical."""
    ember.manual_seed(0)
    net = nn.Sequential(*[m for _ in range(12) for m in (nn.Linear(64, 64), nn.ReLU())])
    x = ember.randn(1024, 64, requires_grad=True)
    act = 1024 * 64 * 4
    live_plain, peak_plain, ref = _live_and_peak(lambda n, v: n(v), net, x)
    live_ckpt, peak_ckpt, got = _live_and_peak(
        lambda n, v: checkpoint_sequential(n, 4, v, use_reentrant=use_reentrant), net, x)
    # Plain: the 12 ReLU outputs stay saved (Linear saves its input, ReLU its output).
    assert live_plain >= 12 * act
    # Checkpointed: 3 segment boundaries plus the last, uncheckpointed segment's 3 outputs.
    assert live_ckpt <= 7 * act
    assert peak_ckpt < 0.8 * peak_plain
    for a, b in zip(got, ref):
        np.testing.assert_array_equal(a, b)


def test_backward_twice_recomputes_each_time():
    net = _mlp()
    x = ember.randn(3, 16, requires_grad=True)
    calls = []

    def fn(v):
        calls.append(1)
        return net(v)

    out = checkpoint(fn, x, use_reentrant=False)
    out.sum().backward(retain_graph=True)
    g1 = to_np(x.grad)
    out.sum().backward()
    np.testing.assert_allclose(to_np(x.grad), 2 * g1, rtol=1e-6)
    assert len(calls) == 3  # forward + one recomputation per backward pass


def test_non_reentrant_with_autograd_grad_and_kwargs():
    w = ember.randn(5, requires_grad=True)
    x = ember.randn(5, requires_grad=True)

    def fn(a, scale=1.0, *, b):
        return ((a * b).sin() * scale).sum()

    y = checkpoint(fn, x, 2.0, b=w, use_reentrant=False)
    gx, gw = ember.autograd.grad(y, (x, w))
    np.testing.assert_allclose(to_np(gx), to_np((x * w).cos() * w * 2), rtol=1e-6)
    np.testing.assert_allclose(to_np(gw), to_np((x * w).cos() * x * 2), rtol=1e-6)


def test_determinism_check(torch):
    def make(mod):
        state = {"n": 0}

        def fn(v):
            state["n"] += 1
            # The recomputation takes a different shape: what determinism_check catches.
            return (v[: 4 - state["n"]].exp()).sum()
        return fn

    msgs = []
    for mod in (ember, torch):
        x = mod.ones(4, requires_grad=True)
        y = getattr(mod.utils.checkpoint, "checkpoint")(make(mod), x, use_reentrant=False)
        with pytest.raises(mod.utils.checkpoint.CheckpointError) as info:
            y.backward()
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1].replace("torch.Size", "ember.Size").replace("torch.float", "ember.float")
    assert "Recomputed values for the following tensors have different metadata" in msgs[0]
    # determinism_check="none" does not compare: the wrong-shaped recomputed tensor reaches
    # the backward formula, which then fails on its own.
    x = ember.ones(4, requires_grad=True)
    y = checkpoint(make(ember), x, use_reentrant=False, determinism_check="none")
    with pytest.raises(RuntimeError) as info:
        y.backward()
    assert not isinstance(info.value, CheckpointError)


def test_count_mismatch_message(torch):
    def make():
        state = {"n": 0}

        def fn(v):
            state["n"] += 1
            return v.exp().exp() if state["n"] == 1 else v.exp()
        return fn

    msgs = []
    for mod in (ember, torch):
        x = mod.ones(3, requires_grad=True)
        with mod.utils.checkpoint.set_checkpoint_early_stop(False):
            y = mod.utils.checkpoint.checkpoint(make(), x, use_reentrant=False)
        with pytest.raises(RuntimeError) as info:
            y.sum().backward()
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1]


def test_errors(torch):
    x = ember.ones(2, requires_grad=True)
    with pytest.warns(UserWarning, match="the use_reentrant parameter should be passed"):
        checkpoint(lambda v: v * 2, x)
    with pytest.raises(ValueError, match="Unexpected keyword arguments: foo"):
        checkpoint(lambda v: v, x, use_reentrant=True, foo=1)
    with pytest.raises(ValueError, match="Passing `context_fn` or `debug` is only supported"):
        checkpoint(lambda v: v, x, use_reentrant=True, debug=True)
    with pytest.raises(ValueError, match=r"determinism_check should be one of \['default', "
                                         r"'none'\], but got bad"):
        checkpoint(lambda v: v * 2, x, use_reentrant=False, determinism_check="bad")
    y = checkpoint(lambda v: v * 2, x, use_reentrant=True).sum()
    with pytest.raises(RuntimeError, match="When use_reentrant=True, torch.utils.checkpoint is "
                                           "incompatible with .grad()"):
        ember.autograd.grad(y, x)
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
        checkpoint(lambda v: v * 2, ember.ones(2), use_reentrant=True)
    # Modifying a checkpoint's input in place after the forward is caught at backward.
    for reentrant in (True, False):
        a = ember.ones(3, requires_grad=True)
        b = a * 1
        y = checkpoint(lambda v: (v * v).sum(), b, use_reentrant=reentrant)
        b.add_(1)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.backward()
