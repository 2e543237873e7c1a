"""``__torch_function__``: subclasses and TorchFunctionMode at the Python API layer, compared with
PyTorch (which functions are reported, what types the results get, priority, guards)."""
import contextlib

import pytest

import ember
from ember import overrides


def _define(lib):
    """The same subclasses and mode in ember and in PyTorch (``lib`` is ember or torch)."""
    class Foo(lib.Tensor):
        pass

    class ShapeTracker(lib.Tensor):
        log = []

        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}

            def get_shape(t):
                # the seed's version reads t.shape here unguarded, which recurses forever in
                # PyTorch too (shape goes through __torch_function__)
                with lib._C.DisableTorchFunctionSubclass():
                    return tuple(t.shape) if isinstance(t, lib.Tensor) else None
            shapes = [get_shape(a) for a in args if isinstance(a, lib.Tensor)]
            result = super().__torch_function__(func, types, args, kwargs)
            out = get_shape(result) if isinstance(result, lib.Tensor) else None
            cls.log.append(f"{func.__name__}: {shapes} -> {out}")
            return result

    class Recorder(lib.overrides.TorchFunctionMode):
        def __init__(self, tag=""):
            super().__init__()
            self.tag = tag
            self.calls = []

        def __torch_function__(self, func, types, args=(), kwargs=None):
            self.calls.append((self.tag + func.__name__, len(args), tuple(t.__name__ for t in types)))
            return func(*args, **(kwargs or {}))
    return Foo, ShapeTracker, Recorder


def _shape_tracker_run(lib):
    Foo, ShapeTracker, _ = _define(lib)
    a = lib.ones(3, 4).as_subclass(ShapeTracker)
    b = lib.ones(4, 5).as_subclass(ShapeTracker)
    results = [a @ b, a.sum(0), lib.add(a, 1), a[0], a.view(12), a + lib.ones(4),
               lib.ones(4) + a, a.to(lib.float64)]
    return ShapeTracker.log, [type(r).__name__ for r in results], [tuple(r.shape) for r in results]


def test_shape_tracker_matches_pytorch(torch):
    e_log, e_types, e_shapes = _shape_tracker_run(ember)
    t_log, t_types, t_shapes = _shape_tracker_run(torch)
    assert e_log == t_log
    assert e_types == t_types
    assert e_shapes == t_shapes
    assert "matmul: [(3, 4), (4, 5)] -> (3, 5)" in e_log


def test_results_wrapped_in_subclass_and_plain_stays_plain():
    Foo, _, _ = _define(ember)
    x = ember.ones(2, 3).as_subclass(Foo)
    assert type(x) is Foo
    assert type(x + 1) is Foo and type(x.sum()) is Foo and type(ember.mul(x, 2)) is Foo
    mx = x.max(0)
    assert type(mx).__name__ == "max" and type(mx.values) is Foo and type(mx.indices) is Foo
    assert type(x.shape) is ember.Size and isinstance(x.size(0), int)
    assert type(ember.ones(2) + 1) is ember.Tensor
    with ember._C.DisableTorchFunctionSubclass():
        assert type(x + 1) is ember.Tensor
    assert type(x + 1) is Foo


def test_as_subclass_shares_data_and_autograd():
    Foo, _, _ = _define(ember)
    base = ember.ones(3, requires_grad=True)
    x = base.as_subclass(Foo)
    assert x.data_ptr() == base.data_ptr() and x.requires_grad
    (x * 2).sum().backward()
    assert base.grad.tolist() == [2.0, 2.0, 2.0]
    with pytest.raises(TypeError):
        base.as_subclass(int)


def test_priority_subclass_before_superclass_and_not_implemented():
    order = []

    class A(ember.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            order.append("A")
            return NotImplemented

    class B(A):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            order.append("B")
            return NotImplemented

    class C(ember.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            order.append("C")
            return "handled by C"

    a, b, c = (ember.ones(1).as_subclass(k) for k in (A, B, C))
    with pytest.raises(TypeError, match="Multiple dispatch failed for 'ember.add'"):
        ember.add(a, b)
    assert order == ["B", "A"]  # the subclass B first, though it is the second argument
    order.clear()
    assert ember.add(a, c) == "handled by C"
    assert order == ["A", "C"]


def test_mode_reports_public_functions_like_pytorch(torch):
    def run(lib):
        _, _, Recorder = _define(lib)
        a, b = lib.ones(2), lib.ones(2)
        with Recorder() as m:
            a + b
            1 + a
            -a
            a @ b
            a += b
            a[0]
            lib.add(a, b, alpha=2)
            a.view(2, 1)
            a.sum(dim=0)
            lib.ones(2)
        return m.calls
    # names and argument counts (PyTorch also passes types=(Tensor,) for some Python-level
    # dunders such as __neg__, an accident of where they are written)
    assert [c[:2] for c in run(ember)] == [c[:2] for c in run(torch)]


def test_modes_nest_and_restore_on_exception():
    _, _, Recorder = _define(ember)
    outer, inner = Recorder("outer:"), Recorder("inner:")
    with outer:
        with inner:
            ember.ones(2).neg()
        ember.ones(2).abs()
    # the inner mode sees the call first and passes it on to the outer one
    assert [c[0] for c in inner.calls] == ["inner:ones", "inner:neg"]
    assert [c[0] for c in outer.calls] == ["outer:ones", "outer:neg", "outer:ones", "outer:abs"]
    assert overrides._get_current_function_mode() is None
    with pytest.raises(ValueError):
        with Recorder():
            raise ValueError("boom")
    assert ember._C._len_torch_function_stack() == 0 and not overrides._TF_ON.count(inner)
    with Recorder() as m, ember._C.DisableTorchFunction():
        ember.ones(1)
    assert m.calls == []


def test_has_torch_function_and_handle(torch):
    Foo, _, _ = _define(ember)
    x = ember.ones(2).as_subclass(Foo)
    assert overrides.has_torch_function((x,)) and not overrides.has_torch_function((ember.ones(1),))
    assert overrides.has_torch_function_variadic(1, x)
    assert overrides.has_torch_function_unary(x)

    class Duck:
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return ("duck", func.__name__)

    def my_func(t):
        if overrides.has_torch_function((t,)):
            return overrides.handle_torch_function(my_func, (t,), t)
        return "plain"
    assert my_func(Duck()) == ("duck", "my_func")
    assert my_func(ember.ones(1)) == "plain"
    TFoo, _, _ = _define(torch)
    assert torch.overrides.has_torch_function((torch.ones(2).as_subclass(TFoo),))


def test_get_overridable_functions_lists_functions_and_methods():
    fns = overrides.get_overridable_functions()
    assert ember.add in fns[ember] and ember.Tensor.add in fns[ember.Tensor]
    assert ember.ones not in fns[ember]
    assert ember.Tensor.__getitem__ in fns[ember.Tensor]


def test_parameter_opts_out(torch):
    import ember.nn as nn
    p = nn.Parameter(ember.ones(2))
    tp = torch.nn.Parameter(torch.ones(2))
    assert type(p * 2).__name__ == type(tp * 2).__name__ == "Tensor"


def test_functional_calls_take_torch_function_as_torch():
    """nn.functional's functions ask __torch_function__ first, as PyTorch's do: a subclass, and
    a TorchFunctionMode, see F.softmax itself rather than the ops inside it."""
    import torch

    def seen_by(lib):
        seen = []

        class Sub(lib.Tensor):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                seen.append(func.__name__)
                return super().__torch_function__(func, types, args, kwargs)
        F = lib.nn.functional
        x = lib.ones(1, 1, 4).as_subclass(Sub)
        F.softmax(x, -1)
        F.linear(x, lib.ones(2, 4))
        F.layer_norm(x, (4,))
        F.conv1d(x, lib.ones(1, 1, 2))
        F.scaled_dot_product_attention(x, x, x)

        class Mode(lib.overrides.TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                seen.append("mode:" + func.__name__)
                return func(*args, **(kwargs or {}))
        with Mode():
            F.gelu(lib.ones(2), approximate="tanh")
        return seen
    assert seen_by(ember) == seen_by(torch)
    assert seen_by(ember)[-1] == "mode:gelu"


def _ops_seen_by_torch_function(lib):
    seen = []

    class Logged(lib.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            seen.append(func.__name__)
            return super().__torch_function__(func, types, args, kwargs or {})

    class Mode(lib.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            seen.append(func.__name__)
            return func(*args, **(kwargs or {}))

    x = lib.ones(2).as_subclass(Logged)
    kinds = [type(r).__name__ for r in (lib.ops.aten.add(x, x), lib.ops.aten.add.Tensor(x, x),
                                        lib.ops.aten.sum.default(x))]
    with Mode():
        lib.ops.aten.mul.Tensor(lib.ones(2), 2)
    return seen, kinds


def test_ops_calls_go_through_torch_function():
    """torch.ops.aten packets and overloads check their arguments for __torch_function__ as a
    binding does (PyTorch's C++ does it for them): subclasses and modes see the op itself."""
    torch = pytest.importorskip("torch")
    assert _ops_seen_by_torch_function(ember) == _ops_seen_by_torch_function(torch)


def _unhandled_messages(lib):
    class A(lib.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return NotImplemented

    class B(A):
        pass

    class Mode(lib.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            return NotImplemented

        def __repr__(self):
            return "Mode()"

    x, y = lib.ones(2).as_subclass(A), lib.ones(2).as_subclass(B)
    calls = [lambda: lib.ops.aten.add.Tensor(x, y), lambda: lib.ops.aten.add(x, y),
             lambda: lib.add(x, y), lambda: x.sum(0), lambda: lib.cat([x, y]),
             lambda: lib.nn.functional.relu(x), lambda: lib.einsum("i,i->", x, y)]
    messages = []
    for mode in (False, True):
        with Mode() if mode else contextlib.nullcontext():
            for call in calls:
                with pytest.raises(TypeError) as info:
                    call()
                messages.append(str(info.value).replace(lib.__name__, "torch")
                                .replace(".<locals>", "").replace("_unhandled_messages.", ""))
    return messages


def test_unhandled_torch_function_messages():
    """No handler takes the call: PyTorch's C++ bindings and torch.ops say 'Multiple dispatch
    failed' and list the mode and subclasses; its Python functions say 'no implementation
    found', naming the function by module, and add the mode."""
    torch = pytest.importorskip("torch")
    assert _unhandled_messages(ember) == _unhandled_messages(torch)


def _operator_outcomes(lib):
    class A(lib.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return NotImplemented

    x = lib.ones(2).as_subclass(A)
    outcomes = []
    for call in (lambda: x + 1, lambda: 1 - x, lambda: 2 / x, lambda: x @ x, lambda: x == 1,
                 lambda: -x, lambda: abs(x)):
        try:
            outcomes.append(repr(call()))
        except TypeError as e:
            outcomes.append(str(e).replace(lib.__name__ + ".", "torch."))
    return outcomes


def test_operator_type_error_becomes_not_implemented():
    """A binary operator whose __torch_function__ handlers all decline returns NotImplemented,
    so Python reports the unsupported operand types; a unary one raises the binding's error."""
    torch = pytest.importorskip("torch")
    assert _operator_outcomes(ember) == _operator_outcomes(torch)
