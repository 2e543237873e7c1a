"""``__torch_dispatch__``: TorchDispatchMode and wrapper subclasses at the Python key, the
PythonTLSSnapshot, and ember.utils._pytree, compared with PyTorch where it defines the output."""
import collections

import pytest

import ember
from ember.utils import _pytree as pytree
from ember.utils._python_dispatch import TorchDispatchMode, _get_current_dispatch_mode


def _modes(lib, dispatch_mod):
    class DispatchLogger(dispatch_mod.TorchDispatchMode):
        """The seed's logger (003, section 5), recording instead of printing."""

        def __init__(self):
            super().__init__()
            self.lines = []

        def __torch_dispatch__(self, func, types, args, kwargs=None):
            self.lines.append(f"{func.__module__.split('.')[-1]}.{func.__name__}")
            return func(*args, **(kwargs or {}))

    class OpCounter(dispatch_mod.TorchDispatchMode):
        """The seed's exercise 1."""

        def __init__(self):
            super().__init__()
            self.ops = {}

        def __torch_dispatch__(self, func, types, args, kwargs=None):
            name = f"{func.__module__.split('.')[-1]}.{func.__name__}"
            self.ops[name] = self.ops.get(name, 0) + 1
            return func(*args, **(kwargs or {}))
    return DispatchLogger, OpCounter


def _torch_modes(torch):
    import torch.utils._python_dispatch as tpd
    return _modes(torch, tpd)


def _ember_modes():
    import ember.utils._python_dispatch as epd
    return _modes(ember, epd)


def test_dispatch_logger_on_linear(torch):
    nn = pytest.importorskip("ember.nn")
    DispatchLogger, _ = _ember_modes()
    layer = nn.Linear(16, 32)
    x = ember.randn(4, 16)
    with DispatchLogger() as log:
        y = layer(x)
    assert log.lines == ["aten.t.default", "aten.addmm.default"]
    TLogger, _ = _torch_modes(torch)
    tlayer, tx = torch.nn.Linear(16, 32), torch.randn(4, 16)
    with TLogger() as tlog:
        tlayer(tx)
    assert log.lines == tlog.lines
    assert tuple(y.shape) == (4, 32)


def test_op_counter_on_mlp(torch):
    nn = pytest.importorskip("ember.nn")
    _, OpCounter = _ember_modes()
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 10))
    x = ember.randn(16, 256)
    with OpCounter() as counter:
        model(x)
    _, TCounter = _torch_modes(torch)
    tmodel = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(),
                                 torch.nn.Linear(512, 10))
    tx = torch.randn(16, 256)
    with TCounter() as tcounter:
        tmodel(tx)
    # aten.detach.default: relu's autograd saves its output for backward, and that shallow copy
    # goes through the Python key while a mode is active
    assert counter.ops == tcounter.ops == {"aten.t.default": 2, "aten.addmm.default": 2,
                                           "aten.relu.default": 1, "aten.detach.default": 1}


def test_handler_sees_ops_after_autograd_with_pytorch_tls(torch):
    seen = []

    class M(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            seen.append((str(func), types, out.requires_grad, out.grad_fn is None,
                         ember._C._dispatch_tls_local_include_set().has("Python"),
                         ember._C._dispatch_tls_local_exclude_set().has("AutogradCPU")))
            return out
    x = ember.ones(2, requires_grad=True)
    with M():
        y = x * 2
    # the handler's own call ran below autograd; the outer call still recorded the graph
    assert seen == [("aten.mul.Tensor", (), False, True, False, True)]
    assert type(y.grad_fn).__name__ == "MulBackward0"
    assert not ember._C._dispatch_tls_local_include_set().has("Python")
    with M():
        assert ember._C._dispatch_tls_local_include_set().has("Python")
        assert ember._C._dispatch_tls_local_include_set().has("PythonTLSSnapshot")


def test_args_and_kwargs_as_pytorch_passes_them(torch):
    def run(lib, mod):
        got = []

        class M(mod.TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                got.append((str(func), len(args), sorted(kwargs or {})))
                return func(*args, **(kwargs or {}))
        x = lib.ones(2, 3)
        with M():
            x.sum(0)
            x.sum(0, keepdim=True)
            lib.add(x, x, alpha=2)
            lib.add(x, x)
        return got
    import torch.utils._python_dispatch as tpd
    import ember.utils._python_dispatch as epd
    assert run(ember, epd) == run(torch, tpd)


def test_modes_nest_and_restore_on_exception():
    order = []

    class Tag(TorchDispatchMode):
        def __init__(self, tag):
            super().__init__()
            self.tag = tag

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            order.append(self.tag)
            return func(*args, **(kwargs or {}))
    with Tag("outer"):
        with Tag("inner"):
            ember.ones(1)
    assert order == ["inner", "outer"]  # the innermost mode runs first, then passes it on
    assert _get_current_dispatch_mode() is None
    with pytest.raises(RuntimeError, match="boom"):
        with Tag("a"):
            raise RuntimeError("boom")
    assert _get_current_dispatch_mode() is None
    assert not ember._C._dispatch_tls_local_include_set().has("Python")

    class Failing(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            raise ValueError("in handler")
    with pytest.raises(ValueError, match="in handler"):
        with Failing():
            ember.ones(1) + 1
    assert _get_current_dispatch_mode() is None and ember.ones(1).tolist() == [1.0]


class LoggingTensor(ember.Tensor):
    """A wrapper subclass: the outer tensor has metadata only, ``elem`` holds the data."""

    log = []
    __torch_function__ = ember._C._disabled_torch_function_impl

    @staticmethod
    def __new__(cls, elem):
        r = ember.Tensor._make_wrapper_subclass(cls, elem.size(), strides=elem.stride(),
                                                dtype=elem.dtype, device=elem.device,
                                                requires_grad=elem.requires_grad)
        r.elem = elem
        return r

    def __repr__(self):
        return f"LoggingTensor({self.elem!r})"

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        def unwrap(e):
            return e.elem if isinstance(e, LoggingTensor) else e

        def wrap(e):
            return LoggingTensor(e) if isinstance(e, ember.Tensor) else e
        cls.log.append(str(func))
        out = func(*pytree.tree_map(unwrap, args), **pytree.tree_map(unwrap, kwargs or {}))
        return pytree.tree_map(wrap, out)


def test_logging_tensor_forward_and_backward():
    LoggingTensor.log.clear()
    a = LoggingTensor(ember.ones(2, 3, requires_grad=True))
    assert ember._C._dispatch_keys(a).has("Python")
    assert a.data_ptr() == 0 and a.shape == (2, 3)
    b = (a * 2).sum()
    assert type(b) is LoggingTensor and type(b.grad_fn).__name__ == "SumBackward0"
    assert LoggingTensor.log == ["aten.mul.Tensor", "aten.sum.default"]
    b.backward()
    assert type(a.grad) is LoggingTensor and a.grad.elem.tolist() == [[2.0] * 3] * 2
    assert "aten.expand.default" in LoggingTensor.log


def test_make_subclass_shares_storage():
    class Plain(ember.Tensor):
        pass
    data = ember.arange(4.0)
    s = ember.Tensor._make_subclass(Plain, data, True)
    assert type(s) is Plain and s.requires_grad and s.data_ptr() == data.data_ptr()
    assert not ember._C._dispatch_keys(s).has("Python")


def test_multiple_dispatch_failure():
    class Nope(ember.Tensor):
        @staticmethod
        def __new__(cls, elem):
            return ember.Tensor._make_wrapper_subclass(cls, elem.size(), dtype=elem.dtype)

        @classmethod
        def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
            return NotImplemented
    with pytest.raises(TypeError, match="Multiple dispatch failed for 'ember._ops.aten.neg.default'"):
        ember.neg(Nope(ember.ones(2)))


def test_pytree_matches_pytorch(torch):
    import torch.utils._pytree as tp
    P = collections.namedtuple("P", "x y")
    trees = [{"a": (1, [2, 3]), "b": None}, P(1, [2]), [1, (2, {"k": 3})], 7,
             collections.OrderedDict(z=1, a=2)]
    for tree in trees:
        e_leaves, e_spec = pytree.tree_flatten(tree)
        t_leaves, t_spec = tp.tree_flatten(tree)
        assert e_leaves == t_leaves
        assert repr(e_spec).replace("namedtuple", "X") == repr(t_spec).replace("namedtuple", "X")
        assert pytree.tree_unflatten(e_leaves, e_spec) == tree
        assert pytree.tree_map(lambda v: v if v is None else v * 10, tree) == \
            tp.tree_map(lambda v: v if v is None else v * 10, tree)
    assert pytree.tree_map_only(int, str, (1, 2.0)) == ("1", 2.0)
    with pytest.raises(ValueError):
        pytree.tree_unflatten([1], pytree.tree_structure((1, 2)))
