"""``ember.cuda``: devices, tensors on ``cuda``, the host-kernel fallback, random generators,
streams, events and CUDA graphs. These run on a real GPU when one is present, else on the
simulated device (``EMBER_CUDA_SIMULATE=1``); the few that steer the simulation itself (holding a
stream back) skip on a real GPU."""
import os
import sys
import warnings

import numpy as np
import pytest

import ember
from ember.cuda import _runtime
from helpers import real_gpu

_REAL_GPU = real_gpu()
sim_only = pytest.mark.skipif(_REAL_GPU, reason="steers the simulated device")


pytestmark = pytest.mark.usefixtures("cuda_device")  # the GPU or the simulated device


# ---------------------------------------------------------------------------------------------
# devices

def test_device_queries():
    assert ember.cuda.is_available() and ember.cuda.device_count() >= 1
    assert ember.backends.cuda.is_built()
    assert ember.cuda.current_device() == 0
    props = ember.cuda.get_device_properties(0)
    assert props.total_memory > 0 and props.multi_processor_count >= 1
    assert ember.cuda.get_device_name() == props.name
    assert ember.cuda.get_device_capability() == (props.major, props.minor)
    if not _REAL_GPU:
        assert "simulated" in props.name and (props.major, props.minor) == (9, 0)
        assert props.total_memory == int(os.environ.get("EMBER_CUDA_SIMULATE_MEMORY_MB",
                                                        "16384")) << 20
    free, total = ember.cuda.mem_get_info()
    assert 0 < free <= total == props.total_memory
    assert ember.cuda.is_bf16_supported() is (props.major >= 8)
    assert ember.accelerator.current_accelerator() == ember.device("cuda")
    assert ember.accelerator.is_available()


def test_bad_device_index():
    n = ember.cuda.device_count()
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        ember.cuda.set_device(n)
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        ember.zeros(2, device=f"cuda:{n}")
    with pytest.raises(AssertionError, match="Invalid device id"):
        ember.cuda.get_device_properties(n)
    with pytest.raises(ValueError, match="Expected a cuda device"):
        ember.cuda.get_device_properties("cpu")
    ember.cuda.set_device(-1)  # negative: nothing happens, as PyTorch
    assert ember.cuda.current_device() == 0


def test_device_context_manager():
    with ember.cuda.device(0):
        assert ember.cuda.current_device() == 0
    x = ember.ones(2, device="cuda")
    with ember.cuda.device_of(x):
        assert ember.cuda.current_device() == 0


# ---------------------------------------------------------------------------------------------
# tensors

def test_tensors_move_and_print():
    x = ember.arange(6.0).reshape(2, 3)
    for y in (x.cuda(), x.to("cuda"), x.to(device="cuda:0"), ember.tensor(x.tolist(),
                                                                           device="cuda")):
        assert y.device == ember.device("cuda", 0) and y.is_cuda and not x.is_cuda
        assert y.get_device() == 0
        assert np.array_equal(y.cpu().numpy(), x.numpy())
    y = x.cuda()
    assert repr(y) == "tensor([[0., 1., 2.],\n        [3., 4., 5.]], device='cuda:0')"
    assert y.type() == "torch.cuda.FloatTensor"
    assert y.tolist() == x.tolist() and y[1, 2].item() == 5.0
    with pytest.raises(TypeError, match="can't convert cuda:0 device type tensor to numpy"):
        y.numpy()


def test_factories_on_cuda():
    for t in (ember.zeros(2, 3, device="cuda"), ember.ones(4, device="cuda", dtype=ember.int32),
              ember.full((2,), 7.0, device="cuda"), ember.arange(5, device="cuda"),
              ember.empty(3, device="cuda"), ember.eye(3, device="cuda"),
              ember.linspace(0, 1, 5, device="cuda")):
        assert t.is_cuda
    assert ember.zeros(2, 3, device="cuda").sum().item() == 0
    assert ember.arange(5, device="cuda").tolist() == [0, 1, 2, 3, 4]


def test_mixing_devices_is_an_error():
    a = ember.ones(3, device="cuda")
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        a + ember.ones(3)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        ember.mm(ember.ones(2, 2, device="cuda"), ember.ones(2, 2))
    # a 0-dim CPU tensor is a scalar: it mixes, as in PyTorch
    assert (a * ember.tensor(2.0)).tolist() == [2.0, 2.0, 2.0]


def test_ops_match_cpu():
    g = ember.Generator().manual_seed(0)
    a = ember.randn(4, 5, generator=g)
    b = ember.randn(5, 3, generator=g)
    cases = [
        lambda a, b: a @ b, lambda a, b: (a * 2 + 1).relu().sum(0),
        lambda a, b: a.softmax(-1), lambda a, b: a[:, 1:4].t().contiguous(),
        lambda a, b: ember.cat([a, a], 1), lambda a, b: a.max(1),
        lambda a, b: ember.nn.functional.layer_norm(a, (5,)),
        lambda a, b: a.argsort(1), lambda a, b: a.masked_fill(a > 0, 0.0),
        lambda a, b: a.to(ember.float16), lambda a, b: a.cumsum(0),
    ]
    for f in cases:
        want, got = f(a, b), f(a.cuda(), b.cuda())
        want = want if isinstance(want, tuple) else (want,)
        got = got if isinstance(got, tuple) else (got,)
        for w, h in zip(want, got):
            assert h.is_cuda and h.dtype == w.dtype and h.shape == w.shape
            if _REAL_GPU:  # cuBLAS and CuPy's reductions sum in another order: rounding differs
                np.testing.assert_allclose(h.cpu().numpy(), w.numpy(), rtol=1e-5, atol=1e-6)
            else:  # the simulated device runs the CPU's arithmetic
                assert np.array_equal(h.cpu().numpy(), w.numpy())


def test_custom_op_without_a_cuda_kernel_is_an_error():
    """The host fallback stands in for aten's CUDA kernels only; another namespace's op with a
    CPU kernel alone cannot run on CUDA, as in PyTorch."""
    lib = ember.library.Library("cudatest", "DEF")
    lib.define("triple(Tensor x) -> Tensor")
    ember.library.Library("cudatest", "IMPL", "CPU").impl("triple", lambda x: x * 3)
    assert ember.ops.cudatest.triple(ember.ones(1)).tolist() == [3.0]
    with pytest.raises(NotImplementedError, match="Could not run 'cudatest::triple' with "
                                                  "arguments from the 'CUDA' backend"):
        ember.ops.cudatest.triple(ember.ones(1, device="cuda"))


def test_views_and_in_place_share_device_memory():
    x = ember.zeros(4, 4, device="cuda")
    row = x[1]
    assert row.is_cuda and row.data_ptr() == x.data_ptr() + 4 * 4
    row.fill_(3.0)
    x[:, 0].add_(1.0)
    want = np.zeros((4, 4), np.float32)
    want[1] = 3
    want[:, 0] += 1
    assert np.array_equal(x.cpu().numpy(), want)
    assert x._version > 0
    out = ember.empty(4, device="cuda")
    r = ember.add(ember.ones(4, device="cuda"), 1, out=out)
    assert r is out and out.tolist() == [2.0] * 4


def test_autograd_on_cuda():
    w = ember.randn(3, 2, requires_grad=True)
    wc = w.detach().cuda().requires_grad_()
    x = ember.randn(5, 3)
    (x @ w).tanh().sum().backward()
    (x.cuda() @ wc).tanh().sum().backward()
    assert wc.grad.is_cuda
    # cuBLAS and the CPU's BLAS sum in different orders: float32 rounding apart
    assert np.allclose(wc.grad.cpu().numpy(), w.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_module_cuda_and_state_dict_round_trip(tmp_path):
    m = ember.nn.Linear(3, 2).cuda()
    assert m.weight.is_cuda and m.bias.is_cuda
    path = tmp_path / "m.pt"
    ember.save(m.state_dict(), path)
    sd = ember.load(path)
    assert sd["weight"].is_cuda and ember.equal(sd["weight"], m.weight.detach())
    cpu = ember.load(path, map_location="cpu")
    assert not cpu["weight"].is_cuda
    assert np.array_equal(cpu["weight"].numpy(), m.weight.detach().cpu().numpy())


def test_resize_on_cuda():
    x = ember.arange(4.0, device="cuda")
    x.resize_(8)
    assert x.shape == (8,) and x[:4].tolist() == [0.0, 1.0, 2.0, 3.0]


# ---------------------------------------------------------------------------------------------
# random numbers

def test_cuda_generators():
    ember.manual_seed(123)  # seeds every device too, as PyTorch
    assert ember.cuda.initial_seed() == 123
    a = ember.randn(5, device="cuda")
    ember.cuda.manual_seed(123)
    b = ember.randn(5, device="cuda")
    assert a.tolist() == b.tolist()
    state = ember.cuda.get_rng_state()
    c = ember.rand(3, device="cuda")
    ember.cuda.set_rng_state(state)
    assert ember.rand(3, device="cuda").tolist() == c.tolist()
    cpu_state = ember.get_rng_state()
    ember.randn(100, device="cuda")  # the device generator leaves the CPU one alone
    assert ember.equal(ember.get_rng_state(), cpu_state)
    g = ember.Generator(device="cuda").manual_seed(5)
    assert g.device == ember.device("cuda", 0)
    d1 = ember.randn(4, device="cuda", generator=g)
    g.manual_seed(5)
    assert ember.randn(4, device="cuda", generator=g).tolist() == d1.tolist()
    x = ember.ones(1000, device="cuda")
    y = ember.nn.functional.dropout(x, 0.5)
    assert y.is_cuda and 300 < (y == 0).sum().item() < 700


# ---------------------------------------------------------------------------------------------
# streams and events

def test_streams_and_context():
    default = ember.cuda.default_stream()
    assert ember.cuda.current_stream() == default and default.cuda_stream == 0
    s = ember.cuda.Stream()
    assert s != default and s.device == ember.device("cuda", 0)
    with ember.cuda.stream(s):
        assert ember.cuda.current_stream() == s
        x = ember.ones(3, device="cuda") * 2
    assert ember.cuda.current_stream() == default
    default.wait_stream(s)
    s.synchronize()
    assert s.query() and x.tolist() == [2.0] * 3
    with ember.cuda.stream(None):  # None: no switch
        assert ember.cuda.current_stream() == default
    hi = ember.cuda.Stream(priority=-100)
    least, greatest = ember.cuda.Stream.priority_range()
    assert hi.priority == greatest  # out-of-range priorities are clamped


def test_events_timing_and_errors():
    start, end = ember.cuda.Event(enable_timing=True), ember.cuda.Event(enable_timing=True)
    assert start.query()  # never recorded: complete
    start.record()
    ember.ones(1000, device="cuda").sum()
    end.record()
    end.synchronize()
    assert start.query() and end.query() and start.elapsed_time(end) >= 0.0
    plain = ember.cuda.Event()
    plain.record()
    with pytest.raises(RuntimeError, match="enable_timing=True"):
        plain.elapsed_time(end)
    with pytest.raises(RuntimeError, match="must be recorded"):
        ember.cuda.Event(enable_timing=True).elapsed_time(end)


@sim_only
def test_held_stream_keeps_events_pending():
    rt = _runtime.get_runtime()
    s = ember.cuda.Stream()
    rt.hold(s.cuda_stream)
    with ember.cuda.stream(s):
        ember.ones(4, device="cuda").add_(1)
    ev = s.record_event()
    assert not ev.query() and not s.query()
    other = ember.cuda.Stream()
    other.wait_event(ev)  # work after this on `other` waits for `s`
    assert not other.query() or True
    ev.synchronize()
    assert ev.query() and s.query()


def test_synchronize():
    ember.ones(3, device="cuda").mul_(2)
    ember.cuda.synchronize()
    assert ember.cuda.current_stream().query()


# ---------------------------------------------------------------------------------------------
# CUDA graphs

def _needs_graph_kernels():
    if _REAL_GPU:
        pytest.skip("capturing the host-kernel fallback needs the simulated device (no CUDA "
                    "kernels for these ops yet)")


def test_graph_capture_and_replay():
    _needs_graph_kernels()
    x = ember.zeros(4, device="cuda")
    g = ember.cuda.CUDAGraph()
    with ember.cuda.graph(g):
        y = (x * 2 + 1).relu()
    assert not ember.cuda.is_current_stream_capturing()
    x.copy_(ember.tensor([1.0, -2.0, 3.0, -4.0]))
    g.replay()
    assert y.tolist() == [3.0, 0.0, 7.0, 0.0]
    x.fill_(10.0)
    g.replay()
    assert y.tolist() == [21.0] * 4
    assert g.pool() is not None
    g.reset()
    with pytest.raises(RuntimeError, match="without a preceding successful capture"):
        g.replay()


def test_graph_of_device_copies():
    """Copies are the runtime's own work: captured and replayed on a GPU too."""
    x = ember.arange(4.0, device="cuda")
    y = ember.zeros(4, device="cuda")
    g = ember.cuda.CUDAGraph()
    with ember.cuda.graph(g):
        y.copy_(x)
    x.copy_(ember.tensor([5.0, 6.0, 7.0, 8.0]))
    g.replay()
    ember.cuda.synchronize()
    assert y.tolist() == [5.0, 6.0, 7.0, 8.0]


def test_host_memory_a_capture_reads_lives_as_long_as_the_graph():
    """A captured host-to-device copy reads its pinned source again at each replay (the
    multi-tensor kernels' pointer tables): the graph keeps it until it is reset."""
    import gc
    import weakref
    src = np.arange(3.0)
    ref = weakref.ref(src)
    g = ember.cuda.CUDAGraph()
    with ember.cuda.graph(g):
        stream = ember.cuda.current_stream().cuda_stream
        ember.cuda.graphs.capturing_graph(stream).keep_alive(src)
    assert ember.cuda.graphs.capturing_graph(stream) is None
    del src
    gc.collect()
    assert ref() is not None
    g.reset()
    gc.collect()
    assert ref() is None


@pytest.mark.cuda
def test_products_and_multi_tensor_kernels_are_captured():
    """cuBLAS products (called past CuPy's refusal during a capture), the multi-tensor kernels
    (their tables copied from pinned memory) and a stack of many tensors are captured and replay
    as eager."""
    a, b = ember.randn(64, 32, device="cuda"), ember.randn(32, 16, device="cuda")
    ps = [ember.randn(n, device="cuda") for n in (5, 100, 40000)] + \
        [ember.randn(3, device="cuda") for _ in range(9)]  # (more than CuPy joins in copies)
    gs = [ember.randn_like(p) for p in ps]
    ember.mm(a, b), ember._foreach_norm(ps), ember._foreach_add_(ps, gs, alpha=0.5)  # warm up
    start = [p.clone() for p in ps]
    ember.cuda.synchronize()
    g = ember.cuda.CUDAGraph()
    with ember.cuda.graph(g):
        c = ember.mm(a, b)
        norms = ember._foreach_norm(ps)
        stacked = ember.stack(norms)  # (clip_grad_norm_'s)
        ember._foreach_add_(ps, gs, alpha=0.5)
    for p, s in zip(ps, start):
        p.copy_(s)
    a.mul_(2)
    for _ in range(2):
        g.replay()
    ember.cuda.synchronize()
    np.testing.assert_allclose(c.cpu().numpy(), (a.cpu() @ b.cpu()).numpy(), rtol=1e-4,
                               atol=1e-4)
    for p, s, gr, n in zip(ps, start, gs, norms):
        np.testing.assert_allclose(p.cpu().numpy(), (s + gr).cpu().numpy(), rtol=1e-5,
                                   atol=1e-5)
        np.testing.assert_allclose(float(n), float((s + 0.5 * gr).norm()), rtol=1e-5)
    np.testing.assert_array_equal(stacked.cpu().numpy(), [float(n) for n in norms])


def test_device_joins_of_many_arrays_go_in_groups_of_copies():
    """CuPy joins more than 8 arrays with a kernel whose address table a capture refuses to copy
    from the host: ember's cat and stack on device arrays join groups of 8 (here on NumPy
    arrays, the same code)."""
    from ember._kernels.cpu import _util
    arrays = [np.full((2, k + 1), k, np.float32) for k in range(19)]
    np.testing.assert_array_equal(_util._grouped_concatenate(np, arrays, 1),
                                  np.concatenate(arrays, 1))
    rows = [np.arange(3.0) + k for k in range(11)]
    np.testing.assert_array_equal(_util._grouped_concatenate(np, [r[None] for r in rows], 0),
                                  np.stack(rows))


def test_captured_random_ops_draw_new_numbers_at_each_replay():
    """As in PyTorch: the random ops of a graph take the generator's next offsets at each
    replay — eager's numbers from the same seed; a generator other than the device's default
    one is registered with the graph first."""
    x = ember.empty(1000, device="cuda")
    gen = ember.Generator(device="cuda")
    for user_gen in (None, gen):
        g = ember.cuda.CUDAGraph()
        if user_gen is not None:
            g.register_generator_state(user_gen)
        with ember.cuda.graph(g):
            x.uniform_(generator=user_gen)
            y = x * 2
        got, expect = [], []
        for record, run in ((got, g.replay), (expect, lambda: y.copy_(x.uniform_(
                generator=user_gen) * 2))):
            ember.cuda.manual_seed(3)
            gen.manual_seed(3)
            for _ in range(2):
                run()
                record.append(y.cpu().numpy().copy())
        assert np.array_equal(got[0], expect[0]) and np.array_equal(got[1], expect[1])
        assert not np.array_equal(got[0], got[1]) and 0 <= got[0].min() < got[0].max() < 2
    other = ember.Generator(device="cuda")
    with pytest.raises(RuntimeError, match="not registered with the graph"):
        with ember.cuda.graph(ember.cuda.CUDAGraph()):
            x.normal_(generator=other)
    assert not ember.cuda.is_current_stream_capturing()


_OPTIMIZERS = {
    "adam": lambda ps, **kw: ember.optim.Adam(ps, lr=1e-2, **kw),
    "adamw_amsgrad": lambda ps, **kw: ember.optim.AdamW(ps, lr=1e-2, amsgrad=True, **kw),
    "adamax": lambda ps, **kw: ember.optim.Adamax(ps, lr=1e-2, weight_decay=0.1, **kw),
    "nadam": lambda ps, **kw: ember.optim.NAdam(ps, lr=1e-2, **kw),
    "radam": lambda ps, **kw: ember.optim.RAdam(ps, lr=1e-2, **kw),  # crosses rho_t > 5
    "rmsprop": lambda ps, **kw: ember.optim.RMSprop(ps, lr=1e-2, momentum=0.5, centered=True,
                                                    **kw),
    "adadelta": lambda ps, **kw: ember.optim.Adadelta(ps, **kw),
    "sgd": lambda ps, **kw: ember.optim.SGD(ps, lr=0.1, momentum=0.9)}


@pytest.mark.parametrize("make", list(_OPTIMIZERS))
def test_a_whole_training_step_captured_trains_as_eager(make):
    """PyTorch's whole-network capture: forward, backward and the optimizer's step in one graph,
    replayed on new data (with capturable=True the step counts, and what is computed from them,
    stay on the device)."""
    _needs_graph_kernels()
    import copy
    optimizers = _OPTIMIZERS
    ember.manual_seed(0)
    model = ember.nn.Sequential(ember.nn.Linear(8, 16), ember.nn.ReLU(),
                                ember.nn.Linear(16, 1)).cuda()
    ref = copy.deepcopy(model)
    opt = optimizers[make](model.parameters(), capturable=True)
    ref_opt = optimizers[make](ref.parameters())
    x, y = ember.randn(32, 8, device="cuda"), ember.randn(32, 1, device="cuda")

    def step(m, o):
        o.zero_grad(set_to_none=True)
        loss = ember.nn.functional.mse_loss(m(x), y)
        loss.backward()
        o.step()
        return loss

    side = ember.cuda.Stream()
    side.wait_stream(ember.cuda.current_stream())
    with warnings.catch_warnings(), ember.cuda.stream(side):
        warnings.simplefilter("ignore")  # capturable=True run uncaptured: PyTorch's warning
        for _ in range(3):  # warm-up: the optimizer's state exists before the capture
            step(model, opt)
            step(ref, ref_opt)
    ember.cuda.current_stream().wait_stream(side)
    g = ember.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with ember.cuda.graph(g):
        static_loss = ember.nn.functional.mse_loss(model(x), y)
        static_loss.backward()
        opt.step()
    gen = ember.Generator().manual_seed(1)
    for _ in range(4):
        x.copy_(ember.randn(32, 8, generator=gen))
        y.copy_(ember.randn(32, 1, generator=gen))
        g.replay()
        expect = step(ref, ref_opt)
        assert float(static_loss) == pytest.approx(float(expect), rel=1e-5)
    for p, q in zip(model.parameters(), ref.parameters()):
        assert np.allclose(p.detach().cpu().numpy(), q.detach().cpu().numpy(), atol=1e-5)


def test_optimizers_check_that_a_captured_step_is_capturable():
    p = ember.nn.Parameter(ember.ones(3, device="cuda"))
    p.grad = ember.ones(3, device="cuda")
    adam = ember.optim.Adam([p])
    adam.step()  # the state exists
    with pytest.raises(RuntimeError, match="Attempting CUDA graph capture of step\\(\\) for an "
                       "instance of Adam but param_groups' capturable is False"):
        with ember.cuda.graph(ember.cuda.CUDAGraph()):
            adam.step()
    with pytest.raises(AssertionError, match="capturable=True, params and state_steps must "
                       "be on supported devices"):  # as PyTorch: a CPU step is not captured
        q = ember.nn.Parameter(ember.ones(3))
        q.grad = ember.ones(3)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ember.optim.Adam([q], capturable=True).step()
    rms = ember.optim.RMSprop([p], capturable=True)
    with pytest.warns(UserWarning, match="running without CUDA graph capture"):
        rms.step()
    assert rms.state[p]["step"].device.type == "cuda"
    assert not ember.cuda.is_current_stream_capturing()


def test_graph_capture_errors():
    _needs_graph_kernels()
    g = ember.cuda.CUDAGraph()
    with pytest.raises(RuntimeError, match="non-default stream"):
        g.capture_begin()
    x = ember.ones(2, device="cuda")
    g = ember.cuda.CUDAGraph()
    with pytest.raises(RuntimeError, match="operation not permitted when stream is capturing"):
        with ember.cuda.graph(g):
            (x + 1).sum().item()
    assert not ember.cuda.is_current_stream_capturing()


def test_make_graphed_callables_matches_eager():
    _needs_graph_kernels()
    ember.manual_seed(0)
    model = ember.nn.Sequential(ember.nn.Linear(4, 8), ember.nn.Tanh(),
                                ember.nn.Linear(8, 2)).cuda()
    ref = ember.nn.Sequential(ember.nn.Linear(4, 8), ember.nn.Tanh(),
                              ember.nn.Linear(8, 2)).cuda()
    ref.load_state_dict(model.state_dict())
    sample = ember.randn(3, 4, device="cuda", requires_grad=True)
    graphed = ember.cuda.make_graphed_callables(model, (sample,))
    for seed in range(3):
        model.zero_grad(set_to_none=True)  # as training loops with graphs do
        ref.zero_grad(set_to_none=True)
        x = ember.randn(3, 4, generator=ember.Generator().manual_seed(seed)).cuda()
        x.requires_grad_()
        xr = x.detach().clone().requires_grad_()
        out = graphed(x)
        out.square().sum().backward()
        ref(xr).square().sum().backward()
        assert np.allclose(out.detach().cpu().numpy(), ref(xr).detach().cpu().numpy(),
                           atol=1e-6)
        assert np.allclose(x.grad.cpu().numpy(), xr.grad.cpu().numpy(), atol=1e-6)
        for p, q in zip(model.parameters(), ref.parameters()):
            assert np.allclose(p.grad.cpu().numpy(), q.grad.cpu().numpy(), atol=1e-5)


def test_reading_an_overwritten_graph_output_warns():
    _needs_graph_kernels()
    m = ember.nn.Linear(3, 1).cuda()
    graphed = ember.cuda.make_graphed_callables(m, (ember.randn(2, 3, device="cuda",
                                                                requires_grad=True),))
    first = graphed(ember.ones(2, 3, device="cuda"))
    kept = first.clone()  # the way to keep a result
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ember.equal(first + 0, kept)  # before the next replay: no warning
    graphed(ember.zeros(2, 3, device="cuda"))
    with pytest.warns(UserWarning, match="overwritten by a later replay"):
        stale = first + 0
    assert not ember.equal(stale, kept)  # it holds the later call's values, as the warning says
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        first + 0  # once per output
        kept + 0


# ---------------------------------------------------------------------------------------------
# the examples train on cuda with the CPU's losses

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "examples"))


def test_digits_cnn_trains_on_cuda_like_cpu(capsys):
    import train_digits
    cpu = train_digits.main(["--device", "cpu", "--epochs", "1"])
    gpu = train_digits.main(["--device", "cuda", "--epochs", "1"])
    assert np.allclose(gpu["losses"], cpu["losses"], rtol=1e-5)
    assert gpu["accuracy"] == pytest.approx(cpu["accuracy"], abs=0.01)


def test_gpt_trains_on_cuda_like_cpu(capsys):
    import train_gpt
    args = ["--steps", "6", "--eval-batches", "1", "--sample-chars", "5",
            "--width", "32", "--context", "16"]
    cpu = train_gpt.main(args + ["--device", "cpu"])
    gpu = train_gpt.main(args + ["--device", "cuda"])
    assert gpu["first_val"] == pytest.approx(cpu["first_val"], rel=1e-5)
    assert gpu["val"] == pytest.approx(cpu["val"], rel=1e-5)
    # compiled, its graphs replayed as CUDA graphs
    from ember._inductor import cudagraphs
    replays = cudagraphs.counters["replays"]
    graphed = train_gpt.main(args + ["--device", "cuda", "--compile", "--compile-mode",
                                     "reduce-overhead"])
    assert graphed["val"] == pytest.approx(cpu["val"], rel=1e-5)
    assert cudagraphs.counters["replays"] - replays >= 12  # forward and backward, 6 steps
    ember._dynamo.reset()  # the graphs (and their memory pools) go with the compiled code


def test_gpt_trains_on_cuda_with_float16_autocast_and_grad_scaler(capsys):
    """The GPT example with ``--amp`` on cuda (float16 autocast, GradScaler) follows the CPU's
    float32 loss curve: the same starting loss (evaluation runs in float32), a final loss within
    2 % of the CPU's, and a loss that fell."""
    import train_gpt
    args = ["--steps", "12", "--eval-batches", "2", "--sample-chars", "5",
            "--width", "32", "--context", "16", "--lr", "1e-2"]
    cpu = train_gpt.main(args + ["--device", "cpu"])
    amp = train_gpt.main(args + ["--device", "cuda", "--amp"])
    assert amp["first_val"] == pytest.approx(cpu["first_val"], rel=1e-5)
    assert amp["val"] == pytest.approx(cpu["val"], rel=0.02)
    assert amp["val"] < amp["first_val"] - 0.2
    # compiled under autocast, forward and backward replayed as CUDA graphs, GradScaler outside
    graphed = train_gpt.main(args + ["--device", "cuda", "--amp", "--compile",
                                     "--compile-mode", "reduce-overhead"])
    assert graphed["val"] == pytest.approx(cpu["val"], rel=0.02)
    ember._dynamo.reset()


# ---------------------------------------------------------------------------------------------
# the caching allocator under tensors

def _fresh_stats():
    import gc
    gc.collect()
    ember.cuda.synchronize()
    ember.cuda.empty_cache()
    ember.cuda.reset_peak_memory_stats()
    return ember.cuda.memory_allocated(), ember.cuda.memory_reserved()


def test_tensor_allocations_follow_pytorchs_arithmetic():
    a0, r0 = _fresh_stats()
    x = ember.ones(1, device="cuda")  # 4 bytes -> one 512-byte block of a 2 MiB segment
    assert ember.cuda.memory_allocated() - a0 == 512
    assert ember.cuda.memory_reserved() - r0 == 2 << 20
    y = ember.empty(3 << 20, dtype=ember.uint8, device="cuda")  # 3 MiB -> a 20 MiB segment
    assert ember.cuda.memory_allocated() - a0 == 512 + (3 << 20)
    assert ember.cuda.memory_reserved() - r0 == (2 << 20) + (20 << 20)
    z = ember.empty(25 << 20, dtype=ember.uint8, device="cuda")  # large: rounded to 2 MiB
    assert ember.cuda.memory_reserved() - r0 == (2 << 20) + (20 << 20) + (26 << 20)
    stats = ember.cuda.memory_stats()
    assert stats["allocation.all.current"] >= 3 and stats["segment.large_pool.current"] >= 2
    del x, y, z
    assert ember.cuda.memory_allocated() == a0
    assert ember.cuda.memory_reserved() - r0 == 48 << 20  # cached until empty_cache
    ember.cuda.empty_cache()
    assert ember.cuda.memory_reserved() == r0
    assert ember.cuda.max_memory_allocated() >= a0 + (28 << 20)


def test_blocks_are_reused_and_summary_reads_like_pytorchs():
    _fresh_stats()
    x = ember.empty(1000, device="cuda")
    ptr = x.data_ptr()
    del x
    assert ember.empty(1000, device="cuda").data_ptr() == ptr  # the cached block again
    text = ember.cuda.memory_summary()
    assert text.splitlines()[1] == "|                  PyTorch CUDA memory summary, device ID 0" \
                                   "                 |"
    assert "Allocated memory" in text and "GPU reserved segments" in text


@sim_only
def test_out_of_memory_through_tensors_leaves_the_allocator_usable(monkeypatch):
    _fresh_stats()
    total = ember.cuda.get_device_properties(0).total_memory
    ember.cuda.set_per_process_memory_fraction(0.001)  # a few MiB of a simulated device
    try:
        with pytest.raises(ember.cuda.OutOfMemoryError, match="CUDA out of memory. Tried to "
                                                              "allocate") as info:
            ember.empty(total // 100, dtype=ember.uint8, device="cuda")
        assert isinstance(info.value, RuntimeError) and ember.OutOfMemoryError is \
            ember.cuda.OutOfMemoryError
        assert ember.cuda.memory_stats()["num_ooms"] >= 1
        assert ember.ones(10, device="cuda").sum().item() == 10.0  # still usable
    finally:
        ember.cuda.set_per_process_memory_fraction(1.0)


def test_autocast_and_grad_scaler_on_cuda():
    a, b = ember.randn(4, 4, device="cuda"), ember.randn(4, 4, device="cuda")
    assert ember._C._dispatch_keys(a).has("AutocastCUDA")
    with ember.autocast("cuda"):
        c = a @ b
        d = ember.nn.functional.softmax(c, -1)
    assert c.dtype == ember.float16 and d.dtype == ember.float32 and c.is_cuda
    with ember.autocast("cuda", dtype=ember.bfloat16):
        assert (a @ b).dtype == ember.bfloat16
    m = ember.nn.Linear(4, 2).cuda()
    opt = ember.optim.SGD(m.parameters(), lr=0.1)
    scaler = ember.amp.GradScaler("cuda")
    assert scaler.is_enabled()
    before = m.weight.detach().clone()
    with ember.autocast("cuda"):  # (small inputs: the scaled float16 gradients stay finite)
        loss = m(a * 0.1).float().pow(2).mean()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    assert scaler.get_scale() == 65536.0 and not ember.equal(m.weight.detach(), before)
    inf_grad = ember.nn.Linear(4, 2).cuda()
    opt2 = ember.optim.SGD(inf_grad.parameters(), lr=0.1)
    with np.errstate(invalid="ignore"):  # NumPy's matmul warns about inf * 0 (PyTorch doesn't)
        (inf_grad(a).sum() * float("inf")).backward()
    w = inf_grad.weight.detach().clone()
    scaler.step(opt2)  # an inf gradient: the step is skipped and the scale backs off
    scaler.update()
    assert ember.equal(inf_grad.weight.detach(), w) and scaler.get_scale() == 32768.0


def test_nvtx_ranges_show_in_the_profiler():
    from ember.cuda import nvtx
    from ember.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        assert nvtx.range_push("outer") == 0
        assert nvtx.range_push("inner") == 1
        ember.ones(2, device="cuda").sum()
        assert nvtx.range_pop() == 1
        assert nvtx.range_pop() == 0
        with nvtx.range("step {}", 3):
            pass
        rid = nvtx.range_start("started")
        nvtx.mark("a mark")
        nvtx.range_end(rid)
    names = {e.name for e in prof.events()}
    assert {"outer", "inner", "step 3", "started", "a mark"} <= names
    assert nvtx.range_pop() == -1  # nothing open


def test_profiler_records_cuda_kernels():
    """ProfilerActivity.CUDA: every kernel launch (device kernels, host-staged ops, copies) is an
    event timed on its stream and charged to the op that launched it; the table gains PyTorch's
    device columns and footer; the Chrome trace gets GPU rows and launch arrows."""
    import json
    import tempfile
    from ember.profiler import ProfilerActivity, profile
    assert ProfilerActivity.CUDA in ember.profiler.supported_activities()
    a = ember.randn(64, 64)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        d = a.cuda()
        (d @ d).relu().sum().item()
    events = prof.events()
    kernels = [e for e in events if e.device_type == "CUDA"]
    names = {k.name for k in kernels}
    assert {"Memcpy HtoD (Pageable -> Device)", "ember::cuda::mm", "ember::cuda::sum"} <= names
    assert all(k.device_time_total > 0 and k.cpu_time_total == 0 for k in kernels)
    mm = next(e for e in events if e.name == "aten::mm")
    assert [k.name for k in mm.kernels] == ["ember::cuda::mm"]
    assert mm.self_device_time_total == mm.kernels[0].device_time_total
    matmul = next(e for e in events if e.name == "aten::matmul")  # a parent: its children's time
    assert matmul.device_time_total == pytest.approx(mm.device_time_total)
    assert matmul.self_device_time_total == pytest.approx(0.0)
    avg = {e.key: e for e in prof.key_averages()}
    assert avg["ember::cuda::mm"].self_device_time_total == mm.self_device_time_total
    table = prof.key_averages().table(sort_by="cuda_time_total")
    header = [h.strip() for h in table.splitlines()[1].split("  ") if h.strip()]
    assert header == ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total",
                      "CPU time avg", "Self CUDA", "Self CUDA %", "CUDA total", "CUDA time avg",
                      "# of Calls"]
    assert table.splitlines()[-1].startswith("Self CUDA time total: ")
    with tempfile.TemporaryDirectory() as tmp:
        path = f"{tmp}/trace.json"
        prof.export_chrome_trace(path)
        with open(path) as f:
            trace = json.load(f)["traceEvents"]
    rows = [e for e in trace if e.get("cat") == "kernel"]
    assert len(rows) == len(kernels) and all(e["pid"] == 0 for e in rows)
    flows = [e["ph"] for e in trace if e.get("cat") == "ac2g"]  # one arrow per kernel
    assert flows.count("s") == flows.count("f") == len(kernels)
    with profile(activities=[ProfilerActivity.CPU]) as cpu_only:
        (d @ d).sum()
    assert all(e.device_type == "CPU" for e in cpu_only.events())
    assert "Self CUDA" not in cpu_only.key_averages().table()


@pytest.mark.parametrize("dims,stride,padding,dilation,groups", [
    (1, 2, 1, 1, 1), (2, 1, 1, 1, 1), (2, 2, 0, 2, 2), (2, 1, 2, 1, 4), (3, 1, 1, 1, 1)])
def test_convolution_values_and_gradients_match_cpu(dims, stride, padding, dilation, groups):
    from ember._kernels.cuda import conv
    conv_fn = getattr(ember.nn.functional, f"conv{dims}d")
    x = ember.randn(2, 4, *[7] * dims)
    w, b = ember.randn(8, 4 // groups, *[3] * dims), ember.randn(8)
    gy = None
    results = []
    for dev in ("cpu", "cuda"):
        xs, ws, bs = (t.to(dev).detach().requires_grad_() for t in (x, w, b))
        y = conv_fn(xs, ws, bs, stride, padding, dilation, groups)
        gy = ember.randn(*y.shape) if gy is None else gy
        y.backward(gy.to(dev))
        results.append([t.detach().cpu().numpy() for t in (y, xs.grad, ws.grad, bs.grad)])
    for c, g in zip(*results):
        np.testing.assert_allclose(g, c, rtol=1e-4, atol=1e-5)
    assert conv.chosen == {}  # cudnn.benchmark is off: no timing runs


def test_cudnn_benchmark_times_and_caches_and_deterministic_excludes():
    """cudnn.benchmark: the first call of a configuration times every eligible algorithm and
    caches the fastest; deterministic leaves out the atomic input-gradient algorithm; every
    algorithm computes the same values."""
    from ember._kernels.cuda import conv
    x = ember.randn(2, 3, 8, 8, device="cuda", requires_grad=True)
    w = ember.randn(5, 3, 3, 3, device="cuda", requires_grad=True)
    want = ember.nn.functional.conv2d(x.detach().cpu(), w.detach().cpu(), stride=2, padding=1)
    try:
        with ember.backends.cudnn.flags(enabled=True, benchmark=True, deterministic=False):
            y = ember.nn.functional.conv2d(x, w, stride=2, padding=1)
            y.sum().backward()
        keys = {k[0]: v for k, v in conv.chosen.items()}
        assert keys["forward"] in ("im2col_gemm", "implicit_gemm")
        assert keys["backward_input"] in ("col2im_strided", "col2im_atomic")
        np.testing.assert_allclose(y.detach().cpu().numpy(), want.numpy(), rtol=1e-5, atol=1e-5)
        for name, _, _ in conv.ALGORITHMS["forward"]:  # the cached choice is what later runs
            conv.chosen[next(k for k in conv.chosen if k[0] == "forward")] = name
            with ember.backends.cudnn.flags(enabled=True, benchmark=True):
                again = ember.nn.functional.conv2d(x, w, stride=2, padding=1)
            np.testing.assert_allclose(again.detach().cpu().numpy(), want.numpy(), rtol=1e-5,
                                       atol=1e-5)
        conv.chosen.clear()
        with ember.backends.cudnn.flags(enabled=True, benchmark=True, deterministic=True):
            ember.nn.functional.conv2d(x, w, stride=2, padding=1).sum().backward()
        assert {k[0]: v for k, v in conv.chosen.items()}["backward_input"] == "col2im_strided"
        assert [n for n, _, _ in conv._eligible("backward_input")] == ["col2im_strided",
                                                                       "col2im_atomic"]
    finally:
        conv.chosen.clear()


def test_preferred_blas_library_cublaslt_says_it_is_not_used():
    from ember._kernels.cuda import blas
    a = ember.randn(3, 3, device="cuda")
    old = ember.backends.cuda.preferred_blas_library()
    blas._warned_lt.clear()
    try:
        ember.backends.cuda.preferred_blas_library("cublaslt")
        with pytest.warns(UserWarning, match="cuBLASLt is not used"):
            a @ a
    finally:
        ember.backends.cuda.preferred_blas_library(old)
        blas._warned_lt.clear()


def test_adamw_takes_the_foreach_path_on_cuda_as_on_the_cpu(monkeypatch):
    """PyTorch's default on CUDA is the multi-tensor path; its updates equal the single-tensor
    ones on the CPU."""
    import ember.optim.adam as adam_module
    chosen = []
    real = adam_module._default_foreach_dense
    monkeypatch.setattr(adam_module, "_default_foreach_dense",
                        lambda ps, gs, d: chosen.append((ps[0].device.type, real(ps, gs, d))) or
                        chosen[-1][1])
    ember.manual_seed(0)
    cpu = [ember.randn(5, 3, requires_grad=True), ember.randn(3, requires_grad=True)]
    dev = [p.detach().cuda().requires_grad_() for p in cpu]
    ref = ember.optim.AdamW(cpu, lr=0.1, amsgrad=True, foreach=False)
    opt = ember.optim.AdamW(dev, lr=0.1, amsgrad=True)
    for step in range(3):
        grads = [ember.randn(*p.shape) for p in cpu]
        for params, o in ((cpu, ref), (dev, opt)):
            for p, g in zip(params, grads):
                p.grad = g.to(p.device)
            o.step()
    assert chosen == [("cuda", True)] * 3  # the CPU's foreach=False leaves nothing to choose
    for a, b in zip(cpu, dev):
        np.testing.assert_allclose(b.detach().cpu().numpy(), a.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)


@pytest.mark.cuda
def test_an_index_out_of_range_is_a_device_side_assert():
    """On a GPU an index check runs on the device (no host round trip, so the op stays
    asynchronous and capturable) and raises at the next synchronisation, as PyTorch's kernels'
    assertions; once reported, the device stays usable (unlike CUDA's sticky error)."""
    F = ember.nn.functional
    w = ember.randn(5, 3, device="cuda")
    F.embedding(ember.tensor([1, 7], device="cuda"), w)  # queued: no error yet
    with pytest.raises(RuntimeError, match=r"device-side assert triggered \(index out of range"):
        ember.cuda.synchronize()
    ember.cuda.synchronize()
    logp = ember.randn(3, 4, device="cuda").log_softmax(1)
    loss = F.nll_loss(logp, ember.tensor([0, 4, 1], device="cuda"))
    with pytest.raises(RuntimeError, match="t >= 0 && t < n_classes"):
        loss.item()
    ok = F.embedding(ember.tensor([[0, 4]], device="cuda"), w)
    assert ok.cpu().tolist() == [[w[0].cpu().tolist(), w[4].cpu().tolist()]]
    g = ember.cuda.CUDAGraph()  # captured: each replay leaves the flag to be read
    idx = ember.tensor([2], device="cuda")
    F.embedding(idx, w)
    ember.cuda.synchronize()
    with ember.cuda.graph(g):
        out = F.embedding(idx, w)
    idx.fill_(9)
    g.replay()
    with pytest.raises(RuntimeError, match="index out of range"):
        ember.cuda.synchronize()
    idx.fill_(3)
    g.replay()
    assert out.cpu().tolist() == [w[3].cpu().tolist()]
