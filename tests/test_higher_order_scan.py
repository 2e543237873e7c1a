"""``scan``, ``map`` and ``associative_scan`` (``ember._higher_order_ops``) against PyTorch's:
results of cumulative sums, products and maxima written with carries, pytree inputs and
outputs, ``dim`` and ``reverse``; gradients through them (an RNN scan, a linear recurrence as
an associative scan over tuples, a map with extra arguments); the errors for bad input
(PyTorch's types and messages, the Dynamo-made ones up to their debug context); the operators
in ``ember.ops.higher_order``; ``ember.compile`` over them; the pointwise mode on the simulated
CUDA device."""
import re

import numpy as np
import pytest

import ember
from helpers import assert_same, simulated_cuda


def _hop(lib, name):
    return getattr(lib._higher_order_ops, name)


def _arrays(seed, *shapes, low=None, high=None):
    rng = np.random.default_rng(seed)
    if low is not None:
        return [rng.uniform(low, high, s).astype(np.float32) for s in shapes]
    return [rng.standard_normal(s).astype(np.float32) for s in shapes]


def _both(torch, *arrays, requires_grad=False):
    """The arrays as torch tensors and as ember tensors."""
    t = [torch.tensor(a, requires_grad=requires_grad) for a in arrays]
    e = [ember.tensor(a, requires_grad=requires_grad) for a in arrays]
    return t, e


def _same_tree(e, t, rtol=1e-6, atol=1e-6):
    if isinstance(t, (tuple, list)):
        assert type(e) is type(t) and len(e) == len(t), (e, t)
        for a, b in zip(e, t):
            _same_tree(a, b, rtol, atol)
    elif isinstance(t, dict):
        assert list(e) == list(t)
        for k in t:
            _same_tree(e[k], t[k], rtol, atol)
    else:
        assert_same(e, t, rtol=rtol, atol=atol, check_stride=True)


# -- scan ---------------------------------------------------------------------------------------

def _cumulative(lib, x, dim, reverse):
    """Cumulative sum, product and maximum in one scan, each carried."""
    def step(carry, v):
        s, p, m = carry
        s, p, m = s + v, p * v, lib.maximum(m, v)
        return (s, p, m), {"sum": s.clone(), "prod": p.clone(), "max": [m.clone()]}
    shape = list(x.shape)
    del shape[dim]
    init = (lib.zeros(shape), lib.ones(shape), lib.full(shape, -float("inf")))
    return _hop(lib, "scan")(step, init, x, dim=dim, reverse=reverse)


@pytest.mark.parametrize("dim,reverse", [(0, False), (1, True), (-1, False), (2, True)])
def test_scan_cumulative_ops(torch, dim, reverse):
    (a,) = _arrays(0, (4, 5, 3), low=0.5, high=1.5)
    (t,), (e,) = _both(torch, a)
    _same_tree(_cumulative(ember, e, dim, reverse), _cumulative(torch, t, dim, reverse))
    # and the values are the cumulative ops'
    _, ys = _cumulative(ember, e, dim, reverse)
    src = e.flip(dim) if reverse else e
    for got, want in ((ys["sum"], ember.cumsum(src, dim)), (ys["prod"], ember.cumprod(src, dim)),
                      (ys["max"][0], ember.cummax(src, dim).values)):
        want = want.flip(dim) if reverse else want
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


def test_scan_pytrees_and_integers(torch):
    def run(lib, xs_a, xs_b):
        def step(c, x):
            n = {"a": c["a"] + x[0] * c["k"], "k": c["k"] + 1}
            return n, (n["a"] * 1, [x[1] - n["a"], (n["k"] * 2,)])
        init = {"a": lib.zeros(3, dtype=lib.int64), "k": lib.ones((), dtype=lib.int64)}
        return _hop(lib, "scan")(step, init, (xs_a, xs_b), reverse=True)
    a = np.arange(12).reshape(4, 3)
    b = np.arange(12, 24).reshape(4, 3)
    t, e = _both(torch, a, b)
    _same_tree(run(ember, *e), run(torch, *t))
    # no xs leaves: the init as it is, and an empty list
    init = ember.ones(2)
    carry, out = _hop(ember, "scan")(lambda c, x: (c, x), init, [])
    assert carry is init and out == []
    # y may be empty
    (x,), (xe,) = _both(torch, np.ones((3, 2), np.float32))
    _same_tree(_hop(ember, "scan")(lambda c, v: (c + v, ()), ember.zeros(2), xe),
               _hop(torch, "scan")(lambda c, v: (c + v, ()), torch.zeros(2), x))


def test_scan_gradients(torch):
    xa, w, h = _arrays(1, (6, 2, 3), (3, 3), (2, 3))

    def run(lib, x, w, h0):
        def step(h, xt):
            h2 = lib.tanh(xt + h @ w)
            return h2, (h2 * 2).sum(-1)
        hT, ys = _hop(lib, "scan")(step, h0, x, dim=0)
        loss = hT.pow(2).sum() + (ys * lib.arange(6.).unsqueeze(1)).sum()
        loss.backward()
        return hT, ys, x.grad, w.grad, h0.grad
    t, e = _both(torch, xa, w, h, requires_grad=True)
    # PyTorch's backward scan sums the steps' gradients in another order: float32 rounding
    _same_tree(run(ember, *e), run(torch, *t), rtol=1e-5, atol=1e-5)


# -- associative_scan -------------------------------------------------------------------------

@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 13])
def test_associative_scan_order(torch, n):
    """The parallel-prefix tree of PyTorch: integer results exact, float sums bitwise (the
    same additions in the same order), for lengths that exercise odd and even levels."""
    ints = np.arange(1, 2 * n + 1).reshape(2, n) % 7 + 1
    floats = _arrays(n, (3, n))[0] * 1000
    for arr, fns in ((ints, ("mul", "add", "max")), (floats, ("add",))):
        (t,), (e,) = _both(torch, arr)
        for name in fns:
            for reverse in (False, True):
                def fn(lib):
                    return {"mul": lambda a, b: a * b, "add": lambda a, b: a + b,
                            "max": lib.maximum}[name]
                got = _hop(ember, "associative_scan")(fn(ember), e, 1, reverse=reverse,
                                                        combine_mode="generic")
                want = _hop(torch, "associative_scan")(fn(torch), t, 1, reverse=reverse,
                                                        combine_mode="generic")
                assert_same(got, want, rtol=0, atol=0)


def test_associative_scan_generic_functions(torch):
    (m,) = _arrays(2, (5, 2, 2))
    (t,), (e,) = _both(torch, m)
    # a matrix product is no pointwise op: generic mode vmaps it over the batch
    got = _hop(ember, "associative_scan")(lambda a, b: a @ b, e, 0, combine_mode="generic")
    want = _hop(torch, "associative_scan")(lambda a, b: a @ b, t, 0, combine_mode="generic")
    assert_same(got, want, rtol=1e-5, atol=1e-6)


def test_associative_scan_linear_recurrence_gradients(torch):
    """h_t = a_t * h_{t-1} + b_t as an associative scan over (a, b) pairs."""
    a, b = _arrays(3, (9, 4), (9, 4))
    a = np.abs(a) * 0.5 + 0.5

    def run(lib, a, b):
        def combine(left, right):
            return right[0] * left[0], right[0] * left[1] + right[1]
        A, H = _hop(lib, "associative_scan")(combine, (a, b), 0, combine_mode="generic")
        (H.sin() * lib.arange(9.).unsqueeze(1)).sum().backward()
        return A, H, a.grad, b.grad
    t, e = _both(torch, a, b, requires_grad=True)
    _same_tree(run(ember, *e), run(torch, *t), rtol=1e-5, atol=1e-6)
    # and the recurrence it computes
    h, hs = ember.zeros(4), []
    for i in range(9):
        h = e[0][i] * h + e[1][i]
        hs.append(h)
    np.testing.assert_allclose(run(ember, *[x.detach().requires_grad_() for x in e])[1]
                               .detach().numpy(), ember.stack(hs).detach().numpy(), rtol=1e-5)


def test_associative_scan_pointwise_on_cuda():
    """PyTorch's CPU build cannot run the pointwise mode (CUDA only); on the simulated device
    it gives the generic mode's values, and a non-pointwise or ill-shaped function is refused
    as PyTorch's Dynamo refuses it."""
    from ember._dynamo.exc import UncapturedHigherOrderOpError
    ascan = _hop(ember, "associative_scan")
    a, b = _arrays(4, (2, 7), (2, 7))
    ce = [ember.tensor(a), ember.tensor(b)]

    def combine(left, right):
        return right[0] * left[0], right[0] * left[1] + right[1]
    want = ascan(combine, tuple(ce), 1, reverse=True, combine_mode="generic")
    with simulated_cuda():
        cuda = tuple(x.cuda() for x in ce)
        got = ascan(combine, cuda, 1, reverse=True)
        for g, w in zip(got, want):
            assert g.device.type == "cuda"
            np.testing.assert_allclose(g.cpu().numpy(), w.numpy(), rtol=1e-6)
        m = ember.ones(4, 2, 2).cuda()
        with pytest.raises(RuntimeError, match="^For combine_mode='pointwise', the combine_fn "
                                               "needs to be pointwise$"):
            ascan(lambda x, y: x @ y, m, 0)
        with pytest.raises(UncapturedHigherOrderOpError,
                           match="mismatched input/output tree structure"):
            ascan(lambda x, y: (x + y, x - y), m, 0)
        with pytest.raises(UncapturedHigherOrderOpError, match="^Expected initial_xs and "
                           "combine_fn_output to have same metadata but found:\npair\\[0\\] "
                           "differ in 'dtype: ember.float32 vs ember.float64'"):
            ascan(lambda x, y: (x + y).double(), m, 0)


# -- map ----------------------------------------------------------------------------------------

def test_map_pytrees_extra_args_and_gradients(torch):
    xa, xb, w = _arrays(5, (4, 3), (4, 2, 3), (3,))

    def run(lib, xa, xb, w):
        def f(x, w, scale, bias):
            s = (x["a"] * w).sin() + x["b"][0].sum(0) * scale
            return {"s": s, "t": (s.cos() + bias[0],)}
        out = _hop(lib, "map")(f, {"a": xa, "b": [xb]}, w, lib.tensor(0.5), (lib.ones(3),))
        (out["s"].sum() + out["t"][0].pow(2).sum()).backward()
        return out, xa.grad, xb.grad, w.grad
    t, e = _both(torch, xa, xb, w, requires_grad=True)
    _same_tree(run(ember, *e), run(torch, *t), rtol=1e-5, atol=1e-6)
    # a None in what f returns stays None (without autograd: PyTorch's map backward fails)
    (x,), (xe,) = _both(torch, xa)
    got = _hop(ember, "map")(lambda v: [v + 1, None], xe)
    want = _hop(torch, "map")(lambda v: [v + 1, None], x)
    assert got[1] is None and want[1] is None
    _same_tree(got[0], want[0])


def test_ops_higher_order(torch):
    """The operators under ``ops.higher_order``, called as PyTorch's are."""
    (x,), (xe,) = _both(torch, np.arange(6.0, dtype=np.float32).reshape(3, 2))
    one_t, one_e = torch.ones(2), ember.ones(2)
    _same_tree(ember.ops.higher_order.map_impl(lambda a, b: (a + b,), [xe], [one_e]),
               torch.ops.higher_order.map_impl(lambda a, b: (a + b,), [x], [one_t]))
    assert isinstance(ember.ops.higher_order.scan, ember._ops.HigherOrderOperator)
    flat = ember.ops.higher_order.scan(lambda c, v: (c + v, c * v), [one_e], [xe], ())
    assert [f.tolist() for f in flat] == [[7.0, 10.0], [[0.0, 1.0], [2.0, 6.0], [12.0, 25.0]]]
    out = ember.ops.higher_order.associative_scan(lambda a, b: (a + b,), [xe], ())
    assert out[0].tolist() == [[0.0, 1.0], [2.0, 4.0], [6.0, 9.0]]


# -- errors -------------------------------------------------------------------------------------

def _error(fn):
    with pytest.raises(Exception) as info:
        fn()
    return info.value


def _dynamo_text(exc):
    """A Dynamo-made message without what only a capture has: its debug context (PyTorch's
    graph dump) and user frames; ``torch.`` values read as ember's."""
    text = str(exc).split("\n\n  Developer debug context")[0].split("\n\nfrom user code")[0]
    return _as_ember(text)


def _as_ember(text):
    # PyTorch names the operator object by its address
    text = re.sub(r" Found in <bound method HigherOrderOperator.name of [^\n]*>", "", text)
    return text.replace("torch.Size", "ember.Size").replace("torch.float", "ember.float") \
        .replace("torch.contiguous", "ember.contiguous")


def _check_errors(torch, cases, dynamo=False):
    for name, make in cases:
        if dynamo:  # PyTorch's sizes in the message stay numbers (no recompile made them symbols)
            torch._dynamo.reset()
        te, ee = _error(lambda: make(torch)), _error(lambda: make(ember))
        assert type(ee).__name__ == type(te).__name__, (name, ee, te)
        if dynamo:
            assert _dynamo_text(ee) == _dynamo_text(te), name
        else:
            assert str(ee) == _as_ember(str(te)), (name, str(ee), str(te))


def _x(lib):
    return lib.arange(10.0).reshape(5, 2)


def _add(c, x):
    n = c + x
    return n, n.clone()


SCAN_ERRORS = [
    ("not callable", lambda lib: _hop(lib, "scan")(1, lib.zeros(2), _x(lib))),
    ("dim not int", lambda lib: _hop(lib, "scan")(_add, lib.zeros(2), _x(lib), dim=1.0)),
    ("reverse not bool", lambda lib: _hop(lib, "scan")(_add, lib.zeros(2), _x(lib), reverse=1)),
    ("no init", lambda lib: _hop(lib, "scan")(_add, [], _x(lib))),
    ("init not tensor", lambda lib: _hop(lib, "scan")(_add, 1.0, _x(lib))),
    ("xs not tensor", lambda lib: _hop(lib, "scan")(_add, lib.zeros(2), [_x(lib), 1])),
    ("xs first not tensor", lambda lib: _hop(lib, "scan")(_add, lib.zeros(2), [1, _x(lib)])),
    ("dim out of range", lambda lib: _hop(lib, "scan")(_add, lib.zeros(2), _x(lib), dim=3)),
    ("zero-size", lambda lib: _hop(lib, "scan")(_add, lib.zeros(2), lib.zeros(0, 2))),
    ("0-dim xs", lambda lib: _hop(lib, "scan")(_add, lib.zeros(()), lib.tensor(3.0))),
    ("xs shorter later", lambda lib: _hop(lib, "scan")(
        lambda c, x: (c + x[0] + x[1], c.clone()), lib.zeros(2),
        [lib.zeros(4, 2), lib.zeros(3, 2)])),
]

SCAN_DYNAMO_ERRORS = [
    ("carry structure", lambda lib: _hop(lib, "scan")(
        lambda c, x: ((c + x, c + x), x.clone()), lib.zeros(2), _x(lib))),
    ("carry shape", lambda lib: _hop(lib, "scan")(
        lambda c, x: ((c + x).sum(), x.clone()), lib.zeros(2), _x(lib))),
    ("carry dtype", lambda lib: _hop(lib, "scan")(
        lambda c, x: ((c + x).double(), x.clone()), lib.zeros(2), _x(lib))),
    ("carry not tensor", lambda lib: _hop(lib, "scan")(
        lambda c, x: (1, x.clone()), lib.zeros(2), _x(lib))),
    ("three returns", lambda lib: _hop(lib, "scan")(
        lambda c, x: (c + x, x.clone(), x.clone()), lib.zeros(2), _x(lib))),
    ("y is an input", lambda lib: _hop(lib, "scan")(lambda c, x: (c + x, x), lib.zeros(2),
                                                    _x(lib))),
    ("carry is y", lambda lib: _hop(lib, "scan")(lambda c, x: (lambda n: (n, n))(c + x),
                                                 lib.zeros(2), _x(lib))),
    ("mutation", lambda lib: _hop(lib, "scan")(lambda c, x: (c.add_(x), x.clone()),
                                               lib.zeros(2), _x(lib))),
    ("y None", lambda lib: _hop(lib, "scan")(lambda c, x: (c + x, None), lib.zeros(2),
                                             _x(lib))),
]


def test_scan_errors(torch):
    _check_errors(torch, SCAN_ERRORS)
    _check_errors(torch, SCAN_DYNAMO_ERRORS, dynamo=True)
    # a refused body has not changed the caller's tensors (PyTorch refuses it before running)
    init = ember.zeros(2)
    _error(lambda: _hop(ember, "scan")(lambda c, x: (c.add_(x), x.clone()), init, _x(ember)))
    assert init.tolist() == [0.0, 0.0]


ASSOCIATIVE_SCAN_ERRORS = [
    ("pointwise on the CPU", lambda lib: _hop(lib, "associative_scan")(
        lambda a, b: a + b, _x(lib), 0)),
    ("not callable", lambda lib: _hop(lib, "associative_scan")(1, _x(lib), 0,
                                                                combine_mode="generic")),
    ("dim not int", lambda lib: _hop(lib, "associative_scan")(
        lambda a, b: a + b, _x(lib), 0.0, combine_mode="generic")),
    ("reverse not bool", lambda lib: _hop(lib, "associative_scan")(
        lambda a, b: a + b, _x(lib), 0, reverse=1, combine_mode="generic")),
    ("bad mode", lambda lib: _hop(lib, "associative_scan")(lambda a, b: a + b, _x(lib), 0,
                                                            combine_mode="foo")),
    ("no leaves", lambda lib: _hop(lib, "associative_scan")(lambda a, b: a + b, [], 0,
                                                             combine_mode="generic")),
    ("leaf not tensor", lambda lib: _hop(lib, "associative_scan")(
        lambda a, b: a + b, [_x(lib), 1], 0, combine_mode="generic")),
    ("sparse", lambda lib: _hop(lib, "associative_scan")(
        lambda a, b: a + b, _x(lib).to_sparse(), 0, combine_mode="generic")),
    ("0-dim", lambda lib: _hop(lib, "associative_scan")(
        lambda a, b: a + b, lib.tensor(1.0), 0, combine_mode="generic")),
    ("zero-size", lambda lib: _hop(lib, "associative_scan")(
        lambda a, b: a + b, lib.zeros(0, 3), 0, combine_mode="generic")),
    ("dim out of range", lambda lib: _hop(lib, "associative_scan")(
        lambda a, b: a + b, _x(lib), 2, combine_mode="generic")),
    ("different sizes", lambda lib: _hop(lib, "associative_scan")(
        lambda a, b: (a[0] + b[0], a[1] + b[1]), (_x(lib), lib.ones(3, 2)), 0,
        combine_mode="generic")),
    ("fewer outputs", lambda lib: _hop(lib, "associative_scan")(
        lambda a, b: a[0] + b[0], (_x(lib), _x(lib)), 0, combine_mode="generic")),
    ("more outputs", lambda lib: _hop(lib, "associative_scan")(
        lambda a, b: (a + b, a * b), _x(lib), 0, combine_mode="generic")),
    ("reduces a slice", lambda lib: _hop(lib, "associative_scan")(
        lambda a, b: (a + b).sum(), lib.ones(4, 3), 0, combine_mode="generic")),
]


def test_associative_scan_errors(torch):
    _check_errors(torch, ASSOCIATIVE_SCAN_ERRORS)


MAP_ERRORS = [
    ("xs not tensors", lambda lib: _hop(lib, "map")(lambda a: a, [_x(lib), 1])),
    ("zero leading size", lambda lib: _hop(lib, "map")(lambda a: a + 1, lib.zeros(0, 2))),
    ("inconsistent sizes", lambda lib: _hop(lib, "map")(lambda a: a[0] + 1,
                                                        [_x(lib), lib.zeros(4, 2)])),
    ("0-dim", lambda lib: _hop(lib, "map")(lambda a: a + 1, lib.tensor(3.0))),
    ("no xs", lambda lib: _hop(lib, "map")(lambda a: a, [])),
]

MAP_DYNAMO_ERRORS = [
    ("not callable", lambda lib: _hop(lib, "map")(3, _x(lib))),
    ("returns an input", lambda lib: _hop(lib, "map")(lambda a: a, _x(lib))),
    ("returns an int", lambda lib: _hop(lib, "map")(lambda a: 3, _x(lib))),
    ("mutates xs", lambda lib: _hop(lib, "map")(lambda a: a.add_(1), _x(lib))),
    ("mutates args", lambda lib: _hop(lib, "map")(lambda a, b: b.add_(a), _x(lib),
                                                  lib.zeros(2))),
]


def test_map_errors(torch):
    _check_errors(torch, MAP_ERRORS)
    _check_errors(torch, MAP_DYNAMO_ERRORS, dynamo=True)


# -- ember.compile ------------------------------------------------------------------------------

def test_compile(torch):
    """A compiled function calling the three: one graph (the calls are graph calls, the
    functions they take rebuilt from what they capture), the eager results, and gradients
    through every backend, to a weight the scan body captures too."""
    x, w = _arrays(6, (5, 3), (3,))
    wt = ember.tensor(w, requires_grad=True)

    def f(init, xs):
        def step(c, v):
            n = c * wt + v
            return n, n.sin()
        c, ys = ember._higher_order_ops.scan(step, init, xs)
        h = ember._higher_order_ops.associative_scan(lambda a, b: a + b, xs, 0,
                                                     combine_mode="generic")
        m = ember._higher_order_ops.map(lambda v, k: v * k, xs, init)
        return (c.sum() + ys.pow(2).sum() + h.pow(2).sum() + m.sum()), ys

    explain = ember._dynamo.explain(f)(ember.ones(3), ember.tensor(x))
    assert explain.graph_count == 1 and explain.graph_break_count == 0
    xe = ember.tensor(x, requires_grad=True)
    want, want_ys = f(ember.ones(3), xe)
    want.backward()
    grads = (xe.grad.clone(), wt.grad.clone())
    for backend in ("eager", "aot_eager", "inductor"):
        xe.grad = wt.grad = None
        got, got_ys = ember.compile(f, backend=backend, fullgraph=True)(ember.ones(3), xe)
        got.backward()
        # (Inductor's fused C rounds the float32 steps a little differently)
        np.testing.assert_allclose(got.item(), want.item(), rtol=1e-5)
        np.testing.assert_allclose(got_ys.detach().numpy(), want_ys.detach().numpy(),
                                   rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(xe.grad.numpy(), grads[0].numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(wt.grad.numpy(), grads[1].numpy(), rtol=1e-5, atol=1e-6)
