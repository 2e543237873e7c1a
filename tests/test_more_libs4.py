"""stable-baselines3 and sb3-contrib, torchinfo, ptflops, thop, torchsummary, torchview,
pytorch-grad-cam, torch-pruning, pytorch-msssim, piq, BackPACK, GeomLoss, torch-dct,
torch-lr-finder, pytorch-warmup, kmeans-pytorch, laplace-torch (with curvlinops), nngeometry,
pytorch-tcn and torchkbnufft on ember through ``ember.as_torch``: reinforcement learning (PPO,
A2C, DQN, SAC, TD3, TRPO, QR-DQN, TQC, recurrent and maskable PPO, ARS, CrossQ) trained from
the same seeds, model summaries, FLOP counts and graph drawings printed as PyTorch prints them,
class activation maps, dependency-graph pruning, image-quality metrics, BackPACK's and
nngeometry's curvature, Laplace approximations, optimal-transport losses, DCTs, a
learning-rate range test, a warmup schedule, k-means, temporal convolutional networks and
non-uniform FFTs. Each case of tests/_more_libs4_programs.py runs in PyTorch and in ember, in
two subprocesses side by side, from the same seeds. Also the ember gaps these libraries met,
checked directly: the ``aten::_convolution`` op (ptflops' aten counter names it), ops that
survive ``deepcopy`` (ptflops copies its table keyed by ops), ``sys.getsizeof`` of a storage
(torchinfo's input size), ``torch._C.ScriptMethod`` (torchview's recorder names it), PyTorch's
numbering of backward nodes that share a name, forward-mode AD through the backward ops that
PyTorch decomposes for it (curvlinops' GGN: ``jvp`` of a ``vjp``), and dropout's and
bernoulli's draws in PyTorch's order for non-contiguous tensors (pytorch-tcn's dropout of
transposed activations), with softmax's contiguous results."""
import copy
import sys
import warnings

import numpy as np
import pytest

from _more_libs4_programs import CASES
from helpers import (assert_saved_arrays_match, installed_cases_beside_ember,
                     libraries_installed)

# the libraries each case needs (import names)
LIBRARIES = {"sb3": ["stable_baselines3", "gymnasium"],
             "sb3_contrib": ["sb3_contrib", "stable_baselines3", "gymnasium"],
             "summaries": ["torchinfo", "ptflops", "thop", "torchsummary", "torchvision"],
             "torchview": ["torchview", "graphviz"],
             "grad_cam": ["pytorch_grad_cam", "ttach", "cv2", "torchvision"],
             "torch_pruning": ["torch_pruning"], "image_quality": ["pytorch_msssim", "piq"],
             "backpack": ["backpack"],
             "small_libraries": ["geomloss", "torch_dct", "torch_lr_finder", "pytorch_warmup",
                                 "kmeans_pytorch"],
             "curvature": ["laplace", "curvlinops", "asdl", "nngeometry"],
             "signal": ["pytorch_tcn", "torchkbnufft"]}
NAMES = list(CASES)


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """Every case of tests/_more_libs4_programs.py whose libraries are installed:
    name -> (PyTorch's result, ember's)."""
    directory = tmp_path_factory.mktemp("more_libs4")
    return installed_cases_beside_ember("_more_libs4_programs.py", directory, LIBRARIES)


def _tolerance(key):
    # an RL run's later steps act on what earlier steps learned, so rounding grows with the
    # steps; the first update (".first.") is held as tightly as the other programs
    return 1e-2 if ".run." in key else 5e-5


@pytest.mark.parametrize("name", NAMES)
def test_library_program_matches_pytorch(results, name):
    """Losses, parameters and actions of the RL runs; summary tables, FLOP reports and graph
    sources (text equal); activation maps, pruned shapes and outputs, metrics and gradients
    equal PyTorch's."""
    if not libraries_installed(LIBRARIES[name]):
        pytest.skip(f"{', '.join(LIBRARIES[name])} not installed")
    theirs, mine = results[name]
    assert_saved_arrays_match(mine, theirs, rtol=1e-4, atol=_tolerance)


CONV_ARGS = ([2, 1], [1, 0], [1, 2], False, [0, 0], 1, False, False, True, True)


def test_underscore_convolution():
    """``aten::_convolution`` (convolution's older signature with cuDNN's flags) computes
    ``convolution``'s values, gradients and forward-mode tangents; its node is
    ConvolutionBackward1 and it has an out= overload, as in PyTorch."""
    torch = pytest.importorskip("torch")
    import ember
    rs = np.random.RandomState(0)
    x0, w0, b0 = rs.randn(2, 3, 7, 6), rs.randn(4, 3, 3, 2), rs.randn(4)
    got = []
    for lib in (torch, ember):
        x, w, b = (lib.tensor(a, dtype=lib.float64, requires_grad=True) for a in (x0, w0, b0))
        y = lib.ops.aten._convolution(x, w, b, *CONV_ARGS)
        grads = lib.autograd.grad((y * y).sum(), (x, w, b))
        out = lib.empty(0, dtype=lib.float64)
        lib.ops.aten._convolution.out(x.detach(), w.detach(), b.detach(), *CONV_ARGS, out=out)
        with lib.autograd.forward_ad.dual_level():
            dual = lib.autograd.forward_ad.make_dual(x.detach(), lib.ones_like(x))
            tangent = lib.autograd.forward_ad.unpack_dual(
                lib.ops.aten._convolution(dual, w.detach(), b.detach(), *CONV_ARGS)).tangent
        got.append((type(y.grad_fn).__name__, y.detach().numpy(),
                    [g.numpy() for g in grads], out.numpy(), tangent.numpy()))
    (name_t, y_t, g_t, out_t, tan_t), (name_e, y_e, g_e, out_e, tan_e) = got
    assert name_e == name_t == "ConvolutionBackward1"
    np.testing.assert_allclose(y_e, y_t, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(out_e, out_t, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(tan_e, tan_t, rtol=1e-12, atol=1e-12)
    for a, b in zip(g_e, g_t):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_backward_nodes_numbered_per_camel_case_name():
    """PyTorch numbers backward nodes per CamelCase name, so ops whose names differ only by
    underscores count together: conj_physical_ is ConjPhysicalBackward1 after
    conj_physical's ConjPhysicalBackward0."""
    torch = pytest.importorskip("torch")
    import ember
    names = []
    for lib in (torch, ember):
        z = lib.randn(3, requires_grad=True) * (1 + 1j)
        names.append((type(z.conj_physical().grad_fn).__name__,
                       type(z.clone().conj_physical_().grad_fn).__name__))
    assert names[1] == names[0] == ("ConjPhysicalBackward0", "ConjPhysicalBackward1")


def test_ops_survive_deepcopy():
    """An op and its overload packet deep-copy to themselves (they are unique), so a copied
    table keyed by ops still finds them."""
    import ember
    table = {ember.ops.aten.convolution: 1, ember.ops.aten.mm.default: 2}
    copied = copy.deepcopy(table)
    assert ember.ops.aten.convolution in copied and ember.ops.aten.mm.default in copied
    assert copy.deepcopy(ember.ops.aten.add.Tensor) is ember.ops.aten.add.Tensor


def test_storage_getsizeof_counts_its_bytes():
    """``sys.getsizeof`` of a storage, untyped or typed, counts the bytes it holds beside its
    object, as PyTorch's ``__sizeof__`` does."""
    import ember
    t = ember.zeros(1000)
    untyped = t.untyped_storage()
    assert sys.getsizeof(untyped) - sys.getsizeof(ember.zeros(0).untyped_storage()) == 4000
    with warnings.catch_warnings():  # (TypedStorage's deprecation warns once per process)
        warnings.simplefilter("ignore")
        typed = t.storage()
    assert typed.__sizeof__() >= 4000 and untyped.__sizeof__() >= 4000


def test_script_method_type():
    """``torch._C.ScriptMethod`` exists for ``isinstance`` checks and cannot be constructed,
    with PyTorch's message."""
    torch = pytest.importorskip("torch")
    import ember
    for lib in (torch, ember):
        with pytest.raises(TypeError, match="torch._C.ScriptMethod: No constructor defined!"):
            lib._C.ScriptMethod()
    assert not isinstance(ember.nn.Linear(2, 2).forward, ember._C.ScriptMethod)


def _jvp_cases(lib):
    """(name, function of the dual inputs, primals, tangents) for the backward ops whose forward
    AD runs their decomposition."""
    rs = np.random.RandomState(3)

    def t(*shape):
        return lib.tensor(rs.randn(*shape), dtype=lib.float64)
    aten = lib.ops.aten
    g, logp = t(3, 4), lib.log_softmax(t(3, 4), 1)
    x, w, b = t(4, 3, 2), t(3), t(3)
    _, save_mean, save_invstd = aten.native_batch_norm(x, w, b, lib.zeros(3, dtype=lib.float64),
                                                       lib.ones(3, dtype=lib.float64), True,
                                                       0.1, 1e-5)
    xl = t(3, 5)
    mean = xl.mean(1, keepdim=True)
    rstd = (xl.var(1, unbiased=False, keepdim=True) + 1e-5).rsqrt()
    stats = (lib.zeros(3, dtype=lib.float64), lib.ones(3, dtype=lib.float64))
    return [
        ("_log_softmax_backward_data",
         lambda a, o: aten._log_softmax_backward_data(a, o, 1, lib.float64), (g, logp)),
        ("_softmax_backward_data",
         lambda a, o: aten._softmax_backward_data(a, o, 1, lib.float64), (g, logp.exp())),
        ("native_layer_norm_backward",
         lambda a, i: aten.native_layer_norm_backward(a, i, [5], mean, rstd, w.new_ones(5),
                                                      None, [True, True, True]),
         (t(3, 5), xl)),
        ("native_batch_norm_backward.train",
         lambda a, i: aten.native_batch_norm_backward(a, i, w, *stats, save_mean, save_invstd,
                                                      True, 1e-5, [True, True, False]),
         (t(4, 3, 2), x)),
        ("native_batch_norm_backward.eval",
         lambda a, i: aten.native_batch_norm_backward(a, i, w, *stats, save_mean, save_invstd,
                                                      False, 1e-5, [True, False, True]),
         (t(4, 3, 2), x)),
        ("nll_loss_backward",
         lambda a, i: aten.nll_loss_backward(a, i, lib.tensor([0, 2, 1]), None, 1, -100,
                                             lib.tensor(3.0, dtype=lib.float64)),
         (lib.tensor(1.5, dtype=lib.float64), t(3, 4)))]


def test_forward_ad_through_decomposed_backward_ops():
    """Forward-mode AD of the backward ops PyTorch has no forward formula for runs their
    decompositions (PyTorch's decompositions_for_jvp, the normalizations' recomputing their
    statistics from the input): the tangents equal PyTorch's, and so does a Hessian-vector
    product of a cross-entropy over a layer norm (jvp of grad)."""
    torch = pytest.importorskip("torch")
    import ember
    got = []
    for lib in (torch, ember):
        fw = lib.autograd.forward_ad
        rs = np.random.RandomState(4)
        tangents = []
        for name, fn, primals in _jvp_cases(lib):
            with fw.dual_level():
                duals = [fw.make_dual(p, lib.tensor(rs.randn(*p.shape), dtype=p.dtype))
                         for p in primals]
                out = fn(*duals)
                outs = out if isinstance(out, tuple) else (out,)
                tangents.append((name, [None if fw.unpack_dual(o).tangent is None else
                                        fw.unpack_dual(o).tangent.numpy() for o in outs]))

        def loss(x, lib=lib):
            normed = lib.nn.functional.layer_norm(x * 1.5, (4,))
            return lib.nn.functional.cross_entropy(normed, lib.tensor([0, 1, 2]))
        x0 = lib.tensor(rs.randn(3, 4), dtype=lib.float64)
        v = lib.tensor(rs.randn(3, 4), dtype=lib.float64)
        hvp = lib.func.jvp(lib.func.grad(loss), (x0,), (v,))[1]
        got.append((tangents, hvp.numpy()))
    (theirs, hvp_t), (mine, hvp_e) = got
    for (name, want), (_, have) in zip(theirs, mine):
        assert [w is None for w in want] == [h is None for h in have], name
        for w, h in zip(want, have):
            if w is not None:
                np.testing.assert_allclose(h, w, rtol=1e-10, atol=1e-12, err_msg=name)
    np.testing.assert_allclose(hvp_e, hvp_t, rtol=1e-10, atol=1e-12)


def test_forward_ad_without_formula_or_decomposition_still_raises():
    """An op with neither a forward formula nor a decomposition for it raises PyTorch's
    NotImplementedError, as before."""
    import ember
    fw = ember.autograd.forward_ad
    x = ember.randn(2, 3, dtype=ember.float64)
    with fw.dual_level(), pytest.raises(NotImplementedError,
                                        match="Trying to use forward AD with"):
        ember.ops.aten.native_dropout_backward(fw.make_dual(x, ember.ones_like(x)),
                                               ember.ones(2, 3, dtype=ember.bool), 2.0)


def _random_layouts(lib):
    """Draws of dropout and bernoulli on tensors laid out other than contiguously."""
    F = lib.nn.functional
    P = lib.full((2, 5, 3), 0.4).transpose(1, 2)
    E = lib.empty(2, 5, 3).transpose(1, 2)

    def ones_t():
        return lib.ones(2, 5, 3).transpose(1, 2)
    cl = lib.ones(2, 3, 4, 5).to(memory_format=lib.channels_last)
    return {
        "bernoulli(p transposed)": lambda: lib.bernoulli(P),
        "bernoulli(self transposed, 0.3)": lambda: lib.bernoulli(E, 0.3),
        "bernoulli.out(p transposed)": lambda: lib.bernoulli(P, out=lib.empty(2, 3, 5)),
        "bernoulli_(transposed)": lambda: E.clone().bernoulli_(0.3),
        "dropout(transposed)": lambda: F.dropout(ones_t(), 0.4),
        "dropout(transposed, inplace)": lambda: F.dropout(ones_t(), 0.4, inplace=True),
        "dropout(channels_last)": lambda: F.dropout(cl, 0.4),
        "dropout(strided slice)": lambda: F.dropout(lib.ones(2, 5, 3)[:, ::2], 0.4),
        "dropout(permuted slice)":
            lambda: F.dropout(lib.ones(4, 3, 2).permute(2, 0, 1)[:, 1:], 0.4),
        "alpha_dropout(transposed)": lambda: F.alpha_dropout(ones_t(), 0.4, True),
        "alpha_dropout(channels_last)": lambda: F.alpha_dropout(cl, 0.4, True),
        "feature_alpha_dropout(transposed)":
            lambda: F.feature_alpha_dropout(ones_t(), 0.4, True),
        "dropout2d(channels_last)": lambda: F.dropout2d(cl, 0.4),
        "native_dropout(transposed)":
            lambda: lib.ops.aten.native_dropout(ones_t(), 0.4, True)[0]}


def test_dropout_and_bernoulli_draw_in_pytorchs_order():
    """Dropout's noise is ``bernoulli_`` of ``empty_like(input)``, so a transposed or
    channels-last input gets the draws in its memory order; ``bernoulli(p)`` and
    ``bernoulli(self, p)`` fill a contiguous result in logical order: the same values as
    PyTorch from the same seed, whatever the layout."""
    torch = pytest.importorskip("torch")
    import ember
    got = []
    for lib in (torch, ember):
        values = {}
        for name, fn in _random_layouts(lib).items():
            lib.manual_seed(0)
            out = fn()
            values[name] = out.numpy().copy()
        got.append(values)
    for name, want in got[0].items():
        np.testing.assert_array_equal(got[1][name], want, err_msg=name)


def test_softmax_results_are_contiguous():
    """softmax, log_softmax and their backward ops return contiguous tensors whatever the
    inputs' strides, as ATen's structured kernels do (so a dropout after a softmax of a
    transposed tensor, as in multi-head attention, draws in PyTorch's order)."""
    torch = pytest.importorskip("torch")
    import ember
    got = []
    for lib in (torch, ember):
        x = lib.arange(30.0).reshape(2, 5, 3).transpose(1, 2) / 7
        y = lib.softmax(lib.arange(30.0).reshape(2, 3, 5) / 5, -1)
        aten = lib.ops.aten
        outs = [lib.softmax(x, -1), lib.softmax(x, 1), lib.log_softmax(x, -1),
                aten._softmax_backward_data(x, y, -1, lib.float32),
                aten._log_softmax_backward_data(x, y, 1, lib.float32)]
        lib.manual_seed(0)
        outs.append(lib.nn.functional.dropout(lib.softmax(x, -1), 0.5))
        got.append([(o.stride(), o.numpy().copy()) for o in outs])
    for (stride_t, value_t), (stride_e, value_e) in zip(*got):
        assert stride_e == stride_t
        np.testing.assert_allclose(value_e, value_t, rtol=1e-6, atol=1e-7)
