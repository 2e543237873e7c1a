"""``map(f, xs, *args)`` (PyTorch's ``torch._higher_order_ops.map``) and its operator
``map_impl`` (``torch.ops.higher_order.map_impl``): ``f`` applied to every slice of the pytree
``xs`` along its first dim, with the same extra ``args`` each time, the results stacked.

PyTorch runs it eagerly by capturing it with Dynamo, which checks the body once; ember runs
``f`` with its own ops slice after slice (autograd records each call, so gradients reach ``xs``
and ``args``) and makes those checks on the first call."""
from .._ops.higher_order_operator import HigherOrderOperator
from ..utils import _pytree as pytree
from .utils import (_stack_pytree, _unstack_pytree, checked_first_call, graph_break_error,
                    register_higher_order)

__all__ = ["map", "map_impl"]


class MapImpl(HigherOrderOperator):
    """``map_impl(f, xs, pos_args)``: ``f(*x_slices, *pos_args)`` for each slice of the flat
    list ``xs``, the returned pytrees stacked."""

    def __init__(self):
        super().__init__("map_impl")


map_impl = register_higher_order(MapImpl())


@map_impl.py_impl("CompositeExplicitAutograd")
def map_dense(f, xs, pos_args):
    pytrees = [f(*inp, *pos_args) for inp in _unstack_pytree(xs)]
    return _stack_pytree(pytrees)


class _MapBody:
    """The user's ``f`` on flat arguments, as ``map_impl`` calls it; its first call is checked
    as PyTorch's Dynamo checks the body it traces."""

    def __init__(self, f, xs_spec, args_spec, num_xs):
        self.f, self.xs_spec, self.args_spec, self.num_xs = f, xs_spec, args_spec, num_xs
        self.checked = False

    def _call(self, *flat_args):
        xs = pytree.tree_unflatten(list(flat_args[:self.num_xs]), self.xs_spec)
        args = pytree.tree_unflatten(list(flat_args[self.num_xs:]), self.args_spec)
        return self.f(xs, *args)

    def __call__(self, *flat_args):
        if self.checked:
            return self._call(*flat_args)
        from .._tensor import Tensor
        hop = "torch.ops.higher_order.map_impl"
        if not callable(self.f):
            listed = ", ".join("TensorVariable()" for _ in range(self.num_xs))
            raise graph_break_error(
                hop, "Unsupported function call",
                f"Dynamo does not know how to trace the function `{self.f}`",
                [f"Avoid calling `{self.f}` in your code.", "Please report an issue to PyTorch."],
                f"call_function ConstantVariable({type(self.f).__name__}: {self.f!r}) "
                f"[{listed}] {{}}", 147)
        out = checked_first_call(map_impl, self._call, flat_args)
        leaves = pytree.tree_leaves(out)
        if not all(t is None or isinstance(t, Tensor) for t in leaves):
            types = [f"<class 'torch._dynamo.variables.{_dynamo_module(t)}'>" for t in leaves
                     if t is not None]
            raise graph_break_error(hop, "HOP: non torch.Tensor leaf",
                                    "Expected all leaves to be of torch.Tensor type.\n", (),
                                    f"args types: [{', '.join(types)}]", 301)
        self.checked = True
        return out


def _dynamo_module(v):
    from .._tensor import Tensor
    if isinstance(v, Tensor):
        return "tensor.TensorVariable"
    if v is None or isinstance(v, (bool, int, float, str)):
        return "constant.ConstantVariable"
    return "user_defined.UserDefinedObjectVariable"


def map(f, xs, *args):
    r"""``f(x, *args)`` for every slice ``x`` of ``xs`` along dim 0 (``xs`` a tensor or a
    pytree of tensors of one leading size), the results stacked leaf by leaf::

        out = []
        for idx in range(xs.size(0)):
            out.append(f(xs.select(0, idx), *args))
        torch.stack(out)
    """
    from .._tensor import Tensor
    flat_xs, xs_spec = pytree.tree_flatten(xs)
    flat_args, args_spec = pytree.tree_flatten(args)
    if not all(isinstance(t, Tensor) for t in flat_xs):
        raise RuntimeError(f"Mapped xs can only consist of tensors. Got xs {flat_xs}.")

    shapes = [x.shape for x in flat_xs]
    leading_dim_size = shapes[0][0]
    if leading_dim_size == 0:
        raise RuntimeError("Leading dimensions of mapped xs cannot be 0.")
    if any(cur_shape[0] != leading_dim_size for cur_shape in shapes):
        raise RuntimeError(f"Leading dimensions of mapped xs must be consistent. Got shapes "
                           f"{shapes}.")

    body = _MapBody(f, xs_spec, args_spec, len(flat_xs))
    return map_impl(body, flat_xs, flat_args)
