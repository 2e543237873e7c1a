"""The autograd engine's device threads (PyTorch's ``Engine`` with one worker per CUDA device):
backward nodes of CUDA tensors run on the device's worker thread with the caller's thread-local
state and on their forward op's stream; CPU nodes stay on the calling thread. These run on the
simulated device in CI, and on a GPU when one is lent."""
import threading

import numpy as np
import pytest

import ember
from ember.autograd import Function

pytestmark = pytest.mark.usefixtures("cuda_device")


def _threads_of_hooks():
    """x (CPU) -> cuda -> ops -> back to CPU -> loss; returns the thread names the two
    tensor hooks ran on."""
    seen = {}

    def note(where):
        def hook(g):  # returns None: the gradient goes on unchanged
            seen[where] = threading.current_thread()
        return hook
    x = ember.randn(4, requires_grad=True)
    xc = x.cuda()
    xc.register_hook(note("cuda"))
    y = (xc * 2).sin().cpu()
    y.register_hook(note("cpu"))
    y.sum().backward()
    return seen, x


def test_cuda_nodes_run_on_the_device_thread_cpu_nodes_on_the_caller():
    seen, x = _threads_of_hooks()
    assert seen["cpu"] is threading.current_thread()
    assert seen["cuda"] is not threading.current_thread()
    assert seen["cuda"].name == "ember autograd cuda:0"
    # and the gradient is right: d/dx sum(sin(2x)) = 2 cos(2x)
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.cos(2 * x.detach().numpy()), rtol=1e-6)


def test_one_worker_per_device_reused_across_backward_calls():
    first, _ = _threads_of_hooks()
    second, _ = _threads_of_hooks()
    assert first["cuda"] is second["cuda"]


def test_the_worker_sees_the_callers_thread_local_state():
    # create_graph turns grad mode on for the nodes: the worker's ops must record a graph
    x = ember.randn(3, device="cuda", requires_grad=True)
    (g,) = ember.autograd.grad((x ** 3).sum(), x, create_graph=True)
    assert g.requires_grad and g.grad_fn is not None
    (gg,) = ember.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(gg.cpu().numpy(), 6 * x.detach().cpu().numpy(), rtol=1e-5)

    # a saved-tensors hook set around backward... and a dispatch mode: both visible on the worker
    from ember.utils._python_dispatch import TorchDispatchMode
    ops_seen = []

    class Spy(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            ops_seen.append((str(func), threading.current_thread().name))
            return func(*args, **(kwargs or {}))

    y = (x * x).sum()
    with Spy():
        y.backward()
    assert any(t == "ember autograd cuda:0" for _, t in ops_seen), ops_seen
    # the caller's own state is untouched by the worker's copy
    from ember.utils._python_dispatch import _get_current_dispatch_mode_stack
    assert _get_current_dispatch_mode_stack() == []


def test_backward_runs_on_the_stream_of_its_forward_op():
    seen = {}

    class Probe(Function):
        @staticmethod
        def forward(ctx, t):
            seen["forward"] = ember.cuda.current_stream()
            return t * 2

        @staticmethod
        def backward(ctx, g):
            seen["backward"] = ember.cuda.current_stream()
            seen["thread"] = threading.current_thread().name
            return g * 2

    side = ember.cuda.Stream()
    x = ember.ones(8, device="cuda", requires_grad=True)
    with ember.cuda.stream(side):
        y = Probe.apply(x)
    y.sum().backward()
    assert seen["forward"] == side and seen["backward"] == side
    assert seen["thread"] == "ember autograd cuda:0"
    # the caller's stream was not changed, and it can use the gradient right away
    assert ember.cuda.current_stream() == ember.cuda.default_stream()
    np.testing.assert_array_equal(x.grad.cpu().numpy(), np.full(8, 2.0, np.float32))


def test_an_error_on_the_device_thread_reaches_the_caller():
    class Boom(Function):
        @staticmethod
        def forward(ctx, t):
            return t.clone()

        @staticmethod
        def backward(ctx, g):
            raise ValueError("boom in backward")

    x = ember.ones(2, device="cuda", requires_grad=True)
    with pytest.raises(ValueError, match="boom in backward"):
        Boom.apply(x).sum().backward()
    # the engine is usable afterwards
    (x * 3).sum().backward()
    np.testing.assert_array_equal(x.grad.cpu().numpy(), [3.0, 3.0])


def test_reentrant_backward_from_a_device_node_runs_on_that_thread():
    inner = {}

    class Reentrant(Function):
        @staticmethod
        def forward(ctx, t):
            return t * 1

        @staticmethod
        def backward(ctx, g):
            with ember.enable_grad():
                z = ember.ones(2, device="cuda", requires_grad=True)
                z.register_hook(lambda gz: inner.update(thread=threading.current_thread()))
                (z * 5).sum().backward()
            inner["grad"] = z.grad.cpu().numpy()
            return g

    x = ember.ones(2, device="cuda", requires_grad=True)
    Reentrant.apply(x).sum().backward()
    assert inner["thread"].name == "ember autograd cuda:0"
    np.testing.assert_array_equal(inner["grad"], [5.0, 5.0])
    np.testing.assert_array_equal(x.grad.cpu().numpy(), [1.0, 1.0])


def test_queue_callback_and_graph_task_id_on_the_device_thread():
    from ember.autograd import Variable
    from ember.autograd.engine import current_graph_task_id
    ran = []
    x = ember.ones(3, device="cuda", requires_grad=True)

    def hook(g):
        ran.append(current_graph_task_id())
        Variable._execution_engine.queue_callback(lambda: ran.append("callback"))
    x.register_hook(hook)
    (x * 2).sum().backward()
    assert ran[0] >= 0 and ran[-1] == "callback"


def test_mixed_cpu_and_cuda_graph_matches_cpu_only():
    ember.manual_seed(0)
    w_cpu = ember.randn(5, 3, requires_grad=True)
    w_dev = w_cpu.detach().cuda().requires_grad_()
    x = ember.randn(7, 5)

    def loss(w, dev):
        h = (x.to(dev) @ w).tanh()
        return (h.cpu() * ember.arange(3.0)).sum() + (h ** 2).mean().cpu()
    loss(w_cpu, "cpu").backward()
    loss(w_dev, "cuda").backward()
    np.testing.assert_allclose(w_dev.grad.cpu().numpy(), w_cpu.grad.numpy(), rtol=1e-5,
                               atol=1e-6)
