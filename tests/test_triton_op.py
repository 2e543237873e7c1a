"""Triton kernels as ember operators (seed 002 §10.3), under Triton's interpreter
(TRITON_INTERPRET=1, which runs on the host: on CPU tensors and on the simulated CUDA device),
and the tensor APIs the interpreter needs (UntypedStorage.cpu / copy_, Tensor.set_)."""
import numpy as np
import pytest

import ember

triton = pytest.importorskip("triton")
tl = pytest.importorskip("triton.language")


@pytest.fixture(autouse=True)
def interpret(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")  # read when a kernel is decorated


def make_add_kernel():
    @triton.jit
    def _add_kernel(x_ptr, y_ptr, out_ptr, N, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        offs = pid * BLOCK + tl.arange(0, BLOCK)
        mask = offs < N
        a = tl.load(x_ptr + offs, mask=mask)
        b = tl.load(y_ptr + offs, mask=mask)
        tl.store(out_ptr + offs, a + b, mask=mask)
    return _add_kernel


def test_seed_triton_add_custom_op_on_the_simulated_device(cuda_device):
    if cuda_device != "simulated":
        pytest.skip("the interpreter test; a GPU runs Triton for real")
    torch = ember
    _add_kernel = make_add_kernel()

    # seed 002 §10.3, as written
    def _add_launch(x, y):
        out = torch.empty_like(x)
        N = x.numel()
        BLOCK = 1024
        grid = ((N + BLOCK - 1) // BLOCK,)
        _add_kernel[grid](x, y, out, N, BLOCK=BLOCK)
        return out

    @torch.library.custom_op("mylib::triton_add", mutates_args=())
    def triton_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        assert x.is_cuda and y.is_cuda and x.shape == y.shape
        return _add_launch(x.contiguous(), y.contiguous())

    @triton_add.register_fake
    def _(x, y):
        return torch.empty_like(x)

    def _bwd(ctx, g):
        return g, g

    triton_add.register_autograd(_bwd)

    try:
        x = torch.randn(4096, device="cuda", requires_grad=True)
        y = torch.randn(4096, device="cuda", requires_grad=True)
        z = torch.ops.mylib.triton_add(x, y)
        z.sum().backward()
        assert x.grad.shape == y.grad.shape == (4096,)
        np.testing.assert_array_equal(z.detach().cpu().numpy(),
                                      (x.detach() + y.detach()).cpu().numpy())
        assert x.grad.cpu().tolist() == [1.0] * 4096
        # the fake implementation: shapes on meta tensors, no kernel
        m = torch.ops.mylib.triton_add(torch.empty(5, device="meta"), torch.empty(5, device="meta"))
        assert m.shape == (5,) and m.device.type == "meta"
    finally:
        triton_add._destroy()


def test_triton_op_with_wrap_triton_on_cpu_tensors():
    kernel = make_add_kernel()

    @ember.library.triton_op("tritontest::add", mutates_args=())
    def add(x: ember.Tensor, y: ember.Tensor) -> ember.Tensor:
        out = ember.empty_like(x)
        n = x.numel()
        ember.library.wrap_triton(kernel)[(triton.cdiv(n, 64),)](x, y, out, n, BLOCK=64)
        return out

    def backward(ctx, g):
        return g, g

    add.register_autograd(backward)
    try:
        x = ember.randn(100, dtype=ember.float64, requires_grad=True)
        y = ember.randn(100, dtype=ember.float64)
        z = ember.ops.tritontest.add(x, y)
        np.testing.assert_array_equal(z.detach().numpy(), x.detach().numpy() + y.numpy())
        z.sum().backward()
        assert x.grad.tolist() == [1.0] * 100
        assert ember.autograd.gradcheck(lambda a: ember.ops.tritontest.add(a, y), (x,))
        # a strided view goes in as its storage: the kernel sees the view's data pointer
        base = ember.arange(20.0)
        v = ember.ops.tritontest.add(base[10:], base[:10])
        assert v.tolist() == [float(10 + 2 * i) for i in range(10)]
        # the op's function is its fake implementation; the launch is skipped on meta tensors
        m = ember.ops.tritontest.add(ember.empty(7, device="meta"), ember.empty(7, device="meta"))
        assert m.shape == (7,) and m.device.type == "meta"
        from ember._subclasses.fake_tensor import FakeTensorMode
        mode = FakeTensorMode()
        fx, fy = mode.from_tensor(x.detach()), mode.from_tensor(y)
        with mode:
            f = ember.ops.tritontest.add(fx, fy)
        assert f.shape == (100,)
        # ember.compile keeps the op whole in one graph (its function is the fake kernel)
        ember._dynamo.reset()

        def g(a, b):
            return (ember.ops.tritontest.add(a, b) * 2).sum()
        explained = ember._dynamo.explain(g)(x, y)
        assert (explained.graph_count, explained.graph_break_count) == (1, 0)
        x.grad = None
        ember.compile(g, backend="aot_eager")(x, y).backward()
        assert x.grad.tolist() == [2.0] * 100
    finally:
        add._destroy()


def test_wrap_triton_refuses_a_plain_function():
    with pytest.raises(RuntimeError, match="wrap_triton only works on functions annotated with "
                                           "triton.jit or triton.autotune"):
        ember.library.wrap_triton(lambda x: x)


def test_storage_cpu_copy_and_set_(cuda_device):
    s = ember.arange(6.0).untyped_storage()
    assert s.cpu() is s  # already on the CPU: itself, as PyTorch
    d = ember.arange(6.0, device="cuda")
    host = d.untyped_storage().cpu()
    assert host.device.type == "cpu" and host.nbytes() == 24
    t = ember.empty(0)
    t.set_(host, 1, (2, 2), (1, 2))
    assert t.tolist() == [[1.0, 3.0], [2.0, 4.0]] and t.storage_offset() == 1
    t.mul_(10)  # write through the host copy, then back onto the device storage
    d.untyped_storage().copy_(host)
    assert d.cpu().tolist() == [0.0, 10.0, 20.0, 30.0, 40.0, 5.0]
    whole = ember.empty(0, dtype=ember.float32).set_(ember.ones(3).untyped_storage())
    assert whole.tolist() == [1.0, 1.0, 1.0]
    # a view past the storage's end grows it, as ATen's set_ does (a NumPy array's is fixed)
    grown = ember.ones(3).untyped_storage()
    assert ember.empty(0).set_(grown, 0, (4,), (1,)).shape == (4,) and grown.nbytes() == 16
    with pytest.raises(RuntimeError, match="Trying to resize storage that is not resizable"):
        ember.empty(0).set_(ember.from_numpy(np.ones(3, np.float32)).untyped_storage(), 0,
                            (4,), (1,))
    with pytest.raises(RuntimeError, match="Attempted to set the storage of a tensor on device "
                                           "\"cpu\" to a storage on different device \"cuda:0\""):
        ember.empty(0).set_(d.untyped_storage(), 0, (1,))
    # a Tensor source is set_.source_Tensor_storage_offset, as in PyTorch: its storage
    assert ember.empty(0).set_(ember.arange(3.0), 1, (1,)).tolist() == [1.0]
