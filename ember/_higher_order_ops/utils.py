"""What ``scan``, ``map`` and ``associative_scan`` share (PyTorch's
``torch._higher_order_ops.utils``): slicing and stacking pytrees, and the checks PyTorch's
Dynamo makes while it traces a body function once (the metadata of what the body returns, no
input mutation, no aliasing). ember runs these bodies eagerly, so the checks run on the body's
first call instead, with PyTorch's exception types and messages."""
from ..utils import _pytree as pytree

__all__ = ["first_slice_copy", "check_meta_consistency", "checked_first_call",
           "graph_break_error", "register_higher_order", "_stack_pytree", "_unstack_pytree"]

# the text PyTorch's Dynamo puts before the reason when a higher-order op's body cannot be
# captured whole (an eager scan or map is a capture in PyTorch, so it says so there too)
_UNCAPTURED = ("This higher order operator doesn't work unless it is captured completely with "
               "torch.compile. Got graph break/error:\n\n")
_USER_ERROR_HINT = (
    "Your code may result in an error when running in eager. Please double check that your "
    "code doesn't contain a similar error when actually running eager/uncompiled. You can do "
    "this by removing the `torch.compile` call, or by using "
    "`torch.compiler.set_stance(\"force_eager\")`. ")


def register_higher_order(op):
    """``op`` also as ``ember.ops.higher_order.<name>``, where PyTorch lists its operators."""
    from .._ops.overload import _cache_attr, ops
    ns = ops.namespace("higher_order")
    ns._packets[op.name()] = op
    _cache_attr(ns, op.name(), op)
    return op


def first_slice_copy(t, dim=0):
    """The first slice of ``t`` along ``dim``, as a tensor of its own (what a body sees)."""
    return t.select(dim, 0).clone()


def _hop_error(msg, hop_name):
    from .._dynamo.exc import UncapturedHigherOrderOpError
    return UncapturedHigherOrderOpError(f"{msg}\n  Higher Order Operator: {hop_name}")


def graph_break_error(hop_name, gb_type, explanation, hints=(), context="", gb_id=None):
    """PyTorch's error for a graph break inside a higher-order op's body, with its fields."""
    from .._dynamo.exc import UncapturedHigherOrderOpError
    lines = [f"{gb_type}", f"  Higher Order Operator: {hop_name}", f"  Explanation: {explanation}"]
    lines += [f"  Hint: {h}" for h in hints]
    msg = "\n".join(lines) + f"\n\n  Developer debug context: {context}\n"
    if gb_id is not None:
        msg += (f"\n For more details about this graph break, please visit: "
                f"https://meta-pytorch.github.io/compile-graph-break-site/gb/gb{gb_id:04d}.html")
    return UncapturedHigherOrderOpError(_UNCAPTURED + msg)


def _fake_repr(v):
    """How PyTorch's messages show a traced value: a tensor as the FakeTensor it was."""
    from .._tensor import Tensor
    if not isinstance(v, Tensor):
        return repr(v)
    parts = ["..."]
    if v.device.type != "cpu":
        parts.append(f"device='{v.device}'")
    parts.append(f"size={tuple(v.shape)}")
    from .._core.dtype import get_default_dtype
    if v.dtype != get_default_dtype():
        parts.append(f"dtype={v.dtype}")
    if v.requires_grad:
        parts.append("requires_grad=True")
    return f"FakeTensor({', '.join(parts)})"


def _list_repr(vs):
    return "[" + ", ".join(_fake_repr(v) for v in vs) + "]"


def _memory_format(t):
    """PyTorch's TensorMetadata.memory_format: the first format ``t`` is contiguous in."""
    import ember
    if t.is_contiguous():
        return ember.contiguous_format
    if t.ndim == 4 and t.is_contiguous(memory_format=ember.channels_last):
        return ember.channels_last
    if t.ndim == 5 and t.is_contiguous(memory_format=ember.channels_last_3d):
        return ember.channels_last_3d
    return None


def _diff_tensor_meta(a, b, include_contiguity):
    fields = [("shape", lambda t: t.shape), ("dtype", lambda t: t.dtype),
              ("stride", lambda t: tuple(t.stride()))]
    if include_contiguity:
        fields.append(("memory_format", _memory_format))
    diffs = []
    for name, get in fields:
        va, vb = get(a), get(b)
        if va != vb:
            diffs.append(f"'{name}: {va} vs {vb}'")
    return diffs


def check_meta_consistency(lhs_list, rhs_list, lhs_name, rhs_name, hop_name,
                           include_contiguity=True):
    """PyTorch's check that a body returns values of its inputs' metadata (shape, dtype,
    stride, memory format, device; not requires_grad); an ``UncapturedHigherOrderOpError``
    listing every pair that differs otherwise."""
    from .._tensor import Tensor
    if len(lhs_list) != len(rhs_list):
        raise _hop_error(f"Expected {lhs_name} and {rhs_name} to have same number of outputs "
                         f"but got lhs:{_list_repr(lhs_list)} and rhs:{_list_repr(rhs_list)}",
                         hop_name)
    diffs = []
    for i, (lhs, rhs) in enumerate(zip(lhs_list, rhs_list)):
        where = f"where lhs is {_fake_repr(lhs)} and rhs is {_fake_repr(rhs)}"
        if isinstance(lhs, Tensor) and isinstance(rhs, Tensor):
            d = ", ".join(_diff_tensor_meta(lhs, rhs, include_contiguity))
            if d:
                diffs.append(f"pair[{i}] differ in {d}, {where}")
            if lhs.device != rhs.device:
                diffs.append(f"pair[{i}] differ in device, {where}")
        elif not (isinstance(lhs, int) and isinstance(rhs, int)):
            diffs.append(f"pair[{i}] differ in type: {_fake_repr(lhs)} vs {_fake_repr(rhs)}, "
                         f"{where}")
    if diffs:
        raise _hop_error(f"Expected {lhs_name} and {rhs_name} to have same metadata but "
                         f"found:\n" + "\n".join(diffs), hop_name)


def _found_in(op):
    # PyTorch formats the operator's bound ``name`` method, not its result
    return f"Found in {op.name}"


def _version(x):
    vc = getattr(x, "_vc", None)
    return vc[0] if vc is not None else None


def checked_first_call(op, fn, inputs):
    """``fn(*inputs)`` on copies of the tensor inputs, refused as PyTorch's Dynamo refuses a
    body that mutates an input or returns an input (or a view of one) or one tensor twice.
    Copies, so that a refused body has not changed the caller's tensors, as in PyTorch
    (which refuses it while tracing, before anything runs)."""
    from .._tensor import Tensor
    hop_name = f"torch.ops.higher_order.{op.name()}"
    copies = [x.clone() if isinstance(x, Tensor) else x for x in inputs]
    # (an inference tensor has no version counter: its mutations cannot be seen)
    versions = [_version(x) for x in copies]
    result = fn(*copies)
    mutated = [i for i, (x, v) in enumerate(zip(copies, versions))
               if v is not None and _version(x) != v]
    if mutated:
        raise graph_break_error(
            hop_name, "Encountered input mutation during higher order op tracing",
            f"Higher order ops do not support input mutation. {_found_in(op)}",
            ["Consider using the debug context to change user code to avoid mutation.",
             "Please open an issue."],
            f"Input mutation detected at inputs {mutated}", 41)
    counters = {id(x._vc): i for i, x in enumerate(copies)
                if isinstance(x, Tensor) and x._vc is not None}
    seen = {}
    for j, out in enumerate(pytree.tree_leaves(result)):
        vc = getattr(out, "_vc", None) if isinstance(out, Tensor) else None
        if vc is None:
            continue
        if id(vc) in counters:
            context = (f"Input-to-output aliasing detected at input {counters[id(vc)]} and "
                       f"output {j}")
        elif id(vc) in seen:
            context = f"Output-to-output aliasing detected at outputs {seen[id(vc)]} and {j}"
        else:
            seen[id(vc)] = j
            continue
        raise graph_break_error(
            hop_name, "Encountered aliasing during higher order op tracing",
            f"Higher order ops do not support aliasing. {_found_in(op)}",
            ["Replace `return input` with `return input.clone()` to avoid aliasing.",
             "Consider using the debug context to change user code to avoid aliasing.",
             "Please open an issue."], context, 40)
    return result


def _unstack_pytree(xs):
    """The slices of a pytree of tensors along their first dimension, one pytree each."""
    from .._tensor import Tensor
    flat_xs, inspec = pytree.tree_flatten(xs)
    if not all(isinstance(x, Tensor) for x in flat_xs):
        raise RuntimeError(f"Leaves of xs must be Tensor {flat_xs}")
    if not all(x.shape[0] == flat_xs[0].shape[0] for x in flat_xs):
        raise RuntimeError(f"Leaves of xs must have same leading dimension size "
                           f"{[x.shape for x in flat_xs]}")
    return [pytree.tree_unflatten(list(t), inspec) for t in zip(*flat_xs)]


def _stack_pytree(pytrees):
    """Pytrees of one structure stacked leaf by leaf (a leaf None in all of them stays None)."""
    import ember
    from .._tensor import Tensor
    flat_out, out_spec = [], None
    for pt in pytrees:
        flat_pt, out_spec = pytree.tree_flatten(pt)
        flat_out.append(flat_pt)
    if out_spec is None:
        raise AssertionError("out_spec cannot be None")
    stacked = []
    for leaves in zip(*flat_out):
        if all(isinstance(leaf, Tensor) for leaf in leaves):
            stacked.append(ember.stack(leaves))
        elif all(leaf is None for leaf in leaves):
            stacked.append(None)
        else:
            raise RuntimeError(f"Cannot stack {leaves}.")
    return pytree.tree_unflatten(stacked, out_spec)
