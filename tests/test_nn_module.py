"""nn.Module behaviour against PyTorch: registration, iterators, state_dict, hooks, repr,
conversion, containers, init, and models built in both frameworks with copied weights."""
import copy
import math
from collections import OrderedDict

import numpy as np
import pytest

import ember
import ember.nn as nn
from helpers import to_np

F = nn.functional


def needs(*names):
    """Skip when an op other helpers are adding is not there yet."""
    missing = [n for n in names if not (hasattr(ember, n) or hasattr(F, n)
                                        or hasattr(ember.Tensor, n))]
    return pytest.mark.skipif(bool(missing), reason=f"missing ops: {missing}")


def copy_weights(em, tm):
    """Copy every parameter and buffer of the PyTorch module ``tm`` into ``em`` (via numpy)."""
    import torch
    tsd = tm.state_dict()
    esd = OrderedDict((k, ember.tensor(v.numpy())) for k, v in tsd.items())
    em.load_state_dict(esd)
    assert list(em.state_dict().keys()) == list(tsd.keys())
    return torch


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(8, 3, bias=False)
        self.register_buffer("scale", ember.ones(3))
        self.register_buffer("tmp", ember.zeros(2), persistent=False)

    def forward(self, x):
        return self.fc2(ember.tanh(self.fc1(x))) * self.scale


def torch_net(torch):
    class TNet(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = torch.nn.Linear(4, 8)
            self.act = torch.nn.ReLU()
            self.fc2 = torch.nn.Linear(8, 3, bias=False)
            self.register_buffer("scale", torch.ones(3))
            self.register_buffer("tmp", torch.zeros(2), persistent=False)

        def forward(self, x):
            return self.fc2(torch.tanh(self.fc1(x))) * self.scale
    return TNet()


# -- registration and iteration ----------------------------------------------------------------

def test_registration_and_iterators_match_torch(torch):
    e, t = Net(), torch_net(torch)
    assert [n for n, _ in e.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert [n for n, _ in e.named_buffers()] == [n for n, _ in t.named_buffers()]
    assert [n for n, _ in e.named_modules()] == [n for n, _ in t.named_modules()]
    assert [n for n, _ in e.named_children()] == [n for n, _ in t.named_children()]
    assert list(e.state_dict().keys()) == list(t.state_dict().keys())
    assert e.state_dict()._metadata == t.state_dict()._metadata
    assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in e.parameters())
    assert [n for n, _ in e.named_parameters(prefix="m", recurse=False)] == \
        [n for n, _ in t.named_parameters(prefix="m", recurse=False)]


def test_shared_parameters_are_deduplicated(torch):
    e = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2))
    e[1].weight = e[0].weight
    t = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Linear(2, 2))
    t[1].weight = t[0].weight
    assert [n for n, _ in e.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert len(list(e.named_parameters(remove_duplicate=False))) == \
        len(list(t.named_parameters(remove_duplicate=False)))


@pytest.mark.parametrize("case", ["dot", "empty", "exists", "badtype_param", "badtype_buffer",
                                  "badmodule", "assign_tensor_to_param"])
def test_registration_errors_match_torch(torch, case):
    def run(lib, M):
        m = M.Linear(2, 2)
        if case == "dot":
            m.register_parameter("a.b", None)
        elif case == "empty":
            m.register_buffer("", None)
        elif case == "exists":
            m.register_buffer("weight", lib.ones(1))
        elif case == "badtype_param":
            m.register_parameter("p", lib.ones(1))
        elif case == "badtype_buffer":
            m.register_buffer("b", 3)
        elif case == "badmodule":
            m.add_module("x", 3)
        elif case == "assign_tensor_to_param":
            m.weight = lib.ones(2, 2)
    with pytest.raises(Exception) as te:
        run(torch, torch.nn)
    with pytest.raises(type(te.value)) as ee:
        run(ember, nn)
    def norm(e):
        return str(e).replace("torch.", "").replace("ember.", "").replace("Tensor", "")
    assert norm(ee.value) == norm(te.value)


def test_setattr_routing_and_delattr():
    m = nn.Module()
    m.p = nn.Parameter(ember.ones(2))
    m.sub = nn.Linear(1, 1)
    m.register_buffer("b", ember.zeros(1))
    assert "p" in m._parameters and "sub" in m._modules and "b" in m._buffers
    m.b = ember.ones(1)  # reassigning a buffer keeps it a buffer
    assert "b" in m._buffers
    m.p = None
    assert m._parameters["p"] is None
    del m.sub
    assert "sub" not in m._modules
    with pytest.raises(AttributeError, match="'Module' object has no attribute 'zzz'"):
        m.zzz


def test_get_submodule_parameter_buffer(torch):
    e, t = Net(), torch_net(torch)
    assert e.get_submodule("fc1") is e.fc1
    assert e.get_parameter("fc1.weight") is e.fc1.weight
    assert e.get_buffer("scale") is e.scale
    for fn, arg in [("get_submodule", "nope"), ("get_parameter", "fc1.nope"),
                    ("get_buffer", "fc1.weight")]:
        with pytest.raises(AttributeError) as te:
            getattr(t, fn)(arg)
        with pytest.raises(AttributeError) as ee:
            getattr(e, fn)(arg)
        assert str(ee.value) == str(te.value).replace("TNet", "Net")


# -- state dict --------------------------------------------------------------------------------

def test_state_dict_round_trip_and_strict_errors(torch):
    e, t = Net(), torch_net(torch)
    copy_weights(e, t)
    sd = e.state_dict()
    assert not sd["fc1.weight"].requires_grad and sd["fc1.weight"].grad_fn is None
    e2 = Net()
    result = e2.load_state_dict(sd)
    assert repr(result) == "<All keys matched successfully>"
    np.testing.assert_array_equal(to_np(e2.fc1.weight), to_np(e.fc1.weight))

    bad_t = t.state_dict()
    del bad_t["fc1.bias"]
    bad_t["extra"] = torch.ones(1)
    bad_e = OrderedDict((k, ember.tensor(v.numpy())) for k, v in bad_t.items())
    with pytest.raises(RuntimeError) as te:
        torch_net(torch).load_state_dict(bad_t)
    with pytest.raises(RuntimeError) as ee:
        Net().load_state_dict(bad_e)
    assert str(ee.value).replace("Net", "X") == str(te.value).replace("TNet", "X")
    r_t = torch_net(torch).load_state_dict(bad_t, strict=False)
    r_e = Net().load_state_dict(bad_e, strict=False)
    assert r_e.missing_keys == r_t.missing_keys and r_e.unexpected_keys == r_t.unexpected_keys


def test_load_state_dict_size_mismatch_message(torch):
    with pytest.raises(RuntimeError) as te:
        torch.nn.Linear(2, 3).load_state_dict({"weight": torch.ones(3, 3), "bias": torch.ones(3)})
    with pytest.raises(RuntimeError) as ee:
        nn.Linear(2, 3).load_state_dict({"weight": ember.ones(3, 3), "bias": ember.ones(3)})
    assert str(ee.value).replace("ember", "torch") == str(te.value)


def test_load_state_dict_assign_keeps_tensor_identity_and_requires_grad():
    m = nn.Linear(2, 2)
    w = ember.ones(2, 2)
    m.load_state_dict({"weight": w, "bias": ember.zeros(2)}, assign=True)
    assert isinstance(m.weight, nn.Parameter) and m.weight.requires_grad
    w.add_(1)  # the parameter shares w's storage
    assert to_np(m.weight)[0, 0] == 2.0


def test_state_dict_hooks_and_extra_state():
    class WithExtra(nn.Module):
        def __init__(self):
            super().__init__()
            self.value = 1

        def get_extra_state(self):
            return {"value": self.value}

        def set_extra_state(self, state):
            self.value = state["value"]

    m = WithExtra()
    m.value = 7
    sd = m.state_dict()
    assert sd["_extra_state"] == {"value": 7}
    m2 = WithExtra()
    m2.load_state_dict(sd)
    assert m2.value == 7
    seen = []
    m2.register_load_state_dict_post_hook(lambda mod, keys: seen.append(keys))
    m2.register_state_dict_pre_hook(lambda mod, prefix, keep_vars: seen.append(prefix))
    m2.state_dict()
    m2.load_state_dict(sd)
    assert seen[0] == "" and len(seen) == 2


# -- modes, grads, conversion ------------------------------------------------------------------

def test_train_eval_requires_grad_zero_grad():
    m = Net()
    assert m.training and m.fc1.training
    m.eval()
    assert not m.training and not m.fc1.training
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        m.train(1)
    m.requires_grad_(False)
    assert not any(p.requires_grad for p in m.parameters())
    m.requires_grad_(True)
    out = m(ember.ones(2, 4)).sum()
    out.backward()
    assert m.fc1.weight.grad is not None
    m.zero_grad(set_to_none=False)
    assert float(m.fc1.weight.grad.abs().sum()) == 0.0
    m.zero_grad()
    assert m.fc1.weight.grad is None


def test_to_and_dtype_conversion_keep_parameter_identity(torch):
    m = Net()
    w = m.fc1.weight
    m.double()
    assert m.fc1.weight is w and w.dtype == ember.float64 and m.scale.dtype == ember.float64
    m.to(ember.float32)
    assert w.dtype == ember.float32
    m.half()
    assert w.dtype == ember.float16
    m.float()
    with pytest.raises(TypeError) as te:
        torch.nn.Linear(1, 1).to(torch.int32)
    with pytest.raises(TypeError) as ee:
        m.to(ember.int32)
    assert str(ee.value).replace("ember", "torch") == str(te.value)
    m.to("cpu")
    m.cpu()
    assert m.fc1.weight.device.type == "cpu"


def test_apply_and_deepcopy():
    m = Net()
    names = []
    m.apply(lambda mod: names.append(type(mod).__name__))
    assert names == ["Linear", "ReLU", "Linear", "Net"]
    m2 = copy.deepcopy(m)
    assert m2.fc1.weight is not m.fc1.weight and isinstance(m2.fc1.weight, nn.Parameter)
    np.testing.assert_array_equal(to_np(m2.fc1.weight), to_np(m.fc1.weight))


# -- hooks -------------------------------------------------------------------------------------

def test_forward_pre_and_post_hooks():
    m = nn.Linear(2, 2)
    calls = []
    h1 = m.register_forward_pre_hook(lambda mod, args: (args[0] * 0,))
    h2 = m.register_forward_hook(lambda mod, args, out: calls.append(out) or out + 1)
    y = m(ember.ones(1, 2))
    np.testing.assert_allclose(to_np(y), to_np(m.bias.detach()).reshape(1, 2) + 1, rtol=1e-6)
    h1.remove()
    h2.remove()
    assert len(calls) == 1
    m(ember.ones(1, 2))
    assert len(calls) == 1
    kw = []
    m.register_forward_pre_hook(lambda mod, args, kwargs: kw.append(kwargs), with_kwargs=True)
    m(ember.ones(1, 2))
    assert kw == [{}]


def test_forward_hook_always_call_runs_on_error():
    class Boom(nn.Module):
        def forward(self, x):
            raise ValueError("boom")
    m = Boom()
    seen = []
    m.register_forward_hook(lambda mod, args, out: seen.append(out), always_call=True)
    with pytest.raises(ValueError):
        m(ember.ones(1))
    assert seen == [None]


def test_full_backward_hooks_match_torch(torch):
    e = nn.Linear(3, 2)
    t = torch.nn.Linear(3, 2)
    copy_weights(e, t)
    got = {}

    def record(lib):
        def hook(mod, grad_input, grad_output):
            got[lib] = ([None if g is None else to_np(g) for g in grad_input],
                        [to_np(g) for g in grad_output])
            return (grad_input[0] * 2,)
        return hook

    def pre(mod, grad_output):
        return (grad_output[0] * 3,)

    xe = ember.tensor(np.arange(6, dtype=np.float32).reshape(2, 3), requires_grad=True)
    xt = torch.tensor(np.arange(6, dtype=np.float32).reshape(2, 3), requires_grad=True)
    e.register_full_backward_pre_hook(pre)
    t.register_full_backward_pre_hook(pre)
    e.register_full_backward_hook(record("e"))
    t.register_full_backward_hook(record("t"))
    e(xe).sum().backward()
    t(xt).sum().backward()
    # float32 products: the libraries' BLAS round differently (one ulp seen, now and then)
    np.testing.assert_allclose(got["e"][0][0], got["t"][0][0].numpy() if hasattr(
        got["t"][0][0], "numpy") else got["t"][0][0], rtol=1e-5)
    np.testing.assert_allclose(to_np(xe.grad), xt.grad.numpy(), rtol=1e-5)
    np.testing.assert_allclose(to_np(e.weight.grad), t.weight.grad.numpy(), rtol=1e-5)


# -- repr --------------------------------------------------------------------------------------

def test_repr_matches_torch(torch):
    def build(M):
        return M.Sequential(OrderedDict([
            ("lin", M.Linear(3, 4)), ("act", M.ReLU(inplace=True)),
            ("blocks", M.ModuleList([M.Linear(4, 4) for _ in range(3)] + [M.Identity()])),
            ("d", M.ModuleDict({"a": M.Tanh(), "b": M.Flatten()})),
            ("conv", M.Conv2d(3, 8, 3, stride=2, padding=1, bias=False)),
            ("bn", M.BatchNorm2d(8)), ("ln", M.LayerNorm([4, 4])), ("drop", M.Dropout(0.2)),
            ("emb", M.Embedding(10, 3, padding_idx=0)), ("pool", M.MaxPool2d(2)),
            ("gelu", M.GELU("tanh")), ("sm", M.Softmax(dim=1)), ("loss", M.CrossEntropyLoss()),
            ("unf", M.Unflatten(1, (2, 2))), ("lrelu", M.LeakyReLU(0.2)),
            ("gn", M.GroupNorm(2, 4)), ("up", M.Upsample(scale_factor=2, mode="bilinear")),
            ("ct", M.ConvTranspose1d(2, 3, 3, output_padding=1, stride=2)),
            ("pad", M.ReflectionPad2d(1)), ("mha", M.MultiheadAttention(8, 2)),
            ("bil", M.Bilinear(2, 3, 4)), ("plist", M.ParameterList([M.Parameter(
                ember.ones(2) if M is nn else torch.ones(2))]))]))
    assert repr(build(nn)) == repr(build(torch.nn)).replace("torch.", "ember.")


# -- containers --------------------------------------------------------------------------------

def test_sequential_and_module_list_operations(torch):
    for M, in [(nn,), (torch.nn,)]:
        s = M.Sequential(M.ReLU(), M.Tanh(), M.Sigmoid())
        assert isinstance(s[1], M.Tanh) and isinstance(s[-1], M.Sigmoid)
        assert len(s[0:2]) == 2 and type(s[0:2]) is M.Sequential
        del s[0]
        assert list(s._modules.keys()) == ["0", "1"]
        s.append(M.ReLU()).insert(0, M.Identity())
        assert [type(x).__name__ for x in s] == ["Identity", "Tanh", "Sigmoid", "ReLU"]
        assert len(s + s) == 8 and len(s * 2) == 8
        with pytest.raises(IndexError, match="index 10 is out of range"):
            s[10]
        ml = M.ModuleList([M.ReLU()])
        ml += [M.Tanh()]
        ml.extend([M.Sigmoid()])
        assert len(ml) == 3 and isinstance(ml.pop(1), M.Tanh) and len(ml) == 2
        md = M.ModuleDict({"b": M.ReLU(), "a": M.Tanh()})
        assert list(md.keys()) == ["b", "a"] and "a" in md
        pd = M.ParameterDict({"x": ember.ones(1) if M is nn else torch.ones(1)})
        assert isinstance(pd["x"], M.Parameter)


def test_parameter_list_and_dict_register_parameters():
    pl = nn.ParameterList([ember.ones(2), nn.Parameter(ember.zeros(3))])
    assert [n for n, _ in pl.named_parameters()] == ["0", "1"]
    assert all(isinstance(p, nn.Parameter) for p in pl)
    pd = nn.ParameterDict({"b": ember.ones(1), "a": ember.ones(2)})
    assert [n for n, _ in pd.named_parameters()] == ["a", "b"]  # plain dicts are sorted
    with pytest.raises(RuntimeError, match="ParameterList should not be called."):
        pl()


# -- parameters, lazy modules -------------------------------------------------------------------

def test_parameter_behaviour():
    t = ember.ones(2)
    p = nn.Parameter(t)
    assert p.requires_grad and isinstance(p, ember.Tensor)
    p.data.add_(1)
    assert to_np(t)[0] == 2.0  # shares storage
    assert repr(p).startswith("Parameter containing:\ntensor(")
    assert not nn.Parameter(ember.ones(1), requires_grad=False).requires_grad
    assert (p * 2).__class__ is ember.Tensor


def test_lazy_linear_materializes_on_first_call():
    m = nn.LazyLinear(3)
    assert isinstance(m.weight, nn.UninitializedParameter)
    assert repr(m.weight) == "<UninitializedParameter>"
    with pytest.raises(RuntimeError, match="Can't access the shape of an uninitialized"):
        m.weight.shape
    y = m(ember.ones(2, 5))
    assert type(m) is nn.Linear and tuple(m.weight.shape) == (3, 5) and tuple(y.shape) == (2, 3)
    assert m.in_features == 5


def test_lazy_linear_from_state_dict():
    src = nn.Linear(4, 2)
    m = nn.LazyLinear(2)
    m.load_state_dict(src.state_dict())
    np.testing.assert_array_equal(to_np(m.weight), to_np(src.weight))


# -- init --------------------------------------------------------------------------------------

def test_init_fans_gains_and_bounds(torch):
    for nl, p in [("relu", None), ("tanh", None), ("leaky_relu", 0.2), ("selu", None),
                  ("conv2d", None), ("sigmoid", None)]:
        assert nn.init.calculate_gain(nl, p) == torch.nn.init.calculate_gain(nl, p)
    w = ember.empty(64, 32, 3, 3)
    assert nn.init._calculate_fan_in_and_fan_out(w) == \
        torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(64, 32, 3, 3))
    ember.manual_seed(0)
    nn.init.kaiming_uniform_(w, a=math.sqrt(5))
    bound = 1 / math.sqrt(32 * 9)
    a = to_np(w)
    assert a.min() >= -bound and a.max() <= bound and a.std() > bound / 3
    nn.init.xavier_normal_(w)
    assert abs(to_np(w).std() - math.sqrt(2.0 / (32 * 9 + 64 * 9))) < 0.01
    nn.init.constant_(w, 0.5)
    assert (to_np(w) == 0.5).all()
    nn.init.zeros_(w)
    assert (to_np(w) == 0).all()
    with pytest.raises(ValueError, match="Fan in and fan out can not be computed"):
        nn.init.xavier_uniform_(ember.empty(3))


def test_init_generator_reproducible():
    g = ember.Generator().manual_seed(3)
    a = nn.init.normal_(ember.empty(5), generator=g)
    g.manual_seed(3)
    b = nn.init.normal_(ember.empty(5), generator=g)
    np.testing.assert_array_equal(to_np(a), to_np(b))


def test_linear_default_init_distribution():
    ember.manual_seed(1)
    m = nn.Linear(100, 50)
    bound = 1 / math.sqrt(100)
    w, b = to_np(m.weight), to_np(m.bias)
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    assert np.abs(w).max() > 0.9 * bound


# -- models against PyTorch --------------------------------------------------------------------

def test_mlp_forward_and_gradients_match_torch(torch):
    e, t = Net(), torch_net(torch)
    copy_weights(e, t)
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    ye = e(ember.tensor(x))
    yt = t(torch.tensor(x))
    np.testing.assert_allclose(to_np(ye.detach()), yt.detach().numpy(), rtol=1e-5, atol=1e-6)
    (ye * ye).sum().backward()
    (yt * yt).sum().backward()
    for (n, pe), (_, pt) in zip(e.named_parameters(), t.named_parameters()):
        np.testing.assert_allclose(to_np(pe.grad), pt.grad.numpy(), rtol=1e-5, atol=1e-6,
                                   err_msg=n)


def test_flatten_identity_unflatten(torch):
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    for em, tm in [(nn.Flatten(), torch.nn.Flatten()), (nn.Flatten(0, 1), torch.nn.Flatten(0, 1)),
                   (nn.Identity(3, k=1), torch.nn.Identity(3, k=1)),
                   (nn.Unflatten(2, (2, 2)), torch.nn.Unflatten(2, (2, 2)))]:
        ye, yt = em(ember.tensor(x)), tm(torch.tensor(x))
        assert tuple(ye.shape) == tuple(yt.shape)
        np.testing.assert_array_equal(to_np(ye), yt.numpy())


@pytest.mark.parametrize("name", ["ReLU", "Sigmoid", "Tanh"])
def test_activation_modules_match_torch(torch, name):
    if not hasattr(F, name.lower()):
        pytest.skip(f"missing ops: F.{name.lower()}")
    x = np.linspace(-3, 3, 12, dtype=np.float32).reshape(3, 4)
    ye = getattr(nn, name)()(ember.tensor(x))
    yt = getattr(torch.nn, name)()(torch.tensor(x))
    np.testing.assert_allclose(to_np(ye), yt.numpy(), rtol=1e-6, atol=1e-7)


LAYERS = [
    ("Conv2d", (3, 4, 3), dict(padding=1), (2, 3, 6, 6), "conv2d"),
    ("Conv1d", (2, 3, 3), dict(stride=2), (2, 2, 9), "conv1d"),
    ("BatchNorm1d", (4,), {}, (5, 4), "batch_norm"),
    ("LayerNorm", (4,), {}, (3, 4), "layer_norm"),
    ("GroupNorm", (2, 4), {}, (2, 4, 3), "group_norm"),
    ("Embedding", (10, 3), {}, None, "embedding"),
    ("MaxPool2d", (2,), {}, (1, 2, 4, 4), "max_pool2d"),
    ("AvgPool2d", (2,), {}, (1, 2, 4, 4), "avg_pool2d"),
    ("Softmax", (), dict(dim=1), (2, 5), "softmax"),
    ("LogSoftmax", (), dict(dim=1), (2, 5), "log_softmax"),
    ("GELU", (), {}, (2, 5), "gelu"),
]


@pytest.mark.parametrize("name,args,kwargs,shape,fn", LAYERS, ids=[r[0] for r in LAYERS])
def test_layers_match_torch(torch, name, args, kwargs, shape, fn):
    if not hasattr(F, fn):
        pytest.skip(f"missing ops: F.{fn}")
    tm = getattr(torch.nn, name)(*args, **kwargs)
    em = getattr(nn, name)(*args, **kwargs)
    copy_weights(em, tm)
    if shape is None:
        x = np.array([[1, 2, 4], [4, 3, 9]])
    else:
        x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    ye, yt = em(ember.tensor(x)), tm(torch.tensor(x))
    np.testing.assert_allclose(to_np(ye.detach()), yt.detach().numpy(), rtol=1e-4, atol=1e-5)
    for k, v in tm.state_dict().items():  # running stats updated the same way
        np.testing.assert_allclose(to_np(em.state_dict()[k]), v.numpy(), rtol=1e-5, atol=1e-6)


def test_loss_modules_match_torch(torch):
    x = np.random.default_rng(2).standard_normal((4, 3)).astype(np.float32)
    y = np.random.default_rng(3).standard_normal((4, 3)).astype(np.float32)
    for name in ["MSELoss", "L1Loss"]:
        fn = {"MSELoss": "mse_loss", "L1Loss": "l1_loss"}[name]
        if not hasattr(F, fn):
            continue
        for red in ["mean", "sum", "none"]:
            le = getattr(nn, name)(reduction=red)(ember.tensor(x), ember.tensor(y))
            lt = getattr(torch.nn, name)(reduction=red)(torch.tensor(x), torch.tensor(y))
            np.testing.assert_allclose(to_np(le), lt.numpy(), rtol=1e-5)
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
        assert nn.MSELoss(size_average=False).reduction == "sum"


# -- recurrent and transformer layers, nn.utils ---------------------------------------------------

RNNS = [("LSTM", dict(num_layers=2, bidirectional=True, batch_first=True)),
        ("GRU", dict(num_layers=2)), ("RNN", dict(nonlinearity="relu", bias=False)),
        ("LSTM", dict(proj_size=2))]


@pytest.mark.parametrize("name,kw", RNNS, ids=[r[0] for r in RNNS])
@needs("stack", "cat", "chunk", "unbind")
def test_recurrent_layers_match_torch(torch, name, kw):
    import warnings
    t = getattr(torch.nn, name)(3, 4, **kw)
    e = getattr(nn, name)(3, 4, **kw)
    copy_weights(e, t)
    assert repr(e) == repr(t)
    x = np.random.default_rng(0).standard_normal((2, 5, 3)).astype(np.float32)
    xe = ember.tensor(x, requires_grad=True)
    xt = torch.tensor(x, requires_grad=True)
    ye, _ = e(xe)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yt, _ = t(xt)
    np.testing.assert_allclose(to_np(ye.detach()), yt.detach().numpy(), rtol=1e-4, atol=1e-5)
    ye.sum().backward()
    yt.sum().backward()
    np.testing.assert_allclose(to_np(xe.grad), xt.grad.numpy(), rtol=1e-4, atol=1e-5)
    for (n, pe), (_, pt) in zip(e.named_parameters(), t.named_parameters()):
        np.testing.assert_allclose(to_np(pe.grad), pt.grad.numpy(), rtol=1e-4, atol=1e-5,
                                   err_msg=n)


@needs("stack", "chunk")
def test_recurrent_cells_match_torch(torch):
    x = np.random.default_rng(1).standard_normal((3, 2)).astype(np.float32)
    for name in ("RNNCell", "LSTMCell", "GRUCell"):
        t = getattr(torch.nn, name)(2, 4)
        e = getattr(nn, name)(2, 4)
        copy_weights(e, t)
        ye, yt = e(ember.tensor(x)), t(torch.tensor(x))
        ye = ye[0] if isinstance(ye, tuple) else ye
        yt = yt[0] if isinstance(yt, tuple) else yt
        np.testing.assert_allclose(to_np(ye.detach()), yt.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)


@needs("multi_head_attention_forward", "layer_norm", "relu", "triu")
def test_transformer_matches_torch(torch):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = torch.nn.Transformer(8, 2, 1, 1, 16, dropout=0.0)
    e = nn.Transformer(8, 2, 1, 1, 16, dropout=0.0)
    copy_weights(e, t)
    assert repr(e) == repr(t)
    src = np.random.default_rng(0).standard_normal((5, 2, 8)).astype(np.float32)
    tgt = np.random.default_rng(1).standard_normal((3, 2, 8)).astype(np.float32)
    ye = e(ember.tensor(src), ember.tensor(tgt),
           tgt_mask=nn.Transformer.generate_square_subsequent_mask(3))
    yt = t(torch.tensor(src), torch.tensor(tgt),
           tgt_mask=torch.nn.Transformer.generate_square_subsequent_mask(3))
    np.testing.assert_allclose(to_np(ye.detach()), yt.detach().numpy(), rtol=1e-4, atol=1e-5)


@needs("stack", "clamp")
def test_clip_grad_matches_torch(torch):
    for norm_type in (2.0, 1.0, float("inf")):
        e, t = Net(), torch_net(torch)
        copy_weights(e, t)
        x = np.ones((2, 4), np.float32)
        (e(ember.tensor(x)) * 10).sum().backward()
        (t(torch.tensor(x)) * 10).sum().backward()
        ne = nn.utils.clip_grad_norm_(e.parameters(), 0.5, norm_type=norm_type)
        nt = torch.nn.utils.clip_grad_norm_(t.parameters(), 0.5, norm_type=norm_type)
        assert float(ne) == pytest.approx(float(nt), rel=1e-5)
        for pe, pt in zip(e.parameters(), t.parameters()):
            np.testing.assert_allclose(to_np(pe.grad), pt.grad.numpy(), rtol=1e-5, atol=1e-6)
    nn.utils.clip_grad_value_(e.parameters(), 1e-3)
    torch.nn.utils.clip_grad_value_(t.parameters(), 1e-3)
    for pe, pt in zip(e.parameters(), t.parameters()):
        # the clamped values are exact; the others carry the gradients' float32 rounding
        # (products summed in another order), as compared above
        np.testing.assert_allclose(to_np(pe.grad), pt.grad.numpy(), rtol=1e-5, atol=1e-8)


@needs("cat")
def test_parameters_vector_round_trip():
    m = Net()
    vec = nn.utils.parameters_to_vector(m.parameters())
    assert tuple(vec.shape) == (sum(p.numel() for p in m.parameters()),)
    nn.utils.vector_to_parameters(vec * 0 + 1, m.parameters())
    assert all((to_np(p) == 1).all() for p in m.parameters())
    with pytest.raises(TypeError, match="expected torch.Tensor, but got: list"):
        nn.utils.vector_to_parameters([1], m.parameters())


def test_weight_norm_parametrization_matches_torch(torch):
    t, e = torch.nn.Linear(4, 3), nn.Linear(4, 3)
    copy_weights(e, t)
    torch.nn.utils.parametrizations.weight_norm(t)
    nn.utils.parametrizations.weight_norm(e)
    assert list(e.state_dict().keys()) == list(t.state_dict().keys())
    assert type(e).__name__ == type(t).__name__ == "ParametrizedLinear"
    np.testing.assert_allclose(to_np(e.weight.detach()), t.weight.detach().numpy(), rtol=1e-6)
    x = np.ones((2, 4), np.float32)
    e(ember.tensor(x)).sum().backward()
    t(torch.tensor(x)).sum().backward()
    for (n, pe), (_, pt) in zip(e.named_parameters(), t.named_parameters()):
        np.testing.assert_allclose(to_np(pe.grad), pt.grad.numpy(), rtol=1e-5, atol=1e-6, err_msg=n)
    nn.utils.parametrize.remove_parametrizations(e, "weight")
    torch.nn.utils.parametrize.remove_parametrizations(t, "weight")
    assert type(e) is nn.Linear and list(e.state_dict().keys()) == list(t.state_dict().keys())
    np.testing.assert_allclose(to_np(e.weight), t.weight.detach().numpy(), rtol=1e-6)


@needs("mv", "dot")
def test_spectral_norm_normalizes_largest_singular_value():
    ember.manual_seed(0)
    m = nn.utils.parametrizations.spectral_norm(nn.Linear(6, 5))
    for _ in range(20):
        m(ember.ones(1, 6))
    s = np.linalg.svd(to_np(m.weight.detach()), compute_uv=False)
    assert abs(s[0] - 1.0) < 1e-3
    assert "parametrizations.weight.original" in m.state_dict()
    assert "parametrizations.weight.0._u" in m.state_dict()


def test_data_parallel_without_cuda_calls_the_module():
    """Without a CUDA device DataParallel is the module itself (PyTorch's: no device ids)."""
    if ember.cuda.is_available():
        pytest.skip("a CUDA device is here")
    m = ember.nn.Linear(3, 2)
    dp = ember.nn.DataParallel(m)
    x = ember.randn(4, 3)
    assert dp.device_ids == [] and ember.equal(dp(x), m(x))
    assert ember.equal(ember.nn.parallel.data_parallel(m, x), m(x))
    assert list(dp.state_dict()) == ["module.weight", "module.bias"]
