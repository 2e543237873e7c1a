"""The PyTorch internals that libraries import by name (found running tensordict, functorch and
peft on ember): ``torch._C`` submodules importable as modules, the functorch batching
primitives and vmap's replaceable steps, ``functorch``'s ``make_functional``, the shell dtypes
(quantized, bits, sub-byte), ``HigherOrderOperator``, ``_named_member_accessor``,
``utils._contextlib``, ``_utils``' device helpers, the DataLoader's ``default_collate_fn_map`` and
NumPy seeding of workers, and Tensor methods (``fill_diagonal_``, ``in``, ``reversed``)."""
import importlib
import subprocess
import sys
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def test_c_submodules_import_as_modules():
    from ember._C._functorch import _add_batch_dim, is_batchedtensor
    assert callable(_add_batch_dim) and callable(is_batchedtensor)
    for name in ("_nn", "_fft", "_linalg", "_special", "_functorch"):
        assert importlib.import_module(f"ember._C.{name}") is getattr(ember._C, name)
    code = ("import ember.as_torch; ember.as_torch.install()\n"
            "from torch._C._functorch import is_batchedtensor, _remove_batch_dim\n"
            "import torch._C._nn as nn; print(nn.__name__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "ember._C._nn", out.stderr


def test_batch_dim_primitives_match_pytorch():
    """_vmap_increment_nesting / _add_batch_dim / _remove_batch_dim as PyTorch's vmap uses them:
    a batched input comes back with its batch at out_dim, an unbatched one expanded."""
    results = []
    for lib in (torch, ember):
        f = lib._C._functorch
        x = lib.arange(12.).reshape(3, 4)
        level = f._vmap_increment_nesting(3, "error")
        try:
            b = f._add_batch_dim(x, 0, level)
            assert f.is_batchedtensor(b) and tuple(b.shape) == (4,)
            assert f.maybe_get_level(b) == level and f.maybe_get_level(x) == -1
            y = b * 2 + 1
            out = [f._remove_batch_dim(y, level, 3, 1), f._remove_batch_dim(x[0], level, 3, 0)]
        finally:
            f._vmap_decrement_nesting()
        assert not f.is_batchedtensor(out[0])
        results.append([o.numpy() for o in out])
    for mine, theirs in zip(results[1], results[0]):
        np.testing.assert_array_equal(mine, theirs)


def test_vmap_steps_are_looked_up_when_called():
    """Libraries replace torch._functorch.vmap's steps (tensordict batches its containers
    so); vmap calls whatever the module holds at the time."""
    from ember._functorch import vmap as vmap_src
    seen = []
    original = vmap_src._create_batched_inputs

    def spy(flat_in_dims, flat_args, vmap_level, args_spec):
        seen.append((list(flat_in_dims), vmap_level))
        return original(flat_in_dims, flat_args, vmap_level, args_spec)
    vmap_src._create_batched_inputs = spy
    try:
        out = ember.vmap(lambda a, b: a * b, (0, None))(ember.ones(3, 2), ember.tensor(2.))
    finally:
        vmap_src._create_batched_inputs = original
    assert seen == [([0, None], 1)]
    np.testing.assert_array_equal(out.numpy(), np.full((3, 2), 2.0))


def test_vmap_refuses_returning_an_outer_batched_tensor_with_out_dims_none():
    for lib in (torch, ember):
        with pytest.raises(ValueError, match="can not return a BatchedTensor when out_dim is "
                                             "None"):
            lib.vmap(lambda x: lib.vmap(lambda y: x * 2, out_dims=None)(lib.ones(3)))(
                lib.ones(2, 4))


def test_make_functional_matches_pytorch():
    from ember._functorch.deprecated import make_functional as deprecated_make_functional
    from ember._functorch.make_functional import make_functional, make_functional_with_buffers
    from torch._functorch.deprecated import make_functional as t_make_functional
    rs = np.random.RandomState(0)
    x = rs.randn(5, 3).astype(np.float32)
    outs = []
    for lib, mf in ((torch, t_make_functional), (ember, deprecated_make_functional)):
        lib.manual_seed(0)
        lin = lib.nn.Linear(3, 2)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            fmodel, params = mf(lin)
        assert any("functorch.make_functional" in str(m.message) for m in w)
        params = tuple(p.detach() * 3 for p in params)
        g = lib.func.grad(lambda ps: fmodel(ps, lib.tensor(x)).square().sum())(params)
        outs.append([fmodel(params, lib.tensor(x)).detach().numpy(),
                     *[t.detach().numpy() for t in g]])
        assert lin.weight.device.type == "cpu"  # the module given is untouched
    for mine, theirs in zip(outs[1], outs[0]):
        np.testing.assert_allclose(mine, theirs, rtol=1e-6)
    bn = ember.nn.BatchNorm1d(3)
    with pytest.raises(RuntimeError, match="has buffers"):
        make_functional(bn)
    fmodel, params, buffers = make_functional_with_buffers(bn.eval())
    np.testing.assert_allclose(fmodel(params, buffers, ember.tensor(x)).detach().numpy(),
                               bn(ember.tensor(x)).detach().numpy())


def test_shell_dtypes():
    """Quantized, bits, sub-byte and float4 dtypes exist with PyTorch's attributes; their
    tensors hold bytes (empty, views, copies of one dtype) and refuse any conversion."""
    for name in ("qint8", "quint8", "qint32", "quint4x2", "quint2x4", "bits8", "bits16",
                 "bits1x8", "int1", "int4", "uint7", "float4_e2m1fn_x2", "bit"):
        d, ref = getattr(ember, name), getattr(torch, name)
        assert repr(d).split(".")[1] == repr(ref).split(".")[1]
        assert (d.itemsize, d.is_floating_point, d.is_complex) == \
            (ref.itemsize, ref.is_floating_point, ref.is_complex), name
        try:
            expected = ref.is_signed
        except RuntimeError as e:
            with pytest.raises(RuntimeError, match=str(e)):
                d.is_signed
        else:
            assert d.is_signed == expected
    raw = ember.arange(4, dtype=ember.uint8)
    bits = raw.view(ember.bits8)
    assert bits.dtype is ember.bits8 and bits.clone().view(ember.uint8).tolist() == [0, 1, 2, 3]
    with pytest.raises(NotImplementedError, match="\"copy_\" not implemented for 'Int4'"):
        ember.ones(2).to(ember.int4)
    with pytest.raises(NotImplementedError, match="copy_"):
        bits.to(ember.float32)
    with pytest.raises(RuntimeError, match="promoteTypes with quantized numbers"):
        ember.promote_types(ember.qint8, ember.float32)


def test_fill_diagonal_matches_pytorch():
    for shape, wrap in [((3, 3), False), ((7, 3), True), ((7, 3), False), ((3, 5), True),
                        ((4, 4, 4), False)]:
        a, b = ember.zeros(*shape), torch.zeros(*shape)
        a.fill_diagonal_(2.5, wrap=wrap)
        b.fill_diagonal_(2.5, wrap=wrap)
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=str((shape, wrap)))
    x = ember.zeros(3, 3, requires_grad=True)
    x.clone().fill_diagonal_(1.0).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), 1 - np.eye(3))
    with pytest.raises(RuntimeError, match="all dimensions of input must be of equal length"):
        ember.zeros(2, 3, 4).fill_diagonal_(1)


def test_tensor_protocol_methods():
    a = ember.tensor([[1, 2], [3, 4]])
    assert 3 in a and 5 not in a and ember.tensor(4) in a
    with pytest.raises(RuntimeError, match="only supports Tensor or scalar"):
        "x" in a  # noqa: B015
    assert [r.tolist() for r in reversed(a)] == [[3, 4], [1, 2]]
    np.testing.assert_array_equal(a.__div__(2).numpy(), [[0.5, 1.0], [1.5, 2.0]])
    f = a.float()
    f.__idiv__(2)
    assert f.tolist() == [[0.5, 1.0], [1.5, 2.0]]
    assert a[0, 0].__long__() == 1 and a[0, 0].__nonzero__()
    for lib in (ember, torch):
        t = lib.arange(6.).reshape(2, 3)
        t.swapaxes_(0, 1)
        assert tuple(t.shape) == (3, 2) and t.stride() == (1, 3)
        t.swapdims_(1, 0)
        assert tuple(t.shape) == (2, 3) and t.stride() == (3, 1)


def test_worker_numpy_seed_is_pytorchs():
    from ember.utils.data.worker import _generate_state
    from torch.utils.data._utils.worker import _generate_state as reference
    for base_seed, worker_id in [(0, 0), (12345, 3), (2 ** 63 - 1, 7), (987654321012, 31)]:
        assert _generate_state(base_seed, worker_id) == reference(base_seed, worker_id)


def test_collate_fn_map_is_the_extension_point():
    from ember.utils.data import default_collate
    from ember.utils.data._utils.collate import collate, default_collate_fn_map

    class Box:
        def __init__(self, v):
            self.v = v
    default_collate_fn_map[Box] = lambda batch, *, collate_fn_map=None: sum(b.v for b in batch)
    try:
        assert default_collate([{"b": Box(1), "x": 1.5}, {"b": Box(2), "x": 2.5}])["b"] == 3
    finally:
        del default_collate_fn_map[Box]
    with pytest.raises(TypeError, match="default_collate: batch must contain"):
        default_collate([Box(1)])
    assert collate([1, 2], collate_fn_map={int: lambda b, **kw: tuple(b)}) == (1, 2)


def test_higher_order_operator():
    from ember._C import DispatchKey
    from ember._ops import HigherOrderOperator
    twice = HigherOrderOperator("twice")
    calls = []

    @twice.py_impl(DispatchKey.CompositeExplicitAutograd)
    def _twice(f, x):
        calls.append("composite")
        return f(f(x))
    x = ember.ones(2, requires_grad=True)
    out = twice(lambda t: t * 3, x)
    out.sum().backward()
    assert calls == ["composite"] and x.grad.tolist() == [9.0, 9.0]
    assert twice.name() == "twice" and twice.namespace == "higher_order"
    with pytest.raises(NotImplementedError, match="could not find kernel"):
        HigherOrderOperator("nothing")(ember.ones(1))


def test_named_member_accessor():
    from ember.nn.utils._named_member_accessor import NamedMemberAccessor
    net = ember.nn.Sequential(ember.nn.Linear(2, 2), ember.nn.BatchNorm1d(2))
    acc = NamedMemberAccessor(net)
    w = ember.zeros(2, 2)
    old = acc.swap_tensor("0.weight", w)
    assert net[0].weight is w and old.shape == (2, 2)
    orig, missing = acc.swap_tensors_dict({"1.running_mean": ember.ones(2)})
    assert missing == [] and net[1].running_mean.tolist() == [1.0, 1.0]
    with pytest.raises(RuntimeError, match="Missing key"):
        acc.swap_tensors_dict({"1.nope": ember.ones(2)})
    assert not hasattr(net[1], "nope")  # (put back)
    assert acc.check_keys(["0.weight"]) == (sorted(["0.bias", "1.weight", "1.bias",
                                                    "1.running_mean", "1.running_var",
                                                    "1.num_batches_tracked"]), [])


def test_contextlib_and_utils_helpers():
    from ember._utils import _element_size, _get_device_module, get_current_device_index
    from ember.utils._contextlib import _DecoratorContextManager, context_decorator
    assert isinstance(ember.no_grad(), _DecoratorContextManager)

    @ember.no_grad
    def gen():
        yield ember.is_grad_enabled()
        yield ember.is_grad_enabled()
    assert list(gen()) == [False, False] and ember.is_grad_enabled()
    with pytest.raises(RuntimeError, match="Cannot decorate classes"):
        context_decorator(lambda: ember.no_grad(), type("C", (), {}))
    with pytest.raises(AssertionError, match="ambiguous"):  # (a class is both)
        context_decorator(ember.no_grad, lambda: None)
    assert _get_device_module("cuda") is ember.cuda and get_current_device_index() == -1
    assert _element_size(ember.complex64) == 8
    with pytest.raises(RuntimeError, match="does not have a corresponding module"):
        _get_device_module("nonexistent")


def test_jit_interface_and_isinstance():
    """``@jit.interface`` classes (MONAI defines some at import) and ``jit.isinstance`` with
    container types, as in eager PyTorch."""
    from typing import Dict, List, Optional, Tuple
    with pytest.warns(DeprecationWarning):
        @ember.jit.interface
        class Runner:
            def run(self, x):
                pass
    assert Runner.__torch_script_interface__.endswith("Runner")
    with pytest.raises(RuntimeError, match="interface must be applied to a class"):
        ember.jit.interface(lambda: None)
    cases = [([1, 2], List[int]), ([1, "a"], List[int]), ({"a": [1]}, Dict[str, List[int]]),
             ((1, "x"), Tuple[int, str]), ((1,), Tuple[int, str]), (None, Optional[int]),
             ("s", Optional[int]), (3, (str, int))]
    for obj, target in cases:
        assert ember.jit.isinstance(obj, target) == torch.jit.isinstance(obj, target), target
    with pytest.raises(RuntimeError, match="without a contained type"):
        ember.jit.isinstance([1], List)


def test_future_is_generic():
    from ember.futures import Future
    assert Future[ember.Tensor] is not None  # (captum annotates Union[Tensor, Future[Tensor]])
    f = Future()
    f.set_result(3)
    assert f.wait() == 3


def test_numpy_of_a_tensor_that_requires_grad_under_no_grad():
    """c10 refuses numpy() on a tensor that requires grad only while grad mode is on (botorch
    reads parameters so under no_grad)."""
    for lib in (torch, ember):
        p = lib.ones(2, requires_grad=True)
        with lib.no_grad():
            assert p.numpy().tolist() == [1.0, 1.0] and p.view(-1).numpy().shape == (2,)
        with pytest.raises(RuntimeError, match="Can't call numpy\\(\\) on Tensor that requires "
                                               "grad"):
            p.numpy()


def test_small_internals_libraries_import():
    """pyro's ``torch._jit_internal._copy_to_script_wrapper``, Lightning's
    ``torch._dynamo.eval_frame.is_dynamo_supported``, kornia's
    ``torch._dynamo.exc.TensorifyScalarRestartAnalysis``, timm's ``ParamsT`` and
    ``_default_to_fused_or_foreach``, as PyTorch's."""
    from ember._dynamo.eval_frame import is_dynamo_supported
    from ember._dynamo.exc import RestartAnalysis, TensorifyScalarRestartAnalysis
    from ember._jit_internal import FunctionModifiers, _copy_to_script_wrapper
    from ember.optim.optimizer import ParamsT, _default_to_fused_or_foreach  # noqa: F401
    from torch._jit_internal import _copy_to_script_wrapper as reference
    fn = _copy_to_script_wrapper(lambda: None)
    assert fn._torchscript_modifier == FunctionModifiers.COPY_TO_SCRIPT_WRAPPER == \
        reference(lambda: None)._torchscript_modifier
    assert is_dynamo_supported() is (sys.version_info[:2] in ((3, 11), (3, 12)))
    assert issubclass(TensorifyScalarRestartAnalysis, RestartAnalysis)
    from torch.optim.optimizer import _default_to_fused_or_foreach as t_default
    for use_fused in (False, True):
        assert _default_to_fused_or_foreach([ember.ones(2), None], False, use_fused) == \
            t_default([torch.ones(2), None], False, use_fused)
    assert _default_to_fused_or_foreach([ember.ones(2)], True, True) == (False, False)


def test_torch_functional_common_types_and_nn_grad(torch):
    """torch.functional (the top-level functions' home), torch.nn.common_types (annotation
    aliases) and torch.nn.grad (a convolution's input or weight gradient alone) as PyTorch's."""
    import ember.functional as EFn
    assert sorted(EFn.__all__) == sorted(torch.functional.__all__)
    for name in EFn.__all__:
        assert getattr(EFn, name) is getattr(ember, name), name
    from ember.nn import common_types as ect
    assert {n for n in dir(torch.nn.common_types) if n.startswith("_") and not
            n.startswith("__")} <= set(dir(ect))
    assert str(ect._size_2_t) == str(torch.nn.common_types._size_2_t)
    rng = np.random.default_rng(0)
    for dim, (xs, ws, kw) in {1: ((2, 4, 9), (6, 2, 3), dict(stride=2, padding=1, groups=2)),
                              2: ((2, 4, 7, 6), (6, 4, 3, 2), dict(stride=(2, 1), padding=1,
                                                                   dilation=(1, 2))),
                              3: ((1, 2, 5, 5, 4), (3, 2, 2, 2, 2), {})}.items():
        x, w = (rng.standard_normal(s).astype(np.float32) for s in (xs, ws))
        got = []
        for lib in (torch, ember):
            X, W = lib.from_numpy(x), lib.from_numpy(w)
            g = lib.ones_like(getattr(lib.nn.functional, f"conv{dim}d")(X, W, **kw))
            got.append([getattr(lib.nn.grad, f"conv{dim}d_input")(X.shape, W, g, **kw).numpy(),
                        getattr(lib.nn.functional.grad, f"conv{dim}d_weight")(
                            X, W.shape, g, **kw).numpy()])
        for e, t in zip(got[1], got[0]):
            np.testing.assert_allclose(e, t, rtol=1e-5, atol=1e-5)


def test_reduction_enum_and_legacy_flags(torch):
    """F._Reduction (torch.nn._reduction), and "elementwise_mean" where PyTorch's losses take it
    (a deprecated "mean") or refuse it (the losses that check the string themselves)."""
    import warnings
    for lib in (torch, ember):
        R = lib.nn.functional._Reduction
        assert [R.get_enum(r) for r in ("none", "mean", "sum")] == [0, 1, 2]
        assert R.legacy_get_string(False, True, emit_warning=False) == "sum"
        assert R.legacy_get_enum(None, False, emit_warning=False) == 0
        with pytest.raises(ValueError, match="bad is not a valid value for reduction"):
            R.get_enum("bad")
    x, y = np.full((2, 3), 0.4, np.float32), np.full((2, 3), 0.7, np.float32)
    for name in ("l1_loss", "mse_loss", "smooth_l1_loss", "kl_div", "soft_margin_loss",
                 "poisson_nll_loss", "multilabel_soft_margin_loss", "binary_cross_entropy"):
        out = []
        for lib in (torch, ember):
            f = getattr(lib.nn.functional, name)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    out.append(float(f(lib.from_numpy(x), lib.from_numpy(y),
                                       reduction="elementwise_mean")))
                except ValueError as e:
                    out.append(str(e))
        if isinstance(out[0], float):
            assert out[1] == pytest.approx(out[0], rel=1e-5), name
        else:
            assert out[1] == out[0], name


def test_vf_calls_the_bindings(torch):
    """torch._VF (older code's and PyTorch's own modules' handle on the C++ bindings): the
    binding where a Python-level function of the same name exists (``einsum`` takes a list)."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 3)).astype(np.float32), rng.standard_normal((3, 4)).astype(
        np.float32)
    out = []
    for lib in (torch, ember):
        r = lib._VF.einsum("ij,jk->ik", [lib.from_numpy(a), lib.from_numpy(b)])
        out.append((r.numpy(), [t.shape[0] for t in lib._VF.split(lib.arange(5), 2)]))
    np.testing.assert_allclose(out[1][0], out[0][0], rtol=1e-6)
    assert out[1][1:] == out[0][1:]
