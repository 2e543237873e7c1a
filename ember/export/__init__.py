"""``ember.export``: a module as a functional core-ATen graph with its state and signature.

``export(model, args)`` traces ``model``'s forward with ``make_fx`` on FakeTensors, with the
parameters and buffers lifted to graph inputs (placeholders ``p_<name>`` and ``b_<name>``, user
inputs by argument name, as PyTorch names them), lowers it through
``core_aten_decompositions()`` and functionalizes it: a buffer the forward updates (BatchNorm's
statistics) becomes an extra output tagged ``BUFFER_MUTATION``. The result is an
:class:`ExportedProgram`: ``graph_module``, ``graph_signature``, ``state_dict``; ``.module()``
gives a runnable ``nn.Module`` (it applies buffer mutations); ``save``/``load`` write and read it
as a zip of a JSON graph and the tensors. The graph is the forward (no autograd ops), as
PyTorch's ATen-level export.

``dynamic_shapes`` (``ember.export.dynamic_shapes``: ``Dim``, ``Dim.AUTO`` ...) makes chosen
dims of the user inputs symbolic: the trace runs on FakeTensors of one ShapeEnv, so the graph
computes sizes from its inputs (``sym_size``) and runs for any size in
``ExportedProgram.range_constraints``; ``.module()`` checks each call's input sizes against
them (PyTorch's ``Guard failed`` AssertionError), and a program that contradicts the spec
fails to export with PyTorch's ``Constraints violated`` UserError. ``ShapesCollection`` and
``AdditionalInputs`` build such a spec from the input tensors or from more example inputs.

User inputs may be nested (tuples, lists, dicts, dataclasses made pytree nodes by
:func:`register_dataclass`): each leaf is a placeholder named by its path (``ys_0``,
``x_feature``), ``module_call_graph`` records the ``(args, kwargs)`` and output pytree specs,
and ``.module()`` takes and returns the same structures. Each node records the module calls
it ran in (``meta["nn_module_stack"]``, kept through functionalization, decompositions and
save/load), from which :func:`unflatten` rebuilds the module hierarchy.
"""
import collections
import contextlib
import io
import json
import math
import operator
import zipfile

from .._tensor import Tensor
from ..fx.graph import Graph
from ..fx.graph_module import GraphModule
from ..fx.interpreter import Interpreter
from ..fx.node import Node
from .decomp_utils import CustomDecompTable
from .dynamic_shapes import AdditionalInputs, Dim, ShapesCollection, dims
from .exported_program import (ExportedProgram, ModuleCallEntry, ModuleCallSignature,
                               default_decompositions)
from .graph_signature import (ExportGraphSignature, InputKind, InputSpec, OutputKind, OutputSpec,
                              TensorArgument)

__all__ = ["export", "Dim", "dims", "ExportedProgram", "ExportGraphSignature", "InputKind", "OutputKind",
           "InputSpec", "OutputSpec", "TensorArgument", "save", "load", "AdditionalInputs",
           "CustomDecompTable", "default_decompositions", "FlatArgsAdapter", "ModuleCallEntry",
           "ModuleCallSignature", "register_dataclass", "ShapesCollection", "unflatten",
           "UnflattenedModule"]


def register_dataclass(cls, *, serialized_type_name=None):
    """Make dataclass ``cls`` a pytree node of its fields, so that export takes it as (part
    of) an input and returns it as an output; ``serialized_type_name`` names it when a spec
    holding it is saved."""
    from ..utils import _pytree as pytree
    pytree.register_dataclass(cls, serialized_type_name=serialized_type_name)


@contextlib.contextmanager
def _exporting():
    """``ember.compiler.is_exporting()`` is True within."""
    from .. import compiler
    old, compiler._is_exporting_flag = compiler._is_exporting_flag, True
    try:
        yield
    finally:
        compiler._is_exporting_flag = old


def export(mod, args, kwargs=None, *, dynamic_shapes=None, strict=False,
           preserve_module_call_signature=()):
    """Trace ``mod(*args, **kwargs)`` into an :class:`ExportedProgram` (module docstring).
    ``dynamic_shapes`` may also be a :class:`ShapesCollection` or :class:`AdditionalInputs`
    (the program is then checked against each additional input)."""
    from .. import no_grad
    from .._decomp import core_aten_decompositions
    from .._functorch.functionalize import functionalize_graph
    from ..fx.experimental.proxy_tensor import get_proxy_mode, make_fx
    from ..func import functional_call
    from ..utils import _pytree as pytree
    if preserve_module_call_signature:
        # PyTorch records each such call's inputs and outputs with tracepoint ops that survive
        # functionalization and decomposition; ember's passes have no such op
        raise NotImplementedError(
            "ember.export does not support preserve_module_call_signature: unflatten gives "
            "each submodule the inputs and outputs its graph needs, not its own signature")
    kwargs = kwargs or {}
    verify = dynamic_shapes.verify if isinstance(dynamic_shapes, AdditionalInputs) else None
    if isinstance(dynamic_shapes, (ShapesCollection, AdditionalInputs)):
        dynamic_shapes = dynamic_shapes.dynamic_shapes(mod, args, kwargs)
    params = dict(mod.named_parameters())
    buffers = dict(mod.named_buffers())
    state_names = list(params) + list(buffers)
    user_leaves, in_spec = pytree.tree_flatten((tuple(args), kwargs))
    n_state = len(state_names)
    leaf_names, leaf_sources = _user_input_names(mod, args, kwargs)
    out_specs = []  # the structure of what forward returns; the graph returns its leaves

    def flat_fn(*flat):
        state = dict(zip(state_names, flat[:n_state]))
        a, k = pytree.tree_unflatten(list(flat[n_state:]), in_spec)
        with _recording_module_stack(mod, get_proxy_mode().tracer):
            out = functional_call(mod, state, a, k)
        leaves, spec = pytree.tree_flatten(out)
        out_specs.append(spec)
        return tuple(leaves)
    state_values = [params[n].detach() for n in params] + [buffers[n] for n in buffers]
    traced_leaves, tracing_mode, shape_env, marked = user_leaves, "fake", None, []
    if dynamic_shapes is not None:
        # symbolic sizes for the spec'd dims of the user inputs only: the state stays static
        from .._subclasses.fake_tensor import FakeTensorMode
        from .dynamic_shapes import _ExportShapeEnv, _fake_user_inputs, _leaf_specs
        specs = _leaf_specs(mod, args, kwargs, dynamic_shapes)
        shape_env = _ExportShapeEnv({})
        fake_mode = FakeTensorMode(shape_env=shape_env, allow_non_fake_inputs=True)
        state_values = [fake_mode.from_tensor(v, static_shapes=True) for v in state_values]
        traced_leaves, marked = _fake_user_inputs(fake_mode, user_leaves, specs, leaf_sources)
        tracing_mode = "symbolic"
    with no_grad(), _exporting():
        gm = make_fx(flat_fn, decomposition_table=core_aten_decompositions(),
                     tracing_mode=tracing_mode, _allow_non_fake_inputs=True)(*state_values,
                                                                            *traced_leaves)
        out_spec = out_specs[0]
        fgm, info = functionalize_graph(gm, epilogue=False)
        if any(n.op == "call_function" and n.target in core_aten_decompositions()
               for n in fgm.graph.nodes):
            fgm = _retrace(fgm, core_aten_decompositions(), symbolic=shape_env is not None)
    range_constraints, shape_guards = {}, None
    if shape_env is not None:
        from .dynamic_shapes import _check_constraints, _range_constraints
        replacements, shape_guards = _check_constraints(shape_env, marked)
        range_constraints = _range_constraints(shape_env, marked, replacements)
    # PyTorch's placeholder names
    names = ["p_" + n.replace(".", "_") for n in params] + \
        ["b_" + n.replace(".", "_") for n in buffers] + leaf_names
    placeholders = [n for n in fgm.graph.nodes if n.op == "placeholder"]
    for node, name in zip(placeholders, names):
        node.target = name
        node.name = name
    fgm.graph.eliminate_dead_code()
    fgm.recompile()
    input_specs = []
    for i, (node, name) in enumerate(zip(placeholders, names)):
        if i < len(params):
            input_specs.append(InputSpec(InputKind.PARAMETER, TensorArgument(name),
                                         state_names[i]))
        elif i < n_state:
            input_specs.append(InputSpec(InputKind.BUFFER, TensorArgument(name),
                                         state_names[i], persistent=True))
        else:
            input_specs.append(InputSpec(InputKind.USER_INPUT, TensorArgument(name), None))
    out = next(n for n in fgm.graph.nodes if n.op == "output")
    outs = list(out.args[0])
    n_user = len(outs) - len(info.mutated_inputs)
    # PyTorch's order: the buffers' new values first, then the user outputs
    output_specs = []
    for i, o in zip(info.mutated_inputs, outs[n_user:]):
        if i >= n_state:
            raise RuntimeError("export: the program mutates a user input "
                               f"({names[i]}), which this exporter does not lift")
        output_specs.append(OutputSpec(OutputKind.BUFFER_MUTATION, TensorArgument(o.name),
                                       state_names[i]))
    output_specs += [OutputSpec(OutputKind.USER_OUTPUT, TensorArgument(
        o.name if isinstance(o, Node) else str(o)), None) for o in outs[:n_user]]
    out.args = (tuple(outs[n_user:] + outs[:n_user]),)
    fgm.recompile()
    state_dict = {n: params[n] for n in params}
    state_dict.update({n: buffers[n] for n in buffers})
    input_shapes = None
    if shape_env is not None:  # what .module() checks each call against
        input_shapes = [(node.name, _shape_of(node.meta.get("val"), replacements))
                        for node, spec in zip(placeholders, input_specs)
                        if spec.kind == InputKind.USER_INPUT]
    _plain_module_stacks(fgm)
    # PyTorch's module call graph: the root's calling convention, then every submodule
    root = ModuleCallSignature([], [], in_spec, out_spec, _forward_arg_names(mod, args, kwargs))
    call_graph = [ModuleCallEntry("", root)] + [
        ModuleCallEntry(fqn) for fqn in dict(mod.named_modules(remove_duplicate=False)) if fqn]
    ep = ExportedProgram(fgm, ExportGraphSignature(input_specs, output_specs), state_dict,
                         out_spec, range_constraints=range_constraints,
                         module_call_graph=call_graph, _input_shapes=input_shapes,
                         _shape_guards=shape_guards)
    if verify is not None:
        verify(ep)
    return ep


@contextlib.contextmanager
def _recording_module_stack(root, tracer):
    """While ``root`` runs under ``tracer``, each node records the modules whose forward it
    runs in (``nn_module_stack``, PyTorch's keys and values: ``{"L__self__a.l@1": ("a.l",
    "pkg.Linear")}``, ``@n`` counting the earlier calls of that module)."""
    from ..nn.modules.module import register_module_forward_hook, \
        register_module_forward_pre_hook
    # a module under several names goes by its first, as the state dict names its tensors
    # (PyTorch follows the attribute a call went through; a hook sees the module only)
    fqns = {id(m): fqn for fqn, m in root.named_modules()}
    calls = collections.Counter()
    pushed = []  # per module call in progress: the key it added, or None

    def enter(module, args):
        fqn = fqns.get(id(module))
        key = None
        if fqn is not None:  # a module outside the hierarchy leaves no frame (as PyTorch)
            n = calls[fqn]
            calls[fqn] += 1
            key = "L__self__" + fqn + (f"@{n}" if n else "")
            cls = type(module)
            tracer.module_stack[key] = (fqn, f"{cls.__module__}.{cls.__qualname__}")
        pushed.append(key)

    def leave(module, args, output):
        key = pushed.pop()
        if key is not None:
            tracer.module_stack.pop(key, None)
    pre = register_module_forward_pre_hook(enter)
    post = register_module_forward_hook(leave, always_call=True)
    try:
        yield
    finally:
        pre.remove()
        post.remove()
        tracer.module_stack.clear()


class _StackKeepingInterpreter(Interpreter):
    """Runs a graph under a retrace: the nodes each node becomes get its module stack."""

    def __init__(self, gm, tracer):
        super().__init__(gm)
        self._tracer = tracer

    def run_node(self, n):
        self._tracer.module_stack = collections.OrderedDict(n.meta.get("nn_module_stack", {}))
        return super().run_node(n)


def _retrace(gm, decompositions, symbolic):
    """``gm`` traced again through ``decompositions``: on its placeholders' symbolic
    FakeTensors when ``symbolic`` (the ShapeEnv of the first trace; a real-tensor retrace would
    specialise), else on tensors of their metadata."""
    from .._functorch.aot_autograd import _placeholder_inputs
    from ..fx.experimental.proxy_tensor import get_proxy_mode, make_fx
    phs = [n for n in gm.graph.nodes if n.op == "placeholder"]

    def run(*a):
        return _StackKeepingInterpreter(gm, get_proxy_mode().tracer).run(*a)
    inputs = [n.meta["val"] for n in phs] if symbolic else _placeholder_inputs(gm)
    new = make_fx(run, decomposition_table=decompositions,
                  tracing_mode="symbolic" if symbolic else "fake",
                  _allow_non_fake_inputs=True)(*inputs)
    for n, old in zip([n for n in new.graph.nodes if n.op == "placeholder"], phs):
        n.target = n.name = old.target
    _plain_module_stacks(new)
    new.recompile()
    return new


def _plain_module_stacks(gm):
    """Each node's ``nn_module_stack`` as a plain dict, as PyTorch keeps it (the tracer
    records an OrderedDict)."""
    for n in gm.graph.nodes:
        if "nn_module_stack" in n.meta:
            n.meta["nn_module_stack"] = dict(n.meta["nn_module_stack"])


def _shape_of(val, replacements):
    """A placeholder's sizes as ints and sympy expressions (None for a non-tensor), with the
    symbols the trace found equal to another replaced by it."""
    from .._core.symint import SymInt
    if not isinstance(val, Tensor):
        return None
    return [s.node.expr.xreplace(replacements) if isinstance(s, SymInt) else int(s)
            for s in val.shape]


def _user_arg_names(mod, n, kwargs):
    import inspect
    try:
        params = list(inspect.signature(mod.forward).parameters)
    except (TypeError, ValueError):
        params = []
    names = [params[i] if i < len(params) else f"arg{i}" for i in range(n)]
    return names + list(kwargs)


def _bound_inputs(mod, args, kwargs):
    """``{argument name: value}`` of forward's positional arguments (bound to its signature),
    then the keyword arguments as given (PyTorch's ``_bind_signature_to_inputs``)."""
    import inspect
    try:
        bound = inspect.signature(mod.forward).bind_partial(*args).arguments
    except (TypeError, ValueError):
        bound = {f"arg{i}": a for i, a in enumerate(args)}
    return {**bound, **kwargs}


def _user_input_names(mod, args, kwargs):
    """Per leaf of ``(args, kwargs)``: its placeholder name (PyTorch's: the path from the
    argument name, lower case, ``x_feature``, ``ys_0``) and the Source of its value
    (``L['ys'][0]``, which names its symbolic sizes)."""
    import re
    from .._dynamo.source import AttrSource, GetItemSource, LocalSource
    from ..utils import _pytree as pytree
    names, sources, used = [], [], set()
    for path, _ in pytree.tree_flatten_with_path(_bound_inputs(mod, args, kwargs))[0]:
        parts, source = [], None
        for k in path:
            if isinstance(k, pytree.MappingKey):
                parts.append(re.sub(r"[^a-zA-Z0-9]", "_", str(k.key)))
                source = LocalSource(k.key) if source is None else GetItemSource(source, k.key)
            elif isinstance(k, pytree.SequenceKey):
                parts.append(str(k.idx))
                source = GetItemSource(source, k.idx)
            else:
                parts.append(k.name)
                source = AttrSource(source, k.name)
        name = base = "_".join(parts).lower()
        n = 0
        while name in used:
            n += 1
            name = f"{base}_{n}"
        used.add(name)
        names.append(name)
        sources.append(source)
    return names, sources


def _forward_arg_names(mod, args, kwargs):
    """The names ``ModuleCallSignature.forward_arg_names`` records: forward's positional
    parameters (``*args`` as ``args_0``, ``args_1`` ...), then the keyword arguments."""
    import inspect
    try:
        sig = inspect.signature(mod.forward)
        bound = sig.bind_partial(*args).arguments
    except (TypeError, ValueError):
        return [f"arg{i}" for i in range(len(args))] + list(kwargs)
    names = []
    for name, value in bound.items():
        if sig.parameters[name].kind == inspect.Parameter.VAR_POSITIONAL:
            names += [f"{name}_{i}" for i in range(len(value))]
        else:
            names.append(name)
    return names + list(kwargs)


# ---------------------------------------------------------------------------------------------
# save / load: a zip with the graph as JSON and the tensors through ember.save

def _encode(v, consts):
    from .._core.device import device as _device_cls, memory_format, layout
    from .._core.dtype import dtype as _dtype_cls
    if isinstance(v, Node):
        return {"node": v.name}
    if isinstance(v, bool) or v is None or isinstance(v, (int, str)):
        return v
    if isinstance(v, float):
        if math.isnan(v) or math.isinf(v):
            return {"float": repr(v)}
        return v
    if isinstance(v, (list, tuple)):
        return {"list" if isinstance(v, list) else "tuple": [_encode(x, consts) for x in v]}
    if isinstance(v, _dtype_cls):
        return {"dtype": repr(v).split(".")[-1]}
    if isinstance(v, _device_cls):
        return {"device": str(v)}
    if isinstance(v, memory_format):
        return {"memory_format": repr(v).split(".")[-1]}
    if isinstance(v, layout):
        return {"layout": repr(v).split(".")[-1]}
    raise TypeError(f"ember.export.save cannot serialize {v!r}")


def _decode(v, env):
    import ember
    if isinstance(v, dict):
        (k, x), = v.items()
        if k == "node":
            return env[x]
        if k == "float":
            return float(x)
        if k == "list":
            return [_decode(y, env) for y in x]
        if k == "tuple":
            return tuple(_decode(y, env) for y in x)
        if k == "device":
            return ember.device(x)
        return getattr(ember, x)  # dtype / memory_format / layout
    return v


# size arithmetic a symbolic trace records (``sym_size * 2``)
_SYM_OPS = {f"_operator.{f.__name__}": f for f in (
    operator.add, operator.sub, operator.mul, operator.floordiv, operator.mod, operator.neg,
    operator.pow, operator.eq, operator.ne, operator.lt, operator.le, operator.gt,
    operator.ge)}


def _target_name(t):
    if t is operator.getitem:
        return "getitem"
    if getattr(t, "__module__", None) in ("_operator", "operator") and \
            f"_operator.{t.__name__}" in _SYM_OPS:
        return f"_operator.{t.__name__}"
    return f"{t.namespace}.{t._opname}.{t._overloadname}"


def _resolve_target(name):
    if name == "getitem":
        return operator.getitem
    if name in _SYM_OPS:
        return _SYM_OPS[name]
    import ember
    ns, op, ov = name.split(".")
    return getattr(getattr(getattr(ember.ops, ns), op), ov)


def save(ep, f, *, extra_files=None, opset_version=None, pickle_protocol=2):
    """Write ``ep`` to a path or binary file (a zip: graph JSON, tensors, signature)."""
    from .. import save as _save
    from ..utils import _pytree as pytree
    consts = {}
    nodes = []
    gm = ep.graph_module
    for n in gm.graph.nodes:
        rec = {"op": n.op, "name": n.name}
        if n.op == "call_function":
            rec["target"] = _target_name(n.target)
        elif n.op == "get_attr":
            rec["target"] = n.target
            obj = gm
            for p in n.target.split("."):
                obj = getattr(obj, p)
            consts[n.target] = obj
        else:
            rec["target"] = n.target
        rec["args"] = _encode(tuple(n.args), consts)
        rec["kwargs"] = {k: _encode(v, consts) for k, v in n.kwargs.items()}
        if "nn_module_stack" in n.meta:  # what unflatten cuts the graph by
            rec["nn_module_stack"] = [[k, path, ty]
                                      for k, (path, ty) in n.meta["nn_module_stack"].items()]
        nodes.append(rec)
    sig = ep.graph_signature
    meta = {
        "nodes": nodes,
        "inputs": [[s.kind.name, s.arg.name, s.target, s.persistent] for s in sig.input_specs],
        "outputs": [[s.kind.name, s.arg.name, s.target] for s in sig.output_specs],
        "module_call_graph": [
            [e.fqn, None if e.signature is None else {
                "in_spec": pytree.treespec_dumps(e.signature.in_spec),
                "out_spec": pytree.treespec_dumps(e.signature.out_spec),
                "forward_arg_names": e.signature.forward_arg_names}]
            for e in ep.module_call_graph],
        "out_spec": pytree.treespec_dumps(ep._out_spec) if ep._out_spec is not None and
        hasattr(pytree, "treespec_dumps") else None,
    }
    # symbolic sizes as sympy's srepr (symbols keep their assumptions when read back)
    import sympy
    meta["range_constraints"] = [
        [sympy.srepr(sym), int(vr.lower), None if vr.upper == sympy.oo else int(vr.upper)]
        for sym, vr in ep.range_constraints.items()]
    meta["input_shapes"] = None if ep._input_shapes is None else [
        [name, None if shape is None else
         [d if isinstance(d, int) else sympy.srepr(d) for d in shape]]
        for name, shape in ep._input_shapes]
    meta["shape_guards"] = [sympy.srepr(g) for g in ep._shape_guards]
    meta["input_dtypes"] = {n.name: repr(n.meta["val"].dtype).split(".")[-1]
                            for n in gm.graph.nodes if n.op == "placeholder" and
                            isinstance(n.meta.get("val"), Tensor)}
    tensors = io.BytesIO()
    _save({"state_dict": dict(ep.state_dict), "constants": consts}, tensors)
    own = not hasattr(f, "write")
    fh = open(f, "wb") if own else f
    try:
        with zipfile.ZipFile(fh, "w") as z:
            z.writestr("exported_program/graph.json", json.dumps(meta))
            z.writestr("exported_program/tensors.pt", tensors.getvalue())
            for k, v in (extra_files or {}).items():
                z.writestr(f"extra_files/{k}", v)
    finally:
        if own:
            fh.close()


def load(f, *, extra_files=None, expected_opset_version=None):
    """Read an :class:`ExportedProgram` written by :func:`save`."""
    from .. import load as _load
    from ..nn import Module
    from ..utils import _pytree as pytree
    own = not hasattr(f, "read")
    fh = open(f, "rb") if own else f
    try:
        with zipfile.ZipFile(fh) as z:
            meta = json.loads(z.read("exported_program/graph.json"))
            blob = _load(io.BytesIO(z.read("exported_program/tensors.pt")), weights_only=False)
            if extra_files is not None:
                for k in extra_files:
                    extra_files[k] = z.read(f"extra_files/{k}").decode()
    finally:
        if own:
            fh.close()
    root = Module()
    for name, t in blob["constants"].items():
        setattr(root, name, t)
    g = Graph()
    env = {}
    for rec in meta["nodes"]:
        if rec["op"] == "placeholder":
            env[rec["name"]] = g.placeholder(rec["name"])
        elif rec["op"] == "get_attr":
            env[rec["name"]] = g.get_attr(rec["target"])
        elif rec["op"] == "call_function":
            args = _decode(rec["args"], env)
            kwargs = {k: _decode(v, env) for k, v in rec["kwargs"].items()}
            env[rec["name"]] = g.call_function(_resolve_target(rec["target"]), tuple(args),
                                               kwargs, name=rec["name"])
        elif rec["op"] == "output":
            g.output(_decode(rec["args"], env)[0])
        if "nn_module_stack" in rec:
            env[rec["name"]].meta["nn_module_stack"] = {
                k: (path, ty) for k, path, ty in rec["nn_module_stack"]}
    gm = GraphModule(root, g)
    call_graph = [ModuleCallEntry(fqn, None if sig is None else ModuleCallSignature(
        [], [], pytree.treespec_loads(sig["in_spec"]), pytree.treespec_loads(sig["out_spec"]),
        sig["forward_arg_names"])) for fqn, sig in meta.get("module_call_graph", [])]
    sig = ExportGraphSignature(
        [InputSpec(InputKind[k], TensorArgument(a), t, p) for k, a, t, p in meta["inputs"]],
        [OutputSpec(OutputKind[k], TensorArgument(a), t) for k, a, t in meta["outputs"]])
    out_spec = pytree.treespec_loads(meta["out_spec"]) if meta.get("out_spec") and \
        hasattr(pytree, "treespec_loads") else None
    import sympy
    from ..utils._sympy.value_ranges import ValueRanges
    ranges = {sympy.sympify(sym): ValueRanges(lo, sympy.oo if hi is None else hi)
              for sym, lo, hi in meta.get("range_constraints", [])}
    shapes = meta.get("input_shapes")
    if shapes is not None:
        shapes = [(name, None if shape is None else
                   [d if isinstance(d, int) else sympy.sympify(d) for d in shape])
                  for name, shape in shapes]
    guards = [sympy.sympify(g) for g in meta.get("shape_guards", [])]
    ep = ExportedProgram(gm, sig, blob["state_dict"], out_spec, range_constraints=ranges,
                         module_call_graph=call_graph, _input_shapes=shapes,
                         _shape_guards=guards)
    if shapes is not None:
        _restore_placeholder_vals(ep, meta.get("input_dtypes", {}))
    return ep


def _restore_placeholder_vals(ep, dtypes):
    """``meta['val']`` of a loaded dynamic program's placeholders: FakeTensors whose symbolic
    sizes carry the saved symbols and ranges (the state static), as export gave them."""
    import ember
    import sympy
    from .._dynamo.source import LocalSource, TensorProperty, TensorPropertySource
    from .._subclasses.fake_tensor import FakeTensorMode
    from .dynamic_shapes import _ExportShapeEnv, _fake_user_inputs
    shape_env = _ExportShapeEnv({})
    mode = FakeTensorMode(shape_env=shape_env, allow_non_fake_inputs=True)
    dims, leaves, specs, names, symbol_names = {}, [], [], [], {}
    for name, shape in ep._input_shapes:
        if shape is None or name not in dtypes or \
                any(not isinstance(d, int) and not d.is_Symbol for d in shape):
            return  # a size the spec did not make (never for export's own programs)
        spec, hint = [], []
        for i, d in enumerate(shape):
            if isinstance(d, int):
                spec.append(None)
                hint.append(d)
                continue
            vr = ep.range_constraints.get(d)
            lo, hi = (int(vr.lower), vr.upper) if vr is not None else (0, sympy.oo)
            if d not in dims:
                dims[d] = Dim(d.name, min=lo, max=None if hi == sympy.oo else int(hi))
            spec.append(dims[d])
            hint.append(max(lo, 2))  # any size inside the range: 0/1 would specialise
            symbol_names[TensorPropertySource(LocalSource(name), TensorProperty.SIZE,
                                              i).name()] = d.name
        leaves.append(ember.empty(hint, dtype=getattr(ember, dtypes[name])))
        specs.append((spec, spec, name))
        names.append(name)
    fakes, _ = _fake_user_inputs(mode, leaves, specs, names, symbol_names)
    by_name = dict(zip(names, fakes))
    for node, spec in zip([n for n in ep.graph.nodes if n.op == "placeholder"],
                          ep.graph_signature.input_specs):
        if spec.kind == InputKind.USER_INPUT:
            node.meta["val"] = by_name[node.name]
        elif spec.target in ep.state_dict:
            node.meta["val"] = mode.from_tensor(ep.state_dict[spec.target].detach(),
                                              static_shapes=True)


from .unflatten import FlatArgsAdapter, UnflattenedModule, unflatten  # noqa: E402
