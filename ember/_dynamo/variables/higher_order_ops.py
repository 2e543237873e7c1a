"""``ember.cond`` during capture: both branches are traced into subgraphs (their inputs: the
operands, then any outer tensor they read, lifted), registered on the graph module, and one
``cond`` node calls them — a tensor predicate stays inside the graph instead of breaking it.
A ``nested_compile_region`` function's body becomes a subgraph the same way, called with
``invoke_subgraph`` and reused by its later calls."""
from .base import unimplemented
from .constant import ConstantVariable

__all__ = ["trace_cond", "trace_invoke_subgraph"]


def _flat_outputs(tx, res):
    from .tensor import TensorVariable
    from .lists import BaseListVariable
    if isinstance(res, TensorVariable):
        return [res], False
    if isinstance(res, BaseListVariable) and all(isinstance(i, TensorVariable)
                                                 for i in res.items):
        return list(res.items), True
    unimplemented("ember.cond branches must return a tensor or a tuple of tensors")


def _side_effect_state(out):
    se = out.side_effects
    return (len(se.mutated), sum(len(a[1]) for a in se.attrs.values()), len(se.globals),
            len(se.cells))


def trace_cond(tx, args, kwargs):
    from ...fx import Graph, GraphModule
    from .tensor import TensorVariable
    names = ["pred", "true_fn", "false_fn", "operands"]
    bound = dict(zip(names, args))
    bound.update(kwargs)
    pred, true_fn, false_fn = bound["pred"], bound["true_fn"], bound["false_fn"]
    operands = tx.unpack(bound.get("operands", ConstantVariable(())))
    if not all(isinstance(o, TensorVariable) for o in operands):
        unimplemented("ember.cond operands must be tensors")
    if not isinstance(pred, TensorVariable):  # a Python bool: specialise, as PyTorch does
        fn = true_fn if pred.as_python_constant() else false_fn
        return fn.call_function(tx, list(operands), {})
    out = tx.output
    if out.graph is not out.root_graph:
        unimplemented("nested ember.cond")
    before = _side_effect_state(out)
    branches = []
    for fn in (true_fn, false_fn):
        sub = Graph()
        out.graph, out.lifted = sub, {}
        try:
            phs = []
            for i, o in enumerate(operands):
                ph = sub.placeholder(f"arg{i}_1")
                ph.meta["val"] = o.example
                phs.append(TensorVariable(ph, o.example))
            res = fn.call_function(tx, phs, {})
            items, is_seq = _flat_outputs(tx, res)
            nodes = [out._to_node(i) for i in items]
            sub.output(tuple(nodes) if is_seq else nodes[0])
            branches.append((sub, items, is_seq, out.lifted))
        finally:
            out.graph, out.lifted = out.root_graph, None
    if _side_effect_state(out) != before:
        unimplemented("ember.cond branches with side effects")
    (t_sub, t_items, t_seq, t_lift), (f_sub, f_items, f_seq, f_lift) = branches
    if t_seq != f_seq or len(t_items) != len(f_items) or any(
            (a.example.shape, a.example.dtype) != (b.example.shape, b.example.dtype)
            for a, b in zip(t_items, f_items)):
        unimplemented("ember.cond branches return tensors of different metadata")
    # both subgraphs take operands + every lifted outer tensor, in one order
    outer = list(dict.fromkeys(list(t_lift) + list(f_lift)))
    for sub, lifted in ((t_sub, t_lift), (f_sub, f_lift)):
        first = next((n for n in sub.nodes if n.op != "placeholder"), None)
        for n in outer:
            ph = lifted.get(n)
            if ph is None:
                with sub.inserting_before(first):
                    ph = sub.placeholder(f"lifted_{n.name}")
                ph.meta["val"] = n.meta.get("val")
            else:
                first.prepend(ph)
    k = sum(1 for name in out.attrs if name.startswith("cond_true_"))
    t_name, f_name = f"cond_true_{k}", f"cond_false_{k}"
    out.attrs[t_name] = GraphModule(out.attrs, t_sub)
    out.attrs[f_name] = GraphModule(out.attrs, f_sub)
    t_attr = out.create_node(tx, "get_attr", t_name, (), {}, None)
    f_attr = out.create_node(tx, "get_attr", f_name, (), {}, None)
    from ..._higher_order_ops.cond import cond
    fakes = tuple(i.example for i in t_items)
    node = out.create_node(tx, "call_function", cond,
                           (pred.node, t_attr, f_attr,
                            tuple(o.node for o in operands) + tuple(outer)), {},
                           fakes if t_seq else fakes[0])
    return out.wrap_result(tx, node, fakes if t_seq else fakes[0])


def _flatten_region_args(v, leaves, key):
    """The tensors in ``v`` (into ``leaves``) and ``v``'s structure and constants (into
    ``key``): what a nested_compile_region call is reused on."""
    from .dicts import ConstDictVariable
    from .lists import BaseListVariable
    from .tensor import TensorVariable
    if isinstance(v, TensorVariable):
        leaves.append(v)
        e = v.example
        key.append(("T", tuple(map(str, e.shape)), tuple(map(str, e.stride())), e.dtype,
                    e.device, e.requires_grad))
    elif isinstance(v, BaseListVariable):
        key.append((type(v), len(v.items)))
        for i in v.items:
            _flatten_region_args(i, leaves, key)
    elif isinstance(v, ConstDictVariable):
        key.append((dict, tuple(v.items)))
        for i in v.items.values():
            _flatten_region_args(i, leaves, key)
    elif v.is_python_constant():
        c = v.as_python_constant()
        key.append(("C", type(c), repr(c)))
    else:
        unimplemented(f"nested_compile_region called with {v}")


def _rebuild_region_args(v, placeholders):
    """``v`` with its tensors replaced, in order, by the region's placeholders."""
    from .dicts import ConstDictVariable
    from .lists import BaseListVariable
    from .tensor import TensorVariable
    if isinstance(v, TensorVariable):
        return placeholders.pop(0)
    if isinstance(v, BaseListVariable):
        return type(v)([_rebuild_region_args(i, placeholders) for i in v.items])
    if isinstance(v, ConstDictVariable):
        return ConstDictVariable({k: _rebuild_region_args(i, placeholders)
                                  for k, i in v.items.items()})
    return v


def trace_invoke_subgraph(tx, fn_vt, args, kwargs, max_reuse_entries, reuse_hash_fn):
    """A call of a ``nested_compile_region`` function: its body is traced once into a
    subgraph (``subgraph_<k>``: the tensor arguments, then the outer tensors it reads, lifted)
    and called with ``invoke_subgraph``; a later call with arguments of the same metadata and
    constants (or of the same ``reuse_hash_fn`` key) calls the same subgraph. A graph break
    inside the region is an error (``UncapturedHigherOrderOpError``), as in PyTorch."""
    from ...fx import Graph, GraphModule
    from ..._higher_order_ops.invoke_subgraph import invoke_subgraph
    from ..exc import UncapturedHigherOrderOpError, Unsupported, UserErrorDuringTrace
    from .functions import UserFunctionVariable
    from .lists import BaseListVariable, TupleVariable
    from .tensor import TensorVariable
    out = tx.output
    fn = fn_vt.fn
    leaves, key = [], []
    for a in args:
        _flatten_region_args(a, leaves, key)
    for k in sorted(kwargs):
        key.append(("K", k))
        _flatten_region_args(kwargs[k], leaves, key)
    if reuse_hash_fn is not None:
        try:
            h = UserFunctionVariable(reuse_hash_fn).call_function(tx, args, kwargs)
        except Unsupported as e:
            raise RuntimeError(f"reuse_hash_fn must be fully traceable without graph breaks. "
                               f"Got: {e}") from e
        if not (h.is_python_constant() and isinstance(h.as_python_constant(), int)):
            raise RuntimeError(f"reuse_hash_fn must return a constant integer, got {h}")
        key = [("H", h.as_python_constant())]
    cache = out.subgraph_reuse.setdefault(fn.__code__, {})
    key = (fn, tuple(key))
    hit = cache.get(key)
    if hit is None:
        if len(cache) >= max_reuse_entries:
            raise RuntimeError(
                f"invoke_subgraph: exceeded maximum reuse entries ({max_reuse_entries}) for "
                f"function code {fn.__code__}. This most likely means a guard keeps failing on "
                f"every invocation, preventing subgraph reuse. Set "
                f"TORCH_LOGS='+hierarchical_compile' to identify which guard is failing. If "
                f"reuse is genuinely not possible and you need more cache entries, increase "
                f"the limit via the max_reuse_entries argument to nested_compile_region().")
        before = _side_effect_state(out)
        sub = Graph()
        out.graph, out.lifted = sub, {}
        try:
            phs = []
            for i, o in enumerate(leaves):
                ph = sub.placeholder(f"arg{i}_1")
                ph.meta["val"] = o.example
                phs.append(TensorVariable(ph, o.example))
            sub_args = [_rebuild_region_args(a, phs) for a in args]
            sub_kwargs = {k: _rebuild_region_args(v, phs) for k, v in kwargs.items()}
            try:
                res = fn_vt.call_function(tx, sub_args, sub_kwargs)
            except UserErrorDuringTrace:
                raise
            except Unsupported as e:
                raise UncapturedHigherOrderOpError(
                    f"This higher order operator doesn't work unless it is captured completely "
                    f"with torch.compile. Got graph break/error:\n\n{e.msg}",
                    e.real_stack) from e
            if isinstance(res, TensorVariable):
                items, container = [res], None
            elif isinstance(res, BaseListVariable) and all(
                    isinstance(i, TensorVariable) for i in res.items):
                items, container = list(res.items), type(res)
            else:
                unimplemented("a nested_compile_region function must return a tensor or a "
                              "tuple or list of tensors")
            sub.output(tuple(out._to_node(i) for i in items))
            lifted = list(out.lifted)
        finally:
            out.graph, out.lifted = out.root_graph, None
        if _side_effect_state(out) != before:
            unimplemented("nested_compile_region functions with side effects")
        name = f"subgraph_{len([n for n in out.attrs if n.startswith('subgraph_')])}"
        out.attrs[name] = GraphModule(out.attrs, sub)
        hit = cache[key] = (name, lifted, container)
    name, lifted, container = hit
    attr = out.create_node(tx, "get_attr", name, (), {}, None)
    operands = tuple(o.node for o in leaves) + tuple(lifted)
    fakes = out.run_fake(out.attrs[name], [o.example for o in leaves] +
                         [n.meta.get("val") for n in lifted], {})
    node = out.create_node(tx, "call_function", invoke_subgraph, (attr, name) + operands, {},
                           fakes)
    result = out.wrap_result(tx, node, tuple(fakes))
    if container is None:
        return result.items[0]
    return container(result.items) if container is not TupleVariable else result
