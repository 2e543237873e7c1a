"""The C autograd recorder (``ember/autograd/recorder.c``) against the generated Python recorder
it stands for (``Recorder.python``): the node, its edges, saved values and the output's history
equal field by field, for the common case the C takes and for each case it hands to Python."""
import os
import subprocess
import sys
import threading

import pytest

import ember
from ember._dispatch import dispatcher, tls
from ember.autograd import derivatives, graph
from helpers import has_c_compiler


pytestmark = pytest.mark.skipif(not has_c_compiler(),
                                reason="no C compiler: nodes are recorded in Python")

MISSING = object()


def _recorder(qualname):
    """The recorder the Autograd kernel of ``qualname`` calls."""
    import gc
    entry = dispatcher.get_entry(qualname)
    for ns in gc.get_referrers(entry.rcache):
        if isinstance(ns, dict) and "_record" in ns:
            return ns["_record"]
    raise LookupError(qualname)


def _record_both(qualname, *args):
    """The op recorded by the C recorder and by its Python recorder, on the same inputs."""
    rec = _recorder(qualname)
    assert type(rec).__name__ == "Recorder"
    ks = 0
    for a in args:
        ks |= getattr(a, "_keyset", 0)
    return rec(ks, args), rec.python(ks, args)


def _saved_fields(s):
    out = {}
    for name in graph.SavedTensor.__slots__:
        v = getattr(s, name, MISSING)
        out[name] = v
    return out


def _same_saved(c, py):
    assert type(c) is type(py)
    if not isinstance(c, graph.SavedTensor):
        assert c == py or (c is None and py is None)
        return
    fc, fp = _saved_fields(c), _saved_fields(py)
    for name in fc:
        a, b = fc[name], fp[name]
        if name == "data" and c.is_output:  # a shallow copy of each call's own output
            assert type(a) is type(b) and a._size == b._size and a._vc == b._vc
            assert a._grad_fn is None is b._grad_fn
        elif name in ("data", "unpack_hook", "packed"):
            assert a is b, name
        else:
            assert a == b, name


def _same_record(out_c, out_py):
    """Both outputs carry a node of the same class with equal fields."""
    nc, npy = out_c._grad_fn, out_py._grad_fn
    assert type(nc) is type(npy)
    assert (out_c._output_nr, out_c._requires_grad) == (out_py._output_nr, out_py._requires_grad)
    assert set(vars(nc)) == set(vars(npy))
    assert nc._seq_nr == npy._seq_nr - 1  # consecutive: the C took a number from the same counter
    assert nc._next == npy._next
    assert nc._edge_meta == npy._edge_meta and nc._out_meta == npy._out_meta
    assert nc._edge_slices is npy._edge_slices and nc._is_list_arg is npy._is_list_arg
    assert nc._saved.keys() == npy._saved.keys()
    for k in nc._saved:
        _same_saved(nc._saved[k], npy._saved[k])
    for node, out in [(nc, out_c), (npy, out_py)]:
        for s in node._saved.values():
            if isinstance(s, graph.SavedTensor) and s.is_output:
                assert s.data is not out and s.data._vc is out._vc


def test_mul_records_in_c():
    a = ember.randn(3, requires_grad=True)
    b = ember.randn(3, requires_grad=True)
    c = ember.randn(3)
    for x, y in [(a, b), (a, c), (c, a)]:
        _same_record(*_record_both("aten::mul.Tensor", x, y))


def test_non_leaf_inputs_scalars_derived_and_saved_results():
    a = ember.randn(2, 3, requires_grad=True)
    h = a * 2  # a non-leaf input: edge (MulBackward0, 0)
    _same_record(*_record_both("aten::exp", h))  # saves its result
    _same_record(*_record_both("aten::add.Tensor", h, a, 3))  # a scalar argument
    _same_record(*_record_both("aten::sum", h, None))  # saves self's sizes (derived)
    _same_record(*_record_both("aten::mm", h, ember.randn(3, 4, requires_grad=True)))


def test_views_record_in_c():
    """A view op's node, and its output's view version (track_views), as the Python's."""
    a = ember.randn(4, 6, requires_grad=True)
    h = a * 2
    for qualname, args in [("aten::view", (h, [24])), ("aten::t", (h,)),
                           ("aten::transpose.int", (h, 0, 1)), ("aten::select.int", (h, 1, 2))]:
        out_c, out_py = _record_both(qualname, *args)
        _same_record(out_c, out_py)
        assert out_c._base_ is out_py._base_ is h
        assert out_c._autograd.view_version == out_py._autograd.view_version == h._vc[0]


def test_in_place_write_to_the_base_regenerates_the_view_s_grad_fn():
    for python in (False, True):
        a = ember.randn(4, 6, requires_grad=True)
        h = a * 2
        rec = _recorder("aten::view")
        v = (rec.python if python else rec)(h._keyset, (h, [24]))
        assert v._grad_fn.name() == "ViewBackward0"
        h.mul_(3)
        assert v.grad_fn.name() == "AsStridedBackward0"
        v.sum().backward()
        assert ember.equal(a.grad, ember.full((4, 6), 6.0))


def test_values_and_gradients_match_pytorch_rules():
    a = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = ember.tensor([4.0, 5.0, 6.0], requires_grad=True)
    y = (a * b).exp().sum()
    y.backward()
    assert y.grad_fn.name() == "SumBackward0"
    assert ember.allclose(a.grad, b * (a * b).exp())
    assert ember.allclose(b.grad, a * (a * b).exp())


def test_integer_output_gets_no_history():
    i = ember.tensor([1, 2, 3])
    out = i * i
    assert out._grad_fn is None and not out._requires_grad


def test_accumulator_made_in_c_matches_python():
    leaf = ember.randn(3, requires_grad=True)
    graph.autograd_meta(leaf)  # the C makes accumulators for leaves that have AutogradMeta
    y = leaf * 2
    acc_c = y._grad_fn._next[0][0]
    assert type(acc_c) is graph.AccumulateGrad
    assert leaf._autograd.grad_accumulator() is acc_c
    assert (y * 3)._grad_fn._next[0][0] is not acc_c  # y is not a leaf: its own node
    assert (leaf * 3)._grad_fn._next[0][0] is acc_c  # alive: the same accumulator
    other = ember.randn(3, requires_grad=True)
    acc_py = graph.AccumulateGrad(other)
    assert vars(acc_c).keys() == vars(acc_py).keys()
    assert acc_c.variable is leaf and acc_c._out_meta == ((leaf._size, leaf._dtype, leaf._device),)
    del y, acc_c
    y = leaf * 2  # the accumulator died with the graph: a new one, held weakly again
    assert leaf._autograd.grad_accumulator() is y._grad_fn._next[0][0]
    y.sum().backward()
    assert ember.equal(leaf.grad, ember.full((3,), 2.0))


def test_failed_kernel_restores_excluded_set_and_records_nothing():
    a = ember.randn(3, requires_grad=True)
    before = tls.state.excluded
    with pytest.raises(RuntimeError, match="size of tensor a"):
        a * ember.randn(4)
    assert tls.state.excluded == before
    assert (a * 2)._grad_fn is not None  # recording still works


def test_saved_tensor_hooks_go_through_python():
    packed = []

    def pack(t):
        packed.append(t)
        return "packed"

    a = ember.randn(3, requires_grad=True)
    with ember.autograd.graph.saved_tensors_hooks(pack, lambda p: packed[0]):
        y = a * a
    assert len(packed) == 2
    saved = [s for s in y._grad_fn._saved.values() if isinstance(s, graph.SavedTensor)]
    assert len(saved) == 2 and all(s.packed == "packed" for s in saved)
    y.sum().backward()
    assert ember.allclose(a.grad, 2 * a)


def test_inference_tensor_error_is_python_s():
    with ember.inference_mode():
        i = ember.randn(3)
    a = ember.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="Inference tensors cannot be saved for backward"):
        a * i


def test_anomaly_mode_keeps_the_forward_trace():
    a = ember.randn(3, requires_grad=True)
    with pytest.warns(UserWarning, match="Anomaly Detection"), ember.autograd.detect_anomaly():
        y = a * 2
    assert "test_anomaly_mode_keeps_the_forward_trace" in y._grad_fn._anomaly_trace
    assert "<ember autograd recorder" not in y._grad_fn._anomaly_trace
    assert (a * 2)._grad_fn._anomaly_trace is None


def test_forward_ad_goes_through_python():
    import ember.autograd.forward_ad as fwAD
    a = ember.randn(3, requires_grad=True)
    with fwAD.dual_level():
        d = fwAD.make_dual(a, ember.ones(3))
        y = d * d
        assert ember.allclose(fwAD.unpack_dual(y).tangent, 2 * a.detach())
    assert y._grad_fn is not None


def test_dispatch_mode_sees_the_saved_output_detached():
    from ember.utils._python_dispatch import TorchDispatchMode
    seen = []

    class Log(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(str(func))
            return func(*args, **(kwargs or {}))

    a = ember.randn(3, requires_grad=True)
    with Log():
        a.exp()
    assert "aten.exp.default" in seen and "aten.detach.default" in seen


def test_version_error_names_the_saved_tensor_s_creator():
    x = ember.ones(3, requires_grad=True)
    y = x * 2
    z = y * y
    y.add_(1)  # PyTorch names y's grad_fn at the time of the error: AddBackward0
    with pytest.raises(RuntimeError, match=r"which is output 0 of Add, is at version 1"):
        z.sum().backward()
    e = x.exp()
    e.add_(1)
    with pytest.raises(RuntimeError, match=r"which is output 0 of Exp, is at version 1"):
        e.sum().backward()


def test_threads_keep_their_own_state():
    """The recorder keeps each thread-local's dictionary per thread: a thread's sequence numbers,
    anomaly mode and excluded set are its own, also in a thread started after another ended."""
    a = ember.randn(3, requires_grad=True)
    main_nr = (a * 2)._grad_fn._seq_nr
    results = {}

    def run(name, anomaly):
        with ember.autograd.set_detect_anomaly(anomaly):
            n1 = (a * 2)._grad_fn
            n2 = (a * 2)._grad_fn
        results[name] = (n1._seq_nr, n2._seq_nr, n1._anomaly_trace is not None,
                         tls.state.excluded)

    for name, anomaly in [("t1", True), ("t2", False), ("t3", True)]:
        t = threading.Thread(target=run, args=(name, anomaly))
        t.start()
        t.join()
    for name, anomaly in [("t1", True), ("t2", False), ("t3", True)]:
        s1, s2, traced, excluded = results[name]
        assert s2 == s1 + 1 and s1 < 10  # a fresh counter per thread
        assert traced == anomaly
        assert excluded == tls.DEFAULT_EXCLUDED
    assert (a * 2)._grad_fn._seq_nr == main_nr + 1
    assert (a * 2)._grad_fn._anomaly_trace is None


def test_switched_off_records_in_python():
    code = ("import ember\n"
            "from ember.autograd import derivatives as d\n"
            "assert d._recorder_c is None\n"
            "a = ember.ones(2, requires_grad=True)\n"
            "(a * a).sum().backward()\n"
            "print(a.grad.tolist())\n")
    env = dict(os.environ, EMBER_AUTOGRAD_RECORDER_C="0")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[2.0, 2.0]"
