"""ember.masked.MaskedTensor against torch.masked.MaskedTensor: construction and its checks,
printing, get_data/get_mask/to_tensor, the reductions (full and along dims), unary, binary and
in-place ops, the passthrough shape ops, where/softmax/copies, and gradients through
as_masked_tensor — each the same inputs on both sides, compared by printed form and parts."""

import numpy as np
import pytest
import torch

import ember
from helpers import to_np

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

DATA = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 4 - 2
MASK = (np.arange(24).reshape(2, 3, 4) % 3) != 1


def _pair(data=DATA, mask=MASK):
    return (ember.masked.masked_tensor(ember.tensor(data), ember.tensor(mask)),
            torch.masked.masked_tensor(torch.tensor(data), torch.tensor(mask)))


def _same(e, t):
    """Same type, printed form, data where unmasked and mask."""
    if isinstance(t, (tuple, list)):
        assert type(e) is type(t) and len(e) == len(t)
        for a, b in zip(e, t):
            _same(a, b)
        return
    assert ember.masked.is_masked_tensor(e) == torch.masked.is_masked_tensor(t)
    if not torch.masked.is_masked_tensor(t):
        np.testing.assert_allclose(to_np(e), t.detach().numpy(), rtol=1e-5, atol=1e-6)
        return
    assert repr(e) == repr(t)
    assert e.dtype.name == str(t.dtype).split(".")[-1] and tuple(e.shape) == tuple(t.shape)
    m = t.get_mask().numpy()
    np.testing.assert_array_equal(to_np(e.get_mask()), m)
    np.testing.assert_allclose(to_np(e.get_data())[m], t.get_data().detach().numpy()[m],
                               rtol=1e-5, atol=1e-6)


def test_documented_examples():
    # is_masked_tensor's docstring
    for lib in (ember, torch):
        data = lib.arange(6).reshape(2, 3)
        mask = lib.tensor([[True, False, False], [True, True, False]])
        mt = lib.masked.MaskedTensor(data, mask)
        assert lib.masked.is_masked_tensor(mt) and not lib.masked.is_masked_tensor(data)
    e = ember.masked.MaskedTensor(ember.arange(6).reshape(2, 3),
                                  ember.tensor([[True, False, False], [True, True, False]]))
    t = torch.masked.MaskedTensor(torch.arange(6).reshape(2, 3),
                                  torch.tensor([[True, False, False], [True, True, False]]))
    _same(e, t)
    _same(e.sum(), t.sum())
    _same(e.sum(1), t.sum(1))
    e0, t0 = e.sum(0)[2], t.sum(0)[2]  # a 0-dim, fully masked out result
    assert repr(e0) == repr(t0)


def test_construction_warns_and_checks():
    with pytest.warns(UserWarning, match="prototype stage"):
        ember.masked.masked_tensor(ember.ones(2), ember.tensor([True, False]))
    cases = [
        lambda lib: lib.masked.masked_tensor(lib.ones(2), lib.ones(2)),
        lambda lib: lib.masked.masked_tensor(lib.ones(2, dtype=lib.uint8), lib.ones(2).bool()),
        lambda lib: lib.masked.masked_tensor(lib.ones(2), lib.ones(3).bool()),
        lambda lib: lib.masked.masked_tensor([1.0], lib.ones(1).bool()),
    ]
    for case in cases:
        with pytest.raises(Exception) as want:
            case(torch)
        with pytest.raises(type(want.value)) as got:
            case(ember)
        # ember's dtypes print as ember.<name>
        assert str(got.value) == str(want.value).replace("torch.", "ember.")


def test_parts_and_to_tensor():
    e, t = _pair()
    np.testing.assert_array_equal(to_np(e.to_tensor(-1.0)), t.to_tensor(-1.0).numpy())
    np.testing.assert_array_equal(to_np(e.get_data()), t.get_data().numpy())
    assert e.is_sparse is False and e.layout == ember.strided and e.is_contiguous()


@pytest.mark.parametrize("name", ["sum", "mean", "amax", "amin", "argmax", "argmin", "prod",
                                  "var", "std"])
def test_reductions(name):
    e, t = _pair()
    _same(getattr(e, name)(), getattr(t, name)())
    _same(getattr(ember, name)(e), getattr(torch, name)(t))
    # prod takes one dim (PyTorch's fails on a tuple too)
    for dim in ([1] if name in ("argmax", "argmin", "prod") else [1, (0, 2)]):
        _same(getattr(e, name)(dim), getattr(t, name)(dim))
    _same(getattr(e, name)(2, True), getattr(t, name)(2, True))


def test_norm_fails_as_in_pytorch():
    # torch.norm/Tensor.norm reach the reduction table with p=, which it refuses
    e, t = _pair()
    for call in (lambda lib, x: lib.norm(x), lambda lib, x: x.norm(1)):
        with pytest.raises(TypeError) as want:
            call(torch, t)
        with pytest.raises(TypeError) as got:
            call(ember, e)
        assert str(got.value) == str(want.value)
    _same(ember.ops.aten.norm(e), torch.ops.aten.norm(t))


def test_all_reduction():
    b = DATA > 0
    e, t = _pair(b)
    _same(e.all(), t.all())
    _same(e.all(1), t.all(1))


@pytest.mark.parametrize("name", ["exp", "abs", "neg", "sin", "sigmoid", "sqrt", "floor",
                                  "square", "isnan"])
def test_unary(name):
    e, t = _pair()
    _same(getattr(ember, name)(e), getattr(torch, name)(t))


def test_unary_with_scalars_and_inplace():
    e, t = _pair()
    _same(ember.pow(e, 2), torch.pow(t, 2))
    _same(ember.clamp(e, -1.0, 1.0), torch.clamp(t, -1.0, 1.0))
    e.exp_()
    t.exp_()
    _same(e, t)


def test_binary():
    e, t = _pair()
    e2, t2 = _pair(DATA * 3 + 1)
    for op in ("add", "mul", "div", "sub", "maximum", "eq", "lt", "fmod"):
        _same(getattr(ember, op)(e, e2), getattr(torch, op)(t, t2))
    _same(e + 1.5, t + 1.5)
    _same(e * ember.tensor(DATA), t * torch.tensor(DATA))
    _same(e < e2, t < t2)
    e.add_(e2)
    t.add_(t2)
    _same(e, t)


def test_binary_mask_mismatch():
    e, t = _pair()
    e2, t2 = _pair(DATA, ~MASK)
    with pytest.raises(ValueError) as want:
        t + t2
    with pytest.raises(ValueError) as got:
        e + e2
    assert str(got.value) == str(want.value)


def test_passthrough():
    e, t = _pair()
    _same(e.transpose(0, 2), t.transpose(0, 2))
    _same(e.view(6, 4), t.view(6, 4))
    _same(e[1], t[1])
    _same(e[:, 1:], t[:, 1:])
    _same(e.unsqueeze(1), t.unsqueeze(1))
    _same(e[0].t(), t[0].t())
    _same(ember.cat([e, e]), torch.cat([t, t]))
    _same(ember.stack([e, e], 1), torch.stack([t, t], 1))
    _same(e.split(2, -1), t.split(2, -1))
    _same(e[:, :1].expand(2, 3, 4), t[:, :1].expand(2, 3, 4))


def test_where_softmax_copies():
    e, t = _pair()
    cond = DATA > 0
    _same(ember.where(ember.tensor(cond), e, e * 2), torch.where(torch.tensor(cond), t, t * 2))
    _same(ember.softmax(e, -1), torch.softmax(t, -1))
    _same(e.clone(), t.clone())
    _same(e.detach(), t.detach())
    _same(e.double(), t.double())
    _same(e.transpose(0, 1).contiguous(), t.transpose(0, 1).contiguous())


def test_gradients_through_as_masked_tensor():
    grads = []
    for lib in (ember, torch):
        x = lib.tensor(DATA, requires_grad=True)
        mt = lib.masked.as_masked_tensor(x, lib.tensor(MASK))
        (mt * mt).sum().backward()
        grads.append(x.grad)
    # the plain leaf's gradient is a MaskedTensor of the mask, as in PyTorch
    _same(*grads)


def test_masked_tensor_grad_is_masked():
    grads = []
    for lib in (ember, torch):
        mt = lib.masked.masked_tensor(lib.tensor(DATA), lib.tensor(MASK), requires_grad=True)
        lib.exp(mt).sum().backward()
        grads.append(mt.grad)
    _same(*grads)


def test_sparse_coo_construction_and_printing():
    d = np.array([[0.0, 1.0, 0.0], [2.0, 0.0, 3.0]], dtype=np.float32)
    m = d != 0
    e = ember.masked.masked_tensor(ember.tensor(d).to_sparse(), ember.tensor(m).to_sparse())
    t = torch.masked.masked_tensor(torch.tensor(d).to_sparse(), torch.tensor(m).to_sparse())
    assert repr(e) == repr(t)
    assert e.layout == ember.sparse_coo and e.is_sparse and e.is_sparse_coo()


_SPARSE_OPS = {
    "add": lambda lib, mt: mt + mt, "mul": lambda lib, mt: mt * mt, "div": lambda lib, mt: mt / 2,
    "pow": lambda lib, mt: mt ** 2, "ne": lambda lib, mt: mt != mt, "neg": lambda lib, mt: -mt,
    "sin": lambda lib, mt: lib.sin(mt), "exp": lambda lib, mt: mt.exp(),
    "sum": lambda lib, mt: mt.sum(), "sum_dim": lambda lib, mt: mt.sum(1),
    "amax": lambda lib, mt: mt.amax(), "mean": lambda lib, mt: mt.mean(),
    "to_dense": lambda lib, mt: mt.to_dense(), "clone_add_": lambda lib, mt: mt.clone().add_(mt),
    "where": lambda lib, mt: lib.where(mt.get_mask(), mt, mt * 2),
    "values": lambda lib, mt: mt.values(), "layout": lambda lib, mt: (mt.layout, mt.is_sparse),
}


def _sparse_outcome(lib, layout, name):
    d = [[3.0, 0.0, 0.0], [0.0, 4.0, 5.0]]
    m = [[True, False, False], [False, True, True]]
    conv = {"coo": lambda t: t.to_sparse(), "csr": lambda t: t.to_sparse_csr()}[layout]
    mt = lib.masked.masked_tensor(conv(lib.tensor(d)), conv(lib.tensor(m)))
    try:
        out = _SPARSE_OPS[name](lib, mt)
    except Exception as e:  # noqa: BLE001  (compared with PyTorch's)
        # the first line; PyTorch's 'Could not run' text goes on about custom builds
        return type(e).__name__, str(e).split("\n")[0].split(" This could")[0] \
            .replace(lib.__name__ + ".", "torch.")
    return repr(out).replace(lib.__name__ + ".", "torch.")


@pytest.mark.parametrize("layout", ["coo", "csr"])
@pytest.mark.parametrize("name", sorted(_SPARSE_OPS))
def test_sparse_ops(layout, name):
    """Ops on a MaskedTensor of sparse COO or CSR data: PyTorch's printed results, or its
    exception type and message where it has no kernel (where on sparse, values through
    __torch_dispatch__)."""
    assert _sparse_outcome(ember, layout, name) == _sparse_outcome(torch, layout, name)
