"""Less common public names of nn, func, utils.hooks and autograd against PyTorch:
``AdaptiveLogSoftmaxWithLoss``, ``CrossMapLRN2d``, ``Container``, the conv weight memory-format
converters, ``func.replace_all_batch_norm_modules_`` / ``debug_unwrap``, ``unserializable_hook`` /
``warn_if_has_hooks``, the legacy ``InplaceFunction`` / ``NestedIOFunction``,
``graph.increment_version`` and ``set_multithreading_enabled``."""
import pickle
import threading
import warnings
from collections import OrderedDict

import numpy as np
import pytest

import ember
import ember.nn as nn
from helpers import to_np


def _copy_weights(em, tm):
    em.load_state_dict(OrderedDict((k, ember.tensor(v.detach().numpy()))
                                   for k, v in tm.state_dict().items()))


def _raised(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001  (the exception is what is compared)
        return e
    raise AssertionError("nothing raised")


def _same_error(torch_fn, ember_fn):
    te, ee = _raised(torch_fn), _raised(ember_fn)
    assert type(ee) is type(te), (ee, te)
    assert str(ee).replace("ember.", "torch.") == str(te), (str(ee), str(te))


def _warned(fn):
    """(category, message) of each warning ``fn`` gives, and its result."""
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out = fn()
    return [(r.category, str(r.message).replace("ember.", "torch.")) for r in w], out


# -- AdaptiveLogSoftmaxWithLoss ------------------------------------------------------------------

def _asm_pair(torch, div_value=2.0, **kw):
    # (div_value 2: with PyTorch's default of 4 the last cluster of 8 features has no hidden unit)
    kw["div_value"] = div_value
    torch.manual_seed(0)
    tm = torch.nn.AdaptiveLogSoftmaxWithLoss(8, 12, [3, 6, 9], **kw)
    em = nn.AdaptiveLogSoftmaxWithLoss(8, 12, [3, 6, 9], **kw)
    _copy_weights(em, tm)
    return tm, em


@pytest.mark.parametrize("target", [[0, 4, 7, 11, 2, 10], [4, 0, 0, 1, 2, 2], [0, 1, 2, 1, 1, 0],
                                    [9, 10, 11, 9, 9, 10]])
def test_adaptive_log_softmax_forward_and_gradients(torch, target):
    tm, em = _asm_pair(torch, head_bias=True)
    assert repr(em) == repr(tm)
    assert [n for n, _ in em.named_parameters()] == [n for n, _ in tm.named_parameters()]
    x = np.random.RandomState(1).randn(6, 8).astype(np.float32)
    tx, ex = torch.tensor(x, requires_grad=True), ember.tensor(x, requires_grad=True)
    to, eo = tm(tx, torch.tensor(target)), em(ex, ember.tensor(target))
    assert type(eo).__name__ == type(to).__name__ == "_ASMoutput"
    assert eo._fields == to._fields == ("output", "loss")
    np.testing.assert_allclose(to_np(eo.output.detach()), to.output.detach().numpy(), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(to_np(eo.loss.detach()), to.loss.detach().numpy(), rtol=1e-5)
    to.loss.backward()
    eo.loss.backward()
    np.testing.assert_allclose(to_np(ex.grad), tx.grad.numpy(), rtol=1e-5, atol=1e-6)
    for (name, tp), (_, ep) in zip(tm.named_parameters(), em.named_parameters()):
        if tp.grad is None:  # a cluster no target fell in never ran
            assert ep.grad is None, name
        else:
            np.testing.assert_allclose(to_np(ep.grad), tp.grad.numpy(), rtol=1e-5, atol=1e-6,
                                       err_msg=name)


def test_adaptive_log_softmax_unbatched_log_prob_and_predict(torch):
    tm, em = _asm_pair(torch)
    x = np.random.RandomState(2).randn(5, 8).astype(np.float32)
    to, eo = tm(torch.tensor(x[0]), torch.tensor(7)), em(ember.tensor(x[0]), ember.tensor(7))
    assert eo.output.shape == to.output.shape == ()
    np.testing.assert_allclose(to_np(eo.output.detach()), to.output.detach().numpy(), rtol=1e-5)
    np.testing.assert_allclose(to_np(em.log_prob(ember.tensor(x)).detach()),
                               tm.log_prob(torch.tensor(x)).detach().numpy(), rtol=1e-5,
                               atol=1e-6)
    # predict's three paths: every row in the shortlist, none, and a mix (steered by the head's
    # weights: a large weight on a cluster's logit sends the rows with a positive feature there)
    for rows in ("shortlist", "clusters", "mixed"):
        with torch.no_grad():
            tm.head.weight.zero_()
            if rows == "clusters":
                tm.head.weight[3:, :] = 1.0
                xs = np.abs(x)
            else:
                tm.head.weight[0, :] = 0.5
                xs = x.copy()
                if rows == "mixed":
                    tm.head.weight[4, 0] = 50.0
                    xs[:, 0] = np.abs(xs[:, 0]) * [1, -1, 1, -1, 1]
        _copy_weights(em, tm)
        tp, ep = tm.predict(torch.tensor(xs)), em.predict(ember.tensor(xs))
        assert ep.dtype == ember.int64
        np.testing.assert_array_equal(to_np(ep), tp.numpy())
        if rows == "mixed":
            assert 0 < (tp >= 3).sum() < len(xs)


@pytest.mark.parametrize("case", [([6, 8], [0, 12, 1, 1, 1, 1]), ([6, 8], [0, -1, 1, 1, 1, 1]),
                                  ([5, 8], [0] * 6), ([6, 2, 4], [0] * 6), ([8], [[0]]),
                                  ([6, 8], 3)])
def test_adaptive_log_softmax_bad_targets_and_shapes(torch, case):
    tm, em = _asm_pair(torch)
    shape, target = case
    _same_error(lambda: tm(torch.zeros(*shape), torch.tensor(target)),
                lambda: em(ember.zeros(*shape), ember.tensor(target)))


@pytest.mark.parametrize("cutoffs", [[], [3, 3], [5, 3], [0, 3], [3, 12], [3.5]])
def test_adaptive_log_softmax_bad_cutoffs(torch, cutoffs):
    _same_error(lambda: torch.nn.AdaptiveLogSoftmaxWithLoss(8, 12, cutoffs),
                lambda: nn.AdaptiveLogSoftmaxWithLoss(8, 12, cutoffs))


# -- CrossMapLRN2d -------------------------------------------------------------------------------

@pytest.mark.parametrize("size,channels", [(5, 7), (3, 4), (2, 6), (4, 3), (5, 2), (6, 9)])
def test_cross_map_lrn2d_forward_and_backward(torch, size, channels):
    tm = torch.nn.CrossMapLRN2d(size, alpha=0.5, beta=0.9, k=2)
    em = nn.CrossMapLRN2d(size, alpha=0.5, beta=0.9, k=2)
    assert repr(em) == repr(tm)
    rs = np.random.RandomState(size * 10 + channels)
    x = rs.randn(2, channels, 3, 4).astype(np.float32)
    g = rs.randn(2, channels, 3, 4).astype(np.float32)
    tx, ex = torch.tensor(x, requires_grad=True), ember.tensor(x, requires_grad=True)
    to, eo = tm(tx), em(ex)
    assert type(eo.grad_fn).__name__ == type(to.grad_fn).__name__ == "CrossMapLRN2dBackward"
    np.testing.assert_allclose(to_np(eo.detach()), to.detach().numpy(), rtol=1e-5, atol=1e-6)
    to.backward(torch.tensor(g))
    eo.backward(ember.tensor(g))
    np.testing.assert_allclose(to_np(ex.grad), tx.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_cross_map_lrn2d_errors(torch):
    _same_error(lambda: torch.nn.CrossMapLRN2d(3)(torch.ones(2, 3, 4)),
                lambda: nn.CrossMapLRN2d(3)(ember.ones(2, 3, 4)))
    # size 1: the backward's padded stack is one channel short, in PyTorch too
    tx, ex = torch.ones(1, 3, 2, 2, requires_grad=True), ember.ones(1, 3, 2, 2, requires_grad=True)
    to, eo = torch.nn.CrossMapLRN2d(1)(tx), nn.CrossMapLRN2d(1)(ex)
    np.testing.assert_allclose(to_np(eo.detach()), to.detach().numpy(), rtol=1e-6)
    _same_error(lambda: to.sum().backward(), lambda: eo.sum().backward())


# -- Container -----------------------------------------------------------------------------------

def test_container_is_deprecated_as_in_torch(torch):
    tw, tc = _warned(lambda: torch.nn.Container(a=torch.nn.Linear(2, 2), b=torch.nn.ReLU()))
    ew, ec = _warned(lambda: nn.Container(a=nn.Linear(2, 2), b=nn.ReLU()))
    assert ew == tw and len(ew) == 1 and ew[0][0] is FutureWarning
    assert repr(ec) == repr(tc)
    assert [n for n, _ in ec.named_parameters()] == [n for n, _ in tc.named_parameters()]
    assert nn.Container.__deprecated__ == torch.nn.Container.__deprecated__

    def subclass(lib):
        class Sub(lib.nn.Container):
            pass
        return Sub
    tw, tsub = _warned(lambda: subclass(torch))
    ew, esub = _warned(lambda: subclass(ember))
    assert ew == tw and len(ew) == 1  # defining a subclass warns...
    assert _warned(tsub)[0] == _warned(esub)[0] == []  # ... making one does not
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        _same_error(lambda: torch.nn.Container(a=3), lambda: nn.Container(a=3))


# -- conv weight memory formats ------------------------------------------------------------------

def _conv_model(lib):
    lib.manual_seed(0)
    return lib.nn.Sequential(lib.nn.Conv2d(1, 4, 3),
                             lib.nn.Sequential(lib.nn.ConvTranspose2d(4, 2, 3)),
                             lib.nn.Conv3d(2, 2, 1), lib.nn.ConvTranspose3d(2, 3, 2),
                             lib.nn.Linear(2, 2))


@pytest.mark.parametrize("which", ["2d", "3d"])
def test_convert_conv_weight_memory_format(torch, which):
    tm, em = _conv_model(torch), _conv_model(ember)
    _copy_weights(em, tm)
    formats = ["channels_last", "contiguous_format"] if which == "2d" else \
        ["channels_last_3d", "contiguous_format"]
    for fmt in formats:
        tr = getattr(torch.nn.utils, f"convert_conv{which}_weight_memory_format")(
            tm, getattr(torch, fmt))
        er = getattr(nn.utils, f"convert_conv{which}_weight_memory_format")(em, getattr(ember, fmt))
        assert er is em and tr is tm
        for (name, tp), (_, ep) in zip(tm.named_parameters(), em.named_parameters()):
            assert ep.stride() == tp.stride(), (fmt, name)
            assert isinstance(ep, nn.Parameter) and ep.requires_grad
            np.testing.assert_array_equal(to_np(ep.detach()), tp.detach().numpy())
    # a format of the other rank is refused by the first weight it reaches
    other = "channels_last_3d" if which == "2d" else "channels_last"
    _same_error(lambda: getattr(torch.nn.utils, f"convert_conv{which}_weight_memory_format")(
                    tm, getattr(torch, other)),
                lambda: getattr(nn.utils, f"convert_conv{which}_weight_memory_format")(
                    em, getattr(ember, other)))
    # as PyTorch's, preserve_format cannot be resized to
    with pytest.raises(RuntimeError):
        getattr(nn.utils, f"convert_conv{which}_weight_memory_format")(em, ember.preserve_format)


# -- func ----------------------------------------------------------------------------------------

def test_replace_all_batch_norm_modules_(torch):
    def model(lib):
        lib.manual_seed(0)
        return lib.nn.Sequential(lib.nn.BatchNorm1d(3), lib.nn.Linear(3, 3),
                                 lib.nn.Sequential(lib.nn.BatchNorm1d(3, affine=False)),
                                 lib.nn.BatchNorm2d(2, track_running_stats=False))
    tm, em = model(torch), model(ember)
    _copy_weights(em, tm)
    assert torch.func.replace_all_batch_norm_modules_(tm) is tm
    assert ember.func.replace_all_batch_norm_modules_(em) is em
    assert ember.func.replace_all_batch_norm_modules_.__module__ == "ember.func"
    assert list(em.state_dict().keys()) == list(tm.state_dict().keys())
    for i in (0, 2):
        tb, eb = (tm[i], em[i]) if i == 0 else (tm[2][0], em[2][0])
        assert eb._buffers == {k: None for k in tb._buffers} and not eb.track_running_stats
    # a model without running statistics runs the same in train and eval mode, under vmap too
    x = np.random.RandomState(0).randn(4, 5, 3).astype(np.float32)
    body = (lambda lib, m: lambda t: m[1](m[0](t)))
    tout = torch.func.vmap(body(torch, tm))(torch.tensor(x))
    eout = ember.func.vmap(body(ember, em))(ember.tensor(x))
    np.testing.assert_allclose(to_np(eout.detach()), tout.detach().numpy(), rtol=1e-4, atol=1e-5)


def test_debug_unwrap(torch):
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3, 1)

    def shapes(lib):
        seen = []

        def f(t):
            inner = lib.func.debug_unwrap(t)
            seen.append((type(inner).__name__, tuple(inner.shape),
                         tuple(lib.func.debug_unwrap(t, recurse=False).shape)))
            return t.sum()
        lib.func.vmap(lib.func.vmap(f))(lib.tensor(x))
        return seen
    assert shapes(ember) == shapes(torch) == [("Tensor", (2, 3, 1), (3, 1))]

    def functional(lib):
        seen = []

        def f(t):
            u = lib.func.debug_unwrap(t)
            seen.append((lib._is_functional_tensor(t), lib._is_functional_tensor(u)))
            return t + 1
        lib.func.functionalize(f)(lib.tensor(x))
        return seen
    assert functional(ember) == functional(torch) == [(True, False)]

    def under_grad(lib):
        seen = []

        def f(t):
            seen.append(lib.func.debug_unwrap(t))
            return t.sin().sum()
        g = lib.func.grad(f)(lib.tensor(x))
        return seen[0].detach().numpy(), g.detach().numpy()
    (ev, eg), (tv, tg) = under_grad(ember), under_grad(torch)
    np.testing.assert_array_equal(ev, tv)
    np.testing.assert_allclose(eg, tg, rtol=1e-6)

    plain = ember.tensor(x)
    assert ember.func.debug_unwrap(plain) is plain
    # a functional tensor made outside a transform is no functorch wrapper
    ef = ember._to_functional_tensor(plain)
    assert ember.func.debug_unwrap(ef) is ef
    tf = torch._to_functional_tensor(torch.tensor(x))
    assert torch.func.debug_unwrap(tf) is tf
    assert type(_raised(lambda: ember.func.debug_unwrap(3))) is \
        type(_raised(lambda: torch.func.debug_unwrap(3))) is TypeError


# -- utils.hooks ---------------------------------------------------------------------------------

def _hook(g):
    return g


@ember.utils.hooks.unserializable_hook
def _marked_hook(g):
    return g


def test_unserializable_hook_and_warn_if_has_hooks(torch):
    assert _marked_hook.__torch_unserializable__ is True

    def pickled(lib, hooks, leaf=True, remove=False):
        x = lib.ones(2, requires_grad=True)
        t = x if leaf else x * 2
        handles = [t.register_hook(h) for h in hooks]
        if remove:
            for h in handles:
                h.remove()
        return _warned(lambda: pickle.dumps(t))[0]

    def both(*args, **kw):
        tw, ew = pickled(torch, *args, **kw), pickled(ember, *args, **kw)
        assert ew == tw
        return ew

    assert both([_hook]) == [(UserWarning, f"backward hook {_hook!r} on tensor will not be "
                              "serialized.  If this is expected, you can decorate the function "
                              "with @torch.utils.hooks.unserializable_hook to suppress this "
                              "warning")]
    assert len(both([_hook], leaf=False)) == 1
    assert len(both([_hook, _marked_hook, _hook])) == 2
    assert both([_marked_hook]) == [] and both([_hook], remove=True) == [] and both([]) == []
    # the function itself, on a tensor with and without hooks
    x = ember.ones(1, requires_grad=True)
    assert _warned(lambda: ember.utils.hooks.warn_if_has_hooks(x)) == ([], None)
    x.register_hook(_hook)
    assert len(_warned(lambda: ember.utils.hooks.warn_if_has_hooks(x))[0]) == 1
    assert "unserializable_hook" in ember.utils.hooks.__all__
    assert "warn_if_has_hooks" in ember.utils.hooks.__all__


# -- legacy Functions ----------------------------------------------------------------------------

def test_inplace_function(torch):
    tw, tf = _warned(lambda: torch.autograd.function.InplaceFunction(True))
    ew, ef = _warned(lambda: ember.autograd.function.InplaceFunction(True))
    assert ew == tw and ew[0][0] is DeprecationWarning
    assert ef.inplace is True
    assert _warned(ember.autograd.function.InplaceFunction)[1].inplace is False
    assert issubclass(ember.autograd.function.InplaceFunction, ember.autograd.Function)
    _same_error(lambda: tf(1), lambda: ef(1))


def _nested_cls(lib):
    class Nested(lib.autograd.function.NestedIOFunction):
        def forward_extended(self, a, bs):
            return a * 2, [bs[0] + 1, None]

        def backward_extended(self, ga, gbs):
            return ga * 2, [gbs[0], None]
    return Nested


def test_nested_io_function(torch):
    assert ember.autograd.NestedIOFunction is ember.autograd.function.NestedIOFunction
    assert "NestedIOFunction" in ember.autograd.__all__

    def run(lib):
        f = _warned(_nested_cls(lib))[1]
        x = lib.arange(3.0, requires_grad=True)
        f._nested_input = (x, [x * 3])
        flat = f.forward(x)
        out = {"flat": [t.detach().numpy() for t in flat],
               "nested": [type(f._nested_output[1]).__name__, f._nested_output[1][1]],
               "input_gone": not hasattr(f, "_nested_input"),
               "data_detached": not flat[0].requires_grad}
        grads = f.backward(lib.ones(3), lib.ones(3))
        out["grads"] = [None if g is None else g.numpy() for g in grads]
        f.save_for_backward(x, [x, None])
        out["to_save"] = len(f.to_save), f._to_save_nested[1][1]
        f.mark_dirty(x, [x], k=x)
        f.mark_non_differentiable(x)
        out["marked"] = len(f.dirty_tensors), len(f.non_differentiable)
        f.save_for_backward()
        out["saved_empty"] = f.saved_tensors
        return out, f, x
    (eo, ef, ex), (to, tf, tx) = run(ember), run(torch)
    for k in ("nested", "input_gone", "data_detached", "to_save", "marked", "saved_empty"):
        assert eo[k] == to[k], k
    for k in ("flat", "grads"):
        assert len(eo[k]) == len(to[k])
        for a, b in zip(eo[k], to[k]):
            assert (a is None) == (b is None)
            np.testing.assert_array_equal(a, b)

    # what does not work in PyTorch fails the same way here
    ef.save_for_backward(ex, [ex])
    tf.save_for_backward(tx, [tx])
    _same_error(lambda: tf.saved_tensors, lambda: ef.saved_tensors)
    _same_error(lambda: tf(tx, [tx]), lambda: ef(ex, [ex]))
    _same_error(lambda: _nested_cls(torch).apply(tx, [tx]),
                lambda: _nested_cls(ember).apply(ex, [ex]))
    tf._nested_input = (3,)
    ef._nested_input = (3,)
    _same_error(lambda: tf.forward(), lambda: ef.forward())
    _same_error(lambda: tf.mark_dirty(object()), lambda: ef.mark_dirty(object()))
    base_t, base_e = (_warned(lib.autograd.NestedIOFunction)[1] for lib in (torch, ember))
    _same_error(lambda: base_t.forward_extended(1), lambda: base_e.forward_extended(1))
    _same_error(lambda: base_t.backward_extended(1), lambda: base_e.backward_extended(1))


def test_instantiating_a_function_warns(torch):
    def make(lib):
        class MyFn(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x
        return _warned(MyFn)
    (ew, ef), (tw, tf) = make(ember), make(torch)
    assert ew == tw and len(ew) == 1 and ew[0][0] is DeprecationWarning
    _same_error(lambda: tf(1), lambda: ef(1))


# -- increment_version ---------------------------------------------------------------------------

def test_increment_version(torch):
    def run(lib):
        inc = lib.autograd.graph.increment_version
        a = lib.ones(3)
        v = a[1:]
        versions = []
        inc(a)
        versions.append((a._version, v._version))
        inc([a, v])
        versions.append((a._version, v._version))
        inc(t for t in (v,))
        versions.append((a._version, v._version))
        with lib.inference_mode():
            b = lib.ones(2)
        inc(b)  # inference tensors have no counter: skipped
        return versions
    assert run(ember) == run(torch) == [(1, 1), (3, 3), (4, 4)]
    for bad in (3, None):
        _same_error(lambda: torch.autograd.graph.increment_version(bad),
                    lambda: ember.autograd.graph.increment_version(bad))
    ta, ea = torch.ones(1), ember.ones(1)
    _same_error(lambda: torch.autograd.graph.increment_version([ta, 3]),
                lambda: ember.autograd.graph.increment_version([ea, 3]))
    assert ea._version == ta._version == 1  # the tensors before the bad element were bumped

    # a tensor saved for backward and bumped refuses to unpack
    def saved(lib):
        x = lib.ones(3, requires_grad=True)
        y = x.exp()
        lib.autograd.graph.increment_version(y)
        return lambda: y.sum().backward()
    _same_error(saved(torch), saved(ember))


# -- set_multithreading_enabled ------------------------------------------------------------------

def _multithreading_trace(lib):
    ag = lib.autograd
    on = ag.is_multithreading_enabled
    trace = [on()]
    with ag.set_multithreading_enabled(False):
        trace.append(on())
        other = []
        t = threading.Thread(target=lambda: other.append(on()))
        t.start()
        t.join()
        trace.append(other[0])  # thread-local: a new thread starts with it on
        with ag.set_multithreading_enabled(True):
            trace.append(on())
        trace.append(on())
    trace.append(on())
    ag.set_multithreading_enabled(False)  # a plain call takes effect
    trace.append(on())
    ag.set_multithreading_enabled(True)

    @ag.set_multithreading_enabled(False)  # decorating sets it too (and leaves it set)
    def f():
        return on()
    trace += [on(), f(), on()]
    ag.set_multithreading_enabled(True)

    @ag.set_multithreading_enabled(False)
    def gen():
        yield on()
        yield on()
    ag.set_multithreading_enabled(True)
    trace += [list(gen()), on()]
    ag.set_multithreading_enabled(True)
    trace.append(type(ag.set_multithreading_enabled(True).clone()).__name__)
    return trace


def test_set_multithreading_enabled_modes(torch):
    assert _multithreading_trace(ember) == _multithreading_trace(torch)
    assert ember.autograd.is_multithreading_enabled() and torch.autograd.is_multithreading_enabled()
    assert "set_multithreading_enabled" in ember.autograd.__all__
    _same_error(lambda: torch.autograd.set_multithreading_enabled("x"),
                lambda: ember.autograd.set_multithreading_enabled("x"))
    assert ember.autograd.is_multithreading_enabled()


@pytest.fixture
def cuda():
    """The real GPU when one is here, else the simulated device for the test."""
    from helpers import real_gpu, simulated_cuda
    if real_gpu():
        yield
        return
    with simulated_cuda():
        yield


def test_multithreading_switch_controls_the_device_threads(cuda):
    def threads():
        seen = {}

        def note(where):
            def hook(g):
                seen[where] = threading.current_thread()
            return hook
        x = ember.randn(4, requires_grad=True)
        xc = x.cuda()
        xc.register_hook(note("cuda"))
        y = (xc * 2).sin().cpu()
        y.register_hook(note("cpu"))
        y.sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), 2 * np.cos(2 * x.detach().numpy()), rtol=1e-6)
        return seen
    on = threads()
    assert on["cpu"] is threading.current_thread()
    assert on["cuda"].name == "ember autograd cuda:0"
    with ember.autograd.set_multithreading_enabled(False):
        off = threads()
    assert off["cpu"] is off["cuda"] is threading.current_thread()
    assert threads()["cuda"].name == "ember autograd cuda:0"

    # on the calling thread a CUDA node still runs on the stream of its forward op
    seen = {}

    class Probe(ember.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            return t * 2

        @staticmethod
        def backward(ctx, g):
            seen["stream"] = ember.cuda.current_stream()
            seen["thread"] = threading.current_thread()
            return g * 2
    side = ember.cuda.Stream()
    x = ember.ones(8, device="cuda", requires_grad=True)
    with ember.cuda.stream(side):
        y = Probe.apply(x)
    with ember.autograd.set_multithreading_enabled(False):
        y.sum().backward()
    assert seen["stream"] == side and seen["thread"] is threading.current_thread()
    assert ember.cuda.current_stream() == ember.cuda.default_stream()
    np.testing.assert_array_equal(x.grad.cpu().numpy(), np.full(8, 2.0, np.float32))


def test_decorated_generator_returns_its_value(torch):
    def run(lib):
        @lib.no_grad()
        def gen():
            yield lib.is_grad_enabled()
            return "done"

        def outer():
            result = yield from gen()
            yield result
        return list(outer())
    assert run(ember) == run(torch) == [False, "done"]


def test_functional_module_names(torch):
    """The names nn.functional carries beside its functions: grid_sample's mode tables, the
    __torch_function__ helpers, BroadcastingList annotations, boolean_dispatch."""
    import ember.nn.functional as F
    TF = torch.nn.functional
    assert F.GRID_SAMPLE_INTERPOLATION_MODES == TF.GRID_SAMPLE_INTERPOLATION_MODES
    assert F.GRID_SAMPLE_PADDING_MODES == TF.GRID_SAMPLE_PADDING_MODES
    assert F.has_torch_function is ember.overrides.has_torch_function
    assert F.BroadcastingList2[int] is None and TF.BroadcastingList2[int] is None
    for lib in (F, TF):
        def on(x, flag=False):
            """the docstring"""
            return "on"

        def off(x, flag=False):
            return "off"
        fn = lib.boolean_dispatch("flag", 1, False, on, off, "mod", "picked")
        assert (fn(1), fn(1, True), fn(1, flag=True)) == ("off", "on", "on")
        assert (fn.__doc__, off.__doc__, fn.__name__, fn.__module__) == (
            "the docstring", "the docstring", "picked", "mod")
        with pytest.raises(RuntimeError, match="only one function can have a docstring"):
            lib.boolean_dispatch("flag", 1, False, on, off, None, None)
        with pytest.raises(AssertionError, match="k must be"):
            lib.assert_int_or_pair([1, 2, 3], "k", "{} must be an int or a pair")
    x = ember.arange(8.0).reshape(2, 1, 4)
    w = ember.ones(3, 4, 5)
    b = ember.zeros(5)
    tx = torch.arange(8.0).reshape(2, 1, 4)
    assert F.conv_tbc(x, w, b, 1).tolist() == TF.conv_tbc(tx, torch.ones(3, 4, 5),
                                                          torch.zeros(5), 1).tolist()
