"""ember.compile through the Python that library code runs inside a forward (HuggingFace
transformers' models are the model case): objects created in captured code (plain classes,
dict subclasses such as ``ModelOutput``, with ``super()`` calls and custom ``__setattr__``),
dict-subclass registries, sliced ModuleLists, ``os.environ`` reads, logging, ``inspect.signature``,
loss modules built in ``forward``, classes computing their attributes, ``Sequence`` objects,
failed imports and ``is_exporting``. Each case runs with ``fullgraph=True`` (no graph break) and
is compared with eager ember and with PyTorch's ``torch.compile`` of the same code. Then programs
as users write them (configs, properties, ``super().forward``, module-tree walks, decorators,
container and ordering builtins, ``.grad`` reads), compared with PyTorch on outputs, gradients
and graph counts, and exceptions raised by a call that breaks the graph."""
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


# -- programs as users write them ---------------------------------------------------------------
# Each ``make(lib)`` returns (function, module or None). The function runs compiled in ember and
# in PyTorch (after the same seed, so modules hold the same weights) and eagerly in ember: the
# outputs, the gradients of the inputs and of the module's parameters (from the sum of the
# outputs), and the graph counts of ``explain`` must agree.

_R = np.random.RandomState(0).randn(4, 8).astype(np.float32)


@dataclasses.dataclass
class _BlockConfig:
    hidden: int = 8
    act: str = "gelu"
    scale: float = 0.5


def _prog_config_property_super(lib):
    nn = lib.nn

    class Base(nn.Module):
        def __init__(self, cfg):
            super().__init__()
            self.cfg = cfg
            self.fc = nn.Linear(cfg.hidden, cfg.hidden)

        @property
        def act(self):
            return getattr(nn.functional, self.cfg.act)

        def forward(self, x):
            return self.act(self.fc(x)) * self.cfg.scale

    class Block(Base):
        def forward(self, x):
            scale = getattr(self, "extra_scale", 2.0)
            return super().forward(x) + Base.forward(self, x * scale)
    m = Block(_BlockConfig())
    return m, m


def _prog_module_lists_and_walks(lib):
    nn = lib.nn

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([nn.Linear(8, 8) for _ in range(2)])
            self.norms = nn.ModuleList([nn.LayerNorm(8) for _ in range(2)])
            self.heads = nn.ModuleDict({"a": nn.Linear(8, 2), "b": nn.Linear(8, 2)})

        def forward(self, x):
            n_linear = sum(1 for _, m in self.named_modules() if isinstance(m, nn.Linear))
            decay = sum(p.pow(2).sum() for n, p in self.named_parameters() if "weight" in n)
            for i, (layer, norm) in enumerate(zip(self.layers, self.norms)):
                x = norm(layer(x)) + i
            outs = {k: head(x) * n_linear for k, head in self.heads.items()}
            return outs, decay * 1e-3, len(list(self.children()))
    m = M()
    return m, m


def _prog_no_grad_try_kwargs(lib):
    nn = lib.nn

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(8, 8)

        @lib.no_grad()
        def stats(self, x):
            return x.mean(), x.std()

        def forward(self, x, **kwargs):
            m, s = self.stats(x)
            with lib.no_grad():
                t = self.lin(x).detach() * 2
            try:
                y = self.lin(x)
            except RuntimeError:
                y = x
            scale = kwargs.get("scale", 1.0)
            bias = kwargs.pop("bias", None)
            y = y * scale
            return (x - m) / s + t + (y if bias is None else y + bias)
    m = M()
    return (lambda x: (m(x, scale=2.0), m(x, bias=x))), m


_Out = collections.namedtuple("_Out", ["logits", "loss"])


def _prog_namedtuple_and_shapes(lib):
    nn = lib.nn
    import math
    import operator

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(8, 8)

        def forward(self, x, target=None):
            b, n = x.shape
            *lead, last = x.size()
            h = int(math.sqrt(n)) * 2
            k = operator.mul(b, n) // math.gcd(b, n)
            y = self.lin(x).reshape(b, h, n // h) * k + math.floor(math.log2(last))
            y = y.view(lib.Size([b]) + (n,)) + x.new_zeros(x.size()[1:]) + len(lead)
            loss = nn.functional.mse_loss(y, target) if target is not None else None
            out = _Out(y, loss)
            return out._replace(logits=out.logits * 2)
    m = M()
    return (lambda x: m(x, x * 0.5)), m


def _prog_containers(lib):
    import functools
    import itertools
    import operator

    def tree_map(f, obj):
        if isinstance(obj, dict):
            return {k: tree_map(f, v) for k, v in obj.items()}
        if isinstance(obj, (list, tuple)):
            return type(obj)(tree_map(f, v) for v in obj)
        return f(obj)

    def fn(x, y):
        ts = [x, x * 2]
        ts.append(y + 1)
        ts.extend([x - 1, y / 2])
        last = ts.pop()
        ts.insert(1, last)
        del ts[0]
        ts *= 2
        d = {f"k{i}": t.sum(0) for i, t in enumerate(ts)}
        stats = {}
        stats.setdefault("m", []).append(x.mean())
        total = functools.reduce(operator.add, ts)
        pairs = [a * b for a, b in itertools.product([1, 2], [3])]
        mapped = tree_map(lambda t: t.relu(), {"a": x, "b": [y, (x, y)]})
        for v in (x, 3, None):
            if isinstance(v, (int, float)):
                total = total * v
            elif v is None:
                total = total - 1
        return d, total + sum(pairs), mapped, stats
    return fn, None


def _prog_early_return_and_generators(lib):
    def gen(ts):
        for t in ts:
            yield t * 2

    def fn(x, y):
        out = x * 0
        for t in gen([x, y]):
            out = out + t
        for i, t in enumerate([x, y, x * 2]):
            if i >= 2:
                return out, i
            out = out + t
        return out, -1
    return fn, None


def _prog_optimizer_reads_grads(lib):
    m = lib.nn.Linear(8, 8)
    m(lib.ones(2, 8)).sum().backward()

    def fn(x):
        norms = [p.grad.norm() for p in m.parameters() if p.grad is not None]
        return x * lib.stack(norms).norm()
    return fn, None


def _prog_ordering_builtins(lib):
    def fn(x, y):
        names = ["a", "bb", "c", "dd"]
        ts = {n: x * len(n) for n in names}
        order = sorted(ts.items(), key=lambda kv: len(kv[0]), reverse=True)
        rows = [y, x, y * 2]
        rows.sort(key=lambda t: t.shape[0])
        names.sort(key=len)
        pairs = list(zip(names, rows + [x], strict=True))
        return (ts[max(names, key=len)], ts[min(names, key=lambda n: -len(n))],
                [v for _, v in order], rows, names, sum([x, y], start=x * 0.5),
                max(len(n) for n in names), [p[1] for p in pairs])
    return fn, None


def _prog_dict_views(lib):
    def fn(x, y):
        d = {"a": x, "b": y * 2}
        items, keys, values = d.items(), d.keys(), d.values()
        first = [v for _, v in items]
        d["c"] = x + y  # a view sees later writes, and iterates again
        second = [v for _, v in items]
        return first, second, len(keys), "c" in keys, sum(values), list(keys)
    return fn, None


def _prog_forward_hooks(lib):
    nn = lib.nn
    model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 8))
    features = {}

    def keep(mod, args, out):  # a feature extractor's hook: the result is kept, and scaled
        features["first"] = out
        return out * 2

    model[0].register_forward_hook(keep)
    model[0].register_forward_pre_hook(lambda mod, args: (args[0] + 1,))
    model[2].register_forward_pre_hook(lambda mod, args, kwargs: (args, kwargs),
                                       with_kwargs=True)
    model[2].register_forward_hook(lambda mod, args, kwargs, out: None, with_kwargs=True)
    return (lambda x: (model(x), features["first"])), model


_PROGRAMS = {
    "dataclass config, property, super().forward, getattr default":
        (_prog_config_property_super, 1),
    "ModuleList zip, ModuleDict items, named_modules/named_parameters walks":
        (_prog_module_lists_and_walks, 1),
    "no_grad decorator and block, try/except, **kwargs get/pop":
        (_prog_no_grad_try_kwargs, 1),
    "namedtuple output, shape unpacking, math/operator, Size arithmetic":
        (_prog_namedtuple_and_shapes, 1),
    "list mutation, comprehensions, reduce, product, tree_map, isinstance tuples":
        (_prog_containers, 1),
    "generator helper, early return in a loop": (_prog_early_return_and_generators, 1),
    "parameters' .grad read": (_prog_optimizer_reads_grads, 1),
    "min/max/sorted/list.sort with key=, sum start=, zip strict=":
        (_prog_ordering_builtins, 1),
    "forward hooks and pre-hooks, with and without kwargs": (_prog_forward_hooks, 1),
    "dict views iterated twice, len and in": (_prog_dict_views, 1),
}


def _flat_values(r):
    if hasattr(r, "detach"):
        return [r]
    if isinstance(r, dict):
        return [v for k in r for v in _flat_values(r[k])]
    if isinstance(r, (list, tuple)):
        return [v for x in r for v in _flat_values(x)]
    return [r]


def _run_program(lib, make, compiled):
    lib.manual_seed(0)
    fn, mod = make(lib)
    args = [lib.tensor(_R, requires_grad=True), lib.tensor(_R[::-1].copy(), requires_grad=True)]
    args = args[:fn.__code__.co_argcount] if hasattr(fn, "__code__") else args[:1]
    if compiled:
        fn = lib.compile(fn, backend="eager")
    values = _flat_values(fn(*args))
    tensors = [v for v in values if hasattr(v, "detach") and v.requires_grad]
    if tensors:
        sum(t.sum() for t in tensors).backward()
    grads = [a.grad for a in args] + [p.grad for p in (mod.parameters() if mod else ())]
    return ([v.detach().numpy() if hasattr(v, "detach") else v for v in values],
            [None if g is None else g.numpy() for g in grads])


@pytest.mark.parametrize("name", list(_PROGRAMS))
def test_user_programs_match_pytorch(torch, name):
    make, graphs = _PROGRAMS[name]
    mine, theirs, eager = (_run_program(ember, make, True), _run_program(torch, make, True),
                           _run_program(ember, make, False))
    for other in (theirs, eager):
        assert len(mine[0]) == len(other[0]) and len(mine[1]) == len(other[1])
        for a, b in zip(mine[0] + mine[1], other[0] + other[1]):
            if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
                np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
            else:
                assert a == b
    counts = []
    for lib in (ember, torch):
        lib._dynamo.reset()
        lib.manual_seed(0)
        fn, _ = make(lib)
        n = fn.__code__.co_argcount if hasattr(fn, "__code__") else 1
        counts.append(lib._dynamo.explain(fn)(*[lib.tensor(_R)] * n).graph_count)
    assert counts == [graphs, graphs]


def test_an_exception_from_a_broken_call(torch):
    """A call that breaks the graph runs in residual code. Raising there inside a ``with
    no_grad()`` block leaves the block (grad mode restored) as eager does; inside a try
    block the frame runs eagerly, as PyTorch's (its handler could not take the exception from
    residual code), and the handler runs."""
    def make(lib):
        @lib._dynamo.disable
        def check(x):
            if x.sum() > 100:
                raise ValueError("too large")
            return x

        def in_block(x):
            with lib.no_grad():
                y = check(x * 2)
            return y + 1

        def in_try(x):
            y = x + 1
            try:
                with lib.no_grad():
                    y = check(y)
            except ValueError:
                y = y - 10
            return y * 2
        return in_block, in_try

    in_block, in_try = make(ember)
    compiled = ember.compile(in_block, backend="eager")
    assert compiled(ember.ones(2)).tolist() == [3.0, 3.0]
    with pytest.raises(ValueError, match="too large"):
        compiled(ember.ones(200))
    assert ember.is_grad_enabled()
    for lib in (ember, torch):
        lib._dynamo.reset()
        _, fn = make(lib)
        for n in (2, 200):
            assert lib.compile(fn, backend="eager")(lib.ones(n)).tolist() == \
                fn(lib.ones(n)).tolist()
        lib._dynamo.reset()
        assert lib._dynamo.explain(fn)(lib.ones(200)).graph_count == 0
