"""``unflatten``: an exported program as the module hierarchy it was exported from.

``ExportedProgram`` holds one flat graph; each of its nodes records the module calls it ran in
(``meta["nn_module_stack"]``). :func:`unflatten` cuts the graph along those calls, as PyTorch
does: every call of a submodule becomes an :class:`InterpreterModule` (its own graph, run with
``ember.fx.Interpreter``) at the submodule's path, and the caller's graph calls it
(``call_module``). A call's inputs are the values its nodes read from outside it (they become
its placeholders, in reverse order of first use), its outputs the values read after it.
Parameters and buffers live on the modules again (``get_attr`` in the graph of the module
that owns them, or of the nearest caller that does); a buffer the program updates is written
with ``copy_`` where the update is computed. Calls of one module that give the same graph share
one InterpreterModule; a later call with a different graph stays at ``name@n``. The submodules'
signatures are what their graphs need: ember's export does not preserve them.
"""
import abc
import copy
import math
import operator
import re
from collections import defaultdict
from dataclasses import dataclass

from .._ops.overload import ops
from .._tensor import Tensor
from ..autograd import no_grad
from ..fx.graph import Graph
from ..fx.graph_module import GraphModule
from ..fx.interpreter import Interpreter
from ..fx.node import Node
from ..nn import Module, Parameter
from ..utils import _pytree as pytree
from . import InputKind, OutputKind

__all__ = ["FlatArgsAdapter", "InterpreterModule", "UnflattenedModule", "unflatten"]


class _Interpreter(Interpreter):
    """Runs an unflattened graph; a ``copy_`` into a module's buffer is a state update made
    outside autograd, as eager modules (and ``ExportedProgram.module()``) make it."""

    def run_node(self, n):
        if n.op == "call_function" and n.target is ops.aten.copy_.default and \
                isinstance(n.args[0], Node) and n.args[0].op == "get_attr":
            with no_grad():
                return super().run_node(n)
        return super().run_node(n)


class _SubmoduleBase:
    _ty = None

    def type_name(self):
        """The qualified class name of the eager module this one stands for."""
        return self._ty


class InterpreterModule(_SubmoduleBase, Module):
    """One submodule of an unflattened program: its graph, run with ``ember.fx.Interpreter``
    (the graph's code is ``graph_module``)."""

    def __init__(self, graph, ty=None):
        super().__init__()
        self.graph = graph
        self._ty = ty
        self.graph.owning_module = self
        self.graph_module = None

    def forward(self, *args, **kwargs):
        if self.graph_module is None:
            raise AssertionError("Didn't finalize this InterpreterModule")
        if kwargs:
            # the graph takes its inputs positionally: keywords by placeholder name
            arg_list = list(args)
            kwarg_names = self.arg_names[len(arg_list):]
            arg_list.extend(kwargs[k] for k in kwarg_names if k in kwargs)
            if len(kwarg_names) != len(kwargs):
                raise AssertionError(f"kwarg_names length {len(kwarg_names)} does not match "
                                     f"kwargs length {len(kwargs)}")
            if len(arg_list) != len(self.arg_names):
                raise AssertionError(f"arg_list length {len(arg_list)} does not match "
                                     f"arg_names length {len(self.arg_names)}")
            args = tuple(arg_list)
        return _Interpreter(self, graph=self.graph).run(*args, enable_io_processing=False)

    def finalize(self):
        """Build ``graph_module`` once the graph is complete (a GraphModule copies the
        attributes its graph reads when it is made)."""
        # in __dict__: a submodule entry would put the graph's copy in the module tree
        self.__dict__["graph_module"] = GraphModule(self, self.graph)
        self.graph.lint()
        self.arg_names = [n.target for n in self.graph.nodes if n.op == "placeholder"]

    def print_readable(self, print_output=True, include_stride=False, include_device=False,
                       colored=False):
        return GraphModule._print_readable(self, "InterpreterModule", print_output)


class FlatArgsAdapter(abc.ABC):
    """Adapts input arguments with ``input_spec`` to align ``target_spec``."""

    @abc.abstractmethod
    def adapt(self, target_spec, input_spec, input_args, metadata=None, obj=None):
        """NOTE: This adapter may mutate given ``input_args_with_path``."""

    def get_flat_arg_paths(self):
        """Returns a list of paths that are used to access the flat args."""
        return []


class UnflattenedModule(_SubmoduleBase, Module):
    """The exported program as its module hierarchy (module docstring): called with the
    exported module's arguments, it returns what the program returns."""

    def __init__(self, export_module, flat_args_adapter=None):
        super().__init__()
        fqn_list = [entry.fqn for entry in export_module.module_call_graph]
        if not fqn_list:
            raise ValueError("unflatten needs the program's module call graph, which only "
                             "ember.export.export records")
        if fqn_list[0] != "":
            raise AssertionError(f"expected first fqn to be empty string, got {fqn_list[0]!r}")
        export_graph = copy.deepcopy(export_module.graph)
        self.graph_signature = copy.deepcopy(export_module.graph_signature)
        self.graph = Graph()
        self.graph.owning_module = self
        self.module_call_graph = copy.deepcopy(export_module.module_call_graph)
        self.flat_args_adapter = flat_args_adapter
        self.meta = dict(export_module.graph_module.meta)
        self.meta["unflattened_module"] = self
        self.adapted = False

        _inplace_buffer_mutations(export_graph, self.graph_signature)
        self._ty = _root_module_type(export_graph)
        seen_modules, seen_attrs = _outline_submodules(export_graph, self)
        _copy_graph_attrs(export_module.graph_module, self, seen_attrs)
        self.range_constraints = export_module.range_constraints
        self.equality_constraints = []

        # the state on the modules: copies, each tensor once (weights shared stay shared)
        clones = {}
        inputs_to_state = {}  # placeholder name -> the state it carries
        for spec in self.graph_signature.input_specs:
            if spec.kind not in (InputKind.PARAMETER, InputKind.BUFFER):
                continue
            t = export_module.state_dict[spec.target]
            if id(t) not in clones:
                clones[id(t)] = Parameter(t.detach().clone(), requires_grad=t.requires_grad) \
                    if spec.kind == InputKind.PARAMETER else t.clone()
            _assign_attr(clones[id(t)], self, spec.target, spec.kind,
                         spec.persistent is not False)
            inputs_to_state[spec.arg.name] = [spec.target]
        _sink_params(self, inputs_to_state, [])

        redirected_call_indices = _deduplicate_modules(seen_modules.values())
        fqn_list = [fqn for fqn in fqn_list
                    if fqn not in redirected_call_indices and "@" not in fqn]
        self.input_placeholders = [n for n in self.graph.nodes if n.op == "placeholder"]
        self._input_expectations = _input_expectations(export_module, self.input_placeholders)
        self.check_input_constraints = True
        fqn_order = {fqn: i for i, fqn in enumerate(fqn_list)}
        for name, _ in self.named_modules(remove_duplicate=False):
            if name not in fqn_order:
                fqn_order[name] = len(fqn_order)
        _reorder_submodules(self, fqn_order)
        for module in self.modules():
            if isinstance(module, InterpreterModule):
                module.finalize()
        self.finalize()

    def _adapt_flat_args(self, flat_args, in_spec, input):
        signature = self.module_call_graph[0].signature
        if in_spec == signature.in_spec:
            return flat_args
        if self.flat_args_adapter is None:
            raise TypeError("There is no flat args adapter specified. Are you sure you are "
                            "calling this with the right arguments? ")
        flat_args = self.flat_args_adapter.adapt(target_spec=signature.in_spec,
                                                 input_spec=in_spec, input_args=flat_args,
                                                 metadata=self.meta, obj=input)
        if len(flat_args) != signature.in_spec.num_leaves:
            raise TypeError(f"Flat args adaption failed, number of args mismatch "
                            f"Adapted: {len(flat_args)} \n"
                            f"Exported module: {signature.in_spec.num_leaves}")
        return flat_args

    def process_forward_inputs(self, *args, **kwargs):
        """The flat inputs of the root graph from the call's ``(args, kwargs)``: adapted by
        the :class:`FlatArgsAdapter` when they are shaped otherwise, checked against the
        shapes and values the program was exported for."""
        signature = self.module_call_graph[0].signature
        if kwargs:
            kwargs = _reorder_kwargs(kwargs, signature.in_spec)
        flat_args_with_path, in_spec = pytree.tree_flatten_with_path((args, kwargs))
        flat_args = [x[1] for x in flat_args_with_path]
        if in_spec != signature.in_spec:
            if not self.adapted:
                print("Input treespec does not match with exported module's: \n"
                      f"Input treespec: {in_spec}. ",
                      f"Exported module treespec: {signature.in_spec}")
                print("Adapting flat arg to match exported module's treespec")
            flat_args = self._adapt_flat_args(flat_args, in_spec, args)
            self.adapted = True
        if self.check_input_constraints:
            if self.adapted:
                paths = self.flat_args_adapter.get_flat_arg_paths() \
                    if self.flat_args_adapter else []
                if paths and len(paths) != len(flat_args):
                    raise AssertionError(f"flat_arg_paths length {len(paths)} does not match "
                                         f"flat_args length {len(flat_args)}")
                flat_args_with_path = [
                    ((pytree.SequenceKey(idx), pytree.GetAttrKey(
                        paths[idx] if paths else "<unknown location>")), arg)
                    for idx, arg in enumerate(flat_args)]
            _check_input_constraints(self._input_expectations, flat_args_with_path,
                                     self.range_constraints)
        return flat_args

    def forward(self, *args, **kwargs):
        flat_args = self.process_forward_inputs(*args, **kwargs)
        signature = self.module_call_graph[0].signature
        tree_out = _Interpreter(self, graph=self.graph).run(*flat_args,
                                                            enable_io_processing=False)
        return pytree.tree_unflatten(list(tree_out), signature.out_spec)

    def finalize(self):
        self.__dict__["graph_module"] = GraphModule(self, self.graph)
        self.graph.lint()

    def print_readable(self, print_output=True, include_stride=False, include_device=False,
                       colored=False):
        return GraphModule._print_readable(self, "UnflattenedModule", print_output)


def unflatten(module, flat_args_adapter=None):
    """Unflatten an ExportedProgram, producing a module with the same module hierarchy as the
    original eager module (see the module docstring). The submodules' arguments are the values
    their graphs read, not necessarily the eager module's; ``flat_args_adapter`` adapts flat
    arguments whose TreeSpec differs from the exported module's."""
    return UnflattenedModule(module, flat_args_adapter)


# ---------------------------------------------------------------------------------------------
# inputs

def _reorder_kwargs(user_kwargs, spec):
    """``user_kwargs`` in the order of the keyword inputs of ``spec`` (an ``(args, kwargs)``
    spec), so that keywords may come in any order."""
    kwargs_spec = spec.child(1)
    if set(user_kwargs) != set(kwargs_spec.context):
        raise ValueError(f"Ran into a kwarg keyword mismatch: Got the following keywords "
                         f"{list(user_kwargs)} but expected {kwargs_spec.context}")
    return {k: user_kwargs[k] for k in kwargs_spec.context}


def _keystr(key_path):
    """Where an input came from: ``*args[0].x`` for a positional one, ``name[...]`` for a
    keyword one."""
    if key_path[0].idx == 0:
        return f"*args{pytree.keystr(key_path[1:])}"
    return f"{str(key_path[1])[1:-1]}{pytree.keystr(key_path[2:])}"


def _input_expectations(ep, placeholders):
    """What each user input of ``ep`` must be, per placeholder (of the same names as ep's):
    ``("tensor", sizes, shape)`` with each size an int or a sympy expression of the program's
    size symbols (the trace's replacements applied), ``("value", constant)``, or None when the
    placeholder records nothing (a loaded static program)."""
    from .._core.symint import SymInt
    shapes = dict(ep._input_shapes or [])
    out = []
    for node in placeholders:
        val = node.meta.get("val")
        if isinstance(val, Tensor):
            sizes = shapes.get(node.name) or [s.node.expr if isinstance(s, SymInt) else int(s)
                                              for s in val.shape]
            out.append(("tensor", sizes, val.shape))
        elif isinstance(val, (int, float, str)) and not isinstance(val, SymInt):
            out.append(("value", val))
        else:
            out.append(None)
    return out


def _check_input_constraints(expected, flat_args_with_path, range_constraints):
    """PyTorch's checks of a call's flat inputs against what the program was exported for:
    tensors of the same rank, static sizes equal, symbolic ones inside their range and equal
    wherever they share a symbol, constants equal (RuntimeError)."""
    if len(flat_args_with_path) != len(expected):
        raise RuntimeError(f"Unexpected number of inputs (expected {len(expected)}, got "
                           f"{len(flat_args_with_path)})")
    unification_map = {}
    for (key_path, arg), want in zip(flat_args_with_path, expected):
        if want is None:
            continue
        if want[0] == "tensor":
            _, sizes, shape = want
            if not isinstance(arg, Tensor):
                raise RuntimeError(f"Expected input at {_keystr(key_path)} to be a tensor, but "
                                   f"got {type(arg)}")
            if len(sizes) != len(arg.shape):
                raise RuntimeError(f"Unexpected number of dimensions in input at "
                                   f"{_keystr(key_path)}.shape (expected {shape}, got "
                                   f"{arg.shape})")
            for j, (arg_dim, size) in enumerate(zip(arg.shape, sizes)):
                _check_size(size, arg_dim, range_constraints, unification_map, key_path, j)
            continue
        value = want[1]
        if type(arg) is not type(value):
            raise RuntimeError(f"Expected input at {_keystr(key_path)} to be equal to {value}, "
                               f"but got {arg}")
        if isinstance(value, float) and math.isnan(value):
            if not math.isnan(arg):
                raise RuntimeError(f"Expected input at {_keystr(key_path)} to be nan, but got "
                                   f"{arg}")
        elif arg != value:
            raise RuntimeError(f"Expected input at {_keystr(key_path)} to be equal to {value}, "
                               f"but got {arg}")


def _check_size(size, arg, range_constraints, unification_map, key_path, i):
    """One size of an input against ``size`` (an int, or an expression of one symbol whose
    value the first size it spec's fixes)."""
    import sympy

    def where():
        return f"{_keystr(key_path)}.shape[{i}]"
    if isinstance(size, int):
        if arg != size:
            raise RuntimeError(
                f"Expected input at {where()} to be equal to {size}, but got {arg}. If you "
                "meant for this dimension to be dynamic, please re-export and specify "
                "dynamic_shapes (e.g. with Dim.DYNAMIC)")
        return
    if len(size.free_symbols) != 1:
        return  # a relation of several sizes: checked when the graph runs
    symbol = next(iter(size.free_symbols))
    if symbol in unification_map:
        existing = size.subs(unification_map)
        if arg != existing:
            raise RuntimeError(f"Expected input at {where()} to be equal to {existing}, but "
                               f"got {arg}")
    elif isinstance(size, sympy.Symbol):
        unification_map[symbol] = int(arg)
    else:
        solution = sympy.solve(sympy.Eq(size, arg), symbol)
        if len(solution) != 1 or not solution[0].is_Integer:
            raise RuntimeError(f"Expected input {where()} = {arg} to be of the form {size}, "
                               f"where {symbol} is an integer")
        unification_map[symbol] = int(solution[0])
    if size in range_constraints:
        vr = range_constraints[size]
        lo, upper = int(vr.lower), sympy.sympify(vr.upper)
        hi = int(upper) if upper.is_finite else math.inf
        # sizes 0 and 1 are allowed at run time (export specialises them while tracing)
        if lo > 2 and arg < lo:
            raise RuntimeError(f"Expected input at {where()} to be >= {lo}, but got {arg}")
        if arg > hi:
            raise RuntimeError(f"Expected input at {where()} to be <= {hi}, but got {arg}")


# ---------------------------------------------------------------------------------------------
# the flat graph before outlining

def _inplace_buffer_mutations(graph, graph_signature):
    """A buffer's new value, a graph output of the functional program, becomes ``copy_`` into
    the buffer where it is computed (as eager updates it), and leaves the outputs."""
    output_node = next(iter(reversed(graph.nodes)))
    if output_node.op != "output" or len(output_node.args) != 1:
        raise AssertionError(f"expected output node with op='output' and 1 arg, got "
                             f"op={output_node.op!r} with {len(output_node.args)} args")
    return_args = list(output_node.args[0])
    placeholders = {n.name: n for n in graph.nodes if n.op == "placeholder"}
    buffer_input = {fqn: name for name, fqn in graph_signature.inputs_to_buffers.items()}
    user_outputs = []
    for spec, value in zip(graph_signature.output_specs, return_args):
        if spec.kind != OutputKind.BUFFER_MUTATION:
            user_outputs.append(value)
            continue
        buffer = placeholders[buffer_input[spec.target]]
        with graph.inserting_after(value):
            new_node = graph.create_node("call_function", ops.aten.copy_.default,
                                         (buffer, value))
            new_node.meta.update(value.meta)
        value.replace_all_uses_with(new_node, lambda user, new=new_node: user is not new)
    output_node.args = (tuple(user_outputs),)


def _root_module_type(graph):
    for node in graph.nodes:
        for path, ty in node.meta.get("nn_module_stack", {}).values():
            if not path:
                return ty
    return None


# ---------------------------------------------------------------------------------------------
# outlining: one frame per module call

def _is_prefix(candidate, target):
    """Whether ``candidate`` is a proper prefix of ``target``."""
    return len(candidate) < len(target) and target[:len(candidate)] == candidate


def _compute_accessor(parent_fqn, child_fqn):
    if parent_fqn == "":
        return child_fqn
    parent_split = parent_fqn.split(".")
    child_split = child_fqn.split(".")
    if child_split[:len(parent_split)] != parent_split:
        raise RuntimeError(f"Child module '{child_fqn}' is not a descendant of parent module "
                           f"'{parent_fqn}'.This is currently unsupported.Please try to make "
                           "child module attach to parent module directly.")
    return ".".join(child_split[len(parent_split):])


def _call_name(base, n):
    """The name of the ``n``-th call (from 1) of module ``base``: ``base``, ``base@1`` ..."""
    return base if n == 1 else f"{base}@{n - 1}"


def _is_call_name(call_name, base):
    return re.match(re.escape(base) + r"(@\d+)?$", call_name) is not None


def _get_attr(module, target):
    for atom in target.split("."):
        module = getattr(module, atom)
    return module


def _get_submodule(mod, target):
    *prefix, field = target.split(".")
    for item in prefix:
        mod = getattr(mod, item, None)
        if not isinstance(mod, Module):
            return None
    return getattr(mod, field, None)


def _add_submodule(mod, target, module_to_add, create_module=None):
    *prefix, field = target.split(".")
    for i, item in enumerate(prefix):
        submod = getattr(mod, item, None)
        if submod is None:
            submod = create_module(".".join(prefix[:i + 1])) if create_module is not None \
                else Module()
            setattr(mod, item, submod)
        if not isinstance(submod, Module):
            return False
        mod = submod
    mod.add_module(field, module_to_add)
    return True


def _assign_attr(from_obj, to_module, target, kind, persistent=True):
    """Install ``from_obj`` (a parameter or buffer, by InputKind ``kind``) at ``target`` on
    ``to_module`` and on each call of the modules on the way (``foo@1``), creating empty
    modules where none is."""
    *prefix, field = target.split(".")
    to_modules = {to_module}
    for item in prefix:
        found = set()
        for mod in to_modules:
            if not hasattr(mod, item):
                setattr(mod, item, Module())
            found.update(m for k, m in mod._modules.items() if _is_call_name(k, item))
        to_modules = found
    for mod in to_modules:
        if kind == InputKind.PARAMETER:
            mod.register_parameter(field, from_obj)
        else:
            mod.register_buffer(field, from_obj, persistent=persistent)


@dataclass
class _SubmoduleEntry:
    parent_fqn: str
    parent_module: Module
    parent_call_module: Node
    fqn: str
    call_idx: int
    module: Module


class _ModuleFrame:
    """One module call being outlined: the nodes of the flat graph that ran in it are copied
    into its module's graph; a call it makes opens a nested frame."""

    def __init__(self, flat_graph, nodes, seen_nodes, seen_modules, seen_attrs,
                 created_modules, parent, module_stack, module_id, module=None):
        self.flat_graph = flat_graph
        self.nodes = nodes
        self.seen_nodes = seen_nodes  # flat node name -> flat node, once copied somewhere
        self.seen_modules = seen_modules  # module key -> [_SubmoduleEntry] of its calls
        self.seen_attrs = seen_attrs  # call name -> get_attr targets its graph reads
        self.created_modules = created_modules  # modules made for a path before their call
        self.parent = parent
        self.module_stack = module_stack  # [(fqn, type name, call index)]
        self.module_id = module_id
        self.fqn, ty, num_calls = self.module_stack[-1]
        self.child_fqn = _call_name(self.fqn, num_calls + 1)
        if module is not None:
            self.module = module
        else:
            self.module = self.created_modules.get(self.fqn,
                                                   InterpreterModule(Graph(), ty=ty))
        self.graph = self.module.graph
        self.node_map = {}  # flat node -> its copy in this graph
        self.node_to_placeholder = {}  # flat node read from outside -> placeholder
        self.parent_call_module = None
        if parent is not None:
            accessor = _compute_accessor(parent.fqn, self.child_fqn)

            def create_module(fqn):
                path = f"{parent.fqn}.{fqn}" if parent.fqn else fqn
                if path in self.created_modules:
                    return self.created_modules[path]
                submod = InterpreterModule(Graph(), ty=ty)
                self.created_modules[path] = submod
                return submod
            _add_submodule(parent.module, accessor, self.module, create_module)
            self.parent_call_module = parent.graph.call_module(accessor)
            if self.seen_modules[self.module_id]:
                # calls of one module share its submodules
                self.module._modules = self.seen_modules[self.module_id][0].module._modules
            self.seen_modules[self.module_id].append(_SubmoduleEntry(
                parent_fqn=self.parent.fqn, parent_module=self.parent.module,
                parent_call_module=self.parent_call_module, fqn=self.fqn,
                call_idx=num_calls + 1, module=self.module))

    def add_placeholder(self, x):
        if self.fqn == "":
            raise AssertionError(f"Cannot add placeholder {x} to root module")
        with self.graph.inserting_before(None):
            placeholder_node = self.graph.placeholder(x.name, type_expr=x.type)
        placeholder_node.meta = copy.copy(x.meta)
        self.node_to_placeholder[x] = placeholder_node

    def remap_input(self, x):
        """The value of flat node ``x`` in this graph: its copy, or a new input that the
        caller passes (prepended to the call's arguments, as the placeholder is)."""
        if x in self.node_map:
            return self.node_map[x]
        if x in self.node_to_placeholder:
            return self.node_to_placeholder[x]
        self.add_placeholder(x)
        if self.parent_call_module is not None:
            with self.parent.graph.inserting_before(self.parent_call_module):
                self.parent_call_module.insert_arg(0, self.parent.remap_input(x))
        return self.node_to_placeholder[x]

    def finalize_outputs(self):
        """The graph returns the values read after the call; the caller reads them from the
        call (one value) or by index."""
        self.created_modules.pop(self.fqn, None)
        orig_outputs, graph_outputs = [], []
        for orig_node in self.node_map:
            if any(user.name not in self.seen_nodes for user in orig_node.users):
                orig_outputs.append(orig_node)
                graph_outputs.append(self.node_map[orig_node])
        if len(graph_outputs) == 1:
            graph_outputs = graph_outputs[0]
        self.graph.output(graph_outputs)
        parent_out = self.parent_call_module
        if parent_out is None:
            return
        parent_out.meta["val"] = graph_outputs.meta.get("val") \
            if isinstance(graph_outputs, Node) else [o.meta.get("val") for o in graph_outputs]
        if len(orig_outputs) == 1:
            self.parent.node_map[orig_outputs[0]] = parent_out
            return
        for i, orig_output in enumerate(orig_outputs):
            out = self.parent.graph.call_function(operator.getitem, (parent_out, i))
            out.meta["val"] = orig_output.meta.get("val")
            self.parent.node_map[orig_output] = out

    def copy_node(self, node):
        self.node_map[node] = self.graph.node_copy(node, self.remap_input)
        self.seen_nodes[node.name] = node

    def run_outer(self):
        node_idx = 0
        while self.nodes[node_idx].op == "placeholder":
            self.copy_node(self.nodes[node_idx])
            node_idx += 1
        self.run_from(node_idx)
        self.copy_node(next(n for n in self.flat_graph.nodes if n.op == "output"))

    def run_from(self, node_idx):
        """Copy the nodes from ``node_idx`` on while they run in this call; returns the index
        of the first node that does not."""
        while node_idx < len(self.nodes):
            node = self.nodes[node_idx]
            if node.op == "placeholder":
                raise AssertionError(f"unexpected placeholder node at index {node_idx}")
            depth = len(self.module_stack)
            if node.op == "output":
                if depth > 1:  # the root frame copies the output itself (run_outer)
                    self.finalize_outputs()
                return node_idx
            stack = node.meta.get("nn_module_stack")
            if not stack:
                raise RuntimeError(f"Unable to find nn_module_stack for node {node}")
            node_module_stack = [(path, ty if path else None,
                                  int(k.split("@")[-1]) if "@" in k else 0)
                                 for k, (path, ty) in stack.items()]
            if node_module_stack[:depth] != self.module_stack:
                # this call is over: the node belongs to a later one
                self.finalize_outputs()
                return node_idx
            if _is_prefix(self.module_stack, node_module_stack):
                next_module_key = list(stack.keys())[depth]
                node_idx = _ModuleFrame(
                    self.flat_graph, self.nodes, self.seen_nodes, self.seen_modules,
                    self.seen_attrs, self.created_modules, self,
                    self.module_stack + [node_module_stack[depth]],
                    next_module_key.split("@")[0]).run_from(node_idx)
                continue
            if node.op == "get_attr":  # a constant of the program, read in this call
                self.seen_attrs[self.child_fqn].add(node.target)
            self.copy_node(node)
            node_idx += 1
        return node_idx


def _outline_submodules(orig_graph, root_module):
    seen_nodes, seen_modules = {}, defaultdict(list)
    seen_attrs, created_modules = defaultdict(set), {}
    _ModuleFrame(orig_graph, tuple(orig_graph.nodes), seen_nodes, seen_modules, seen_attrs,
                 created_modules, None, [("", None, 0)], "",
                 module=root_module).run_outer()
    return seen_modules, seen_attrs


def _copy_graph_attrs(gm, root_module, seen_attrs):
    for child_fqn, names in seen_attrs.items():
        module = _get_attr(root_module, child_fqn) if child_fqn else root_module
        for name in names:
            setattr(module, name, getattr(gm, name))


# ---------------------------------------------------------------------------------------------
# after outlining: state as get_attr, one module per equal call, the eager module order

def _sink_params(module, inputs_to_state, scope, module_id_to_inputs_removed=None):
    """Placeholders that carry a parameter or buffer become ``get_attr`` of it in the graph
    of the innermost module that owns it, and leave the arguments of the calls of that module.
    Returns {id(module): names of the placeholders it dropped}."""
    if module_id_to_inputs_removed is None:
        module_id_to_inputs_removed = defaultdict(set)
    if id(module) in module_id_to_inputs_removed:
        return {id(module): module_id_to_inputs_removed[id(module)]}
    # _modules, not named_children(): a module under two names is visited under each
    for name, submodule in module._modules.items():
        removed = _sink_params(submodule, inputs_to_state, scope + [name],
                               module_id_to_inputs_removed)
        for k, v in removed.items():
            module_id_to_inputs_removed[k].update(v)
    graph = getattr(module, "graph", None)
    if not isinstance(graph, Graph) or len(graph.nodes) == 0:
        return module_id_to_inputs_removed
    inputs = [n for n in graph.nodes if n.op == "placeholder"]
    the_last_input = inputs[-1] if inputs else None
    for node in [n for n in graph.nodes if n.op == "call_module"]:
        submodule = _get_submodule(module, node.target)
        if submodule is not None and id(submodule) in module_id_to_inputs_removed:
            dropped = module_id_to_inputs_removed[id(submodule)]
            node.args = tuple(a for a in node.args if a.name not in dropped)
    scope_base = [x.split("@")[0] for x in scope]
    inputs_to_state_of_scope = {}
    for node in inputs:
        for state_name in inputs_to_state.get(node.name, ()):
            parts = state_name.split(".")
            if parts[:len(scope)] == scope_base:
                inputs_to_state_of_scope[node] = parts
                break
    inputs_removed = set()
    for node, state_name in inputs_to_state_of_scope.items():
        if node.users:
            attr_path = state_name[len(scope):]
            state_attr = _get_attr(module, ".".join(attr_path))
            if not isinstance(state_attr, Tensor):
                raise AssertionError(f"expected state_attr to be a Tensor, got "
                                     f"{type(state_attr)}")
            with graph.inserting_after(the_last_input):
                new_node = graph.create_node("get_attr", ".".join(attr_path))
            node.replace_all_uses_with(new_node, propagate_meta=True)
        graph.erase_node(node)
        inputs_removed.add(node.name)
    return {id(module): inputs_removed}


def _graph_dump(graph):
    """The graph as text with its nodes numbered (names aside): equal for equal programs."""
    lines, index = [], {}

    def arg_dump(arg):
        return "%" + str(index[id(arg)]) if isinstance(arg, Node) else str(arg)
    for i, node in enumerate(graph.nodes):
        args = [str(a) for a in pytree.tree_map(arg_dump, node.args)]
        args += [f"{k}={v}" for k, v in pytree.tree_map(arg_dump, node.kwargs).items()]
        target = node.target if node.op in ("call_function", "get_attr") else ""
        lines.append(f"{i}: {node.op}[{target}]({', '.join(args)})")
        index[id(node)] = i
    return "\n".join(lines)


def _deduplicate_modules(partitions):
    """A call whose graph equals an earlier call's of the same module uses that call's
    InterpreterModule (its own ``name@n`` goes); of another module, shares it. Returns
    {removed call name: the call name it now uses}."""
    redirected_call_indices = {}
    for shared_submodules in partitions:
        for i, entry in enumerate(shared_submodules):
            child_fqn = _call_name(entry.fqn, entry.call_idx)
            target = _compute_accessor(entry.parent_fqn, child_fqn)
            deduplicated = False
            for seen in shared_submodules[:i]:
                if _graph_dump(seen.module.graph) != _graph_dump(entry.module.graph):
                    continue
                parent = entry.parent_module
                if seen.fqn == entry.fqn:
                    *prefix, name = target.split(".")
                    holder = _get_attr(parent, ".".join(prefix)) if prefix else parent
                    holder._modules.pop(name)
                    seen_child_fqn = _call_name(seen.fqn, seen.call_idx)
                    entry.parent_call_module.target = _compute_accessor(entry.parent_fqn,
                                                                        seen_child_fqn)
                    redirected_call_indices[child_fqn] = seen_child_fqn
                    break
                if not deduplicated:
                    parent.set_submodule(target, seen.module)
                    deduplicated = True
    return redirected_call_indices


def _reorder_submodules(parent, fqn_order, prefix=""):
    """Submodules in the eager module's order; a module the program never ran (no nodes) is
    an empty Module at its path."""
    if prefix == "":
        for fqn in list(fqn_order)[1:]:
            if _get_submodule(parent, fqn) is None:
                _add_submodule(parent, fqn, Module())
    children = []
    for name, child in list(parent._modules.items()):
        if child is None:
            continue
        fqn = prefix + name
        _reorder_submodules(child, fqn_order, prefix=fqn.split("@")[0] + ".")
        delattr(parent, name)
        base_fqn = fqn.split("@")[0]
        children.append((fqn_order.get(fqn, fqn_order.get(base_fqn, len(fqn_order))), name,
                         child))
    children.sort(key=operator.itemgetter(0))
    for _, name, child in children:
        parent.register_module(name, child)
