"""ember.export's API around export: unflatten (the module hierarchy with a graph per call),
register_dataclass, default_decompositions / CustomDecompTable, ShapesCollection /
AdditionalInputs, the module call graph — each checked against eager and against PyTorch's
torch.export on the same small modules."""
import copy
import dataclasses
import io

import pytest

import ember
from ember.export import (AdditionalInputs, CustomDecompTable, FlatArgsAdapter,
                          ModuleCallEntry, ModuleCallSignature, ShapesCollection,
                          UnflattenedModule, default_decompositions, export, load, save,
                          unflatten)


def _nested(lib):
    """A root calling a submodule twice (a Linear inside, a buffer) and a Linear."""
    lib.manual_seed(0)

    class Sub(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.l = lib.nn.Linear(4, 4)
            self.register_buffer("b", lib.ones(4))

        def forward(self, x):
            return self.l(x).relu() + self.b

    class M(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = Sub()
            self.c = lib.nn.Linear(4, 2)

        def forward(self, x, y):
            return self.c(self.a(self.a(x)) * y)
    return M()


def _programs(torch, make, *shapes):
    """The module, ember's program and PyTorch's lowered to core ATen (as ember's is)."""
    m, tm = make(ember), make(torch)
    ep = export(m, tuple(ember.randn(*s) for s in shapes))
    tep = torch.export.export(tm, tuple(torch.randn(*s) for s in shapes)).run_decompositions()
    return m, ep, tep


def _dump(graph):
    """A graph as text with its nodes numbered, names aside."""
    index = {}
    lines = []
    for i, n in enumerate(graph.nodes):
        args = [f"%{index[a.name]}" if hasattr(a, "op") else str(a) for a in n.args]
        target = str(n.target) if n.op in ("call_function", "get_attr", "call_module") else ""
        lines.append(f"{n.op}[{target}]({', '.join(args)})")
        index[n.name] = i
    return lines


def _normalize(s):
    return s.replace("torch.", "ember.")


def _raises_like(fn, tfn):
    """Both raise the same exception type with the same first line (ember.Size for
    torch.Size)."""
    with pytest.raises(Exception) as te:
        tfn()
    with pytest.raises(Exception) as ee:
        fn()
    assert type(ee.value).__name__ == type(te.value).__name__
    assert str(ee.value).splitlines()[0] == _normalize(str(te.value)).splitlines()[0]


def test_module_stack_and_call_graph_match_torch(torch):
    _, ep, tep = _programs(torch, _nested, (3, 4), (3, 4))
    stacks = [(str(n.target), n.meta["nn_module_stack"]) for n in ep.graph.nodes
              if n.op == "call_function"]
    tstacks = [(str(n.target), {k: (p, _normalize(t))
                                for k, (p, t) in n.meta["nn_module_stack"].items()})
               for n in tep.graph.nodes if n.op == "call_function"]
    assert stacks == tstacks
    assert "L__self__a.l@1" in stacks[4][1]
    assert [e.fqn for e in ep.module_call_graph] == [e.fqn for e in tep.module_call_graph]
    assert all(e.signature is None for e in ep.module_call_graph[1:])
    root, troot = ep.module_call_graph[0].signature, tep.module_call_graph[0].signature
    assert isinstance(root, ModuleCallSignature) and isinstance(ep.module_call_graph[0],
                                                                ModuleCallEntry)
    assert (root.inputs, root.outputs, root.forward_arg_names) == ([], [], ["x", "y"])
    assert (repr(root.in_spec), repr(root.out_spec)) == (repr(troot.in_spec),
                                                         repr(troot.out_spec))
    _raises_like(lambda: setattr(ep, "module_call_graph", []),
                 lambda: setattr(tep, "module_call_graph", []))


def test_unflatten_matches_torch(torch):
    m, ep, tep = _programs(torch, _nested, (3, 4), (3, 4))
    u, tu = unflatten(ep), torch.export.unflatten(tep)
    assert isinstance(u, UnflattenedModule) and isinstance(u, ember.nn.Module)
    assert [(n, type(s).__name__) for n, s in u.named_modules()] == \
        [(n, type(s).__name__) for n, s in tu.named_modules()]
    for name, sub in u.named_modules():
        tsub = tu.get_submodule(name)
        assert _dump(sub.graph) == [_normalize(s) for s in _dump(tsub.graph)], name
        assert sub.type_name() == _normalize(tsub.type_name())
    assert list(dict(u.named_parameters())) == list(dict(tu.named_parameters()))
    assert list(dict(u.named_buffers())) == list(dict(tu.named_buffers()))
    x, y = ember.randn(3, 4), ember.randn(3, 4)
    assert ember.allclose(u(x, y), m(x, y), atol=1e-6)
    assert ember.allclose(u.a(x), m.a(x), atol=1e-6)  # a submodule runs on its own
    assert ember.allclose(u.a.l(x=x), m.a.l(x), atol=1e-6)
    assert "def forward(self, x, y)" in u.graph_module.code
    assert "class UnflattenedModule" in u.print_readable(print_output=False)
    # the state is a copy: training the unflattened module leaves the program alone
    assert u.a.l.weight is not ep.state_dict["a.l.weight"]
    assert ember.equal(u.a.l.weight, m.a.l.weight) and u.a.l.weight.requires_grad


def test_unflatten_buffer_updates_and_unused_modules():
    ember.manual_seed(0)
    net = ember.nn.Sequential(ember.nn.Linear(4, 3), ember.nn.BatchNorm1d(3),
                              ember.nn.Dropout(0.5), ember.nn.ReLU())
    net[2].eval()  # an identity: it leaves no node
    ref = copy.deepcopy(net)
    x = ember.randn(5, 4)
    ep = export(net, (x,)).run_decompositions()  # the module stacks survive a retrace
    u = unflatten(ep)
    assert type(u.get_submodule("2")) is ember.nn.Module  # ran no op: an empty module
    for _ in range(2):  # training steps: gradients reach the unflattened parameters
        out, ref_out = u(x), ref(x)
        assert ember.allclose(out, ref_out, atol=1e-5)
        out.square().sum().backward()
        ref_out.square().sum().backward()
    assert ember.allclose(u.get_submodule("0").weight.grad, ref[0].weight.grad, atol=1e-5)
    bn, tbn = u.get_submodule("1"), ref[1]
    assert int(bn.num_batches_tracked) == 2
    assert ember.allclose(bn.running_mean, tbn.running_mean, atol=1e-6)
    assert ember.allclose(bn.running_var, tbn.running_var, atol=1e-6)
    assert bn.running_mean.grad_fn is None  # a state update, outside autograd
    assert int(net[1].num_batches_tracked) == 0  # the exported module is untouched


def test_unflatten_input_checks_match_torch(torch, capsys):
    m, ep, tep = _programs(torch, _nested, (3, 4), (3, 4))
    u, tu = unflatten(ep), torch.export.unflatten(tep)
    for args, targs in [((ember.randn(5, 4), ember.randn(3, 4)),
                         (torch.randn(5, 4), torch.randn(3, 4))),
                        ((ember.randn(3, 4), 2), (torch.randn(3, 4), 2)),
                        ((ember.randn(3, 4, 1), ember.randn(3, 4)),
                         (torch.randn(3, 4, 1), torch.randn(3, 4)))]:
        _raises_like(lambda: u(*args), lambda: tu(*targs))
    _raises_like(lambda: u(ember.randn(3, 4), y=ember.randn(3, 4)),
                 lambda: tu(torch.randn(3, 4), y=torch.randn(3, 4)))
    _raises_like(lambda: u(ember.randn(3, 4)), lambda: tu(torch.randn(3, 4)))
    assert capsys.readouterr().out.count("Input treespec does not match") == 2
    # a FlatArgsAdapter makes other inputs fit

    class DropExtra(FlatArgsAdapter):
        def adapt(self, target_spec, input_spec, input_args, metadata=None, obj=None):
            return input_args[:target_spec.num_leaves]
    x, y = ember.randn(3, 4), ember.randn(3, 4)
    ua = unflatten(ep, flat_args_adapter=DropExtra())
    assert ember.allclose(ua(x, y, ember.ones(1)), m(x, y), atol=1e-6)
    assert "Adapting flat arg" in capsys.readouterr().out
    # ExportedProgram.module() checks the structure of its inputs as PyTorch's
    _raises_like(lambda: ep.module()(x, y=y),
                 lambda: tep.module()(torch.randn(3, 4), y=torch.randn(3, 4)))
    _raises_like(lambda: ep.module()(x), lambda: tep.module()(torch.randn(3, 4)))


def test_register_dataclass_inputs_and_outputs(torch):
    def make(lib):
        @dataclasses.dataclass
        class Inp:
            feature: object
            bias: int

        @dataclasses.dataclass
        class Out:
            res: object
        lib.export.register_dataclass(Inp)
        lib.export.register_dataclass(Out)

        class Mod(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.l = lib.nn.Linear(2, 2)

            def forward(self, x, ys, d=None):
                return Out(res=self.l(x.feature) + x.bias + ys[0] * ys[1] + d["k"])
        lib.manual_seed(0)
        return Mod(), Inp, Out

    def inputs(lib, Inp, n=2):
        return (Inp(lib.ones(n, 2), 1), (lib.ones(n, 2), lib.ones(n, 2))), \
            {"d": {"k": lib.ones(n, 2)}}
    (m, Inp, Out), (tm, TInp, _) = make(ember), make(torch)
    args, kwargs = inputs(ember, Inp)
    targs, tkwargs = inputs(torch, TInp)
    ep, tep = export(m, args, kwargs), torch.export.export(tm, targs, tkwargs)
    names = [n.name for n in ep.graph.nodes if n.op == "placeholder"]
    assert names == [n.name for n in tep.graph.nodes if n.op == "placeholder"]
    assert names[2:] == ["x_feature", "x_bias", "ys_0", "ys_1", "d_k"]
    assert repr(ep.module_call_graph[0].signature.in_spec) == \
        repr(tep.module_call_graph[0].signature.in_spec)
    for f in (ep.module(), unflatten(ep)):
        out = f(*args, **kwargs)
        assert isinstance(out, Out) and ember.allclose(out.res, m(*args, **kwargs).res)
    # a constant input must be the value the program was exported with
    _raises_like(lambda: unflatten(ep)(Inp(ember.ones(2, 2), 2), args[1], **kwargs),
                 lambda: torch.export.unflatten(tep)(TInp(torch.ones(2, 2), 2), targs[1],
                                                     **tkwargs))
    # saving a spec that holds a dataclass needs its serialized_type_name
    _raises_like(lambda: save(ep, io.BytesIO()),
                 lambda: torch.export.save(tep, io.BytesIO()))


def test_register_dataclass_serialized_type_name():
    @dataclasses.dataclass
    class Pair:
        a: object
        b: object
    ember.export.register_dataclass(Pair, serialized_type_name="test_export_api.Pair")

    class M(ember.nn.Module):
        def forward(self, p):
            return Pair(a=p.a * 2, b=p.b + 1)
    ep = export(M(), (Pair(ember.ones(2), ember.ones(2)),))
    buf = io.BytesIO()
    save(ep, buf)
    buf.seek(0)
    out = unflatten(load(buf))(Pair(ember.ones(2), ember.zeros(2)))
    assert isinstance(out, Pair) and out.a.tolist() == [2, 2] and out.b.tolist() == [1, 1]


def test_shapes_collection_matches_torch(torch):
    def make(lib):
        lib.manual_seed(0)

        class M(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.l = lib.nn.Linear(4, 4)

            def forward(self, x, ys):
                return self.l(x).relu() * 2, ys[0] + ys[1]
        return M()

    def spec(lib, x, ys):
        sc = lib.export.ShapesCollection()
        sc[x] = {0: lib.export.Dim("b", max=64)}
        sc[ys[0]] = (lib.export.Dim("n"), None)
        sc[ys[1]] = (sc[ys[0]][0], None)
        return sc
    m, tm = make(ember), make(torch)
    x, ys = ember.randn(3, 4), [ember.randn(5, 2), ember.randn(5, 2)]
    tx, tys = torch.randn(3, 4), [torch.randn(5, 2), torch.randn(5, 2)]
    sc, tsc = spec(ember, x, ys), spec(torch, tx, tys)
    assert isinstance(sc, ShapesCollection) and len(sc) == 3
    assert repr(sc.dynamic_shapes(m, (x, ys))) == repr(tsc.dynamic_shapes(tm, (tx, tys)))
    ep = export(m, (x, ys), dynamic_shapes=sc)
    tep = torch.export.export(tm, (tx, tys), dynamic_shapes=tsc)
    assert {str(k): str(v) for k, v in ep.range_constraints.items()} == \
        {str(k): str(v) for k, v in tep.range_constraints.items()}
    assert [repr(n.meta["val"]) for n in ep.graph.nodes if n.op == "placeholder"][2:] == \
        [repr(n.meta["val"]) for n in tep.graph.nodes if n.op == "placeholder"][2:]
    u, tu = unflatten(ep), torch.export.unflatten(tep)
    x2, ys2 = ember.randn(7, 4), [ember.randn(3, 2), ember.randn(3, 2)]
    for a, b in zip(u(x2, ys2), m(x2, ys2)):
        assert ember.allclose(a, b, atol=1e-6)
    _raises_like(lambda: u(ember.randn(70, 4), ys2),
                 lambda: tu(torch.randn(70, 4), [torch.randn(3, 2), torch.randn(3, 2)]))
    _raises_like(lambda: u(x2, [ember.randn(3, 2), ember.randn(4, 2)]),
                 lambda: tu(torch.randn(7, 4), [torch.randn(3, 2), torch.randn(4, 2)]))
    # errors of the builder
    stray, tstray = ShapesCollection(), torch.export.ShapesCollection()
    stray[ember.randn(2)] = (None,)
    tstray[torch.randn(2)] = (None,)
    _raises_like(lambda: stray.dynamic_shapes(m, (x, ys)),
                 lambda: tstray.dynamic_shapes(tm, (tx, tys)))
    _raises_like(lambda: stray.__setitem__(3, (None,)),
                 lambda: tstray.__setitem__(3, (None,)))
    _raises_like(lambda: sc.__setitem__(x, {0: None}), lambda: tsc.__setitem__(tx, {0: None}))


def test_additional_inputs_match_torch(torch):
    def make(lib):
        class M(lib.nn.Module):
            def forward(self, x, y):
                return x.sum(1) + y
        return M()

    def spec(lib, *extra):
        ai = lib.export.AdditionalInputs()
        for args in extra:
            ai.add(args)
        return ai
    ai = spec(ember, (ember.randn(5, 4), ember.randn(5)), (ember.randn(2, 4), ember.randn(2)))
    tai = spec(torch, (torch.randn(5, 4), torch.randn(5)), (torch.randn(2, 4), torch.randn(2)))
    assert isinstance(ai, AdditionalInputs)
    args, targs = (ember.randn(3, 4), ember.randn(3)), (torch.randn(3, 4), torch.randn(3))
    assert repr(ai.dynamic_shapes(make(ember), args)) == \
        repr(tai.dynamic_shapes(make(torch), targs))
    ep = export(make(ember), args, dynamic_shapes=ai)
    tep = torch.export.export(make(torch), targs, dynamic_shapes=tai)
    assert {str(k): str(v) for k, v in ep.range_constraints.items()} == \
        {str(k): str(v) for k, v in tep.range_constraints.items()}
    assert ember.allclose(ep.module()(ember.ones(9, 4), ember.ones(9)), ember.full((9,), 5.0))
    # export checks the program against each additional input: here x and y must agree
    bad, tbad = spec(ember, (ember.randn(5, 4), ember.randn(6))), \
        spec(torch, (torch.randn(5, 4), torch.randn(6)))
    _raises_like(lambda: export(make(ember), args, dynamic_shapes=bad),
                 lambda: torch.export.export(make(torch), targs, dynamic_shapes=tbad))
    _raises_like(lambda: ai.add([1]), lambda: tai.add([1]))
    _raises_like(lambda: spec(ember, (ember.randn(5, 4), 2.0)).dynamic_shapes(make(ember),
                                                                              args),
                 lambda: spec(torch, (torch.randn(5, 4), 2.0)).dynamic_shapes(make(torch),
                                                                              targs))


def test_default_decompositions_table(torch):
    table = default_decompositions()
    assert isinstance(table, CustomDecompTable) and isinstance(table, dict)
    assert isinstance(torch.export.default_decompositions(), dict)
    aten = ember.ops.aten
    assert aten.addmm.default not in table  # a core op: kept
    assert aten.addmm.default not in torch.export.default_decompositions()
    assert table.keys() == table.copy().keys() and type(table.copy()) is CustomDecompTable

    def addmm(bias, a, b, beta=1, alpha=1):
        return aten.add.Tensor(aten.mm.default(a, b), bias)
    table[aten.addmm.default] = addmm
    _, ep, _ = _programs(torch, _nested, (3, 4), (3, 4))
    ep2 = ep.run_decompositions(table)
    targets = {n.target for n in ep2.graph.nodes if n.op == "call_function"}
    assert aten.mm.default in targets and aten.addmm.default not in targets
    x, y = ember.randn(3, 4), ember.randn(3, 4)
    assert ember.allclose(ep2.module()(x, y), ep.module()(x, y), atol=1e-6)
    assert ember.allclose(unflatten(ep2)(x, y), ep.module()(x, y), atol=1e-6)
    assert table.pop(aten.addmm.default) is addmm and aten.addmm.default not in table
    assert default_decompositions().keys() == ember._decomp.core_aten_decompositions().keys()


def test_save_load_keeps_what_unflatten_reads():
    m = _nested(ember)
    x, y = ember.randn(3, 4), ember.randn(3, 4)
    ep = export(m, (x, y))
    buf = io.BytesIO()
    save(ep, buf)
    buf.seek(0)
    ep2 = load(buf)
    assert ep2.module_call_graph == ep.module_call_graph
    u = unflatten(ep2)
    assert [n for n, _ in u.named_modules()] == ["", "a", "a.l", "c"]
    assert ember.allclose(u(x, y), m(x, y), atol=1e-6)


def test_unsupported():
    m = _nested(ember)
    args = (ember.randn(3, 4), ember.randn(3, 4))
    with pytest.raises(NotImplementedError, match="preserve_module_call_signature"):
        export(m, args, preserve_module_call_signature=("a",))
    ep = export(m, args)
    from ember.export import ExportedProgram
    bare = ExportedProgram(ep.graph_module, ep.graph_signature, ep.state_dict)
    with pytest.raises(ValueError, match="module call graph"):
        unflatten(bare)
