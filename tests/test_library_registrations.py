"""``ember.library``'s remaining registrations, each beside PyTorch's: ``register_vmap`` (a custom
op's batching rule), ``register_autocast``, ``get_kernel`` (a kernel of the dispatch table, called
boxed), ``impl_abstract``, ``get_ctx`` in fake implementations, and the old
``torch._custom_ops`` API."""
import importlib
import warnings

import numpy as np
import pytest

import ember


def _both(torch):
    return ((ember, "ember"), (torch, "torch"))


def _define_sin(lib, ns, calls):
    @lib.library.custom_op(f"{ns}::mysin", mutates_args=())
    def mysin(x: lib.Tensor) -> lib.Tensor:
        return lib.sin(x)

    @mysin.register_vmap
    def _(info, in_dims, x):
        calls.append((info.batch_size, info.randomness, in_dims))
        return lib.sin(x) * 2, in_dims[0]
    return mysin


@pytest.mark.parametrize("in_dims", [0, 1])
def test_register_vmap_rule_is_called_with_the_batch_dim(torch, in_dims):
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    got = {}
    for lib, name in _both(torch):
        calls = []
        op = _define_sin(lib, f"rv_{name}_{in_dims}", calls)
        out = lib.vmap(op, in_dims=in_dims)(lib.from_numpy(x))
        got[name] = (out.numpy(), calls)
    np.testing.assert_allclose(got["ember"][0], got["torch"][0], rtol=1e-6)
    assert got["ember"][1] == got["torch"][1] == [(x.shape[in_dims], "error", (in_dims,))]


def test_register_vmap_on_a_defined_op_with_a_tensor_list(torch):
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    got = {}
    for lib, name in _both(torch):
        ns = f"rvl_{name}"
        lib.library.define(f"{ns}::addall", "(Tensor[] xs, Tensor y) -> Tensor")
        lib.library.impl(f"{ns}::addall", "cpu", lambda xs, y: sum(xs) + y)
        seen = []

        def rule(info, in_dims, xs, y, lib=lib, seen=seen):
            seen.append(in_dims)
            xs = [t.movedim(d, 0) if d is not None else t.expand(info.batch_size, *t.shape)
                  for t, d in zip(xs, in_dims[0])]
            return sum(xs) + y, 0
        lib.library.register_vmap(f"{ns}::addall", rule)
        op = getattr(lib.ops, ns).addall
        b = lib.ones(3)
        out = lib.vmap(lambda a, op=op, b=b: op([a, b], b))(lib.from_numpy(x))
        got[name] = (out.numpy(), seen)
    np.testing.assert_array_equal(got["ember"][0], got["torch"][0])
    assert got["ember"][1] == got["torch"][1] == [([0, None], None)]


def test_register_vmap_returning_an_input_keeps_it_and_checks_the_return(torch):
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    for lib, name in _both(torch):
        @lib.library.custom_op(f"rvi_{name}::ident", mutates_args=())
        def ident(x: lib.Tensor) -> lib.Tensor:
            return x.clone()
        ident.register_vmap(lambda info, in_dims, x: (x, in_dims[0]))
        np.testing.assert_array_equal(lib.vmap(ident)(lib.from_numpy(x)).numpy(), x)

        @lib.library.custom_op(f"rvi_{name}::bad", mutates_args=())
        def bad(x: lib.Tensor) -> lib.Tensor:
            return x.clone()
        bad.register_vmap(lambda info, in_dims, x: x)
        with pytest.raises(RuntimeError, match="Expected the vmap staticmethod to have two "
                                               "returns, an output and out_dims"):
            lib.vmap(bad)(lib.from_numpy(x))
        with pytest.raises(ValueError, match=r"register_vmap\(3\): got unexpected type for op"):
            lib.library.register_vmap(3)


def test_register_vmap_refuses_kwarg_only_tensors(torch):
    for lib, name in _both(torch):
        lib.library.define(f"rvk_{name}::f", "(Tensor x, *, Tensor y) -> Tensor")
        with pytest.raises(NotImplementedError, match="register_vmap with kwarg-only Tensor"):
            lib.library.register_vmap(f"rvk_{name}::f", lambda *a: None)


def test_register_autocast_casts_inputs_and_runs_with_autocast_off(torch):
    for lib, name in _both(torch):
        @lib.library.custom_op(f"ra_{name}::mm2", mutates_args=())
        def mm2(a: lib.Tensor, b: lib.Tensor) -> lib.Tensor:
            # autocast is off inside: a matmul here is not cast again
            return a @ b
        mm2.register_autocast("cpu", lib.bfloat16)
        mm2.register_autocast("cpu", lib.float16)  # the first registration stays
        lib.library.define(f"ra_{name}::mm3", "(Tensor a, Tensor b) -> Tensor")
        lib.library.impl(f"ra_{name}::mm3", "cpu", lambda a, b: a @ b)
        lib.library.register_autocast(f"ra_{name}::mm3", "cpu", lib.float16)
        mm3 = getattr(lib.ops, f"ra_{name}").mm3
        a = lib.ones(2, 2)
        with lib.autocast("cpu", dtype=lib.float16):
            got = (mm2(a, a).dtype, mm2(a.double(), a.double()).dtype, mm3(a, a).dtype,
                   mm2(a.int(), a.int()).dtype)
        assert [str(d).split(".")[1] for d in got] == ["bfloat16", "float64", "float16", "int32"]
        assert mm2(a, a).dtype == lib.float32  # outside autocast nothing happens
        with pytest.raises(TypeError, match="must be str, not int"):
            lib.library.register_autocast(f"ra_{name}::mm3", 3, lib.float16)
        with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
            mm2.register_autocast(3, lib.float16)


def test_register_autocast_keeps_autograd(torch):
    for lib, name in _both(torch):
        @lib.library.custom_op(f"rag_{name}::scale", mutates_args=())
        def scale(a: lib.Tensor) -> lib.Tensor:
            return a * 2
        scale.register_autograd(lambda ctx, g: g * 2)
        scale.register_autocast("cpu", lib.bfloat16)
        a = lib.ones(3, requires_grad=True)
        with lib.autocast("cpu"):
            out = scale(a)
        assert out.dtype == lib.bfloat16
        out.float().sum().backward()
        assert a.grad.dtype == lib.float32 and a.grad.tolist() == [2.0, 2.0, 2.0]


def test_get_kernel_calls_one_kernel_boxed(torch):
    for lib, name in _both(torch):
        k = lib.library.get_kernel("aten::add.Tensor", "CPU")
        assert type(k).__name__ == "_SafeKernelFunction" and repr(k).startswith(
            "SafeKernelFunction(debug='")
        out = k.call_boxed(lib._C.DispatchKeySet("CPU"), lib.tensor([1.0]), lib.tensor([2.0]),
                           alpha=3)
        assert out.tolist() == [7.0]
        assert lib.library.get_kernel(lib.ops.aten.add.Tensor, lib._C.DispatchKey.CPU)
        with pytest.raises(RuntimeError, match="operator aten::nonexist does not exist"):
            lib.library.get_kernel("aten::nonexist", "CPU")
        with pytest.raises(ValueError, match="Invalid dispatch key: Foo"):
            lib.library.get_kernel("aten::sin", "Foo")
        with pytest.raises(ValueError, match=r"get_kernel\(3\): got unexpected type"):
            lib.library.get_kernel(3, "CPU")
        with pytest.raises(RuntimeError, match="could not parse dispatch key: Foo"):
            lib._C.DispatchKeySet("Foo")


def test_get_kernel_lets_an_override_call_the_original(torch):
    """PyTorch's documented use: wrap a kernel and fall back to the original."""
    for lib, name in _both(torch):
        orig = lib.library.get_kernel("aten::sin", "CPU")

        def condsin(ks, x, orig=orig, lib=lib):
            return orig.call_boxed(ks, x) if (x < 0).any() else lib.zeros_like(x)
        L = lib.library.Library("aten", "IMPL")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # PyTorch warns that it overrides a kernel
            L.impl("sin", condsin, "CPU", with_keyset=True)
        try:
            assert lib.sin(lib.tensor([1.0, 2.0])).tolist() == [0.0, 0.0]
            np.testing.assert_allclose(lib.sin(lib.tensor([-1.0, 2.0])).numpy(),
                                       np.sin([-1.0, 2.0]), rtol=1e-6)
        finally:
            L._destroy()
        np.testing.assert_allclose(lib.sin(lib.tensor([1.0])).numpy(), np.sin([1.0]), rtol=1e-6)


def test_impl_abstract_and_get_ctx_for_a_data_dependent_shape(torch):
    for lib, name in _both(torch):
        ns = f"ctx_{name}"
        lib.library.define(f"{ns}::nz", "(Tensor x) -> Tensor")
        lib.library.impl(f"{ns}::nz", "cpu", lambda x: x.nonzero())
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")

            def fake(x, lib=lib):
                n = lib.library.get_ctx().new_dynamic_size()
                return x.new_empty(n, x.dim(), dtype=lib.long)
            lib.library.impl_abstract(f"{ns}::nz", fake)
        assert [i.category for i in w] == [FutureWarning]
        assert lib.library.get_ctx() is None
        nz = getattr(lib.ops, ns).nz
        assert nz(lib.tensor([0.0, 1.0, 2.0])).tolist() == [[1], [2]]
        with pytest.raises(RuntimeError, match=f"{ns}::nz .*You're trying to run this operator "
                                               f"with meta Tensors"):
            nz(lib.ones(3, device="meta"))
        fake_tensor = importlib.import_module(lib.__name__ + "._subclasses.fake_tensor")
        with pytest.raises(fake_tensor.DynamicOutputShapeException):
            with fake_tensor.FakeTensorMode():
                nz(lib.ones(3))


def test_old_custom_ops_api(torch):
    for lib, name in _both(torch):
        co = importlib.import_module(lib.__name__ + "._custom_ops")
        assert co.get_ctx is lib.library.get_ctx
        ns = f"oldco_{name}"
        co.custom_op(f"{ns}::bar", "(Tensor x) -> Tensor")
        co.impl(f"{ns}::bar", func=lambda x: x + 1)
        bar = getattr(lib.ops, ns).bar
        assert bar(lib.ones(2)).tolist() == [2.0, 2.0]

        def proto(x: lib.Tensor) -> lib.Tensor:
            raise NotImplementedError
        proto.__name__ = "foo"
        co.custom_op(f"{ns}::foo")(proto)
        co.impl(f"{ns}::foo", device_types="cpu", func=lambda x: x * 3)
        assert getattr(lib.ops, ns).foo(lib.ones(2)).tolist() == [3.0, 3.0]
        for qualname, message in (("nons", "Expected there to be a namespace in nons"),
                                  ("aten::x", "'aten' is a reserved namespace"),
                                  ("a.b::x", "expected ns to not contain any ."),
                                  ("ns::x.y", "do not handle overloads")):
            with pytest.raises(ValueError, match=message):
                co.custom_op(qualname, "(Tensor x) -> Tensor")
        with pytest.raises(ValueError, match="expected `func` to have name 'zzz' but got 'foo'"):
            co.custom_op(f"{ns}::zzz")(proto)


def test_device_strings_are_parsed_as_pytorch(torch):
    for s in ("cuda2", "cuda:01", "cuda:-1", " cuda", "cuda:0 ", "cpu:0:1"):
        with pytest.raises(RuntimeError) as te:
            torch.device(s)
        with pytest.raises(RuntimeError) as ee:
            ember.device(s)
        assert str(ee.value) == str(te.value) == f"Invalid device string: '{s}'"
    assert ember.device("cuda:10") == ember.device("cuda", 10)
