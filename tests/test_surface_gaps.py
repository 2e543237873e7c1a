"""Tensor members PyTorch has that ember lacked, against PyTorch: the hook dicts
(``_backward_hooks``, ``_post_accumulate_grad_hooks``), ``name``, ``_is_zerotensor``,
``is_distributed``, the private ops ``_conj``/``_neg_view``/``_lazy_clone``/``_is_all_true``/
``_is_any_true``/``_addmm_activation`` (dispatched: a mode sees them), the removed linear-algebra
methods' errors, and torch.tensor's lift_fresh (a FakeTensor inside FakeTensorMode)."""
import collections

import numpy as np
import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode as TorchMode

import ember
from ember.utils._python_dispatch import TorchDispatchMode as EmberMode
from helpers import assert_same, to_np


def _hook_states(lib):
    """What _backward_hooks shows through register_hook's life, on a leaf and a non-leaf."""
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    seen = [x._backward_hooks]
    h = x.register_hook(lambda g: g * 2)
    seen.append((type(x._backward_hooks), list(x._backward_hooks.values())[0] is not None,
                 len(x._backward_hooks)))
    y = x * 3
    seen.append(y._backward_hooks)
    hy = y.register_hook(lambda g: g + 1)
    seen.append(len(y._backward_hooks))
    y.sum().backward()
    seen.append(x.grad.tolist())
    h.remove()
    hy.remove()
    seen.append((dict(x._backward_hooks), dict(y._backward_hooks)))
    return seen


def test_backward_hooks_dict():
    want = _hook_states(torch)
    got = _hook_states(ember)
    assert got[1][0] is collections.OrderedDict
    assert got == want


def test_backward_hooks_setter():
    for lib in (ember, torch):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        x.register_hook(lambda g: g * 10)
        x._backward_hooks = None  # drops the hook
        (x * 1).sum().backward()
        assert x.grad.tolist() == [1.0, 1.0] and x._backward_hooks is None
        x.grad = None
        x._backward_hooks = collections.OrderedDict([(7, lambda g: g * 5)])
        (x * 1).sum().backward()
        assert x.grad.tolist() == [5.0, 5.0]


def test_post_accumulate_grad_hooks():
    results = []
    for lib in (ember, torch):
        x = lib.tensor([1.0], requires_grad=True)
        before = x._post_accumulate_grad_hooks
        h = x.register_post_accumulate_grad_hook(lambda t: None)
        during = len(x._post_accumulate_grad_hooks)
        h.remove()
        results.append((before, during, dict(x._post_accumulate_grad_hooks)))
    assert results[0] == results[1]


def test_simple_members():
    for lib in (ember, torch):
        x = lib.ones(2)
        assert x.name is None and x._is_zerotensor() is False and x.is_distributed() is False


def test_private_ops_values_and_grads():
    a, m1, m2 = (np.random.default_rng(i).standard_normal(s).astype(np.float32)
                 for i, s in enumerate([(3, 5), (3, 4), (4, 5)]))
    for use_gelu in (False, True):
        got = ember._addmm_activation(ember.tensor(a), ember.tensor(m1), ember.tensor(m2),
                                      beta=0.5, alpha=2.0, use_gelu=use_gelu)
        want = torch._addmm_activation(torch.tensor(a), torch.tensor(m1), torch.tensor(m2),
                                       beta=0.5, alpha=2.0, use_gelu=use_gelu)
        assert_same(got, want)
    z = np.array([1 + 2j, -3 - 1j], dtype=np.complex64)
    assert_same(ember.tensor(z)._conj(), torch.tensor(z)._conj().resolve_conj())
    grads = []
    for lib in (ember, torch):
        x = lib.tensor([1.0, -2.0], requires_grad=True)
        v, c = x._neg_view(), x._lazy_clone()
        assert v.tolist() == [-1.0, 2.0] and c.tolist() == [1.0, -2.0]
        (v * lib.tensor([1.0, 2.0]) + c * 3).sum().backward()
        grads.append(x.grad)
    assert_same(*grads)
    b = np.array([True, False])
    for name in ("_is_all_true", "_is_any_true"):
        assert_same(getattr(ember.tensor(b), name)(), getattr(torch.tensor(b), name)())
        assert_same(getattr(ember, name)(ember.tensor(b[:1])), getattr(torch, name)(torch.tensor(b[:1])))


def test_private_ops_errors():
    for call in (lambda lib: lib.tensor([1.0])._is_all_true(),
                 lambda lib: lib.tensor([1.0])._is_any_true(),
                 lambda lib: lib.tensor([1.0])._conj()):
        with pytest.raises(RuntimeError) as want:
            call(torch)
        with pytest.raises(RuntimeError) as got:
            call(ember)
        # PyTorch's internal asserts add the C++ source location
        assert str(want.value).startswith(str(got.value))


def _seen(lib, mode_cls, fn):
    ops = []

    class Mode(mode_cls):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            ops.append(str(func))
            return func(*args, **(kwargs or {}))

    with Mode():
        fn(lib)
    return ops


def test_modes_see_the_ops():
    cases = [lambda lib: lib.ones(2)._lazy_clone(),
             lambda lib: lib.tensor([True])._is_any_true(),
             lambda lib: lib.tensor([1.0, 2.0]),
             lambda lib: lib.tensor([[1, 2]], dtype=lib.float64),
             lambda lib: lib.as_tensor([1, 2]),
             lambda lib: lib.ones(2).new_tensor([3.0])]
    for case in cases:
        assert _seen(ember, EmberMode, case) == _seen(torch, TorchMode, case)


@pytest.mark.parametrize("name", ["eig", "lstsq", "solve", "symeig"])
def test_removed_methods(name):
    args = {"eig": (), "symeig": (), "lstsq": (None,), "solve": (None,)}[name]
    with pytest.raises(RuntimeError) as want:
        getattr(torch.eye(2), name)(*args)
    with pytest.raises(RuntimeError) as got:
        getattr(ember.eye(2), name)(*args)
    assert str(got.value) == str(want.value)
    assert "torch.linalg" in str(got.value)


def test_tensor_in_fake_mode_is_fake():
    from ember._subclasses.fake_tensor import FakeTensor, FakeTensorMode
    from torch._subclasses.fake_tensor import FakeTensor as TFake, FakeTensorMode as TMode
    with TMode():
        t = torch.tensor([1.0, 2.0])
        tt = t * 2
    with FakeTensorMode() as mode:
        e = ember.tensor([1.0, 2.0])
        ee = e * 2
    assert isinstance(t, TFake) and isinstance(tt, TFake)
    assert isinstance(e, FakeTensor) and isinstance(ee, FakeTensor) and e.fake_mode is mode
    assert tuple(e.shape) == tuple(t.shape) and e.dtype.name == "float32" and e.device.type == "cpu"
    plain = ember.tensor([1.0, 2.0])
    assert type(plain) is ember.Tensor and plain._base is None and to_np(plain).tolist() == [1.0, 2.0]


# -- module paths PyTorch has -------------------------------------------------------------------

def test_module_paths_match_pytorch_layout():
    import importlib
    for mod, names in [("export.exported_program", ["ExportedProgram", "ModuleCallEntry",
                                                    "ModuleCallSignature", "default_decompositions"]),
                       ("export.graph_signature", ["ExportGraphSignature", "InputKind", "InputSpec",
                                                   "OutputKind", "OutputSpec", "TensorArgument"]),
                       ("export.custom_obj", ["ScriptObjectMeta"]),
                       ("autograd.profiler_util", ["EventList", "FunctionEvent", "FunctionEventAvg",
                                                   "MemRecordsAcc"]),
                       ("fx.annotate", ["annotate"]),
                       ("fx.traceback", ["preserve_node_meta", "has_preserved_node_meta",
                                         "set_stack_trace", "format_stack", "get_current_meta",
                                         "set_current_meta", "annotate", "NodeSource"])]:
        ours = importlib.import_module(f"ember.{mod}")
        theirs = importlib.import_module(f"torch.{mod}")
        for n in names:
            assert hasattr(theirs, n) and hasattr(ours, n), (mod, n)
    # moved, not copied: the old homes hand out the same objects
    import ember.autograd.profiler_util as pu
    import ember.export.exported_program as ep
    import ember.export.graph_signature as gs
    assert ember.export.ExportedProgram is ep.ExportedProgram
    assert ember.export.InputKind is gs.InputKind
    assert ember.profiler.EventList is pu.EventList is ember.autograd.profiler.EventList
    assert ember.export.ExportedProgram.__module__ == "ember.export.exported_program"
    assert ember.export.custom_obj.ScriptObjectMeta("c", "q") == \
        ember.export.custom_obj.ScriptObjectMeta(constant_name="c", class_fqn="q")


def test_mem_records_acc():
    class Rec:
        def __init__(self, ns):
            self.ns = ns

        def start_ns(self):
            return self.ns

    records = [(Rec(5000), "a"), (Rec(1000), "b"), (Rec(3000), "c"), (Rec(9000), "d")]
    got = [r[1] for r in ember.autograd.profiler_util.MemRecordsAcc(records).in_interval(1000, 5000)]
    want = [r[1] for r in torch.autograd.profiler_util.MemRecordsAcc(records).in_interval(1000, 5000)]
    assert got == want == ["b", "c", "a"]
    assert list(ember.autograd.profiler_util.MemRecordsAcc([]).in_interval(0, 10)) == []


def _traced_meta(lib):
    import importlib
    tb = importlib.import_module(f"{lib.__name__}.fx.traceback")

    class M(lib.nn.Module):
        def forward(self, x):
            return (x + 1).relu()

    seen = []
    with tb.preserve_node_meta():
        assert tb.has_preserved_node_meta()
        tb.set_stack_trace(['  File "model.py", line 3, in forward\n'])
        with tb.annotate({"tag": 1}):
            gm = lib.fx.symbolic_trace(M())
        seen.append(tb.format_stack())
        tb.set_stack_trace([])
        seen.append(tb.format_stack())
    seen.append([(n.op, n.stack_trace, n.meta.get("custom")) for n in gm.graph.nodes])
    seen.append([n.stack_trace for n in lib.fx.symbolic_trace(M()).graph.nodes])
    seen.append((tb.has_preserved_node_meta(), tb.get_current_meta()))
    # an Interpreter-based rewrite keeps each node's metadata and names where it came from
    plain = lib.fx.symbolic_trace(M())
    for n in plain.graph.nodes:
        n.meta["custom"] = {"from": n.name}
    with tb.preserve_node_meta():
        new = lib.fx.Transformer(plain).transform()
    seen.append([(n.op, n.meta.get("custom"), [s.name for s in n.meta.get("from_node", [])])
                 for n in new.graph.nodes])
    return seen


def test_fx_traceback_node_meta():
    assert _traced_meta(ember) == _traced_meta(torch)


def test_fx_annotate():
    results = []
    for lib in (ember, torch):
        import importlib
        annotate = importlib.import_module(f"{lib.__name__}.fx.annotate").annotate

        def f(x):
            y = annotate(x + 1, int)
            return y

        gm = lib.fx.symbolic_trace(f)
        results.append([(n.op, n.type) for n in gm.graph.nodes])
        assert annotate(3, int) == 3

        def g(x):
            y = annotate(x + 1, int)
            return annotate(y, float)

        with pytest.raises(RuntimeError) as e:
            lib.fx.symbolic_trace(g)
        results.append(str(e.value))
    assert results[0] == results[2] and results[1] == results[3]


def _normalized(lib):
    import importlib
    m = importlib.import_module(f"{lib.__name__}.fx.operator_schemas")
    x = lib.ones(2)
    out = []

    def keep(r):
        out.append(None if r is None else (len(r.args), list(r.kwargs)))

    keep(m.normalize_function(lib.add, (x, x), arg_types=(lib.Tensor, lib.Tensor)))
    keep(m.normalize_function(lib.add, (x, 2.0), arg_types=(lib.Tensor, float),
                              normalize_to_only_use_kwargs=True))
    keep(m.normalize_function(lib.ops.aten.add.Tensor, (x, x), {"alpha": 3}))
    keep(m.normalize_function(getattr(lib.ops.aten.random_, "from"), (x, 1, 5)))
    keep(m.normalize_function(lib.sum, (x,), {"dim": 0}, arg_types=(lib.Tensor,),
                              kwarg_types={"dim": int}, normalize_to_only_use_kwargs=True))
    keep(m.normalize_function(lib.nn.functional.relu, (x,), normalize_to_only_use_kwargs=True))
    keep(m.normalize_function(lib.nonzero, (x,)))
    keep(m.normalize_module(lib.nn.Sequential(lib.nn.Linear(2, 2)), "0", (x,),
                            normalize_to_only_use_kwargs=True))
    with pytest.raises(RuntimeError, match="the schema match was ambiguous"):
        m.normalize_function(lib.add, (x, x))
    with pytest.raises(RuntimeError, match="did not have that target"):
        m.normalize_module(lib.nn.Sequential(), "3", (x,))
    sigs = m.get_signature_for_torch_op(lib.ops.aten.add.Tensor)
    out.append([(p.name, str(p.kind), p.default) for p in sigs[0].parameters.values()])
    out.append(m.get_signature_for_torch_op(lib.nonzero))
    out.append(len(m.get_signature_for_torch_op(lib.nonzero, return_schemas=True)[0]))
    out.append((m.type_matches(list[int], int), m.type_matches(int, lib.dtype),
                m.type_matches(list[int], tuple[int, int]), m.type_matches(float, int),
                m.create_type_hint([int, bool]), m.create_type_hint((int, str))))
    return out


def test_fx_operator_schemas():
    assert _normalized(ember) == _normalized(torch)


def test_check_for_mutable_operation():
    import ember.fx.operator_schemas as m
    import torch.fx.operator_schemas as tm
    for lib, mod in ((ember, m), (torch, tm)):
        x = lib.ones(2)
        mod.check_for_mutable_operation(lib.ops.aten.add.Tensor, (x, x), {})
        with pytest.raises(RuntimeError, match="Tried to trace mutable operation"):
            mod.check_for_mutable_operation(lib.ops.aten.add.out, (x, x), {"out": x})
