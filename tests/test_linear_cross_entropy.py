"""F.linear_cross_entropy and nn.LinearCrossEntropyLoss (PyTorch 2.13): the chunked path
against PyTorch's numbers and gradients, its options, and its one-backward rule."""
import numpy as np
import pytest

import ember

RS = np.random.RandomState(0)
X, W, B = RS.randn(7, 4), RS.randn(9, 4), RS.randn(9)
T = RS.randint(0, 9, 7)
T[2] = -100


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("chunk", [1, 3, 7])
@pytest.mark.parametrize("extras", ["plain", "bias_and_class_weight"])
def test_chunked_matches_pytorch(torch, reduction, chunk, extras):
    results = []
    for lib in (ember, torch):
        x, w = lib.tensor(X, requires_grad=True), lib.tensor(W, requires_grad=True)
        kw = {}
        if extras != "plain":
            kw = dict(linear_bias=lib.tensor(B, requires_grad=True),
                      weight=lib.tensor(np.linspace(0.5, 2, 9)))
        opts = lib.nn.LinearCrossEntropyOptions(batch_chunk_size=chunk)
        out = lib.nn.functional.linear_cross_entropy(x, w, lib.tensor(T), reduction=reduction,
                                                     options=opts, **kw)
        (out * lib.arange(1.0, 1.0 + out.numel(), dtype=out.dtype).reshape(out.shape)).sum() \
            .backward()
        grads = [x.grad, w.grad] + ([kw["linear_bias"].grad] if kw else [])
        results.append([out.detach().numpy()] + [g.numpy() for g in grads])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)


def test_second_backward_needs_allow_retain_graph():
    x = ember.tensor(X, requires_grad=True)
    out = ember.nn.functional.linear_cross_entropy(
        x, ember.tensor(W), ember.tensor(T),
        options=ember.nn.LinearCrossEntropyOptions(batch_chunk_size=3))
    out.backward(retain_graph=True)
    with pytest.raises(RuntimeError, match="chunked backward called twice"):
        out.backward()
    x.grad = None
    out = ember.nn.functional.linear_cross_entropy(
        x, ember.tensor(W), ember.tensor(T),
        options=ember.nn.LinearCrossEntropyOptions(batch_chunk_size=3, allow_retain_graph=True))
    out.backward(retain_graph=True)
    first = x.grad.clone()
    out.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * first.numpy())


@pytest.mark.parametrize("fields", [dict(), dict(batch_chunk_size=5),
                                    dict(chunking_method="aspect_ratio"),
                                    dict(chunking_method="aspect_ratio:4"),
                                    dict(chunking_method=None)])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_options_resolve_like_pytorch(torch, fields, dtype):
    ours = ember.nn.LinearCrossEntropyOptions(**fields)._adjust(
        100, 16, 1000, getattr(ember, dtype), ember.device("cpu"))
    theirs = torch.nn.LinearCrossEntropyOptions(**fields)._adjust(
        100, 16, 1000, getattr(torch, dtype), torch.device("cpu"))
    assert (ours.batch_chunk_size, ours.acc_policy, ours.chunking_method) == \
        (theirs.batch_chunk_size, theirs.acc_policy, theirs.chunking_method)
    assert str(ours.acc_dtype).split(".")[1] == str(theirs.acc_dtype).split(".")[1]


@pytest.mark.parametrize("fields,message", [
    (dict(acc_policy="fast"), "invalid acc_policy: 'fast'"),
    (dict(chunking_method="rows"), "invalid chunking_method: 'rows'"),
    (dict(batch_chunk_size=0), "batch_chunk_size must be positive int or None, got 0")])
def test_options_validation_matches_pytorch(torch, fields, message):
    for lib in (ember, torch):
        with pytest.raises(ValueError, match=message):
            lib.nn.LinearCrossEntropyOptions(**fields)


def test_module_matches_pytorch(torch):
    torch.manual_seed(0)
    theirs = torch.nn.LinearCrossEntropyLoss(4, 3, out_features=(2,), bias=True)
    ours = ember.nn.LinearCrossEntropyLoss(4, 3, out_features=(2,), bias=True)
    ours.load_state_dict({k: ember.tensor(v.detach().numpy())
                          for k, v in theirs.state_dict().items()})
    x, t = RS.randn(5, 4).astype(np.float32), RS.randint(0, 3, (5, 2))
    np.testing.assert_allclose(ours(ember.tensor(x), ember.tensor(t)).item(),
                               theirs(torch.tensor(x), torch.tensor(t)).item(), rtol=1e-6)
