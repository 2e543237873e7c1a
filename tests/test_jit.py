"""ember.jit: programs that call torch.jit.script / torch.jit.trace, run on ember, compared with
eager and with PyTorch's torch.jit."""
import warnings

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F

torch = pytest.importorskip("torch")


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 16)
        self.fc2 = nn.Linear(16, 3)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4 * 4 * 4, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn(self.conv(x))), 2)
        return self.fc(x.flatten(1))


def _np(t):
    return t.detach().numpy()


def test_script_module_mlp_matches_eager_and_saves(tmp_path):
    ember.manual_seed(0)
    model = MLP()
    x = ember.randn(5, 4)
    with pytest.warns(UserWarning, match="captured whole by ember.compile"):
        scripted = ember.jit.script(model)
        out = scripted(x)
    assert isinstance(scripted, ember.jit.ScriptModule)
    np.testing.assert_array_equal(_np(out), _np(model(x)))
    assert "linear" in scripted.code and "relu" in str(scripted.graph)
    # shares the parameters: a training step through the scripted module updates the model
    opt = ember.optim.SGD(scripted.parameters(), lr=0.1)
    before = model.fc1.weight.detach().clone()
    scripted(x).sum().backward()
    opt.step()
    assert not np.allclose(_np(before), _np(model.fc1.weight))
    assert set(scripted.state_dict()) == set(model.state_dict())
    path = tmp_path / "mlp.pt"
    scripted.save(str(path))
    loaded = ember.jit.load(str(path))
    np.testing.assert_allclose(_np(loaded(x)), _np(model(x)), rtol=1e-6, atol=1e-6)
    # the same program in PyTorch: torch.jit.script of the same weights gives the same output
    tm = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
    tm.load_state_dict({k.replace("fc1", "0").replace("fc2", "2"): torch.from_numpy(_np(v))
                        for k, v in model.state_dict().items()})
    ref = torch.jit.script(tm)(torch.from_numpy(_np(x)))
    np.testing.assert_allclose(_np(scripted(x)), ref.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_script_function_falls_back_to_eager_once():
    def f(x, y):
        if x.sum() > 0:  # data-dependent: fullgraph capture fails
            return x * y
        return x - y

    sf = ember.jit.script(f)
    assert isinstance(sf, ember.jit.ScriptFunction)
    a, b = ember.ones(3), ember.full((3,), 2.0)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r1 = sf(a, b)
        r2 = sf(-a, b)
    notes = [x for x in w if "ember.jit.script(f)" in str(x.message)]
    assert len(notes) == 1 and "runs eagerly" in str(notes[0].message)
    assert notes[0].filename == __file__
    np.testing.assert_array_equal(_np(r1), [2, 2, 2])
    np.testing.assert_array_equal(_np(r2), [-3, -3, -3])
    with pytest.raises(RuntimeError, match="runs eagerly"):
        sf.graph

    def g(x):
        return ember.sin(x) * 2 + 1
    sg = ember.jit.script(g)
    with pytest.warns(UserWarning, match="captured whole"):
        np.testing.assert_allclose(_np(sg(a)), np.sin(1.0) * 2 + 1, rtol=1e-6)
    assert "sin" in sg.code


def test_trace_cnn_matches_eager_and_round_trips(tmp_path):
    ember.manual_seed(0)
    model = CNN().eval()
    x = ember.randn(2, 1, 8, 8)
    traced = ember.jit.trace(model, x)
    assert isinstance(traced, ember.jit.TracedModule)
    np.testing.assert_allclose(_np(traced(x)), _np(model(x)), rtol=1e-6, atol=1e-6)
    assert "convolution" in traced.code
    assert "aten.relu" in str(traced.graph)
    # another batch size gets its own recording
    x8 = ember.randn(8, 1, 8, 8)
    np.testing.assert_allclose(_np(traced(x8)), _np(model(x8)), rtol=1e-5, atol=1e-6)
    path = tmp_path / "cnn.pt"
    ember.jit.save(traced, path, _extra_files={"note.txt": "hello"})
    extra = {"note.txt": ""}
    loaded = ember.jit.load(path, _extra_files=extra)
    assert extra["note.txt"] == "hello"
    assert isinstance(loaded, ember.jit.ScriptModule)
    np.testing.assert_allclose(_np(loaded(x)), _np(model(x)), rtol=1e-5, atol=1e-6)
    # and loading what the loaded module saves again
    loaded.save(tmp_path / "again.pt")
    again = ember.jit.load(tmp_path / "again.pt")
    np.testing.assert_allclose(_np(again(x)), _np(model(x)), rtol=1e-5, atol=1e-6)
    # PyTorch's trace of the same network on the same weights
    tnet = _torch_cnn(model)
    ref = torch.jit.trace(tnet, torch.from_numpy(_np(x)))(torch.from_numpy(_np(x)))
    np.testing.assert_allclose(_np(traced(x)), ref.detach().numpy(), rtol=1e-4, atol=1e-5)


def _torch_cnn(model):
    class TCNN(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(1, 4, 3, padding=1)
            self.bn = torch.nn.BatchNorm2d(4)
            self.fc = torch.nn.Linear(64, 10)

        def forward(self, x):
            x = torch.nn.functional.max_pool2d(torch.relu(self.bn(self.conv(x))), 2)
            return self.fc(x.flatten(1))
    t = TCNN()
    t.load_state_dict({k: torch.from_numpy(_np(v).copy()) for k, v in model.state_dict().items()})
    return t.eval()


def test_traced_module_trains_like_the_model():
    ember.manual_seed(1)
    model = CNN()  # training mode: BatchNorm updates its running stats through the graph
    x = ember.randn(4, 1, 8, 8)
    traced = ember.jit.trace(model, x, check_trace=False)
    mean0 = model.bn.running_mean.clone()
    loss = traced(x).pow(2).mean()
    loss.backward()
    assert model.conv.weight.grad is not None
    assert not np.allclose(_np(mean0), _np(model.bn.running_mean))


def test_tracer_warning_on_data_dependent_branch_matches_pytorch():
    def f(x):
        if x.sum() > 0:
            return x * 2
        return x - 1

    with pytest.warns(ember.jit.TracerWarning) as rec:
        tf = ember.jit.trace(f, ember.ones(3))
    rec = [w for w in rec if w.category is ember.jit.TracerWarning]
    msg = str(rec[0].message)
    assert rec[0].filename == __file__
    with pytest.warns(torch.jit.TracerWarning) as trec:
        torch.jit.trace(f, torch.ones(3))
    trec = [w for w in trec if w.category is torch.jit.TracerWarning]
    assert msg == str(trec[0].message)
    assert msg.startswith("Converting a tensor to a Python boolean might cause the trace")
    # the branch is frozen, as in PyTorch
    np.testing.assert_array_equal(_np(tf(-ember.ones(3))), [-2, -2, -2])
    assert ember.jit.is_tracing() is False

    def g(x):
        return x * float(x.max()) + x[0].item()
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        ember.jit.trace(g, ember.ones(2))
    with warnings.catch_warnings(record=True) as want:
        warnings.simplefilter("always")
        torch.jit.trace(g, torch.ones(2))
    assert [str(w.message) for w in got if w.category is ember.jit.TracerWarning] == \
        [str(w.message) for w in want if w.category is torch.jit.TracerWarning][:2]
    assert all(w.filename == __file__ for w in got if w.category is ember.jit.TracerWarning)


def test_check_trace_catches_a_diverging_graph():
    def f(x):
        return x * 2 if x.sum() > 0 else x - 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ember.jit.TracerWarning)
        with pytest.raises(ember.jit.TracingCheckError, match="Graphs differed across "):
            ember.jit.trace(f, ember.ones(3), check_inputs=[(-ember.ones(3),)])


def test_trace_strict_on_container_outputs_as_pytorch():
    def f(x):
        return [x + 1, x * 2]
    with pytest.warns(ember.jit.TracerWarning, match="Encountering a list at the output"):
        ember.jit.trace(f, ember.ones(2))
    with pytest.warns(torch.jit.TracerWarning, match="Encountering a list at the output"):
        torch.jit.trace(f, torch.ones(2))
    out = ember.jit.trace(f, ember.ones(2), strict=False)(ember.ones(2))
    np.testing.assert_array_equal(_np(out[1]), [2, 2])

    def g(x):
        return {"a": x + 1}
    with pytest.raises(RuntimeError) as ours:
        ember.jit.trace(g, ember.ones(2))
    with pytest.raises(RuntimeError) as theirs:
        torch.jit.trace(g, torch.ones(2))
    assert str(ours.value) == str(theirs.value)
    np.testing.assert_array_equal(
        _np(ember.jit.trace(g, ember.ones(2), strict=False)(ember.ones(2))["a"]), [2, 2])


class WithDecorators(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.calls = 0

    @ember.jit.ignore
    def log(self, x):
        self.calls += 1
        return x

    @ember.jit.unused
    def debug_only(self, x):
        return x + 100

    @ember.jit.export
    def scale(self, x):
        return x * 3

    def forward(self, x):
        return self.log(self.lin(x))


def test_ignore_unused_export_and_helpers():
    m = WithDecorators()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        sm = ember.jit.script(m)
        x = ember.randn(2, 3)
        np.testing.assert_allclose(_np(sm(x)), _np(m(x)), rtol=1e-6)
    np.testing.assert_array_equal(_np(sm.scale(ember.ones(1))), [3.0])
    with pytest.raises(RuntimeError, match="annotated to be ignored and cannot be run"):
        sm.debug_only(x)
    assert m.debug_only(ember.zeros(1)).item() == 100  # eager module unaffected
    for name in ("ignore", "unused", "export"):
        assert getattr(WithDecorators, {"ignore": "log", "unused": "debug_only",
                                        "export": "scale"}[name])._torchscript_modifier == \
            getattr(torch._jit_internal.FunctionModifiers, name.upper())

    @ember.jit.ignore(drop=True)
    def dropped(x):
        return x
    assert dropped._torchscript_modifier == torch._jit_internal.FunctionModifiers.UNUSED
    assert ember.jit.annotate(list, []) == [] and ember.jit.Attribute(3, int) == 3
    assert ember.jit.Final is torch.jit.Final.__class__ or ember.jit.Final[int] is not None
    assert ember.jit.is_scripting() is False
    fut = ember.jit.fork(ember.add, ember.ones(2), 1)
    np.testing.assert_array_equal(_np(ember.jit.wait(fut)), [2, 2])
    with pytest.raises(ZeroDivisionError):
        ember.jit.fork(lambda: 1 / 0)


def _plus_one(x):
    return x + 1


def test_deprecation_warnings_as_pytorch():
    for name, call in [("script", lambda j, t: j.script(_plus_one)),
                       ("trace", lambda j, t: j.trace(_plus_one, t.ones(1)))]:
        with pytest.warns(DeprecationWarning) as ours:
            call(ember.jit, ember)
        with pytest.warns(DeprecationWarning) as theirs:
            call(torch.jit, torch)
        want = [str(w.message) for w in theirs if w.category is DeprecationWarning]
        got = [str(w.message) for w in ours if w.category is DeprecationWarning]
        assert want[0] in got, name


def test_script_save_requires_a_call_and_load_errors(tmp_path):
    sm = ember.jit.script(MLP())
    with pytest.raises(RuntimeError, match="call the scripted module once first"):
        sm.save(tmp_path / "x.pt")
    with pytest.raises(ValueError, match="does not exist"):
        ember.jit.load(str(tmp_path / "missing.pt"))
    assert ember.jit.script(sm) is sm


def test_save_of_an_eager_fallback_with_data_dependent_flow_explains(tmp_path):
    class Branchy(nn.Module):
        def forward(self, x):
            return x * 2 if x.sum() > 0 else x - 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sm = ember.jit.script(Branchy())
        sm(ember.ones(2))
        with pytest.raises(RuntimeError, match="data-dependent Python control flow cannot be"):
            sm.save(tmp_path / "b.pt")


# A training script as users write it; run as-is under PyTorch and with `import ember as torch`.
PROGRAM = '''
import io
import warnings
import torch
import torch.nn as nn

warnings.simplefilter("ignore")
torch.manual_seed(0)

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 1))

    def forward(self, x):
        return self.body(x).squeeze(-1)

x = torch.randn(64, 8)
y = x.sum(dim=1, keepdim=False) * 0.5
net = torch.jit.script(Net())
opt = torch.optim.Adam(net.parameters(), lr=1e-2)
losses = []
for step in range(30):
    opt.zero_grad()
    loss = nn.functional.mse_loss(net(x), y)
    loss.backward()
    opt.step()
    losses.append(loss.item())
buf = io.BytesIO()
torch.jit.save(net, buf)
buf.seek(0)
loaded = torch.jit.load(buf)
with torch.no_grad():
    max_diff = (loaded(x) - net(x)).abs().max().item()
traced = torch.jit.trace(net, x)
trace_diff = (traced(x) - net(x)).abs().max().item()
'''


@pytest.mark.parametrize("lib", ["ember", "torch"])
def test_training_script_runs_unmodified(lib, tmp_path):
    import importlib.util
    src = PROGRAM if lib == "torch" else PROGRAM.replace("import torch\n", "import ember as torch\n") \
        .replace("import torch.nn as nn", "import ember.nn as nn")
    path = tmp_path / f"train_{lib}.py"  # a file: torch.jit.script reads the class's source
    path.write_text(src)
    spec = importlib.util.spec_from_file_location(f"train_{lib}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    env = vars(module)
    assert env["losses"][-1] < 0.5 * env["losses"][0]
    assert env["max_diff"] < 1e-5 and env["trace_diff"] < 1e-5


def test_trace_kwargs_is_tracing_and_load_map_location(tmp_path):
    seen = []

    def f(x, *, scale):
        seen.append(ember.jit.is_tracing())
        return (x * scale, x.sum())

    tf = ember.jit.trace(f, example_kwarg_inputs={"x": ember.ones(2), "scale": ember.full((2,), 3.0)})
    assert seen[0] is True and ember.jit.is_tracing() is False
    out = tf(x=ember.arange(2.0), scale=ember.full((2,), 2.0))
    assert isinstance(out, tuple)
    np.testing.assert_array_equal(_np(out[0]), [0, 2])
    assert out[1].item() == 1.0
    tf.save(tmp_path / "f.pt")
    loaded = ember.jit.load(tmp_path / "f.pt", map_location="cpu")
    out = loaded(scale=ember.full((2,), 2.0), x=ember.arange(2.0))  # any keyword order
    np.testing.assert_array_equal(_np(out[0]), [0, 2])
    assert out[1].item() == 1.0


def _declared(x: int) -> int:
    ...


def _declared_with_pass(x: float) -> float:
    pass


class _ScriptedPoint:
    def __init__(self, x: int):
        self.x = x


class _ScriptedChild(_ScriptedPoint):
    pass


def test_overload_declarations_and_scripted_classes(torch):
    """``jit._overload`` declarations leave the implementation that follows them (and refuse a
    body other than ``pass``/``...``, as PyTorch); ``jit.script`` of a class returns the class
    and refuses nn.Module types and subclasses as PyTorch does."""
    for lib in (ember, torch):
        assert lib.jit._overload(_declared) is _declared
        assert lib.jit._overload(_declared_with_pass) is _declared_with_pass
        with pytest.raises(RuntimeError, match="Only `pass` statement or `...` can be the body"):
            @lib.jit._overload
            def bad(x: int) -> int:
                return x
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            assert lib.jit.script(_ScriptedPoint) is _ScriptedPoint
            assert lib.jit.script(_ScriptedPoint)(4).x == 4
            with pytest.raises(RuntimeError, match="inherits from nn.Module, pass an instance"):
                lib.jit.script(lib.nn.Linear)
            with pytest.raises(RuntimeError, match="does not support inheritance yet"):
                lib.jit.script(_ScriptedChild)
