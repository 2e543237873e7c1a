"""``ember.nn.utils.prune`` against PyTorch: masks, pruned and original tensors, state dicts and
hooks of the deterministic methods (alone, composed in a container, global), the counts and the
structure of the random ones, ``remove``/``is_pruned``, and the argument errors."""
import math

import numpy as np
import pytest

import ember
import ember.nn.utils.prune as prune
from helpers import assert_same, from_np, to_np

RNG = np.random.default_rng(0)


@pytest.fixture
def torch(torch):
    # as in PyTorch, the submodule is not imported by ``import torch``
    import torch.nn.utils.prune  # noqa: F401
    return torch


def _modules(torch, kind="linear"):
    """An ember and a torch module with equal parameters drawn from NumPy."""
    if kind == "linear":
        e, t = ember.nn.Linear(6, 5), torch.nn.Linear(6, 5)
    else:
        e, t = ember.nn.Conv2d(3, 4, 3), torch.nn.Conv2d(3, 4, 3)
    with ember.no_grad(), torch.no_grad():
        for pe, pt in zip(e.parameters(), t.parameters()):
            a = RNG.standard_normal(tuple(pe.shape)).astype(np.float32)
            pe.copy_(from_np(a))
            pt.copy_(torch.from_numpy(a))
    return e, t


def _assert_pruned_same(e, t, name="weight"):
    """Same parameters, buffers and state-dict entries, in the same order, and the same
    pruned tensor."""
    assert [n for n, _ in e.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert [n for n, _ in e.named_buffers()] == [n for n, _ in t.named_buffers()]
    es, ts = e.state_dict(), t.state_dict()
    assert list(es) == list(ts)
    for k in es:
        assert_same(es[k], ts[k], rtol=0, atol=0)
    assert_same(getattr(e, name), getattr(t, name), rtol=0, atol=0)


def _same_error(torch, exc, call):
    """``call(lib)`` raises ``exc`` with the same message in both (PyTorch's names swapped)."""
    with pytest.raises(exc) as te:
        call(torch)
    with pytest.raises(exc) as ee:
        call(ember)
    assert str(ee.value) == str(te.value).replace("torch", "ember")


@pytest.mark.parametrize("amount", [0, 7, 0.4, 1.0, 30])
def test_l1_unstructured_matches_torch(torch, amount):
    e, t = _modules(torch)
    assert prune.l1_unstructured(e, "weight", amount) is e
    torch.nn.utils.prune.l1_unstructured(t, "weight", amount)
    _assert_pruned_same(e, t)
    assert e.weight_mask.dtype == ember.float32
    assert int((e.weight_mask == 0).sum()) == (amount if isinstance(amount, int)
                                               else round(amount * 30))
    assert isinstance(e.weight_orig, ember.nn.Parameter) and "weight" not in e._parameters
    hooks = list(e._forward_pre_hooks.values())
    assert len(hooks) == 1 and isinstance(hooks[0], prune.L1Unstructured)
    assert hooks[0]._tensor_name == "weight"


def test_forward_pre_hook_and_gradient_match_torch(torch):
    e, t = _modules(torch)
    prune.l1_unstructured(e, "weight", 0.5)
    torch.nn.utils.prune.l1_unstructured(t, "weight", 0.5)
    # the hook recomputes weight from a changed weight_orig before each call
    a = RNG.standard_normal((5, 6)).astype(np.float32)
    with ember.no_grad(), torch.no_grad():
        e.weight_orig.copy_(from_np(a))
        t.weight_orig.copy_(torch.from_numpy(a))
    x = RNG.standard_normal((2, 6)).astype(np.float32)
    ye, yt = e(from_np(x)), t(torch.from_numpy(x))
    assert_same(ye, yt)
    assert_same(e.weight, t.weight, rtol=0, atol=0)
    ye.sum().backward()
    yt.sum().backward()
    assert_same(e.weight_orig.grad, t.weight_orig.grad)
    assert bool((e.weight_orig.grad[e.weight_mask == 0] == 0).all())


def test_importance_scores_match_torch(torch):
    e, t = _modules(torch, "conv")
    scores = RNG.standard_normal((4, 3, 3, 3)).astype(np.float32)
    prune.l1_unstructured(e, "weight", 20, importance_scores=from_np(scores))
    torch.nn.utils.prune.l1_unstructured(t, "weight", 20, importance_scores=torch.from_numpy(scores))
    _assert_pruned_same(e, t)
    prune.ln_structured(e, "weight", 1, 2, 1, importance_scores=from_np(scores))
    torch.nn.utils.prune.ln_structured(t, "weight", 1, 2, 1,
                                       importance_scores=torch.from_numpy(scores))
    _assert_pruned_same(e, t)
    _same_error(torch, AssertionError, lambda lib: getattr(lib.nn.utils.prune, "l1_unstructured")(
        (e if lib is ember else t), "bias", 1, importance_scores=lib.ones(3)))


@pytest.mark.parametrize("n", [1, 2, 3, math.inf, -math.inf, "fro"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_ln_structured_matches_torch(torch, n, dim):
    # "fro" is a vector norm over at most two dims (a conv weight's three are an error)
    e, t = _modules(torch, "linear" if n == "fro" else "conv")
    prune.ln_structured(e, "weight", amount=0.34, n=n, dim=dim)
    torch.nn.utils.prune.ln_structured(t, "weight", amount=0.34, n=n, dim=dim)
    _assert_pruned_same(e, t)


def test_ln_structured_norm_errors_match_torch(torch):
    e, t = _modules(torch, "conv")
    for n in ("fro", "nuc"):
        _same_error(torch, RuntimeError, lambda lib: lib.nn.utils.prune.ln_structured(
            e if lib is ember else t, "weight", 1, n, 0))
    assert "weight" in e._parameters and not prune.is_pruned(e)


def test_iterative_pruning_container_matches_torch(torch):
    e, t = _modules(torch, "conv")
    steps = [("l1_unstructured", dict(amount=10)),
             ("ln_structured", dict(amount=1, n=2, dim=0)),
             ("l1_unstructured", dict(amount=0.2)),
             ("ln_structured", dict(amount=0.5, n=1, dim=-1)),
             ("identity", {}),
             ("custom_from_mask", dict(mask=None))]
    mask = (RNG.random((4, 3, 3, 3)) > 0.3).astype(np.float32)
    for i, (fn, kw) in enumerate(steps):
        ekw, tkw = dict(kw), dict(kw)
        if "mask" in kw:
            ekw["mask"], tkw["mask"] = from_np(mask), torch.from_numpy(mask)
        getattr(prune, fn)(e, "weight", **ekw)
        getattr(torch.nn.utils.prune, fn)(t, "weight", **tkw)
        _assert_pruned_same(e, t)
        hooks = list(e._forward_pre_hooks.values())
        assert len(hooks) == 1
        if i:
            assert isinstance(hooks[0], prune.PruningContainer) and len(hooks[0]) == i + 1
            assert [type(m).__name__ for m in hooks[0]] == \
                [type(m).__name__ for m in list(t._forward_pre_hooks.values())[0]]
    # a second structured pruning leaves the channels already pruned alone
    assert int((e.weight_mask.sum(dim=(1, 2, 3)) == 0).sum()) == 1


def test_custom_and_identity_match_torch(torch):
    e, t = _modules(torch)
    prune.identity(e, "bias")
    torch.nn.utils.prune.identity(t, "bias")
    _assert_pruned_same(e, t, "bias")
    assert bool((e.bias_mask == 1).all())
    prune.custom_from_mask(e, "weight", mask=from_np(np.eye(5, 6, dtype=np.int64)))
    torch.nn.utils.prune.custom_from_mask(t, "weight", mask=torch.eye(5, 6, dtype=torch.int64))
    _assert_pruned_same(e, t)


@pytest.mark.parametrize("amount", [9, 0.3])
def test_global_unstructured_matches_torch(torch, amount):
    (e1, t1), (e2, t2) = _modules(torch), _modules(torch, "conv")
    # an earlier mask on one of them is respected
    prune.l1_unstructured(e1, "weight", 4)
    torch.nn.utils.prune.l1_unstructured(t1, "weight", 4)
    scores = RNG.standard_normal(4).astype(np.float32)
    prune.global_unstructured([(e1, "weight"), (e2, "weight"), (e2, "bias")],
                              pruning_method=prune.L1Unstructured,
                              importance_scores={(e2, "bias"): from_np(scores)}, amount=amount)
    torch.nn.utils.prune.global_unstructured(
        [(t1, "weight"), (t2, "weight"), (t2, "bias")],
        pruning_method=torch.nn.utils.prune.L1Unstructured,
        importance_scores={(t2, "bias"): torch.from_numpy(scores)}, amount=amount)
    _assert_pruned_same(e1, t1)
    _assert_pruned_same(e2, t2)
    _assert_pruned_same(e2, t2, "bias")
    assert isinstance(list(e2._forward_pre_hooks.values())[0], prune.CustomFromMask)


def test_random_unstructured_properties():
    m = ember.nn.Linear(10, 8)
    prune.random_unstructured(m, "weight", amount=0.25)
    first = to_np(m.weight_mask)
    assert (first == 0).sum() == 20 and set(np.unique(first)) <= {0.0, 1.0}
    assert np.array_equal(to_np(m.weight), to_np(m.weight_orig) * first)
    # a second pruning removes 10 more of the entries still unpruned
    prune.random_unstructured(m, "weight", amount=10)
    second = to_np(m.weight_mask)
    assert (second == 0).sum() == 30 and np.all(second[first == 0] == 0)
    assert isinstance(list(m._forward_pre_hooks.values())[0], prune.PruningContainer)
    # BasePruningMethod.prune: a pruned copy
    t = ember.ones(4, 5)
    out = prune.RandomUnstructured(amount=7).prune(t)
    assert int((out == 0).sum()) == 7 and bool((t == 1).all())


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_random_structured_properties(dim):
    m = ember.nn.Conv2d(4, 6, 3)
    size = m.weight.shape[dim]
    prune.random_structured(m, "weight", amount=0.5, dim=dim)
    mask = np.moveaxis(to_np(m.weight_mask), dim, 0).reshape(size, -1)
    # whole channels: each all 0 or all 1
    assert set(mask.min(axis=1)) | set(mask.max(axis=1)) <= {0.0, 1.0}
    assert np.array_equal(mask.min(axis=1), mask.max(axis=1))
    assert (mask[:, 0] == 0).sum() == round(0.5 * size)
    # an amount of 0 keeps the mask
    prune.random_structured(m, "weight", amount=0, dim=dim)
    assert np.array_equal(np.moveaxis(to_np(m.weight_mask), dim, 0).reshape(size, -1), mask)


def test_remove_and_is_pruned_match_torch(torch):
    e, t = _modules(torch)
    es, ts = ember.nn.Sequential(e), torch.nn.Sequential(t)
    assert not prune.is_pruned(es)
    prune.l1_unstructured(e, "weight", 0.3)
    prune.l1_unstructured(e, "weight", 0.3)
    torch.nn.utils.prune.l1_unstructured(t, "weight", 0.3)
    torch.nn.utils.prune.l1_unstructured(t, "weight", 0.3)
    assert prune.is_pruned(es) and torch.nn.utils.prune.is_pruned(ts)
    assert prune.remove(e, "weight") is e
    torch.nn.utils.prune.remove(t, "weight")
    _assert_pruned_same(e, t)
    assert isinstance(e._parameters["weight"], ember.nn.Parameter)
    assert not prune.is_pruned(es) and not e._forward_pre_hooks
    _same_error(torch, ValueError, lambda lib: lib.nn.utils.prune.remove(
        e if lib is ember else t, "weight"))


def test_amount_validation_matches_torch(torch):
    for amount, exc in [(-1, ValueError), (1.5, ValueError), (-0.1, ValueError),
                        ("half", TypeError), (None, TypeError)]:
        _same_error(torch, exc, lambda lib: lib.nn.utils.prune.L1Unstructured(amount))
        _same_error(torch, exc, lambda lib: lib.nn.utils.prune.RandomStructured(amount))
    e, t = _modules(torch)
    _same_error(torch, ValueError, lambda lib: lib.nn.utils.prune.l1_unstructured(
        e if lib is ember else t, "weight", 31))
    # the failed pruning is rolled back
    assert "weight" in e._parameters and "weight_orig" not in e._parameters
    assert not e._forward_pre_hooks
    _same_error(torch, ValueError, lambda lib: lib.nn.utils.prune.ln_structured(
        e if lib is ember else t, "bias", 1, 2, 0))
    _same_error(torch, IndexError, lambda lib: lib.nn.utils.prune.random_structured(
        e if lib is ember else t, "weight", 1, 2))
    _same_error(torch, ValueError, lambda lib: lib.nn.utils.prune.ln_structured(
        e if lib is ember else t, "weight", 6, 2, 0))


def test_global_and_container_errors_match_torch(torch):
    e, t = _modules(torch)

    def pick(lib):
        return e if lib is ember else t

    _same_error(torch, TypeError, lambda lib: lib.nn.utils.prune.global_unstructured(
        5, lib.nn.utils.prune.L1Unstructured, amount=1))
    _same_error(torch, TypeError, lambda lib: lib.nn.utils.prune.global_unstructured(
        [(pick(lib), "weight")], lib.nn.utils.prune.L1Unstructured, importance_scores=[1],
        amount=1))
    with pytest.raises(TypeError, match='Only "unstructured" PRUNING_TYPE supported'):
        prune.global_unstructured([(e, "weight")], prune.LnStructured, amount=1, n=2)

    def container(lib, add):
        P = lib.nn.utils.prune
        m = P.L1Unstructured(1)
        m._tensor_name = "weight"
        c = P.PruningContainer(m)
        other = add(P)
        c.add_pruning_method(other)
        return c

    def renamed(P):
        m = P.L1Unstructured(1)
        m._tensor_name = "bias"
        return m

    with pytest.raises(TypeError, match="is not a BasePruningMethod subclass"):
        container(ember, lambda P: "x")
    with pytest.raises(ValueError, match="Can only add pruning methods acting on the parameter "
                                         "named 'weight' to PruningContainer .* Found 'bias'"):
        container(ember, renamed)
    assert len(container(ember, lambda P: None)) == 2  # None is accepted, as in PyTorch

    class Odd(prune.BasePruningMethod):
        PRUNING_TYPE = "odd"

        def compute_mask(self, t, default_mask):
            return default_mask

    class NoDim(Odd):
        PRUNING_TYPE = "structured"

    for cls, exc, msg in [(Odd, ValueError, "Unrecognized PRUNING_TYPE odd"),
                          (NoDim, AttributeError, "need to have the attribute `dim` defined")]:
        m = cls()
        m._tensor_name = "w"
        c = prune.PruningContainer(m)
        with pytest.raises(exc, match=msg):
            c.compute_mask(ember.ones(2, 2), ember.ones(2, 2))
    with pytest.raises(TypeError):
        prune.BasePruningMethod()  # abstract

    def two_methods(lib):
        # as in PyTorch, several methods at construction need a _tensor_name the container
        # does not have yet
        P = lib.nn.utils.prune
        lib.nn.utils.prune.PruningContainer(P.Identity(), P.Identity())
    _same_error(torch, AttributeError, two_methods)
    _same_error(torch, AssertionError, lambda lib: lib.nn.utils.prune.CustomFromMask(
        lib.ones(2)).compute_mask(lib.ones(3), lib.ones(3)))
    _same_error(torch, AssertionError, lambda lib: lib.nn.utils.prune.Identity().prune(
        lib.ones(3), importance_scores=lib.ones(2)))


def test_structured_combination_matches_torch(torch):
    """A container's structured method sees only the channels not yet pruned (``_combine_masks``),
    through ``compute_mask`` directly."""
    w = RNG.standard_normal((4, 5)).astype(np.float32)
    prior = np.ones((4, 5), np.float32)
    prior[:, 1] = 0
    prior[2, 3] = 0

    def run(lib, conv):
        P = lib.nn.utils.prune
        first = P.CustomFromMask(conv(prior))
        first._tensor_name = "w"
        second = P.LnStructured(2, 1, dim=1)
        second._tensor_name = "w"
        c = P.PruningContainer(first)
        c.add_pruning_method(second)
        return c.compute_mask(conv(w), conv(prior))

    assert_same(run(ember, from_np), run(torch, lambda a: torch.from_numpy(a.copy())),
                rtol=0, atol=0)
