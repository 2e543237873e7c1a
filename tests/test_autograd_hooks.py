"""Saved-tensor hooks (``autograd.graph.saved_tensors_hooks``, ``save_on_cpu``,
``disable_saved_tensors_hooks``) and ``register_multi_grad_hook``, compared with PyTorch."""
import numpy as np
import pytest

import ember
from helpers import assert_same, to_torch


def _pair(torch, shape=(3,)):
    x = ember.randn(*shape, dtype=ember.float64, requires_grad=True)
    return x, to_torch(torch, x.detach()).requires_grad_(True)


def _trace_hooks(lib, calls):
    def pack(t):
        calls.append(("pack", type(t.grad_fn).__name__ if t.grad_fn is not None else None,
                      t.requires_grad, lib.is_grad_enabled()))
        return t

    def unpack(t):
        calls.append(("unpack",))
        return t
    return lib.autograd.graph.saved_tensors_hooks(pack, unpack)


def test_pack_unpack_calls_match(torch):
    x, tx = _pair(torch)
    results = []
    for lib, inp in ((ember, x), (torch, tx)):
        calls = []
        with _trace_hooks(lib, calls):
            y = inp.exp()  # saves its result: pack sees it with its grad_fn
            z = (y * inp).sin()  # mul saves both inputs, sin saves self
        z.sum().backward()
        results.append((calls, inp.grad))
    (e_calls, e_grad), (t_calls, t_grad) = results
    assert e_calls == t_calls
    assert_same(e_grad, t_grad)


def test_hooks_replace_saved_data(torch):
    """What unpack returns is what the formula uses (here: twice the saved value)."""
    for lib in (ember, torch):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t * 2, lambda t: t):
            y = x * x
        y.sum().backward()
        np.testing.assert_allclose(np.array(x.grad.tolist()), [4.0, 8.0, 12.0])


def test_innermost_hooks_apply_and_thread_state_restored(torch):
    outer, inner = [], []
    x = ember.randn(3, requires_grad=True)
    with ember.autograd.graph.saved_tensors_hooks(lambda t: outer.append(1) or t, lambda t: t):
        with ember.autograd.graph.saved_tensors_hooks(lambda t: inner.append(1) or t,
                                                      lambda t: t):
            x.sin()
        x.cos()
    assert (len(outer), len(inner)) == (1, 1)
    x.tan()
    assert (len(outer), len(inner)) == (1, 1)


def test_hooks_skip_version_check(torch):
    """With hooks the hooks own the data: an in-place change after saving is not an error."""
    for lib in (ember, torch):
        x = lib.ones(3, requires_grad=True)
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t.clone(), lambda t: t):
            a = x * 1
            b = a.sin()
        a.add_(1)
        b.sum().backward()
        np.testing.assert_allclose(np.array(x.grad.tolist()), np.cos(np.ones(3)), rtol=1e-6)


def test_hook_errors(torch):
    def errors(lib):
        out = []
        x = lib.randn(3, requires_grad=True)
        with lib.autograd.graph.saved_tensors_hooks(lambda t: 1, lambda t: 2):
            b = (x * 1).sin()
        try:
            b.sum().backward()
        except Exception as e:  # noqa: BLE001
            out.append((type(e), str(e)))
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t.add_(1), lambda t: t):
            try:
                (x * 1).sin()
            except Exception as e:  # noqa: BLE001
                out.append((type(e), str(e)))
        with lib.autograd.graph.disable_saved_tensors_hooks("not with hooks"):
            try:
                with lib.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
                    pass
            except Exception as e:  # noqa: BLE001
                out.append((type(e), str(e)))
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            b = (x * 1).sin()
        b.sum().backward()
        try:
            b.grad_fn._saved_self
        except Exception as e:  # noqa: BLE001
            out.append((type(e), str(e)))
        return [(t.__name__, m) for t, m in out]
    assert errors(ember) == errors(torch)


def test_save_on_cpu(torch):
    x, tx = _pair(torch, (2, 3))
    for lib, inp in ((ember, x), (torch, tx)):
        with lib.autograd.graph.save_on_cpu():
            y = (inp.exp() * inp).sum()
        y.backward()
    assert_same(x.grad, tx.grad)
    with ember.autograd.graph.save_on_cpu(pin_memory=True):
        y = (x.exp() * x).sum()
    x.grad = None
    y.backward()
    assert_same(x.grad, tx.grad)


def test_hooks_with_custom_function(torch):
    calls = []

    class Square(ember.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * a

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return 2 * a * g

    x = ember.tensor([1.0, 2.0], requires_grad=True)
    with ember.autograd.graph.saved_tensors_hooks(lambda t: calls.append("p") or t,
                                                  lambda t: calls.append("u") or t):
        y = Square.apply(x)
    y.sum().backward()
    assert calls == ["p", "u"]
    assert x.grad.tolist() == [2.0, 4.0]


# ---------------------------------------------------------------------------------------------
# register_multi_grad_hook

def _multi(lib, mode, use_grad=False, only_a=False, leaves=True):
    a = lib.tensor([1.0, 2.0], requires_grad=True)
    b = lib.tensor([3.0, 4.0], requires_grad=True)
    c = lib.tensor([5.0], requires_grad=True)  # not in the graph below
    if not leaves:
        a, b, c = a * 1, b * 1, c * 1
    seen = []

    def fn(grads):
        if mode == "all":
            seen.append([None if g is None else g.tolist() for g in grads])
        else:
            seen.append(grads.tolist())
    h = lib.autograd.graph.register_multi_grad_hook((a, b, c), fn, mode=mode)
    loss = (a * 2).sum() if only_a else (a * b).sum()
    if use_grad:
        lib.autograd.grad(loss, (a,), retain_graph=True)
    else:
        loss.backward(retain_graph=True)
    loss.backward(retain_graph=True)  # a second pass: the hook runs again
    h.remove()
    (a * b).sum().backward()  # removed: no more calls
    return seen


@pytest.mark.parametrize("mode", ["all", "any"])
@pytest.mark.parametrize("use_grad", [False, True])
@pytest.mark.parametrize("only_a", [False, True])
def test_multi_grad_hook(torch, mode, use_grad, only_a):
    if not (use_grad and mode == "all"):  # that one raises: see the test below
        assert _multi(ember, mode, use_grad, only_a) == _multi(torch, mode, use_grad, only_a)
    assert _multi(ember, mode, use_grad, only_a, False) == \
        _multi(torch, mode, use_grad, only_a, False)


def test_multi_grad_hook_leaves_with_autograd_grad(torch):
    """PyTorch cannot tell whether autograd.grad reaches a leaf: mode="all" raises."""
    with pytest.raises(RuntimeError) as t:
        _multi(torch, "all", use_grad=True)
    with pytest.raises(RuntimeError) as e:
        _multi(ember, "all", use_grad=True)
    assert str(e.value) == str(t.value)


def test_multi_grad_hook_bad_mode(torch):
    a = ember.ones(1, requires_grad=True)
    with pytest.raises(ValueError) as e:
        ember.autograd.graph.register_multi_grad_hook((a,), print, mode="some")
    ta = torch.ones(1, requires_grad=True)
    with pytest.raises(ValueError) as t:
        torch.autograd.graph.register_multi_grad_hook((ta,), print, mode="some")
    assert str(e.value) == str(t.value)
