"""vmap of as_strided, as_strided_copy and as_strided_scatter: each sample's sizes, strides and
storage offset address that sample's own memory, as in PyTorch's functorch rule (compared with
``torch.func.vmap``), PyTorch's vmap errors for views that leave the sample, and
as_strided_scatter (which PyTorch's vmap refuses) against a loop over the samples."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _both(fn, *arrays, in_dims=0):
    """fn under vmap in ember and in torch: the two results as numpy, or the two errors."""
    outs = []
    for lib in (ember, torch):
        args = [lib.tensor(a) for a in arrays]
        try:
            r = lib.func.vmap(lambda *a: fn(lib, *a), in_dims=in_dims)(*args)
            outs.append(r.detach().numpy().copy())
        except Exception as e:  # noqa: BLE001
            outs.append((type(e).__name__, str(e).replace("torch.", "ember.")))
    return outs


X = np.arange(12.).reshape(2, 6)
VIEWS = {
    "offset": lambda lib, t: t.as_strided((2, 2), (1, 2), 1),
    "no offset": lambda lib, t: t.as_strided((2, 2), (1, 2)),
    "of a slice": lambda lib, t: t[1:].as_strided((2, 2), (1, 2), 2),
    "copy": lambda lib, t: lib.as_strided_copy(t, (3,), (2,), 1),
    "empty": lambda lib, t: t.as_strided((0, 2), (1, 2), 40),
    "past the sample": lambda lib, t: t.as_strided((2, 2), (1, 2), 4),
    "before the sample": lambda lib, t: t[1:].as_strided((2, 2), (1, 2), 0),
    "negative offset": lambda lib, t: t.as_strided((2, 2), (1, 2), -1),
    "lengths": lambda lib, t: t.as_strided((2, 2), (1,)),
    "negative stride": lambda lib, t: t.as_strided((2, 2), (-1, 2), 3),
}


@pytest.mark.parametrize("name", list(VIEWS))
def test_as_strided_matches_torch_func(name):
    e, t = _both(VIEWS[name], X)
    if isinstance(t, tuple):
        assert e == t
    else:
        np.testing.assert_array_equal(e, t)


def test_batch_dim_not_in_front_and_nested():
    y = np.arange(12.).reshape(6, 2)
    e, t = _both(VIEWS["offset"], y, in_dims=1)  # batch stride 1: samples overlap, as torch's
    np.testing.assert_array_equal(e, t)
    x3 = np.arange(24.).reshape(2, 2, 6)
    for dims in (0, 1):
        outs = []
        for lib in (ember, torch):
            f = lib.func.vmap(lib.func.vmap(lambda s: s.as_strided((2,), (2,), 1)), in_dims=dims)
            outs.append(f(lib.tensor(x3)).numpy())
        np.testing.assert_array_equal(*outs)
    e, t = _both(lambda lib, s: s.as_strided((2, 2), (1, 2), 0), np.zeros((2, 0)))
    assert e == t and "`tensor` has no storage" in e[1]


def test_as_strided_is_a_view_and_differentiable():
    x = ember.arange(12., dtype=ember.float64).reshape(2, 6)
    base = x.clone()
    ember.func.vmap(lambda t: t.as_strided((2,), (2,), 1).mul_(10))(base)
    want = x.clone()
    for i in range(2):
        want[i, 1] *= 10
        want[i, 3] *= 10
    np.testing.assert_array_equal(base.numpy(), want.numpy())
    g = ember.func.vmap(ember.func.grad(lambda t: (t.as_strided((2, 2), (1, 2), 1) ** 2).sum()))(x)
    tg = torch.func.vmap(torch.func.grad(lambda t: (t.as_strided((2, 2), (1, 2), 1) ** 2).sum()))(
        torch.tensor(x.numpy()))
    np.testing.assert_allclose(g.numpy(), tg.numpy())


def _scatter_loop(self_, src, in_dims, size, stride, offset):
    n = (self_ if in_dims[0] is not None else src).shape[in_dims[0] or in_dims[1] or 0]
    outs = []
    for i in range(n):
        a = self_.select(in_dims[0], i) if in_dims[0] is not None else self_
        b = src.select(in_dims[1], i) if in_dims[1] is not None else src
        outs.append(ember.as_strided_scatter(a, b, size, stride, offset))
    return ember.stack(outs)


@pytest.mark.parametrize("case", [
    ((2, 6), 0, (2, 2, 2), 0, (2, 2), (1, 2), 1),
    ((6, 2), 1, (2, 2, 2), 0, (2, 2), (1, 2), 1),       # batch dim inside the sample's memory
    ((6,), None, (2, 3), 0, (3,), (2,), None),           # unbatched self, batched src
    ((2, 6), 0, (3,), None, (3,), (2,), 1),              # batched self, unbatched src
    ((2, 3, 4), 0, (2, 2), 0, (2,), (5,), 2),
], ids=["front", "inner", "self unbatched", "src unbatched", "3d"])
def test_as_strided_scatter_matches_loop(case):
    ss, sd, rs, rd, size, stride, off = case
    rng = np.random.default_rng(0)
    self_ = ember.tensor(rng.standard_normal(ss))
    src = ember.tensor(rng.standard_normal(rs))
    got = ember.func.vmap(lambda a, b: ember.as_strided_scatter(a, b, size, stride, off),
                          in_dims=(sd, rd))(self_, src)
    want = _scatter_loop(self_, src, (sd, rd), size, stride, off)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_as_strided_scatter_transposed_sample_matches_loop():
    # each sample a transposed (dense, not contiguous) matrix: its clone keeps that layout
    self_ = ember.arange(24., dtype=ember.float64).reshape(2, 4, 3).transpose(1, 2)
    src = -ember.ones(2, 2, dtype=ember.float64)
    f = lambda a, b: ember.as_strided_scatter(a, b, (2,), (4,), 1)  # noqa: E731
    got = ember.func.vmap(f)(self_, src)
    want = ember.stack([f(self_[i], src[i]) for i in range(2)])
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_as_strided_scatter_errors_and_grad():
    self_ = ember.zeros(2, 6, dtype=ember.float64)
    with pytest.raises(RuntimeError, match="out of bounds for storage of size 48"):
        ember.func.vmap(lambda a: ember.as_strided_scatter(a, ember.ones(2, 2, dtype=a.dtype),
                                                           (2, 2), (1, 2), 3))(self_)
    with pytest.raises(RuntimeError, match=r"src size = \[3\], slice size = \[2\]"):
        ember.func.vmap(lambda a: ember.as_strided_scatter(a, ember.ones(3, dtype=a.dtype),
                                                           (2,), (1,), 0))(self_)
    src = ember.randn(2, 3, dtype=ember.float64)

    def loss(a, b):
        return (ember.as_strided_scatter(a, b, (3,), (2,), 1) ** 2 * ember.arange(
            6., dtype=ember.float64)).sum()
    got = ember.func.vmap(ember.func.grad(loss, argnums=(0, 1)))(self_ + 1, src)
    want = [ember.func.grad(loss, argnums=(0, 1))(self_[i] + 1, src[i]) for i in range(2)]
    for k in range(2):
        np.testing.assert_allclose(got[k].numpy(), ember.stack([w[k] for w in want]).numpy())
