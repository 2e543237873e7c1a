"""ember.export with dynamic_shapes: Dim specs, symbolic tracing of the user inputs, PyTorch's
range_constraints, constraint violations at export, input guards of .module(), save/load —
each checked against torch.export on the same program."""
import io

import pytest

import ember
from ember._dynamo.exc import UserError
from ember.export import Dim, dims, export, load, save

torch = pytest.importorskip("torch")


def _linear(lib):
    lib.manual_seed(0)

    class M(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.l = lib.nn.Linear(4, 3)

        def forward(self, x):
            return self.l(x).relu()
    return M()


def _mlp(lib):
    lib.manual_seed(0)

    class MLP(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = lib.nn.Linear(4, 8)
            self.b = lib.nn.Linear(8, 2)

        def forward(self, x):
            return self.b(self.a(x).relu())
    return MLP()


def _add(lib):
    class Add(lib.nn.Module):
        def forward(self, x, y):
            return x + y
    return Add()


def _ranges(ep):
    """range_constraints as printed: PyTorch's symbol names and ranges."""
    return {str(k): str(v) for k, v in ep.range_constraints.items()}


def _same_as_eager(ep, mod, *xs):
    out = ep.module()(*xs)
    assert out.shape == mod(*xs).shape
    assert ember.allclose(out, mod(*xs), atol=1e-6)


def _raises_like(fn_ember, fn_torch):
    """Both raise; same exception type name and the same first message line (ember.Size
    for torch.Size)."""
    with pytest.raises(Exception) as te:
        fn_torch()
    with pytest.raises(Exception) as ee:
        fn_ember()
    assert type(ee.value).__name__ == type(te.value).__name__
    assert str(ee.value).strip().splitlines()[0] == \
        str(te.value).replace("torch.Size", "ember.Size").strip().splitlines()[0]
    return ee.value, te.value


def test_dim_api_matches_torch():
    tD = torch.export.Dim
    for kw in ({}, {"min": 2}, {"min": 0, "max": 5}, {"max": 1024}, {"min": 3}):
        assert repr(Dim("b", **kw)) == repr(tD("b", **kw))
        assert (Dim("b", **kw).min, str(Dim("b", **kw).max)) == \
            (tD("b", **kw).min, str(tD("b", **kw).max).replace("int_oo", "oo"))
    for hint in ("AUTO", "STATIC", "DYNAMIC"):
        assert repr(getattr(Dim, hint)) == repr(getattr(tD, hint))
    assert repr(Dim.AUTO(max=64)) == repr(tD.AUTO(max=64))
    assert [repr(d) for d in dims("a", "b", max=10)] == \
        [repr(d) for d in torch.export.dims("a", "b", max=10)]
    _raises_like(lambda: Dim("b", min=5, max=2), lambda: tD("b", min=5, max=2))


def test_linear_dynamic_batch():
    spec = {"x": {0: Dim("batch", min=2, max=1024)}}
    tspec = {"x": {0: torch.export.Dim("batch", min=2, max=1024)}}
    m = _linear(ember)
    ep = export(m, (ember.randn(8, 4),), dynamic_shapes=spec)
    tep = torch.export.export(_linear(torch), (torch.randn(8, 4),),
                              dynamic_shapes=tspec).run_decompositions()
    assert _ranges(ep) == _ranges(tep)
    assert list(_ranges(ep).values()) == ["VR[2, 1024]"]
    assert ep.graph_module.code == tep.graph_module.code.replace("torch.", "ember.")
    (sym, vr), = ep.range_constraints.items()
    x = next(n for n in ep.graph.nodes if n.op == "placeholder" and n.name == "x")
    assert str(x.meta["val"].shape[0]) == str(sym) and x.meta["val"].shape[1] == 4
    params = [n for n in ep.graph.nodes if n.op == "placeholder" and n.name.startswith("p_")]
    assert [tuple(p.meta["val"].shape) for p in params] == [(3, 4), (3,)]  # state is static
    assert "Range constraints: {" + f"{sym}: VR[2, 1024]" + "}" in str(ep)
    for n in (2, 5, 1024):
        _same_as_eager(ep, m, ember.randn(n, 4))
    # outside the range / a static dim changed: PyTorch's guard error
    for shape in ((2000, 4), (8, 5)):
        _raises_like(lambda: ep.module()(ember.randn(*shape)),
                     lambda: tep.module()(torch.randn(*shape)))


def test_mlp_batch_and_seq_list_form():
    m = _mlp(ember)
    ep = export(m, (ember.randn(2, 5, 4),),
                dynamic_shapes=([Dim("batch", max=64), Dim("seq"), None],))
    tep = torch.export.export(_mlp(torch), (torch.randn(2, 5, 4),), dynamic_shapes=(
        [torch.export.Dim("batch", max=64), torch.export.Dim("seq"), None],))
    assert _ranges(ep) == _ranges(tep)
    assert list(_ranges(ep).values()) == ["VR[0, 64]", "VR[0, int_oo]"]
    for shape in ((3, 7, 4), (64, 2, 4), (5, 33, 4)):
        _same_as_eager(ep, m, ember.randn(*shape))
    # lowering again keeps the program dynamic
    ep2 = ep.run_decompositions()
    assert _ranges(ep2) == _ranges(ep)
    _same_as_eager(ep2, m, ember.randn(6, 9, 4))
    _raises_like(lambda: ep.module()(ember.randn(65, 2, 4)),
                 lambda: tep.module()(torch.randn(65, 2, 4)))


def test_shared_dim_is_one_symbol():
    d, td = Dim("a", max=100), torch.export.Dim("a", max=100)
    mod = _add(ember)
    ep = export(mod, (ember.randn(4, 3), ember.randn(4, 3)),
                dynamic_shapes={"x": {0: d}, "y": {0: d}})
    tep = torch.export.export(_add(torch), (torch.randn(4, 3), torch.randn(4, 3)),
                              dynamic_shapes={"x": {0: td}, "y": {0: td}})
    assert _ranges(ep) == _ranges(tep)
    assert list(_ranges(ep).values()) == ["VR[0, 100]"]
    vals = [n.meta["val"] for n in ep.graph.nodes if n.op == "placeholder"]
    assert [repr(v) for v in vals] == \
        [repr(n.meta["val"]) for n in tep.graph.nodes if n.op == "placeholder"]
    assert str(vals[0].shape[0]) == str(vals[1].shape[0]) == str(next(iter(ep.range_constraints)))
    _same_as_eager(ep, mod, ember.randn(7, 3), ember.randn(7, 3))
    _raises_like(lambda: ep.module()(ember.randn(5, 3), ember.randn(6, 3)),
                 lambda: tep.module()(torch.randn(5, 3), torch.randn(6, 3)))


def test_auto_dim_follows_named_dim():
    d, td = Dim("a", max=100), torch.export.Dim("a", max=100)
    ep = export(_add(ember), (ember.randn(4, 3), ember.randn(4, 3)),
                dynamic_shapes=([Dim.AUTO, None], (d, None)))
    tep = torch.export.export(_add(torch), (torch.randn(4, 3), torch.randn(4, 3)),
                              dynamic_shapes=([torch.export.Dim.AUTO, None], (td, None)))
    assert _ranges(ep) == _ranges(tep)
    assert list(_ranges(ep).values()) == ["VR[2, 100]"]
    with pytest.raises(AssertionError, match="Guard failed"):
        ep.module()(ember.randn(5, 3), ember.randn(6, 3))


class _Branch:
    @staticmethod
    def make(lib, cond):
        class F(lib.nn.Module):
            def forward(self, x):
                if cond(x.shape[0]):
                    return x + 1
                return x - 1
        return F()


@pytest.mark.parametrize("cond, size, kw", [
    (lambda n: n == 4, 4, {}),            # specialised to a constant
    (lambda n: n > 10, 4, {}),            # range narrowed to [2, 10]
    (lambda n: n > 10, 1, {}),            # example size 1: specialised
])
def test_violation_at_export(cond, size, kw):
    e, t = _raises_like(
        lambda: export(_Branch.make(ember, cond), (ember.randn(size, 3),),
                       dynamic_shapes={"x": {0: Dim("b", **kw)}}),
        lambda: torch.export.export(_Branch.make(torch, cond), (torch.randn(size, 3),),
                                    dynamic_shapes={"x": {0: torch.export.Dim("b", **kw)}}))
    assert isinstance(e, UserError) and isinstance(e, RuntimeError)
    # the reason and the suggested fix as PyTorch words them
    assert str(e).splitlines()[1:4] == str(t).splitlines()[1:4]


def test_violation_two_dims_must_be_equal():
    e, t = _raises_like(
        lambda: export(_add(ember), (ember.randn(4, 3), ember.randn(4, 3)),
                       dynamic_shapes={"x": {0: Dim("a")}, "y": {0: Dim("b")}}),
        lambda: torch.export.export(
            _add(torch), (torch.randn(4, 3), torch.randn(4, 3)),
            dynamic_shapes={"x": {0: torch.export.Dim("a")}, "y": {0: torch.export.Dim("b")}}))
    assert str(e).splitlines()[1:4] == str(t).splitlines()[1:4]


def test_bad_specs():
    m = _linear(ember)
    # example size outside the Dim's range
    _raises_like(lambda: export(m, (ember.randn(4, 4),),
                                dynamic_shapes={"x": {0: Dim("b", max=3)}}),
                 lambda: torch.export.export(_linear(torch), (torch.randn(4, 4),),
                                             dynamic_shapes={"x": {0: torch.export.Dim(
                                                 "b", max=3)}}))
    # dict keys that are not forward's argument names
    _raises_like(lambda: export(m, (ember.randn(4, 4),), dynamic_shapes={"y": {0: Dim("b")}}),
                 lambda: torch.export.export(_linear(torch), (torch.randn(4, 4),),
                                             dynamic_shapes={"y": {0: torch.export.Dim("b")}}))


def test_hints_and_static_dims():
    m = _linear(ember)
    for hint in ("AUTO", "DYNAMIC"):
        ep = export(m, (ember.randn(8, 4),), dynamic_shapes=({0: getattr(Dim, hint)},))
        tep = torch.export.export(_linear(torch), (torch.randn(8, 4),),
                                  dynamic_shapes=({0: getattr(torch.export.Dim, hint)},))
        assert _ranges(ep) == _ranges(tep)
        assert list(_ranges(ep).values()) == ["VR[2, int_oo]"]
        _same_as_eager(ep, m, ember.randn(3, 4))
    ep = export(m, (ember.randn(8, 4),), dynamic_shapes=({0: Dim.STATIC},))
    assert ep.range_constraints == {}
    # a dim the spec leaves out stays static: another size fails PyTorch's guard
    mod = _add(ember)
    d = Dim("a")
    ep = export(mod, (ember.randn(4, 3), ember.randn(4, 3)),
                dynamic_shapes={"x": {0: d}, "y": {0: d}})
    _same_as_eager(ep, mod, ember.randn(9, 3), ember.randn(9, 3))
    with pytest.raises(AssertionError, match=r"Guard failed: x.size\(\)\[1\] == 3"):
        ep.module()(ember.randn(9, 4), ember.randn(9, 4))


def test_save_load_keeps_ranges_and_runs_at_new_size():
    m = _mlp(ember)
    ep = export(m, (ember.randn(2, 5, 4),),
                dynamic_shapes={"x": {0: Dim("batch", min=2, max=64), 1: Dim("seq")}})
    buf = io.BytesIO()
    save(ep, buf)
    buf.seek(0)
    ep2 = load(buf)
    assert ep2.range_constraints == ep.range_constraints
    assert list(_ranges(ep2).values()) == ["VR[2, 64]", "VR[0, int_oo]"]
    assert any(n.target is ember.ops.aten.sym_size.int for n in ep2.graph.nodes)
    vals = [repr(n.meta["val"]) for n in ep.graph.nodes if n.op == "placeholder"]
    assert [repr(n.meta["val"]) for n in ep2.graph.nodes if n.op == "placeholder"] == vals
    assert "x: \"f32[s77, s27, 4]\"" in str(ep2)
    for shape in ((3, 7, 4), (64, 1, 4)):
        _same_as_eager(ep2, m, ember.randn(*shape))
    with pytest.raises(AssertionError, match=r"Guard failed: x.size\(\)\[0\] <= 64"):
        ep2.module()(ember.randn(65, 2, 4))


@pytest.mark.parametrize("make_spec", [
    lambda D: ({0: D("a")}, None),          # more entries than inputs
    lambda D: {"x": [D("a")]},              # a per-dim list of the wrong length
    lambda D: {"x": {0: "a"}},              # not a Dim
    lambda D: {"x": {0: D.DYNAMIC}},        # Dim.DYNAMIC the program specialises
])
def test_spec_errors_match_torch(make_spec):
    e, t = _raises_like(
        lambda: export(_Branch.make(ember, lambda n: n == 4), (ember.randn(4, 3),),
                       dynamic_shapes=make_spec(Dim)),
        lambda: torch.export.export(_Branch.make(torch, lambda n: n == 4),
                                    (torch.randn(4, 3),),
                                    dynamic_shapes=make_spec(torch.export.Dim)))
    body = str(t).split("\n\nThe error above")[0].replace("torch.Size", "ember.Size")
    assert str(e) == body


def test_auto_dim_guard_checked_at_call():
    class G(ember.nn.Module):
        def forward(self, x):
            return x.reshape(x.shape[0] // 2, 2, 3)
    g = G()
    ep = export(g, (ember.randn(4, 3),), dynamic_shapes={"x": {0: Dim.AUTO}})
    _same_as_eager(ep, g, ember.randn(6, 3))
    with pytest.raises(AssertionError, match="Guard failed"):  # odd sizes cannot reshape
        ep.module()(ember.randn(5, 3))


def test_gpt_block_dynamic_batch_and_seq():
    import os
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(
        __file__))), "examples"))
    from train_gpt import Block
    ember.manual_seed(0)
    block = Block(16, 2, 0.0).eval()
    ep = export(block, (ember.randn(2, 5, 16),),
                dynamic_shapes={"x": {0: Dim("batch", max=32), 1: Dim("seq", max=64)}})
    assert list(_ranges(ep).values()) == ["VR[0, 32]", "VR[0, 64]"]
    for shape in ((3, 7, 16), (1, 2, 16), (4, 64, 16)):  # batch 1 too: the range allows it
        _same_as_eager(ep, block, ember.randn(*shape))
    with pytest.raises(AssertionError, match=r"Guard failed: x.size\(\)\[1\] <= 64"):
        ep.module()(ember.randn(2, 65, 16))


def _cat(lib):
    class C(lib.nn.Module):
        def forward(self, x, y):
            return lib.cat([x, x], 0) + y
    return C()


def _shift(lib):
    class S(lib.nn.Module):
        def forward(self, x, y):
            return x[1:] + y
    return S()


@pytest.mark.parametrize("make, sizes, spec, good, bad", [
    (_cat, (4, 8), lambda d: {"x": {0: d}, "y": {0: 2 * d}}, (6, 12), (6, 13)),
    # the derived dim on the first input: the root's symbol comes from the second
    (_shift, (5, 4), lambda d: {"x": {0: d + 1}, "y": {0: d}}, (7, 6), (7, 7)),
])
def test_derived_dims(make, sizes, spec, good, bad):
    mod = make(ember)
    ep = export(mod, tuple(ember.randn(n, 3) for n in sizes),
                dynamic_shapes=spec(Dim("d", max=50)))
    tep = torch.export.export(make(torch), tuple(torch.randn(n, 3) for n in sizes),
                              dynamic_shapes=spec(torch.export.Dim("d", max=50)))
    assert _ranges(ep) == _ranges(tep)
    assert [repr(n.meta["val"]) for n in ep.graph.nodes if n.op == "placeholder"] == \
        [repr(n.meta["val"]) for n in tep.graph.nodes if n.op == "placeholder"]
    _same_as_eager(ep, mod, *(ember.randn(n, 3) for n in good))
    with pytest.raises(AssertionError, match="Guard failed"):
        ep.module()(*(ember.randn(n, 3) for n in bad))
    with pytest.raises(AssertionError, match="Guard failed"):
        tep.module()(*(torch.randn(n, 3) for n in bad))
    assert repr(Dim("d") + 1) == repr(torch.export.Dim("d") + 1) == "d + 1"
    assert repr(2 * Dim("d")) == repr(2 * torch.export.Dim("d")) == "2*d"


def test_keyword_input_spec():
    def make(lib):
        class K(lib.nn.Module):
            def forward(self, x, *, scale):
                return x * scale.sum(0)
        return K()
    k = make(ember)
    ep = export(k, (ember.randn(5, 3),), {"scale": ember.randn(4, 3)},
                dynamic_shapes={"x": {0: Dim("d")}, "scale": {0: Dim("e")}})
    tep = torch.export.export(make(torch), (torch.randn(5, 3),), {"scale": torch.randn(4, 3)},
                              dynamic_shapes={"x": {0: torch.export.Dim("d")},
                                              "scale": {0: torch.export.Dim("e")}})
    assert _ranges(ep) == _ranges(tep)
    assert [repr(n.meta["val"]) for n in ep.graph.nodes if n.op == "placeholder"] == \
        [repr(n.meta["val"]) for n in tep.graph.nodes if n.op == "placeholder"]
    x, scale = ember.randn(7, 3), ember.randn(2, 3)
    assert ember.allclose(ep.module()(x, scale=scale), k(x, scale=scale))
