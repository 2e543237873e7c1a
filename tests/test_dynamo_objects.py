"""ember.compile with user objects and functions that hold tensors, passed to or returned by a
function captured as one graph call (``ember.compiler.allow_in_graph``, as ember's own library
functions are): an object's tensors are graph inputs read through its attributes and guarded
(a later object is honoured), a returned object holds the real outputs (never FakeTensors), and
the tensors a function's closure or globals hold are inputs that gradients reach — as under
PyTorch's torch.compile."""
import dataclasses
import typing
import warnings

import pytest

import ember
from ember._dynamo.testing import CompileCounter


@pytest.fixture(autouse=True)
def _reset():
    ember._dynamo.reset()
    with warnings.catch_warnings():
        # a capture that fails internally falls back to eager with a RuntimeWarning
        warnings.simplefilter("error", RuntimeWarning)
        yield
    ember._dynamo.reset()


class Holder:
    def __init__(self, w, b, scale):
        self.w, self.b, self.scale = w, b, scale


@dataclasses.dataclass
class Pair:  # unhashable (eq=True): reached by generated code as a global, not by its repr
    w: object
    b: object


class Fields(typing.NamedTuple):
    w: object
    b: object


def _affine(x, h):
    return x * h.w * h.scale + h.b


def _make(x):
    return Holder(x * 2, x + 1, 3)


def _make_nested(x):
    return x - 1, (Fields(x * 2, x * 3), [x + 1])


def _apply(x, mod):
    return mod(x, 1) * 2


G_BIAS = None  # a global tensor a module-level mod reads (set by the test)


def _global_mod(s, h):
    return s * G_BIAS


def test_object_argument_is_not_frozen(torch):
    """Each object's own tensors (and attributes) reach the graph call: graph inputs named by
    their attribute sources, a guard on each, PyTorch's results for a second object."""
    aff = ember.compiler.allow_in_graph(_affine)
    placeholders = []

    def backend(gm, example_inputs):
        placeholders.append([n.name for n in gm.graph.nodes if n.op == "placeholder"])
        return gm.forward

    def f(x, h):
        return aff(x, h) + 1

    compiled = ember.compile(f, backend=backend)
    x = ember.arange(3.0)
    for w, b in ((2.0, 0.0), (5.0, 1.0)):
        got = compiled(x, Holder(ember.full((3,), w), ember.full((3,), b), 2))
        assert got.tolist() == (torch.arange(3.0) * w * 2 + b + 1).tolist()
    assert placeholders[0] == ["l_x_", "l_h_w_", "l_h_b_"]

    # dataclass and NamedTuple objects, read by another op
    def g(x, h):
        return ember.compiler.allow_in_graph(_sum_fields)(x, h)

    compiled = ember.compile(g, backend="eager")
    for make in (Pair, Fields):
        for w in (2.0, 7.0):
            h = make(ember.full((3,), w), ember.ones(3))
            assert compiled(x, h).tolist() == (torch.arange(3.0) + w + 1).tolist()
    # a changed non-tensor attribute recompiles (its value is guarded)
    cnt = CompileCounter()
    compiled = ember.compile(f, backend=cnt)
    for scale in (2, 3):
        assert compiled(x, Holder(ember.ones(3), ember.zeros(3), scale)).tolist() == \
            (torch.arange(3.0) * scale + 1).tolist()
    assert cnt.frame_count == 2


def _sum_fields(x, h):
    return x + h.w + h.b


def test_returned_object_holds_real_tensors(torch):
    """An object (or a NamedTuple inside a tuple) returned by a graph call holds the graph's
    real outputs, also after a graph break and when read by the captured code."""
    make = ember.compiler.allow_in_graph(_make)
    nested = ember.compiler.allow_in_graph(_make_nested)
    x = ember.arange(3.0)
    tx = torch.arange(3.0)

    def f(x):
        return make(x)

    h = ember.compile(f, backend="eager")(x)
    assert type(h) is Holder and type(h.w) is ember.Tensor and type(h.b) is ember.Tensor
    assert h.w.tolist() == (tx * 2).tolist() and h.b.tolist() == (tx + 1).tolist()
    assert h.scale == 3

    def g(x):
        h = make(x)
        return h.w * h.scale + h.b, h

    out, h = ember.compile(g, backend="eager")(x)
    assert out.tolist() == (tx * 6 + tx + 1).tolist() and type(h.w) is ember.Tensor

    s, (fields, lst) = ember.compile(nested, backend="eager")(x)
    assert type(fields) is Fields and type(fields.b) is ember.Tensor
    assert fields.b.tolist() == (tx * 3).tolist() and lst[0].tolist() == (tx + 1).tolist()
    assert s.tolist() == (tx - 1).tolist()


def test_captured_tensors_get_gradients(torch):
    """Tensors captured by a function passed to a graph call (its closure, a global it reads,
    a lambda made in the compiled code) are graph inputs: under aot_eager a gradient reaches
    them, PyTorch's values, and a rebound closure tensor is honoured."""
    global G_BIAS
    apply = ember.compiler.allow_in_graph(_apply)
    bias = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    tbias = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    x = ember.tensor([0.5, -1.0, 2.0])
    tx = torch.tensor([0.5, -1.0, 2.0])

    def closure_mod(s, h):
        return s + bias * bias * h

    def f(x):
        return apply(x, closure_mod).sum()

    ((tx + tbias * tbias) * 2).sum().backward()
    ember.compile(f, backend="aot_eager")(x).backward()
    assert bias.grad.tolist() == tbias.grad.tolist()

    bias.grad = None
    G_BIAS = bias

    def g(x):
        return apply(x, _global_mod).sum()
    ember.compile(g, backend="aot_eager")(x).backward()
    assert bias.grad.tolist() == (tx * 2).tolist()

    bias.grad = None

    def h(x, b):
        return apply(x, lambda s, k: s - b * k).sum()
    ember.compile(h, backend="aot_eager")(x, bias).backward()
    assert bias.grad.tolist() == [-2.0, -2.0, -2.0]

    # the closure's tensor is read at each call (a guarded input, not a constant)
    compiled = ember.compile(lambda x: apply(x, closure_mod), backend="aot_eager")
    first = compiled(x)
    bias = ember.tensor([0.0, 0.0, 0.0])
    assert first.tolist() == ((tx + tbias.detach() ** 2) * 2).tolist()
    assert compiled(x).tolist() == (tx * 2).tolist()


def _named(fn):
    """A decorator reading what HuggingFace's decorators read: the function's code object."""
    names = fn.__code__.co_varnames

    def wrapper(*args):
        assert "x" in wrapper.__wrapped__.__code__.co_varnames and names
        return fn(*args)
    wrapper.__wrapped__ = fn
    return wrapper


class _Scaled(ember.nn.Module):
    def forward(self, x):
        tag = f"{self.__class__.__name__}.{x.__class__.__name__}"  # (transformers' deprecation)
        return x * len(tag)


def test_class_and_code_attributes_fold_in_one_graph():
    """``obj.__class__`` is ``type(obj)`` for any traced value and a function's ``__code__`` is
    a constant, so code reading them (transformers' decorators) stays one graph."""
    m = _Scaled()

    @_named
    def f(x):
        return m(x) + 1

    cnt = CompileCounter()
    cf = ember.compile(f, backend=cnt, fullgraph=True)
    x = ember.ones(3)
    assert cf(x).tolist() == [len("_Scaled.Tensor") + 1.0] * 3
    assert cnt.frame_count == 1
