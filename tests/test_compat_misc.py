"""Small PyTorch APIs against PyTorch: conv/linear-BatchNorm fusion, skip_init, the deprecated
stateless.functional_call, Tensor.storage() (TypedStorage), apply_/map_, the torch.xpu,
torch.mtia and torch.mps modules of a build without those devices, and torch.nn.attention after
the top-level import."""
import warnings

import numpy as np
import pytest

import ember
from helpers import from_np


def _copy_params(src, dst, torch):
    with torch.no_grad():
        for (n, p), (_, q) in zip(src.named_parameters(), dst.named_parameters()):
            q.copy_(torch.tensor(p.detach().numpy()))
        for (n, b), (_, c) in zip(src.named_buffers(), dst.named_buffers()):
            c.copy_(torch.tensor(b.detach().numpy()))


@pytest.mark.parametrize("kind", ["conv", "conv_transpose", "linear"])
def test_batchnorm_fusion_matches_pytorch(torch, kind):
    rng = np.random.default_rng(0)
    mods = []
    for lib in (ember, torch):
        nn = lib.nn
        if kind == "conv":
            layer, bn = nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4)
        elif kind == "conv_transpose":
            layer, bn = nn.ConvTranspose2d(3, 4, 3), nn.BatchNorm2d(4)
        else:
            layer, bn = nn.Linear(5, 4), nn.BatchNorm1d(4)
        mods.append((layer, bn))
    (el, eb), (tl, tb) = mods
    with ember.no_grad():
        for p in list(el.parameters()) + list(eb.parameters()):
            p.copy_(from_np(rng.standard_normal(tuple(p.shape)).astype(np.float32)))
        eb.running_mean.copy_(from_np(rng.standard_normal(4).astype(np.float32)))
        eb.running_var.copy_(from_np(rng.random(4).astype(np.float32) + 0.5))
    _copy_params(el, tl, torch)
    _copy_params(eb, tb, torch)
    for m in (el, eb, tl, tb):
        m.eval()
    if kind == "linear":
        ef = ember.nn.utils.fuse_linear_bn_eval(el, eb)
        tf = torch.nn.utils.fuse_linear_bn_eval(tl, tb)
        x = rng.standard_normal((2, 5)).astype(np.float32)
    else:
        t = kind == "conv_transpose"
        ef = ember.nn.utils.fuse_conv_bn_eval(el, eb, transpose=t)
        tf = torch.nn.utils.fuse_conv_bn_eval(tl, tb, transpose=t)
        x = rng.standard_normal((2, 3, 6, 6)).astype(np.float32)
    assert type(ef).__name__ == type(tf).__name__ and ef is not el
    np.testing.assert_allclose(ef.weight.detach().numpy(), tf.weight.detach().numpy(), rtol=1e-5)
    np.testing.assert_allclose(ef.bias.detach().numpy(), tf.bias.detach().numpy(), rtol=1e-5)
    with ember.no_grad():
        np.testing.assert_allclose(ef(from_np(x)).numpy(), eb(el(from_np(x))).numpy(),
                                   rtol=1e-4, atol=1e-5)
    el.train()
    with pytest.raises(AssertionError, match="Fusion only for eval!"):
        (ember.nn.utils.fuse_linear_bn_eval if kind == "linear" else
         ember.nn.utils.fuse_conv_bn_eval)(el, eb)


def test_skip_init_and_stateless_functional_call(torch):
    m = ember.nn.utils.skip_init(ember.nn.Linear, 3, 2, bias=False)
    assert m.weight.shape == (2, 3) and m.weight.device.type == "cpu" and m.bias is None
    with pytest.raises(RuntimeError, match="Expected a Module"):
        ember.nn.utils.skip_init(int)
    lin = ember.nn.Linear(2, 2)
    params = {"weight": ember.eye(2), "bias": ember.ones(2)}
    with pytest.warns(FutureWarning, match="torch.func.functional_call"):
        out = ember.nn.utils.stateless.functional_call(lin, params, (ember.tensor([[1.0, 2.0]]),))
    assert out.tolist() == [[2.0, 3.0]]


def test_typed_storage_matches_pytorch(torch):
    base = ember.arange(6.0)
    e, t = base.view(2, 3)[1:], torch.arange(6.0).view(2, 3)[1:]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        es, ts = e.storage(), t.storage()
    assert str(es) == str(ts).replace("torch.", "ember.")
    assert (es.size(), len(es), es.nbytes(), es.element_size()) == (
        ts.size(), len(ts), ts.nbytes(), ts.element_size())
    assert es[4] == ts[4] and es.tolist() == ts.tolist()
    assert es.data_ptr() == e.untyped_storage().data_ptr()
    es[0] = 7.0  # the storage's first element: the base's, not the view's
    assert base.tolist()[0] == 7.0 and e.tolist()[0][0] == 3.0
    assert ember.arange(6.0).storage().dtype is ember.float32
    assert es.untyped() is e.untyped_storage()


def test_apply_and_map_match_pytorch(torch):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    e, t = from_np(a), torch.tensor(a)
    e.apply_(lambda v: v * v - 1)
    t.apply_(lambda v: v * v - 1)
    assert e.tolist() == t.tolist()
    e.map_(from_np(np.array([1.0, 2.0, 3.0], np.float32)), lambda x, y: x / y)
    t.map_(torch.tensor([1.0, 2.0, 3.0]), lambda x, y: x / y)
    np.testing.assert_allclose(e.numpy(), t.numpy())


def test_device_modules_of_a_build_without_those_devices(torch):
    for name in ("xpu", "mtia", "mps"):
        e, t = getattr(ember, name), getattr(torch, name)
        assert e.is_available() is t.is_available() is False
        assert e.device_count() == t.device_count() == 0
        assert e.manual_seed(0) is t.manual_seed(0) is None
    for call in (("xpu", "synchronize"), ("xpu", "current_device"), ("mtia", "current_device"),
                 ("mtia", "empty_cache"), ("mps", "synchronize"), ("mps", "empty_cache"),
                 ("mps", "seed")):
        with pytest.raises(Exception) as te:
            getattr(getattr(torch, call[0]), call[1])()
        with pytest.raises(Exception) as ee:
            getattr(getattr(ember, call[0]), call[1])()
        assert type(ee.value) is type(te.value) and str(ee.value) == str(te.value), call
    assert ember.nn.attention.SDPBackend.MATH.name == "MATH"


def test_hook_based_spectral_norm_matches_pytorch(torch):
    rng = np.random.default_rng(1)
    w = rng.standard_normal((3, 4)).astype(np.float32)
    mods = []
    for lib in (ember, torch):
        m = lib.nn.Linear(4, 3)
        with lib.no_grad():
            m.weight.copy_(lib.tensor(w))
        lib.nn.utils.spectral_norm(m, n_power_iterations=3)
        mods.append(m)
    em, tm = mods
    with ember.no_grad():  # the same random start vectors in both
        em.weight_u.copy_(from_np(tm.weight_u.numpy()))
        em.weight_v.copy_(from_np(tm.weight_v.numpy()))
        em.bias.copy_(from_np(tm.bias.detach().numpy()))
    assert list(em.state_dict()) == list(tm.state_dict())
    assert em.state_dict()._metadata[""]["spectral_norm"] == \
        tm.state_dict()._metadata[""]["spectral_norm"]
    x = rng.standard_normal((2, 4)).astype(np.float32)
    for _ in range(2):  # training forwards move u and v
        eo, to = em(from_np(x)), tm(torch.tensor(x))
        np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), rtol=1e-5)
        eo.sum().backward()
        to.sum().backward()
    np.testing.assert_allclose(em.weight_orig.grad.numpy(), tm.weight_orig.grad.numpy(),
                               rtol=1e-4, atol=1e-6)
    with pytest.raises(RuntimeError, match="Cannot register two spectral_norm hooks"):
        ember.nn.utils.spectral_norm(em)
    ember.nn.utils.remove_spectral_norm(em)
    torch.nn.utils.remove_spectral_norm(tm)
    assert list(em.state_dict()) == list(tm.state_dict())
    np.testing.assert_allclose(em.weight.detach().numpy(), tm.weight.detach().numpy(),
                               rtol=1e-5)
    with pytest.raises(ValueError, match="spectral_norm of 'weight' not found"):
        ember.nn.utils.remove_spectral_norm(em)


def test_private_helpers_and_module_paths_programs_import(torch):
    import ember._utils as eu
    import torch._utils as tu
    a = [np.arange(3, dtype=np.float32), np.ones((2, 2), np.float32)]
    ef = eu._flatten_dense_tensors([from_np(x) for x in a])
    tf = tu._flatten_dense_tensors([torch.tensor(x) for x in a])
    assert ef.tolist() == tf.tolist()
    assert [t.tolist() for t in eu._unflatten_dense_tensors(ef, [from_np(x) for x in a])] == \
        [t.tolist() for t in tu._unflatten_dense_tensors(tf, [torch.tensor(x) for x in a])]
    sizes = [[t.shape for t in chunk] for chunk in eu._take_tensors(
        [ember.ones(4), ember.ones(2, dtype=ember.int64), ember.ones(3)], 16)]
    expected = [[t.shape for t in chunk] for chunk in tu._take_tensors(
        [torch.ones(4), torch.ones(2, dtype=torch.int64), torch.ones(3)], 16)]
    assert [[tuple(s) for s in c] for c in sizes] == [[tuple(s) for s in c] for c in expected]
    assert eu._get_device_index("cpu", allow_cpu=True) == tu._get_device_index(
        "cpu", allow_cpu=True) == -1
    from ember.utils.data._utils.collate import default_collate
    assert default_collate is ember.utils.data.default_collate
    from ember.utils.model_zoo import load_url
    assert load_url is ember.hub.load_state_dict_from_url
    assert ember.version.hip is torch.version.hip is None
    assert isinstance(ember.version.git_version, str) and ember.version.debug is False
    assert ember.__config__.show().startswith("ember built with:")
    assert "at::get_num_threads() : " in ember.__config__.parallel_info()
    assert ember._C._get_tracing_state() is None


@pytest.mark.parametrize("make", [lambda lib: lib.ones(2, 3, 4, 5),
                                  lambda lib: lib.ones(2, 3, 4, 5).to(
                                      memory_format=lib.channels_last),
                                  lambda lib: lib.ones(3, 4).t(),
                                  lambda lib: lib.ones(2, 3, 4).permute(2, 0, 1)])
def test_dim_order_matches_pytorch(torch, make):
    assert make(ember).dim_order() == make(torch).dim_order()


def test_module_load_while_loop_and_assume_constant_result(torch):
    p = ember.nn.Parameter(ember.zeros(2))
    with ember.no_grad():  # as load_state_dict calls it
        assert p.module_load(ember.ones(2)) is not p and p.tolist() == [1.0, 1.0]
        other = ember.full((2,), 5.0)
        assert p.module_load(other, assign=True).tolist() == [5.0, 5.0]
    assert p.tolist() == [1.0, 1.0]

    def cond(i, x):
        return i.sum() < 3

    def body(i, x):
        return i + 1, x * 2
    got = ember._higher_order_ops.while_loop(cond, body, (ember.zeros(1), ember.ones(2)))
    want = torch._higher_order_ops.while_loop(cond, body, (torch.zeros(1), torch.ones(2)))
    assert [t.tolist() for t in got] == [t.tolist() for t in want]
    with pytest.raises(RuntimeError, match="Expect cond_fn and body_fn to be callable"):
        ember._higher_order_ops.while_loop(None, body, (ember.zeros(1),))

    calls = []

    @ember.compiler.assume_constant_result
    def scale():
        calls.append(1)
        return 3

    ember._dynamo.reset()
    f = ember.compile(lambda x: x * scale(), backend="eager", fullgraph=True)
    assert f(ember.ones(2)).tolist() == [3.0, 3.0] and f(ember.ones(2)).tolist() == [3.0, 3.0]
    assert len(calls) == 1  # called once, at capture
    ember._dynamo.reset()
