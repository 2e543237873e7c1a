"""The ordered scatter-add in C (``ember._kernels.cpu.add_rows``) against np.add.at (which adds
one element at a time, in index order: ATen's order), on any thread count; and the ops built on
it (embedding's backward, index_add_, index_put_ with accumulate) bit for bit against PyTorch
with heavily repeated indices."""
import numpy as np
import pytest

import ember
from ember._kernels.cpu import add_rows
from helpers import has_c_compiler

pytestmark = pytest.mark.skipif(not has_c_compiler(),
                                reason="no C compiler: NumPy adds the rows (covered elsewhere)")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("rows,d,n", [(50, 256, 4096), (7, 3, 100), (1, 1, 5), (300, 17, 0)])
def test_matches_add_at_in_index_order(monkeypatch, dtype, threads, rows, d, n):
    monkeypatch.setattr(add_rows, "PARALLEL_NUMEL", 0)  # (threads even for small cases)
    previous = ember.get_num_threads()
    ember.set_num_threads(threads)
    rng = np.random.default_rng(rows + n)
    out = rng.standard_normal((rows, d)).astype(dtype)
    idx = rng.integers(0, rows, n)
    src = (rng.standard_normal((n, d)) * rng.choice([1, 1e-8, 1e8], (n, 1))).astype(dtype)
    if n:
        src[0, 0] = np.nan
    want = out.copy()
    np.add.at(want, idx, src)
    try:
        assert add_rows.add_rows(out, idx, src)
    finally:
        ember.set_num_threads(previous)
    np.testing.assert_array_equal(out, want)


def test_refuses_indices_outside_and_leaves_out_alone():
    """(The ops check their indices first; the C code checks them again before any add.)"""
    out = np.zeros((3, 2), np.float32)
    with pytest.raises(ValueError, match=r"indices in \[0, R\)"):
        add_rows._BUILT.get().add_rows(out, np.array([0, 3]), np.ones((2, 2), np.float32), 1)
    assert not add_rows.add_rows(out, np.array([0, -1]), np.ones((2, 2), np.float32))
    assert not out.any()


def test_declines_what_it_does_not_take(monkeypatch):
    assert not add_rows.add_rows(np.zeros((3, 2), np.int64), np.array([0]), np.ones((1, 2)))
    assert not add_rows.add_rows(np.zeros((2, 3), np.float32).T, np.array([0]), np.ones((1, 2)))
    monkeypatch.setenv("EMBER_EAGER_CODEGEN", "0")
    assert not add_rows.add_rows(np.zeros((3, 2)), np.array([0]), np.ones((1, 2)))


@pytest.mark.parametrize("threads", [1, 2])
def test_ops_with_repeated_indices_are_pytorchs_bits(torch, threads):
    """A few values fill the indices (an embedding over real text): embedding's backward,
    index_add_ and index_put_(accumulate=True) equal PyTorch's bit for bit (index_put_ on one
    thread: on more, ATen's accumulates in another order, which differs from its own on one)."""
    torch_threads, ember_threads = torch.get_num_threads(), ember.get_num_threads()
    torch.set_num_threads(threads)
    ember.set_num_threads(threads)
    try:
        rng = np.random.default_rng(threads)
        idx = rng.integers(0, 50, 4096)
        g = rng.standard_normal((4096, 64)).astype(np.float32)
        grads = []
        for lib in (torch, ember):
            w = lib.nn.Embedding(100, 64, padding_idx=3)
            lib.nn.functional.embedding(lib.tensor(idx), w.weight, padding_idx=3).backward(
                lib.tensor(g))
            grads.append(w.weight.grad.numpy())
        np.testing.assert_array_equal(grads[1], grads[0])
        assert not grads[1][3].any()
        base = rng.standard_normal((60, 64)).astype(np.float32)
        i2 = rng.integers(0, 60, 3000)
        src = rng.standard_normal((3000, 64)).astype(np.float32)
        for name, op in (
                ("index_add_", lambda lib, t: t.index_add_(0, lib.tensor(i2), lib.tensor(src))),
                ("index_put_", lambda lib, t: t.index_put_((lib.tensor(i2),), lib.tensor(src),
                                                           accumulate=True))):
            got, want = (op(lib, lib.tensor(base)).numpy() for lib in (ember, torch))
            if name == "index_put_" and threads > 1:
                np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
            else:
                np.testing.assert_array_equal(got, want)
    finally:
        torch.set_num_threads(torch_threads)
        ember.set_num_threads(ember_threads)


@pytest.mark.filterwarnings("ignore:The reduce argument of torch.scatter")
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_reduced_float_scatter_adds_round_as_aten(torch, dtype):
    """How ATen's CPU kernels round repeated adds into one element. Embedding's backward adds
    one index's row at a time, rounding a half or bfloat16 row at every add (scale_grad_by_freq:
    alpha 1 / count, rounded to the dtype, in one multiply-add); index_put_(accumulate=True)
    and index_add_ other than alpha 1 with an int64 index along the first or last dim do too;
    that index_add_ goes to scatter_add, and scatter_add_, scatter_reduce_ (sum, prod, mean)
    and scatter_(reduce=...) accumulate in float and round once (the mean divides the rounded
    sum). float32 checks the order of the adds."""
    rng = np.random.default_rng(0)
    idx = rng.integers(0, 10, 300)
    rows = rng.standard_normal((300, 64)).astype(np.float32)
    base = rng.standard_normal((10, 64)).astype(np.float32)
    index2d = rng.integers(0, 10, (60, 16))
    src2d = (rng.random((60, 16)) + 0.5).astype(np.float32)

    def embedding(lib, scale):
        w = lib.zeros(10, 64, dtype=getattr(lib, dtype), requires_grad=True)
        lib.nn.functional.embedding(lib.tensor(idx), w, padding_idx=3,
                                    scale_grad_by_freq=scale).backward(
            lib.tensor(rows).to(w.dtype))
        return w.grad
    cases = {
        "embedding": lambda lib, t: embedding(lib, False),
        "embedding_freq": lambda lib, t: embedding(lib, True),
        "index_add_dim0": lambda lib, t: t.index_add_(0, lib.tensor(idx), lib.tensor(rows)
                                                     .to(t.dtype)),
        "index_add_last": lambda lib, t: t.T.contiguous().index_add_(
            1, lib.tensor(idx), lib.tensor(rows).to(t.dtype).T.contiguous()),
        "index_add_middle": lambda lib, t: t.reshape(2, 5, 64).index_add_(
            1, lib.tensor(idx[:150] % 5), lib.tensor(rows).to(t.dtype).reshape(2, 150, 64)),
        "index_add_alpha": lambda lib, t: t.index_add_(0, lib.tensor(idx), lib.tensor(rows)
                                                      .to(t.dtype), alpha=2),
        "index_add_int32": lambda lib, t: t.index_add_(0, lib.tensor(idx).int(),
                                                      lib.tensor(rows).to(t.dtype)),
        "index_add_1d": lambda lib, t: t[:, 0].contiguous().index_add_(
            0, lib.tensor(idx), lib.tensor(rows[:, 0]).to(t.dtype)),
        "index_put_accumulate": lambda lib, t: t.index_put_(
            (lib.tensor(idx),), lib.tensor(rows).to(t.dtype), accumulate=True),
        "scatter_add": lambda lib, t: t[:, :16].contiguous().scatter_add_(
            0, lib.tensor(index2d), lib.tensor(src2d).to(t.dtype)),
        "scatter_reduce_prod": lambda lib, t: t[:, :16].contiguous().scatter_reduce_(
            0, lib.tensor(index2d), lib.tensor(src2d).to(t.dtype), "prod",
            include_self=False),
        "scatter_reduce_mean": lambda lib, t: t[:, :16].contiguous().scatter_reduce_(
            0, lib.tensor(index2d), lib.tensor(src2d).to(t.dtype), "mean"),
        "scatter_reduce_add": lambda lib, t: t[:, :16].contiguous().scatter_(
            1, lib.tensor(index2d[:10] % 16), lib.tensor(src2d[:10]).to(t.dtype),
            reduce="add"),
    }
    for name, case in cases.items():
        got, want = (case(lib, lib.tensor(base).to(getattr(lib, dtype))).float().numpy()
                     for lib in (ember, torch))
        np.testing.assert_array_equal(got, want, err_msg=name)
