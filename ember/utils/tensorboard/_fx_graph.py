"""A module's graph as TensorBoard's ``GraphDef``, from ``ember.fx``: PyTorch records the graph
with ``torch.jit.trace``; ember traces the module symbolically (``ember.fx.symbolic_trace``)
and, given example inputs, runs it once under ``ShapeProp`` for each node's output shape. A
module symbolic tracing cannot follow (control flow on tensor values) is recorded instead as
the aten-level graph of one run on the example inputs (``make_fx``), which is what tracing
records too: the branches those inputs take.
Nodes are named by module scope (``Net/Sequential[seq]/Linear[1]/seq_1``), so TensorBoard
groups them per submodule; placeholders and outputs are ``IO Node``s under ``input/`` and
``output/``, as PyTorch names them."""
import contextlib
import warnings

from tensorboard.compat.proto.config_pb2 import RunMetadata
from tensorboard.compat.proto.graph_pb2 import GraphDef
from tensorboard.compat.proto.step_stats_pb2 import DeviceStepStats, StepStats
from tensorboard.compat.proto.versions_pb2 import VersionDef

import ember

from ember._ops.overload import OpOverload

from ._proto_graph import node_proto

__all__ = ["graph"]


@contextlib.contextmanager
def _set_model_to_eval(model):
    originally_training = model.training
    model.train(False)
    try:
        yield
    finally:
        model.train(originally_training)


def _module_scope(root, target):
    """``Net/Sequential[seq]/Linear[1]`` for the submodule at ``seq.1`` of a ``Net``."""
    parts, mod = [type(root).__name__], root
    for attr in target.split("."):
        mod = getattr(mod, attr)
        parts.append(f"{type(mod).__name__}[{attr}]")
    return "/".join(parts)


def _op_name(root, node):
    if node.op == "call_module":
        return type(root.get_submodule(node.target)).__name__
    if node.op == "call_function":
        target = node.target
        if isinstance(target, OpOverload):
            return str(target)
        module = getattr(target, "__module__", None) or ""
        name = getattr(target, "__qualname__", None) or getattr(target, "__name__", str(target))
        return f"{module}.{name}" if module else name
    if node.op == "call_method":
        return f"Tensor.{node.target}"
    if node.op == "get_attr":
        return "prim::GetAttr"
    return "IO Node"


def _constant_args(node):
    """The node's arguments that are not other nodes, as text for the ``attr`` field."""
    def plain(a):
        return not isinstance(a, ember.fx.Node)
    args = [a for a in node.args if plain(a)]
    kwargs = {k: v for k, v in node.kwargs.items() if plain(v)}
    if not args and not kwargs:
        return ""
    return repr({"args": args, "kwargs": kwargs})


def graph(model, args, verbose=False, use_strict_trace=True):
    """``(GraphDef, RunMetadata)`` of ``model`` for ``FileWriter.add_graph``.
    ``use_strict_trace`` concerns ``torch.jit.trace``'s container checks; symbolic tracing has
    none, so it is accepted and has no effect."""
    if args is not None and not isinstance(args, (tuple, list)):
        args = (args,)
    try:
        gm = model if isinstance(model, ember.fx.GraphModule) else \
            ember.fx.symbolic_trace(model)
    except ember.fx.proxy.TraceError as e:
        if args is None:
            raise
        warnings.warn(f"add_graph: ember.fx.symbolic_trace cannot trace {type(model).__name__} "
                      f"({e}); recording the aten-level graph of one run on the example inputs "
                      "instead, whose control flow follows those inputs", UserWarning,
                      stacklevel=3)
        from ember.fx.experimental.proxy_tensor import make_fx
        with _set_model_to_eval(model), ember.no_grad():
            gm = make_fx(lambda *a: model(*a))(*args)  # nodes carry their tensor_meta
    else:
        if args is not None:
            from ember.fx.passes.shape_prop import ShapeProp
            with _set_model_to_eval(gm), ember.no_grad():
                ShapeProp(gm).propagate(*args)
    if verbose:
        print(gm.graph)
    # scopes and op names from the user's module: the GraphModule keeps the leaf modules but
    # rebuilds the containers between them as plain Modules
    root = model
    root_name = type(model).__name__
    names = {}
    outputs = 0
    nodes = []
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            names[node] = f"input/{node.name}"
        elif node.op == "output":
            continue
        elif node.op == "call_module":
            names[node] = f"{_module_scope(root, node.target)}/{node.name}"
        else:
            names[node] = f"{root_name}/{node.name}"
        meta = node.meta.get("tensor_meta")
        shape = tuple(meta.shape) if hasattr(meta, "shape") else None
        nodes.append(node_proto(names[node], op=_op_name(root, node),
                                input=[names[n] for n in node.all_input_nodes],
                                outputsize=shape, attributes=_constant_args(node)))
    for node in gm.graph.nodes:
        if node.op != "output":
            continue
        for result in node.all_input_nodes:
            meta = result.meta.get("tensor_meta")
            nodes.append(node_proto(f"output/output.{outputs + 1}", op="IO Node",
                                    input=[names[result]],
                                    outputsize=tuple(meta.shape) if hasattr(meta, "shape")
                                    else None))
            outputs += 1
    stepstats = RunMetadata(step_stats=StepStats(dev_stats=[
        DeviceStepStats(device="/device:CPU:0")]))
    return GraphDef(node=nodes, versions=VersionDef(producer=22)), stepstats
