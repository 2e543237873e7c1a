"""Gradients of the shape and indexing ops against PyTorch's (float64), and gradcheck on a few:
each case builds the same inputs in both libraries, weights the output with the same random
tensor, and compares the gradients of every differentiable input."""
import numpy as np
import pytest

import ember
from helpers import assert_same

_rng = np.random.default_rng(7)


def _arr(*shape):
    return _rng.standard_normal(shape)


def _grads(lib, fn, arrays, consts):
    ins = [lib.tensor(a, dtype=lib.float64, requires_grad=True) for a in arrays]
    out = fn(lib, *ins, *[c(lib) for c in consts])
    outs = out if isinstance(out, (tuple, list)) else [out]
    total = 0
    for i, o in enumerate(outs):
        w = np.random.default_rng(i).standard_normal(tuple(o.shape))
        total = total + (o * lib.tensor(w, dtype=lib.float64)).sum()
    total.backward()
    return [t.grad for t in ins]


def _long(values):
    return lambda lib: lib.tensor(values, dtype=lib.int64)


def _mask(values):
    return lambda lib: lib.tensor(values, dtype=lib.bool)


CASES = {
    "cat": (lambda L, a, b: L.cat([a, b], 1), [_arr(2, 3), _arr(2, 2)], []),
    "stack": (lambda L, a, b: L.stack([a, b], -1), [_arr(2, 3), _arr(2, 3)], []),
    "hstack": (lambda L, a, b: L.hstack([a, b]), [_arr(3), _arr(2)], []),
    "tensor_split": (lambda L, a: L.tensor_split(a, 3, 1), [_arr(2, 7)], []),
    "flip": (lambda L, a: a.flip([0, 1]), [_arr(3, 4)], []),
    "roll": (lambda L, a: a.roll([1, -2], [0, 1]), [_arr(3, 4)], []),
    "rot90": (lambda L, a: a.rot90(3, [0, 1]), [_arr(3, 4)], []),
    "tril": (lambda L, a: a.tril(-1), [_arr(3, 4)], []),
    "repeat": (lambda L, a: a.repeat(2, 1, 3), [_arr(3, 2)], []),
    "tile": (lambda L, a: a.tile((2,)), [_arr(3, 2)], []),
    "repeat_interleave": (lambda L, a, r: a.repeat_interleave(r, 0), [_arr(3, 2)],
                          [_long([1, 0, 3])]),
    "gather": (lambda L, a, i: a.gather(1, i), [_arr(3, 4)], [_long([[0, 0], [3, 1], [2, 2]])]),
    "scatter": (lambda L, a, s, i: a.scatter(0, i, s), [_arr(3, 4), _arr(2, 4)],
                [_long([[0, 1, 2, 0], [2, 0, 1, 1]])]),
    "scatter_add": (lambda L, a, s, i: a.scatter_add(0, i, s), [_arr(3, 4), _arr(2, 4)],
                    [_long([[0, 1, 2, 0], [0, 0, 1, 1]])]),
    "scatter_reduce_sum": (lambda L, a, s, i: a.scatter_reduce(0, i, s, "sum"),
                           [_arr(3, 4), _arr(2, 4)], [_long([[0, 1, 2, 0], [0, 0, 1, 1]])]),
    "scatter_reduce_mean": (lambda L, a, s, i: a.scatter_reduce(0, i, s, "mean",
                                                                include_self=False),
                            [_arr(3, 4), _arr(2, 4)], [_long([[0, 1, 2, 0], [0, 0, 1, 1]])]),
    "scatter_reduce_amax": (lambda L, a, s, i: a.scatter_reduce(0, i, s, "amax"),
                            [_arr(3, 4), _arr(2, 4)], [_long([[0, 1, 2, 0], [0, 0, 1, 1]])]),
    "scatter_reduce_prod": (lambda L, a, s, i: a.scatter_reduce(0, i, s, "prod"),
                            [_arr(3, 4), _arr(2, 4)], [_long([[0, 1, 2, 0], [0, 0, 1, 1]])]),
    "index_select": (lambda L, a, i: a.index_select(1, i), [_arr(3, 4)], [_long([3, 0, 3])]),
    "index_add": (lambda L, a, s, i: a.index_add(0, i, s, alpha=2), [_arr(3, 4), _arr(2, 4)],
                  [_long([2, 2])]),
    "index_copy": (lambda L, a, s, i: a.index_copy(1, i, s), [_arr(3, 4), _arr(3, 2)],
                   [_long([3, 0])]),
    "index_fill": (lambda L, a, i: a.index_fill(1, i, 2.5), [_arr(3, 4)], [_long([1, 2])]),
    "masked_fill": (lambda L, a, m: a.masked_fill(m, 0.5), [_arr(3, 4)],
                    [_mask([True, False, True, False])]),
    "masked_fill_tensor": (lambda L, a, v, m: a.masked_fill(m, v), [_arr(3, 4), _arr()],
                           [_mask([True, False, True, False])]),
    "masked_select": (lambda L, a, m: a.masked_select(m), [_arr(3, 4)],
                      [_mask([True, False, True, True])]),
    "masked_scatter": (lambda L, a, s, m: a.masked_scatter(m, s), [_arr(3, 4), _arr(10)],
                       [_mask([True, False, True, True])]),
    "take": (lambda L, a, i: a.take(i), [_arr(3, 4)], [_long([[0, 11], [5, 5]])]),
    "take_along_dim": (lambda L, a, i: L.take_along_dim(a, i, 1), [_arr(3, 4)],
                       [_long([[0], [3], [1]])]),
    "put": (lambda L, a, s, i: a.put(i, s), [_arr(3, 4), _arr(3)], [_long([1, 7, 11])]),
    "put_accumulate": (lambda L, a, s, i: a.put(i, s, accumulate=True), [_arr(3, 4), _arr(3)],
                       [_long([1, 1, 11])]),
    "diag": (lambda L, a: L.diag(a, 1), [_arr(3)], []),
    "diag_2d": (lambda L, a: L.diag(a, -1), [_arr(3, 4)], []),
    "diag_embed": (lambda L, a: L.diag_embed(a, 1, 0, 2), [_arr(2, 3)], []),
    "diagflat": (lambda L, a: L.diagflat(a), [_arr(2, 2)], []),
    "block_diag": (lambda L, a, b, c: L.block_diag(a, b, c), [_arr(2, 3), _arr(3), _arr()], []),
    "trace": (lambda L, a: a.trace(), [_arr(3, 4)], []),
    "cross": (lambda L, a, b: L.linalg.cross(a, b), [_arr(4, 3), _arr(1, 3)], []),
    "meshgrid": (lambda L, a, b: L.meshgrid(a, b, indexing="xy"), [_arr(3), _arr(2)], []),
    "cartesian_prod": (lambda L, a, b: L.cartesian_prod(a, b), [_arr(3), _arr(2)], []),
    "combinations": (lambda L, a: L.combinations(a, 2), [_arr(4)], []),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradient_matches_pytorch(torch, name):
    fn, arrays, consts = CASES[name]
    e_grads = _grads(ember, fn, arrays, consts)
    t_grads = _grads(torch, fn, arrays, consts)
    for e, t in zip(e_grads, t_grads):
        assert_same(e, t, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("name", ["gather", "scatter_reduce_amax", "index_add", "masked_scatter",
                                  "repeat", "block_diag"])
def test_gradcheck(name):
    fn, arrays, consts = CASES[name]
    ins = tuple(ember.tensor(a, dtype=ember.float64, requires_grad=True) for a in arrays)
    cs = [c(ember) for c in consts]
    assert ember.autograd.gradcheck(lambda *xs: fn(ember, *xs, *cs), ins)


def test_scatter_with_reduce_has_no_derivative(torch):
    """As in PyTorch: scatter(reduce=...) records a node whose backward raises."""
    for lib in (ember, torch):
        x = lib.zeros(3, dtype=lib.float64, requires_grad=True)
        y = x.scatter(0, lib.tensor([0, 1]), lib.ones(2, dtype=lib.float64), reduce="add")
        with pytest.raises(RuntimeError, match="not implemented"):
            y.sum().backward()
