"""ember._inductor.decomposition: the decompositions of core ops that Inductor traces with
(softmax, log_softmax, gelu, layer/group norm forward and backward, embedding's backward)
equal the eager kernels (values, dtypes, NaN/inf, gradients), and a graph traced with
``select_decomp_table()`` holds core ops only."""
import itertools
import math
import operator

import pytest

import ember
import ember.nn.functional as F
from ember._decomp import core_aten_decompositions, decomposition_table, is_core
from ember._inductor.decomposition import decompositions, select_decomp_table
from ember.fx.experimental.proxy_tensor import make_fx

aten = ember.ops.aten
nan, inf = float("nan"), float("inf")

NEW = (aten._softmax.default, aten._log_softmax.default, aten.gelu.default,
       aten.native_layer_norm.default, aten.native_layer_norm_backward.default,
       aten.native_group_norm.default, aten.native_group_norm_backward.default,
       aten.embedding_dense_backward.default, aten.elu.default, aten.leaky_relu.default,
       aten.hardtanh.default, aten.var.dim, aten.index_select.default,
       aten.max_pool2d_with_indices_backward.default)
# decomposed in ember._decomp but kept whole in Inductor's table until it lowers indexing
KEPT_WHOLE = (aten.embedding_dense_backward.default, aten.index_select.default,
              aten.max_pool2d_with_indices_backward.default)
FLOATS = (ember.float32, ember.float64)
_TOL = {ember.float64: (1e-10, 1e-12), ember.float32: (1e-5, 1e-6),
        ember.float16: (1e-3, 1e-3), ember.bfloat16: (1e-2, 1e-2)}


def _r(*shape, dtype=ember.float64, seed=[0]):
    seed[0] += 1
    g = ember.Generator().manual_seed(seed[0])
    return ember.randn(*shape, generator=g, dtype=ember.float64).to(dtype)


def _close(want, got, what=""):
    """Same structure, dtypes, shapes; floats within the dtype's tolerance with NaN where the
    kernel has NaN and infinities equal."""
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(want) == len(got), what
        for i, (a, b) in enumerate(zip(want, got)):
            _close(a, b, f"{what}[{i}]")
        return
    if want is None:
        assert got is None, what
        return
    assert got.dtype == want.dtype, (what, want.dtype, got.dtype)
    assert tuple(got.shape) == tuple(want.shape), (what, want.shape, got.shape)
    if not want.is_floating_point():
        assert ember.equal(want, got), what
        return
    rtol, atol = _TOL[want.dtype]
    assert ember.equal(ember.isnan(want), ember.isnan(got)), (what, want, got)
    assert ember.allclose(want, got, rtol=rtol, atol=atol, equal_nan=True), (what, want, got)


def _decomp(op, *args, **kwargs):
    return decomposition_table[op](*args, **kwargs)


# ---------------------------------------------------------------------------------------------
# the table

def test_table_is_core_plus_inductor_decompositions():
    table = select_decomp_table()
    assert table is decompositions
    core = core_aten_decompositions()
    assert all(table[op] is fn for op, fn in core.items())
    inductor = [op for op in NEW if op not in KEPT_WHOLE]
    for op in inductor:
        assert is_core(op) and op not in core
        assert table[op] is decomposition_table[op]
    assert set(table) == set(core) | set(inductor)


def test_every_core_decomposition_is_tested_here():
    """tests/test_decomp.py tests the decompositions of non-core ops; this file those of core
    ops, every one of them (the NEW list, each used by a test below)."""
    assert {op for op in decomposition_table if is_core(op)} == set(NEW)


def test_table_names_are_pytorchs():
    torch = pytest.importorskip("torch")
    from torch._inductor.decomposition import select_decomp_table as torch_table
    names = {str(op) for op in torch_table()}
    for op in NEW:
        assert str(op) in names, op


# ---------------------------------------------------------------------------------------------
# softmax, log_softmax

SPECIAL = [[1., nan, 2., 0.], [-inf] * 4, [inf, 1., 2., 0.], [inf, inf, 0., 1.],
           [-inf, 0., 1., -inf], [1e30, -1e30, 0., 3.], [-1e4, -1e4 - 1, -1e4 + 2, -1e4]]


@pytest.mark.parametrize("op", [aten._softmax.default, aten._log_softmax.default], ids=str)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_softmax_values(op, dtype):
    cases = [(_r(3, 5, dtype=dtype), 1), (_r(3, 5, dtype=dtype), 0),
             (_r(2, 3, 4, dtype=dtype), -2), (_r(2, 3, 4, dtype=dtype), 2),
             (_r(4, 3, dtype=dtype).t(), 1),  # not contiguous
             (ember.tensor(SPECIAL, dtype=dtype), 1), (ember.tensor(SPECIAL, dtype=dtype), 0),
             (ember.tensor(2.5, dtype=dtype), 0), (_r(3, 0, dtype=dtype), 1),
             (_r(0, 3, dtype=dtype), 1)]
    for x, dim in cases:
        want, got = op(x, dim, False), _decomp(op, x, dim, False)
        _close(want, got, f"{op} {x.shape} dim={dim}")
        assert got.is_contiguous()  # as the kernel's result


@pytest.mark.parametrize("op", [aten._softmax.default, aten._log_softmax.default], ids=str)
@pytest.mark.parametrize("dtype", [ember.float16, ember.bfloat16], ids=str)
def test_softmax_low_precision_computes_in_float32(op, dtype):
    x = ember.cat([_r(6, 9, dtype=dtype) * 4, ember.tensor([SPECIAL[0] * 2 + [0.]], dtype=dtype)])
    want, got = op(x, 1, False), _decomp(op, x, 1, False)
    _close(want, got, str(op))
    # one rounding at the end: the float32 result rounded
    ref = op(x.float(), 1, False).to(dtype)
    assert ember.equal(ember.isnan(got), ember.isnan(ref))
    assert ember.allclose(got.float(), ref.float(), rtol=0, atol=0, equal_nan=True)


def test_softmax_half_to_float():
    torch = pytest.importorskip("torch")
    x = _r(3, 6, dtype=ember.float16)
    for op, tname in ((aten._softmax.default, "_softmax"),
                      (aten._log_softmax.default, "_log_softmax")):
        got = _decomp(op, x, 1, True)
        assert got.dtype == ember.float32
        # the eager CPU kernel refuses half_to_float; the float32 computation is the spec
        with pytest.raises(RuntimeError, match="half to float"):
            op(x, 1, True)
        want = getattr(torch.ops.aten, tname).default(
            torch.tensor(x.float().tolist()).half().float(), 1, False)
        assert ember.allclose(got, ember.tensor(want.tolist()), rtol=1e-6, atol=1e-7)
        with pytest.raises(AssertionError, match="half_to_float is True"):
            _decomp(op, x.float(), 1, True)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_softmax_backward_data(dtype):
    """The softmax backward ops (in the core table) against eager autograd."""
    for fn, op in ((F.softmax, aten._softmax_backward_data.default),
                   (F.log_softmax, aten._log_softmax_backward_data.default)):
        x = _r(4, 6, dtype=dtype).requires_grad_(True)
        g = _r(4, 6, dtype=dtype)
        out = fn(x, 1)
        want, = ember.autograd.grad(out, [x], [g])
        got = _decomp(op, g, out.detach(), 1, dtype)
        _close(want, got, str(op))
        h = g.to(ember.float16)
        o16 = fn(x.detach().to(ember.float16), 1)
        _close(op(h, o16, 1, ember.float16), _decomp(op, h, o16, 1, ember.float16), str(op))


# ---------------------------------------------------------------------------------------------
# gelu

@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("dtype", FLOATS + (ember.bfloat16, ember.float16), ids=str)
def test_gelu(approximate, dtype):
    x = ember.cat([_r(40, dtype=dtype) * 4,
                   ember.tensor([nan, inf, -inf, 0., -0., 1e30, -1e30, 20., -20., 5., -5.],
                                dtype=dtype)])
    op = aten.gelu.default
    want = op(x, approximate=approximate)
    got = _decomp(op, x, approximate=approximate)
    _close(want, got, approximate)
    if dtype in FLOATS:
        # the gradient through the decomposition is eager gelu_backward's
        xg = x.detach().requires_grad_(True)
        gw, = ember.autograd.grad(op(xg, approximate=approximate), [xg], [ember.ones_like(x)])
        gg, = ember.autograd.grad(_decomp(op, xg, approximate=approximate), [xg],
                                  [ember.ones_like(x)])
        finite = ember.isfinite(x)  # at +-inf the decomposition's chain rule gives nan
        _close(gw[finite], gg[finite], "grad")


def test_gelu_bad_approximate():
    with pytest.raises(RuntimeError, match="approximate argument must be either none or tanh"):
        _decomp(aten.gelu.default, _r(3), approximate="fast")


# ---------------------------------------------------------------------------------------------
# elu, leaky_relu, hardtanh, var.dim, index_select

def _pointwise_input(dtype):
    x = ember.cat([_r(30, dtype=dtype) * 3,
                   ember.tensor([nan, inf, -inf, 0., -0., 1., -1., 0.5, -0.5, 1e30, -1e30],
                                dtype=dtype)])
    return x


@pytest.mark.parametrize("dtype", FLOATS + (ember.bfloat16, ember.float16), ids=str)
def test_pointwise_activations(dtype):
    x = _pointwise_input(dtype)
    cases = [(aten.elu.default, ()), (aten.elu.default, (0.5, 1.5, 2.0)),
             (aten.leaky_relu.default, ()), (aten.leaky_relu.default, (0.2,)),
             (aten.hardtanh.default, ()), (aten.hardtanh.default, (-0.5, 1.0)),
             (aten.hardtanh.default, (1.0, -1.0))]
    for op, extra in cases:
        want, got = op(x, *extra), _decomp(op, x, *extra)
        _close(want, got, f"{op}{extra}")
        if dtype in FLOATS:  # gradients through the decomposition are the kernels'
            xg = x.detach().requires_grad_(True)
            # (where's unselected branch is differentiated too: expm1 of 1e30 would make 0*inf)
            finite = ember.abs(x) < 50
            gw, = ember.autograd.grad(op(xg, *extra), [xg], [ember.ones_like(x)])
            gg, = ember.autograd.grad(_decomp(op, xg, *extra), [xg], [ember.ones_like(x)])
            _close(gw[finite], gg[finite], f"grad {op}{extra}")


def test_hardtanh_integers():
    x = ember.tensor([-5, -1, 0, 2, 9])
    for bounds in ((-1, 1), (-2.7, 3.9)):
        _close(aten.hardtanh.default(x, *bounds), _decomp(aten.hardtanh.default, x, *bounds))
    with pytest.raises(RuntimeError, match="unsigned type with negative limits"):
        _decomp(aten.hardtanh.default, x.to(ember.uint8), -1, 1)
    with pytest.raises(RuntimeError, match="Bool inputs not supported"):
        _decomp(aten.hardtanh.default, x > 0)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_var_dim(dtype):
    x = _r(3, 4, 5, dtype=dtype)
    x[0, 0, 0] = nan
    for dim, unbiased, keepdim in itertools.product([[1], [0, 2], None], [True, False],
                                                    [True, False]):
        _close(aten.var.dim(x, dim, unbiased, keepdim),
               _decomp(aten.var.dim, x, dim, unbiased, keepdim), f"{dim} {unbiased} {keepdim}")


def test_index_select():
    op = aten.index_select.default
    x = _r(4, 5, 3, dtype=ember.float32)
    for dim, index in ((0, ember.tensor([3, 0, 3])), (1, ember.tensor([4, 1, 0])),
                       (-1, ember.tensor(2)), (2, ember.tensor([], dtype=ember.int64)),
                       (1, ember.tensor([1, 2], dtype=ember.int32))):
        want = op(x, dim, index)
        got = _decomp(op, x, dim, index)
        _close(want, got, f"{dim} {index}")
    s = ember.tensor(2.5)
    _close(op(s, 0, ember.tensor([0])), _decomp(op, s, 0, ember.tensor([0])), "scalar")
    _close(op(s, 0, ember.tensor(0)), _decomp(op, s, 0, ember.tensor(0)), "scalar")
    with pytest.raises(IndexError, match="Index is supposed to be a vector"):
        _decomp(op, x, 0, ember.tensor([[0]]))
    with pytest.raises(RuntimeError, match="Index to scalar can have only 1 value"):
        _decomp(op, s, 0, ember.tensor([0, 0]))


# ---------------------------------------------------------------------------------------------
# layer norm

def _ln_cases(dtype):
    x_special = _r(4, 6, dtype=dtype)
    x_special[1, 2] = nan
    x_special[2, 0] = inf
    x_special[3] = 7.0  # zero variance
    return [(_r(4, 6, dtype=dtype), [6], True, True),
            (_r(2, 3, 5, dtype=dtype), [3, 5], True, True),
            (_r(2, 3, 5, dtype=dtype), [5], False, True),
            (_r(2, 3, 5, dtype=dtype), [5], True, False),
            (_r(3, 4, dtype=dtype), [4], False, False), (_r(5, dtype=dtype), [5], True, True),
            (_r(6, 4, dtype=dtype).t(), [6], True, True), (x_special, [6], True, True)]


@pytest.mark.parametrize("dtype", FLOATS + (ember.bfloat16, ember.float16), ids=str)
def test_native_layer_norm(dtype):
    op = aten.native_layer_norm.default
    for x, shape, has_w, has_b in _ln_cases(dtype):
        w = _r(*shape, dtype=dtype) if has_w else None
        b = _r(*shape, dtype=dtype) if has_b else None
        _close(op(x, shape, w, b, 1e-5), _decomp(op, x, shape, w, b, 1e-5),
               f"{x.shape} {shape} {has_w} {has_b}")


def test_native_layer_norm_errors():
    """The eager kernel's checks and messages."""
    op = aten.native_layer_norm.default
    x = _r(3, 4)
    for args in ((x, [], None, None, 1e-5), (x, [4], _r(3), None, 1e-5),
                 (x, [4], None, _r(5), 1e-5), (x, [5], None, None, 1e-5),
                 (x, [2, 3, 4], None, None, 1e-5)):
        with pytest.raises(RuntimeError) as want:
            op(*args)
        with pytest.raises(RuntimeError) as got:
            _decomp(op, *args)
        assert str(got.value) == str(want.value)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_native_layer_norm_backward(dtype):
    fwd, bwd = aten.native_layer_norm.default, aten.native_layer_norm_backward.default
    for (x, shape, has_w, has_b), mask in itertools.product(
            _ln_cases(dtype)[:-1], [[True, True, True], [True, False, False],
                                    [False, True, True]]):
        w = _r(*shape, dtype=dtype).requires_grad_(True) if has_w else None
        b = _r(*shape, dtype=dtype).requires_grad_(True) if has_b else None
        xg = x.detach().requires_grad_(True)
        out, mean, rstd = fwd(xg, shape, w, b, 1e-5)
        g = _r(*out.shape, dtype=dtype)
        args = (g, x, shape, mean.detach(), rstd.detach(), w, b, mask)
        want, got = bwd(*args), _decomp(bwd, *args)
        _close([want[i] if mask[i] and (i == 0 or (w, b)[i - 1] is not None) else None
                for i in range(3)],
               [got[i] if mask[i] and (i == 0 or (w, b)[i - 1] is not None) else None
                for i in range(3)], f"{x.shape} {shape} {mask}")
        if not all(mask):
            continue
        # and against eager autograd of layer_norm
        leaves = [xg] + [t for t in (w, b) if t is not None]
        grads = ember.autograd.grad(out, leaves, [g])
        _close(list(grads), [got[0]] + [got[i + 1] for i, t in enumerate((w, b))
                                        if t is not None], "autograd")


def test_native_layer_norm_backward_low_precision_and_empty():
    bwd = aten.native_layer_norm_backward.default
    bf = ember.bfloat16
    x, w, b = _r(3, 8, dtype=bf), _r(8, dtype=bf), _r(8, dtype=bf)
    _, mean, rstd = aten.native_layer_norm.default(x, [8], w, b, 1e-5)
    args = (_r(3, 8, dtype=ember.bfloat16), x, [8], mean, rstd, w, b, [True, True, True])
    _close(bwd(*args), _decomp(bwd, *args), "bfloat16")
    e = _r(0, 8)
    _, mean, rstd = aten.native_layer_norm.default(e, [8], None, None, 1e-5)
    got = _decomp(bwd, e, e, [8], mean, rstd, None, None, [True, True, False])
    assert tuple(got[0].shape) == (0, 8) and tuple(got[1].shape) == (8,) and got[2] is None
    assert not got[1].abs().sum()


# ---------------------------------------------------------------------------------------------
# group norm

def _gn_cases(dtype):
    x_special = _r(2, 4, 3, dtype=dtype)
    x_special[0, 1, 1] = nan
    x_special[1, 2, 0] = -inf
    return [(_r(2, 6, 5, dtype=dtype), 3, True, True),
            (_r(3, 4, 2, 3, dtype=dtype), 2, True, False),
            (_r(2, 4, 5, dtype=dtype), 4, False, True), (_r(2, 4, dtype=dtype), 1, False, False),
            (_r(2, 6, 4, dtype=dtype).transpose(1, 2).contiguous().transpose(1, 2), 2, True, True),
            (x_special, 2, True, True)]


@pytest.mark.parametrize("dtype", FLOATS + (ember.bfloat16,), ids=str)
def test_native_group_norm(dtype):
    op = aten.native_group_norm.default
    for x, group, has_w, has_b in _gn_cases(dtype):
        N, C = x.shape[:2]
        HxW = x.numel() // (N * C)
        w = _r(C, dtype=dtype) if has_w else None
        b = _r(C, dtype=dtype) if has_b else None
        _close(op(x, w, b, N, C, HxW, group, 1e-5), _decomp(op, x, w, b, N, C, HxW, group, 1e-5),
               f"{x.shape} {group} {has_w} {has_b}")
    with pytest.raises(RuntimeError, match="divisible by num_groups"):
        _decomp(op, _r(2, 6, 3), None, None, 2, 6, 3, 4, 1e-5)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_native_group_norm_backward(dtype):
    fwd, bwd = aten.native_group_norm.default, aten.native_group_norm_backward.default
    for x, group, has_w, has_b in _gn_cases(dtype)[:-1]:
        N, C = x.shape[:2]
        HxW = x.numel() // (N * C)
        w = _r(C, dtype=dtype).requires_grad_(True) if has_w else None
        b = _r(C, dtype=dtype).requires_grad_(True) if has_b else None
        xg = x.detach().requires_grad_(True)
        out, mean, rstd = fwd(xg, w, b, N, C, HxW, group, 1e-5)
        g = _r(*out.shape, dtype=dtype)
        for mask in ([True, True, True], [True, False, False], [False, True, True]):
            args = (g, x, mean.detach(), rstd.detach(), w, N, C, HxW, group, mask)
            _close(bwd(*args), _decomp(bwd, *args), f"{x.shape} {group} {mask}")
        got = _decomp(bwd, g, x, mean.detach(), rstd.detach(), w, N, C, HxW, group,
                      [True, True, True])
        leaves = [xg] + [t for t in (w, b) if t is not None]
        grads = ember.autograd.grad(out, leaves, [g])
        _close(list(grads), [got[0]] + [got[i + 1] for i, t in enumerate((w, b))
                                        if t is not None], "autograd")


# ---------------------------------------------------------------------------------------------
# embedding backward

@pytest.mark.parametrize("dtype", FLOATS + (ember.bfloat16,), ids=str)
def test_embedding_dense_backward(dtype):
    op = aten.embedding_dense_backward.default
    idx2 = ember.tensor([[0, 2, 2, 5], [5, 5, 1, 0]])
    idx1 = ember.tensor([3, 3, 3, 0, 6])
    for idx, padding_idx, scale in itertools.product((idx2, idx1, idx1.to(ember.int32)),
                                                     (-1, 5, 3), (False, True)):
        g = _r(*idx.shape, 3, dtype=dtype)
        _close(op(g, idx, 7, padding_idx, scale), _decomp(op, g, idx, 7, padding_idx, scale),
               f"{idx.shape} {padding_idx} {scale}")
    if dtype is ember.float64:  # against autograd of F.embedding
        w = _r(7, 3).requires_grad_(True)
        g = _r(2, 4, 3)
        want, = ember.autograd.grad(F.embedding(idx2, w, padding_idx=5, scale_grad_by_freq=True),
                                    [w], [g])
        _close(want, _decomp(op, g, idx2, 7, 5, True), "autograd")


# ---------------------------------------------------------------------------------------------
# max_pool2d backward

@pytest.mark.parametrize("dtype", FLOATS + (ember.bfloat16,), ids=str)
def test_max_pool2d_with_indices_backward(dtype):
    fwd = aten.max_pool2d_with_indices.default
    op = aten.max_pool2d_with_indices_backward.default
    x4 = _r(2, 3, 7, 6, dtype=dtype)
    x4[0, 0, 0, 0] = nan
    cases = [(x4, [2, 2], [2, 2], [0, 0], [1, 1], False),
             (x4, [3, 3], [1, 1], [1, 1], [1, 1], False),  # overlapping windows accumulate
             (x4, [3, 2], [2, 1], [1, 0], [2, 1], True),
             (_r(3, 5, 5, dtype=dtype), [2, 2], [1, 1], [0, 0], [1, 1], False),  # unbatched
             (_r(2, 3, 6, 6, dtype=dtype).contiguous(memory_format=ember.channels_last),
              [2, 2], [2, 2], [0, 0], [1, 1], False)]
    for x, k, s, p, d, ceil in cases:
        out, idx = fwd(x, k, s, p, d, ceil)
        g = _r(*out.shape, dtype=dtype)
        want = op(g, x, k, s, p, d, ceil, idx)
        got = _decomp(op, g, x, k, s, p, d, ceil, idx)
        _close(want, got, f"{tuple(x.shape)} {k} {s} {p} {d} {ceil}")
        # the input's memory format, as PyTorch's kernel and decomposition give
        assert got.is_contiguous(memory_format=ember.channels_last) == \
            (x.dim() == 4 and x.is_contiguous(memory_format=ember.channels_last))
        if dtype is ember.float64:  # against autograd of max_pool2d
            xg = x.detach().requires_grad_(True)
            gw, = ember.autograd.grad(F.max_pool2d(xg, k, s, p, d, ceil), [xg], [g])
            _close(gw, got, "autograd")


# ---------------------------------------------------------------------------------------------
# a traced training step holds core ops only

DECOMPOSED = {"_softmax", "_log_softmax", "gelu", "native_layer_norm", "native_layer_norm_backward",
              "native_group_norm", "native_group_norm_backward",
              "_softmax_backward_data", "_log_softmax_backward_data", "gelu_backward",
              "elu", "leaky_relu", "hardtanh", "elu_backward", "leaky_relu_backward",
              "hardtanh_backward"}


def _step(x, w, b, gw, gb, emb_w, tokens, g):
    x = x.detach().requires_grad_(True)
    w, b, gw, gb, emb_w = (t.detach().requires_grad_(True) for t in (w, b, gw, gb, emb_w))
    h = F.layer_norm(x + F.embedding(tokens, emb_w), (8,), w, b)
    h = F.gelu(h) + F.gelu(h, approximate="tanh") + F.elu(h) + F.leaky_relu(h) + F.hardtanh(h)
    h = F.group_norm(h.unsqueeze(-1), 2, gw, gb).squeeze(-1)
    s = F.softmax(h, -1) * F.log_softmax(h, 0)
    grads = ember.autograd.grad(s, [x, w, b, gw, gb, emb_w], [g])
    return (s,) + grads


def test_traced_step_is_core_aten():
    args = (_r(4, 8, dtype=ember.float32), _r(8, dtype=ember.float32),
            _r(8, dtype=ember.float32), _r(8, dtype=ember.float32) + 2,
            _r(8, dtype=ember.float32), _r(5, 8, dtype=ember.float32),
            ember.tensor([0, 3, 3, 4]), _r(4, 8, dtype=ember.float32))
    gm = make_fx(_step, decomposition_table=select_decomp_table())(*args)
    targets = {n.target for n in gm.graph.nodes
               if n.op == "call_function" and n.target is not operator.getitem}
    assert targets, "nothing traced"
    assert all(is_core(t) for t in targets), sorted(str(t) for t in targets if not is_core(t))
    names = {t._opname for t in targets}
    assert not names & DECOMPOSED, names & DECOMPOSED
    # the reductions the lowerings need are there
    assert {"amax", "sum", "exp", "var", "mean", "rsqrt", "erf", "tanh",
            "embedding_dense_backward"} <= names
    for want, got in zip(_step(*args), gm(*args)):
        assert ember.allclose(want, got, rtol=1e-5, atol=1e-5)


def _cnn_step(x, w1, b1, w2, b2, labels):
    w1, b1, w2, b2 = (t.detach().requires_grad_(True) for t in (w1, b1, w2, b2))
    h = F.max_pool2d(F.relu(F.conv2d(x, w1, b1, padding=1)), 2)
    h = F.max_pool2d(F.relu(F.conv2d(h, w2, b2, padding=1)), 2)
    loss = F.cross_entropy(h.flatten(1), labels)
    return (loss,) + ember.autograd.grad(loss, [w1, b1, w2, b2])


def test_traced_cnn_step_is_core_aten():
    args = (_r(4, 1, 8, 8, dtype=ember.float32), _r(3, 1, 3, 3, dtype=ember.float32),
            _r(3, dtype=ember.float32), _r(3, 3, 3, 3, dtype=ember.float32),
            _r(3, dtype=ember.float32), ember.tensor([0, 2, 1, 11]))
    gm = make_fx(_cnn_step, decomposition_table=select_decomp_table())(*args)
    targets = {n.target for n in gm.graph.nodes
               if n.op == "call_function" and n.target is not operator.getitem}
    assert all(is_core(t) for t in targets), sorted(str(t) for t in targets if not is_core(t))
    names = {t._opname for t in targets}
    assert "max_pool2d_with_indices_backward" in names  # kept whole (KEPT_WHOLE)
    for want, got in zip(_cnn_step(*args), gm(*args)):
        assert ember.allclose(want, got, rtol=1e-5, atol=1e-6)


def test_core_table_keeps_the_core_ops():
    """With the core table only, the core ops stay as they are (what PyTorch's
    ``core_aten_decompositions`` gives too)."""
    x = _r(3, 4, dtype=ember.float32)
    gm = make_fx(lambda t: F.softmax(F.gelu(t), -1),
                 decomposition_table=core_aten_decompositions())(x)
    names = {n.target._opname for n in gm.graph.nodes if n.op == "call_function"}
    assert {"_softmax", "gelu"} <= names
    assert math.isfinite(float(gm(x).sum()))
