"""``ember.nested``: jagged-layout nested tensors compared with PyTorch's NJT on the same inputs
(construction, metadata, padding, unbind, pointwise, linear, softmax/layer_norm, reductions,
variable-length SDPA, autograd, errors)."""
import numpy as np
import pytest

import ember
import ember.nn.functional as F

LENS = (2, 3, 1)
D = 4


def _arrays(lens=LENS, d=D, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((n, d)).astype(np.float32) for n in lens]


def _both(torch, arrays, requires_grad=False):
    e = ember.nested.nested_tensor([ember.tensor(a) for a in arrays], layout=ember.jagged,
                                   requires_grad=requires_grad)
    t = torch.nested.nested_tensor([torch.tensor(a) for a in arrays], layout=torch.jagged,
                                   requires_grad=requires_grad)
    return e, t


def _close(e, t, atol=1e-5):
    """Same components (or the same dense tensor)."""
    if t.is_nested:
        assert e.is_nested
        assert len(e.unbind()) == len(t.unbind())
        for ep, tp in zip(e.unbind(), t.unbind()):
            np.testing.assert_allclose(ep.detach().numpy(), tp.detach().numpy(), atol=atol,
                                       rtol=1e-5)
    else:
        assert tuple(e.shape) == tuple(t.shape)
        np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), atol=atol, rtol=1e-5)


def _shape_str(s):
    return str(tuple(s)).replace(" ", "")


def test_construction_and_metadata(torch):
    e, t = _both(torch, _arrays())
    assert e.is_nested and t.is_nested
    assert e.layout is ember.jagged and repr(e.layout) == "ember.jagged"
    assert e.dim() == t.dim() == 3 and e.ndim == 3
    assert e.size(0) == t.size(0) == 3 and e.size(2) == t.size(2) == D
    assert e.size(-1) == D
    assert e._ragged_idx == t._ragged_idx == 1
    # the ragged dim is a nested int: printed jN, equal to itself, not to an int
    j = e.shape[1]
    assert str(j).startswith("j") and j == e.size(1) and j != 3
    assert str(e.shape) == f"ember.Size([3, {j}, 4])"
    assert str(e.stride()) == f"({4 * j}, 4, 1)" == f"(4*{j}, 4, 1)"
    assert e.numel() == t.numel() == sum(LENS) * D
    np.testing.assert_array_equal(e.offsets().numpy(), t.offsets().numpy())
    np.testing.assert_allclose(e.values().numpy(), t.values().detach().numpy())
    assert e.values().shape == t.values().shape
    assert e.lengths() is None and t.lengths() is None
    assert e.dtype == ember.float32 and e.device == ember.device("cpu")
    assert e.is_contiguous() and t.is_contiguous()
    assert repr(e) == f"NestedTensor(size=(3, {j}, 4), offsets=tensor([0, 2, 5, 6]), " \
                      "contiguous=True)"
    # dtype conversion at construction, array-likes in the list
    e64 = ember.nested.nested_tensor([[1.0, 2.0], [3.0]], layout=ember.jagged,
                                     dtype=ember.float64)
    t64 = torch.nested.nested_tensor([[1.0, 2.0], [3.0]], layout=torch.jagged,
                                     dtype=torch.float64)
    assert str(e64.dtype)[6:] == str(t64.dtype)[6:] and e64.dim() == t64.dim() == 2
    _close(e64, t64)


def test_shared_offsets_share_the_nested_int(torch):
    e, _ = _both(torch, _arrays())
    other = ember.nested.nested_tensor([ember.ones(n, D) for n in LENS], layout=ember.jagged)
    assert e.shape[1] == e.sin().shape[1]
    assert e.shape[1] != other.shape[1]  # same lengths, different offsets tensor


def test_nested_tensor_from_jagged_and_as_nested_tensor(torch):
    vals = np.random.default_rng(1).standard_normal((6, 3)).astype(np.float32)
    offs = np.array([0, 1, 4, 6])
    e = ember.nested.nested_tensor_from_jagged(ember.tensor(vals), ember.tensor(offs))
    t = torch.nested.nested_tensor_from_jagged(torch.tensor(vals), torch.tensor(offs))
    _close(e, t)
    assert e._get_max_seqlen() == t._get_max_seqlen() == 3
    # lengths alone become offsets
    e2 = ember.nested.nested_tensor_from_jagged(ember.tensor(vals),
                                                lengths=ember.tensor([1, 3, 2]))
    t2 = torch.nested.nested_tensor_from_jagged(torch.tensor(vals),
                                                lengths=torch.tensor([1, 3, 2]))
    np.testing.assert_array_equal(e2.offsets().numpy(), t2.offsets().numpy())
    _close(e2, t2)
    # a dense batch: components of equal length
    dense = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    e3 = ember.nested.as_nested_tensor(ember.tensor(dense), layout=ember.jagged)
    t3 = torch.nested.as_nested_tensor(torch.tensor(dense), layout=torch.jagged)
    _close(e3, t3)
    # a list keeps the autograd history of its tensors
    a = ember.tensor(vals[:2], requires_grad=True)
    nt = ember.nested.as_nested_tensor([a, ember.tensor(vals[2:])], layout=ember.jagged)
    assert not nt.is_leaf
    (nt * 3).values().sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), np.full((2, 3), 3.0))
    with pytest.raises(RuntimeError, match="At least one of offsets or lengths"):
        ember.nested.nested_tensor_from_jagged(ember.tensor(vals))


def test_narrow_with_lengths(torch):
    dense = np.arange(30, dtype=np.float32).reshape(3, 5, 2)
    starts, lens = [0, 1, 2], [2, 3, 1]
    e = ember.nested.narrow(ember.tensor(dense), 1, ember.tensor(starts), ember.tensor(lens),
                            layout=ember.jagged)
    t = torch.nested.narrow(torch.tensor(dense), 1, torch.tensor(starts), torch.tensor(lens),
                            layout=torch.jagged)
    assert (e.lengths() is None) == (t.lengths() is None) is False
    np.testing.assert_array_equal(e.offsets().numpy(), t.offsets().numpy())
    _close(e, t)
    assert not e.is_contiguous()
    for x in (e, t):
        with pytest.raises(RuntimeError, match="not supported for nested tensors with holes"):
            x.to_padded_tensor(-1.0)


def test_to_padded_tensor_and_unbind(torch):
    e, t = _both(torch, _arrays())
    _close(ember.nested.to_padded_tensor(e, 0.0), torch.nested.to_padded_tensor(t, 0.0))
    _close(e.to_padded_tensor(-5.0), t.to_padded_tensor(-5.0))
    _close(e.to_padded_tensor(1.5, output_size=(3, 4, 4)),
           t.to_padded_tensor(1.5, output_size=(3, 4, 4)))
    eu, tu = e.unbind(), t.unbind()
    assert [tuple(x.shape) for x in eu] == [tuple(x.shape) for x in tu] == [(n, D) for n in LENS]


def test_pointwise(torch):
    arrays = _arrays()
    e, t = _both(torch, arrays)
    e2, t2 = ember.nested.nested_tensor([ember.tensor(a) * 2 for a in arrays],
                                        layout=ember.jagged), None
    _close(e.sin(), t.sin())
    _close(F.gelu(e), torch.nn.functional.gelu(t))
    _close(e.exp() - 1, t.exp() - 1)
    _close(e * 3 + e.relu(), t * 3 + t.relu())
    # two jagged tensors with the same offsets
    t2 = torch.nested.nested_tensor_from_jagged(t.values() * 2, t.offsets())
    e2 = ember.nested.nested_tensor_from_jagged(e.values() * 2, e.offsets())
    _close(e * e2 + e2, t * t2 + t2)
    # a dense operand broadcast over the last dim(s)
    w = np.linspace(-1, 1, D).astype(np.float32)
    _close(e * ember.tensor(w), t * torch.tensor(w))
    _close(ember.tensor(w) - e, torch.tensor(w) - t)
    _close(ember.add(e, ember.tensor(w), alpha=2), torch.add(t, torch.tensor(w), alpha=2))
    # different raggedness: refused, as by PyTorch
    other_e = ember.nested.nested_tensor([ember.ones(n, D) for n in LENS], layout=ember.jagged)
    with pytest.raises(RuntimeError, match="cannot call binary pointwise function mul"):
        e * other_e


def test_linear_matmul_softmax_layer_norm(torch):
    e, t = _both(torch, _arrays())
    rng = np.random.default_rng(2)
    w, b = rng.standard_normal((5, D)).astype(np.float32), rng.standard_normal(5).astype(
        np.float32)
    _close(F.linear(e, ember.tensor(w), ember.tensor(b)),
           torch.nn.functional.linear(t, torch.tensor(w), torch.tensor(b)))
    _close(e @ ember.tensor(w.T), t @ torch.tensor(w.T))
    _close(ember.matmul(e, ember.tensor(w.T)), torch.matmul(t, torch.tensor(w.T)))
    _close(F.softmax(e, dim=-1), torch.nn.functional.softmax(t, dim=-1))
    _close(e.log_softmax(2), t.log_softmax(2))
    lw, lb = rng.standard_normal(D).astype(np.float32), rng.standard_normal(D).astype(
        np.float32)
    _close(F.layer_norm(e, (D,), ember.tensor(lw), ember.tensor(lb)),
           torch.nn.functional.layer_norm(t, (D,), torch.tensor(lw), torch.tensor(lb)))
    layer = ember.nn.Linear(D, 3)
    assert layer(e).shape[1] == e.shape[1] and layer(e).size(2) == 3


def test_sum_mean(torch):
    e, t = _both(torch, _arrays())
    _close(e.sum(dim=-1), t.sum(dim=-1))
    _close(e.mean(dim=2, keepdim=True), t.mean(dim=2, keepdim=True))
    _close(e.sum(dim=1), t.sum(dim=1))
    _close(e.mean(dim=1), t.mean(dim=1))
    _close(ember.sum(e, (0, 1)), torch.sum(t, (0, 1)))
    _close(e.sum(), t.sum())
    with pytest.raises(RuntimeError):
        t.sum(dim=0)
    with pytest.raises(RuntimeError, match="batch dimension but not the ragged"):
        e.sum(dim=0)


def test_transpose_and_sdpa(torch):
    rng = np.random.default_rng(3)
    H, Dh, lens = 2, 4, (3, 1, 4)
    qkv = [[rng.standard_normal((n, H, Dh)).astype(np.float32) for n in lens] for _ in range(3)]
    e_in = [ember.nested.nested_tensor([ember.tensor(a) for a in x], layout=ember.jagged,
                                       requires_grad=True) for x in qkv]
    t_in = [torch.nested.nested_tensor([torch.tensor(a) for a in x], layout=torch.jagged,
                                       requires_grad=True) for x in qkv]
    eq, ek, ev = (x.transpose(1, 2) for x in e_in)
    tq, tk, tv = (x.transpose(1, 2) for x in t_in)
    assert eq._ragged_idx == tq._ragged_idx == 2
    assert _shape_str(eq.shape).replace(str(eq.shape[2]), "j") == \
        _shape_str(tq.shape).replace(str(tq.shape[2]), "j")
    e_out = F.scaled_dot_product_attention(eq, ek, ev)
    t_out = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv)
    assert e_out._ragged_idx == 2 and e_out.shape[2] == eq.shape[2]
    e_out, t_out = e_out.transpose(1, 2), t_out.transpose(1, 2)
    _close(e_out, t_out)
    # per sequence: plain attention on each component
    for i, n in enumerate(lens):
        q, k, v = (ember.tensor(x[i]).transpose(0, 1) for x in qkv)
        ref = F.scaled_dot_product_attention(q, k, v).transpose(0, 1)
        np.testing.assert_allclose(e_out.unbind()[i].detach().numpy(), ref.numpy(), atol=1e-5)
    # gradients to every input's values
    e_out.to_padded_tensor(0.0).pow(2).sum().backward()
    t_out.to_padded_tensor(0.0).pow(2).sum().backward()
    for ex, tx in zip(e_in, t_in):
        _close(ex.grad, tx.grad, atol=1e-4)
    with pytest.raises(RuntimeError, match="No viable backend"):
        F.scaled_dot_product_attention(eq, ek, ev, is_causal=True)
    with pytest.raises(ValueError, match="Masks are not yet supported"):
        F.scaled_dot_product_attention(eq, ek, ev, attn_mask=ember.ones(2, 2))


def test_gradients(torch):
    arrays = _arrays()
    e, t = _both(torch, arrays, requires_grad=True)
    rng = np.random.default_rng(4)
    w = rng.standard_normal((3, D)).astype(np.float32)
    g = rng.standard_normal(D).astype(np.float32)
    lw = rng.standard_normal(3).astype(np.float32)
    ew, tw = ember.tensor(w, requires_grad=True), torch.tensor(w, requires_grad=True)
    eg, tg = ember.tensor(g, requires_grad=True), torch.tensor(g, requires_grad=True)
    elw, tlw = ember.tensor(lw, requires_grad=True), torch.tensor(lw, requires_grad=True)

    def run(lib, x, w, gamma, lnw):
        Fn = lib.nn.functional
        y = (x * gamma).sin() + x.exp() * 0.5
        y = Fn.layer_norm(Fn.linear(y, w), (3,), lnw)
        p = Fn.softmax(y, -1)
        # (PyTorch's NJT has no log_softmax backward: log of softmax there)
        y = p * (Fn.log_softmax(y, -1) if lib is ember else p.log())
        if lib is ember:
            return y.sum(dim=-1).sum(dim=1).pow(2).sum() + y.mean(dim=1).sum()
        # PyTorch's NJT has no backward for sum/mean over the ragged dim: the same through
        # padding (zeros add nothing) and the components
        means = lib.stack([c.mean(0) for c in y.unbind()])
        return y.to_padded_tensor(0.0).sum(-1).sum(1).pow(2).sum() + means.sum()

    run(ember, e, ew, eg, elw).backward()
    run(torch, t, tw, tg, tlw).backward()
    assert e.grad.is_nested and e.grad.shape == e.shape
    _close(e.grad, t.grad, atol=1e-4)
    for ex, tx in ((ew, tw), (eg, tg), (elw, tlw)):
        np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), atol=1e-4, rtol=1e-4)
    # unbind and to_padded_tensor carry gradients to the values
    e.grad = None
    (e.unbind()[1] * 2).sum().backward()
    np.testing.assert_allclose(e.grad.values().numpy()[2:5], np.full((3, D), 2.0))
    np.testing.assert_allclose(e.grad.values().numpy()[:2], 0.0)


def test_clone_detach_to(torch):
    e, t = _both(torch, _arrays(), requires_grad=True)
    c = e.clone()
    assert c.is_nested and c.grad_fn is not None and c.shape == e.shape
    _close(c, t.clone())
    d = e.detach()
    assert not d.requires_grad and d.is_nested and d.shape == e.shape
    e64 = e.to(ember.float64)
    assert e64.dtype == ember.float64 and e64.values().dtype == ember.float64
    _close(e64, t.to(torch.float64))
    x = ember.nested.nested_tensor([ember.ones(2, 2), ember.ones(1, 2)], layout=ember.jagged)
    assert not x.requires_grad
    x.requires_grad_()
    assert x.requires_grad and x.is_leaf


def test_masked_select(torch):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    m = x % 3 != 0
    e = ember.nested.masked_select(ember.tensor(x), ember.tensor(m))
    t = torch.nested.masked_select(torch.tensor(x), torch.tensor(m))
    np.testing.assert_array_equal(e.offsets().numpy(), t.offsets().numpy())
    _close(e, t)


def test_errors(torch):
    e, t = _both(torch, _arrays())
    with pytest.raises(NotImplementedError, match="jagged"):
        ember.nested.nested_tensor([ember.ones(2)])  # PyTorch's default strided layout
    with pytest.raises(NotImplementedError, match="jagged"):
        ember.nested.as_nested_tensor([ember.ones(2)], layout=ember.strided)
    # an op with no jagged kernel names itself
    with pytest.raises(NotImplementedError, match="aten.cumsum"):
        ember.cumsum(e, 2)
    with pytest.raises(NotImplementedError, match="aten.cumsum"):
        torch.cumsum(t, 2)
    with pytest.raises(RuntimeError, match="softmax\\(\\): not supported for NestedTensor on "
                                           "dim=0"):
        F.softmax(e, 0)
    with pytest.raises(RuntimeError, match="layer_norm"):
        F.layer_norm(ember.nested.nested_tensor_from_jagged(e.values().view(-1),
                                                            e.offsets() * D), (D,))
    with pytest.raises(RuntimeError, match="only supported for NestedTensor on dim=0"):
        e.unbind(1)
    with pytest.raises(RuntimeError, match="Cannot construct a nested tensor from an empty"):
        ember.nested.nested_tensor([], layout=ember.jagged)
    with pytest.raises(RuntimeError, match="only allows for a single ragged dimension"):
        ember.nested.nested_tensor([ember.ones(2, 3), ember.ones(3, 2)], layout=ember.jagged)
    with pytest.raises(RuntimeError, match="Cannot convert the nested int"):
        int(e.shape[1])


def test_compile_runs_jagged_code_eagerly():
    """ember.compile captures strided tensors: a frame with a jagged input runs eagerly (a
    graph break, not an internal error)."""
    import warnings
    ember._dynamo.reset()
    nt = ember.nested.nested_tensor([ember.ones(2, 4), ember.ones(3, 4)], layout=ember.jagged)
    lin = ember.nn.Linear(4, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        out = ember.compile(lambda t: lin(t).relu())(nt)
    expected = [lin(ember.ones(n, 4)).relu() for n in (2, 3)]
    assert all(ember.equal(a, b) for a, b in zip(out.unbind(), expected))
    ember._dynamo.reset()
