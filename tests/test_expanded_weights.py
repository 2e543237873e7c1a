"""``nn.utils._per_sample_grad.call_for_per_sample_grads`` and ``nn.utils._expanded_weights``
(ExpandedWeight, per-sample gradients through ``__torch_function__``) against PyTorch: for each
supported layer (Linear, Conv1d/2d/3d with stride, padding, dilation, groups and string padding;
Embedding, LayerNorm, GroupNorm, InstanceNorm; RNN/GRU/LSTM, batch first or not, and packed
sequences) the same module, weights and input in both libraries, comparing each parameter's
``grad_sample`` and the input's gradient, with loss reduction "sum" and "mean"; one case also
against a loop of per-example backward passes; and the errors (type and message) for bad
arguments and unsupported ops."""
import importlib

import numpy as np
import pytest

import ember
import ember.nn.utils._per_sample_grad  # noqa: F401
from helpers import to_np

_rng = np.random.default_rng(0)


@pytest.fixture(scope="module", autouse=True)
def _torch_modules():
    """PyTorch's modules imported (torch.nn.utils does not import them itself)."""
    pytest.importorskip("torch")
    importlib.import_module("torch.nn.utils._per_sample_grad")


def _call(lib, module, args, batch_size=None, loss_reduction="sum", batch_first=True):
    """``call_for_per_sample_grads(module, ...)(*args)``, ``lib`` either library."""
    return lib.nn.utils._per_sample_grad.call_for_per_sample_grads(
        module, batch_size=batch_size, loss_reduction=loss_reduction,
        batch_first=batch_first)(*args)


def _first(out):
    """A module's (first) output tensor."""
    while isinstance(out, (tuple, list)):
        out = out[0]
    return out


def _run(lib, build, inputs, weights, **kwargs):
    """Per-sample gradients in ``lib``: the module ``build(lib.nn)`` with ``weights`` (a state
    dict of arrays, or the module's own), ``inputs`` (arrays; float ones require grad), the loss
    the output's dot product with a fixed array, or its mean with loss_reduction "mean".
    Returns grad_sample of each parameter and the inputs' gradients, and the module."""
    lib.manual_seed(0)
    module = build(lib.nn)
    if weights is not None:
        module.load_state_dict({k: lib.tensor(v) for k, v in weights.items()})
    args = [lib.tensor(a) for a in inputs]
    for a in args:
        if a.is_floating_point():
            a.requires_grad_()
    out = _first(_call(lib, module, args, **kwargs))
    cot = lib.tensor(np.random.default_rng(1).standard_normal(tuple(out.shape))
                     .astype(np.float32))
    loss = out * cot
    loss = loss.mean() if kwargs.get("loss_reduction") == "mean" else loss.sum()
    loss.backward()
    result = {n: p.grad_sample for n, p in module.named_parameters()}
    for n, p in module.named_parameters():
        assert p.grad is None, n  # per-sample gradients only
    for i, a in enumerate(args):
        if a.requires_grad:
            result[f"input{i}"] = a.grad
    return result, module


def _x(*shape):
    return _rng.standard_normal(shape).astype(np.float32)


def _packed(nn, rnn, **kw):
    """An RNN taking a padded batch, packing it (lengths 5, 3, 2, 1) inside."""
    class Packed(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = getattr(nn, rnn)(3, 4, **kw)

        def forward(self, x):
            packed = nn.utils.rnn.pack_padded_sequence(x, [5, 3, 2, 1], batch_first=True)
            return self.rnn(packed)[0]
    return Packed()


# name -> (module builder, input arrays, call_for_per_sample_grads keywords)
CASES = {
    "linear": (lambda nn: nn.Linear(4, 3), [_x(5, 4)], {}),
    "linear 3d input": (lambda nn: nn.Linear(4, 3), [_x(5, 2, 4)], {}),
    "linear no bias mean": (lambda nn: nn.Linear(4, 3, bias=False), [_x(6, 4)],
                            {"loss_reduction": "mean"}),
    "conv1d": (lambda nn: nn.Conv1d(4, 6, 3, stride=2, padding=1, dilation=2, groups=2),
               [_x(3, 4, 11)], {}),
    "conv1d same": (lambda nn: nn.Conv1d(3, 2, 4, padding="same", dilation=2),
                    [_x(3, 3, 10)], {}),
    "conv2d": (lambda nn: nn.Conv2d(3, 4, 3, stride=(2, 1), padding=(1, 2),
                                         dilation=(1, 2)), [_x(4, 3, 9, 8)], {}),
    "conv2d groups": (lambda nn: nn.Conv2d(4, 6, (2, 3), stride=2, padding=1, groups=2),
                      [_x(3, 4, 7, 8)], {"loss_reduction": "mean"}),
    "conv2d same": (lambda nn: nn.Conv2d(2, 3, (2, 3), padding="same"), [_x(2, 2, 6, 5)],
                    {}),
    "conv2d valid": (lambda nn: nn.Conv2d(2, 3, 3, padding="valid"), [_x(2, 2, 6, 5)], {}),
    # 32 samples or more: the unfold path instead of the grouped convolution
    "conv2d large batch": (lambda nn: nn.Conv2d(2, 4, 3, stride=2, padding=1, dilation=2),
                           [_x(33, 2, 7, 7)], {}),
    "conv3d": (lambda nn: nn.Conv3d(2, 4, (2, 3, 2), stride=(1, 2, 1), padding=(1, 0, 1),
                                         dilation=(2, 1, 1)), [_x(3, 2, 5, 6, 4)], {}),
    "conv3d groups": (lambda nn: nn.Conv3d(4, 2, 2, stride=2, padding=1, groups=2),
                      [_x(2, 4, 4, 5, 3)], {}),
    "conv3d large batch": (lambda nn: nn.Conv3d(2, 3, 2, stride=(1, 2, 1), padding=1),
                           [_x(32, 2, 3, 4, 3)], {}),
    "embedding": (lambda nn: nn.Embedding(7, 3, padding_idx=0),
                  [_rng.integers(0, 7, (4, 5))], {}),
    "embedding mean": (lambda nn: nn.Embedding(6, 2), [_rng.integers(0, 6, (3, 2, 2))],
                       {"loss_reduction": "mean"}),
    "layer_norm": (lambda nn: nn.LayerNorm((3, 4)), [_x(5, 2, 3, 4)], {}),
    "layer_norm last dim": (lambda nn: nn.LayerNorm(4), [_x(3, 4)],
                            {"loss_reduction": "mean"}),
    "group_norm": (lambda nn: nn.GroupNorm(2, 4), [_x(3, 4, 5, 2)], {}),
    "instance_norm1d": (lambda nn: nn.InstanceNorm1d(3, affine=True), [_x(4, 3, 6)], {}),
    "instance_norm2d": (lambda nn: nn.InstanceNorm2d(2, affine=True), [_x(3, 2, 4, 5)],
                        {"loss_reduction": "mean"}),
    "model": (lambda nn: nn.Sequential(nn.Conv2d(1, 4, 3), nn.GroupNorm(2, 4), nn.ReLU(),
                                            nn.Flatten(), nn.Linear(4 * 6 * 6, 3),
                                            nn.LayerNorm(3)), [_x(5, 1, 8, 8)],
              {"loss_reduction": "mean"}),
    "rnn": (lambda nn: nn.RNN(3, 4, num_layers=2, batch_first=True), [_x(5, 6, 3)], {}),
    "rnn relu batch second": (lambda nn: nn.RNN(3, 4, nonlinearity="relu",
                                                     bidirectional=True),
                              [_x(5, 6, 3)], {"batch_first": False}),
    "gru": (lambda nn: nn.GRU(3, 4, batch_first=True, bidirectional=True), [_x(4, 5, 3)],
            {"loss_reduction": "mean"}),
    "gru packed": (lambda nn: _packed(nn, "GRU", batch_first=True),
                   [_x(4, 5, 3)], {}),
    "rnn packed bidirectional": (lambda nn: _packed(nn, "RNN",
                                                         batch_first=True, bidirectional=True),
                                 [_x(4, 5, 3)], {}),
    "lstm packed": (lambda nn: _packed(nn, "LSTM", batch_first=True),
                    [_x(4, 5, 3)], {}),
    # (PyTorch's CPU LSTM takes mkldnn_rnn_layer, which ExpandedWeights refuses, when the
    # input does not require grad: these cases' inputs do)
    "lstm": (lambda nn: nn.LSTM(3, 4, num_layers=2, batch_first=True), [_x(3, 5, 3)], {}),
    "lstm proj batch second": (lambda nn: nn.LSTM(3, 4, proj_size=2), [_x(5, 3, 3)],
                               {"batch_first": False}),
    # training with dropout between layers: PyTorch's decompositions drop nothing
    "gru dropout": (lambda nn: nn.GRU(3, 4, num_layers=3, dropout=0.5), [_x(5, 3, 3)],
                    {"batch_first": False}),
}


@pytest.mark.parametrize("name", list(CASES))
def test_grad_sample_matches_pytorch(torch, name):
    build, inputs, kwargs = CASES[name]
    theirs, module = _run(torch, build, inputs, None, **kwargs)
    weights = {k: v.detach().numpy() for k, v in module.state_dict().items()}
    mine, _ = _run(ember, build, inputs, weights, **kwargs)
    assert sorted(mine) == sorted(theirs)
    for key, ref in theirs.items():
        got = mine[key]
        assert type(got) is ember.Tensor, (key, type(got))
        assert tuple(got.shape) == tuple(ref.shape), (key, got.shape, ref.shape)
        np.testing.assert_allclose(to_np(got), ref.detach().numpy(), rtol=1e-4, atol=1e-5,
                                   err_msg=key)


def _packed_lstm(lib, weights, input_grad):
    """An LSTM called on a PackedSequence (lengths 6, 5, 4, 3, 2), the batch size given (the
    sequence's leaves have different first sizes, so it cannot be inferred)."""
    lib.manual_seed(0)
    m = lib.nn.LSTM(3, 4, bidirectional=True)
    if weights is not None:
        m.load_state_dict({k: lib.tensor(v) for k, v in weights.items()})
    x = lib.tensor(np.random.default_rng(2).standard_normal((6, 5, 3)).astype(np.float32))
    x.requires_grad_(input_grad)
    packed = lib.nn.utils.rnn.pack_padded_sequence(x, [6, 5, 4, 3, 2])
    out = _call(lib, m, [packed], batch_size=5)[0]
    out.data.pow(2).sum().backward()
    return m


def test_packed_sequence_input(torch):
    theirs = _packed_lstm(torch, None, True)
    weights = {k: v.detach().numpy() for k, v in theirs.state_dict().items()}
    # (PyTorch's CPU LSTM decomposition picks mkldnn_rnn_layer, which ExpandedWeights refuses,
    # for an input that does not require grad; ember has no such kernel and decomposes, and
    # grad_sample does not depend on the input's requires_grad)
    for input_grad in (True, False):
        mine = _packed_lstm(ember, weights, input_grad)
        for (n, p), (_, q) in zip(mine.named_parameters(), theirs.named_parameters()):
            np.testing.assert_allclose(to_np(p.grad_sample), q.grad_sample.numpy(), rtol=1e-4,
                                       atol=1e-6, err_msg=n)
    with pytest.raises(RuntimeError, match="found at least one input with batch size 20 and "
                                           "one with batch size 6"):
        _call(ember, ember.nn.LSTM(3, 4),
              [ember.nn.utils.rnn.pack_padded_sequence(ember.ones(6, 5, 3), [6, 5, 4, 3, 2])])


def test_grad_sample_equals_per_example_backward():
    """A small conv net's grad_sample equals the gradients of each example alone."""
    ember.manual_seed(0)
    nn = ember.nn
    model = nn.Sequential(nn.Conv2d(2, 3, 3, padding=1, groups=1), nn.GroupNorm(1, 3),
                          nn.Tanh(), nn.Flatten(), nn.Linear(3 * 5 * 5, 2))
    x = ember.randn(4, 2, 5, 5)
    y = ember.tensor([0, 1, 1, 0])
    out = _call(ember, model, [x])
    ember.nn.functional.cross_entropy(out, y, reduction="sum").backward()
    batched = {n: p.grad_sample for n, p in model.named_parameters()}
    for p in model.parameters():
        del p.grad_sample
    for i in range(4):
        model.zero_grad()
        ember.nn.functional.cross_entropy(model(x[i:i + 1]), y[i:i + 1],
                                          reduction="sum").backward()
        for n, p in model.named_parameters():
            np.testing.assert_allclose(to_np(batched[n][i]), to_np(p.grad), rtol=1e-4,
                                       atol=1e-6, err_msg=f"{n}[{i}]")


def test_grad_sample_dtype_and_accumulation(torch):
    """float64 stays float64; a second call before grad_sample is cleared is refused, and two
    uses of one layer in a forward add their contributions."""
    lin = ember.nn.Linear(3, 2).double()
    x = ember.randn(4, 3, dtype=ember.float64)
    _call(ember, lin, [x]).sum().backward()
    assert lin.weight.grad_sample.dtype == ember.float64
    with pytest.raises(RuntimeError, match="Current Expanded Weights accumulates the gradients"):
        ember.nn.utils._per_sample_grad.call_for_per_sample_grads(lin)

    class Twice(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = ember.nn.Linear(3, 3)

        def forward(self, x):
            return self.lin(self.lin(x))
    twice = Twice()
    tw = torch.nn.Linear(3, 3)
    twice.lin.load_state_dict({k: ember.tensor(v.detach().numpy())
                               for k, v in tw.state_dict().items()})
    xs = _x(4, 3)
    _call(ember, twice, [ember.tensor(xs)]).sum().backward()

    class TTwice(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = tw

        def forward(self, x):
            return self.lin(self.lin(x))
    ttwice = TTwice()
    _call(torch, ttwice, [torch.tensor(xs)]).sum().backward()
    np.testing.assert_allclose(to_np(twice.lin.weight.grad_sample),
                               tw.weight.grad_sample.numpy(), rtol=1e-5, atol=1e-6)


# --- errors: each raised in both libraries, same type and message ------------------------------

def _errors():
    """name -> function of the library, raising."""
    def psg(lib):
        return lib.nn.utils._per_sample_grad.call_for_per_sample_grads

    def ew(lib):
        mod = lib.nn.utils._expanded_weights
        return mod.ExpandedWeight

    def lin(lib):
        lib.manual_seed(0)
        return lib.nn.Linear(3, 2)

    def call(lib, module, *args, **kw):
        return psg(lib)(module, **kw)(*args)

    def expanded(lib, shape=(2, 3), batch=4, reduction="sum"):
        return ew(lib)(lib.nn.Parameter(lib.ones(shape)), batch, reduction)

    F = lambda lib: lib.nn.functional  # noqa: E731
    return {
        "loss_reduction": lambda lib: psg(lib)(lin(lib), loss_reduction="avg"),
        "not a module": lambda lib: psg(lib)(lambda x: x),
        "batch size type": lambda lib: psg(lib)(lin(lib), batch_size=2.0),
        "batch size positive": lambda lib: psg(lib)(lin(lib), batch_size=0),
        "batch size mismatch": lambda lib: call(lib, lin(lib), lib.ones(4, 3),
                                                lib.ones(5, 3)),
        "no tensor": lambda lib: psg(lib)(lin(lib))([1.0, 2.0, 3.0]),
        # (batch_first=False only changes where the batch size is read: linear itself still
        # takes the batch first)
        "batch second linear": lambda lib: call(lib, lin(lib), lib.ones(2, 5, 3),
                                                batch_first=False),
        "explicit batch size wrong": lambda lib: call(lib, lin(lib), lib.ones(4, 3),
                                                      batch_size=5),
        "unsupported op": lambda lib: lib.add(expanded(lib), 1),
        "unsupported method": lambda lib: expanded(lib).sum(),
        "unsupported operator": lambda lib: expanded(lib) * 2,
        "unsupported module": lambda lib: call(lib, lib.nn.BatchNorm1d(3), lib.ones(4, 3)),
        "unsupported property": lambda lib: expanded(lib).requires_grad,
        "not a tensor": lambda lib: ew(lib)([1.0], 2, "sum"),
        "no requires_grad": lambda lib: ew(lib)(lib.ones(2), 2, "sum"),
        "linear unbatched": lambda lib: F(lib).linear(lib.ones(3), expanded(lib)),
        "input is expanded": lambda lib: F(lib).linear(expanded(lib, (4, 3)),
                                                       expanded(lib)),
        "input not a tensor": lambda lib: F(lib).embedding(3, expanded(lib)),
        "zero batch": lambda lib: F(lib).linear(lib.ones(0, 3), expanded(lib, batch=0)),
        "0-dim input": lambda lib: F(lib).conv1d(lib.tensor(1.0), expanded(lib, (3, 2, 2))),
        "layer_norm normalized shape like input": lambda lib: F(lib).layer_norm(
            lib.tensor(1.0), (), expanded(lib, ())),
        "mixed parameters": lambda lib: F(lib).linear(
            lib.ones(4, 3), expanded(lib), lib.nn.Parameter(lib.ones(2))).sum().backward(),
        "loss reductions differ": lambda lib: F(lib).linear(
            lib.ones(4, 3), expanded(lib), expanded(lib, (2,), reduction="mean")),
        "embedding 1d": lambda lib: F(lib).embedding(lib.tensor([0, 1]), expanded(lib)),
        "layer_norm over batch": lambda lib: F(lib).layer_norm(
            lib.ones(4, 3), (4, 3), expanded(lib, (4, 3))),
        "conv unbatched": lambda lib: F(lib).conv1d(lib.ones(2, 5), expanded(lib, (3, 2, 2),
                                                                              batch=2)),
        "conv3d dilation large batch": lambda lib: call(
            lib, lib.nn.Conv3d(1, 1, 2, dilation=2), lib.ones(33, 1, 4, 4, 4)).sum().backward(),
        "group_norm no expanded bias": lambda lib: F(lib).group_norm(
            lib.ones(4, 2, 3), 1, weight=expanded(lib, (2,))).sum().backward(),
    }


ERRORS = _errors()


@pytest.mark.parametrize("name", list(ERRORS))
def test_errors_match_pytorch(torch, name):
    fn = ERRORS[name]
    with pytest.raises(Exception) as theirs:
        fn(torch)
    with pytest.raises(Exception) as mine:
        fn(ember)
    assert type(mine.value).__name__ == type(theirs.value).__name__, (mine.value, theirs.value)
    want = str(theirs.value).replace("torch.", "ember.").replace("pytorch/ember", "pytorch/pytorch")
    if name == "conv unbatched":  # names the function object, whose repr differs
        want, got = want.split(" with")[0], str(mine.value).split(" with")[0]
    elif "AttributeError" in type(theirs.value).__name__:  # names the ctx's class
        want, got = want.split("'")[-2], str(mine.value).split("'")[-2]
    else:
        got = str(mine.value)
    assert got == want
