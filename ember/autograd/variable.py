"""``torch.autograd.Variable``: the legacy name of a tensor (``isinstance(t, Variable)`` holds for
every tensor), and ``Variable._execution_engine``, the handle on the autograd engine through which
``queue_callback`` installs a callback run at the end of the current backward pass."""
from . import engine as _engine


class _ImperativeEngine:
    """PyTorch's ``torch._C._ImperativeEngine``: the parts used from Python."""

    def queue_callback(self, callback):
        _engine.queue_callback(callback)

    def run_backward(self, tensors, grad_tensors, keep_graph, create_graph, inputs=(),
                     allow_unreachable=True, accumulate_grad=True):
        return _engine.run_backward(tensors, grad_tensors, keep_graph, create_graph,
                                    inputs=inputs or None, accumulate_grad=accumulate_grad)


class _VariableMeta(type):
    def __instancecheck__(cls, other):
        from .._tensor import Tensor
        return isinstance(other, Tensor)


class Variable(metaclass=_VariableMeta):
    _execution_engine = _ImperativeEngine()

    def __new__(cls, data, requires_grad=False, volatile=False):
        # Variable(t) returns a tensor, as in PyTorch since 0.4
        return data.detach().requires_grad_(requires_grad) if requires_grad else data
