"""The recurrent layers as single ops: aten::lstm/gru/rnn_tanh/rnn_relu.input and the per-layer
_rnn_layer/_rnn_layer_backward, against PyTorch (outputs, final states, every parameter and
input gradient, double backward), plus the structure the ops promise (one dispatcher call per
layer and direction, forward and backward), dropout between layers and Meta shapes."""
import numpy as np
import pytest

import ember
from ember.utils._python_dispatch import TorchDispatchMode

torch = pytest.importorskip("torch")

MODES = ["LSTM", "GRU", "RNN_TANH", "RNN_RELU"]


def _pair(mode, dtype="float64", **kw):
    """The same layer stack in PyTorch and ember (ember's parameters copied from PyTorch's)."""
    cls = "RNN" if mode.startswith("RNN") else mode
    if mode == "RNN_RELU":
        kw["nonlinearity"] = "relu"
    torch.manual_seed(0)
    tm = getattr(torch.nn, cls)(4, 5, **kw).to(getattr(torch, dtype))
    em = getattr(ember.nn, cls)(4, 5, **kw).to(getattr(ember, dtype))
    for name, p in tm.named_parameters():
        getattr(em, name).data.copy_(ember.tensor(p.detach().numpy()))
    return tm, em


def _states(h):
    return h if isinstance(h, tuple) else (h,)


CONFIGS = [dict(), dict(num_layers=2), dict(bidirectional=True),
           dict(num_layers=2, bidirectional=True, batch_first=True), dict(bias=False)]


# (config index, dtype, unbatched): every config in float64, the layouts again in float32 and
# unbatched
CASES = [(c, "float64", False) for c in range(len(CONFIGS))] + [
    (0, "float32", False), (3, "float32", False), (0, "float64", True), (3, "float32", True)]


@pytest.mark.parametrize("cfg,dtype,unbatched", CASES)
@pytest.mark.parametrize("mode", MODES)
def test_module_matches_pytorch(mode, cfg, dtype, unbatched):
    kw = dict(CONFIGS[cfg])
    tm, em = _pair(mode, dtype, **kw)
    shape = (7, 4) if unbatched else ((3, 7, 4) if kw.get("batch_first") else (7, 3, 4))
    xn = np.random.RandomState(1).randn(*shape)
    tx = torch.tensor(xn, dtype=getattr(torch, dtype), requires_grad=True)
    ex = ember.tensor(xn, dtype=getattr(ember, dtype), requires_grad=True)
    # a non-zero initial state, so hx's gradient is exercised too
    d = 2 if kw.get("bidirectional") else 1
    hshape = (kw.get("num_layers", 1) * d,) + (() if unbatched else (3,)) + (5,)
    hn = np.random.RandomState(2).randn(*((2,) + hshape))
    th = [torch.tensor(a, dtype=getattr(torch, dtype), requires_grad=True) for a in hn]
    eh = [ember.tensor(a, dtype=getattr(ember, dtype), requires_grad=True) for a in hn]
    t_out, t_h = tm(tx, tuple(th) if mode == "LSTM" else th[0])
    e_out, e_h = em(ex, tuple(eh) if mode == "LSTM" else eh[0])
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == "float32" else dict(rtol=1e-10, atol=1e-12)
    assert e_out.dtype is getattr(ember, dtype)
    np.testing.assert_allclose(e_out.detach().numpy(), t_out.detach().numpy(), **tol)
    for a, b in zip(_states(e_h), _states(t_h)):
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), **tol)
    # a loss that reaches every output and final state with different weights
    (t_out.sin().sum() + sum((s * s).sum() for s in _states(t_h))).backward()
    (e_out.sin().sum() + sum((s * s).sum() for s in _states(e_h))).backward()
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), **tol)
    used = 2 if mode == "LSTM" else 1
    for a, b in zip(eh[:used], th[:used]):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), **tol)
    for name, p in tm.named_parameters():
        np.testing.assert_allclose(getattr(em, name).grad.numpy(), p.grad.numpy(), **tol,
                                   err_msg=name)


@pytest.mark.parametrize("mode", MODES)
def test_aten_entry_points_match_pytorch(mode):
    """ember.lstm / gru / rnn_tanh / rnn_relu with PyTorch's positional schema."""
    tm, em = _pair(mode, num_layers=2, bidirectional=True)
    xn = np.random.RandomState(3).randn(3, 6, 4)  # batch_first: (N, T, I)
    h0 = np.random.RandomState(4).randn(4, 3, 5)
    tp = [p.detach() for p in tm._flat_weights]
    ep = [ember.tensor(p.numpy()) for p in tp]
    tx, ex = torch.tensor(xn), ember.tensor(xn)
    name = mode.lower()
    if mode == "LSTM":
        t = torch.lstm(tx, [torch.tensor(h0), torch.tensor(-h0)], tp, True, 2, 0.0, False, True,
                       True)
        e = ember.lstm(ex, [ember.tensor(h0), ember.tensor(-h0)], ep, True, 2, 0.0, False, True,
                       True)
        assert len(e) == 3
    else:
        t = getattr(torch, name)(tx, torch.tensor(h0), tp, True, 2, 0.0, False, True, True)
        e = getattr(ember, name)(ex, ember.tensor(h0), ep, True, 2, 0.0, False, True, True)
        assert len(e) == 2
    for a, b in zip(e, t):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN_TANH"])
def test_double_backward_matches_pytorch(mode):
    """create_graph: the gradients are differentiable again (the recomputed path)."""
    tm, em = _pair(mode, num_layers=2)
    xn = np.random.RandomState(5).randn(4, 2, 4)
    results = []
    for lib, m in ((torch, tm), (ember, em)):
        x = lib.tensor(xn, requires_grad=True)
        out, _ = m(x)
        g, = lib.autograd.grad(out.sin().sum(), x, create_graph=True)
        (g * g).sum().backward()
        results.append([x.grad.detach().numpy()] + [p.grad.detach().numpy()
                                                   for p in m.parameters()])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


class _Count(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.names = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.names.append(func.__name__ if hasattr(func, "__name__") else str(func))
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("mode", MODES)
def test_one_layer_is_one_op(mode):
    """Each layer and direction is one _rnn_layer call forward and one _rnn_layer_backward call
    backward; no per-step gate ops reach the dispatcher."""
    _, em = _pair(mode, num_layers=2, bidirectional=True)
    x = ember.randn(6, 3, 4, dtype=ember.float64, requires_grad=True)
    with _Count() as fwd:
        out, _ = em(x)
    with _Count() as bwd:
        out.sum().backward()
    count = lambda names, n: sum(1 for s in names if s.split(".")[0] == n)  # noqa: E731
    assert count(fwd.names, "_rnn_layer") == 4
    assert count(bwd.names, "_rnn_layer_backward") == 4
    for gate_op in ("sigmoid", "tanh", "relu", "addmm", "mm", "linear"):
        assert count(fwd.names, gate_op) == 0 and count(bwd.names, gate_op) == 0, gate_op


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_dropout_between_layers_is_f_dropout(mode):
    """dropout > 0 while training: the layer output goes through F.dropout (same mask draw) before
    the next layer, and not after the last; nothing is dropped in eval mode."""
    _, em = _pair(mode, num_layers=2, dropout=0.5)
    _, l0 = _pair(mode)  # the first layer alone
    l1 = getattr(ember.nn, mode)(5, 5).double()
    for name in l0._flat_weights_names:
        getattr(l0, name).data.copy_(getattr(em, name).data)
        getattr(l1, name).data.copy_(getattr(em, name.replace("_l0", "_l1")).data)
    x = ember.randn(5, 3, 4, dtype=ember.float64)
    ember.manual_seed(7)
    out, _ = em(x)
    ember.manual_seed(7)
    mid, _ = l0(x)
    expected, _ = l1(ember.nn.functional.dropout(mid, 0.5, True))
    np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), rtol=1e-12)
    em.eval()
    out_eval, _ = em(x)
    plain, _ = l1(l0(x)[0])
    np.testing.assert_allclose(out_eval.detach().numpy(), plain.detach().numpy(), rtol=1e-12)
    assert not np.allclose(out_eval.detach().numpy(), out.detach().numpy())


@pytest.mark.parametrize("mode", MODES)
def test_meta_shapes(mode):
    """The Meta kernels give every result's shape: fake tracing sees the layer as one op."""
    from ember._subclasses.fake_tensor import FakeTensorMode
    _, em = _pair(mode, num_layers=2, bidirectional=True, batch_first=True)
    x = ember.randn(3, 6, 4, dtype=ember.float64, requires_grad=True)
    real_out, real_h = em(x)
    with FakeTensorMode(allow_non_fake_inputs=True) as fake_mode:
        fx = fake_mode.from_tensor(x)
        out, h = em(fx)
        assert tuple(out.shape) == tuple(real_out.shape)
        for a, b in zip(_states(h), _states(real_h)):
            assert tuple(a.shape) == tuple(b.shape)
        out.sum().backward()
        assert tuple(em.weight_hh_l1_reverse.grad.shape) == tuple(em.weight_hh_l1_reverse.shape)


def test_layer_rejects_mismatched_hidden_state():
    _, em = _pair("GRU")
    with pytest.raises(RuntimeError, match="Expected hidden size"):
        em(ember.randn(5, 3, 4, dtype=ember.float64), ember.zeros(1, 2, 5, dtype=ember.float64))
    with pytest.raises(RuntimeError, match="input.size\\(-1\\) must be equal to input_size"):
        em(ember.randn(5, 3, 6, dtype=ember.float64))


def test_empty_sequence_and_half_precision():
    """T == 0 returns the initial state (a copy); bfloat16 computes in float32 and rounds once."""
    _, em = _pair("LSTM")
    h0 = ember.randn(1, 2, 5, dtype=ember.float64)
    with ember.no_grad():
        out, (h, c) = em(ember.zeros(0, 2, 4, dtype=ember.float64), (h0, h0 * 2))
    assert tuple(out.shape) == (0, 2, 5)
    np.testing.assert_array_equal(h.numpy(), h0.numpy())
    h.add_(1)
    assert not np.array_equal(h.numpy(), h0.numpy())
    tm, em = _pair("GRU", "float32")
    xb = ember.randn(4, 2, 4).to(ember.bfloat16)
    out_b, _ = em.to(ember.bfloat16)(xb)
    tout, _ = tm.to(torch.bfloat16)(torch.tensor(xb.float().numpy()).to(torch.bfloat16))
    assert out_b.dtype is ember.bfloat16
    np.testing.assert_allclose(out_b.float().detach().numpy(), tout.float().detach().numpy(),
                               atol=2e-2)


@pytest.mark.parametrize("mode", MODES)
def test_packed_data_entry_points_match_pytorch(mode):
    """The .data overloads (packed input) with PyTorch's schema: outputs, states and gradients,
    both directions; each layer and direction is one _rnn_layer call here too."""
    tm, em = _pair(mode, num_layers=2, bidirectional=True)
    sizes = [3, 3, 2, 1, 1]
    rows = sum(sizes)
    xn = np.random.RandomState(6).randn(rows, 4)
    h0 = np.random.RandomState(7).randn(4, 3, 5)
    tp = [p.detach().requires_grad_() for p in tm._flat_weights]
    ep = [ember.tensor(p.detach().numpy(), requires_grad=True) for p in tp]
    tx, ex = torch.tensor(xn, requires_grad=True), ember.tensor(xn, requires_grad=True)
    tb, eb = torch.tensor(sizes), ember.tensor(sizes)
    th = [torch.tensor(h0, requires_grad=True), torch.tensor(-h0, requires_grad=True)]
    eh = [ember.tensor(h0, requires_grad=True), ember.tensor(-h0, requires_grad=True)]
    args = (True, 2, 0.0, False, True)
    with _Count() as fwd:
        if mode == "LSTM":
            e = ember.ops.aten.lstm.data(ex, eb, eh, ep, *args)
        else:
            e = getattr(ember.ops.aten, mode.lower()).data(ex, eb, eh[0], ep, *args)
    if mode == "LSTM":
        t = torch.ops.aten.lstm.data(tx, tb, th, tp, *args)
    else:
        t = getattr(torch.ops.aten, mode.lower()).data(tx, tb, th[0], tp, *args)
    assert sum(1 for n in fwd.names if n.split(".")[0] == "_rnn_layer") == 4
    for a, b in zip(e, t):
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-10,
                                   atol=1e-12)
    sum((r.sin() * (i + 1)).sum() for i, r in enumerate(t)).backward()
    sum((r.sin() * (i + 1)).sum() for i, r in enumerate(e)).backward()
    used = 2 if mode == "LSTM" else 1
    for a, b in [(ex, tx)] + list(zip(eh[:used], th[:used])) + list(zip(ep, tp)):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_packed_double_backward_matches_pytorch():
    tm, em = _pair("GRU", bidirectional=True)
    sizes = [2, 2, 1]
    xn = np.random.RandomState(8).randn(sum(sizes), 4)
    results = []
    for lib, m in ((torch, tm), (ember, em)):
        x = lib.tensor(xn, requires_grad=True)
        packed = lib.nn.utils.rnn.PackedSequence(x, lib.tensor(sizes))
        out, h = m(packed)
        g, = lib.autograd.grad(out.data.sin().sum() + (h * h).sum(), x, create_graph=True)
        (g * g).sum().backward()
        results.append([x.grad.detach().numpy()] + [p.grad.detach().numpy()
                                                   for p in m.parameters()])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN_TANH"])
def test_forward_ad_matches_pytorch(mode):
    """jvp through the layer ops (their forward derivative) as PyTorch's, input and h0
    tangents, both directions."""
    tm, em = _pair(mode, num_layers=2, bidirectional=True)
    xn = np.random.RandomState(9).randn(5, 2, 4)
    hn = np.random.RandomState(10).randn(4, 2, 5)
    vx = np.random.RandomState(11).randn(5, 2, 4)
    vh = np.random.RandomState(12).randn(4, 2, 5)
    results = []
    for lib, m in ((torch, tm), (ember, em)):
        def f(x, h):
            hx = (h, h * 0.5) if mode == "LSTM" else h
            out, hy = m(x, hx)
            return out, (hy[1] if mode == "LSTM" else hy)
        _, t = lib.func.jvp(f, (lib.tensor(xn), lib.tensor(hn)),
                            (lib.tensor(vx), lib.tensor(vh)))
        results.append([a.detach().numpy() for a in t])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


def test_module_argument_errors_match_pytorch():
    """RNNBase.check_forward_args: PyTorch's exception types and messages."""
    tm, em = _pair("LSTM", num_layers=2)
    tg, eg = _pair("GRU", batch_first=True)
    cases = [
        (tm, em, lambda lib: (lib.zeros(5, 3, 6, dtype=lib.float64),)),
        (tm, em, lambda lib: (lib.zeros(5, 3, 4, dtype=lib.float64),
                              (lib.zeros(1, 3, 5, dtype=lib.float64),
                               lib.zeros(2, 3, 5, dtype=lib.float64)))),
        (tm, em, lambda lib: (lib.zeros(5, 3, 4, dtype=lib.float64),
                              (lib.zeros(2, 3, 5, dtype=lib.float64),
                               lib.zeros(2, 2, 5, dtype=lib.float64)))),
        (tm, em, lambda lib: (lib.zeros(5, 4, dtype=lib.float64),
                              (lib.zeros(2, 1, 5, dtype=lib.float64),
                               lib.zeros(2, 1, 5, dtype=lib.float64)))),
        (tg, eg, lambda lib: (lib.zeros(3, 5, 4, dtype=lib.float64),
                              lib.zeros(1, 5, 5, dtype=lib.float64))),
        (tg, eg, lambda lib: (lib.zeros(3, 5, 4, dtype=lib.float64), lib.zeros(1, 5))),
        (tg, eg, lambda lib: (lib.zeros(5, 4, dtype=lib.float64),
                              lib.zeros(1, 1, 5, dtype=lib.float64))),
    ]
    for t_mod, e_mod, make in cases:
        with pytest.raises(Exception) as t_err:
            t_mod(*make(torch))
        with pytest.raises(type(t_err.value)) as e_err:
            e_mod(*make(ember))
        assert str(e_err.value) == str(t_err.value).replace("torch.", "ember.")


def test_lstm_projection_entry_point_matches_pytorch():
    """aten::lstm with weight_hr (proj_size): the step-by-step path, padded and packed."""
    torch.manual_seed(0)
    tm = torch.nn.LSTM(4, 5, num_layers=2, bidirectional=True, proj_size=3).double()
    em = ember.nn.LSTM(4, 5, num_layers=2, bidirectional=True, proj_size=3).double()
    for name, p in tm.named_parameters():
        getattr(em, name).data.copy_(ember.tensor(p.detach().numpy()))
    xn = np.random.RandomState(13).randn(6, 2, 4)
    h0, c0 = np.random.RandomState(14).randn(4, 2, 3), np.random.RandomState(15).randn(4, 2, 5)
    tp = [p.detach() for p in tm._flat_weights]
    ep = [ember.tensor(p.numpy()) for p in tp]
    t = torch.lstm(torch.tensor(xn), [torch.tensor(h0), torch.tensor(c0)], tp, True, 2, 0.0,
                   False, True, False)
    e = ember.lstm(ember.tensor(xn), [ember.tensor(h0), ember.tensor(c0)], ep, True, 2, 0.0,
                   False, True, False)
    for a, b in zip(e, t):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10, atol=1e-12)
    sizes = [2, 2, 1]
    xp = np.random.RandomState(16).randn(5, 4)
    t = torch.ops.aten.lstm.data(torch.tensor(xp), torch.tensor(sizes),
                                 [torch.tensor(h0), torch.tensor(c0)], tp, True, 2, 0.0, False,
                                 True)
    e = ember.ops.aten.lstm.data(ember.tensor(xp), ember.tensor(sizes),
                                 [ember.tensor(h0), ember.tensor(c0)], ep, True, 2, 0.0, False,
                                 True)
    for a, b in zip(e, t):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell"])
def test_cell_ops_match_pytorch(name):
    gates = {"lstm_cell": 4, "gru_cell": 3}.get(name, 1)
    rs = np.random.RandomState(17)
    x, h, c = rs.randn(3, 4), rs.randn(3, 5), rs.randn(3, 5)
    w_ih, w_hh, b_ih, b_hh = (rs.randn(gates * 5, 4), rs.randn(gates * 5, 5), rs.randn(gates * 5),
                              rs.randn(gates * 5))
    results = []
    for lib in (torch, ember):
        args = [lib.tensor(a, requires_grad=True) for a in (x, h, c, w_ih, w_hh, b_ih, b_hh)]
        hx = [args[1], args[2]] if name == "lstm_cell" else args[1]
        out = getattr(lib, name)(args[0], hx, *args[3:])
        out = out if isinstance(out, tuple) else (out,)
        sum((o.sin() * (i + 1)).sum() for i, o in enumerate(out)).backward()
        results.append([o.detach().numpy() for o in out] +
                       [a.grad.numpy() for a in args if a.grad is not None])
    assert len(results[0]) == len(results[1])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    for bad in (lambda lib: (lib.zeros(3, 6, dtype=lib.float64), lib.zeros(3, 5, dtype=lib.float64)),
                lambda lib: (lib.zeros(3, 4, dtype=lib.float64), lib.zeros(2, 5, dtype=lib.float64)),
                lambda lib: (lib.zeros(3, 4, dtype=lib.float64), lib.zeros(3, 6, dtype=lib.float64))):
        msgs = []
        for lib in (torch, ember):
            xx, hh = bad(lib)
            hx = [hh, hh] if name == "lstm_cell" else hh
            ws = [lib.tensor(a) for a in (w_ih, w_hh, b_ih, b_hh)]
            with pytest.raises(RuntimeError) as err:
                getattr(lib, name)(xx, hx, *ws)
            msgs.append(str(err.value))
        assert msgs[0] == msgs[1]


@pytest.mark.parametrize("specials", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_lstm_steps_in_c_match_numpy(dtype, specials, monkeypatch):
    """The LSTM step kernels of rnn_cells.py against the NumPy steps (EMBER_EAGER_CODEGEN=0):
    two layers, bidirectional, packed sequences of different lengths; with ``specials`` an inf
    and a NaN in the input (NaN and inf where NumPy has them)."""
    from helpers import has_c_compiler
    from ember._kernels.cpu import rnn_cells
    if not has_c_compiler():
        pytest.skip("no C compiler: the steps run in NumPy")
    calls = {"n": 0}
    real = rnn_cells.module

    class Counting:  # counts the step calls the layer kernels make
        def __init__(self, m):
            self.m = m

        def __getattr__(self, name):
            calls["n"] += 1
            return getattr(self.m, name)

    monkeypatch.setattr(rnn_cells, "module", lambda dt: real(dt) and Counting(real(dt)))
    _, em = _pair("LSTM", dtype, num_layers=2, bidirectional=True)
    xn = np.random.RandomState(3).randn(6, 3, 4)
    if specials:
        xn[2, 1, 0], xn[1, 2, 3] = np.inf, np.nan

    def run():
        x = ember.tensor(xn, dtype=getattr(ember, dtype), requires_grad=True)
        out, (h, c) = em(ember.nn.utils.rnn.pack_padded_sequence(x, [6, 4, 2]))
        (out.data.sum() + h.sum() * 2 + c.sum() * 3).backward()
        grads = [x.grad] + [p.grad for p in em.parameters()]
        em.zero_grad()
        return [out.data, h, c] + grads

    got = run()
    steps = 2 * 2 * 6  # 2 layers, 2 directions, 6 time steps: forward and backward each
    assert calls["n"] == 2 * steps
    monkeypatch.setenv("EMBER_EAGER_CODEGEN", "0")
    want = run()
    assert calls["n"] == 2 * steps  # none more: NumPy's steps ran
    tol = dict(rtol=2e-6, atol=1e-6) if dtype == "float32" else dict(rtol=1e-13, atol=1e-13)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.detach().numpy(), w.detach().numpy(), equal_nan=True, **tol)
