"""Sparse COO tensors against PyTorch: construction, printing and metadata, coalescing and
conversions, the arithmetic, sums and products of sparse inputs, gradients (which keep a sparse
input's layout), nn.Embedding(sparse=True) training with SGD, Adagrad and SparseAdam,
serialization in both directions, PyTorch's errors, and the same kernels on the simulated CUDA
device."""
import copy
import pickle
import warnings

import numpy as np
import pytest

import ember
from helpers import simulated_cuda

# two sparse dims with repeated entries, one dense dim
_IDX = [[0, 2, 1, 2, 0, 3], [1, 0, 3, 0, 1, 2]]
_VAL = np.arange(12, dtype=np.float32).reshape(6, 2) - 5.5


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Sparse invariant checks", UserWarning)
        yield


def pair(torch, idx=_IDX, val=_VAL, size=(4, 4, 2), **kw):
    return (ember.sparse_coo_tensor(idx, val.tolist(), size, **kw),
            torch.sparse_coo_tensor(idx, val.tolist(), size, **kw))


def dense(t):
    return np.asarray((t.to_dense() if t.is_sparse or t.is_sparse_csr else t).detach().tolist())


def same(e, t, check_nnz=True):
    """Equal layout, size, dtype and values; for sparse results the same entries too."""
    assert e.is_sparse == t.is_sparse, (e.layout, t.layout)
    assert tuple(e.shape) == tuple(t.shape) and e.dtype.name == str(t.dtype)[6:]
    np.testing.assert_allclose(dense(e), dense(t), rtol=1e-6, atol=1e-6)
    if e.is_sparse:
        assert (e.sparse_dim(), e.dense_dim()) == (t.sparse_dim(), t.dense_dim())
        if check_nnz:
            assert e._nnz() == t._nnz()
            assert e._indices().tolist() == t._indices().tolist()


# -- construction, metadata, printing -----------------------------------------------------------

def test_construction_metadata_and_repr(torch):
    e, t = pair(torch)
    same(e, t)
    assert e.layout is ember.sparse_coo and e.is_sparse and not ember.ones(1).is_sparse
    assert e.is_coalesced() is t.is_coalesced() is False
    assert e._values().tolist() == t._values().tolist()
    assert repr(e) == repr(t).replace("torch.", "ember.")
    assert e.stride() == t.stride() and e.is_contiguous() is t.is_contiguous()
    for kw in ({}, {"dtype": ember.float64}, {"requires_grad": True}):
        tkw = {k: getattr(torch, v.name) if k == "dtype" else v for k, v in kw.items()}
        e = ember.sparse_coo_tensor([[0, 2]], [1.5, -2.0], (3,), **kw)
        t = torch.sparse_coo_tensor([[0, 2]], [1.5, -2.0], (3,), **tkw)
        assert repr(e) == repr(t).replace("torch.", "ember.")
    # inferred size, integer values, an empty tensor, a zero-dim sparse part
    for args in (([[0, 0], [1, 1]], [1.0, 2.0]), ([[3, 1]], [[1, 2], [3, 4]])):
        e, t = ember.sparse_coo_tensor(*args), torch.sparse_coo_tensor(*args)
        same(e, t)
        assert repr(e) == repr(t).replace("torch.", "ember.")
    empty = ([[], []], [], (2, 3))
    assert repr(ember.sparse_coo_tensor(*empty)) == repr(torch.sparse_coo_tensor(*empty)).replace(
        "torch.", "ember.")
    e = ember.sparse_coo_tensor(ember.tensor([[1, 0]]), ember.tensor([1, 2]), (3,))
    assert e.dtype is ember.int64 and e.to_dense().tolist() == [2, 1, 0]


def test_constructor_errors_match_pytorch(torch):
    cases = [(([[0, 1]], [1.0, 2.0, 3.0], (3,)), {}), (([0, 1], [1.0, 2.0], (3,)), {}),
             (([[0, 1]], [[1.0, 2.0], [3.0, 4.0]], (3, 3)), {}),
             (([[0, 5]], [1.0, 2.0], (3,)), {"check_invariants": True}),
             (([[0, -1]], [1.0, 2.0], (3,)), {"check_invariants": True})]
    for args, kw in cases:
        with pytest.raises(RuntimeError) as te:
            torch.sparse_coo_tensor(*args, **kw)
        with pytest.raises(RuntimeError) as ee:
            ember.sparse_coo_tensor(*args, **kw)
        assert str(ee.value) == str(te.value).split("\n")[0]
    # without check_invariants the indices are not checked, as in PyTorch
    assert ember.sparse_coo_tensor([[0, 5]], [1.0, 2.0], (3,))._nnz() == 2
    with ember.sparse.check_sparse_tensor_invariants():
        with pytest.raises(RuntimeError, match="size is inconsistent with indices"):
            ember.sparse_coo_tensor([[0, 5]], [1.0, 2.0], (3,))
    assert not ember.sparse.check_sparse_tensor_invariants.is_enabled()


def test_a_sparse_tensor_has_no_storage(torch):
    e, t = pair(torch)
    for fn in (lambda x: x.untyped_storage(), lambda x: x.data_ptr(), lambda x: x.numpy(),
               lambda x: x.indices(), lambda x: x.values(), lambda x: x + 1, lambda x: x.pow(0),
               lambda x: x / x, lambda x: x.view(32), lambda x: x.exp(),
               lambda x: x.clone().sin_(), lambda x: x.reshape(-1)):
        with pytest.raises(Exception) as te:
            fn(t)
        with pytest.raises(Exception) as ee:
            fn(e)
        assert type(ee.value) is type(te.value), (ee.value, te.value)
        assert str(ee.value).split(".")[0] == str(te.value).split(".")[0]


# -- coalescing and conversions -----------------------------------------------------------------

def test_coalesce_sums_repeats_in_index_order(torch):
    e, t = pair(torch)
    ec, tc = e.coalesce(), t.coalesce()
    same(ec, tc)
    assert ec.is_coalesced() and ec.coalesce() is ec
    assert ec.indices().tolist() == tc.indices().tolist()
    assert ec.values().tolist() == tc.values().tolist()
    one = ember.sparse_coo_tensor([[1]], [2.0], (3,))
    assert ember._coalesce(one).is_coalesced()


@pytest.mark.parametrize("sparse_dim", [None, 1, 2, 3])
def test_dense_to_sparse_and_back(torch, sparse_dim):
    a = np.zeros((3, 4, 2), np.float32)
    a[0, 1] = [1, 0]
    a[2, 3, 1] = -2
    a[1, 2] = [0.5, 4]
    e, t = ember.tensor(a), torch.tensor(a)
    es = e.to_sparse() if sparse_dim is None else e.to_sparse(sparse_dim)
    ts = t.to_sparse() if sparse_dim is None else t.to_sparse(sparse_dim)
    same(es, ts)
    assert es.is_coalesced() is ts.is_coalesced()
    assert es._values().tolist() == ts._values().tolist()
    assert es.to_dense().tolist() == a.tolist()
    assert es.to_sparse() is es and e.to_dense() is e
    with pytest.raises(RuntimeError, match=r"sparse_dim argument must be in \[0,3\] range"):
        e.to_sparse(4)
    with pytest.raises(RuntimeError, match=r"sparse_dim argument must be in >0 when"):
        e.to_sparse(0)
    scalar = ember.tensor(2.5).to_sparse()
    same(scalar, torch.tensor(2.5).to_sparse())


# -- arithmetic ---------------------------------------------------------------------------------

_OPS = {
    "mul scalar": lambda x, lib: x * 2.5,
    "div scalar": lambda x, lib: x / 4,
    "neg": lambda x, lib: -x,
    "add sparse": lambda x, lib: x + x,
    "add coalesced": lambda x, lib: x.coalesce() + x.coalesce() * 2,
    "sub sparse": lambda x, lib: x - x.coalesce(),
    "mul sparse": lambda x, lib: x * x,
    "mul dense": lambda x, lib: x * lib.arange(32.0).view(4, 4, 2),
    "dense mul": lambda x, lib: lib.arange(32.0).view(4, 4, 2) * x,
    "dense add": lambda x, lib: lib.ones(4, 4, 2) + x,
    "dense sub alpha": lambda x, lib: lib.ones(4, 4, 2).sub(x, alpha=3),
    "sin": lambda x, lib: x.sin(),
    "abs": lambda x, lib: x.abs(),
    "relu": lambda x, lib: x.relu(),
    "pow": lambda x, lib: x.pow(3),
    "sqrt of abs": lambda x, lib: x.abs().sqrt(),
    "clone": lambda x, lib: x.clone(),
    "double": lambda x, lib: x.double(),
    "sum": lambda x, lib: x.sum(),
    "sum dim 0": lambda x, lib: x.sum(0),
    "sum dims 0 1": lambda x, lib: x.sum((0, 1)),
    "sum dense dim": lambda x, lib: x.sum(2),
    "sum keepdim": lambda x, lib: x.sum(1, keepdim=True),
    "sparse.sum": lambda x, lib: lib.sparse.sum(x),
    "sparse.sum dim": lambda x, lib: lib.sparse.sum(x, 1),
    "transpose sparse dims": lambda x, lib: x.transpose(0, 1),
    "zero_": lambda x, lib: x.clone().zero_(),
    "zeros_like": lambda x, lib: lib.zeros_like(x),
    "in-place add": lambda x, lib: x.clone().add_(x, alpha=2),
    "in-place mul": lambda x, lib: x.clone().mul_(3),
    "in-place sin": lambda x, lib: x.coalesce().clone().sin_(),
    "dense add_": lambda x, lib: lib.zeros(4, 4, 2).add_(x, alpha=-1),
    "sparse_mask of dense": lambda x, lib: lib.arange(32.0).view(4, 4, 2).sparse_mask(x),
    "sparse_mask of sparse": lambda x, lib: x.sparse_mask(x.coalesce()),
}
# results whose entries PyTorch merges in a different order (the values are equal)
_SAME_VALUES_ONLY = {"add sparse", "sub sparse", "in-place add", "zeros_like"}


@pytest.mark.parametrize("name", list(_OPS))
def test_op_matches_pytorch(torch, name):
    e, t = pair(torch)
    same(_OPS[name](e, ember), _OPS[name](t, torch), check_nnz=name not in _SAME_VALUES_ONLY)


@pytest.mark.parametrize("case", ["sparse @ dense", "dense @ sparse", "addmm", "sparse.mm",
                                  "sparse.addmm", "t"])
def test_products_match_pytorch(torch, case):
    idx, val = [[0, 2, 1, 2], [1, 0, 3, 0]], np.array([1.0, -2.0, 0.5, 3.0], np.float32)
    e, t = pair(torch, idx, val, (3, 4))
    d = np.linspace(-1, 1, 20, dtype=np.float32).reshape(4, 5)
    fns = {"sparse @ dense": lambda s, lib, m: lib.mm(s, m),
           "dense @ sparse": lambda s, lib, m: lib.mm(m.t(), s.t()),
           "addmm": lambda s, lib, m: lib.addmm(lib.ones(3, 5), s, m, beta=0.5, alpha=2),
           "sparse.mm": lambda s, lib, m: lib.sparse.mm(s, m),
           "sparse.addmm": lambda s, lib, m: lib.sparse.addmm(lib.ones(3, 5), s, m, beta=2.0),
           "t": lambda s, lib, m: s.t()}
    same(fns[case](e, ember, ember.tensor(d)), fns[case](t, torch, torch.tensor(d)))


# -- gradients ----------------------------------------------------------------------------------

_GRADS = {
    "to_dense": lambda s, lib: (s.to_dense() * lib.arange(32.0).view(4, 4, 2)).sum(),
    "sum": lambda s, lib: s.sum(),
    "sparse.sum": lambda s, lib: lib.sparse.sum(s).sum(),
    "sparse.sum dim": lambda s, lib: (lib.sparse.sum(s, 1).to_dense() ** 2).sum(),
    "mul scalar": lambda s, lib: (s * 2).to_dense().sum(),
    "neg": lambda s, lib: s.neg().to_dense().sum(),
    "add": lambda s, lib: ((s + s).to_dense() ** 2).sum(),
    "coalesce values": lambda s, lib: (s.coalesce().values() * 3).sum(),
    "mul dense": lambda s, lib: (lib.arange(32.0).view(4, 4, 2) * s).to_dense().sum(),
    "transpose": lambda s, lib: (s.transpose(0, 1).to_dense() * lib.arange(32.0).view(4, 4, 2)).sum(),
    "dense + sparse": lambda s, lib: (lib.ones(4, 4, 2) + s).pow(2).sum(),
    "double": lambda s, lib: s.double().to_dense().sum(),
    "div": lambda s, lib: (s / 2).to_dense().sum(),
    "round trip": lambda s, lib: (s.to_dense().to_sparse().to_dense() ** 2).sum(),
}


@pytest.mark.parametrize("name", list(_GRADS))
def test_gradient_matches_pytorch(torch, name):
    e, t = pair(torch, requires_grad=True)
    _GRADS[name](e, ember).backward()
    _GRADS[name](t, torch).backward()
    assert e.grad.is_sparse == t.grad.is_sparse
    np.testing.assert_allclose(dense(e.grad), dense(t.grad), rtol=1e-6)


@pytest.mark.parametrize("name", ["mm", "sparse.mm", "values through the constructor"])
def test_product_gradients_match_pytorch(torch, name):
    idx, val = [[0, 2, 1, 2], [1, 0, 3, 0]], np.array([1.0, -2.0, 0.5, 3.0], np.float32)
    d = np.linspace(-1, 1, 20, dtype=np.float32).reshape(4, 5)
    grads = []
    for lib in (ember, torch):
        v = lib.tensor(val, requires_grad=True)
        m = lib.tensor(d, requires_grad=True)
        s = lib.sparse_coo_tensor(lib.tensor(idx), v, (3, 4))
        if name == "values through the constructor":
            s.requires_grad_() if not s.requires_grad else None
            out = lib.mm(s, m)
        else:
            s = s.detach().requires_grad_()
            out = lib.mm(s, m) if name == "mm" else lib.sparse.mm(s, m)
        (out * lib.arange(15.0).view(3, 5)).sum().backward()
        grads.append((v.grad if name == "values through the constructor" else s.grad, m.grad))
    (es, em), (ts, tm) = grads
    assert es.is_sparse == ts.is_sparse
    np.testing.assert_allclose(dense(es), dense(ts), rtol=1e-6)
    np.testing.assert_allclose(dense(em), dense(tm), rtol=1e-6)


# -- training with sparse gradients ---------------------------------------------------------------

@pytest.mark.parametrize("opt,kw", [("SGD", dict(lr=0.1)), ("SGD", dict(lr=0.1, momentum=0.9)),
                                    ("SparseAdam", dict(lr=0.05)),
                                    ("Adagrad", dict(lr=0.1, lr_decay=0.01))])
def test_sparse_embedding_training_matches_pytorch(torch, opt, kw):
    rng = np.random.default_rng(0)
    w = rng.standard_normal((10, 4)).astype(np.float32)
    batches = [rng.integers(0, 10, (3, 5)) for _ in range(4)]
    weights = []
    for lib in (ember, torch):
        emb = lib.nn.Embedding(10, 4, sparse=True, padding_idx=2)
        with lib.no_grad():
            emb.weight.copy_(lib.tensor(w))
        o = getattr(lib.optim, opt)(emb.parameters(), **kw)
        for b in batches:
            o.zero_grad()
            (emb(lib.tensor(b)) ** 2).sum().backward()
            assert emb.weight.grad.is_sparse
            o.step()
        weights.append(emb.weight.detach().tolist())
    np.testing.assert_allclose(weights[0], weights[1], rtol=1e-5, atol=1e-6)


def test_sparse_gradients_accumulate_and_are_refused_where_pytorch_refuses(torch):
    grads = []
    for lib in (ember, torch):
        emb = lib.nn.Embedding(5, 2, sparse=True)
        emb(lib.tensor([[1, 3, 1]])).sum().backward()
        emb(lib.tensor([4])).sum().backward()
        grads.append(emb.weight.grad)
        with pytest.raises(RuntimeError, match="Adam does not support sparse gradients, please "
                                               "consider SparseAdam instead"):
            lib.optim.AdamW(emb.parameters()).step()
        with pytest.raises(RuntimeError, match="RMSprop does not support sparse gradients"):
            lib.optim.RMSprop(emb.parameters()).step()
        with pytest.raises(RuntimeError, match="SparseAdam does not support dense gradients"):
            lin = lib.nn.Linear(2, 2)
            lin(lib.ones(1, 2)).sum().backward()
            lib.optim.SparseAdam(lin.parameters()).step()
    same(*grads)
    assert grads[0].is_coalesced() is grads[1].is_coalesced() is False
    with pytest.raises(RuntimeError, match="scale_grad_by_freq not supported with sparse"):
        ember.nn.Embedding(5, 2, sparse=True, scale_grad_by_freq=True)(
            ember.tensor([1])).sum().backward()


# -- serialization --------------------------------------------------------------------------------

def test_save_and_load_across_libraries(torch, tmp_path):
    e, t = pair(torch)
    ember.save({"s": e.coalesce()}, tmp_path / "e.pt")
    loaded = torch.load(tmp_path / "e.pt")["s"]
    same(e.coalesce(), loaded)
    assert loaded.is_coalesced()
    torch.save({"s": t}, tmp_path / "t.pt")
    for weights_only in (True, False):
        back = ember.load(tmp_path / "t.pt", weights_only=weights_only)["s"]
        same(back, t)
        assert not back.is_coalesced()
    g = pickle.loads(pickle.dumps(e.requires_grad_()))
    same(g, t)
    assert g.requires_grad
    c = copy.deepcopy(e)
    same(c, t)
    c._values().zero_()  # a copy: the original keeps its values
    assert c.requires_grad and dense(e).tolist() == dense(t).tolist()


# -- the simulated CUDA device ------------------------------------------------------------------------

def test_sparse_kernels_on_the_simulated_cuda_device(torch):
    e, t = pair(torch)
    d = np.linspace(-1, 1, 40, dtype=np.float32).reshape(2, 4, 5)
    with simulated_cuda():
        c = e.cuda()
        assert c.is_sparse and c.device.type == "cuda" and c._values().device.type == "cuda"
        assert repr(c).startswith("tensor(indices=tensor([[0, 2, 1, 2, 0, 3],")
        assert "device='cuda:0'" in repr(c)
        same(c.coalesce().cpu(), t.coalesce())
        same((c * 2 + c).cpu(), t * 2 + t, check_nnz=False)
        got = ember.mm(c.sum(2), ember.tensor(d[0]).cuda())
        assert got.device.type == "cuda"
        same(got.cpu(), torch.mm(t.sum(2), torch.tensor(d[0])))
        emb = ember.nn.Embedding(6, 3, sparse=True).cuda()
        emb(ember.tensor([[1, 4, 1]]).cuda()).sum().backward()
        g = emb.weight.grad
        assert g.is_sparse and g.device.type == "cuda"
        assert g.to_dense().cpu().sum(1).tolist() == [0.0, 6.0, 0.0, 0.0, 3.0, 0.0]


def test_low_rank_pca_of_a_sparse_matrix_centres_without_densifying():
    rng = np.random.default_rng(0)
    a = (rng.standard_normal((30, 8)) * (rng.random((30, 8)) < 0.3)).astype(np.float64)
    s = ember.tensor(a).to_sparse()
    exact = np.linalg.svd(a - a.mean(0, keepdims=True), compute_uv=False)
    _, values, _ = ember.pca_lowrank(s, q=8, niter=4)
    np.testing.assert_allclose(values.tolist(), exact, rtol=1e-8)
    _, values, _ = ember.svd_lowrank(s, q=8, niter=4)
    np.testing.assert_allclose(values.tolist(), np.linalg.svd(a, compute_uv=False), rtol=1e-8)


@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_sparse_softmax_and_its_gradient_match_pytorch(torch, log, dim):
    e, t = pair(torch, requires_grad=True)
    weight = np.linspace(-1, 2, 32, dtype=np.float32).reshape(4, 4, 2)
    outs = []
    for s, lib in ((e, ember), (t, torch)):
        fn = lib.sparse.log_softmax if log else lib.sparse.softmax
        # PyTorch 2.13's backward takes dim=-1 for another dim (its gradient then differs from
        # its own dim=2 one and from the dense softmax's): PyTorch runs with dim 2
        out = fn(s, dim if lib is ember else dim % 3)
        (out.to_dense() * lib.tensor(weight)).sum().backward()
        outs.append(out)
    same(outs[0], outs[1])
    assert outs[0].is_coalesced() and e.grad.is_sparse == t.grad.is_sparse
    np.testing.assert_allclose(dense(e.grad), dense(t.grad), rtol=1e-5, atol=1e-6)
    assert ember.sparse.softmax(e.detach(), dim, dtype=ember.float64).dtype is ember.float64



# -- sparse CSR matrices ----------------------------------------------------------------------------

_MAT = np.array([[0, 1.5, 0, -2], [0, 0, 0, 0], [3, 0, 0.5, 0]], np.float32)


def csr_pair(torch, **kw):
    return ember.tensor(_MAT).to_sparse_csr(), torch.tensor(_MAT).to_sparse_csr()


def same_csr(e, t):
    assert e.layout.__reduce__() == str(t.layout)[6:], (e.layout, t.layout)
    assert tuple(e.shape) == tuple(t.shape) and e.dtype.name == str(t.dtype)[6:]
    np.testing.assert_allclose(dense(e), dense(t), rtol=1e-6, atol=1e-6)
    if e.is_sparse_csr:
        for part in ("crow_indices", "col_indices", "values"):
            assert getattr(e, part)().tolist() == getattr(t, part)().tolist(), part


def test_csr_construction_metadata_and_repr(torch):
    e, t = csr_pair(torch)
    same_csr(e, t)
    assert repr(e) == repr(t).replace("torch.", "ember.")
    assert (e.is_sparse, e.is_sparse_csr, e._nnz(), e.sparse_dim(), e.dense_dim()) == (
        t.is_sparse, t.is_sparse_csr, t._nnz(), t.sparse_dim(), t.dense_dim())
    args = ([0, 1, 1, 3], [2, 0, 1], [5.0, -1.0, 2.0])
    e, t = ember.sparse_csr_tensor(*args), torch.sparse_csr_tensor(*args)
    same_csr(e, t)
    e = ember.sparse_csr_tensor(*args, (3, 4), dtype=ember.float64, requires_grad=True)
    t = torch.sparse_csr_tensor(*args, (3, 4), dtype=torch.float64, requires_grad=True)
    assert repr(e) == repr(t).replace("torch.", "ember.")
    # (PyTorch's other unsupported ops on CSR raise "unsupported tensor layout", not its
    # dispatcher's NotImplementedError, which ember gives every op without a CSR kernel)
    for fn in (lambda x: x.numpy(), lambda x: x.untyped_storage(), lambda x: x.view(12)):
        with pytest.raises(Exception) as te:
            fn(t)
        with pytest.raises(Exception) as ee:
            fn(e)
        assert type(ee.value) is type(te.value)
        assert str(ee.value).split(".")[0] == str(te.value).split(".")[0]
    with pytest.raises(RuntimeError, match="col_indices < ncols"):
        ember.sparse_csr_tensor([0, 1], [5], [1.0], (1, 3), check_invariants=True)
    # the transpose of a CSR matrix is a CSC one (tests/test_sparse_compressed.py)
    assert e.t().layout is ember.sparse_csc and t.t().layout is torch.sparse_csc


def test_csr_conversions_match_pytorch(torch):
    e, t = csr_pair(torch)
    same_csr(e.to_sparse(), t.to_sparse())
    same_csr(e.to_sparse().to_sparse_csr(), t.to_sparse().to_sparse_csr())
    same_csr(ember.tensor(_MAT).to_sparse(layout=ember.sparse_csr),
             torch.tensor(_MAT).to_sparse(layout=torch.sparse_csr))
    assert e.to_sparse_csr() is e and e.to_dense().tolist() == _MAT.tolist()


_CSR_OPS = {
    "mul scalar": lambda x, lib: x * 2.5,
    "neg": lambda x, lib: -x,
    "add": lambda x, lib: x + x * 2,
    "mul dense": lambda x, lib: x.mul(lib.arange(12.0).view(3, 4)),
    "dense add": lambda x, lib: lib.ones(3, 4) + x,
    "sin": lambda x, lib: x.sin(),
    "relu": lambda x, lib: x.relu(),
    "double": lambda x, lib: x.double(),
    "clone": lambda x, lib: x.clone(),
    "sum": lambda x, lib: x.sum(),
    "mm": lambda x, lib: lib.mm(x, lib.arange(8.0).view(4, 2)),
    "matmul": lambda x, lib: x @ lib.arange(8.0).view(4, 2),
    "addmm": lambda x, lib: lib.addmm(lib.ones(3, 2), x, lib.arange(8.0).view(4, 2), beta=0.5),
    "sparse_mask": lambda x, lib: lib.arange(12.0).view(3, 4).sparse_mask(x),
}


@pytest.mark.parametrize("name", list(_CSR_OPS))
def test_csr_op_matches_pytorch(torch, name):
    e, t = csr_pair(torch)
    same_csr(_CSR_OPS[name](e, ember), _CSR_OPS[name](t, torch))


def test_csr_ops_pytorch_lacks_keep_the_pattern():
    # (PyTorch 2.13 has no CSR kernel for these: "unsupported tensor layout")
    e = ember.tensor(_MAT).to_sparse_csr()
    for got, want in ((e / 4, _MAT / 4), (e.pow(2), _MAT ** 2)):
        assert got.is_sparse_csr and got.crow_indices().tolist() == e.crow_indices().tolist()
        np.testing.assert_allclose(got.to_dense().numpy(), want)


def test_csr_gradients_match_pytorch(torch):
    grads = []
    for lib in (ember, torch):
        s = lib.tensor(_MAT).to_sparse_csr().requires_grad_()
        (s.to_dense() * lib.arange(12.0).view(3, 4)).sum().backward()
        w = lib.arange(8.0).view(4, 2).requires_grad_()
        s2 = lib.tensor(_MAT).to_sparse_csr().requires_grad_()
        lib.mm(s2, w).pow(2).sum().backward()
        grads.append((s.grad, s2.grad, w.grad))
    for e, t in zip(*grads):
        same_csr(e, t)
    v = ember.tensor([5.0, -1.0, 2.0], requires_grad=True)
    m = ember.sparse_csr_tensor(ember.tensor([0, 1, 1, 3]), ember.tensor([2, 0, 1]), v, (3, 4))
    (m.to_dense() * ember.arange(12.0).view(3, 4)).sum().backward()
    assert v.grad.tolist() == [2.0, 8.0, 9.0]


def test_csr_serialization_across_libraries(torch, tmp_path):
    e, t = csr_pair(torch)
    ember.save({"m": e}, tmp_path / "e.pt")
    same_csr(e, torch.load(tmp_path / "e.pt")["m"])
    torch.save({"m": t}, tmp_path / "t.pt")
    same_csr(ember.load(tmp_path / "t.pt")["m"], t)
    same_csr(pickle.loads(pickle.dumps(e)), t)
    same_csr(copy.deepcopy(e), t)


@pytest.mark.parametrize("mode,kw", [("sum", {}), ("mean", {}), ("sum", {"padding_idx": 2}),
                                     ("sum", {"per_sample_weights": True})])
def test_sparse_embedding_bag_matches_pytorch(torch, mode, kw):
    w = np.random.default_rng(3).standard_normal((10, 3)).astype(np.float32)
    idx, offsets = [1, 2, 3, 1, 4, 7], [0, 2, 5]
    res = []
    for lib in (ember, torch):
        e = lib.nn.EmbeddingBag(10, 3, mode=mode, sparse=True,
                                padding_idx=kw.get("padding_idx"))
        with lib.no_grad():
            e.weight.copy_(lib.tensor(w))
        psw = lib.linspace(0.5, 2, 6) if "per_sample_weights" in kw else None
        out = e(lib.tensor(idx), lib.tensor(offsets), per_sample_weights=psw)
        (out * lib.arange(9.0).view(3, 3)).sum().backward()
        res.append((out, e.weight.grad))
    (eo, eg), (to, tg) = res
    np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), rtol=1e-6)
    same(eg, tg)
    with pytest.raises(ValueError, match="max mode does not support sparse weights"):
        ember.nn.EmbeddingBag(10, 3, mode="max", sparse=True)(ember.tensor([[1, 2]]))


def test_gather_sparse_grad_matches_pytorch(torch):
    grads = []
    for lib in (ember, torch):
        x = lib.arange(6.0).view(2, 3).requires_grad_()
        y = lib.gather(x, 1, lib.tensor([[2, 0], [1, 1]]), sparse_grad=True)
        (y * lib.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
        grads.append(x.grad)
    same(*grads)


def test_factories_with_a_sparse_layout_match_pytorch(torch):
    for make in (lambda lib: lib.zeros(2, 3, layout=lib.sparse_coo),
                 lambda lib: lib.empty(2, 3, dtype=lib.float64, layout=lib.sparse_coo),
                 lambda lib: lib.zeros_like(lib.ones(2, 3), layout=lib.sparse_coo),
                 lambda lib: lib.zeros(3, 4, layout=lib.sparse_csr)):
        e, t = make(ember), make(torch)
        assert e.layout.__reduce__() == str(t.layout)[6:] and e._nnz() == t._nnz() == 0
        assert tuple(e.shape) == tuple(t.shape) and e.dtype.name == str(t.dtype)[6:]
    with pytest.raises(RuntimeError, match=r"full\(\.\.\.\) is not implemented for sparse"):
        ember.ones(2, layout=ember.sparse_coo)


def test_compile_runs_sparse_code_eagerly():
    """ember.compile captures strided tensors: a frame with a sparse input, or an op asked for a
    sparse gradient, runs eagerly (a graph break), with eager's results and sparse gradients."""
    import warnings as w
    ember._dynamo.reset()
    s, d = ember.eye(3).to_sparse(), ember.arange(6.0).view(3, 2)
    with w.catch_warnings():
        w.simplefilter("error", RuntimeWarning)  # no "internal error" fallback
        f = ember.compile(lambda s, d: ember.sparse.mm(s, d) * 2)
        assert f(s, d).tolist() == (d * 2).tolist()
        emb = ember.nn.Embedding(10, 3, sparse=True)
        g = ember.compile(lambda x: emb(x).sum() * 2)
        g(ember.tensor([1, 2])).backward()
        assert emb.weight.grad.is_sparse and emb.weight.grad._nnz() == 2
    ember._dynamo.reset()


def test_type_names_and_dense_sparse_copy_error_match_pytorch(torch):
    e, t = pair(torch)
    assert e.type() == t.type()
    with pytest.raises(RuntimeError) as te:
        torch.ones(4, 4, 2).copy_(t)
    with pytest.raises(RuntimeError) as ee:
        ember.ones(4, 4, 2).copy_(e)
    assert str(ee.value) == str(te.value)


def test_convert_indices_between_coo_and_csr(torch):
    """``_convert_indices_from_coo_to_csr`` (row pointers of sorted row indices) and back, with
    PyTorch's result dtypes (int64 unless ``out_int32``, whatever the input's)."""
    rows, crow, col = [0, 0, 2, 3], [0, 2, 2, 3], [1, 0, 2]
    for dtype in ("int64", "int32"):
        for out_int32 in (False, True):
            mine = ember._convert_indices_from_coo_to_csr(
                ember.tensor(rows, dtype=getattr(ember, dtype)), 5, out_int32=out_int32)
            theirs = torch._convert_indices_from_coo_to_csr(
                torch.tensor(rows, dtype=getattr(torch, dtype)), 5, out_int32=out_int32)
            assert str(mine.dtype)[6:] == str(theirs.dtype)[6:]
            assert mine.tolist() == theirs.tolist()
            for transpose in (False, True):
                mine = ember._convert_indices_from_csr_to_coo(
                    ember.tensor(crow, dtype=getattr(ember, dtype)),
                    ember.tensor(col, dtype=getattr(ember, dtype)), out_int32=out_int32,
                    transpose=transpose)
                theirs = torch._convert_indices_from_csr_to_coo(
                    torch.tensor(crow, dtype=getattr(torch, dtype)),
                    torch.tensor(col, dtype=getattr(torch, dtype)), out_int32=out_int32,
                    transpose=transpose)
                assert str(mine.dtype)[6:] == str(theirs.dtype)[6:]
                assert mine.tolist() == theirs.tolist()


@pytest.mark.parametrize("reduce", [None, "sum", "mean", "max", "amin"])
def test_sparse_mm_of_a_csr_matrix_with_reduce(torch, reduce):
    """``torch.sparse.mm(csr, dense[, reduce])``: values and gradients for both factors (the CSR
    one's is CSR with its pattern; an extremum's goes to the first entry attaining it)."""
    idx = [[0, 0, 1, 3, 3], [1, 2, 0, 0, 2]]
    vals = [1.0, 1.0, 3.0, -2.0, 0.5]
    dense = np.array([[1.0, -2.0], [1.0, 2.0], [1.0, 2.0]], np.float32)  # row 0 ties
    grads = {}
    for lib in (ember, torch):
        a = lib.sparse_coo_tensor(idx, vals, (5, 3)).to_sparse_csr().requires_grad_()
        b = lib.tensor(dense, requires_grad=True)
        out = lib.sparse.mm(a, b) if reduce is None else lib.sparse.mm(a, b, reduce)
        (out * lib.arange(10.0).reshape(5, 2)).sum().backward()
        assert a.grad.layout == lib.sparse_csr
        grads[lib.__name__] = (out.detach().numpy(), b.grad.numpy(), a.grad.values().numpy(),
                               a.grad.col_indices().numpy())
    for mine, theirs in zip(grads["ember"], grads["torch"]):
        np.testing.assert_allclose(mine, theirs, rtol=1e-6)


def test_sparse_mm_reduce_errors(torch):
    for lib in (ember, torch):
        csr = lib.sparse_coo_tensor([[0, 1], [1, 0]], [1.0, 2.0], (2, 2)).to_sparse_csr()
        with pytest.raises(RuntimeError, match="reduce argument must be either sum, prod, mean"):
            lib.sparse.mm(csr, lib.ones(2, 2), "foo")
        with pytest.raises(RuntimeError, match="reduce type of prod has not been enabled"):
            lib.sparse.mm(csr, lib.ones(2, 2), "prod")
        with pytest.raises(RuntimeError, match="to have scalar type Float; but got "
                                               "torch.DoubleTensor"):
            lib.sparse.mm(csr, lib.ones(2, 2, dtype=lib.float64), "mean")
        with pytest.raises(NotImplementedError, match="_sparse_mm_reduce_impl' with arguments "
                                                      "from the 'SparseCPU' backend"):
            lib.sparse.mm(csr.to_sparse(), lib.ones(2, 2), "mean")
