"""C++ and CUDA extensions (ember.utils.cpp_extension and the headers of ember/include): seed 002
§4.5's TORCH_LIBRARY op, §11's CUDA extension (compiled by nvcc for sm_90; run through its CPU
twin on the simulated device, and for real on a GPU), a load_inline op with a Python autograd
formula, and the errors (TORCH_CHECK, compiler output, double registration, bad schema, stale
headers).

Compiling is the slow part, so the module builds each extension once (module-scoped fixtures,
under a temporary TORCH_EXTENSIONS_DIR) and the tests share them.
"""
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ember
from ember.utils import cpp_extension

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "cpp_ext")
ROOT = os.path.dirname(HERE)

pytest.importorskip("pybind11")
pytestmark = pytest.mark.skipif(
    shutil.which(os.environ.get("CXX", "c++")) is None, reason="no C++ compiler")
needs_nvcc = pytest.mark.skipif(cpp_extension.CUDA_HOME is None, reason="no CUDA toolkit (nvcc)")


@pytest.fixture(scope="module")
def ext_dir(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("torch_extensions"))
    saved = os.environ.get("TORCH_EXTENSIONS_DIR")
    os.environ["TORCH_EXTENSIONS_DIR"] = path
    yield path
    if saved is None:
        del os.environ["TORCH_EXTENSIONS_DIR"]
    else:
        os.environ["TORCH_EXTENSIONS_DIR"] = saved


# Everything the CPU tests need, in one translation unit: seed §4.5 verbatim, an op whose
# gradient comes from Python, and pybind11 functions that exercise the at::Tensor API.
OPS_SOURCE = open(os.path.join(SRC, "seed_triple.cpp")).read() + textwrap.dedent(r"""
    #include <torch/extension.h>
    #include <cmath>

    // y = sin(x) * s, computed in C++ on the tensor's memory
    at::Tensor mul_sin(const at::Tensor& x, double s) {
      TORCH_CHECK(x.is_cpu(), "mul_sin: expected a CPU tensor, got ", x.device());
      auto xc = x.contiguous();
      auto y = at::empty_like(xc);
      AT_DISPATCH_FLOATING_TYPES(xc.scalar_type(), "mul_sin", [&] {
        const scalar_t* in = xc.data_ptr<scalar_t>();
        scalar_t* out = y.data_ptr<scalar_t>();
        for (int64_t i = 0; i < xc.numel(); ++i) out[i] = std::sin(in[i]) * s;
      });
      return y;
    }
    TORCH_LIBRARY(cppext_test, m) {
      m.def("mul_sin(Tensor x, float s) -> Tensor");
      m.def("scaled_sum(Tensor x, Tensor y, *, Scalar alpha=1) -> Tensor",
            [](const at::Tensor& x, const at::Tensor& y, const at::Scalar& alpha) {
              return (x + y * alpha).sum();
            });
    }
    TORCH_LIBRARY_IMPL(cppext_test, CPU, m) {
      m.impl("mul_sin", mul_sin);
    }

    // an implementation registered before its definition (static initializers of different
    // files run in no fixed order)
    at::Tensor twice(const at::Tensor& x) { return x * 2; }
    TORCH_LIBRARY_IMPL(cppext_late, CPU, m) { m.impl("twice", twice); }
    TORCH_LIBRARY(cppext_late, m) { m.def("twice(Tensor x) -> Tensor"); }

    py::tuple describe(const at::Tensor& x) {
      return py::make_tuple(x.sizes().vec(), x.strides().vec(), x.numel(), x.dim(), x.size(-1),
                            x.scalar_type(), x.device(), x.is_contiguous(), x.element_size(),
                            x.options().dtype() == torch::kFloat32);
    }
    std::vector<at::Tensor> factories(const at::Tensor& x) {
      auto opts = torch::TensorOptions().dtype(torch::kFloat64);
      return {torch::empty({2, 3}, opts), torch::zeros({2, 3}), torch::ones({4}, torch::kInt64),
              torch::zeros_like(x), torch::ones_like(x), torch::full({2}, 7.5),
              torch::arange(5)};
    }
    at::Tensor arithmetic(const at::Tensor& a, const at::Tensor& b) {
      auto c = (a + b) * 2 - a / 4;
      c += 1;
      c *= b;
      return torch::relu(c.exp().log() - 3).matmul(b.t()).sum({0}) + (-a).abs().sum();
    }
    at::Tensor views(const at::Tensor& x) {
      return x.view({3, 4}).transpose(0, 1).contiguous().reshape({2, 6}).select(0, 1)
              .unsqueeze(0).narrow(1, 2, 3);
    }
    double total(const at::Tensor& x) { return x.sum().item<double>(); }
    at::Tensor positive_only(const at::Tensor& x) {
      TORCH_CHECK(x.min().item<double>() > 0, "positive_only: x must be positive, got minimum ",
                  x.min().item<double>());
      TORCH_CHECK_VALUE(x.dim() == 1, "positive_only: x must be 1-D");
      TORCH_CHECK_INDEX(x.numel() < 100, "positive_only: too long");
      TORCH_CHECK(x.numel() != 3);
      return x;
    }
    int64_t bad_size(const at::Tensor& x) { return x.size(5); }
    at::Tensor bad_dtype(const at::Tensor& x) { return at::Tensor(py::none()) + *x.data_ptr<double>(); }
    at::Tensor std_throw(const at::Tensor& x) { throw std::runtime_error("a plain C++ exception"); }
    at::Tensor maybe(std::optional<at::Tensor> x) { return x ? *x * 2 : torch::zeros({1}); }
    at::Tensor undefined() { return at::Tensor(); }
    """)
OPS_FUNCTIONS = ["describe", "factories", "arithmetic", "views", "total", "positive_only",
                 "bad_size", "bad_dtype", "std_throw", "maybe", "undefined"]


@pytest.fixture(scope="module")
def ops(ext_dir):
    return cpp_extension.load_inline("ember_cppext_ops", OPS_SOURCE, functions=OPS_FUNCTIONS,
                                     extra_cflags=["-O1"])


# ---------------------------------------------------------------------------------------------
# Seed §4.5: TORCH_LIBRARY / TORCH_LIBRARY_IMPL

def test_seed_triple_through_ember_ops(ops):
    x = ember.tensor([1.0, -2.0, 3.5])
    out = ember.ops.myops.triple(x)
    assert out.tolist() == [3.0, -6.0, 10.5]
    assert ember.ops.myops.triple.default(x).tolist() == [3.0, -6.0, 10.5]
    schema = str(ember.ops.myops.triple.default._schema)
    assert schema == "myops::triple(Tensor x) -> Tensor"
    # the registrations are the dispatcher's, with PyTorch's "registered at file:line"
    table = ember._C._dispatch_dump("myops::triple")
    assert "CPU: registered at" in table and "main.cpp" in table
    assert "CUDA: registered at" in table


def test_seed_triple_compiles_without_a_graph_break(ops):
    """With a fake kernel registered from Python (as a PyTorch user would), ember.compile keeps
    the C++ op in one graph; the graph calls the C++ kernel."""
    lib = ember.library.Library("myops", "FRAGMENT")
    lib._register_fake("triple", lambda x: ember.empty_like(x))
    try:
        ember._dynamo.reset()

        def f(t):
            return ember.ops.myops.triple(t) + 1
        explained = ember._dynamo.explain(f)(ember.ones(3))
        assert (explained.graph_count, explained.graph_break_count) == (1, 0)
        assert ember.compile(f, backend="aot_eager")(ember.tensor([1.0, 2.0])).tolist() == \
            [4.0, 7.0]
    finally:
        lib._destroy()
        ember._dynamo.reset()


def test_seed_triple_without_an_autograd_kernel(ops):
    # no Autograd registration: ember's autograd fallback marks the output as PyTorch's does,
    # and backward says the derivative is missing
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = ember.ops.myops.triple(x)
    assert y.tolist() == [3.0, 6.0] and "NotImplemented" in repr(y.grad_fn)
    with pytest.raises(RuntimeError, match="the derivative for 'myops::triple' is not implemented"):
        y.sum().backward()


def test_seed_triple_on_the_simulated_device(ops, cuda_device):
    x = ember.tensor([1.0, 2.0], device="cuda")
    y = ember.ops.myops.triple(x)
    assert y.device.type == "cuda" and y.cpu().tolist() == [3.0, 6.0]


# ---------------------------------------------------------------------------------------------
# A load_inline op with its gradient from Python

def test_register_autograd_from_python_gradcheck(ops):
    op = ember.ops.cppext_test.mul_sin.default

    def setup_context(ctx, inputs, output):
        x, s = inputs
        ctx.save_for_backward(x)
        ctx.s = s

    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x.cos() * ctx.s, None

    ember.library.register_autograd("cppext_test::mul_sin", backward, setup_context=setup_context)

    @ember.library.register_fake("cppext_test::mul_sin")
    def _(x, s):
        return ember.empty_like(x)

    x = ember.randn(5, dtype=ember.float64, requires_grad=True)
    y = op(x, 1.5)
    np.testing.assert_allclose(y.detach().numpy(), np.sin(x.detach().numpy()) * 1.5, rtol=1e-12)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.cos(x.detach().numpy()) * 1.5, rtol=1e-12)
    assert ember.autograd.gradcheck(lambda t: op(t, 0.7), (x,))
    # the fake kernel: shapes without computing
    m = op(ember.empty(3, 2, device="meta"), 2.0)
    assert m.shape == (3, 2) and m.device.type == "meta"
    # float32 runs the other AT_DISPATCH branch; an int tensor names the op and the dtype
    assert op(ember.zeros(2), 1.0).tolist() == [0.0, 0.0]
    with pytest.raises(NotImplementedError, match="\"mul_sin\" not implemented for 'Long'"):
        op(ember.zeros(2, dtype=ember.int64), 1.0)
    # ember.compile: the C++ op stays one node of one graph, gradients from Python
    ember._dynamo.reset()

    def f(t):
        return (op(t, 1.5) * t).sum()
    explained = ember._dynamo.explain(f)(x)
    assert (explained.graph_count, explained.graph_break_count) == (1, 0)
    x.grad = None
    ember.compile(f, backend="aot_eager")(x).backward()
    xd = x.detach().numpy()
    np.testing.assert_allclose(x.grad.numpy(), 1.5 * (np.cos(xd) * xd + np.sin(xd)), rtol=1e-12)


def test_impl_before_def(ops):
    assert ember.ops.cppext_late.twice(ember.tensor([1.5])).tolist() == [3.0]


def test_def_with_a_lambda_and_kwarg_only_scalar(ops):
    x, y = ember.tensor([1.0, 2.0]), ember.tensor([10.0, 20.0])
    assert ember.ops.cppext_test.scaled_sum(x, y).item() == 33.0
    assert ember.ops.cppext_test.scaled_sum(x, y, alpha=0.5).item() == 18.0
    assert ember.ops.cppext_test.scaled_sum(x, y, alpha=np.float32(0.5)).item() == 18.0
    assert ember.ops.cppext_test.scaled_sum(x, y, alpha=np.int64(2)).item() == 63.0


# ---------------------------------------------------------------------------------------------
# The at::Tensor API

def test_tensor_metadata(ops):
    x = ember.zeros(3, 4, dtype=ember.float32).t()
    sizes, strides, numel, dim, last, dtype, device, contiguous, esize, is_f32 = ops.describe(x)
    assert (sizes, strides, numel, dim, last) == ([4, 3], [1, 4], 12, 2, 3)
    assert dtype is ember.float32 and device == ember.device("cpu")
    assert contiguous is False and esize == 4 and is_f32 is True
    assert ops.describe(ember.zeros(2, dtype=ember.int64))[5] is ember.int64


def test_factories_and_ops_call_the_dispatcher(ops):
    x = ember.tensor([[1.0, 2.0], [3.0, 4.0]])
    e, z, o, zl, ol, f, r = ops.factories(x)
    assert e.shape == (2, 3) and e.dtype is ember.float64
    assert z.tolist() == [[0.0] * 3] * 2 and o.dtype is ember.int64 and o.tolist() == [1] * 4
    assert zl.tolist() == [[0.0, 0.0]] * 2 and ol.tolist() == [[1.0, 1.0]] * 2
    assert f.tolist() == [7.5, 7.5] and r.tolist() == [0, 1, 2, 3, 4] and r.dtype is ember.int64
    a, b = ember.randn(2, 3), ember.randn(2, 3)
    c = (a + b) * 2 - a / 4
    c = (c + 1) * b
    expected = ember.relu(c.exp().log() - 3).matmul(b.t()).sum(0) + (-a).abs().sum()
    np.testing.assert_allclose(ops.arithmetic(a, b).numpy(), expected.numpy(), rtol=1e-5)
    x = ember.arange(12.0)
    assert ops.views(x).tolist() == x.view(3, 4).t().reshape(2, 6)[1].unsqueeze(0)[:, 2:5].tolist()
    assert ops.total(ember.tensor([1.5, 2.5])) == 4.0
    assert ops.maybe(ember.tensor([2.0])).tolist() == [4.0] and ops.maybe(None).tolist() == [0.0]
    assert ops.undefined() is None


def test_cpp_ops_are_seen_by_dispatch_modes(ops):
    from ember.utils._python_dispatch import TorchDispatchMode
    seen = []

    class Log(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(str(func))
            return func(*args, **(kwargs or {}))

    x = ember.ones(2)
    with Log():
        ember.ops.myops.triple(x)
    assert seen == ["myops.triple.default"]  # PyTorch's Python key sees the custom op itself


# ---------------------------------------------------------------------------------------------
# Errors

def test_torch_check_becomes_runtime_error(ops):
    with pytest.raises(RuntimeError, match=r"^positive_only: x must be positive, got minimum -1$"):
        ops.positive_only(ember.tensor([-1.0, 2.0]))
    with pytest.raises(ValueError, match="must be 1-D"):
        ops.positive_only(ember.ones(2, 2))
    with pytest.raises(IndexError, match="too long"):
        ops.positive_only(ember.ones(200))
    with pytest.raises(RuntimeError, match=r"Expected x.numel\(\) != 3 to be true, but got false"):
        ops.positive_only(ember.ones(3))
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of "
                                         r"\[-1, 0\], but got 5\)"):
        ops.bad_size(ember.ones(2))
    with pytest.raises(RuntimeError, match="expected scalar type Double but found Float"):
        ops.bad_dtype(ember.ones(2))
    with pytest.raises(RuntimeError, match=r"a plain C\+\+ exception"):
        ops.std_throw(ember.ones(1))
    with pytest.raises(TypeError, match="incompatible function arguments"):
        ops.total([1.0, 2.0])


BAD_REGISTRATIONS = r"""
TORCH_LIBRARY(cppext_test, m) {}
TORCH_LIBRARY_FRAGMENT(cppext_test, m) {
  m.def("mul_sin(Tensor x, float s) -> Tensor");
}
TORCH_LIBRARY_FRAGMENT(cppext_bad, m) {
  m.def("broken(Tensor x -> Tensor");
}
"""


def test_registration_errors_raise_at_load(ops, ext_dir):
    with pytest.raises(RuntimeError) as info:
        cpp_extension.load_inline("ember_cppext_bad", BAD_REGISTRATIONS, is_python_module=False)
    msg = str(info.value)
    assert msg.startswith("Only a single TORCH_LIBRARY can be used to register the namespace "
                          "cppext_test")
    assert "Tried to register an operator (cppext_test::mul_sin) with the same name and " \
           "overload name multiple times." in msg
    assert "broken(Tensor x -> Tensor" in msg
    # what did load stays; the op defined first is untouched
    assert ember.ops.cppext_test.mul_sin(ember.zeros(1), 1.0).tolist() == [0.0]
    assert not hasattr(ember.ops, "cppext_bad") or not hasattr(ember.ops.cppext_bad, "broken")


def test_stale_headers_are_refused(ops, tmp_path, monkeypatch):
    from ember._library import cpp
    # another copy of the built library, loaded while ember expects other headers
    copy = tmp_path / "stale.so"
    shutil.copy(ops.__file__, copy)
    monkeypatch.setattr(cpp, "HEADER_VERSION", cpp.HEADER_VERSION + 1)
    with pytest.raises(RuntimeError, match=r"built against ember's extension headers version "
                                           r"\d+, but this ember .* is version \d+\. Rebuild it"):
        ember.ops.load_library(str(copy))


def test_compile_error_shows_compiler_output_and_build_dir(ext_dir, capsys, monkeypatch):
    source = "int broken( { return 0; }"  # fails before any header is read
    with pytest.raises(RuntimeError) as info:
        cpp_extension.load_inline("ember_cppext_broken", source, no_implicit_headers=True,
                                  verbose=True)
    msg = str(info.value)
    build_dir = os.path.join(ext_dir, "ember_cppext_broken")
    assert msg.startswith(f"Error building extension 'ember_cppext_broken' (build directory: "
                          f"{build_dir})")
    assert "main.cpp" in msg and "error:" in msg
    assert "-DTORCH_EXTENSION_NAME=ember_cppext_broken" in capsys.readouterr().out  # verbose
    # without ninja: one compiler call per source, the failing command in the message
    monkeypatch.setattr(cpp_extension, "is_ninja_available", lambda: False)
    with pytest.raises(RuntimeError, match=r"(?s)Error building extension.*-c .*main.cpp.*error:"):
        cpp_extension.load_inline("ember_cppext_broken2", source, no_implicit_headers=True)


# ---------------------------------------------------------------------------------------------
# Caching

def test_cached_reload(ops, ext_dir):
    build_dir = os.path.join(ext_dir, "ember_cppext_ops")
    so = os.path.join(build_dir, "ember_cppext_ops.so")
    mtime = os.stat(so).st_mtime_ns
    again = cpp_extension.load_inline("ember_cppext_ops", OPS_SOURCE, functions=OPS_FUNCTIONS,
                                      extra_cflags=["-O1"])
    assert again is ops and os.stat(so).st_mtime_ns == mtime
    # a fresh process finds the build by its hash and loads it without compiling
    code = textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {os.path.join(HERE, 'cpp_ext')!r})
        import ember
        from ember.utils import cpp_extension
        src = {OPS_SOURCE!r}
        t = time.perf_counter()
        m = cpp_extension.load_inline("ember_cppext_ops", src, functions={OPS_FUNCTIONS!r},
                                      extra_cflags=["-O1"], verbose=True)
        print("seconds", time.perf_counter() - t)
        print(ember.ops.myops.triple(ember.ones(2)).tolist(), m.total(ember.ones(3)))
        """)
    env = dict(os.environ, PYTHONPATH=ROOT, TORCH_EXTENSIONS_DIR=ext_dir)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "No modifications detected for re-loaded extension module ember_cppext_ops" in out.stdout
    assert "[3.0, 3.0] 3.0" in out.stdout
    assert "Building" not in out.stdout
    assert os.stat(so).st_mtime_ns == mtime
    # different flags: a rebuild under a new name in this process
    assert cpp_extension._build_hash([os.path.join(build_dir, "main.cpp")], [["-O2"]], False) != \
        open(os.path.join(build_dir, "ember_cppext_ops.hash")).read()


def test_include_and_library_paths():
    paths = cpp_extension.include_paths()
    assert os.path.exists(os.path.join(paths[0], "torch", "extension.h"))
    assert os.path.exists(os.path.join(paths[1], "pybind11", "pybind11.h"))
    assert cpp_extension.library_paths() == []
    if cpp_extension.CUDA_HOME is not None:
        assert os.path.exists(os.path.join(cpp_extension.include_paths("cuda")[-1],
                                           "cuda_runtime_api.h"))
        assert any(os.path.exists(os.path.join(p, "libcudart.so"))
                   for p in cpp_extension.library_paths("cuda"))


def test_build_extension_options():
    from setuptools import Distribution
    from setuptools.command.build_ext import build_ext
    cls = cpp_extension.BuildExtension.with_options(no_python_abi_suffix=True)
    assert issubclass(cls, build_ext) and issubclass(cls, cpp_extension.BuildExtension)
    assert cls(Distribution()).get_ext_filename("my_ext") == "my_ext.so"
    plain = cpp_extension.BuildExtension(Distribution()).get_ext_filename("my_ext")
    assert plain.startswith("my_ext.cpython-") and plain.endswith(".so")
    ext = cpp_extension.CppExtension("my_ext", ["a.cpp"], include_dirs=["inc"])
    assert ext.include_dirs == ["inc"] + cpp_extension.include_paths() and ext.language == "c++"


# ---------------------------------------------------------------------------------------------
# Seed §11: the CUDA extension

@pytest.fixture(scope="module")
def seed11_build(tmp_path_factory):
    """Seed §11's setup.py run as written (ember imported for torch): binding.cpp by the C++
    compiler, kernel.cu by nvcc for sm_90."""
    if cpp_extension.CUDA_HOME is None:
        pytest.skip("no CUDA toolkit (nvcc)")
    root = tmp_path_factory.mktemp("seed11")
    (root / "src").mkdir()
    for f in ("binding.cpp", "kernel.cu"):
        shutil.copy(os.path.join(SRC, "seed11", f), root / "src" / f)
    setup = open(os.path.join(SRC, "seed11", "setup.py")).read()
    (root / "setup.py").write_text(setup.replace("torch.utils.cpp_extension",
                                                 "ember.utils.cpp_extension"))
    env = dict(os.environ, PYTHONPATH=ROOT)
    env.pop("TORCH_CUDA_ARCH_LIST", None)
    out = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace"], cwd=root,
                         env=env, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stdout + out.stderr
    return root, out.stdout


@needs_nvcc
def test_seed11_kernel_cu_compiles_for_sm90(seed11_build):
    root, log = seed11_build
    assert "nvcc" in log and "-gencode=arch=compute_90,code=sm_90" in log and "-O3" in log
    so = [f for f in os.listdir(root) if f.startswith("my_ext") and f.endswith(".so")]
    assert len(so) == 1
    data = open(root / so[0], "rb").read()
    assert b"scale_kernel" in data and b"sm_90" in data  # the kernel's cubin is in the library


def _import_seed11(root):
    import importlib.util
    from ember._library import cpp
    so = [f for f in os.listdir(root) if f.startswith("my_ext") and f.endswith(".so")][0]
    spec = importlib.util.spec_from_file_location("my_ext", str(root / so))
    module = importlib.util.module_from_spec(spec)
    with cpp.loading(so):
        spec.loader.exec_module(module)
    return module


@needs_nvcc
def test_seed11_checks_run_without_a_gpu(seed11_build):
    my_ext = _import_seed11(seed11_build[0])
    with pytest.raises(RuntimeError, match="^x must be cuda$"):
        my_ext.scale(ember.ones(3), 2.0)
    assert my_ext.scale.__doc__.splitlines()[-1] == "scale(x, s) = x * s on CUDA"


@pytest.mark.cuda
@needs_nvcc
def test_seed11_scale_on_the_gpu(seed11_build, cuda_device):
    my_ext = _import_seed11(seed11_build[0])
    x = ember.randn(1000, device="cuda")
    y = my_ext.scale(x, 2.5)
    ember.cuda.synchronize()
    np.testing.assert_allclose(y.cpu().numpy(), x.cpu().numpy() * 2.5, rtol=1e-6)


@pytest.fixture(scope="module")
def seed11_twin(ext_dir):
    """The seed's binding.cpp with the CPU twin of kernel.cu, §11.3's TORCH_LIBRARY, and an op
    reading the current stream (with_cuda: the CUDA headers and runtime)."""
    if cpp_extension.CUDA_HOME is None:
        pytest.skip("no CUDA toolkit (the runtime's headers)")
    d = os.path.join(SRC, "seed11")
    files = ("binding.cpp", "scale_twin.cpp", "registration.cpp", "stream.cpp")
    return cpp_extension.load("my_ext_twin", [os.path.join(d, f) for f in files], with_cuda=True)


def test_seed11_cpu_twin_on_the_simulated_device(seed11_twin, cuda_device):
    if cuda_device != "simulated":
        pytest.skip("the twin runs the kernel on the host: the simulated device only")
    x = ember.randn(1000, device="cuda")
    y = seed11_twin.scale(x, 2.5)
    assert y.device.type == "cuda"
    np.testing.assert_allclose(y.cpu().numpy(), x.cpu().numpy() * 2.5, rtol=1e-6)
    z = ember.ops.myext.scale(x, 2.5)  # §11.3: the same kernel as a dispatcher op
    np.testing.assert_allclose(z.cpu().numpy(), y.cpu().numpy())
    with pytest.raises(RuntimeError, match="^x must be cuda$"):
        seed11_twin.scale(ember.ones(2), 1.0)
    with pytest.raises(RuntimeError, match="^x must be float32$"):
        seed11_twin.scale(ember.ones(2, dtype=ember.float64, device="cuda"), 1.0)
    with pytest.raises(NotImplementedError, match="myext::scale"):
        ember.ops.myext.scale(ember.ones(2), 1.0)  # no CPU kernel registered
    # ember.compile, with the op's fake kernel from Python: one graph, no break
    lib = ember.library.Library("myext", "FRAGMENT")
    lib._register_fake("scale", lambda t, s: ember.empty_like(t))
    try:
        ember._dynamo.reset()

        def f(t):
            return ember.ops.myext.scale(t, 2.5) + t
        explained = ember._dynamo.explain(f)(x)
        assert (explained.graph_count, explained.graph_break_count) == (1, 0)
        np.testing.assert_allclose(ember.compile(f, backend="aot_eager")(x).cpu().numpy(),
                                   x.cpu().numpy() * 3.5, rtol=1e-6)
    finally:
        lib._destroy()
        ember._dynamo.reset()


def test_current_cuda_stream_from_cpp(seed11_twin, cuda_device):
    current = ember.ops.myext.current_stream
    assert current(0) == ember.cuda.current_stream(0).cuda_stream
    s = ember.cuda.Stream()
    with ember.cuda.stream(s):
        assert current(0) == s.cuda_stream
    assert current(0) == ember.cuda.default_stream(0).cuda_stream
