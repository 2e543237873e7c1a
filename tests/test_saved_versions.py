"""Saved-tensor version checks beside PyTorch: in-place writes to values a node saved, through
views, detach() (which shares the version counter) and .data (which does not), and the names
and versions PyTorch's message reports."""
import pytest
import torch

import ember


def _mul_other_is_self(T):
    x = T.randn(3, requires_grad=True)
    y = x * 2
    y.mul_(y.detach()).sum().backward()  # mul_ saved `other`, which it then wrote


def _mul_self_by_self(T):
    y = T.randn(3, requires_grad=True) * 2
    y.mul_(y).sum().backward()


def _saved_input(T):
    y = T.randn(3, requires_grad=True) * 2
    z = y * y
    y.add_(1)
    z.sum().backward()


def _saved_output(op):
    def case(T):
        y = getattr(T.randn(3, requires_grad=True), op)()
        y.mul_(2)
        y.sum().backward()
    return case


def _through_detach(T):
    y = T.randn(3, requires_grad=True).exp()
    z = y * 1
    y.detach().add_(1)
    z.sum().backward()


def _through_data(T):
    y = T.randn(3, requires_grad=True).exp()
    y.data.add_(1)  # .data has a version counter of its own
    y.sum().backward()


def _leaf_under_no_grad(T):
    x = T.randn(3, requires_grad=True)
    y = x * x
    with T.no_grad():
        x.add_(1)
    y.sum().backward()


def _leaf_through_detach(T):
    x = T.randn(3, requires_grad=True)
    z = (x * 2).div(x)
    x.detach().add_(1)
    z.sum().backward()


def _base_of_saved_view(T):
    y = T.randn(4, requires_grad=True) * 2
    v = y[:2]
    z = v * v
    y.add_(1)  # the view's grad_fn is regenerated: the message names AsStrided
    z.sum().backward()


def _view_of_saved_base(T):
    y = T.randn(4, requires_grad=True) * 2
    z = y * y
    y[:2].add_(1)
    z.sum().backward()


def _reshaped_view(T):
    y = T.randn(2, 3, requires_grad=True) * 1
    z = y.view(6)
    w = z * z
    y.add_(1)
    w.sum().backward()


def _multi_output_view(T):
    y = T.randn(3, 3, requires_grad=True) * 1
    u = y.unbind(0)
    w = u[0] * u[0]
    y.add_(1)
    w.sum().backward()


def _retain_graph_then_write(T):
    y = T.randn(3, requires_grad=True).exp()
    s = y.sum()
    s.backward(retain_graph=True)
    y.add_(1)
    s.backward()


def _inplace_view_op_last(op):
    def case(T):
        y = T.randn(3, 3, requires_grad=True) * 1
        z = y * y
        op(y)
        z.sum().backward()
    return case


def _copy_last(T):
    x = T.randn(3, requires_grad=True)
    y = T.zeros(3) + 0
    z = y * x
    y.copy_(x)
    z.sum().backward()


def _mark_dirty(T):
    class Double(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2
    y = T.randn(3, requires_grad=True) * 1
    z = y * y
    Double.apply(y)
    z.sum().backward()


def _unmodified(T):
    y = T.randn(3, requires_grad=True) * 2
    z = y.exp()
    y.add_(1)  # exp saved its result, not y
    z.sum().backward()


CASES = {
    "mul_other_is_self": _mul_other_is_self, "mul_self_by_self": _mul_self_by_self,
    "saved_input": _saved_input, "exp_result": _saved_output("exp"),
    "sigmoid_result": _saved_output("sigmoid"), "tanh_result": _saved_output("tanh"),
    "through_detach": _through_detach, "through_data": _through_data,
    "leaf_under_no_grad": _leaf_under_no_grad, "leaf_through_detach": _leaf_through_detach,
    "base_of_saved_view": _base_of_saved_view, "view_of_saved_base": _view_of_saved_base,
    "reshaped_view": _reshaped_view, "multi_output_view": _multi_output_view,
    "retain_graph_then_write": _retain_graph_then_write,
    "t_": _inplace_view_op_last(lambda y: y.t_()),
    "transpose_": _inplace_view_op_last(lambda y: y.transpose_(0, 1)),
    "squeeze_": _inplace_view_op_last(lambda y: y.squeeze_()),
    "fill_": _inplace_view_op_last(lambda y: y.fill_(2.0)),
    "copy_": _copy_last, "mark_dirty": _mark_dirty, "unmodified": _unmodified,
}


def _outcome(T, case):
    try:
        case(T)
    except Exception as e:  # the type and the whole message are compared
        return type(e).__name__, str(e)
    return "ok", None


@pytest.mark.parametrize("name", list(CASES))
def test_version_check_like_pytorch(name):
    assert _outcome(ember, CASES[name]) == _outcome(torch, CASES[name])


# In-place ops whose node PyTorch's derivatives.yaml declares itself: node name and gradient.
def _inplace_ops(T):
    F = T.nn.functional
    return {
        "eq_": lambda y: y.eq_(1.0), "eq_Tensor": lambda y: y.eq_(y.detach()),
        "lt_": lambda y: y.lt_(1.0), "ne_Tensor": lambda y: y.ne_(y.detach() * 2),
        "acosh_": lambda y: y.add_(2).acosh_(), "asinh_": lambda y: y.asinh_(),
        "atanh_": lambda y: y.mul_(0.1).atanh_(), "t_": lambda y: y.t_(),
        "transpose_": lambda y: y.transpose_(0, 1), "unsqueeze_": lambda y: y.unsqueeze_(0),
        "elu_": lambda y: F.elu_(y.sub_(1)), "celu_": lambda y: F.celu_(y.sub_(1)),
        "leaky_relu_": lambda y: F.leaky_relu_(y.sub_(1)),
        "threshold_": lambda y: F.threshold_(y, 0.5, 0.0),
    }


def _inplace_outcome(T, name):
    x = T.tensor([[0.25, 0.5, 1.0], [1.0, 1.5, 0.75]], requires_grad=True)
    r = _inplace_ops(T)[name](x.clone())
    node = type(r.grad_fn).__name__
    try:
        r.sum().backward()
    except Exception as e:
        return node, type(e).__name__, str(e)
    return node, x.grad.tolist()


@pytest.mark.parametrize("name", list(_inplace_ops(torch)))
def test_inplace_node_like_pytorch(name):
    assert _inplace_outcome(ember, name) == _inplace_outcome(torch, name)


def test_new_tensors_start_at_version_zero():
    """PyTorch's factories run below ADInplaceOrView, and so do the kernels of clone, to and
    bernoulli: their fills do not count as writes."""
    def versions(T):
        z = T.zeros(2, 3, requires_grad=True)
        made = [T.randn(3), T.rand(3, requires_grad=True), T.randint(5, (3,)), T.randperm(4),
                T.normal(0.0, 1.0, (3,)), T.randn_like(z), T.zeros_like(z), z.new_ones(3),
                z.clone(), z.t().contiguous(), z.double(), T.bernoulli(z.detach()),
                T.empty(3).normal_()]
        return [t._version for t in made]
    assert versions(ember) == versions(torch)
    assert ember.ops.aten.randn.default((3,))._version == \
        torch.ops.aten.randn.default((3,))._version


def _inplace_tangent(T, name):
    fa = T.autograd.forward_ad
    x = T.tensor([[-1.0, 0.5], [0.25, 2.0]])
    with fa.dual_level():
        d = fa.make_dual(x.clone(), T.tensor([[1.0, 2.0], [3.0, 4.0]]))
        return fa.unpack_dual(_inplace_ops(T)[name](d)).tangent.tolist()


@pytest.mark.parametrize("name", ["elu_", "celu_", "leaky_relu_", "threshold_", "t_", "eq_"])
def test_inplace_forward_ad_like_pytorch(name):
    assert _inplace_tangent(ember, name) == _inplace_tangent(torch, name)
