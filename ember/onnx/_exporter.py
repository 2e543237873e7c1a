"""From a module to an ONNX model: capture with ``ember.export``, fold constants, lower each op
through ``_lowering.LOWERINGS``, and assemble inputs, initializers and outputs.

The capture is :func:`ember.export.export`: a functional graph of Core ATen ops (decomposed
through ``core_aten_decompositions()``) with the parameters and buffers as placeholders, which
become ONNX initializers named by their state-dict keys. ``dynamic_axes`` becomes the capture's
``dynamic_shapes``, so the graph computes every size of a dynamic axis from its inputs
(``sym_size``) and the ONNX graph does too (Shape nodes); those axes get a ``dim_param``.
"""
import inspect

from .errors import OnnxExporterError, UnsupportedOperatorError

_IN_EXPORT = [False]


def in_export():
    return _IN_EXPORT[0]


def import_onnx():
    try:
        import onnx
    except ImportError as e:
        raise ImportError("ember.onnx.export requires the 'onnx' package, which is not "
                          "installed: pip install onnx") from e
    return onnx


def _as_module(model):
    from ..nn import Module
    if isinstance(model, Module):
        return model
    if not callable(model):
        raise TypeError(f"ember.onnx.export: expected an nn.Module, an ExportedProgram or a "
                        f"function, got {type(model).__name__}")
    wrapper = Module()
    wrapper.forward = model  # its signature names the inputs
    return wrapper


def _dynamic_shapes(mod, args, kwargs, dynamic_axes, leaf_names):
    """``dynamic_axes`` ({input name: {axis: name} or [axis]}) as ember.export's
    ``dynamic_shapes``: one ``Dim`` per axis name, shared wherever the name repeats."""
    from .._tensor import Tensor
    from ..export import Dim
    from ..utils import _pytree as pytree
    leaves = pytree.tree_leaves((tuple(args), kwargs))
    per_leaf, dims = {}, {}
    for leaf, name in zip(leaves, leaf_names):
        axes = dynamic_axes.get(name) if isinstance(leaf, Tensor) else None
        if axes is None:
            continue
        if not isinstance(axes, dict):
            axes = {a: f"{name}_dynamic_axes_{i + 1}" for i, a in enumerate(axes)}
        spec = {}
        for axis, axis_name in axes.items():
            if axis_name not in dims:
                dims[axis_name] = Dim(axis_name if axis_name.isidentifier()
                                      else f"dim{len(dims)}")
            spec[axis % leaf.dim()] = dims[axis_name]
        per_leaf[id(leaf)] = spec

    def spec_of(x):
        return per_leaf.get(id(x)) if isinstance(x, Tensor) else None
    try:
        combined = inspect.signature(mod.forward).bind(*args, **kwargs).arguments
    except (TypeError, ValueError):
        combined = {f"arg{i}": a for i, a in enumerate(args)}
        combined.update(kwargs)
    return {k: pytree.tree_map(spec_of, v) for k, v in combined.items()}


def _axis_names(dynamic_axes, name):
    axes = dynamic_axes.get(name)
    if axes is None:
        return {}
    if isinstance(axes, dict):
        return dict(axes)
    return {a: f"{name}_dynamic_axes_{i + 1}" for i, a in enumerate(axes)}


def export(model, args, *, kwargs, input_names, output_names, dynamic_axes, dynamic_shapes,
           do_constant_folding, keep_initializers_as_inputs, verbose, custom_symbolics=False,
           opset_version=None):
    """The :class:`ONNXProgram` of ``model`` on ``args`` (see ``ember.onnx.export``).
    ``custom_symbolics``: write custom ops through the functions registered with
    ``register_custom_op_symbolic`` for ``opset_version`` (the ``dynamo=False`` exporter's
    way)."""
    onnx = import_onnx()
    from ..export import ExportedProgram, InputKind, OutputKind
    from ..export import _user_arg_names
    from ..utils import _pytree as pytree
    from ._program import ONNXProgram
    from .._tensor import Tensor
    if isinstance(args, Tensor):
        args = (args,)
    args, kwargs = tuple(args), dict(kwargs or {})
    input_names, output_names = list(input_names or ()), list(output_names or ())
    dynamic_axes = dict(dynamic_axes or {})
    if isinstance(model, ExportedProgram):
        ep = model
        if dynamic_axes and not ep.range_constraints:
            raise OnnxExporterError("dynamic_axes cannot make the dims of an ExportedProgram "
                                    "dynamic: export it with dynamic_shapes instead")
    else:
        mod = _as_module(model)
        leaves = pytree.tree_leaves((args, kwargs))
        default_names = _user_arg_names(mod, len(args), kwargs)
        leaf_names = [input_names[i] if i < len(input_names) else
                      default_names[i] if i < len(default_names) else f"arg{i}"
                      for i in range(len(leaves))]
        unknown = set(dynamic_axes) - set(leaf_names) - set(output_names)
        if unknown:
            raise ValueError(f"dynamic_axes keys {sorted(unknown)} are neither input names "
                             f"{leaf_names} nor output names {output_names}")
        if dynamic_shapes is None and set(dynamic_axes) & set(leaf_names):
            dynamic_shapes = _dynamic_shapes(mod, args, kwargs, dynamic_axes, leaf_names)
        from ..export import export as capture
        _IN_EXPORT[0] = True
        try:
            ep = capture(mod, args, kwargs, dynamic_shapes=dynamic_shapes)
        finally:
            _IN_EXPORT[0] = False
    gm, sig = ep.graph_module, ep.graph_signature
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    state = {}  # placeholder -> (state-dict name, tensor)
    users = []
    for node, spec in zip(placeholders, sig.input_specs):
        if spec.kind == InputKind.USER_INPUT:
            users.append(node)
        else:
            state[node] = (spec.target, ep.state_dict[spec.target])
    user_tensors = [n for n in users if isinstance(n.meta.get("val"), Tensor)]
    names = [input_names[i] if i < len(input_names) else n.name
             for i, n in enumerate(user_tensors)]

    consts = _fold(gm, state, do_constant_folding and not keep_initializers_as_inputs)

    from ._lowering import OPSET, GraphBuilder, onnx_dtype
    g = GraphBuilder(onnx)
    for name in names:
        g.taken.add(name)
    # the inputs' symbolic dims, by the names their axes get
    sym_names = {}
    graph_inputs = []
    for node, name in zip(user_tensors, names):
        g.values[node] = name
        val = node.meta["val"]
        axes = _axis_names(dynamic_axes, name)
        shape = []
        for i, s in enumerate(val.shape):
            if i in axes or i - val.dim() in axes:
                dim = axes.get(i, axes.get(i - val.dim()))
                if not isinstance(s, int):
                    sym_names.setdefault(s.node.expr, dim)
            elif isinstance(s, int):
                dim = s
            else:
                dim = sym_names.setdefault(s.node.expr, str(s.node.expr))
            shape.append(dim)
        graph_inputs.append(onnx.helper.make_tensor_value_info(
            name, onnx_dtype(onnx, val.dtype), shape))

    def needed(node):  # a constant some lowered node (or the output) reads
        return any(u not in consts for u in node.users)
    for node, value in consts.items():
        if isinstance(value, Tensor) and needed(node):
            name = state[node][0] if node in state else node.name
            g.values[node] = g.initializer(value.detach().cpu().contiguous().numpy(),
                                           g.fresh(name))

    from ._lowering import LOWERINGS, SYM_OPS, bind, lower_sym_op
    from ._symbolic import GraphContext, lower_custom_op
    import operator
    symbolic_opset = opset_version or OPSET
    symbolic_ctx = GraphContext(g, symbolic_opset)
    for node in gm.graph.nodes:
        if node.op != "call_function" or node in consts:
            continue
        if node.target is operator.getitem:
            src, i = node.args
            value = g[src][i]
            if value is None:
                raise OnnxExporterError(f"result {i} of {src.target} ({node.name}) has no ONNX "
                                        "equivalent")
            g.values[node] = value
        elif node.target in SYM_OPS:
            g.values[node] = lower_sym_op(g, node)
        elif node.target in LOWERINGS:
            g.values[node] = LOWERINGS[node.target](g, node, bind(node.target, node))
        elif custom_symbolics and _custom_symbolic(node.target, symbolic_opset) is not None:
            g.values[node] = lower_custom_op(
                g, node, _custom_symbolic(node.target, symbolic_opset), symbolic_ctx)
        else:
            t = node.target
            name = f"{t.namespace}::{t._opname}.{t._overloadname}" if hasattr(t, "_opname") \
                else getattr(t, "__name__", str(t))
            raise UnsupportedOperatorError(name, OPSET, None)

    out_node = next(n for n in gm.graph.nodes if n.op == "output")
    outs = [o for o, spec in zip(out_node.args[0], sig.output_specs)
            if spec.kind == OutputKind.USER_OUTPUT]
    graph_outputs, renames = [], {}
    produced = {o for n in g.nodes for o in n.output}
    for i, o in enumerate(outs):
        if not isinstance(getattr(o, "meta", {}).get("val"), Tensor):
            raise OnnxExporterError(f"output {i} is not a tensor ({o!r}): ONNX graph outputs "
                                    "are tensors")
        name = output_names[i] if i < len(output_names) else o.name
        value = g[o]
        if value in produced and value not in renames:
            renames[value] = name
        else:  # an input, an initializer or an output already named: a copy of it
            g.nodes.append(onnx.helper.make_node("Identity", [value], [name],
                                                 name=g.fresh("node_Identity")))
        val = o.meta["val"]
        axes = _axis_names(dynamic_axes, name)
        shape = [axes[d] if d in axes else s if isinstance(s, int) else
                 _sym_name(s.node.expr, sym_names) for d, s in enumerate(val.shape)]
        graph_outputs.append(onnx.helper.make_tensor_value_info(
            name, onnx_dtype(onnx, val.dtype), shape))
    taken = set(names) | set(renames.values()) | {t.name for t in g.initializers}
    for node, value in g.values.items():  # intermediate values take their FX node's name
        if isinstance(value, str) and value in produced and value not in renames and \
                node.name not in taken and node.name not in g.taken:
            renames[value] = node.name
            taken.add(node.name)
    for n in g.nodes:
        n.input[:] = [renames.get(x, x) for x in n.input]
        n.output[:] = [renames.get(x, x) for x in n.output]

    from .. import __version__
    graph = onnx.helper.make_graph(g.nodes, "main_graph", graph_inputs, graph_outputs,
                                   initializer=g.initializers)
    opset = [onnx.helper.make_opsetid("", OPSET)]
    model = onnx.helper.make_model(graph, opset_imports=opset, producer_name="ember",
                                   producer_version=__version__,
                                   ir_version=onnx.helper.find_min_ir_version_for(opset))
    for domain in sorted(symbolic_ctx.domains):  # custom symbolics' domains, at version 1
        model.opset_import.append(onnx.helper.make_opsetid(domain, 1))
    if verbose:
        print(onnx.printer.to_text(model.graph))
    return ONNXProgram(model, ep)


def _custom_symbolic(target, opset):
    """The registered symbolic function of a custom op ``target`` (an OpOverload), or None."""
    from ._symbolic import lookup
    ns = getattr(target, "namespace", None)
    if ns is None or ns == "aten":
        return None
    return lookup(f"{ns}::{target._opname}", opset)


def _sym_name(expr, sym_names):
    """An output dim's ``dim_param``: its size expression in the inputs' axis names."""
    import sympy
    if expr in sym_names:
        return sym_names[expr]
    return str(expr.xreplace({s: sympy.Symbol(n) for s, n in sym_names.items()
                              if isinstance(s, sympy.Symbol)}))


def _fold(gm, state, fold):
    """{FX node: its value} for the nodes whose value is known without the user inputs: the
    state, the graph's constant tensors and, when ``fold``, every deterministic op on them
    (computed here with ember, so the ONNX graph holds its result as an initializer)."""
    from .. import no_grad
    from .._tensor import Tensor
    from ..fx.node import map_arg
    consts = {node: t for node, (_, t) in state.items()}
    for node in gm.graph.nodes:
        if node.op == "get_attr":
            obj = gm
            for part in node.target.split("."):
                obj = getattr(obj, part)
            consts[node] = obj
        elif fold and node.op == "call_function" and node.all_input_nodes and \
                all(n in consts for n in node.all_input_nodes) and \
                "nondeterministic_seeded" not in getattr(node.target, "tags", ()):
            with no_grad():
                value = node.target(*map_arg(node.args, consts.get),
                                    **map_arg(node.kwargs, consts.get))
            if isinstance(value, Tensor) or (isinstance(value, (tuple, list)) and
                                             all(isinstance(v, Tensor) for v in value)):
                consts[node] = value
    return consts
