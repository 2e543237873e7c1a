"""``ember.compile(mode="reduce-overhead")`` on CUDA: compiled graphs captured into CUDA graphs
and replayed (``ember/_inductor/cudagraphs.py``), on the simulated device in CI and on a GPU
where there is one."""
import logging
import os
import sys

import numpy as np
import pytest

import ember
from ember._inductor import config, cudagraphs

pytestmark = pytest.mark.usefixtures("cuda_device")


@pytest.fixture(autouse=True)
def fresh():
    ember._dynamo.reset()
    cudagraphs.counters.clear()
    yield
    ember._dynamo.reset()


def _np(t):
    return t.detach().cpu().numpy()


def _gpt(seed=0):
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))
    import gpt
    ember.manual_seed(seed)
    return gpt.build(ember, context=16, width=32, n_layer=2, n_head=2, device="cuda")


def test_a_compiled_gpt_trains_as_eager_with_its_graphs_replayed():
    eager, model = _gpt(), _gpt()
    model.load_state_dict(eager.state_dict())
    compiled = ember.compile(model, mode="reduce-overhead")
    gen = ember.Generator().manual_seed(1)
    opts = [ember.optim.SGD(m.parameters(), lr=0.1) for m in (eager, model)]
    for step in range(4):
        x, y = (ember.randint(65, (2, 16), generator=gen).cuda() for _ in range(2))
        for opt in opts:
            opt.zero_grad(set_to_none=True)
        expect, got = eager(x, y), compiled(x, y)
        expect.backward()
        got.backward()
        for opt in opts:
            opt.step()
        assert float(got) == pytest.approx(float(expect), rel=1e-5)
    # forward and backward each captured once, then one replay per step
    assert cudagraphs.counters["recordings"] == 2
    assert cudagraphs.counters["replays"] == 8
    assert cudagraphs.counters["skips"] == cudagraphs.counters["eager"] == 0
    for p, q in zip(eager.parameters(), model.parameters()):
        assert np.allclose(_np(p), _np(q), atol=1e-5)


def test_kept_outputs_keep_their_values_after_later_replays():
    """PyTorch overwrites them (cudagraph trees raise when they are read); ember moves an output
    still held out of the graph's memory before the next replay."""
    w = ember.randn(8, 8, device="cuda")

    @ember.compile(mode="reduce-overhead")
    def f(x):
        return (x @ w).relu() + 1, x.sum()

    xs = [ember.randn(4, 8, device="cuda") for _ in range(4)]
    kept = [f(x) for x in xs]
    assert cudagraphs.counters["recordings"] == 1 and cudagraphs.counters["replays"] == 4
    for x, (a, s) in zip(xs, kept):
        assert np.allclose(_np(a), np.maximum(_np(x) @ _np(w), 0) + 1, atol=1e-5)
        assert np.isclose(float(s), _np(x).sum(), atol=1e-5)


def test_an_output_let_go_is_not_copied():
    @ember.compile(mode="reduce-overhead")
    def f(x):
        return x * 2

    x = ember.randn(16, device="cuda")
    f(x)
    rec = next(iter(next(iter(_graphed())).recordings.values()))
    pool_ptr = rec.pool_storages[0].data_ptr()
    out = f(x)
    assert out.data_ptr() == pool_ptr  # handed out in the graph's memory
    del out
    out = f(x + 1)  # the last output was let go: nothing to move, the same memory again
    assert out.data_ptr() == pool_ptr
    kept = out
    out = f(x)  # ``kept`` still holds the last output: it moves
    assert out.data_ptr() == pool_ptr and kept.data_ptr() != pool_ptr
    assert np.allclose(_np(kept), (_np(x) + 1) * 2)


def _graphed():
    """The CUDAGraphed callables of the compiled graphs made so far."""
    import gc
    return [o for o in gc.get_objects() if isinstance(o, cudagraphs.CUDAGraphed)]


def test_two_forwards_before_backward_give_eager_gradients():
    """The first call's saved values are moved by the second call's replay: its backward finds
    them elsewhere and runs as compiled, not replayed."""
    lin = ember.nn.Linear(8, 4).cuda()
    compiled = ember.compile(lin, mode="reduce-overhead")
    x1, x2 = (ember.randn(3, 8, device="cuda", requires_grad=True) for _ in range(2))
    l1 = compiled(x1).tanh().sum()
    l2 = compiled(x2).tanh().sum()
    (l1 + 2 * l2).backward()
    got = [_np(t.grad) for t in (x1, x2, lin.weight)]
    for t in (x1, x2, lin.weight, lin.bias):
        t.grad = None
    (lin(x1).tanh().sum() + 2 * lin(x2).tanh().sum()).backward()
    for g, t in zip(got, (x1, x2, lin.weight)):
        assert np.allclose(g, _np(t.grad), atol=1e-5)
    # the second call's backward replayed; the first's ran as compiled
    assert cudagraphs.counters["eager"] == 1 and cudagraphs.counters["replays"] == 3


def test_graphs_of_other_sizes_are_captured_apart():
    @ember.compile(mode="reduce-overhead", dynamic=True)
    def f(x):
        return x.cos() * x.shape[0]

    for n in (4, 6, 4, 6):
        x = ember.randn(n, 3, device="cuda")
        assert np.allclose(_np(f(x)), np.cos(_np(x)) * n, atol=1e-6)
    assert cudagraphs.counters["recordings"] == 2 and cudagraphs.counters["replays"] == 4


def test_an_input_moved_by_the_caller_runs_the_graph_as_compiled():
    lin = ember.nn.Linear(4, 4).cuda()
    compiled = ember.compile(lin, mode="reduce-overhead")
    x = ember.randn(2, 4, device="cuda")
    with ember.no_grad():
        compiled(x)
        lin.weight.data = lin.weight.data * 3  # a parameter at another address
        got = compiled(x)
        assert np.allclose(_np(got), _np(x) @ _np(lin.weight).T + _np(lin.bias), atol=1e-5)
    assert cudagraphs.counters["eager"] == 1 and cudagraphs.counters["replays"] == 1


def test_a_graph_with_a_cpu_tensor_runs_as_compiled_and_says_why(caplog):
    def f(x, c):
        return x + c.to(x.device), c * 2
    args = (ember.randn(4, device="cuda"), ember.randn(4))
    ember._logging.set_logs(perf_hints=True)
    try:
        with caplog.at_level(logging.INFO, logger="ember._inductor.__perf_hints"):
            outs = [ember.compile(f, mode="reduce-overhead")(*args) for _ in range(2)]
    finally:
        ember._logging.set_logs()
    assert "skipping cudagraphs due to cpu device" in caplog.text
    assert cudagraphs.counters["skips"] == 1 and cudagraphs.counters["replays"] == 0
    assert np.allclose(_np(outs[0][0]), _np(args[0]) + _np(args[1]))


def test_replayed_dropout_draws_eagers_numbers_anew_at_each_replay():
    """The graph's random ops take the generator's offsets at each replay: the masks eager
    draws from the same seed, new ones each call, and the generator left where eager leaves
    it."""
    def f(x):
        return ember.nn.functional.dropout(x, 0.5) * 3

    x = ember.ones(4096, device="cuda")
    compiled = ember.compile(f, mode="reduce-overhead")
    runs = []
    for fn in (f, compiled):
        ember.cuda.manual_seed(5)
        runs.append([_np(fn(x)) for _ in range(3)] + [_np(ember.rand(3, device="cuda"))])
    assert cudagraphs.counters["recordings"] == 1 and cudagraphs.counters["replays"] == 3
    for a, b in zip(*runs):
        assert np.array_equal(a, b)
    got = runs[1]
    assert not np.array_equal(got[0], got[1]) and set(np.unique(got[0])) == {0.0, 6.0}


def test_the_switch_is_inductors_triton_cudagraphs():
    """``options={"triton.cudagraphs": True}`` as in PyTorch; the default mode leaves it off."""
    def f(x):
        return x.exp()
    x = ember.randn(5, device="cuda")
    ember.compile(f)(x)
    assert cudagraphs.counters["recordings"] == 0 and config.triton.cudagraphs is False
    ember._dynamo.reset()
    ember.compile(f, options={"triton.cudagraphs": True})(x)
    assert cudagraphs.counters["recordings"] == 1
    with config.patch({"triton.cudagraphs": True}):
        assert config.triton.cudagraphs is True
    assert config.triton.cudagraphs is False
    with pytest.raises(RuntimeError, match="Unexpected optimization option triton.cudagraph,"):
        ember.compile(f, options={"triton.cudagraph": True})(x)
    ember.compiler.cudagraph_mark_step_begin()


def test_a_tensor_marked_static_is_read_where_it_lies():
    """``mark_static_address``: no copy into the graph's own buffer; the graph sees the
    tensor's updates (other inputs are copied in at each call)."""
    state, x = ember.zeros(4, device="cuda"), ember.ones(4, device="cuda")
    ember._dynamo.mark_static_address(state)

    @ember.compile(mode="reduce-overhead")
    def f(s, x):
        return s * 2 + x

    f(state, x)
    rec = next(iter(_graphed()[0].recordings.values()))
    assert [i for i, _, _ in rec.owned] == [1]  # x only
    state.fill_(5.0)
    assert _np(f(state, x)).tolist() == [11.0] * 4
    with pytest.raises(TypeError, match="expects a tensor"):
        ember._dynamo.mark_static_address(3)


def test_the_gpu_benchmarks_gpt_steps_run():
    """Each GPT step benchmarks/gpu.py times on a GPU (eager, graphed callables, the whole step
    captured, compiled with reduce-overhead) runs here at a small size and trains: a lent GPU's
    minutes are not spent on the harness."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))
    import gpt
    for make in (gpt.train_step, gpt.graphed_train_step, gpt.captured_train_step,
                 gpt.compiled_train_step):
        ember.manual_seed(0)
        step = make(ember, device="cuda", batch=2, context=8, width=16, n_layer=1, n_head=2)
        model = next(o for o in _closure(step) if type(o).__name__ == "GPT")
        before = [_np(p).copy() for p in model.parameters()]
        for _ in range(2):
            step()
        after = [_np(p) for p in model.parameters()]
        assert all(np.isfinite(a).all() for a in after), make.__name__
        assert any(not np.array_equal(a, b) for a, b in zip(after, before)), make.__name__


def _closure(fn):
    """What a step function holds: its closure's cells and attributes."""
    cells = [c.cell_contents for c in (fn.__closure__ or ())]
    return cells + list(getattr(fn, "static", ()))
