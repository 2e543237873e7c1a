"""ember.library: TORCH_LIBRARY-style Library ops, custom_op with register_fake /
register_autograd / register_kernel / register_torch_dispatch, opcheck, and scoped overrides of
aten kernels. The seeds' examples: triple, myadd, triton_add (CPU kernel), clip_norm."""
import io
import itertools
import typing

import pytest

import ember
from ember import library
from ember._subclasses.fake_tensor import FakeTensor, FakeTensorMode
from ember.utils._python_dispatch import TorchDispatchMode

_ids = itertools.count()


def _ns():
    """A fresh namespace per test: operators live for the process, as in PyTorch."""
    return f"emtest{next(_ids)}"


def test_triple_library_def_and_impls():
    ns = _ns()
    lib = library.Library(ns, "DEF")
    lib.define("triple(Tensor x) -> Tensor")
    cpu = library.Library(ns, "IMPL", "CPU")
    cpu.impl("triple", lambda x: x * 3)
    meta = library.Library(ns, "IMPL", "Meta")
    meta.impl("triple", lambda x: ember.empty_like(x))
    op = getattr(ember.ops, ns).triple
    assert op(ember.arange(3.0)).tolist() == [0.0, 3.0, 6.0]
    assert op.default(ember.ones(2, device="meta")).device.type == "meta"
    dump = ember._C._dispatch_dump(f"{ns}::triple")
    assert f"schema: {ns}::triple(Tensor x) -> Tensor" in dump and "CPU:" in dump
    with pytest.raises(RuntimeError, match="Only a single TORCH_LIBRARY"):
        library.Library(ns, "DEF")
    if not ember.cuda.is_available():  # as a PyTorch build without CUDA
        with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled"):
            op(ember.ones(1, device="cuda"))


def test_override_aten_kernel_for_one_key_is_scoped():
    lib = library.Library("aten", "IMPL")
    with pytest.warns(UserWarning, match="Overriding a previously registered kernel"):
        lib.impl("add.Tensor", lambda a, b, alpha=1: ember.full_like(a, 42.0), "CPU")
    assert (ember.ones(2) + ember.ones(2)).tolist() == [42.0, 42.0]
    lib._destroy()
    assert (ember.ones(2) + ember.ones(2)).tolist() == [2.0, 2.0]


def test_infer_schema_matches_pytorch(torch):
    from torch.library import infer_schema as t_infer

    def protos(lib):
        T = lib.Tensor

        def f(x: T, y: T, a: int, b: float = 2.0, c: bool = False,
              d: typing.Optional[T] = None, z: typing.Union[int, float, bool] = 1,
              e: typing.Optional[typing.Sequence[int]] = None, s: str = "x", *,
              ts: typing.List[T]) -> T: ...

        def g(x: T, out: T) -> None: ...

        def h(x: T, *, alpha: float = 1.0, dt: typing.Optional[lib.dtype] = None,
              n: typing.Optional[int] = None) -> typing.Tuple[T, T]: ...
        return [(f, ()), (g, {"out"}), (h, ()), (g, "unknown")]
    for (ef, em), (tf, tm) in zip(protos(ember), protos(torch)):
        assert library.infer_schema(ef, mutates_args=em) == t_infer(tf, mutates_args=tm)

    def untyped(x):
        ...
    with pytest.raises(ValueError, match="must have a type annotation"):
        library.infer_schema(untyped, mutates_args=())


def _myadd(ns):
    @library.custom_op(f"{ns}::myadd", mutates_args=())
    def myadd(x: ember.Tensor, y: ember.Tensor) -> ember.Tensor:
        return x + y
    return myadd


def test_myadd_seed_example():
    ns = _ns()
    myadd = _myadd(ns)
    assert repr(myadd) == f"<CustomOpDef({ns}::myadd)>"
    op = getattr(ember.ops, ns).myadd
    assert str(op.default._schema) == f"{ns}::myadd(Tensor x, Tensor y) -> Tensor"
    x = ember.ones(2, requires_grad=True)
    z = myadd(x, x)
    assert type(z.grad_fn).__name__ == f"GeneratedBackwardFor_{ns}_myadd_defaultBackward"
    with pytest.raises(RuntimeError, match="no autograd formula was registered"):
        z.sum().backward()
    with pytest.raises(RuntimeError, match="There was no fake impl registered"):
        with FakeTensorMode():
            myadd(ember.ones(2), ember.ones(2))

    @myadd.register_fake
    def _(x, y):
        return ember.empty_like(x)

    def setup_context(ctx, inputs, output):
        pass

    def backward(ctx, grad):
        return grad, grad
    myadd.register_autograd(backward, setup_context=setup_context)
    z = op(x, x)
    z.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]
    with FakeTensorMode():
        f = op(ember.ones(3, device="cuda"), ember.ones(3, device="cuda"))
    assert type(f) is FakeTensor and f.device.type == "cuda" and f.shape == (3,)
    assert library.opcheck(myadd, (ember.randn(3), ember.randn(3))) == {
        "test_schema": "SUCCESS", "test_autograd_registration": "SUCCESS",
        "test_faketensor": "SUCCESS", "test_aot_dispatch_dynamic": "SUCCESS"}
    myadd._destroy()
    assert not hasattr(getattr(ember.ops, ns), "myadd")


def test_triton_add_style_op_with_cpu_kernel():
    ns = _ns()

    def _add_launch(x, y):  # stands in for the Triton launch: a CPU kernel
        out = ember.empty_like(x)
        out.copy_(x + y)
        return out

    @library.custom_op(f"{ns}::triton_add", mutates_args=(), device_types="cpu")
    def triton_add(x: ember.Tensor, y: ember.Tensor) -> ember.Tensor:
        assert x.is_cpu and y.is_cpu and x.shape == y.shape
        return _add_launch(x.contiguous(), y.contiguous())

    @triton_add.register_fake
    def _(x, y):
        return ember.empty_like(x)

    def _bwd(ctx, g):
        return g, g
    triton_add.register_autograd(_bwd)
    x = ember.randn(64, requires_grad=True)
    y = ember.randn(64, requires_grad=True)
    z = getattr(ember.ops, ns).triton_add(x, y)
    z.sum().backward()
    assert x.grad.shape == y.grad.shape == (64,) and x.grad.tolist() == [1.0] * 64
    assert "CPU:" in ember._C._dispatch_dump(f"{ns}::triton_add")
    assert library.opcheck(triton_add, (ember.randn(4), ember.randn(4)))["test_faketensor"] == \
        "SUCCESS"


def test_clip_norm_exercise_4():
    ns = _ns()

    @library.custom_op(f"{ns}::clip_norm", mutates_args=())
    def clip_norm(x: ember.Tensor, max_norm: float) -> ember.Tensor:
        n = (x * x).sum() ** 0.5
        scale = (max_norm / (n + 1e-12)).clamp(max=1.0)
        return x * scale

    @clip_norm.register_fake
    def _(x, max_norm):
        return ember.empty_like(x)

    def _setup(ctx, inputs, output):
        x, max_norm = inputs
        n = (x * x).sum() ** 0.5
        ctx.saved = (x, (max_norm / (n + 1e-12)).clamp(max=1.0))

    def _bwd(ctx, g):
        x, scale = ctx.saved
        return g * scale, None
    clip_norm.register_autograd(_bwd, setup_context=_setup)
    x = ember.tensor([3.0, 4.0], requires_grad=True)
    y = clip_norm(x, 1.0)
    assert [round(v, 5) for v in y.tolist()] == [0.6, 0.8]
    y.sum().backward()
    assert [round(v, 5) for v in x.grad.tolist()] == [0.2, 0.2]
    assert clip_norm(ember.tensor([0.3, 0.4]), 1.0).tolist() == pytest.approx([0.3, 0.4])
    result = library.opcheck(clip_norm, (ember.randn(5, requires_grad=True), 1.0))
    assert set(result.values()) == {"SUCCESS"}


def test_mutating_op_and_opcheck_catches_wrong_schema():
    ns = _ns()

    @library.custom_op(f"{ns}::scale_", mutates_args={"x"})
    def scale_(x: ember.Tensor, s: float) -> None:
        x.mul_(s)
    assert "Tensor(a0!) x" in str(getattr(ember.ops, ns).scale_.default._schema)

    @scale_.register_fake
    def _(x, s):
        return None
    t = ember.ones(2)
    scale_(t, 3.0)
    assert t.tolist() == [3.0, 3.0] and t._version == 2  # the kernel's mul_ and the op itself

    @library.custom_op(f"{ns}::liar", mutates_args=())
    def liar(x: ember.Tensor) -> ember.Tensor:
        x.add_(1)
        return x.clone()
    result = library.opcheck(liar, (ember.ones(2),), raise_exception=False)
    assert "not defined as mutable but was mutated" in str(result["test_schema"])
    with pytest.raises(library.OpCheckError):
        library.opcheck(liar, (ember.ones(2),), test_utils="test_schema")


def test_custom_ops_in_traces_modes_and_dumps():
    ns = _ns()
    myadd = _myadd(ns)
    seen = []

    class Log(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(str(func))
            return func(*args, **(kwargs or {}))
    a, b = ember.ones(1), ember.ones(1)
    with Log():
        myadd(a, b)
    assert seen == [f"{ns}.myadd.default"]  # one opaque call, as in PyTorch
    buf = io.StringIO()
    ember._C._set_dispatch_trace(True, buf)
    try:
        myadd(ember.ones(1), ember.ones(1))
    finally:
        ember._C._set_dispatch_trace(False)
    assert f"[call] op=[{ns}::myadd], key=[AutogradCPU]" in buf.getvalue()
    assert "CompositeExplicitAutograd:" in ember._C._dispatch_dump(f"{ns}::myadd")
    assert "CPU: registered at" in ember._C._dispatch_dump_table(f"{ns}::myadd")


def test_register_torch_dispatch_rule_for_a_mode():
    ns = _ns()
    myadd = _myadd(ns)

    class Mode(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    @myadd.register_torch_dispatch(Mode)
    def _(mode, func, types, args, kwargs):
        return ember.full_like(args[0], 7.0)
    with Mode():
        assert myadd(ember.ones(2), ember.ones(2)).tolist() == [7.0, 7.0]
    assert myadd(ember.ones(2), ember.ones(2)).tolist() == [2.0, 2.0]


def test_library_register_fake_and_module_functions():
    ns = _ns()
    lib = library.Library(ns, "FRAGMENT")
    lib.define("twice(Tensor x) -> Tensor")
    library.impl(f"{ns}::twice", "cpu", lambda x: x * 2, lib=lib)
    lib._register_fake("twice", lambda x: ember.empty_like(x))
    library.register_autograd(f"{ns}::twice", lambda ctx, g: g * 2, lib=lib)
    op = getattr(ember.ops, ns).twice
    x = ember.ones(3, requires_grad=True)
    op(x).sum().backward()
    assert x.grad.tolist() == [2.0] * 3
    with FakeTensorMode():
        assert op(ember.ones(4, 2)).shape == (4, 2)
    assert set(library.opcheck(op, (ember.randn(3),)).values()) == {"SUCCESS"}


def _keyword_only_ops(lib_mod, ns):
    """A Library op and a custom_op with keyword-only arguments, each called as PyTorch allows,
    with the keyword-only values a kernel received and the gradient through setup_context's
    keyword_only_inputs."""
    T = lib_mod
    lib = T.library.Library(ns, "DEF")
    lib.define("f(Tensor x, int a=1, *, int k=1, float s=1.0) -> Tensor")
    seen = []

    def f(x, a=1, *, k=1, s=1.0):  # PyTorch passes only the arguments that differ from defaults
        seen.append((a, k, s))
        return x * a * k * s
    lib.impl("f", f, "CPU")
    op = getattr(T.ops, ns).f
    x = T.ones(2)
    out = [op(x).tolist(), op(x, k=2).tolist(), op.default(x, 3, s=0.5).tolist(),
           op(x, a=2, k=3).tolist()]

    @T.library.custom_op(f"{ns}::h", mutates_args=())
    def h(x: T.Tensor, n: int = 1, *, k: int = 1) -> T.Tensor:
        return x * n * k

    def setup(ctx, inputs, keyword_only_inputs, output):
        ctx.scale = inputs[1] * keyword_only_inputs["k"]

    h.register_autograd(lambda ctx, g: (g * ctx.scale, None), setup_context=setup)
    xr = T.ones(2, requires_grad=True)
    out += [h(x, k=3).tolist(), getattr(T.ops, ns).h(x, 2, k=2).tolist(),
            T.autograd.grad(h(xr, 2, k=3).sum(), xr)[0].tolist()]
    return out, seen


def test_keyword_only_arguments_reach_python_kernels(torch):
    mine = _keyword_only_ops(ember, _ns())
    theirs = _keyword_only_ops(torch, _ns())
    assert mine == theirs
