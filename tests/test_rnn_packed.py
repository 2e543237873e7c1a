"""nn.utils.rnn (packed sequences) and the recurrent layers on packed input, against PyTorch
with the same weights: outputs, final states and gradients."""
import numpy as np
import pytest

import ember
from ember.nn.utils import rnn as eru
from helpers import to_np


def _t(mod, a, **kw):
    return mod.tensor(np.asarray(a).tolist(), **kw)


def _same(a, b, tol=1e-5):
    a, b = (v if isinstance(v, np.ndarray) else to_np(v) for v in (a, b))
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


SEQS = [np.arange(1, 4), np.arange(4, 6), np.arange(6, 7)]


def test_pack_sequence_layout(torch):
    for enforce_sorted, order in [(True, [0, 1, 2]), (False, [1, 0, 2]), (False, [2, 0, 1])]:
        seqs = [SEQS[i] for i in order]
        p = eru.pack_sequence([_t(ember, s) for s in seqs], enforce_sorted=enforce_sorted)
        q = torch.nn.utils.rnn.pack_sequence([_t(torch, s) for s in seqs],
                                             enforce_sorted=enforce_sorted)
        for a, b in zip(p, q):
            assert (a is None) == (b is None)
            if a is not None:
                assert a.tolist() == b.tolist() and a.dtype.name == str(b.dtype).split(".")[1]
        assert isinstance(p, eru.PackedSequence) and isinstance(p, tuple)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("enforce_sorted", [True, False])
def test_pack_pad_roundtrip(torch, batch_first, enforce_sorted):
    rng = np.random.default_rng(0)
    lengths = [5, 3, 2, 1] if enforce_sorted else [2, 5, 1, 3]
    x = rng.standard_normal((4, 5, 3) if batch_first else (5, 4, 3)).astype(np.float32)
    p = eru.pack_padded_sequence(_t(ember, x), lengths, batch_first=batch_first,
                                 enforce_sorted=enforce_sorted)
    q = torch.nn.utils.rnn.pack_padded_sequence(_t(torch, x), lengths, batch_first=batch_first,
                                                enforce_sorted=enforce_sorted)
    _same(p.data, q.data)
    assert p.batch_sizes.tolist() == q.batch_sizes.tolist()
    for kw in [{}, {"padding_value": -1.0}, {"total_length": 7}]:
        a, la = eru.pad_packed_sequence(p, batch_first=batch_first, **kw)
        b, lb = torch.nn.utils.rnn.pad_packed_sequence(q, batch_first=batch_first, **kw)
        _same(a, b)
        assert la.tolist() == lb.tolist() and la.dtype == ember.int64


def test_pad_sequence(torch):
    rng = np.random.default_rng(1)
    seqs = [rng.standard_normal((n, 2)).astype(np.float32) for n in (3, 5, 1)]
    for kw in [{}, {"batch_first": True}, {"padding_value": 9.0, "padding_side": "left"},
               {"batch_first": True, "padding_side": "left"}]:
        _same(eru.pad_sequence([_t(ember, s) for s in seqs], **kw),
              torch.nn.utils.rnn.pad_sequence([_t(torch, s) for s in seqs], **kw))
    padded = eru.pad_sequence([_t(ember, s) for s in seqs], batch_first=True)
    out = eru.unpad_sequence(padded, ember.tensor([3, 5, 1]), batch_first=True)
    for o, s in zip(out, seqs):
        _same(o, s)
    p = eru.pack_sequence([_t(ember, s) for s in seqs], enforce_sorted=False)
    for o, s in zip(eru.unpack_sequence(p), seqs):
        _same(o, s)


def test_errors(torch):
    x = ember.zeros(3, 2)
    cases = [
        (lambda m: m.pack_padded_sequence(m_x(m), [1, 3]), RuntimeError,
         "`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. You "
         "can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to "
         "sidestep this requirement if you do not need ONNX exportability."),
        (lambda m: m.pack_padded_sequence(m_x(m), [3, 0]), RuntimeError,
         "Length of all samples has to be greater than 0, but found an element in 'lengths' "
         "that is <= 0"),
        (lambda m: m.pack_padded_sequence(m_x(m), [3]), RuntimeError,
         "Expected `len(lengths)` to be equal to batch_size, but got 1 (batch_size=2)"),
        (lambda m: m.pad_sequence([m_x(m)], padding_side="mid"), RuntimeError,
         "Expected padding_side to be one of left or right, but got mid."),
        (lambda m: m.pad_sequence([]), RuntimeError, "received an empty list of sequences"),
        (lambda m: m.pad_packed_sequence(m.pack_padded_sequence(m_x(m), [3, 2]),
                                         total_length=2), ValueError,
         "Expected total_length to be at least the length of the longest sequence in input, "
         "but got total_length=2 and max sequence length being 3"),
    ]

    def m_x(m):
        return x if m is eru else torch.zeros(3, 2)

    for fn, exc, msg in cases:
        for m in (eru, torch.nn.utils.rnn):
            with pytest.raises(exc) as info:
                fn(m)
            assert str(info.value) == msg


def _pair(torch, kind, **kw):
    ember.manual_seed(0)
    ours = getattr(ember.nn, kind)(3, 4, **kw)
    theirs = getattr(torch.nn, kind)(3, 4, **kw)
    with torch.no_grad():
        for name, p in theirs.named_parameters():
            p.copy_(torch.tensor(to_np(getattr(ours, name))))
    return ours, theirs


CONFIGS = [("RNN", {}), ("RNN", {"nonlinearity": "relu", "num_layers": 2}),
           ("GRU", {"bidirectional": True}), ("LSTM", {}),
           ("LSTM", {"num_layers": 2, "bidirectional": True}),
           ("LSTM", {"proj_size": 2, "bidirectional": True}), ("GRU", {"batch_first": True})]


@pytest.mark.parametrize("kind,kw", CONFIGS)
@pytest.mark.parametrize("enforce_sorted,with_hx", [(True, False), (False, True)])
def test_rnn_packed_matches_torch(torch, kind, kw, enforce_sorted, with_hx):
    ours, theirs = _pair(torch, kind, **kw)
    rng = np.random.default_rng(2)
    batch_first = kw.get("batch_first", False)
    lengths = [4, 3, 3, 1] if enforce_sorted else [3, 4, 1, 3]
    x = rng.standard_normal((4, 4, 3) if batch_first else (4, 4, 3)).astype(np.float32)
    ex = _t(ember, x, requires_grad=True)
    tx = _t(torch, x, requires_grad=True)
    dirs = 2 if kw.get("bidirectional") else 1
    layers = kw.get("num_layers", 1)
    hsize = kw.get("proj_size", 4) or 4
    hx_e = hx_t = None
    if with_hx:
        h = rng.standard_normal((layers * dirs, 4, hsize)).astype(np.float32)
        hx_e, hx_t = _t(ember, h, requires_grad=True), _t(torch, h, requires_grad=True)
        if kind == "LSTM":
            c = rng.standard_normal((layers * dirs, 4, 4)).astype(np.float32)
            hx_e = (hx_e, _t(ember, c, requires_grad=True))
            hx_t = (hx_t, _t(torch, c, requires_grad=True))
    pe = eru.pack_padded_sequence(ex, lengths, batch_first=batch_first,
                                  enforce_sorted=enforce_sorted)
    pt = torch.nn.utils.rnn.pack_padded_sequence(tx, lengths, batch_first=batch_first,
                                                 enforce_sorted=enforce_sorted)
    oe, he = ours(pe, hx_e)
    ot, ht = theirs(pt, hx_t)
    assert isinstance(oe, eru.PackedSequence)
    _same(oe.data, ot.data)
    assert oe.batch_sizes.tolist() == ot.batch_sizes.tolist()
    he_list = list(he) if kind == "LSTM" else [he]
    ht_list = list(ht) if kind == "LSTM" else [ht]
    for a, b in zip(he_list, ht_list):
        _same(a, b)
    pad_e, _ = eru.pad_packed_sequence(oe, batch_first=batch_first)
    pad_t, _ = torch.nn.utils.rnn.pad_packed_sequence(ot, batch_first=batch_first)
    w = rng.standard_normal(tuple(pad_t.shape)).astype(np.float32)
    loss_e = (pad_e * _t(ember, w)).sum() + sum((h * h).sum() for h in he_list)
    loss_t = (pad_t * _t(torch, w)).sum() + sum((h * h).sum() for h in ht_list)
    loss_e.backward()
    loss_t.backward()
    _same(ex.grad, tx.grad, 1e-4)
    for name, p in theirs.named_parameters():
        _same(getattr(ours, name).grad, p.grad, 1e-4)
    if with_hx:
        for a, b in zip(hx_e if kind == "LSTM" else [hx_e], hx_t if kind == "LSTM" else [hx_t]):
            _same(a.grad, b.grad, 1e-4)


def test_lstm_tagger_training_loop():
    """An LSTM tagger over packed variable-length batches, written as PyTorch code, learns."""
    torch = ember
    nn = torch.nn
    from ember.nn.utils.rnn import pack_sequence, pad_packed_sequence

    class Tagger(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(10, 8)
            self.lstm = nn.LSTM(8, 16, batch_first=True, bidirectional=True)
            self.out = nn.Linear(32, 2)

        def forward(self, seqs):
            packed = pack_sequence([self.emb(s) for s in seqs], enforce_sorted=False)
            out, _ = self.lstm(packed)
            padded, lengths = pad_packed_sequence(out, batch_first=True)
            return self.out(padded), lengths

    torch.manual_seed(0)
    rng = np.random.default_rng(3)
    # Tag: token is even -> 0, odd -> 1.
    seqs = [torch.tensor(rng.integers(0, 10, n).tolist()) for n in (5, 3, 7, 2)]
    targets = eru.pad_sequence([s % 2 for s in seqs], batch_first=True, padding_value=-100)
    model = Tagger()
    opt = torch.optim.Adam(model.parameters(), lr=0.05)
    losses = []
    for _ in range(30):
        logits, lengths = model(seqs)
        assert lengths.tolist() == [5, 3, 7, 2]
        loss = nn.functional.cross_entropy(logits.reshape(-1, 2), targets.reshape(-1),
                                           ignore_index=-100)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    assert losses[-1] < 0.1 * losses[0]
