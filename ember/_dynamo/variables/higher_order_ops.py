"""``ember.cond`` during capture: both branches are traced into subgraphs (their inputs: the
operands, then any outer tensor they read, lifted), registered on the graph module, and one
``cond`` node calls them — a tensor predicate stays inside the graph instead of breaking it."""
from .base import unimplemented
from .constant import ConstantVariable

__all__ = ["trace_cond"]


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
