"""``associative_scan(combine_fn, xs, dim, reverse=False, combine_mode="pointwise")``
(PyTorch's ``torch._higher_order_ops.associative_scan``): an inclusive scan with an associative
``combine_fn`` over a pytree of tensors, computed as PyTorch computes it eagerly: a
parallel-prefix tree (``generic_associative_scan``) that combines every other element pairwise,
recurses on the half, and combines back, so float results round as PyTorch's do.

``combine_mode="generic"`` calls ``combine_fn`` under ``vmap`` on whole batches of slices (any
ops); ``"pointwise"`` (CUDA tensors only, as in PyTorch, where Inductor compiles it) calls it
on the batches directly and refuses a function with non-pointwise ops. The combine calls are
ember ops, so autograd differentiates through the tree."""
import functools

from .._ops.higher_order_operator import HigherOrderOperator
from ..utils import _pytree as pytree
from .scan import canonicalize_dim
from .utils import check_meta_consistency, first_slice_copy, graph_break_error, \
    register_higher_order, _USER_ERROR_HINT

__all__ = ["associative_scan", "associative_scan_op", "generic_associative_scan"]


def wrap_combine_fn_flat(*args, combine_fn, spec, num_leaves):
    if len(args) != 2 * num_leaves:
        raise AssertionError(f"Combine_fn received wrong number of arguments, expected "
                             f"{2 * num_leaves}, but got {len(args)}")
    lhs = pytree.tree_unflatten(list(args[:num_leaves]), spec)
    rhs = pytree.tree_unflatten(list(args[num_leaves:]), spec)
    return combine_fn(lhs, rhs)


def _slice(t, dim, start, end, step=1):
    import ember
    return ember.ops.aten.slice(t, dim, start, end, step)


def _interleave(a, b, dim=0):
    """``a[0], b[0], a[1], b[1], ...`` along ``dim`` (``a`` may be one longer than ``b``)."""
    import ember
    import ember.nn.functional as F
    b_trunc = a.shape[dim] == b.shape[dim] + 1
    if b_trunc:
        pad = ([0] * ((b.ndim - dim - 1) * 2 + 1) + [1]
               + [0] * (b.ndim * 2 - ((b.ndim - dim - 1) * 2 + 2)))
        b = F.pad(b, pad)
    stacked = ember.stack([a, b], dim=dim + 1)
    interleaved = ember.flatten(stacked, start_dim=dim, end_dim=dim + 1)
    if b_trunc:
        interleaved = _slice(interleaved, dim, 0, b.shape[dim] + a.shape[dim] - 1)
    return interleaved


def generic_associative_scan(operator, leaves, dim=0, additional_inputs=()):
    """The scan over ``dim`` of the tensors ``leaves`` by PyTorch's recursion: ``operator``
    (flat ``(*lhs, *rhs, *additional_inputs) -> pytree``) combines the even-odd neighbours,
    the half-length result is scanned, and its elements combined with the remaining even
    elements give the results at even positions."""
    import ember

    def call_operator(*args):
        return pytree.tree_leaves(operator(*args))

    def _scan(elems):
        num_elems = elems[0].shape[dim]
        if num_elems < 2:
            return elems
        reduced_elems = call_operator(*[_slice(e, dim, 0, -1, 2) for e in elems],
                                      *[_slice(e, dim, 1, None, 2) for e in elems],
                                      *additional_inputs)
        odd_elems = _scan(reduced_elems)
        if num_elems % 2 == 0:
            even_elems = call_operator(*[_slice(e, dim, 0, -1) for e in odd_elems],
                                       *[_slice(e, dim, 2, None, 2) for e in elems],
                                       *additional_inputs)
        else:
            even_elems = call_operator(*odd_elems,
                                       *[_slice(e, dim, 2, None, 2) for e in elems],
                                       *additional_inputs)
        # the first element of the scan is the first input element
        even_elems = [
            ember.cat([_slice(elem, dim, 0, 1), result], dim=dim)
            if result.shape.numel() > 0 and elem.shape[dim] > 0
            else result if result.shape.numel() > 0
            else _slice(elem, dim, 0, 1)
            for elem, result in zip(elems, even_elems)]
        if len(even_elems) != len(odd_elems):
            raise ValueError("length mismatch: {list(map(len, args))}")
        return [_interleave(e, o, dim=dim) for e, o in zip(even_elems, odd_elems)]

    return _scan(leaves)


class AssociativeScanOp(HigherOrderOperator):
    """``torch.ops.higher_order.associative_scan``: ``(combine_fn, xs, additional_inputs)``
    on a flat list, scanning over dim 0, ``combine_fn`` called on batches of slices."""

    def __init__(self):
        super().__init__("associative_scan")

    def __call__(self, combine_fn, xs, additional_inputs):
        if not isinstance(additional_inputs, (tuple, list)):
            raise AssertionError(f"additional_inputs must be a tuple or list, got "
                                 f"{type(additional_inputs)}")
        return super().__call__(combine_fn, xs, tuple(additional_inputs))


associative_scan_op = register_higher_order(AssociativeScanOp())


@associative_scan_op.py_impl("CompositeExplicitAutograd")
def associative_scan_op_dense(combine_fn, xs, additional_inputs):
    return generic_associative_scan(combine_fn, xs, additional_inputs=additional_inputs)


def _is_pointwise_use(node):
    """PyTorch's Inductor ``is_pointwise_use``: a use by a pointwise op, or by a view whose
    own uses are all pointwise."""
    import operator
    import ember
    from .._ops.overload import OpOverload
    if node.op != "call_function":
        return False
    target = node.target
    if target is operator.getitem or (isinstance(target, OpOverload) and any(
            r.alias and not r.is_write for r in target._schema.returns)):
        return all(_is_pointwise_use(u) for u in node.users)
    return isinstance(target, OpOverload) and ember.Tag.pointwise in target.tags


def _check_pointwise(combine_fn, xs):
    """PyTorch's Dynamo check for ``combine_mode="pointwise"``: every value of the traced
    ``combine_fn`` is used only by pointwise ops (or returned)."""
    from ..fx.experimental.proxy_tensor import make_fx
    samples = [first_slice_copy(x) for x in xs] * 2
    gm = make_fx(combine_fn)(*samples)
    for node in gm.graph.nodes:
        if not all(_is_pointwise_use(u) or u.op == "output" for u in node.users):
            raise RuntimeError("For combine_mode='pointwise', the combine_fn needs to be "
                               "pointwise")


def _check_pointwise_body(combine_fn, leaves_xs, spec_xs):
    """What PyTorch's Dynamo checks of a pointwise ``combine_fn`` it captures: it returns
    the structure of ``xs``, slices of ``xs``'s metadata, with pointwise ops only."""
    hop = "torch.ops.higher_order.associative_scan"
    samples = [first_slice_copy(x) for x in leaves_xs]
    out = combine_fn(*samples, *samples)
    results, out_spec = pytree.tree_flatten(out)
    if out_spec.num_leaves < 1:
        raise graph_break_error(
            hop, "torch.associative_scan: combine_fn improper number of leaves",
            f"combine_fn needs to produce one pytree for the output but combine_fn produces "
            f"the pytree {out_spec}.", [_USER_ERROR_HINT], str(out_spec))
    if spec_xs.is_leaf() != out_spec.is_leaf() or spec_xs != out_spec:
        raise graph_break_error(
            hop, "torch.associative_scan: mismatched input/output tree structure",
            f"The tree structure of the xs and the outs of the combine_fn are expected to be "
            f"identical, but got xs: {spec_xs} vs output: {out_spec}.", [_USER_ERROR_HINT],
            f"xs: {spec_xs}, output: {out_spec}")
    check_meta_consistency(samples, results, "initial_xs", "combine_fn_output", hop,
                           include_contiguity=False)
    _check_pointwise(combine_fn, leaves_xs)


def associative_scan(combine_fn, xs, dim, reverse=False, combine_mode="pointwise"):
    r"""Performs an inclusive scan with an associative combine function.

    ``combine_fn(lhs, rhs) -> out``: ``lhs``, ``rhs`` and ``out`` have the pytree structure of
    ``xs``. ``dim``: the dimension to scan over; ``reverse``: scan from the end;
    ``combine_mode``: ``"pointwise"`` (CUDA tensors, pointwise ops only) or ``"generic"``."""
    import ember
    from .._tensor import Tensor
    leaves_xs_orig, spec_xs = pytree.tree_flatten(xs)

    ndim = leaves_xs_orig[0].ndim
    dim = canonicalize_dim(ndim, dim)

    if not callable(combine_fn):
        raise ValueError(f"Combine_fn must be a callable, but got {combine_fn}")
    if not isinstance(dim, int):
        raise ValueError("Dim must be an int, but got " + str(type(dim)))
    if not isinstance(reverse, bool):
        raise RuntimeError("Reverse must be a bool, but got " + str(type(reverse)))
    if combine_mode not in ["pointwise", "generic"]:
        raise ValueError(f"Combine_mode must either 'pointwise' or 'generic', but got "
                         f"{combine_mode}")
    if combine_mode == "pointwise" and not all(x.device.type in ("cuda", "xpu")
                                               for x in leaves_xs_orig):
        raise ValueError("For combine_mode='pointwise', all input tensors need to be on CUDA "
                         "or XPU")
    if len(leaves_xs_orig) == 0:
        raise ValueError("Expected at least 1 xs leaf")
    if any(not isinstance(x, Tensor) for x in leaves_xs_orig):
        raise ValueError("xs leaves must be a Tensor")
    if any(x.is_sparse for x in leaves_xs_orig):
        raise ValueError("xs leaves must dense Tensors, consider using `to_dense()`")
    if any(x.ndim <= dim for x in leaves_xs_orig) or any(x.shape[dim] == 0
                                                         for x in leaves_xs_orig):
        raise ValueError("All xs leaves must at least have 'dim' number of dimensions and "
                         "scan dimension > 0")

    leaves_xs = [ember.movedim(x, dim, 0) for x in leaves_xs_orig]
    if reverse:
        leaves_xs = [ember.flip(x, [0]) for x in leaves_xs]

    n = len(leaves_xs)
    if combine_mode == "generic":
        # the combine function sees single slices; vmap runs it on whole batches of them
        in_dims = pytree.tree_unflatten([0] * n, spec_xs)
        flat_fn = functools.partial(
            wrap_combine_fn_flat,
            combine_fn=ember.vmap(combine_fn, in_dims=(in_dims, in_dims), out_dims=0),
            spec=spec_xs, num_leaves=n)
        out = generic_associative_scan(flat_fn, leaves_xs, additional_inputs=())
        out = pytree.tree_unflatten(out, spec_xs)
    else:
        flat_fn = functools.partial(wrap_combine_fn_flat, combine_fn=combine_fn,
                                    spec=spec_xs, num_leaves=n)
        _check_pointwise_body(flat_fn, leaves_xs, spec_xs)
        out = associative_scan_op(flat_fn, leaves_xs, additional_inputs=())
        out = pytree.tree_unflatten(list(out), spec_xs)

    if reverse:
        out = pytree.tree_map(lambda t: t.flip([0]), out)
    return pytree.tree_map(lambda t: ember.movedim(t, 0, dim), out)
