"""ember.compile through the Python that library code runs inside a forward (HuggingFace
transformers' models are the model case): objects created in captured code (plain classes,
dict subclasses such as ``ModelOutput``, with ``super()`` calls and custom ``__setattr__``),
dict-subclass registries, sliced ModuleLists, ``os.environ`` reads, logging, ``inspect.signature``,
loss modules built in ``forward``, classes computing their attributes, ``Sequence`` objects,
failed imports and ``is_exporting``. Each case runs with ``fullgraph=True`` (no graph break) and
is compared with eager ember and with PyTorch's ``torch.compile`` of the same code."""
import collections
import copy
import dataclasses
import inspect
import itertools
import logging
import os

import numpy as np
import pytest

import ember
from ember._dynamo.testing import CompileCounter


@pytest.fixture(autouse=True)
def _reset():
    ember._dynamo.reset()
    yield
    ember._dynamo.reset()


def _np(t):
    return t.detach().numpy()


def _both(torch, make, *arrays, counter=False):
    """``make(lib)`` -> fn; fn compiled (fullgraph) in each library on the arrays; returns
    (ember's result, PyTorch's result, ember's eager result)."""
    cnt = CompileCounter()
    mine = ember.compile(make(ember), backend=cnt, fullgraph=True)(
        *[ember.tensor(a) for a in arrays])
    theirs = torch.compile(make(torch), backend="eager", fullgraph=True)(
        *[torch.tensor(a) for a in arrays])
    eager = make(ember)(*[ember.tensor(a) for a in arrays])
    assert cnt.frame_count == 1
    return mine, theirs, eager


X = np.arange(6, dtype=np.float32).reshape(2, 3)


def test_dict_subclass_registry_with_super_calls(torch):
    def make(lib):
        class Registry(dict):  # transformers' _CanRecordRegistry
            def __setitem__(self, key, value):
                super().__setitem__(str(key), value)

            def get(self, key):
                return super().get(str(key)) or 1.0

        reg = Registry()
        reg[int] = 3.0

        def fn(x):
            return x * reg.get(int) + reg.get(float)
        return fn
    mine, theirs, eager = _both(torch, make, X)
    np.testing.assert_allclose(_np(mine), theirs.numpy())
    np.testing.assert_allclose(_np(mine), _np(eager))


class _Layer:
    def __init__(self, owner):
        self.owner = owner
        self.keys = None

    def update(self, k):
        self.keys = k if self.keys is None else self.keys * 0.5 + k
        return self.keys


class _Cache:  # transformers' DynamicCache: built, filled and returned by the forward
    def __init__(self, n):
        self.layers = [_Layer(self) for _ in range(n)]

    def update(self, k, i):
        return self.layers[i].update(k)


def _make_cache(lib):
    def fn(x):
        cache = _Cache(2)
        a = cache.update(x, 0)
        a = cache.update(a * 2, 0)
        b = cache.update(x + 1, 1)
        return cache, a.sum() + b.sum()
    return fn


def test_objects_created_in_captured_code(torch):
    (cache, s), (tcache, ts), (ecache, es) = _both(torch, _make_cache, X)
    assert type(cache) is _Cache and len(cache.layers) == 2
    assert all(layer.owner is cache for layer in cache.layers)  # the cycle is rebuilt
    for layer, tlayer in zip(cache.layers, tcache.layers):
        np.testing.assert_allclose(_np(layer.keys), tlayer.keys.numpy())
    np.testing.assert_allclose(_np(s), ts.numpy())
    np.testing.assert_allclose(_np(s), _np(es))
    fn = ember.compile(_make_cache(ember), fullgraph=True)
    first, _ = fn(ember.tensor(X))
    second, _ = fn(ember.tensor(X))
    assert first is not second and first.layers[0] is not second.layers[0]  # one per call


def _make_output(lib):
    class _Meta(type):  # a metaclass without __call__ (transformers' _BCCacheNameMeta)
        pass

    class Output(collections.OrderedDict, metaclass=_Meta):  # transformers' ModelOutput
        def __post_init__(self):
            for field in dataclasses.fields(self):
                v = self.__dict__.get(field.name)
                if v is not None:
                    self[field.name] = v

        def __setattr__(self, name, value):
            if name in {f.name for f in dataclasses.fields(self)} and value is not None:
                super().__setitem__(name, value)
            super().__setattr__(name, value)

        def __setitem__(self, key, value):
            super().__setitem__(key, value)
            super().__setattr__(key, value)

        def to_tuple(self):
            return tuple(self[k] for k in self.keys())

    @dataclasses.dataclass
    class CausalOut(Output):
        loss: object = None
        logits: object = None
        hidden: object = None

    def fn(x):
        out = CausalOut(logits=x * 2, hidden=x + 1)
        return out, out.to_tuple()[0] + out["hidden"] + len(out)
    return fn


def test_dict_subclass_dataclass_output(torch):
    (out, s), (tout, ts), (eout, es) = _both(torch, _make_output, X)
    assert type(out).__name__ == "CausalOut" and isinstance(out, collections.OrderedDict)
    assert list(out.keys()) == list(tout.keys()) == ["logits", "hidden"]
    assert out.loss is None
    np.testing.assert_allclose(_np(out.logits), tout.logits.numpy())
    np.testing.assert_allclose(_np(out["hidden"]), _np(eout["hidden"]))
    np.testing.assert_allclose(_np(s), ts.numpy())


def test_module_list_slice_and_stateless_loss_module(torch):
    def make(lib):
        lib.manual_seed(0)

        class Net(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = lib.nn.ModuleList(lib.nn.Linear(3, 3) for _ in range(3))

            def forward(self, x, y):
                for layer in self.layers[:2]:
                    x = layer(x)
                return lib.nn.CrossEntropyLoss()(x, y), self.layers[1:]
        return Net()
    x = np.random.RandomState(0).randn(4, 3).astype(np.float32)
    y = np.array([0, 1, 2, 1])
    net, tnet = make(ember), make(torch)
    tnet.load_state_dict({k: torch.tensor(_np(v)) for k, v in net.state_dict().items()})
    cnt = CompileCounter()
    loss, rest = ember.compile(net, backend=cnt, fullgraph=True)(ember.tensor(x),
                                                                 ember.tensor(y))
    tloss, trest = torch.compile(tnet, backend="eager", fullgraph=True)(torch.tensor(x),
                                                                       torch.tensor(y))
    assert cnt.frame_count == 1
    np.testing.assert_allclose(_np(loss), tloss.detach().numpy(), rtol=1e-6)
    assert type(rest) is ember.nn.ModuleList and list(rest) == list(net.layers[1:])


def test_module_with_parameters_built_in_forward_stays_eager():
    class Net(ember.nn.Module):
        def forward(self, x):
            return ember.nn.Linear(3, 2)(x)  # freshly initialised on every eager call
    x = ember.ones(2, 3)
    ember.manual_seed(1)
    ref = Net()(x)
    ember.manual_seed(1)
    np.testing.assert_allclose(_np(ember.compile(Net())(x)), _np(ref))
    with pytest.raises(ember._dynamo.exc.Unsupported, match="Linear with parameters"):
        ember.compile(Net(), fullgraph=True)(x)


def test_environment_reads_are_guarded(monkeypatch):
    cnt = CompileCounter()

    @ember.compile(backend=cnt, fullgraph=True)
    def fn(x):
        if os.environ.get("EMBER_TEST_DOUBLE", "0") == "1":
            return x * 2
        return x + ("EMBER_TEST_DOUBLE" in os.environ)
    monkeypatch.delenv("EMBER_TEST_DOUBLE", raising=False)
    x = ember.ones(2)
    assert fn(x).tolist() == [1.0, 1.0]
    monkeypatch.setenv("EMBER_TEST_DOUBLE", "1")
    assert fn(x).tolist() == [2.0, 2.0]
    monkeypatch.setenv("EMBER_TEST_DOUBLE", "0")
    assert fn(x).tolist() == [2.0, 2.0]  # 1 + True
    assert cnt.frame_count == 3
    assert fn(x).tolist() == [2.0, 2.0] and cnt.frame_count == 3  # cached


def test_logging_runs_on_every_call(caplog):
    log = logging.getLogger("ember.tests.dynamo_user_code")

    @ember.compile(fullgraph=True)
    def fn(x):
        if log.isEnabledFor(logging.DEBUG):
            log.debug("not emitted")
        log.warning("scaling by %d", 3)
        return x * 3
    with caplog.at_level(logging.WARNING, logger=log.name):
        fn(ember.ones(2))
        fn(ember.ones(2))
    assert [r.getMessage() for r in caplog.records] == ["scaling by 3"] * 2
    assert fn(ember.ones(2)).tolist() == [3.0, 3.0]


def test_signature_hasattr_finfo_and_computed_attributes(torch):
    def make(lib):
        class Config:  # transformers' PreTrainedConfig maps old attribute names
            attribute_map = {"n_layer": "num_hidden_layers"}

            def __init__(self):
                self.num_hidden_layers = 2

            def __getattribute__(self, key):
                if key != "attribute_map" and key in super().__getattribute__("attribute_map"):
                    key = super().__getattribute__("attribute_map")[key]
                return super().__getattribute__(key)

        class Net(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.config = Config()

            def chunk(self, a, b):
                return a + b

            def forward(self, x):
                n = len(inspect.signature(self.chunk).parameters)
                low = lib.finfo(x.dtype).min
                return self.chunk(x, x) * n * self.config.n_layer + hasattr(x, "jax"), low
        return Net()
    (y, low), (ty, tlow) = (ember.compile(make(ember), fullgraph=True)(ember.tensor(X)),
                            torch.compile(make(torch), backend="eager",
                                          fullgraph=True)(torch.tensor(X)))
    np.testing.assert_allclose(_np(y), ty.numpy())
    assert low == tlow


def test_sequence_objects_iterate(torch):
    def make(lib):
        class PerLayer(collections.abc.Sequence):  # transformers' _PerLayerConfigView
            def __init__(self, scales):
                self._scales = scales

            def __len__(self):
                return len(self._scales)

            def __getitem__(self, i):
                return self._scales[i]

        def fn(x):
            for s in PerLayer([1.0, 2.0, 3.0]):
                x = x * s
            return x
        return fn
    mine, theirs, eager = _both(torch, make, X)
    np.testing.assert_allclose(_np(mine), theirs.numpy())


def test_failed_import_is_a_graph_break():
    def fn(x):
        try:
            import ember_no_such_module  # noqa: F401
            return x
        except ImportError:
            return x + 1
    assert ember.compile(fn)(ember.ones(1)).tolist() == [2.0]
    with pytest.raises(ember._dynamo.exc.Unsupported, match="import ember_no_such_module"):
        ember.compile(fn, fullgraph=True)(ember.ones(1))


def test_is_exporting_only_under_export(torch):
    class Net(ember.nn.Module):
        def forward(self, x):
            return x + 1 if ember.compiler.is_exporting() else x - 1
    x = ember.zeros(1)
    assert Net()(x).tolist() == [-1.0]
    assert ember.compile(Net(), fullgraph=True)(x).tolist() == [-1.0]
    assert ember.export.export(Net(), (x,)).module()(x).tolist() == [1.0]
    assert not ember.compiler.is_exporting()
    assert torch.compiler.is_exporting() is False  # the same name and default


def test_unsupported_names_every_user_frame():
    def inner(x):
        return x.tolist()

    def outer(x):
        return inner(x * 2)
    with pytest.raises(ember._dynamo.exc.Unsupported) as info:
        ember.compile(outer, fullgraph=True)(ember.ones(1))
    text = str(info.value)
    assert text.index("in outer") < text.index("in inner")


def test_profiler_ranges_and_chain_in_captured_code(torch):
    def make(lib):
        def fn(x):
            with lib.autograd.profiler.record_function("my_range"):
                y = x * 2
            for t in itertools.chain([y], (x, x + 1)):
                y = y + t
            return y
        return fn
    mine, theirs, eager = _both(torch, make, X)
    np.testing.assert_allclose(_np(mine), theirs.numpy())
    np.testing.assert_allclose(_np(mine), _np(eager))


class _Config:  # transformers' configs: plain-data state, copied and edited in the forward
    def __init__(self):
        self.layers = 2
        self.names = ["a", "b"]

    def __len__(self):
        return self.layers


def test_deepcopy_setattr_delattr_and_len_truth(torch):
    cfg = _Config()

    def make(lib):
        def fn(x):
            c = copy.deepcopy(cfg)
            c.names.append("c")
            setattr(c, "scale", 3)
            delattr(c, "layers")
            c.layers = 0
            total = 0  # `n += tensor` on a number
            total += x * c.scale * len(c.names)
            return total + (1 if c else 2), c
        return fn
    (mine, c), (theirs, tc), (eager, _) = _both(torch, make, X)
    np.testing.assert_allclose(_np(mine), theirs.numpy())
    np.testing.assert_allclose(_np(mine), _np(eager))
    assert type(c) is _Config and vars(c) == vars(tc) == {"names": ["a", "b", "c"], "scale": 3,
                                                          "layers": 0}
    assert cfg.names == ["a", "b"] and cfg.layers == 2  # the original is untouched
    cnt = CompileCounter()
    fn = ember.compile(make(ember), backend=cnt, fullgraph=True)
    fn(ember.tensor(X))
    cfg.layers = 5  # the copy is guarded on the original's state
    fn(ember.tensor(X))
    assert cnt.frame_count == 2


def test_sources_spelled_alike_get_distinct_inputs():
    class Net(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = ember.nn.ModuleList(ember.nn.Linear(2, 2) for _ in range(3))

        def forward(self, x):  # layers[1] and layers[-1]: both "layers_1" once sanitised
            return self.layers[-1](self.layers[1](x))
    net, x = Net(), ember.ones(1, 2)
    np.testing.assert_allclose(_np(ember.compile(net, fullgraph=True)(x)), _np(net(x)))


def test_a_compiled_optimizer_step_updates_the_optimizer_itself(torch):
    """ember.optim's code is traced into as PyTorch's Dynamo inlines torch.optim: called as one
    graph op, ``opt.step()`` ran on a copy of the optimizer the graph rebuilt, whose moments
    were lost at every call (a silently wrong trajectory). The compiled step now follows eager
    ember and PyTorch's compiled step, and the optimizer's state is the real one's."""
    def run(lib, compiled):
        lib.manual_seed(0)
        model = lib.nn.Sequential(lib.nn.Linear(6, 8), lib.nn.ReLU(), lib.nn.Linear(8, 2))
        opt = lib.optim.AdamW(model.parameters(), lr=1e-2)
        x = lib.randn(5, 6)

        def step():
            opt.step()
        if compiled:
            step = lib.compile(step, backend="eager")
        for _ in range(4):
            opt.zero_grad()
            model(x).square().mean().backward()
            step()
        assert all(opt.state[p]["step"] == 4 for p in model.parameters())
        return float(model(x).square().mean())
    eager = run(ember, False)
    assert run(ember, True) == pytest.approx(eager, rel=1e-6)
    assert eager == pytest.approx(run(torch, True), rel=1e-4)  # (its traced step rounds apart)


def test_a_growing_tensor_of_an_object_becomes_dynamic_as_an_input_would(torch):
    """A tensor read from an object's attribute (a KV cache's keys, growing by a row per
    decoding step) takes automatic dynamic shapes as any input: one static graph, then one
    dynamic graph for every later length, as PyTorch's (module attributes and buffers stay
    static, ``force_nn_module_property_static_shapes``). It recompiled for each length until
    the recompile limit, then ran eagerly."""
    def counts(lib, counter):
        class Cache:
            keys = None
        cache = Cache()

        def f(c, x):
            return (c.keys.sum(0) * x).sum()
        f = lib.compile(f, backend=counter)
        for n in range(2, 12):
            cache.keys = lib.ones(n, 2)
            assert float(f(cache, lib.ones(2))) == 2 * n
    mine = CompileCounter()
    counts(ember, mine)
    from torch._dynamo.testing import CompileCounter as TorchCounter
    theirs = TorchCounter()
    counts(torch, theirs)
    assert mine.frame_count == theirs.frame_count == 2


def test_an_inlined_closures_mutations_are_replayed():
    """A helper defined in a factory mutates objects held in its closure (a list, a dict): the
    compiled caller replays those mutations as eager code makes them, and a new helper with
    other cells guards its way to a fresh capture."""
    def make(scale):
        state = {"n": 0}
        hist = []

        def helper(x):
            state["n"] += 1
            hist.append(x.sum())
            return x * scale
        return helper, state, hist

    helper, state, hist = make(3.0)
    cnt = CompileCounter()

    @ember.compile(backend=cnt)
    def f(x):
        return helper(x) + 1

    for i in range(3):
        assert f(ember.ones(2) * i).tolist() == [3.0 * i + 1] * 2
    assert state == {"n": 3} and [h.item() for h in hist] == [0.0, 2.0, 4.0]
    helper, state, hist = make(5.0)
    assert f(ember.ones(2)).tolist() == [6.0, 6.0]
    assert state == {"n": 1} and [h.item() for h in hist] == [2.0]


def test_reset_makes_compiled_functions_capture_again(torch):
    """``_dynamo.reset()`` empties the caches that compiled functions already hold, as
    PyTorch's does: the next call captures again."""
    import torch._dynamo.testing
    counts = []
    for lib, counter in ((ember, CompileCounter()),
                         (torch, torch._dynamo.testing.CompileCounter())):
        f = lib.compile(lambda x: x + 1, backend=counter)
        f(lib.ones(2))
        f(lib.ones(2))
        lib._dynamo.reset()
        f(lib.ones(2))
        counts.append(counter.frame_count)
    assert counts == [2, 2]
