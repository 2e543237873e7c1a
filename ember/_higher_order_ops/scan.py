"""``scan(combine_fn, init, xs, *, dim=0, reverse=False)`` (PyTorch's
``torch._higher_order_ops.scan``): an inclusive scan with a carry, over pytrees of tensors.

``combine_fn(carry, x)`` returns ``(next_carry, y)``; the result is the last carry and every
step's ``y`` stacked along ``dim``. PyTorch runs it eagerly by capturing it with Dynamo, which
checks the body once (two returns, the carry's metadata equal to ``init``'s, no input mutation
or aliasing); ember runs the body with its own ops, one step after another, so autograd records
each step and gradients flow through the scan, and makes those checks on the first step.
``ember.compile`` keeps a ``scan`` call as one graph call, whose fake run and AOT trace go
through its steps."""
from .._ops.higher_order_operator import HigherOrderOperator
from ..utils import _pytree as pytree
from .utils import (_USER_ERROR_HINT, _list_repr, check_meta_consistency, checked_first_call,
                    graph_break_error, register_higher_order)

__all__ = ["scan", "scan_op", "generic_scan"]


class ScanOp(HigherOrderOperator):
    """``torch.ops.higher_order.scan``: ``(combine_fn, init, xs, additional_inputs)`` on flat
    lists, scanning over dim 0; the result is the flat list ``[*carry, *ys]``."""

    def __init__(self):
        super().__init__("scan")

    def __call__(self, combine_fn, init, xs, additional_inputs):
        if not isinstance(additional_inputs, (tuple, list)):
            raise AssertionError(f"additional_inputs must be a tuple or list, got "
                                 f"{type(additional_inputs)}")
        return super().__call__(combine_fn, init, xs, tuple(additional_inputs))


scan_op = register_higher_order(ScanOp())


def generic_scan(operator, init, xs, dim=0, additional_inputs=()):
    """The scan itself: ``operator(*carry, *x_slices, *additional_inputs)`` returns the flat
    ``[*next_carry, *y]`` at every step; the ``y`` of all steps are stacked."""
    import ember
    carry = list(init)
    if len(xs) == 0:
        return carry, []
    n_carry = len(init)
    ys = []
    for i in range(xs[0].shape[dim]):
        flat = pytree.tree_leaves(operator(*carry, *[x.select(dim, i) for x in xs],
                                           *additional_inputs))
        carry = flat[:n_carry]
        ys.append(flat[n_carry:])
    outs = [ember.stack(step) for step in zip(*ys)]
    return [*carry, *outs]


@scan_op.py_impl("CompositeExplicitAutograd")
def scan_op_dense(combine_fn, init, xs, additional_inputs):
    return generic_scan(combine_fn, init, xs, additional_inputs=additional_inputs)


def _variable_repr(v):
    """How PyTorch's Dynamo names a value in its messages."""
    from .._tensor import Tensor
    if isinstance(v, Tensor):
        return "TensorVariable()"
    if v is None or isinstance(v, (bool, int, float, str)):
        return f"ConstantVariable({type(v).__name__}: {v!r})"
    return f"{type(v).__name__}Variable()"


_NO_LEAF = object()


class _ScanBody:
    """The user's ``combine_fn`` on flat arguments, as ``scan_op`` calls it: the first call
    checks what it returns (PyTorch's Dynamo checks it while tracing) and records the
    structure ``(carry, y)`` comes in."""

    def __init__(self, combine_fn, spec_init, spec_xs, num_init_leaves, num_inp_leaves,
                 xs=()):
        self.combine_fn, self.spec_init, self.spec_xs = combine_fn, spec_init, spec_xs
        self.xs = xs  # the scanned tensors, for PyTorch's message naming the scan's arguments
        self.num_init_leaves, self.num_inp_leaves = num_init_leaves, num_inp_leaves
        self.out_spec = None

    def _call(self, *args):
        if len(args) != self.num_init_leaves + self.num_inp_leaves:
            raise AssertionError(f"combine_fn received wrong number of arguments, expected "
                                 f"{self.num_init_leaves + self.num_inp_leaves}, but got "
                                 f"{len(args)}")
        carry = pytree.tree_unflatten(list(args[:self.num_init_leaves]), self.spec_init)
        xs = pytree.tree_unflatten(list(args[self.num_init_leaves:]), self.spec_xs)
        return self.combine_fn(carry, xs)

    def __call__(self, *args):
        if self.out_spec is not None:
            return pytree.tree_leaves(self._call(*args))
        from .._tensor import Tensor
        hop = "torch.ops.higher_order.scan"
        result = checked_first_call(scan_op, self._call, args)
        # Dynamo unpacks what the body returns as an iterable (a tensor along its dim 0)
        if isinstance(result, (tuple, list)):
            items = list(result)
        elif isinstance(result, Tensor) and result.ndim > 0:
            items = list(result.unbind(0))
        else:
            items = [result]
        if len(items) != 2:
            listed = "[" + ", ".join(_variable_repr(v) for v in items) + "]"
            raise graph_break_error(
                hop, "torch.scan: improper combine_fn number of returns",
                f"Expect combine_fn to return a tuple (next_carry, y) but got {listed}.",
                [_USER_ERROR_HINT], listed, 343)
        init = list(args[:self.num_init_leaves])
        carry_leaves = pytree.tree_leaves(items[0])
        check_meta_consistency(init, carry_leaves, "init", "carry", hop)
        # a y leaf that is not a tensor (None included) cannot be stacked: PyTorch's fake run
        # of the captured scan fails on it
        y_leaves = pytree.tree_flatten(items[1], is_leaf=lambda v: v is None)[0]
        bad = next((y for y in y_leaves if not isinstance(y, Tensor)), _NO_LEAF)
        if bad is not _NO_LEAF:
            from .._dynamo.exc import TorchRuntimeError
            raise TorchRuntimeError(
                f"RuntimeError when making fake tensor call\n  Explanation: Dynamo failed to "
                f"run FX node with fake tensors: call_function scan(*(GraphModule(), "
                f"{_list_repr(init)}, {_list_repr(self.xs)}, []), **{{}}): got AttributeError("
                f"\"'{type(bad).__name__}' object has no attribute 'unsqueeze'\")\n  Hint: "
                f"{_USER_ERROR_HINT}\n\n  Developer debug context: \n\n For more details about "
                f"this graph break, please visit: "
                f"https://meta-pytorch.github.io/compile-graph-break-site/gb/gb4315.html")
        self.out_spec = pytree.tree_structure(
            type(result)(items) if isinstance(result, (tuple, list)) else tuple(items))
        return carry_leaves + y_leaves


def canonicalize_dim(rank, idx):
    """PyTorch's ``torch._prims_common.canonicalize_dim`` (a 0-dim tensor has dim 0)."""
    rank = max(rank, 1)
    if 0 <= idx < rank:
        return idx
    _idx = idx + rank if idx < 0 else idx
    if _idx < 0 or _idx >= rank:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-rank}, "
                         f"{rank - 1}], but got {idx})")
    return _idx


def scan(combine_fn, init, xs, *, dim=0, reverse=False):
    r"""Performs an inclusive scan with a combine function.

    ``combine_fn(carry, x) -> (next_carry, y)``: ``carry`` has ``init``'s pytree structure and
    metadata, ``x`` is a slice of ``xs`` along ``dim``. Returns ``(final_carry, out)``: ``out``
    has the structure of the ``y`` the function returns, each leaf the step results stacked
    along ``dim`` (in the order of ``xs`` also when ``reverse`` scans from the end)."""
    from .._tensor import Tensor
    import ember
    leaves_init, spec_init = pytree.tree_flatten(init)
    leaves_xs_orig, spec_xs = pytree.tree_flatten(xs)
    if len(leaves_xs_orig) == 0:
        return init, []

    ndim = leaves_xs_orig[0].ndim
    dim = canonicalize_dim(ndim, dim)

    if not callable(combine_fn):
        raise RuntimeError(f"Combine_fn must be a callable, but got {combine_fn}")
    if not isinstance(dim, int):
        raise RuntimeError("Dim must be an int, but got " + str(type(dim)))
    if not isinstance(reverse, bool):
        raise RuntimeError("Reverse must be a bool, but got " + str(type(reverse)))
    if len(leaves_init) == 0:
        raise RuntimeError("scan() operator requires init leaves.")
    for x in leaves_init:
        if not isinstance(x, Tensor):
            raise RuntimeError(f"All init leaves must be a Tensor but got {x}")
    for x in leaves_xs_orig:
        if not isinstance(x, Tensor):
            raise RuntimeError(f"All xs leaves must be a Tensor but got {x}")
    if any(x.ndim <= dim for x in leaves_xs_orig) or any(x.shape[dim] == 0
                                                         for x in leaves_xs_orig):
        raise RuntimeError("All xs leaves must at least have 'dim' number of dimensions and "
                           "scan dimension > 0")

    leaves_xs = [ember.movedim(x, dim, 0) if dim != 0 else x for x in leaves_xs_orig]
    if reverse:
        leaves_xs = [ember.flip(x, [0]) for x in leaves_xs]

    body = _ScanBody(combine_fn, spec_init, spec_xs, len(leaves_init), len(leaves_xs),
                     leaves_xs)
    flat = scan_op(body, leaves_init, leaves_xs, additional_inputs=())
    carry, out = pytree.tree_unflatten(flat, body.out_spec)

    if reverse:
        out = pytree.tree_map(lambda t: t.flip([0]), out)
    if dim != 0:
        out = pytree.tree_map(lambda t: ember.movedim(t, 0, dim) if dim < t.ndim else t, out)
    return carry, out
